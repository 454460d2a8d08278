#include "stackview/Vetting.hpp"

#include <charconv>
#include <cmath>
#include <fmt/format.h>

#include "almagest/core/error.hpp"
#include "almagest/io/text_file.hpp"

namespace almagest::ui::stackview {

namespace {

constexpr const char* kColumns[] = {"x", "y", "vx", "vy", "z", "flux", "obs", "members", "verdict", "note"};
constexpr int kColumnCount = 10;
constexpr std::uint64_t kMaxVettingBytes = 256ull << 20;  // 256 MiB: millions of rows

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"') out += "\"\"";
    else if (ch == '\n' || ch == '\r') out += ' ';  // one row per line
    else out += ch;
  }
  return out + "\"";
}

/// Splits an ECSV data row: space separated, "..." quoted with "" for a quote.
bool splitRow(std::string_view line, std::vector<std::string>& out) {
  out.clear();
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    if (i >= line.size()) break;
    std::string f;
    if (line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            f += '"';
            i += 2;
            continue;
          }
          ++i;
          closed = true;
          break;
        }
        f += line[i++];
      }
      if (!closed) return false;
    } else {
      while (i < line.size() && line[i] != ' ') f += line[i++];
    }
    out.push_back(std::move(f));
  }
  return true;
}

template <class T>
T number(const std::string& s, const std::string& path, std::size_t lineNo, const char* column) {
  T v{};
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size())
    throw IoError(path, fmt::format("line {}: {}", lineNo, column), "expected a number, got '" + s + "'");
  if constexpr (std::is_floating_point_v<T>)
    if (!std::isfinite(v)) throw IoError(path, fmt::format("line {}: {}", lineNo, column), "value is not finite");
  return v;
}

}  // namespace

const char* verdictName(Verdict v) noexcept {
  switch (v) {
    case Verdict::Real: return "real";
    case Verdict::Bogus: return "bogus";
    default: return "";
  }
}

std::string vettingEcsv(const std::vector<almagest::stack::Candidate>& candidates, const std::vector<Vet>& vets,
                        const std::string& label) {
  int real = 0, bogus = 0;
  for (const Vet& v : vets) real += v.verdict == Verdict::Real, bogus += v.verdict == Verdict::Bogus;
  std::string s =
      "# %ECSV 1.0\n# ---\n# datatype:\n"
      "# - {name: x, datatype: int32, unit: pix, description: origin pixel at the first exposure}\n"
      "# - {name: y, datatype: int32, unit: pix}\n"
      "# - {name: vx, datatype: float64, unit: pix / d}\n"
      "# - {name: vy, datatype: float64, unit: pix / d}\n"
      "# - {name: z, datatype: float64, description: likelihood score}\n"
      "# - {name: flux, datatype: float64}\n"
      "# - {name: obs, datatype: int32, description: valid exposures}\n"
      "# - {name: members, datatype: int32, description: near-duplicates merged}\n"
      "# - {name: verdict, datatype: string, description: 'real, bogus or empty (not vetted)'}\n"
      "# - {name: note, datatype: string}\n";
  s += fmt::format("# meta: {{stack: {}, candidates: {}, real: {}, bogus: {}}}\n# schema: astropy-2.0\n",
                   quoted(label), candidates.size(), real, bogus);
  s += "x y vx vy z flux obs members verdict note\n";
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const auto& c = candidates[i];
    const Vet v = i < vets.size() ? vets[i] : Vet{};
    s += fmt::format("{} {} {:.17g} {:.17g} {:.17g} {:.17g} {} {} {} {}\n", c.x, c.y, c.vx, c.vy, c.z, c.flux, c.obs,
                     c.members, quoted(verdictName(v.verdict)), quoted(v.note.toStdString()));
  }
  return s;
}

std::vector<VetRow> parseVettingEcsv(const std::string& text, const std::string& path) {
  io::TextLines lines(text);
  std::string_view line;
  bool sawHeader = false, sawSignature = false;
  std::vector<std::string> f;
  std::vector<VetRow> rows;
  while (lines.next(line)) {
    if (line.empty()) continue;
    if (line.front() == '#') {
      if (lines.number() == 1 && line.rfind("# %ECSV", 0) == 0) sawSignature = true;
      continue;
    }
    if (!sawSignature) throw IoError(path, "line 1", "not an ECSV file (expected '# %ECSV 1.0')");
    if (!splitRow(line, f)) throw IoError(path, fmt::format("line {}", lines.number()), "unterminated quoted string");
    if (!sawHeader) {
      for (int k = 0; k < kColumnCount; ++k)
        if (int(f.size()) != kColumnCount || f[std::size_t(k)] != kColumns[k])
          throw IoError(path, fmt::format("line {}", lines.number()),
                        "expected the columns 'x y vx vy z flux obs members verdict note' of a vetting file");
      sawHeader = true;
      continue;
    }
    if (f.size() != std::size_t(kColumnCount))
      throw IoError(path, fmt::format("line {}", lines.number()), fmt::format("expected 10 values, found {}", f.size()));
    VetRow r;
    const std::size_t n = lines.number();
    r.c.x = number<std::int32_t>(f[0], path, n, "x");
    r.c.y = number<std::int32_t>(f[1], path, n, "y");
    r.c.vx = number<double>(f[2], path, n, "vx");
    r.c.vy = number<double>(f[3], path, n, "vy");
    r.c.z = number<double>(f[4], path, n, "z");
    r.c.flux = number<double>(f[5], path, n, "flux");
    r.c.obs = number<std::int32_t>(f[6], path, n, "obs");
    r.c.members = number<std::int32_t>(f[7], path, n, "members");
    if (f[8] == "real") r.vet.verdict = Verdict::Real;
    else if (f[8] == "bogus") r.vet.verdict = Verdict::Bogus;
    else if (!f[8].empty())
      throw IoError(path, fmt::format("line {}: verdict", n), "expected 'real', 'bogus' or \"\", got '" + f[8] + "'");
    r.vet.note = QString::fromStdString(f[9]);
    rows.push_back(std::move(r));
  }
  if (!sawHeader) throw IoError(path, "header", "no column header line (not a vetting file)");
  return rows;
}

std::vector<VetRow> readVettingFile(const std::string& path) {
  return parseVettingEcsv(io::read_text_file(path, "vetting file", kMaxVettingBytes), path);
}

int applyVetting(const std::vector<VetRow>& rows, const std::vector<almagest::stack::Candidate>& candidates,
                 std::vector<Vet>& vets) {
  vets.resize(candidates.size());
  int matched = 0;
  for (const VetRow& r : rows)
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const auto& c = candidates[i];
      if (c.x == r.c.x && c.y == r.c.y && std::abs(c.vx - r.c.vx) <= 1e-6 && std::abs(c.vy - r.c.vy) <= 1e-6) {
        vets[i] = r.vet;
        ++matched;
        break;
      }
    }
  return matched;
}

}  // namespace almagest::ui::stackview
