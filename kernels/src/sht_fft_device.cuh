#pragma once
// Device helpers of the SHT's FFT stage that the glue kernels (sht_kernels.cu) share with the
// Legendre adjoints (sht_adjoint.cu): complex products, and F_m of the belt rings read straight
// from the belt spectra the FFT stage left (unaliased_belt_pair) instead of through the F array.
#include "sht_kernels.cuh"

namespace almagest::kernels::sht::dev {

__device__ __forceinline__ cplx cmul(cplx a, cplx b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
__device__ __forceinline__ cplx conjc(cplx a) { return {a.re, -a.im}; }

/// F_m of belt ring pair p (nside - 1 <= p < 2 nside: north ring p, south ring R - 1 - p; fs = 0
/// on the equator, where they are one ring) of column-component cc, for the Legendre adjoints:
/// straight from the belt half spectra BH with the rings' phase from a table (a.belt_phase[j] =
/// e^{i pi j / N}, N = 4 nside), so a chain's start costs two loads and a complex multiply per
/// ring. The polar pairs' F_m take more (two chirps and a phase, sincospi each), which inside the
/// FP64-bound adjoint cost more than the unalias kernel that writes them (docs/benchmarks.md).
__device__ __forceinline__ void unaliased_belt_pair(const AdjointArgs& a, int cc, int p, int m,
                                                    cplx& fn, cplx& fs) {
  const int nside = a.nside, R = 4 * nside - 1, N = 4 * nside, nh = 2 * nside + 1;
  const cplx* bh = a.BH + static_cast<std::size_t>(cc) * (2 * nside + 1) * nh;
  auto one = [&](int r) {
    const cplx* brow = bh + static_cast<std::size_t>(r - (nside - 1)) * nh;
    const cplx G = m <= N / 2 ? brow[m] : conjc(brow[N - m]);  // m <= lmax < N
    // Ring r (i = r + 1) is shifted by pi / N where i - nside is even (locate): F_m = G e^{-i m pi / N}.
    return ((r + 1 - nside) & 1) == 0 ? cmul(G, conjc(a.belt_phase[m])) : G;
  };
  fn = one(p);
  fs = R - 1 - p == p ? cplx{0.0, 0.0} : one(R - 1 - p);
}

}  // namespace almagest::kernels::sht::dev
