// Identities of the SHT engine on the CPU backend (healpix_cxx): adjointness, analytic Y_lm,
// least-squares inverse, iterative map2alm, cut sky, spectra, beams and smoothing.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <random>

#include "almagest/core/error.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/sht/plan.hpp"
#include "almagest/sht/spectra.hpp"

using namespace almagest;
using namespace almagest::sht;

namespace {

std::vector<Complex> random_alm(int lmax, int spin, int ncomp, int ncols, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  const std::size_t n = alm_size(lmax);
  std::vector<Complex> a(n * ncomp * ncols);
  for (auto& x : a) x = {g(rng), g(rng)};
  for (int c = 0; c < ncomp * ncols; ++c) {
    for (int l = 0; l <= lmax; ++l) a[c * n + l] = {a[c * n + l].real(), 0.0};
    if (spin == 2)
      for (int m = 0; m <= 1; ++m)
        for (int l = m; l < 2; ++l) a[c * n + alm_index(lmax, l, m)] = 0.0;
  }
  return a;
}

std::vector<double> random_map(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<double> m(n);
  for (auto& x : m) x = g(rng);
  return m;
}

double alm_dot_all(const ShtPlan& p, const std::vector<Complex>& a, const std::vector<Complex>& b) {
  double s = 0.0;
  for (std::size_t c = 0; c < a.size() / p.nalm(); ++c)
    s += alm_dot({a.data() + c * p.nalm(), p.nalm()}, {b.data() + c * p.nalm(), p.nalm()}, p.lmax());
  return s;
}

double max_abs(const std::vector<Complex>& a) {
  double m = 0.0;
  for (auto& x : a) m = std::max(m, std::abs(x));
  return m;
}
double max_diff(const std::vector<Complex>& a, const std::vector<Complex>& b) {
  double m = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

/// Textbook Y_lm(theta, phi) with the Condon-Shortley phase, in long double (independent of
/// the engine): P_m^m = (-1)^m (2m-1)!! (1-x^2)^{m/2}, upward recursion in l, factorial norm.
std::complex<long double> ylm(int l, int m, long double theta, long double phi) {
  const long double x = std::cos(theta), s = std::sin(theta);
  long double pmm = 1.0L;
  for (int k = 1; k <= m; ++k) pmm *= -(2.0L * k - 1.0L) * s;
  long double p = pmm;
  if (l > m) {
    long double pm1 = x * (2.0L * m + 1.0L) * pmm, pm2 = pmm;
    p = pm1;
    for (int ll = m + 2; ll <= l; ++ll) {
      p = (x * (2.0L * ll - 1.0L) * pm1 - (ll + m - 1.0L) * pm2) / (ll - m);
      pm2 = pm1;
      pm1 = p;
    }
  }
  long double ratio = 1.0L;  // (l-m)!/(l+m)!
  for (int k = l - m + 1; k <= l + m; ++k) ratio /= k;
  const long double norm = std::sqrt((2.0L * l + 1.0L) / (4.0L * std::numbers::pi_v<long double>) * ratio);
  return norm * p * std::complex<long double>(std::cos(m * phi), std::sin(m * phi));
}

/// RING pixel centre (theta, phi), from the HEALPix definition.
void pix2ang_ring(int nside, std::int64_t pix, long double& theta, long double& phi) {
  const std::int64_t ncap = 2LL * nside * (nside - 1), npix = 12LL * nside * nside;
  const long double pi = std::numbers::pi_v<long double>;
  if (pix < ncap) {
    std::int64_t i = 1;
    while (2 * (i + 1) * i <= pix) ++i;
    const std::int64_t j = pix - 2 * i * (i - 1) + 1;
    theta = std::acos(1.0L - (long double)(i * i) / (3.0L * nside * nside));
    phi = (j - 0.5L) * pi / (2.0L * i);
  } else if (pix < npix - ncap) {
    const std::int64_t p = pix - ncap, i = p / (4 * nside) + nside, j = p % (4 * nside) + 1;
    const long double fodd = ((i + nside) & 1) ? 1.0L : 0.5L;
    theta = std::acos(4.0L / 3.0L - 2.0L * i / (3.0L * nside));
    phi = (j - fodd) * pi / (2.0L * nside);
  } else {
    const std::int64_t p = npix - pix;
    std::int64_t i = 1;
    while (2 * (i + 1) * i < p) ++i;
    const std::int64_t j = 4 * i + 1 - (p - 2 * i * (i - 1));
    theta = std::acos(-(1.0L - (long double)(i * i) / (3.0L * nside * nside)));
    phi = (j - 0.5L) * pi / (2.0L * i);
  }
}

ShtConfig cfg(int nside, int lmax, int spin, int batch = 1) {
  ShtConfig c;
  c.nside = nside;
  c.lmax = lmax;
  c.spin = spin;
  c.batch = batch;
  c.threads = 2;
  return c;
}

}  // namespace

class TestShtIdentities : public QObject {
  Q_OBJECT
private slots:
  void config_validation() {
    ShtConfig c;
    c.nside = 0;
    c.spin = 1;
    c.batch = 0;
    const auto p = c.validate();
    QCOMPARE(p.size(), std::size_t(3));
    QVERIFY_THROWS_EXCEPTION(ConfigError, c.check());
    ShtConfig ok = cfg(8, -1, 0);
    QVERIFY(ok.validate().empty());
    QCOMPARE(ok.effective_lmax(), 23);
    ShtConfig bad = cfg(8, -1, 0);
    bad.observed_pixels = {3, 2};
    QCOMPARE(bad.validate().size(), std::size_t(1));
  }

  void layout() {
    QCOMPARE(alm_size(3), std::size_t(10));
    QCOMPARE(alm_index(3, 3, 0), std::size_t(3));
    QCOMPARE(alm_index(3, 1, 1), std::size_t(4));
    QCOMPARE(alm_index(3, 3, 3), std::size_t(9));
    QCOMPARE(nside_of_npix(12 * 64 * 64), 64);
    QCOMPARE(nside_of_npix(100), -1);
  }

  void adjointness_data() {
    QTest::addColumn<int>("nside");
    QTest::addColumn<int>("lmax");
    QTest::addColumn<int>("spin");
    QTest::newRow("ns8 spin0") << 8 << -1 << 0;
    QTest::newRow("ns16 spin0 lmax20") << 16 << 20 << 0;
    QTest::newRow("ns32 spin0") << 32 << -1 << 0;
    QTest::newRow("ns8 spin2") << 8 << -1 << 2;
    QTest::newRow("ns32 spin2") << 32 << -1 << 2;
  }
  void adjointness() {
    QFETCH(int, nside);
    QFETCH(int, lmax);
    QFETCH(int, spin);
    auto plan = make_plan(cfg(nside, lmax, spin, 2));
    const int nc = plan.ncomp();
    auto a = random_alm(plan.lmax(), spin, nc, 2, 11 + nside + spin);
    auto m = random_map(plan.map_size() * nc * 2, 99 + nside);
    std::vector<double> ya(m.size());
    std::vector<Complex> ytm(a.size());
    plan.synthesis(a, ya, {});
    plan.adjoint(m, ytm, {});
    const double lhs = map_dot(ya, m), rhs = alm_dot_all(plan, a, ytm);
    const double scale = std::sqrt(map_dot(ya, ya) * map_dot(m, m));
    qInfo("adjointness nside %d spin %d: <Ya,m> = %.15g, <a,Y^T m> = %.15g, rel %.3g", nside, spin,
          lhs, rhs, std::fabs(lhs - rhs) / std::fabs(lhs));
    QVERIFY(std::fabs(lhs - rhs) <= 1e-12 * std::fabs(lhs));
    QVERIFY(std::fabs(lhs - rhs) <= 1e-13 * scale);
    // Output conventions: Im a_l0 = 0; spin 2: l < 2 zero.
    for (int l = 0; l <= plan.lmax(); ++l) QCOMPARE(ytm[l].imag(), 0.0);
    if (spin == 2) {
      QCOMPARE(std::abs(ytm[0]), 0.0);
      QCOMPARE(std::abs(ytm[1]), 0.0);
      QCOMPARE(std::abs(ytm[alm_index(plan.lmax(), 1, 1)]), 0.0);
    }
  }

  void single_alm_equals_ylm() {
    const int nside = 16, lmax = 20;
    auto plan = make_plan(cfg(nside, lmax, 0));
    const int cases[][2] = {{0, 0}, {1, 0}, {3, 2}, {7, 7}, {12, 5}, {20, 1}, {20, 20}};
    for (auto& lm : cases) {
      const int l = lm[0], m = lm[1];
      std::vector<Complex> a(plan.nalm(), 0.0);
      const Complex c = m == 0 ? Complex(0.7, 0.0) : Complex(0.6, -0.35);
      a[alm_index(lmax, l, m)] = c;
      std::vector<double> map(plan.map_size());
      plan.synthesis(a, map, {});
      for (std::int64_t pix : {0LL, 5LL, 777LL, 1500LL, 1535LL, 1536LL, 2100LL, 3071LL, 3040LL}) {
        long double th, ph;
        pix2ang_ring(nside, pix, th, ph);
        const auto y = ylm(l, m, th, ph);
        const std::complex<long double> cl(c.real(), c.imag());
        const long double ref = m == 0 ? (cl * y).real() : 2.0L * (cl * y).real();
        if (std::fabs(static_cast<double>(ref) - map[pix]) > 1e-13) {
          qWarning("l=%d m=%d pix=%lld: map %.17g, analytic %.17g", l, m, (long long)pix, map[pix],
                   static_cast<double>(ref));
          QFAIL("synthesis of a single a_lm differs from the analytic Y_lm");
        }
      }
    }
  }

  void inverse_recovers_bandlimited_data() {
    QTest::addColumn<int>("spin");
    QTest::newRow("spin0") << 0;
    QTest::newRow("spin2") << 2;
  }
  void inverse_recovers_bandlimited() {
    QFETCH(int, spin);
    auto plan = make_plan(cfg(16, 32, spin, 2));
    const int nc = plan.ncomp();
    auto a = random_alm(32, spin, nc, 2, 2024 + spin);
    std::vector<double> map(plan.map_size() * nc * 2);
    plan.synthesis(a, map, {});
    std::vector<Complex> rec(a.size());
    InverseOptions opt;
    opt.epsilon = 1e-13;
    opt.max_iterations = 200;
    const auto rep = plan.inverse(map, rec, opt, {});
    const double err = max_diff(rec, a) / max_abs(a);
    qInfo("inverse spin %d: %d iterations, residual %.3g, max rel err %.3g", spin, rep.iterations,
          rep.residual, err);
    QVERIFY(err < 2e-9);
    QVERIFY(rep.residual < 1e-9);
    QVERIFY(rep.iterations > 0);
  }

  void inverse_not_converged_throws() {
    auto plan = make_plan(cfg(8, -1, 0));
    auto m = random_map(plan.map_size(), 5);
    std::vector<Complex> a(plan.nalm());
    InverseOptions opt;
    opt.epsilon = 1e-14;
    opt.max_iterations = 2;
    try {
      plan.inverse(m, a, opt, {});
      QFAIL("expected NotConverged");
    } catch (const NotConverged& e) {
      QCOMPARE(e.iterations(), 2);
      QVERIFY(e.residual() > 1e-14);
    }
  }

  void map2alm_iterations_converge() {
    // Band-limited map, lmax = 2 nside: the Jacobi iteration reduces the error.
    auto plan = make_plan(cfg(16, 32, 0));
    auto a = random_alm(32, 0, 1, 1, 77);
    std::vector<double> map(plan.map_size());
    plan.synthesis(a, map, {});
    std::vector<Complex> a0(a.size()), a3(a.size());
    plan.map2alm(map, a0, 0);
    plan.map2alm(map, a3, 3);
    const double e0 = max_diff(a0, a) / max_abs(a), e3 = max_diff(a3, a) / max_abs(a);
    qInfo("map2alm error iter 0: %.3g, iter 3: %.3g", e0, e3);
    QVERIFY(e3 < e0 / 10);
    QVERIFY(e3 < 1e-3);
    // iter 0 is exactly 4 pi / Npix Y^T m.
    std::vector<Complex> yt(a.size());
    plan.adjoint(map, yt, {});
    const double w = 4.0 * std::numbers::pi / plan.map_size();
    for (std::size_t i = 0; i < yt.size(); ++i) QVERIFY(std::abs(yt[i] * w - a0[i]) < 1e-14 * max_abs(a0) + 1e-300);
    // Ring weights of 1 are the same as no weights.
    std::vector<double> ones(2 * 16, 1.0);
    std::vector<Complex> aw(a.size());
    plan.map2alm(map, aw, 1, ones);
    std::vector<Complex> a1(a.size());
    plan.map2alm(map, a1, 1);
    QVERIFY(max_diff(aw, a1) < 1e-15 * max_abs(a1));
    // Non-uniform ring weights (north to equator, mirrored in the south): iter 0 equals the adjoint
    // of the map times 4 pi / Npix and the weight of each pixel's ring, the rings counted here
    // from their pixel numbers (ring i of 4 nside - 1 has 4 min(i, nside, 4 nside - i) pixels).
    std::vector<double> rw(2 * 16);
    for (std::size_t r = 0; r < rw.size(); ++r) rw[r] = 1.0 + 0.05 * std::cos(0.9 * r) + 0.001 * r;
    std::vector<Complex> ar(a.size());
    plan.map2alm(map, ar, 0, rw);
    std::vector<double> wmap(map.size());
    std::size_t p = 0;
    for (int i = 1; i < 4 * 16; ++i) {
      const int count = 4 * std::min({i, 16, 4 * 16 - i});
      const int rn = std::min(i, 4 * 16 - i);
      for (int j = 0; j < count; ++j, ++p) wmap[p] = map[p] * w * rw[rn - 1];
    }
    QCOMPARE(p, map.size());
    std::vector<Complex> yw(a.size());
    plan.adjoint(wmap, yw, {});
    QVERIFY(max_diff(yw, ar) < 1e-14 * max_abs(ar));
    QVERIFY(max_diff(ar, a0) > 1e-3 * max_abs(a0));  // the weights did change the result
    // Pixel weights: the adjoint of the map times 4 pi / Npix and each pixel's weight.
    std::vector<double> pw(map.size());
    for (std::size_t k = 0; k < pw.size(); ++k) pw[k] = 1.0 + 0.03 * std::sin(0.37 * static_cast<double>(k));
    std::vector<Complex> ap(a.size()), yp(a.size());
    plan.map2alm_pixel_weights(map, ap, pw);
    for (std::size_t k = 0; k < pw.size(); ++k) wmap[k] = map[k] * w * pw[k];
    plan.adjoint(wmap, yp, {});
    QVERIFY(max_diff(yp, ap) < 1e-14 * max_abs(ap));
    bool threw = false;
    try {
      plan.map2alm_pixel_weights(map, ap, std::vector<double>(pw.size() - 1, 1.0));
    } catch (const ConfigError&) {
      threw = true;
    }
    QVERIFY(threw);
  }

  void cut_sky() {
    const int nside = 16;
    auto full = make_plan(cfg(nside, -1, 2));
    ShtConfig c = cfg(nside, -1, 2);
    // Observed: a band of rings plus scattered pixels; the polar caps are unobserved.
    std::mt19937_64 rng(3);
    for (std::int64_t p = 0; p < npix_of(nside); ++p)
      if ((p > 900 && p < 2000) || rng() % 7 == 0) c.observed_pixels.push_back(p);
    auto cut = make_plan(c);
    QCOMPARE(cut.map_size(), c.observed_pixels.size());
    auto a = random_alm(full.lmax(), 2, 2, 1, 8);
    std::vector<double> fm(full.map_size() * 2), cm(cut.map_size() * 2);
    full.synthesis(a, fm, {});
    cut.synthesis(a, cm, {});
    for (int k = 0; k < 2; ++k)
      for (std::size_t i = 0; i < cut.map_size(); ++i)
        QCOMPARE(cm[k * cut.map_size() + i], fm[k * full.map_size() + c.observed_pixels[i]]);
    auto m = random_map(cut.map_size() * 2, 9);
    std::vector<Complex> ytm(a.size());
    cut.adjoint(m, ytm, {});
    const double lhs = map_dot(cm, m), rhs = alm_dot_all(cut, a, ytm);
    QVERIFY(std::fabs(lhs - rhs) <= 1e-12 * std::fabs(lhs));
    // Pixel weights on a cut sky: the observed pixels take their own weights (the plan maps its
    // pixels to full-sky indices), as the full-sky transform of the map with the rest zero.
    std::vector<double> pw(static_cast<std::size_t>(npix_of(nside)));
    for (std::size_t k = 0; k < pw.size(); ++k) pw[k] = 1.0 + 0.05 * std::cos(0.011 * static_cast<double>(k * k));
    std::vector<double> zf(full.map_size() * 2, 0.0);
    for (int k = 0; k < 2; ++k)
      for (std::size_t i = 0; i < cut.map_size(); ++i)
        zf[k * full.map_size() + c.observed_pixels[i]] = m[k * cut.map_size() + i];
    std::vector<Complex> ac(a.size()), af(a.size());
    cut.map2alm_pixel_weights(m, ac, pw);
    full.map2alm_pixel_weights(zf, af, pw);
    double worst = 0, big = 0;
    for (std::size_t i = 0; i < af.size(); ++i) {
      worst = std::max(worst, std::abs(ac[i] - af[i]));
      big = std::max(big, std::abs(af[i]));
    }
    QVERIFY2(worst <= 1e-13 * big, qPrintable(QString::number(worst / big)));
  }

  void spectra_and_beam() {
    const int lmax = 10;
    auto a = random_alm(lmax, 0, 1, 1, 4);
    auto b = random_alm(lmax, 0, 1, 1, 5);
    const auto cl = alm2cl(a, b, lmax);
    for (int l = 0; l <= lmax; ++l) {
      double s = a[l].real() * b[l].real();
      for (int m = 1; m <= l; ++m) {
        const auto x = a[alm_index(lmax, l, m)], y = b[alm_index(lmax, l, m)];
        s += 2.0 * (x * std::conj(y)).real();
      }
      QVERIFY(std::fabs(cl[l] - s / (2 * l + 1)) < 1e-14);
    }
    const auto ps = alm2cl_pol(a, b, a, lmax);
    for (int l = 0; l <= lmax; ++l) {
      QCOMPARE(ps.te[l], cl[l]);
      QCOMPARE(ps.tb[l], ps.tt[l]);
      QCOMPARE(ps.eb[l], cl[l]);
    }
    const double fwhm = 30.0 / 60.0 * std::numbers::pi / 180.0;
    const auto bl = gauss_beam(fwhm, 100), bp = gauss_beam(fwhm, 100, true);
    const double sigma = fwhm / std::sqrt(8.0 * std::log(2.0));
    QCOMPARE(bl[0], 1.0);
    QVERIFY(std::fabs(bl[100] - std::exp(-0.5 * 100 * 101 * sigma * sigma)) < 1e-15);
    QVERIFY(std::fabs(bp[100] / bl[100] - std::exp(2 * sigma * sigma)) < 1e-14);
  }

  void anafast_and_smoothing() {
    const int nside = 16, lmax = 24;
    auto pt = make_plan(cfg(nside, lmax, 0));
    auto pp = make_plan(cfg(nside, lmax, 2));
    auto at = random_alm(lmax, 0, 1, 1, 31);
    auto aeb = random_alm(lmax, 2, 2, 1, 32);
    std::vector<double> t(pt.map_size()), qu(2 * pp.map_size());
    pt.synthesis(at, t, {});
    pp.synthesis(aeb, qu, {});
    const auto s = anafast_pol(pt, pp, t, qu, 5);
    const auto ref = alm2cl_pol(at, {aeb.data(), pp.nalm()}, {aeb.data() + pp.nalm(), pp.nalm()}, lmax);
    for (int l = 2; l <= lmax; ++l) {
      QVERIFY(std::fabs(s.tt[l] - ref.tt[l]) < 1e-6 * ref.tt[l]);
      QVERIFY(std::fabs(s.ee[l] - ref.ee[l]) < 1e-6 * ref.ee[l]);
      QVERIFY(std::fabs(s.te[l] - ref.te[l]) < 1e-6 * std::sqrt(ref.tt[l] * ref.ee[l]));
    }
    // Smoothing a band-limited map equals synthesis of beam-weighted alm.
    const double fwhm = 5.0 * std::numbers::pi / 180.0;
    std::vector<double> sm(t.size()), ref_map(t.size());
    smooth_map(pt, t, sm, fwhm, 5);
    auto ab = at;
    almxfl(ab, lmax, gauss_beam(fwhm, lmax));
    pt.synthesis(ab, ref_map, {});
    double md = 0.0, mx = 0.0;
    for (std::size_t i = 0; i < sm.size(); ++i) {
      md = std::max(md, std::fabs(sm[i] - ref_map[i]));
      mx = std::max(mx, std::fabs(ref_map[i]));
    }
    QVERIFY(md < 1e-6 * mx);
  }

  void shape_errors() {
    auto plan = make_plan(cfg(8, -1, 0));
    std::vector<Complex> a(plan.nalm() + 1);
    std::vector<double> m(plan.map_size());
    QVERIFY_THROWS_EXCEPTION(ConfigError, plan.synthesis(a, m, {}));
  }
};

QTEST_GUILESS_MAIN(TestShtIdentities)
#include "test_sht_identities.moc"
