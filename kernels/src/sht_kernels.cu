// Device kernels of the SHT: the Legendre synthesis (spin 0 and 2, batched columns), the
// aliasing / Bluestein glue around cuFFT, and map gather/scatter. The adjoints are in
// sht_adjoint.cu, the helpers both use in sht_device.cuh; the math is in sht_math.cuh (checked
// against healpix_cxx by a host twin, see docs/sht.md).
#include <algorithm>
#include <cstdlib>

#include "cuda_check.cuh"
#include "sht_device.cuh"
#include "sht_fft_device.cuh"
#include "sht_kernels.cuh"

namespace almagest::kernels::sht {
namespace {

using namespace dev;

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

// ---------------------------------------------------------------------------------------------
// Spin 0 in the odd-parity basis (sht_math.cuh): one chain mu_k per ring pair serves the degrees
// j - 1 and j = m + 1 + 2k, so a step is 2 FP64 operations of recursion and 4 accumulating FMAs
// per column for two degrees (the direct recursion needs 8).

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

/// The spin-0 start table (LegendreArgs::start_v): a block per mode, threads over its active
/// pairs, the values compute_odd_start gives; block 0 also writes each pair's cos theta.
__global__ void k_start_table(LegendreArgs a, const long long* soff, double* start_v,
                              short* start_e, double* pair_z) {
  const int m = blockIdx.x;
  const int fa = a.first_active[m];
  const double nu = a.nu[m];
  const long long base = soff[m];
  for (int i = fa + static_cast<int>(threadIdx.x); i < a.nactive; i += blockDim.x) {
    double x, x2, v0, v1;
    int e;
    compute_odd_start(a, m, nu, a.active[i], x, x2, v0, v1, e);
    start_v[base + i - fa] = v0;
    start_e[base + i - fa] = static_cast<short>(e);  // e >= -(m log2(1/sin theta)) / 600
  }
  if (m == 0)
    for (int p = threadIdx.x; p < 2 * a.nside; p += blockDim.x)
      pair_z[p] = pair_geometry(a.nside, p).z;
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

/// Spin-0 synthesis: block (m, column group), threads over active ring pairs, P pairs each; the
/// step coefficients and (w1, w2) of kObasisChunk steps are staged in shared memory with
/// cp.async, one chunk ahead of the one being summed (one barrier per chunk).
template <int P, int NC, bool TAB>
__global__ void __launch_bounds__(kThreads) k_synthesis_spin0(Spin0Args a) {
  constexpr int KC = kObasisChunk;
  const int m = blockIdx.z;  // mode-major grid: a mode's tiles are dispatched together
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

  constexpr int kCap = kThreads * P;  // ring pairs per tile
  const int ntiles = mode_tile_count(a.nactive - fa, kCap);
  for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {  // a tile per block (grid x)
    const int tile = fa + t * kCap;
    const int tile_end = min(tile + kCap, a.nactive);
    const int kc = tile_chains(tile_end - tile);
    double x[P], x2[P], v0[P], v1[P];
    int e[P], pr[P];
    bool on[P];
    cplx p1[P][NC], p2[P][NC];
#pragma unroll
    for (int k = 0; k < P; ++k) {
      const int i = chain_index(tile, kc, k);
      pr[k] = k < kc && i < tile_end ? a.active[i] : -1;
      on[k] = start_odd_chain<TAB>(a, m, nu, i - fa, pr[k], x[k], x2[k], v0[k], v1[k], e[k]);
#pragma unroll
      for (int c = 0; c < NC; ++c) p1[k][c] = p2[k][c] = {0.0, 0.0};
    }
    __syncthreads();  // the previous tile is done with both buffers
    stage(0, 0);
    dispatch_chains<P>(kc, [&](auto kc_) {
    constexpr int K = decltype(kc_)::value;  // chains per thread in this tile
    // Two steps per iteration with the roles of v0 and v1 alternating (no register moves):
    // before an even step kk, (v0, v1) = (mu_{kk-2}, mu_{kk-1}).
    auto add = [&](int b, int kk, const double (&mu)[P]) {
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        const cplx w1 = s_w[b][c][kk][0], w2 = s_w[b][c][kk][1];
#pragma unroll
        for (int k = 0; k < K; ++k) {
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
          for (int k = 0; k < K; ++k) v0[k] = fma(fma(ab0.x, x2[k], ab0.y), v1[k], -v0[k]);
          add(b, kk, v0);
#pragma unroll
          for (int k = 0; k < K; ++k) v1[k] = fma(fma(ab1.x, x2[k], ab1.y), v0[k], -v1[k]);
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
          for (int k = 0; k < K; ++k) {
            v0[k] = fma(fma(ab0.x, x2[k], ab0.y), v1[k], -v0[k]);
            v1[k] = fma(fma(ab1.x, x2[k], ab1.y), v0[k], -v1[k]);
          }
          if ((kk & 2) == 2) {
#pragma unroll
            for (int k = 0; k < K; ++k) odd_rescale(e[k], v0[k], v1[k]);
          }
        }
        continue;
      }
#pragma unroll 1
      for (int kk = 0; kk < KC; kk += 2) {
        const double2 ab0 = s_ab[b][kk], ab1 = s_ab[b][kk + 1];
        double mu[P];
#pragma unroll
        for (int k = 0; k < K; ++k) {
          v0[k] = fma(fma(ab0.x, x2[k], ab0.y), v1[k], -v0[k]);
          mu[k] = e[k] == 0 ? v0[k] : 0.0;
        }
        add(b, kk, mu);
#pragma unroll
        for (int k = 0; k < K; ++k) {
          v1[k] = fma(fma(ab1.x, x2[k], ab1.y), v0[k], -v1[k]);
          mu[k] = e[k] == 0 ? v1[k] : 0.0;
        }
        add(b, kk + 1, mu);
        if ((kk & 2) == 2) {
#pragma unroll
          for (int k = 0; k < K; ++k) odd_rescale(e[k], v0[k], v1[k]);
        }
      }
    }
#pragma unroll
    for (int k = 0; k < K; ++k) {
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
    });
  }
}

template <int P, int NC>
void launch_synth0_t(const Spin0Args& a, cudaStream_t s) {
  // Tiles of one mode are independent in the synthesis (each writes its own rings): a block per
  // (tile, column group, mode) balances the load better than a loop over tiles. Blocks are
  // dispatched x fastest, so the modes go in order, longest (m = 0) first.
  dim3 grid(std::max(1, (a.nactive + kThreads * P - 1) / (kThreads * P)), (a.ncols + NC - 1) / NC, a.lmax + 1);
  if (a.start_v)
    k_synthesis_spin0<P, NC, true><<<grid, kThreads, 0, s>>>(a);
  else
    k_synthesis_spin0<P, NC, false><<<grid, kThreads, 0, s>>>(a);
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
  
  const int m = blockIdx.z;  // mode-major grid: a mode's tiles are dispatched together
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

  for (int tile = fa + blockIdx.x * kThreads * P; tile < a.nactive;
       tile += gridDim.x * kThreads * P) {  // a tile per block (grid x)
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
  dim3 grid(std::max(1, (a.nactive + kThreads * P - 1) / (kThreads * P)), (a.ncols + NC - 1) / NC, a.lmax + 1);
  k_synthesis_spin2<P, NC, KC><<<grid, kThreads, 0, s>>>(a);
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

/// Where polar row q of column cc starts and how many of its entries a load or alias kernel
/// writes: in PUin its first N (the padding is zero from the plan's start), else all M of PU.
struct PolarRowOut {
  cplx* p;
  int len;
};
__device__ __forceinline__ PolarRowOut polar_row_out(const FftArgs& a, int q, int cc) {
  const PolarClass& c = a.cls[a.cls_of[q]];
  if (a.PUin)  // polar_offset with the plan's columns (written out: the same PTX as measured)
    return {a.PUin + c.cbase * a.ncc_in + (static_cast<long long>(cc) * c.rows + (q - c.qlo)) * c.M,
            4 * (q + 1)};
  return {a.PU + polar_offset(a, q, cc), c.M};
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
    const int N = 4 * (q + 1), mmax = a.mlim[q];
    const PolarRowOut o = polar_row_out(a, q, cc);
    cplx* out = o.p;
    const cplx* Fn = a.F + (static_cast<std::size_t>(cc) * R + q) * (a.lmax + 1);
    const cplx* Fs = a.F + (static_cast<std::size_t>(cc) * R + (R - 1 - q)) * (a.lmax + 1);
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < o.len; j += gridDim.x * blockDim.x) {
      cplx u = {0.0, 0.0};
      if (j < N) {
        // Both rings of the pair share the phase: (G_N + i G_S) = phased (sums_N + i sums_S).
        cplx pn, nn, ps, ns;
        alias_sums(Fn, j, N, mmax, true, pn, nn);
        alias_sums(Fs, j, N, mmax, true, ps, ns);
        const long long t = polar_table_index(q, j);
        const cplx g = alias_combine({pn.re - ps.im, pn.im + ps.re}, {nn.re - ns.im, nn.im + ns.re},
                                     a.pphase ? a.pphase[t] : phase(j, N, true), true);
        u = cmul(g, polar_chirp(a, q, j, N));
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
    const int i = q + 1, N = 4 * i;
    const PolarRowOut o = polar_row_out(a, q, cc);
    cplx* out = o.p;
    const double* mn = full + static_cast<std::size_t>(cc) * a.npix + 2LL * i * (i - 1);
    const double* ms = full + static_cast<std::size_t>(cc) * a.npix + a.npix - 2LL * i * (i + 1);
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < o.len; j += gridDim.x * blockDim.x) {
      cplx v = {0.0, 0.0};
      if (j < N) v = cmul({mn[j], ms[j]}, conjc(polar_chirp(a, q, j, N)));
      out[j] = v;
    }
  }
}

/// F of every ring and m <= its mlim (the Legendre adjoint reads no other entry): blocks over
/// (column, ring) rows in y, threads over m.
template <bool POLAR_ONLY>
__global__ void k_unalias(FftArgs a) {
  const int R = 4 * a.nside - 1;
  const int N = 4 * a.nside, nh = N / 2 + 1, nbelt = 2 * a.nside + 1;
  const int rows = POLAR_ONLY ? 2 * (a.nside - 1) : R;  // rings per column
  for (int row = blockIdx.y; row < a.ncc * rows; row += gridDim.y) {
    int r = row % rows;
    const int cc = row / rows;
    // POLAR_ONLY: north cap rings 0 .. nside - 2, then south cap rings 3 nside .. R - 1
    if (POLAR_ONLY && r >= a.nside - 1) r += 2 * a.nside + 1;
    const int mmax = a.mlim[pair_of_ring(a.nside, r)];
    const RingLoc L = locate(a.nside, r);
    cplx* out = a.F + (POLAR_ONLY ? static_cast<std::size_t>(cc) * R + r
                                  : static_cast<std::size_t>(row)) * (a.lmax + 1);
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
        // chirp(N - k) = chirp(k): (N - k)^2 = k^2 (mod 2 N) for even N.
        const int q = south ? R - 1 - r : r;
        const cplx c = conjc(polar_chirp(a, q, k, L.N));
        const cplx y = cmul(c, brow[k]);
        const cplx z = conjc(cmul(c, brow[kk]));
        // polar_north / polar_south, written out (see there).
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

/// Ring pairs per thread of the single-column spin-0 synthesis (ALMAGEST_SHT_SYN_P: 2 or 4).
static int synthesis_pairs_override() {
  static const int v = pairs_override("ALMAGEST_SHT_SYN_P");
  return v;
}

void launch_legendre_synthesis(const Spin0Args& a, cudaStream_t s) {
  // Launch shapes measured on the H200 (docs/benchmarks.md): single spin-0 transforms take four
  // ring pairs per thread, two while one tile of kThreads * 2 holds every pair (nside <= 128:
  // 0.052 against 0.061 ms at nside 128); batched columns two pairs and two or four columns;
  // spin 2 two pairs (one with two columns), 64-degree chunks (1.4% faster than 32 at 2048).
  if (a.spin == 0) {
    k_obasis_prepare<<<dim3(a.lmax + 1, a.ncols), 128, 0, s>>>(static_cast<const LegendreArgs&>(a));
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
    k_spin2_prepare<<<dim3(a.lmax + 1, a.ncols), 128, 0, s>>>(static_cast<const LegendreArgs&>(a));
    CUDA_CHECK_LAUNCH();
    if (a.ncols >= 2)
      launch_synth2_t<1, 2>(static_cast<const LegendreArgs&>(a), s);
    else
      launch_synth2_t<2, 1>(static_cast<const LegendreArgs&>(a), s);
  }
}

/// Grid of the polar row kernels: x over a row's longest class, y over rows.
dim3 polar_grid(const FftArgs& a) {
  int mmax = 1;  // the longest row a kernel writes: N into PUin, M into PU
  if (a.PUin)
    mmax = std::max(mmax, 4 * (a.nside - 1));
  else
    for (int c = 0; c < a.nclass; ++c) mmax = std::max(mmax, a.cls[c].M);
  const long long rows = static_cast<long long>(a.ncc) * (a.nside - 1);
  return dim3((mmax + 255) / 256, static_cast<unsigned>(std::min<long long>(rows, 65535)));
}

/// Grid of the row kernels: x over `len` entries of a row (256 threads each), y over rows.
dim3 row_grid(long long len, long long rows) {
  return dim3(static_cast<unsigned>((len + 255) / 256), static_cast<unsigned>(std::min<long long>(rows, 65535)));
}

/// The polar chirp and phase tables (FftArgs::pchirp, pphase): blocks over ring pairs q.
__global__ void k_polar_tables(int nside, cplx* pchirp, cplx* pphase) {
  for (int q = blockIdx.x; q < nside - 1; q += gridDim.x) {
    const int N = 4 * (q + 1);
    for (int j = threadIdx.x; j < N; j += blockDim.x) {
      pchirp[polar_table_index(q, j)] = chirp(j, N);
      pphase[polar_table_index(q, j)] = phase(j, N, true);
    }
  }
}

void launch_polar_tables(int nside, cplx* pchirp, cplx* pphase, cudaStream_t s) {
  if (nside < 2) return;
  k_polar_tables<<<std::min(nside - 1, 4096), 256, 0, s>>>(nside, pchirp, pphase);
  CUDA_CHECK_LAUNCH();
}

void launch_start_table(const LegendreArgs& a, const long long* soff, double* start_v,
                        short* start_e, double* pair_z, cudaStream_t s) {
  k_start_table<<<a.lmax + 1, 128, 0, s>>>(a, soff, start_v, start_e, pair_z);
  CUDA_CHECK_LAUNCH();
}

void launch_alias_synthesis(const FftArgs& a, Rows rows, cudaStream_t s) {
  if (rows != Rows::Polar) {
    const long long rows = static_cast<long long>(a.ncc) * (2 * a.nside + 1);
    k_alias_belt<<<row_grid(2 * a.nside + 1, rows), 256, 0, s>>>(a);
    CUDA_CHECK_LAUNCH();
  }
  if (rows != Rows::Belt && a.nclass > 0) {
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
                         std::int64_t map_size, bool belt, Rows rows, cudaStream_t s) {
  if (!pixels) {
    if (belt && rows != Rows::Polar) {
      k_assemble_belt<<<row_grid(4 * a.nside, static_cast<long long>(a.ncc) * (2 * a.nside + 1)), 256, 0, s>>>(a, map);
      CUDA_CHECK_LAUNCH();
    }
    if (rows != Rows::Belt && a.nclass > 0) {
      const long long ncap = 2LL * a.nside * (a.nside - 1);
      k_assemble_polar<<<dim3(static_cast<unsigned>(std::min<long long>((ncap + 255) / 256, 8192)), a.ncc), 256, 0, s>>>(a, map);
    }
  } else {
    k_assemble<<<grid_for(static_cast<long long>(a.ncc) * map_size), 256, 0, s>>>(a, map, pixels,
                                                                                   map_size);
  }
  CUDA_CHECK_LAUNCH();
}

void launch_load_map(const FftArgs& a, const double* full_map, bool belt, Rows rows,
                     cudaStream_t s) {
  if (belt && rows != Rows::Polar) {
    const long long rows = static_cast<long long>(a.ncc) * (2 * a.nside + 1);
    k_load_belt<<<row_grid(4 * a.nside, rows), 256, 0, s>>>(a, full_map);
    CUDA_CHECK_LAUNCH();
  }
  if (rows != Rows::Belt && a.nclass > 0) {
    k_load_polar<<<polar_grid(a), 256, 0, s>>>(a, full_map);
    CUDA_CHECK_LAUNCH();
  }
}

void launch_unalias_adjoint(const FftArgs& a, bool polar_only, cudaStream_t s) {
  const long long rows = polar_only ? 2LL * (a.nside - 1) : 4LL * a.nside - 1;
  if (rows == 0) return;
  if (polar_only)
    k_unalias<true><<<row_grid(a.lmax + 1, static_cast<long long>(a.ncc) * rows), 256, 0, s>>>(a);
  else
    k_unalias<false><<<row_grid(a.lmax + 1, static_cast<long long>(a.ncc) * rows), 256, 0, s>>>(a);
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
