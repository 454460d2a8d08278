#pragma once
// Integer command-line options read as text and checked here, because CLI11 2.1's own integer
// conversion misreports them: it saturates out-of-range text (99999999999999999999 becomes
// INT64_MAX), reads "-1" into an unsigned option as 18446744073709551615, and takes "010" as
// octal 8. Options bound to a std::string and parsed with parse_int_option() report exactly what
// the user wrote.
//
//   app.add_option("--threads", s.threads_text, ...);            // std::string, default "0"
//   s.threads = int(parse_int_option(s.threads_text, "--threads", 0, 4096, "(0 = all)"));
#include <charconv>
#include <cstdint>
#include <string>

#include "almagest/core/error.hpp"

namespace almagest::cli {

/// Decimal integer (optional sign, no spaces, no hex; "010" is ten) in [lo, hi], else
/// ConfigError naming `option` and echoing `text` as given. `note` follows the range.
inline std::int64_t parse_int_option(const std::string& text, const std::string& option,
                                     std::int64_t lo, std::int64_t hi,
                                     const std::string& note = "") {
  const std::string range = std::to_string(lo) + ".." + std::to_string(hi) +
                            (note.empty() ? std::string() : " " + note);
  std::int64_t v = 0;
  const char* b = text.data();
  const char* e = text.data() + text.size();
  if (b != e && *b == '+') ++b;
  const auto r = std::from_chars(b, e, v);
  if (text.empty() || r.ptr != e || (r.ec != std::errc() && r.ec != std::errc::result_out_of_range))
    throw ConfigError(option, "expected an integer in " + range + ", got '" + text + "'");
  if (r.ec == std::errc::result_out_of_range || v < lo || v > hi)
    throw ConfigError(option, "must be in " + range + ", got " + text);
  return v;
}

}  // namespace almagest::cli
