// Device kernels of the SHT: Legendre stage (synthesis and adjoint, spin 0 and 2, batched
// columns), the aliasing / Bluestein glue around cuFFT, and map gather/scatter.
// The math is in sht_math.cuh (checked against healpix_cxx by a host twin, see docs/sht.md).
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
__device__ __forceinline__ cplx phase(long long m, int N, bool shifted) {
  if (!shifted) return {1.0, 0.0};
  double s, c;
  sincospi(static_cast<double>(m % (2LL * N)) / N, &s, &c);
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

/// One step of the normalised recursion mu_l = (A z -+ B) mu_{l-1} - mu_{l-2} (ga unused).
template <int SPIN>
__device__ __forceinline__ void step(double al, double be, double ga, double z, double& v0,
                                     double& v1, double& w0, double& w1) {
  const double t = al * z;
  if (SPIN == 0) {
    const double vn = fma(t, v1, -v0);
    v0 = v1;
    v1 = vn;
  } else {
    const double vn = fma(t - be, v1, -v0);
    const double wn = fma(t + be, w1, -w0);
    v0 = v1;
    v1 = vn;
    w0 = w1;
    w1 = wn;
  }
}

/// Scale tracking, checked every few steps (growth between checks stays far below 2^700).
template <int SPIN>
__device__ __forceinline__ void rescale(int& e, double& v0, double& v1, double& w0, double& w1) {
  if (e < 0) {
    const double big = SPIN ? fmax(fabs(v1), fabs(w1)) : fabs(v1);
    if (big > kBig) {
      v1 *= kDown;
      v0 *= kDown;
      w1 *= kDown;
      w0 *= kDown;
      ++e;
    }
  }
}

/// A chain whose output is discarded (no ring pair, or m above the pair's mlim) runs on zeros
/// at scale 0, so that it never keeps its warp off the fast path below.
__device__ __forceinline__ void idle_chain(double& v1, double& w1, int& e) {
  v1 = 0.0;
  w1 = 0.0;
  e = 0;
}

/// Starts the recursion chain of ring pair p (-1: none) for mode m: z, the first values and the
/// scale. Returns whether the chain's output counts; one that does not (no pair, or m above the
/// pair's mlim) idles.
template <int SPIN>
__device__ __forceinline__ bool start_chain(const LegendreArgs& a, int m, double nu, int p,
                                            double& z, double& v0, double& v1, double& w0,
                                            double& w1, int& e) {
  const bool on = p >= 0 && m <= a.mlim[p];
  const RingPair g = pair_geometry(a.nside, p >= 0 ? p : 0);
  z = g.z;
  v0 = w0 = 0.0;
  if (SPIN == 0) {
    start_spin0(m, nu, g, v1, e);
    w1 = 0.0;
  } else {
    start_spin2(m, nu, g, v1, w1, e);
  }
  if (!on) idle_chain(v1, w1, e);
  return on;
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

/// Recursion coefficients A_l, B_l (spin 2) and normalisation N_l of l = lc .. lc + LC - 1 into
/// shared memory (zeros above lmax, where the chains then run on without effect).
template <int SPIN, int LC>
__device__ __forceinline__ void load_coefficients(const LegendreArgs& a, std::size_t mst, int lc,
                                                  double* s_a, double* s_b, double* s_g) {
  for (int i = threadIdx.x; i < LC; i += kThreads) {
    const int l = lc + i;
    double al = 0, be = 0, nl = 0;
    if (l <= a.lmax) {
      al = a.tabA[mst + l];
      be = SPIN ? a.tabB[mst + l] : 0.0;
      nl = a.tabN[mst + l];
    }
    s_a[i] = al;
    s_b[i] = be;
    s_g[i] = nl;
  }
}

// ---------------------------------------------------------------------------------------------
// Legendre synthesis: block (m, column group), threads over active ring pairs, P pairs each.
template <int SPIN, int P, int NC>
__global__ void __launch_bounds__(kThreads) k_legendre_synthesis(LegendreArgs a) {
  constexpr int LC = 64;
  constexpr int NCOMP = SPIN ? 2 : 1;
  constexpr int NCC = NC * NCOMP;
  const int m = blockIdx.x;
  const int col0 = blockIdx.y * NC;
  const int lmax = a.lmax;
  const int R = 4 * a.nside - 1;
  const std::size_t nalm = static_cast<std::size_t>(lmax + 1) * (lmax + 2) / 2;
  const std::size_t mst = static_cast<std::size_t>(m) * (2 * lmax + 1 - m) / 2;  // + l
  const std::size_t fstride = static_cast<std::size_t>(R) * (lmax + 1);
  __shared__ double s_a[LC], s_b[LC], s_g[LC];
  __shared__ cplx s_alm[NCC][LC];
  const int l0 = l0_of(SPIN, m);
  const bool swap = ((l0 - m) & 1) != 0;
  const int fa = a.first_active[m];
  const double nu = a.nu[m];

  auto Fat = [&](int cc, int ring) -> cplx& {
    return a.F[(static_cast<std::size_t>(col0) * NCOMP + cc) * fstride +
               static_cast<std::size_t>(ring) * (lmax + 1) + m];
  };
  for (int i = threadIdx.x; i < fa; i += kThreads) {
    const int p = a.active[i];
    for (int cc = 0; cc < NCC; ++cc) {
      if (col0 + cc / NCOMP >= a.ncols) continue;
      Fat(cc, p) = {0.0, 0.0};
      Fat(cc, R - 1 - p) = {0.0, 0.0};
    }
  }

  for (int tile = fa; tile < a.nactive; tile += kThreads * P) {
    double z[P], v0[P], v1[P], w0[P], w1[P];
    int e[P], pr[P];
    bool on[P];
    cplx acc[P][NC][SPIN ? 8 : 2];
#pragma unroll
    for (int k = 0; k < P; ++k) {
      const int i = tile + k * kThreads + threadIdx.x;
      pr[k] = i < a.nactive ? a.active[i] : -1;
      on[k] = start_chain<SPIN>(a, m, nu, pr[k], z[k], v0[k], v1[k], w0[k], w1[k], e[k]);
#pragma unroll
      for (int c = 0; c < NC; ++c)
#pragma unroll
        for (int q = 0; q < (SPIN ? 8 : 2); ++q) acc[k][c][q] = {0.0, 0.0};
    }
    // Adds lambda (spin 0: P_ = lambda; spin 2: P_, M_ = lambda^+, lambda^-) of chain k at
    // chunk position li into the accumulators of parity par.
    auto accumulate = [&](int k, int li, int par, double P_, double M_) {
      if (SPIN == 0) {
#pragma unroll
        for (int c = 0; c < NC; ++c) {
          const cplx x = s_alm[c][li];
          acc[k][c][par].re = fma(x.re, P_, acc[k][c][par].re);
          acc[k][c][par].im = fma(x.im, P_, acc[k][c][par].im);
        }
      } else {
#pragma unroll
        for (int c = 0; c < NC; ++c) {
          const cplx aE = s_alm[2 * c][li], aB = s_alm[2 * c + 1][li];
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
      }
    };
    for (int lc = l0; lc <= lmax; lc += LC) {
      __syncthreads();
      load_coefficients<SPIN, LC>(a, mst, lc, s_a, s_b, s_g);
      __syncthreads();
      for (int i = threadIdx.x; i < NCC * LC; i += kThreads) {
        const int cc = i / LC, li = i % LC, l = lc + li;
        cplx v = {0.0, 0.0};
        if (l <= lmax && col0 + cc / NCOMP < a.ncols) {
          v = a.alm[(static_cast<std::size_t>(col0) * NCOMP + cc) * nalm + mst + l];
          if (m == 0) v.im = 0.0;
          v.re *= s_g[li];  // lambda_l = N_l mu_l: fold N_l into the coefficient
          v.im *= s_g[li];
        }
        s_alm[cc][li] = v;
      }
      __syncthreads();
      if (lc != l0 && warp_all_scaled_in(e)) {
        // Fast path: every chain of the warp counts (e = 0) and none starts in this chunk, so
        // no per-step scale selects, no rescale checks: the loop is the recursion and the FMAs.
        for (int li2 = 0; li2 < LC; li2 += 2) {
#pragma unroll
          for (int par = 0; par < 2; ++par) {
            const int li = li2 + par;
            const double al = s_a[li], be = s_b[li];
#pragma unroll
            for (int k = 0; k < P; ++k) {
              step<SPIN>(al, be, 0.0, z[k], v0[k], v1[k], w0[k], w1[k]);
              accumulate(k, li, par, v1[k], w1[k]);
            }
          }
        }
        continue;
      }
      for (int li2 = 0; li2 < LC; li2 += 2) {
#pragma unroll
        for (int par = 0; par < 2; ++par) {
          const int li = li2 + par;
          const int l = lc + li;
          const double al = s_a[li], be = s_b[li], ga = s_g[li];
#pragma unroll
          for (int k = 0; k < P; ++k) {
            if (l != l0) step<SPIN>(al, be, ga, z[k], v0[k], v1[k], w0[k], w1[k]);
            accumulate(k, li, par, e[k] == 0 ? v1[k] : 0.0, e[k] == 0 ? w1[k] : 0.0);
          }
        }
        if ((li2 & 6) == 6) {
#pragma unroll
          for (int k = 0; k < P; ++k) rescale<SPIN>(e[k], v0[k], v1[k], w0[k], w1[k]);
        }
      }
    }
#pragma unroll
    for (int k = 0; k < P; ++k) {
      if (pr[k] < 0) continue;
      const int rn = pr[k], rs = R - 1 - pr[k];
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        if (col0 + c >= a.ncols) continue;
        if (SPIN == 0) {
          cplx E = acc[k][c][0], O = acc[k][c][1];
          if (swap) {
            const cplx t = E;
            E = O;
            O = t;
          }
          if (!on[k]) E = O = {0.0, 0.0};
          Fat(c, rn) = {E.re + O.re, E.im + O.im};
          if (rs != rn) Fat(c, rs) = {E.re - O.re, E.im - O.im};
        } else {
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
          const double h = on[k] ? 0.5 : 0.0;
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
}

// ---------------------------------------------------------------------------------------------
// Legendre adjoint: block (m, column group); per l the contributions of all ring pairs are
// summed in registers (P pairs per thread), then across the block through shared memory, and
// added to the block's own alm entries (no atomics; fixed summation order).
template <int SPIN, int P, int NC>
__global__ void __launch_bounds__(kThreads) k_legendre_adjoint(LegendreArgs a) {
  constexpr int NCOMP = SPIN ? 2 : 1;
  constexpr int NCC = NC * NCOMP;
  constexpr int LC = 16 / NCC;  // l values per reduction chunk
  static_assert(LC >= 2 && LC % 2 == 0, "chunk");
  const int m = blockIdx.x;
  const int col0 = blockIdx.y * NC;
  const int lmax = a.lmax;
  const int R = 4 * a.nside - 1;
  const std::size_t nalm = static_cast<std::size_t>(lmax + 1) * (lmax + 2) / 2;
  const std::size_t mst = static_cast<std::size_t>(m) * (2 * lmax + 1 - m) / 2;
  const std::size_t fstride = static_cast<std::size_t>(R) * (lmax + 1);
  __shared__ double s_a[LC], s_b[LC], s_g[LC];
  __shared__ cplx red[LC * NCC][kThreads];
  const int l0 = l0_of(SPIN, m);
  const bool swap = ((l0 - m) & 1) != 0;
  const int fa = a.first_active[m];
  const double nu = a.nu[m];
  const int sub = threadIdx.x & 7, out = threadIdx.x >> 3;  // 16 outputs x 8 threads

  auto Fget = [&](int cc, int ring) -> cplx {
    return a.F[(static_cast<std::size_t>(col0) * NCOMP + cc) * fstride +
               static_cast<std::size_t>(ring) * (lmax + 1) + m];
  };

  for (int tile = fa; tile < a.nactive; tile += kThreads * P) {
    double z[P], v0[P], v1[P], w0[P], w1[P];
    int e[P];
    cplx f[P][NC][SPIN ? 4 : 2];  // spin 0: (rel-even, rel-odd) combos; spin 2: QE QO UE UO
#pragma unroll
    for (int k = 0; k < P; ++k) {
      const int i = tile + k * kThreads + threadIdx.x;
      const int p = i < a.nactive ? a.active[i] : -1;
      const bool on = start_chain<SPIN>(a, m, nu, p, z[k], v0[k], v1[k], w0[k], w1[k], e[k]);
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        const bool cv = on && col0 + c < a.ncols;
        if (SPIN == 0) {
          const cplx N = cv ? Fget(c, p) : cplx{0, 0};
          const cplx S = (cv && R - 1 - p != p) ? Fget(c, R - 1 - p) : cplx{0, 0};
          cplx Ev = {N.re + S.re, N.im + S.im}, Od = {N.re - S.re, N.im - S.im};
          f[k][c][swap ? 1 : 0] = Ev;
          f[k][c][swap ? 0 : 1] = Od;
        } else {
          const bool eq = R - 1 - p == p;
          const cplx qN = cv ? Fget(2 * c, p) : cplx{0, 0};
          const cplx qS = (cv && !eq) ? Fget(2 * c, R - 1 - p) : cplx{0, 0};
          const cplx uN = cv ? Fget(2 * c + 1, p) : cplx{0, 0};
          const cplx uS = (cv && !eq) ? Fget(2 * c + 1, R - 1 - p) : cplx{0, 0};
          // 1/2 of W = (P+M)/2, X = (M-P)/2 folded in here.
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
    for (int lc = l0; lc <= lmax; lc += LC) {
      load_coefficients<SPIN, LC>(a, mst, lc, s_a, s_b, s_g);
      __syncthreads();
      // Adds lambda (spin 0: P_; spin 2: P_, M_ = lambda^+, lambda^-) of chain k times the ring
      // data of parity par into sum.
      auto gather = [&](cplx (&sum)[NCC], int k, int par, double P_, double M_) {
        if (SPIN == 0) {
#pragma unroll
          for (int c = 0; c < NC; ++c) {
            const cplx x = f[k][c][par];
            sum[c].re = fma(P_, x.re, sum[c].re);
            sum[c].im = fma(P_, x.im, sum[c].im);
          }
        } else {
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
      };
      if (lc != l0 && warp_all_scaled_in(e)) {
        // Fast path (see the synthesis): no scale selects, no rescale checks.
#pragma unroll
        for (int li = 0; li < LC; ++li) {
          const int par = li & 1;
          const double al = s_a[li], be = s_b[li];
          cplx sum[NCC];
#pragma unroll
          for (int q = 0; q < NCC; ++q) sum[q] = {0.0, 0.0};
#pragma unroll
          for (int k = 0; k < P; ++k) {
            step<SPIN>(al, be, 0.0, z[k], v0[k], v1[k], w0[k], w1[k]);
            gather(sum, k, par, v1[k], w1[k]);
          }
#pragma unroll
          for (int q = 0; q < NCC; ++q) red[li * NCC + q][threadIdx.x] = sum[q];
        }
      } else {
#pragma unroll
        for (int li = 0; li < LC; ++li) {
          const int l = lc + li;
          const int par = li & 1;  // relative to l0; the swap above maps it to (l - m) parity
          const double al = s_a[li], be = s_b[li], ga = s_g[li];
          cplx sum[NCC];
#pragma unroll
          for (int q = 0; q < NCC; ++q) sum[q] = {0.0, 0.0};
#pragma unroll
          for (int k = 0; k < P; ++k) {
            if (l != l0) step<SPIN>(al, be, ga, z[k], v0[k], v1[k], w0[k], w1[k]);
            gather(sum, k, par, e[k] == 0 ? v1[k] : 0.0, e[k] == 0 ? w1[k] : 0.0);
          }
#pragma unroll
          for (int q = 0; q < NCC; ++q) red[li * NCC + q][threadIdx.x] = sum[q];
          if ((li & 7) == 7 || li == LC - 1) {
#pragma unroll
            for (int k = 0; k < P; ++k) rescale<SPIN>(e[k], v0[k], v1[k], w0[k], w1[k]);
          }
        }
      }
      __syncthreads();
      {
        cplx s = {0.0, 0.0};
#pragma unroll
        for (int t = 0; t < kThreads / 8; ++t) {
          const cplx x = red[out][sub + 8 * t];
          s.re += x.re;
          s.im += x.im;
        }
#pragma unroll
        for (int off = 4; off > 0; off >>= 1) {
          s.re += __shfl_xor_sync(0xffffffffu, s.re, off);
          s.im += __shfl_xor_sync(0xffffffffu, s.im, off);
        }
        const int l = lc + out / NCC, cc = out % NCC;
        if (sub == 0 && l <= lmax && col0 + cc / NCOMP < a.ncols) {
          cplx& dst = a.alm[(static_cast<std::size_t>(col0) * NCOMP + cc) * nalm + mst + l];
          const double nl = s_g[out / NCC];  // lambda_l = N_l mu_l
          dst.re += nl * s.re;
          dst.im = (m == 0) ? 0.0 : dst.im + nl * s.im;
        }
      }
      __syncthreads();
    }
  }
}

template <int SPIN, int P, int NC>
void launch_synth_t(const LegendreArgs& a, cudaStream_t s) {
  dim3 grid(a.lmax + 1, (a.ncols + NC - 1) / NC);
  k_legendre_synthesis<SPIN, P, NC><<<grid, kThreads, 0, s>>>(a);
  CUDA_CHECK_LAUNCH();
}
template <int SPIN, int P, int NC>
void launch_adj_t(const LegendreArgs& a, cudaStream_t s) {
  dim3 grid(a.lmax + 1, (a.ncols + NC - 1) / NC);
  k_legendre_adjoint<SPIN, P, NC><<<grid, kThreads, 0, s>>>(a);
  CUDA_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// FFT-stage glue.

/// Sum of the m-modes aliased onto bin k of a ring of N pixels (Hermitian full spectrum).
__device__ cplx alias_bin(const cplx* Frow, int k, int N, int mmax, bool shifted) {
  cplx s = {0.0, 0.0};
  for (long long m = k; m <= mmax; m += N) {
    const cplx f = cmul(Frow[m], phase(m, N, shifted));
    if (m == 0) {
      s.re += f.re;
    } else {
      s.re += f.re;
      s.im += f.im;
    }
  }
  for (long long m = (k == 0 ? N : N - k); m <= mmax; m += N) {
    const cplx f = cmul(Frow[m], phase(m, N, shifted));
    s.re += f.re;
    s.im -= f.im;
  }
  return s;
}

__global__ void k_alias_belt(FftArgs a) {
  const int N = 4 * a.nside, nh = N / 2 + 1, nbelt = 2 * a.nside + 1;
  const long long total = static_cast<long long>(a.ncc) * nbelt * nh;
  const int R = 4 * a.nside - 1;
  for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int k = static_cast<int>(t % nh);
    const long long rest = t / nh;
    const int b = static_cast<int>(rest % nbelt), cc = static_cast<int>(rest / nbelt);
    const int r = b + a.nside - 1;
    const RingLoc L = locate(a.nside, r);
    const cplx* Frow = a.F + (static_cast<std::size_t>(cc) * R + r) * (a.lmax + 1);
    a.BH[t] = alias_bin(Frow, k, N, a.lmax, L.shifted);
  }
}

/// Polar rings of i <= small_polar_rings(a) (4i pixels, 4i * 8 <= lmax + 1) have so many m per
/// bin that one thread per bin would be a long serial loop (latency-bound, the whole kernel waits
/// for it: 0.46 ms at nside 512); k_alias_polar_small sums them with a warp per bin.
__host__ __device__ inline int small_polar_rings(int nside, int lmax) {
  return min(nside - 1, (lmax + 1) / 32);
}

__global__ void k_alias_polar(FftArgs a) {
  const int npolar = 2 * (a.nside - 1), M = a.M;
  const long long total = static_cast<long long>(a.ncc) * npolar * M;
  const int R = 4 * a.nside - 1;
  const int small = small_polar_rings(a.nside, a.lmax);
  for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int j = static_cast<int>(t % M);
    const long long rest = t / M;
    const int q = static_cast<int>(rest % npolar), cc = static_cast<int>(rest / npolar);
    const int r = q < a.nside - 1 ? q : 3 * a.nside + (q - (a.nside - 1));
    const RingLoc L = locate(a.nside, r);
    cplx u = {0.0, 0.0};
    if (j < L.N) {
      if (L.N <= 4 * small) continue;  // written by k_alias_polar_small
      const cplx* Frow = a.F + (static_cast<std::size_t>(cc) * R + r) * (a.lmax + 1);
      u = cmul(alias_bin(Frow, j, L.N, a.lmax, L.shifted), chirp(j, L.N));
    }
    a.PU[t] = u;
  }
}

/// One warp per bin j of the small polar rings (both caps, every column): lanes take every 32nd
/// alias m = j + N k (and N - j + N k for the negative m), then a fixed-order shuffle sum, so the
/// result does not depend on scheduling. Bins are numbered per cap like cap pixels:
/// b = 2 i (i - 1) + j for ring i (4i bins).
__global__ void k_alias_polar_small(FftArgs a) {
  const int small = small_polar_rings(a.nside, a.lmax);
  const long long per_cap = 2LL * small * (small + 1);
  const long long total = static_cast<long long>(a.ncc) * 2 * per_cap;
  const int npolar = 2 * (a.nside - 1), M = a.M, R = 4 * a.nside - 1, mmax = a.lmax;
  const int lane = threadIdx.x & 31;
  const long long warps = static_cast<long long>(gridDim.x) * (blockDim.x >> 5);
  for (long long w = blockIdx.x * static_cast<long long>(blockDim.x >> 5) + (threadIdx.x >> 5);
       w < total; w += warps) {
    const long long b = w % per_cap;
    const long long rest = w / per_cap;
    const int south = static_cast<int>(rest % 2), cc = static_cast<int>(rest / 2);
    long long i = static_cast<long long>(0.5 * (1.0 + sqrt(1.0 + 2.0 * b)));
    while (2 * i * (i - 1) > b) --i;
    while (2 * (i + 1) * i <= b) ++i;
    const int j = static_cast<int>(b - 2 * i * (i - 1));
    const int q = south ? 2 * a.nside - 2 - static_cast<int>(i) : static_cast<int>(i) - 1;
    const int r = q < a.nside - 1 ? q : 3 * a.nside + (q - (a.nside - 1));
    const RingLoc L = locate(a.nside, r);  // L.N == 4 i
    const cplx* Frow = a.F + (static_cast<std::size_t>(cc) * R + r) * (a.lmax + 1);
    cplx sum = {0.0, 0.0};
    for (long long m = j + static_cast<long long>(L.N) * lane; m <= mmax; m += 32LL * L.N) {
      const cplx f = cmul(Frow[m], phase(m, L.N, L.shifted));
      sum.re += f.re;
      if (m != 0) sum.im += f.im;
    }
    for (long long m = (j == 0 ? L.N : L.N - j) + static_cast<long long>(L.N) * lane; m <= mmax;
         m += 32LL * L.N) {
      const cplx f = cmul(Frow[m], phase(m, L.N, L.shifted));
      sum.re += f.re;
      sum.im -= f.im;
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
      sum.re += __shfl_xor_sync(0xffffffffu, sum.re, off);
      sum.im += __shfl_xor_sync(0xffffffffu, sum.im, off);
    }
    if (lane == 0)
      a.PU[(static_cast<std::size_t>(cc) * npolar + q) * M + j] = cmul(sum, chirp(j, L.N));
  }
}

__global__ void k_polar_multiply(FftArgs a, const cplx* table) {
  const int npolar = 2 * (a.nside - 1), M = a.M;
  const long long total = static_cast<long long>(a.ncc) * npolar * M;
  for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int j = static_cast<int>(t % M);
    const int q = static_cast<int>((t / M) % npolar);
    const int row = q < a.nside - 1 ? q : (npolar - 1 - q);  // ring size 4(row+1)
    a.PU[t] = cmul(a.PU[t], table[static_cast<std::size_t>(row) * M + j]);
  }
}

__global__ void k_assemble(FftArgs a, double* map, const std::int64_t* pixels,
                           std::int64_t map_size) {
  const long long total = static_cast<long long>(a.ncc) * map_size;
  const int N = 4 * a.nside, nbelt = 2 * a.nside + 1, npolar = 2 * (a.nside - 1);
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
      const cplx y = a.PU[(static_cast<std::size_t>(cc) * npolar + L.idx) * a.M + j];
      v = cmul(chirp(j, L.N), y).re;
    }
    map[t] = v;
  }
}

__global__ void k_load_map(FftArgs a, const double* full) {
  const int N = 4 * a.nside, nbelt = 2 * a.nside + 1, npolar = 2 * (a.nside - 1), M = a.M;
  const long long nb = static_cast<long long>(a.ncc) * nbelt * N;
  const long long np = static_cast<long long>(a.ncc) * npolar * M;
  for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < nb + np;
       t += static_cast<long long>(gridDim.x) * blockDim.x) {
    if (t < nb) {
      const int j = static_cast<int>(t % N);
      const long long rest = t / N;
      const int b = static_cast<int>(rest % nbelt), cc = static_cast<int>(rest / nbelt);
      const RingLoc L = locate(a.nside, b + a.nside - 1);
      a.BR[t] = full[static_cast<std::size_t>(cc) * a.npix + L.start + j];
    } else {
      const long long u = t - nb;
      const int j = static_cast<int>(u % M);
      const long long rest = u / M;
      const int q = static_cast<int>(rest % npolar), cc = static_cast<int>(rest / npolar);
      const int r = q < a.nside - 1 ? q : 3 * a.nside + (q - (a.nside - 1));
      const RingLoc L = locate(a.nside, r);
      cplx v = {0.0, 0.0};
      if (j < L.N) {
        const double x = full[static_cast<std::size_t>(cc) * a.npix + L.start + j];
        const cplx c = conjc(chirp(j, L.N));
        v = {x * c.re, x * c.im};
      }
      a.PU[u] = v;
    }
  }
}

__global__ void k_unalias(FftArgs a) {
  const int R = 4 * a.nside - 1, mm = a.lmax + 1;
  const int N = 4 * a.nside, nh = N / 2 + 1, nbelt = 2 * a.nside + 1, npolar = 2 * (a.nside - 1);
  const long long total = static_cast<long long>(a.ncc) * R * mm;
  for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int m = static_cast<int>(t % mm);
    const long long rest = t / mm;
    const int r = static_cast<int>(rest % R), cc = static_cast<int>(rest / R);
    const RingLoc L = locate(a.nside, r);
    const int k = m % L.N;
    cplx G;
    if (!L.polar) {
      const cplx* row = a.BH + (static_cast<std::size_t>(cc) * nbelt + L.idx) * nh;
      G = k <= N / 2 ? row[k] : conjc(row[N - k]);
    } else {
      const cplx y = a.PU[(static_cast<std::size_t>(cc) * npolar + L.idx) * a.M + k];
      G = cmul(conjc(chirp(k, L.N)), y);
    }
    a.F[t] = cmul(G, conjc(phase(m, L.N, L.shifted)));
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

__global__ void k_chirp_rows(int nside, int M, cplx* rows, cplx* conj_rows) {
  const long long total = static_cast<long long>(nside - 1) * M;
  for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int j = static_cast<int>(t % M);
    const int row = static_cast<int>(t / M);
    const int N = 4 * (row + 1);
    cplx c = {0.0, 0.0};
    if (j < N)
      c = chirp(j, N);
    else if (j > M - N)
      c = chirp(M - j, N);
    rows[t] = c;
    conj_rows[t] = conjc(c);
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

void launch_legendre_synthesis(const LegendreArgs& a, cudaStream_t s) {
  if (a.spin == 0) {
    if (a.ncols >= 4)
      launch_synth_t<0, 2, 4>(a, s);
    else if (a.ncols >= 2)
      launch_synth_t<0, 2, 2>(a, s);
    else
      launch_synth_t<0, 4, 1>(a, s);
  } else {
    if (a.ncols >= 2)
      launch_synth_t<2, 1, 2>(a, s);
    else
      launch_synth_t<2, 2, 1>(a, s);
  }
}

void launch_legendre_adjoint(const LegendreArgs& a, cudaStream_t s) {
  // The adjoint reduces over the block's threads for every l through shared memory, a chunk of
  // LC = 16 / (columns x components) l per barrier. Measured on the H200 (docs/benchmarks.md):
  // batched columns go best two (spin 0) or one (spin 2) per block, whose chunks are 8 l long
  // (four columns per block: 4 l per barrier, 10-25% slower); single transforms take two ring
  // pairs per thread while one tile of kThreads * 2 holds every pair (nside <= 128), four above,
  // and for spin 2 four where there are at least 1024 pairs (-4% at nside 2048, -8% at 512).
  // Spin 0 with eight pairs (168 registers, spills) was not faster.
  if (a.spin == 0) {
    if (a.ncols >= 2)
      launch_adj_t<0, 2, 2>(a, s);
    else if (a.nactive <= kThreads * 2)
      launch_adj_t<0, 2, 1>(a, s);
    else
      launch_adj_t<0, 4, 1>(a, s);
  } else {
    if (a.ncols >= 2)
      launch_adj_t<2, 2, 1>(a, s);
    else if (a.nactive >= 2 * kThreads * 4)
      launch_adj_t<2, 4, 1>(a, s);
    else
      launch_adj_t<2, 2, 1>(a, s);
  }
}

void launch_alias_synthesis(const FftArgs& a, cudaStream_t s) {
  const long long nb = static_cast<long long>(a.ncc) * (2 * a.nside + 1) * (2 * a.nside + 1);
  k_alias_belt<<<grid_for(nb), 256, 0, s>>>(a);
  CUDA_CHECK_LAUNCH();
  if (a.nside > 1) {
    const long long np = static_cast<long long>(a.ncc) * 2 * (a.nside - 1) * a.M;
    k_alias_polar<<<grid_for(np), 256, 0, s>>>(a);
    CUDA_CHECK_LAUNCH();
    const int small = small_polar_rings(a.nside, a.lmax);
    if (small > 0) {
      const long long warps = static_cast<long long>(a.ncc) * 4LL * small * (small + 1);
      k_alias_polar_small<<<grid_for(warps * 32), 256, 0, s>>>(a);
      CUDA_CHECK_LAUNCH();
    }
  }
}

void launch_polar_multiply(const FftArgs& a, const cplx* table, cudaStream_t s) {
  if (a.nside < 2) return;
  const long long np = static_cast<long long>(a.ncc) * 2 * (a.nside - 1) * a.M;
  k_polar_multiply<<<grid_for(np), 256, 0, s>>>(a, table);
  CUDA_CHECK_LAUNCH();
}

void launch_assemble_map(const FftArgs& a, double* map, const std::int64_t* pixels,
                         std::int64_t map_size, cudaStream_t s) {
  k_assemble<<<grid_for(static_cast<long long>(a.ncc) * map_size), 256, 0, s>>>(a, map, pixels,
                                                                                 map_size);
  CUDA_CHECK_LAUNCH();
}

void launch_load_map(const FftArgs& a, const double* full_map, cudaStream_t s) {
  const long long n = static_cast<long long>(a.ncc) *
                      ((2LL * a.nside + 1) * 4 * a.nside + 2LL * (a.nside - 1) * a.M);
  k_load_map<<<grid_for(n), 256, 0, s>>>(a, full_map);
  CUDA_CHECK_LAUNCH();
}

void launch_unalias_adjoint(const FftArgs& a, cudaStream_t s) {
  const long long n = static_cast<long long>(a.ncc) * (4LL * a.nside - 1) * (a.lmax + 1);
  k_unalias<<<grid_for(n), 256, 0, s>>>(a);
  CUDA_CHECK_LAUNCH();
}

void launch_scatter(const double* map, const std::int64_t* pixels, std::int64_t nobs,
                    std::int64_t npix, int ncc, double* full, cudaStream_t s) {
  k_scatter<<<grid_for(static_cast<long long>(ncc) * nobs), 256, 0, s>>>(map, pixels, nobs, npix,
                                                                          ncc, full);
  CUDA_CHECK_LAUNCH();
}

void launch_chirp_rows(int nside, int M, cplx* rows, cplx* conj_rows, cudaStream_t s) {
  if (nside < 2) return;
  k_chirp_rows<<<grid_for(static_cast<long long>(nside - 1) * M), 256, 0, s>>>(nside, M, rows,
                                                                               conj_rows);
  CUDA_CHECK_LAUNCH();
}

void launch_scale(cplx* data, std::size_t n, double factor, cudaStream_t s) {
  if (!n) return;
  k_scale<<<grid_for(static_cast<long long>(n)), 256, 0, s>>>(data, n, factor);
  CUDA_CHECK_LAUNCH();
}

}  // namespace almagest::kernels::sht
