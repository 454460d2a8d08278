// Delete-one jackknife against brute force: for every region m and every bin, the engine's
// realisation equals an O(N^2) / O(N^3) loop over the pairs / triangles with no member in region m
// (tests/common/npcf_region_brute.hpp: normalised weights of the full catalogue, no
// renormalisation); mean, sigma and the covariance from the brute-force realisations; internal
// angular regions are equal-count; the text files beside a gramsci result; refusals (periodic
// box, labels out of range).
#include <QtTest>

#include <QTemporaryDir>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "almagest/core/error.hpp"
#include "almagest/jobs/job.hpp"
#include "almagest/npcf/configurations.hpp"
#include "almagest/npcf/jackknife.hpp"
#include "almagest/npcf/job.hpp"
#include "npcf_region_brute.hpp"
#include "npcf_testdata.hpp"
#include "test_tmp.hpp"

using namespace almagest;
using namespace almagest::npcf;

namespace {

using test::tmp_root;

void write_labels(const std::string& path, const std::vector<int>& l) {
  std::ofstream out(path);
  out << "# region labels\n";
  for (int v : l) out << v << '\n';
}

}  // namespace

class TestNpcfJackknife : public QObject {
  Q_OBJECT
private slots:
  void realisationsEqualBruteForce_data() {
    QTest::addColumn<QString>("stat");
    QTest::addColumn<bool>("internal");
    QTest::newRow("2pcf, label files") << "2pcf" << false;
    QTest::newRow("3pcf, label files") << "3pcf" << false;
    QTest::newRow("2pcf, internal regions") << "2pcf" << true;
    QTest::newRow("3pcf, internal regions") << "3pcf" << true;
  }

  void realisationsEqualBruteForce() {
    QFETCH(QString, stat);
    QFETCH(bool, internal);
    const int order = stat == "2pcf" ? 2 : 3;
    QTemporaryDir dir(QString::fromStdString(tmp_root() + "/npcf_jk_XXXXXX"));
    QVERIFY(dir.isValid());
    // Catalogues off the origin (the angular regions are seen from it), weighted.
    io::Catalogue d = test::clustered_catalogue(order == 2 ? 300 : 120, 60.0, 6, 2.0, 11, 0.5, 1.5);
    io::Catalogue rn = test::uniform_catalogue(order == 2 ? 600 : 240, 60.0, 12, 0.8, 1.2);
    for (auto* c : {&d, &rn})
      for (std::size_t i = 0; i < c->x.size(); ++i) {
        c->x[i] += 100.0;
        c->y[i] -= 30.0;
        c->z[i] -= 30.0;
      }
    const int nreg = 6;
    const std::string dp = dir.filePath("d.txt").toStdString(), rp = dir.filePath("r.txt").toStdString();
    test::write_xyzw(dp, d);
    test::write_xyzw(rp, rn);
    std::vector<int> labels;
    test::Rng rng(5);
    for (std::size_t i = 0; i < d.x.size() + rn.x.size(); ++i)
      labels.push_back(1 + static_cast<int>(rng.uniform() * nreg) % nreg);
    schema::Values v{{"stat", stat.toStdString()}, {"data", dp}, {"randoms", rp}, {"rmin", 1.0},
                     {"rmax", 16.0}, {"nbins", std::int64_t{4}}, {"jackknife", std::int64_t{nreg}},
                     {"output", dir.filePath("out.h5").toStdString()}, {"threads", std::int64_t{2}}};
    if (!internal) {
      const std::string ld = dir.filePath("ld.txt").toStdString(), lr = dir.filePath("lr.txt").toStdString();
      write_labels(ld, std::vector<int>(labels.begin(), labels.begin() + static_cast<std::ptrdiff_t>(d.x.size())));
      write_labels(lr, std::vector<int>(labels.begin() + static_cast<std::ptrdiff_t>(d.x.size()), labels.end()));
      v["jackknife-labels"] = ld;
      v["randoms-jackknife-labels"] = lr;
    }
    const NpcfJob job = make_npcf_job(v, "", "--");
    jobs::RunOptions opt;
    opt.write = false;
    const NpcfOutcome o = run_npcf_job(job, JobContext{}, opt);
    QCOMPARE(o.results.size(), std::size_t(1));
    const NpcfResult& r = o.results[0];
    if (internal) {
      // The test's own region of every point: the engine's labelling is checked for equal
      // counts below; here the labels are taken from it to drive the brute force.
      labels = angular_regions(make_point_set(d, &rn), nreg);
      std::map<int, int> per;
      for (std::size_t i = d.x.size(); i < labels.size(); ++i) ++per[labels[i]];
      QCOMPARE(int(per.size()), nreg);
      for (auto [reg, cnt] : per) QVERIFY2(std::abs(cnt - int(rn.x.size()) / nreg) <= 1, qPrintable(QString::number(cnt)));
    }
    const auto& jk = r.jackknife;
    QCOMPARE(jk.realisations, nreg);
    const std::size_t rows = r.rows();
    QCOMPARE(jk.n.size(), rows * nreg);
    // The full result first, then every realisation, every bin.
    const test::NormalisedCounts full = test::normalised_brute(d, rn, job.config.bins, order, labels, 0);
    double scale = 0;
    for (double x : full.n) scale = std::max(scale, std::fabs(x));
    for (std::size_t k = 0; k < rows; ++k) QVERIFY(test::close_to_brute(r.n[k], full.n[k], scale));
    std::vector<std::vector<double>> est(nreg);
    int nonzero = 0;
    for (int m = 1; m <= nreg; ++m) {
      const test::NormalisedCounts b = test::normalised_brute(d, rn, job.config.bins, order, labels, m);
      for (std::size_t k = 0; k < rows; ++k) {
        const std::size_t at = static_cast<std::size_t>(m - 1) * rows + k;
        QVERIFY2(test::close_to_brute(jk.n[at], b.n[k], scale),
                 qPrintable(QString("region %1 row %2: n %3 vs brute %4").arg(m).arg(k).arg(jk.n[at]).arg(b.n[k])));
        QVERIFY2(test::close_to_brute(jk.r[at], b.r[k], scale),
                 qPrintable(QString("region %1 row %2: r %3 vs brute %4").arg(m).arg(k).arg(jk.r[at]).arg(b.r[k])));
        est[m - 1].push_back(b.r[k] != 0 ? b.n[k] / b.r[k] : 0.0);
        nonzero += b.n[k] != full.n[k];
      }
    }
    QVERIFY(nonzero > 0);  // removing a region changes the counts
    // Mean, sigma and covariance from the brute-force estimators.
    const double f = (nreg - 1.0) / nreg;
    for (std::size_t a = 0; a < rows; ++a) {
      double mean = 0;
      for (int m = 0; m < nreg; ++m) mean += est[m][a] / nreg;
      double s = 0;
      for (int m = 0; m < nreg; ++m) s += (est[m][a] - mean) * (est[m][a] - mean);
      QVERIFY(std::fabs(jk.mean[a] - mean) <= 1e-9 * (1 + std::fabs(mean)));
      QVERIFY(std::fabs(jk.sigma[a] - std::sqrt(f * s)) <= 1e-9 * (1 + std::sqrt(f * s)));
      for (std::size_t b2 = 0; b2 < rows; ++b2) {
        double mb = 0;
        for (int m = 0; m < nreg; ++m) mb += est[m][b2] / nreg;
        double c = 0;
        for (int m = 0; m < nreg; ++m) c += (est[m][a] - mean) * (est[m][b2] - mb);
        QVERIFY(std::fabs(jk.covariance[a * rows + b2] - f * c) <= 1e-9 * (1 + std::fabs(f * c)));
      }
    }
  }

  // --format gramsci: <out>.jk (rows x regions, ireal before the counts) and <out>.jkerr.
  void textFilesBesideTheResult() {
    QTemporaryDir dir(QString::fromStdString(tmp_root() + "/npcf_jkt_XXXXXX"));
    QVERIFY(dir.isValid());
    io::Catalogue d = test::uniform_catalogue(200, 50.0, 21);
    io::Catalogue rn = test::uniform_catalogue(400, 50.0, 22);
    for (auto* c : {&d, &rn})
      for (auto& x : c->x) x += 80.0;
    const std::string dp = dir.filePath("d.txt").toStdString(), rp = dir.filePath("r.txt").toStdString();
    test::write_xyzw(dp, d);
    test::write_xyzw(rp, rn);
    const std::string out = dir.filePath("xi.txt").toStdString();
    schema::Values v{{"stat", std::string("2pcf")}, {"data", dp}, {"randoms", rp}, {"rmin", 1.0},
                     {"rmax", 20.0}, {"nbins", std::int64_t{5}}, {"jackknife", std::int64_t{4}},
                     {"output", out}, {"format", std::string("gramsci")}};
    const NpcfJob job = make_npcf_job(v, "", "--");
    QCOMPARE(job.jackknife_paths(), (std::vector<std::string>{out + ".jk", out + ".jkerr"}));
    run_npcf_job(job, JobContext{}, jobs::RunOptions{});
    auto data_lines = [](const std::string& p, std::string& cols) {
      std::ifstream in(p);
      std::vector<std::string> rows;
      for (std::string l; std::getline(in, l);)
        if (l.rfind("#", 0) == 0) cols = l;
        else if (!l.empty()) rows.push_back(l);
      return rows;
    };
    std::string cols;
    const auto jk = data_lines(out + ".jk", cols);
    QCOMPARE(cols, std::string("# rmin rmax mumin mumax ireal NN RR xi"));
    QCOMPARE(jk.size(), std::size_t(4 * 5));
    {
      std::istringstream in(jk[5]);  // realisation 2, first bin
      std::vector<std::string> tok;
      for (std::string t; in >> t;) tok.push_back(t);
      QCOMPARE(tok.size(), std::size_t(8));
      QCOMPARE(tok[0], std::string("0.1000000E+01"));
      QCOMPARE(tok[4], std::string("2"));
    }
    const auto err = data_lines(out + ".jkerr", cols);
    QCOMPARE(cols, std::string("# rmin rmax mumin mumax xi_mean_jk xi_sigma_jk"));
    QCOMPARE(err.size(), std::size_t(5));
    QCOMPARE(err[0].rfind(" 0.1000000E+01  0.4800000E+01", 0), std::size_t(0));
  }

  void refusals() {
    schema::Values v{{"stat", std::string("2pcf")}, {"data", std::string("d.txt")},
                     {"rmin", 1.0}, {"rmax", 20.0}, {"nbins", std::int64_t{5}},
                     {"jackknife", std::int64_t{4}}, {"periodic", true}, {"box", 100.0},
                     {"output", std::string("o.h5")}};
    try {
      make_npcf_job(v, "", "--");
      QFAIL("a periodic jackknife was accepted");
    } catch (const ConfigError& e) {
      QVERIFY2(std::string(e.what()).find("periodic box") != std::string::npos, e.what());
    }
    QTemporaryDir dir(QString::fromStdString(tmp_root() + "/npcf_jkl_XXXXXX"));
    const std::string lp = dir.filePath("l.txt").toStdString();
    write_labels(lp, {1, 2, 5});
    try {
      read_region_labels(lp, 3, 4);
      QFAIL("label 5 of 4 regions accepted");
    } catch (const IoError& e) {
      QVERIFY2(std::string(e.what()).find("line 4") != std::string::npos, e.what());
    }
    write_labels(lp, {1, 2});
    QVERIFY_THROWS_EXCEPTION(IoError, read_region_labels(lp, 3, 4));
  }
};

QTEST_GUILESS_MAIN(TestNpcfJackknife)
#include "test_npcf_jackknife.moc"
