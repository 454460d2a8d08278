// CPU twin of the CUDA SHT's spin-0 algorithm, built from the same host/device functions
// (kernels/src/sht_math.cuh), against the CPU backend (healpix_cxx): the odd-parity basis (one
// step-2 recursion in cos^2 theta serves two degrees) with scale tracking and the mlim cutoff,
// the aliasing of F_m onto ring bins bounded by each ring's mlim with one phase per bin, and the
// pairing of the north and south polar ring of each size in one complex transform (real part
// north, imaginary part south) for the synthesis and for the adjoint. Direct DFTs stand in for
// cuFFT and Bluestein. Runs without a GPU.
#include <QtTest>

#include <cmath>
#include <complex>
#include <random>
#include <vector>

#include "almagest/sht/alm.hpp"
#include "almagest/sht/plan.hpp"
#include "../../kernels/src/sht_math.cuh"
#include "../../kernels/src/sht_tables.cuh"

using namespace almagest;
using namespace almagest::sht;
namespace km = almagest::kernels::sht;
using C = std::complex<double>;

namespace {

constexpr double kPi = 3.141592653589793238462643383279502884;

struct Tables {
  int lmax;
  std::vector<std::vector<double>> ab;          // per m: (A_k, B_k)
  std::vector<std::vector<km::ObasisNorm>> nrm;  // per m
};

Tables make_tables(int lmax) {
  Tables t{lmax, {}, {}};
  for (int m = 0; m <= lmax; ++m) {
    const int K = km::obasis_steps(lmax, m);
    t.ab.emplace_back(2 * K);
    t.nrm.emplace_back(K);
    km::fill_obasis(lmax, m, t.ab[m].data(), t.nrm[m].data());
  }
  return t;
}

/// The odd chain mu_k of mode m on a ring pair as the device runs it: (mu_{-2}, mu_{-1}) =
/// (-mu_0, 0), scale tracking checked every four steps; returns mu_k (0 while underflowed).
std::vector<double> odd_chain(const Tables& t, int m, const km::RingPair& g) {
  const int K = km::obasis_steps(t.lmax, m);
  double v0, v1;
  int e;
  km::odd_start(m, km::nu_of(m), g, v0, v1, e);
  const double x2 = g.z * g.z;
  std::vector<double> mu(K);
  for (int k = 0; k < K; ++k) {
    km::odd_step(t.ab[m][2 * k], t.ab[m][2 * k + 1], x2, v0, v1);
    mu[k] = e == 0 ? v1 : 0.0;
    if ((k & 3) == 3) km::odd_rescale(e, v0, v1);
  }
  return mu;
}

struct Ring {
  int nphi;
  std::int64_t start;
  double phi0;
  bool shifted;
};
Ring ring(int nside, int r) {
  const km::RingInfo g = km::ring_info(nside, r);
  return {g.nphi, g.start, g.phi0, g.phi0 != 0.0};
}

/// sum_{m <= mmax} F_m e^{i m phi0} aliased onto bin k (Hermitian), with the sign recurrence.
C alias(const std::vector<C>& F, int k, int N, int mmax, bool shifted) {
  C sp = 0, sn = 0;
  double sg = 1;
  for (int m = k; m <= mmax; m += N) {
    sp += sg * (m == 0 ? C(F[m].real(), 0) : F[m]);
    if (shifted) sg = -sg;
  }
  sg = 1;
  for (int m = k == 0 ? N : N - k; m <= mmax; m += N) {
    sn += sg * std::conj(F[m]);
    if (shifted) sg = -sg;
  }
  if (!shifted) return sp + sn;
  return (sp - sn) * std::polar(1.0, kPi * k / N);
}

/// ducc0's mlim of every ring pair for this spin.
std::vector<int> pair_mlims(int nside, int lmax, int spin) {
  std::vector<int> mlim(2 * nside);
  for (int p = 0; p < 2 * nside; ++p) {
    const km::RingInfo g = km::ring_info(nside, p);
    mlim[p] = km::mlim_of(lmax, spin, g.sth, g.z);
  }
  return mlim;
}

/// The FFT stage of the synthesis as the device runs it (mlim-bounded aliasing, polar rings in
/// pairs, direct DFTs): F[ring][m] (m <= the pair's mlim read) -> map.
std::vector<double> twin_fft_synthesis(int nside, const std::vector<std::vector<C>>& F,
                                       const std::vector<int>& mlim) {
  const int R = 4 * nside - 1;
  std::vector<double> map(12LL * nside * nside);
  auto pair_mlim = [&](int r) { return mlim[std::min(r, R - 1 - r)]; };
  for (int r = 0; r < R; ++r) {
    const Ring g = ring(nside, r);
    const bool polar = g.nphi < 4 * nside;
    if (polar && r > R - 1 - r) continue;  // done with its north partner
    const int N = g.nphi;
    std::vector<C> G(N);
    for (int k = 0; k < N; ++k) {
      G[k] = alias(F[r], k, N, pair_mlim(r), g.shifted);
      if (polar) G[k] += C(0, 1) * alias(F[R - 1 - r], k, N, pair_mlim(r), true);
    }
    const Ring gs = ring(nside, R - 1 - r);
    for (int j = 0; j < N; ++j) {
      C y = 0;
      for (int k = 0; k < N; ++k) y += G[k] * std::polar(1.0, 2 * kPi * double(j) * k / N);
      map[g.start + j] = y.real();
      if (polar) map[gs.start + j] = y.imag();
    }
  }
  return map;
}

std::vector<double> twin_synthesis(int nside, int lmax, const std::vector<C>& alm) {
  const Tables t = make_tables(lmax);
  const int R = 4 * nside - 1;
  std::vector<std::vector<C>> F(R, std::vector<C>(lmax + 1, 0.0));
  const auto mlim = pair_mlims(nside, lmax, 0);
  for (int p = 0; p < 2 * nside; ++p) {
    const km::RingInfo g = km::ring_info(nside, p);
    const km::RingPair rp{g.z, g.omz, 1.0 + g.z, g.sth};
    for (int m = 0; m <= mlim[p]; ++m) {
      const auto mu = odd_chain(t, m, rp);
      auto a = [&](int l) { return l > lmax ? C(0) : alm[alm_index(lmax, l, m)]; };
      C p1 = 0, p2 = 0;
      for (int k = 0; k < static_cast<int>(mu.size()); ++k) {
        const int j = m + 1 + 2 * k;
        const km::ObasisNorm& n = t.nrm[m][k];
        p1 += mu[k] * (n.u * a(j - 1) + n.v * a(j + 1));
        p2 += mu[k] * n.N * a(j);
      }
      const C f1 = p1, f2 = g.z * p2;
      F[p][m] = f1 + f2;
      if (R - 1 - p != p) F[R - 1 - p][m] = f1 - f2;
    }
  }
  return twin_fft_synthesis(nside, F, mlim);
}

/// The FFT stage of the adjoint as the device runs it: map -> F[ring][m] for m up to each pair's
/// mlim (zero above).
std::vector<std::vector<C>> twin_fft_adjoint(int nside, int lmax, const double* map,
                                             const std::vector<int>& mlim) {
  const int R = 4 * nside - 1;
  // Ring spectra Y(k) = sum_j x_j e^{-2 pi i j k / N}, polar pairs in one complex transform.
  std::vector<std::vector<C>> F(R, std::vector<C>(lmax + 1, 0.0));
  for (int r = 0; r < R; ++r) {
    const Ring g = ring(nside, r);
    const bool polar = g.nphi < 4 * nside;
    if (polar && r > R - 1 - r) continue;
    const Ring gs = ring(nside, R - 1 - r);
    const int N = g.nphi;
    std::vector<C> Y(N);
    for (int k = 0; k < N; ++k)
      for (int j = 0; j < N; ++j)
        Y[k] += C(map[g.start + j], polar ? map[gs.start + j] : 0.0) *
                std::polar(1.0, -2 * kPi * double(j) * k / N);
    const int mmax = mlim[std::min(r, R - 1 - r)];
    for (int m = 0; m <= mmax; ++m) {
      const int k = m % N, kk = k == 0 ? 0 : N - k;
      const C ph = std::polar(1.0, -m * g.phi0);
      if (!polar) {
        F[r][m] = Y[k] * ph;
      } else {
        F[r][m] = 0.5 * (Y[k] + std::conj(Y[kk])) * ph;
        F[R - 1 - r][m] = C(0, -0.5) * (Y[k] - std::conj(Y[kk])) * ph;
      }
    }
  }
  return F;
}

std::vector<C> twin_adjoint(int nside, int lmax, const std::vector<double>& map) {
  const Tables t = make_tables(lmax);
  const int R = 4 * nside - 1;
  const auto mlim = pair_mlims(nside, lmax, 0);
  const auto F = twin_fft_adjoint(nside, lmax, map.data(), mlim);
  std::vector<C> alm(alm_size(lmax));
  for (int m = 0; m <= lmax; ++m) {
    const int K = km::obasis_steps(lmax, m);
    std::vector<C> S1(K), S2(K);
    std::vector<std::vector<double>> mus;  // active pairs (mlim >= m), pole to equator
    std::vector<C> E, X;
    for (int p = 0; p < 2 * nside; ++p) {
      if (m > mlim[p]) continue;
      const km::RingInfo g = km::ring_info(nside, p);
      const km::RingPair rp{g.z, g.omz, 1.0 + g.z, g.sth};
      const C fn = F[p][m], fs = R - 1 - p != p ? F[R - 1 - p][m] : C(0);
      mus.push_back(odd_chain(t, m, rp));
      E.push_back(fn + fs);
      X.push_back(g.z * (fn - fs));
    }
    for (std::size_t i = 0; i < mus.size(); ++i)
      for (int k = 0; k < K; ++k) {
        S1[k] += mus[i][k] * E[i];
        S2[k] += mus[i][k] * X[i];
      }
    for (int l = m; l <= lmax; ++l) {
      const int k = (l - m) / 2;
      C v = ((l - m) % 2 == 0) ? t.nrm[m][k].u * S1[k] + (k > 0 ? t.nrm[m][k - 1].v * S1[k - 1] : C(0))
                               : t.nrm[m][k].N * S2[k];
      if (m == 0) v = {v.real(), 0.0};
      alm[alm_index(lmax, l, m)] = v;
    }
  }
  return alm;
}

/// A strided batched GEMM with the column-major semantics of cublasDgemmStridedBatched (alpha 1,
/// beta 0), for the host twin of the table path.
void reference_gemm(const km::GemmDesc& g, const double* A, const double* B, double* C) {
  for (int b = 0; b < g.batch; ++b) {
    const double* a = A + b * g.stride_a;
    const double* bb = B + b * g.stride_b;
    double* c = C + b * g.stride_c;
    for (int j = 0; j < g.n; ++j)
      for (int i = 0; i < g.m; ++i) {
        long double sum = 0;
        for (int k = 0; k < g.k; ++k) {
          const double av = g.trans_a ? a[k + static_cast<std::size_t>(i) * g.lda] : a[i + static_cast<std::size_t>(k) * g.lda];
          sum += static_cast<long double>(av) * bb[k + static_cast<std::size_t>(j) * g.ldb];
        }
        c[i + static_cast<std::size_t>(j) * g.ldc] = static_cast<double>(sum);
      }
  }
}

/// The table path of the CUDA backend on the host: tables (make_tables), packing and unpacking by
/// the device's element functions, the GEMMs by reference_gemm with the device's descriptors,
/// the FFT stage by the twin. alm: [ncols ncomp][nalm] -> maps [ncols ncomp][npix].
std::vector<double> table_synthesis(int nside, int lmax, int spin, int ncols, const std::vector<C>& alm) {
  const auto L = km::table_layout(nside, lmax, spin, ncols);
  const auto mlim = pair_mlims(nside, lmax, spin);
  const auto tab = km::make_tables(L, mlim);
  std::vector<double> side(L.alm_side_doubles());
  const auto* a = reinterpret_cast<const km::cplx*>(alm.data());
  for (std::size_t t = 0; t < side.size(); ++t) km::pack_alm_element(L, a, side.data(), t);
  std::vector<std::vector<double>> ring(L.ntab(), std::vector<double>(L.ring_side_doubles()));
  for (int t = 0; t < L.ntab(); ++t)
    reference_gemm(km::synthesis_gemm(L), tab.data() + L.table_offset(t, 0, 0), side.data(), ring[t].data());
  const int R = 4 * nside - 1, ncc = ncols * (spin == 0 ? 1 : 2);
  std::vector<km::cplx> F(static_cast<std::size_t>(ncc) * R * (lmax + 1), km::cplx{0.0, 0.0});
  for (std::size_t t = 0; t < static_cast<std::size_t>(lmax + 1) * L.Rp * ncols; ++t)
    km::unpack_ring_element(L, ring[0].data(), ring[L.ntab() - 1].data(), mlim.data(), F.data(), t);
  std::vector<double> maps;
  for (int cc = 0; cc < ncc; ++cc) {
    std::vector<std::vector<C>> Fr(R, std::vector<C>(lmax + 1, 0.0));
    for (int r = 0; r < R; ++r)
      for (int m = 0; m <= lmax; ++m) {
        const km::cplx f = F[(static_cast<std::size_t>(cc) * R + r) * (lmax + 1) + m];
        Fr[r][m] = {f.re, f.im};
      }
    const auto m = twin_fft_synthesis(nside, Fr, mlim);
    maps.insert(maps.end(), m.begin(), m.end());
  }
  return maps;
}

/// The adjoint of table_synthesis's path: maps [ncols ncomp][npix] -> alm [ncols ncomp][nalm].
std::vector<C> table_adjoint(int nside, int lmax, int spin, int ncols, const std::vector<double>& maps) {
  const auto L = km::table_layout(nside, lmax, spin, ncols);
  const auto mlim = pair_mlims(nside, lmax, spin);
  const auto tab = km::make_tables(L, mlim);
  const int R = 4 * nside - 1, ncc = ncols * (spin == 0 ? 1 : 2);
  const std::size_t npix = 12ULL * nside * nside;
  std::vector<km::cplx> F(static_cast<std::size_t>(ncc) * R * (lmax + 1), km::cplx{0.0, 0.0});
  for (int cc = 0; cc < ncc; ++cc) {
    const auto Fr = twin_fft_adjoint(nside, lmax, maps.data() + cc * npix, mlim);
    for (int r = 0; r < R; ++r)
      for (int m = 0; m <= lmax; ++m)
        F[(static_cast<std::size_t>(cc) * R + r) * (lmax + 1) + m] = {Fr[r][m].real(), Fr[r][m].imag()};
  }
  std::vector<std::vector<double>> ring(L.ntab(), std::vector<double>(L.ring_side_doubles()));
  for (std::size_t t = 0; t < static_cast<std::size_t>(L.batch()) * L.Rp * ncols; ++t)
    km::pack_ring_element(L, F.data(), mlim.data(), ring[0].data(), ring[L.ntab() - 1].data(), t);
  std::vector<std::vector<double>> side(L.ntab(), std::vector<double>(L.alm_side_doubles()));
  for (int t = 0; t < L.ntab(); ++t)
    reference_gemm(km::adjoint_gemm(L), tab.data() + L.table_offset(t, 0, 0), ring[t].data(), side[t].data());
  std::vector<C> alm(static_cast<std::size_t>(ncc) * L.nalm(), C(7.0, 7.0));  // poisoned
  auto* a = reinterpret_cast<km::cplx*>(alm.data());
  for (std::size_t t = 0; t < static_cast<std::size_t>(L.batch()) * L.Lp * ncols; ++t)
    km::unpack_alm_element(L, side[0].data(), side[L.ntab() - 1].data(), a, t);
  return alm;
}

ShtPlan cpu_plan(int nside, int lmax) {
  ShtConfig c;
  c.nside = nside;
  c.lmax = lmax;
  c.backend = Backend::Cpu;
  return make_plan(c);
}

/// max |twin - ref| / max |ref|, with max |ref| in `big`.
template <class T>
double max_rel(const std::vector<T>& twin, const std::vector<T>& ref, double& big) {
  double err = 0;
  big = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    err = std::max(err, std::abs(twin[i] - ref[i]));
    big = std::max(big, std::abs(ref[i]));
  }
  return err / big;
}

std::vector<C> random_alm(int lmax, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g;
  std::vector<C> a(alm_size(lmax));
  for (auto& x : a) x = {g(rng), g(rng)};
  for (int l = 0; l <= lmax; ++l) a[l] = {a[l].real(), 0.0};
  return a;
}

/// A seeded random map of `plan` and its adjoint by the CPU backend (healpix_cxx).
std::vector<double> random_map_and_adjoint(const ShtPlan& plan, std::uint64_t seed, std::vector<C>& ref) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g;
  std::vector<double> m(plan.map_size());
  for (auto& v : m) v = g(rng);
  ref.assign(plan.nalm(), 0.0);
  plan.adjoint(m, ref);
  return m;
}

}  // namespace

class TestShtDeviceMath : public QObject {
  Q_OBJECT
private slots:
  void odd_basis_equals_direct_recursion();
  void synthesis_twin_matches_cpu_backend_data();
  void synthesis_twin_matches_cpu_backend();
  void adjoint_twin_matches_cpu_backend_data();
  void adjoint_twin_matches_cpu_backend();
  void table_path_matches_cpu_backend_data();
  void table_path_matches_cpu_backend();
  void polar_classes_cover_every_ring_pair();
  void polar_groups_balance_the_two_streams();
  void skipped_adjoint_chunks_drop_only_dead_values();
};

// The odd-basis sum at +-x against a long-double direct recursion of lambda_lm, at the equator
// (x = 0), near the pole and for m close to lmax.
void TestShtDeviceMath::odd_basis_equals_direct_recursion() {
  std::mt19937_64 rng(20261201);
  std::normal_distribution<double> g;
  double worst = 0.0;
  for (int lmax : {12, 95, 383})
    for (int m : {0, 1, 2, 7, lmax / 3, lmax - 1, lmax})
      for (double x : {0.0, 0.1, 0.37, 0.83, 0.999}) {
        std::vector<double> a(lmax + 1);
        for (int l = m; l <= lmax; ++l) a[l] = g(rng);
        const long double s = std::sqrt(1.0L - static_cast<long double>(x) * x);
        long double lam = std::sqrt((2.0L * m + 1) / (4 * 3.141592653589793238462643383279502884L));
        for (int k = 1; k <= m; ++k) lam *= -std::sqrt((2.0L * k - 1) / (2.0L * k)) * s;
        long double prev = 0, ref_n = a[m] * lam, ref_s = a[m] * lam, scale = std::fabs(a[m] * lam);
        for (int l = m + 1; l <= lmax; ++l) {
          const long double al = std::sqrt((4.0L * l * l - 1) / (static_cast<long double>(l) * l - static_cast<long double>(m) * m));
          const long double lp = l - 1;
          const long double ga = lp > m ? al / std::sqrt((4 * lp * lp - 1) / (lp * lp - static_cast<long double>(m) * m)) : 0;
          const long double next = al * x * lam - ga * prev;
          prev = lam;
          lam = next;
          ref_n += a[l] * lam;
          ref_s += ((l - m) % 2 ? -1 : 1) * a[l] * lam;
          scale = std::max(scale, std::fabs(a[l] * lam));
        }
        const Tables t = make_tables(lmax);
        const km::RingPair rp{x, 1.0 - x, 1.0 + x, static_cast<double>(s)};
        const auto mu = odd_chain(t, m, rp);
        double p1 = 0, p2 = 0;
        for (int k = 0; k < static_cast<int>(mu.size()); ++k) {
          const int j = m + 1 + 2 * k;
          const auto& n = t.nrm[m][k];
          p1 += mu[k] * (n.u * a[j - 1] + (j + 1 <= lmax ? n.v * a[j + 1] : 0.0));
          p2 += mu[k] * (j <= lmax ? n.N * a[j] : 0.0);
        }
        const double err = std::max(std::fabs(p1 + x * p2 - static_cast<double>(ref_n)),
                                    std::fabs(p1 - x * p2 - static_cast<double>(ref_s))) /
                           static_cast<double>(scale);
        worst = std::max(worst, err);
      }
  // The even degrees come from differences of odd-chain values that near the equator are up to
  // ~l times larger than lambda itself, so the error grows like lmax * eps there: 1.9e-12 of the
  // largest term at lmax 383, x = 0 (the direct double recursion: 2.5e-13). Full transforms stay
  // far inside the GPU gate (2.4e-12 of max |map| at nside 1024 on the H200, docs/sht.md).
  qInfo("odd basis vs direct recursion: max error %.2e of the largest term", worst);
  QVERIFY(worst < 5e-12);
}

void TestShtDeviceMath::synthesis_twin_matches_cpu_backend_data() {
  QTest::addColumn<int>("nside");
  QTest::addColumn<int>("lmax");
  QTest::newRow("nside 4, lmax 11") << 4 << 11;
  QTest::newRow("nside 8, lmax 23") << 8 << 23;
  QTest::newRow("nside 8, lmax 30 (above 3 nside)") << 8 << 30;
  QTest::newRow("nside 16, lmax 47") << 16 << 47;
}

void TestShtDeviceMath::synthesis_twin_matches_cpu_backend() {
  QFETCH(int, nside);
  QFETCH(int, lmax);
  auto plan = cpu_plan(nside, lmax);
  const auto a = random_alm(lmax, 7 + nside);
  std::vector<double> ref(plan.map_size());
  plan.synthesis(a, ref);
  double big = 0;
  const double rel = max_rel(twin_synthesis(nside, lmax, a), ref, big);
  qInfo("synthesis twin vs healpix_cxx: %.2e relative", rel);
  QVERIFY(big > 1.0);
  QVERIFY(rel < 1e-12);
}

void TestShtDeviceMath::adjoint_twin_matches_cpu_backend_data() { synthesis_twin_matches_cpu_backend_data(); }

void TestShtDeviceMath::adjoint_twin_matches_cpu_backend() {
  QFETCH(int, nside);
  QFETCH(int, lmax);
  auto plan = cpu_plan(nside, lmax);
  std::vector<C> ref;
  const auto m = random_map_and_adjoint(plan, 99 + nside, ref);
  double big = 0;
  const double rel = max_rel(twin_adjoint(nside, lmax, m), ref, big);
  qInfo("adjoint twin vs healpix_cxx: %.2e relative", rel);
  QVERIFY(big > 1.0);
  QVERIFY(rel < 1e-12);
}

// The batched table path (ALMAGEST_SHT_LEGENDRE=tables) on the host: tables, packing and
// unpacking by the device's element functions and the GEMMs with the device's descriptors (by a
// reference GEMM), synthesis and adjoint of several columns, spin 0 and 2, against healpix_cxx.
void TestShtDeviceMath::table_path_matches_cpu_backend_data() {
  QTest::addColumn<int>("nside");
  QTest::addColumn<int>("lmax");
  QTest::addColumn<int>("spin");
  QTest::newRow("spin 0, nside 8, lmax 23") << 8 << 23 << 0;
  QTest::newRow("spin 0, nside 8, lmax 30 (above 3 nside)") << 8 << 30 << 0;
  QTest::newRow("spin 2, nside 8, lmax 23") << 8 << 23 << 2;
  QTest::newRow("spin 2, nside 4, lmax 13") << 4 << 13 << 2;
}

void TestShtDeviceMath::table_path_matches_cpu_backend() {
  QFETCH(int, nside);
  QFETCH(int, lmax);
  QFETCH(int, spin);
  const int ncols = 3, ncomp = spin == 0 ? 1 : 2;
  ShtConfig c;
  c.nside = nside;
  c.lmax = lmax;
  c.spin = spin;
  c.backend = Backend::Cpu;
  auto plan = make_plan(c);
  std::vector<C> alm;
  for (int k = 0; k < ncols * ncomp; ++k) {
    auto a = random_alm(lmax, 500 + k);
    if (spin == 2)
      for (int m = 0; m <= std::min(1, lmax); ++m)
        for (int l = m; l < 2; ++l) a[alm_index(lmax, l, m)] = 0.0;  // l < 2: ignored by spin 2
    alm.insert(alm.end(), a.begin(), a.end());
  }
  std::vector<double> ref(plan.map_size() * ncomp * ncols);
  plan.synthesis(alm, ref);
  double big = 0;
  const double rs = max_rel(table_synthesis(nside, lmax, spin, ncols, alm), ref, big);
  qInfo("table synthesis vs healpix_cxx: %.2e relative", rs);
  QVERIFY(big > 0.1);
  QVERIFY(rs < 1e-12);
  std::mt19937_64 rng(31 + nside + spin);
  std::normal_distribution<double> g;
  std::vector<double> maps(ref.size());
  for (auto& v : maps) v = g(rng);
  std::vector<C> aref(alm.size());
  plan.adjoint(maps, aref);
  const double ra = max_rel(table_adjoint(nside, lmax, spin, ncols, maps), aref, big);
  qInfo("table adjoint vs healpix_cxx: %.2e relative", ra);
  QVERIFY(big > 0.1);
  QVERIFY(ra < 1e-12);
}

// The polar Bluestein layout: classes partition the ring pairs in order, every row's length is
// 2^a or 3 * 2^a and at least 2 N - 1 (the linear convolution of two N-sequences), offsets are
// prefix sums, and the padded total per column stays at most that of one common length.
void TestShtDeviceMath::polar_classes_cover_every_ring_pair() {
  for (int nside : {2, 3, 8, 100, 128, 512, 2048, 8192})
    for (int cols : {1, 64}) {
      std::vector<unsigned char> cls_of;
      const auto cls = km::polar_classes(nside, cols, cls_of);
      QVERIFY(!cls.empty());
      QVERIFY(static_cast<int>(cls.size()) <= km::kMaxPolarClasses);
      int q = 0;
      long long base = 0, longest = 0;
      for (std::size_t c = 0; c < cls.size(); ++c) {
        QCOMPARE(cls[c].qlo, q);
        QCOMPARE(cls[c].cbase, base);
        long long M = cls[c].M;
        while (M % 2 == 0) M /= 2;
        QVERIFY(M == 1 || M == 3);
        for (int r = 0; r < cls[c].rows; ++r, ++q) {
          QVERIFY(cls[c].M >= 2 * 4 * (q + 1) - 1);
          QCOMPARE(static_cast<std::size_t>(cls_of[q]), c);
        }
        base += static_cast<long long>(cls[c].rows) * cls[c].M;
        longest = std::max<long long>(longest, cls[c].M);
      }
      QCOMPARE(q, nside - 1);
      QVERIFY(base <= longest * (nside - 1));
    }
  // nside 1 has no polar ring pairs.
  std::vector<unsigned char> none;
  QVERIFY(km::polar_classes(1, 1, none).empty());
}

// The two polar class groups of the CUDA plans' two streams: every class in one group, and the
// groups' totals (with the work queued before each) differ by at most the largest class, the
// bound of the largest-first greedy split; a group that starts far behind takes the most.
void TestShtDeviceMath::polar_groups_balance_the_two_streams() {
  for (int nside : {2, 8, 128, 512, 1024, 2048, 8192})
    for (long long start1 : {0LL, 1000LL, 5000000LL}) {
      std::vector<unsigned char> cls_of;
      const auto cls = km::polar_classes(nside, 1, cls_of);
      const auto g = km::polar_groups(cls, 0, start1);
      QCOMPARE(g.size(), cls.size());
      long long total[2] = {0, start1}, largest = 0;
      for (std::size_t c = 0; c < cls.size(); ++c) {
        QVERIFY(g[c] == 0 || g[c] == 1);
        const long long n = static_cast<long long>(cls[c].rows) * cls[c].M;
        total[static_cast<int>(g[c])] += n;
        largest = std::max(largest, n);
      }
      if (start1 <= total[0] + total[1] - start1)  // the head start can be caught up
        QVERIFY(std::llabs(total[0] - total[1]) <= largest);
      else  // all of it on the group without a head start
        QCOMPARE(total[1], start1);
    }
  // Three equal classes and a head start of one on group 1: two go to group 0.
  std::vector<km::PolarClass> three(3, km::PolarClass{16, 4, 0, 0});
  const auto g = km::polar_groups(three, 0, 64);
  QCOMPARE(std::count(g.begin(), g.end(), 0), 2L);
}

// The spin-0 adjoint's skip table (k_adjoint_skip_table) leaves out the chunks (eight steps of
// the odd chain, rescale checks after the fourth and eighth) at whose start every chain of a tile
// is dead: underflowed (e < 0) or both values below 2^-150 (chain_dead in sht_device.cuh). What
// such a chunk drops is the chain's own values over the chunk: for every mode and ring pair, here
// each dead chunk of each chain (a superset of those the table skips) must stay below 2^-100
// (sht_device.cuh claims 2^-106), and the scan must meet both kinds of dead chunk.
void TestShtDeviceMath::skipped_adjoint_chunks_drop_only_dead_values() {
  constexpr int KA = 8;
  const double below = 0x1p-150;
  for (int nside : {128, 512}) {
    const int lmax = 3 * nside - 1;
    const Tables t = make_tables(lmax);
    const auto mlim = pair_mlims(nside, lmax, 0);
    double worst = -2000.0;  // largest |value| over a dead chunk, as log2
    long long dead_under = 0, dead_small = 0, crossings = 0, chunks = 0;
    for (int p = 0; p < 2 * nside; ++p) {
      const km::RingInfo g = km::ring_info(nside, p);
      const km::RingPair rp{g.z, g.omz, 1.0 + g.z, g.sth};
      const double x2 = g.z * g.z;
      for (int m = 0; m <= mlim[p]; ++m) {
        const int K = km::obasis_steps(lmax, m);
        double v0, v1;
        int e;
        km::odd_start(m, km::nu_of(m), rp, v0, v1, e);
        for (int c0 = 0; c0 < K; c0 += KA) {
          ++chunks;
          const bool dead = e < 0 || std::max(std::fabs(v0), std::fabs(v1)) < below;
          if (dead) ++(e < 0 ? dead_under : dead_small);
          bool crossed = false;
          for (int kk = 0; kk < KA && c0 + kk < K; ++kk) {
            km::odd_step(t.ab[m][2 * (c0 + kk)], t.ab[m][2 * (c0 + kk) + 1], x2, v0, v1);
            if (dead) {
              const double mag = std::fabs(v1);
              const double lg = mag > 0 ? std::log2(mag) + km::kScaleBits * e : -2000.0;
              worst = std::max(worst, lg);
              crossed = crossed || (e == 0 && mag >= below);
            }
            if ((kk & 3) == 3 || kk == KA - 1) km::odd_rescale(e, v0, v1);
          }
          crossings += crossed;
        }
      }
    }
    qInfo("nside %d: %lld chunks, dead %lld underflowed + %lld small, %lld crossing 2^-150 "
          "inside; largest dropped value 2^%.1f",
          nside, chunks, dead_under, dead_small, crossings, worst);
    QVERIFY(dead_under > 0);
    QVERIFY(dead_small > 0);
    QVERIFY(crossings > 0);
    QVERIFY(worst < -100.0);
  }
}

QTEST_APPLESS_MAIN(TestShtDeviceMath)
#include "test_sht_device_math.moc"
