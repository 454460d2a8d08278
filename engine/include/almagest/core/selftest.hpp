#pragma once
// GPU self-test: seeded clustered catalogues, every N-point statistic on the CPU (the oracle) and
// on the GPU (all-resident, forced tiling W = 2, 3, 5, one and several partitions, the
// global-memory neighbourhood path), the GPU graph against the CPU graph, and the mirror identity
// of the parity channel. Usable without Qt: `almagest-cli selftest` prints text().
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

namespace almagest {

struct SelftestCheck {
  std::string name;       ///< e.g. "4pcf-parity exact W=3 P=2"
  bool passed = false;
  std::string detail;     ///< numbers: rows, tuples, worst relative difference, times
};

struct SelftestReport {
  bool gpu_available = false;
  std::string device;     ///< gpu_status().summary()
  std::vector<SelftestCheck> checks;
  double seconds = 0;
  /// True when the GPU was available, at least one check ran and every check passed.
  bool passed() const;
  /// Multi-line report: one line per check ("PASS name: detail"), then a summary line.
  std::string text() const;
  /// An empty report for the current process's GPU (gpu_available, device filled in).
  static SelftestReport for_current_gpu();
};

struct SelftestOptions {
  std::size_t points = 6000;   ///< data + randoms of the main catalogue (data = 1/3)
  std::uint64_t seed = 20261129;
  bool quick = false;          ///< fewer tiling variants
  /// Groups to run: "graph", "2pcf", "3pcf", "3pcf-equilateral", "4pcf", "4pcf-parity",
  /// "mirror", "injection" (chiral tetrahedra, NNNN_odd n^4 / N = eps (2x - 1)), "resident"
  /// (graphs kept on the device between calls under resident keys); empty = all.
  std::vector<std::string> only;
  double tolerance = 1e-12;    ///< weighted sums, normwise relative
};

/// Runs the self-test. Never throws for failed checks (they are reported); throws Cancelled when
/// ctx is cancelled. Without a GPU it returns a report with gpu_available = false and no checks.
SelftestReport run_gpu_selftest(const SelftestOptions& options, const JobContext& ctx);

}  // namespace almagest
