#pragma once
// Candidates as observations an orbit-linking tool reads (docs/stack.md, "Observation rows"):
// one row per candidate and exposure where the track's sample is valid, at the continuous
// predicted position converted to RA/Dec through the stack's WCS (describe_candidates' tracks).
//
// * ADES 2022 PSV (write_ades_psv): "# version=2022", an observatory header block, then the
//   pipe-separated columns permID|provID|trkSub|mode|stn|obsTime|ra|dec|rmsRA|rmsDec|astCat|remarks.
//   permID and provID are empty (new objects), trkSub = "<prefix><n>" (8 characters at most, one
//   per candidate, n from 1 in the table's order), mode "CCD", obsTime ISO 8601 UTC with
//   milliseconds (the exposure MJD taken as UTC), ra/dec decimal degrees (9 decimals), rmsRA
//   (in RA cos Dec) and rmsDec [arcsec] = pixel scale x mean PSF sigma / Z, astCat as given.
// * MPC 80-column (write_mpc80): columns 6-12 the trkSub as temporary designation, 15 'C'
//   (CCD), 16-32 "YYYY MM DD.dddddd", 33-44 RA "HH MM SS.sss", 45-56 Dec "sDD MM SS.ss", 78-80
//   the station code.
#include <string>
#include <vector>

#include "almagest/stack/candidates.hpp"

namespace almagest::stack {

struct ObservationOptions {
  std::string station = "500";       ///< observatory code (stn; MPC columns 78-80)
  std::string trk_prefix = "S";      ///< trkSub prefix (letters)
  std::string ast_cat = "UNK";       ///< astrometric catalogue of the WCS
  double pixel_scale_arcsec = 0;     ///< 0: from the details' tracks (RA/Dec step per pixel)
  double psf_sigma_px = 1.0;         ///< for rmsRA/rmsDec
  double reference_mjd = 0;          ///< MJD of t = 0 of the details (SearchPlan::reference_mjd)
};

/// The trkSub of candidate `index` (0-based).
std::string track_id(std::size_t index, const ObservationOptions& opt);
/// MJD (UTC) as ISO 8601 "YYYY-MM-DDThh:mm:ss.sssZ" (rounded to the millisecond).
std::string iso_time(double mjd);
/// Calendar date of an MJD: year, month, day with fraction.
void mjd_to_calendar(double mjd, int& year, int& month, double& day);

/// Written atomically; IoError(path, "WCS", ...) when the details carry no RA/Dec.
void write_ades_psv(const std::string& path, const std::vector<CandidateDetail>& details, const ObservationOptions& opt);
void write_mpc80(const std::string& path, const std::vector<CandidateDetail>& details, const ObservationOptions& opt);

}  // namespace almagest::stack
