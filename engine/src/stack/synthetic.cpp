#include "almagest/stack/synthetic.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "almagest/core/error.hpp"

namespace almagest::stack {

namespace {
constexpr double kPi = 3.14159265358979323846;
}

SyntheticConfig reference_workload() {
  SyntheticConfig c;
  c.n_exp = 1024;
  c.width = 256;
  c.height = 256;
  c.seed = 20261129;
  c.holes = 3;
  c.movers = {Mover{100.3, 140.6, 3.1, -2.2, 8.0, 0.0}};
  return c;
}

TrajectoryBank reference_bank(const SyntheticConfig& cfg, int n, double reach_px) {
  const double vmax = reach_px / cfg.baseline_days;
  return TrajectoryBank::cartesian(-vmax, vmax, n, -vmax, vmax, n);
}

SyntheticStack make_synthetic(const SyntheticConfig& cfg) {
  if (cfg.n_exp <= 0) throw ConfigError("synthetic.n_exp", "must be positive");
  if (cfg.width <= 0 || cfg.height <= 0) throw ConfigError("synthetic.size", "image size must be positive");
  if (!(cfg.baseline_days > 0)) throw ConfigError("synthetic.baseline_days", "must be positive");
  if (!(cfg.noise_sigma > 0)) throw ConfigError("synthetic.noise_sigma", "must be positive");
  if (!(cfg.noise_variation >= 0 && cfg.noise_variation < 0.9)) throw ConfigError("synthetic.noise_variation", "must be in [0, 0.9)");
  if (!(cfg.seeing_min > 0 && cfg.seeing_max >= cfg.seeing_min && cfg.seeing_max <= kMaxPsfSigma))
    throw ConfigError("synthetic.seeing", "need 0 < seeing_min <= seeing_max <= " + std::to_string(int(kMaxPsfSigma)) + " pixels");
  // Sizes bounded before any allocation (kMaxSyntheticSamples documents the limits).
  if (cfg.n_exp > kMaxSyntheticExposures) throw ConfigError("synthetic.n_exp", "must be at most " + std::to_string(kMaxSyntheticExposures));
  if (cfg.width > kMaxSyntheticSide || cfg.height > kMaxSyntheticSide)
    throw ConfigError("synthetic.size", "image sides must be at most " + std::to_string(kMaxSyntheticSide) + " pixels");
  if (std::uint64_t(cfg.n_exp) * std::uint64_t(cfg.width) * std::uint64_t(cfg.height) > kMaxSyntheticSamples)
    throw ConfigError("synthetic.size", "exposures x width x height = " +
                                            std::to_string(std::uint64_t(cfg.n_exp) * std::uint64_t(cfg.width) * std::uint64_t(cfg.height)) +
                                            " pixels is more than the " + std::to_string(kMaxSyntheticSamples) + " a synthetic stack may hold");
  if (cfg.holes < 0 || cfg.holes > 100000) throw ConfigError("synthetic.holes", "must be in 0..100000");
  const int n = cfg.n_exp, W = cfg.width, H = cfg.height;
  const std::size_t np = std::size_t(W) * H;
  std::mt19937_64 rng(cfg.seed);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  std::normal_distribution<float> N01(0.0f, 1.0f);

  SyntheticStack out;
  ExposureStack& s = out.stack;
  s.width = W;
  s.height = H;
  // Irregular times: exposure 0 at t = 0, the rest sorted uniform draws in (0, baseline].
  std::vector<double> t(n, 0.0);
  for (int e = 1; e < n; ++e) t[e] = cfg.baseline_days * (1.0 - U(rng));
  std::sort(t.begin() + 1, t.end());
  s.mjd.resize(n);
  for (int e = 0; e < n; ++e) s.mjd[e] = cfg.mjd0 + t[e];
  out.reference_mjd = s.mjd[0];
  out.curve_dx.assign(n, 0.0);
  out.curve_dy.assign(n, 0.0);
  if (cfg.common_curve)
    for (int e = 0; e < n; ++e) {
      const double u = t[e] / cfg.baseline_days, ph = 2 * kPi * t[e] / cfg.curve_period_days;
      out.curve_dx[e] = cfg.curve_quadratic * u * u + cfg.curve_amplitude * std::sin(ph);
      out.curve_dy[e] = -2.0 / 3.0 * cfg.curve_quadratic * u * u + cfg.curve_amplitude * (std::cos(ph) - 1.0);
    }
  std::vector<double> sigma(n);
  s.psf.resize(n);
  s.origin.resize(n);
  for (int e = 0; e < n; ++e) {
    sigma[e] = cfg.seeing_min + (cfg.seeing_max - cfg.seeing_min) * U(rng);
    s.psf[e] = Psf::gaussian(sigma[e]);
    s.origin[e] = "synthetic[" + std::to_string(e) + "]";
  }
  s.sci.resize(np * n);
  s.var.resize(np * n);
  s.mask.assign(np * n, 0);
  // Variance: smooth spatial pattern whose phase drifts per exposure, times a per-exposure level.
  const double nv = cfg.noise_variation, s2 = cfg.noise_sigma * cfg.noise_sigma;
  for (int e = 0; e < n; ++e) {
    const double phase = 2 * kPi * U(rng), level = 1.0 + 0.5 * nv * (U(rng) - 0.5);
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x) {
        const double f = 1.0 + nv * std::sin(2 * kPi * x / W + phase) * std::cos(2 * kPi * y / H);
        const std::size_t i = std::size_t(e) * np + std::size_t(y) * W + x;
        s.var[i] = static_cast<float>(s2 * f * level);
        s.sci[i] = N01(rng) * std::sqrt(s.var[i]);
      }
  }
  // Masks: holes and a moving bad column (with garbage values that masking must remove).
  for (int e = 0; e < n; ++e) {
    for (int h = 0; h < cfg.holes; ++h) {
      const double cx = U(rng) * W, cy = U(rng) * H, r = cfg.hole_radius;
      for (int y = std::max(0, int(cy - r)); y <= std::min(H - 1, int(cy + r) + 1); ++y)
        for (int x = std::max(0, int(cx - r)); x <= std::min(W - 1, int(cx + r) + 1); ++x)
          if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r) {
            const std::size_t i = std::size_t(e) * np + std::size_t(y) * W + x;
            s.mask[i] = 1;
            s.sci[i] = 1e5f;
          }
    }
    if (cfg.bad_column) {
      const int xb = (W / 3 + e / 4) % W;
      for (int y = 0; y < H; ++y) {
        const std::size_t i = std::size_t(e) * np + std::size_t(y) * W + xb;
        s.mask[i] = 1;
        s.sci[i] = 3e4f;
        if (y % 7 == 0) s.var[i] = 0.0f;  // also non-positive variance on the bad column
      }
    }
  }
  // Movers: flux from the requested SNR along the nearest-pixel track.
  out.movers = cfg.movers;
  for (Mover& m : out.movers) {
    std::vector<double> X(n), Y(n);
    double sum_phi = 0;
    for (int e = 0; e < n; ++e) {
      X[e] = m.x0 + m.vx * t[e] + out.curve_dx[e];
      Y[e] = m.y0 + m.vy * t[e] + out.curve_dy[e];
      const int qx = nearest_pixel(X[e]), qy = nearest_pixel(Y[e]);
      if (qx < 0 || qx >= W || qy < 0 || qy >= H) continue;
      const std::size_t i = std::size_t(e) * np + std::size_t(qy) * W + qx;
      if (s.mask[i] || !(s.var[i] > 0)) continue;
      double k2 = 0;
      for (float k : s.psf[e].kernel) k2 += double(k) * k;
      sum_phi += k2 / s.var[i];
    }
    if (m.flux <= 0) m.flux = sum_phi > 0 ? m.snr / std::sqrt(sum_phi) : 0.0;
    for (int e = 0; e < n; ++e) {
      const double sg = sigma[e], rr = std::ceil(4 * sg);
      const double norm = m.flux / (2 * kPi * sg * sg);
      for (int y = std::max(0, int(std::floor(Y[e] - rr))); y <= std::min(H - 1, int(std::ceil(Y[e] + rr))); ++y)
        for (int x = std::max(0, int(std::floor(X[e] - rr))); x <= std::min(W - 1, int(std::ceil(X[e] + rr))); ++x) {
          const double d2 = (x - X[e]) * (x - X[e]) + (y - Y[e]) * (y - Y[e]);
          const std::size_t i = std::size_t(e) * np + std::size_t(y) * W + x;
          if (!s.mask[i]) s.sci[i] += static_cast<float>(norm * std::exp(-0.5 * d2 / (sg * sg)));
        }
    }
  }
  // Static sources and single-exposure spots: PSF-shaped flux at a fixed pixel position.
  auto add_psf = [&](int e, double X, double Y, double flux) {
    const double sg = sigma[e], rr = std::ceil(4 * sg), norm = flux / (2 * kPi * sg * sg);
    for (int y = std::max(0, int(std::floor(Y - rr))); y <= std::min(H - 1, int(std::ceil(Y + rr))); ++y)
      for (int x = std::max(0, int(std::floor(X - rr))); x <= std::min(W - 1, int(std::ceil(X + rr))); ++x) {
        const std::size_t i = std::size_t(e) * np + std::size_t(y) * W + x;
        if (!s.mask[i]) s.sci[i] += static_cast<float>(norm * std::exp(-0.5 * ((x - X) * (x - X) + (y - Y) * (y - Y)) / (sg * sg)));
      }
  };
  for (const StaticSource& st : cfg.stars)
    for (int e = 0; e < n; ++e) add_psf(e, st.x, st.y, st.flux);
  for (const Spot& sp : cfg.spots) {
    if (sp.exposure < 0 || sp.exposure >= n) throw ConfigError("synthetic.spots", "spot exposure " + std::to_string(sp.exposure) + " is not in the stack");
    add_psf(sp.exposure, sp.x, sp.y, sp.flux);
  }
  return out;
}

}  // namespace almagest::stack
