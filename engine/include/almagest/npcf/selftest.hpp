#pragma once
// N-point GPU self-test: seeded clustered catalogues, every N-point statistic on the CPU (the
// oracle) and on the GPU (all-resident, forced tiling W = 2, 3, 5, one and several partitions, the
// global-memory neighbourhood path), the GPU graph against the CPU graph, device graphs kept
// between calls, the mirror identity of the parity channel and the chiral injection.
//
// Pass criteria per check: tuple counts (tuples, random_tuples, degenerate) identical; weighted
// sums (n, r, n_odd, r_odd) within 1e-12 normwise: max over rows of |gpu - cpu| divided by the
// larger of max |n| and max |r| (the signed sums n cancel between data and randoms, so |n| alone
// is no scale in large catalogues, and |r| alone none in small ones); graphs identical (offsets,
// neighbours, bins, pixels).
#include <cstdint>
#include <string>
#include <vector>

#include "almagest/core/job_context.hpp"
#include "almagest/core/selftest.hpp"

namespace almagest::npcf {

struct NpcfSelftestOptions {
  std::size_t points = 6000;   ///< data + randoms of the main catalogue (data = 1/3)
  std::uint64_t seed = 20261129;
  bool quick = false;          ///< fewer tiling variants
  /// Groups to run: "graph", "2pcf", "3pcf", "3pcf-equilateral", "4pcf", "4pcf-parity",
  /// "mu" (mu bins and multipoles), "mirror", "injection" (chiral tetrahedra, NNNN_odd n^4 / N =
  /// eps (2x - 1)), "resident"
  /// (device graphs kept between calls); empty = all.
  std::vector<std::string> only;
  double tolerance = 1e-12;    ///< weighted sums, normwise relative
};

/// Runs the self-test. Never throws for failed checks (they are reported); throws Cancelled when
/// ctx is cancelled. Without a GPU it returns a report with gpu_available = false and no checks.
SelftestReport run_npcf_gpu_selftest(const NpcfSelftestOptions& options, const JobContext& ctx);

/// Registers the N-point self-test ("npcf"; options points, seed, quick, only, tolerance).
void register_selftest(SelftestRegistry& registry);

}  // namespace almagest::npcf
