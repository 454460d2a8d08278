// Device kernels of the SHT: Legendre stage (synthesis and adjoint, spin 0 and 2, batched
// columns), the aliasing / Bluestein glue around cuFFT, and map gather/scatter.
// The math is in sht_math.cuh (checked against healpix_cxx by a host twin, see docs/sht.md).
#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "cuda_check.cuh"
#include "sht_kernels.cuh"

namespace almagest::kernels::sht {
namespace {

constexpr int kThreads = 128;
constexpr double kBig = 0x1p300;     // rescale when a scaled value grows past this
constexpr double kDown = 0x1p-600;   // 2^-kScaleBits

__device__ __forceinline__ cplx cmul(cplx a, cplx b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
__device__ __forceinline__ cplx conjc(cplx a) { return {a.re, -a.im}; }

/// e^{i pi t^2 / N}, argument reduced exactly in integers.
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

__device__ __forceinline__ int ring_of_pixel(int nside, long long p) {
  const long long ncap = 2LL * nside * (nside - 1), npix = 12LL * nside * nside;
  if (p < ncap) {
    long long i = static_cast<long long>(0.5 * (1.0 + sqrt(1.0 + 2.0 * p)));
    while (2 * i * (i - 1) > p) --i;
    while (2 * (i + 1) * i <= p) ++i;
    return static_cast<int>(i - 1);
  }
  if (p < npix - ncap) return static_cast<int>((p - ncap) / (4LL * nside) + nside - 1);
  const long long pp = npix - 1 - p;
  long long i = static_cast<long long>(0.5 * (1.0 + sqrt(1.0 + 2.0 * pp)));
  while (2 * i * (i - 1) > pp) --i;
  while (2 * (i + 1) * i <= pp) ++i;
  return static_cast<int>(4LL * nside - 1 - i);
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

__device__ __forceinline__ RingPair pair_geometry(int nside, int p) {
  const RingInfo g = ring_info(nside, p);
  return {g.z, g.omz, 1.0 + g.z, g.sth};
}

/// One step of the two spin-2 chains mu_l = (A z -+ B) mu_{l-1} - mu_{l-2} (two FMAs each).
__device__ __forceinline__ void step2(double al, double be, double z, double& v0, double& v1,
                                      double& w0, double& w1) {
  const double vn = fma(fma(al, z, -be), v1, -v0);
  const double wn = fma(fma(al, z, be), w1, -w0);
  v0 = v1;
  v1 = vn;
  w0 = w1;
  w1 = wn;
}

/// Scale tracking, checked every few steps (growth between checks stays far below 2^700).
__device__ __forceinline__ void rescale2(int& e, double& v0, double& v1, double& w0, double& w1) {
  if (e < 0 && fmax(fabs(v1), fabs(w1)) > kBig) {
    v1 *= kDown;
    v0 *= kDown;
    w1 *= kDown;
    w0 *= kDown;
    ++e;
  }
}

/// Starts the two spin-2 chains of ring pair p (-1: none) for mode m: z, the first values and
/// the scale. Returns whether the chains' output counts; chains that do not (no pair, or m above
/// the pair's mlim) run on zeros at scale 0, so that they never keep their warp off the fast path.
__device__ __forceinline__ bool start_chain2(const LegendreArgs& a, int m, double nu, int p,
                                             double& z, double& v0, double& v1, double& w0,
                                             double& w1, int& e) {
  const bool on = p >= 0 && m <= a.mlim[p];
  const RingPair g = pair_geometry(a.nside, p >= 0 ? p : 0);
  z = g.z;
  v0 = w0 = 0.0;
  start_spin2(m, nu, g, v1, w1, e);
  if (!on) {
    v1 = w1 = 0.0;
    e = 0;
  }
  return on;
}

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

/// True when every chain of every lane of the warp is at scale 0 (its values count); once true
/// it stays true (scales only grow towards 0). Warp-uniform.
template <int P>
__device__ __forceinline__ bool warp_all_scaled_in(const int (&e)[P]) {
  bool all = true;
#pragma unroll
  for (int k = 0; k < P; ++k) all = all && e[k] == 0;
  return __all_sync(0xffffffffu, all);
}

/// True when no chain of the warp counts: each is underflowed (e < 0) or idle. Warp-uniform.
template <int P>
__device__ __forceinline__ bool warp_none_counts(const int (&e)[P], const bool (&on)[P]) {
  bool none = true;
#pragma unroll
  for (int k = 0; k < P; ++k) none = none && (e[k] < 0 || !on[k]);
  return __all_sync(0xffffffffu, none);
}

// ---------------------------------------------------------------------------------------------
// Spin 0 in the odd-parity basis (sht_math.cuh): one chain mu_k per ring pair serves the degrees
// j - 1 and j = m + 1 + 2k, so a step is 2 FP64 operations of recursion and 4 accumulating FMAs
// per column for two degrees (the direct recursion needs 8).

/// 16-byte global -> shared copy that bypasses registers (completes at cp_async_wait).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
/// 8-byte global -> shared copy through L1 (completes at cp_async_wait).
__device__ __forceinline__ void cp_async8(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}

/// Stages KC steps from t0 of the step table (a.ab) and of the block's NC columns of a.W (two
/// entries per step) into shared memory with cp.async; columns beyond the ncv valid ones repeat
/// the last valid one, so the buffers never hold stale data. Completes at cp_async_wait.
template <int KC, int NC>
__device__ __forceinline__ void stage_chunk(const LegendreArgs& a, long long t0, int col0,
                                            int ncv, long long total, double2 (&s_ab)[KC],
                                            cplx (&s_w)[NC][KC][2]) {
  for (int i = threadIdx.x; i < KC * (1 + 2 * NC); i += kThreads) {
    if (i < KC) {
      cp_async16(&s_ab[i], a.ab + t0 + i);
    } else {
      const int r = i - KC, c = r / (2 * KC), q = r % (2 * KC);
      const int cs = min(c, ncv - 1);
      cp_async16(&s_w[c][q >> 1][q & 1],
                 a.W + 2 * (static_cast<std::size_t>(col0 + cs) * total + t0) + q);
    }
  }
  cp_async_commit();
}

/// Starts the odd chain of ring pair p (-1: none) for mode m: x, x^2, (mu_{-2}, mu_{-1}) =
/// (-mu_0, 0) and the scale. Returns whether its output counts (an idle chain runs on zeros).
__device__ __forceinline__ bool start_odd_chain(const LegendreArgs& a, int m, double nu, int p,
                                                double& x, double& x2, double& v0, double& v1,
                                                int& e) {
  const bool on = p >= 0 && m <= a.mlim[p];
  const RingPair g = pair_geometry(a.nside, p >= 0 ? p : 0);
  x = g.z;
  x2 = g.z * g.z;
  double mu0;
  start_spin0(m, nu, g, mu0, e);
  mu0 *= sqrt(2.0 * m + 3.0);  // mu_0 = lambda_m / c_{m+1}
  v0 = -mu0;
  v1 = 0.0;
  if (!on) {
    v0 = 0.0;
    e = 0;
  }
  return on;
}

/// One odd-chain step: mu_k = (A x^2 + B) mu_{k-1} - mu_{k-2}.
__device__ __forceinline__ void odd_step(double2 ab, double x2, double& v0, double& v1) {
  const double vn = fma(fma(ab.x, x2, ab.y), v1, -v0);
  v0 = v1;
  v1 = vn;
}

__device__ __forceinline__ void odd_rescale(int& e, double& v0, double& v1) {
  if (e < 0 && fabs(v1) > kBig) {
    v0 *= kDown;
    v1 *= kDown;
    ++e;
  }
}

/// (w1, w2) of the synthesis from the alm: w1_k = u_k a_{j-1} + v_k a_{j+1}, w2_k = N_k a_j.
__global__ void k_obasis_prepare(LegendreArgs a) {
  const int m = blockIdx.x, cc = blockIdx.y;
  const int lmax = a.lmax, K = obasis_steps(lmax, m);
  const long long ko = a.koff[m], kend = a.koff[m + 1], total = a.koff[lmax + 1];
  const std::size_t nalm = static_cast<std::size_t>(lmax + 1) * (lmax + 2) / 2;
  const std::size_t mst = static_cast<std::size_t>(m) * (2 * lmax + 1 - m) / 2;
  const cplx* alm = a.alm + static_cast<std::size_t>(cc) * nalm + mst;  // + l
  cplx* W = a.W + 2 * (static_cast<std::size_t>(cc) * total);
  auto get = [&](int l) -> cplx {
    if (l > lmax) return {0.0, 0.0};
    cplx v = alm[l];
    if (m == 0) v.im = 0.0;
    return v;
  };
  for (long long t = ko + threadIdx.x; t < kend; t += blockDim.x) {
    const int k = static_cast<int>(t - ko);
    cplx w1 = {0.0, 0.0}, w2 = {0.0, 0.0};
    if (k < K) {
      const int j = m + 1 + 2 * k;
      const ObasisNorm nr = a.norm[t];
      const cplx lo = get(j - 1), mid = get(j), hi = get(j + 1);
      w1 = {nr.u * lo.re + nr.v * hi.re, nr.u * lo.im + nr.v * hi.im};
      w2 = {nr.N * mid.re, nr.N * mid.im};
    }
    W[2 * t] = w1;
    W[2 * t + 1] = w2;
  }
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

/// Spin-0 synthesis: block (m, column group), threads over active ring pairs, P pairs each; the
/// step coefficients and (w1, w2) of kObasisChunk steps are staged in shared memory with
/// cp.async, one chunk ahead of the one being summed (one barrier per chunk).
template <int P, int NC>
__global__ void __launch_bounds__(kThreads) k_synthesis_spin0(LegendreArgs a) {
  constexpr int KC = kObasisChunk;
  const int m = blockIdx.x;
  const int col0 = blockIdx.y * NC;
  const int lmax = a.lmax;
  const int R = 4 * a.nside - 1;
  const long long ko = a.koff[m], total = a.koff[lmax + 1];
  const int nchunk = static_cast<int>((a.koff[m + 1] - ko) / KC);
  const std::size_t fstride = static_cast<std::size_t>(R) * (lmax + 1);
  __shared__ double2 s_ab[2][KC];
  __shared__ cplx s_w[2][NC][KC][2];
  const int fa = a.first_active[m];
  const double nu = a.nu[m];
  const int ncv = min(NC, a.ncols - col0);  // valid columns of this block

  auto Fat = [&](int c, int ring) -> cplx& {
    return a.F[static_cast<std::size_t>(col0 + c) * fstride +
               static_cast<std::size_t>(ring) * (lmax + 1) + m];
  };
  // Entries F_m of rings whose mlim is below m are neither written nor read (the FFT stage
  // aliases modes up to each ring's mlim only).
  auto stage = [&](int ch, int b) {
    stage_chunk<KC, NC>(a, ko + static_cast<long long>(ch) * KC, col0, ncv, total, s_ab[b], s_w[b]);
  };

  for (int tile = fa + blockIdx.z * kThreads * P; tile < a.nactive;
       tile += gridDim.z * kThreads * P) {  // a tile per block (grid z)
    double x[P], x2[P], v0[P], v1[P];
    int e[P], pr[P];
    bool on[P];
    cplx p1[P][NC], p2[P][NC];
#pragma unroll
    for (int k = 0; k < P; ++k) {
      const int i = tile + k * kThreads + threadIdx.x;
      pr[k] = i < a.nactive ? a.active[i] : -1;
      on[k] = start_odd_chain(a, m, nu, pr[k], x[k], x2[k], v0[k], v1[k], e[k]);
#pragma unroll
      for (int c = 0; c < NC; ++c) p1[k][c] = p2[k][c] = {0.0, 0.0};
    }
    __syncthreads();  // the previous tile is done with both buffers
    stage(0, 0);
    // Two steps per iteration with the roles of v0 and v1 alternating (no register moves):
    // before an even step kk, (v0, v1) = (mu_{kk-2}, mu_{kk-1}).
    auto add = [&](int b, int kk, const double (&mu)[P]) {
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        const cplx w1 = s_w[b][c][kk][0], w2 = s_w[b][c][kk][1];
#pragma unroll
        for (int k = 0; k < P; ++k) {
          p1[k][c].re = fma(mu[k], w1.re, p1[k][c].re);
          p1[k][c].im = fma(mu[k], w1.im, p1[k][c].im);
          p2[k][c].re = fma(mu[k], w2.re, p2[k][c].re);
          p2[k][c].im = fma(mu[k], w2.im, p2[k][c].im);
        }
      }
    };
    for (int ch = 0; ch < nchunk; ++ch) {
      const int b = ch & 1;
      cp_async_wait();
      __syncthreads();
      if (ch + 1 < nchunk) stage(ch + 1, b ^ 1);
      if (warp_all_scaled_in(e)) {
        // Fast path: every chain of the warp counts; the loop is the recursion and the FMAs.
#pragma unroll 1
        for (int kk = 0; kk < KC; kk += 2) {
          const double2 ab0 = s_ab[b][kk], ab1 = s_ab[b][kk + 1];
#pragma unroll
          for (int k = 0; k < P; ++k) v0[k] = fma(fma(ab0.x, x2[k], ab0.y), v1[k], -v0[k]);
          add(b, kk, v0);
#pragma unroll
          for (int k = 0; k < P; ++k) v1[k] = fma(fma(ab1.x, x2[k], ab1.y), v0[k], -v1[k]);
          add(b, kk + 1, v1);
        }
        continue;
      }
      if (warp_none_counts(e, on)) {
        // No counting chain in the warp (underflowed, or idle): the recursion alone.
#pragma unroll 1
        for (int kk = 0; kk < KC; kk += 2) {
          const double2 ab0 = s_ab[b][kk], ab1 = s_ab[b][kk + 1];
#pragma unroll
          for (int k = 0; k < P; ++k) {
            v0[k] = fma(fma(ab0.x, x2[k], ab0.y), v1[k], -v0[k]);
            v1[k] = fma(fma(ab1.x, x2[k], ab1.y), v0[k], -v1[k]);
          }
          if ((kk & 2) == 2) {
#pragma unroll
            for (int k = 0; k < P; ++k) odd_rescale(e[k], v0[k], v1[k]);
          }
        }
        continue;
      }
#pragma unroll 1
      for (int kk = 0; kk < KC; kk += 2) {
        const double2 ab0 = s_ab[b][kk], ab1 = s_ab[b][kk + 1];
        double mu[P];
#pragma unroll
        for (int k = 0; k < P; ++k) {
          v0[k] = fma(fma(ab0.x, x2[k], ab0.y), v1[k], -v0[k]);
          mu[k] = e[k] == 0 ? v0[k] : 0.0;
        }
        add(b, kk, mu);
#pragma unroll
        for (int k = 0; k < P; ++k) {
          v1[k] = fma(fma(ab1.x, x2[k], ab1.y), v0[k], -v1[k]);
          mu[k] = e[k] == 0 ? v1[k] : 0.0;
        }
        add(b, kk + 1, mu);
        if ((kk & 2) == 2) {
#pragma unroll
          for (int k = 0; k < P; ++k) odd_rescale(e[k], v0[k], v1[k]);
        }
      }
    }
#pragma unroll
    for (int k = 0; k < P; ++k) {
      if (!on[k]) continue;
      const int rn = pr[k], rs = R - 1 - pr[k];
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        if (c >= ncv) continue;
        const cplx E = p1[k][c], O = {x[k] * p2[k][c].re, x[k] * p2[k][c].im};
        Fat(c, rn) = {E.re + O.re, E.im + O.im};
        if (rs != rn) Fat(c, rs) = {E.re - O.re, E.im - O.im};
      }
    }
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

template <int P, int NC>
void launch_synth0_t(const LegendreArgs& a, cudaStream_t s) {
  // Tiles of one mode are independent in the synthesis (each writes its own rings): a block per
  // (mode, column group, tile) balances the load better than a loop over tiles.
  dim3 grid(a.lmax + 1, (a.ncols + NC - 1) / NC, std::max(1, (a.nactive + kThreads * P - 1) / (kThreads * P)));
  k_synthesis_spin0<P, NC><<<grid, kThreads, 0, s>>>(a);
  CUDA_CHECK_LAUNCH();
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

// ---------------------------------------------------------------------------------------------
// Spin-2 Legendre synthesis: block (m, column group), threads over active ring pairs, P pairs
// each; two Wigner-d chains (lambda^+-) per pair, eight accumulators per column. The tables are in
// the padded step layout (koff: entry koff[m] + l - l0 is degree l); the step coefficients and
// the prepared alm of kObasisChunk degrees are staged with cp.async one chunk ahead.

/// (aE N_l, aB N_l) of the spin-2 synthesis in the padded step layout (zeros above lmax).
__global__ void k_spin2_prepare(LegendreArgs a) {
  const int m = blockIdx.x, c = blockIdx.y;
  const int lmax = a.lmax, l0 = l0_of(2, m);
  const long long ko = a.koff[m], kend = a.koff[m + 1], total = a.koff[lmax + 1];
  const std::size_t nalm = static_cast<std::size_t>(lmax + 1) * (lmax + 2) / 2;
  const std::size_t mst = static_cast<std::size_t>(m) * (2 * lmax + 1 - m) / 2;
  const cplx* aE = a.alm + static_cast<std::size_t>(2 * c) * nalm + mst;
  const cplx* aB = aE + nalm;
  cplx* W = a.W + 2 * (static_cast<std::size_t>(c) * total);
  for (long long t = ko + threadIdx.x; t < kend; t += blockDim.x) {
    const int l = l0 + static_cast<int>(t - ko);
    cplx e = {0.0, 0.0}, b = {0.0, 0.0};
    if (l <= lmax) {
      const double nl = a.tabN[mst + l];  // lambda_l = N_l mu_l: fold N_l into the coefficient
      e = aE[l];
      b = aB[l];
      if (m == 0) e.im = b.im = 0.0;
      e = {e.re * nl, e.im * nl};
      b = {b.re * nl, b.im * nl};
    }
    W[2 * t] = e;
    W[2 * t + 1] = b;
  }
}

template <int P, int NC, int KC>
__global__ void __launch_bounds__(kThreads) k_synthesis_spin2(LegendreArgs a) {
  static_assert(kSpin2Chunk % KC == 0 && KC % 8 == 0, "chunks tile the padded tables");
  
  const int m = blockIdx.x;
  const int col0 = blockIdx.y * NC;
  const int lmax = a.lmax;
  const int R = 4 * a.nside - 1;
  const long long ko = a.koff[m], total = a.koff[lmax + 1];
  const int nchunk = static_cast<int>((a.koff[m + 1] - ko) / KC);
  const std::size_t fstride = static_cast<std::size_t>(R) * (lmax + 1);
  __shared__ double2 s_ab[2][KC];
  __shared__ cplx s_w[2][NC][KC][2];  // (aE, aB) N_l
  const int l0 = l0_of(2, m);
  const bool swap = ((l0 - m) & 1) != 0;
  const int fa = a.first_active[m];
  const double nu = a.nu[m];
  const int ncv = min(NC, a.ncols - col0);

  auto Fat = [&](int cc, int ring) -> cplx& {
    return a.F[(static_cast<std::size_t>(col0) * 2 + cc) * fstride +
               static_cast<std::size_t>(ring) * (lmax + 1) + m];
  };
  // F_m of rings whose mlim is below m is neither written nor read (see the spin-0 synthesis).
  auto stage = [&](int ch, int b) {
    stage_chunk<KC, NC>(a, ko + static_cast<long long>(ch) * KC, col0, ncv, total, s_ab[b], s_w[b]);
  };

  for (int tile = fa + blockIdx.z * kThreads * P; tile < a.nactive;
       tile += gridDim.z * kThreads * P) {  // a tile per block (grid z)
    double z[P], v0[P], v1[P], w0[P], w1[P];
    int e[P], pr[P];
    bool on[P];
    cplx acc[P][NC][8];
#pragma unroll
    for (int k = 0; k < P; ++k) {
      const int i = tile + k * kThreads + threadIdx.x;
      pr[k] = i < a.nactive ? a.active[i] : -1;
      double p0, m0;
      on[k] = start_chain2(a, m, nu, pr[k], z[k], v0[k], p0, w0[k], m0, e[k]);
      // The table's degree-l0 step has A = B = 0, so (mu_{l0-2}, mu_{l0-1}) = (-start, 0)
      // makes the first step an ordinary one.
      v0[k] = -p0;
      v1[k] = 0.0;
      w0[k] = -m0;
      w1[k] = 0.0;
#pragma unroll
      for (int c = 0; c < NC; ++c)
#pragma unroll
        for (int q = 0; q < 8; ++q) acc[k][c][q] = {0.0, 0.0};
    }
    // Adds lambda^+ (P_) and lambda^- (M_) of chain k at chunk position kk into the
    // accumulators of parity par.
    auto accumulate = [&](int b, int k, int kk, int par, double P_, double M_) {
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        const cplx aE = s_w[b][c][kk][0], aB = s_w[b][c][kk][1];
        // acc[0+par] += aE P, [2+par] += aE M, [4+par] += aB P, [6+par] += aB M
        acc[k][c][0 + par].re = fma(aE.re, P_, acc[k][c][0 + par].re);
        acc[k][c][0 + par].im = fma(aE.im, P_, acc[k][c][0 + par].im);
        acc[k][c][2 + par].re = fma(aE.re, M_, acc[k][c][2 + par].re);
        acc[k][c][2 + par].im = fma(aE.im, M_, acc[k][c][2 + par].im);
        acc[k][c][4 + par].re = fma(aB.re, P_, acc[k][c][4 + par].re);
        acc[k][c][4 + par].im = fma(aB.im, P_, acc[k][c][4 + par].im);
        acc[k][c][6 + par].re = fma(aB.re, M_, acc[k][c][6 + par].re);
        acc[k][c][6 + par].im = fma(aB.im, M_, acc[k][c][6 + par].im);
      }
    };
    __syncthreads();  // the previous tile is done with both buffers
    stage(0, 0);
    for (int ch = 0; ch < nchunk; ++ch) {
      const int b = ch & 1;
      cp_async_wait();
      __syncthreads();
      if (ch + 1 < nchunk) stage(ch + 1, b ^ 1);
      if (warp_all_scaled_in(e)) {
        // Fast path: every chain of the warp counts; the loop is the recursion and the FMAs.
        for (int kk2 = 0; kk2 < KC; kk2 += 2) {
#pragma unroll
          for (int par = 0; par < 2; ++par) {
            const int kk = kk2 + par;
            const double2 ab = s_ab[b][kk];
#pragma unroll
            for (int k = 0; k < P; ++k) {
              step2(ab.x, ab.y, z[k], v0[k], v1[k], w0[k], w1[k]);
              accumulate(b, k, kk, par, v1[k], w1[k]);
            }
          }
        }
        continue;
      }
      for (int kk2 = 0; kk2 < KC; kk2 += 2) {
#pragma unroll
        for (int par = 0; par < 2; ++par) {
          const int kk = kk2 + par;
          const double2 ab = s_ab[b][kk];
#pragma unroll
          for (int k = 0; k < P; ++k) {
            step2(ab.x, ab.y, z[k], v0[k], v1[k], w0[k], w1[k]);
            accumulate(b, k, kk, par, e[k] == 0 ? v1[k] : 0.0, e[k] == 0 ? w1[k] : 0.0);
          }
        }
        if ((kk2 & 6) == 6) {
#pragma unroll
          for (int k = 0; k < P; ++k) rescale2(e[k], v0[k], v1[k], w0[k], w1[k]);
        }
      }
    }
#pragma unroll
    for (int k = 0; k < P; ++k) {
      if (!on[k]) continue;
      const int rn = pr[k], rs = R - 1 - pr[k];
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        if (c >= ncv) continue;
        const int ev = swap ? 1 : 0, od = 1 - ev;
        // W = (P + M) / 2, X = (M - P) / 2 (the 1/2 is in h).
        const cplx EP_e = ev ? acc[k][c][1] : acc[k][c][0], EP_o = ev ? acc[k][c][0] : acc[k][c][1];
        const cplx EM_e = ev ? acc[k][c][3] : acc[k][c][2], EM_o = ev ? acc[k][c][2] : acc[k][c][3];
        const cplx BP_e = ev ? acc[k][c][5] : acc[k][c][4], BP_o = ev ? acc[k][c][4] : acc[k][c][5];
        const cplx BM_e = ev ? acc[k][c][7] : acc[k][c][6], BM_o = ev ? acc[k][c][6] : acc[k][c][7];
        (void)od;
        const cplx WE_e = {EP_e.re + EM_e.re, EP_e.im + EM_e.im};
        const cplx WE_o = {EP_o.re + EM_o.re, EP_o.im + EM_o.im};
        const cplx XE_e = {EM_e.re - EP_e.re, EM_e.im - EP_e.im};
        const cplx XE_o = {EM_o.re - EP_o.re, EM_o.im - EP_o.im};
        const cplx WB_e = {BP_e.re + BM_e.re, BP_e.im + BM_e.im};
        const cplx WB_o = {BP_o.re + BM_o.re, BP_o.im + BM_o.im};
        const cplx XB_e = {BM_e.re - BP_e.re, BM_e.im - BP_e.im};
        const cplx XB_o = {BM_o.re - BP_o.re, BM_o.im - BP_o.im};
        const double h = 0.5;
        // Q = -(aE W + i aB X), U = -(aB W - i aE X); south: W -> s W, X -> -s X.
        const cplx QN = {h * (-(WE_e.re + WE_o.re) + (XB_e.im + XB_o.im)),
                         h * (-(WE_e.im + WE_o.im) - (XB_e.re + XB_o.re))};
        const cplx QS = {h * (-(WE_e.re - WE_o.re) - (XB_e.im - XB_o.im)),
                         h * (-(WE_e.im - WE_o.im) + (XB_e.re - XB_o.re))};
        const cplx UN = {h * (-(WB_e.re + WB_o.re) - (XE_e.im + XE_o.im)),
                         h * (-(WB_e.im + WB_o.im) + (XE_e.re + XE_o.re))};
        const cplx US = {h * (-(WB_e.re - WB_o.re) + (XE_e.im - XE_o.im)),
                         h * (-(WB_e.im - WB_o.im) - (XE_e.re - XE_o.re))};
        Fat(2 * c, rn) = QN;
        Fat(2 * c + 1, rn) = UN;
        if (rs != rn) {
          Fat(2 * c, rs) = QS;
          Fat(2 * c + 1, rs) = US;
        }
      }
    }
  }
}

template <int P, int NC, int KC = kSpin2Chunk>
void launch_synth2_t(const LegendreArgs& a, cudaStream_t s) {
  dim3 grid(a.lmax + 1, (a.ncols + NC - 1) / NC, std::max(1, (a.nactive + kThreads * P - 1) / (kThreads * P)));
  k_synthesis_spin2<P, NC, KC><<<grid, kThreads, 0, s>>>(a);
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

// ---------------------------------------------------------------------------------------------
// FFT-stage glue.

/// Sums of the m-modes (m <= mmax) aliased onto bin k of a ring of N pixels (Hermitian full
/// spectrum), without the phase e^{i m phi0}: sp over m = k + t N, sn over the conjugates of
/// m = m1 + t N (m1 = N - k, or N for k = 0). For shifted rings (phi0 = pi / N) the phase of
/// m + N is minus that of m, which the alternating sign carries.
__device__ __forceinline__ void alias_sums(const cplx* Frow, int k, int N, int mmax, bool shifted,
                                           cplx& sp, cplx& sn) {
  sp = sn = {0.0, 0.0};
  double sg = 1.0;
  for (int m = k; m <= mmax; m += N) {
    const cplx f = Frow[m];
    sp.re += sg * f.re;
    if (m != 0) sp.im += sg * f.im;
    if (shifted) sg = -sg;
  }
  sg = 1.0;
  for (int m = k == 0 ? N : N - k; m <= mmax; m += N) {  // m -> -m: conj(F_m)
    const cplx f = Frow[m];
    sn.re += sg * f.re;
    sn.im -= sg * f.im;
    if (shifted) sg = -sg;
  }
}

/// The aliased bin from its sums: sp e^{i k phi0} + sn e^{-i m1 phi0}. For shifted rings, with
/// ph = e^{i pi k / N}: e^{-i pi m1 / N} = e^{-i pi} ph = -ph (for k = 0 too: m1 = N, ph = 1),
/// so the bin is (sp - sn) ph.
__device__ __forceinline__ cplx alias_combine(cplx sp, cplx sn, cplx ph, bool shifted) {
  if (!shifted) return {sp.re + sn.re, sp.im + sn.im};
  return cmul({sp.re - sn.re, sp.im - sn.im}, ph);
}

/// Ring pair of ring r (its mlim index).
__device__ __forceinline__ int pair_of_ring(int nside, int r) {
  const int R = 4 * nside - 1;
  return r < R - 1 - r ? r : R - 1 - r;
}

/// First element of polar row q (ring pair of size 4 (q + 1)) of column cc in PU.
__device__ __forceinline__ long long polar_offset(const FftArgs& a, int q, int cc) {
  const PolarClass& c = a.cls[a.cls_of[q]];
  return c.cbase * a.ncc + (static_cast<long long>(cc) * c.rows + (q - c.qlo)) * c.M;
}

/// Belt rows: blocks over (column, belt ring) rows in y, threads over the N/2 + 1 bins.
__global__ void k_alias_belt(FftArgs a) {
  const int N = 4 * a.nside, nh = N / 2 + 1, nbelt = 2 * a.nside + 1, R = 4 * a.nside - 1;
  for (int row = blockIdx.y; row < a.ncc * nbelt; row += gridDim.y) {
    const int b = row % nbelt, cc = row / nbelt, r = b + a.nside - 1;
    const bool shifted = ((r + 1 - a.nside) & 1) == 0;
    const int mmax = a.mlim[pair_of_ring(a.nside, r)];
    const cplx* Frow = a.F + (static_cast<std::size_t>(cc) * R + r) * (a.lmax + 1);
    cplx* out = a.BH + static_cast<std::size_t>(row) * nh;
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < nh; k += gridDim.x * blockDim.x) {
      cplx sp, sn;
      alias_sums(Frow, k, N, mmax, shifted, sp, sn);
      out[k] = alias_combine(sp, sn, phase(k, N, shifted), shifted);
    }
  }
}

/// Polar rows: blocks over (column, ring pair) rows, threads over the row's M entries. Bin j of
/// the pair: (G_N(j) + i G_S(j)) c_j below N, zero above. (A flat list of row chunks without the
/// idle blocks of short rows measured slower on the H200: 1.22 against 1.01 ms at nside 2048,
/// spin 2.)
__global__ void k_alias_polar(FftArgs a) {
  const int npairs = a.nside - 1, R = 4 * a.nside - 1;
  for (long long row = blockIdx.y; row < static_cast<long long>(a.ncc) * npairs; row += gridDim.y) {
    const int q = static_cast<int>(row % npairs), cc = static_cast<int>(row / npairs);
    const int N = 4 * (q + 1), M = a.cls[a.cls_of[q]].M, mmax = a.mlim[q];
    cplx* out = a.PU + polar_offset(a, q, cc);
    const cplx* Fn = a.F + (static_cast<std::size_t>(cc) * R + q) * (a.lmax + 1);
    const cplx* Fs = a.F + (static_cast<std::size_t>(cc) * R + (R - 1 - q)) * (a.lmax + 1);
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < M; j += gridDim.x * blockDim.x) {
      cplx u = {0.0, 0.0};
      if (j < N) {
        // Both rings of the pair share the phase: (G_N + i G_S) = phased (sums_N + i sums_S).
        cplx pn, nn, ps, ns;
        alias_sums(Fn, j, N, mmax, true, pn, nn);
        alias_sums(Fs, j, N, mmax, true, ps, ns);
        const cplx g = alias_combine({pn.re - ps.im, pn.im + ps.re}, {nn.re - ns.im, nn.im + ns.re},
                                     phase(j, N, true), true);
        u = cmul(g, chirp(j, N));
      }
      out[j] = u;
    }
  }
}

/// PU *= chirp spectrum (conjugated for the synthesis); blocks over classes in y.
__global__ void k_polar_multiply(FftArgs a, bool conjugate) {
  const PolarClass c = a.cls[blockIdx.y];
  const long long n = static_cast<long long>(a.ncc) * c.rows * c.M;
  cplx* base = a.PU + c.cbase * a.ncc;
  for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long j = t % c.M, row = (t / c.M) % c.rows;
    cplx h = a.chirp_fft[c.cbase + row * c.M + j];
    if (conjugate) h.im = -h.im;
    base[t] = cmul(base[t], h);
  }
}

/// Full-sky map: blocks over (column, ring) rows in y, threads over the ring's pixels.
/// Full-sky map, belt rings: blocks over (column, belt ring) rows in y, threads over pixels.
__global__ void k_assemble_belt(FftArgs a, double* map) {
  const int N = 4 * a.nside, nbelt = 2 * a.nside + 1;
  for (int row = blockIdx.y; row < a.ncc * nbelt; row += gridDim.y) {
    const int b = row % nbelt, cc = row / nbelt;
    const RingLoc L = locate(a.nside, b + a.nside - 1);
    double* out = map + static_cast<std::size_t>(cc) * a.npix + L.start;
    const double* in = a.BR + static_cast<std::size_t>(row) * N;
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < N; j += gridDim.x * blockDim.x)
      out[j] = in[j];
  }
}

/// Full-sky map, polar caps: a thread per north-cap pixel (column in y) writes it and its
/// mirror in the south cap from their shared Bluestein row (real part north, imaginary south).
__global__ void k_assemble_polar(FftArgs a, double* map) {
  const int ncap = 2 * a.nside * (a.nside - 1);
  const int cc = blockIdx.y;
  double* out = map + static_cast<std::size_t>(cc) * a.npix;
  for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < ncap; p += gridDim.x * blockDim.x) {
    int i = static_cast<int>(0.5 * (1.0 + sqrt(1.0 + 2.0 * p)));  // 1-based ring
    while (2LL * i * (i - 1) > p) --i;
    while (2LL * (i + 1) * i <= p) ++i;
    const int j = p - 2 * i * (i - 1), N = 4 * i;
    const cplx y = cmul(chirp(j, N), a.PU[polar_offset(a, i - 1, cc) + j]);
    out[p] = y.re;
    out[a.npix - 2LL * i * (i + 1) + j] = y.im;
  }
}

__global__ void k_assemble(FftArgs a, double* map, const std::int64_t* pixels,
                           std::int64_t map_size) {
  const long long total = static_cast<long long>(a.ncc) * map_size;
  const int N = 4 * a.nside, nbelt = 2 * a.nside + 1, R = 4 * a.nside - 1;
  for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long i = t % map_size;
    const int cc = static_cast<int>(t / map_size);
    const long long p = pixels ? pixels[i] : i;
    const int r = ring_of_pixel(a.nside, p);
    const RingLoc L = locate(a.nside, r);
    const int j = static_cast<int>(p - L.start);
    double v;
    if (!L.polar) {
      v = a.BR[(static_cast<std::size_t>(cc) * nbelt + L.idx) * N + j];
    } else {
      const bool south = r > R - 1 - r;
      const int q = south ? R - 1 - r : r;
      const cplx y = cmul(chirp(j, L.N), a.PU[polar_offset(a, q, cc) + j]);
      v = south ? y.im : y.re;
    }
    map[t] = v;
  }
}

__global__ void k_load_belt(FftArgs a, const double* full) {
  const int N = 4 * a.nside, nbelt = 2 * a.nside + 1;
  for (int row = blockIdx.y; row < a.ncc * nbelt; row += gridDim.y) {
    const int b = row % nbelt, cc = row / nbelt;
    const RingLoc L = locate(a.nside, b + a.nside - 1);
    const double* in = full + static_cast<std::size_t>(cc) * a.npix + L.start;
    double* out = a.BR + static_cast<std::size_t>(row) * N;
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < N; j += gridDim.x * blockDim.x)
      out[j] = in[j];
  }
}

/// Polar rows of the adjoint: (map_N(j) + i map_S(j)) conj(c_j) below N, zero above.
__global__ void k_load_polar(FftArgs a, const double* full) {
  const int npairs = a.nside - 1;
  for (long long row = blockIdx.y; row < static_cast<long long>(a.ncc) * npairs; row += gridDim.y) {
    const int q = static_cast<int>(row % npairs), cc = static_cast<int>(row / npairs);
    const int i = q + 1, N = 4 * i, M = a.cls[a.cls_of[q]].M;
    cplx* out = a.PU + polar_offset(a, q, cc);
    const double* mn = full + static_cast<std::size_t>(cc) * a.npix + 2LL * i * (i - 1);
    const double* ms = full + static_cast<std::size_t>(cc) * a.npix + a.npix - 2LL * i * (i + 1);
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < M; j += gridDim.x * blockDim.x) {
      cplx v = {0.0, 0.0};
      if (j < N) v = cmul({mn[j], ms[j]}, conjc(chirp(j, N)));
      out[j] = v;
    }
  }
}

/// F of every ring and m <= its mlim (the Legendre adjoint reads no other entry): blocks over
/// (column, ring) rows in y, threads over m.
__global__ void k_unalias(FftArgs a) {
  const int R = 4 * a.nside - 1;
  const int N = 4 * a.nside, nh = N / 2 + 1, nbelt = 2 * a.nside + 1;
  for (int row = blockIdx.y; row < a.ncc * R; row += gridDim.y) {
    const int r = row % R, cc = row / R;
    const int mmax = a.mlim[pair_of_ring(a.nside, r)];
    const RingLoc L = locate(a.nside, r);
    cplx* out = a.F + static_cast<std::size_t>(row) * (a.lmax + 1);
    const bool south = r > R - 1 - r;
    const cplx* brow = L.polar ? a.PU + polar_offset(a, south ? R - 1 - r : r, cc)
                               : a.BH + (static_cast<std::size_t>(cc) * nbelt + L.idx) * nh;
    for (int m = blockIdx.x * blockDim.x + threadIdx.x; m <= mmax; m += gridDim.x * blockDim.x) {
      const int k = m % L.N;
      cplx G;
      if (!L.polar) {
        G = k <= N / 2 ? brow[k] : conjc(brow[N - k]);
      } else {
        const int kk = k == 0 ? 0 : L.N - k;
        const cplx y = cmul(conjc(chirp(k, L.N)), brow[k]);
        const cplx z = conjc(cmul(conjc(chirp(kk, L.N)), brow[kk]));
        // Y = Y_N + i Y_S with Hermitian Y_N, Y_S: Y_N(k) = (Y(k) + conj Y(-k)) / 2,
        // Y_S(k) = (Y(k) - conj Y(-k)) / (2 i).
        G = south ? cplx{0.5 * (y.im - z.im), -0.5 * (y.re - z.re)}
                  : cplx{0.5 * (y.re + z.re), 0.5 * (y.im + z.im)};
      }
      out[m] = cmul(G, conjc(phase(m, L.N, L.shifted)));
    }
  }
}

__global__ void k_scatter(const double* map, const std::int64_t* pixels, std::int64_t nobs,
                          std::int64_t npix, int ncc, double* full) {
  const long long total = static_cast<long long>(ncc) * nobs;
  for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long i = t % nobs, cc = t / nobs;
    full[cc * npix + pixels[i]] = map[t];
  }
}

__global__ void k_chirp_rows(FftArgs a, cplx* table) {
  const PolarClass c = a.cls[blockIdx.y];
  const long long n = static_cast<long long>(c.rows) * c.M;
  for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int j = static_cast<int>(t % c.M), row = static_cast<int>(t / c.M);
    const int N = 4 * (c.qlo + row + 1);
    cplx v = {0.0, 0.0};
    if (j < N)
      v = chirp(j, N);
    else if (j > c.M - N)
      v = chirp(c.M - j, N);
    table[c.cbase + t] = v;
  }
}

__global__ void k_scale(cplx* d, std::size_t n, double f) {
  for (std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    d[t].re *= f;
    d[t].im *= f;
  }
}

unsigned grid_for(long long total) {
  long long b = (total + 255) / 256;
  if (b < 1) b = 1;
  if (b > 65535LL * 8) b = 65535LL * 8;
  return static_cast<unsigned>(b);
}

}  // namespace

void prepare_legendre_kernels() {
  // The only kernel above the 48 KB default: two reduction buffers.
  allow_adjoint_smem(k_adjoint_spin2<4, 1, 3, 2>);
}

/// Ring pairs per thread of single-column spin-0 kernels from the environment (tuning on other
/// cards): ALMAGEST_SHT_SYN_P (2 or 4), ALMAGEST_SHT_ADJ_P (2, 4 or 8) and ALMAGEST_SHT_ADJ2_P
/// (single-column spin-2 adjoint: 2 or 4); 0 when unset.
static int pairs_override(const char* name) {
  const char* e = std::getenv(name);
  const int p = e ? std::atoi(e) : 0;
  return (p == 2 || p == 4 || p == 8) ? p : 0;
}
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
static int synthesis_pairs_override() {
  static const int v = pairs_override("ALMAGEST_SHT_SYN_P");
  return v;
}

void launch_legendre_synthesis(const LegendreArgs& a, cudaStream_t s) {
  // Launch shapes measured on the H200 (docs/benchmarks.md): single spin-0 transforms take four
  // ring pairs per thread, two while one tile of kThreads * 2 holds every pair (nside <= 128:
  // 0.052 against 0.061 ms at nside 128); batched columns two pairs and two or four columns;
  // spin 2 two pairs (one with two columns), 64-degree chunks (1.4% faster than 32 at 2048).
  if (a.spin == 0) {
    k_obasis_prepare<<<dim3(a.lmax + 1, a.ncols), 128, 0, s>>>(a);
    CUDA_CHECK_LAUNCH();
    const int po = synthesis_pairs_override();
    if (a.ncols >= 4)
      launch_synth0_t<2, 4>(a, s);
    else if (a.ncols >= 2)
      launch_synth0_t<2, 2>(a, s);
    else if (po == 2 || (po == 0 && a.nactive <= kThreads * 2))
      launch_synth0_t<2, 1>(a, s);
    else
      launch_synth0_t<4, 1>(a, s);
  } else {
    k_spin2_prepare<<<dim3(a.lmax + 1, a.ncols), 128, 0, s>>>(a);
    CUDA_CHECK_LAUNCH();
    if (a.ncols >= 2)
      launch_synth2_t<1, 2>(a, s);
    else
      launch_synth2_t<2, 1>(a, s);
  }
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

/// Grid of the polar row kernels: x over a row's longest class, y over rows.
dim3 polar_grid(const FftArgs& a) {
  int mmax = 1;
  for (int c = 0; c < a.nclass; ++c) mmax = std::max(mmax, a.cls[c].M);
  const long long rows = static_cast<long long>(a.ncc) * (a.nside - 1);
  return dim3((mmax + 255) / 256, static_cast<unsigned>(std::min<long long>(rows, 65535)));
}

/// Grid of the row kernels: x over `len` entries of a row (256 threads each), y over rows.
dim3 row_grid(long long len, long long rows) {
  return dim3(static_cast<unsigned>((len + 255) / 256), static_cast<unsigned>(std::min<long long>(rows, 65535)));
}

void launch_alias_synthesis(const FftArgs& a, cudaStream_t s) {
  k_alias_belt<<<row_grid(2 * a.nside + 1, static_cast<long long>(a.ncc) * (2 * a.nside + 1)), 256, 0, s>>>(a);
  CUDA_CHECK_LAUNCH();
  if (a.nclass > 0) {
    k_alias_polar<<<polar_grid(a), 256, 0, s>>>(a);
    CUDA_CHECK_LAUNCH();
  }
}

void launch_polar_multiply(const FftArgs& a, bool conjugate, cudaStream_t s) {
  if (a.nclass == 0) return;
  long long most = 1;
  for (int c = 0; c < a.nclass; ++c)
    most = std::max(most, static_cast<long long>(a.ncc) * a.cls[c].rows * a.cls[c].M);
  k_polar_multiply<<<dim3(std::min<long long>((most + 255) / 256, 4096), a.nclass), 256, 0, s>>>(
      a, conjugate);
  CUDA_CHECK_LAUNCH();
}

void launch_assemble_map(const FftArgs& a, double* map, const std::int64_t* pixels,
                         std::int64_t map_size, bool belt, cudaStream_t s) {
  if (!pixels) {
    if (belt) {
      k_assemble_belt<<<row_grid(4 * a.nside, static_cast<long long>(a.ncc) * (2 * a.nside + 1)), 256, 0, s>>>(a, map);
      CUDA_CHECK_LAUNCH();
    }
    if (a.nclass > 0) {
      const long long ncap = 2LL * a.nside * (a.nside - 1);
      k_assemble_polar<<<dim3(static_cast<unsigned>(std::min<long long>((ncap + 255) / 256, 8192)), a.ncc), 256, 0, s>>>(a, map);
    }
  } else {
    k_assemble<<<grid_for(static_cast<long long>(a.ncc) * map_size), 256, 0, s>>>(a, map, pixels,
                                                                                   map_size);
  }
  CUDA_CHECK_LAUNCH();
}

void launch_load_map(const FftArgs& a, const double* full_map, bool belt, cudaStream_t s) {
  if (belt) k_load_belt<<<row_grid(4 * a.nside, static_cast<long long>(a.ncc) * (2 * a.nside + 1)), 256, 0, s>>>(a, full_map);
  CUDA_CHECK_LAUNCH();
  if (a.nclass > 0) {
    k_load_polar<<<polar_grid(a), 256, 0, s>>>(a, full_map);
    CUDA_CHECK_LAUNCH();
  }
}

void launch_unalias_adjoint(const FftArgs& a, cudaStream_t s) {
  k_unalias<<<row_grid(a.lmax + 1, static_cast<long long>(a.ncc) * (4 * a.nside - 1)), 256, 0, s>>>(a);
  CUDA_CHECK_LAUNCH();
}

void launch_scatter(const double* map, const std::int64_t* pixels, std::int64_t nobs,
                    std::int64_t npix, int ncc, double* full, cudaStream_t s) {
  k_scatter<<<grid_for(static_cast<long long>(ncc) * nobs), 256, 0, s>>>(map, pixels, nobs, npix,
                                                                          ncc, full);
  CUDA_CHECK_LAUNCH();
}

void launch_chirp_rows(const FftArgs& a, cplx* table, cudaStream_t s) {
  if (a.nclass == 0) return;
  k_chirp_rows<<<dim3(256, a.nclass), 256, 0, s>>>(a, table);
  CUDA_CHECK_LAUNCH();
}

void launch_scale(cplx* data, std::size_t n, double factor, cudaStream_t s) {
  if (!n) return;
  k_scale<<<grid_for(static_cast<long long>(n)), 256, 0, s>>>(data, n, factor);
  CUDA_CHECK_LAUNCH();
}

}  // namespace almagest::kernels::sht
