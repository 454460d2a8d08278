// Injection-recovery for the 4pCF:
//  - regular tetrahedra (isolated copies, all six sides in one bin): a data-only count finds
//    exactly one tetrahedron per structure, all in the (b,b,b,b,b,b) configuration; with uniform
//    randoms the connected 4pCF of that configuration is positive;
//  - chiral scalene tetrahedra with left-handed fraction x: NNNN_odd n_gal^4 / N_struct =
//    eps (2x - 1), eps the canonicalisation sign of the configuration (computed here from the
//    reference canonicalisation and the handedness of the labelled template);
//  - one tetrahedron with repeated bins in three input orders: the odd count takes the sign of
//    npcf-conventions.md's relabelling table (first match, enumerated by hand below), which for
//    this shape differs between labellings of the same tetrahedron.
#include <QtTest>

#include <array>
#include <cmath>

#include "almagest/npcf/configurations.hpp"
#include "almagest/npcf/graph.hpp"
#include "almagest/npcf/plan.hpp"
#include "npcf_testdata.hpp"

using namespace almagest;
using namespace almagest::npcf;
using Vertices = std::array<std::array<double, 3>, 4>;

namespace {

/// Structure centres on a regular grid of `per_side`^3 cells inside the box (isolated copies).
std::array<double, 3> grid_centre(int s, int per_side, double box) {
  const double cell = box / per_side;
  const int ix = s % per_side, iy = (s / per_side) % per_side, iz = s / (per_side * per_side);
  return {(ix + 0.5) * cell, (iy + 0.5) * cell, (iz + 0.5) * cell};
}

double dist(const std::array<double, 3>& a, const std::array<double, 3>& b) {
  return std::sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                   (a[2] - b[2]) * (a[2] - b[2]));
}

std::array<double, 6> edges(const Vertices& v) {
  std::array<double, 6> d{};
  for (int e = 0; e < 6; ++e) d[e] = dist(v[kEdgeVertices[e][0]], v[kEdgeVertices[e][1]]);
  return d;
}

/// sign of (v1 - v0) . ((v2 - v0) x (v3 - v0))
int handedness(const Vertices& v) {
  double a[3], b[3], c[3];
  for (int i = 0; i < 3; ++i) {
    a[i] = v[1][i] - v[0][i];
    b[i] = v[2][i] - v[0][i];
    c[i] = v[3][i] - v[0][i];
  }
  const double det = a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) +
                     a[2] * (b[0] * c[1] - b[1] * c[0]);
  return det > 0 ? 1 : -1;
}


Vertices mirror(Vertices v) {
  for (auto& p : v) p[0] = -p[0];
  return v;
}

}  // namespace

class TestNpcfTetrahedra : public QObject {
  Q_OBJECT
private slots:
  void regularTetrahedra() {
    const double side = 13.5, box = 500.0;  // bins of 5 Mpc/h: side in bin 2 = [11, 16)
    const int per_side = 6, nstruct = per_side * per_side * per_side;
    const double h = side / std::sqrt(2.0);  // alternate cube corners
    const Vertices regular = {{{0.5 * h, 0.5 * h, 0.5 * h},
                               {0.5 * h, -0.5 * h, -0.5 * h},
                               {-0.5 * h, 0.5 * h, -0.5 * h},
                               {-0.5 * h, -0.5 * h, 0.5 * h}}};
    for (double d : edges(regular)) QVERIFY(std::fabs(d - side) < 1e-12);
    test::Rng rng(77);
    io::Catalogue data;
    data.source = "regular tetrahedra";
    for (int s = 0; s < nstruct; ++s) test::add_tetrahedron(data, regular, grid_centre(s, per_side, box), rng);

    NpcfConfig c;
    c.statistic = Statistic::FourPoint;
    c.bins = {1.0, 26.0, 5, BinScale::Linear};
    c.threads = 2;
    const int b = c.bins.bin_of(side);
    QCOMPARE(b, 2);
    const TetraTable table(5);
    const std::uint32_t row = table.row(table.raw_index({b, b, b, b, b, b}));

    // Data only: exactly one tetrahedron per structure, nothing else.
    {
      const PointSet p = make_point_set(data, nullptr);
      const JobContext ctx;
      const NpcfResult r = count_4pcf_cpu(build_graph(p, c, ctx), p, c, false, ctx);
      for (std::size_t k = 0; k < r.rows(); ++k)
        QCOMPARE(r.tuples[k], k == row ? static_cast<std::uint64_t>(nstruct) : std::uint64_t{0});
      const double n_gal = 4.0 * nstruct;
      QVERIFY(std::fabs(r.n[row] * std::pow(n_gal, 4) / nstruct - 1.0) < 1e-12);
    }

    // With uniform randoms: zeta_conn > 0 in (b,b,b,b,b,b).
    const io::Catalogue randoms = test::uniform_catalogue(50000, box, 2024);
    NpcfPlan plan(c, make_point_set(data, &randoms), JobContext{});
    const NpcfResult r = plan.execute(JobContext{});
    qInfo("regular: DDDD-dominated NNNN %.4g, RRRR %.4g (%llu random tetrahedra), zeta %.4g, "
          "zeta_disc %.4g, zeta_conn %.4g",
          r.n[row], r.r[row], static_cast<unsigned long long>(r.random_tuples[row]),
          r.estimator[row], r.zeta_disc[row], r.zeta_conn[row]);
    QVERIFY2(r.random_tuples[row] > 0, "no random tetrahedra in the configuration: RRRR = 0");
    QVERIFY(r.zeta_disc[row] > 0);
    QVERIFY(r.zeta_conn[row] > 0);
    QVERIFY(r.zeta_conn[row] > 0.5 * r.estimator[row]);  // the connected part dominates
    QVERIFY(r.realisable[row] == 1);
  }

  // Edges 12, 13, 14 and 34 in bin 0 = (1, 2), 23 and 24 in bin 1 = (2, 3); one tetrahedron of
  // four data points (weights 1/4 each). Hand enumeration with the note's table, canonical tuple
  // c = (0,0,0,0,1,1):
  //  order (v1 v2 v3 v4): raw (0,0,0,1,1,0), first P_k(c) = raw at k = 6 (24): -1; V > 0;
  //  order (v1 v3 v4 v2): raw (0,0,0,0,1,1) = c, k = 1: +1; V > 0 (a cyclic relabelling);
  //  order (v2 v1 v3 v4): raw (0,1,1,0,0,0), first at k = 15 (142): +1; V < 0.
  // The odd count is sign x sign(V) x (1/4)^4; the mirror image flips it.
  void repeatedBinsHandExample_data() {
    QTest::addColumn<QVector<int>>("order");
    QTest::addColumn<double>("expected");
    QTest::newRow("v1 v2 v3 v4") << QVector<int>{0, 1, 2, 3} << -1.0 / 256;
    QTest::newRow("v1 v3 v4 v2") << QVector<int>{0, 2, 3, 1} << +1.0 / 256;
    QTest::newRow("v2 v1 v3 v4") << QVector<int>{1, 0, 2, 3} << -1.0 / 256;
  }

  void repeatedBinsHandExample() {
    QFETCH(QVector<int>, order);
    QFETCH(double, expected);
    const Vertices v = {{{0.0, 0.0, 0.0}, {1.5, 0.0, 0.0}, {-0.6, 1.2, 0.3}, {-0.6, 0.3, 1.2}}};
    NpcfConfig c;
    c.statistic = Statistic::FourPointParity;
    c.bins = {1.0, 3.0, 2, BinScale::Linear};
    c.directions = DirectionMode::Exact;
    c.threads = 1;
    const TetraTable table(2);
    const std::uint32_t row = table.row(table.raw_index({0, 0, 0, 0, 1, 1}));
    for (bool mirrored : {false, true}) {
      io::Catalogue data;
      data.source = "one tetrahedron";
      for (int idx : order) {
        data.x.push_back(10.0 + (mirrored ? -v[idx][0] : v[idx][0]));
        data.y.push_back(10.0 + v[idx][1]);
        data.z.push_back(10.0 + v[idx][2]);
        data.w.push_back(1.0);
      }
      const PointSet p = make_point_set(data, nullptr);
      const JobContext ctx;
      const NpcfResult r = count_4pcf_cpu(build_graph(p, c, ctx), p, c, true, ctx);
      for (std::size_t k = 0; k < r.rows(); ++k) {
        QCOMPARE(r.tuples[k], k == row ? std::uint64_t{1} : std::uint64_t{0});
        if (k != row) QCOMPARE(r.n_odd[k], 0.0);
      }
      QCOMPARE(r.n_odd[row], mirrored ? -expected : expected);
      QCOMPARE(r.n[row], 1.0 / 256);
    }
  }

  void chiralTetrahedra_data() {
    QTest::addColumn<double>("x");
    QTest::addColumn<bool>("swap");  // exchange the templates: the other sign of eps
    QTest::newRow("x = 1") << 1.0 << false;
    QTest::newRow("x = 0.7") << 0.7 << false;
    QTest::newRow("x = 0.5") << 0.5 << false;
    QTest::newRow("x = 0.7, mirrored template") << 0.7 << true;
  }

  void chiralTetrahedra() {
    QFETCH(double, x);
    QFETCH(bool, swap);
    // Scalene template: six edges in six different bins of width 5 (1..31), >= 1 from bin edges.
    const Vertices base = {{{0.0, 0.0, 0.0},
                            {-5.185, -11.067, -14.178},
                            {-5.640, 8.752, 6.124},
                            {-1.656, 2.871, 3.338}}};
    const Vertices right = swap ? mirror(base) : base;
    NpcfConfig c;
    c.statistic = Statistic::FourPointParity;
    c.bins = {1.0, 31.0, 6, BinScale::Linear};
    c.directions = DirectionMode::Exact;
    c.threads = 2;
    const Vertices left = swap ? base : mirror(base);
    std::array<int, 6> raw{};
    const auto d = edges(left);
    for (int e = 0; e < 6; ++e) raw[e] = c.bins.bin_of(d[e]);
    for (int e = 0; e < 6; ++e)
      for (int f = e + 1; f < 6; ++f) QVERIFY(raw[e] != raw[f]);
    int sign = 0;
    const auto canon = TetraTable::canonicalise(raw, sign);
    const int eps = sign * handedness(left);  // odd weight of one left-handed copy
    const TetraTable table(6);
    const std::uint32_t row = table.row(table.raw_index(canon));

    const double box = 1000.0;
    const int per_side = 10, nstruct = 1000;
    const int nleft = static_cast<int>(std::lround(x * nstruct));
    test::Rng rng(31337);
    io::Catalogue data;
    data.source = "chiral tetrahedra";
    for (int s = 0; s < nstruct; ++s)
      test::add_tetrahedron(data, s < nleft ? left : right, grid_centre(s, per_side, box), rng);
    const io::Catalogue randoms = test::uniform_catalogue(30000, box, 99);
    const PointSet p = make_point_set(data, &randoms);
    const JobContext ctx;
    const NpcfResult r = count_4pcf_cpu(build_graph(p, c, ctx), p, c, true, ctx);

    const double n_gal = 4.0 * nstruct;
    const double measured = r.n_odd[row] * std::pow(n_gal, 4) / nstruct;
    const double expected = eps * (2.0 * x - 1.0);
    qInfo("x = %.2f: eps = %+d, NNNN_odd n^4/N = %.5f (expected %.5f), %llu tetrahedra in the row",
          x, eps, measured, expected, static_cast<unsigned long long>(r.tuples[row]));
    QVERIFY(r.tuples[row] >= static_cast<std::uint64_t>(nstruct));
    QVERIFY2(std::fabs(measured - expected) <= 0.01,
             qPrintable(QString("measured %1, expected %2").arg(measured).arg(expected)));
  }
};

QTEST_GUILESS_MAIN(TestNpcfTetrahedra)
#include "test_npcf_tetrahedra.moc"
