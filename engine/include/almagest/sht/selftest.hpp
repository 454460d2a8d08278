#pragma once
// SHT GPU self-test: the CUDA backend against the CPU backend (healpix_cxx) on seeded random
// inputs. Gates (those of ../shared/notes/sht-conventions.md): synthesis and adjoint max relative
// error < tolerance (1e-10) for nside 8..max_nside, spin 0 and 2; adjointness
// <Y a, m> = <a, Y^T m> on the GPU to 1e-12 (nside <= 64); batched (B = 8) == single to 1e-12;
// repeated calls identical to 1e-13; CGLS inverse recovery (nside 16, lmax 32) to 2e-9; a cut
// sky against the CPU; plans of different nside coexisting; the adjoint's polar-cap rows through
// the shared-memory DFT against the Bluestein chain to 1e-12 (nside 64 and 520). Usable without Qt:
// `almagest-cli selftest` and the `sht_gpu_check` program print SelftestReport::text().
#include <cstdint>

#include "almagest/core/job_context.hpp"
#include "almagest/core/selftest.hpp"

namespace almagest::sht {

struct ShtSelftestOptions {
  int max_nside = 256;          ///< largest nside of the GPU-vs-CPU comparison (power of two >= 8)
  std::uint64_t seed = 1000;    ///< base seed of the random alm and maps
  double tolerance = 1e-10;     ///< synthesis/adjoint max |gpu - cpu| / max |cpu|
};

/// Runs the checks and reports them (a failed check is reported, not thrown; an exception of the
/// backend becomes a failed check). Without a GPU: gpu_available = false and no checks. Throws
/// Cancelled when ctx is cancelled between checks.
SelftestReport run_sht_gpu_selftest(const ShtSelftestOptions& options, const JobContext& ctx);

/// Registers the SHT self-test ("sht"; option sht-nside: the largest nside, 0 skips the checks;
/// 128 by default there, a quick check next to the N-point one).
void register_selftest(SelftestRegistry& registry);

}  // namespace almagest::sht
