// run_stack_job() for psiphi, search and stamps (simulate: job_simulate.cpp), the dry-run plan,
// the backend policy of stack jobs and the job-layer wrapper (StackJobImpl). Every output of a
// job is written through one OutputSet with the job's inputs and cancel token; the provenance
// records the job's configuration, backend, device, inputs and their content hashes. The
// search's configuration keeps the "cli" object (stack, stack identity, common curve, PSF
// options) that `stamps` reads back from a table, so tables written before the job layer work.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/io/fits_file.hpp"
#include "almagest/io/hdf5_file.hpp"
#include "almagest/io/text_file.hpp"
#include "almagest/stack/job.hpp"
#include "almagest/stack/observations.hpp"
#include "almagest/stack/wcs.hpp"
#include "job_internal.hpp"

namespace almagest::stack {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
std::string absolute_or_empty(const std::string& p) { return p.empty() ? std::string() : fs::absolute(p).string(); }

std::shared_ptr<const ExposureStack> load_stack(const StackJob& job, const std::string& path, const JobContext& ctx) {
  if (path.empty())
    throw ConfigError((job.label.empty() ? "--" : job.label) + "stack",
                      "is required (the exposure stack: a file, or a stack in memory passed with the job)");
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw IoError(path, "", "stack not found (expected a KBMOD WorkUnit FITS file, a folder of per-exposure FITS files or an HDF5 cube)");
  ctx.progress(0, 1, "reading stack");
  auto st = std::make_shared<ExposureStack>(read_stack(path, job.read));
  ctx.check_cancel();
  return st;
}

PsiPhi compute_planes(const ExposureStack& st, const StackBackend& b, const JobContext& ctx) {
  PsiPhi p = b.resolved.cuda() ? compute_psiphi_gpu(st, b.resolved.device, ctx) : compute_psiphi(st, ctx);
  ctx.check_cancel();
  return p;
}

/// Content hashes of the inputs for the provenance (what a batch compares).
void record_inputs(Provenance& prov, const std::vector<std::string>& inputs) {
  prov.inputs = inputs;
  for (const auto& in : inputs) prov.input_hashes[in] = io::content_hash(in);
}

/// What identifies the stack a table was made from (recorded by search, checked by stamps).
json stack_identity(const std::string& path, const ExposureStack& st) {
  return {{"n_exp", st.size()}, {"width", st.width}, {"height", st.height}, {"mjd", st.mjd},
          {"content_hash", io::content_hash(path)}};
}

/// The engine's configuration JSON plus the job's: the "cli" object (read back by stamps) and
/// the canonical job configuration ("job").
std::string config_with_job(const std::string& engine_json, const StackJob& job, json cli) {
  json j = json::parse(engine_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) j = json::object();
  cli["command"] = std::string("stack ") + to_string(job.op);
  j["cli"] = std::move(cli);
  j["job"] = json::parse(job.config_json());
  return j.dump();
}

/// RA/Dec of the ECSV rows when the stack has a WCS: the continuous predicted position at the
/// exposure nearest the reference time (what describe_candidates gives that row).
std::vector<CandidateDetail> ecsv_sky(const SearchResult& r, const SearchPlan& plan, const ExposureStack& st) {
  std::vector<CandidateDetail> out;
  if (st.wcs_header.empty() || r.candidates.empty()) return out;
  const Wcs wcs = Wcs::from_header(st.wcs_header, st.source);
  std::size_t best = 0;
  for (std::size_t e = 1; e < st.mjd.size(); ++e)
    if (std::fabs(st.mjd[e] - plan.reference_mjd()) < std::fabs(st.mjd[best] - plan.reference_mjd())) best = e;
  const double t = st.mjd[best] - plan.reference_mjd();
  const auto& cfg = plan.config();
  const double dx = cfg.curve_dx.empty() ? 0.0 : cfg.curve_dx[best], dy = cfg.curve_dy.empty() ? 0.0 : cfg.curve_dy[best];
  out.resize(r.candidates.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const Candidate& c = r.candidates[i];
    out[i].c = c;
    out[i].t = {t};
    const auto [ra, dec] = wcs.pixel_to_sky(c.x + c.vx * t + dx, c.y + c.vy * t + dy);
    out[i].ra = {ra};
    out[i].dec = {dec};
  }
  return out;
}

/// Refuses a stack that is not the one the table's search read, naming the property that
/// differs; a table without a recorded identity gets a warning.
void check_stack_identity(const json& cfg, const std::string& table, const std::string& path, const ExposureStack& st,
                          const JobContext& ctx) {
  const json* id = nullptr;
  if (cfg.is_object() && cfg.contains("cli") && cfg["cli"].is_object() && cfg["cli"].contains("stack_identity") &&
      cfg["cli"]["stack_identity"].is_object())
    id = &cfg["cli"]["stack_identity"];
  if (!id) {
    ctx.warn(table + " records no identity of the stack it was made from (written by an older version or another tool): " +
             path + " cannot be checked to be that stack");
    return;
  }
  const std::string intro = path + " is not the stack " + table + " was made from: ";
  auto number = [&](const char* key, std::int64_t have) {
    if (!id->contains(key)) return;
    const json& v = (*id)[key];
    if (!v.is_number_integer() || v.get<std::int64_t>() != have)
      throw IoError(path, "", intro + fmt::format("its {} is {}, the table's stack had {}",
                                                  key == std::string("n_exp") ? "exposure count" : key, have, v.dump()));
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
      throw IoError(path, "", intro + "its content differs (hash " + have + ", recorded " + want + "): the stack changed after the search");
  }
}

/// Every candidate of a table lies on the stack and its track stays within 1e9 pixels.
void check_candidates(const files::CandidateTable& t, const std::string& table, const ExposureStack& st, double reference_mjd,
                      const std::vector<double>& dx, const std::vector<double>& dy) {
  const double ref = std::isnan(reference_mjd) ? st.mjd.front() : reference_mjd;
  double tmax = 0, cx = 0, cy = 0;
  for (double m : st.mjd) tmax = std::max(tmax, std::fabs(m - ref));
  for (double v : dx) cx = std::max(cx, std::fabs(v));
  for (double v : dy) cy = std::max(cy, std::fabs(v));
  for (std::size_t i = 0; i < t.candidates.size(); ++i) {
    const Candidate& c = t.candidates[i];
    auto bad = [&](const char* col, const std::string& what) { throw IoError(table, fmt::format("row {}, column {}", i + 1, col), what); };
    if (c.x < 0 || c.x >= st.width) bad("x", fmt::format("origin x = {} is outside the stack's 0..{}", c.x, st.width - 1));
    if (c.y < 0 || c.y >= st.height) bad("y", fmt::format("origin y = {} is outside the stack's 0..{}", c.y, st.height - 1));
    if (!std::isfinite(c.vx) || std::fabs(c.vx) * tmax + cx > 1e9)
      bad("vx", fmt::format("velocity {} px/d moves the track beyond 1e9 pixels over the stack's {} days", c.vx, tmax));
    if (!std::isfinite(c.vy) || std::fabs(c.vy) * tmax + cy > 1e9)
      bad("vy", fmt::format("velocity {} px/d moves the track beyond 1e9 pixels over the stack's {} days", c.vy, tmax));
  }
}

/// The search's bank, rebuilt exactly from its configuration JSON; nullopt without one.
std::optional<TrajectoryBank> bank_from_config(const json& cfg) {
  if (!cfg.is_object() || !cfg.contains("bank") || !cfg["bank"].is_object()) return std::nullopt;
  const json& b = cfg["bank"];
  try {
    if (b.value("kind", "") == "cartesian" && b.contains("vx") && b.contains("vy")) {
      const auto& x = b["vx"];
      const auto& y = b["vy"];
      return TrajectoryBank::cartesian(x.at(0).get<double>(), x.at(1).get<double>(), x.at(2).get<int>(), y.at(0).get<double>(),
                                       y.at(1).get<double>(), y.at(2).get<int>());
    }
    if (b.contains("vx_list") && b.contains("vy_list"))
      return TrajectoryBank::list(b["vx_list"].get<std::vector<double>>(), b["vy_list"].get<std::vector<double>>());
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

/// Writes through one OutputSet of the job's inputs and the context's cancel token.
template <class Fn>
void commit(const std::vector<std::string>& inputs, const JobContext& ctx, Fn write) {
  OutputSet set(inputs, ctx.token());
  OutputSet::Scope scope(set);
  write(set);
  set.commit();
}

void fill_outcome(StackOutcome& o, const StackJob& job, const StackBackend& b) {
  o.engine = "stack";
  o.operation = to_string(job.op);
  o.inputs = job.input_paths();
  o.backend = b.resolved.cuda() ? "cuda" : "cpu";
  o.threads = resolve_threads(job.threads);
  o.resolved_gpu = b.resolved.cuda();
}

// ---- psiphi ---------------------------------------------------------------------------------

StackOutcome run_psiphi(const StackJob& job, const JobContext& ctx, const jobs::RunOptions& opt, const StackInputs& pre) {
  const StackBackend b = resolve_stack_backend(job);
  if (!b.resolved.note.empty()) ctx.info(b.resolved.note);
  StackOutcome o;
  fill_outcome(o, job, b);
  o.encoding = job.encoding;
  auto t0 = Clock::now();
  o.exposures = pre.stack ? pre.stack : load_stack(job, job.stack, ctx);
  const ExposureStack& st = *o.exposures;
  o.timings_s["read"] = seconds_since(t0);
  t0 = Clock::now();
  const PsiPhi p = pre.psiphi ? *pre.psiphi : compute_planes(st, b, ctx);
  const EncodedPsiPhi enc = encode(p, job.encoding);
  auto decoded = std::make_shared<PsiPhi>(job.encoding == Encoding::Fp32 ? p : decode(enc));
  o.timings_s["psiphi"] = seconds_since(t0);
  std::size_t valid = 0;
  for (float v : decoded->phi) valid += v > 0;
  o.valid_fraction = decoded->phi.empty() ? 0.0 : double(valid) / double(decoded->phi.size());
  o.psiphi = decoded;
  Provenance prov = Provenance::current(o.backend);
  prov.threads = o.threads;
  record_inputs(prov, job.input_paths());
  prov.timings_s = o.timings_s;
  prov.config_json = config_with_job("{}", job, {{"stack", absolute_or_empty(job.stack)}, {"storage", to_string(job.encoding)},
                                                 {"psf_sigma", job.read.psf_sigma}, {"fallback_psf_sigma", job.read.fallback_psf_sigma}});
  if (opt.write && !job.output.empty()) {
    ctx.progress(0, 1, "writing psi/phi");
    commit(job.input_paths(), ctx, [&](OutputSet&) { files::write_psiphi_hdf5(job.output, enc, *decoded, prov.to_json(), job.stack); });
    o.outputs = {job.output};
  }
  o.summary.push_back(fmt::format("wrote {} (psi/phi of {} exposures of {} x {}, storage {}, {:.1f}% valid samples)", job.output, p.n,
                                  p.width, p.height, to_string(job.encoding), 100.0 * o.valid_fraction));
  o.summary.push_back(fmt::format("backend {}, {} threads; read {:.2f} s, psi/phi {:.2f} s", o.backend, o.threads,
                                  o.timings_s["read"], o.timings_s["psiphi"]));
  if (!opt.write || job.output.empty()) o.summary.erase(o.summary.begin());
  return o;
}

// ---- search ---------------------------------------------------------------------------------

StackOutcome run_search(const StackJob& job, const JobContext& ctx, const jobs::RunOptions& opt, const StackInputs& pre) {
  const auto t_all = Clock::now();
  const StackBackend b = resolve_stack_backend(job);
  if (!b.resolved.note.empty()) ctx.info(b.resolved.note);
  SearchConfig cfg = job.search;
  cfg.backend = b.search;
  cfg.device = b.resolved.device;
  cfg.threads = ctx.threads > 0 && job.threads == 0 ? ctx.threads : job.threads;
  if (pre.bank) cfg.bank = *pre.bank;  // an explicit list held in memory (Python)
  else if (job.bank_from_file && job.velocities.empty())
    throw ConfigError("velocities", "is required (no velocities file and no bank in memory)");
  else if (job.bank_from_file) cfg.bank = files::read_velocities(job.velocities);
  cfg.check();

  StackOutcome o;
  fill_outcome(o, job, b);
  o.encoding = cfg.encoding;
  auto t0 = Clock::now();
  o.exposures = pre.stack ? pre.stack : load_stack(job, job.stack, ctx);
  const ExposureStack& st = *o.exposures;
  if (!job.common_curve.empty()) files::read_common_curve(job.common_curve, st.mjd, cfg.curve_dx, cfg.curve_dy);
  else if (!pre.curve_dx.empty()) {
    cfg.curve_dx = pre.curve_dx;
    cfg.curve_dy = pre.curve_dy;
  }
  if ((!job.ades.empty() || !job.mpc.empty()) && st.wcs_header.empty())
    throw IoError(st.source.empty() ? job.stack : st.source, "WCS",
                  "the stack has no WCS: ADES and MPC observation rows need RA/Dec (drop --ades / --mpc)");
  if (cfg.fractional) cfg.psf_rho = psf_correlations(st);
  // Duplicates are merged at the source level by filter_candidates (not the plan's clustering).
  cfg.cluster.enabled = false;
  o.timings_s["read"] = seconds_since(t0);
  t0 = Clock::now();
  std::shared_ptr<const PsiPhi> planes = pre.psiphi;
  if (!planes) planes = std::make_shared<const PsiPhi>(compute_planes(st, b, ctx));
  else ctx.info("Reusing the psi/phi planes of this stack");
  const EncodedPsiPhi enc = encode(*planes, cfg.encoding);
  o.timings_s["psiphi"] = seconds_since(t0);
  o.psiphi = cfg.encoding == Encoding::Fp32 ? planes : std::make_shared<const PsiPhi>(decode(enc));
  auto plan = std::make_shared<const SearchPlan>(make_plan(cfg, planes->mjd, planes->width, planes->height, ctx));
  o.result = plan->execute(enc, ctx);
  ctx.check_cancel();
  o.search_plan = plan;
  SearchResult& r = o.result;
  filter_candidates(r, *plan, *o.psiphi, &st, job.filters, ctx);
  r.provenance.timings_s["filters"] = r.filters.seconds;
  o.timings_s["filters"] = r.filters.seconds;
  o.device = r.device;
  if (job.output_ext == ".ecsv") o.details = ecsv_sky(r, *plan, st);
  std::vector<CandidateDetail> tracks;  // per-exposure RA/Dec for ADES / MPC
  if (!job.ades.empty() || !job.mpc.empty()) tracks = describe_candidates(r, *plan, st, *o.psiphi, 0, ctx);
  record_inputs(r.provenance, job.input_paths());
  r.provenance.timings_s["read"] = o.timings_s["read"];
  r.provenance.timings_s["psiphi"] = o.timings_s["psiphi"];
  const std::string stack_path = job.stack.empty() ? st.source : job.stack;
  json cli = {{"stack", stack_path.empty() ? std::string() : fs::absolute(stack_path).string()},
              {"common_curve", absolute_or_empty(job.common_curve)}, {"velocities", absolute_or_empty(job.velocities)},
              {"psf_sigma", job.read.psf_sigma}, {"fallback_psf_sigma", job.read.fallback_psf_sigma},
              {"psiphi_backend", pre.psiphi ? (pre.psiphi_gpu ? "cuda" : "cpu") : o.backend}};
  if (!job.stack.empty()) cli["stack_identity"] = stack_identity(job.stack, st);
  else  // a stack held in memory (the GUI's synthetic stacks): its shape and times, no file to hash
    cli["stack_identity"] = {{"in_memory", true}, {"n_exp", st.size()}, {"width", st.width}, {"height", st.height}, {"mjd", st.mjd}};
  r.provenance.config_json = config_with_job(r.provenance.config_json, job, std::move(cli));
  ObservationOptions obs_opt;
  obs_opt.station = job.station;
  obs_opt.reference_mjd = plan->reference_mjd();
  if (!tracks.empty()) {
    // Pixel scale at the image centre and the mean PSF sigma, for rmsRA / rmsDec.
    const Wcs wcs = Wcs::from_header(st.wcs_header, st.source);
    const double cx = 0.5 * (st.width - 1), cy = 0.5 * (st.height - 1);
    const auto [ra0, de0] = wcs.pixel_to_sky(cx, cy);
    const auto [ra1, de1] = wcs.pixel_to_sky(cx + 1, cy);
    obs_opt.pixel_scale_arcsec = std::hypot((ra1 - ra0) * std::cos(de0 * 3.14159265358979323846 / 180.0), de1 - de0) * 3600.0;
    double m2 = 0;
    for (const Psf& k : st.psf) {
      double sum = 0, mm = 0;
      const int r = k.size / 2;
      for (int y = 0; y < k.size; ++y)
        for (int x = 0; x < k.size; ++x) {
          const double v = k.kernel[std::size_t(y) * k.size + x];
          sum += v;
          mm += v * double((x - r) * (x - r) + (y - r) * (y - r));
        }
      m2 += sum > 0 ? mm / sum / 2.0 : 1.0;
    }
    obs_opt.psf_sigma_px = st.psf.empty() ? 1.0 : std::sqrt(m2 / double(st.psf.size()));
  }
  if (opt.write && !job.ades.empty()) o.outputs.push_back(job.ades);
  if (opt.write && !job.mpc.empty()) o.outputs.push_back(job.mpc);
  if (opt.write && (!job.output.empty() || !job.ades.empty() || !job.mpc.empty())) {
    ctx.progress(0, 1, "writing candidates");
    commit(job.input_paths(), ctx, [&](OutputSet&) {
      if (job.output_ext == ".ecsv") write_candidates_ecsv(job.output, r, o.details);
      else if (!job.output.empty()) write_result_hdf5(job.output, r);
      if (!job.ades.empty()) write_ades_psv(job.ades, tracks, obs_opt);
      if (!job.mpc.empty()) write_mpc80(job.mpc, tracks, obs_opt);
    });
  }
  if (opt.write && !job.output.empty()) {
    o.outputs.insert(o.outputs.begin(), job.output);
    o.summary.push_back(fmt::format("wrote {} ({}, {} candidates from {} hits{})", job.output, job.output_ext == ".ecsv" ? "ECSV" : "HDF5",
                                    r.candidates.size(), r.raw_hits, r.truncated ? ", truncated at --max-candidates" : ""));
  }
  o.timings_s["scan"] = r.scan_seconds;
  o.timings_s["total"] = seconds_since(t_all);
  o.summary.push_back(fmt::format("stack: {} exposures of {} x {} ({}); bank: {} velocities; storage {}; backend {} ({}), {} threads",
                                  st.size(), st.width, st.height, stack_path, r.n_vel, to_string(cfg.encoding), r.backend, r.device,
                                  resolve_threads(cfg.threads)));
  o.summary.push_back(fmt::format("threshold Z >= {:.4f} ({}); digest: sum A {:.6g}, sum B {:.6g}, max Z {:.4f}, {} trajectories above",
                                  r.threshold_z, cfg.threshold_z > 0 ? std::string("--threshold-sigma")
                                                                     : fmt::format("Bonferroni, --false-alarms {}", cfg.false_alarms),
                                  r.digest.sum_a, r.digest.sum_b, r.digest.max_z, r.digest.count_above));
  if (!r.candidates.empty()) {
    const auto& c = r.candidates.front();
    o.summary.push_back(fmt::format("best: x {}, y {}, vx {:.4f}, vy {:.4f} px/d, Z {:.3f}, flux {:.4g}, obs {}, {} merged", c.x, c.y, c.vx,
                                    c.vy, c.z, c.flux, c.obs, c.members));
  }
  o.summary.push_back(r.filters.summary());
  o.summary.push_back(fmt::format("timings: read {:.2f} s, psi/phi {:.2f} s, scan {:.3f} s, filters {:.3f} s, total {:.2f} s",
                                  o.timings_s["read"], o.timings_s["psiphi"], r.scan_seconds, r.filters.seconds, seconds_since(t_all)));
  return o;
}

// ---- stamps ---------------------------------------------------------------------------------

StackOutcome run_stamps(const StackJob& job_in, const JobContext& ctx, const jobs::RunOptions& opt, const StackInputs& pre) {
  const auto t_all = Clock::now();
  StackJob job = job_in;
  const StackBackend b = resolve_stack_backend(job);
  if (!b.resolved.note.empty()) ctx.info(b.resolved.note);

  // The table and, from its provenance, the search it came from.
  files::CandidateTable table = files::read_candidates(job.candidates);
  const json cfg = table.config_json.empty() ? json() : json::parse(table.config_json, nullptr, false);
  const std::string flag = job.label.empty() ? "--" : job.label;
  if (job.stack.empty()) job.stack = cli_string(cfg, "stack");
  if (job.stack.empty() && !pre.stack)
    throw ConfigError(flag + "stack", job.candidates + " does not record the stack it was made from; give --stack FILE");
  if (job.common_curve.empty() && pre.curve_dx.empty() && cfg.is_object() && cfg.value("common_curve", false)) {
    job.common_curve = cli_string(cfg, "common_curve");
    if (job.common_curve.empty())
      throw ConfigError(flag + "common-curve", "the search of " + job.candidates + " used a common curve; give the same file with --common-curve");
  }
  Encoding encoding = job.encoding;
  if (!job.storage_given && cfg.is_object() && cfg.contains("encoding") && cfg["encoding"].is_string())
    encoding = parse_encoding(cfg["encoding"].get<std::string>(), "storage");
  double reference_mjd = job.reference_mjd;
  if (std::isnan(reference_mjd) && cfg.is_object() && cfg.contains("reference_mjd") && cfg["reference_mjd"].is_number())
    reference_mjd = cfg["reference_mjd"].get<double>();
  if (job.read.psf_sigma == 0 && cfg.is_object() && cfg.contains("cli") && cfg["cli"].is_object()) {
    job.read.psf_sigma = cfg["cli"].value("psf_sigma", 0.0);
    job.read.fallback_psf_sigma = job.read.fallback_psf_sigma > 0 ? job.read.fallback_psf_sigma : cfg["cli"].value("fallback_psf_sigma", 0.0);
  }
  if (job.top > 0 && table.candidates.size() > job.top) table.candidates.resize(job.top);
  // Stamps are candidates x (2R+1)^2 floats of four kinds: bounded before they are made.
  const std::uint64_t side = 2 * std::uint64_t(job.stamp_radius) + 1;
  if (std::uint64_t(table.candidates.size()) * side * side > kMaxStampPixels)
    throw ConfigError(flag + "stamp-radius", fmt::format("{} candidates x {} x {} stamp pixels is more than {} (use --top or a smaller "
                                                         "--stamp-radius)", table.candidates.size(), side, side, kMaxStampPixels));

  // Exact velocities: the bank's own values where the table's bank index matches its vx, vy.
  const std::optional<TrajectoryBank> bank = table.has_v ? bank_from_config(cfg) : std::nullopt;
  std::vector<double> vx, vy;
  std::vector<std::int32_t> original_v;
  for (std::size_t i = 0; i < table.candidates.size(); ++i) {
    const Candidate& c = table.candidates[i];
    double x = c.vx, y = c.vy;
    if (bank) {
      const auto close = [](double a, double bb) { return std::fabs(a - bb) <= 1e-6 * std::max(1.0, std::fabs(bb)); };
      if (c.v < 0 || std::size_t(c.v) >= bank->size() || !close(c.vx, bank->vx[c.v]) || !close(c.vy, bank->vy[c.v]))
        throw IoError(job.candidates, fmt::format("row {}: v", i + 1),
                      fmt::format("bank index {} does not match vx = {}, vy = {} of the recorded search bank", c.v, c.vx, c.vy));
      x = bank->vx[c.v];
      y = bank->vy[c.v];
    }
    vx.push_back(x);
    vy.push_back(y);
    original_v.push_back(c.v);
  }

  StackOutcome o;
  fill_outcome(o, job, b);
  o.encoding = encoding;
  o.exposures = pre.stack ? pre.stack : load_stack(job, job.stack, ctx);
  const ExposureStack& st = *o.exposures;
  if (!pre.stack) check_stack_identity(cfg, job.candidates, job.stack, st, ctx);
  SearchConfig sc;
  if (!job.common_curve.empty()) files::read_common_curve(job.common_curve, st.mjd, sc.curve_dx, sc.curve_dy);
  else if (!pre.curve_dx.empty()) {
    sc.curve_dx = pre.curve_dx;
    sc.curve_dy = pre.curve_dy;
  }
  check_candidates(table, job.candidates, st, reference_mjd, sc.curve_dx, sc.curve_dy);
  sc.reference_mjd = reference_mjd;
  sc.threads = job.threads;
  const PsiPhi p = pre.psiphi ? *pre.psiphi : compute_planes(st, b, ctx);
  // The planes the search summed: decoded from the same storage encoding.
  auto planes = std::make_shared<const PsiPhi>(encoding == Encoding::Fp32 ? p : decode(encode(p, encoding)));
  o.psiphi = planes;

  SearchResult& r = o.result;
  r.width = st.width;
  r.height = st.height;
  r.n_exp = int(st.size());
  r.threshold_z = table.threshold_z;
  r.digest = table.digest;
  r.backend = table.backend;
  r.candidates = table.candidates;
  if (!r.candidates.empty()) {
    sc.bank = TrajectoryBank::list(vx, vy);
    r.n_vel = sc.bank.size();
    for (std::size_t i = 0; i < r.candidates.size(); ++i) r.candidates[i].v = std::int32_t(i);
    auto plan = std::make_shared<const SearchPlan>(make_plan(sc, st.mjd, st.width, st.height, ctx));
    o.details = describe_candidates(r, *plan, st, *planes, job.stamp_radius, ctx);
    for (std::size_t i = 0; i < r.candidates.size(); ++i) r.candidates[i].v = o.details[i].c.v = original_v[i];
    o.search_plan = plan;
  }
  ctx.check_cancel();
  std::vector<std::string> inputs{job.candidates, job.stack};
  if (!job.common_curve.empty()) inputs.push_back(job.common_curve);
  r.provenance = Provenance::current(o.backend);
  r.provenance.threads = o.threads;
  record_inputs(r.provenance, inputs);
  r.provenance.timings_s["total"] = seconds_since(t_all);
  const json search = cfg.is_object() ? cfg : json();
  r.provenance.config_json =
      config_with_job("{}", job,
                      {{"candidates", fs::absolute(job.candidates).string()}, {"stack", fs::absolute(job.stack).string()},
                       {"common_curve", absolute_or_empty(job.common_curve)}, {"stamp_radius", job.stamp_radius},
                       {"storage", to_string(encoding)}, {"reference_mjd", std::isnan(reference_mjd) ? json() : json(reference_mjd)},
                       {"search", search}});
  o.inputs = inputs;
  if (opt.write) {
    ctx.progress(0, 1, "writing stamps");
    commit(inputs, ctx, [&](OutputSet&) { write_result_hdf5(job.output, r, o.details); });
    o.outputs = {job.output};
    o.summary.push_back(fmt::format("wrote {} ({} candidates: psi/phi curves over {} exposures, {} x {} stamps, tracks{})", job.output,
                                    r.candidates.size(), st.size(), 2 * job.stamp_radius + 1, 2 * job.stamp_radius + 1,
                                    !o.details.empty() && !o.details[0].ra.empty() ? " with RA/Dec" : ""));
  }
  o.timings_s["total"] = seconds_since(t_all);
  o.summary.push_back(fmt::format("stack {}, storage {}, total {:.2f} s", job.stack, to_string(encoding), seconds_since(t_all)));
  return o;
}

}  // namespace

StackBackend resolve_stack_backend(const StackJob& job) {
  StackBackend b;
  b.resolved = resolve_backend(job.backend);
  if (b.resolved.cuda())
    b.search = job.method == Method::Gather ? Backend::GpuGather : job.method == Method::Fourier ? Backend::GpuFourier : Backend::GpuTiled;
  return b;
}

StackOutcome run_stack_job(const StackJob& job, const JobContext& ctx_in, const jobs::RunOptions& options, const StackInputs& pre) {
  if (options.dry_run) return detail::plan_stack_job(job);
  // The job's thread count (0: the context's).
  JobContext ctx = ctx_in;
  if (job.threads > 0) ctx.threads = job.threads;
  switch (job.op) {
    case StackOp::Simulate: return detail::run_simulate(job, ctx, options);
    case StackOp::Psiphi: return run_psiphi(job, ctx, options, pre);
    case StackOp::Search: return run_search(job, ctx, options, pre);
    case StackOp::Stamps: return run_stamps(job, ctx, options, pre);
  }
  throw ConfigError("op", "unknown stack operation");
}

// ---- the job layer ----------------------------------------------------------------------------

namespace {

class StackJobImpl final : public jobs::Job {
public:
  explicit StackJobImpl(StackJob j) : job_(std::move(j)) {}
  const std::string& engine() const noexcept override {
    static const std::string name = "stack";
    return name;
  }
  std::string operation() const override { return to_string(job_.op); }
  std::vector<std::string> input_paths() const override { return job_.input_paths(); }
  std::vector<std::string> output_paths() const override { return job_.output_paths(); }
  std::string config_json() const override { return job_.config_json(); }
  schema::Values values() const override { return job_.values; }
  std::unique_ptr<jobs::Outcome> run(const JobContext& ctx, const jobs::RunOptions& options) const override {
    return std::make_unique<StackOutcome>(run_stack_job(job_, ctx, options));
  }

private:
  StackJob job_;
};

}  // namespace

std::unique_ptr<jobs::Job> make_stack_job_ptr(const jobs::JobRequest& request) {
  return std::make_unique<StackJobImpl>(make_stack_job(request));
}

jobs::EngineEntry stack_job_entry() { return {"stack", &stack_schema, &make_stack_job_ptr}; }

}  // namespace almagest::stack
