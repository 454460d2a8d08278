#include "stackview/StackJobs.hpp"

#include <QDir>
#include <QFileInfo>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>
#include <system_error>

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


bool isEcsv(const QString& path) { return path.endsWith(QStringLiteral(".ecsv"), Qt::CaseInsensitive); }

/// Details for the rows of an ECSV table: only when the stack has a WCS (RA/Dec columns); the
/// stamps are not written to ECSV, so radius 0 keeps this cheap.
std::vector<stk::CandidateDetail> ecsvDetails(const SearchOutput& out, const almagest::JobContext& ctx) {
  if (out.stack->stack.wcs_header.empty() || out.result.candidates.empty()) return {};
  return stk::describe_candidates(out.result, *out.plan, out.stack->stack, *out.psiphi, 0, ctx);
}

void writeOutput(const SearchOutput& out, SaveKind kind, const std::string& path, int stampRadius,
                 const almagest::JobContext& ctx) {
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
}

}  // namespace

QStringList SearchSettings::validate() const {
  QStringList p;
  auto finite = [](double v) { return std::isfinite(v); };
  if (!finite(vxMin) || !finite(vxMax) || vxMax < vxMin) p << QStringLiteral("vx range: maximum must be >= minimum");
  if (!finite(vyMin) || !finite(vyMax) || vyMax < vyMin) p << QStringLiteral("vy range: maximum must be >= minimum");
  if (nvx < 1 || nvy < 1) p << QStringLiteral("velocity grid: at least one velocity per axis");
  if (fixedThreshold && !(thresholdZ > 0)) p << QStringLiteral("threshold Z: must be > 0");
  if (!fixedThreshold && !(falseAlarms > 0)) p << QStringLiteral("false alarms: must be > 0");
  if (minObs < 0) p << QStringLiteral("min obs: must be >= 0");
  if (cluster && !(clusterRadius >= 0)) p << QStringLiteral("cluster radius: must be >= 0");
  if (stampRadius < 0) p << QStringLiteral("stamp radius: must be >= 0");
  return p;
}

stk::SearchConfig makeSearchConfig(const SearchSettings& s, const LoadedStack& st) {
  const QStringList problems = s.validate();
  if (!problems.isEmpty()) throw almagest::ConfigError("", problems.join(QStringLiteral("; ")).toStdString());
  stk::SearchConfig cfg;
  cfg.bank = stk::TrajectoryBank::cartesian(s.vxMin, s.vxMax, s.nvx, s.vyMin, s.vyMax, s.nvy);
  cfg.curve_dx = st.curveDx;
  cfg.curve_dy = st.curveDy;
  cfg.encoding = s.encoding;
  cfg.backend = s.backend;
  cfg.mode = stk::ResultMode::Threshold;
  cfg.false_alarms = s.falseAlarms;
  cfg.threshold_z = s.fixedThreshold ? s.thresholdZ : 0.0;
  cfg.min_obs = s.minObs;
  cfg.cluster.enabled = s.cluster;
  cfg.cluster.radius_px = s.clusterRadius;
  cfg.check();
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

JobRunner::Job makeSearchJob(StackPtr stack, PsiPhiCache cache, const SearchSettings& settings,
                             const QString& savePath) {
  const std::string save = savePath.isEmpty() ? std::string() : QDir::toNativeSeparators(savePath).toStdString();
  const SaveKind saveKind = isEcsv(savePath) ? SaveKind::CandidatesEcsv : SaveKind::ResultHdf5;
  return [stack = std::move(stack), cache = std::move(cache), settings, save, saveKind,
          savePath](const almagest::JobContext& ctx) -> std::any {
    ALMAGEST_ASSERT(stack != nullptr, "search job without a stack");
    auto out = std::make_shared<SearchOutput>();
    out->stack = stack;
    stk::SearchConfig cfg = makeSearchConfig(settings, *stack);
    cfg.threads = ctx.threads;
    const bool gpu = cfg.backend != stk::Backend::Cpu;
    if (gpu && !almagest::gpu_status().available) {
      const std::string why = almagest::gpu_status().reason;
      throw almagest::BackendUnavailable("backend " + stk::to_string(cfg.backend) + ": " +
                                         (why.empty() ? std::string("no usable GPU") : why));
    }
    const stk::ExposureStack& st = stack->stack;

    // Shares of the progress range: psi/phi, threshold scan, best-Z scan, writing.
    const bool reuse = cache.planes && cache.stack == stack && cache.gpu == gpu;
    const double pEnd = reuse ? 0.02 : 0.15;
    const double sEnd = settings.bestZMap ? (save.empty() ? 0.58 : 0.55) : (save.empty() ? 0.99 : 0.9);
    const double zEnd = save.empty() ? 0.99 : 0.9;

    auto t0 = Clock::now();
    if (reuse) {
      out->psiphi = cache.planes;
      out->psiphiOnGpu = cache.gpu;
      ctx.info("Reusing the psi/phi planes of this stack");
    } else {
      const almagest::JobContext pctx = JobRunner::stageContext(ctx, 0.0, pEnd);
      pctx.progress(0, 1, gpu ? "psi/phi (gpu)" : "psi/phi");
      out->psiphi = std::make_shared<const stk::PsiPhi>(gpu ? stk::compute_psiphi_gpu(st, cfg.device, pctx)
                                                            : stk::compute_psiphi(st, pctx));
      out->psiphiOnGpu = gpu;
    }
    ctx.check_cancel();
    const stk::PsiPhi& p = *out->psiphi;
    const stk::EncodedPsiPhi enc = stk::encode(p, cfg.encoding);
    out->psiphiSeconds = secondsSince(t0);
    ctx.check_cancel();

    auto plan = std::make_shared<stk::SearchPlan>(stk::make_plan(cfg, p.mjd, p.width, p.height, ctx));
    {
      const almagest::JobContext sctx = JobRunner::stageContext(ctx, pEnd, sEnd);
      out->result = plan->execute(enc, sctx);
    }
    ctx.check_cancel();
    ctx.info("Search: " + std::to_string(out->result.candidates.size()) + " candidates from " +
             std::to_string(out->result.raw_hits) + " hits, threshold Z >= " +
             std::to_string(out->result.threshold_z) + ", max Z " + std::to_string(out->result.digest.max_z));

    if (settings.bestZMap) {
      t0 = Clock::now();
      stk::SearchConfig zc = cfg;
      zc.mode = stk::ResultMode::TopK;
      zc.top_k = 1;
      zc.min_obs = 0;
      zc.cluster.enabled = false;
      zc.dense = false;
      zc.max_candidates = std::max<std::size_t>(1, p.pixels());
      if (zc.backend == stk::Backend::GpuFourier) zc.backend = stk::Backend::GpuTiled;  // no top-k there
      const stk::SearchPlan zplan = stk::make_plan(zc, p.mjd, p.width, p.height, ctx);
      const almagest::JobContext zctx = JobRunner::stageContext(ctx, sEnd, zEnd);
      const stk::SearchResult zr = zplan.execute(enc, zctx);
      ctx.check_cancel();
      out->bestZ.assign(p.pixels(), 0.0f);
      for (const stk::Candidate& c : zr.candidates)
        if (c.x >= 0 && c.x < p.width && c.y >= 0 && c.y < p.height)
          out->bestZ[std::size_t(c.y) * std::size_t(p.width) + std::size_t(c.x)] = static_cast<float>(c.z);
      out->bestZSeconds = secondsSince(t0);
    }

    out->result.provenance.inputs = {st.source.empty() ? stack->label.toStdString() : st.source};
    if (stack->synthetic) out->result.provenance.seeds["synthetic"] = stack->seed;
    out->result.provenance.timings_s["psiphi"] = out->psiphiSeconds;
    out->config = cfg;
    out->plan = std::move(plan);

    if (!save.empty()) {
      const almagest::JobContext wctx = JobRunner::stageContext(ctx, zEnd, 1.0);
      wctx.progress(0, 1, "writing");
      writeOutput(*out, saveKind, save, settings.stampRadius, wctx);
      out->savedPath = savePath;
      ctx.info("Wrote " + save);
    }
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
