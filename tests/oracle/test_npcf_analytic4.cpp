// Analytic randoms of the 4pCF in a periodic box (npcf/analytic.hpp, analytic4.cpp):
//  - the quadrature (tetra_kernel) against a seeded Monte Carlo of the same integral, written
//    here independently (three points uniform in the ball of radius rmax around the hub, raw
//    six-tuple compared edge by edge), within 4 sigma, for several configurations;
//  - the tolerance: the default against a 10x stricter one, and a sum rule (edges 24 and 34
//    summed over bins covering every distance give the r4 shell volume x the exact triangle
//    kernel of the face);
//  - orbit sizes against an enumeration of the raw tuples through TetraTable's canonical rows
//    (every raw tuple belongs to exactly one row);
//  - the null test: uniform points in a periodic box without randoms give median DDDD/RRRR within
//    5% of 1 and median |zeta_conn| < 0.05; RRRR_odd = 0; the 4pCF outside a box is refused.
#include <QtTest>

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "almagest/core/error.hpp"
#include "almagest/npcf/analytic.hpp"
#include "almagest/npcf/configurations.hpp"
#include "almagest/npcf/plan.hpp"
#include "npcf_testdata.hpp"

using namespace almagest;
using namespace almagest::npcf;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct McResult {
  double mean = 0, sigma = 0;  // estimate of the kernel and its statistical error
};

/// Monte Carlo of integral d3r2 d3r3 d3r4 1[six edges in [lo, hi)], r1 = 0: r2, r3, r4 uniform
/// in the balls of radius hi12, hi13, hi14 around the hub (outside them the integrand is 0).
McResult monte_carlo(const std::array<double, 6>& lo, const std::array<double, 6>& hi,
                     std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  auto ball = [&](double* x, double r) {
    do {
      x[0] = u(rng), x[1] = u(rng), x[2] = u(rng);
    } while (x[0] * x[0] + x[1] * x[1] + x[2] * x[2] >= 1.0);
    for (int j = 0; j < 3; ++j) x[j] *= r;
  };
  std::size_t hits = 0;
  double v[4][3] = {{0, 0, 0}};
  for (std::size_t s = 0; s < n; ++s) {
    ball(v[1], hi[0]), ball(v[2], hi[1]), ball(v[3], hi[2]);
    bool in = true;
    for (int e = 0; e < 6 && in; ++e) {
      const double* a = v[kEdgeVertices[e][0]];
      const double* b = v[kEdgeVertices[e][1]];
      const double d = std::sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                                 (a[2] - b[2]) * (a[2] - b[2]));
      in = d >= lo[e] && d < hi[e];
    }
    hits += in;
  }
  double vol = 1;
  for (int e = 0; e < 3; ++e) vol *= 4.0 / 3.0 * std::numbers::pi * hi[e] * hi[e] * hi[e];
  const double f = static_cast<double>(hits) / static_cast<double>(n);
  McResult r;
  r.mean = f * vol;
  r.sigma = std::sqrt(std::max(f * (1 - f), 1.0 / n) / static_cast<double>(n)) * vol;
  return r;
}

}  // namespace

class TestNpcfAnalytic4 : public QObject {
  Q_OBJECT

private slots:
  void kernelMatchesMonteCarlo() {
    // Bins of 10 on [10, 40): scalene, repeated-bin and near-degenerate configurations.
    const Binning bins{10.0, 40.0, 3, BinScale::Linear};
    const std::vector<std::array<int, 6>> configs = {
        {0, 0, 0, 0, 0, 0}, {0, 1, 2, 1, 2, 0}, {1, 1, 1, 1, 1, 1}, {0, 0, 1, 0, 1, 1}};
    for (std::size_t c = 0; c < configs.size(); ++c) {
      std::array<double, 6> l{}, h{};
      for (int e = 0; e < 6; ++e) l[e] = bins.edge(configs[c][e]), h[e] = bins.edge(configs[c][e] + 1);
      const McResult mc = monte_carlo(l, h, 400000, 20261203 + c);
      const double q = tetra_kernel(l, h);
      QVERIFY2(std::fabs(q - mc.mean) < 4 * mc.sigma && mc.mean > 20 * mc.sigma,
               qPrintable(QString("config %1: quadrature %2, Monte Carlo %3 +- %4")
                              .arg(c).arg(q).arg(mc.mean).arg(mc.sigma)));
    }
    // An impossible configuration (edge 34 longer than 13 + 14 allows) is exactly 0.
    QCOMPARE(tetra_kernel({0, 0, 0, 0, 0, 35}, {5, 5, 5, 5, 5, 40}), 0.0);
  }

  void toleranceAndSumRule() {
    // Sum rule: edges 24 and 34 partitioned over [0, 8) and [8, 20) (every distance they can
    // take) leave r4 free in its shell, so the four kernels add up to V_shell(b14) x 8 pi^2 T,
    // T the exact triangle kernel of the face (independent of the solid-angle quadrature).
    const std::array<double, 6> lo{5, 5, 5, 5, 0, 0}, hi{10, 10, 10, 10, 8, 8};
    double total = 0, worst = 0;
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 2; ++k) {
        std::array<double, 6> l = lo, h = hi;
        if (j) l[4] = 8, h[4] = 20;
        if (k) l[5] = 8, h[5] = 20;
        const double q = tetra_kernel(l, h);
        total += q;
        if (j == 0 && k == 1) {  // the default tolerance against a 10x stricter one
          const double q2 = tetra_kernel(l, h, kTetraKernelTolerance / 10);
          worst = std::max(worst, std::fabs(q - q2) / q2);
        }
      }
    const double pi = std::numbers::pi;
    const double expect = 4.0 / 3.0 * pi * (1000 - 125) * 8 * pi * pi * triangle_kernel(5, 10, 5, 10, 5, 10);
    QVERIFY2(std::fabs(total - expect) < 1e-4 * expect,
             qPrintable(QString("sum over edge-24/34 bins %1, closed form %2").arg(total).arg(expect)));
    QVERIFY2(worst < 1e-4, qPrintable(QString("relative change with a stricter tolerance %1").arg(worst)));
    const TetraTable table(2);
    // Orbit sizes: the number of raw tuples that canonicalise to each row.
    std::vector<int> count(table.rows(), 0);
    for (std::uint32_t raw = 0; raw < 64; ++raw) ++count[table.row(raw)];
    for (std::uint32_t k = 0; k < table.rows(); ++k) {
      const auto& c8 = table.canonical(k);
      QCOMPARE(orbit_size({c8[0], c8[1], c8[2], c8[3], c8[4], c8[5]}), count[k]);
    }
    QCOMPARE(analytic_w4(0.0, 0.0, 0.0), 1.0 / 24.0);
    // N equal weights: W4 = C(N, 4) / N^4.
    const double n = 10;
    QVERIFY(std::fabs(analytic_w4(1 / n, 1 / (n * n), 1 / (n * n * n)) -
                      210.0 / (n * n * n * n)) < 1e-15);
  }

  void nullTestPeriodicBox() {
    const double box = 100;
    const io::Catalogue d = test::uniform_catalogue(3000, box, 91, 0.5, 1.5);
    NpcfConfig c;
    c.statistic = Statistic::FourPointParity;
    c.bins = {10.0, 25.0, 2, BinScale::Linear};
    c.periodic = true;
    c.box = box;
    c.threads = 2;
    NpcfPlan plan(c, make_point_set(d, nullptr), JobContext{});
    const NpcfResult r = plan.execute(Statistic::FourPointParity, JobContext{});
    QVERIFY(r.analytic_randoms);
    QCOMPARE(r.rows(), std::size_t(11));
    std::vector<double> ratio, conn;
    for (std::size_t k = 0; k < r.rows(); ++k) {
      QCOMPARE(r.r_odd[k], 0.0);
      if (r.r[k] == 0.0) continue;
      QVERIFY(std::isfinite(r.estimator[k]) && std::isfinite(r.zeta_odd[k]));
      if (r.tuples[k] < 2000) continue;
      ratio.push_back(r.n[k] / r.r[k]);
      conn.push_back(std::fabs(r.zeta_conn[k]));
    }
    QVERIFY2(ratio.size() >= 6, qPrintable(QString::number(ratio.size())));
    QVERIFY2(std::fabs(median(ratio) - 1) < 0.05, qPrintable(QString::number(median(ratio))));
    QVERIFY2(median(conn) < 0.05, qPrintable(QString::number(median(conn))));
    // Outside a periodic box the 4pCF still needs randoms.
    c.periodic = false;
    c.box = 0;
    try {
      NpcfPlan p4(c, make_point_set(d, nullptr), JobContext{});
      QFAIL("4pCF without randoms accepted outside a periodic box");
    } catch (const ConfigError& e) {
      QCOMPARE(e.field(), std::string("randoms"));
    }
  }
};

QTEST_APPLESS_MAIN(TestNpcfAnalytic4)
#include "test_npcf_analytic4.moc"
