#pragma once
// After the search: from the hits above threshold to the list a person reviews (docs/stack.md,
// "Candidates"). In this order, each stage counting what it removed:
//
//   1. observations: obs >= min_obs and masked fraction (n_exp - obs) / n_exp <= max_masked_fraction;
//   2. sigma-G: per-exposure residuals r_e = (a_e - f b_e) / sqrt(b_e) of the trajectory's curve
//      (f the median single-epoch flux a_e / b_e), robust width sigma_G = 0.7413 (P75 - P25);
//      epochs with |r_e - median r| > n_sigma sigma_G are dropped, A, B, obs, Z recomputed from
//      the kept ones; fewer than min_kept kept epochs or Z below the threshold removes it;
//   3. duplicates (source level): in descending (clipped) Z, a candidate is merged into a kept one
//      when their continuous predicted tracks lie within radius_px (max norm) for at least
//      overlap of the exposures, or when at least share of its A comes from exposures where its
//      pixel is within radius_px of the stronger one's (the same source's samples: a track that
//      crosses a mover's at an angle). The survivor records members and the velocity spread.
//      A candidate that is no duplicate is tested by 4 and 5 before it may absorb others (a
//      rejected one, e.g. a track through a star and a mover, must not swallow the mover):
//   4. stationary: a track that spans less than min_motion_px over the stack (max norm, common
//      curve included), or whose A static sources explain to stationary_ratio (at each kept
//      exposure the flux of a source fixed at the sampled pixel, sum psi / sum phi of the static
//      coadd there, times b_e), is a static source (star, galaxy, hot pixel, or a track that
//      borrows a star's flux);
//   5. stamps: coadded stamps along the track over the sigma-G kept epochs must look like the
//      PSF: the median stamp's PSF-matched flux at least median_ratio of the mean stamp's (flux
//      from a few epochs: cosmic rays, crossings of stars, variable stars), and the weighted
//      mean stamp's second moments (Gaussian weight of twice the mean PSF sigma) near the PSF's:
//      size ratio in [1 / max_size_ratio, max_size_ratio], ellipticity <= max_ellipticity
//      (bad columns and streaks).
#include <cstdint>
#include <string>
#include <vector>

#include "almagest/core/job_context.hpp"
#include "almagest/stack/exposure_stack.hpp"
#include "almagest/stack/psiphi.hpp"
#include "almagest/stack/search.hpp"

namespace almagest::stack {

struct FilterConfig {
  // 1. observations
  int min_obs = 1;
  double max_masked_fraction = 1.0;    ///< 1 = off
  // 2. sigma-G
  bool sigma_g = true;
  double sigma_g_low = 25, sigma_g_high = 75;  ///< percentiles of the width
  double sigma_g_n = 3.0;              ///< clip beyond n sigma_G of the median residual
  int sigma_g_min_kept = 5;
  // 3. duplicates
  bool dedup = true;
  double dedup_radius_px = 3.0;
  double dedup_overlap = 0.5;          ///< share of exposures with the tracks within the radius
  double dedup_share = 0.5;            ///< share of A from samples the stronger one sums (0 = off)
  // 4. stationary sources
  double min_motion_px = 2.0;          ///< 0 = keep static sources
  double stationary_ratio = 0.5;       ///< share of A explained by static sources (0 = off)
  // 5. stamps
  bool stamp_filter = true;
  int stamp_radius = 5;
  double stamp_median_ratio = 0.3;
  double stamp_max_size_ratio = 2.0;
  double stamp_max_ellipticity = 0.6;

  std::vector<std::string> validate() const;  ///< "field: message"
  std::string to_json() const;
};

/// Runs the stages on r.candidates (as made by `plan` from `psiphi`; `stack` gives the stamps,
/// null skips the stamp stage). Replaces r.candidates (Z descending), fills r.groups (one per
/// candidate), r.filters (the counts) and sets r.filtered. Multithreaded, deterministic.
void filter_candidates(SearchResult& r, const SearchPlan& plan, const PsiPhi& psiphi, const ExposureStack* stack,
                       const FilterConfig& cfg, const JobContext& ctx);

/// The per-exposure keep mask sigma-G gives a curve (a, b of trajectory_curve); 0 for an
/// unobserved epoch. Exposed for tests.
std::vector<std::uint8_t> sigma_g_keep(const float* a, const float* b, int n, const FilterConfig& cfg);

}  // namespace almagest::stack
