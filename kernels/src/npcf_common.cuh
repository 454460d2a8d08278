#pragma once
// Internals shared by the NpCF files of the CUDA module (not part of the facade).
#include <cuda_runtime.h>

#include <cstdint>

#include "almagest/kernels/npcf_cuda.hpp"

namespace almagest::kernels {

/// The module's NpcfKernels (process lifetime).
NpcfKernels* npcf_kernels_instance();

/// Device graph build (npcf_graph.cu), called by the NpcfKernels implementation.
NpcfGraphHost npcf_build_graph(const NpcfPointsView& p, const NpcfGraphSpec& spec,
                               const NpcfOptions& opt);

namespace npcf_dev {

// Arithmetic that must round exactly as the CPU backend's (which compiles without FMA
// contraction): explicit round-to-nearest operations, never contracted into FMAs.
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double sub(double a, double b) { return __dsub_rn(a, b); }

/// Minimum image as Geometry::delta: v > box/2 -> v - box; v < -box/2 -> v + box.
__device__ __forceinline__ double wrap(double v, double box, double half) {
  if (v > half) return sub(v, box);
  if (v < -half) return add(v, box);
  return v;
}

/// Separation j - i exactly as Geometry::delta.
__device__ __forceinline__ void delta(const double* x, const double* y, const double* z,
                                      std::uint64_t i, std::uint64_t j, bool periodic, double box,
                                      double& dx, double& dy, double& dz) {
  dx = sub(x[j], x[i]);
  dy = sub(y[j], y[i]);
  dz = sub(z[j], z[i]);
  if (periodic) {
    const double h = 0.5 * box;
    dx = wrap(dx, box, h);
    dy = wrap(dy, box, h);
    dz = wrap(dz, box, h);
  }
}

/// dx*dx + dy*dy + dz*dz evaluated left to right without contraction.
__device__ __forceinline__ double norm2(double dx, double dy, double dz) {
  return add(add(mul(dx, dx), mul(dy, dy)), mul(dz, dz));
}

/// First index in [lo, hi) of a sorted array with a[idx] >= key.
template <class T>
__device__ __forceinline__ std::uint32_t lower_bound(const T* a, std::uint32_t lo, std::uint32_t hi,
                                                     T key) {
  while (lo < hi) {
    const std::uint32_t mid = (lo + hi) >> 1;
    if (a[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

}  // namespace npcf_dev
}  // namespace almagest::kernels
