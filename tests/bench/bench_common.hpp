#pragma once
// Shared by the N-point benchmark programs (bench_npcf, bench_npcf_jobcost): the wall and process
// CPU clocks they time with, and one command-line reader. Header-only.
//
//   bench::Args args(argc, argv);
//   while (args.next()) {
//     if (args.is("--n")) n = args.count();
//     else if (args.is("--rmax")) rmax = args.real();
//     ...
//   }
//
// A missing value, or one that is not wholly a number of the asked kind, throws ConfigError naming
// the option ("--n: needs a value", "--rmax: not a number: '7x'").
#include <chrono>
#include <cstdint>
#include <ctime>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

#include "almagest/core/error.hpp"

namespace almagest::bench {

/// Seconds on the steady clock.
inline double wall_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// CPU seconds of the whole process (all threads).
inline double cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

/// Walks argv[1..argc): next() steps to the next word (the option), value() and the typed reads
/// take the word after it.
class Args {
public:
  Args(int argc, char** argv) : argc_(argc), argv_(argv) {}

  bool next() {
    if (++i_ >= argc_) return false;
    option_ = argv_[i_];
    return true;
  }
  const std::string& option() const { return option_; }
  bool is(const char* name) const { return option_ == name; }

  std::string value() {
    if (i_ + 1 >= argc_) throw ConfigError(option_, "needs a value");
    return argv_[++i_];
  }
  /// A non-negative whole number.
  std::uint64_t count() {
    const std::string v = value();
    return parse(v, "not a whole number", [&](std::size_t& end) {
      if (v.empty() || v[0] == '-' || v[0] == '+') throw std::invalid_argument(v);
      return static_cast<std::uint64_t>(std::stoull(v, &end));
    });
  }
  int integer() {
    const std::string v = value();
    return parse(v, "not an integer", [&](std::size_t& end) { return std::stoi(v, &end); });
  }
  double real() {
    const std::string v = value();
    return parse(v, "not a number", [&](std::size_t& end) { return std::stod(v, &end); });
  }

private:
  template <class F>
  auto parse(const std::string& v, const char* what, F f) -> decltype(f(std::declval<std::size_t&>())) {
    std::size_t end = 0;
    try {
      const auto x = f(end);
      if (end == v.size()) return x;
    } catch (const std::exception&) {
    }
    throw ConfigError(option_, std::string(what) + ": '" + v + "'");
  }

  int argc_;
  char** argv_;
  int i_ = 0;
  std::string option_;
};

}  // namespace almagest::bench
