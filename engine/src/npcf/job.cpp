// The N-point job schema (declared once: kind, default, range, unit, help) and its validation into
// an NpcfJob. The cross-field rules live here too, so every front end reports the same messages.
#include "almagest/npcf/job.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "almagest/core/backend.hpp"
#include "almagest/core/error.hpp"
#include "almagest/npcf/regions.hpp"

namespace almagest::npcf {

namespace fs = std::filesystem;
using schema::Field;
using schema::Kind;
using schema::Role;

const char* to_string(OutputFormat f) {
  return f == OutputFormat::Gramsci ? "gramsci" : f == OutputFormat::Text ? "text" : "hdf5";
}

namespace {

schema::Schema build_schema() {
  schema::Schema s;
  s.engine = "npcf";
  s.help = "N-point correlation functions (2pCF, 3pCF, 4pCF, parity 4pCF) of a catalogue with the "
           "GRAMSCI v2 estimator, all statistics of a job from one neighbour graph.";
  auto add = [&](std::string key, Kind kind, std::string value_name, std::string group,
                 std::string help) -> Field& {
    Field f;
    f.key = std::move(key);
    f.kind = kind;
    f.value_name = std::move(value_name);
    f.group = std::move(group);
    f.help = std::move(help);
    s.fields.push_back(std::move(f));
    return s.fields.back();
  };
  const std::string mpc = "Mpc/h";

  {
    Field& f = add("stat", Kind::ChoiceList, "STAT", "Statistic",
                   "Statistic(s) computed from one neighbour graph: 2pcf (xi), 3pcf (all triangles "
                   "b1<=b2<=b3), 3pcf-equilateral, 4pcf (even, with connected part), 4pcf-parity "
                   "(even and odd channels). Several, comma-separated (3pcf,4pcf), are written to "
                   "one file each (see --output).");
    f.choices = {"2pcf", "3pcf", "3pcf-equilateral", "4pcf", "4pcf-parity"};
    f.required = true;
  }
  {
    Field& f = add("data", Kind::Text, "FILE", "Input",
                   "Data catalogue: text (whitespace or CSV, x y z [w], '#' header may name "
                   "columns), FITS binary table (e.g. a survey catalogue with RA, DEC, Z and "
                   "weight columns, with --sky) or HDF5 (one 1-D dataset per column). Required "
                   "unless --region is given.");
    f.role = Role::InputFile;
  }
  add("randoms", Kind::Text, "FILE", "Input",
      "Random catalogue (same formats). Required unless --periodic, where analytic randoms are "
      "used when it is omitted.")
      .role = Role::InputFile;
  add("region", Kind::TextList, "NAME:DATA:RANDOMS", "Input",
      "Several sky regions (e.g. the galactic caps NGC and SGC), each with its own data and "
      "random catalogue (read with the job's columns, weights and format options), measured "
      "independently and combined at the level of counts: each region's normalised counts "
      "weighted by S^k (S its summed data weight, k the order of the statistic), the "
      "estimators recomputed from the sums. Repeat the option (or give a list in a job file); "
      "replaces --data/--randoms. Each region's own result is written beside the combination "
      "(HDF5: groups region/NAME; text: <stem>_NAME<ext>). Not with --periodic or --jackknife.");
  add("data-columns", Kind::TextList, "C1,C2,C3", "Input",
      "Coordinate columns of the data: x,y,z in Mpc/h, or ra,dec,redshift with --sky. Column "
      "names, or 1-based numbers for text files. Default: text 1,2,3; FITS/HDF5 x,y,z "
      "(RA,DEC,Z with --sky).");
  add("randoms-columns", Kind::TextList, "C1,C2,C3", "Input",
      "Coordinate columns of the randoms. Default: the same as --data-columns.");
  add("weights", Kind::TextList, "W1,W2", "Input",
      "Weight columns of the data, multiplied together (e.g. WEIGHT,WEIGHT_FKP). Default: text "
      "column 4 if present, else unit weights; FITS/HDF5 unit weights. Weights are normalised "
      "(data sum +1, randoms -1); a sum of zero is an error.");
  add("randoms-weights", Kind::TextList, "W1,W2", "Input",
      "Weight columns of the randoms. Default: the same as --weights.");
  {
    Field& f = add("format-in", Kind::Choice, "FMT", "Input",
                   "Catalogue format: auto (.fits/.fit/.fits.gz are FITS, .h5/.hdf5 HDF5, "
                   "anything else text), text, fits or hdf5.");
    f.choices = {"auto", "text", "fits", "hdf5"};
    f.default_value = std::string("auto");
  }
  {
    Field& f = add("fits-hdu", Kind::Integer, "N", "Input",
                   "FITS HDU number (1-based, the primary HDU is 1); 0: the first binary table.");
    f.default_value = std::int64_t{0};
    f.min = 0;
    f.max = 100000;
  }
  add("hdf5-group", Kind::Text, "GROUP", "Input", "HDF5 group holding the column datasets.")
      .default_value = std::string("/");
  add("sky", Kind::Flag, "", "Input",
      "Columns are RA [deg], Dec [deg] and redshift, converted to comoving Cartesian Mpc/h with a "
      "flat LCDM cosmology (see --omega-m). Redshifts must be in [0, 100].")
      .default_value = false;
  {
    Field& f = add("omega-m", Kind::Number, "OM", "Input",
                   "Matter density of the fiducial flat LCDM cosmology used with --sky.");
    f.default_value = 0.31;
    f.min = 0;
    f.min_exclusive = true;
    f.max = 1;
  }

  {
    Field& f = add("rmin", Kind::Number, "R", "Binning",
                   "Smallest separation (exclusive: pairs need rmin < d < rmax); > 0 with "
                   "--log-bins.");
    f.unit = mpc;
    f.min = 0;
    f.required = true;
  }
  {
    Field& f = add("rmax", Kind::Number, "R", "Binning",
                   "Largest separation (exclusive). Must be > rmin; periodic boxes need rmax < L/2 "
                   "(2pcf) and rmax <= L/4 (3pcf, 4pcf).");
    f.unit = mpc;
    f.min = 0;
    f.min_exclusive = true;
    f.required = true;
  }
  {
    Field& f = add("nbins", Kind::Integer, "N", "Binning",
                   "Number of radial bins (4pcf and 4pcf-parity: at most 20).");
    f.min = 1;
    f.max = 255;
    f.required = true;
  }
  add("log-bins", Kind::Flag, "", "Binning",
      "Bins equally spaced in log10(r) instead of linear (needs rmin > 0).")
      .default_value = false;
  {
    Field& f = add("nmu", Kind::Integer, "M", "Binning",
                   "Anisotropic binning: M mu bins. 2pcf: mu of the pair against the line of sight "
                   "to its midpoint (z axis in a periodic box) over [-1, 1], one row per (r, mu); "
                   "3pcf: |mu| of the triangle's normal (line of sight to its centroid) over "
                   "[0, 1]; 4pcf: adds the xi_2, xi_4 terms to zeta_disc. 1 = isotropic.");
    f.default_value = std::int64_t{1};
    f.min = 1;
    f.max = 100;
  }
  add("multipoles", Kind::Flag, "", "Binning",
      "2pcf: also compute the multipoles xi_0, xi_2, xi_4 (always with nmu > 1).")
      .default_value = false;

  add("periodic", Kind::Flag, "", "Geometry",
      "Periodic cube [0, L)^3 with minimum-image distances; coordinates are wrapped into the box.")
      .default_value = false;
  {
    Field& f = add("box", Kind::Number, "L", "Geometry",
                   "Side L of the periodic box (only with --periodic, where it is required).");
    f.unit = mpc;
    f.min = 0;
    f.min_exclusive = true;
  }
  {
    Field& f = add("directions", Kind::Choice, "MODE", "Geometry",
                   "Spoke directions for the parity of 4pcf-parity: pixel (centre of a direction "
                   "pixel stored per edge) or exact (from the coordinates).");
    f.choices = {"pixel", "exact"};
    f.default_value = std::string("pixel");
  }
  add("pixel-grid", Kind::Text, "NTxNP", "Geometry",
      "Direction pixel grid, theta x phi pixels; ntheta >= 1, nphi >= 2 and even, "
      "ntheta*nphi <= 65536.")
      .default_value = std::string("8x32");

  {
    Field& f = add("threads", Kind::Integer, "N", "Execution",
                   "Worker threads; 0 = all hardware threads. Results do not depend on it.");
    f.default_value = std::int64_t{0};
    f.min = 0;
    f.max = 4096;
  }
  {
    Field& f = add("hub-order", Kind::Choice, "ORDER", "Execution",
                   "CPU backend: order of the hubs. spatial: data and randoms each sorted along a "
                   "Morton (Z-order) curve of their positions before the graph is built (faster; "
                   "under mpirun each rank builds only its region's part of the graph); input: the "
                   "catalogue order. Counts do not depend on it and sums only in their last bits, "
                   "except mu-binned rows (the sign of a pair's mu) and the parity 4pCF's odd "
                   "channel (spokes and relabelling signs from the lowest-index point); auto: "
                   "spatial unless the job has mu bins or 4pcf-parity, then input (the published "
                   "convention).");
    f.choices = {"auto", "spatial", "input"};
    f.default_value = std::string("auto");
  }
  {
    Field& f = add("host-memory", Kind::Integer, "MIB", "Execution",
                   "Host memory the job may use, MiB; 0 = the memory available now. A job whose "
                   "counting tables, row sums and results (the --dry-run report) exceed it is "
                   "refused before any work.");
    f.default_value = std::int64_t{0};
    f.min = 0;
    f.unit = "MiB";
  }
  add("backend", Kind::Text, "NAME", "Execution",
      "Compute backend: cpu; cuda (every visible GPU; an error if none is usable); cuda:N (GPU N "
      "alone); auto (cuda when a GPU is usable, else the CPU, with the reason logged).")
      .default_value = std::string("cpu");

  {
    Field& f = add("jackknife", Kind::Integer, "N", "Errors",
                   "Delete-one jackknife over N regions (0 = off): realisation m omits every tuple "
                   "touching region m; per-realisation results, mean, sigma and covariance are "
                   "written beside the result. Regions from the label files, else N equal-count "
                   "angular regions (sin(dec) bands x phi slices at the randoms' quantiles). Needs "
                   "randoms; refused in a periodic box. Costs N evaluations.");
    f.default_value = std::int64_t{0};
    f.min = 0;
    f.max = 1000;
  }
  add("jackknife-labels", Kind::Text, "FILE", "Errors",
      "Region label (1..N) per data row, one integer a line, for --jackknife.");
  add("randoms-jackknife-labels", Kind::Text, "FILE", "Errors",
      "Region label (1..N) per random row, for --jackknife (with --jackknife-labels).");
  {
    Field& f = add("output", Kind::Text, "OUT", "Output",
                   "Output file; its directory must exist. With several statistics, one file per "
                   "statistic named <stem>_<stat><ext> beside OUT (out.h5 -> out_3pcf.h5, "
                   "out_4pcf.h5).");
    f.short_flag = "-o";
    f.required = true;
    f.role = Role::OutputFile;
  }
  {
    Field& f = add("format", Kind::Choice, "FMT", "Output",
                   "Output format: hdf5 (datasets with units, bin edges, config and provenance), "
                   "gramsci (the published GRAMSCI v2 text layouts, numbers as e14.7) or text "
                   "(the same columns at full precision).");
    f.choices = {"hdf5", "gramsci", "text"};
    f.default_value = std::string("hdf5");
  }
  return s;
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

std::string absolute_path(const std::string& p) {
  std::error_code ec;
  fs::path a = fs::absolute(p, ec);
  return ec ? p : a.lexically_normal().string();
}

}  // namespace

const schema::Schema& npcf_schema() {
  static const schema::Schema s = build_schema();
  return s;
}

NpcfConfig NpcfJob::config_for(Statistic s) const {
  NpcfConfig c = config;
  c.statistic = s;
  return c;
}

std::vector<std::string> NpcfJob::input_paths() const {
  std::vector<std::string> in;
  if (regions.empty()) {
    in.push_back(data.path);
    if (randoms) in.push_back(randoms->path);
  }
  for (const auto& g : regions) {
    in.push_back(g.data.path);
    in.push_back(g.randoms.path);
  }
  if (!jackknife_labels.empty()) in.push_back(jackknife_labels);
  if (!randoms_jackknife_labels.empty()) in.push_back(randoms_jackknife_labels);
  return in;
}

std::vector<std::string> NpcfJob::jackknife_paths() const {
  std::vector<std::string> out;
  if (jackknife == 0 || format == OutputFormat::Hdf5) return out;
  for (const auto& p : output_paths()) {
    out.push_back(p + ".jk");
    out.push_back(p + ".jkerr");
  }
  return out;
}

std::vector<std::string> NpcfJob::region_paths() const {
  std::vector<std::string> out;
  if (regions.empty() || format == OutputFormat::Hdf5) return out;
  for (const auto& g : regions)
    for (const auto& p : output_paths()) {
      fs::path o(p);
      fs::path name = o.stem();
      name += "_" + g.name;
      name += o.extension();
      out.push_back((o.parent_path() / name).string());
    }
  return out;
}

std::vector<std::string> NpcfJob::output_paths() const {
  if (statistics.size() <= 1) return {output};
  fs::path out(output);
  std::vector<std::string> paths;
  for (Statistic s : statistics) {
    fs::path name = out.stem();
    name += std::string("_") + to_string(s);
    name += out.extension();
    paths.push_back((out.parent_path() / name).string());
  }
  return paths;
}

NpcfJob make_npcf_job(const schema::Values& values, const std::string& base_dir,
                      const std::string& field_prefix) {
  const schema::Schema& sc = npcf_schema();
  schema::Reader r(sc, values, field_prefix);
  NpcfJob job;
  r.check_keys();

  // Statistics: the schema's choices, in the order given, each once.
  if (auto stats = r.list("stat")) {
    const Field* f = sc.find("stat");
    for (const auto& s : *stats) {
      if (std::find(f->choices.begin(), f->choices.end(), s) == f->choices.end()) {
        std::string allowed;
        for (const auto& c : f->choices) allowed += (allowed.empty() ? "" : ", ") + c;
        r.problem("stat", "unknown statistic '" + s + "' (allowed: " + allowed + ")");
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
  if (auto h = r.integer("fits-hdu")) base.fits_hdu = static_cast<int>(*h);
  if (auto g = r.text("hdf5-group")) base.hdf5_group = *g;
  base.sky = r.flag("sky");
  if (auto om = r.number("omega-m")) base.cosmology.omega_m = *om;
  auto check_columns = [&](const std::string& key, const std::vector<std::string>& cols) {
    if (cols.size() != 3)
      r.problem(key, "expected 3 coordinate columns (" +
                         std::string(base.sky ? "ra,dec,redshift" : "x,y,z") + "), got " +
                         std::to_string(cols.size()));
  };
  job.data = base;
  if (auto d = r.text("data")) job.data.path = schema::resolve_path(*d, base_dir);
  if (auto c = r.list("data-columns")) {
    check_columns("data-columns", *c);
    job.data.columns = *c;
  }
  if (auto w = r.list("weights")) job.data.weight_columns = *w;
  if (auto rp = r.text("randoms")) {
    io::CatalogueSpec ran = job.data;
    ran.path = schema::resolve_path(*rp, base_dir);
    if (auto c = r.list("randoms-columns")) {
      check_columns("randoms-columns", *c);
      ran.columns = *c;
    }
    if (auto w = r.list("randoms-weights")) ran.weight_columns = *w;
    job.randoms = std::move(ran);
  } else if (!r.has("region")) {
    if (r.has("randoms-columns")) r.problem("randoms-columns", "given without randoms");
    if (r.has("randoms-weights")) r.problem("randoms-weights", "given without randoms");
  }

  // Binning and geometry (ranges from the schema; within them NpcfConfig::validate() below adds
  // the rules that depend on the statistic, e.g. nbins <= 20 for the 4pCF).
  NpcfConfig& c = job.config;
  if (auto v = r.number("rmin")) c.bins.rmin = *v;
  if (auto v = r.number("rmax")) c.bins.rmax = *v;
  if (auto v = r.integer("nbins")) c.bins.nbins = static_cast<int>(*v);
  c.bins.scale = r.flag("log-bins") ? BinScale::Log : BinScale::Linear;
  if (auto v = r.integer("nmu")) c.nmu = static_cast<int>(*v);
  c.multipoles = r.flag("multipoles");
  c.periodic = r.flag("periodic");
  if (auto b = r.number("box")) {
    if (!c.periodic) r.problem("box", "is only used with periodic (add --periodic / periodic = true)");
    c.box = *b;
  }  // a periodic job without a box is reported by NpcfConfig::validate() (field box)
  if (auto regions = r.list("region")) {
    // Regions replace data/randoms: each is a catalogue pair read with the job's options.
    if (r.has("data")) r.problem("data", "is not used with region (each region names its own data)");
    if (r.has("randoms"))
      r.problem("randoms", "is not used with region (each region names its own randoms)");
    if (regions->empty()) r.problem("region", "needs at least one NAME:DATA:RANDOMS entry");
    std::set<std::string> names;
    for (const auto& text : *regions) {
      RegionEntry e;
      std::string why;
      if (!parse_region_entry(text, e, why)) {
        r.problem("region", why);
        continue;
      }
      if (!names.insert(e.name).second) {
        r.problem("region", "region '" + e.name + "' is given twice");
        continue;
      }
      NpcfRegion g;
      g.name = e.name;
      g.data = job.data;
      g.data.path = schema::resolve_path(e.data, base_dir);
      g.randoms = job.data;
      g.randoms.path = schema::resolve_path(e.randoms, base_dir);
      if (auto rc = r.list("randoms-columns")) {
        if (job.regions.empty()) check_columns("randoms-columns", *rc);
        g.randoms.columns = *rc;
      }
      if (auto rw = r.list("randoms-weights")) g.randoms.weight_columns = *rw;
      job.regions.push_back(std::move(g));
    }
    if (!job.regions.empty()) {
      job.data = job.regions.front().data;
      job.randoms = job.regions.front().randoms;
    }
    if (c.periodic) r.problem("region", "sky regions are refused in a periodic box");
  } else if (!r.has("data")) {
    r.problem("data", "is required");
  }
  if (!c.periodic && !job.randoms && r.has("data"))
    r.problem("randoms", "a random catalogue is required unless the box is periodic");
  if (auto j = r.integer("jackknife")) job.jackknife = static_cast<int>(*j);
  if (auto l = r.text("jackknife-labels")) job.jackknife_labels = schema::resolve_path(*l, base_dir);
  if (auto l = r.text("randoms-jackknife-labels"))
    job.randoms_jackknife_labels = schema::resolve_path(*l, base_dir);
  if (job.jackknife == 1) r.problem("jackknife", "needs at least 2 regions (0 = off)");
  if (job.jackknife > 0 && !job.regions.empty())
    r.problem("jackknife", "is not combined with region (run one jackknife job per region)");
  if (job.jackknife > 0 && c.periodic)
    r.problem("jackknife", "is refused in a periodic box (regions are angular, seen from the origin)");
  if (job.jackknife > 0 && !job.randoms && !c.periodic && r.has("data"))
    r.problem("jackknife", "needs a random catalogue");
  if (job.jackknife == 0 && (!job.jackknife_labels.empty() || !job.randoms_jackknife_labels.empty()))
    r.problem("jackknife-labels", "given without --jackknife N");
  if (job.jackknife > 0 && job.jackknife_labels.empty() != job.randoms_jackknife_labels.empty())
    r.problem(job.jackknife_labels.empty() ? "jackknife-labels" : "randoms-jackknife-labels",
              "label files are needed for both the data and the randoms");
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
  if (auto t = r.integer("threads")) c.threads = static_cast<int>(*t);
  if (auto o = r.choice("hub-order"))
    c.hub_order = *o == "input" ? HubOrder::Input : *o == "spatial" ? HubOrder::Spatial : HubOrder::Auto;
  if (auto m = r.integer("host-memory")) job.host_memory_mib = static_cast<std::uint64_t>(*m);
  if (auto b = r.text("backend")) {
    try {
      c.backend = parse_backend(*b);
    } catch (const ConfigError& e) {
      const std::string m = e.what();
      r.problem("backend", m.substr(m.find(": ") == std::string::npos ? 0 : m.find(": ") + 2));
    }
  }
  if (auto o = r.text("output")) job.output = schema::resolve_path(*o, base_dir);
  if (auto f = r.choice("format"))
    job.format = *f == "gramsci" ? OutputFormat::Gramsci
                 : *f == "text"  ? OutputFormat::Text
                                 : OutputFormat::Hdf5;

  // Ranges, per statistic, through the engine's own validation (messages deduplicated).
  if (!job.statistics.empty()) c.statistic = job.statistics.front();
  // Auto hub order (HubOrder): the plan is made for the first statistic; a parity statistic later
  // in the list (its odd channel depends on which point is the hub) keeps the input order.
  if (c.hub_order == HubOrder::Auto &&
      std::find(job.statistics.begin(), job.statistics.end(), Statistic::FourPointParity) != job.statistics.end())
    c.hub_order = HubOrder::Input;
  const std::string where = (!field_prefix.empty() && field_prefix[0] == '-') ? "" : field_prefix;
  std::set<std::string> seen(r.problems().begin(), r.problems().end());
  std::vector<std::string> engine_problems;
  for (Statistic s : job.statistics) {
    NpcfConfig cs = job.config_for(s);
    for (const auto& msg : cs.validate()) {
      // NpcfConfig names its fields; rename them to schema keys ("pixel_nphi" -> pixel-grid).
      std::string m = where + msg;
      auto colon = msg.find(": ");
      std::string key;
      if (colon != std::string::npos) {
        std::string f = msg.substr(0, colon);
        key = (f == "pixel_ntheta" || f == "pixel_nphi") ? "pixel-grid" : f;
        if (sc.find(key)) m = field_prefix + key + msg.substr(colon);
      }
      // A field the schema already rejected (its value was not applied) is not reported twice.
      bool rejected = false;
      for (const auto& p : r.problems())
        if (!key.empty() && p.rfind(field_prefix + key + ": ", 0) == 0) rejected = true;
      if (rejected) continue;
      if (is_four_point(s) && job.statistics.size() > 1) m += std::string(" (for ") + to_string(s) + ")";
      if (seen.insert(m).second) engine_problems.push_back(m);
    }
  }
  if (!r.problems().empty() || !engine_problems.empty()) {
    std::string all;
    for (const auto& p : r.problems()) all += (all.empty() ? "" : "; ") + p;
    for (const auto& p : engine_problems) all += (all.empty() ? "" : "; ") + p;
    throw ConfigError("", all);
  }
  return job;
}

schema::Values to_job_values(const NpcfJob& job) {
  schema::Values v;
  std::vector<std::string> stats;
  for (Statistic s : job.statistics) stats.emplace_back(to_string(s));
  v["stat"] = stats;
  if (job.regions.empty()) v["data"] = job.data.path;
  std::vector<std::string> regions;
  for (const auto& g : job.regions) regions.push_back(g.name + ":" + g.data.path + ":" + g.randoms.path);
  if (!regions.empty()) v["region"] = regions;
  if (!job.data.columns.empty()) v["data-columns"] = job.data.columns;
  if (!job.data.weight_columns.empty()) v["weights"] = job.data.weight_columns;
  if (job.randoms) {
    if (job.regions.empty()) v["randoms"] = job.randoms->path;
    if (job.randoms->columns != job.data.columns) v["randoms-columns"] = job.randoms->columns;
    if (job.randoms->weight_columns != job.data.weight_columns)
      v["randoms-weights"] = job.randoms->weight_columns;
  }
  v["format-in"] = std::string(to_string(job.data.format));
  v["fits-hdu"] = std::int64_t{job.data.fits_hdu};
  v["hdf5-group"] = job.data.hdf5_group;
  v["sky"] = job.data.sky;
  v["omega-m"] = job.data.cosmology.omega_m;
  const NpcfConfig& c = job.config;
  v["rmin"] = c.bins.rmin;
  v["rmax"] = c.bins.rmax;
  v["nbins"] = std::int64_t{c.bins.nbins};
  v["log-bins"] = c.bins.scale == BinScale::Log;
  v["nmu"] = std::int64_t{c.nmu};
  v["multipoles"] = c.multipoles;
  v["periodic"] = c.periodic;
  if (c.periodic) v["box"] = c.box;
  v["directions"] = std::string(c.directions == DirectionMode::Exact ? "exact" : "pixel");
  v["pixel-grid"] = std::to_string(c.pixel_ntheta) + "x" + std::to_string(c.pixel_nphi);
  v["threads"] = std::int64_t{c.threads};
  v["hub-order"] = std::string(c.hub_order == HubOrder::Input ? "input" : c.hub_order == HubOrder::Spatial ? "spatial" : "auto");
  v["host-memory"] = static_cast<std::int64_t>(job.host_memory_mib);
  v["jackknife"] = std::int64_t{job.jackknife};
  if (!job.jackknife_labels.empty()) v["jackknife-labels"] = job.jackknife_labels;
  if (!job.randoms_jackknife_labels.empty()) v["randoms-jackknife-labels"] = job.randoms_jackknife_labels;
  v["backend"] = almagest::to_string(c.backend);
  v["output"] = job.output;
  v["format"] = std::string(to_string(job.format));
  return v;
}

std::string NpcfJob::config_json() const {
  nlohmann::json j = nlohmann::json::object();  // std::map keys: sorted
  for (const auto& [key, value] : to_job_values(*this)) {
    if (key == "threads" || key == "host-memory") continue;  // results do not depend on them
    std::visit([&](const auto& x) { j[key] = x; }, value);
  }
  if (regions.empty()) {
    j["data"] = absolute_path(data.path);
    if (randoms) j["randoms"] = absolute_path(randoms->path);
  } else {
    std::vector<std::string> abs;
    for (const auto& g : regions)
      abs.push_back(g.name + ":" + absolute_path(g.data.path) + ":" + absolute_path(g.randoms.path));
    j["region"] = abs;
  }
  j["output"] = absolute_path(output);
  j["engine"] = "npcf";
  return j.dump();
}

}  // namespace almagest::npcf
