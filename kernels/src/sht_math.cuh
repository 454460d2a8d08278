#pragma once
// Shared math of the CUDA SHT (host and device): HEALPix ring geometry, the scaled start values
// and three-term recursions of the normalised Wigner-d / Legendre functions, and the spin-2
// combinations, and the layout of the polar-cap Bluestein rows (host only). Compiled by nvcc for
// the kernels and by plain C++ for host-side twins and tests.
//
// lambda_l(theta) = sqrt((2l+1)/(4 pi)) d^l_{m,s'}(theta), s' in {0, +2, -2}, for fixed m >= 0.
// Recursion (l > l0 = max(m, |s'|)): lambda_l = (alpha_l z - beta_l) lambda_{l-1} - gamma_l
// lambda_{l-2}, with beta of the s' = -2 chain of opposite sign. Values below 2^-600 are carried
// as (v, e) with value = v * 2^(600 e), e <= 0, and count only once e == 0 (scale tracking).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#ifdef __CUDACC__
#define SHT_HD __host__ __device__ __forceinline__
#else
#define SHT_HD inline
#endif

namespace almagest::kernels::sht {

struct alignas(16) cplx {
  double re, im;
};
SHT_HD cplx cmul(cplx a, cplx b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }
SHT_HD cplx conjc(cplx a) { return {a.re, -a.im}; }

inline constexpr int kScaleBits = 600;
inline constexpr double kBig = 0x1p300;     // rescale when a scaled value grows past this
inline constexpr double kDown = 0x1p-600;   // 2^-kScaleBits
inline constexpr double kPi = 3.141592653589793238462643383279502884;

/// 2^k for |k| <= 1000 without ldexp (device friendly).
SHT_HD double pow2i(int k) {
  // Build from the IEEE exponent field; valid for -1022 <= k <= 1023.
  union {
    std::int64_t i;
    double d;
  } u;
  u.i = static_cast<std::int64_t>(k + 1023) << 52;
  return u.d;
}

/// Splits x > 0 into mantissa in [0.5, 1) and exponent (frexp without library calls).
SHT_HD void split(double x, double& mant, int& ex) {
  union {
    double d;
    std::int64_t i;
  } u;
  u.d = x;
  const int e = static_cast<int>((u.i >> 52) & 0x7ff);
  ex = e - 1022;
  u.i = (u.i & ~(static_cast<std::int64_t>(0x7ff) << 52)) | (static_cast<std::int64_t>(1022) << 52);
  mant = u.d;
}

/// x^n for 0 < x <= 1 and n >= 0 as mant * 2^ex, mant in [0.5, 1), without underflow.
SHT_HD void powi_scaled(double x, int n, double& mant, int& ex) {
  double rm = 1.0;
  int re = 0;
  double bm;
  int be;
  split(x, bm, be);
  while (n > 0) {
    if (n & 1) {
      double t;
      int te;
      split(rm * bm, t, te);
      rm = t;
      re += te + be;
    }
    n >>= 1;
    if (n) {
      double t;
      int te;
      split(bm * bm, t, te);
      bm = t;
      be = 2 * be + te;
    }
  }
  split(rm, mant, ex);
  ex += re;
}

/// value = mant * 2^ex  ->  (v, e) with value = v * 2^(kScaleBits e), e <= 0, |v| <= 1.
SHT_HD void to_scaled(double mant, int ex, double& v, int& e) {
  e = 0;
  if (ex < 0) e = -((-ex) / kScaleBits);
  v = mant * pow2i(ex - kScaleBits * e);
}

/// One HEALPix ring pair: north ring r (0-based from the north pole), its mirror R-1-r.
struct RingPair {
  double z;    ///< cos theta of the north ring (>= 0)
  double omz;  ///< 1 - z, accurate near the pole
  double opz;  ///< 1 + z
  double sth;  ///< sin theta
};

/// Geometry of ring r (0-based, 0 <= r < 4 nside - 1): pixels, first pixel, phi of pixel 0,
/// cos theta, 1 - cos theta, sin theta.
struct RingInfo {
  int nphi;
  std::int64_t start;
  double phi0, z, omz, sth;
};

SHT_HD RingInfo ring_info(int nside, int r) {
  RingInfo g;
  const int i = r + 1;  // 1-based ring index
  const int nrings = 4 * nside - 1;
  const double n = nside;
  const std::int64_t npix = 12LL * nside * nside;
  const std::int64_t ncap = 2LL * nside * (nside - 1);
  if (i < nside) {  // north polar cap
    g.nphi = 4 * i;
    g.start = 2LL * i * (i - 1);
    g.phi0 = kPi / (4.0 * i);
    g.omz = static_cast<double>(i) * i / (3.0 * n * n);
    g.z = 1.0 - g.omz;
    g.sth = sqrt(g.omz * (2.0 - g.omz));
  } else if (i <= 3 * nside) {  // equatorial belt
    g.nphi = 4 * nside;
    g.start = ncap + static_cast<std::int64_t>(i - nside) * 4 * nside;
    g.phi0 = ((i - nside) & 1) ? 0.0 : kPi / (4.0 * n);
    g.z = (2.0 * n - i) * 2.0 / (3.0 * n);
    g.omz = 1.0 - g.z;
    g.sth = sqrt((1.0 - g.z) * (1.0 + g.z));
  } else {  // south polar cap
    const int ii = nrings + 1 - i;  // 1-based from the south pole
    g.nphi = 4 * ii;
    g.start = npix - 2LL * ii * (ii + 1);
    g.phi0 = kPi / (4.0 * ii);
    const double omz_s = static_cast<double>(ii) * ii / (3.0 * n * n);  // 1 + z here
    g.z = -(1.0 - omz_s);
    g.omz = 2.0 - omz_s;
    g.sth = sqrt(omz_s * (2.0 - omz_s));
  }
  return g;
}

SHT_HD int l0_of(int spin, int m) { return spin == 0 ? m : (m > 2 ? m : 2); }

/// ducc0's mlim: modes m above it are negligible on a ring with this sin/cos theta.
SHT_HD int mlim_of(int lmax, int spin, double sth, double cth) {
  double ofs = lmax * 0.01;
  if (ofs < 100.0) ofs = 100.0;
  const double b = -2.0 * spin * fabs(cth);
  const double t1 = lmax * sth + ofs;
  const double c = static_cast<double>(spin) * spin - t1 * t1;
  const double discr = b * b - 4.0 * c;
  if (discr <= 0) return lmax;
  double res = (-b + sqrt(discr)) / 2.0;
  if (res > lmax) res = lmax;
  return static_cast<int>(res + 0.5);
}

/// Recursion coefficients for (l, m), l > l0. spin 0: alpha, gamma (beta = 0).
/// spin 2: alpha, beta (of the +2 chain), gamma.
SHT_HD void rec_coef(int spin, int l, int m, double& alpha, double& beta, double& gamma) {
  const double L = l - 1, mm = m;
  if (spin == 0) {
    alpha = sqrt((4.0 * l * l - 1.0) / (static_cast<double>(l) * l - mm * mm));
    const double lp = l - 1;
    const double ap = (lp > mm) ? sqrt((4.0 * lp * lp - 1.0) / (lp * lp - mm * mm)) : 0.0;
    gamma = (lp > mm) ? alpha / ap : 0.0;
    beta = 0.0;
    return;
  }
  const double s2 = static_cast<double>(spin) * spin;
  const double D = L * sqrt(((L + 1) * (L + 1) - mm * mm) * ((L + 1) * (L + 1) - s2));
  alpha = sqrt((2 * L + 3) / (2 * L + 1)) * (2 * L + 1) * L * (L + 1) / D;
  beta = alpha * mm * spin / (L * (L + 1));
  const double g2 = (L * L - mm * mm) * (L * L - s2);
  gamma = g2 > 0 ? sqrt((2 * L + 3) / (2 * L - 1)) * (L + 1) * sqrt(g2) / D : 0.0;
}

/// Normalised recursion for fixed m (host precomputation): with lambda_l = N_l mu_l,
///   mu_l = (A_l z - B_l) mu_{l-1} - mu_{l-2}   (+B_l for the -2 chain),
/// N_{l0} = N_{l0+1} = 1, N_l = gamma_l N_{l-2}, A_l = alpha_l N_{l-1} / N_l, B_l = beta_l
/// N_{l-1} / N_l. Fills entries l = l0..lmax of A, B, N (offset so that A[l] is degree l).
inline void fill_mu_table(int spin, int lmax, int m, double* A, double* B, double* N) {
  const int l0 = l0_of(spin, m);
  if (l0 > lmax) return;
  A[l0] = B[l0] = 0.0;
  N[l0] = 1.0;
  for (int l = l0 + 1; l <= lmax; ++l) {
    double al, be, ga;
    rec_coef(spin, l, m, al, be, ga);
    N[l] = (l == l0 + 1) ? 1.0 : ga * N[l - 2];
    A[l] = al * N[l - 1] / N[l];
    B[l] = be * N[l - 1] / N[l];
  }
}

// Spin 0 in the odd-parity basis: a step-2 recursion in x^2 = cos^2 theta.
// For fixed m let c_l = sqrt((l^2 - m^2) / (4 l^2 - 1)) (c_m = 0), so that
// x lambda_l = c_{l+1} lambda_{l+1} + c_l lambda_{l-1}. With O_j = lambda_j / x for the odd
// chain j = m + 1 + 2k (k >= 0; a polynomial in x^2 times sin^m theta):
//   even chain:  lambda_l = c_{l+1} O_{l+1} + c_l O_{l-1}          (l - m even)
//   recursion:   x^2 O_j = c_{j+1} c_{j+2} O_{j+2} + (c_j^2 + c_{j+1}^2) O_j + c_j c_{j-1} O_{j-2}
// so one chain O serves two degrees. Normalised, O_j = N_k mu_k with
//   mu_k = (A_k x^2 + B_k) mu_{k-1} - mu_{k-2},  mu_0 = lambda_m / c_{m+1},  A_0 = B_0 = 0,
// and starting the loop from (mu_{-2}, mu_{-1}) = (-mu_0, 0) makes k = 0 an ordinary step.
// Synthesis at +-x:  f = sum_k mu_k (w1_k +- x w2_k), w1_k = u_k a_{j-1} + v_k a_{j+1},
// w2_k = N_k a_j (a_l = 0 above lmax), u_k = N_k c_j, v_k = N_k c_{j+1}.
// Adjoint: with S1_k = sum_rings mu_k (F_N + F_S), S2_k = sum_rings mu_k x (F_N - F_S),
//   a_{m+2k} = u_k S1_k + v_{k-1} S1_{k-1},  a_{m+2k+1} = N_k S2_k.
// Per two degrees this costs 2 recursion operations instead of 4 (ducc0 does the same).

/// Steps k of the odd chain for mode m: j = m + 1 + 2k <= lmax + 1.
SHT_HD int obasis_steps(int lmax, int m) { return m > lmax ? 0 : (lmax - m) / 2 + 1; }

/// c_l for mode m (0 for l <= m).
SHT_HD double obasis_c(int l, int m) {
  if (l <= m) return 0.0;
  const double lm = static_cast<double>(l - m) * static_cast<double>(l + m);
  const double d = 4.0 * static_cast<double>(l) * l - 1.0;
  return sqrt(lm / d);
}

struct ObasisNorm {
  double N, u, v;  ///< N_k, u_k = N_k c_j, v_k = N_k c_{j+1}
};

/// Fills k = 0..obasis_steps-1 of the recursion coefficients (A, B per k, interleaved in ab)
/// and the norms for mode m (host precomputation).
inline void fill_obasis(int lmax, int m, double* ab, ObasisNorm* nrm) {
  const int K = obasis_steps(lmax, m);
  if (K == 0) return;
  double Nkm2 = 1.0, Nkm1 = 1.0;  // N_{k-2}, N_{k-1}
  ab[0] = ab[1] = 0.0;
  for (int k = 0; k < K; ++k) {
    double Nk = 1.0;
    if (k >= 1) {
      const int jp = m + 1 + 2 * (k - 1);  // the chain index of step k - 1
      const double c0 = obasis_c(jp, m), c1 = obasis_c(jp + 1, m), c2 = obasis_c(jp + 2, m);
      const double d = c0 * c0 + c1 * c1, g = c1 * c2;
      Nk = (k == 1) ? 1.0 : obasis_c(jp, m) * obasis_c(jp - 1, m) * Nkm2 / g;
      const double A = Nkm1 / (g * Nk);
      ab[2 * k] = A;
      ab[2 * k + 1] = -d * A;
      Nkm2 = Nkm1;
      Nkm1 = Nk;
    }
    const int j = m + 1 + 2 * k;
    nrm[k] = {Nk, Nk * obasis_c(j, m), Nk * obasis_c(j + 1, m)};
  }
}

/// nu_m = prod_{k=1..m} sqrt((2k-1)/(2k)) (host precomputation).
inline double nu_of(int m) {
  double v = 1.0;
  for (int k = 1; k <= m; ++k) v *= sqrt((2.0 * k - 1.0) / (2.0 * k));
  return v;
}

/// Start values at l0 for one ring pair (north ring values), scaled.
/// spin 0: lam (v0, e). spin 2: lp (+2 chain), lm (-2 chain), shared e.

SHT_HD void start_spin0(int m, double nu_m, const RingPair& g, double& v, int& e) {
  double mant;
  int ex;
  powi_scaled(g.sth, m, mant, ex);
  const double pre = ((m & 1) ? -1.0 : 1.0) * sqrt((2.0 * m + 1.0) / (4.0 * kPi)) * nu_m;
  to_scaled(mant * pre, ex, v, e);
}

/// The spin-0 odd chain of mode m on a ring pair (odd-parity basis): its start (mu_{-2},
/// mu_{-1}) = (-mu_0, 0) with mu_0 = lambda_m / c_{m+1}, scaled; one step mu_k = (A x^2 + B)
/// mu_{k-1} - mu_{k-2} (two FMAs); the scale check the kernels make every few steps. The CUDA
/// kernels and the host models of them (tests, tests/bench/sht_chain_count) run these.
SHT_HD void odd_start(int m, double nu_m, const RingPair& g, double& v0, double& v1, int& e) {
  double mu0;
  start_spin0(m, nu_m, g, mu0, e);
  mu0 *= sqrt(2.0 * m + 3.0);
  v0 = -mu0;
  v1 = 0.0;
}
SHT_HD void odd_step(double A, double B, double x2, double& v0, double& v1) {
  const double vn = fma(fma(A, x2, B), v1, -v0);
  v0 = v1;
  v1 = vn;
}
SHT_HD void odd_rescale(int& e, double& v0, double& v1) {
  if (e < 0 && fabs(v1) > kBig) {
    v0 *= kDown;
    v1 *= kDown;
    ++e;
  }
}

SHT_HD void start_spin2(int m, double nu_m, const RingPair& g, double& vp, double& vm, int& e) {
  const double n2 = sqrt(5.0 / (4.0 * kPi));
  if (m == 0) {
    vp = vm = n2 * sqrt(3.0 / 8.0) * g.sth * g.sth;
    e = 0;
    return;
  }
  if (m == 1) {
    vp = n2 * g.sth * g.opz * 0.5;
    vm = -n2 * g.sth * g.omz * 0.5;
    e = 0;
    return;
  }
  double mant;
  int ex;
  powi_scaled(g.sth, m - 2, mant, ex);
  const double pre = ((m & 1) ? -1.0 : 1.0) * sqrt((2.0 * m + 1.0) / (4.0 * kPi)) * nu_m *
                     sqrt((m - 1.0) * m / ((m + 1.0) * (m + 2.0)));
  // Shared scale from the common factor; the (1 +- z)^2 factors are <= 4.
  double v;
  to_scaled(mant * pre, ex, v, e);
  vp = v * g.opz * g.opz;
  vm = v * g.omz * g.omz;
}

/// Polar-cap rings come in pairs of equal size N = 4 (q + 1) (north ring q, south ring
/// 4 nside - 2 - q, q = 0 .. nside - 2). Both rings of a pair share one complex Bluestein row
/// (north in the real part, south in the imaginary part: their spectra are Hermitian). Rows are
/// grouped into classes of equal Bluestein length M >= 2 N - 1; a class's rows are contiguous
/// per column: PU = [class][column][row of class][M], one batched cuFFT per class.
struct PolarClass {
  int M;              ///< Bluestein length
  int rows;           ///< ring pairs (rows) in the class
  int qlo;            ///< first q of the class
  long long cbase;    ///< PU elements per column of the classes before this one, and the
                      ///< class's offset in the chirp-spectrum table (one column's layout)
};
inline constexpr int kMaxPolarClasses = 32;

/// Polar classes (PolarClass above): each ring pair q takes the smallest length
/// 2^a or 3 * 2^a >= 2 N - 1 (N = 4 (q + 1)); adjacent classes are merged while a class
/// boundary saves fewer than kMergeElements padded elements over the plan's columns (two more
/// FFT launches cost about as much as moving that many), and to at most kMaxPolarClasses.
/// Host only; cls_of[q] receives the class of ring pair q.
inline std::vector<PolarClass> polar_classes(int nside, int max_cols,
                                             std::vector<unsigned char>& cls_of) {
  constexpr long long kMergeElements = 1LL << 17;
  std::vector<PolarClass> cls;
  for (int q = 0; q + 1 < nside; ++q) {
    const long long need = 2LL * 4 * (q + 1) - 1;
    long long M = 8;
    while (M < need) M *= 2;
    if (M / 4 * 3 >= need) M = M / 4 * 3;
    if (!cls.empty() && cls.back().M == M) {
      ++cls.back().rows;
    } else {
      cls.push_back({static_cast<int>(M), 1, q, 0});
    }
  }
  while (cls.size() > 1) {
    std::size_t best = 0;
    long long saving = -1;
    for (std::size_t c = 0; c + 1 < cls.size(); ++c) {
      const long long sv = static_cast<long long>(cls[c].rows) * (cls[c + 1].M - cls[c].M) * max_cols;
      if (saving < 0 || sv < saving) {
        saving = sv;
        best = c;
      }
    }
    if (saving >= kMergeElements && cls.size() <= static_cast<std::size_t>(kMaxPolarClasses)) break;
    cls[best + 1].rows += cls[best].rows;
    cls[best + 1].qlo = cls[best].qlo;
    cls.erase(cls.begin() + static_cast<long long>(best));
  }
  long long base = 0;
  cls_of.assign(nside > 1 ? nside - 1 : 1, 0);
  for (std::size_t c = 0; c < cls.size(); ++c) {
    cls[c].cbase = base;
    base += static_cast<long long>(cls[c].rows) * cls[c].M;
    for (int q = cls[c].qlo; q < cls[c].qlo + cls[c].rows; ++q) cls_of[q] = static_cast<unsigned char>(c);
  }
  return cls;
}

/// Two groups of polar classes for two streams: largest class first (rows M padded elements per
/// column), each to the group with less work so far, the groups starting with `start0` and
/// `start1` of work queued before them. Returns each class's group (0 or 1); the groups' totals
/// then differ by at most the largest class. Host only.
inline std::vector<char> polar_groups(const std::vector<PolarClass>& cls, long long start0,
                                      long long start1) {
  std::vector<std::size_t> order(cls.size());
  for (std::size_t c = 0; c < order.size(); ++c) order[c] = c;
  auto size_of = [&](std::size_t c) { return static_cast<long long>(cls[c].rows) * cls[c].M; };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return size_of(x) > size_of(y); });
  long long load[2] = {start0, start1};
  std::vector<char> group(cls.size(), 0);
  for (std::size_t c : order) {
    const int g = load[1] < load[0] ? 1 : 0;
    group[c] = static_cast<char>(g);
    load[g] += size_of(c);
  }
  return group;
}

}  // namespace almagest::kernels::sht
