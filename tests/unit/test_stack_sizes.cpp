// Stacks of 200, 201 and 1,500 exposures (KBMOD's GPU kernel fails at exactly 200 images): sums
// against brute force, obs_count above 200, and a mover recovered through all exposures.
#include <QtTest>

#include <cmath>
#include <random>

#include "almagest/stack/psiphi.hpp"
#include "almagest/stack/search.hpp"
#include "almagest/stack/synthetic.hpp"

using namespace almagest;
using namespace almagest::stack;

class TestStackSizes : public QObject {
  Q_OBJECT
private slots:
  void many_exposures_data() {
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("size");
    QTest::newRow("200") << 200 << 16;
    QTest::newRow("201") << 201 << 16;
    QTest::newRow("1500") << 1500 << 12;
  }
  void many_exposures() {
    QFETCH(int, n);
    QFETCH(int, size);
    SyntheticConfig c;
    c.n_exp = n;
    c.width = size;
    c.height = size;
    c.seed = 4000 + n;
    c.holes = 1;
    c.hole_radius = 1.2;
    c.curve_quadratic = 1.0;
    c.curve_amplitude = 0.5;
    c.movers = {Mover{5.0, 6.0, 0.5, 0.25, 12.0, 0}};
    const SyntheticStack syn = make_synthetic(c);
    const PsiPhi p = compute_psiphi(syn.stack, JobContext{});
    SearchConfig cfg;
    cfg.bank = TrajectoryBank::cartesian(-0.5, 0.5, 3, -0.25, 0.25, 3);
    cfg.curve_dx = syn.curve_dx;
    cfg.curve_dy = syn.curve_dy;
    cfg.dense = true;
    cfg.false_alarms = 1.0;
    auto plan = make_plan(cfg, p.mjd, p.width, p.height, JobContext{});
    const SearchResult r = plan.execute(encode(p, Encoding::Fp32), JobContext{});
    std::mt19937 rng(n);
    int max_obs = 0;
    for (int t = 0; t < 40; ++t) {
      const int x = rng() % size, y = rng() % size, v = rng() % 9;
      float a = 0, b = 0;
      int obs = 0;
      for (int e = 0; e < n; ++e) {
        const double dt = p.mjd[e] - p.mjd[0];
        const int xx = int(std::floor(x + cfg.bank.vx[v] * dt + syn.curve_dx[e] + 0.5));
        const int yy = int(std::floor(y + cfg.bank.vy[v] * dt + syn.curve_dy[e] + 0.5));
        if (xx < 0 || yy < 0 || xx >= size || yy >= size) continue;
        const std::size_t i = std::size_t(e) * size * size + std::size_t(yy) * size + xx;
        a += p.psi[i];
        b += p.phi[i];
        obs += p.phi[i] > 0;
      }
      const std::size_t o = std::size_t(v) * size * size + std::size_t(y) * size + x;
      QCOMPARE(r.dense_a[o], a);
      QCOMPARE(r.dense_b[o], b);
      QCOMPARE(r.dense_obs[o], obs);
      max_obs = std::max(max_obs, obs);
    }
    QVERIFY(max_obs > std::min(n, 200) * 0.8);
    if (n > 200) QVERIFY(max_obs > 200);
    bool found = false;
    for (const auto& cand : r.candidates)
      found = found || (std::abs(cand.x - 5) <= 1 && std::abs(cand.y - 6) <= 1 && std::fabs(cand.vx - 0.5) <= 0.5 && std::fabs(cand.vy - 0.25) <= 0.25);
    QVERIFY2(found, "the SNR 12 mover was not recovered");
  }
};

QTEST_GUILESS_MAIN(TestStackSizes)
#include "test_stack_sizes.moc"
