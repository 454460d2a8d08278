// ShtPlan: shape checks, chunking over columns, and the iterative operations (CGLS inverse,
// healpy-style iterative map2alm) built on a backend's synthesis and adjoint.
#include "almagest/sht/plan.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "almagest/core/error.hpp"
#include "backend.hpp"

namespace almagest::sht {

ShtPlan::ShtPlan(std::unique_ptr<ShtBackendImpl> impl) : impl_(std::move(impl)) {}
ShtPlan::ShtPlan(ShtPlan&&) noexcept = default;
ShtPlan& ShtPlan::operator=(ShtPlan&&) noexcept = default;
ShtPlan::~ShtPlan() = default;

const ShtConfig& ShtPlan::config() const noexcept { return impl_->config(); }
int ShtPlan::nside() const noexcept { return config().nside; }
int ShtPlan::lmax() const noexcept { return config().effective_lmax(); }
int ShtPlan::spin() const noexcept { return config().spin; }
int ShtPlan::ncomp() const noexcept { return config().spin == 0 ? 1 : 2; }
std::size_t ShtPlan::nalm() const noexcept { return alm_size(lmax()); }
std::size_t ShtPlan::map_size() const noexcept {
  return config().observed_pixels.empty() ? static_cast<std::size_t>(npix_of(nside()))
                                          : config().observed_pixels.size();
}
Backend ShtPlan::backend() const noexcept { return impl_->kind(); }
std::string ShtPlan::device() const { return impl_->device(); }

ShtPlan make_plan(const ShtConfig& config) {
  config.check();
  ShtConfig c = config;
  c.lmax = c.effective_lmax();
  if (c.backend == Backend::Cuda) return ShtPlan(make_cuda_backend(c));
  return ShtPlan(make_cpu_backend(c));
}

namespace {

int columns_of(const ShtPlan& p, std::size_t alm_n, std::size_t map_n, const char* what) {
  const std::size_t acol = p.nalm() * static_cast<std::size_t>(p.ncomp());
  const std::size_t mcol = p.map_size() * static_cast<std::size_t>(p.ncomp());
  if (alm_n == 0 || alm_n % acol != 0)
    throw ConfigError("alm", std::string(what) + ": alm span holds " + std::to_string(alm_n) +
                                 " values, not a positive multiple of ncomp * nalm = " +
                                 std::to_string(acol));
  if (map_n == 0 || map_n % mcol != 0)
    throw ConfigError("map", std::string(what) + ": map span holds " + std::to_string(map_n) +
                                 " values, not a positive multiple of ncomp * map_size = " +
                                 std::to_string(mcol));
  if (alm_n / acol != map_n / mcol)
    throw ConfigError("map", std::string(what) + ": alm has " + std::to_string(alm_n / acol) +
                                 " columns but map has " + std::to_string(map_n / mcol));
  return static_cast<int>(alm_n / acol);
}

/// Per-column real inner products (alm_dot over components; map_dot over components).
double col_alm_dot(const ShtPlan& p, const Complex* a, const Complex* b) {
  double s = 0.0;
  for (int c = 0; c < p.ncomp(); ++c)
    s += alm_dot({a + c * p.nalm(), p.nalm()}, {b + c * p.nalm(), p.nalm()}, p.lmax());
  return s;
}

/// The one chunk loop of every transform: columns in chunks of the backend's batch, the cancel
/// token checked before and progress reported after each chunk. `op` is the backend call (host
/// or device arrays: the only difference between synthesis and synthesis_device, adjoint and
/// adjoint_device); `in_col` / `out_col` are the values per column of its input and output.
template <class In, class Out>
void run_chunks(const ShtBackendImpl& impl,
                void (ShtBackendImpl::*op)(const In*, Out*, int, const JobContext&) const,
                const In* in, std::size_t in_col, Out* out, std::size_t out_col, int ncols,
                const char* stage, const JobContext& ctx) {
  const int b = impl.batch();
  for (int c0 = 0; c0 < ncols; c0 += b) {
    ctx.check_cancel();
    const int n = std::min(b, ncols - c0);
    (impl.*op)(in + c0 * in_col, out + c0 * out_col, n, ctx);
    ctx.progress(c0 + n, ncols, stage);
  }
}

int device_columns(int ncols) {
  if (ncols < 1) throw ConfigError("ncols", "must be >= 1, got " + std::to_string(ncols));
  return ncols;
}

}  // namespace

void ShtPlan::synthesis(std::span<const Complex> alm, std::span<double> map,
                        const JobContext& ctx) const {
  const int ncols = columns_of(*this, alm.size(), map.size(), "synthesis");
  run_chunks(*impl_, &ShtBackendImpl::synthesis, alm.data(), nalm() * ncomp(), map.data(),
             map_size() * ncomp(), ncols, "sht synthesis", ctx);
}

void ShtBackendImpl::synthesis_device(const std::complex<double>*, double*, int, const JobContext&) const {
  throw ConfigError("backend", "device arrays need the cuda backend (this plan runs on the cpu)");
}
void ShtBackendImpl::adjoint_device(const double*, std::complex<double>*, int, const JobContext&) const {
  throw ConfigError("backend", "device arrays need the cuda backend (this plan runs on the cpu)");
}

void ShtPlan::synthesis_device(const Complex* alm, double* map, int ncols, const JobContext& ctx) const {
  run_chunks(*impl_, &ShtBackendImpl::synthesis_device, alm, nalm() * ncomp(), map,
             map_size() * ncomp(), device_columns(ncols), "sht synthesis", ctx);
}

void ShtPlan::adjoint_device(const double* map, Complex* alm, int ncols, const JobContext& ctx) const {
  run_chunks(*impl_, &ShtBackendImpl::adjoint_device, map, map_size() * ncomp(), alm,
             nalm() * ncomp(), device_columns(ncols), "sht adjoint", ctx);
}

void ShtPlan::adjoint(std::span<const double> map, std::span<Complex> alm,
                      const JobContext& ctx) const {
  const int ncols = columns_of(*this, alm.size(), map.size(), "adjoint");
  run_chunks(*impl_, &ShtBackendImpl::adjoint, map.data(), map_size() * ncomp(), alm.data(),
             nalm() * ncomp(), ncols, "sht adjoint", ctx);
}

InverseReport ShtPlan::inverse(std::span<const double> map, std::span<Complex> alm,
                               const InverseOptions& opt, const JobContext& ctx) const {
  const int ncols = columns_of(*this, alm.size(), map.size(), "inverse");
  if (!(opt.epsilon > 0.0)) throw ConfigError("epsilon", "must be > 0");
  if (opt.max_iterations < 1) throw ConfigError("max_iterations", "must be >= 1");
  const std::size_t acol = nalm() * ncomp(), mcol = map_size() * ncomp();
  const std::size_t na = acol * ncols, nm = mcol * ncols;
  // CGLS on min ||Y x - m|| with the alm inner product of alm_dot (Y^T is its exact adjoint).
  std::vector<Complex> x(na, 0.0), s(na), p(na);
  std::vector<double> r(map.begin(), map.end()), q(nm);
  adjoint(r, s, ctx);
  p = s;
  std::vector<double> gamma(ncols), gamma0(ncols), mnorm(ncols);
  for (int c = 0; c < ncols; ++c) {
    gamma[c] = gamma0[c] = col_alm_dot(*this, s.data() + c * acol, s.data() + c * acol);
    mnorm[c] = std::sqrt(map_dot({r.data() + c * mcol, mcol}, {r.data() + c * mcol, mcol}));
  }
  auto col_done = [&](int c) {
    return gamma0[c] == 0.0 || std::sqrt(gamma[c] / gamma0[c]) < opt.epsilon;
  };
  InverseReport rep;
  auto finish = [&]() {
    rep.residual = rep.normal_residual = 0.0;
    for (int c = 0; c < ncols; ++c) {
      const double rn = std::sqrt(map_dot({r.data() + c * mcol, mcol}, {r.data() + c * mcol, mcol}));
      rep.residual = std::max(rep.residual, mnorm[c] > 0 ? rn / mnorm[c] : 0.0);
      rep.normal_residual =
          std::max(rep.normal_residual, gamma0[c] > 0 ? std::sqrt(gamma[c] / gamma0[c]) : 0.0);
    }
  };
  int it = 0;
  while (true) {
    bool all = true;
    for (int c = 0; c < ncols; ++c) all = all && col_done(c);
    if (all) break;
    if (it >= opt.max_iterations) {
      finish();
      throw NotConverged("sht inverse: CGLS did not reach epsilon " + std::to_string(opt.epsilon) +
                             " in " + std::to_string(it) + " iterations (normal-equation residual " +
                             std::to_string(rep.normal_residual) + ", map residual " +
                             std::to_string(rep.residual) + ")",
                         it, rep.normal_residual);
    }
    ctx.check_cancel();
    synthesis(p, q, ctx);
    for (int c = 0; c < ncols; ++c) {
      if (col_done(c)) continue;
      const double qq = map_dot({q.data() + c * mcol, mcol}, {q.data() + c * mcol, mcol});
      if (qq <= 0.0) continue;
      const double alpha = gamma[c] / qq;
      for (std::size_t i = 0; i < acol; ++i) x[c * acol + i] += alpha * p[c * acol + i];
      for (std::size_t i = 0; i < mcol; ++i) r[c * mcol + i] -= alpha * q[c * mcol + i];
    }
    adjoint(r, s, ctx);
    for (int c = 0; c < ncols; ++c) {
      if (col_done(c)) continue;
      const double gnew = col_alm_dot(*this, s.data() + c * acol, s.data() + c * acol);
      const double beta = gnew / gamma[c];
      gamma[c] = gnew;
      for (std::size_t i = 0; i < acol; ++i)
        p[c * acol + i] = s[c * acol + i] + beta * p[c * acol + i];
    }
    ++it;
    ctx.progress(it, opt.max_iterations, "sht inverse (CGLS)");
  }
  finish();
  rep.iterations = it;
  std::copy(x.begin(), x.end(), alm.begin());
  return rep;
}

namespace {

/// healpy's map2alm with per-pixel quadrature weights wpix (map_size entries, 4 pi / Npix
/// included): a = Y^T W m, then `iterations` Jacobi steps a += Y^T W (m - Y a).
void weighted_map2alm(const ShtPlan& plan, std::span<const double> map, std::span<Complex> alm,
                      int ncols, const std::vector<double>& wpix, int iterations,
                      const JobContext& ctx) {
  const std::size_t msz = plan.map_size();
  std::vector<double> wm(map.size()), resid(map.size());
  auto weighted = [&](const double* src, double* dst) {
    for (std::size_t c = 0; c < static_cast<std::size_t>(ncols) * plan.ncomp(); ++c)
      for (std::size_t k = 0; k < msz; ++k) dst[c * msz + k] = src[c * msz + k] * wpix[k];
  };
  weighted(map.data(), wm.data());
  plan.adjoint(wm, alm, ctx);
  std::vector<Complex> corr(alm.size());
  for (int it = 0; it < iterations; ++it) {
    ctx.check_cancel();
    plan.synthesis(alm, resid, ctx);
    for (std::size_t i = 0; i < resid.size(); ++i) resid[i] = map[i] - resid[i];
    weighted(resid.data(), wm.data());
    plan.adjoint(wm, corr, ctx);
    for (std::size_t i = 0; i < alm.size(); ++i) alm[i] += corr[i];
  }
}

}  // namespace

void ShtPlan::map2alm(std::span<const double> map, std::span<Complex> alm, int iterations,
                      std::span<const double> ring_weights, const JobContext& ctx) const {
  const int ncols = columns_of(*this, alm.size(), map.size(), "map2alm");
  if (iterations < 0) throw ConfigError("iterations", "must be >= 0");
  const int ns = nside();
  if (!ring_weights.empty() && ring_weights.size() < static_cast<std::size_t>(2 * ns))
    throw ConfigError("ring_weights", "needs 2 nside = " + std::to_string(2 * ns) +
                                          " entries, got " + std::to_string(ring_weights.size()));
  const std::size_t msz = map_size();
  // Per-pixel weight 4 pi / Npix * w(ring); rings counted 1..4 nside - 1, weights by distance
  // from the nearer pole (HEALPix weight files cover the northern half and the equator).
  std::vector<double> wpix(msz);
  const double base = 4.0 * std::numbers::pi / static_cast<double>(npix_of(ns));
  const auto& obs = config().observed_pixels;
  const std::int64_t ncap = 2LL * ns * (ns - 1), np = npix_of(ns);
  for (std::size_t k = 0; k < msz; ++k) {
    double w = 1.0;
    if (!ring_weights.empty()) {
      const std::int64_t pix = obs.empty() ? static_cast<std::int64_t>(k) : obs[k];
      std::int64_t ring;
      if (pix < ncap) {
        ring = static_cast<std::int64_t>((1 + std::sqrt(1.0 + 2.0 * pix)) / 2);
        while (2 * ring * (ring - 1) > pix) --ring;
        while (2 * (ring + 1) * ring <= pix) ++ring;
      } else if (pix < np - ncap) {
        ring = (pix - ncap) / (4LL * ns) + ns;
      } else {
        const std::int64_t pp = np - 1 - pix;
        std::int64_t rr = static_cast<std::int64_t>((1 + std::sqrt(1.0 + 2.0 * pp)) / 2);
        while (2 * rr * (rr - 1) > pp) --rr;
        while (2 * (rr + 1) * rr <= pp) ++rr;
        ring = 4LL * ns - rr;
      }
      const std::int64_t rn = std::min<std::int64_t>(ring, 4LL * ns - ring);  // 1..2 nside
      w = ring_weights[static_cast<std::size_t>(rn - 1)];
    }
    wpix[k] = base * w;
  }
  weighted_map2alm(*this, map, alm, ncols, wpix, iterations, ctx);
}

void ShtPlan::map2alm_pixel_weights(std::span<const double> map, std::span<Complex> alm,
                                    std::span<const double> pixel_weights,
                                    const JobContext& ctx) const {
  const int ncols = columns_of(*this, alm.size(), map.size(), "map2alm_pixel_weights");
  const std::int64_t np = npix_of(nside());
  if (pixel_weights.size() != static_cast<std::size_t>(np))
    throw ConfigError("pixel_weights", "needs 12 nside^2 = " + std::to_string(np) +
                                           " entries, got " + std::to_string(pixel_weights.size()));
  const std::size_t msz = map_size();
  const auto& obs = config().observed_pixels;
  const double base = 4.0 * std::numbers::pi / static_cast<double>(np);
  std::vector<double> wpix(msz);
  for (std::size_t k = 0; k < msz; ++k)
    wpix[k] = base * pixel_weights[obs.empty() ? k : static_cast<std::size_t>(obs[k])];
  weighted_map2alm(*this, map, alm, ncols, wpix, 0, ctx);
}

}  // namespace almagest::sht
