#pragma once
// Plain C++ facade of the shift-and-stack CUDA kernels (no CUDA types). Reached through
// CudaModule::stack(); implemented in kernels/src/stack_*.cu. Every method throws
// kernels::DeviceError (DeviceOutOfMemory when the device cannot hold what was asked even after
// falling back to chunks). See engine/include/almagest/stack/search.hpp for the statistic.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace almagest::kernels {

enum class StackStorage : int { Fp32 = 0, Fp16 = 1, Int8 = 2 };
enum class StackMethod : int { Gather = 0, Tiled = 1, Fourier = 2 };

/// Encoded psi/phi planes in host memory, [n][height][width]; non-owning, must outlive the
/// session opened on them. psi: float / IEEE half bits (uint16) / int8 (-128 = invalid);
/// phi: float / half bits / uint8. Scales [n] for Fp16 and Int8 (see engine psiphi.hpp).
struct StackPlanes {
  int n = 0, width = 0, height = 0;
  StackStorage storage = StackStorage::Fp32;
  const void* psi = nullptr;
  const void* phi = nullptr;
  const float* psi_scale = nullptr;
  const float* phi_scale = nullptr;
  /// Device bytes the session may hold for the planes; 0 = what the device has free. A stack
  /// above the limit is not made resident: scans stream row bands and evaluate() streams
  /// exposure chunks (same sums, same order); the Fourier method needs a resident stack.
  std::uint64_t memory_limit = 0;
};

/// Integer shift tables (host, non-owning): [n_vel][n_exp]; separable per-axis tables
/// [nvx][n_exp], [nvy][n_exp] with v = j * nvx + i (needed by the Fourier method).
struct StackShifts {
  int n_vel = 0, n_exp = 0;
  const std::int32_t* sx = nullptr;
  const std::int32_t* sy = nullptr;
  int nvx = 0, nvy = 0;
  const std::int32_t* sxi = nullptr;
  const std::int32_t* syj = nullptr;
  /// Sub-pixel (fractional) mode when fx is set (gather and tiled methods; the tiled method runs
  /// the gather then): [n_vel][n_exp] floor offsets fx, fy and bilinear weights wx, wy in [0, 1)
  /// (the engine's ShiftTable), rho [n_exp][4] the PSF autocorrelations rho(1,0), rho(0,1),
  /// rho(1,1), rho(1,-1). Every sample is the CPU twin's fractional_sample(), the same float
  /// operations in the same order (engine/src/stack/search_internal.hpp).
  const std::int32_t* fx = nullptr;
  const std::int32_t* fy = nullptr;
  const float* wx = nullptr;
  const float* wy = nullptr;
  const float* rho = nullptr;
};

struct StackScanParams {
  StackMethod method = StackMethod::Tiled;
  float threshold = 0;        ///< hits: Z >= threshold
  bool top_k_mode = false;    ///< keep the best top_k velocities per origin instead
  int top_k = 8;              ///< 1..16
  std::size_t max_hits = 1000000;
  bool dense = false;         ///< return A, B, obs for every [v][y][x]
  std::function<bool()> cancelled;                                   ///< polled between launches
  std::function<void(double done, double total, const char* stage)> progress;
};

struct StackHit {
  std::int32_t x = 0, y = 0, v = 0;
  float z = 0;
};

struct StackScanResult {
  double sum_a = 0, sum_b = 0, max_z = 0;
  std::uint64_t count_above = 0;
  std::uint64_t total_hits = 0;     ///< hits found (hits.size() <= max_hits)
  std::vector<StackHit> hits;       ///< threshold mode: unordered; top-k: best first per origin
  std::vector<float> dense_a, dense_b;
  std::vector<std::int32_t> dense_obs;  ///< -1 for the Fourier method
  double scan_seconds = 0;              ///< device time of the scan (events), uploads excluded
  std::map<std::string, double> stage_seconds;
  bool cancelled = false;
};

/// A stack resident on one device (or, when it does not fit, streamed in row bands / exposure
/// chunks). Scans can be repeated with different banks and parameters.
class StackSession {
public:
  virtual ~StackSession() = default;
  virtual StackScanResult scan(const StackShifts& shifts, const StackScanParams& params) = 0;
  /// Exact (gather) sums for a list of trajectories (x, y, v); outputs have n entries.
  virtual void evaluate(const StackShifts& shifts, const StackHit* list, std::size_t n, float* a,
                        float* b, std::int32_t* obs) = 0;
  virtual std::string device_name() const = 0;
  virtual double upload_seconds() const = 0;
};

/// Inputs of the device psi/phi computation (host, non-owning). psf: concatenated odd square
/// kernels, psf_offset[e] the start of exposure e's kernel, psf_size[e] its side.
struct PsiPhiInputs {
  int n = 0, width = 0, height = 0;
  const float* sci = nullptr;
  const float* var = nullptr;
  const std::uint8_t* mask = nullptr;
  const float* psf = nullptr;
  const std::size_t* psf_offset = nullptr;
  const int* psf_size = nullptr;
  const double* weight = nullptr;  ///< [n] or null
};

class StackKernels {
public:
  virtual ~StackKernels() = default;
  /// Uploads the planes to `device` (or prepares chunked streaming when they do not fit).
  virtual std::unique_ptr<StackSession> open(const StackPlanes& planes, int device) = 0;
  /// psi/phi on the device, same definition as the CPU twin (float accumulation); writes
  /// [n][height][width] into psi and phi (host).
  virtual void psiphi(const PsiPhiInputs& in, float* psi, float* phi, int device) = 0;
};

}  // namespace almagest::kernels
