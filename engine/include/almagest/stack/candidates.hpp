#pragma once
// What a user vets a candidate with: per-exposure psi/phi curve, predicted track (pixels and, with
// a WCS, RA/Dec), and coadded stamps of the science planes along the track (sum, mean and median
// over valid pixels, inverse-variance weighted mean). Result tables in ECSV and HDF5.
#include <string>
#include <vector>

#include "almagest/core/job_context.hpp"
#include "almagest/stack/exposure_stack.hpp"
#include "almagest/stack/psiphi.hpp"
#include "almagest/stack/search.hpp"

namespace almagest::stack {

struct CandidateDetail {
  Candidate c;
  std::vector<double> t;               ///< [n] days since the reference time
  std::vector<std::int32_t> px, py;    ///< [n] predicted pixel (KBMOD nearest pixel)
  std::vector<double> ra, dec;         ///< [n] degrees (empty without a WCS)
  std::vector<float> psi, phi;         ///< [n] samples (0 where invalid or off the image)
  std::vector<std::uint8_t> valid;     ///< [n]
  int stamp_size = 0;                  ///< side (2 r + 1)
  std::vector<float> stamp_sum, stamp_mean, stamp_median, stamp_weighted;  ///< [side][side]
};

/// Details for every candidate of `r` (made by `plan` from `psiphi` of `stack`). Stamps have
/// radius `stamp_radius` pixels. Cancellable; multithreaded over candidates.
std::vector<CandidateDetail> describe_candidates(const SearchResult& r, const SearchPlan& plan,
                                                 const ExposureStack& stack, const PsiPhi& psiphi,
                                                 int stamp_radius, const JobContext& ctx);

/// ECSV 1.0 table, one row per candidate (x, y, v, vx, vy, z, flux, a, b, obs, members and, when
/// details with a WCS are given, ra/dec at the reference time); metadata carries the digest,
/// threshold and provenance. Written atomically.
void write_candidates_ecsv(const std::string& path, const SearchResult& r,
                           const std::vector<CandidateDetail>& details = {});
/// HDF5: /candidates/<column> datasets, /digest attributes, and with details /curves/psi, /phi,
/// /valid [n_cand][n_exp], /tracks/x, /y (and /ra, /dec), /stamps/<kind> [n_cand][side][side].
void write_result_hdf5(const std::string& path, const SearchResult& r,
                       const std::vector<CandidateDetail>& details = {});

}  // namespace almagest::stack
