// Device kernels of the SHT's Legendre adjoints (spin 0 in the odd-parity basis and spin 2,
// batched columns): per step each thread sums its ring pairs in registers and the block reduces
// those sums through shared memory. Helpers shared with the synthesis are in sht_device.cuh;
// docs/sht.md describes the kernels and the batched table path that large batches take instead.
#include <stdexcept>

#include "cuda_check.cuh"
#include "sht_device.cuh"
#include "sht_fft_device.cuh"
#include "sht_kernels.cuh"

namespace almagest::kernels::sht {
namespace {

using namespace dev;

/// Sum of a partial sum h over the 8 threads of an output group: a fixed-order shuffle sum
/// (deterministic; every thread of the group gets it).
__device__ __forceinline__ cplx group_sum(cplx s) {
#pragma unroll
  for (int off = 4; off > 0; off >>= 1) {
    s.re += __shfl_xor_sync(0xffffffffu, s.re, off);
    s.im += __shfl_xor_sync(0xffffffffu, s.im, off);
  }
  return s;
}

/// Output `out` of a reduction chunk (16 outputs x kThreads partial sums) summed over the
/// block: 8 threads per output (sub = 0..7) add 16 partials each in a fixed order (two
/// interleaved sums, which halves the chain of dependent adds), then group_sum.
__device__ __forceinline__ cplx chunk_sum(const cplx (*red)[kThreads], int out, int sub) {
  cplx h[2] = {{0.0, 0.0}, {0.0, 0.0}};
#pragma unroll
  for (int t = 0; t < kThreads / 8; ++t) {
    const cplx v = red[out][sub + 8 * t];
    h[t & 1].re += v.re;
    h[t & 1].im += v.im;
  }
  return group_sum({h[0].re + h[1].re, h[0].im + h[1].im});
}

/// Adds step i's share of the previous chunk's partial sums of output `out` to h: partials
/// i RPS .. i RPS + RPS - 1 of the 16 (kThreads / 8) that thread `sub` of the group adds, so that
/// a chunk's steps together read them all, in a fixed order (one chain of adds).
template <int RPS>
__device__ __forceinline__ void add_partials(const cplx (*redp)[kThreads], int out, int sub,
                                             int i, cplx& h) {
#pragma unroll
  for (int r = 0; r < RPS; ++r) {
    const int t = i * RPS + r;
    if (t < kThreads / 8) {
      const cplx v = redp[out][sub + 8 * t];
      h.re += v.re;
      h.im += v.im;
    }
  }
}

/// alm of mode m, column cc from the adjoint's (S1, S2): a_{m+2k} = u_k S1_k + v_{k-1} S1_{k-1},
/// a_{m+2k+1} = N_k S2_k; the block's threads over l.
__device__ __forceinline__ void obasis_finish_mode(const LegendreArgs& a, int m, int cc) {
  const int lmax = a.lmax;
  const long long ko = a.koff[m], total = a.koff[lmax + 1];
  const std::size_t nalm = static_cast<std::size_t>(lmax + 1) * (lmax + 2) / 2;
  const std::size_t mst = static_cast<std::size_t>(m) * (2 * lmax + 1 - m) / 2;
  cplx* alm = a.alm + static_cast<std::size_t>(cc) * nalm + mst;
  const cplx* W = a.W + 2 * (static_cast<std::size_t>(cc) * total);
  for (int l = m + threadIdx.x; l <= lmax; l += blockDim.x) {
    const int k = (l - m) >> 1;
    const long long t = ko + k;
    cplx r;
    if (((l - m) & 1) == 0) {
      const cplx s1 = W[2 * t];
      const double u = a.norm[t].u;
      r = {u * s1.re, u * s1.im};
      if (k > 0) {
        const cplx sp = W[2 * (t - 1)];
        const double v = a.norm[t - 1].v;
        r.re += v * sp.re;
        r.im += v * sp.im;
      }
    } else {
      const cplx s2 = W[2 * t + 1];
      const double n = a.norm[t].N;
      r = {n * s2.re, n * s2.im};
    }
    if (m == 0) r.im = 0.0;
    alm[l] = r;
  }
}

/// The same as a kernel: blocks over (m, column) (the adjoints' finish where they do not run it
/// themselves, AdjointArgs::finish_in_block).
__global__ void k_obasis_finish(LegendreArgs a) { obasis_finish_mode(a, blockIdx.x, blockIdx.y); }

/// The spin-2 adjoint's alm entries that no tile of k_adjoint_spin2 writes: degrees below l0
/// (m < 2) and every degree of a mode that no ring pair reaches; blocks over (m, column *
/// component). A kernel of its own, so that the plan needs no clear of every alm before the
/// call (a pass over all of them) and the Legendre kernel's code stays as it is (an epilogue
/// there changed its register allocation and its time).
__global__ void k_adjoint2_zero(LegendreArgs a) {
  const int m = blockIdx.x, lmax = a.lmax;
  const int lz = a.first_active[m] >= a.nactive ? lmax : min(l0_of(2, m) - 1, lmax);
  const std::size_t nalm = static_cast<std::size_t>(lmax + 1) * (lmax + 2) / 2;
  const std::size_t mst = static_cast<std::size_t>(m) * (2 * lmax + 1 - m) / 2;
  for (int l = m + static_cast<int>(threadIdx.x); l <= lz; l += blockDim.x)
    a.alm[static_cast<std::size_t>(blockIdx.y) * nalm + mst + l] = {0.0, 0.0};
}

// ---------------------------------------------------------------------------------------------
// Legendre adjoints. Per step (spin 0: two degrees of the odd-parity basis; spin 2: one degree)
// each thread sums the contributions of its P ring pairs in registers; the sums are then reduced
// over the block through shared memory (16 outputs per chunk) and added to the block's own
// outputs (no atomics; fixed summation order). Measured on the H200 (docs/benchmarks.md): the
// kernels are latency-bound at three blocks per SM, so each chunk issues its global reads (the
// next chunk's coefficients, the outputs of earlier tiles) before its steps, and each step's
// coefficients are read from shared memory one step ahead.

/// Starts the thread's P spin-2 chains of the tile at `tile` for mode m and loads their ring
/// data per column: with Q and U as QE, QO = (F_N +- F_S) / 2 (the 1/2 of W = (P + M) / 2,
/// X = (M - P) / 2 folded in; E and O swapped where l0 - m is odd, so that QE and UE go with the
/// even degrees counted from l0), the coefficients of lambda^+ (P) and lambda^- (M) in the sums:
/// alpha = -QE + i UO, beta = -QE - i UO, gamma = -UE - i QO, delta = -UE + i QO. An even degree
/// adds (P alpha + M beta, P gamma + M delta) to (bE, bB), an odd one i (M delta - P gamma,
/// P alpha - M beta): eight FMAs per chain and degree, with no W and X formed per degree.
template <int P, int NC>
__device__ __forceinline__ void adjoint2_tile(const AdjointArgs& a, int m, double nu, int tile,
                                              int tile_end, int col0, bool swap, double (&z)[P],
                                              double (&v0)[P], double (&v1)[P], double (&w0)[P],
                                              double (&w1)[P], int (&e)[P],
                                              cplx (&f)[P][NC][4]) {
  const int lmax = a.lmax;
  const int R = 4 * a.nside - 1;
  const std::size_t fstride = static_cast<std::size_t>(R) * (lmax + 1);
  auto Fget = [&](int cc, int ring) -> cplx {
    return a.F[(static_cast<std::size_t>(col0) * 2 + cc) * fstride +
               static_cast<std::size_t>(ring) * (lmax + 1) + m];
  };
  const int kc = tile_chains(tile_end - tile);
#pragma unroll
  for (int k = 0; k < P; ++k) {
    const int i = chain_index(tile, kc, k);
    const int p = k < kc && i < tile_end ? a.active[i] : -1;
    const bool on = start_chain2(a, m, nu, p, z[k], v0[k], v1[k], w0[k], w1[k], e[k]);
    // The tables' degree-l0 step has A = B = 0: from (mu_{l0-2}, mu_{l0-1}) = (-start, 0) the
    // first degree is an ordinary step (no `first` case in the degree code).
    v0[k] = -v1[k];
    v1[k] = 0.0;
    w0[k] = -w1[k];
    w1[k] = 0.0;
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      const bool cv = on && col0 + c < a.ncols;
      const bool eq = R - 1 - p == p;
      cplx qN = {0, 0}, qS = {0, 0}, uN = {0, 0}, uS = {0, 0};
      if (cv && a.spectra && p >= a.nside - 1) {
        unaliased_belt_pair(a, (col0 + c) * 2, p, m, qN, qS);
        unaliased_belt_pair(a, (col0 + c) * 2 + 1, p, m, uN, uS);
      } else if (cv && a.polar_spectra && p < a.nside - 1) {
        unaliased_polar_pair(a, (col0 + c) * 2, p, m, qN, qS);
        unaliased_polar_pair(a, (col0 + c) * 2 + 1, p, m, uN, uS);
      } else if (cv) {
        qN = Fget(2 * c, p);
        uN = Fget(2 * c + 1, p);
        if (!eq) {
          qS = Fget(2 * c, R - 1 - p);
          uS = Fget(2 * c + 1, R - 1 - p);
        }
      }
      cplx QE = {0.5 * (qN.re + qS.re), 0.5 * (qN.im + qS.im)};
      cplx QO = {0.5 * (qN.re - qS.re), 0.5 * (qN.im - qS.im)};
      cplx UE = {0.5 * (uN.re + uS.re), 0.5 * (uN.im + uS.im)};
      cplx UO = {0.5 * (uN.re - uS.re), 0.5 * (uN.im - uS.im)};
      if (swap) {
        cplx t = QE;
        QE = QO;
        QO = t;
        t = UE;
        UE = UO;
        UO = t;
      }
      f[k][c][0] = {-QE.re - UO.im, -QE.im + UO.re};  // alpha
      f[k][c][1] = {-QE.re + UO.im, -QE.im - UO.re};  // beta
      f[k][c][2] = {-UE.re + QO.im, -UE.im - QO.re};  // gamma
      f[k][c][3] = {-UE.re - QO.im, -UE.im + QO.re};  // delta
    }
  }
}

/// The spin-2 recursion coefficients of degree l (zeros above lmax).
__device__ __forceinline__ void adjoint2_coef(const LegendreArgs& a, std::size_t mst, int l,
                                              double& al, double& be, double& nl) {
  al = be = nl = 0.0;
  if (l <= a.lmax) {
    al = a.tabA[mst + l];
    be = a.tabB[mst + l];
    nl = a.tabN[mst + l];
  }
}

/// Starts a tile of the spin-2 adjoint (adjoint2_tile) and stages the first chunk's coefficients
/// (degrees l0 .. l0 + LC - 1) into buffer 0 once the previous tile's reductions are done.
template <int P, int NC, int LC>
__device__ __forceinline__ void adjoint2_begin_tile(
    const AdjointArgs& a, int m, double nu, int tile, int tile_end, int col0, bool swap, int l0,
    std::size_t mst, double (&z)[P], double (&v0)[P], double (&v1)[P], double (&w0)[P],
    double (&w1)[P], int (&e)[P], cplx (&f)[P][NC][4], double (&s_a)[2][LC],
    double (&s_b)[2][LC], double (&s_g)[2][LC]) {
  adjoint2_tile<P, NC>(a, m, nu, tile, tile_end, col0, swap, z, v0, v1, w0, w1, e, f);
  __syncthreads();  // the previous tile's reductions are done
  if (threadIdx.x < LC)
    adjoint2_coef(a, mst, l0 + threadIdx.x, s_a[0][threadIdx.x], s_b[0][threadIdx.x],
                  s_g[0][threadIdx.x]);
  __syncthreads();
}

/// One degree of the spin-2 adjoint for the thread's first K of P chains: the step and the sums
/// per column of lambda^+ (P) and lambda^- (M) times the coefficients of adjoint2_tile for parity
/// par (relative to l0): (bE, bB) at even degrees, (bE, bB) / i at odd ones (the store
/// multiplies by i). fast: every chain of the warp counts (no scale selects). The chains stay
/// separate: run as W = lambda^+ + lambda^- and X = lambda^- - lambda^+ they lost lambda^- where
/// it is ~tan^4(theta/2) of lambda^+ near the poles (measured on the H200: adjoint errors
/// 1.6e-11 at nside 32 to 4e-6 at 1024 against the CPU backend); the sums take P and M each
/// with its own coefficient instead (two FMAs per real sum, as the synthesis).
template <int P, int NC, int K>
__device__ __forceinline__ void adjoint2_degree(bool fast, int par, double al,
                                                double be, const double (&z)[P], double (&v0)[P],
                                                double (&v1)[P], double (&w0)[P],
                                                double (&w1)[P], const int (&e)[P],
                                                const cplx (&f)[P][NC][4], cplx (&sum)[2 * NC]) {
#pragma unroll
  for (int q = 0; q < 2 * NC; ++q) sum[q] = {0.0, 0.0};
#pragma unroll
  for (int k = 0; k < K; ++k) {
    step2(al, be, z[k], v0[k], v1[k], w0[k], w1[k]);
    const double P_ = (fast || e[k] == 0) ? v1[k] : 0.0;
    const double M_ = (fast || e[k] == 0) ? w1[k] : 0.0;
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      const cplx al_ = f[k][c][0], be_ = f[k][c][1], ga = f[k][c][2], de = f[k][c][3];
      cplx& sE = sum[2 * c];
      cplx& sB = sum[2 * c + 1];
      if (par == 0) {  // bE += P alpha + M beta, bB += P gamma + M delta
        sE.re = fma(M_, be_.re, fma(P_, al_.re, sE.re));
        sE.im = fma(M_, be_.im, fma(P_, al_.im, sE.im));
        sB.re = fma(M_, de.re, fma(P_, ga.re, sB.re));
        sB.im = fma(M_, de.im, fma(P_, ga.im, sB.im));
      } else {  // bE / i += M delta - P gamma, bB / i += P alpha - M beta
        sE.re = fma(M_, de.re, fma(-P_, ga.re, sE.re));
        sE.im = fma(M_, de.im, fma(-P_, ga.im, sE.im));
        sB.re = fma(-M_, be_.re, fma(P_, al_.re, sB.re));
        sB.im = fma(-M_, be_.im, fma(P_, al_.im, sB.im));
      }
    }
  }
}

/// Two steps of the spin-0 adjoint's fast path (adjoint0_step with FAST): sums of the first step
/// into (s1a, s2a), of the second into (s1b, s2b). Both recursion steps go first and the two
/// sets of sums are interleaved, so that eight accumulators instead of four are in flight (ncu
/// at nside 1024: fixed-latency dependencies were the first stall, 36-45% of the fast loops'
/// samples, each sum being a chain of K dependent FMAs). Measured on the H200 (session 7, same
/// call): 22.36 / 3.261 -> 22.11 / 3.232 ms at nside 2048 / 1024. The same for the spin-2
/// adjoint's degrees spilled at its register cap and ran slower (90.39 / 12.39 against 86.42 /
/// 11.81 ms), so it takes single degrees.
template <int P, int NC, int K>
__device__ __forceinline__ void adjoint0_pair(double2 ab0, double2 ab1, const double (&x2)[P],
                                              double (&v0)[P], double (&v1)[P],
                                              const cplx (&E)[P][NC], const cplx (&X)[P][NC],
                                              cplx (&s1a)[NC], cplx (&s2a)[NC], cplx (&s1b)[NC],
                                              cplx (&s2b)[NC]) {
#pragma unroll
  for (int c = 0; c < NC; ++c) s1a[c] = s2a[c] = s1b[c] = s2b[c] = {0.0, 0.0};
#pragma unroll
  for (int k = 0; k < K; ++k) odd_step(ab0, x2[k], v0[k], v1[k]);
#pragma unroll
  for (int k = 0; k < K; ++k) odd_step(ab1, x2[k], v0[k], v1[k]);
  // v0: mu of the first step, v1: of the second.
#pragma unroll
  for (int k = 0; k < K; ++k) {
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      s1a[c].re = fma(v0[k], E[k][c].re, s1a[c].re);
      s1b[c].re = fma(v1[k], E[k][c].re, s1b[c].re);
      s1a[c].im = fma(v0[k], E[k][c].im, s1a[c].im);
      s1b[c].im = fma(v1[k], E[k][c].im, s1b[c].im);
      s2a[c].re = fma(v0[k], X[k][c].re, s2a[c].re);
      s2b[c].re = fma(v1[k], X[k][c].re, s2b[c].re);
      s2a[c].im = fma(v0[k], X[k][c].im, s2a[c].im);
      s2b[c].im = fma(v1[k], X[k][c].im, s2b[c].im);
    }
  }
}

/// Starts the thread's P odd chains of the tile at `tile` for mode m and loads their ring data
/// per column: E = F_N + F_S and X = x (F_N - F_S).
template <int P, int NC, bool TAB>
__device__ __forceinline__ void adjoint0_tile(const AdjointArgs& a, int m, double nu, int tile,
                                              int tile_end, int col0, int ncv, double (&x2)[P],
                                              double (&v0)[P], double (&v1)[P], int (&e)[P],
                                              cplx (&E)[P][NC], cplx (&X)[P][NC]) {
  const int lmax = a.lmax;
  const int R = 4 * a.nside - 1;
  const std::size_t fstride = static_cast<std::size_t>(R) * (lmax + 1);
  auto Fget = [&](int c, int ring) -> cplx {
    return a.F[static_cast<std::size_t>(col0 + c) * fstride +
               static_cast<std::size_t>(ring) * (lmax + 1) + m];
  };
  const int kc = tile_chains(tile_end - tile);
#pragma unroll
  for (int k = 0; k < P; ++k) {
    const int i = chain_index(tile, kc, k);
    const int p = k < kc && i < tile_end ? a.active[i] : -1;
    double x;
    const bool on = start_odd_chain<TAB>(a, m, nu, i - a.first_active[m], p, x, x2[k], v0[k],
                                         v1[k], e[k]);
    if (TAB && a.skip_c0 && on) {  // the chain at the tile's first live chunk (skip table)
      const long long t = a.soff[m] + i - a.first_active[m];
      v0[k] = a.skip_v0[t];
      v1[k] = a.skip_v1[t];
      e[k] = a.skip_e[t];
    }
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      const bool cv = on && c < ncv;
      cplx N = {0, 0}, S = {0, 0};
      if (cv && a.spectra && p >= a.nside - 1) {
        unaliased_belt_pair(a, col0 + c, p, m, N, S);
      } else if (cv && a.polar_spectra && p < a.nside - 1) {
        unaliased_polar_pair(a, col0 + c, p, m, N, S);
      } else if (cv) {
        N = Fget(c, p);
        if (R - 1 - p != p) S = Fget(c, R - 1 - p);
      }
      E[k][c] = {N.re + S.re, N.im + S.im};
      X[k][c] = {x * (N.re - S.re), x * (N.im - S.im)};
    }
  }
}

/// Starts a tile of the spin-0 adjoint (adjoint0_tile) and stages the KA step coefficients of
/// its first chunk ch0 (0, or the first live one of the skip table) into buffer ch0 & 1 once the
/// previous tile's reductions are done.
template <int P, int NC, int KA, bool TAB>
__device__ __forceinline__ void adjoint0_begin_tile(const AdjointArgs& a, int m, double nu,
                                                    int tile, int tile_end, int col0, int ncv,
                                                    long long ko, int ch0, int nchunk,
                                                    double (&x2)[P], double (&v0)[P],
                                                    double (&v1)[P], int (&e)[P],
                                                    cplx (&E)[P][NC], cplx (&X)[P][NC],
                                                    double2 (&s_ab)[2][KA]) {
  adjoint0_tile<P, NC, TAB>(a, m, nu, tile, tile_end, col0, ncv, x2, v0, v1, e, E, X);
  __syncthreads();  // the previous tile's reductions are done
  if (threadIdx.x < KA && ch0 < nchunk)
    s_ab[ch0 & 1][threadIdx.x] = a.ab[ko + ch0 * KA + threadIdx.x];
  __syncthreads();
}

/// One odd-chain step of the spin-0 adjoint for the thread's first K of P chains and the sums S1 = sum mu E,
/// S2 = sum mu X per column. FAST: every chain of the warp counts (no scale selects).
template <int P, int NC, int K, bool FAST>
__device__ __forceinline__ void adjoint0_step(double2 ab, const double (&x2)[P],
                                              double (&v0)[P], double (&v1)[P],
                                              const int (&e)[P], const cplx (&E)[P][NC],
                                              const cplx (&X)[P][NC], cplx (&s1)[NC],
                                              cplx (&s2)[NC]) {
#pragma unroll
  for (int c = 0; c < NC; ++c) s1[c] = s2[c] = {0.0, 0.0};
#pragma unroll
  for (int k = 0; k < K; ++k) {
    odd_step(ab, x2[k], v0[k], v1[k]);
    const double mu = (FAST || e[k] == 0) ? v1[k] : 0.0;
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      s1[c].re = fma(mu, E[k][c].re, s1[c].re);
      s1[c].im = fma(mu, E[k][c].im, s1[c].im);
      s2[c].re = fma(mu, X[k][c].re, s2[c].re);
      s2[c].im = fma(mu, X[k][c].im, s2[c].im);
    }
  }
}

/// Zeroes the spin-0 adjoint sums of a mode that no ring pair reaches.
template <int NC>
__device__ __forceinline__ void adjoint0_zero(const LegendreArgs& a, int m, int col0, int ncv) {
  const long long total = a.koff[a.lmax + 1];
  for (long long t = a.koff[m] + threadIdx.x; t < a.koff[m + 1]; t += kThreads)
    for (int c = 0; c < ncv; ++c) {
      a.W[2 * (static_cast<std::size_t>(col0 + c) * total + t)] = {0.0, 0.0};
      a.W[2 * (static_cast<std::size_t>(col0 + c) * total + t) + 1] = {0.0, 0.0};
    }
}

/// Spin-2 adjoint, shared-memory reduction: per chunk of LC degrees (16 outputs) every thread
/// writes its sums into one of two buffers; chunk c's block sums (8 threads per output) are read
/// while chunk c + 1 is computed, as in the spin-0 kernel; one barrier per chunk.
template <int P, int NC, int MINB>
__global__ void __launch_bounds__(kThreads, MINB) k_adjoint_spin2(AdjointArgs a) {
  constexpr int NCOMP = 2;
  constexpr int NCC = NC * NCOMP;
  constexpr int LC = 16 / NCC;  // l values per reduction chunk
  static_assert(LC >= 2 && LC % 2 == 0, "chunk");
  static_assert(LC * NCC == 16, "16 outputs per chunk");
  constexpr int RPS = (kThreads / 8 + LC - 1) / LC;  // partials read per degree
  const int m = blockIdx.x;
  const int col0 = blockIdx.y * NC;
  const int lmax = a.lmax;
  const std::size_t nalm = static_cast<std::size_t>(lmax + 1) * (lmax + 2) / 2;
  const std::size_t mst = static_cast<std::size_t>(m) * (2 * lmax + 1 - m) / 2;
  __shared__ double s_a[2][LC], s_b[2][LC], s_g[2][LC];
  __shared__ __align__(16) cplx s_prev[16];  // the chunk's outputs as earlier tiles left them
  extern __shared__ cplx red_buffers[];  // [2][16][kThreads]
  const int l0 = l0_of(2, m);
  const bool swap = ((l0 - m) & 1) != 0;
  const int fa = a.first_active[m];
  const double nu = a.nu[m];
  const int sub = threadIdx.x & 7, out = threadIdx.x >> 3;  // 16 outputs x 8 threads
  const int cc_out = out % NCC;
  const bool col_ok = col0 + cc_out / NCOMP < a.ncols;
  // This thread's output in the chunk starting at degree lc (written by sub 0 of its group).
  auto l_out_of = [&](int lc) { return lc + out / NCC; };
  auto dst_of = [&](int lc) {
    return a.alm + (static_cast<std::size_t>(col0) * NCOMP + cc_out) * nalm + mst + l_out_of(lc);
  };
  auto buffer = [&](int ch) {
    return reinterpret_cast<cplx (*)[kThreads]>(red_buffers + (ch & 1) * 16 * kThreads);
  };
  // Block sum s of the output at degree lc + out / NCC (times i at odd degrees from l0: see
  // adjoint2_degree), with lambda_l = N_l mu_l (nl), added to what earlier tiles left (s_prev,
  // fetched by the writer).
  const bool odd_out = ((out / NCC) & 1) != 0;  // lc - l0 is a multiple of LC (even)
  auto store = [&](int lc, double nl, const cplx& s0, bool first_tile) {
    if (sub == 0 && l_out_of(lc) <= lmax && col_ok) {
      const cplx s = odd_out ? cplx{-s0.im, s0.re} : s0;
      const cplx prev = first_tile ? cplx{0.0, 0.0} : s_prev[out];
      *dst_of(lc) = {fma(nl, s.re, prev.re), m == 0 ? 0.0 : fma(nl, s.im, prev.im)};
    }
  };
  auto fetch_prev = [&](int lc, bool first_tile) {
    if (sub == 0 && l_out_of(lc) <= lmax && col_ok && !first_tile)
      cp_async16(&s_prev[out], dst_of(lc));
  };

  constexpr int kCap = kThreads * P;  // ring pairs per tile
  const int ntiles = mode_tile_count(a.nactive - fa, kCap);
  for (int t = 0; t < ntiles; ++t) {
    const int tile = fa + t * kCap;
    const int tile_end = min(tile + kCap, a.nactive);
    const bool first_tile = t == 0;
    double z[P], v0[P], v1[P], w0[P], w1[P];
    int e[P];
    cplx f[P][NC][4];  // QE QO UE UO
    // Coefficients and reduction buffers are double-buffered: chunk c sums into red[c & 1]
    // while the other buffer (chunk c - 1) is reduced.
    adjoint2_begin_tile<P, NC, LC>(a, m, nu, tile, tile_end, col0, swap, l0, mst, z, v0, v1, w0,
                                   w1, e, f, s_a, s_b, s_g);
    dispatch_chains<P>(tile_chains(tile_end - tile), [&](auto kc_) {
    constexpr int K = decltype(kc_)::value;  // chains per thread in this tile
    double nl_pend = 0.0;  // lambda_l / mu_l of the previous chunk's output
    int ch = 0;
    for (int lc = l0; lc <= lmax; lc += LC, ++ch) {
      const int bf = ch & 1;
      cplx (*red)[kThreads] = buffer(ch);
      const bool pend = ch > 0;  // the previous chunk's outputs are written in this one
      const cplx (*redp)[kThreads] = buffer(ch - 1);
      // Global reads of the chunk go to shared memory by cp.async (no registers held): the next
      // chunk's coefficients, and what earlier tiles left in the output this iteration writes.
      if (threadIdx.x < LC && lc + LC + static_cast<int>(threadIdx.x) <= lmax) {
        const std::size_t i = mst + lc + LC + threadIdx.x;
        cp_async8(&s_a[bf ^ 1][threadIdx.x], a.tabA + i);
        cp_async8(&s_b[bf ^ 1][threadIdx.x], a.tabB + i);
        cp_async8(&s_g[bf ^ 1][threadIdx.x], a.tabN + i);
      } else if (threadIdx.x < LC) {  // degrees above lmax: zeros (as adjoint2_coef gives)
        s_a[bf ^ 1][threadIdx.x] = s_b[bf ^ 1][threadIdx.x] = s_g[bf ^ 1][threadIdx.x] = 0.0;
      }
      if (pend) fetch_prev(lc - LC, first_tile);
      cp_async_commit();
      const double nl_out = s_g[bf][out / NCC];  // lambda_l = N_l mu_l of this thread's output
      cplx h = {0.0, 0.0};  // the previous chunk's partial sum (one chain, spread over degrees)
      // Unconditional (no branch in the degree's code); the sum is used only if pend.
      auto read_partials = [&](int li) { add_partials<RPS>(redp, out, sub, li, h); };
      if (warp_all_scaled_in(e)) {
        // Fast path (see the synthesis): no scale selects, no rescale checks.
        double al = s_a[bf][0], be = s_b[bf][0];
#pragma unroll
        for (int li = 0; li < LC; ++li) {
          const int ln = li + 1 < LC ? li + 1 : li;
          const double al_n = s_a[bf][ln], be_n = s_b[bf][ln];  // one degree ahead
          cplx sum[NCC];
          adjoint2_degree<P, NC, K>(true, li & 1, al, be, z, v0, v1, w0, w1, e, f, sum);
#pragma unroll
          for (int q = 0; q < NCC; ++q) red[li * NCC + q][threadIdx.x] = sum[q];
          read_partials(li);
          al = al_n;
          be = be_n;
        }
      } else {
#pragma unroll
        for (int li = 0; li < LC; ++li) {
          cplx sum[NCC];
          adjoint2_degree<P, NC, K>(false, li & 1, s_a[bf][li], s_b[bf][li], z, v0, v1, w0, w1,
                                    e, f, sum);
#pragma unroll
          for (int q = 0; q < NCC; ++q) red[li * NCC + q][threadIdx.x] = sum[q];
          read_partials(li);
          if ((li & 7) == 7 || li == LC - 1) {
#pragma unroll
            for (int k = 0; k < K; ++k) rescale2(e[k], v0[k], v1[k], w0[k], w1[k]);
          }
        }
      }
      cp_async_wait();
      if (pend) store(lc - LC, nl_pend, group_sum(h), first_tile);
      nl_pend = nl_out;
      __syncthreads();  // this chunk's sums are in red; the previous buffer is free again
    }
    if (ch > 0) {  // the tile's last chunk (complete: the loop ended on a barrier)
      const int lc = l0 + (ch - 1) * LC;
      fetch_prev(lc, first_tile);
      cp_async_commit();
      const cplx s = chunk_sum(buffer(ch - 1), out, sub);
      cp_async_wait();
      store(lc, nl_pend, s, first_tile);
      // The next tile's first chunk writes buffer 0 only after adjoint2_begin_tile's barriers.
    }
    });
  }
}

/// Spin-0 adjoint, shared-memory reduction: per chunk of KA steps (16 outputs) every thread
/// writes its sums into one of two buffers; chunk c's block sums (8 threads per output) are read
/// while chunk c + 1 is computed (16 / KA partials per step, in the same straight-line code as
/// the step's FMAs, so that the shared-memory loads and their adds fill the FP64 dependency
/// gaps), then finished (shuffles, earlier tiles' value, store) before the chunk's one barrier.
/// Measured on the H200 against the block sums after a barrier of their own (two per chunk):
/// 23.2 / 3.43 ms against 24.0 / 3.55 at nside 2048 / 1024 (docs/benchmarks.md).
template <int P, int NC, int MINB, bool TAB>
__global__ void __launch_bounds__(kThreads, MINB) k_adjoint_spin0(AdjointArgs a) {
  constexpr int KA = 8 / NC;  // steps per reduction chunk: 2 NC outputs each, 16 in all
  static_assert(KA >= 1 && 16 % (2 * NC) == 0, "chunk");
  static_assert(NC != 1 || KA == kAdjSkipChunk, "the skip table's chunks are this shape's");
  constexpr int RPS = (kThreads / 8 + KA - 1) / KA;  // partials read per step
  const int m = blockIdx.x;
  const int col0 = blockIdx.y * NC;
  const int lmax = a.lmax;
  const long long ko = a.koff[m], total = a.koff[lmax + 1];
  const int nchunk = static_cast<int>((a.koff[m + 1] - ko) / KA);
  __shared__ double2 s_ab[2][KA];
  __shared__ __align__(16) cplx s_prev[16];  // the chunk's outputs as earlier tiles left them
  extern __shared__ cplx red_buffer[];  // [2][16][kThreads] (kRedBytes each)
  const int fa = a.first_active[m];
  const double nu = a.nu[m];
  const int ncv = min(NC, a.ncols - col0);
  const int sub = threadIdx.x & 7, out = threadIdx.x >> 3;  // 16 outputs x 8 threads
  const int okk = out / (2 * NC), oc = (out % (2 * NC)) >> 1, which = out & 1;
  const bool writer = sub == 0 && oc < ncv;
  // This thread's output of chunk ch (written by sub 0 of its group).
  auto dst_of = [&](int ch) {
    return a.W + 2 * (static_cast<std::size_t>(col0 + oc) * total + ko + ch * KA + okk) + which;
  };
  auto buffer = [&](int ch) {
    return reinterpret_cast<cplx (*)[kThreads]>(red_buffer + (ch & 1) * 16 * kThreads);
  };

  if (fa >= a.nactive) {  // no ring pair reaches this mode: its sums are zero
    adjoint0_zero<NC>(a, m, col0, ncv);
    if (a.finish_in_block) {
      __syncthreads();
      for (int c = 0; c < ncv; ++c) obasis_finish_mode(a, m, col0 + c);
    }
    return;
  }
  constexpr int kCap = kThreads * P;  // ring pairs per tile
  const int ntiles = mode_tile_count(a.nactive - fa, kCap);
  for (int t = 0; t < ntiles; ++t) {
    const int tile = fa + t * kCap;
    const int tile_end = min(tile + kCap, a.nactive);
    const bool first_tile = t == 0;
    double x2[P], v0[P], v1[P];
    int e[P];
    cplx E[P][NC], X[P][NC];  // F_N + F_S and x (F_N - F_S)
    // Leading chunks of the tile in which every chain is dead (skip table): not run; the first
    // tile writes their outputs as zeros.
    const int ch0 = TAB && a.skip_c0 ? min(a.skip_c0[m * a.skip_ntiles + t], nchunk) : 0;
    if (writer && first_tile)
      for (int c = 0; c < ch0; ++c) *dst_of(c) = {0.0, 0.0};
    adjoint0_begin_tile<P, NC, KA, TAB>(a, m, nu, tile, tile_end, col0, ncv, ko, ch0, nchunk, x2,
                                        v0, v1, e, E, X, s_ab);
    dispatch_chains<P>(tile_chains(tile_end - tile), [&](auto kc_) {
    constexpr int K = decltype(kc_)::value;  // chains per thread in this tile
    for (int ch = ch0; ch < nchunk; ++ch) {
      const int b = ch & 1;
      cplx (*red)[kThreads] = buffer(ch);
      // The block sums of the previous chunk are read in this one.
      const bool pend = ch > ch0;
      const int och = ch - 1;  // the chunk whose outputs this iteration writes
      const cplx (*redp)[kThreads] = buffer(och);
      // Global reads of the chunk go to shared memory by cp.async (no registers held): the next
      // chunk's coefficients, and what earlier tiles left in this thread's output (written by
      // sub 0); both are waited for before the outputs are written.
      if (threadIdx.x < KA && ch + 1 < nchunk)
        cp_async16(&s_ab[b ^ 1][threadIdx.x], a.ab + ko + (ch + 1) * KA + threadIdx.x);
      if (writer && !first_tile && pend) cp_async16(&s_prev[out], dst_of(och));
      cp_async_commit();
      cplx h = {0.0, 0.0};  // the previous chunk's partial sum (one chain, spread over steps)
      // The chunk's steps in one of two copies: every chain of the warp scaled in (no selects,
      // no rescale checks), or not. (One copy with a runtime flag kept the selects and their
      // predicates in every step: ~25 of ~100 instructions per step at K = 8, SASS of session 7.)
      auto steps = [&](auto fast_c) {
        constexpr bool FAST = decltype(fast_c)::value;
        if constexpr (FAST && KA % 2 == 0) {  // steps in pairs (adjoint0_pair)
#pragma unroll
          for (int kk = 0; kk < KA; kk += 2) {
            cplx s1a[NC], s2a[NC], s1b[NC], s2b[NC];
            adjoint0_pair<P, NC, K>(s_ab[b][kk], s_ab[b][kk + 1], x2, v0, v1, E, X, s1a, s2a,
                                    s1b, s2b);
#pragma unroll
            for (int c = 0; c < NC; ++c) {
              red[kk * 2 * NC + 2 * c][threadIdx.x] = s1a[c];
              red[kk * 2 * NC + 2 * c + 1][threadIdx.x] = s2a[c];
              red[(kk + 1) * 2 * NC + 2 * c][threadIdx.x] = s1b[c];
              red[(kk + 1) * 2 * NC + 2 * c + 1][threadIdx.x] = s2b[c];
            }
            add_partials<RPS>(redp, out, sub, kk, h);
            add_partials<RPS>(redp, out, sub, kk + 1, h);
          }
          return;
        }
        double2 ab = s_ab[b][0];
#pragma unroll
        for (int kk = 0; kk < KA; ++kk) {
          const double2 ab_next = s_ab[b][kk + 1 < KA ? kk + 1 : kk];  // one step ahead
          cplx s1[NC], s2[NC];
          adjoint0_step<P, NC, K, FAST>(ab, x2, v0, v1, e, E, X, s1, s2);
          ab = ab_next;
#pragma unroll
          for (int c = 0; c < NC; ++c) {
            red[kk * 2 * NC + 2 * c][threadIdx.x] = s1[c];
            red[kk * 2 * NC + 2 * c + 1][threadIdx.x] = s2[c];
          }
          // Unconditional (no branch in the step's code); the sum is used only if pend.
          add_partials<RPS>(redp, out, sub, kk, h);
          if constexpr (!FAST) {
            if ((kk & 3) == 3 || kk == KA - 1) {
#pragma unroll
              for (int k = 0; k < K; ++k) odd_rescale(e[k], v0[k], v1[k]);
            }
          }
        }
      };
      if (warp_all_scaled_in(e))
        steps(std::true_type{});
      else
        steps(std::false_type{});
      cp_async_wait();
      if (pend) {
        const cplx sum = group_sum(h);
        if (writer) {
          const cplx prev = first_tile ? cplx{0.0, 0.0} : s_prev[out];
          *dst_of(och) = {prev.re + sum.re, prev.im + sum.im};
        }
      }
      __syncthreads();  // this chunk's sums are in red; the previous buffer is free again
    }
    if (nchunk > ch0) {  // the tile's last chunk (complete: the loop ended on a barrier)
      const int lch = nchunk - 1;
      if (writer && !first_tile) cp_async16(&s_prev[out], dst_of(lch));
      cp_async_commit();
      const cplx sum = chunk_sum(buffer(lch), out, sub);
      cp_async_wait();
      if (writer) {
        const cplx prev = first_tile ? cplx{0.0, 0.0} : s_prev[out];
        *dst_of(lch) = {prev.re + sum.re, prev.im + sum.im};
      }
      // The next tile's first chunk writes buffer 0 only after adjoint0_begin_tile's barriers.
    }
    });
  }
  // The mode's alm from its sums (W, written by this block's last tile; a barrier makes them
  // visible to all its threads): the finish in the block's epilogue, where it overlaps other
  // blocks' recursion, instead of a kernel that reads the sums back after the whole grid.
  if (a.finish_in_block) {
    __syncthreads();
    for (int c = 0; c < ncv; ++c) obasis_finish_mode(a, m, col0 + c);
  }
}

/// The spin-0 adjoint's skip table (AdjointArgs::skip_c0 ...): a block per mode. Each chain
/// first runs from its start (the start table) until the chunk at whose start it is live
/// (chain_dead false); the tile's first live chunk is the least over its chains; each chain then
/// runs again to that chunk and stores its values and scale. The steps and the rescale checks
/// are those of k_adjoint_spin0 (after the 4th and 8th step of a chunk; no-ops at scale 0, so
/// that its fast copy, which has none, gives the same values), so the kernel continues exactly
/// where its own recursion would have been.
__global__ void k_adjoint_skip_table(AdjointArgs a, int* c0, double* sv0, double* sv1,
                                     short* se) {
  constexpr int KA = kAdjSkipChunk;  // steps per chunk of the single-column shape (NC = 1)
  constexpr int kCap = kThreads * kAdjSkipPairs;
  static_assert(kThreads == 128, "adjoint_skip_tiles assumes 128 threads");
  __shared__ int s_c0[kAdjSkipMaxTiles];
  const int m = blockIdx.x;
  const int fa = a.first_active[m];
  const long long ko = a.koff[m];
  const int nchunk = static_cast<int>((a.koff[m + 1] - ko) / KA);
  const int ntiles = a.skip_ntiles;
  for (int i = threadIdx.x; i < ntiles; i += blockDim.x) s_c0[i] = nchunk;
  __syncthreads();
  // Runs chain t (pair p) from its start over `chunks` chunks, or, with find_live, until the
  // first chunk at whose start it is live (nchunk if none); returns the chunks run.
  auto run = [&](long long t, int p, int chunks, bool find_live, double& v0, double& v1,
                 int& e) {
    const double x = a.pair_z[p];
    const double x2 = x * x;
    v0 = a.start_v[t];
    v1 = 0.0;
    e = a.start_e[t];
    int ch = 0;
    for (; ch < chunks; ++ch) {
      if (find_live && !chain_dead(e, v0, v1)) break;
      for (int kk = 0; kk < KA; ++kk) {
        odd_step(a.ab[ko + ch * KA + kk], x2, v0, v1);
        if ((kk & 3) == 3 || kk == KA - 1) odd_rescale(e, v0, v1);
      }
    }
    return ch;
  };
  for (int i = fa + threadIdx.x; i < a.nactive; i += blockDim.x) {
    const long long t = a.soff[m] + i - fa;
    double v0, v1;
    int e;
    const int own = run(t, a.active[i], nchunk, true, v0, v1, e);
    atomicMin(&s_c0[(i - fa) / kCap], own);
  }
  __syncthreads();
  for (int i = fa + threadIdx.x; i < a.nactive; i += blockDim.x) {
    const long long t = a.soff[m] + i - fa;
    double v0, v1;
    int e;
    run(t, a.active[i], s_c0[(i - fa) / kCap], false, v0, v1, e);
    sv0[t] = v0;
    sv1[t] = v1;
    se[t] = static_cast<short>(e);
  }
  for (int i = threadIdx.x; i < ntiles; i += blockDim.x)
    c0[static_cast<long long>(m) * ntiles + i] = s_c0[i];
}

/// Dynamic shared memory of the adjoint kernels: two reduction buffers of 16 outputs x kThreads,
/// 32 KB each (above the 48 KB default: prepare_legendre_kernels raises the limit).
constexpr int kRedBytes = 16 * kThreads * static_cast<int>(sizeof(cplx));

template <class K>
void allow_adjoint_smem(K kernel) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  2 * kRedBytes));
}

template <int P, int NC, int MINB = 1>
void launch_adj0_t(const AdjointArgs& a, cudaStream_t s) {
  dim3 grid(a.lmax + 1, (a.ncols + NC - 1) / NC);
  if (a.start_v)
    k_adjoint_spin0<P, NC, MINB, true><<<grid, kThreads, 2 * kRedBytes, s>>>(a);
  else
    k_adjoint_spin0<P, NC, MINB, false><<<grid, kThreads, 2 * kRedBytes, s>>>(a);
  CUDA_CHECK_LAUNCH();
}

template <int P, int NC, int MINB = 1>
void launch_adj2_t(const AdjointArgs& a, cudaStream_t s) {
  dim3 grid(a.lmax + 1, (a.ncols + NC - 1) / NC);
  k_adjoint_spin2<P, NC, MINB><<<grid, kThreads, 2 * kRedBytes, s>>>(a);
  CUDA_CHECK_LAUNCH();
}
}  // namespace

void prepare_legendre_kernels() {
  // Every adjoint shape that launch_legendre_adjoint takes (two reduction buffers each).
  allow_adjoint_smem(k_adjoint_spin2<4, 1, 3>);
  allow_adjoint_smem(k_adjoint_spin2<2, 1, 3>);
  for (auto k : {k_adjoint_spin0<2, 2, 1, true>, k_adjoint_spin0<4, 1, 1, true>,
                 k_adjoint_spin0<2, 1, 1, true>, k_adjoint_spin0<8, 1, 3, true>,
                 k_adjoint_spin0<2, 2, 1, false>, k_adjoint_spin0<4, 1, 1, false>,
                 k_adjoint_spin0<2, 1, 1, false>, k_adjoint_spin0<8, 1, 3, false>})
    allow_adjoint_smem(k);
}
/// Ring pairs per thread of the single-column adjoints from the environment (tuning on other
/// cards): ALMAGEST_SHT_ADJ_P (spin 0: 2, 4 or 8) and ALMAGEST_SHT_ADJ2_P (spin 2: 2 or 4); 0
/// when unset.
static int adjoint_pairs_override() {
  static const int v = pairs_override("ALMAGEST_SHT_ADJ_P");
  return v;
}
static int adjoint2_pairs_override() {
  static const int v = pairs_override("ALMAGEST_SHT_ADJ2_P");
  return v;
}
void launch_adjoint2_zero(const LegendreArgs& a, cudaStream_t s) {
  k_adjoint2_zero<<<dim3(a.lmax + 1, 2 * a.ncols), 64, 0, s>>>(a);
  CUDA_CHECK_LAUNCH();
}
void launch_adjoint_skip_table(const AdjointArgs& a, int* c0, double* v0, double* v1, short* e,
                               cudaStream_t s) {
  if (a.skip_ntiles > kAdjSkipMaxTiles)
    throw std::invalid_argument("adjoint skip table: more than kAdjSkipMaxTiles tiles per mode");
  k_adjoint_skip_table<<<a.lmax + 1, kThreads, 0, s>>>(a, c0, v0, v1, e);
  CUDA_CHECK_LAUNCH();
}
void launch_legendre_adjoint(const AdjointArgs& a, cudaStream_t s) {
  // The adjoint reduces over the block's threads for every step through shared memory, 16
  // outputs per barrier, so more ring pairs per thread mean less of that traffic per FP64
  // operation. Measured on the H200 (docs/benchmarks.md): batched columns go best two (spin 0)
  // or one (spin 2) per block with two pairs per thread; single spin-0 transforms take two pairs
  // while one tile of kThreads * 2 holds every pair (nside <= 128), eight above, register-capped
  // at three blocks per SM (nside 2048: 27.9 ms against 30.6 with six and 32.5 with four); single
  // spin-2 transforms four pairs, register-capped, where there are at least 1024 pairs (nside
  // 2048: 120 ms against 131 uncapped; six pairs at two blocks per SM measured slower: 99.5
  // against 98.3 ms).
  if (a.spin == 0) {
    const int po = adjoint_pairs_override();
    // The skip table describes the tiles of the kAdjSkipPairs shape only.
    AdjointArgs other = a;
    other.skip_c0 = nullptr;
    if (a.ncols >= 2)
      launch_adj0_t<2, 2>(other, s);
    else if (po == 4)
      launch_adj0_t<4, 1>(other, s);
    else if (po == 2 || (po == 0 && a.nactive <= kThreads * 2))
      launch_adj0_t<2, 1>(other, s);
    else
      launch_adj0_t<kAdjSkipPairs, 1, 3>(a, s);
    if (!a.finish_in_block) {
      k_obasis_finish<<<dim3(a.lmax + 1, a.ncols), 128, 0, s>>>(
          static_cast<const LegendreArgs&>(a));
      CUDA_CHECK_LAUNCH();
    }
  } else {
    const int po = adjoint2_pairs_override();
    if (a.ncols < 2 && (po == 4 || (po == 0 && a.nactive >= 2 * kThreads * 4)))
      launch_adj2_t<4, 1, 3>(a, s);
    else
      launch_adj2_t<2, 1, 3>(a, s);
  }
}

}  // namespace almagest::kernels::sht
