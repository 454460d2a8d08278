// Comoving distances of flat LCDM against independent values: the Einstein-de Sitter and
// de Sitter closed forms, composite Simpson quadrature computed here, the low-redshift series,
// and the sky-catalogue path (interpolation table) against direct integration.
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "almagest/core/error.hpp"
#include "almagest/io/catalogue.hpp"

using almagest::ConfigError;
using almagest::io::Cosmology;

namespace {

constexpr double kHubble = 2997.92458;  // c/H0 in Mpc/h

double rel(double a, double b) { return std::abs(a - b) / std::abs(b); }

/// Composite Simpson rule for (c/H0) int_0^z dz'/E(z') with `steps` (even) intervals; E written
/// out here rather than taken from Cosmology::efunc.
double simpson_distance(double om, double z, long steps) {
  const auto f = [om](double zz) {
    const double a = 1.0 + zz;
    return 1.0 / std::sqrt(om * a * a * a + 1.0 - om);
  };
  const double h = z / static_cast<double>(steps);
  double odd = 0, even = 0;
  for (long i = 1; i < steps; ++i) (i % 2 ? odd : even) += f(static_cast<double>(i) * h);
  return kHubble * h / 3.0 * (f(0.0) + f(z) + 4.0 * odd + 2.0 * even);
}

QString temp_base() {
  QByteArray env = qgetenv("ALMAGEST_TEST_TMP");
  return env.isEmpty() ? QDir::tempPath() : QString::fromLocal8Bit(env);
}

}  // namespace

class TestCosmology : public QObject {
  Q_OBJECT

private slots:
  void efunc() {
    Cosmology c{0.31};
    QCOMPARE(c.efunc(0.0), 1.0);
    QVERIFY(rel(c.efunc(1.0), std::sqrt(0.31 * 8.0 + 0.69)) < 1e-15);
    QVERIFY(rel(Cosmology{1.0}.efunc(3.0), 8.0) < 1e-15);
  }

  void einsteinDeSitter() {
    // Omega_m = 1: D = 2 (c/H0) (1 - 1/sqrt(1+z)), written without cancellation at small z.
    Cosmology c{1.0};
    for (double z : {1e-6, 1e-3, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 100.0, 1100.0}) {
      const double s = std::sqrt(1.0 + z);
      const double exact = 2.0 * kHubble * z / (s * (s + 1.0));
      const double d = c.comoving_distance(z);
      QVERIFY2(rel(d, exact) < 1e-10,
               qPrintable(QString("z=%1 D=%2 exact=%3").arg(z).arg(d, 0, 'g', 17).arg(exact, 0, 'g', 17)));
    }
    QCOMPARE(c.comoving_distance(0.0), 0.0);
  }

  void deSitterLimit() {
    // Omega_m -> 0: E = 1 and D = (c/H0) z; small Omega_m approaches it linearly.
    for (double z : {0.01, 0.5, 1.0, 3.0, 20.0})
      QVERIFY(rel(Cosmology{0.0}.comoving_distance(z), kHubble * z) < 1e-12);
    const double z = 1.0;
    const double d6 = Cosmology{1e-6}.comoving_distance(z);
    // dD/dOm at Om = 0: -(c/H0)/2 int_0^z ((1+x)^3 - 1) dx = -(c/H0)/2 ((1+z)^4/4 - 1/4 - z).
    const double slope = -0.5 * kHubble * (std::pow(1.0 + z, 4) / 4.0 - 0.25 - z);
    QVERIFY(rel(d6, kHubble * z + 1e-6 * slope) < 1e-11);
  }

  void planckLikeAgainstSimpson() {
    Cosmology c{0.31};
    for (double z : {0.5, 1.0, 2.0}) {
      const double ref = simpson_distance(0.31, z, 1000000);
      const double d = c.comoving_distance(z);
      QVERIFY2(rel(d, ref) < 1e-10,
               qPrintable(QString("z=%1 D=%2 Simpson=%3").arg(z).arg(d, 0, 'g', 17).arg(ref, 0, 'g', 17)));
    }
    // Other matter densities, including a high redshift.
    for (double om : {0.05, 0.25, 0.7}) {
      for (double z : {0.3, 4.0}) {
        const double ref = simpson_distance(om, z, 1000000);
        QVERIFY(rel(Cosmology{om}.comoving_distance(z), ref) < 1e-10);
      }
    }
  }

  void lowRedshiftSeries() {
    // 1/E = 1 - (3/2) Om z + (27/8 Om^2 - 3/2 Om) z^2 + O(z^3), integrated term by term:
    // D = (c/H0) (z - (3/4) Om z^2 + (9/8 Om^2 - 1/2 Om) z^3 + O(z^4)).
    const double om = 0.31;
    const double z = 1e-4;
    const double series = kHubble * (z - 0.75 * om * z * z + (9.0 / 8.0 * om * om - 0.5 * om) * z * z * z);
    QVERIFY(rel(Cosmology{om}.comoving_distance(z), series) < 1e-11);
    // Without the cubic term the difference is of order z^2 and must show up.
    const double quadratic = kHubble * (z - 0.75 * om * z * z);
    QVERIFY(rel(Cosmology{om}.comoving_distance(z), quadratic) > 1e-10);
  }

  void derivativeIsInverseE() {
    Cosmology c{0.31};
    for (double z : {0.2, 0.8, 1.7}) {
      const double h = 1e-4;
      const double num = (c.comoving_distance(z + h) - c.comoving_distance(z - h)) / (2 * h);
      QVERIFY(rel(num, kHubble / c.efunc(z)) < 1e-8);
    }
  }

  void skyToCartesian() {
    double x, y, z;
    almagest::io::sky_to_cartesian(0, 0, 100, x, y, z);
    QVERIFY(std::abs(x - 100) < 1e-12 && std::abs(y) < 1e-12 && std::abs(z) < 1e-12);
    almagest::io::sky_to_cartesian(90, 0, 100, x, y, z);
    QVERIFY(std::abs(x) < 1e-12 && std::abs(y - 100) < 1e-12 && std::abs(z) < 1e-12);
    almagest::io::sky_to_cartesian(123, 90, 100, x, y, z);
    QVERIFY(std::abs(x) < 1e-12 && std::abs(y) < 1e-12 && std::abs(z - 100) < 1e-12);
    almagest::io::sky_to_cartesian(180, -30, 2, x, y, z);
    QVERIFY(std::abs(x + std::sqrt(3.0)) < 1e-12 && std::abs(y) < 1e-12 && std::abs(z + 1) < 1e-12);
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> ra(0, 360), sd(-1, 1), dist(1, 4000);
    for (int i = 0; i < 1000; ++i) {
      const double r = ra(rng), d = std::asin(sd(rng)) * 180 / M_PI, D = dist(rng);
      almagest::io::sky_to_cartesian(r, d, D, x, y, z);
      QVERIFY(rel(std::sqrt(x * x + y * y + z * z), D) < 1e-13);
      double back_ra = std::atan2(y, x) * 180 / M_PI;
      if (back_ra < 0) back_ra += 360;
      QVERIFY(std::abs(back_ra - r) < 1e-9 || std::abs(std::abs(back_ra - r) - 360) < 1e-9);
      QVERIFY(std::abs(std::asin(z / D) * 180 / M_PI - d) < 1e-9);
    }
  }

  void badInput() {
    try {
      Cosmology{1.5}.comoving_distance(1.0);
      QFAIL("Omega_m = 1.5 accepted");
    } catch (const ConfigError& e) {
      QCOMPARE(e.field(), std::string("omega_m"));
    }
    QVERIFY_THROWS_EXCEPTION(ConfigError, Cosmology{0.31}.comoving_distance(-0.1));
    QVERIFY_THROWS_EXCEPTION(ConfigError, Cosmology{0.31}.comoving_distance(std::nan("")));
    QVERIFY_THROWS_EXCEPTION(ConfigError, Cosmology{-0.1}.comoving_distance(0.5));
  }

  void skyCatalogueMatchesDirectIntegration() {
    // 20000 galaxies with 0 <= z <= 3 go through the catalogue path (interpolation table); every
    // radial distance must match direct integration to 1e-9 relative, angles to 1e-9 degrees.
    QTemporaryDir dir(temp_base() + "/test_cosmology-XXXXXX");
    QVERIFY(dir.isValid());
    const std::string path = (dir.path() + "/sky.txt").toStdString();
    std::mt19937_64 rng(424242);
    std::uniform_real_distribution<double> ra(0, 360), sd(-1, 1), red(0, 3);
    std::vector<double> vra, vdec, vz;
    {
      std::FILE* f = std::fopen(path.c_str(), "w");
      QVERIFY(f);
      std::fprintf(f, "# RA DEC Z\n");
      for (int i = 0; i < 20000; ++i) {
        vra.push_back(ra(rng));
        vdec.push_back(std::asin(sd(rng)) * 180 / M_PI);
        vz.push_back(i == 0 ? 0.0 : i == 1 ? 3.0 : red(rng));
        std::fprintf(f, "%.17g %.17g %.17g\n", vra.back(), vdec.back(), vz.back());
      }
      std::fclose(f);
    }
    for (double om : {0.31, 1.0}) {
      almagest::io::CatalogueSpec spec;
      spec.path = path;
      spec.sky = true;
      spec.cosmology.omega_m = om;
      spec.columns = {"RA", "DEC", "Z"};
      const auto cat = almagest::io::load_catalogue(spec);
      QCOMPARE(cat.size(), std::size_t{20000});
      Cosmology c{om};
      double worst = 0;
      for (std::size_t i = 0; i < cat.size(); ++i) {
        const double d = c.comoving_distance(vz[i]);
        const double r = std::sqrt(cat.x[i] * cat.x[i] + cat.y[i] * cat.y[i] + cat.z[i] * cat.z[i]);
        if (d == 0) {
          QCOMPARE(r, 0.0);
          continue;
        }
        worst = std::max(worst, rel(r, d));
        QCOMPARE(cat.w[i], 1.0);
      }
      qInfo("Omega_m=%g: worst relative distance error of the catalogue path %.2e", om, worst);
      QVERIFY(worst < 1e-9);
    }
  }
};

QTEST_GUILESS_MAIN(TestCosmology)
#include "test_cosmology.moc"
