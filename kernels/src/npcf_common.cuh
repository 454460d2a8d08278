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

__device__ __forceinline__ double dv(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ double sqrt_rn(double a) { return __dsqrt_rn(a); }

// mu binning: the operations of the engine's pair_mu / triangle_mu / mu_bin_* (npcf/config.cpp)
// in the same order, each rounded to nearest, so that every mu bin equals the CPU's.
__device__ __forceinline__ double pair_mu(double xi, double yi, double zi, double dx, double dy,
                                          double dz, bool zaxis) {
  const double d2 = norm2(dx, dy, dz);
  if (zaxis) return d2 > 0 ? dv(dz, sqrt_rn(d2)) : 0.0;
  const double mx = add(xi, mul(0.5, dx)), my = add(yi, mul(0.5, dy)), mz = add(zi, mul(0.5, dz));
  const double dot = add(add(mul(dx, mx), mul(dy, my)), mul(dz, mz));
  const double den = sqrt_rn(mul(d2, norm2(mx, my, mz)));
  return den > 0 ? dv(dot, den) : 0.0;
}

__device__ __forceinline__ double triangle_mu(double xi, double yi, double zi, double ax, double ay,
                                              double az, double bx, double by, double bz,
                                              bool zaxis) {
  const double nx = sub(mul(ay, bz), mul(az, by)), ny = sub(mul(az, bx), mul(ax, bz)),
               nz = sub(mul(ax, by), mul(ay, bx));
  const double n2 = norm2(nx, ny, nz);
  if (zaxis) return n2 > 0 ? dv(fabs(nz), sqrt_rn(n2)) : 0.0;
  const double cx = add(xi, dv(add(ax, bx), 3.0)), cy = add(yi, dv(add(ay, by), 3.0)),
               cz = add(zi, dv(add(az, bz), 3.0));
  const double dot = add(add(mul(nx, cx), mul(ny, cy)), mul(nz, cz));
  const double den = sqrt_rn(mul(n2, norm2(cx, cy, cz)));
  return den > 0 ? dv(fabs(dot), den) : 0.0;
}

__device__ __forceinline__ int mu_bin_from(double t, int nmu) {
  if (!(t >= 0)) return 0;
  if (t >= nmu) return nmu - 1;
  return min(static_cast<int>(t), nmu - 1);
}
__device__ __forceinline__ int mu_bin_signed(double mu, int nmu) {
  return mu_bin_from(mul(add(mu, 1.0), 0.5 * nmu), nmu);
}
__device__ __forceinline__ int mu_bin_unsigned(double mu, int nmu) {
  return mu_bin_from(mul(fabs(mu), static_cast<double>(nmu)), nmu);
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
