#pragma once
// Angular power spectra, beams and smoothing in healpy's conventions.
#include <span>
#include <vector>

#include "almagest/core/job_context.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/sht/plan.hpp"

namespace almagest::sht {

/// Cross spectrum C_l = (Re a_l0 b_l0* + 2 sum_{m>0} Re a_lm b_lm*) / (2l + 1), l = 0..lmax.
/// a and b: alm_size(lmax) each (b = a gives the auto spectrum).
std::vector<double> alm2cl(std::span<const Complex> a, std::span<const Complex> b, int lmax);

/// The six spectra of (T, E, B) in healpy's order.
struct PolSpectra {
  std::vector<double> tt, ee, bb, te, eb, tb;
};
PolSpectra alm2cl_pol(std::span<const Complex> t, std::span<const Complex> e,
                      std::span<const Complex> b, int lmax);

/// healpy gauss_beam: b_l = exp(-l (l+1) sigma^2 / 2), sigma = fwhm / sqrt(8 ln 2), fwhm in
/// radians. pol = true gives the E/B beam, b_l exp(2 sigma^2).
std::vector<double> gauss_beam(double fwhm_rad, int lmax, bool pol = false);

/// alm_lm *= fl[l] (healpy almxfl); alm: alm_size(lmax), fl: lmax + 1 entries.
void almxfl(std::span<Complex> alm, int lmax, std::span<const double> fl);

/// healpy map2alm with one of its quadrature weightings: pixel_weights non-empty (use_pixel_weights
/// = True: ShtPlan::map2alm_pixel_weights; iterations must be 0, as healpy ignores them), else
/// ring_weights (use_weights = True; empty = uniform) with `iterations` Jacobi steps
/// (ShtPlan::map2alm). Throws ConfigError for both weightings at once or pixel weights with
/// iterations.
void map2alm_weighted(const ShtPlan& plan, std::span<const double> map, std::span<Complex> alm,
                      int iterations, std::span<const double> ring_weights,
                      std::span<const double> pixel_weights, const JobContext& ctx = {});

/// healpy smoothing: map2alm_weighted on `plan`, multiply by the Gaussian beam (E/B beam for a
/// spin-2 plan), synthesis. map/out: [ncols][ncomp][map_size] as for ShtPlan.
void smooth_map(const ShtPlan& plan, std::span<const double> map, std::span<double> out,
                double fwhm_rad, int iterations = 3, const JobContext& ctx = {},
                std::span<const double> ring_weights = {},
                std::span<const double> pixel_weights = {});

/// healpy anafast of (T, Q, U): spin-0 plan for T, spin-2 plan (same nside, lmax) for (Q, U);
/// t: [map_size], qu: [2][map_size]. iterations as in ShtPlan::map2alm.
PolSpectra anafast_pol(const ShtPlan& plan_t, const ShtPlan& plan_p, std::span<const double> t,
                       std::span<const double> qu, int iterations = 3,
                       const JobContext& ctx = {});

}  // namespace almagest::sht
