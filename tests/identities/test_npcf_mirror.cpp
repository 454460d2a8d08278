// Mirror symmetry of the parity-odd 4pCF: reflecting the catalogue (x -> L - x) reverses the
// handedness of every tetrahedron, so every odd count flips sign exactly while tuple counts and
// even sums are unchanged. Exact directions and pixel directions (nphi even: the pixel grid is
// mirror symmetric), open and periodic boxes.
#include <QtTest>

#include <cmath>

#include "almagest/npcf/graph.hpp"
#include "almagest/npcf/plan.hpp"
#include "npcf_testdata.hpp"

using namespace almagest;
using namespace almagest::npcf;

class TestNpcfMirror : public QObject {
  Q_OBJECT
private slots:
  void mirrorFlipsOddCounts_data() {
    QTest::addColumn<bool>("exact");
    QTest::addColumn<bool>("periodic");
    QTest::addColumn<int>("nphi");
    QTest::newRow("exact") << true << false << 32;
    QTest::newRow("pixel 8x32") << false << false << 32;
    QTest::newRow("pixel 6x10") << false << false << 10;
    QTest::newRow("exact periodic") << true << true << 32;
    QTest::newRow("pixel periodic") << false << true << 32;
  }

  void mirrorFlipsOddCounts() {
    QFETCH(bool, exact);
    QFETCH(bool, periodic);
    QFETCH(int, nphi);
    const double box = 160.0;
    const PointSet p = test::clustered_point_set(500, 1000, box, 4242, true, periodic, 8, 3.0);
    PointSet m = test::mirrored(p, box);
    if (periodic) wrap_periodic(m, box);

    NpcfConfig c;
    c.statistic = Statistic::FourPointParity;
    c.bins = {1.0, 21.0, 4, BinScale::Linear};
    c.periodic = periodic;
    c.box = periodic ? box : 0.0;
    c.directions = exact ? DirectionMode::Exact : DirectionMode::Pixel;
    c.store_pixels = !exact;
    c.pixel_ntheta = nphi == 32 ? 8 : 6;
    c.pixel_nphi = nphi;
    c.threads = 2;
    const JobContext ctx;
    const NpcfResult a = count_4pcf_cpu(build_graph(p, c, ctx), p, c, true, ctx);
    const NpcfResult b = count_4pcf_cpu(build_graph(m, c, ctx), m, c, true, ctx);

    QCOMPARE(a.rows(), b.rows());
    std::uint64_t tuples = 0, nonzero_odd = 0, degenerate = 0;
    double scale_n = 0, scale_odd = 0;
    for (std::size_t k = 0; k < a.rows(); ++k) {
      tuples += a.tuples[k];
      degenerate += a.degenerate[k];
      nonzero_odd += a.n_odd[k] != 0.0;
      scale_n = std::max(scale_n, std::fabs(a.n[k]));
      scale_odd = std::max(scale_odd, std::fabs(a.n_odd[k]));
    }
    qInfo("%llu tetrahedra, %llu degenerate, %llu rows with odd counts",
          static_cast<unsigned long long>(tuples), static_cast<unsigned long long>(degenerate),
          static_cast<unsigned long long>(nonzero_odd));
    QVERIFY(tuples > 20000);
    QVERIFY(nonzero_odd > 20);
    for (std::size_t k = 0; k < a.rows(); ++k) {
      QCOMPARE(b.tuples[k], a.tuples[k]);
      QCOMPARE(b.random_tuples[k], a.random_tuples[k]);
      QCOMPARE(b.degenerate[k], a.degenerate[k]);
      const auto near = [](double u, double v, double scale) {
        return std::fabs(u - v) <= 1e-12 * (std::fabs(u) + std::fabs(v)) + 1e-15 * scale;
      };
      QVERIFY2(near(b.n[k], a.n[k], scale_n), qPrintable(QString("even n, row %1").arg(k)));
      QVERIFY2(near(b.r[k], a.r[k], scale_n), qPrintable(QString("even r, row %1").arg(k)));
      QVERIFY2(near(b.n_odd[k], -a.n_odd[k], scale_odd),
               qPrintable(QString("odd n, row %1: %2 vs %3").arg(k).arg(a.n_odd[k]).arg(b.n_odd[k])));
      QVERIFY2(near(b.r_odd[k], -a.r_odd[k], scale_odd), qPrintable(QString("odd r, row %1").arg(k)));
    }
  }
};

QTEST_GUILESS_MAIN(TestNpcfMirror)
#include "test_npcf_mirror.moc"
