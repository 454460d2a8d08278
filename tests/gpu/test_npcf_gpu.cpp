// GPU against CPU for every N-point statistic (label gpu). Exits with 77 (ctest: skipped) and a
// message when no usable GPU is present. The comparisons are those of npcf::run_npcf_gpu_selftest: seeded
// clustered catalogues, all-resident and forced tiling (W = 2, 3, 5), one and several partitions,
// identical counts and weighted sums within 1e-12, the mirror identity and the chiral injection.
#include <QtTest>

#include <cstdio>

#include "almagest/core/gpu.hpp"
#include "almagest/npcf/selftest.hpp"

using namespace almagest;

class TestNpcfGpu : public QObject {
  Q_OBJECT

  void run_group(const char* group) {
    npcf::NpcfSelftestOptions o;
    o.only = {group};
    const SelftestReport r = npcf::run_npcf_gpu_selftest(o, JobContext{});
    QVERIFY(r.gpu_available);
    QVERIFY(!r.checks.empty());
    for (const auto& c : r.checks) {
      qInfo("%s %s: %s", c.passed ? "PASS" : "FAIL", c.name.c_str(), c.detail.c_str());
      QVERIFY2(c.passed, (c.name + ": " + c.detail).c_str());
    }
  }

private slots:
  void graph() { run_group("graph"); }
  void two_point() { run_group("2pcf"); }
  void three_point() { run_group("3pcf"); }
  void three_point_equilateral() { run_group("3pcf-equilateral"); }
  void four_point() { run_group("4pcf"); }
  void four_point_parity() { run_group("4pcf-parity"); }
  void mirror() { run_group("mirror"); }

  void chiral_injection() { run_group("injection"); }
  void resident_device_graphs() { run_group("resident"); }
};

int main(int argc, char** argv) {
  QCoreApplication app(argc, argv);
  const GpuStatus& s = gpu_status();
  if (!s.available) {
    std::fprintf(stderr, "SKIP: GPU tests need a usable CUDA device: %s\n", s.reason.c_str());
    return 77;
  }
  std::printf("GPU: %s\n", s.summary().c_str());
  TestNpcfGpu t;
  return QTest::qExec(&t, argc, argv);
}

#include "test_npcf_gpu.moc"
