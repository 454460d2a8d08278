// Brute-force oracle (tests/common/npcf_brute) against the graph engine: identical tuple counts
// and weighted sums to 1e-12 relative for the 2pCF, 3pCF (all and equilateral), 4pCF and both
// parity channels (exact and pixel directions), linear and log bins, open and periodic boxes.
#include <QtTest>

#include <chrono>
#include <string>

#include "almagest/npcf/graph.hpp"
#include "almagest/npcf/plan.hpp"
#include "npcf_brute.hpp"
#include "npcf_testdata.hpp"

using namespace almagest;
using namespace almagest::npcf;

namespace {

struct Case {
  const char* name;
  Statistic stat;
  std::size_t ndata, nrandom;
  double box, rmin, rmax;
  int nbins;
  BinScale scale;
  bool periodic;
  DirectionMode dir;
  std::uint64_t seed;
};

NpcfConfig config_of(const Case& k) {
  NpcfConfig c;
  c.statistic = k.stat;
  c.bins.rmin = k.rmin;
  c.bins.rmax = k.rmax;
  c.bins.nbins = k.nbins;
  c.bins.scale = k.scale;
  c.periodic = k.periodic;
  c.box = k.periodic ? k.box : 0.0;
  c.store_pixels = k.dir == DirectionMode::Pixel;
  c.directions = k.dir;
  c.pixel_ntheta = 8;
  c.pixel_nphi = 16;
  c.threads = 2;
  return c;
}

NpcfResult engine_counts(const Graph& g, const PointSet& p, const NpcfConfig& c) {
  JobContext ctx;
  switch (c.statistic) {
    case Statistic::TwoPoint: return count_2pcf_cpu(g, p, c, ctx);
    case Statistic::ThreePoint: return count_3pcf_cpu(g, p, c, false, ctx);
    case Statistic::ThreePointEquilateral: return count_3pcf_cpu(g, p, c, true, ctx);
    case Statistic::FourPoint: return count_4pcf_cpu(g, p, c, false, ctx);
    case Statistic::FourPointParity: return count_4pcf_cpu(g, p, c, true, ctx);
  }
  return {};
}

std::uint64_t total(const std::vector<std::uint64_t>& v) {
  std::uint64_t s = 0;
  for (auto x : v) s += x;
  return s;
}

}  // namespace

class TestNpcfBruteforce : public QObject {
  Q_OBJECT
private slots:
  void engineEqualsBruteForce_data() {
    QTest::addColumn<int>("index");
    for (int i = 0; i < static_cast<int>(cases().size()); ++i)
      QTest::newRow(cases()[static_cast<std::size_t>(i)].name) << i;
  }

  void engineEqualsBruteForce() {
    QFETCH(int, index);
    const Case& k = cases()[static_cast<std::size_t>(index)];
    const PointSet p =
        test::clustered_point_set(k.ndata, k.nrandom, k.box, k.seed, true, k.periodic, 8, 3.0);
    const NpcfConfig c = config_of(k);
    const auto t0 = std::chrono::steady_clock::now();
    const Graph g = build_graph(p, c, JobContext{});
    const NpcfResult e = engine_counts(g, p, c);
    const auto t1 = std::chrono::steady_clock::now();
    const test::BruteResult b = test::brute_force_npcf(p, c);
    const auto t2 = std::chrono::steady_clock::now();
    const std::uint64_t tuples = total(b.result.tuples);
    qInfo("%s: %zu points, %llu tuples (%llu all-random), engine %.3f s, brute force %.3f s", k.name,
          p.size(), static_cast<unsigned long long>(tuples),
          static_cast<unsigned long long>(total(b.result.random_tuples)),
          std::chrono::duration<double>(t1 - t0).count(),
          std::chrono::duration<double>(t2 - t1).count());
    // The inputs must exercise the code: tuples of every kind, several configurations filled.
    QVERIFY2(tuples > 50, "too few tuples for a meaningful comparison");
    QVERIFY(total(b.result.random_tuples) > 0);
    QVERIFY(total(b.result.random_tuples) < tuples);
    std::size_t filled = 0;
    for (auto t : b.result.tuples) filled += t > 0;
    QVERIFY(filled >= 3);
    if (k.stat == Statistic::FourPointParity) {
      bool odd_nonzero = false;
      for (double v : b.result.n_odd) odd_nonzero |= v != 0.0;
      QVERIFY(odd_nonzero);
      if (k.dir == DirectionMode::Pixel) QVERIFY(total(b.result.degenerate) > 0);
    }
    const std::string diff = test::compare_with_brute(e, b, 1e-12);
    QVERIFY2(diff.empty(), diff.c_str());
  }

  // The full plan path (graph + counting + finalize) reports the same raw sums.
  void planEqualsBruteForce() {
    const PointSet p = test::clustered_point_set(70, 90, 100.0, 99, true, false, 8, 3.0);
    NpcfConfig c;
    c.statistic = Statistic::FourPointParity;
    c.bins = {2.0, 22.0, 4, BinScale::Linear};
    c.directions = DirectionMode::Exact;
    c.threads = 2;
    const test::BruteResult b = test::brute_force_npcf(p, c);
    NpcfPlan plan(c, p, JobContext{});
    const NpcfResult r = plan.execute(JobContext{});
    const std::string diff = test::compare_with_brute(r, b, 1e-12);
    QVERIFY2(diff.empty(), diff.c_str());
    // Estimators follow from the raw sums.
    for (std::size_t k = 0; k < r.rows(); ++k) {
      const double expect = r.r[k] != 0 ? r.n[k] / r.r[k] : 0.0;
      QCOMPARE(r.estimator[k], expect);
      QCOMPARE(r.zeta_odd[k], r.r[k] != 0 ? r.n_odd[k] / r.r[k] : 0.0);
    }
  }

  // Thread-count independence of the 4pCF kernel: 1 and 2 threads give bit-identical sums.
  void fourPointThreadIndependence() {
    const PointSet p = test::clustered_point_set(400, 800, 150.0, 5, true, false, 8, 3.0);
    NpcfConfig c;
    c.statistic = Statistic::FourPointParity;
    c.bins = {1.0, 16.0, 5, BinScale::Linear};
    c.directions = DirectionMode::Exact;
    const Graph g = build_graph(p, c, JobContext{});
    c.threads = 1;
    const NpcfResult a = count_4pcf_cpu(g, p, c, true, JobContext{});
    c.threads = 2;
    const NpcfResult b = count_4pcf_cpu(g, p, c, true, JobContext{});
    QVERIFY(total(a.tuples) > 10000);
    QVERIFY(a.tuples == b.tuples);
    QVERIFY(a.random_tuples == b.random_tuples);
    QVERIFY(a.n == b.n);
    QVERIFY(a.r == b.r);
    QVERIFY(a.n_odd == b.n_odd);
    QVERIFY(a.r_odd == b.r_odd);
    QVERIFY(a.degenerate == b.degenerate);
  }

private:
  static const std::vector<Case>& cases() {
    using S = Statistic;
    using B = BinScale;
    const auto X = DirectionMode::Exact, P = DirectionMode::Pixel;
    static const std::vector<Case> k = {
        {"2pcf linear", S::TwoPoint, 200, 300, 100.0, 1.0, 30.0, 5, B::Linear, false, X, 11},
        {"2pcf log periodic", S::TwoPoint, 200, 300, 100.0, 0.5, 24.0, 4, B::Log, true, X, 12},
        {"3pcf linear", S::ThreePoint, 150, 200, 100.0, 1.0, 25.0, 5, B::Linear, false, X, 13},
        {"3pcf log", S::ThreePoint, 150, 200, 100.0, 0.5, 25.0, 3, B::Log, false, X, 14},
        {"3pcf equilateral", S::ThreePointEquilateral, 150, 200, 100.0, 1.0, 25.0, 4, B::Linear, false, X, 15},
        {"3pcf periodic", S::ThreePoint, 150, 200, 100.0, 1.0, 25.0, 4, B::Linear, true, X, 16},
        {"4pcf linear", S::FourPoint, 60, 90, 100.0, 1.0, 22.0, 4, B::Linear, false, X, 17},
        {"4pcf log", S::FourPoint, 60, 90, 100.0, 0.5, 22.0, 3, B::Log, false, X, 18},
        {"4pcf 5 bins", S::FourPoint, 60, 90, 100.0, 1.0, 24.0, 5, B::Linear, false, X, 19},
        {"parity exact", S::FourPointParity, 60, 90, 100.0, 1.0, 22.0, 4, B::Linear, false, X, 20},
        {"parity pixel", S::FourPointParity, 60, 90, 100.0, 1.0, 22.0, 4, B::Linear, false, P, 21},
        {"parity exact log", S::FourPointParity, 60, 90, 100.0, 0.5, 22.0, 3, B::Log, false, X, 22},
        {"parity pixel periodic", S::FourPointParity, 60, 90, 100.0, 1.0, 25.0, 4, B::Linear, true, P, 23},
        {"parity exact periodic", S::FourPointParity, 60, 90, 100.0, 1.0, 25.0, 5, B::Linear, true, X, 24},
    };
    return k;
  }
};

QTEST_GUILESS_MAIN(TestNpcfBruteforce)
#include "test_npcf_bruteforce.moc"
