// Shift-and-stack injection-recovery: movers of stack SNR >= 7 in stacks with masked holes, a
// moving bad column (garbage values, zero variance), variable seeing, irregular times and a
// common curve are recovered at the right origin and velocity (within one grid step); pure-noise
// stacks give false alarms consistent with the Bonferroni threshold and unit-variance scores.
#include <QtTest>

#include <cmath>

#include "almagest/stack/psiphi.hpp"
#include "almagest/stack/search.hpp"
#include "almagest/stack/synthetic.hpp"

using namespace almagest;
using namespace almagest::stack;

class TestStackInjection : public QObject {
  Q_OBJECT
private slots:
  void movers_are_recovered() {
    SyntheticConfig c;
    c.n_exp = 60;
    c.width = 64;
    c.height = 64;
    c.seed = 77;
    c.holes = 3;
    c.movers = {Mover{20.3, 30.6, 3.1, -2.2, 8.0, 0}, Mover{45.2, 12.8, -4.4, 1.3, 7.0, 0},
                Mover{30.1, 50.4, 0.8, 4.2, 10.0, 0}};
    const SyntheticStack syn = make_synthetic(c);
    const PsiPhi p = compute_psiphi(syn.stack, JobContext{});
    SearchConfig cfg;
    cfg.bank = TrajectoryBank::cartesian(-6, 6, 25, -6, 6, 25);
    const double step = 0.5;
    cfg.curve_dx = syn.curve_dx;
    cfg.curve_dy = syn.curve_dy;
    cfg.false_alarms = 1.0;
    cfg.min_obs = 30;
    cfg.cluster.enabled = false;
    auto plan = make_plan(cfg, p.mjd, p.width, p.height, JobContext{});
    const SearchResult r = plan.execute(encode(p, Encoding::Fp32), JobContext{});
    cfg.cluster.enabled = true;
    const SearchResult rc = make_plan(cfg, p.mjd, p.width, p.height, JobContext{}).execute(encode(p, Encoding::Fp32), JobContext{});
    QVERIFY(r.threshold_z > 4.5 && r.threshold_z < 5.5);
    qInfo("threshold %.3f, %zu candidates, %zu after clustering", r.threshold_z, r.candidates.size(), rc.candidates.size());
    for (const Mover& m : syn.movers) {
      const Candidate* best = nullptr;
      for (const auto& cand : r.candidates)
        if (std::fabs(cand.x - m.x0) <= 1.0 && std::fabs(cand.y - m.y0) <= 1.0 &&
            std::fabs(cand.vx - m.vx) <= step + 1e-9 && std::fabs(cand.vy - m.vy) <= step + 1e-9 &&
            (!best || cand.z > best->z))
          best = &cand;
      QVERIFY2(best, qPrintable(QString("mover at (%1, %2) v=(%3, %4) SNR %5 not recovered").arg(m.x0).arg(m.y0).arg(m.vx).arg(m.vy).arg(m.snr)));
      qInfo("mover SNR %.1f -> Z %.2f at (%d, %d) v=(%.2f, %.2f), obs %d, %d merged", m.snr, best->z, best->x, best->y, best->vx, best->vy, best->obs, best->members);
      QVERIFY(best->z > 0.6 * m.snr && best->z < 1.4 * m.snr);
      QVERIFY(best->flux > 0);
    }
    // Clustering merges the near-duplicates around each mover into few candidates, and the
    // strongest candidate of each mover's cluster lies near it.
    QVERIFY(rc.candidates.size() * 5 < r.candidates.size());
    for (const Mover& m : syn.movers) {
      bool near = false;
      for (const auto& cand : rc.candidates)
        near = near || (std::fabs(cand.x - m.x0) <= 3 && std::fabs(cand.y - m.y0) <= 3 && std::fabs(cand.vx - m.vx) <= 3 * step && std::fabs(cand.vy - m.vy) <= 3 * step);
      QVERIFY(near);
    }
  }

  void pure_noise_false_alarms() {
    std::uint64_t above = 0;
    std::size_t clustered = 0;
    double s1 = 0, s2 = 0, cnt = 0;
    for (std::uint64_t seed : {101u, 202u, 303u}) {
      SyntheticConfig c;
      c.n_exp = 40;
      c.width = 48;
      c.height = 48;
      c.seed = seed;
      const SyntheticStack syn = make_synthetic(c);
      const PsiPhi p = compute_psiphi(syn.stack, JobContext{});
      SearchConfig cfg;
      cfg.bank = TrajectoryBank::cartesian(-3, 3, 15, -3, 3, 15);
      cfg.curve_dx = syn.curve_dx;
      cfg.curve_dy = syn.curve_dy;
      cfg.false_alarms = 1.0;
      cfg.dense = true;
      auto plan = make_plan(cfg, p.mjd, p.width, p.height, JobContext{});
      const SearchResult r = plan.execute(encode(p, Encoding::Fp32), JobContext{});
      above += r.digest.count_above;
      clustered += r.candidates.size();
      for (std::size_t i = 0; i < r.dense_a.size(); ++i)
        if (r.dense_obs[i] >= 20) {
          const double z = r.dense_a[i] / std::sqrt(double(r.dense_b[i]));
          s1 += z;
          s2 += z * z;
          cnt += 1;
        }
    }
    const double mean = s1 / cnt, sd = std::sqrt(s2 / cnt - mean * mean);
    qInfo("pure noise: %llu trajectories above threshold, %zu clustered candidates in 3 scans (expected <= 3); null Z mean %.4f sd %.4f over %.0f trajectories",
          (unsigned long long)above, clustered, mean, sd, cnt);
    QVERIFY(clustered <= 10);
    QVERIFY(std::fabs(mean) < 0.05);
    QVERIFY(sd > 0.95 && sd < 1.05);
  }
};

QTEST_GUILESS_MAIN(TestStackInjection)
#include "test_stack_injection.moc"
