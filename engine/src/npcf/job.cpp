#include "almagest/npcf/job.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <set>

#include "almagest/core/error.hpp"

namespace almagest::npcf {

namespace fs = std::filesystem;

const char* to_string(OutputFormat f) { return f == OutputFormat::Gramsci ? "gramsci" : "hdf5"; }

namespace {

std::vector<JobOption> build_schema() {
  using K = OptionKind;
  std::vector<JobOption> s;
  auto add = [&](std::string key, std::string short_flag, K kind, std::string value_name,
                 std::string group, std::string help, std::vector<std::string> choices = {},
                 bool required = false) {
    s.push_back(JobOption{std::move(key), std::move(short_flag), kind, std::move(value_name),
                          std::move(group), std::move(help), std::move(choices), required});
  };
  add("stat", "", K::ChoiceList, "STAT", "Statistic",
      "Statistic(s) computed from one neighbour graph: 2pcf (xi), 3pcf (all triangles b1<=b2<=b3), "
      "3pcf-equilateral, 4pcf (even, with connected part), 4pcf-parity (even and odd channels). "
      "Several, comma-separated (3pcf,4pcf), are written to one file each (see --output).",
      {"2pcf", "3pcf", "3pcf-equilateral", "4pcf", "4pcf-parity"}, true);

  add("data", "", K::Text, "FILE", "Input",
      "Data catalogue: text (whitespace or CSV, x y z [w], '#' header may name columns), FITS "
      "binary table or HDF5 (one 1-D dataset per column).",
      {}, true);
  add("randoms", "", K::Text, "FILE", "Input",
      "Random catalogue (same formats). Required unless --periodic, where analytic randoms are "
      "used when it is omitted.");
  add("data-columns", "", K::TextList, "C1,C2,C3", "Input",
      "Coordinate columns of the data: x,y,z in Mpc/h, or ra,dec,redshift with --sky. Column "
      "names, or 1-based numbers for text files. Default: text 1,2,3; FITS/HDF5 x,y,z "
      "(RA,DEC,Z with --sky).");
  add("randoms-columns", "", K::TextList, "C1,C2,C3", "Input",
      "Coordinate columns of the randoms. Default: the same as --data-columns.");
  add("weights", "", K::TextList, "W1,W2", "Input",
      "Weight columns of the data, multiplied together (e.g. WEIGHT,WEIGHT_FKP). Default: text "
      "column 4 if present, else unit weights; FITS/HDF5 unit weights. Weights are normalised "
      "(data sum +1, randoms -1); a sum of zero is an error.");
  add("randoms-weights", "", K::TextList, "W1,W2", "Input",
      "Weight columns of the randoms. Default: the same as --weights.");
  add("format-in", "", K::Choice, "FMT", "Input",
      "Catalogue format. Default auto: .fits/.fit/.fits.gz are FITS, .h5/.hdf5 HDF5, anything "
      "else text.",
      {"auto", "text", "fits", "hdf5"});
  add("fits-hdu", "", K::Integer, "N", "Input",
      "FITS HDU number (1-based, the primary HDU is 1), 0..100000. Default 0: the first binary "
      "table.");
  add("hdf5-group", "", K::Text, "GROUP", "Input",
      "HDF5 group holding the column datasets. Default /.");
  add("sky", "", K::Flag, "", "Input",
      "Columns are RA [deg], Dec [deg] and redshift, converted to comoving Cartesian Mpc/h with a "
      "flat LCDM cosmology (see --omega-m). Redshifts must be in [0, 100].");
  add("omega-m", "", K::Number, "OM", "Input",
      "Matter density of the fiducial flat LCDM cosmology used with --sky. Default 0.31, range "
      "(0, 1].");

  add("rmin", "", K::Number, "R", "Binning",
      "Smallest separation in Mpc/h (exclusive: pairs need rmin < d < rmax). Range >= 0; > 0 "
      "with --log-bins.",
      {}, true);
  add("rmax", "", K::Number, "R", "Binning",
      "Largest separation in Mpc/h (exclusive). Must be > rmin; periodic boxes need rmax < L/2 "
      "(2pcf) and rmax <= L/4 (3pcf, 4pcf).",
      {}, true);
  add("nbins", "", K::Integer, "N", "Binning",
      "Number of radial bins: 1..255 (4pcf and 4pcf-parity: 1..16).", {}, true);
  add("log-bins", "", K::Flag, "", "Binning",
      "Bins equally spaced in log10(r) instead of linear (needs rmin > 0).");

  add("periodic", "", K::Flag, "", "Geometry",
      "Periodic cube [0, L)^3 with minimum-image distances; coordinates are wrapped into the box.");
  add("box", "", K::Number, "L", "Geometry",
      "Side L of the periodic box in Mpc/h (only with --periodic, where it is required; > 0).");
  add("directions", "", K::Choice, "MODE", "Geometry",
      "Spoke directions for the parity of 4pcf-parity: pixel (centre of a direction pixel stored "
      "per edge) or exact (from the coordinates). Default pixel.",
      {"pixel", "exact"});
  add("pixel-grid", "", K::Text, "NTxNP", "Geometry",
      "Direction pixel grid, theta x phi pixels. Default 8x32; ntheta >= 1, nphi >= 2 and even, "
      "ntheta*nphi <= 65536.");

  add("threads", "", K::Integer, "N", "Execution",
      "Worker threads, 0..4096. Default 0 = all hardware threads; results do not depend on it.");
  add("backend", "", K::Choice, "NAME", "Execution",
      "Compute backend: cpu, cuda (an error if no usable GPU) or auto (cuda when available). "
      "Default cpu.",
      {"cpu", "cuda", "auto"});

  add("output", "-o", K::Text, "OUT", "Output",
      "Output file; its directory must exist. With several statistics, one file per statistic "
      "named <stem>_<stat><ext> beside OUT (out.h5 -> out_3pcf.h5, out_4pcf.h5).",
      {}, true);
  add("format", "", K::Choice, "FMT", "Output",
      "Output format: hdf5 (default; datasets with units, bin edges, config and provenance) or "
      "gramsci (GRAMSCI v2 text columns).",
      {"hdf5", "gramsci"});
  return s;
}

std::string trim(std::string s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    auto pos = s.find(',', start);
    out.push_back(trim(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start)));
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  return out;
}

std::string describe(const JobValue& v) {
  struct V {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const {
      char buf[32];
      auto r = std::to_chars(buf, buf + sizeof buf, d);
      return std::string(buf, r.ptr);
    }
    std::string operator()(const std::string& s) const { return "'" + s + "'"; }
    std::string operator()(const std::vector<std::string>& l) const {
      std::string s = "[";
      for (std::size_t i = 0; i < l.size(); ++i) s += (i ? ", '" : "'") + l[i] + "'";
      return s + "]";
    }
  };
  return std::visit(V{}, v);
}

/// Typed access to the values with problems collected, each naming its key.
class ValueReader {
public:
  ValueReader(const JobValues& v, std::string prefix, std::vector<std::string>& problems)
      : v_(v), prefix_(std::move(prefix)), problems_(problems) {}

  void problem(const std::string& key, const std::string& what) {
    problems_.push_back(prefix_ + key + ": " + what);
  }
  bool has(const std::string& key) const { return v_.count(key) != 0; }

  /// The value as the user wrote it (strings unquoted): what range messages echo, so that a
  /// value is never reported clipped or converted.
  std::string original(const std::string& key) const {
    auto it = v_.find(key);
    if (it == v_.end()) return {};
    if (auto s = std::get_if<std::string>(&it->second)) return trim(*s);
    return describe(it->second);
  }

  std::optional<std::string> text(const std::string& key) {
    auto it = v_.find(key);
    if (it == v_.end()) return std::nullopt;
    if (auto s = std::get_if<std::string>(&it->second)) {
      auto t = trim(*s);
      if (t.empty()) {
        problem(key, "empty value");
        return std::nullopt;
      }
      return t;
    }
    problem(key, "expected a string, got " + describe(it->second));
    return std::nullopt;
  }

  std::optional<std::vector<std::string>> list(const std::string& key) {
    auto it = v_.find(key);
    if (it == v_.end()) return std::nullopt;
    std::vector<std::string> items;
    if (auto s = std::get_if<std::string>(&it->second)) {
      items = split_commas(*s);
    } else if (auto l = std::get_if<std::vector<std::string>>(&it->second)) {
      for (const auto& e : *l)
        for (auto& part : split_commas(e)) items.push_back(std::move(part));
    } else if (auto i = std::get_if<std::int64_t>(&it->second)) {
      items.push_back(std::to_string(*i));
    } else {
      problem(key, "expected a list of strings, got " + describe(it->second));
      return std::nullopt;
    }
    for (const auto& e : items)
      if (e.empty()) {
        problem(key, "empty item in " + describe(it->second));
        return std::nullopt;
      }
    if (items.empty()) {
      problem(key, "empty list");
      return std::nullopt;
    }
    return items;
  }

  std::optional<double> number(const std::string& key) {
    auto it = v_.find(key);
    if (it == v_.end()) return std::nullopt;
    double d = 0;
    if (auto p = std::get_if<double>(&it->second)) {
      d = *p;
    } else if (auto i = std::get_if<std::int64_t>(&it->second)) {
      d = static_cast<double>(*i);
    } else if (auto s = std::get_if<std::string>(&it->second)) {
      auto t = trim(*s);
      const char* b = t.data() + (t.size() > 1 && t[0] == '+' ? 1 : 0);
      auto r = std::from_chars(b, t.data() + t.size(), d);
      if (t.empty() || r.ec != std::errc() || r.ptr != t.data() + t.size()) {
        problem(key, "'" + *s + "' is not a number");
        return std::nullopt;
      }
    } else {
      problem(key, "expected a number, got " + describe(it->second));
      return std::nullopt;
    }
    if (!std::isfinite(d)) {
      problem(key, "must be finite, got " + describe(it->second));
      return std::nullopt;
    }
    return d;
  }

  std::optional<std::int64_t> integer(const std::string& key) {
    auto it = v_.find(key);
    if (it == v_.end()) return std::nullopt;
    if (auto i = std::get_if<std::int64_t>(&it->second)) return *i;
    if (auto p = std::get_if<double>(&it->second)) {
      if (std::isfinite(*p) && std::floor(*p) == *p && std::fabs(*p) < 9.0e15)
        return static_cast<std::int64_t>(*p);
    } else if (auto s = std::get_if<std::string>(&it->second)) {
      auto t = trim(*s);
      std::int64_t i = 0;
      const char* b = t.data() + (t.size() > 1 && t[0] == '+' ? 1 : 0);
      auto r = std::from_chars(b, t.data() + t.size(), i);
      if (!t.empty() && r.ec == std::errc() && r.ptr == t.data() + t.size()) return i;
      if (!t.empty() && r.ec == std::errc::result_out_of_range && r.ptr == t.data() + t.size()) {
        problem(key, "'" + t + "' is out of range (a 64-bit integer)");
        return std::nullopt;
      }
    }
    problem(key, describe(it->second) + " is not an integer");
    return std::nullopt;
  }

  bool flag(const std::string& key) {
    auto it = v_.find(key);
    if (it == v_.end()) return false;
    if (auto b = std::get_if<bool>(&it->second)) return *b;
    if (auto s = std::get_if<std::string>(&it->second)) {
      auto t = trim(*s);
      if (t == "true" || t == "1" || t == "yes" || t == "on") return true;
      if (t == "false" || t == "0" || t == "no" || t == "off") return false;
    }
    if (auto i = std::get_if<std::int64_t>(&it->second)) {
      if (*i == 0 || *i == 1) return *i == 1;
    }
    problem(key, "expected true or false, got " + describe(it->second));
    return false;
  }

  /// One of the schema's choices.
  std::optional<std::string> choice(const std::string& key) {
    auto t = text(key);
    if (!t) return std::nullopt;
    const JobOption* o = find_job_option(key);
    if (o && std::find(o->choices.begin(), o->choices.end(), *t) == o->choices.end()) {
      problem(key, "unknown value '" + *t + "' (allowed: " + joined_choices(*o) + ")");
      return std::nullopt;
    }
    return t;
  }

  static std::string joined_choices(const JobOption& o) {
    std::string s;
    for (std::size_t i = 0; i < o.choices.size(); ++i) s += (i ? ", " : "") + o.choices[i];
    return s;
  }

private:
  const JobValues& v_;
  std::string prefix_;
  std::vector<std::string>& problems_;
};

std::string resolve_path(const std::string& p, const std::string& base_dir) {
  fs::path path(p);
  if (base_dir.empty() || path.is_absolute()) return p;
  return (fs::path(base_dir) / path).lexically_normal().string();
}

io::CatalogueFormat catalogue_format_from(const std::string& s) {
  if (s == "text") return io::CatalogueFormat::Text;
  if (s == "fits") return io::CatalogueFormat::Fits;
  if (s == "hdf5") return io::CatalogueFormat::Hdf5;
  return io::CatalogueFormat::Auto;
}

const char* to_string(io::CatalogueFormat f) {
  switch (f) {
    case io::CatalogueFormat::Text: return "text";
    case io::CatalogueFormat::Fits: return "fits";
    case io::CatalogueFormat::Hdf5: return "hdf5";
    case io::CatalogueFormat::Auto: break;
  }
  return "auto";
}

Statistic statistic_from_key(const std::string& s) {
  if (s == "2pcf") return Statistic::TwoPoint;
  if (s == "3pcf") return Statistic::ThreePoint;
  if (s == "3pcf-equilateral") return Statistic::ThreePointEquilateral;
  if (s == "4pcf") return Statistic::FourPoint;
  return Statistic::FourPointParity;  // the only remaining schema choice
}

const char* statistic_key(Statistic s) {
  switch (s) {
    case Statistic::TwoPoint: return "2pcf";
    case Statistic::ThreePoint: return "3pcf";
    case Statistic::ThreePointEquilateral: return "3pcf-equilateral";
    case Statistic::FourPoint: return "4pcf";
    case Statistic::FourPointParity: break;
  }
  return "4pcf-parity";
}

bool is_four_point(Statistic s) {
  return s == Statistic::FourPoint || s == Statistic::FourPointParity;
}

std::string number_text(double d) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, r.ptr);
}

}  // namespace

const std::vector<JobOption>& npcf_job_options() {
  static const std::vector<JobOption> schema = build_schema();
  return schema;
}

const JobOption* find_job_option(std::string_view key) {
  for (const auto& o : npcf_job_options())
    if (o.key == key) return &o;
  return nullptr;
}

NpcfConfig NpcfJob::config_for(Statistic s) const {
  NpcfConfig c = config;
  c.statistic = s;
  return c;
}

std::vector<std::string> NpcfJob::output_paths() const {
  if (statistics.size() <= 1) return {output};
  fs::path out(output);
  std::vector<std::string> paths;
  for (Statistic s : statistics) {
    fs::path name = out.stem();
    name += std::string("_") + statistic_key(s);
    name += out.extension();
    paths.push_back((out.parent_path() / name).string());
  }
  return paths;
}

NpcfJob make_npcf_job(const JobValues& values, const std::string& base_dir,
                      const std::string& field_prefix) {
  std::vector<std::string> problems;
  ValueReader r(values, field_prefix, problems);
  NpcfJob job;

  for (const auto& [key, value] : values)
    if (!find_job_option(key)) r.problem(key, "unknown option");
  for (const auto& o : npcf_job_options())
    if (o.required && !r.has(o.key)) r.problem(o.key, "is required");

  // Statistics.
  if (auto stats = r.list("stat")) {
    const JobOption* o = find_job_option("stat");
    for (const auto& s : *stats) {
      if (std::find(o->choices.begin(), o->choices.end(), s) == o->choices.end()) {
        r.problem("stat", "unknown statistic '" + s + "' (allowed: " +
                              ValueReader::joined_choices(*o) + ")");
        continue;
      }
      Statistic st = statistic_from_key(s);
      if (std::find(job.statistics.begin(), job.statistics.end(), st) != job.statistics.end())
        r.problem("stat", "'" + s + "' requested twice");
      else
        job.statistics.push_back(st);
    }
  }

  // Catalogues.
  io::CatalogueSpec base;
  if (auto f = r.choice("format-in")) base.format = catalogue_format_from(*f);
  if (auto h = r.integer("fits-hdu")) {
    if (*h < 0 || *h > 100000)
      r.problem("fits-hdu", "must be 0 (first binary table) or a 1-based HDU number up to "
                            "100000, got " + r.original("fits-hdu"));
    else
      base.fits_hdu = static_cast<int>(*h);
  }
  if (auto g = r.text("hdf5-group")) base.hdf5_group = *g;
  base.sky = r.flag("sky");
  if (auto om = r.number("omega-m")) {
    if (!(*om > 0.0 && *om <= 1.0))
      r.problem("omega-m", "must be in (0, 1], got " + number_text(*om));
    base.cosmology.omega_m = *om;
  }
  auto check_columns = [&](const std::string& key, const std::vector<std::string>& cols) {
    if (cols.size() != 3)
      r.problem(key, "expected 3 coordinate columns (" +
                         std::string(base.sky ? "ra,dec,redshift" : "x,y,z") + "), got " +
                         std::to_string(cols.size()));
  };
  job.data = base;
  if (auto d = r.text("data")) job.data.path = resolve_path(*d, base_dir);
  if (auto c = r.list("data-columns")) {
    check_columns("data-columns", *c);
    job.data.columns = *c;
  }
  if (auto w = r.list("weights")) job.data.weight_columns = *w;
  if (auto rp = r.text("randoms")) {
    io::CatalogueSpec ran = job.data;
    ran.path = resolve_path(*rp, base_dir);
    if (auto c = r.list("randoms-columns")) {
      check_columns("randoms-columns", *c);
      ran.columns = *c;
    }
    if (auto w = r.list("randoms-weights")) ran.weight_columns = *w;
    job.randoms = std::move(ran);
  } else {
    if (r.has("randoms-columns")) r.problem("randoms-columns", "given without randoms");
    if (r.has("randoms-weights")) r.problem("randoms-weights", "given without randoms");
  }

  // Binning and geometry.
  NpcfConfig& c = job.config;
  if (auto v = r.number("rmin")) c.bins.rmin = *v;
  if (auto v = r.number("rmax")) c.bins.rmax = *v;
  if (auto v = r.integer("nbins")) {
    // The schema's range on the 64-bit value, echoed as written; within it NpcfConfig::validate()
    // adds the 4pCF limit (1..16) with the same exact value.
    if (*v < 1 || *v > 255)
      r.problem("nbins", "must be in 1..255 (4pcf and 4pcf-parity: 1..16), got " + r.original("nbins"));
    else
      c.bins.nbins = static_cast<int>(*v);
  }
  c.bins.scale = r.flag("log-bins") ? BinScale::Log : BinScale::Linear;
  c.periodic = r.flag("periodic");
  if (auto b = r.number("box")) {
    if (!c.periodic) r.problem("box", "is only used with periodic (add --periodic / periodic = true)");
    c.box = *b;
  }  // a periodic job without a box is reported by NpcfConfig::validate() (field box)
  if (!c.periodic && !job.randoms && r.has("data"))
    r.problem("randoms", "a random catalogue is required unless the box is periodic");
  if (auto d = r.choice("directions"))
    c.directions = *d == "exact" ? DirectionMode::Exact : DirectionMode::Pixel;
  if (auto g = r.text("pixel-grid")) {
    auto x = g->find_first_of("xX");
    std::int64_t nt = 0, np = 0;
    bool ok = x != std::string::npos;
    if (ok) {
      auto a = std::from_chars(g->data(), g->data() + x, nt);
      auto b = std::from_chars(g->data() + x + 1, g->data() + g->size(), np);
      ok = a.ec == std::errc() && a.ptr == g->data() + x && b.ec == std::errc() &&
           b.ptr == g->data() + g->size();
    }
    if (!ok)
      r.problem("pixel-grid", "'" + *g + "' is not of the form NTHETAxNPHI (e.g. 8x32)");
    else if (nt < 1 || nt > 65536 || np < 1 || np > 65536)
      r.problem("pixel-grid", "'" + *g + "': ntheta and nphi must be in 1..65536 (ntheta*nphi <= 65536)");
    else {
      c.pixel_ntheta = static_cast<int>(nt);
      c.pixel_nphi = static_cast<int>(np);
    }
  }
  c.store_pixels = c.directions == DirectionMode::Pixel &&
                   std::find(job.statistics.begin(), job.statistics.end(),
                             Statistic::FourPointParity) != job.statistics.end();

  // Execution and output.
  if (auto t = r.integer("threads")) {
    if (*t < 0 || *t > 4096)
      r.problem("threads", "must be in 0..4096 (0 = all hardware threads), got " + r.original("threads"));
    else
      c.threads = static_cast<int>(*t);
  }
  if (auto b = r.choice("backend"))
    c.backend = *b == "cuda" ? Backend::Cuda : *b == "auto" ? Backend::Auto : Backend::Cpu;
  if (auto o = r.text("output")) job.output = resolve_path(*o, base_dir);
  if (auto f = r.choice("format")) job.format = *f == "gramsci" ? OutputFormat::Gramsci : OutputFormat::Hdf5;

  // Ranges, per statistic, through the engine's own validation (messages deduplicated).
  if (!job.statistics.empty()) c.statistic = job.statistics.front();
  const std::string where = (!field_prefix.empty() && field_prefix[0] == '-') ? "" : field_prefix;
  std::set<std::string> seen(problems.begin(), problems.end());
  for (Statistic s : job.statistics) {
    NpcfConfig cs = job.config_for(s);
    for (const auto& msg : cs.validate()) {
      // NpcfConfig names its fields; rename them to schema keys ("pixel_nphi" -> pixel-grid).
      std::string m = where + msg;
      auto colon = msg.find(": ");
      if (colon != std::string::npos) {
        std::string f = msg.substr(0, colon);
        std::string key = (f == "pixel_ntheta" || f == "pixel_nphi") ? "pixel-grid" : f;
        if (find_job_option(key)) m = field_prefix + key + msg.substr(colon);
      }
      if (is_four_point(s) && job.statistics.size() > 1) m += std::string(" (for ") + statistic_key(s) + ")";
      if (seen.insert(m).second) problems.push_back(m);
    }
  }

  if (!problems.empty()) {
    std::string all;
    for (std::size_t i = 0; i < problems.size(); ++i) all += (i ? "; " : "") + problems[i];
    throw ConfigError("", all);
  }
  return job;
}

JobValues to_job_values(const NpcfJob& job) {
  JobValues v;
  std::vector<std::string> stats;
  for (Statistic s : job.statistics) stats.emplace_back(statistic_key(s));
  v["stat"] = stats;
  v["data"] = job.data.path;
  if (!job.data.columns.empty()) v["data-columns"] = job.data.columns;
  if (!job.data.weight_columns.empty()) v["weights"] = job.data.weight_columns;
  if (job.randoms) {
    v["randoms"] = job.randoms->path;
    if (job.randoms->columns != job.data.columns) v["randoms-columns"] = job.randoms->columns;
    if (job.randoms->weight_columns != job.data.weight_columns)
      v["randoms-weights"] = job.randoms->weight_columns;
  }
  if (job.data.format != io::CatalogueFormat::Auto) v["format-in"] = std::string(to_string(job.data.format));
  if (job.data.fits_hdu != 0) v["fits-hdu"] = std::int64_t{job.data.fits_hdu};
  if (job.data.hdf5_group != "/") v["hdf5-group"] = job.data.hdf5_group;
  if (job.data.sky) {
    v["sky"] = true;
    v["omega-m"] = job.data.cosmology.omega_m;
  }
  const NpcfConfig& c = job.config;
  v["rmin"] = c.bins.rmin;
  v["rmax"] = c.bins.rmax;
  v["nbins"] = std::int64_t{c.bins.nbins};
  if (c.bins.scale == BinScale::Log) v["log-bins"] = true;
  if (c.periodic) {
    v["periodic"] = true;
    v["box"] = c.box;
  }
  v["directions"] = std::string(c.directions == DirectionMode::Exact ? "exact" : "pixel");
  v["pixel-grid"] = std::to_string(c.pixel_ntheta) + "x" + std::to_string(c.pixel_nphi);
  v["threads"] = std::int64_t{c.threads};
  v["backend"] = std::string(c.backend == Backend::Cuda ? "cuda" : c.backend == Backend::Auto ? "auto" : "cpu");
  v["output"] = job.output;
  v["format"] = std::string(to_string(job.format));
  return v;
}

}  // namespace almagest::npcf
