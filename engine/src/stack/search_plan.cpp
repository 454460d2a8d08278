// SearchPlan: validation, shift tables, backend dispatch (CPU twin or the CUDA module), exact
// re-scoring of hits, min_obs filtering and clustering into candidates.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <unordered_map>

#include "almagest/core/error.hpp"
#include "almagest/core/gpu.hpp"
#include "almagest/kernels/stack_cuda.hpp"
#include "almagest/stack/search.hpp"
#include "search_internal.hpp"

namespace almagest::stack {

struct SearchPlan::Impl {
  SearchConfig config;
  ShiftTable shifts;
  std::vector<double> mjd;
  int width = 0, height = 0;
  double threshold = 0, reference_mjd = 0;
  kernels::StackKernels* gpu = nullptr;
};

SearchPlan::SearchPlan(std::unique_ptr<Impl> p) : impl_(std::move(p)) {}
SearchPlan::SearchPlan(SearchPlan&&) noexcept = default;
SearchPlan& SearchPlan::operator=(SearchPlan&&) noexcept = default;
SearchPlan::~SearchPlan() = default;
const SearchConfig& SearchPlan::config() const noexcept { return impl_->config; }
const ShiftTable& SearchPlan::shifts() const noexcept { return impl_->shifts; }
double SearchPlan::threshold() const noexcept { return impl_->threshold; }
double SearchPlan::reference_mjd() const noexcept { return impl_->reference_mjd; }

namespace {

kernels::StackKernels* stack_kernels() {
  kernels::CudaModule& m = cuda_module();  // BackendUnavailable with the reason
  kernels::StackKernels* k = m.stack();
  if (!k) throw BackendUnavailable("the CUDA module was built without the shift-and-stack kernels");
  return k;
}

kernels::StackPlanes planes_of(const EncodedPsiPhi& in) {
  kernels::StackPlanes p;
  p.n = in.n;
  p.width = in.width;
  p.height = in.height;
  switch (in.encoding) {
    case Encoding::Fp32:
      p.storage = kernels::StackStorage::Fp32;
      p.psi = in.psi32.data();
      p.phi = in.phi32.data();
      break;
    case Encoding::Fp16:
      p.storage = kernels::StackStorage::Fp16;
      p.psi = in.psi16.data();
      p.phi = in.phi16.data();
      break;
    case Encoding::Int8:
      p.storage = kernels::StackStorage::Int8;
      p.psi = in.psi8.data();
      p.phi = in.phi8.data();
      break;
  }
  p.psi_scale = in.psi_scale.empty() ? nullptr : in.psi_scale.data();
  p.phi_scale = in.phi_scale.empty() ? nullptr : in.phi_scale.data();
  return p;
}

kernels::StackShifts shifts_of(const ShiftTable& s) {
  kernels::StackShifts k;
  k.n_vel = s.n_vel;
  k.n_exp = s.n_exp;
  k.sx = s.sx.data();
  k.sy = s.sy.data();
  k.nvx = s.nvx;
  k.nvy = s.nvy;
  k.sxi = s.sxi.empty() ? nullptr : s.sxi.data();
  k.syj = s.syj.empty() ? nullptr : s.syj.data();
  if (s.fractional()) {
    k.fx = s.fx.data();
    k.fy = s.fy.data();
    k.wx = s.wx.data();
    k.wy = s.wy.data();
  }
  return k;
}

/// Predicted (continuous) position offsets of velocity v at time t: vx * t (curve excluded: it is
/// common to all trajectories and cancels in comparisons).
std::vector<Candidate> cluster(std::vector<Candidate> c, const ClusterConfig& cfg, double t0,
                               double t1) {
  std::sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) {
    if (a.z != b.z) return a.z > b.z;
    if (a.y != b.y) return a.y < b.y;
    if (a.x != b.x) return a.x < b.x;
    return a.v < b.v;
  });
  if (!cfg.enabled || c.empty()) return c;
  const double r = cfg.radius_px;
  const double cell = std::max(1.0, r);
  std::vector<Candidate> kept;
  std::unordered_map<std::int64_t, std::vector<std::size_t>> grid;
  auto key = [&](double x, double y) {
    const std::int64_t ix = static_cast<std::int64_t>(std::floor(x / cell));
    const std::int64_t iy = static_cast<std::int64_t>(std::floor(y / cell));
    return (ix + (1LL << 30)) * (1LL << 31) + (iy + (1LL << 30));
  };
  for (const Candidate& cand : c) {
    const double xs = cand.x + cand.vx * t0, ys = cand.y + cand.vy * t0;
    const double xe = cand.x + cand.vx * t1, ye = cand.y + cand.vy * t1;
    const std::int64_t cx = static_cast<std::int64_t>(std::floor(xs / cell));
    const std::int64_t cy = static_cast<std::int64_t>(std::floor(ys / cell));
    bool merged = false;
    for (std::int64_t dx = -1; dx <= 1 && !merged; ++dx)
      for (std::int64_t dy = -1; dy <= 1 && !merged; ++dy) {
        auto it = grid.find((cx + dx + (1LL << 30)) * (1LL << 31) + (cy + dy + (1LL << 30)));
        if (it == grid.end()) continue;
        for (std::size_t k : it->second) {
          Candidate& o = kept[k];
          const double oxs = o.x + o.vx * t0, oys = o.y + o.vy * t0;
          const double oxe = o.x + o.vx * t1, oye = o.y + o.vy * t1;
          if (std::fabs(oxs - xs) <= r && std::fabs(oys - ys) <= r && std::fabs(oxe - xe) <= r &&
              std::fabs(oye - ye) <= r) {
            o.members += cand.members;
            merged = true;
            break;
          }
        }
      }
    if (!merged) {
      grid[key(xs, ys)].push_back(kept.size());
      kept.push_back(cand);
    }
  }
  return kept;
}

}  // namespace

SearchPlan make_plan(SearchConfig config, const std::vector<double>& mjd, int width, int height,
                     const JobContext& ctx) {
  config.check();
  if (mjd.empty()) throw ConfigError("mjd", "the stack holds no exposures");
  if (width <= 0 || height <= 0) throw ConfigError("image", "image size must be positive");
  for (std::size_t e = 0; e < mjd.size(); ++e)
    if (!std::isfinite(mjd[e])) throw ConfigError("mjd", "MJD of exposure " + std::to_string(e) + " is missing or not finite");
  if (!config.curve_dx.empty() && config.curve_dx.size() != mjd.size())
    throw ConfigError("curve_dx", "common curve has " + std::to_string(config.curve_dx.size()) + " offsets for " + std::to_string(mjd.size()) + " exposures");
  auto impl = std::make_unique<SearchPlan::Impl>();
  impl->mjd = mjd;
  impl->width = width;
  impl->height = height;
  impl->reference_mjd = std::isnan(config.reference_mjd) ? mjd.front() : config.reference_mjd;
  impl->shifts = compute_shifts(config.bank, mjd, impl->reference_mjd, config.curve_dx, config.curve_dy);
  if (config.fractional) {
    if (config.psf_rho.size() != 4 * mjd.size())
      throw ConfigError("psf_rho", "the fractional mode needs 4 PSF autocorrelations per exposure (psf_correlations of the stack), got " +
                                       std::to_string(config.psf_rho.size()) + " for " + std::to_string(mjd.size()) + " exposures");
    compute_fractional_shifts(impl->shifts, config.bank, mjd, impl->reference_mjd, config.curve_dx, config.curve_dy);
  }
  const double trials = double(width) * double(height) * double(config.bank.size());
  impl->threshold = config.threshold_z > 0 ? config.threshold_z : bonferroni_threshold(config.false_alarms, trials);
  if (config.backend != Backend::Cpu) impl->gpu = stack_kernels();
  ctx.check_cancel();
  impl->config = std::move(config);
  return SearchPlan(std::move(impl));
}

SearchResult SearchPlan::execute(const EncodedPsiPhi& in, const JobContext& ctx) const {
  const Impl& P = *impl_;
  const SearchConfig& cfg = P.config;
  if (in.width != P.width || in.height != P.height)
    throw IoError("psi/phi", "shape", "planes are " + std::to_string(in.width) + " x " + std::to_string(in.height) + ", the plan was made for " + std::to_string(P.width) + " x " + std::to_string(P.height));
  if (in.n != static_cast<int>(P.mjd.size()) || in.mjd != P.mjd)
    throw IoError("psi/phi", "MJD", "exposure count or times differ from those the plan was made for");
  const std::size_t total = in.pixels() * std::size_t(in.n);
  const bool sizes_ok = in.encoding == Encoding::Fp32 ? in.psi32.size() == total && in.phi32.size() == total
                        : in.encoding == Encoding::Fp16 ? in.psi16.size() == total && in.phi16.size() == total && in.psi_scale.size() == std::size_t(in.n)
                                                        : in.psi8.size() == total && in.phi8.size() == total && in.psi_scale.size() == std::size_t(in.n);
  if (!sizes_ok) throw IoError("psi/phi", to_string(in.encoding), "plane or scale arrays do not match the stated shape");

  SearchResult r;
  r.width = P.width;
  r.height = P.height;
  r.n_exp = in.n;
  r.n_vel = cfg.bank.size();
  r.threshold_z = P.threshold;
  r.backend = to_string(cfg.backend);
  r.provenance = Provenance::current(cfg.backend == Backend::Cpu ? "cpu" : "cuda");
  r.provenance.config_json = cfg.to_json();
  r.provenance.threads = resolve_threads(cfg.threads);
  const auto t_start = std::chrono::steady_clock::now();
  const bool topk = cfg.mode == ResultMode::TopK;
  std::vector<detail::RawHit> hits;
  PsiPhi decoded;  // CPU: decode once
  if (cfg.backend == Backend::Cpu) {
    decoded = decode(in);
    const auto t0 = std::chrono::steady_clock::now();
    detail::CpuScan s = detail::scan_cpu(decoded, P.shifts, static_cast<float>(P.threshold), topk,
                                         cfg.top_k, cfg.max_candidates, cfg.dense, cfg.threads, ctx, cfg.psf_rho);
    r.scan_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.digest = s.digest;
    r.truncated = s.total_hits > s.hits.size();
    hits = std::move(s.hits);
    r.dense_a = std::move(s.dense_a);
    r.dense_b = std::move(s.dense_b);
    r.dense_obs = std::move(s.dense_obs);
    r.device = r.provenance.device;
  } else {
    kernels::StackScanParams sp;
    sp.method = cfg.backend == Backend::GpuGather ? kernels::StackMethod::Gather
                : cfg.backend == Backend::GpuTiled ? kernels::StackMethod::Tiled
                                                   : kernels::StackMethod::Fourier;
    sp.threshold = static_cast<float>(P.threshold);
    sp.top_k_mode = topk;
    sp.top_k = cfg.top_k;
    sp.max_hits = cfg.max_candidates;
    sp.dense = cfg.dense;
    sp.cancelled = [&ctx] { return ctx.cancelled(); };
    sp.progress = [&ctx](double d, double t, const char* stage) { ctx.progress(d, t, stage); };
    auto planes = planes_of(in);
    planes.memory_limit = cfg.device_memory_limit;
    auto shifts = shifts_of(P.shifts);
    if (shifts.fx) shifts.rho = cfg.psf_rho.data();  // [n][4], checked by make_plan
    with_cuda_errors([&] {
      auto session = P.gpu->open(planes, cfg.device);
      kernels::StackScanResult s = session->scan(shifts, sp);
      if (s.cancelled) throw Cancelled();
      r.device = session->device_name();
      r.scan_seconds = s.scan_seconds;
      for (auto& [k, v] : s.stage_seconds) r.provenance.timings_s["device_" + k] = v;
      r.provenance.timings_s["upload"] = session->upload_seconds();
      r.digest.sum_a = s.sum_a;
      r.digest.sum_b = s.sum_b;
      r.digest.max_z = s.max_z;
      r.digest.count_above = s.count_above;
      r.truncated = s.total_hits > s.hits.size();
      r.dense_a = std::move(s.dense_a);
      r.dense_b = std::move(s.dense_b);
      r.dense_obs = std::move(s.dense_obs);
      // Exact sums for every hit (the Fourier scores are FP16; gathers return only z).
      std::vector<float> a(s.hits.size()), b(s.hits.size());
      std::vector<std::int32_t> obs(s.hits.size());
      if (!s.hits.empty()) session->evaluate(shifts, s.hits.data(), s.hits.size(), a.data(), b.data(), obs.data());
      hits.reserve(s.hits.size());
      for (std::size_t i = 0; i < s.hits.size(); ++i)
        hits.push_back({s.hits[i].x, s.hits[i].y, s.hits[i].v, detail::score(a[i], b[i]), a[i], b[i], obs[i]});
      return 0;
    });
    r.exact = cfg.backend != Backend::GpuFourier;
    r.provenance.device = r.device;
  }
  r.raw_hits = hits.size();
  ctx.check_cancel();
  // Candidates: min_obs filter (and, for the Fourier path, the exact score must pass too).
  std::vector<Candidate> cands;
  cands.reserve(hits.size());
  for (const auto& h : hits) {
    if (h.obs < cfg.min_obs) continue;
    if (!topk && cfg.backend == Backend::GpuFourier && h.z < P.threshold) continue;
    Candidate c;
    c.x = h.x;
    c.y = h.y;
    c.v = h.v;
    c.vx = cfg.bank.vx[h.v];
    c.vy = cfg.bank.vy[h.v];
    c.a = h.a;
    c.b = h.b;
    c.obs = h.obs;
    c.z = h.z;
    c.flux = h.b > 0 ? double(h.a) / double(h.b) : 0.0;
    cands.push_back(c);
  }
  const auto [tmin, tmax] = std::minmax_element(P.mjd.begin(), P.mjd.end());
  r.candidates = cluster(std::move(cands), cfg.cluster, *tmin - P.reference_mjd, *tmax - P.reference_mjd);
  r.provenance.timings_s["scan"] = r.scan_seconds;
  r.provenance.timings_s["total"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  return r;
}

}  // namespace almagest::stack
