#pragma once
// Device helpers of the SHT's FFT-stage layouts, shared by the glue kernels (sht_kernels.cu) and
// the Legendre adjoints (sht_adjoint.cu), which read F_m of the belt rings straight from the belt
// spectra the FFT stage left (unaliased_belt_pair) instead of through the F array.
#include "sht_kernels.cuh"

namespace almagest::kernels::sht::dev {

__device__ __forceinline__ cplx cmul(cplx a, cplx b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
__device__ __forceinline__ cplx conjc(cplx a) { return {a.re, -a.im}; }

/// e^{i pi t^2 / N}, argument reduced exactly in integers. (A 32-bit reduction, (t mod 2N)^2
/// mod 2N, measured no faster on the H200.)
__device__ __forceinline__ cplx chirp(long long t, int N) {
  const long long t2 = (t * t) % (2LL * N);
  double s, c;
  sincospi(static_cast<double>(t2) / N, &s, &c);
  return {c, s};
}
/// e^{i m phi0} with phi0 = pi / N (shifted rings) or 0.
__device__ __forceinline__ cplx phase(int m, int N, bool shifted) {
  if (!shifted) return {1.0, 0.0};
  double s, c;
  sincospi(static_cast<double>(m % (2 * N)) / N, &s, &c);
  return {c, s};
}

/// Ring r -> (nphi, start, shifted, kind, index): kind 0 belt (index b), 1 polar (index q,
/// chirp row = nphi/4 - 1).
struct RingLoc {
  int N;
  long long start;
  bool shifted;
  bool polar;
  int idx;
};
__device__ __forceinline__ RingLoc locate(int nside, int r) {
  RingLoc L;
  const int R = 4 * nside - 1;
  const long long npix = 12LL * nside * nside, ncap = 2LL * nside * (nside - 1);
  if (r < nside - 1) {
    const int i = r + 1;
    L = {4 * i, 2LL * i * (i - 1), true, true, r};
  } else if (r < 3 * nside) {
    const int i = r + 1;
    L = {4 * nside, ncap + static_cast<long long>(i - nside) * 4 * nside, ((i - nside) & 1) == 0,
         false, r - (nside - 1)};
  } else {
    const int ii = R - r;
    L = {4 * ii, npix - 2LL * ii * (ii + 1), true, true, (nside - 1) + (r - 3 * nside)};
  }
  return L;
}

__device__ __forceinline__ int pair_of_ring(int nside, int r) {
  const int R = 4 * nside - 1;
  return r < R - 1 - r ? r : R - 1 - r;
}

/// First element of polar row q (ring pair of size 4 (q + 1)) of column-component cc in PU, for
/// calls of ncc column-components (q's class c).
__device__ __forceinline__ long long polar_row(const PolarClass& c, int q, int cc, int ncc) {
  return c.cbase * ncc + (static_cast<long long>(cc) * c.rows + (q - c.qlo)) * c.M;
}

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
