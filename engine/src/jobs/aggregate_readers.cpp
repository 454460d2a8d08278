// Member-output readers and the candidate merge of the aggregation steps (aggregate_readers.hpp).
#include "aggregate_readers.hpp"

#include <fitsio.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "almagest/core/error.hpp"
#include "almagest/io/fits_file.hpp"
#include "almagest/io/hdf5_file.hpp"
#include "almagest/io/text_file.hpp"

namespace almagest::jobs {

std::vector<double> flatten(const std::vector<std::vector<double>>& rows) {
  std::vector<double> out;
  for (const auto& r : rows) out.insert(out.end(), r.begin(), r.end());
  return out;
}

std::string values_hash(const std::vector<double>& v) {
  std::uint64_t h = 1469598103934665603ull;
  for (double d : v) {
    unsigned char b[sizeof d];
    std::memcpy(b, &d, sizeof d);
    for (unsigned char c : b) {
      h ^= c;
      h *= 1099511628211ull;
    }
  }
  return fmt::format("{:016x}", h);
}

namespace {

bool is_hdf5(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char m[8] = {0};
  in.read(m, 8);
  return in.gcount() == 8 && std::memcmp(m, "\x89HDF\r\n\x1a\n", 8) == 0;
}

bool is_fits(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char m[9] = {0};
  in.read(m, 9);
  return in.gcount() == 9 && std::memcmp(m, "SIMPLE  =", 9) == 0;
}

void check_finite(const std::vector<double>& v, const std::string& path, const std::string& field) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]))
      throw IoError(path, field, fmt::format("value {} is {} (the first such value): it cannot be aggregated", i, v[i]));
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      std::string t(s.substr(start, i - start));
      while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.pop_back();
      std::size_t b = t.find_first_not_of(" \t");
      out.push_back(b == std::string::npos ? std::string() : t.substr(b));
      start = i + 1;
    }
  return out;
}

double parse_number(const std::string& s, const std::string& path, const std::string& field) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v))
    throw IoError(path, field, "expected a finite number, found '" + s + "'");
  return v;
}

}  // namespace

NpcfSamples read_npcf_samples(const std::vector<std::string>& files, const std::string& dataset, const JobContext& ctx) {
  NpcfSamples s;
  for (std::size_t m = 0; m < files.size(); ++m) {
    ctx.check_cancel();
    const std::string& path = files[m];
    if (!is_hdf5(path))
      throw IoError(path, "", "not an HDF5 file: N-point aggregation reads the HDF5 outputs (format = \"hdf5\")");
    io::Hdf5Reader in(path);
    if (!in.exists("/npcf")) throw IoError(path, "/npcf", "not an Almagest N-point result file");
    const auto stats = in.list("/npcf");
    if (stats.empty()) throw IoError(path, "/npcf", "the file holds no statistic");
    const std::string g = "/npcf/" + stats.front();
    const std::string d = g + "/" + dataset;
    if (!in.exists(d))
      throw IoError(path, d, "no such dataset" + std::string(dataset == "zeta_odd" ? " (the odd channel is in 4pcf-parity results)" : ""));
    std::vector<double> v = in.read_double(d);
    std::vector<std::uint8_t> bins = in.read_uint8(g + "/bins");
    check_finite(v, path, d);
    if (m == 0) {
      s.statistic = stats.front();
      s.rows = v.size();
      s.bins = bins;
    } else if (stats.front() != s.statistic || v.size() != s.rows || bins != s.bins) {
      throw IoError(path, g, "the configurations differ from the first member's (" + files[0] + ": " + s.statistic + ", " +
                                 std::to_string(s.rows) + " rows): members of one aggregate need the same statistic and binning");
    }
    s.hashes.push_back(values_hash(v));
    s.values.push_back(std::move(v));
    ctx.progress(double(m + 1), double(files.size()), "reading member outputs");
  }
  return s;
}

namespace {

/// One member's C_l: spectra names and their values over ell.
void read_cl_file(const std::string& path, std::vector<std::string>& names, std::vector<std::vector<double>>& cl,
                  std::vector<std::int64_t>& ell) {
  if (is_hdf5(path)) {
    io::Hdf5Reader in(path);
    if (!in.exists("/cl")) throw IoError(path, "/cl", "not an Almagest C_l file (no /cl dataset)");
    const auto shape = in.shape("/cl", 2);
    names = split(in.read_attr_string("/cl", "spectra"), ',');
    if (names.size() != shape[0]) throw IoError(path, "/cl spectra", "names " + std::to_string(names.size()) + " spectra, the dataset has " + std::to_string(shape[0]));
    const auto flat = in.read_double("/cl");
    cl.assign(shape[0], {});
    for (std::size_t i = 0; i < shape[0]; ++i) cl[i].assign(flat.begin() + std::ptrdiff_t(i * shape[1]), flat.begin() + std::ptrdiff_t((i + 1) * shape[1]));
    ell = in.exists("/ell") ? in.read_int64("/ell") : std::vector<std::int64_t>{};
    return;
  }
  if (is_fits(path)) {
    io::FitsFile f = io::FitsFile::open(path);
    f.move(2, "HDU 1");
    std::string spectra;
    const int ncol = f.table_columns("HDU 1");
    const long long rows = f.table_rows("HDU 1");
    if (f.read_key("SPECTRA", spectra)) names = split(spectra, ',');
    cl.assign(static_cast<std::size_t>(ncol), std::vector<double>(static_cast<std::size_t>(rows)));
    for (int c = 1; c <= ncol; ++c) {
      const auto info = f.column(c, "column " + std::to_string(c));
      if (names.size() < static_cast<std::size_t>(c)) names.push_back(info.name);
      int st = 0, anynul = 0;
      f.check(fits_read_col(f.get(), TDOUBLE, c, 1, 1, rows, nullptr, cl[std::size_t(c - 1)].data(), &anynul, &st), info.name,
              "cannot read the column");
    }
    names.resize(cl.size());
    ell.resize(static_cast<std::size_t>(rows));
    for (long long l = 0; l < rows; ++l) ell[std::size_t(l)] = l;
    return;
  }
  // Text: "# l TT EE ..." then one row per l.
  const std::string text = io::read_text_file(path, "C_l table");
  io::TextLines lines(text);
  std::string_view line;
  bool header = false;
  while (lines.next(line)) {
    if (line.empty()) continue;
    if (line.front() == '#') {
      std::istringstream h{std::string(line.substr(1))};
      std::string first;
      if (h >> first && first == "l") {
        names.clear();
        for (std::string n; h >> n;) names.push_back(n);
        cl.assign(names.size(), {});
        header = true;
      }
      continue;
    }
    if (!header) throw IoError(path, "line " + std::to_string(lines.number()), "no '# l ...' header line before the data");
    lines.require_terminated(path);
    std::istringstream row{std::string(line)};
    std::vector<std::string> cells;
    for (std::string t; row >> t;) cells.push_back(t);
    const std::string where = "line " + std::to_string(lines.number());
    if (cells.size() != names.size() + 1)
      throw IoError(path, where, "expected " + std::to_string(names.size() + 1) + " values, found " + std::to_string(cells.size()));
    ell.push_back(static_cast<std::int64_t>(parse_number(cells[0], path, where)));
    for (std::size_t i = 0; i < names.size(); ++i) cl[i].push_back(parse_number(cells[i + 1], path, where + " " + names[i]));
  }
  if (!header) throw IoError(path, "", "not an Almagest C_l table (no '# l ...' header)");
}

}  // namespace

ClSamples read_cl_samples(const std::vector<std::string>& files, const std::vector<std::string>& want, const JobContext& ctx) {
  ClSamples s;
  for (std::size_t m = 0; m < files.size(); ++m) {
    ctx.check_cancel();
    std::vector<std::string> names;
    std::vector<std::vector<double>> cl;
    std::vector<std::int64_t> ell;
    read_cl_file(files[m], names, cl, ell);
    if (m == 0) {
      s.spectra = want.empty() ? names : want;
      s.ell = ell;
    } else if (ell != s.ell) {
      throw IoError(files[m], "ell", "the multipoles differ from the first member's (" + files[0] + ")");
    }
    std::vector<double> v;
    for (const auto& name : s.spectra) {
      auto it = std::find(names.begin(), names.end(), name);
      if (it == names.end()) throw IoError(files[m], name, "no such spectrum in the file");
      const auto& c = cl[std::size_t(it - names.begin())];
      check_finite(c, files[m], name);
      v.insert(v.end(), c.begin(), c.end());
    }
    s.hashes.push_back(values_hash(v));
    s.values.push_back(std::move(v));
    ctx.progress(double(m + 1), double(files.size()), "reading member outputs");
  }
  return s;
}

// ---- candidates --------------------------------------------------------------------------------

namespace {

struct Table {
  std::vector<std::string> columns, datatype_lines;
  std::vector<std::vector<std::string>> rows;
};

Table read_ecsv(const std::string& path) {
  if (is_hdf5(path) || is_fits(path))
    throw IoError(path, "", "candidate merging reads ECSV search outputs (write the search with an .ecsv output)");
  const std::string text = io::read_text_file(path, "candidate table");
  io::TextLines lines(text);
  std::string_view line;
  Table t;
  while (lines.next(line)) {
    if (line.empty()) continue;
    if (line.front() == '#') {
      if (t.columns.empty() && line.substr(0, 11) == "# - {name: ") t.datatype_lines.emplace_back(line);
      continue;
    }
    lines.require_terminated(path);
    auto cells = split(line, ',');
    if (t.columns.empty()) {
      t.columns = std::move(cells);
      continue;
    }
    if (cells.size() != t.columns.size())
      throw IoError(path, "line " + std::to_string(lines.number()),
                    "expected " + std::to_string(t.columns.size()) + " values, found " + std::to_string(cells.size()));
    t.rows.push_back(std::move(cells));
  }
  if (t.columns.empty()) throw IoError(path, "", "no column header line (not an ECSV candidate table)");
  return t;
}

double separation_arcsec(double ra1, double dec1, double ra2, double dec2) {
  constexpr double d2r = 3.14159265358979323846 / 180.0;
  const double sd = std::sin((dec2 - dec1) * d2r / 2), sa = std::sin((ra2 - ra1) * d2r / 2);
  const double h = sd * sd + std::cos(dec1 * d2r) * std::cos(dec2 * d2r) * sa * sa;
  return 2.0 * std::asin(std::min(1.0, std::sqrt(h))) / d2r * 3600.0;
}

}  // namespace

MergedCandidates merge_candidates(const std::vector<std::string>& files, const std::vector<std::string>& names,
                                  double radius_arcsec, const std::string& score, const JobContext& ctx) {
  MergedCandidates out;
  out.field_names = names;
  struct Cand {
    std::size_t member, row;
    double ra, dec, score;
  };
  std::vector<Cand> all;
  std::vector<std::vector<std::vector<std::string>>> cells(files.size());
  for (std::size_t m = 0; m < files.size(); ++m) {
    ctx.check_cancel();
    Table t = read_ecsv(files[m]);
    if (m == 0) {
      out.columns = t.columns;
      out.datatype_lines = t.datatype_lines;
    } else if (t.columns != out.columns) {
      throw IoError(files[m], "columns", "the columns differ from the first member's (" + files[0] + ")");
    }
    auto col = [&](const std::string& n) -> std::size_t {
      auto it = std::find(t.columns.begin(), t.columns.end(), n);
      if (it == t.columns.end())
        throw IoError(files[m], n, "no such column" + std::string(n == "ra" || n == "dec" ? " (candidates have RA/Dec only when the stack has a WCS)" : ""));
      return std::size_t(it - t.columns.begin());
    };
    const std::size_t ira = col("ra"), idec = col("dec"), isc = col(score);
    std::vector<double> hashed;
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
      const std::string where = "row " + std::to_string(r + 1);
      Cand c{m, r, parse_number(t.rows[r][ira], files[m], where + " ra"), parse_number(t.rows[r][idec], files[m], where + " dec"),
             parse_number(t.rows[r][isc], files[m], where + " " + score)};
      if (std::fabs(c.dec) > 90) throw IoError(files[m], where + " dec", "is outside [-90, 90]");
      hashed.insert(hashed.end(), {c.ra, c.dec, c.score});
      all.push_back(c);
    }
    out.hashes.push_back(values_hash(hashed));
    cells[m] = std::move(t.rows);
    ctx.progress(double(m + 1), double(files.size()), "reading member outputs");
  }
  out.total = all.size();
  // Highest score first (ties: batch order, then row order); a candidate within the radius of a
  // kept one of another field is that object seen again.
  std::vector<std::size_t> order(all.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return all[a].score > all[b].score; });
  std::multimap<double, std::size_t> kept_by_dec;
  std::vector<std::set<std::size_t>> seen_in(all.size());
  std::vector<bool> kept(all.size(), false);
  const double rdeg = radius_arcsec / 3600.0;
  for (std::size_t idx : order) {
    const Cand& c = all[idx];
    std::size_t dup = all.size();
    for (auto it = kept_by_dec.lower_bound(c.dec - rdeg); it != kept_by_dec.end() && it->first <= c.dec + rdeg; ++it) {
      const Cand& k = all[it->second];
      if (k.member != c.member && separation_arcsec(c.ra, c.dec, k.ra, k.dec) <= radius_arcsec) {
        dup = it->second;
        break;
      }
    }
    if (dup < all.size()) {
      seen_in[dup].insert(c.member);
      continue;
    }
    kept[idx] = true;
    seen_in[idx].insert(c.member);
    kept_by_dec.emplace(c.dec, idx);
  }
  for (std::size_t i = 0; i < all.size(); ++i)
    if (kept[i]) out.rows.push_back({all[i].member, cells[all[i].member][all[i].row], seen_in[i].size()});
  return out;
}

std::string format_merged(const MergedCandidates& m, double radius_arcsec, const std::string& provenance) {
  std::string o = "# %ECSV 1.0\n# ---\n# delimiter: ','\n# datatype:\n";
  for (const auto& l : m.datatype_lines) o += l + "\n";
  o += "# - {name: field, datatype: string}\n# - {name: n_fields, datatype: int32}\n";
  o += "# meta: !!omap\n";
  o += fmt::format("# - {{match_radius_arcsec: {}}}\n", radius_arcsec);
  o += fmt::format("# - {{candidates_in: {}}}\n", m.total);
  std::string esc;
  for (char ch : provenance) esc += ch == '\'' ? std::string("''") : std::string(1, ch);
  o += "# - {provenance: '" + esc + "'}\n";
  for (std::size_t i = 0; i < m.columns.size(); ++i) o += (i ? "," : "") + m.columns[i];
  o += ",field,n_fields\n";
  for (const auto& r : m.rows) {
    for (std::size_t i = 0; i < r.cells.size(); ++i) o += (i ? "," : "") + r.cells[i];
    o += "," + m.field_names.at(r.member) + "," + std::to_string(r.fields) + "\n";
  }
  return o;
}

}  // namespace almagest::jobs
