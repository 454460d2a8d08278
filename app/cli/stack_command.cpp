// `almagest-cli stack psiphi|search|stamps` (and the registration of `simulate`, which lives in
// stack_simulate.cpp): thin front ends over the shift-and-stack engine (almagest/stack/*.hpp).
// Every subcommand validates its options first (exit code 2), then reads its inputs (3), resolves
// the backend (4) and writes its outputs atomically (5); see docs/cli.md, section "stack".
#include "stack_command.hpp"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "almagest/core/error.hpp"
#include "almagest/core/gpu.hpp"
#include "almagest/io/text_file.hpp"
#include "almagest/stack/candidates.hpp"
#include "almagest/stack/stack_io.hpp"
#include "almagest/stack/wcs.hpp"
#include "int_option.hpp"
#include "options.hpp"
#include "progress_bar.hpp"
#include "stack_files.hpp"

namespace almagest::cli {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kPi = 3.14159265358979323846;
/// Largest candidates x stamp pixels `stack stamps` makes (2^28: 4 GiB of the four stamp kinds).
constexpr std::uint64_t kMaxStampPixels = std::uint64_t{1} << 28;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Options every stack-reading subcommand shares.
struct InputSettings {
  std::string stack;
  double psf_sigma = 0, fallback_psf_sigma = 0;
  std::string backend = "cpu";
  int device = 0, threads = 0;
  std::string device_text = "0", threads_text = "0";  ///< as written (parse_int_option)
  double device_memory_mib = 0;  ///< 0 = the device's free memory
  RunOptions run;
};

void validate_inputs(InputSettings& s) {
  s.threads = int(parse_int_option(s.threads_text, "--threads", 0, 4096, "(0 = all)"));
  s.device = int(parse_int_option(s.device_text, "--device", 0, 1023));
  // The PSF kernel's side grows with sigma (2 ceil(3 sigma) + 1): bounded before it is built.
  if (!(s.psf_sigma >= 0) || !std::isfinite(s.psf_sigma) || s.psf_sigma > stack::kMaxPsfSigma)
    throw ConfigError("--psf-sigma", fmt::format("must be in 0..{} pixels (0 = use the file's PSFs), got {}", stack::kMaxPsfSigma, s.psf_sigma));
  if (!(s.fallback_psf_sigma >= 0) || !std::isfinite(s.fallback_psf_sigma) || s.fallback_psf_sigma > stack::kMaxPsfSigma)
    throw ConfigError("--fallback-psf-sigma", fmt::format("must be in 0..{} pixels, got {}", stack::kMaxPsfSigma, s.fallback_psf_sigma));
  if (s.backend != "cpu" && s.backend != "cuda" && s.backend != "auto")
    throw ConfigError("--backend", "unknown backend '" + s.backend + "' (expected cpu, cuda or auto)");
  if (!(s.device_memory_mib >= 0) || !std::isfinite(s.device_memory_mib))
    throw ConfigError("--device-memory", fmt::format("must be >= 0 MiB (0 = the free memory), got {}", s.device_memory_mib));
}

/// True when the GPU is to be used: cuda (BackendUnavailable naming why when it cannot be), or
/// auto with a usable device.
bool resolve_gpu(const std::string& backend) {
  if (backend == "cpu") return false;
  const GpuStatus& g = gpu_status();
  if (backend == "auto") return g.available;
  if (!g.available) throw BackendUnavailable("--backend cuda: " + (g.reason.empty() ? std::string("no usable GPU") : g.reason));
  return true;
}

/// ".ecsv", ".h5" or ".hdf5" (lower case) of an output, checked against `allowed`.
std::string output_extension(const std::string& path, const std::vector<std::string>& allowed) {
  std::string ext = fs::path(path).extension().string();
  for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& a : allowed)
    if (ext == a) return ext == ".hdf5" ? ".h5" : ext;
  std::string list;
  for (std::size_t i = 0; i < allowed.size(); ++i) list += (i ? ", " : "") + allowed[i];
  throw ConfigError("--output", path + ": unknown extension '" + ext + "' (use " + list + ")");
}

stack::ExposureStack load_stack(const InputSettings& s, const std::string& path, const JobContext& ctx) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw IoError(path, "", "stack not found (expected a KBMOD WorkUnit FITS file, a folder of per-exposure FITS files or an HDF5 cube)");
  ctx.progress(0, 1, "reading stack");
  stack::StackReadOptions o;
  o.psf_sigma = s.psf_sigma;
  o.fallback_psf_sigma = s.fallback_psf_sigma;
  stack::ExposureStack st = stack::read_stack(path, o);
  ctx.check_cancel();
  return st;
}

stack::PsiPhi compute_planes(const stack::ExposureStack& st, bool gpu, int device, const JobContext& ctx) {
  stack::PsiPhi p = gpu ? stack::compute_psiphi_gpu(st, device, ctx) : stack::compute_psiphi(st, ctx);
  ctx.check_cancel();
  return p;
}

std::pair<double, double> parse_pair(const std::string& text, const char* option, const char* what) {
  const auto comma = text.find(',');
  double a = kNaN, b = kNaN;
  if (comma != std::string::npos) {
    try {
      std::size_t ia = 0, ib = 0;
      const std::string sa = text.substr(0, comma), sb = text.substr(comma + 1);
      a = std::stod(sa, &ia);
      b = std::stod(sb, &ib);
      if (ia != sa.size() || ib != sb.size()) a = kNaN;
    } catch (const std::exception&) {
      a = kNaN;
    }
  }
  if (!std::isfinite(a) || !std::isfinite(b))
    throw ConfigError(option, "expected " + std::string(what) + " as two numbers 'MIN,MAX', got '" + text + "'");
  if (b < a) throw ConfigError(option, fmt::format("maximum {} is below minimum {}", b, a));
  return {a, b};
}

std::pair<int, int> parse_grid(const std::string& text) {
  auto sep = text.find_first_of("x,");
  auto num = [&](const std::string& s) {
    std::size_t i = 0;
    long v = -1;
    try {
      v = std::stol(s, &i);
    } catch (const std::exception&) {
      v = -1;
    }
    if (i != s.size() || s.empty()) v = -1;
    if (v < 1 || v > 100000)
      throw ConfigError("--grid", "expected N or NXxNY with every N in 1..100000 (the trajectory bank must not be empty), got '" + text + "'");
    return int(v);
  };
  const std::pair<int, int> n = sep == std::string::npos ? std::pair{num(text), num(text)}
                                                         : std::pair{num(text.substr(0, sep)), num(text.substr(sep + 1))};
  // The bank is NX x NY velocities: bounded before it is built (100000x100000 would be 1e10).
  const std::uint64_t total = std::uint64_t(n.first) * std::uint64_t(n.second);
  if (total > stack::kMaxBankVelocities)
    throw ConfigError("--grid", fmt::format("'{}' gives {} velocities, more than the {} a search accepts", text, total,
                                            stack::kMaxBankVelocities));
  return n;
}

// ---- search -------------------------------------------------------------------------------------

struct SearchSettings : InputSettings {
  std::string output, method = "tiled", storage = "fp32";
  std::string vx_range, vy_range, speed_range, angle_range, grid = "21", velocities, common_curve;
  double reference_mjd = kNaN, threshold_sigma = 0, false_alarms = 1.0, cluster_radius = 2.0;
  int top_k = 0, min_obs = 1;
  std::size_t max_candidates = 1000000;
  std::string top_k_text = "0", min_obs_text = "1", max_candidates_text = "1000000";  ///< as written
  bool no_cluster = false;
  CLI::Option* grid_opt = nullptr;
};

stack::TrajectoryBank build_bank(const SearchSettings& s) {
  const bool cart = !s.vx_range.empty() || !s.vy_range.empty();
  const bool polar = !s.speed_range.empty() || !s.angle_range.empty();
  const bool list = !s.velocities.empty();
  if (int(cart) + int(polar) + int(list) == 0)
    throw ConfigError("bank", "no trajectory bank: give --vx-range and --vy-range, --speed-range and --angle-range, or --velocities FILE");
  if (int(cart) + int(polar) + int(list) > 1)
    throw ConfigError("bank", "give only one of --vx-range/--vy-range, --speed-range/--angle-range and --velocities");
  if (list) {
    if (s.grid_opt && s.grid_opt->count() > 0) throw ConfigError("--grid", "does not apply to an explicit --velocities list");
    return stackio::read_velocities(s.velocities);
  }
  const auto [n1, n2] = parse_grid(s.grid);
  if (cart) {
    if (s.vx_range.empty() || s.vy_range.empty())
      throw ConfigError(s.vx_range.empty() ? "--vx-range" : "--vy-range", "a Cartesian bank needs both --vx-range and --vy-range");
    const auto [x0, x1] = parse_pair(s.vx_range, "--vx-range", "the vx range [pixels/day]");
    const auto [y0, y1] = parse_pair(s.vy_range, "--vy-range", "the vy range [pixels/day]");
    return stack::TrajectoryBank::cartesian(x0, x1, n1, y0, y1, n2);
  }
  if (s.speed_range.empty() || s.angle_range.empty())
    throw ConfigError(s.speed_range.empty() ? "--speed-range" : "--angle-range", "a speed x angle bank needs both --speed-range and --angle-range");
  const auto [s0, s1] = parse_pair(s.speed_range, "--speed-range", "the speed range [pixels/day]");
  const auto [a0, a1] = parse_pair(s.angle_range, "--angle-range", "the angle range [degrees]");
  if (s0 < 0) throw ConfigError("--speed-range", "speeds must be >= 0");
  const double d2r = kPi / 180.0;
  return stack::TrajectoryBank::speed_angle(s0, s1, n1, 0.5 * (a0 + a1) * d2r, 0.5 * (a1 - a0) * d2r, n2);
}

/// The search configuration from the options (exit code 2 on every problem found here).
stack::SearchConfig search_config(SearchSettings& s) {
  validate_inputs(s);
  s.top_k = int(parse_int_option(s.top_k_text, "--top-k", 0, 16, "(0 = threshold mode)"));
  s.min_obs = int(parse_int_option(s.min_obs_text, "--min-obs", 0, 1000000));
  s.max_candidates = std::size_t(parse_int_option(s.max_candidates_text, "--max-candidates", 1, 100000000));
  stack::SearchConfig cfg;
  cfg.encoding = stack::parse_encoding(s.storage, "--storage");
  if (s.method != "gather" && s.method != "tiled" && s.method != "fourier")
    throw ConfigError("--method", "unknown method '" + s.method + "' (expected gather, tiled or fourier)");
  if (s.threshold_sigma != 0) {
    if (!(s.threshold_sigma > 0) || !std::isfinite(s.threshold_sigma))
      throw ConfigError("--threshold-sigma", fmt::format("must be > 0, got {}", s.threshold_sigma));
    cfg.threshold_z = s.threshold_sigma;
  }
  if (!(s.false_alarms > 0) || !std::isfinite(s.false_alarms))
    throw ConfigError("--false-alarms", fmt::format("must be > 0, got {}", s.false_alarms));
  cfg.false_alarms = s.false_alarms;
  if (s.top_k != 0) {
    if (s.top_k < 1 || s.top_k > 16) throw ConfigError("--top-k", "must be in 1..16, got " + std::to_string(s.top_k));
    cfg.mode = stack::ResultMode::TopK;
    cfg.top_k = s.top_k;
  }
  if (s.min_obs < 0) throw ConfigError("--min-obs", "must be >= 0, got " + std::to_string(s.min_obs));
  cfg.min_obs = s.min_obs;
  if (s.max_candidates == 0) throw ConfigError("--max-candidates", "must be positive");
  cfg.max_candidates = s.max_candidates;
  if (!(s.cluster_radius >= 0) || !std::isfinite(s.cluster_radius))
    throw ConfigError("--cluster-radius", fmt::format("must be >= 0 pixels, got {}", s.cluster_radius));
  cfg.cluster.enabled = !s.no_cluster;
  cfg.cluster.radius_px = s.cluster_radius;
  if (!std::isnan(s.reference_mjd) && !std::isfinite(s.reference_mjd))
    throw ConfigError("--reference-mjd", "must be finite");
  cfg.reference_mjd = s.reference_mjd;
  cfg.threads = s.threads;
  cfg.device = s.device;
  cfg.device_memory_limit = static_cast<std::uint64_t>(s.device_memory_mib * 1048576.0);
  cfg.bank = build_bank(s);
  return cfg;
}

stack::Backend gpu_backend(const std::string& method) {
  return method == "gather" ? stack::Backend::GpuGather : method == "fourier" ? stack::Backend::GpuFourier : stack::Backend::GpuTiled;
}

/// The engine's configuration JSON plus what the CLI knows (absolute input paths, PSF options), so
/// that `stamps` can find the stack and the common curve a table was made from.
std::string config_with_cli(const std::string& engine_json, const std::string& command, json cli) {
  json j = json::parse(engine_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) j = json::object();
  cli["command"] = command;
  j["cli"] = std::move(cli);
  return j.dump();
}

/// RA/Dec of the ECSV rows when the stack has a WCS: the continuous predicted position at the
/// exposure nearest the reference time (what describe_candidates gives that row), without the
/// per-exposure curves and stamps, which a large table could not afford.
std::vector<stack::CandidateDetail> ecsv_sky(const stack::SearchResult& r, const stack::SearchPlan& plan,
                                             const stack::ExposureStack& st, bool ecsv) {
  std::vector<stack::CandidateDetail> out;
  if (!ecsv || st.wcs_header.empty() || r.candidates.empty()) return out;
  const stack::Wcs wcs = stack::Wcs::from_header(st.wcs_header, st.source);
  std::size_t best = 0;
  for (std::size_t e = 1; e < st.mjd.size(); ++e)
    if (std::fabs(st.mjd[e] - plan.reference_mjd()) < std::fabs(st.mjd[best] - plan.reference_mjd())) best = e;
  const double t = st.mjd[best] - plan.reference_mjd();
  const auto& cfg = plan.config();
  const double dx = cfg.curve_dx.empty() ? 0.0 : cfg.curve_dx[best], dy = cfg.curve_dy.empty() ? 0.0 : cfg.curve_dy[best];
  out.resize(r.candidates.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const stack::Candidate& c = r.candidates[i];
    out[i].c = c;
    out[i].t = {t};
    const auto [ra, dec] = wcs.pixel_to_sky(c.x + c.vx * t + dx, c.y + c.vy * t + dy);
    out[i].ra = {ra};
    out[i].dec = {dec};
  }
  return out;
}

std::string absolute_or_null(const std::string& p) { return p.empty() ? std::string() : fs::absolute(p).string(); }

/// What identifies the stack a table was made from (recorded by search, checked by stamps):
/// its shape, its MJDs and a content hash of its file (or folder of files).
json stack_identity(const std::string& path, const stack::ExposureStack& st) {
  return {{"n_exp", st.size()}, {"width", st.width}, {"height", st.height}, {"mjd", st.mjd},
          {"content_hash", io::content_hash(path)}};
}

/// Refuses a --stack (or recorded stack) that is not the one the table's search read, naming the
/// property that differs; a table without a recorded identity (written before it was recorded)
/// gets a warning.
void check_stack_identity(const json& cfg, const std::string& table, const std::string& path,
                          const stack::ExposureStack& st, bool quiet) {
  const json* id = nullptr;
  if (cfg.is_object() && cfg.contains("cli") && cfg["cli"].is_object() && cfg["cli"].contains("stack_identity") &&
      cfg["cli"]["stack_identity"].is_object())
    id = &cfg["cli"]["stack_identity"];
  if (!id) {
    if (!quiet)
      std::fprintf(stderr, "almagest-cli: warning: %s records no identity of the stack it was made from (written by an "
                           "older version or another tool): %s cannot be checked to be that stack\n",
                   table.c_str(), path.c_str());
    return;
  }
  const std::string intro = path + " is not the stack " + table + " was made from: ";
  auto number = [&](const char* key, std::int64_t have) {
    if (!id->contains(key)) return;
    const json& v = (*id)[key];
    if (!v.is_number_integer() || v.get<std::int64_t>() != have)
      throw IoError(path, "", intro + fmt::format("its {} is {}, the table's stack had {}", key == std::string("n_exp") ? "exposure count" : key, have, v.dump()));
  };
  number("n_exp", std::int64_t(st.size()));
  number("width", st.width);
  number("height", st.height);
  if (id->contains("mjd")) {
    const json& m = (*id)["mjd"];
    if (!m.is_array() || m.size() != st.mjd.size())
      throw IoError(path, "MJD", intro + "its exposure times differ in number from the recorded ones");
    for (std::size_t e = 0; e < st.mjd.size(); ++e)
      if (!m[e].is_number() || std::fabs(m[e].get<double>() - st.mjd[e]) > 1e-9 * std::max(1.0, std::fabs(st.mjd[e])))
        throw IoError(path, fmt::format("MJD (exposure {})", e),
                      intro + fmt::format("its MJD {:.9f} differs from the recorded {}", st.mjd[e], m[e].dump()));
  }
  if (id->contains("content_hash") && (*id)["content_hash"].is_string()) {
    const std::string want = (*id)["content_hash"].get<std::string>(), have = io::content_hash(path);
    if (want != have)
      throw IoError(path, "", intro + "its content differs (hash " + have + ", recorded " + want +
                                  "): the stack changed after the search");
  }
}

/// Every candidate of a table read back lies on the stack (origin inside the image) and its
/// predicted track stays within the shift tables' range (|shift| <= 1e9 pixels): IoError naming
/// the table, row and column otherwise (x near INT_MIN overflowed the stamp arithmetic).
void check_candidates(const stackio::CandidateTable& t, const std::string& table, const stack::ExposureStack& st,
                      double reference_mjd, const std::vector<double>& dx, const std::vector<double>& dy) {
  const double ref = std::isnan(reference_mjd) ? st.mjd.front() : reference_mjd;
  double tmax = 0, cx = 0, cy = 0;
  for (double m : st.mjd) tmax = std::max(tmax, std::fabs(m - ref));
  for (double v : dx) cx = std::max(cx, std::fabs(v));
  for (double v : dy) cy = std::max(cy, std::fabs(v));
  for (std::size_t i = 0; i < t.candidates.size(); ++i) {
    const stack::Candidate& c = t.candidates[i];
    auto bad = [&](const char* col, const std::string& what) {
      throw IoError(table, fmt::format("row {}, column {}", i + 1, col), what);
    };
    if (c.x < 0 || c.x >= st.width) bad("x", fmt::format("origin x = {} is outside the stack's 0..{}", c.x, st.width - 1));
    if (c.y < 0 || c.y >= st.height) bad("y", fmt::format("origin y = {} is outside the stack's 0..{}", c.y, st.height - 1));
    if (!std::isfinite(c.vx) || std::fabs(c.vx) * tmax + cx > 1e9)
      bad("vx", fmt::format("velocity {} px/d moves the track beyond 1e9 pixels over the stack's {} days", c.vx, tmax));
    if (!std::isfinite(c.vy) || std::fabs(c.vy) * tmax + cy > 1e9)
      bad("vy", fmt::format("velocity {} px/d moves the track beyond 1e9 pixels over the stack's {} days", c.vy, tmax));
  }
}

int run_search(SearchSettings& s) {
  const auto t_all = Clock::now();
  stack::SearchConfig cfg = search_config(s);
  const std::string ext = output_extension(s.output, {".ecsv", ".h5", ".hdf5"});
  const std::vector<std::string> inputs{s.stack, s.common_curve, s.velocities};
  stackio::check_output_path(s.output, inputs);
  const bool gpu = resolve_gpu(s.backend);
  if (!gpu && s.method == "fourier" && s.backend == "cpu")
    throw ConfigError("--method", "fourier runs on the GPU only (--backend cuda or auto); the CPU twin computes the exact statistic");
  cfg.backend = gpu ? gpu_backend(s.method) : stack::Backend::Cpu;
  cfg.check();

  ProgressBar bar(!s.run.quiet && ProgressBar::stderr_is_tty());
  JobContext ctx(interrupt_token(), bar.sink(), bar.log_sink(s.run.verbose, s.run.quiet));
  ctx.threads = s.threads;
  auto t0 = Clock::now();
  const stack::ExposureStack st = load_stack(s, s.stack, ctx);
  if (!s.common_curve.empty()) stackio::read_common_curve(s.common_curve, st.mjd, cfg.curve_dx, cfg.curve_dy);
  const double read_s = seconds_since(t0);
  t0 = Clock::now();
  const stack::PsiPhi p = compute_planes(st, gpu, s.device, ctx);
  const stack::EncodedPsiPhi enc = stack::encode(p, cfg.encoding);
  const double psiphi_s = seconds_since(t0);
  const stack::SearchPlan plan = stack::make_plan(cfg, p.mjd, p.width, p.height, ctx);
  stack::SearchResult r = plan.execute(enc, ctx);
  ctx.check_cancel();

  const std::vector<stack::CandidateDetail> details = ecsv_sky(r, plan, st, ext == ".ecsv");
  r.provenance.inputs = {s.stack};
  if (!s.common_curve.empty()) r.provenance.inputs.push_back(s.common_curve);
  if (!s.velocities.empty()) r.provenance.inputs.push_back(s.velocities);
  r.provenance.timings_s["read"] = read_s;
  r.provenance.timings_s["psiphi"] = psiphi_s;
  r.provenance.config_json = config_with_cli(
      r.provenance.config_json, "stack search",
      {{"stack", fs::absolute(s.stack).string()}, {"stack_identity", stack_identity(s.stack, st)},
       {"common_curve", absolute_or_null(s.common_curve)},
       {"velocities", absolute_or_null(s.velocities)}, {"psf_sigma", s.psf_sigma},
       {"fallback_psf_sigma", s.fallback_psf_sigma}, {"psiphi_backend", gpu ? "cuda" : "cpu"}});

  ctx.progress(0, 1, "writing candidates");
  stackio::commit_outputs({{s.output, [&](const std::string& tmp) {
                              if (ext == ".ecsv") stack::write_candidates_ecsv(tmp, r, details);
                              else stack::write_result_hdf5(tmp, r);
                            }}},
                          inputs);
  bar.finish();
  if (!s.run.quiet) {
    std::printf("wrote %s (%s, %zu candidates from %zu hits%s)\n", s.output.c_str(), ext == ".ecsv" ? "ECSV" : "HDF5",
                r.candidates.size(), r.raw_hits, r.truncated ? ", truncated at --max-candidates" : "");
    std::printf("stack: %zu exposures of %d x %d (%s); bank: %zu velocities; storage %s; backend %s (%s), %d threads\n",
                st.size(), st.width, st.height, s.stack.c_str(), r.n_vel, stack::to_string(cfg.encoding).c_str(),
                r.backend.c_str(), r.device.c_str(), resolve_threads(s.threads));
    std::printf("threshold Z >= %.4f (%s); digest: sum A %.6g, sum B %.6g, max Z %.4f, %llu trajectories above\n",
                r.threshold_z, cfg.threshold_z > 0 ? "--threshold-sigma" : fmt::format("Bonferroni, --false-alarms {}", cfg.false_alarms).c_str(),
                r.digest.sum_a, r.digest.sum_b, r.digest.max_z, static_cast<unsigned long long>(r.digest.count_above));
    if (!r.candidates.empty()) {
      const auto& c = r.candidates.front();
      std::printf("best: x %d, y %d, vx %.4f, vy %.4f px/d, Z %.3f, flux %.4g, obs %d, %d merged\n", c.x, c.y, c.vx, c.vy, c.z,
                  c.flux, c.obs, c.members);
    }
    std::printf("timings: read %.2f s, psi/phi %.2f s, scan %.3f s, total %.2f s\n", read_s, psiphi_s, r.scan_seconds,
                seconds_since(t_all));
    std::fflush(stdout);
  }
  return kExitOk;
}

// ---- psiphi -------------------------------------------------------------------------------------

struct PsiphiSettings : InputSettings {
  std::string output, storage = "fp32";
};

int run_psiphi(PsiphiSettings& s) {
  validate_inputs(s);
  const stack::Encoding encoding = stack::parse_encoding(s.storage, "--storage");
  output_extension(s.output, {".h5", ".hdf5"});
  stackio::check_output_path(s.output, {s.stack});
  const bool gpu = resolve_gpu(s.backend);
  ProgressBar bar(!s.run.quiet && ProgressBar::stderr_is_tty());
  JobContext ctx(interrupt_token(), bar.sink(), bar.log_sink(s.run.verbose, s.run.quiet));
  ctx.threads = s.threads;
  auto t0 = Clock::now();
  const stack::ExposureStack st = load_stack(s, s.stack, ctx);
  const double read_s = seconds_since(t0);
  t0 = Clock::now();
  const stack::PsiPhi p = compute_planes(st, gpu, s.device, ctx);
  const stack::EncodedPsiPhi enc = stack::encode(p, encoding);
  const stack::PsiPhi decoded = encoding == stack::Encoding::Fp32 ? p : stack::decode(enc);
  const double psiphi_s = seconds_since(t0);
  Provenance prov = Provenance::current(gpu ? "cuda" : "cpu");
  prov.threads = resolve_threads(s.threads);
  prov.inputs = {s.stack};
  prov.timings_s = {{"read", read_s}, {"psiphi", psiphi_s}};
  prov.config_json = config_with_cli("{}", "stack psiphi",
                                     {{"stack", fs::absolute(s.stack).string()}, {"storage", stack::to_string(encoding)},
                                      {"psf_sigma", s.psf_sigma}, {"fallback_psf_sigma", s.fallback_psf_sigma}});
  ctx.progress(0, 1, "writing psi/phi");
  stackio::commit_outputs(
      {{s.output, [&](const std::string& tmp) { stackio::write_psiphi_hdf5(tmp, enc, decoded, prov.to_json(), s.stack); }}},
      {s.stack});
  bar.finish();
  if (!s.run.quiet) {
    std::size_t valid = 0;
    for (float v : decoded.phi) valid += v > 0;
    std::printf("wrote %s (psi/phi of %d exposures of %d x %d, storage %s, %.1f%% valid samples)\n", s.output.c_str(), p.n,
                p.width, p.height, stack::to_string(encoding).c_str(), 100.0 * double(valid) / double(decoded.phi.size()));
    std::printf("backend %s, %d threads; read %.2f s, psi/phi %.2f s\n", gpu ? "cuda" : "cpu", prov.threads, read_s, psiphi_s);
    std::fflush(stdout);
  }
  return kExitOk;
}

// ---- stamps -------------------------------------------------------------------------------------

struct StampsSettings : InputSettings {
  std::string candidates, output, common_curve, storage;
  double reference_mjd = kNaN;
  int stamp_radius = 10;
  std::size_t top = 0;
  std::string stamp_radius_text = "10", top_text = "0";  ///< as written (parse_int_option)
};

/// The search's bank, rebuilt exactly from its configuration JSON (Cartesian grids from their
/// ranges, other banks from their velocity lists); nullopt when the table does not carry one.
std::optional<stack::TrajectoryBank> bank_from_config(const json& cfg) {
  if (!cfg.is_object() || !cfg.contains("bank") || !cfg["bank"].is_object()) return std::nullopt;
  const json& b = cfg["bank"];
  try {
    if (b.value("kind", "") == "cartesian" && b.contains("vx") && b.contains("vy")) {
      const auto& x = b["vx"];
      const auto& y = b["vy"];
      return stack::TrajectoryBank::cartesian(x.at(0).get<double>(), x.at(1).get<double>(), x.at(2).get<int>(),
                                              y.at(0).get<double>(), y.at(1).get<double>(), y.at(2).get<int>());
    }
    if (b.contains("vx_list") && b.contains("vy_list"))
      return stack::TrajectoryBank::list(b["vx_list"].get<std::vector<double>>(), b["vy_list"].get<std::vector<double>>());
  } catch (const json::exception&) {
    return std::nullopt;
  }
  return std::nullopt;
}

std::string cli_string(const json& cfg, const char* key) {
  if (!cfg.is_object() || !cfg.contains("cli") || !cfg["cli"].is_object()) return {};
  const json& c = cfg["cli"];
  return c.contains(key) && c[key].is_string() ? c[key].get<std::string>() : std::string();
}

int run_stamps(StampsSettings s) {
  const auto t_all = Clock::now();
  validate_inputs(s);
  s.stamp_radius = int(parse_int_option(s.stamp_radius_text, "--stamp-radius", 0, 1000, "pixels"));
  s.top = std::size_t(parse_int_option(s.top_text, "--top", 0, std::numeric_limits<std::int32_t>::max(), "(0 = all)"));
  if (!s.storage.empty()) stack::parse_encoding(s.storage, "--storage");
  if (!std::isnan(s.reference_mjd) && !std::isfinite(s.reference_mjd)) throw ConfigError("--reference-mjd", "must be finite");
  output_extension(s.output, {".h5", ".hdf5"});
  stackio::check_output_path(s.output, {s.candidates, s.stack, s.common_curve});
  const bool gpu = resolve_gpu(s.backend);

  // The table and, from its provenance, the search it came from.
  stackio::CandidateTable table = stackio::read_candidates(s.candidates);
  const json cfg = table.config_json.empty() ? json() : json::parse(table.config_json, nullptr, false);
  if (s.stack.empty()) s.stack = cli_string(cfg, "stack");
  if (s.stack.empty()) throw ConfigError("--stack", s.candidates + " does not record the stack it was made from; give --stack FILE");
  if (s.common_curve.empty() && cfg.is_object() && cfg.value("common_curve", false)) {
    s.common_curve = cli_string(cfg, "common_curve");
    if (s.common_curve.empty())
      throw ConfigError("--common-curve", "the search of " + s.candidates + " used a common curve; give the same file with --common-curve");
  }
  if (s.storage.empty()) s.storage = cfg.is_object() && cfg.contains("encoding") && cfg["encoding"].is_string() ? cfg["encoding"].get<std::string>() : "fp32";
  const stack::Encoding encoding = stack::parse_encoding(s.storage, "--storage");
  if (std::isnan(s.reference_mjd) && cfg.is_object() && cfg.contains("reference_mjd") && cfg["reference_mjd"].is_number())
    s.reference_mjd = cfg["reference_mjd"].get<double>();
  if (s.psf_sigma == 0 && cfg.is_object() && cfg.contains("cli") && cfg["cli"].is_object()) {
    s.psf_sigma = cfg["cli"].value("psf_sigma", 0.0);
    s.fallback_psf_sigma = s.fallback_psf_sigma > 0 ? s.fallback_psf_sigma : cfg["cli"].value("fallback_psf_sigma", 0.0);
  }
  if (s.top > 0 && table.candidates.size() > s.top) table.candidates.resize(s.top);
  // Stamps are candidates x (2R+1)^2 floats of four kinds: bounded before they are made.
  const std::uint64_t side = 2 * std::uint64_t(s.stamp_radius) + 1;
  if (std::uint64_t(table.candidates.size()) * side * side > kMaxStampPixels)
    throw ConfigError("--stamp-radius", fmt::format("{} candidates x {} x {} stamp pixels is more than {} (use --top or a smaller "
                                                    "--stamp-radius)", table.candidates.size(), side, side, kMaxStampPixels));

  // Exact velocities: the bank's own values where the table's bank index matches its vx, vy (ECSV
  // rounds to 10 digits, which could move a rounded shift), else the table's.
  const std::optional<stack::TrajectoryBank> bank = table.has_v ? bank_from_config(cfg) : std::nullopt;
  std::vector<double> vx, vy;
  std::vector<std::int32_t> original_v;
  for (std::size_t i = 0; i < table.candidates.size(); ++i) {
    const stack::Candidate& c = table.candidates[i];
    double x = c.vx, y = c.vy;
    if (bank) {
      const auto close = [](double a, double b) { return std::fabs(a - b) <= 1e-6 * std::max(1.0, std::fabs(b)); };
      if (c.v < 0 || std::size_t(c.v) >= bank->size() || !close(c.vx, bank->vx[c.v]) || !close(c.vy, bank->vy[c.v]))
        throw IoError(s.candidates, fmt::format("row {}: v", i + 1),
                      fmt::format("bank index {} does not match vx = {}, vy = {} of the recorded search bank", c.v, c.vx, c.vy));
      x = bank->vx[c.v];
      y = bank->vy[c.v];
    }
    vx.push_back(x);
    vy.push_back(y);
    original_v.push_back(c.v);
  }

  ProgressBar bar(!s.run.quiet && ProgressBar::stderr_is_tty());
  JobContext ctx(interrupt_token(), bar.sink(), bar.log_sink(s.run.verbose, s.run.quiet));
  ctx.threads = s.threads;
  const stack::ExposureStack st = load_stack(s, s.stack, ctx);
  check_stack_identity(cfg, s.candidates, s.stack, st, s.run.quiet);
  stack::SearchConfig sc;
  if (!s.common_curve.empty()) stackio::read_common_curve(s.common_curve, st.mjd, sc.curve_dx, sc.curve_dy);
  check_candidates(table, s.candidates, st, s.reference_mjd, sc.curve_dx, sc.curve_dy);
  sc.reference_mjd = s.reference_mjd;
  sc.threads = s.threads;
  const stack::PsiPhi p = compute_planes(st, gpu, s.device, ctx);
  // The planes the search summed: decoded from the same storage encoding.
  const stack::PsiPhi planes = encoding == stack::Encoding::Fp32 ? p : stack::decode(stack::encode(p, encoding));

  stack::SearchResult r;
  r.width = st.width;
  r.height = st.height;
  r.n_exp = int(st.size());
  r.threshold_z = table.threshold_z;
  r.digest = table.digest;
  r.backend = table.backend;
  r.candidates = table.candidates;
  std::vector<stack::CandidateDetail> details;
  if (!r.candidates.empty()) {
    sc.bank = stack::TrajectoryBank::list(vx, vy);
    r.n_vel = sc.bank.size();
    for (std::size_t i = 0; i < r.candidates.size(); ++i) r.candidates[i].v = std::int32_t(i);
    const stack::SearchPlan plan = stack::make_plan(sc, st.mjd, st.width, st.height, ctx);
    details = stack::describe_candidates(r, plan, st, planes, s.stamp_radius, ctx);
    for (std::size_t i = 0; i < r.candidates.size(); ++i) r.candidates[i].v = details[i].c.v = original_v[i];
  }
  ctx.check_cancel();
  r.provenance = Provenance::current(gpu ? "cuda" : "cpu");
  r.provenance.threads = resolve_threads(s.threads);
  r.provenance.inputs = {s.candidates, s.stack};
  if (!s.common_curve.empty()) r.provenance.inputs.push_back(s.common_curve);
  r.provenance.timings_s["total"] = seconds_since(t_all);
  json search = cfg.is_object() ? cfg : json();
  r.provenance.config_json = config_with_cli(
      "{}", "stack stamps",
      {{"candidates", fs::absolute(s.candidates).string()}, {"stack", fs::absolute(s.stack).string()},
       {"common_curve", absolute_or_null(s.common_curve)}, {"stamp_radius", s.stamp_radius},
       {"storage", stack::to_string(encoding)}, {"reference_mjd", std::isnan(s.reference_mjd) ? json() : json(s.reference_mjd)},
       {"search", search}});

  ctx.progress(0, 1, "writing stamps");
  stackio::commit_outputs({{s.output, [&](const std::string& tmp) { stack::write_result_hdf5(tmp, r, details); }}},
                          {s.candidates, s.stack, s.common_curve});
  bar.finish();
  if (!s.run.quiet) {
    std::printf("wrote %s (%zu candidates: psi/phi curves over %zu exposures, %d x %d stamps, tracks%s)\n", s.output.c_str(),
                r.candidates.size(), st.size(), 2 * s.stamp_radius + 1, 2 * s.stamp_radius + 1,
                !details.empty() && !details[0].ra.empty() ? " with RA/Dec" : "");
    std::printf("stack %s, storage %s, total %.2f s\n", s.stack.c_str(), stack::to_string(encoding).c_str(), seconds_since(t_all));
    std::fflush(stdout);
  }
  return kExitOk;
}

// ---- registration -------------------------------------------------------------------------------

void add_input_options(CLI::App& app, InputSettings& s, bool positional_stack) {
  const std::string stack_help =
      "Exposure stack: a KBMOD WorkUnit FITS file (SCI_i, VAR_i, MSK_i, PSF_i, MJD), a folder of per-exposure "
      "multi-extension FITS files, or an Almagest HDF5 cube (.h5).";
  if (positional_stack) app.add_option("STACK", s.stack, wrap_text(stack_help, 62))->required()->group("Input");
  else app.add_option("--stack", s.stack, wrap_text(stack_help + " Default: the stack recorded in the table.", 62))->group("Input");
  app.add_option("--psf-sigma", s.psf_sigma, wrap_text("Use a Gaussian PSF of this sigma [pixels, at most 50] for every exposure instead of the file's PSFs.", 62))
      ->type_name("PX")->group("Input");
  app.add_option("--fallback-psf-sigma", s.fallback_psf_sigma, wrap_text("Gaussian PSF sigma [pixels] for exposures without a PSF (default: missing PSF is an error).", 62))
      ->type_name("PX")->group("Input");
  app.add_option("--backend", s.backend, wrap_text("cpu (default), cuda (exit code 4 without a usable GPU) or auto (the GPU when available).", 62))
      ->type_name("cpu|cuda|auto")->group("Run");
  app.add_option("--device", s.device_text, "CUDA device index, 0..1023 (default 0).")->type_name("N")->group("Run");
  app.add_option("--device-memory", s.device_memory_mib,
                 wrap_text("Device memory the stack may occupy [MiB], 0 = the free memory (default). A larger stack is streamed in row bands with identical results; the Fourier method needs it whole.", 62))
      ->type_name("MIB")->group("Run");
  app.add_option("--threads", s.threads_text, "CPU worker threads, 0..4096, 0 = all (default); results do not depend on it.")->type_name("N")->group("Run");
  app.add_flag("-q,--quiet", s.run.quiet, "No progress bar and no summary; errors are still printed.")->group("Run");
  app.add_flag("-v,--verbose", s.run.verbose, "Also print the engine's log messages.")->group("Run");
}

Command add_search(CLI::App& stack) {
  auto* app = stack.add_subcommand("search", wrap_text("Search a stack for moving sources: score Z = A/sqrt(B) of every origin pixel x trial velocity, threshold (Bonferroni or a fixed Z) or top-k, clustering; writes the candidate table (ECSV or HDF5 by extension) with digest and provenance.", 80));
  auto s = std::make_shared<SearchSettings>();
  add_input_options(*app, *s, true);
  app->add_option("-o,--output", s->output, "Candidate table: .ecsv or .h5/.hdf5. Required.")->required()->type_name("OUT")->group("Output");
  app->add_option("--vx-range", s->vx_range, "Cartesian bank: vx range [pixels/day], inclusive.")->type_name("MIN,MAX")->group("Bank");
  app->add_option("--vy-range", s->vy_range, "Cartesian bank: vy range [pixels/day], inclusive.")->type_name("MIN,MAX")->group("Bank");
  app->add_option("--speed-range", s->speed_range, "Speed x angle bank (KBMOD's search): speeds [pixels/day].")->type_name("MIN,MAX")->group("Bank");
  app->add_option("--angle-range", s->angle_range, wrap_text("Speed x angle bank: angles [degrees] from +x towards +y.", 62))->type_name("MIN,MAX")->group("Bank");
  s->grid_opt = app->add_option("--grid", s->grid, wrap_text("Values per bank axis: N or NXxNY (vx x vy, or speeds x angles), each 1..100000 and NX x NY <= 4194304; default 21.", 62))
                    ->type_name("N|NXxNY")->group("Bank");
  app->add_option("--velocities", s->velocities, wrap_text("Explicit bank: text file with two columns vx vy [pixels/day] ('#' comments).", 62))
      ->type_name("FILE")->group("Bank");
  app->add_option("--common-curve", s->common_curve, wrap_text("Known common curve added to every trajectory: text rows 'dx dy' or 'mjd dx dy' [pixels], one per exposure (simulate writes one).", 62))
      ->type_name("FILE")->group("Bank");
  app->add_option("--reference-mjd", s->reference_mjd, "Reference time of the origins (default: MJD of exposure 0).")->type_name("MJD")->group("Bank");
  app->add_option("--method", s->method, wrap_text("GPU method: gather, tiled (default) or fourier (tensor-core, Cartesian banks, threshold mode; hits re-scored exactly). The CPU twin is exact for all.", 62))
      ->type_name("gather|tiled|fourier")->group("Search");
  app->add_option("--storage", s->storage, "psi/phi storage: fp32 (default), fp16 or int8.")->type_name("fp32|fp16|int8")->group("Search");
  auto* thr = app->add_option("--threshold-sigma", s->threshold_sigma, "Fixed score threshold Z (instead of Bonferroni).")->type_name("Z")->group("Search");
  auto* fa = app->add_option("--false-alarms", s->false_alarms, wrap_text("Bonferroni: family-wise false-alarm probability (expected pure-noise hits) over all origins x velocities; default 1.", 62))
                 ->type_name("P")->group("Search");
  thr->excludes(fa);
  app->add_option("--top-k", s->top_k_text, "Keep the best K (1..16) velocities per origin instead of thresholding.")->type_name("K")->group("Search");
  app->add_option("--min-obs", s->min_obs_text, "Candidates need at least this many valid samples, 0..1000000 (default 1).")->type_name("N")->group("Search");
  app->add_option("--max-candidates", s->max_candidates_text, "Hits kept before clustering, 1..100000000 (default 1000000).")->type_name("N")->group("Search");
  app->add_option("--cluster-radius", s->cluster_radius, wrap_text("Merge candidates whose first and last predicted positions are within this many pixels of a stronger one (default 2).", 62))
      ->type_name("PX")->group("Search");
  app->add_flag("--no-cluster", s->no_cluster, "Keep near-duplicate candidates.")->group("Search");
  app->footer(exit_code_help() + "\nExample:\n  almagest-cli stack search stack.fits --vx-range -8,8 --vy-range -8,8 --grid 33 "
                                 "--common-curve curve.txt -o candidates.ecsv\n");
  return Command{app, [s] { return run_search(*s); }};
}

Command add_psiphi(CLI::App& stack) {
  auto* app = stack.add_subcommand("psiphi", wrap_text("Compute the psi/phi planes of a stack (psi = correlate(sci/var, PSF), phi = correlate(1/var, PSF^2)) in the chosen storage and write them to HDF5.", 80));
  auto s = std::make_shared<PsiphiSettings>();
  add_input_options(*app, *s, true);
  app->add_option("-o,--output", s->output, "Output HDF5 file (.h5/.hdf5). Required.")->required()->type_name("OUT")->group("Output");
  app->add_option("--storage", s->storage, "fp32 (default), fp16 or int8 (per-image noise scaling).")->type_name("fp32|fp16|int8")->group("Output");
  app->footer(exit_code_help() + "\nExample:\n  almagest-cli stack psiphi stack.h5 --storage int8 -o psiphi.h5\n");
  return Command{app, [s] { return run_psiphi(*s); }};
}

Command add_stamps(CLI::App& stack) {
  auto* app = stack.add_subcommand("stamps", wrap_text("For a candidate table (the output of `stack search`, or any ECSV/HDF5 table with x, y, vx, vy), write per-candidate psi/phi curves, coadded stamps (sum, mean, median, weighted) and predicted tracks (with RA/Dec when the stack has a WCS) to HDF5.", 80));
  auto s = std::make_shared<StampsSettings>();
  app->add_option("CANDIDATES", s->candidates, "Candidate table (.ecsv or .h5).")->required()->group("Input");
  add_input_options(*app, *s, false);
  app->add_option("-o,--output", s->output, "Output HDF5 file (.h5/.hdf5). Required.")->required()->type_name("OUT")->group("Output");
  app->add_option("--common-curve", s->common_curve, "Common curve file (default: the one the search used).")->type_name("FILE")->group("Input");
  app->add_option("--reference-mjd", s->reference_mjd, "Reference time (default: the search's).")->type_name("MJD")->group("Input");
  app->add_option("--storage", s->storage, "Planes of the curves (default: the search's storage).")->type_name("fp32|fp16|int8")->group("Input");
  app->add_option("--stamp-radius", s->stamp_radius_text, "Stamp radius [pixels], 0..1000; stamps are 2R+1 square (default 10).")->type_name("R")->group("Output");
  app->add_option("--top", s->top_text, "Only the first N candidates of the table (0 = all, default).")->type_name("N")->group("Output");
  app->footer(exit_code_help() + "\nExample:\n  almagest-cli stack stamps candidates.ecsv --stamp-radius 8 -o stamps.h5\n");
  return Command{app, [s] { return run_stamps(*s); }};
}

}  // namespace

Command add_stack_command(CLI::App& parent) {
  auto* stack = parent.add_subcommand(
      "stack", wrap_text("Shift-and-stack search for moving sources too faint for single exposures (KBMOD's statistic): "
                         "simulate (synthetic stacks with injected movers), psiphi, search, stamps.", 80));
  stack->require_subcommand(1);
  stack->footer(exit_code_help() + "\nRun `almagest-cli stack <command> --help` for its options.\n");
  const std::vector<Command> subs{add_stack_simulate_command(*stack), add_psiphi(*stack), add_search(*stack), add_stamps(*stack)};
  return Command{stack, [subs]() {
                   for (const auto& c : subs)
                     if (c.app->parsed()) return c.run();
                   throw ConfigError("stack", "no command given (simulate, psiphi, search, stamps)");
                 }};
}

}  // namespace almagest::cli
