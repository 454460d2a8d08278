// The parity null-test panel (issue 21) and the engine function behind it and the batch
// aggregation (jobs::parity_null_test, used by parity_pulls / `npcf-parity`):
//  - pulls of synthetic realisations with known mean and sigma, against values computed here;
//  - chi^2/dof of pure-noise realisations within its expected range, expectation (N-1)/(N-3);
//  - the aggregation's numbers are the panel's (same bits);
//  - result files (HDF5 and gramsci text) open as realisations; a bad one is named;
//  - the rendered pull chart is not blank.
#include <QChart>
#include <QChartView>
#include <QImage>
#include <QLineEdit>
#include <QPushButton>
#include <QScatterSeries>
#include <QTemporaryDir>
#include <QTextStream>
#include <QtTest>

#include <cmath>

#include "almagest/io/hdf5_file.hpp"
#include "almagest/jobs/aggregate.hpp"
#include "almagest/npcf/configurations.hpp"
#include "almagest/npcf/read_gramsci.hpp"
#include "almagest/npcf/result.hpp"
#include "almagest/npcf/synthetic.hpp"
#include "npcf/ParityPanel.hpp"

using namespace almagest;
using almagest::ui::ParityPanel;

namespace {

QString tmpRoot() {
  const QString env = qEnvironmentVariable("ALMAGEST_TEST_TMP");
  return env.isEmpty() ? QDir::tempPath() : env;
}

std::vector<std::vector<double>> realisations(std::size_t n, const std::vector<double>& mu, const std::vector<double>& sigma,
                                              std::uint64_t seed) {
  npcf::synthetic::Rng rng(seed);
  std::vector<std::vector<double>> s(n, std::vector<double>(mu.size()));
  for (auto& r : s)
    for (std::size_t i = 0; i < mu.size(); ++i) r[i] = mu[i] + sigma[i] * rng.normal();
  return s;
}

npcf::NpcfResult parityResult(const std::vector<double>& odd) {
  npcf::TetraTable tt(3);
  npcf::NpcfResult r;
  r.statistic = npcf::Statistic::FourPointParity;
  r.config.statistic = r.statistic;
  r.order = 4;
  r.edges_per_row = 6;
  r.config.bins.nbins = 3;
  r.config.bins.rmin = 10;
  r.config.bins.rmax = 40;
  for (std::uint32_t k = 0; k < tt.rows(); ++k) {
    const auto& c = tt.canonical(k);
    r.bins.insert(r.bins.end(), c.begin(), c.end());
    r.realisable.push_back(1);
    r.tuples.push_back(5);
    r.random_tuples.push_back(3);
    r.n.push_back(1);
    r.r.push_back(2);
    r.estimator.push_back(0.5);
    r.zeta_disc.push_back(0.1);
    r.zeta_conn.push_back(0.4);
    r.n_odd.push_back(odd[k] * 2);
    r.r_odd.push_back(0);
    r.zeta_odd.push_back(odd[k]);
    r.degenerate.push_back(0);
  }
  r.xi_internal.assign(3, 0.2);
  return r;
}

// A catalogue as text (x y z w), every digit kept.
bool writeCatalogue(const QString& path, const io::Catalogue& c) {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Text)) return false;
  QTextStream out(&f);
  out.setRealNumberPrecision(17);
  out << "# x y z w\n";
  for (std::size_t i = 0; i < c.size(); ++i) out << c.x[i] << ' ' << c.y[i] << ' ' << c.z[i] << ' ' << (c.w.empty() ? 1.0 : c.w[i]) << '\n';
  return out.status() == QTextStream::Ok;
}

}  // namespace

class TestNpcfParity : public QObject {
  Q_OBJECT

private slots:
  void pullsOfKnownMeanAndSigma() {
    // p configurations with means of known pull: mu_i = k_i sigma_i / sqrt(N).
    const std::size_t n = 400, p = 60;
    std::vector<double> mu(p), sigma(p);
    for (std::size_t i = 0; i < p; ++i) {
      sigma[i] = 0.01 * (1 + i % 7);
      mu[i] = (double(i % 11) - 5.0) * sigma[i] / std::sqrt(double(n));
    }
    const auto s = realisations(n, mu, sigma, 17);
    const jobs::ParityNullTest t = jobs::parity_null_test(s);
    QCOMPARE(t.n, n);
    QCOMPARE(t.p, p);
    QCOMPARE(t.dof, p);
    for (std::size_t i = 0; i < p; ++i) {
      // Independent computation: one-pass sums in long double.
      long double m = 0, m2 = 0;
      for (const auto& r : s) m += r[i];
      m /= n;
      for (const auto& r : s) m2 += (r[i] - m) * (r[i] - m);
      const double sd = std::sqrt(double(m2 / (n - 1)));
      const double z = double(m) / (sd / std::sqrt(double(n)));
      QVERIFY(std::abs(t.z[i] - z) < 1e-9 * std::max(1.0, std::abs(z)));
      QVERIFY(std::abs(t.sigma[i] - sd) < 1e-12);
      // The estimate is the injected pull within the noise (z has unit scatter): 5 sigma.
      QVERIFY2(std::abs(t.z[i] - (double(i % 11) - 5.0)) < 5.0, qPrintable(QString::number(t.z[i])));
      QVERIFY(std::abs(t.sigma[i] / sigma[i] - 1) < 0.25);
    }
    double chi2 = 0;
    int beyond = 0;
    for (double z : t.z) {
      chi2 += z * z;
      beyond += std::abs(z) > 2;
    }
    QVERIFY(std::abs(t.chi2 - chi2) < 1e-9 * chi2);
    QCOMPARE(t.beyond_2sigma, std::size_t(beyond));
    QCOMPARE(t.fraction_beyond_2sigma, double(beyond) / p);
  }

  void pureNoiseChi2WithinItsExpectation() {
    for (std::size_t n : {8u, 30u}) {
      const std::size_t p = 3000;
      const auto s = realisations(n, std::vector<double>(p, 0.0), std::vector<double>(p, 2.5e-3), 100 + n);
      const jobs::ParityNullTest t = jobs::parity_null_test(s);
      const double expect = double(n - 1) / double(n - 3);
      QCOMPARE(t.expected_chi2_per_dof, expect);
      // Var(t^2) of Student t with nu = n - 1 (independent formula), spread over p configurations.
      const double nu = double(n) - 1;
      const double var = 3 * nu * nu / ((nu - 2) * (nu - 4)) - std::pow(nu / (nu - 2), 2);
      QVERIFY(std::abs(t.expected_spread - std::sqrt(var / p)) < 1e-12);
      qInfo("N = %zu: chi2/dof = %.4f, expected %.4f +- %.4f, beyond 2 sigma %.4f", n, t.chi2_per_dof, expect,
            t.expected_spread, t.fraction_beyond_2sigma);
      QVERIFY2(std::abs(t.chi2_per_dof - expect) < 4 * t.expected_spread, qPrintable(QString::number(t.chi2_per_dof)));
      // Far from the naive 1 for few realisations.
      if (n == 8) QVERIFY(t.chi2_per_dof > 1.1);
      QVERIFY(t.fraction_beyond_2sigma > 0.03 && t.fraction_beyond_2sigma < 0.15);
    }
    // N <= 3: no expectation.
    const auto few = realisations(3, {0, 0}, {1, 1}, 5);
    QVERIFY(std::isnan(jobs::parity_null_test(few).expected_chi2_per_dof));
    // Ragged samples are refused.
    QVERIFY_THROWS_EXCEPTION(almagest::ConfigError, jobs::parity_null_test({{1, 2}, {1}}));
  }

  void aggregationUsesTheSameNumbers() {
    const auto s = realisations(25, std::vector<double>(40, 1e-4), std::vector<double>(40, 1e-3), 9);
    const jobs::ParityPulls pp = jobs::parity_pulls(s);
    ParityPanel panel;
    QVERIFY(panel.setRealisations(s));
    QCOMPARE(panel.test().z, pp.z);
    QCOMPARE(panel.test().sigma_mean, pp.sigma_mean);
    QCOMPARE(panel.test().chi2, pp.chi2);
    QCOMPARE(panel.test().dof, pp.dof);
    // And the diagonal of the aggregation's covariance (same bits).
    for (std::size_t i = 0; i < 40; ++i)
      QCOMPARE(std::sqrt(pp.stats.covariance[i * 40 + i] / 25.0), pp.sigma_mean[i]);
    // Histogram: every pull counted once.
    double total = 0;
    for (double c : panel.histogramCounts()) total += c;
    QCOMPARE(total, double(pp.dof));
  }

  void openResultFilesAndRender() {
    QTemporaryDir tmp(tmpRoot() + QStringLiteral("/npcf_parity_XXXXXX"));
    QVERIFY(tmp.isValid());
    npcf::synthetic::Rng rng(44);
    QStringList files;
    std::vector<std::vector<double>> odd;
    for (int k = 0; k < 6; ++k) {
      std::vector<double> v(66);
      for (double& x : v) x = 1e-3 * rng.normal();
      odd.push_back(v);
      const QString f = tmp.filePath(QStringLiteral("mock_%1.%2").arg(k).arg(k % 2 ? QStringLiteral("txt") : QStringLiteral("h5")));
      if (k % 2) npcf::write_gramsci(parityResult(v), f.toStdString());
      else npcf::write_hdf5(parityResult(v), f.toStdString());
      files << f;
    }
    ParityPanel panel;
    panel.resize(700, 600);
    QVERIFY2(panel.openFiles(files), qPrintable(panel.errorText()));
    QCOMPARE(panel.realisationCount(), 6);
    // The panel's numbers are parity_null_test's of the files' odd channels (text: e14.7, 8
    // significant digits of the written values; HDF5 exact).
    std::vector<std::vector<double>> back;
    for (int k = 0; k < 6; ++k) {
      const std::string f = files[k].toStdString();
      back.push_back((k % 2 ? npcf::read_gramsci(f) : npcf::read_hdf5(f)).zeta_odd);
      for (std::size_t i = 0; i < 66; ++i)
        QVERIFY(std::abs(back[k][i] - odd[k][i]) <= (k % 2 ? 1e-6 : 0.0) * std::abs(odd[k][i]));
    }
    QCOMPARE(panel.test().z, jobs::parity_null_test(back).z);
    QVERIFY(panel.summaryText().contains(QStringLiteral("(N−1)/(N−3) = 1.667")));

    // A file without an odd channel is named, and the panel keeps its realisations.
    npcf::NpcfResult even = parityResult(odd[0]);
    even.statistic = npcf::Statistic::FourPoint;
    even.zeta_odd.clear();
    even.n_odd.clear();
    even.r_odd.clear();
    const QString bad = tmp.filePath(QStringLiteral("even.h5"));
    npcf::write_hdf5(even, bad.toStdString());
    QVERIFY(!panel.openFiles({files[0], bad}));
    QVERIFY2(panel.errorText().contains(bad), qPrintable(panel.errorText()));
    QCOMPARE(panel.realisationCount(), 6);

    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    const QImage img = panel.pullView()->grab().toImage();
    QSet<QRgb> colours;
    for (int y = 0; y < img.height(); y += 3)
      for (int x = 0; x < img.width(); x += 3) colours.insert(img.pixel(x, y));
    QVERIFY2(colours.size() > 20, qPrintable(QString::number(colours.size())));
    bool pulls = false;  // the pull markers' colour is drawn
    for (QRgb c : colours) pulls = pulls || (qRed(c) > 150 && qGreen(c) < 80 && qBlue(c) > 60 && qBlue(c) < 130);
    QVERIFY(pulls);
  }

  void batchOverAFolderOfMocks() {
    // Five seeded mock catalogues in a folder, randoms beside it: the panel runs the job
    // model's batch (makeParityBatchJob on the job queue), opens the members' outputs, and shows
    // the numbers of jobs::parity_null_test on those files and of the batch's npcf-parity file.
    QTemporaryDir tmp(tmpRoot() + QStringLiteral("/npcf_parity_batch_XXXXXX"));
    QVERIFY(tmp.isValid());
    const QString mocks = tmp.filePath(QStringLiteral("mocks")), out = tmp.filePath(QStringLiteral("out"));
    QVERIFY(QDir().mkpath(mocks));
    const int n = 5;
    for (int k = 0; k < n; ++k)
      QVERIFY(writeCatalogue(QDir(mocks).filePath(QStringLiteral("mock_%1.txt").arg(k)), npcf::synthetic::uniform(400, 100.0, 500 + k)));
    const QString randoms = tmp.filePath(QStringLiteral("randoms.txt"));
    QVERIFY(writeCatalogue(randoms, npcf::synthetic::uniform(800, 100.0, 99)));
    QVERIFY(writeCatalogue(QDir(mocks).filePath(QStringLiteral("notes.dat")), npcf::synthetic::uniform(5, 100.0, 1)));  // not matched

    ParityPanel panel;
    panel.setValuesProvider([&] {
      schema::Values v;  // as the N-point form gives them (stat a list; the batch sets its own)
      v["stat"] = std::vector<std::string>{"2pcf"};
      v["data"] = std::string("ignored.txt");
      v["randoms"] = randoms.toStdString();
      v["rmin"] = 2.0;
      v["rmax"] = 15.0;
      v["nbins"] = std::int64_t(3);
      v["threads"] = std::int64_t(2);
      return v;
    });
    // No folder: a message, nothing queued.
    QVERIFY(!panel.runBatch(tmp.filePath(QStringLiteral("missing"))));
    QVERIFY(panel.errorText().contains(QStringLiteral("missing")));
    QVERIFY(!panel.batchJob());

    QSignalSpy done(&panel, &ParityPanel::batchFinished);
    panel.folderEdit()->setText(mocks);
    panel.patternEdit()->setText(QStringLiteral("*.txt"));
    QVERIFY(panel.runBatch(mocks, QStringLiteral("*.txt"), out));
    QVERIFY(!panel.runBatchButton()->isEnabled());
    QVERIFY(!panel.runBatch(mocks));  // one batch at a time
    QVERIFY(done.wait(240000));
    QCOMPARE(done.first().first().value<almagest::ui::JobRunner::State>(), almagest::ui::JobRunner::State::Completed);
    QVERIFY(panel.runBatchButton()->isEnabled());
    QCOMPARE(panel.realisationCount(), n);

    // Independently: every member's output read back, the engine's null test over them.
    std::vector<std::vector<double>> odd;
    std::vector<std::uint8_t> bins0;
    for (int k = 0; k < n; ++k) {
      const QString f = QDir(out).filePath(QStringLiteral("mock_%1_parity.h5").arg(k));
      QVERIFY2(QFileInfo::exists(f), qPrintable(f));
      const npcf::NpcfResult r = npcf::read_hdf5(f.toStdString());
      QCOMPARE(r.statistic, npcf::Statistic::FourPointParity);
      QCOMPARE(r.config.bins.nbins, 3);
      QVERIFY(r.rows() > 0);
      if (k == 0) bins0 = r.bins;
      QCOMPARE(r.bins, bins0);
      odd.push_back(r.zeta_odd);
    }
    QVERIFY(odd[0] != odd[1]);  // the mocks differ
    const jobs::ParityNullTest t = jobs::parity_null_test(odd);
    QCOMPARE(panel.test().z, t.z);
    QCOMPARE(panel.test().sigma_mean, t.sigma_mean);
    QCOMPARE(panel.test().chi2, t.chi2);
    QCOMPARE(panel.test().dof, t.dof);
    QCOMPARE(panel.test().beyond_2sigma, t.beyond_2sigma);
    QCOMPARE(panel.test().expected_chi2_per_dof, 4.0 / 2.0);  // (N - 1)/(N - 3), N = 5

    // The batch's aggregation file holds the same numbers (same bits).
    QCOMPARE(panel.aggregatePath(), QDir(out).absoluteFilePath(QStringLiteral("parity.h5")));
    io::Hdf5Reader agg(panel.aggregatePath().toStdString());
    QCOMPARE(agg.read_double("/z"), t.z);
    QCOMPARE(agg.read_double("/sigma_mean"), t.sigma_mean);
    QCOMPARE(agg.read_attr_double("/", "chi2"), t.chi2);
    QCOMPARE(agg.read_attr_int64("/", "dof"), std::int64_t(t.dof));
    QCOMPARE(agg.read_attr_double("/", "fraction_beyond_2sigma"), t.fraction_beyond_2sigma);

    // The pull chart draws them (every configuration with scatter, p < 8000).
    QScatterSeries* pulls = nullptr;
    for (QAbstractSeries* a : panel.pullView()->chart()->series())
      if (auto* sc = qobject_cast<QScatterSeries*>(a)) pulls = sc;
    QVERIFY(pulls);
    QCOMPARE(std::size_t(pulls->count()), t.p - t.degenerate);
    std::size_t j = 0;
    for (std::size_t i = 0; i < t.p; ++i)
      if (t.sigma_mean[i] > 0) QCOMPARE(pulls->at(int(j++)).y(), t.z[i]);

    // A second run resumes: the members are up to date, the numbers the same.
    done.clear();
    QVERIFY(panel.runBatch(mocks, QStringLiteral("*.txt"), out));
    QVERIFY(done.wait(60000));
    QCOMPARE(done.first().first().value<almagest::ui::JobRunner::State>(), almagest::ui::JobRunner::State::Completed);
    QCOMPARE(panel.test().z, t.z);
  }
};

QTEST_MAIN(TestNpcfParity)
#include "test_npcf_parity.moc"
