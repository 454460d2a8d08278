#pragma once
// ShtPlan: an immutable, move-only spherical harmonic transform plan on HEALPix RING maps.
// It owns the expensive state of its backend (healpix_cxx/libsharp geometry on the CPU; Legendre
// tables, cuFFT plans and device buffers on the GPU) and can execute any number of times.
//
// Shapes (all row-major, columns outermost):
//   alm: [ncols][ncomp][alm_size(lmax)] complex128, healpy layout (see alm.hpp);
//        ncomp = 1 (T) for spin 0, 2 (E, B) for spin 2.
//   map: [ncols][ncomp][map_size()] float64, RING order; ncomp = 1 (T) or 2 (Q, U).
//        map_size() = 12 nside^2, or the number of observed pixels for a cut-sky plan.
// ncols is inferred from the span sizes (which must agree); any ncols >= 1 is accepted and is
// processed in chunks of config().batch columns. Spans are only read/written during the call.
// Conventions: imaginary parts of a_l0 are ignored on input and zero on output; spin-2 entries
// with l < 2 are ignored on input and zero on output; (Q, U) signs follow healpy.
// Errors: ConfigError (shape mismatch), BackendUnavailable, CudaError, NotConverged, Cancelled.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "almagest/core/job_context.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/sht/config.hpp"

namespace almagest::sht {

struct InverseOptions {
  double epsilon = 1e-10;     ///< stop when ||Y^T r||_w / ||Y^T m||_w < epsilon for every column
  int max_iterations = 1000;  ///< NotConverged is thrown past this
};

struct InverseReport {
  int iterations = 0;           ///< CGLS iterations done
  double residual = 0.0;        ///< max over columns of ||Y a - m|| / ||m||
  double normal_residual = 0.0; ///< max over columns of ||Y^T (Y a - m)||_w / ||Y^T m||_w
};

class ShtBackendImpl;  // engine-internal

class ShtPlan {
public:
  ShtPlan(ShtPlan&&) noexcept;
  ShtPlan& operator=(ShtPlan&&) noexcept;
  ShtPlan(const ShtPlan&) = delete;
  ShtPlan& operator=(const ShtPlan&) = delete;
  ~ShtPlan();

  const ShtConfig& config() const noexcept;
  int nside() const noexcept;
  int lmax() const noexcept;
  int spin() const noexcept;
  int ncomp() const noexcept;              ///< 1 or 2
  std::size_t nalm() const noexcept;       ///< alm_size(lmax), per component
  std::size_t map_size() const noexcept;   ///< pixels per component
  Backend backend() const noexcept;
  std::string device() const;              ///< CPU model or GPU name

  /// map = Y alm (alm2map / alm2map_spin).
  void synthesis(std::span<const Complex> alm, std::span<double> map,
                 const JobContext& ctx = {}) const;
  /// alm = Y^T map, the exact transpose (no quadrature weights; ducc0 adjoint_synthesis).
  void adjoint(std::span<const double> map, std::span<Complex> alm,
               const JobContext& ctx = {}) const;
  /// Device-resident synthesis and adjoint (CUDA backend): `alm` and `map` are device pointers
  /// on the plan's device (the host shapes above, `ncols` columns), e.g. CuPy or PyTorch arrays
  /// received through DLPack; the call is synchronous and orders itself after the legacy
  /// default stream. ConfigError on the CPU backend; CudaError for a pointer that is not device
  /// memory of the plan's device.
  void synthesis_device(const Complex* alm, double* map, int ncols, const JobContext& ctx = {}) const;
  void adjoint_device(const double* map, Complex* alm, int ncols, const JobContext& ctx = {}) const;
  /// Least-squares inverse min ||Y alm - map|| by CGLS (inner product of alm_dot). Throws
  /// NotConverged (with iterations and residual) instead of returning an unconverged answer.
  InverseReport inverse(std::span<const double> map, std::span<Complex> alm,
                        const InverseOptions& options = {}, const JobContext& ctx = {}) const;
  /// healpy map2alm(iter = iterations): alm = Y^T W map with W = 4 pi / Npix times the ring
  /// weight of each pixel's ring (ring_weights: 2 nside entries, north to equator, as in the
  /// HEALPix weight files; empty = all ones, healpy use_weights=False), then `iterations` Jacobi
  /// steps alm += Y^T W (map - Y alm).
  void map2alm(std::span<const double> map, std::span<Complex> alm, int iterations = 3,
               std::span<const double> ring_weights = {}, const JobContext& ctx = {}) const;
  /// healpy map2alm(use_pixel_weights=True): alm = Y^T W map with W = 4 pi / Npix times the
  /// weight of each pixel (pixel_weights: 12 nside^2 entries, RING order, as read_pixel_weights
  /// returns them; a cut-sky plan takes those of its observed pixels). No Jacobi iterations:
  /// healpy ignores iter with pixel weights and HEALPix refuses the combination.
  void map2alm_pixel_weights(std::span<const double> map, std::span<Complex> alm,
                             std::span<const double> pixel_weights,
                             const JobContext& ctx = {}) const;

private:
  friend ShtPlan make_plan(const ShtConfig& config);
  explicit ShtPlan(std::unique_ptr<ShtBackendImpl> impl);
  std::unique_ptr<ShtBackendImpl> impl_;
};

/// Validates `config` (ConfigError) and builds the plan for config.backend. An unavailable
/// backend throws BackendUnavailable naming why (no module, no device); no silent fallback.
ShtPlan make_plan(const ShtConfig& config);

}  // namespace almagest::sht
