// Shift-and-stack CPU twin against brute force: psi/phi from the definition, every trajectory's
// sums from an independent loop that predicts pixels with floor(x + vx t + dx + 0.5), digests for
// different thread counts, top-k against a full sort.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <random>

#include "almagest/stack/psiphi.hpp"
#include "almagest/stack/search.hpp"
#include "almagest/stack/synthetic.hpp"

using namespace almagest;
using namespace almagest::stack;

namespace {
SyntheticStack small_stack(std::uint64_t seed, int n = 12, int w = 24, int h = 20) {
  SyntheticConfig c;
  c.n_exp = n;
  c.width = w;
  c.height = h;
  c.seed = seed;
  c.holes = 2;
  c.movers = {Mover{8.2, 9.7, 1.5, -0.8, 9.0, 0.0}};
  return make_synthetic(c);
}
}  // namespace

class TestStackCpu : public QObject {
  Q_OBJECT
private slots:
  void psiphi_matches_definition() {
    auto syn = small_stack(3);
    ExposureStack& s = syn.stack;
    s.weight.assign(s.size(), 1.0);
    s.weight[2] = 1.7;
    s.sci[5] = std::nanf("");  // non-finite science is invalid
    const PsiPhi p = compute_psiphi(s, JobContext{});
    std::mt19937 rng(11);
    const int W = s.width, H = s.height;
    for (int trial = 0; trial < 300; ++trial) {
      const int e = rng() % s.size(), x = rng() % W, y = rng() % H;
      const Psf& k = s.psf[e];
      const int r = k.size / 2;
      double ks = 0, k2s = 0;
      for (float v : k.kernel) ks += v;
      for (float v : k.kernel) k2s += (v / ks) * (v / ks);
      double s1 = 0, f1 = 0, s2 = 0, f2 = 0;
      for (int v = -r; v <= r; ++v)
        for (int u = -r; u <= r; ++u) {
          const int xx = x + u, yy = y + v;
          if (xx < 0 || yy < 0 || xx >= W || yy >= H) continue;
          const std::size_t i = std::size_t(e) * W * H + std::size_t(yy) * W + xx;
          if (s.mask[i] || !(s.var[i] > 0) || !std::isfinite(s.sci[i])) continue;
          const double kk = k.kernel[(v + r) * k.size + (u + r)] / ks;
          s1 += kk * s.sci[i] / s.var[i];
          f1 += kk;
          s2 += kk * kk / s.var[i];
          f2 += kk * kk;
        }
      const std::size_t o = std::size_t(e) * W * H + std::size_t(y) * W + x;
      const double a = s.weight[e];
      const double psi = f1 > 0 ? a * s1 / f1 : 0, phi = f1 > 0 ? a * a * s2 / (f1 * f1) : 0;
      (void)f2;
      (void)k2s;
      QVERIFY2(std::fabs(p.psi[o] - psi) <= 1e-5 * (std::fabs(psi) + 1e-3), qPrintable(QString("psi e=%1 x=%2 y=%3: %4 vs %5").arg(e).arg(x).arg(y).arg(p.psi[o]).arg(psi)));
      QVERIFY(std::fabs(p.phi[o] - phi) <= 1e-5 * phi + 1e-12);
    }
    // Masked/bad-column pixels surrounded by valid ones stay valid (renormalised), never NaN.
    for (std::size_t i = 0; i < p.psi.size(); ++i) QVERIFY(std::isfinite(p.psi[i]) && std::isfinite(p.phi[i]));
  }

  void sums_match_brute_force() {
    auto syn = small_stack(5);
    const PsiPhi p = compute_psiphi(syn.stack, JobContext{});
    SearchConfig cfg;
    cfg.bank = TrajectoryBank::cartesian(-3, 3, 5, -2.5, 2.5, 4);
    cfg.curve_dx = syn.curve_dx;
    cfg.curve_dy = syn.curve_dy;
    cfg.dense = true;
    cfg.threshold_z = 3.0;
    cfg.threads = 2;
    auto plan = make_plan(cfg, p.mjd, p.width, p.height, JobContext{});
    const SearchResult r = plan.execute(encode(p, Encoding::Fp32), JobContext{});
    const int W = p.width, H = p.height;
    Digest d;
    for (std::size_t v = 0; v < cfg.bank.size(); ++v)
      for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
          float a = 0, b = 0;
          int obs = 0;
          for (int e = 0; e < p.n; ++e) {
            const double t = p.mjd[e] - p.mjd[0];
            const int xx = int(std::floor(x + cfg.bank.vx[v] * t + syn.curve_dx[e] + 0.5));
            const int yy = int(std::floor(y + cfg.bank.vy[v] * t + syn.curve_dy[e] + 0.5));
            if (xx < 0 || yy < 0 || xx >= W || yy >= H) continue;
            const std::size_t i = std::size_t(e) * W * H + std::size_t(yy) * W + xx;
            a += p.psi[i];
            b += p.phi[i];
            obs += p.phi[i] > 0;
          }
          const std::size_t o = v * W * H + std::size_t(y) * W + x;
          QCOMPARE(r.dense_a[o], a);
          QCOMPARE(r.dense_b[o], b);
          QCOMPARE(r.dense_obs[o], obs);
          const float z = b > 0 ? a / std::sqrt(b) : 0.0f;
          d.sum_a += a;
          d.sum_b += b;
          d.max_z = std::max<double>(d.max_z, z);
          d.count_above += z >= float(r.threshold_z);
        }
    QVERIFY(std::fabs(r.digest.sum_a - d.sum_a) <= 1e-9 * std::fabs(d.sum_b));
    QVERIFY(std::fabs(r.digest.sum_b - d.sum_b) <= 1e-12 * d.sum_b);
    QCOMPARE(r.digest.max_z, d.max_z);
    QCOMPARE(r.digest.count_above, d.count_above);
    QVERIFY(d.count_above > 0);
    // thread count does not change anything
    cfg.threads = 1;
    auto plan1 = make_plan(cfg, p.mjd, p.width, p.height, JobContext{});
    const SearchResult r1 = plan1.execute(encode(p, Encoding::Fp32), JobContext{});
    QCOMPARE(r1.digest.sum_a, r.digest.sum_a);
    QCOMPARE(r1.digest.count_above, r.digest.count_above);
    QCOMPARE(r1.candidates.size(), r.candidates.size());
  }

  void top_k_matches_sort() {
    auto syn = small_stack(9, 10, 16, 12);
    const PsiPhi p = compute_psiphi(syn.stack, JobContext{});
    SearchConfig cfg;
    cfg.bank = TrajectoryBank::speed_angle(0.0, 3.0, 4, 0.3, 1.2, 5);
    cfg.mode = ResultMode::TopK;
    cfg.top_k = 3;
    cfg.min_obs = 0;
    cfg.cluster.enabled = false;
    cfg.dense = true;
    auto plan = make_plan(cfg, p.mjd, p.width, p.height, JobContext{});
    const SearchResult r = plan.execute(encode(p, Encoding::Fp32), JobContext{});
    QCOMPARE(r.candidates.size(), std::size_t(16 * 12 * 3));
    const std::size_t np = 16 * 12;
    for (int y = 0; y < 12; ++y)
      for (int x = 0; x < 16; ++x) {
        std::vector<std::pair<float, int>> all;
        for (std::size_t v = 0; v < cfg.bank.size(); ++v) {
          const std::size_t o = v * np + y * 16 + x;
          const float b = r.dense_b[o];
          all.push_back({b > 0 ? r.dense_a[o] / std::sqrt(b) : 0.0f, int(v)});
        }
        std::sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
        std::vector<int> got;
        for (const auto& c : r.candidates)
          if (c.x == x && c.y == y) got.push_back(c.v);
        QCOMPARE(got.size(), std::size_t(3));
        for (int k = 0; k < 3; ++k) QVERIFY(std::find(got.begin(), got.end(), all[k].second) != got.end());
      }
  }

  void encodings_decode_within_bounds() {
    for (std::uint32_t h = 0; h < 65536; ++h) {
      const float f = half_to_float(std::uint16_t(h));
      if (std::isnan(f)) continue;
      QCOMPARE(float_to_half(f), std::uint16_t(h));
    }
    QCOMPARE(float_to_half(1.0f + 1.0f / 4096.0f), std::uint16_t(0x3c00));  // ties to even
    auto syn = small_stack(21);
    const PsiPhi p = compute_psiphi(syn.stack, JobContext{});
    const PsiPhi d16 = decode(encode(p, Encoding::Fp16));
    const EncodedPsiPhi e8 = encode(p, Encoding::Int8);
    const PsiPhi d8 = decode(e8);
    for (std::size_t i = 0; i < p.psi.size(); ++i) {
      const int e = int(i / p.pixels());
      QCOMPARE(d16.phi[i] > 0, p.phi[i] > 0);
      QCOMPARE(d8.phi[i] > 0, p.phi[i] > 0);
      QVERIFY(std::fabs(d16.phi[i] - p.phi[i]) <= 1e-3 * p.phi[i]);
      QVERIFY(std::fabs(d16.psi[i] - p.psi[i]) <= 1e-3 * std::fabs(p.psi[i]) + 1e-6 * e8.psi_scale[e]);
      if (p.phi[i] > 0 && std::fabs(p.psi[i]) < 127 * e8.psi_scale[e])
        QVERIFY(std::fabs(d8.psi[i] - p.psi[i]) <= 0.5001f * e8.psi_scale[e]);
    }
  }

  void bad_configs_are_reported() {
    SearchConfig cfg;
    cfg.backend = Backend::GpuFourier;
    cfg.bank = TrajectoryBank::list({1.0}, {2.0});
    cfg.mode = ResultMode::TopK;
    cfg.top_k = 40;
    const auto problems = cfg.validate();
    QCOMPARE(problems.size(), std::size_t(3));
    QVERIFY_THROWS_EXCEPTION(ConfigError, cfg.check());
    QVERIFY_THROWS_EXCEPTION(ConfigError, TrajectoryBank::list({}, {}));
    QVERIFY_THROWS_EXCEPTION(ConfigError, TrajectoryBank::cartesian(1, 0, 3, 0, 1, 3));
    SearchConfig ok;
    ok.bank = TrajectoryBank::cartesian(0, 1, 2, 0, 1, 2);
    ok.curve_dx = {1.0};
    ok.curve_dy = {1.0};
    QVERIFY_THROWS_EXCEPTION(ConfigError, make_plan(ok, {1.0, 2.0}, 4, 4, JobContext{}));
    QVERIFY(std::fabs(bonferroni_threshold(1.0, 2.0 / std::erfc(5.0 / std::sqrt(2.0))) - 5.0) < 1e-9);
  }
};

QTEST_GUILESS_MAIN(TestStackCpu)
#include "test_stack_cpu.moc"
