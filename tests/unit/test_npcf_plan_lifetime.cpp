// NpcfPlan owns its state, device state included (a DeviceGraph on the CUDA backend, nothing on
// the CPU): two plans alive at once, plans destroyed in either order, a moved-from plan destroyed
// while its moved-to plan runs, give the counts of a brute-force pair count of each catalogue.
// Backend auto: the CPU fallback here (no GPU), the device graphs on a machine with one (where
// the tuple counts are the same integers).
#include <QtTest>

#include <cmath>
#include <memory>
#include <vector>

#include "almagest/npcf/plan.hpp"
#include "almagest/npcf/points.hpp"
#include "almagest/npcf/synthetic.hpp"

using namespace almagest;
using namespace almagest::npcf;

namespace {

PointSet points(std::size_t nd, std::size_t nr, double box, std::uint64_t seed) {
  io::Catalogue d = synthetic::neyman_scott(nd, 6, 2.0, box, seed);
  io::Catalogue r = synthetic::uniform(nr, box, seed + 1);
  synthetic::Rng rng(seed + 2);
  for (double& w : d.w) w = 0.5 + rng.uniform();
  for (double& w : r.w) w = 0.5 + rng.uniform();
  return make_point_set(d, &r);
}

NpcfConfig config(double rmin, double rmax, int nbins) {
  NpcfConfig c;
  c.bins = Binning{rmin, rmax, nbins, BinScale::Linear};
  c.statistic = Statistic::TwoPoint;
  c.backend = parse_backend("auto");
  c.threads = 2;
  return c;
}

/// Pairs i < j per bin, counted directly from the coordinates (independent of the graph).
std::vector<std::uint64_t> brute_pairs(const PointSet& p, const Binning& b) {
  std::vector<std::uint64_t> n(static_cast<std::size_t>(b.nbins), 0);
  for (std::size_t i = 0; i < p.size(); ++i)
    for (std::size_t j = i + 1; j < p.size(); ++j) {
      const double dx = p.x[i] - p.x[j], dy = p.y[i] - p.y[j], dz = p.z[i] - p.z[j];
      const double d = std::sqrt(dx * dx + dy * dy + dz * dz);
      if (d <= b.rmin || d >= b.rmax) continue;
      const int k = b.bin_of(d);
      if (k >= 0 && k < b.nbins) ++n[static_cast<std::size_t>(k)];
    }
  return n;
}

}  // namespace

class TestNpcfPlanLifetime : public QObject {
  Q_OBJECT

private slots:
  void two_plans_and_destruction_order() {
    const PointSet pa = points(300, 500, 60.0, 11), pb = points(200, 400, 40.0, 23);
    const NpcfConfig ca = config(1.0, 12.0, 4), cb = config(2.0, 9.0, 3);
    const std::vector<std::uint64_t> want_a = brute_pairs(pa, ca.bins), want_b = brute_pairs(pb, cb.bins);
    std::uint64_t sum_a = 0;
    for (auto v : want_a) sum_a += v;
    QVERIFY(sum_a > 100);  // the test has pairs to count

    JobContext ctx;
    for (int order = 0; order < 2; ++order) {
      auto a = std::make_unique<NpcfPlan>(ca, pa, ctx);
      const NpcfResult ra0 = a->execute(ctx);  // before B exists
      QCOMPARE(ra0.tuples, want_a);
      auto b = std::make_unique<NpcfPlan>(cb, pb, ctx);
      QCOMPARE(a->execute(ctx).tuples, want_a);  // both alive
      QCOMPARE(b->execute(ctx).tuples, want_b);
      if (order == 0) {
        a.reset();
        QCOMPARE(b->execute(ctx).tuples, want_b);  // A destroyed first
        QVERIFY(b->execute(Statistic::ThreePoint, ctx).rows() > 0);
      } else {
        b.reset();
        const NpcfResult ra1 = a->execute(ctx);  // B destroyed first
        QCOMPARE(ra1.tuples, want_a);
        QCOMPARE(ra1.n, ra0.n);  // the same plan and backend: the same sums, bit for bit
      }
    }
  }

  void moved_plan_keeps_its_state() {
    const PointSet pa = points(250, 400, 50.0, 31);
    const NpcfConfig ca = config(1.5, 10.0, 3);
    const std::vector<std::uint64_t> want = brute_pairs(pa, ca.bins);
    JobContext ctx;
    auto first = std::make_unique<NpcfPlan>(ca, pa, ctx);
    const NpcfResult r0 = first->execute(ctx);
    NpcfPlan moved(std::move(*first));
    first.reset();  // the moved-from shell goes; the state went with the move
    QCOMPARE(moved.execute(ctx).tuples, want);
    NpcfPlan other(config(1.5, 10.0, 3), points(100, 200, 50.0, 41), ctx);
    other = std::move(moved);  // move assignment frees other's own state
    const NpcfResult r1 = other.execute(ctx);
    QCOMPARE(r1.tuples, want);
    QCOMPARE(r1.n, r0.n);
  }
};

QTEST_APPLESS_MAIN(TestNpcfPlanLifetime)
#include "test_npcf_plan_lifetime.moc"
