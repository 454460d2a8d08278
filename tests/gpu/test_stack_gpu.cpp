// Shift-and-stack GPU backends against the CPU twin (exit 77 without a usable GPU): FP32 gathers
// identical in dense A, B, obs and digest; the Fourier path within its tolerance (|dZ| < 0.02,
// relative sum B 1e-3); device psi/phi within 1e-5; the sub-pixel (fractional-shift) mode of the
// gather and tiled methods against the CPU twin to 1e-5 relative, and its SNR gain over integer
// shifts (stack/selftest.hpp, the same checks as `almagest-cli selftest`).
#include <QtTest>

#include <cmath>
#include <cstdlib>

#include "almagest/core/gpu.hpp"
#include "almagest/stack/psiphi.hpp"
#include "almagest/stack/search.hpp"
#include "almagest/stack/selftest.hpp"
#include "almagest/stack/synthetic.hpp"

using namespace almagest;
using namespace almagest::stack;

class TestStackGpu : public QObject {
  Q_OBJECT
private slots:
  void initTestCase() {
    if (!gpu_status().available) {
      std::printf("SKIP: no usable GPU (%s)\n", gpu_status().reason.c_str());
      std::exit(77);
    }
  }
  void backends_agree() {
    SyntheticConfig c;
    c.n_exp = 40;
    c.width = 48;
    c.height = 40;
    c.seed = 5;
    c.movers = {Mover{20, 20, 2.0, 1.0, 9.0, 0}};
    const SyntheticStack syn = make_synthetic(c);
    const PsiPhi p = compute_psiphi(syn.stack, JobContext{});
    const PsiPhi pg = compute_psiphi_gpu(syn.stack, 0, JobContext{});
    for (std::size_t i = 0; i < p.psi.size(); ++i) {
      QVERIFY(std::fabs(pg.phi[i] - p.phi[i]) <= 1e-5 * p.phi[i] + 1e-30);
      QVERIFY(std::fabs(pg.psi[i] - p.psi[i]) <= 1e-5 * (std::fabs(p.psi[i]) + std::sqrt(p.phi[i])));
    }
    auto run = [&](Backend b) {
      SearchConfig cfg;
      cfg.bank = reference_bank(c, 9, 12.0);
      cfg.curve_dx = syn.curve_dx;
      cfg.curve_dy = syn.curve_dy;
      cfg.backend = b;
      cfg.dense = true;
      cfg.threshold_z = 4.0;
      return make_plan(cfg, p.mjd, p.width, p.height, JobContext{}).execute(encode(p, Encoding::Fp32), JobContext{});
    };
    const SearchResult cpu = run(Backend::Cpu);
    for (Backend b : {Backend::GpuGather, Backend::GpuTiled}) {
      const SearchResult g = run(b);
      QCOMPARE(g.dense_a, cpu.dense_a);
      QCOMPARE(g.dense_b, cpu.dense_b);
      QCOMPARE(g.dense_obs, cpu.dense_obs);
      QCOMPARE(g.digest.max_z, cpu.digest.max_z);
      QCOMPARE(g.digest.count_above, cpu.digest.count_above);
      QVERIFY(std::fabs(g.digest.sum_b - cpu.digest.sum_b) <= 1e-6 * cpu.digest.sum_b);
    }
    const SearchResult f = run(Backend::GpuFourier);
    QVERIFY(!f.exact);
    for (std::size_t i = 0; i < cpu.dense_a.size(); ++i) {
      if (cpu.dense_obs[i] < 20) continue;
      const double ze = cpu.dense_a[i] / std::sqrt(double(cpu.dense_b[i]));
      const double zf = f.dense_a[i] / std::sqrt(double(f.dense_b[i]));
      QVERIFY2(std::fabs(ze - zf) < 0.02, qPrintable(QString("trajectory %1: %2 vs %3").arg(i).arg(zf).arg(ze)));
    }
    QVERIFY(std::fabs(f.digest.sum_b - cpu.digest.sum_b) <= 1e-3 * cpu.digest.sum_b);
  }
  void fractional_matches_cpu() {
    const SelftestReport r = run_stack_gpu_selftest(StackSelftestOptions{}, JobContext{});
    std::fputs(r.text().c_str(), stdout);
    QVERIFY(r.checks.size() >= 9);
    for (const SelftestCheck& c : r.checks) QVERIFY2(c.passed, qPrintable(QString::fromStdString(c.name + ": " + c.detail)));
  }
};

QTEST_GUILESS_MAIN(TestStackGpu)
#include "test_stack_gpu.moc"
