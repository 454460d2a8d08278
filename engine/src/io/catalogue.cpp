// Catalogue loading: format dispatch, validation, sky conversion, the text reader and the text
// writer. FITS and HDF5 readers are in catalogue_formats.cpp.
//
// Text format: one row per line, fields separated by whitespace or (when the line holds a comma)
// by commas; '#' starts a comment. Column names come from a header: the last '#' comment line
// before the first data row whose fields are all non-numeric and as many as the first row's
// fields ("# x y z w", "# RA,DEC,Z,WEIGHT"), or a first non-comment line with no numeric field
// (a bare CSV header). Columns are chosen by 1-based number or by name (exact, else
// case-insensitive).
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <utility>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/io/catalogue.hpp"
#include "almagest/io/text_file.hpp"
#include "io/catalogue_internal.hpp"
#include "io/cosmology_table.hpp"

namespace almagest::io {
namespace detail {
namespace {

namespace fs = std::filesystem;

std::string num(double v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string row_field(const RawColumns& raw, std::size_t row, const std::string& label) {
  std::string s = "row " + std::to_string(row + 1);
  if (row < raw.line.size()) s += " (line " + std::to_string(raw.line[row]) + ")";
  return s + ", " + label;
}

CatalogueFormat detect_format(const std::string& path) {
  std::string lower = path;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto ends = [&](std::string_view suffix) {
    return lower.size() >= suffix.size() &&
           lower.compare(lower.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  for (auto s : {".fits", ".fit", ".fts", ".fits.gz", ".fit.gz", ".fits.fz"})
    if (ends(s)) return CatalogueFormat::Fits;
  for (auto s : {".h5", ".hdf5", ".he5", ".hdf"})
    if (ends(s)) return CatalogueFormat::Hdf5;
  // Unknown extension: look at the magic bytes.
  char magic[9] = {};
  if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
    std::size_t n = std::fread(magic, 1, 8, f);
    std::fclose(f);
    if (n == 8 && std::memcmp(magic, "\x89HDF\r\n\x1a\n", 8) == 0) return CatalogueFormat::Hdf5;
    if (n == 8 && std::memcmp(magic, "SIMPLE  ", 8) == 0) return CatalogueFormat::Fits;
  }
  return CatalogueFormat::Text;
}

// ---------------------------------------------------------------------------------------------
// Text

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

/// Splits on commas when the line has one (empty fields kept), else on whitespace runs.
void split_fields(std::string_view line, std::vector<std::string_view>& out) {
  out.clear();
  if (line.find(',') != std::string_view::npos) {
    std::size_t i = 0;
    for (;;) {
      std::size_t j = line.find(',', i);
      out.push_back(trim(line.substr(i, j == std::string_view::npos ? j : j - i)));
      if (j == std::string_view::npos) break;
      i = j + 1;
    }
    return;
  }
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    std::size_t j = i;
    while (j < line.size() && !is_space(line[j])) ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
}

bool parse_double(std::string_view s, double& v) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

bool all_non_numeric(const std::vector<std::string_view>& fields) {
  if (fields.empty()) return false;
  double v;
  for (auto f : fields)
    if (f.empty() || parse_double(f, v)) return false;
  return true;
}

struct TextColumn {
  std::size_t index;  // 0-based
  std::string label;  // "column 3 (z)"
};

TextColumn resolve_text_column(const std::string& file, const std::string& spec_name,
                               const std::vector<std::string>& header, const char* role) {
  auto label_for = [&](std::size_t idx) {
    std::string s = "column " + std::to_string(idx + 1);
    if (idx < header.size()) s += " (" + header[idx] + ")";
    return s;
  };
  const bool digits = !spec_name.empty() && std::all_of(spec_name.begin(), spec_name.end(),
                                                        [](unsigned char c) { return std::isdigit(c); });
  if (digits) {
    std::size_t k = 0;
    auto [p, ec] = std::from_chars(spec_name.data(), spec_name.data() + spec_name.size(), k);
    if (ec != std::errc() || k == 0)
      throw IoError(file, std::string(role) + " column '" + spec_name + "'",
                    "column numbers are 1-based");
    return {k - 1, label_for(k - 1)};
  }
  const std::string field = std::string(role) + " column '" + spec_name + "'";
  if (header.empty())
    throw IoError(file, field,
                  "the file has no header line naming its columns (e.g. '# x y z w'); give "
                  "1-based column numbers instead");
  for (std::size_t i = 0; i < header.size(); ++i)
    if (header[i] == spec_name) return {i, label_for(i)};
  std::size_t found = header.size(), count = 0;
  for (std::size_t i = 0; i < header.size(); ++i)
    if (iequals(header[i], spec_name)) found = i, ++count;
  if (count == 1) return {found, label_for(found)};
  throw IoError(file, field,
                (count > 1 ? "column name is ambiguous" : "no such column") +
                    std::string("; available columns: ") + join(header));
}

}  // namespace

bool iequals(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s.empty() ? "(none)" : s;
}

std::vector<std::string> default_named_columns(bool sky) {
  return sky ? std::vector<std::string>{"RA", "DEC", "Z"} : std::vector<std::string>{"x", "y", "z"};
}

RawColumns read_text_columns(const CatalogueSpec& spec) {
  const std::string& file = spec.path;
  // Bounded by kMaxTextFileBytes and refused unless a regular file (--data /dev/zero).
  const std::string data = read_text_file(file, "catalogue");
  const std::string_view all(data);

  std::vector<std::string_view> fields;
  std::vector<std::vector<std::string>> comment_candidates;  // all-non-numeric comment lines
  std::vector<std::string> header;
  std::vector<TextColumn> coord_cols, weight_cols;
  std::size_t needed = 0;  // fields a row must have
  bool resolved = false;
  RawColumns raw;

  auto resolve = [&](std::size_t first_row_fields) {
    // Header: the last comment candidate matching the first row's field count.
    if (header.empty()) {
      for (auto it = comment_candidates.rbegin(); it != comment_candidates.rend(); ++it)
        if (it->size() == first_row_fields) {
          header = *it;
          break;
        }
    }
    const char* roles[3] = {"x", "y", "z"};
    const char* sky_roles[3] = {"RA", "Dec", "redshift"};
    std::vector<std::string> names = spec.columns;
    if (names.empty()) names = {"1", "2", "3"};
    if (names.size() != 3)
      throw IoError(file, "columns",
                    "expected 3 coordinate columns, got " + std::to_string(names.size()));
    for (int c = 0; c < 3; ++c)
      coord_cols.push_back(
          resolve_text_column(file, names[c], header, spec.sky ? sky_roles[c] : roles[c]));
    std::vector<std::string> wnames = spec.weight_columns;
    if (wnames.empty() && first_row_fields >= 4) wnames = {"4"};
    for (const auto& w : wnames) weight_cols.push_back(resolve_text_column(file, w, header, "weight"));
    for (const auto& c : coord_cols) needed = std::max(needed, c.index + 1);
    for (const auto& c : weight_cols) needed = std::max(needed, c.index + 1);
    raw.coord.resize(3);
    raw.weight.resize(weight_cols.size());
    for (const auto& c : coord_cols) raw.coord_label.push_back(c.label);
    for (const auto& c : weight_cols) raw.weight_label.push_back(c.label);
    // Reserve from a rough row estimate to avoid repeated growth on large files.
    const std::size_t guess = all.size() / (8 * std::max<std::size_t>(first_row_fields, 1)) + 16;
    for (auto& v : raw.coord) v.reserve(guess);
    for (auto& v : raw.weight) v.reserve(guess);
    raw.line.reserve(guess);
    resolved = true;
  };

  TextLines lines(all);
  std::string_view line;
  std::size_t lineno = 0;
  while (lines.next(line)) {
    lineno = lines.number();
    line = trim(line);
    if (line.empty()) continue;
    if (line.front() == '#') {
      if (!resolved) {
        while (!line.empty() && line.front() == '#') line.remove_prefix(1);
        split_fields(trim(line), fields);
        if (all_non_numeric(fields))
          comment_candidates.emplace_back(fields.begin(), fields.end());
      }
      continue;
    }
    // A data row cut short (a truncated file) would parse as a damaged last value; one followed
    // by a comment is complete.
    if (std::size_t hash = line.find('#'); hash != std::string_view::npos)
      line = trim(line.substr(0, hash));
    else
      lines.require_terminated(file);
    split_fields(line, fields);
    if (!resolved) {
      if (all_non_numeric(fields)) {  // bare header row ("x,y,z,w")
        header.assign(fields.begin(), fields.end());
        continue;
      }
      resolve(fields.size());
    }
    if (fields.size() < needed) {
      // Name the first selected column that is missing on this line.
      std::string label;
      for (const auto* cols : {&coord_cols, &weight_cols})
        for (const auto& c : *cols)
          if (c.index >= fields.size() && label.empty()) label = c.label;
      throw IoError(file, "line " + std::to_string(lineno) + ", " + label,
                    "missing value (the line has " + std::to_string(fields.size()) + " columns)");
    }
    auto parse = [&](const TextColumn& c, std::vector<double>& out) {
      double v;
      std::string_view tok = fields[c.index];
      if (!parse_double(tok, v))
        throw IoError(file, "line " + std::to_string(lineno) + ", " + c.label,
                      tok.empty() ? std::string("missing value")
                                  : "cannot parse '" + std::string(tok) + "' as a number");
      if (!std::isfinite(v))
        throw IoError(file,
                      "row " + std::to_string(raw.line.size() + 1) + " (line " +
                          std::to_string(lineno) + "), " + c.label,
                      "value '" + std::string(tok) + "' is not finite");
      out.push_back(v);
    };
    for (int c = 0; c < 3; ++c) parse(coord_cols[c], raw.coord[c]);
    for (std::size_t k = 0; k < weight_cols.size(); ++k) parse(weight_cols[k], raw.weight[k]);
    raw.line.push_back(lineno);
  }
  if (!resolved) {
    raw.coord.assign(3, {});
    raw.coord_label = {"column 1", "column 2", "column 3"};
  }
  return raw;
}

Catalogue finish_catalogue(const CatalogueSpec& spec, RawColumns&& raw) {
  const std::string& file = spec.path;
  ALMAGEST_ASSERT(raw.coord.size() == 3, "catalogue readers return three coordinate columns");
  const std::size_t n = raw.coord[0].size();
  if (n == 0) throw IoError(file, "", "no rows: the catalogue is empty");
  for (int c = 0; c < 3; ++c)
    ALMAGEST_ASSERT(raw.coord[c].size() == n, "coordinate columns have equal length");
  for (const auto& w : raw.weight) ALMAGEST_ASSERT(w.size() == n, "weight columns have equal length");

  auto check_finite = [&](const std::vector<double>& col, const std::string& label) {
    for (std::size_t i = 0; i < n; ++i)
      if (!std::isfinite(col[i]))
        throw IoError(file, row_field(raw, i, label), "value " + num(col[i]) + " is not finite");
  };
  for (int c = 0; c < 3; ++c) check_finite(raw.coord[c], raw.coord_label[c]);
  for (std::size_t k = 0; k < raw.weight.size(); ++k) check_finite(raw.weight[k], raw.weight_label[k]);

  Catalogue cat;
  cat.source = file;
  cat.w.assign(n, 1.0);
  for (const auto& w : raw.weight)
    for (std::size_t i = 0; i < n; ++i) cat.w[i] *= w[i];
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(cat.w[i]))
      throw IoError(file, row_field(raw, i, "weight"), "product of the weights overflows");

  if (!spec.sky) {
    cat.x = std::move(raw.coord[0]);
    cat.y = std::move(raw.coord[1]);
    cat.z = std::move(raw.coord[2]);
    return cat;
  }
  const auto& ra = raw.coord[0];
  const auto& dec = raw.coord[1];
  const auto& red = raw.coord[2];
  double zmax = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (dec[i] < -90.0 || dec[i] > 90.0)
      throw IoError(file, row_field(raw, i, raw.coord_label[1]),
                    "declination " + num(dec[i]) + " is outside [-90, 90] degrees");
    if (red[i] < 0.0)
      throw IoError(file, row_field(raw, i, raw.coord_label[2]),
                    "redshift " + num(red[i]) + " is negative");
    // The comoving table spans [0, zmax]: an absurd redshift would size it (1e6: 7 GB).
    if (red[i] > kMaxRedshift)
      throw IoError(file, row_field(raw, i, raw.coord_label[2]),
                    "redshift " + num(red[i]) + " is above the supported maximum " +
                        num(kMaxRedshift));
    zmax = std::max(zmax, red[i]);
  }
  ComovingTable table(spec.cosmology, zmax, 1e-10);
  cat.x.resize(n);
  cat.y.resize(n);
  cat.z.resize(n);
  for (std::size_t i = 0; i < n; ++i)
    sky_to_cartesian(ra[i], dec[i], table(red[i]), cat.x[i], cat.y[i], cat.z[i]);
  return cat;
}

}  // namespace detail

Catalogue load_catalogue(const CatalogueSpec& spec) {
  const std::string& file = spec.path;
  if (file.empty()) throw IoError("", "catalogue path", "no catalogue file given");
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) throw IoError(file, "", "file does not exist");
  if (std::filesystem::is_directory(file, ec)) throw IoError(file, "", "is a directory, not a file");
  // A device, FIFO or socket (--data /dev/zero) has no size to bound the read by.
  if (!std::filesystem::is_regular_file(file, ec))
    throw IoError(file, "", "is not a regular file (a device, FIFO or socket); a catalogue must be a regular file");
  CatalogueFormat format =
      spec.format == CatalogueFormat::Auto ? detail::detect_format(file) : spec.format;
  detail::RawColumns raw;
  switch (format) {
    case CatalogueFormat::Fits: raw = detail::read_fits_columns(spec); break;
    case CatalogueFormat::Hdf5: raw = detail::read_hdf5_columns(spec); break;
    default: raw = detail::read_text_columns(spec); break;
  }
  return detail::finish_catalogue(spec, std::move(raw));
}

void save_catalogue_text(const Catalogue& cat, const std::string& path) {
  const std::size_t n = cat.size();
  if (cat.y.size() != n || cat.z.size() != n)
    throw IoError(path, "x/y/z", "coordinate arrays differ in length");
  if (!cat.w.empty() && cat.w.size() != n)
    throw IoError(path, "w", "weights and coordinates differ in length");
  std::string out = "# x y z w\n";
  out.reserve(out.size() + n * 80);
  char buf[32];
  auto put = [&](double v, char sep) {
    auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest exact round trip
    out.append(buf, r.ptr);
    out.push_back(sep);
  };
  for (std::size_t i = 0; i < n; ++i) {
    put(cat.x[i], ' ');
    put(cat.y[i], ' ');
    put(cat.z[i], ' ');
    put(cat.w.empty() ? 1.0 : cat.w[i], '\n');
  }
  write_text_atomic(path, out);
}

}  // namespace almagest::io
