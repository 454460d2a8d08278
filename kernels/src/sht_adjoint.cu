// Device kernels of the SHT's Legendre adjoints (spin 0 in the odd-parity basis and spin 2,
// batched columns), with two cross-thread reductions: through shared memory (the measured
// default) and on the FP64 tensor cores (ALMAGEST_SHT_ADJ_REDUCE=tensor). Helpers shared with the
// synthesis are in sht_device.cuh; docs/sht.md describes both paths.
#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "cuda_check.cuh"
#include "sht_device.cuh"
#include "sht_kernels.cuh"

namespace almagest::kernels::sht {
namespace {

using namespace dev;

/// Output `out` of a reduction chunk (16 outputs x kThreads partial sums) summed over the
/// block: 8 threads per output (sub = 0..7) add 16 partials each in a fixed order, then a
/// fixed-order shuffle sum over the 8 (deterministic; every thread of the group gets it).
__device__ __forceinline__ cplx chunk_sum(const cplx (*red)[kThreads], int out, int sub) {
  cplx s = {0.0, 0.0};
#pragma unroll
  for (int t = 0; t < kThreads / 8; ++t) {
    const cplx v = red[out][sub + 8 * t];
    s.re += v.re;
    s.im += v.im;
  }
#pragma unroll
  for (int off = 4; off > 0; off >>= 1) {
    s.re += __shfl_xor_sync(0xffffffffu, s.re, off);
    s.im += __shfl_xor_sync(0xffffffffu, s.im, off);
  }
  return s;
}

/// D += A B on the FP64 tensor cores (mma m8n8k4): A 8x4 row-major (lane: row lane/4, column
/// lane%4), B 4x8 column-major (lane: row lane%4, column lane/4), D 8x8 (lane: row lane/4,
/// columns 2 (lane%4) and 2 (lane%4) + 1). Every lane of the warp must take part.
__device__ __forceinline__ void dmma884(double& d0, double& d1, double a, double b) {
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
      : "+d"(d0), "+d"(d1)
      : "d"(a), "d"(b));
}

/// Warp sums of eight per-lane values (slots 0..7) on the FP64 tensor cores, which take the
/// adjoints' cross-thread reduction off the shared-memory pipe: slot v goes in as B (one value per
/// lane) against A = the one-hot row v, so row v of D accumulates the sums over the eight quads
/// (lanes 4n..4n+3); total() adds a lane's two quads and the four lanes of its row. Products are
/// by exactly 1 and 0 and every sum runs in a fixed order: deterministic.
struct WarpSum8 {
  double d0, d1;
  __device__ __forceinline__ void clear() { d0 = d1 = 0.0; }
  __device__ __forceinline__ void add(int slot, double x) {
    dmma884(d0, d1, tc_select(static_cast<int>(threadIdx.x & 31), slot), x);
  }  /// The warp sum of slot lane/4 (the same value in the four lanes of a row).
  __device__ __forceinline__ double total() const {
    double s = d0 + d1;
    s += __shfl_xor_sync(0xffffffffu, s, 1);
    s += __shfl_xor_sync(0xffffffffu, s, 2);
    return s;
  }
};

constexpr int kWarps = kThreads / 32;

/// One step group of an adjoint reduction chunk: the TPS sums per step (slots) of SPG steps, eight
/// slots per WarpSum8. store() writes the warp totals as outputs o0 .. o0 + SPG TPS - 1 (output
/// s TPS + q for slot q of step s) into the warp's row of the chunk buffer.
template <int TPS>
struct AdjGroup {
  static constexpr int SPG = TPS >= 8 ? 1 : 8 / TPS;  // steps per group
  static constexpr int NS = TPS >= 8 ? TPS / 8 : 1;   // WarpSum8 per group
  static_assert(SPG * TPS == 8 * NS, "slots");
  WarpSum8 ws[NS];
  __device__ __forceinline__ void clear() {
#pragma unroll
    for (int i = 0; i < NS; ++i) ws[i].clear();
  }
  __device__ __forceinline__ void add(int step, int slot, double x) {
    const int f = step * TPS + slot;
    ws[f / 8].add(f % 8, x);
  }
  __device__ __forceinline__ void store(double* red, int o0) const {
    const int lane = static_cast<int>(threadIdx.x & 31);
#pragma unroll
    for (int i = 0; i < NS; ++i) {
      const double t = ws[i].total();
      if (tc_stores(lane)) red[o0 + 8 * i + tc_row(lane)] = t;
    }
  }
};

/// This thread's output of an adjoint chunk: the warp totals summed in a fixed order.
__device__ __forceinline__ double block_output(const double (*red)[kThreads]) {
  double s = red[0][threadIdx.x];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) s += red[w][threadIdx.x];
  return s;
}

/// alm from the adjoint's (S1, S2): a_{m+2k} = u_k S1_k + v_{k-1} S1_{k-1}, a_{m+2k+1} = N_k S2_k.
__global__ void k_obasis_finish(LegendreArgs a) {
  const int m = blockIdx.x, cc = blockIdx.y;
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

// ---------------------------------------------------------------------------------------------
// Legendre adjoints. Per step (spin 0: two degrees of the odd-parity basis; spin 2: one degree)
// each thread sums the contributions of its P ring pairs in registers; the sums are then reduced
// over the block and added to the block's own outputs (no atomics; fixed summation order). Two
// reductions: through shared memory (16 outputs per chunk; the measured default) and on the FP64
// tensor cores per warp, then through shared memory once per chunk of one output per thread
// (ALMAGEST_SHT_ADJ_REDUCE=tensor; docs/sht.md). The per-step work below is shared by both.

/// Starts the thread's P spin-2 chains of the tile at `tile` for mode m and loads their ring
/// data: per column Q and U as (F_N + F_S) / 2 and (F_N - F_S) / 2 (the 1/2 of W = (P + M) / 2,
/// X = (M - P) / 2 folded in), swapped where l0 - m is odd so that entries 0 and 2 (QE, UE) go
/// with the even degrees counted from l0.
template <int P, int NC>
__device__ __forceinline__ void adjoint2_tile(const LegendreArgs& a, int m, double nu, int tile,
                                              int col0, bool swap, double (&z)[P],
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
#pragma unroll
  for (int k = 0; k < P; ++k) {
    const int i = tile + k * kThreads + threadIdx.x;
    const int p = i < a.nactive ? a.active[i] : -1;
    const bool on = start_chain2(a, m, nu, p, z[k], v0[k], v1[k], w0[k], w1[k], e[k]);
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      const bool cv = on && col0 + c < a.ncols;
      const bool eq = R - 1 - p == p;
      const cplx qN = cv ? Fget(2 * c, p) : cplx{0, 0};
      const cplx qS = (cv && !eq) ? Fget(2 * c, R - 1 - p) : cplx{0, 0};
      const cplx uN = cv ? Fget(2 * c + 1, p) : cplx{0, 0};
      const cplx uS = (cv && !eq) ? Fget(2 * c + 1, R - 1 - p) : cplx{0, 0};
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
      f[k][c][0] = QE;
      f[k][c][1] = QO;
      f[k][c][2] = UE;
      f[k][c][3] = UO;
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
    const LegendreArgs& a, int m, double nu, int tile, int col0, bool swap, int l0,
    std::size_t mst, double (&z)[P], double (&v0)[P], double (&v1)[P], double (&w0)[P],
    double (&w1)[P], int (&e)[P], cplx (&f)[P][NC][4], double (&s_a)[2][LC],
    double (&s_b)[2][LC], double (&s_g)[2][LC]) {
  adjoint2_tile<P, NC>(a, m, nu, tile, col0, swap, z, v0, v1, w0, w1, e, f);
  __syncthreads();  // the previous tile's reductions are done
  if (threadIdx.x < LC)
    adjoint2_coef(a, mst, l0 + threadIdx.x, s_a[0][threadIdx.x], s_b[0][threadIdx.x],
                  s_g[0][threadIdx.x]);
  __syncthreads();
}

/// One degree of the spin-2 adjoint for the thread's P chains: the step (none at l0: `first`)
/// and the (bE, bB) sums per column of lambda^+ and lambda^- times the ring data of parity par
/// (relative to l0). fast: every chain of the warp counts (no scale selects).
template <int P, int NC>
__device__ __forceinline__ void adjoint2_degree(bool fast, bool first, int par, double al,
                                                double be, const double (&z)[P], double (&v0)[P],
                                                double (&v1)[P], double (&w0)[P],
                                                double (&w1)[P], const int (&e)[P],
                                                const cplx (&f)[P][NC][4], cplx (&sum)[2 * NC]) {
#pragma unroll
  for (int q = 0; q < 2 * NC; ++q) sum[q] = {0.0, 0.0};
#pragma unroll
  for (int k = 0; k < P; ++k) {
    if (!first) step2(al, be, z[k], v0[k], v1[k], w0[k], w1[k]);
    const double P_ = (fast || e[k] == 0) ? v1[k] : 0.0;
    const double M_ = (fast || e[k] == 0) ? w1[k] : 0.0;
    const double W = P_ + M_, X = M_ - P_;
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      // even: bE += -W QE - i X UO ; bB += i X QO - W UE
      // odd:  bE += -W QO - i X UE ; bB += i X QE - W UO
      const cplx A1 = f[k][c][par ? 1 : 0], A2 = f[k][c][par ? 2 : 3];
      const cplx A3 = f[k][c][par ? 0 : 1], A4 = f[k][c][par ? 3 : 2];
      sum[2 * c].re += -W * A1.re + X * A2.im;
      sum[2 * c].im += -W * A1.im - X * A2.re;
      sum[2 * c + 1].re += -X * A3.im - W * A4.re;
      sum[2 * c + 1].im += X * A3.re - W * A4.im;
    }
  }
}

/// Starts the thread's P odd chains of the tile at `tile` for mode m and loads their ring data
/// per column: E = F_N + F_S and X = x (F_N - F_S).
template <int P, int NC>
__device__ __forceinline__ void adjoint0_tile(const LegendreArgs& a, int m, double nu, int tile,
                                              int col0, int ncv, double (&x2)[P],
                                              double (&v0)[P], double (&v1)[P], int (&e)[P],
                                              cplx (&E)[P][NC], cplx (&X)[P][NC]) {
  const int lmax = a.lmax;
  const int R = 4 * a.nside - 1;
  const std::size_t fstride = static_cast<std::size_t>(R) * (lmax + 1);
  auto Fget = [&](int c, int ring) -> cplx {
    return a.F[static_cast<std::size_t>(col0 + c) * fstride +
               static_cast<std::size_t>(ring) * (lmax + 1) + m];
  };
#pragma unroll
  for (int k = 0; k < P; ++k) {
    const int i = tile + k * kThreads + threadIdx.x;
    const int p = i < a.nactive ? a.active[i] : -1;
    double x;
    const bool on = start_odd_chain(a, m, nu, p, x, x2[k], v0[k], v1[k], e[k]);
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      const bool cv = on && c < ncv;
      const cplx N = cv ? Fget(c, p) : cplx{0, 0};
      const cplx S = (cv && R - 1 - p != p) ? Fget(c, R - 1 - p) : cplx{0, 0};
      E[k][c] = {N.re + S.re, N.im + S.im};
      X[k][c] = {x * (N.re - S.re), x * (N.im - S.im)};
    }
  }
}

/// Starts a tile of the spin-0 adjoint (adjoint0_tile) and stages the first chunk's KA step
/// coefficients into buffer 0 once the previous tile's reductions are done.
template <int P, int NC, int KA>
__device__ __forceinline__ void adjoint0_begin_tile(const LegendreArgs& a, int m, double nu,
                                                    int tile, int col0, int ncv, long long ko,
                                                    double (&x2)[P], double (&v0)[P],
                                                    double (&v1)[P], int (&e)[P],
                                                    cplx (&E)[P][NC], cplx (&X)[P][NC],
                                                    double2 (&s_ab)[2][KA]) {
  adjoint0_tile<P, NC>(a, m, nu, tile, col0, ncv, x2, v0, v1, e, E, X);
  __syncthreads();  // the previous tile's reductions are done
  if (threadIdx.x < KA) s_ab[0][threadIdx.x] = a.ab[ko + threadIdx.x];
  __syncthreads();
}

/// One odd-chain step of the spin-0 adjoint for the thread's P chains and the sums S1 = sum mu E,
/// S2 = sum mu X per column. fast: every chain of the warp counts (no scale selects).
template <int P, int NC>
__device__ __forceinline__ void adjoint0_step(double2 ab, bool fast, const double (&x2)[P],
                                              double (&v0)[P], double (&v1)[P],
                                              const int (&e)[P], const cplx (&E)[P][NC],
                                              const cplx (&X)[P][NC], cplx (&s1)[NC],
                                              cplx (&s2)[NC]) {
#pragma unroll
  for (int c = 0; c < NC; ++c) s1[c] = s2[c] = {0.0, 0.0};
#pragma unroll
  for (int k = 0; k < P; ++k) {
    odd_step(ab, x2[k], v0[k], v1[k]);
    const double mu = (fast || e[k] == 0) ? v1[k] : 0.0;
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

// --- Reduction through shared memory (the measured default) ---------------------------------

/// Spin-2 adjoint, shared-memory reduction: per chunk of LC degrees (16 outputs) every thread
/// writes its sums, 8 threads per output add them (chunk_sum); with two buffers (NB = 2) one
/// barrier per chunk, else two.
template <int P, int NC, int MINB, int NB>
__global__ void __launch_bounds__(kThreads, MINB) k_adjoint_spin2(LegendreArgs a) {
  constexpr int NCOMP = 2;
  constexpr int NCC = NC * NCOMP;
  constexpr int LC = 16 / NCC;  // l values per reduction chunk
  static_assert(LC >= 2 && LC % 2 == 0, "chunk");
  static_assert(LC * NCC == 16, "16 outputs per chunk");
  const int m = blockIdx.x;
  const int col0 = blockIdx.y * NC;
  const int lmax = a.lmax;
  const std::size_t nalm = static_cast<std::size_t>(lmax + 1) * (lmax + 2) / 2;
  const std::size_t mst = static_cast<std::size_t>(m) * (2 * lmax + 1 - m) / 2;
  __shared__ double s_a[2][LC], s_b[2][LC], s_g[2][LC];
  extern __shared__ cplx red_buffers[];  // [NB][16][kThreads]: chunk c reduces from c % NB
  const int l0 = l0_of(2, m);
  const bool swap = ((l0 - m) & 1) != 0;
  const int fa = a.first_active[m];
  const double nu = a.nu[m];
  const int sub = threadIdx.x & 7, out = threadIdx.x >> 3;  // 16 outputs x 8 threads

  for (int tile = fa; tile < a.nactive; tile += kThreads * P) {
    double z[P], v0[P], v1[P], w0[P], w1[P];
    int e[P];
    cplx f[P][NC][4];  // QE QO UE UO
    // With two buffers (NB = 2) one barrier per chunk: chunk c sums into red[c & 1] and reduces
    // it after the barrier while the next chunk sums into the other buffer (one buffer: a second
    // barrier after the reduction); coefficients are double-buffered either way.
    adjoint2_begin_tile<P, NC, LC>(a, m, nu, tile, col0, swap, l0, mst, z, v0, v1, w0, w1, e, f,
                                   s_a, s_b, s_g);
    for (int lc = l0, ch = 0; lc <= lmax; lc += LC, ++ch) {
      const int bf = ch & 1;
      cplx (*red)[kThreads] =
          reinterpret_cast<cplx (*)[kThreads]>(red_buffers + (NB == 2 ? bf : 0) * 16 * kThreads);
      double na = 0, nb = 0, ng = 0;
      if (threadIdx.x < LC && lc + LC <= lmax) adjoint2_coef(a, mst, lc + LC + threadIdx.x, na, nb, ng);
      const double nl_out = s_g[bf][out / NCC];  // lambda_l = N_l mu_l of this thread's output
      if (lc != l0 && warp_all_scaled_in(e)) {
        // Fast path (see the synthesis): no scale selects, no rescale checks.
#pragma unroll
        for (int li = 0; li < LC; ++li) {
          cplx sum[NCC];
          adjoint2_degree<P, NC>(true, false, li & 1, s_a[bf][li], s_b[bf][li], z, v0, v1, w0, w1,
                                 e, f, sum);
#pragma unroll
          for (int q = 0; q < NCC; ++q) red[li * NCC + q][threadIdx.x] = sum[q];
        }
      } else {
#pragma unroll
        for (int li = 0; li < LC; ++li) {
          cplx sum[NCC];
          adjoint2_degree<P, NC>(false, lc + li == l0, li & 1, s_a[bf][li], s_b[bf][li], z, v0,
                                 v1, w0, w1, e, f, sum);
#pragma unroll
          for (int q = 0; q < NCC; ++q) red[li * NCC + q][threadIdx.x] = sum[q];
          if ((li & 7) == 7 || li == LC - 1) {
#pragma unroll
            for (int k = 0; k < P; ++k) rescale2(e[k], v0[k], v1[k], w0[k], w1[k]);
          }
        }
      }
      if (threadIdx.x < LC && lc + LC <= lmax) {
        s_a[bf ^ 1][threadIdx.x] = na;
        s_b[bf ^ 1][threadIdx.x] = nb;
        s_g[bf ^ 1][threadIdx.x] = ng;
      }
      __syncthreads();
      {
        const cplx s = chunk_sum(red, out, sub);
        const int l = lc + out / NCC, cc = out % NCC;
        if (sub == 0 && l <= lmax && col0 + cc / NCOMP < a.ncols) {
          cplx& dst = a.alm[(static_cast<std::size_t>(col0) * NCOMP + cc) * nalm + mst + l];
          dst.re += nl_out * s.re;
          dst.im = (m == 0) ? 0.0 : dst.im + nl_out * s.im;
        }
      }
      if (NB == 1) __syncthreads();  // red is free again
    }
  }
}

/// Spin-0 adjoint, shared-memory reduction: per chunk of KA steps (16 outputs) every thread
/// writes its sums, 8 threads per output add them (chunk_sum); two barriers per chunk (two
/// buffers measured no faster here, docs/benchmarks.md).
template <int P, int NC, int MINB>
__global__ void __launch_bounds__(kThreads, MINB) k_adjoint_spin0(LegendreArgs a) {
  constexpr int KA = 8 / NC;  // steps per reduction chunk: 2 NC outputs each, 16 in all
  static_assert(KA >= 1 && 16 % (2 * NC) == 0, "chunk");
  const int m = blockIdx.x;
  const int col0 = blockIdx.y * NC;
  const int lmax = a.lmax;
  const long long ko = a.koff[m], total = a.koff[lmax + 1];
  const int nchunk = static_cast<int>((a.koff[m + 1] - ko) / KA);
  __shared__ double2 s_ab[2][KA];
  extern __shared__ cplx red_buffer[];  // [16][kThreads] (kRedBytes)
  const int fa = a.first_active[m];
  const double nu = a.nu[m];
  const int ncv = min(NC, a.ncols - col0);
  const int sub = threadIdx.x & 7, out = threadIdx.x >> 3;  // 16 outputs x 8 threads

  if (fa >= a.nactive) {  // no ring pair reaches this mode: its sums are zero
    adjoint0_zero<NC>(a, m, col0, ncv);
    return;
  }
  for (int tile = fa; tile < a.nactive; tile += kThreads * P) {
    const bool first_tile = tile == fa;
    double x2[P], v0[P], v1[P];
    int e[P];
    cplx E[P][NC], X[P][NC];  // F_N + F_S and x (F_N - F_S)
    adjoint0_begin_tile<P, NC, KA>(a, m, nu, tile, col0, ncv, ko, x2, v0, v1, e, E, X, s_ab);
    for (int ch = 0; ch < nchunk; ++ch) {
      const int b = ch & 1;
      cplx (*red)[kThreads] = reinterpret_cast<cplx (*)[kThreads]>(red_buffer);
      double2 next = {0.0, 0.0};
      if (threadIdx.x < KA && ch + 1 < nchunk) next = a.ab[ko + (ch + 1) * KA + threadIdx.x];
      const bool fast = warp_all_scaled_in(e);
#pragma unroll
      for (int kk = 0; kk < KA; ++kk) {
        cplx s1[NC], s2[NC];
        adjoint0_step<P, NC>(s_ab[b][kk], fast, x2, v0, v1, e, E, X, s1, s2);
#pragma unroll
        for (int c = 0; c < NC; ++c) {
          red[kk * 2 * NC + 2 * c][threadIdx.x] = s1[c];
          red[kk * 2 * NC + 2 * c + 1][threadIdx.x] = s2[c];
        }
        if (!fast && (kk & 3) == 3) {
#pragma unroll
          for (int k = 0; k < P; ++k) odd_rescale(e[k], v0[k], v1[k]);
        }
      }
      if (!fast && (KA & 3) != 0) {
#pragma unroll
        for (int k = 0; k < P; ++k) odd_rescale(e[k], v0[k], v1[k]);
      }
      if (threadIdx.x < KA && ch + 1 < nchunk) s_ab[b ^ 1][threadIdx.x] = next;
      __syncthreads();
      const cplx sum = chunk_sum(red, out, sub);
      const int okk = out / (2 * NC), oc = (out % (2 * NC)) >> 1, which = out & 1;
      if (sub == 0 && oc < ncv) {
        cplx& dst = a.W[2 * (static_cast<std::size_t>(col0 + oc) * total + ko + ch * KA + okk) + which];
        if (first_tile) {
          dst = sum;
        } else {
          dst.re += sum.re;
          dst.im += sum.im;
        }
      }
      __syncthreads();  // red is free again
    }
  }
}

// --- Reduction on the FP64 tensor cores (ALMAGEST_SHT_ADJ_REDUCE=tensor) --------------------
// Each warp sums its lanes' step sums with DMMA (WarpSum8: 4:1 within quads in the tensor core,
// then two shuffles), 8 outputs per group; the warps' totals go to shared memory and are added
// once per chunk of one output per thread (one barrier per chunk). Shared-memory traffic per
// step drops from 64 bytes per thread to 2 bytes. Built and checked on the host (the lane
// layout: tests/identities/test_sht_device_math.cpp); not yet measured on a device.

/// Spin-2 adjoint, tensor-core reduction: chunks of LC = kThreads / (4 NC) degrees.
template <int P, int NC, int MINB>
__global__ void __launch_bounds__(kThreads, MINB) k_adjoint_spin2_tc(LegendreArgs a) {
  constexpr int NCOMP = 2;
  constexpr int NCC = NC * NCOMP;
  constexpr int TPS = 2 * NCC;        // sums per degree: (bE, bB) re, im per column
  constexpr int LC = kThreads / TPS;  // degrees per chunk
  using Group = AdjGroup<TPS>;
  constexpr int SPG = Group::SPG;
  constexpr int SPG2 = SPG > 2 ? SPG : 2;  // degrees per loop iteration (an even number)
  static_assert(LC % SPG2 == 0 && SPG2 % SPG == 0 && LC % 8 == 0, "chunk");
  const int m = blockIdx.x;
  const int col0 = blockIdx.y * NC;
  const int lmax = a.lmax;
  const std::size_t nalm = static_cast<std::size_t>(lmax + 1) * (lmax + 2) / 2;
  const std::size_t mst = static_cast<std::size_t>(m) * (2 * lmax + 1 - m) / 2;
  __shared__ double s_a[2][LC], s_b[2][LC], s_g[2][LC];
  __shared__ double s_red[2][kWarps][kThreads];
  const int l0 = l0_of(2, m);
  const bool swap = ((l0 - m) & 1) != 0;
  const int fa = a.first_active[m];
  const double nu = a.nu[m];
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  // This thread's output in each chunk: degree lc + oli, component row occ (2 c + E/B), re or im.
  const int oli = static_cast<int>(threadIdx.x) / TPS, oq = static_cast<int>(threadIdx.x) % TPS;
  const int occ = oq >> 1;

  for (int tile = fa; tile < a.nactive; tile += kThreads * P) {
    double z[P], v0[P], v1[P], w0[P], w1[P];
    int e[P];
    cplx f[P][NC][4];  // QE QO UE UO
    adjoint2_begin_tile<P, NC, LC>(a, m, nu, tile, col0, swap, l0, mst, z, v0, v1, w0, w1, e, f,
                                   s_a, s_b, s_g);
    for (int lc = l0, ch = 0; lc <= lmax; lc += LC, ++ch) {
      const int bf = ch & 1;
      // The next chunk's coefficients go straight to shared memory (zeros above lmax stay from
      // the clearing below); buffer bf ^ 1 was last read before the previous barrier.
      if (threadIdx.x < LC) {
        const int l = lc + LC + static_cast<int>(threadIdx.x);
        if (l <= lmax) {
          cp_async8(&s_a[bf ^ 1][threadIdx.x], a.tabA + mst + l);
          cp_async8(&s_b[bf ^ 1][threadIdx.x], a.tabB + mst + l);
          cp_async8(&s_g[bf ^ 1][threadIdx.x], a.tabN + mst + l);
        } else {
          s_a[bf ^ 1][threadIdx.x] = s_b[bf ^ 1][threadIdx.x] = s_g[bf ^ 1][threadIdx.x] = 0.0;
        }
      }
      cp_async_commit();
      const double nl_out = s_g[bf][oli];  // read now: the buffer is reloaded during the next chunk
      const bool fast = lc != l0 && warp_all_scaled_in(e);
      // Degrees in pairs (even, odd from l0), so that the parity is known at compile time.
#pragma unroll 1
      for (int g = 0; g < LC; g += SPG2) {
#pragma unroll
        for (int h = 0; h < SPG2; h += SPG) {
          Group grp;
          grp.clear();
#pragma unroll
          for (int s = 0; s < SPG; ++s) {
            const int li = g + h + s;
            cplx sum[NCC];
            if (fast)
              adjoint2_degree<P, NC>(true, false, (h + s) & 1, s_a[bf][li], s_b[bf][li], z, v0,
                                     v1, w0, w1, e, f, sum);
            else
              adjoint2_degree<P, NC>(false, lc + li == l0, (h + s) & 1, s_a[bf][li], s_b[bf][li],
                                     z, v0, v1, w0, w1, e, f, sum);
#pragma unroll
            for (int q = 0; q < NCC; ++q) {
              grp.add(s, 2 * q, sum[q].re);
              grp.add(s, 2 * q + 1, sum[q].im);
            }
            if (!fast && (li & 7) == 7) {
#pragma unroll
              for (int k = 0; k < P; ++k) rescale2(e[k], v0[k], v1[k], w0[k], w1[k]);
            }
          }
          grp.store(s_red[bf][warp], (g + h) * TPS);
        }
      }
      cp_async_wait();
      __syncthreads();  // one barrier per chunk: s_red[bf] is rewritten two chunks later
      const double s = block_output(s_red[bf]);
      const int l = lc + oli;
      if (l <= lmax && col0 + occ / NCOMP < a.ncols) {
        cplx& dst = a.alm[(static_cast<std::size_t>(col0) * NCOMP + occ) * nalm + mst + l];
        if ((oq & 1) == 0)
          dst.re += nl_out * s;
        else
          dst.im = (m == 0) ? 0.0 : dst.im + nl_out * s;
      }
    }
  }
}

/// Spin-0 adjoint, tensor-core reduction: chunks of KA = kThreads / (4 NC) steps.
template <int P, int NC, int MINB>
__global__ void __launch_bounds__(kThreads, MINB) k_adjoint_spin0_tc(LegendreArgs a) {
  constexpr int TPS = 4 * NC;         // sums per step: (S1, S2) re, im per column
  constexpr int KA = kThreads / TPS;  // steps per chunk
  using Group = AdjGroup<TPS>;
  constexpr int SPG = Group::SPG;
  static_assert(kObasisChunk % KA == 0 && KA % SPG == 0 && KA % 4 == 0, "chunk");
  const int m = blockIdx.x;
  const int col0 = blockIdx.y * NC;
  const int lmax = a.lmax;
  const long long ko = a.koff[m], total = a.koff[lmax + 1];
  const int nchunk = static_cast<int>((a.koff[m + 1] - ko) / KA);
  __shared__ double2 s_ab[2][KA];
  __shared__ double s_red[2][kWarps][kThreads];
  const int fa = a.first_active[m];
  const double nu = a.nu[m];
  const int ncv = min(NC, a.ncols - col0);
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  // This thread's output in each chunk: step okk, column oc, (S1, S2) x (re, im) as oq & 3.
  const int okk = static_cast<int>(threadIdx.x) / TPS, oq = static_cast<int>(threadIdx.x) % TPS;
  const int oc = oq >> 2;
  double* Wd = reinterpret_cast<double*>(a.W);  // [ncols][total][4]

  if (fa >= a.nactive) {  // no ring pair reaches this mode: its sums are zero
    adjoint0_zero<NC>(a, m, col0, ncv);
    return;
  }
  for (int tile = fa; tile < a.nactive; tile += kThreads * P) {
    const bool first_tile = tile == fa;
    double x2[P], v0[P], v1[P];
    int e[P];
    cplx E[P][NC], X[P][NC];  // F_N + F_S and x (F_N - F_S)
    adjoint0_begin_tile<P, NC, KA>(a, m, nu, tile, col0, ncv, ko, x2, v0, v1, e, E, X, s_ab);
    for (int ch = 0; ch < nchunk; ++ch) {
      const int b = ch & 1;
      // The next chunk's coefficients go straight to shared memory (no registers held over the
      // chunk); buffer b ^ 1 was last read before the previous barrier.
      if (threadIdx.x < KA && ch + 1 < nchunk)
        cp_async16(&s_ab[b ^ 1][threadIdx.x], a.ab + ko + (ch + 1) * KA + threadIdx.x);
      cp_async_commit();
      const bool fast = warp_all_scaled_in(e);
#pragma unroll 1
      for (int g = 0; g < KA; g += SPG) {
        Group grp;
        grp.clear();
#pragma unroll
        for (int s = 0; s < SPG; ++s) {
          const int kk = g + s;
          cplx s1[NC], s2[NC];
          adjoint0_step<P, NC>(s_ab[b][kk], fast, x2, v0, v1, e, E, X, s1, s2);
#pragma unroll
          for (int c = 0; c < NC; ++c) {
            grp.add(s, 4 * c, s1[c].re);
            grp.add(s, 4 * c + 1, s1[c].im);
            grp.add(s, 4 * c + 2, s2[c].re);
            grp.add(s, 4 * c + 3, s2[c].im);
          }
          if (!fast && (kk & 3) == 3) {
#pragma unroll
            for (int k = 0; k < P; ++k) odd_rescale(e[k], v0[k], v1[k]);
          }
        }
        grp.store(s_red[b][warp], g * TPS);
      }
      cp_async_wait();
      __syncthreads();  // one barrier per chunk: s_red[b] is rewritten two chunks later
      const double sum = block_output(s_red[b]);
      if (oc < ncv) {
        double& dst =
            Wd[4 * (static_cast<std::size_t>(col0 + oc) * total + ko + ch * KA + okk) + (oq & 3)];
        dst = first_tile ? sum : dst + sum;
      }
    }
  }
}

/// Dynamic shared memory of the shared-memory adjoint kernels: reduction buffers of 16 outputs x
/// kThreads, 32 KB each (the spin-2 kernel with two is above the 48 KB default:
/// prepare_legendre_kernels raises its limit).
constexpr int kRedBytes = 16 * kThreads * static_cast<int>(sizeof(cplx));

template <class K>
void allow_adjoint_smem(K kernel) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  2 * kRedBytes));
}

template <int P, int NC, int MINB = 1>
void launch_adj0_t(const LegendreArgs& a, bool tensor, cudaStream_t s) {
  dim3 grid(a.lmax + 1, (a.ncols + NC - 1) / NC);
  if (tensor)
    k_adjoint_spin0_tc<P, NC, MINB><<<grid, kThreads, 0, s>>>(a);
  else
    k_adjoint_spin0<P, NC, MINB><<<grid, kThreads, kRedBytes, s>>>(a);
  CUDA_CHECK_LAUNCH();
}

template <int P, int NC, int MINB = 1, int NB = 1>
void launch_adj2_t(const LegendreArgs& a, bool tensor, cudaStream_t s) {
  dim3 grid(a.lmax + 1, (a.ncols + NC - 1) / NC);
  if (tensor)
    k_adjoint_spin2_tc<P, NC, MINB><<<grid, kThreads, 0, s>>>(a);
  else
    k_adjoint_spin2<P, NC, MINB, NB><<<grid, kThreads, NB * kRedBytes, s>>>(a);
  CUDA_CHECK_LAUNCH();
}
}  // namespace

void prepare_legendre_kernels() {
  // The only kernel above the 48 KB default: two reduction buffers.
  allow_adjoint_smem(k_adjoint_spin2<4, 1, 3, 2>);
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
/// ALMAGEST_SHT_ADJ_REDUCE=tensor: the adjoints' warp sums on the FP64 tensor cores.
static bool adjoint_tensor_reduce() {
  static const bool v = [] {
    const char* e = std::getenv("ALMAGEST_SHT_ADJ_REDUCE");
    return e && std::string_view(e) == "tensor";
  }();
  return v;
}

void launch_legendre_adjoint(const LegendreArgs& a, cudaStream_t s) {
  // The adjoint reduces over the block's threads for every step through shared memory, 16
  // outputs per barrier, so more ring pairs per thread mean less of that traffic per FP64
  // operation. Measured on the H200 (docs/benchmarks.md): batched columns go best two (spin 0)
  // or one (spin 2) per block with two pairs per thread; single spin-0 transforms take two pairs
  // while one tile of kThreads * 2 holds every pair (nside <= 128), eight above, register-capped
  // at three blocks per SM (nside 2048: 27.9 ms against 30.6 with six and 32.5 with four); single
  // spin-2 transforms four pairs, register-capped, with two reduction buffers (one barrier per
  // chunk) where there are at least 1024 pairs (nside 2048: 120 ms against 125 with one buffer
  // and 131 uncapped).
  // ALMAGEST_SHT_ADJ_REDUCE=tensor sums over each warp on the FP64 tensor cores instead (same
  // shapes; not yet measured, docs/sht.md).
  const bool tc = adjoint_tensor_reduce();
  if (a.spin == 0) {
    const int po = adjoint_pairs_override();
    if (a.ncols >= 2)
      launch_adj0_t<2, 2>(a, tc, s);
    else if (po == 4)
      launch_adj0_t<4, 1>(a, tc, s);
    else if (po == 2 || (po == 0 && a.nactive <= kThreads * 2))
      launch_adj0_t<2, 1>(a, tc, s);
    else
      launch_adj0_t<8, 1, 3>(a, tc, s);
    k_obasis_finish<<<dim3(a.lmax + 1, a.ncols), 128, 0, s>>>(a);
    CUDA_CHECK_LAUNCH();
  } else {
    const int po = adjoint2_pairs_override();
    if (a.ncols < 2 && (po == 4 || (po == 0 && a.nactive >= 2 * kThreads * 4)))
      launch_adj2_t<4, 1, 3, 2>(a, tc, s);
    else  // two buffers measured no faster here (nside 128: 0.1117 against 0.1118 ms)
      launch_adj2_t<2, 1>(a, tc, s);
  }
}

}  // namespace almagest::kernels::sht
