#pragma once
// Shift-and-stack GPU self-test: the sub-pixel (fractional-shift) mode of the gather and tiled
// methods against the CPU twin on a seeded stack (masked holes, a moving bad column, varying
// variance and seeing 0.7-0.9 px, irregular times, a common curve) with a mover at a
// non-integer velocity. Gates: dense A, B, obs of every trajectory within 1e-5 relative of the
// CPU twin (|dA| / (|A| + sqrt(B)), |dB| / B; the kernels keep the twin's float operations, so
// they are identical in practice) for FP32, FP16 and INT8 storage; the threshold candidates and
// their exact re-scored sums equal; the digest; the Fourier method refuses fractional shifts.
// Reports the SNR gain of the fractional over the integer mode on the mover's true trajectory
// and at the best trajectory near it. Usable without Qt: `almagest-cli selftest` prints it.
#include <cstdint>

#include "almagest/core/job_context.hpp"
#include "almagest/core/selftest.hpp"

namespace almagest::stack {

struct StackSelftestOptions {
  int n_exp = 60;               ///< exposures of the seeded stack (0: no checks)
  std::uint64_t seed = 2406;    ///< stack seed
  double tolerance = 1e-5;      ///< relative GPU-vs-CPU tolerance of A and B
};

/// Runs the checks (a failed check is reported, not thrown; a backend exception becomes a failed
/// check). Without a GPU: gpu_available = false and no checks.
SelftestReport run_stack_gpu_selftest(const StackSelftestOptions& options, const JobContext& ctx);

/// Registers the stack self-test ("stack"; option stack-exposures: 0 skips it).
void register_selftest(SelftestRegistry& registry);

}  // namespace almagest::stack
