// Identities of the CPU N-point engine:
//  - 1, 2 and 3 threads give bit-identical counts and sums (2pCF, 3pCF, equilateral 3pCF);
//  - re-executing a plan gives identical results;
//  - the equilateral mode equals the b1 = b2 = b3 rows of the full 3pCF;
//  - 3pCF with 21 bins (row-indexed accumulators) aggregated by 3 equals 7 bins (cube-indexed);
//  - the total number of triangles does not depend on the binning.
#include <QtTest>

#include <cmath>
#include <numeric>

#include "almagest/npcf/configurations.hpp"
#include "almagest/npcf/plan.hpp"
#include "almagest/npcf/synthetic.hpp"

using namespace almagest;
using namespace almagest::npcf;

namespace {

PointSet catalogue(std::size_t n, std::uint64_t seed) {
  const auto cats = synthetic::benchmark_catalogues(n, seed, 250.0);
  return make_point_set(cats.data, &cats.randoms);
}

NpcfConfig config(Statistic s, int nbins, int threads) {
  NpcfConfig c;
  c.statistic = s;
  c.bins = {1.0, 22.0, nbins, BinScale::Linear};
  c.threads = threads;
  return c;
}

void same_bits(const NpcfResult& a, const NpcfResult& b) {
  QCOMPARE(a.rows(), b.rows());
  QVERIFY(a.bins == b.bins);
  QVERIFY(a.tuples == b.tuples);
  QVERIFY(a.random_tuples == b.random_tuples);
  // Bitwise equality of the floating sums (memcmp-like: == on every element, no tolerance).
  QVERIFY(a.n == b.n);
  QVERIFY(a.r == b.r);
  QVERIFY(a.estimator == b.estimator);
}

double rel(double a, double b) { return std::fabs(a - b) / std::max(1e-300, std::max(std::fabs(a), std::fabs(b))); }

}  // namespace

class TestNpcfThreads : public QObject {
  Q_OBJECT
private slots:
  void thread_count_independence() {
    const PointSet p = catalogue(15000, 3);
    for (Statistic s : {Statistic::TwoPoint, Statistic::ThreePoint, Statistic::ThreePointEquilateral}) {
      NpcfResult ref;
      for (int t : {1, 2, 3}) {
        NpcfPlan plan(config(s, 8, t), p, JobContext{});
        NpcfResult r = plan.execute(JobContext{});
        QVERIFY(std::accumulate(r.tuples.begin(), r.tuples.end(), std::uint64_t(0)) > 1000);
        QVERIFY(std::accumulate(r.random_tuples.begin(), r.random_tuples.end(), std::uint64_t(0)) > 100);
        if (t == 1)
          ref = r;
        else
          same_bits(ref, r);
      }
    }
  }

  void plan_reexecution_identical() {
    NpcfPlan plan(config(Statistic::ThreePoint, 6, 2), catalogue(9000, 4), JobContext{});
    const NpcfResult a = plan.execute(JobContext{});
    const NpcfResult b = plan.execute(JobContext{});
    same_bits(a, b);
    // Another statistic from the same plan, then the first again.
    const NpcfResult x = plan.execute(Statistic::TwoPoint, JobContext{});
    QCOMPARE(x.rows(), std::size_t(6));
    same_bits(a, plan.execute(JobContext{}));
    QCOMPARE(a.provenance.backend, std::string("cpu"));
    QVERIFY(a.provenance.timings_s.count("graph_build") && a.provenance.timings_s.count("query"));
    QCOMPARE(a.graph_edges, plan.graph().num_edges());
  }

  void equilateral_equals_diagonal_rows() {
    NpcfPlan plan(config(Statistic::ThreePoint, 7, 2), catalogue(12000, 5), JobContext{});
    const NpcfResult full = plan.execute(JobContext{});
    const NpcfResult eq = plan.execute(Statistic::ThreePointEquilateral, JobContext{});
    QCOMPARE(eq.rows(), std::size_t(7));
    TriangleTable t(7);
    std::uint64_t nonzero = 0;
    for (int b = 0; b < 7; ++b) {
      const std::uint32_t row = t.row_sorted(b, b, b);
      QCOMPARE(static_cast<int>(eq.bins[3 * b]), b);
      QCOMPARE(eq.tuples[b], full.tuples[row]);
      QCOMPARE(eq.random_tuples[b], full.random_tuples[row]);
      QVERIFY(rel(eq.n[b], full.n[row]) < 1e-12);
      QVERIFY(rel(eq.r[b], full.r[row]) < 1e-12);
      nonzero += eq.tuples[b] > 0;
    }
    QVERIFY(nonzero >= 5);
  }

  void row_and_cube_accumulators_agree() {
    const PointSet p = catalogue(9000, 6);
    NpcfPlan fine(config(Statistic::ThreePoint, 21, 2), p, JobContext{});
    NpcfPlan coarse(config(Statistic::ThreePoint, 7, 2), p, JobContext{});
    const NpcfResult f = fine.execute(JobContext{});
    const NpcfResult c = coarse.execute(JobContext{});
    QCOMPARE(f.rows(), std::size_t(21 * 22 * 23 / 6));
    TriangleTable t7(7);
    std::vector<std::uint64_t> tuples(c.rows(), 0), rtuples(c.rows(), 0);
    std::vector<double> n(c.rows(), 0.0), r(c.rows(), 0.0);
    for (std::size_t row = 0; row < f.rows(); ++row) {
      const std::uint32_t k = t7.row(f.bins[3 * row] / 3, f.bins[3 * row + 1] / 3, f.bins[3 * row + 2] / 3);
      tuples[k] += f.tuples[row];
      rtuples[k] += f.random_tuples[row];
      n[k] += f.n[row];
      r[k] += f.r[row];
    }
    QVERIFY(tuples == c.tuples);
    QVERIFY(rtuples == c.random_tuples);
    for (std::size_t k = 0; k < c.rows(); ++k) {
      QVERIFY(std::fabs(n[k] - c.n[k]) <= 1e-11 * std::fabs(c.n[k]) + 1e-300);
      QVERIFY(std::fabs(r[k] - c.r[k]) <= 1e-11 * std::fabs(c.r[k]) + 1e-300);
    }
    // Total triangles do not depend on the binning; RRR is positive.
    QCOMPARE(std::accumulate(f.tuples.begin(), f.tuples.end(), std::uint64_t(0)),
             std::accumulate(c.tuples.begin(), c.tuples.end(), std::uint64_t(0)));
    for (std::size_t k = 0; k < c.rows(); ++k) QVERIFY(c.r[k] >= 0);
  }
};

QTEST_GUILESS_MAIN(TestNpcfThreads)
#include "test_npcf_threads.moc"
