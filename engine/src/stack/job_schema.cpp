// The stack job's schema and make_stack_job(): every option of `almagest-cli stack <op>` declared
// once (key, kind, default, range, unit, role, operations) and every rule the CLI used to check
// (grid, velocity ranges, bank kind, storage, method and backend, thresholds, top-k, stamp size,
// PSF sigma bounds, synthetic sizes) checked here with one message for every front end.
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "almagest/core/error.hpp"
#include "almagest/stack/job.hpp"

namespace almagest::stack {

namespace fs = std::filesystem;
using schema::Field;
using schema::Kind;
using schema::Role;
using schema::Value;

namespace {

constexpr double kPiRad = 3.14159265358979323846;
const std::vector<std::string> kReading{"psiphi", "search", "stamps"};

Field field(std::string key, Kind kind, std::string group, std::string help, std::vector<std::string> ops) {
  Field f;
  f.key = std::move(key);
  f.kind = kind;
  f.group = std::move(group);
  f.help = std::move(help);
  f.operations = std::move(ops);
  return f;
}

Field number(std::string key, std::string group, std::string help, std::vector<std::string> ops, std::string unit,
             std::optional<double> def, std::optional<double> lo, std::optional<double> hi, bool lo_excl = false,
             bool hi_excl = false) {
  Field f = field(std::move(key), Kind::Number, std::move(group), std::move(help), std::move(ops));
  f.unit = std::move(unit);
  if (def) f.default_value = *def;
  f.min = lo;
  f.max = hi;
  f.min_exclusive = lo_excl;
  f.max_exclusive = hi_excl;
  f.value_name = "X";
  return f;
}

Field integer(std::string key, std::string group, std::string help, std::vector<std::string> ops,
              std::optional<std::int64_t> def, double lo, double hi, std::string unit = "") {
  Field f = field(std::move(key), Kind::Integer, std::move(group), std::move(help), std::move(ops));
  if (def) f.default_value = *def;
  f.min = lo;
  f.max = hi;
  f.unit = std::move(unit);
  f.value_name = "N";
  return f;
}

Field text(std::string key, std::string group, std::string help, std::vector<std::string> ops, std::string value_name,
           Role role = Role::Plain, std::optional<std::string> def = std::nullopt) {
  Field f = field(std::move(key), Kind::Text, std::move(group), std::move(help), std::move(ops));
  f.value_name = std::move(value_name);
  f.role = role;
  if (def) f.default_value = *def;
  return f;
}

Field choice(std::string key, std::string group, std::string help, std::vector<std::string> ops,
             std::vector<std::string> choices, std::optional<std::string> def) {
  Field f = field(std::move(key), Kind::Choice, std::move(group), std::move(help), std::move(ops));
  f.choices = std::move(choices);
  if (def) f.default_value = *def;
  std::string vn;
  for (const auto& c : f.choices) vn += (vn.empty() ? "" : "|") + c;
  f.value_name = vn;
  return f;
}

Field flag(std::string key, std::string group, std::string help, std::vector<std::string> ops) {
  Field f = field(std::move(key), Kind::Flag, std::move(group), std::move(help), std::move(ops));
  f.default_value = false;
  return f;
}

schema::Schema build_schema() {
  const SyntheticConfig ref = reference_workload();
  schema::Schema s;
  s.engine = "stack";
  s.operation_key = "op";
  s.help = "Shift-and-stack search for moving sources too faint for single exposures (KBMOD's statistic): simulate "
           "(synthetic stacks with injected movers), psiphi, search, stamps.";
  auto& f = s.fields;
  Field op = choice("op", "Operation", "The stack operation.", {}, {"simulate", "psiphi", "search", "stamps"}, std::nullopt);
  op.required = true;
  f.push_back(op);

  // Input.
  f.push_back(text("stack", "Input",
                   "Exposure stack: a KBMOD WorkUnit FITS file (SCI_i, VAR_i, MSK_i, PSF_i, MJD), a folder of per-exposure "
                   "multi-extension FITS files, or an Almagest HDF5 cube (.h5). Required for psiphi and search; stamps: "
                   "default the stack recorded in the table",
                   kReading, "STACK", Role::InputFile));
  {
    Field c = text("candidates", "Input", "Candidate table (.ecsv or .h5): the output of search, or any table with x, y, vx, vy",
                   {"stamps"}, "CANDIDATES", Role::InputFile);
    f.push_back(c);
  }
  f.push_back(number("psf-sigma", "Input",
                     "Use a Gaussian PSF of this sigma for every exposure instead of the file's PSFs (0 = the file's PSFs)",
                     kReading, "pixels", 0.0, 0.0, kMaxPsfSigma));
  f.push_back(number("fallback-psf-sigma", "Input",
                     "Gaussian PSF sigma for exposures without a PSF (0 = a missing PSF is an error)", kReading, "pixels", 0.0,
                     0.0, kMaxPsfSigma));
  f.push_back(text("common-curve", "Bank",
                   "Known common curve added to every trajectory: text rows 'dx dy' or 'mjd dx dy' [pixels], one per exposure "
                   "(simulate writes one); stamps: default the one the search used",
                   {"search", "stamps"}, "FILE", Role::InputFile));

  // Bank.
  const std::vector<std::string> se{"search"};
  f.push_back(text("vx-range", "Bank", "Cartesian bank: vx range MIN,MAX [pixels/day], inclusive", se, "MIN,MAX"));
  f.push_back(text("vy-range", "Bank", "Cartesian bank: vy range MIN,MAX [pixels/day], inclusive", se, "MIN,MAX"));
  f.push_back(text("speed-range", "Bank", "Speed x angle bank (KBMOD's search): speeds MIN,MAX [pixels/day]", se, "MIN,MAX"));
  f.push_back(text("angle-range", "Bank", "Speed x angle bank: angles MIN,MAX [degrees] from +x towards +y", se, "MIN,MAX"));
  f.push_back(text("grid", "Bank",
                   "Values per bank axis: N or NXxNY (vx x vy, or speeds x angles), each 1..100000 and NX x NY <= 4194304",
                   se, "N|NXxNY", Role::Plain, std::string("21")));
  f.push_back(text("velocities", "Bank", "Explicit bank: text file with two columns vx vy [pixels/day] ('#' comments)", se,
                   "FILE", Role::InputFile));
  f.push_back(number("reference-mjd", "Bank",
                     "Reference time of the origins (search: default the MJD of exposure 0; stamps: default the search's)",
                     {"search", "stamps"}, "d", std::nullopt, std::nullopt, std::nullopt));

  // Search.
  f.push_back(choice("method", "Search",
                     "GPU method: gather, tiled or fourier (tensor-core, Cartesian banks, threshold mode; hits re-scored "
                     "exactly). The CPU twin computes the exact statistic for all",
                     se, {"gather", "tiled", "fourier"}, std::string("tiled")));
  {
    Field st = choice("storage", "Search",
                      "psi/phi storage: fp32, fp16 or int8 (per-image noise scaling). Default: fp32 (stamps: the search's "
                      "storage)",
                      kReading, {"fp32", "fp16", "int8"}, std::nullopt);
    f.push_back(st);
  }
  f.push_back(number("threshold-sigma", "Search", "Fixed score threshold Z (instead of Bonferroni)", se, "", std::nullopt,
                     0.0, std::nullopt, true));
  f.push_back(number("false-alarms", "Search",
                     "Bonferroni: family-wise false-alarm probability (expected pure-noise hits) over all origins x "
                     "velocities",
                     se, "", 1.0, 0.0, std::nullopt, true));
  f.push_back(integer("top-k", "Search", "Keep the best K velocities per origin instead of thresholding (0 = threshold mode)",
                      se, 0, 0, 16));
  f.push_back(integer("min-obs", "Search", "Candidates need at least this many valid samples", se, 1, 0, 1000000));
  f.push_back(integer("max-candidates", "Search", "Hits kept before clustering", se, 1000000, 1, 100000000));
  f.push_back(choice("shifts", "Search",
                     "Track sampling: integer (KBMOD's nearest pixel; exact, fast, every method) or fractional (bilinear "
                     "psi/phi at the exact track position, B corrected for the PSF correlation of neighbours; cpu "
                     "or the gather and tiled GPU methods, threshold mode)",
                     se, {"integer", "fractional"}, std::string("integer")));
  // Filters after the search (stack/filters.hpp, docs/stack.md "Candidates").
  f.push_back(number("max-masked-fraction", "Filters",
                     "Remove candidates whose track is masked or off the image in more than this share of the exposures",
                     se, "", 1.0, 0.0, 1.0));
  f.push_back(flag("no-sigma-g", "Filters", "No sigma-G clipping of the per-exposure likelihood curve", se));
  f.push_back(number("sigma-g-clip", "Filters",
                     "sigma-G: drop exposures whose residual is beyond this many sigma_G (0.7413 x the 25-75 percentile "
                     "range) of the median; the score is recomputed from the kept exposures",
                     se, "", 3.0, 0.0, 100.0, true));
  f.push_back(text("sigma-g-percentiles", "Filters", "sigma-G: the percentiles LOW,HIGH of the robust width", se, "LOW,HIGH",
                   Role::Plain, std::string("25,75")));
  f.push_back(integer("sigma-g-min-kept", "Filters", "sigma-G: remove candidates with fewer kept exposures", se, 5, 0, 1000000));
  f.push_back(number("cluster-radius", "Filters",
                     "Duplicates: a weaker candidate whose predicted track stays within this many pixels (max norm) of a "
                     "stronger one's for cluster-overlap of the exposures is merged into it",
                     se, "pixels", 3.0, 0.0, std::nullopt));
  f.push_back(number("cluster-overlap", "Filters",
                     "Duplicates: share of the exposures the two tracks must be within cluster-radius (crowded fields: raise "
                     "it towards 1)",
                     se, "", 0.5, 0.0, 1.0, true));
  f.push_back(number("cluster-share", "Filters",
                     "Duplicates: also merge when this share of a weaker candidate's A comes from exposures where its pixel "
                     "is within cluster-radius of the stronger one's (0 = off)",
                     se, "", 0.5, 0.0, 1.0));
  f.push_back(flag("no-cluster", "Filters", "Keep near-duplicate candidates (no merging)", se));
  f.push_back(number("min-motion", "Filters",
                     "Remove stationary sources: candidates whose track (common curve included) spans fewer pixels over "
                     "the stack (0 = keep them)",
                     se, "pixels", 2.0, 0.0, std::nullopt));
  f.push_back(number("stationary-ratio", "Filters",
                     "Remove a candidate when static sources explain this share of its A (the static coadd's flux at "
                     "each sampled pixel; stars seen by slow or crossing trajectories; 0 = off)",
                     se, "", 0.5, 0.0, std::nullopt));
  f.push_back(flag("no-stamp-filter", "Filters", "No stamp filter", se));
  f.push_back(integer("stamp-filter-radius", "Filters", "Stamp filter: radius of the coadded stamps", se, 5, 1, 100, "pixels"));
  f.push_back(number("stamp-median-ratio", "Filters",
                     "Stamp filter: the median stamp's PSF-matched flux must be at least this share of the mean stamp's "
                     "(rejects flux from a few exposures: cosmic rays, star crossings, variable stars)",
                     se, "", 0.3, 0.0, 1.0));
  f.push_back(number("stamp-max-size", "Filters",
                     "Stamp filter: the weighted-mean stamp's second-moment size must be within this factor of the PSF's",
                     se, "", 2.0, 1.0, std::nullopt));
  f.push_back(number("stamp-max-ellipticity", "Filters",
                     "Stamp filter: largest ellipticity of the weighted-mean stamp's second moments (bad columns, streaks)", se,
                     "", 0.6, 0.0, 1.0, true));

  // Output.
  {
    Field o = text("output", "Output",
                   "Output: search .ecsv or .h5/.hdf5 (candidate table); psiphi and stamps .h5/.hdf5; simulate .fits "
                   "(KBMOD WorkUnit), .h5 (HDF5 cube) or a new folder with format files",
                   {}, "OUT", Role::OutputFile);
    o.short_flag = "-o";
    o.required = true;
    f.push_back(o);
  }
  f.push_back(text("ades", "Output",
                   "Also write the candidates' per-exposure positions as ADES 2022 PSV observation rows (.psv; needs a WCS)",
                   se, "FILE", Role::OutputFile));
  f.push_back(text("mpc", "Output",
                   "Also write them as MPC 80-column observation lines (needs a WCS)", se, "FILE", Role::OutputFile));
  f.push_back(text("station", "Output", "Observatory code of the ADES/MPC rows (stn)", se, "CODE", Role::Plain,
                   std::string("500")));
  f.push_back(integer("stamp-radius", "Output", "Stamp radius; stamps are 2R+1 square", {"stamps"}, 10, 0, 1000, "pixels"));
  f.push_back(integer("top", "Output", "Only the first N candidates of the table (0 = all)", {"stamps"}, 0, 0,
                      double(std::numeric_limits<std::int32_t>::max())));

  // Run.
  f.push_back(text("backend", "Run",
                   "cpu, cuda, cuda:N (exit code 4 without a usable GPU) or auto (the GPU when one is usable, else the CPU)",
                   kReading, "cpu|cuda|cuda:N|auto", Role::Plain, std::string("cpu")));
  f.push_back(integer("device", "Run", "CUDA device index (the N of cuda:N)", kReading, 0, 0, 63));
  f.push_back(number("device-memory", "Run",
                     "Device memory the stack may occupy, 0 = the free memory. A larger stack is streamed in row bands with "
                     "identical results; the Fourier method needs it whole",
                     kReading, "MiB", 0.0, 0.0, std::nullopt));
  f.push_back(integer("threads", "Run", "CPU worker threads, 0 = all; results do not depend on it", kReading, 0, 0, 4096));

  // simulate.
  const std::vector<std::string> si{"simulate"};
  f.push_back(choice("format", "Output", "Stack format: auto (by extension), workunit, hdf5 or files", si,
                     {"auto", "workunit", "hdf5", "files"}, std::string("auto")));
  f.push_back(text("truth", "Output", "Truth table of the movers (default <stem>_truth.ecsv)", si, "FILE", Role::OutputFile));
  f.push_back(text("curve", "Output", "Common-curve file (default <stem>_curve.txt)", si, "FILE", Role::OutputFile));
  f.push_back(integer("exposures", "Stack", "Number of exposures", si, ref.n_exp, 1, kMaxSyntheticExposures));
  f.push_back(integer("width", "Stack", "Image width", si, ref.width, 8, kMaxSyntheticSide, "pixels"));
  f.push_back(integer("height", "Stack", "Image height", si, ref.height, 8, kMaxSyntheticSide, "pixels"));
  f.push_back(integer("seed", "Stack", "Random seed (the output is a function of the options)", si,
                      std::int64_t(ref.seed), 0, 9.2e18));
  f.push_back(number("baseline", "Stack", "Observation times span [0, baseline] days, irregular", si, "d",
                     ref.baseline_days, 0.0, std::nullopt, true));
  f.push_back(number("noise", "Stack", "Typical per-pixel noise sigma", si, "", ref.noise_sigma, 0.0, std::nullopt, true));
  f.push_back(number("noise-variation", "Stack", "Fractional variance variation", si, "", ref.noise_variation, 0.0, 0.9,
                     false, true));
  f.push_back(integer("holes", "Stack", "Masked holes per exposure", si, ref.holes, 0, 100000));
  f.push_back(text("seeing", "Stack", "Gaussian PSF sigma range MIN,MAX [pixels] (default 1.0,1.65), 0 < MIN <= MAX <= 50",
                   si, "MIN,MAX"));
  f.push_back(flag("no-bad-column", "Stack", "No moving bad column", si));
  f.push_back(flag("no-common-curve", "Stack", "No common track (and no curve file)", si));
  f.push_back(text("wcs", "Stack", "Add a TAN WCS: centre RA,DEC [degrees, |Dec| < 90] and pixel scale [arcsec/pixel] > 0",
                   si, "RA,DEC,SCALE"));
  f.push_back(integer("movers", "Movers",
                      "Randomly placed movers (default 1, or 0 when mover is given); tracks stay inside the image", si,
                      std::nullopt, 0, 100000));
  f.push_back(number("snr", "Movers", "Stack SNR of the random movers (and of a mover without SNR)", si, "",
                     ref.movers.at(0).snr, 0.0, std::nullopt, true));
  f.push_back(number("speed", "Movers", "Speed of the random movers", si, "pixels/day",
                     std::hypot(ref.movers.at(0).vx, ref.movers.at(0).vy), 0.0, std::nullopt));
  f.push_back(number("direction", "Movers", "Direction of the random movers [degrees from +x towards +y] (default random)",
                     si, "degrees", std::nullopt, std::nullopt, std::nullopt));
  {
    Field m = field("mover", Kind::TextList, "Movers",
                    "An explicit mover X0,Y0,VX,VY[,SNR]: position at exposure 0 [pixels], velocity [pixels/day], SNR; "
                    "repeatable (a list in job files)",
                    si);
    m.value_name = "X0,Y0,VX,VY[,SNR]";
    f.push_back(m);
  }
  return s;
}

std::string absolute(const std::string& p) { return p.empty() ? p : fs::absolute(p).lexically_normal().string(); }

std::string lower_ext(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

/// "MIN,MAX" as two finite numbers with MAX >= MIN (problem on the reader otherwise).
std::optional<std::pair<double, double>> parse_pair(schema::Reader& r, const std::string& key, const char* what) {
  auto t = r.text(key);
  if (!t) return std::nullopt;
  const std::string& text = *t;
  const auto comma = text.find(',');
  double a = std::nan(""), b = std::nan("");
  if (comma != std::string::npos) {
    try {
      std::size_t ia = 0, ib = 0;
      const std::string sa = text.substr(0, comma), sb = text.substr(comma + 1);
      a = std::stod(sa, &ia);
      b = std::stod(sb, &ib);
      if (ia != sa.size() || ib != sb.size()) a = std::nan("");
    } catch (const std::exception&) {
      a = std::nan("");
    }
  }
  if (!std::isfinite(a) || !std::isfinite(b)) {
    r.problem(key, "expected " + std::string(what) + " as two numbers 'MIN,MAX', got '" + text + "'");
    return std::nullopt;
  }
  if (b < a) {
    r.problem(key, fmt::format("maximum {} is below minimum {}", b, a));
    return std::nullopt;
  }
  return std::pair{a, b};
}

/// N or NXxNY, each 1..100000, NX x NY <= kMaxBankVelocities.
std::optional<std::pair<int, int>> parse_grid(schema::Reader& r) {
  const std::string text = r.text_or_default("grid");
  const auto sep = text.find_first_of("x,");
  bool ok = true;
  auto num = [&](const std::string& s) {
    std::size_t i = 0;
    long v = -1;
    try {
      v = std::stol(s, &i);
    } catch (const std::exception&) {
      v = -1;
    }
    if (i != s.size() || s.empty()) v = -1;
    if (v < 1 || v > 100000) ok = false;
    return int(v);
  };
  const std::pair<int, int> n = sep == std::string::npos ? std::pair{num(text), num(text)}
                                                         : std::pair{num(text.substr(0, sep)), num(text.substr(sep + 1))};
  if (!ok) {
    r.problem("grid", "expected N or NXxNY with every N in 1..100000 (the trajectory bank must not be empty), got '" + text + "'");
    return std::nullopt;
  }
  // The bank is NX x NY velocities: bounded before it is built (100000x100000 would be 1e10).
  const std::uint64_t total = std::uint64_t(n.first) * std::uint64_t(n.second);
  if (total > kMaxBankVelocities) {
    r.problem("grid", fmt::format("'{}' gives {} velocities, more than the {} a search accepts", text, total, kMaxBankVelocities));
    return std::nullopt;
  }
  return n;
}

std::vector<double> parse_numbers(schema::Reader& r, const std::string& key, const std::string& text, bool& ok) {
  std::vector<double> v;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const auto comma = text.find(',', pos);
    std::string f = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    while (!f.empty() && f.front() == ' ') f.erase(f.begin());
    while (!f.empty() && f.back() == ' ') f.pop_back();
    std::size_t used = 0;
    double d = std::nan("");
    try {
      d = std::stod(f, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != f.size() || f.empty() || !std::isfinite(d)) {
      r.problem(key, "'" + f + "' is not a finite number (in '" + text + "')");
      ok = false;
      return v;
    }
    v.push_back(d);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return v;
}

/// 80-character FITS header cards of a gnomonic (TAN) WCS centred on the image.
std::string tan_wcs_cards(double ra, double dec, double arcsec_per_px, int width, int height) {
  auto num = [](const char* key, double v) { return fmt::format("{:<8}= {:>20.15G}", key, v); };
  auto str = [](const char* key, const char* v) { return fmt::format("{:<8}= '{:<8}'", key, v); };
  const double s = arcsec_per_px / 3600.0;
  std::string cards;
  for (const std::string& c : {str("CTYPE1", "RA---TAN"), str("CTYPE2", "DEC--TAN"), num("CRPIX1", 0.5 * (width + 1)),
                               num("CRPIX2", 0.5 * (height + 1)), num("CRVAL1", ra), num("CRVAL2", dec), num("CD1_1", -s),
                               num("CD1_2", 0.0), num("CD2_1", 0.0), num("CD2_2", s), str("CUNIT1", "deg"), str("CUNIT2", "deg"),
                               str("RADESYS", "ICRS")})
    cards += fmt::format("{:<80}", c);
  return cards;
}

std::string with_suffix(const std::string& output, const std::string& suffix) {
  fs::path p(output);
  if (p.filename().empty()) p = p.parent_path();  // "folder/"
  return (p.parent_path() / (p.stem().string() + suffix)).string();
}

/// Explicit mover specs: strings (the CLI's repeated option) or a list of them.
std::vector<std::string> mover_specs(const schema::Values& v, schema::Reader& r) {
  auto it = v.find("mover");
  if (it == v.end()) return {};
  if (auto s = std::get_if<std::string>(&it->second)) return {*s};
  if (auto l = std::get_if<std::vector<std::string>>(&it->second)) return *l;
  r.problem("mover", "expected a list of 'X0,Y0,VX,VY[,SNR]' strings, got " + schema::describe(it->second));
  return {};
}

void make_simulate(StackJob& job, schema::Reader& r, const std::string& base_dir) {
  SimulateJob& sj = job.simulate;
  SyntheticConfig cfg = reference_workload();
  cfg.movers.clear();
  const auto exposures = r.integer_or_default("exposures"), width = r.integer_or_default("width"),
             height = r.integer_or_default("height");
  const std::size_t before = r.problems().size();
  if (r.problems().size() == before && exposures > 0 && width > 0 && height > 0) {
    const std::uint64_t px = std::uint64_t(exposures) * std::uint64_t(width) * std::uint64_t(height);
    if (px > kMaxSyntheticSamples)
      r.problem("exposures", fmt::format("{} exposures of {} x {} is {} pixels, more than the {} a synthetic stack may hold",
                                         exposures, width, height, px, kMaxSyntheticSamples));
  }
  cfg.n_exp = int(exposures);
  cfg.width = int(width);
  cfg.height = int(height);
  cfg.seed = std::uint64_t(r.integer_or_default("seed"));
  cfg.baseline_days = r.number_or_default("baseline");
  cfg.noise_sigma = r.number_or_default("noise");
  cfg.noise_variation = r.number_or_default("noise-variation");
  cfg.holes = int(r.integer_or_default("holes"));
  cfg.bad_column = !r.flag("no-bad-column");
  cfg.common_curve = !r.flag("no-common-curve");
  if (auto seeing = r.text("seeing")) {
    bool ok = true;
    const auto v = parse_numbers(r, "seeing", *seeing, ok);
    if (ok && (v.size() != 2 || !(v[0] > 0) || v[1] < v[0] || v[1] > kMaxPsfSigma))
      r.problem("seeing", fmt::format("expected MIN,MAX Gaussian PSF sigmas [pixels] with 0 < MIN <= MAX <= {}, got '{}'",
                                      kMaxPsfSigma, *seeing));
    else if (ok) {
      cfg.seeing_min = v[0];
      cfg.seeing_max = v[1];
    }
  }
  if (auto wcs = r.text("wcs")) {
    bool ok = true;
    const auto v = parse_numbers(r, "wcs", *wcs, ok);
    if (ok && (v.size() != 3 || !(v[2] > 0) || std::fabs(v[1]) >= 90))
      r.problem("wcs", "expected RA,DEC,SCALE: centre [degrees, |Dec| < 90] and pixel scale [arcsec/pixel] > 0");
    else if (ok) {
      sj.wcs_text = *wcs;
      sj.wcs_header = tan_wcs_cards(v[0], v[1], v[2], cfg.width, cfg.height);
    }
  }
  sj.snr = r.number_or_default("snr");
  sj.speed = r.number_or_default("speed");
  if (auto d = r.number("direction")) sj.direction = *d;
  // Explicit movers.
  for (const auto& spec : mover_specs(job.values, r)) {
    bool ok = true;
    const auto v = parse_numbers(r, "mover", spec, ok);
    if (!ok) continue;
    if (v.size() != 4 && v.size() != 5) {
      r.problem("mover", "expected X0,Y0,VX,VY[,SNR], got '" + spec + "'");
      continue;
    }
    const double snr = v.size() == 5 ? v[4] : sj.snr;
    if (!(snr > 0)) {
      r.problem("mover", "SNR must be > 0 in '" + spec + "'");
      continue;
    }
    cfg.movers.push_back(Mover{v[0], v[1], v[2], v[3], snr, 0.0});
  }
  sj.random_movers = r.has("movers") ? int(r.integer("movers").value_or(0)) : (cfg.movers.empty() ? 1 : 0);
  // Format and outputs.
  std::string format = r.text_or_default("format");
  if (r.has("format")) format = r.choice("format").value_or("auto");
  const std::string ext = lower_ext(job.output);
  if (format == "auto" && !job.output.empty()) {
    if (ext == ".h5" || ext == ".hdf5") format = "hdf5";
    else if (ext == ".fits" || ext == ".fit") format = "workunit";
    else
      r.problem("output", job.output + ": cannot tell the format from the extension (use .fits, .h5, or format files|workunit|hdf5)");
  }
  sj.format = format;
  sj.truth = r.has("truth") ? schema::resolve_path(r.text("truth").value_or(""), base_dir) : with_suffix(job.output, "_truth.ecsv");
  sj.curve = cfg.common_curve ? (r.has("curve") ? schema::resolve_path(r.text("curve").value_or(""), base_dir)
                                                : with_suffix(job.output, "_curve.txt"))
                              : std::string();
  if (!job.output.empty() && (sj.truth == job.output || sj.curve == job.output || (!sj.curve.empty() && sj.curve == sj.truth)))
    r.problem("truth", "the stack, truth and curve outputs must be different files");
  sj.config = cfg;
}

void make_bank(StackJob& job, schema::Reader& r, bool velocities_in_memory) {
  const bool cart = r.has("vx-range") || r.has("vy-range");
  const bool polar = r.has("speed-range") || r.has("angle-range");
  const bool list = r.has("velocities") || velocities_in_memory;
  if (int(cart) + int(polar) + int(list) == 0) {
    r.problem("bank", "no trajectory bank: give vx-range and vy-range, speed-range and angle-range, or velocities FILE");
    return;
  }
  if (int(cart) + int(polar) + int(list) > 1) {
    r.problem("bank", "give only one of vx-range/vy-range, speed-range/angle-range and velocities");
    return;
  }
  if (list) {
    if (r.has("grid")) r.problem("grid", "does not apply to an explicit velocities list");
    job.bank_from_file = true;
    return;
  }
  const auto grid = parse_grid(r);
  if (cart) {
    if (!r.has("vx-range") || !r.has("vy-range")) {
      r.problem(r.has("vx-range") ? "vy-range" : "vx-range", "a Cartesian bank needs both vx-range and vy-range");
      return;
    }
    const auto x = parse_pair(r, "vx-range", "the vx range [pixels/day]");
    const auto y = parse_pair(r, "vy-range", "the vy range [pixels/day]");
    if (grid && x && y) job.search.bank = TrajectoryBank::cartesian(x->first, x->second, grid->first, y->first, y->second, grid->second);
    return;
  }
  if (!r.has("speed-range") || !r.has("angle-range")) {
    r.problem(r.has("speed-range") ? "angle-range" : "speed-range", "a speed x angle bank needs both speed-range and angle-range");
    return;
  }
  const auto sp = parse_pair(r, "speed-range", "the speed range [pixels/day]");
  const auto an = parse_pair(r, "angle-range", "the angle range [degrees]");
  if (sp && sp->first < 0) {
    r.problem("speed-range", "speeds must be >= 0");
    return;
  }
  const double d2r = kPiRad / 180.0;
  if (grid && sp && an)
    job.search.bank = TrajectoryBank::speed_angle(sp->first, sp->second, grid->first, 0.5 * (an->first + an->second) * d2r,
                                                  0.5 * (an->second - an->first) * d2r, grid->second);
}

/// The prefix of messages: "--" for the command line (an empty label), else the label.
std::string prefix_of(const jobs::JobRequest& req) { return req.label.empty() ? "--" : req.label; }

}  // namespace

const char* to_string(StackOp op) {
  switch (op) {
    case StackOp::Simulate: return "simulate";
    case StackOp::Psiphi: return "psiphi";
    case StackOp::Search: return "search";
    case StackOp::Stamps: return "stamps";
  }
  return "search";
}

const char* to_string(Method m) {
  switch (m) {
    case Method::Gather: return "gather";
    case Method::Tiled: return "tiled";
    case Method::Fourier: return "fourier";
  }
  return "tiled";
}

const schema::Schema& stack_schema() {
  static const schema::Schema s = build_schema();
  return s;
}

/// The schema with "output" optional (MakeStackOptions::output_optional): same fields and help.
static const schema::Schema& output_optional_schema() {
  static const schema::Schema s = [] {
    schema::Schema x = stack_schema();
    for (Field& f : x.fields)
      if (f.key == "output") f.required = false;
    return x;
  }();
  return s;
}

StackJob make_stack_job(const jobs::JobRequest& req, const MakeStackOptions& options) {
  const schema::Schema& sc = options.output_optional ? output_optional_schema() : stack_schema();
  // Canonical keys ('_' and '-' are one key); an unknown spelling is reported by check_keys.
  schema::Values values;
  for (const auto& [k, v] : req.values) {
    const std::string c = schema::canonical_key(sc, k);
    values[c.empty() ? k : c] = v;
  }
  schema::Reader r(sc, values, prefix_of(req));
  StackJob job;
  job.label = req.label;
  job.base_dir = req.base_dir;
  job.values = values;
  const auto op = r.choice("op");
  if (!op) {
    if (!r.has("op")) r.problem("op", "is required (one of simulate, psiphi, search, stamps)");
    r.throw_if_problems();
  }
  job.op = *op == "simulate" ? StackOp::Simulate : *op == "psiphi" ? StackOp::Psiphi : *op == "stamps" ? StackOp::Stamps : StackOp::Search;
  r.check_keys(*op);
  const std::string& base = req.base_dir;
  auto path = [&](const char* key) { return r.has(key) ? schema::resolve_path(r.text(key).value_or(""), base) : std::string(); };
  job.output = path("output");

  if (job.op == StackOp::Simulate) {
    if (job.output.empty() && options.output_optional) r.problem("output", "is required (simulate writes a stack)");
    make_simulate(job, r, base);
    r.throw_if_problems();
    return job;
  }

  // Inputs and PSF options.
  job.stack = path("stack");
  if (job.stack.empty() && job.op != StackOp::Stamps && !r.has("stack") && !options.stack_in_memory)
    r.problem("stack", "is required (the exposure stack)");
  if (job.output.empty() && options.output_optional && job.op == StackOp::Stamps)
    r.problem("output", "is required (stamps write an HDF5 file)");
  job.candidates = path("candidates");
  if (job.op == StackOp::Stamps && !r.has("candidates")) r.problem("candidates", "is required (the candidate table)");
  job.common_curve = path("common-curve");
  job.velocities = path("velocities");
  job.read.psf_sigma = r.number_or_default("psf-sigma");
  job.read.fallback_psf_sigma = r.number_or_default("fallback-psf-sigma");

  // Backend: the one policy of core/backend.hpp; "device" names the index of a plain "cuda".
  try {
    job.backend = almagest::parse_backend(r.text_or_default("backend"), "backend");
  } catch (const ConfigError&) {
    r.problem("backend", "unknown backend '" + r.original("backend") + "' (allowed: cpu, cuda, cuda:N with N in 0..63, auto)");
  }
  if (r.has("device")) {
    const int d = int(r.integer("device").value_or(0));
    if (job.backend.kind == BackendKind::Cuda && job.backend.device != 0 && job.backend.device != d)
      r.problem("device", fmt::format("{} differs from the device of backend {}", d, almagest::to_string(job.backend)));
    else job.backend.device = d;
  }
  job.threads = int(r.integer_or_default("threads"));
  const double mib = r.number_or_default("device-memory");
  job.search.device_memory_limit = static_cast<std::uint64_t>(mib * 1048576.0);
  job.search.threads = job.threads;
  job.search.device = job.backend.device;

  // Output extension.
  if (!job.output.empty()) {
    const std::string ext = lower_ext(job.output);
    const bool table = job.op == StackOp::Search;
    if (ext == ".h5" || ext == ".hdf5") job.output_ext = ".h5";
    else if (table && ext == ".ecsv") job.output_ext = ".ecsv";
    else
      r.problem("output", job.output + ": unknown extension '" + ext + "' (use " + (table ? ".ecsv, .h5, .hdf5" : ".h5, .hdf5") + ")");
  }

  // Storage.
  if (r.has("storage")) {
    if (auto s = r.choice("storage")) {
      job.encoding = parse_encoding(*s, "storage");
      job.storage_given = true;
    }
  }
  if (auto m = r.number("reference-mjd")) job.reference_mjd = *m;

  if (job.op == StackOp::Search) {
    SearchConfig& cfg = job.search;
    cfg.encoding = job.encoding;
    const std::string method = r.has("method") ? r.choice("method").value_or("tiled") : r.text_or_default("method");
    job.method = method == "gather" ? Method::Gather : method == "fourier" ? Method::Fourier : Method::Tiled;
    if (job.method == Method::Fourier && job.backend.kind == BackendKind::Cpu)
      r.problem("method", "fourier runs on the GPU only (backend cuda or auto); the CPU twin computes the exact statistic");
    if (r.has("threshold-sigma") && r.has("false-alarms"))
      r.problem("threshold-sigma", "excludes false-alarms (a fixed threshold or a Bonferroni one, not both)");
    if (auto z = r.number("threshold-sigma")) cfg.threshold_z = *z;
    cfg.false_alarms = r.number_or_default("false-alarms");
    const auto top_k = r.integer_or_default("top-k");
    if (top_k != 0) {
      cfg.mode = ResultMode::TopK;
      cfg.top_k = int(top_k);
    }
    cfg.min_obs = int(r.integer_or_default("min-obs"));
    cfg.max_candidates = std::size_t(std::max<std::int64_t>(1, r.integer_or_default("max-candidates")));
    cfg.cluster.enabled = !r.flag("no-cluster");
    cfg.cluster.radius_px = r.number_or_default("cluster-radius");
    FilterConfig& fc = job.filters;
    fc.min_obs = cfg.min_obs;
    fc.max_masked_fraction = r.number_or_default("max-masked-fraction");
    fc.sigma_g = !r.flag("no-sigma-g");
    fc.sigma_g_n = r.number_or_default("sigma-g-clip");
    {
      bool ok = true;
      const std::string pct = r.text_or_default("sigma-g-percentiles");
      const auto v = parse_numbers(r, "sigma-g-percentiles", pct, ok);
      if (ok && (v.size() != 2 || !(v[0] >= 0 && v[0] < v[1] && v[1] <= 100)))
        r.problem("sigma-g-percentiles", "expected LOW,HIGH with 0 <= LOW < HIGH <= 100, got '" + pct + "'");
      else if (ok) {
        fc.sigma_g_low = v[0];
        fc.sigma_g_high = v[1];
      }
    }
    fc.sigma_g_min_kept = int(r.integer_or_default("sigma-g-min-kept"));
    fc.dedup = cfg.cluster.enabled;
    fc.dedup_radius_px = cfg.cluster.radius_px;
    fc.dedup_overlap = r.number_or_default("cluster-overlap");
    fc.dedup_share = r.number_or_default("cluster-share");
    fc.min_motion_px = r.number_or_default("min-motion");
    fc.stationary_ratio = r.number_or_default("stationary-ratio");
    fc.stamp_filter = !r.flag("no-stamp-filter");
    fc.stamp_radius = int(r.integer_or_default("stamp-filter-radius"));
    fc.stamp_median_ratio = r.number_or_default("stamp-median-ratio");
    fc.stamp_max_size_ratio = r.number_or_default("stamp-max-size");
    fc.stamp_max_ellipticity = r.number_or_default("stamp-max-ellipticity");
    const std::string shifts = r.has("shifts") ? r.choice("shifts").value_or("integer") : r.text_or_default("shifts");
    cfg.fractional = shifts == "fractional";
    if (cfg.fractional) {
      if (job.backend.kind != BackendKind::Cpu && job.method == Method::Fourier)
        r.problem("shifts", "fractional runs on the cpu and with the gather and tiled methods (the Fourier method's phase tables are exact for whole pixels only)");
      if (cfg.mode == ResultMode::TopK) r.problem("shifts", "fractional runs in threshold mode only (top-k 0)");
    }
    job.ades = path("ades");
    job.mpc = path("mpc");
    job.station = r.text_or_default("station");
    if (job.station.empty() || job.station.size() > 4)
      r.problem("station", "expected an observatory code of 1 to 4 characters, got '" + job.station + "'");
    for (const auto& [key, out] : {std::pair<const char*, const std::string*>{"ades", &job.ades}, {"mpc", &job.mpc}})
      if (!out->empty() && (*out == job.output || (key == std::string("mpc") && *out == job.ades)))
        r.problem(key, "must differ from the other outputs");
    cfg.reference_mjd = job.reference_mjd;
    make_bank(job, r, options.velocities_in_memory);
    // The Fourier method's own limits (SearchConfig::validate() says the same in engine terms).
    if (job.method == Method::Fourier) {
      if (job.bank_from_file || r.has("speed-range") || r.has("angle-range"))
        r.problem("method", "fourier needs a Cartesian bank (vx-range and vy-range): its phase tables are separable per axis");
      if (cfg.mode == ResultMode::TopK) r.problem("top-k", "is not available with method fourier; use a threshold");
    }
  } else if (job.op == StackOp::Stamps) {
    job.stamp_radius = int(r.integer_or_default("stamp-radius"));
    job.top = std::size_t(r.integer_or_default("top"));
  }
  r.throw_if_problems();
  return job;
}

std::vector<std::string> StackJob::input_paths() const {
  std::vector<std::string> in;
  for (const std::string* p : {&candidates, &stack, &common_curve, &velocities})
    if (!p->empty()) in.push_back(*p);
  return in;
}

std::vector<std::string> StackJob::output_paths() const {
  std::vector<std::string> out;
  if (!output.empty()) out.push_back(output);
  if (!ades.empty()) out.push_back(ades);
  if (!mpc.empty()) out.push_back(mpc);
  if (op == StackOp::Simulate) {
    out.push_back(simulate.truth);
    if (!simulate.curve.empty()) out.push_back(simulate.curve);
  }
  return out;
}

std::string StackJob::config_json() const {
  nlohmann::json j = nlohmann::json::object();
  const std::string o = to_string(op);
  const schema::Schema& sc = stack_schema();
  for (const schema::Field* f : sc.fields_for(o)) {
    if (f->key == "op") continue;
    auto it = values.find(f->key);
    const std::optional<Value> v = it != values.end() ? std::optional<Value>(it->second) : f->default_value;
    if (!v) continue;
    nlohmann::json x;
    std::visit([&](const auto& a) { x = a; }, *v);
    if ((f->role == Role::InputFile || f->role == Role::OutputFile) && x.is_string()) x = absolute(schema::resolve_path(x.get<std::string>(), base_dir));
    j[f->key] = x;
  }
  // Resolved values a default leaves implicit.
  if (op == StackOp::Simulate) {
    j["truth"] = absolute(simulate.truth);
    j["curve"] = absolute(simulate.curve);
    j["format"] = simulate.format;
    j["movers"] = simulate.random_movers;
  }
  if (op == StackOp::Stamps && !stack.empty()) j["stack"] = absolute(stack);
  j["op"] = o;
  return j.dump();  // nlohmann::json objects keep their keys sorted
}

}  // namespace almagest::stack
