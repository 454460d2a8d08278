// Anisotropic binning, multipoles, the anisotropic disconnected 4pCF and analytic randoms against
// computations written here, independently of the engine: O(N^2) / O(N^3) loops over the points
// with their own (long double) mu, Legendre and kernel arithmetic.
//  - mu-binned 2pCF (open and periodic) and 3pCF (all and equilateral): identical counts per
//    (configuration, mu) row, sums to 1e-12; Legendre sums and xi_0, xi_2, xi_4 to 1e-12;
//  - z-squashed blobs in a periodic box: zeta_disc equals the pair-computed
//    sum over pairings of [xi0 xi0 + xi2 xi2 L2(cos t)/5 + xi4 xi4 L4(cos t)/9] to 1e-4 and
//    differs from the isotropic xi0 xi0 sum by more than 1%;
//  - analytic randoms (uniform points in a periodic box, no random catalogue): RR equals the
//    closed form to 1e-6, the triangle kernel obeys its sum rule and a numerical integral, the
//    median NNN/RRR is within 5% of 1 and the median |zeta| below 0.05.
#include <QtTest>
#include <QDir>
#include <QFile>

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <vector>

#include "almagest/npcf/analytic.hpp"
#include "almagest/npcf/configurations.hpp"
#include "almagest/npcf/graph.hpp"
#include "almagest/npcf/plan.hpp"
#include "npcf_testdata.hpp"

using namespace almagest;
using namespace almagest::npcf;
using ld = long double;

namespace {

struct Vec {
  ld x, y, z;
};

Vec sep(const PointSet& p, std::size_t i, std::size_t j, bool periodic, double box) {
  Vec d{static_cast<ld>(p.x[j]) - p.x[i], static_cast<ld>(p.y[j]) - p.y[i],
        static_cast<ld>(p.z[j]) - p.z[i]};
  if (periodic) {
    for (ld* v : {&d.x, &d.y, &d.z}) {
      if (*v > box / 2) *v -= box;
      if (*v < -box / 2) *v += box;
    }
  }
  return d;
}

ld norm(const Vec& v) { return std::sqrt(v.x * v.x + v.y * v.y + v.z * v.z); }

/// mu of a pair against the line of sight to its midpoint (z in a box); sets `near` when within
/// 1e-9 of a bin edge (the engine's double rounding could then legitimately differ).
ld pair_mu_ref(const PointSet& p, std::size_t i, const Vec& d, bool periodic) {
  if (periodic) return d.z / norm(d);
  const Vec m{p.x[i] + d.x / 2, p.y[i] + d.y / 2, p.z[i] + d.z / 2};
  return (d.x * m.x + d.y * m.y + d.z * m.z) / (norm(d) * norm(m));
}

ld tri_mu_ref(const PointSet& p, std::size_t i, const Vec& a, const Vec& b, bool periodic) {
  const Vec n{a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
  if (periodic) return std::fabs(n.z) / norm(n);
  const Vec c{p.x[i] + (a.x + b.x) / 3, p.y[i] + (a.y + b.y) / 3, p.z[i] + (a.z + b.z) / 3};
  return std::fabs(n.x * c.x + n.y * c.y + n.z * c.z) / (norm(n) * norm(c));
}

/// Bin in [lo, lo + nmu * width): -1 when within 1e-9 of an edge.
int bin_ref(ld mu, ld lo, ld width, int nmu) {
  const ld t = (mu - lo) / width;
  const ld f = std::floor(t);
  if (std::fabs(t - f) < 1e-9 || std::fabs(t - f - 1) < 1e-9) return t >= nmu - 1e-9 ? nmu - 1 : -1;
  return std::clamp(static_cast<int>(f), 0, nmu - 1);
}

int rbin_ref(const Binning& b, ld d) {
  return std::clamp(static_cast<int>(std::floor((d - b.rmin) / ((b.rmax - b.rmin) / b.nbins))), 0,
                    b.nbins - 1);
}

struct PairRef {
  std::vector<std::uint64_t> count;  // (r, mu) rows
  std::vector<ld> sum, rsum;
  std::vector<ld> l2, l4;            // per r bin
  int near = 0;
};

PairRef brute_pairs(const PointSet& p, const NpcfConfig& c) {
  const int nb = c.bins.nbins, nmu = c.nmu;
  PairRef r;
  r.count.assign(static_cast<std::size_t>(nb) * nmu, 0);
  r.sum.assign(r.count.size(), 0);
  r.rsum.assign(r.count.size(), 0);
  r.l2.assign(nb, 0);
  r.l4.assign(nb, 0);
  for (std::size_t i = 0; i < p.size(); ++i)
    for (std::size_t j = i + 1; j < p.size(); ++j) {
      const Vec d = sep(p, i, j, c.periodic, c.box);
      const ld s = norm(d);
      if (!(s > c.bins.rmin && s < c.bins.rmax)) continue;
      const ld mu = pair_mu_ref(p, i, d, c.periodic);
      const int m = bin_ref(mu, -1, 2.0L / nmu, nmu);
      if (m < 0) {
        ++r.near;
        continue;
      }
      const int b = rbin_ref(c.bins, s);
      const std::size_t row = static_cast<std::size_t>(b) * nmu + m;
      const ld ww = static_cast<ld>(p.w[i]) * p.w[j];
      ++r.count[row];
      r.sum[row] += ww;
      if (i >= p.ndata) r.rsum[row] += ww;
      r.l2[b] += ww * (3 * mu * mu - 1) / 2;
      r.l4[b] += ww * (35 * mu * mu * mu * mu - 30 * mu * mu + 3) / 8;
    }
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

bool close(double a, ld b, double rel, ld scale) {
  return std::fabs(static_cast<ld>(a) - b) <= rel * (scale + std::fabs(b)) + 1e-300;
}

/// Data in blobs squashed along z (sigma_z < sigma_xy) plus uniform randoms, periodic box.
PointSet squashed_blobs(std::size_t ndata, std::size_t nrandom, double box, std::uint64_t seed) {
  test::Rng rng(seed);
  io::Catalogue d, r;
  const std::size_t per = 10;
  for (std::size_t k = 0; k < ndata; k += per) {
    const double px = rng.uniform(0, box), py = rng.uniform(0, box), pz = rng.uniform(0, box);
    for (std::size_t q = 0; q < per && k + q < ndata; ++q) {
      auto wrap = [box](double v) { return v - box * std::floor(v / box); };
      d.x.push_back(wrap(px + 5.0 * rng.normal()));
      d.y.push_back(wrap(py + 5.0 * rng.normal()));
      d.z.push_back(wrap(pz + 1.2 * rng.normal()));
      d.w.push_back(rng.uniform(0.5, 1.5));
    }
  }
  for (std::size_t k = 0; k < nrandom; ++k) {
    r.x.push_back(rng.uniform(0, box));
    r.y.push_back(rng.uniform(0, box));
    r.z.push_back(rng.uniform(0, box));
    r.w.push_back(rng.uniform(0.5, 1.5));
  }
  PointSet p = make_point_set(d, &r);
  wrap_periodic(p, box);
  return p;
}

}  // namespace

class TestNpcfAnisotropic : public QObject {
  Q_OBJECT
private slots:
  void muBinnedPairsEqualBruteForce_data() {
    QTest::addColumn<bool>("periodic");
    QTest::newRow("open") << false;
    QTest::newRow("periodic") << true;
  }
  void muBinnedPairsEqualBruteForce() {
    QFETCH(bool, periodic);
    const double box = 120;
    // Away from the origin when open, so that the line of sight varies across the catalogue.
    PointSet p = test::clustered_point_set(300, 500, box, 17, true, periodic, 8, 3.0);
    if (!periodic)
      for (std::size_t i = 0; i < p.size(); ++i) p.z[i] += 150.0;
    NpcfConfig c;
    c.statistic = Statistic::TwoPoint;
    c.bins = {2.0, 30.0, 4, BinScale::Linear};
    c.nmu = 5;
    c.periodic = periodic;
    c.box = periodic ? box : 0.0;
    c.threads = 2;
    const PairRef ref = brute_pairs(p, c);
    QCOMPARE(ref.near, 0);  // seeded: no pair within 1e-9 of a mu edge
    NpcfPlan plan(c, p, JobContext{});
    const NpcfResult r = plan.execute(JobContext{});
    QCOMPARE(r.rows(), static_cast<std::size_t>(20));
    QCOMPARE(r.mu.size(), r.rows());
    ld scale = 0;
    for (ld v : ref.sum) scale = std::max(scale, std::fabs(v));
    std::size_t filled = 0;
    for (std::size_t k = 0; k < r.rows(); ++k) {
      QCOMPARE(static_cast<int>(r.bins[k]), static_cast<int>(k / 5));
      QCOMPARE(static_cast<int>(r.mu[k]), static_cast<int>(k % 5));
      QCOMPARE(r.tuples[k], ref.count[k]);
      QVERIFY(close(r.n[k], ref.sum[k], 1e-12, scale));
      QVERIFY(close(r.r[k], ref.rsum[k], 1e-12, scale));
      filled += ref.count[k] > 0;
      QCOMPARE(r.mu_lo(k), -1.0 + 2.0 * (k % 5) / 5.0);
    }
    QVERIFY(filled >= 15);
    // Multipoles: raw Legendre sums and xi_l = (2l + 1) S_l / RR(r).
    QCOMPARE(r.legendre2.size(), static_cast<std::size_t>(4));
    for (int b = 0; b < 4; ++b) {
      QVERIFY(close(r.legendre2[b], ref.l2[b], 1e-12, scale));
      QVERIFY(close(r.legendre4[b], ref.l4[b], 1e-12, scale));
      ld nn = 0, rr = 0;
      for (int m = 0; m < 5; ++m) {
        nn += ref.sum[b * 5 + m];
        rr += ref.rsum[b * 5 + m];
      }
      QVERIFY(close(r.xi0[b], nn / rr, 1e-10, 0));
      QVERIFY(close(r.xi2[b], 5 * ref.l2[b] / rr, 1e-10, 5 * scale / rr));
      QVERIFY(close(r.xi4[b], 9 * ref.l4[b] / rr, 1e-10, 9 * scale / rr));
    }
    // HDF5 round trip of the mu bins and multipoles.
    const QByteArray tmp = qgetenv("ALMAGEST_TEST_TMP");
    const std::string path = (tmp.isEmpty() ? QDir::tempPath().toStdString() : tmp.toStdString()) +
                             "/npcf_aniso_" + (periodic ? "p" : "o") + ".h5";
    write_hdf5(r, path);
    const NpcfResult back = read_hdf5(path);
    QCOMPARE(back.config.nmu, 5);
    QVERIFY(back.mu == r.mu);
    QVERIFY(back.xi2 == r.xi2);
    QVERIFY(back.legendre4 == r.legendre4);
    QCOMPARE(back.mu_hi(7), r.mu_hi(7));
    QFile::remove(QString::fromStdString(path));
  }

  void muBinnedTrianglesEqualBruteForce_data() {
    QTest::addColumn<bool>("periodic");
    QTest::addColumn<bool>("equilateral");
    QTest::newRow("open") << false << false;
    QTest::newRow("periodic") << true << false;
    QTest::newRow("periodic-equilateral") << true << true;
  }
  void muBinnedTrianglesEqualBruteForce() {
    QFETCH(bool, periodic);
    QFETCH(bool, equilateral);
    const double box = 100;
    PointSet p = test::clustered_point_set(120, 160, box, 23, true, periodic, 8, 3.0);
    if (!periodic)
      for (std::size_t i = 0; i < p.size(); ++i) p.x[i] += 200.0;
    NpcfConfig c;
    c.statistic = equilateral ? Statistic::ThreePointEquilateral : Statistic::ThreePoint;
    c.bins = {1.0, 25.0, 3, BinScale::Linear};
    c.nmu = 4;
    c.periodic = periodic;
    c.box = periodic ? box : 0.0;
    c.threads = 2;
    const int nb = 3, nmu = 4;
    const TriangleTable table(nb);
    const std::size_t configs = equilateral ? nb : table.rows();
    std::vector<std::uint64_t> cnt(configs * nmu, 0);
    std::vector<ld> sum(configs * nmu, 0);
    int near = 0;
    for (std::size_t i = 0; i < p.size(); ++i)
      for (std::size_t j = i + 1; j < p.size(); ++j) {
        const Vec a = sep(p, i, j, periodic, box);
        const ld dij = norm(a);
        if (!(dij > 1 && dij < 25)) continue;
        for (std::size_t k = j + 1; k < p.size(); ++k) {
          const Vec b = sep(p, i, k, periodic, box);
          const ld dik = norm(b), djk = norm(sep(p, j, k, periodic, box));
          if (!(dik > 1 && dik < 25 && djk > 1 && djk < 25)) continue;
          std::array<int, 3> s{rbin_ref(c.bins, dij), rbin_ref(c.bins, dik), rbin_ref(c.bins, djk)};
          std::sort(s.begin(), s.end());
          if (equilateral && !(s[0] == s[2])) continue;
          const int m = bin_ref(tri_mu_ref(p, i, a, b, periodic), 0, 1.0L / nmu, nmu);
          if (m < 0) {
            ++near;
            continue;
          }
          const std::size_t cf = equilateral ? s[0] : table.row(s[0], s[1], s[2]);
          ++cnt[cf * nmu + m];
          sum[cf * nmu + m] += static_cast<ld>(p.w[i]) * p.w[j] * p.w[k];
        }
      }
    QCOMPARE(near, 0);
    NpcfPlan plan(c, p, JobContext{});
    const NpcfResult r = plan.execute(JobContext{});
    QCOMPARE(r.rows(), configs * nmu);
    ld scale = 0;
    for (ld v : sum) scale = std::max(scale, std::fabs(v));
    std::size_t filled = 0;
    for (std::size_t k = 0; k < r.rows(); ++k) {
      QCOMPARE(static_cast<int>(r.mu[k]), static_cast<int>(k % nmu));
      QCOMPARE(r.tuples[k], cnt[k]);
      QVERIFY(close(r.n[k], sum[k], 1e-12, scale));
      filled += cnt[k] > 0;
    }
    QVERIFY(filled >= (equilateral ? 4u : 12u));
  }

  // z-squashed blobs: the anisotropic terms of zeta_disc, against xi_0/2/4 from pairs here.
  void anisotropicDisconnectedTerm() {
    const double box = 100;
    const PointSet p = squashed_blobs(500, 1000, box, 41);
    NpcfConfig c;
    c.statistic = Statistic::FourPoint;
    c.bins = {2.0, 14.0, 3, BinScale::Linear};
    c.periodic = true;  // a box alone switches the multipole terms on (z line of sight)
    c.box = box;
    c.threads = 2;
    NpcfConfig c2 = c;
    c2.statistic = Statistic::TwoPoint;
    c2.nmu = 1;
    const PairRef ref = brute_pairs(p, c2);
    std::array<ld, 3> x0{}, x2{}, x4{};
    for (int b = 0; b < 3; ++b) {
      x0[b] = ref.sum[b] / ref.rsum[b];
      x2[b] = 5 * ref.l2[b] / ref.rsum[b];
      x4[b] = 9 * ref.l4[b] / ref.rsum[b];
    }
    QVERIFY2(std::fabs(x2[0]) > 0.05 * std::fabs(x0[0]), "the blobs must be anisotropic");
    NpcfPlan plan(c, p, JobContext{});
    const NpcfResult r = plan.execute(JobContext{});
    QCOMPARE(r.xi2_internal.size(), static_cast<std::size_t>(3));
    static const int pairings[3][2] = {{0, 5}, {1, 4}, {2, 3}};
    // Vertex pairs of the edges in edge order 12 13 14 23 24 34.
    static const int ev[6][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};
    std::size_t differs = 0, compared = 0;
    for (std::size_t k = 0; k < r.rows(); ++k) {
      const std::uint8_t* b = r.bins.data() + 6 * k;
      ld d[4][4] = {};
      for (int e = 0; e < 6; ++e) {
        const ld s = c.bins.centre(b[e]);
        d[ev[e][0]][ev[e][1]] = d[ev[e][1]][ev[e][0]] = s;
      }
      ld iso = 0, aniso = 0;
      for (const auto& pr : pairings) {
        const int u = ev[pr[0]][0], v = ev[pr[0]][1], s = ev[pr[1]][0], t = ev[pr[1]][1];
        // (x_v - x_u).(x_t - x_s) from the sides.
        const ld dot = (d[u][t] * d[u][t] + d[v][s] * d[v][s] - d[u][s] * d[u][s] - d[v][t] * d[v][t]) / 2;
        const ld ct = std::clamp(dot / (d[u][v] * d[s][t]), -1.0L, 1.0L);
        const ld L2 = (3 * ct * ct - 1) / 2, L4 = (35 * ct * ct * ct * ct - 30 * ct * ct + 3) / 8;
        const int ba = b[pr[0]], bb = b[pr[1]];
        iso += x0[ba] * x0[bb];
        aniso += x0[ba] * x0[bb] + x2[ba] * x2[bb] * L2 / 5 + x4[ba] * x4[bb] * L4 / 9;
      }
      QVERIFY2(std::fabs(r.zeta_disc[k] - aniso) <= 1e-4 * std::max<ld>(1e-3, std::fabs(aniso)),
               qPrintable(QString("row %1: zeta_disc %2, pair computation %3")
                              .arg(k).arg(r.zeta_disc[k]).arg(static_cast<double>(aniso))));
      ++compared;
      if (std::fabs(aniso - iso) > 0.01 * std::fabs(iso)) ++differs;
    }
    QVERIFY(compared > 10);
    QVERIFY2(differs > compared / 2, "the anisotropic terms must change zeta_disc by > 1%");
  }

  void analyticRandomsNullTest() {
    const double box = 100;
    const io::Catalogue d = test::uniform_catalogue(4000, box, 77, 0.5, 1.5);
    PointSet p = make_point_set(d, nullptr);
    NpcfConfig c;
    c.statistic = Statistic::TwoPoint;
    c.bins = {4.0, 24.0, 4, BinScale::Linear};
    c.periodic = true;
    c.box = box;
    c.threads = 2;
    NpcfPlan plan(c, p, JobContext{});
    const NpcfResult r2 = plan.execute(Statistic::TwoPoint, JobContext{});
    QVERIFY(r2.analytic_randoms);
    ld s2 = 0;
    for (std::size_t i = 0; i < p.ndata; ++i) s2 += static_cast<ld>(p.w[i]) * p.w[i];
    for (int b = 0; b < 4; ++b) {
      const ld lo = 4 + 5 * b, hi = lo + 5;
      const ld rr = (1 - s2) / 2 * 4 * std::numbers::pi_v<ld> / 3 * (hi * hi * hi - lo * lo * lo) /
                    (static_cast<ld>(box) * box * box);
      QVERIFY(close(r2.r[b], rr, 1e-6, 0));
      QVERIFY(std::fabs(r2.estimator[b]) < 0.05);
    }
    // Triangle kernel: the sum over every third-side bin is 2 (a1^3 - a0^3)(b1^3 - b0^3)/9, and
    // one bin agrees with a fine midpoint rule.
    {
      ld total = 0;
      for (int k = 0; k < 20; ++k) total += triangle_kernel(5, 7, 6, 9, k, k + 1);
      const ld expect = 2.0L * (343 - 125) * (729 - 216) / 9;
      QVERIFY(std::fabs(total - expect) < 1e-10 * expect);
      const int n = 400;
      ld mid = 0;
      for (int a = 0; a < n; ++a)
        for (int b = 0; b < n; ++b) {
          const ld s1 = 5 + 2 * (a + 0.5L) / n, s2b = 6 + 3 * (b + 0.5L) / n;
          const ld lo = std::max<ld>(3.5, std::fabs(s1 - s2b)), hi = std::min<ld>(4.5, s1 + s2b);
          if (hi > lo) mid += s1 * s2b * (hi * hi - lo * lo) / 2 * (2.0L / n) * (3.0L / n);
        }
      const double t = triangle_kernel(5, 7, 6, 9, 3.5, 4.5);
      QVERIFY2(std::fabs(t - mid) < 1e-4 * mid, qPrintable(QString("T %1 vs %2").arg(t).arg(static_cast<double>(mid))));
    }
    // 3pCF with analytic randoms.
    const NpcfResult r3 = plan.execute(Statistic::ThreePoint, JobContext{});
    QVERIFY(r3.analytic_randoms);
    std::vector<double> ratio, zeta;
    for (std::size_t k = 0; k < r3.rows(); ++k) {
      if (r3.tuples[k] < 200) continue;  // geometrically impossible or sparse rows
      ratio.push_back(r3.n[k] / r3.r[k]);
      zeta.push_back(std::fabs(r3.estimator[k]));
    }
    QVERIFY(ratio.size() >= 10);
    QVERIFY2(std::fabs(median(ratio) - 1) < 0.05, qPrintable(QString::number(median(ratio))));
    QVERIFY2(median(zeta) < 0.05, qPrintable(QString::number(median(zeta))));
    // The 4pCF's analytic randoms (quadrature) are tested in test_npcf_analytic4.
  }
};

QTEST_APPLESS_MAIN(TestNpcfAnisotropic)
#include "test_npcf_anisotropic.moc"
