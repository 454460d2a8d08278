// Analytic 2pCF tests with planted structure:
//  - isolated pairs at a known separation in uniform randoms: xi peaks in the pair's bin at
//    DD/RR - 1 and is -1 in the bins without pairs (NN = DD - DR + RR, <DR> = 2 RR);
//  - the same pairs in a periodic box without randoms (analytic RR = W2 V_shell/V, xi = DD/RR - 1):
//    -1 in the empty bins, the analytic peak in the pair's bin;
//  - a uniform periodic catalogue with analytic randoms gives xi ~ 0 (checks the W2 formula).
#include <QtTest>

#include <cmath>
#include <numbers>

#include "almagest/core/error.hpp"
#include "almagest/npcf/plan.hpp"
#include "almagest/npcf/synthetic.hpp"

using namespace almagest;
using namespace almagest::npcf;

namespace {

constexpr double kBox = 1000.0;
constexpr double kSep = 23.0;  // pair separation; bins of 5 from 1: bin 4 = [21, 26)

/// n_pairs pairs at separation kSep, random orientations, centres on a grid with spacing 100 so
/// that pairs are isolated (no other point within rmax = 51).
io::Catalogue isolated_pairs(int per_side, std::uint64_t seed) {
  synthetic::Rng rng(seed);
  io::Catalogue c;
  const double spacing = kBox / per_side;
  for (int a = 0; a < per_side; ++a)
    for (int b = 0; b < per_side; ++b)
      for (int d = 0; d < per_side; ++d) {
        const double cx = (a + 0.5) * spacing, cy = (b + 0.5) * spacing, cz = (d + 0.5) * spacing;
        const double ct = 2 * rng.uniform() - 1, ph = 2 * std::numbers::pi * rng.uniform();
        const double st = std::sqrt(1 - ct * ct);
        const double ux = st * std::cos(ph), uy = st * std::sin(ph), uz = ct;
        for (double s : {-0.5, 0.5}) {
          c.x.push_back(cx + s * kSep * ux);
          c.y.push_back(cy + s * kSep * uy);
          c.z.push_back(cz + s * kSep * uz);
          c.w.push_back(1.0);
        }
      }
  c.source = "isolated-pairs";
  return c;
}

NpcfConfig pair_config() {
  NpcfConfig c;
  c.statistic = Statistic::TwoPoint;
  c.bins = {1.0, 51.0, 10, BinScale::Linear};
  c.threads = 2;
  return c;
}

}  // namespace

class TestNpcfIsolatedPairs : public QObject {
  Q_OBJECT
private slots:
  void pairs_with_randoms() {
    const io::Catalogue data = isolated_pairs(10, 1);  // 1000 pairs, 2000 points
    const io::Catalogue randoms = synthetic::uniform(150000, kBox, 2);
    NpcfPlan plan(pair_config(), make_point_set(data, &randoms), JobContext{});
    const NpcfResult r = plan.execute(JobContext{});
    QCOMPARE(r.rows(), std::size_t(10));
    const int peak = pair_config().bins.bin_of(kSep);
    QCOMPARE(peak, 4);
    // DD = 1000 pairs x (1/2000)^2, all in the peak bin.
    const double dd = 1000.0 / (2000.0 * 2000.0);
    for (int b = 0; b < 10; ++b) {
      const double lo = r.bin_lo(b), hi = r.bin_hi(b);
      // RR expectation (half pairs of normalised unit weights in a box, edges neglected).
      const double rr_expect = 0.5 * 4.0 / 3.0 * std::numbers::pi * (hi * hi * hi - lo * lo * lo) /
                               (kBox * kBox * kBox);
      QVERIFY2(std::fabs(r.r[b] / rr_expect - 1) < 0.1,
               qPrintable(QString("bin %1: RR %2 expected %3").arg(b).arg(r.r[b]).arg(rr_expect)));
      // NN = DD - DR + RR with <DR> = 2 RR: xi = DD/RR - 1, i.e. -1 in the bins without pairs.
      if (b == peak) {
        const double expect = dd / r.r[b] - 1;
        QVERIFY2(std::fabs(r.estimator[b] - expect) < 0.1 * expect,
                 qPrintable(QString("peak xi %1 expected %2").arg(r.estimator[b]).arg(expect)));
        QVERIFY(r.estimator[b] > 5);
      } else {
        QVERIFY2(std::fabs(r.estimator[b] + 1) < 0.3,
                 qPrintable(QString("bin %1: xi %2, expected -1").arg(b).arg(r.estimator[b])));
      }
    }
    int argmax = 0;
    for (int b = 1; b < 10; ++b)
      if (r.estimator[b] > r.estimator[argmax]) argmax = b;
    QCOMPARE(argmax, peak);
  }

  void pairs_with_analytic_randoms() {
    const io::Catalogue data = isolated_pairs(10, 3);
    NpcfConfig c = pair_config();
    c.periodic = true;
    c.box = kBox;
    NpcfPlan plan(c, make_point_set(data, nullptr), JobContext{});
    const NpcfResult r = plan.execute(JobContext{});
    QVERIFY(r.analytic_randoms);
    const double w2 = 0.5 * (1.0 - 2000.0 / (2000.0 * 2000.0));
    for (int b = 0; b < 10; ++b) {
      const double lo = r.bin_lo(b), hi = r.bin_hi(b);
      const double rr = w2 * 4.0 / 3.0 * std::numbers::pi * (hi * hi * hi - lo * lo * lo) / (kBox * kBox * kBox);
      QVERIFY(std::fabs(r.r[b] - rr) < 1e-12 * rr);
      if (b == 4) {
        QCOMPARE(r.tuples[b], std::uint64_t(1000));
        QVERIFY(std::fabs(r.estimator[b] - (1000.0 / 4e6 / rr - 1)) < 1e-9 * r.estimator[b]);
      } else {
        QCOMPARE(r.tuples[b], std::uint64_t(0));
        QCOMPARE(r.estimator[b], -1.0);
      }
    }
    // Outside a periodic box the 4pCF needs randoms (in a box it has analytic randoms,
    // test_npcf_analytic4): a one-line error naming the field.
    c.statistic = Statistic::FourPoint;
    c.periodic = false;
    c.box = 0.0;
    c.bins.rmax = 50;
    c.bins.nbins = 4;
    try {
      NpcfPlan p4(c, make_point_set(data, nullptr), JobContext{});
      QFAIL("4pCF without randoms accepted");
    } catch (const ConfigError& e) {
      QCOMPARE(e.field(), std::string("randoms"));
      QVERIFY(std::string(e.what()).find("required") != std::string::npos);
    }
  }

  void uniform_periodic_is_unclustered() {
    const io::Catalogue data = synthetic::uniform(60000, 500.0, 4);
    NpcfConfig c = pair_config();
    c.periodic = true;
    c.box = 500.0;
    c.bins = {5.0, 45.0, 4, BinScale::Linear};
    NpcfPlan plan(c, make_point_set(data, nullptr), JobContext{});
    const NpcfResult r = plan.execute(JobContext{});
    for (int b = 0; b < 4; ++b) {
      // Poisson error of DD: ~1/sqrt(pairs) (pairs >= 1e5 here).
      QVERIFY(r.tuples[b] > 100000);
      QVERIFY2(std::fabs(r.estimator[b]) < 5.0 / std::sqrt(static_cast<double>(r.tuples[b])),
               qPrintable(QString("bin %1: xi %2").arg(b).arg(r.estimator[b])));
    }
  }
};

QTEST_GUILESS_MAIN(TestNpcfIsolatedPairs)
#include "test_npcf_isolated_pairs.moc"
