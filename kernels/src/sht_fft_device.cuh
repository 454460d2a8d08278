#pragma once
// Device helpers of the SHT's FFT stage that the glue kernels (sht_kernels.cu) share with the
// Legendre adjoints (sht_adjoint.cu): complex products, chirps and phases, and F_m read straight
// from the belt spectra and the polar Bluestein rows the FFT stage left (unaliased_belt_pair,
// unaliased_polar_pair) instead of through the F array.
#include "sht_kernels.cuh"

namespace almagest::kernels::sht::dev {


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

/// First element of polar row q (ring pair of size 4 (q + 1)) of column cc in PU.
__device__ __forceinline__ long long polar_offset(const FftArgs& a, int q, int cc) {
  const PolarClass& c = a.cls[a.cls_of[q]];
  return c.cbase * a.ncc + (static_cast<long long>(cc) * c.rows + (q - c.qlo)) * c.M;
}

/// The chirp e^{i pi j^2 / N} of bin j of polar ring pair q (N = 4 (q + 1)): from the plan's
/// polar table where it has one, else computed.
__device__ __forceinline__ cplx polar_chirp(const FftArgs& a, int q, int j, int N) {
  return a.pchirp ? a.pchirp[polar_table_index(q, j)] : chirp(j, N);
}

/// The north (polar_north) and south (polar_south) ring's spectra at bin k of a polar Bluestein
/// row Y = Y_N + i Y_S (both Hermitian) from y = conj(c_k) Y(k) and z = conj(conj(c_k) Y(-k)):
/// Y_N(k) = (y + z) / 2, Y_S(k) = (y - z) / (2 i). (k_unalias writes the same split out: through
/// these helpers its PTX changed, and this session had no device time left to measure it.)
__device__ __forceinline__ cplx polar_north(cplx y, cplx z) {
  return {0.5 * (y.re + z.re), 0.5 * (y.im + z.im)};
}
__device__ __forceinline__ cplx polar_south(cplx y, cplx z) {
  return {0.5 * (y.im - z.im), -0.5 * (y.re - z.re)};
}

/// F_m of belt ring pair p (nside - 1 <= p < 2 nside: north ring p, south ring R - 1 - p; fs = 0
/// on the equator, where they are one ring) of column-component cc, for the Legendre adjoints:
/// straight from the belt half spectra BH with the rings' phase from a table (a.belt_phase[j] =
/// e^{i pi j / N}, N = 4 nside), so a chain's start costs two loads and a complex multiply per
/// ring.
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

/// F_m of polar ring pair q (north ring q, south ring R - 1 - q) of column-component cc, for the
/// Legendre adjoints: straight from the pair's Bluestein row (real part north, imaginary part
/// south) as the unalias kernel computes it, with the chirp and the phase of bin k = m mod N from
/// the polar tables (chirp(N - k) = chirp(k) for even N; the phase of m is (-1)^(m div N) that
/// of k). Two table loads, two row loads and ~20 FP64 operations per pair and chain start, so no
/// F of the polar rings is written or read.
__device__ __forceinline__ void unaliased_polar_pair(const AdjointArgs& a, int cc, int q, int m,
                                                     cplx& fn, cplx& fs) {
  const int N = 4 * (q + 1);
  const int k = m % N, kk = k == 0 ? 0 : N - k;
  const long long* pr = a.prow + 3 * q;
  const cplx* row = a.PU + pr[0] * a.ncc + cc * pr[1] + pr[2];
  const long long t = polar_table_index(q, k);
  const cplx c = conjc(a.pchirp[t]);
  cplx e = conjc(a.pphase[t]);
  if ((m / N) & 1) e = {-e.re, -e.im};
  const cplx y = cmul(c, row[k]);
  const cplx z = conjc(cmul(c, row[kk]));
  fn = cmul(polar_north(y, z), e);
  fs = cmul(polar_south(y, z), e);
}

}  // namespace almagest::kernels::sht::dev
