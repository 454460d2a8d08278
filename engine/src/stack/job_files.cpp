// Files of stack jobs that are not the engine's stack formats (almagest/stack/job.hpp, namespace
// files): velocity lists, common curves, psi/phi HDF5, candidate tables read back for `stamps`,
// truth tables of `simulate`. Text through the bounded reader (io::read_text_file, io::TextLines:
// regular files only, sized by the file, every data row terminated), HDF5 through Hdf5Reader and
// Hdf5Writer; every writer joins the thread's OutputSet.
#include "almagest/stack/job.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/io/hdf5_file.hpp"
#include "almagest/io/text_file.hpp"

namespace almagest::stack::files {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> split_fields(const std::string& line, bool comma) {
  std::vector<std::string> out;
  std::string cur;
  bool have = false;
  for (char c : line) {
    const bool sep = comma ? c == ',' : (c == ' ' || c == '\t' || c == ',');
    if (sep) {
      if (comma || have) out.push_back(cur);
      cur.clear();
      have = false;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      continue;  // trim blanks inside comma-separated fields
    } else {
      cur += c;
      have = true;
    }
  }
  if (comma || have) out.push_back(cur);
  return out;
}

bool parse_double(const std::string& s, double& v) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && errno != ERANGE;
}

/// The whole text file: a regular file of at most io::kMaxTextFileBytes (IoError otherwise).
std::string read_text(const std::string& path, const std::string& what) { return io::read_text_file(path, what); }

/// Unquotes a YAML single-quoted scalar ('' stands for ').
std::string yaml_unquote(std::string v) {
  if (v.size() >= 2 && v.front() == '\'' && v.back() == '\'') {
    v = v.substr(1, v.size() - 2);
    std::string out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      out += v[i];
      if (v[i] == '\'' && i + 1 < v.size() && v[i + 1] == '\'') ++i;
    }
    return out;
  }
  return v;
}

std::string config_of(const std::string& provenance_json) {
  if (provenance_json.empty()) return {};
  auto j = nlohmann::json::parse(provenance_json, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("config")) return {};
  return j["config"].is_object() ? j["config"].dump() : std::string();
}

CandidateTable read_candidates_ecsv(const std::string& path) {
  const std::string text = read_text(path, "candidate table");
  io::TextLines lines(text);
  std::string_view view;
  CandidateTable t;
  std::string line;
  std::vector<std::string> names;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::size_t> row_lines;
  bool comma = false, in_meta = false;
  std::size_t ln = 0;
  while (lines.next(view)) {
    ln = lines.number();
    line.assign(view);
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (line.find("delimiter: ','") != std::string::npos) comma = true;
      if (line.rfind("# meta:", 0) == 0) in_meta = true;
      if (in_meta && line.rfind("# - {", 0) == 0 && line.size() > 6 && line.back() == '}') {
        const std::string body = line.substr(5, line.size() - 6);
        const auto colon = body.find(": ");
        if (colon == std::string::npos) continue;
        const std::string key = body.substr(0, colon), value = yaml_unquote(body.substr(colon + 2));
        double d = 0;
        if (key == "provenance") t.provenance_json = value;
        else if (key == "backend") t.backend = value;
        else if (key == "threshold_z" && parse_double(value, d)) t.threshold_z = d;
        else if (key == "digest_sum_a" && parse_double(value, d)) t.digest.sum_a = d;
        else if (key == "digest_sum_b" && parse_double(value, d)) t.digest.sum_b = d;
        else if (key == "digest_max_z" && parse_double(value, d)) t.digest.max_z = d;
        else if (key == "digest_count_above" && parse_double(value, d) && d >= 0 && d < 1.8e19)
          t.digest.count_above = std::uint64_t(d);  // (a cast outside the range is undefined)
      }
      continue;
    }
    // A row (or the header) cut short by a truncation would read as a damaged last value.
    lines.require_terminated(path);
    if (names.empty()) {
      comma = comma || line.find(',') != std::string::npos;
      names = split_fields(line, comma);
      continue;
    }
    rows.push_back(split_fields(line, comma));
    row_lines.push_back(ln);
  }
  if (names.empty()) throw IoError(path, "header", "no column-name row (expected an ECSV table with x, y, vx, vy columns)");
  auto col = [&](const char* name) -> int {
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return int(i);
    return -1;
  };
  for (const char* req : {"x", "y", "vx", "vy"})
    if (col(req) < 0) throw IoError(path, std::string("column ") + req, "missing (a candidate table needs x, y, vx, vy)");
  const int cx = col("x"), cy = col("y"), cv = col("v"), cvx = col("vx"), cvy = col("vy"), cz = col("z"),
            cf = col("flux"), ca = col("a"), cb = col("b"), co = col("obs"), cm = col("members");
  t.has_v = cv >= 0;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const auto& f = rows[r];
    if (f.size() != names.size())
      throw IoError(path, fmt::format("line {}", row_lines[r]), fmt::format("{} values for {} columns", f.size(), names.size()));
    auto num = [&](int c, double fallback) {
      if (c < 0) return fallback;
      double v = 0;
      if (!parse_double(f[c], v) || !std::isfinite(v))
        throw IoError(path, fmt::format("line {}, column {}", row_lines[r], names[c]), "'" + f[c] + "' is not a finite number");
      return v;
    };
    auto integer = [&](int c, double fallback) {
      const double v = num(c, fallback);
      if (v != std::floor(v))
        throw IoError(path, fmt::format("line {}, column {}", row_lines[r], names[c]), "'" + f[c] + "' is not an integer");
      if (v < -2147483648.0 || v > 2147483647.0)  // the cast below would be undefined
        throw IoError(path, fmt::format("line {}, column {}", row_lines[r], names[c]), "'" + f[c] + "' is outside the 32-bit integer range");
      return std::int32_t(v);
    };
    stack::Candidate c;
    c.x = integer(cx, 0);
    c.y = integer(cy, 0);
    c.v = integer(cv, double(r));
    c.vx = num(cvx, 0);
    c.vy = num(cvy, 0);
    c.z = num(cz, 0);
    c.flux = num(cf, 0);
    c.a = float(num(ca, 0));
    c.b = float(num(cb, 0));
    c.obs = integer(co, 0);
    c.members = integer(cm, 1);
    t.candidates.push_back(c);
  }
  return t;
}

CandidateTable read_candidates_hdf5(const std::string& path) {
  io::Hdf5Reader h(path);
  CandidateTable t;
  for (const char* req : {"x", "y", "vx", "vy"})
    if (!h.exists(std::string("/candidates/") + req))
      throw IoError(path, std::string("/candidates/") + req, "dataset missing (a candidate table needs x, y, vx, vy)");
  const auto x = h.read_int32("/candidates/x"), y = h.read_int32("/candidates/y");
  const auto vx = h.read_double("/candidates/vx"), vy = h.read_double("/candidates/vy");
  const std::size_t n = x.size();
  auto ints = [&](const char* name, std::int32_t fallback) {
    const std::string ds = std::string("/candidates/") + name;
    std::vector<std::int32_t> v = h.exists(ds) ? h.read_int32(ds) : std::vector<std::int32_t>(n, fallback);
    if (v.size() != n) throw IoError(path, ds, fmt::format("{} values, /candidates/x has {}", v.size(), n));
    return v;
  };
  auto dbls = [&](const char* name) {
    const std::string ds = std::string("/candidates/") + name;
    std::vector<double> v = h.exists(ds) ? h.read_double(ds) : std::vector<double>(n, 0.0);
    if (v.size() != n) throw IoError(path, ds, fmt::format("{} values, /candidates/x has {}", v.size(), n));
    return v;
  };
  if (y.size() != n || vx.size() != n || vy.size() != n)
    throw IoError(path, "/candidates", "x, y, vx and vy differ in length");
  t.has_v = h.exists("/candidates/v");
  const auto v = ints("v", 0), obs = ints("obs", 0), mem = ints("members", 1);
  const auto z = dbls("z"), flux = dbls("flux"), a = dbls("a"), b = dbls("b");
  for (std::size_t i = 0; i < n; ++i) {
    stack::Candidate c;
    c.x = x[i];
    c.y = y[i];
    c.v = t.has_v ? v[i] : std::int32_t(i);
    c.vx = vx[i];
    c.vy = vy[i];
    c.z = z[i];
    c.flux = flux[i];
    c.a = float(a[i]);
    c.b = float(b[i]);
    c.obs = obs[i];
    c.members = mem[i];
    if (!std::isfinite(c.vx) || !std::isfinite(c.vy))
      throw IoError(path, "/candidates/vx", fmt::format("row {}: velocity is not finite", i));
    t.candidates.push_back(c);
  }
  auto attr_d = [&](const char* name, double& out) {
    if (h.has_attr("/", name)) out = h.read_attr_double("/", name);
  };
  attr_d("threshold_z", t.threshold_z);
  attr_d("digest_sum_a", t.digest.sum_a);
  attr_d("digest_sum_b", t.digest.sum_b);
  attr_d("digest_max_z", t.digest.max_z);
  double count = 0;
  attr_d("digest_count_above", count);
  if (!(count >= 0 && count < 1.8e19))  // a cast outside the range is undefined
    throw IoError(path, "attribute 'digest_count_above' of '/'", fmt::format("must be a count >= 0, found {}", count));
  t.digest.count_above = std::uint64_t(count);
  if (h.has_attr("/", "backend")) t.backend = h.read_attr_string("/", "backend");
  if (h.has_attr("/", "provenance")) t.provenance_json = h.read_attr_string("/", "provenance");
  return t;
}

}  // namespace

std::vector<std::vector<double>> read_numeric_table(const std::string& path, int min_cols, int max_cols,
                                                    const std::string& what) {
  const std::string text = read_text(path, what);
  io::TextLines lines(text);
  std::string_view view;
  std::vector<std::vector<double>> rows;
  std::string line;
  std::size_t ln = 0;
  std::size_t ncols = 0;
  while (lines.next(view)) {
    ln = lines.number();
    line.assign(view);
    const auto h = line.find('#');
    if (h != std::string::npos) line.erase(h);
    auto f = split_fields(line, false);
    if (f.empty()) continue;
    if (h == std::string::npos) lines.require_terminated(path);  // a cut last row: a damaged value
    if (int(f.size()) < min_cols || int(f.size()) > max_cols)
      throw IoError(path, fmt::format("line {}", ln),
                    min_cols == max_cols ? fmt::format("{} columns, expected {}", f.size(), min_cols)
                                         : fmt::format("{} columns, expected {} to {}", f.size(), min_cols, max_cols));
    if (ncols == 0) ncols = f.size();
    if (f.size() != ncols)
      throw IoError(path, fmt::format("line {}", ln), fmt::format("{} columns, earlier lines have {}", f.size(), ncols));
    std::vector<double> row(f.size());
    for (std::size_t c = 0; c < f.size(); ++c)
      if (!parse_double(f[c], row[c]) || !std::isfinite(row[c]))
        throw IoError(path, fmt::format("line {}, column {}", ln, c + 1), "'" + f[c] + "' is not a finite number");
    rows.push_back(std::move(row));
  }
  return rows;
}

stack::TrajectoryBank read_velocities(const std::string& path) {
  const auto rows = read_numeric_table(path, 2, 2, "velocity list");
  if (rows.empty()) throw IoError(path, "velocities", "the file lists no velocities (the trajectory bank would be empty)");
  std::vector<double> vx, vy;
  for (const auto& r : rows) {
    vx.push_back(r[0]);
    vy.push_back(r[1]);
  }
  return stack::TrajectoryBank::list(std::move(vx), std::move(vy));
}

void read_common_curve(const std::string& path, const std::vector<double>& mjd, std::vector<double>& dx,
                       std::vector<double>& dy) {
  const auto rows = read_numeric_table(path, 2, 3, "common-curve");
  if (rows.size() != mjd.size())
    throw IoError(path, "rows", fmt::format("{} offset rows, the stack has {} exposures (one row per exposure, in stack order)",
                                            rows.size(), mjd.size()));
  dx.clear();
  dy.clear();
  for (std::size_t e = 0; e < rows.size(); ++e) {
    const auto& r = rows[e];
    if (r.size() == 3 && std::fabs(r[0] - mjd[e]) > 1e-6)
      throw IoError(path, fmt::format("row {}: mjd", e + 1),
                    fmt::format("{:.9f} differs from exposure {}'s MJD {:.9f}", r[0], e, mjd[e]));
    dx.push_back(r[r.size() - 2]);
    dy.push_back(r[r.size() - 1]);
  }
}

void write_common_curve(const std::string& path, const std::vector<double>& mjd, const std::vector<double>& dx,
                        const std::vector<double>& dy) {
  std::string s = "# Known common curve of a synthetic stack (almagest-cli stack simulate): per exposure, in stack\n"
                  "# order, the offset [pixels] added to every trajectory. Pass to --common-curve.\n# mjd dx dy\n";
  for (std::size_t e = 0; e < mjd.size(); ++e) s += fmt::format("{:.17g} {:.17g} {:.17g}\n", mjd[e], dx[e], dy[e]);
  write_text_atomic(path, s);
}

void write_psiphi_hdf5(const std::string& path, const stack::EncodedPsiPhi& enc, const stack::PsiPhi& p,
                       const std::string& provenance_json, const std::string& source) {
  io::Hdf5Writer w(path);
  const io::Shape cube{std::uint64_t(p.n), std::uint64_t(p.height), std::uint64_t(p.width)};
  w.write("/psi", std::vector<double>(p.psi.begin(), p.psi.end()), cube);
  w.attr("/psi", "description", "psi = correlate(sci/var, PSF) / f (decoded from the stored encoding); 0 where invalid");
  w.write("/phi", std::vector<double>(p.phi.begin(), p.phi.end()), cube);
  w.attr("/phi", "description", "phi = correlate(1/var, PSF^2) / f^2 (decoded from the stored encoding); 0 where invalid");
  w.write("/mjd", p.mjd);
  w.attr("/mjd", "unit", "d");
  if (enc.encoding != stack::Encoding::Fp32) {
    w.write("/psi_scale", std::vector<double>(enc.psi_scale.begin(), enc.psi_scale.end()));
    w.write("/phi_scale", std::vector<double>(enc.phi_scale.begin(), enc.phi_scale.end()));
    w.create_group("/codes");
    if (enc.encoding == stack::Encoding::Fp16) {
      w.write("/codes/psi", std::vector<std::int32_t>(enc.psi16.begin(), enc.psi16.end()), cube);
      w.write("/codes/phi", std::vector<std::int32_t>(enc.phi16.begin(), enc.phi16.end()), cube);
      w.attr("/codes", "description", "IEEE binary16 bit patterns (0..65535); value = half(code) * scale");
    } else {
      w.write("/codes/psi", std::vector<std::int32_t>(enc.psi8.begin(), enc.psi8.end()), cube);
      w.write("/codes/phi", enc.phi8, cube);
      w.attr("/codes", "description", "INT8: psi code in [-127, 127] (-128 = invalid), phi code in [1, 255] (0 = invalid); value = code * scale");
    }
  }
  w.attr("/", "format", "almagest-psiphi-1");
  w.attr("/", "encoding", stack::to_string(enc.encoding));
  w.attr("/", "width", std::int64_t(p.width));
  w.attr("/", "height", std::int64_t(p.height));
  w.attr("/", "n_exp", std::int64_t(p.n));
  w.attr("/", "source", source);
  w.attr("/", "provenance", provenance_json);
  w.commit();
}

CandidateTable read_candidates(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw IoError(path, "", "candidate table not found");
  const std::string ext = fs::path(path).extension().string();
  CandidateTable t = (ext == ".h5" || ext == ".hdf5") ? read_candidates_hdf5(path) : read_candidates_ecsv(path);
  t.config_json = config_of(t.provenance_json);
  return t;
}

void write_truth_ecsv(const std::string& path, const std::vector<stack::Mover>& movers, const std::string& meta_json) {
  std::string s = "# %ECSV 1.0\n# ---\n# delimiter: ','\n# datatype:\n";
  s += "# - {name: id, datatype: int32}\n";
  s += "# - {name: x0, datatype: float64, unit: pix, description: position at the reference time (exposure 0)}\n";
  s += "# - {name: y0, datatype: float64, unit: pix}\n";
  s += "# - {name: vx, datatype: float64, unit: pix / d, description: velocity before the common curve}\n";
  s += "# - {name: vy, datatype: float64, unit: pix / d}\n";
  s += "# - {name: snr, datatype: float64, description: stack SNR along the nearest-pixel track}\n";
  s += "# - {name: flux, datatype: float64, description: total flux per exposure}\n";
  std::string esc;
  for (char c : meta_json) esc += c == '\'' ? std::string("''") : std::string(1, c);
  s += "# meta: !!omap\n# - {simulation: '" + esc + "'}\n";
  s += "id,x0,y0,vx,vy,snr,flux\n";
  for (std::size_t i = 0; i < movers.size(); ++i) {
    const auto& m = movers[i];
    s += fmt::format("{},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g}\n", i, m.x0, m.y0, m.vx, m.vy, m.snr, m.flux);
  }
  write_text_atomic(path, s);
}

}  // namespace almagest::stack::files
