#pragma once
// Brute-force O(N^k) oracle of the N-point counts, independent of the graph code: every pair,
// triple and quadruple i < j < k < l is tested with directly computed (minimum-image) distances.
// Rows follow the configuration order of docs/npcf.md; the 4pCF canonical tuples come from
// TetraTable::canonicalise (the reference), the 3pCF rows from sorting. Only for small inputs.
#include <string>
#include <vector>

#include "almagest/npcf/config.hpp"
#include "almagest/npcf/points.hpp"
#include "almagest/npcf/result.hpp"

namespace almagest::test {

struct BruteResult {
  npcf::NpcfResult result;        ///< raw fields: bins, tuples, random_tuples, n, r, n_odd, r_odd, degenerate
  std::vector<double> abs_n;      ///< per row: sum of |products| (scale for relative comparisons)
  std::vector<double> abs_odd;    ///< per row: sum of |odd weights| (parity only)
};

/// Counts `statistic` (default: config.statistic) by brute force. Parity uses config.directions
/// (Exact: spokes from coordinates; Pixel: pixel centres of the grid pixel_ntheta x pixel_nphi).
BruteResult brute_force_npcf(const npcf::PointSet& points, const npcf::NpcfConfig& config);

/// Compares an engine result with the oracle: identical bins and tuple counts, sums within
/// `rel` x (abs sum + |value|). Returns an empty string on success, else the first mismatch.
std::string compare_with_brute(const npcf::NpcfResult& engine, const BruteResult& brute,
                               double rel = 1e-12);

}  // namespace almagest::test
