#pragma once
// Plain C++ facade of the CUDA spherical harmonic transforms (no CUDA types). Reached through
// CudaModule::sht(). Conventions are the engine's (engine/include/almagest/sht/plan.hpp):
//   alm: [ncols][ncomp][alm_size(lmax)] complex128 stored as interleaved (re, im) doubles;
//   map: [ncols][ncomp][map_size] float64, RING order (map_size = 12 nside^2, or the number of
//   observed pixels for a cut-sky plan). ncomp = 1 (spin 0) or 2 (spin 2: (E,B) <-> (Q,U)).
// Methods throw kernels::DeviceError (DeviceOutOfMemory when the device is full).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace almagest::kernels {

struct ShtDeviceDesc {
  int device = 0;
  int nside = 0;
  int lmax = 0;                ///< mmax = lmax
  int spin = 0;                ///< 0 or 2
  int max_cols = 1;            ///< the most columns one call transforms
  std::vector<std::int64_t> observed_pixels;  ///< empty = full sky; else increasing RING indices
  /// The adjoint's polar-cap rows: -1 as measured fastest (the shared-memory DFT from nside
  /// 1024, unless ALMAGEST_SHT_POLAR_DFT says otherwise), 0 the Bluestein chain, 1 the
  /// shared-memory DFT wherever it reaches (nside <= 2049). For checks of one against the other.
  int polar_dft = -1;
  /// The spin-0 adjoint's skip table (dead leading chunks of each tile not run): -1 where it
  /// skips at least 1% of the chunks (unless ALMAGEST_SHT_ADJ_SKIP says otherwise), 0 never,
  /// 1 whatever it skips. For checks of one against the other.
  int adjoint_skip = -1;
};

enum class ShtOp { Synthesis, Adjoint };

/// Counts for performance reports (per column, per call).
struct ShtWorkCounts {
  /// FP64 operations of the Legendre stage per column (FMA = 2): the recursion kernels', or
  /// where batched calls of this plan take the table path in that direction, its GEMMs' (padding
  /// included).
  double legendre_flops_synthesis = 0;
  double legendre_flops_adjoint = 0;
  std::size_t device_bytes = 0;         ///< device memory the plan holds
  /// Share of the single-column spin-0 adjoint's tile chunks that its skip table leaves out
  /// (every chain of the tile dead; 0 where the plan keeps no skip table).
  double adjoint_skipped_share = 0;
};

/// One persistent device plan: tables, cuFFT plans, device buffers and a stream of its own.
/// Plans of different nside coexist. Not thread-safe: callers serialise use of one plan.
class ShtDevicePlan {
public:
  virtual ~ShtDevicePlan() = default;
  virtual std::string device_name() const = 0;
  virtual ShtWorkCounts counts() const = 0;

  /// Host in, host out, synchronous: alm -> map / map -> alm for ncols <= max_cols columns.
  virtual void synthesis(const double* alm, double* map, int ncols) = 0;
  virtual void adjoint(const double* map, double* alm, int ncols) = 0;

  /// Device-resident use: the plan's own staging buffers (alm and map, max_cols columns each).
  virtual void upload_alm(const double* alm, int ncols) = 0;
  virtual void upload_map(const double* map, int ncols) = 0;
  virtual void download_alm(double* alm, int ncols) = 0;
  virtual void download_map(double* map, int ncols) = 0;
  /// Caller's device memory in and out (pointers on this plan's device, ncols <= max_cols
  /// columns of the host layouts), synchronous. The plan's stream first waits for the work
  /// queued on the legacy default stream (where DLPack producers such as CuPy and PyTorch leave
  /// their arrays), then copies the input into the plan's buffer device-to-device, runs, and
  /// copies the result into the caller's buffer (two device copies: about 1 us at nside 128).
  /// A pointer that is not device memory of this device is a DeviceError naming it.
  virtual void synthesis_device(const double* alm_dev, double* map_dev, int ncols) = 0;
  virtual void adjoint_device(const double* map_dev, double* alm_dev, int ncols) = 0;
  /// Enqueues op on the plan's stream (device alm buffer <-> device map buffer).
  virtual void run(ShtOp op, int ncols) = 0;
  virtual void synchronize() = 0;
  /// Runs op `reps` times, each bracketed by CUDA events; returns the milliseconds of each.
  virtual std::vector<double> time(ShtOp op, int ncols, int reps) = 0;
  /// The same for the Legendre kernel of op alone (on the current buffers; for profiling).
  virtual std::vector<double> time_legendre(ShtOp op, int ncols, int reps) = 0;
};

class ShtKernels {
public:
  virtual ~ShtKernels() = default;
  virtual std::unique_ptr<ShtDevicePlan> make_plan(const ShtDeviceDesc& desc) = 0;
};

}  // namespace almagest::kernels

/// Defined in kernels/src/sht_module.cu; CudaModule::sht() returns it.
almagest::kernels::ShtKernels* almagest_sht_kernels();
