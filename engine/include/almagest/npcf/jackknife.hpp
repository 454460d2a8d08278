#pragma once
// Delete-one jackknife of the N-point statistics (npcf-conventions.md, "Jackknife").
//
// Regions are labels 1..N per point, given per catalogue row (label files) or made internally as
// N equal-count angular regions: nb sin(dec) bands x (N / nb) phi slices at quantiles of the
// random catalogue, seen from the origin (nb the largest divisor of N not above sqrt(N)).
// Realisation m omits every tuple touching region m. A tuple with no member in region m is
// exactly a tuple of the point set without region m's points, so realisation m is the same
// statistic evaluated on that subset, with the full set's normalised weights (no
// renormalisation) and the input order kept (the hub of every tuple, hence the relabelling sign
// of the parity channel, is unchanged). Any backend counts the subsets, so CUDA gives the same
// counts as the CPU. Cost: N evaluations of the statistic (and N graph builds).
#include <cstdint>
#include <string>
#include <vector>

#include "almagest/npcf/points.hpp"
#include "almagest/npcf/result.hpp"

namespace almagest::npcf {

/// Labels 1..n for every point of `p` (data then randoms): equal-count angular regions at the
/// randoms' quantiles. ConfigError("jackknife", ...) without randoms, for n < 2, or when there are
/// fewer randoms than regions; a point at the origin gets phi = 0, sin(dec) = 0.
std::vector<int> angular_regions(const PointSet& p, int n);

/// Reads one integer label in 1..n per line (blank lines and '#' comments skipped) from `path`;
/// IoError(path, "line K", ...) for a non-integer or out-of-range label, or when the count is
/// not `rows` (the catalogue's rows).
std::vector<int> read_region_labels(const std::string& path, std::size_t rows, int n);

/// The points of `p` outside region `m` (labels[i] != m), order and weights kept.
PointSet without_region(const PointSet& p, const std::vector<int>& labels, int m);

/// Fills result.jackknife from the realisations (each the same statistic and rows): per
/// realisation n, r and estimator; mean, sigma = sqrt((N-1)/N sum (x_m - mean)^2) and, for at
/// most kMaxCovarianceRows rows, the full covariance (N-1)/N sum (x_m - mean)(x_m - mean)^T.
inline constexpr std::size_t kMaxCovarianceRows = 8192;
void attach_jackknife(NpcfResult& result, const std::vector<NpcfResult>& realisations);

/// Text beside a --format gramsci/text file: `<out>.jk` (edge columns, ireal, the value columns
/// of the main file) and `<out>.jkerr` (edge columns, <est>_mean_jk <est>_sigma_jk).
std::string format_jackknife_rows(const NpcfResult& r, bool fortran);
std::string format_jackknife_errors(const NpcfResult& r, bool fortran);

}  // namespace almagest::npcf
