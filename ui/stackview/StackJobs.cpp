#include "stackview/StackJobs.hpp"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <system_error>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "jobs/JobProgressBar.hpp"
#include "almagest/core/gpu.hpp"
#include "almagest/stack/stack_io.hpp"

namespace almagest::ui::stackview {

namespace stk = almagest::stack;
using Clock = std::chrono::steady_clock;

namespace {

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}


/// Details for the rows of an ECSV table: only when the stack has a WCS (RA/Dec columns); the
/// stamps are not written to ECSV, so radius 0 keeps this cheap.
std::vector<stk::CandidateDetail> ecsvDetails(const SearchOutput& out, const almagest::JobContext& ctx) {
  if (out.stack->stack.wcs_header.empty() || out.result.candidates.empty()) return {};
  return stk::describe_candidates(out.result, *out.plan, out.stack->stack, *out.psiphi, 0, ctx);
}

void writeOutput(const SearchOutput& out, SaveKind kind, const std::string& path, int stampRadius,
                 const almagest::JobContext& ctx) {
  // One OutputSet of the job's inputs: the file appears whole or not at all, never over an input.
  almagest::OutputSet set(out.job.input_paths(), ctx.token());
  almagest::OutputSet::Scope scope(set);
  if (kind == SaveKind::CandidatesEcsv) {
    const auto details = ecsvDetails(out, ctx);
    ctx.check_cancel();
    stk::write_candidates_ecsv(path, out.result, details);
  } else {
    const auto details = out.result.candidates.empty()
                             ? std::vector<stk::CandidateDetail>{}
                             : stk::describe_candidates(out.result, *out.plan, out.stack->stack, *out.psiphi,
                                                        stampRadius, ctx);
    ctx.check_cancel();
    stk::write_result_hdf5(path, out.result, details);
  }
  set.commit();
}

std::string fmtNumber(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

/// "MIN,MAX" of a range text, false if it does not read as two numbers.
bool parseRange(const std::string& t, double& lo, double& hi) {
  return std::sscanf(t.c_str(), " %lf , %lf", &lo, &hi) == 2;
}

}  // namespace

almagest::schema::Values toValues(const SearchSettings& s) {
  almagest::schema::Values v;
  v["vx-range"] = fmtNumber(s.vxMin) + "," + fmtNumber(s.vxMax);
  v["vy-range"] = fmtNumber(s.vyMin) + "," + fmtNumber(s.vyMax);
  v["grid"] = std::to_string(s.nvx) + "x" + std::to_string(s.nvy);
  if (s.fixedThreshold) v["threshold-sigma"] = fmtNumber(s.thresholdZ);
  else v["false-alarms"] = fmtNumber(s.falseAlarms);
  v["min-obs"] = std::to_string(s.minObs);
  v["storage"] = std::string(stk::to_string(s.encoding));
  if (!s.cluster) v["no-cluster"] = true;
  v["cluster-radius"] = fmtNumber(s.clusterRadius);
  switch (s.backend) {
    case stk::Backend::Cpu: v["backend"] = std::string("cpu"); break;
    case stk::Backend::GpuGather: v["backend"] = std::string("cuda"); v["method"] = std::string("gather"); break;
    case stk::Backend::GpuFourier: v["backend"] = std::string("cuda"); v["method"] = std::string("fourier"); break;
    default: v["backend"] = std::string("cuda"); v["method"] = std::string("tiled"); break;
  }
  return v;
}

SearchSettings fromValues(const almagest::schema::Values& v, SearchSettings s) {
  auto text = [&](const char* key) -> std::string {
    auto it = v.find(key);
    if (it == v.end()) return {};
    if (const auto* t = std::get_if<std::string>(&it->second)) return *t;
    if (const auto* d = std::get_if<double>(&it->second)) return fmtNumber(*d);
    if (const auto* i = std::get_if<std::int64_t>(&it->second)) return std::to_string(*i);
    return {};
  };
  double lo = 0, hi = 0;
  if (parseRange(text("vx-range"), lo, hi)) s.vxMin = lo, s.vxMax = hi;
  if (parseRange(text("vy-range"), lo, hi)) s.vyMin = lo, s.vyMax = hi;
  const std::string g = text("grid");
  int nx = 0, ny = 0;
  if (std::sscanf(g.c_str(), "%dx%d", &nx, &ny) == 2) s.nvx = nx, s.nvy = ny;
  else if (std::sscanf(g.c_str(), "%d", &nx) == 1) s.nvx = s.nvy = nx;
  else if (g.empty()) s.nvx = s.nvy = 21;  // the schema's default grid
  if (!text("threshold-sigma").empty()) {
    s.fixedThreshold = true;
    s.thresholdZ = std::atof(text("threshold-sigma").c_str());
  }
  if (!text("min-obs").empty()) s.minObs = std::atoi(text("min-obs").c_str());
  return s;
}

stk::StackJob makeSearchStackJob(const almagest::schema::Values& form, const LoadedStack* st, const QString& savePath) {
  almagest::jobs::JobRequest req;
  req.engine = "stack";
  req.values = form;
  req.values["op"] = std::string("search");
  // The window holds the stack: its file when it came from one (recorded and hashed in the
  // provenance); an in-memory (synthetic) stack, or none yet (validation only), is passed to the
  // job as StackInputs. Without a save path the job has no output and writes nothing.
  if (st && !st->synthetic && !st->stack.source.empty()) req.values["stack"] = st->stack.source;
  if (!savePath.isEmpty()) req.values["output"] = QDir::toNativeSeparators(savePath).toStdString();
  stk::MakeStackOptions mo;
  mo.stack_in_memory = true;
  mo.output_optional = true;
  return stk::make_stack_job(req, mo);
}

stk::SearchConfig searchConfigOf(const stk::StackJob& job, const LoadedStack& st) {
  stk::SearchConfig cfg = job.search;
  if (job.bank_from_file) cfg.bank = stk::files::read_velocities(job.velocities);
  if (!job.common_curve.empty()) {
    stk::files::read_common_curve(job.common_curve, st.stack.mjd, cfg.curve_dx, cfg.curve_dy);
  } else {
    cfg.curve_dx = st.curveDx;
    cfg.curve_dy = st.curveDy;
  }
  return cfg;
}

JobRunner::Job makeOpenStackJob(const QString& path, double fallbackPsfSigma) {
  const std::string p = QDir::toNativeSeparators(path).toStdString();
  const QString label = QFileInfo(path).fileName();
  return [p, label, fallbackPsfSigma](const almagest::JobContext& ctx) -> std::any {
    try {
      std::error_code ec;
      if (!std::filesystem::exists(p, ec))
        throw almagest::IoError(p, "", "not found (expected a KBMOD WorkUnit FITS file, an HDF5 cube or a folder of "
                                       "per-exposure FITS files)");
      ctx.progress(0, 1, "reading stack");
      ctx.info("Reading stack " + p);
      stk::StackReadOptions opt;
      opt.fallback_psf_sigma = fallbackPsfSigma;
      auto out = std::make_shared<LoadedStack>();
      out->stack = stk::read_stack(p, opt);
      ctx.check_cancel();
      ctx.progress(0.9, 1, "validating stack");
      out->stack.validate();
      if (out->stack.source.empty()) out->stack.source = p;
      out->label = label;
      return StackPtr(std::move(out));
    } catch (...) {
      rethrowNamingFile(p);
    }
  };
}

JobRunner::Job makeSyntheticJob(const stk::SyntheticConfig& config) {
  return [config](const almagest::JobContext& ctx) -> std::any {
    ctx.progress(0, 1, "generating synthetic stack");
    ctx.info("Generating a synthetic stack: " + std::to_string(config.n_exp) + " exposures of " +
             std::to_string(config.width) + " x " + std::to_string(config.height) + ", seed " +
             std::to_string(config.seed) + ", " + std::to_string(config.movers.size()) + " movers");
    stk::SyntheticStack syn = stk::make_synthetic(config);
    ctx.check_cancel();
    auto out = std::make_shared<LoadedStack>();
    out->stack = std::move(syn.stack);
    out->curveDx = std::move(syn.curve_dx);
    out->curveDy = std::move(syn.curve_dy);
    out->movers = std::move(syn.movers);
    out->synthetic = true;
    out->seed = config.seed;
    out->label = QStringLiteral("synthetic (seed %1)").arg(config.seed);
    return StackPtr(std::move(out));
  };
}

JobRunner::Job makeSearchJob(StackPtr stack, PsiPhiCache cache, stk::StackJob job, bool bestZMap) {
  return [stack = std::move(stack), cache = std::move(cache), job = std::move(job),
          bestZMap](const almagest::JobContext& ctx) -> std::any {
    ALMAGEST_ASSERT(stack != nullptr, "search job without a stack");
    auto out = std::make_shared<SearchOutput>();
    out->stack = stack;
    const stk::StackBackend backend = stk::resolve_stack_backend(job);  // BackendUnavailable here
    const stk::ExposureStack& st = stack->stack;
    const bool gpu = backend.resolved.cuda();
    const bool save = !job.output.empty();

    // Shares of the progress range: psi/phi, the job (scan and writing), best-Z scan.
    const bool reuse = cache.planes && cache.stack == stack && cache.gpu == gpu;
    const double pEnd = reuse ? 0.02 : 0.15;
    const double sEnd = bestZMap ? 0.58 : 0.99;

    auto t0 = Clock::now();
    if (reuse) {
      out->psiphi = cache.planes;
      out->psiphiOnGpu = cache.gpu;
    } else {
      const almagest::JobContext pctx = JobRunner::stageContext(ctx, 0.0, pEnd);
      pctx.progress(0, 1, gpu ? "psi/phi (gpu)" : "psi/phi");
      out->psiphi = std::make_shared<const stk::PsiPhi>(gpu ? stk::compute_psiphi_gpu(st, backend.resolved.device, pctx)
                                                            : stk::compute_psiphi(st, pctx));
      out->psiphiOnGpu = gpu;
    }
    out->psiphiSeconds = secondsSince(t0);
    ctx.check_cancel();

    // The job layer: bank, common curve (file or the synthetic stack's), plan, scan, provenance
    // and, with an output, the file through one OutputSet.
    stk::StackInputs inputs;
    inputs.stack = std::shared_ptr<const stk::ExposureStack>(stack, &stack->stack);
    inputs.psiphi = out->psiphi;
    inputs.psiphi_gpu = out->psiphiOnGpu;
    inputs.curve_dx = stack->curveDx;
    inputs.curve_dy = stack->curveDy;
    almagest::jobs::RunOptions opt;
    opt.write = save;
    stk::StackOutcome o = stk::run_stack_job(job, JobRunner::stageContext(ctx, pEnd, sEnd), opt, inputs);
    ctx.check_cancel();
    for (const std::string& line : o.summary) ctx.info(line);
    out->result = std::move(o.result);
    out->plan = o.search_plan;
    out->config = out->plan->config();
    out->job = job;
    // The planes the search summed (decoded from the job's storage), for stamps and details.
    out->psiphi = o.psiphi ? o.psiphi : out->psiphi;
    if (stack->synthetic) out->result.provenance.seeds["synthetic"] = stack->seed;

    if (bestZMap) {
      t0 = Clock::now();
      stk::SearchConfig zc = out->config;
      zc.mode = stk::ResultMode::TopK;
      zc.top_k = 1;
      zc.min_obs = 0;
      zc.cluster.enabled = false;
      zc.dense = false;
      const stk::PsiPhi& p = *out->psiphi;
      zc.max_candidates = std::max<std::size_t>(1, p.pixels());
      if (zc.backend == stk::Backend::GpuFourier) zc.backend = stk::Backend::GpuTiled;  // no top-k there
      const stk::SearchPlan zplan = stk::make_plan(zc, p.mjd, p.width, p.height, ctx);
      const almagest::JobContext zctx = JobRunner::stageContext(ctx, sEnd, 0.99);
      const stk::SearchResult zr = zplan.execute(stk::encode(p, zc.encoding), zctx);
      ctx.check_cancel();
      out->bestZ.assign(p.pixels(), 0.0f);
      for (const stk::Candidate& c : zr.candidates)
        if (c.x >= 0 && c.x < p.width && c.y >= 0 && c.y < p.height)
          out->bestZ[std::size_t(c.y) * std::size_t(p.width) + std::size_t(c.x)] = static_cast<float>(c.z);
      out->bestZSeconds = secondsSince(t0);
    }
    if (save) out->savedPath = QString::fromStdString(job.output);
    ctx.check_cancel();
    return SearchOutputPtr(std::move(out));
  };
}

JobRunner::Job makeSaveJob(SearchOutputPtr out, SaveKind kind, const QString& path, int stampRadius) {
  const std::string p = QDir::toNativeSeparators(path).toStdString();
  return [out = std::move(out), kind, p, path, stampRadius](const almagest::JobContext& ctx) -> std::any {
    ALMAGEST_ASSERT(out != nullptr, "save job without a result");
    ctx.progress(0, 1, kind == SaveKind::CandidatesEcsv ? "writing ECSV" : "writing HDF5");
    writeOutput(*out, kind, p, stampRadius, ctx);
    ctx.info("Wrote " + p);
    return path;
  };
}

stk::CandidateDetail describeOne(const SearchOutput& out, int index, int stampRadius) {
  ALMAGEST_ASSERT(index >= 0 && std::size_t(index) < out.result.candidates.size(), "candidate index out of range");
  stk::SearchResult one;
  one.width = out.result.width;
  one.height = out.result.height;
  one.n_exp = out.result.n_exp;
  one.n_vel = out.result.n_vel;
  one.threshold_z = out.result.threshold_z;
  one.candidates = {out.result.candidates[std::size_t(index)]};
  auto d = stk::describe_candidates(one, *out.plan, out.stack->stack, *out.psiphi, stampRadius, almagest::JobContext{});
  return std::move(d.front());
}

std::vector<stk::Mover> makeMovers(int count, double snr, int width, int height, const SearchSettings& s,
                                   double baselineDays, std::uint64_t seed) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 0x5DEECE66Dull);
  auto node = [&](double lo, double hi, int n) {
    if (n <= 1) return lo;
    const int a = static_cast<int>(std::lround(0.15 * (n - 1))), b = static_cast<int>(std::lround(0.85 * (n - 1)));
    std::uniform_int_distribution<int> pick(a, std::max(a, b));
    return lo + (hi - lo) * pick(rng) / double(n - 1);
  };
  auto origin = [&](int size, double v) {
    // Keep the whole track (to the end of the baseline) inside the central part of the image.
    const double margin = 0.12 * size, travel = v * baselineDays;
    double lo = std::max(margin, margin - travel), hi = std::min(size - 1 - margin, size - 1 - margin - travel);
    if (hi < lo) lo = hi = 0.5 * (size - 1);
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  std::vector<stk::Mover> out;
  for (int i = 0; i < count; ++i) {
    stk::Mover m;
    m.vx = node(s.vxMin, s.vxMax, s.nvx);
    m.vy = node(s.vyMin, s.vyMax, s.nvy);
    m.x0 = origin(width, m.vx);
    m.y0 = origin(height, m.vy);
    m.snr = snr;
    out.push_back(m);
  }
  return out;
}

}  // namespace almagest::ui::stackview
