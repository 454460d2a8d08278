#pragma once
// Configuration of a spherical harmonic transform plan on HEALPix maps (healpy conventions, see
// docs/sht.md). Plain struct: validate() lists every problem, check() throws ConfigError.
#include <cstdint>
#include <string>
#include <vector>

#include "almagest/core/backend.hpp"

namespace almagest::sht {

/// A plan's backend is core's backend kind (almagest/core/backend.hpp, the one type of every
/// engine): Cpu or Cuda. Auto is resolved (resolve_backend, the one Auto policy) before a plan is
/// made; a config with Auto is refused.
using Backend = BackendKind;
const char* to_string(Backend b);                 ///< "cpu" | "cuda" | "auto"
/// parse_backend(s) ("gpu" also means cuda) resolved by resolve_backend: Cpu or Cuda. Throws
/// ConfigError (field "backend") or BackendUnavailable (cuda without a usable device).
Backend backend_from_string(const std::string& s);

/// healpy's blind value for unobserved pixels.
inline constexpr double kUnseen = -1.6375e30;

struct ShtConfig {
  int nside = 0;        ///< HEALPix resolution, 1..8192
  int lmax = -1;        ///< band limit; -1 means 3 nside - 1. mmax = lmax always.
  int spin = 0;         ///< 0 (scalar: T) or 2 (polarisation: (E, B) <-> (Q, U))
  int batch = 1;        ///< columns transformed together per device call (1..4096)
  Backend backend = Backend::Cpu;
  int threads = 0;      ///< CPU backend worker threads (0 = all hardware threads)
  int device = 0;       ///< CUDA device index (CUDA backend; ResolvedBackend::device)
  /// Cut sky: strictly increasing RING pixel indices of the observed pixels. Empty = full sky.
  /// Maps handed to a cut-sky plan hold only these pixels, in this order.
  std::vector<std::int64_t> observed_pixels;

  /// Sets backend and device from a resolved choice (resolve_backend).
  void use(const ResolvedBackend& b) noexcept {
    backend = b.kind;
    device = b.device;
  }
  /// lmax with the default applied.
  int effective_lmax() const noexcept { return lmax < 0 ? 3 * nside - 1 : lmax; }
  /// Every problem with this configuration, one message each naming the field; empty if valid.
  std::vector<std::string> validate() const;
  /// Throws ConfigError listing every problem (joined with "; ").
  void check() const;
  /// JSON object text (pixel list summarised by its count).
  std::string to_json() const;
};

}  // namespace almagest::sht
