// Several sky regions in one job against brute force: two regions (each its own data and randoms,
// weighted, different sizes and summed weights) counted by O(N^2) / O(N^3) loops
// (tests/common/npcf_region_brute.hpp), each normalised within its region, combined as
// sum_g S_g^k X_g / (sum S)^k (k = 2 pairs, 3 triangles); the engine's combined counts and
// estimators equal it, and each region's own result equals a one-region job on that region's
// catalogues. The 4pCF's combined zeta_disc equals the one rebuilt here from the combined internal
// pair counts (S^2). Files: HDF5 region groups, text files per region; refusals.
#include <QtTest>

#include <QTemporaryDir>
#include <cmath>
#include <string>
#include <vector>

#include "almagest/core/error.hpp"
#include "almagest/io/hdf5_file.hpp"
#include "almagest/jobs/job.hpp"
#include "almagest/npcf/configurations.hpp"
#include "almagest/npcf/job.hpp"
#include "npcf_region_brute.hpp"
#include "npcf_testdata.hpp"
#include "test_tmp.hpp"

using namespace almagest;
using namespace almagest::npcf;

namespace {

using test::tmp_root;

double wsum(const io::Catalogue& c) {
  double s = 0;
  for (double v : c.w) s += v;
  return s;
}

struct Fixture {
  QTemporaryDir dir{QString::fromStdString(tmp_root() + "/npcf_regions_XXXXXX")};
  io::Catalogue d[2], rn[2];
  std::string dp[2], rp[2];
  Fixture(int order) {
    // Two regions of different sizes and weight sums (the combination weights differ), apart.
    const int nd[2] = {order == 2 ? 260 : 110, order == 2 ? 180 : 80};
    for (int g = 0; g < 2; ++g) {
      d[g] = test::clustered_catalogue(static_cast<std::size_t>(nd[g]), 60.0, 6, 2.0, 21 + g, 0.5 + g, 1.5 + g);
      rn[g] = test::uniform_catalogue(static_cast<std::size_t>(2 * nd[g]), 60.0, 31 + g, 0.8, 1.2);
      for (auto* c : {&d[g], &rn[g]})
        for (auto& v : c->x) v += 200.0 * g;
      dp[g] = dir.filePath(QString("d%1.txt").arg(g)).toStdString();
      rp[g] = dir.filePath(QString("r%1.txt").arg(g)).toStdString();
      test::write_xyzw(dp[g], d[g]);
      test::write_xyzw(rp[g], rn[g]);
    }
  }
  schema::Values values(const std::string& stat, const std::string& out) const {
    return {{"stat", stat}, {"rmin", 1.0}, {"rmax", 16.0}, {"nbins", std::int64_t{4}},
            {"threads", std::int64_t{2}}, {"output", dir.filePath(QString::fromStdString(out)).toStdString()},
            {"region", std::vector<std::string>{"NGC:" + dp[0] + ":" + rp[0], "SGC:" + dp[1] + ":" + rp[1]}}};
  }
};

NpcfOutcome run(const schema::Values& v, bool write = false) {
  const NpcfJob job = make_npcf_job(v, "", "--");
  jobs::RunOptions opt;
  opt.write = write;
  return run_npcf_job(job, JobContext{}, opt);
}

}  // namespace

class TestNpcfRegions : public QObject {
  Q_OBJECT
private slots:
  void combinedEqualsBruteForce_data() {
    QTest::addColumn<int>("order");
    QTest::newRow("2pcf") << 2;
    QTest::newRow("3pcf") << 3;
  }

  void combinedEqualsBruteForce() {
    QFETCH(int, order);
    Fixture fx(order);
    QVERIFY(fx.dir.isValid());
    const std::string stat = order == 2 ? "2pcf" : "3pcf";
    const NpcfOutcome o = run(fx.values(stat, "out.h5"));
    QCOMPARE(o.results.size(), std::size_t(1));
    QCOMPARE(o.region_results.size(), std::size_t(2));
    const NpcfResult& c = o.results[0];
    const Binning& bins = c.config.bins;
    const test::NormalisedCounts b0 = test::normalised_brute(fx.d[0], fx.rn[0], bins, order),
                                 b1 = test::normalised_brute(fx.d[1], fx.rn[1], bins, order);
    const double s0 = wsum(fx.d[0]), s1 = wsum(fx.d[1]);
    const double f0 = std::pow(s0 / (s0 + s1), order), f1 = std::pow(s1 / (s0 + s1), order);
    QVERIFY(std::fabs(f0 - f1) > 0.05);  // the weights matter
    double scale = 0;
    for (double x : b0.n) scale = std::max(scale, std::fabs(x));
    int nonzero = 0;
    for (std::size_t k = 0; k < c.rows(); ++k) {
      const double n = f0 * b0.n[k] + f1 * b1.n[k], r = f0 * b0.r[k] + f1 * b1.r[k];
      QVERIFY2(test::close_to_brute(c.n[k], n, scale), qPrintable(QString("row %1: n %2 vs %3").arg(k).arg(c.n[k]).arg(n)));
      QVERIFY2(test::close_to_brute(c.r[k], r, scale), qPrintable(QString("row %1: r %2 vs %3").arg(k).arg(c.r[k]).arg(r)));
      const double est = r != 0 ? n / r : 0.0;
      QVERIFY(std::fabs(c.estimator[k] - est) <= 1e-9 * (1 + std::fabs(est)));
      // Not the plain average of the two regions' estimators (the combination is of counts).
      nonzero += r != 0;
      // Each region's own counts are its brute force.
      QVERIFY(test::close_to_brute(o.region_results[0][0].n[k], b0.n[k], scale));
      QVERIFY(test::close_to_brute(o.region_results[1][0].r[k], b1.r[k], scale));
    }
    QVERIFY(nonzero > 0);
    QCOMPARE(c.ndata, std::uint64_t(fx.d[0].x.size() + fx.d[1].x.size()));

    // Each region's result equals a one-region job's (same plan, bit for bit).
    for (int g = 0; g < 2; ++g) {
      schema::Values v = fx.values(stat, "one.h5");
      v.erase("region");
      v["data"] = fx.dp[g];
      v["randoms"] = fx.rp[g];
      const NpcfOutcome one = run(v);
      const NpcfResult& a = one.results[0];
      const NpcfResult& r = o.region_results[g][0];
      QCOMPARE(a.rows(), r.rows());
      for (std::size_t k = 0; k < a.rows(); ++k) {
        QCOMPARE(r.n[k], a.n[k]);
        QCOMPARE(r.r[k], a.r[k]);
        QCOMPARE(r.estimator[k], a.estimator[k]);
        QCOMPARE(r.tuples[k], a.tuples[k]);
      }
    }
    // One region combines to exactly itself.
    schema::Values v1 = fx.values(stat, "single.h5");
    v1["region"] = std::vector<std::string>{"NGC:" + fx.dp[0] + ":" + fx.rp[0]};
    const NpcfOutcome single = run(v1);
    for (std::size_t k = 0; k < c.rows(); ++k) QCOMPARE(single.results[0].n[k], single.region_results[0][0].n[k]);
  }

  void fourPointDisconnectedFromCombinedPairs() {
    Fixture fx(3);
    schema::Values v = fx.values("4pcf", "out4.h5");
    v["nbins"] = std::int64_t{3};
    const NpcfOutcome o = run(v);
    const NpcfResult& c = o.results[0];
    const double s0 = wsum(fx.d[0]), s1 = wsum(fx.d[1]);
    const double t = s0 + s1;
    // Internal xi from the combined pair counts (S^2), by brute force.
    const test::NormalisedCounts p0 = test::normalised_brute(fx.d[0], fx.rn[0], c.config.bins, 2),
                                 p1 = test::normalised_brute(fx.d[1], fx.rn[1], c.config.bins, 2);
    std::vector<double> xi(3);
    for (int b = 0; b < 3; ++b) {
      const double n = s0 * s0 / (t * t) * p0.n[b] + s1 * s1 / (t * t) * p1.n[b];
      const double r = s0 * s0 / (t * t) * p0.r[b] + s1 * s1 / (t * t) * p1.r[b];
      xi[b] = r != 0 ? n / r : 0.0;
      QVERIFY(std::fabs(c.xi_internal[b] - xi[b]) <= 1e-9 * (1 + std::fabs(xi[b])));
    }
    const double f0 = std::pow(s0 / t, 4), f1 = std::pow(s1 / t, 4);
    for (std::size_t k = 0; k < c.rows(); ++k) {
      const double n = f0 * o.region_results[0][0].n[k] + f1 * o.region_results[1][0].n[k];
      QVERIFY(std::fabs(c.n[k] - n) <= 1e-12 * (std::fabs(n) + 1e-30));
      const std::uint8_t* b = c.bins.data() + 6 * k;
      const double disc = xi[b[0]] * xi[b[5]] + xi[b[1]] * xi[b[4]] + xi[b[2]] * xi[b[3]];
      QVERIFY(std::fabs(c.zeta_disc[k] - disc) <= 1e-9 * (1 + std::fabs(disc)));
      QVERIFY(std::fabs(c.zeta_conn[k] - (c.estimator[k] - disc)) <= 1e-9 * (1 + std::fabs(disc)));
    }
  }

  void filesPerRegion() {
    Fixture fx(2);
    // HDF5: the combination at /npcf/2pcf, each region in /npcf/2pcf/region/NAME.
    const NpcfOutcome o = run(fx.values("2pcf", "out.h5"), true);
    io::Hdf5Reader in(fx.dir.filePath("out.h5").toStdString());
    QCOMPARE(in.read_double("/npcf/2pcf/n"), o.results[0].n);
    QCOMPARE(in.read_double("/npcf/2pcf/region/NGC/n"), o.region_results[0][0].n);
    QCOMPARE(in.read_double("/npcf/2pcf/region/SGC/estimator"), o.region_results[1][0].estimator);
    // Text: one file per region beside the combined one.
    schema::Values v = fx.values("2pcf", "out.txt");
    v["format"] = std::string("text");
    run(v, true);
    for (const char* f : {"out.txt", "out_NGC.txt", "out_SGC.txt"})
      QVERIFY2(QFileInfo::exists(fx.dir.filePath(f)), f);
  }

  void refusals() {
    Fixture fx(2);
    auto message = [&](schema::Values v) {
      try {
        make_npcf_job(v, "", "--");
      } catch (const ConfigError& e) {
        return std::string(e.what());
      }
      return std::string();
    };
    schema::Values v = fx.values("2pcf", "o.h5");
    v["data"] = fx.dp[0];
    QVERIFY(message(v).find("--data: is not used with region") != std::string::npos);
    v = fx.values("2pcf", "o.h5");
    v["region"] = std::vector<std::string>{"NGC:" + fx.dp[0], "SGC:a:b"};
    QVERIFY(message(v).find("NAME:DATA:RANDOMS") != std::string::npos);
    v["region"] = std::vector<std::string>{"A:x:y", "A:z:w"};
    QVERIFY(message(v).find("given twice") != std::string::npos);
    v = fx.values("2pcf", "o.h5");
    v["jackknife"] = std::int64_t{4};
    QVERIFY(message(v).find("--jackknife: is not combined with region") != std::string::npos);
    v.erase("jackknife");
    v.erase("region");
    QVERIFY(message(v).find("--data: is required") != std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TestNpcfRegions)
#include "test_npcf_regions.moc"
