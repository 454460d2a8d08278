#pragma once
// Several sky regions in one N-point job (npcf-conventions.md, "Combining sky regions"): e.g. the
// two galactic caps of a survey, each with its own data and randoms, measured independently (one
// point set, one graph, one normalisation per region) and combined at the level of counts.
//
// Region r has normalised counts X_r (data weights summing to +1 and randoms to -1 within the
// region) and S_r, the sum of its raw data weights. The combination of an order-k count is
//   X = sum_r S_r^k X_r / (sum_r S_r)^k,
// k = 2 for pairs (NN, RR, the Legendre sums), 3 for triangles, 4 for quadruplets (NNNN, RRRR,
// and the odd channel); the 4pCF's disconnected term is rebuilt from the combined internal pair
// counts (S^2). The division by (sum S)^k keeps the combined counts in the units of one
// normalised catalogue (a job with one region combines to exactly that region's counts); it
// cancels in every estimator. Estimators are recomputed from the combined counts: xi = NN/RR,
// zeta = NNN/RRR, zeta = NNNN/RRRR, zeta_disc from the combined internal xi (and xi_2, xi_4 with mu
// bins), zeta_conn = zeta - zeta_disc, zeta_odd = NNNN_odd/RRRR; 0 where the random count is 0.
#include <string>
#include <vector>

#include "almagest/npcf/result.hpp"

namespace almagest::npcf {

/// One region's result of one statistic, with what the combination needs beside it.
struct RegionResult {
  std::string name;
  double data_weight_sum = 0;  ///< S: raw data weights of the region, summed
  NpcfResult result;           ///< the region's own result (its own normalisation)
  /// 4pCF only: the region's internal 2pCF per radial bin (its 2pCF on the same graph and bins,
  /// rows summed over mu bins; Legendre sums when the 4pCF has mu bins), for zeta_disc.
  NpcfResult internal_2pcf;
};

/// Combines regions' results of one statistic (same configuration and rows in every region).
/// Throws Error when the regions' rows differ or a weight sum is not positive and finite.
NpcfResult combine_regions(const std::vector<RegionResult>& regions);

/// The factor S_r^k / (sum S)^k of each region for an order-k count, in region order.
std::vector<double> region_weights(const std::vector<RegionResult>& regions, int order);

/// Writes the combination of one statistic at /npcf/<statistic> (the layout of write_hdf5) and
/// each region's own result in /npcf/<statistic>/region/<NAME> (same datasets; attributes
/// data_weight_sum, combination_weight = S^k / (sum S)^k and the region's provenance). Atomic.
void write_hdf5_regions(const NpcfResult& combined, const std::vector<RegionResult>& regions,
                        const std::string& path);

/// Parses "NAME:DATA:RANDOMS" (a region of the `region` job field). The name is 1..64 characters
/// of [A-Za-z0-9_-]; DATA and RANDOMS are non-empty paths (a path holding ':' is not supported).
/// Returns false and sets `why` on a malformed entry.
struct RegionEntry {
  std::string name, data, randoms;
};
bool parse_region_entry(const std::string& text, RegionEntry& out, std::string& why);

}  // namespace almagest::npcf
