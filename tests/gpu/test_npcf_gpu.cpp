// GPU against CPU for every N-point statistic (label gpu). Exits with 77 (ctest: skipped) and a
// message when no usable GPU is present. The comparisons are those of run_gpu_selftest: seeded
// clustered catalogues, all-resident and forced tiling (W = 2, 3, 5), one and several partitions,
// identical counts and weighted sums within 1e-12; plus the chiral injection on the GPU.
#include <QtTest>

#include <array>
#include <cmath>
#include <cstdio>

#include "almagest/core/gpu.hpp"
#include "almagest/core/selftest.hpp"
#include "almagest/npcf/cuda.hpp"
#include "almagest/npcf/plan.hpp"
#include "almagest/npcf/synthetic.hpp"
#include "npcf_testdata.hpp"

using namespace almagest;

class TestNpcfGpu : public QObject {
  Q_OBJECT

  void run_group(const char* group) {
    SelftestOptions o;
    o.only = {group};
    const SelftestReport r = run_gpu_selftest(o, JobContext{});
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

  void chiral_injection() {
    // N isolated copies of one scalene tetrahedron, a fraction x of them mirrored (left-handed),
    // unit data weights 1/n: the odd sum over all rows times n^4 / N is eps (2x - 1), eps = +-1.
    const std::array<std::array<double, 3>, 4> right{{{0, 0, 0}, {6.1, 0, 0}, {1.3, 7.2, 0}, {2.2, 1.9, 8.4}}};
    std::array<std::array<double, 3>, 4> left = right;
    for (auto& v : left) v[0] = -v[0];
    for (double x : {1.0, 0.7, 0.5}) {
      const int nstruct = 200;
      io::Catalogue cat;
      test::Rng rng(77);
      const int nleft = static_cast<int>(std::lround(x * nstruct));
      for (int s = 0; s < nstruct; ++s) {
        const std::array<double, 3> origin{50.0 + 100.0 * (s % 10), 50.0 + 100.0 * ((s / 10) % 10),
                                           50.0 + 100.0 * (s / 100)};
        test::add_tetrahedron(cat, s < nleft ? left : right, origin, rng);
      }
      npcf::PointSet p;
      p.x = cat.x;
      p.y = cat.y;
      p.z = cat.z;
      const double n = static_cast<double>(cat.size());
      p.w.assign(cat.size(), 1.0 / n);
      p.ndata = cat.size();
      npcf::NpcfConfig c;
      c.statistic = npcf::Statistic::FourPointParity;
      c.bins = npcf::Binning{2.0, 14.0, 4, npcf::BinScale::Linear};
      c.directions = npcf::DirectionMode::Exact;
      JobContext ctx;
      const npcf::Graph g = npcf::build_graph_cuda(p, c, ctx);
      const npcf::NpcfResult r = npcf::count_4pcf_cuda(g, p, c, true, ctx);
      double odd = 0;
      std::uint64_t tuples = 0;
      for (std::size_t k = 0; k < r.rows(); ++k) {
        odd += r.n_odd[k];
        tuples += r.tuples[k];
      }
      QCOMPARE(tuples, static_cast<std::uint64_t>(nstruct));
      const double measured = odd * n * n * n * n / nstruct;
      QVERIFY2(std::fabs(std::fabs(measured) - std::fabs(2 * x - 1)) < 1e-9,
               qPrintable(QString("x = %1: measured %2").arg(x).arg(measured)));
    }
  }
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
