// Power spectra, Gaussian beams and smoothing (healpy conventions).
#include "almagest/sht/spectra.hpp"

#include <cmath>

#include "almagest/core/error.hpp"

namespace almagest::sht {

std::vector<double> alm2cl(std::span<const Complex> a, std::span<const Complex> b, int lmax) {
  if (lmax < 0) throw ConfigError("lmax", "must be >= 0");
  const std::size_t n = alm_size(lmax);
  if (a.size() < n || b.size() < n)
    throw ConfigError("alm", "alm2cl: alm vectors need alm_size(lmax) = " + std::to_string(n) +
                                 " entries");
  std::vector<double> cl(lmax + 1, 0.0);
  for (int l = 0; l <= lmax; ++l) cl[l] = a[l].real() * b[l].real();
  for (int m = 1; m <= lmax; ++m) {
    const std::size_t i0 = alm_index(lmax, m, m);
    for (int l = m; l <= lmax; ++l) {
      const Complex x = a[i0 + l - m], y = b[i0 + l - m];
      cl[l] += 2.0 * (x.real() * y.real() + x.imag() * y.imag());
    }
  }
  for (int l = 0; l <= lmax; ++l) cl[l] /= 2.0 * l + 1.0;
  return cl;
}

PolSpectra alm2cl_pol(std::span<const Complex> t, std::span<const Complex> e,
                      std::span<const Complex> b, int lmax) {
  PolSpectra s;
  s.tt = alm2cl(t, t, lmax);
  s.ee = alm2cl(e, e, lmax);
  s.bb = alm2cl(b, b, lmax);
  s.te = alm2cl(t, e, lmax);
  s.eb = alm2cl(e, b, lmax);
  s.tb = alm2cl(t, b, lmax);
  return s;
}

std::vector<double> gauss_beam(double fwhm_rad, int lmax, bool pol) {
  if (!(fwhm_rad >= 0.0)) throw ConfigError("fwhm", "must be >= 0 radians");
  if (lmax < 0) throw ConfigError("lmax", "must be >= 0");
  const double sigma = fwhm_rad / std::sqrt(8.0 * std::log(2.0));
  const double s2 = sigma * sigma;
  std::vector<double> b(lmax + 1);
  for (int l = 0; l <= lmax; ++l) {
    b[l] = std::exp(-0.5 * l * (l + 1.0) * s2);
    if (pol) b[l] *= std::exp(2.0 * s2);
  }
  return b;
}

void almxfl(std::span<Complex> alm, int lmax, std::span<const double> fl) {
  if (fl.size() < static_cast<std::size_t>(lmax + 1))
    throw ConfigError("fl", "almxfl needs lmax + 1 = " + std::to_string(lmax + 1) + " factors");
  if (alm.size() < alm_size(lmax)) throw ConfigError("alm", "almxfl: alm too short");
  for (int m = 0; m <= lmax; ++m) {
    const std::size_t i0 = alm_index(lmax, m, m);
    for (int l = m; l <= lmax; ++l) alm[i0 + l - m] *= fl[l];
  }
}

void map2alm_weighted(const ShtPlan& plan, std::span<const double> map, std::span<Complex> alm,
                      int iterations, std::span<const double> ring_weights,
                      std::span<const double> pixel_weights, const JobContext& ctx) {
  if (pixel_weights.empty()) {
    plan.map2alm(map, alm, iterations, ring_weights, ctx);
    return;
  }
  if (iterations != 0)
    throw ConfigError("iterations", "must be 0 with pixel weights (healpy ignores iter with "
                                    "use_pixel_weights; HEALPix refuses the combination)");
  if (!ring_weights.empty())
    throw ConfigError("pixel_weights", "ring weights and pixel weights exclude each other");
  plan.map2alm_pixel_weights(map, alm, pixel_weights, ctx);
}

void smooth_map(const ShtPlan& plan, std::span<const double> map, std::span<double> out,
                double fwhm_rad, int iterations, const JobContext& ctx,
                std::span<const double> ring_weights, std::span<const double> pixel_weights) {
  if (out.size() != map.size()) throw ConfigError("out", "smooth_map: out must match map size");
  const std::size_t mcol = plan.map_size() * plan.ncomp();
  if (map.empty() || map.size() % mcol != 0)
    throw ConfigError("map", "smooth_map: map size is not a multiple of ncomp * map_size");
  const std::size_t ncols = map.size() / mcol;
  std::vector<Complex> alm(ncols * plan.ncomp() * plan.nalm());
  map2alm_weighted(plan, map, alm, iterations, ring_weights, pixel_weights, ctx);
  const auto beam = gauss_beam(fwhm_rad, plan.lmax(), plan.spin() == 2);
  for (std::size_t c = 0; c < ncols * plan.ncomp(); ++c)
    almxfl({alm.data() + c * plan.nalm(), plan.nalm()}, plan.lmax(), beam);
  plan.synthesis(alm, out, ctx);
}

PolSpectra anafast_pol(const ShtPlan& plan_t, const ShtPlan& plan_p, std::span<const double> t,
                       std::span<const double> qu, int iterations, const JobContext& ctx) {
  if (plan_t.spin() != 0 || plan_p.spin() != 2)
    throw ConfigError("plan", "anafast_pol needs a spin-0 plan for T and a spin-2 plan for Q, U");
  if (plan_t.nside() != plan_p.nside() || plan_t.lmax() != plan_p.lmax())
    throw ConfigError("plan", "anafast_pol: T and polarisation plans differ in nside or lmax");
  const std::size_t n = plan_t.nalm();
  std::vector<Complex> at(n), aeb(2 * n);
  plan_t.map2alm(t, at, iterations, {}, ctx);
  plan_p.map2alm(qu, aeb, iterations, {}, ctx);
  return alm2cl_pol(at, {aeb.data(), n}, {aeb.data() + n, n}, plan_t.lmax());
}

}  // namespace almagest::sht
