// CUDA SHT backend vs the CPU backend (healpix_cxx), through the engine's SHT self-test
// (sht/selftest.hpp): synthesis and adjoint max relative error < 1e-10 for nside 8..256
// (8..1024 with ALMAGEST_SLOW_TESTS=1), adjointness on the GPU, batched == single to 1e-12,
// repeated calls, inverse recovery, cut sky, coexisting plans, the adjoint's shared-memory polar
// DFT against the Bluestein chain, the spin-0 adjoint's skip table against every chunk run.
// Exits 77 (skipped) without a GPU.
#include <QtTest>

#include "almagest/core/gpu.hpp"
#include "almagest/sht/selftest.hpp"

using namespace almagest;

class TestShtGpu : public QObject {
  Q_OBJECT
private slots:
  void every_gate_passes() {
    sht::ShtSelftestOptions o;
    o.max_nside = qEnvironmentVariableIsSet("ALMAGEST_SLOW_TESTS") ? 1024 : 256;
    const SelftestReport r = sht::run_sht_gpu_selftest(o, JobContext{});
    QVERIFY(r.gpu_available);
    // nside 8..max for two spins, two batched, two inverse, four cut-sky (two masks, two
    // spins), one coexistence check, four polar-DFT-vs-Bluestein-chain checks (two nside, two
    // spins), one skip-table-vs-every-chunk check.
    int sizes = 0;
    for (int n = 8; n <= o.max_nside; n *= 2) ++sizes;
    QCOMPARE(static_cast<int>(r.checks.size()), 2 * sizes + 14);
    for (const SelftestCheck& c : r.checks) {
      qInfo("%s %s: %s", c.passed ? "PASS" : "FAIL", c.name.c_str(), c.detail.c_str());
      QVERIFY2(c.passed, qPrintable(QString::fromStdString(c.name + ": " + c.detail)));
    }
    QVERIFY(r.passed());
  }
};

int main(int argc, char** argv) {
  if (!almagest::gpu_status().available) {
    std::printf("SKIP: no usable GPU: %s\n", almagest::gpu_status().reason.c_str());
    return 77;
  }
  QCoreApplication app(argc, argv);
  TestShtGpu t;
  return QTest::qExec(&t, argc, argv);
}
#include "test_sht_gpu.moc"
