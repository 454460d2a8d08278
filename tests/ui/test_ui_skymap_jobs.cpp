// The Sky map window's jobs, driven through the window (the SHT job form, its operation box, the
// toolbar's Backend box and the Run button; the C_l synthesis entry point), each checked against
// the engine called directly with the same values:
//   synth from alm, synthesis from a C_l file (text and healpy write_cl FITS), map2alm (T, Q, U),
//   spectra (auto TT; cross with a second map; TT/EE/BB/TE/EB/TB of a polarised map, all six on
//   the chart), Gaussian smoothing; the backend choice (CPU, Auto; CUDA without a GPU fails and
//   writes nothing); results written atomically (a failed inverse leaves no file);
//   validation inline: the form's field message with Run greyed, the spectrum's and the
//   synthesis's messages beside their controls, and no dialog for any of them.
// No OpenGL; runs under Xvfb (ctest).
#include <QApplication>
#include <QComboBox>
#include <QFile>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTextStream>
#include <QtTest>

#include <cmath>
#include <random>

#include "almagest/core/gpu.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/sht/config.hpp"
#include "almagest/sht/healpix_io.hpp"
#include "almagest/sht/job.hpp"
#include "jobs/JobRunner.hpp"
#include "panels/LogPanel.hpp"
#include "panels/SchemaForm.hpp"
#include "sky/SkyJobs.hpp"
#include "sky/SkyMapWindow.hpp"
#include "sky/SpectrumChart.hpp"

using almagest::ui::SkyMapWindow;
using State = almagest::ui::JobRunner::State;
namespace sky = almagest::ui::sky;
namespace sht = almagest::sht;
namespace schema = almagest::schema;

namespace {

State waitJob(QSignalSpy& finished, int timeoutMs = 120000) {
  if (finished.isEmpty()) finished.wait(timeoutMs);
  if (finished.isEmpty()) return State::Idle;
  return finished.takeFirst().at(0).value<State>();
}

QString jobError(const SkyMapWindow& w) { return w.currentJob() ? w.currentJob()->errorMessage() : QString(); }

double maxDiff(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return 1e300;
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

/// No message box is open on the window (validation is inline).
bool noDialog(const QWidget& w) {
  for (const QMessageBox* b : w.findChildren<QMessageBox*>())
    if (b->isVisible()) return false;
  return true;
}

}  // namespace

class TestUiSkyMapJobs : public QObject {
  Q_OBJECT

private slots:
  void initTestCase();
  void everyJobKindFromTheWindow();
  void synthesisFromClFiles();
  void validationIsInline();

private:
  /// Sets the form (operation, values), presses Run and waits; a map written as FITS is then
  /// opened by the window (a second job), which is waited for too.
  State runFromForm(SkyMapWindow& w, QSignalSpy& finished, const QString& op, const schema::Values& values);
  std::string path(const char* name) const { return tmp_->filePath(QString::fromLatin1(name)).toStdString(); }
  /// The engine's outcome for the same values (a different output file).
  sht::ShtOutcome direct(const char* op, schema::Values values, const char* output,
                         const std::string& backend = "cpu") const {
    values["op"] = std::string(op);
    values["output"] = path(output);
    values["backend"] = backend;
    return sht::run_sht_job(sht::parse_sht_job({"sht", values, "", ""}), {}, {});
  }

  std::unique_ptr<QTemporaryDir> tmp_;
  std::string alm_, tqu_, other_;
  int lmax_ = 16, nside_ = 8;
};

void TestUiSkyMapJobs::initTestCase() {
  const QString root = qEnvironmentVariable("ALMAGEST_TEST_TMP", QDir::tempPath());
  QVERIFY(QDir().mkpath(root));
  tmp_ = std::make_unique<QTemporaryDir>(root + QStringLiteral("/ui_skyjobs_XXXXXX"));
  QVERIFY(tmp_->isValid());
  // Seeded inputs: (T, E, B) alm, a (T, Q, U) map and a second T map.
  std::mt19937_64 rng(2026);
  std::normal_distribution<double> g;
  std::vector<std::vector<sht::Complex>> teb(3, std::vector<sht::Complex>(sht::alm_size(lmax_)));
  for (int k = 0; k < 3; ++k) {
    for (auto& x : teb[k]) x = {g(rng), g(rng)};
    for (int l = 0; l <= lmax_; ++l) teb[k][sht::alm_index(lmax_, l, 0)] = {teb[k][sht::alm_index(lmax_, l, 0)].real(), 0.0};
    if (k > 0)
      for (int m = 0; m <= 1; ++m)
        for (int l = m; l < 2; ++l) teb[k][sht::alm_index(lmax_, l, m)] = 0.0;
  }
  alm_ = path("teb_alm.fits");
  sht::write_alm(alm_, teb, lmax_);
  sht::HealpixMap m;
  m.nside = nside_;
  m.names = {"I_STOKES", "Q_STOKES", "U_STOKES"};
  m.units = {"uK", "uK", "uK"};
  for (int c = 0; c < 3; ++c) {
    m.columns.emplace_back(std::size_t(sht::npix_of(nside_)));
    for (auto& v : m.columns.back()) v = g(rng);
  }
  tqu_ = path("tqu.fits");
  sht::write_healpix_map(tqu_, m);
  m.columns.resize(1);
  m.names.resize(1);
  m.units.resize(1);
  for (auto& v : m.columns[0]) v = 0.5 * v + g(rng);  // correlated with T of tqu
  other_ = path("other.fits");
  sht::write_healpix_map(other_, m);
}

State TestUiSkyMapJobs::runFromForm(SkyMapWindow& w, QSignalSpy& finished, const QString& op,
                                    const schema::Values& values) {
  w.shtOperationCombo()->setCurrentText(op);
  w.shtForm()->setValues(values);
  auto* run = w.findChild<QPushButton*>(QStringLiteral("shtRun"));
  if (!run) return State::Idle;
  if (!run->isEnabled()) {
    qWarning("Run is greyed: %s", qPrintable(w.shtForm()->problems()));
    return State::Idle;
  }
  QTest::mouseClick(run, Qt::LeftButton);
  const State s = waitJob(finished);
  const auto r = w.shtResult();
  if (s == State::Completed && r && r->what == "map" && r->format == sht::FileFormat::Fits) {
    const State open = waitJob(finished);  // the window opens the map it wrote
    if (open != State::Completed) return open;
  }
  return s;
}

void TestUiSkyMapJobs::everyJobKindFromTheWindow() {
  SkyMapWindow w;
  w.setInteractiveErrors(false);
  w.resize(1100, 800);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QSignalSpy finished(&w, &SkyMapWindow::jobFinished);
  w.setBackendChoice(sky::BackendChoice::Cpu);

  // synth: (T, E, B) alm -> (T, Q, U) map, shown in the window.
  const schema::Values synth = {{"input", alm_}, {"output", path("synth.fits")}, {"nside", std::string("8")},
                                {"pol", true}, {"threads", std::string("2")}};
  QVERIFY2(runFromForm(w, finished, "synth", synth) == State::Completed, qPrintable(jobError(w)));
  QCOMPARE(w.shtResult()->backend, std::string("cpu"));
  {
    const sht::ShtOutcome api = direct("synth", synth, "synth_api.fits");
    const sht::HealpixMap a = sht::read_healpix_map(path("synth.fits")), b = sht::read_healpix_map(path("synth_api.fits"));
    QCOMPARE(a.columns.size(), std::size_t(3));
    for (int c = 0; c < 3; ++c) QVERIFY2(maxDiff(a.columns[c], b.columns[c]) <= 1e-12, qPrintable(QString::number(c)));
    QCOMPARE(w.nside(), 8);
    QCOMPARE(w.columnCount(), 3);
    QVERIFY(maxDiff(w.values(), b.columns[0]) <= 1e-12);
    QCOMPARE(api.backend, std::string("cpu"));
  }

  // map2alm of the (T, Q, U) map.
  const schema::Values m2a = {{"input", tqu_}, {"output", path("alm.fits")}, {"pol", true}, {"lmax", std::string("12")}};
  QVERIFY2(runFromForm(w, finished, "map2alm", m2a) == State::Completed, qPrintable(jobError(w)));
  {
    direct("map2alm", m2a, "alm_api.fits");
    for (int hdu = 1; hdu <= 3; ++hdu) {
      const auto a = sht::read_alm(path("alm.fits"), hdu, 12), b = sht::read_alm(path("alm_api.fits"), hdu, 12);
      QCOMPARE(a.size(), std::size_t(sht::alm_size(12)));
      double d = 0;
      for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
      QVERIFY2(d <= 1e-12, qPrintable(QStringLiteral("HDU %1: %2").arg(hdu).arg(d)));
    }
  }

  // Spectra: auto (T), cross with a second map, and the six of a polarised map on one chart.
  const schema::Values tt = {{"input", tqu_}, {"output", path("tt.txt")}, {"lmax", std::string("20")}};
  QVERIFY2(runFromForm(w, finished, "cl", tt) == State::Completed, qPrintable(jobError(w)));
  QCOMPARE(w.shtResult()->spectra, std::vector<std::string>{"TT"});
  QCOMPARE(w.shtResult()->cl, direct("cl", tt, "tt_api.txt").cl);
  QVERIFY(QFile::exists(QString::fromStdString(path("tt.txt"))));
  QCOMPARE(w.spectrumChart()->seriesCount(), 1);
  QCOMPARE(w.spectrumChart()->seriesPointCount(0), 21);

  const schema::Values cross = {{"input", tqu_}, {"cross", other_}, {"output", path("cross.txt")}, {"lmax", std::string("20")}};
  QVERIFY2(runFromForm(w, finished, "cl", cross) == State::Completed, qPrintable(jobError(w)));
  const sht::ShtOutcome crossApi = direct("cl", cross, "cross_api.txt");
  QCOMPARE(w.shtResult()->cl, crossApi.cl);
  QVERIFY(w.shtResult()->cl != direct("cl", tt, "tt_api2.txt").cl);  // a cross spectrum, not the auto one

  const schema::Values pol = {{"input", tqu_}, {"output", path("pol.fits")}, {"pol", true}, {"lmax", std::string("20")}};
  QVERIFY2(runFromForm(w, finished, "cl", pol) == State::Completed, qPrintable(jobError(w)));
  QCOMPARE(w.shtResult()->spectra, (std::vector<std::string>{"TT", "EE", "BB", "TE", "EB", "TB"}));
  QCOMPARE(w.shtResult()->cl, direct("cl", pol, "pol_api.fits").cl);
  QCOMPARE(w.spectrumChart()->seriesCount(), 6);
  for (int k = 0; k < 6; ++k) {
    QCOMPARE(w.spectrumChart()->seriesName(k), QString::fromStdString(w.shtResult()->spectra[std::size_t(k)]));
    QCOMPARE(w.spectrumChart()->seriesPointCount(k), 21);
  }
  // The chart's file reads back as healpy's write_cl table: the synthesis reader takes TT.
  QCOMPARE(sky::readClFile(path("pol.fits")), w.shtResult()->cl.front());

  // Smoothing with a 2 degree beam.
  const schema::Values smooth = {{"input", tqu_}, {"output", path("smooth.fits")}, {"pol", true},
                                 {"fwhm-arcmin", std::string("120")}};
  QVERIFY2(runFromForm(w, finished, "smooth", smooth) == State::Completed, qPrintable(jobError(w)));
  {
    direct("smooth", smooth, "smooth_api.fits");
    const sht::HealpixMap a = sht::read_healpix_map(path("smooth.fits")), b = sht::read_healpix_map(path("smooth_api.fits"));
    for (int c = 0; c < 3; ++c) QVERIFY(maxDiff(a.columns[c], b.columns[c]) <= 1e-12);
    const sht::HealpixMap in = sht::read_healpix_map(tqu_);
    QVERIFY(maxDiff(a.columns[0], in.columns[0]) > 0.1);  // it did smooth
  }

  // Backends: Auto runs where core's policy says (the CPU without a GPU); CUDA without a GPU
  // fails naming it and writes nothing.
  w.setBackendChoice(sky::BackendChoice::Auto);
  const schema::Values tt2 = {{"input", tqu_}, {"output", path("tt_auto.txt")}, {"lmax", std::string("20")}};
  QVERIFY2(runFromForm(w, finished, "cl", tt2) == State::Completed, qPrintable(jobError(w)));
  QCOMPARE(w.shtResult()->backend, std::string(sht::to_string(sky::resolveBackend(sky::BackendChoice::Auto))));
  if (!almagest::gpu_status().available) {
    w.setBackendChoice(sky::BackendChoice::Cuda);
    const schema::Values tt3 = {{"input", tqu_}, {"output", path("tt_cuda.txt")}, {"lmax", std::string("20")}};
    QCOMPARE(runFromForm(w, finished, "cl", tt3), State::Failed);
    QVERIFY2(jobError(w).contains(QStringLiteral("GPU"), Qt::CaseInsensitive) ||
                 jobError(w).contains(QStringLiteral("CUDA"), Qt::CaseInsensitive),
             qPrintable(jobError(w)));
    QVERIFY(!QFile::exists(QString::fromStdString(path("tt_cuda.txt"))));
  }
  w.setBackendChoice(sky::BackendChoice::Cpu);

  // Atomic outputs: an inverse that does not converge in 1 iteration leaves no file.
  const schema::Values inv = {{"input", tqu_}, {"output", path("inverse.fits")}, {"max-iter", std::string("1")},
                              {"epsilon", std::string("1e-14")}};
  const QStringList before = QDir(tmp_->path()).entryList(QDir::Files | QDir::Hidden);
  QCOMPARE(runFromForm(w, finished, "inverse", inv), State::Failed);
  QVERIFY2(jobError(w).contains(QStringLiteral("CGLS")), qPrintable(jobError(w)));
  QVERIFY(!QFile::exists(QString::fromStdString(path("inverse.fits"))));
  QCOMPARE(QDir(tmp_->path()).entryList(QDir::Files | QDir::Hidden), before);  // no temporary left either
}

void TestUiSkyMapJobs::synthesisFromClFiles() {
  SkyMapWindow w;
  w.setInteractiveErrors(false);
  QSignalSpy finished(&w, &SkyMapWindow::jobFinished);
  // A text C_l file: comments, rows out of order, l = 0 and 1 left out (zero).
  const int lmax = 40, nside = 16;
  const std::uint64_t seed = 31337;
  std::vector<double> cl(lmax + 1, 0.0);
  for (int l = 2; l <= lmax; ++l) cl[std::size_t(l)] = 1.0 / (l * (l + 1.0));
  const QString text = QString::fromStdString(path("cl.txt"));
  {
    QFile f(text);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Text));
    QTextStream out(&f);
    out << "# l C_l (D_l column ignored)\n";
    out.setRealNumberPrecision(17);
    for (int l = lmax; l >= 2; --l) out << l << ' ' << cl[std::size_t(l)] << " 0.5\n";
  }
  QCOMPARE(sky::readClFile(text.toStdString()), cl);
  const QString saved = QString::fromStdString(path("synth_cl.fits"));
  QVERIFY(w.openSynthesisFromClFile(text, nside, seed, saved));
  QVERIFY2(waitJob(finished) == State::Completed, qPrintable(jobError(w)));
  const sky::SkyMapData ref = sky::synthesiseSkyMap(nside, cl, seed, 8, 4, {});
  QCOMPARE(w.nside(), nside);
  QCOMPARE(w.values(), ref.columns[0]);  // the same seeded draw as the engine's function
  QCOMPARE(sht::read_healpix_map(saved.toStdString()).columns[0], ref.columns[0]);
  QCOMPARE(w.map()->inputCl, cl);

  // A FITS spectra table written by the sht job (healpy write_cl) gives the same synthesis.
  sht::HealpixMap one;
  one.nside = nside;
  one.columns = ref.columns;
  sht::write_healpix_map(path("ref_map.fits"), one);
  const schema::Values clJob = {{"input", path("ref_map.fits")}, {"lmax", std::string("30")}};
  const sht::ShtOutcome api = direct("cl", clJob, "ref_cl.fits");
  QCOMPARE(sky::readClFile(path("ref_cl.fits")), api.cl.front());
  QVERIFY(w.openSynthesisFromClFile(QString::fromStdString(path("ref_cl.fits")), nside, seed));
  QVERIFY2(waitJob(finished) == State::Completed, qPrintable(jobError(w)));
  QCOMPARE(w.values(), sky::synthesiseSkyMap(nside, api.cl.front(), seed, 8, 4, {}).columns[0]);

  // A bad row fails the job naming the file and the line; nothing is written.
  const QString bad = QString::fromStdString(path("bad_cl.txt"));
  {
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Text));
    f.write("# header\n2 0.1\n3 abc\n");
  }
  QVERIFY(w.openSynthesisFromClFile(bad, nside, seed, QString::fromStdString(path("never.fits"))));
  QCOMPARE(waitJob(finished), State::Failed);
  QVERIFY2(jobError(w).contains(QStringLiteral("bad_cl.txt")) && jobError(w).contains(QStringLiteral("line 3")),
           qPrintable(jobError(w)));
  QVERIFY(!QFile::exists(QString::fromStdString(path("never.fits"))));
  QVERIFY_THROWS_EXCEPTION(almagest::IoError, sky::readClFile(path("missing.txt")));
}

void TestUiSkyMapJobs::validationIsInline() {
  SkyMapWindow w;
  w.setInteractiveErrors(true);  // a dialog would open if any of these used one
  w.resize(1100, 800);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QSignalSpy finished(&w, &SkyMapWindow::jobFinished);
  auto* run = w.findChild<QPushButton*>(QStringLiteral("shtRun"));
  QVERIFY(run);
  // The form: a bad value is shown under its field and Run is greyed, as the user types.
  w.shtOperationCombo()->setCurrentText(QStringLiteral("synth"));
  w.shtForm()->setValues({{"input", alm_}, {"output", path("v.fits")}, {"nside", std::string("8")}, {"spin", std::string("1")}});
  QCOMPARE(w.shtForm()->fieldProblem(QStringLiteral("spin")), QStringLiteral("must be 0 or 2, got 1"));
  QVERIFY(!run->isEnabled());
  w.shtForm()->setValues({{"input", alm_}, {"output", path("v.fits")}, {"nside", std::string("8")}});
  QVERIFY2(w.shtForm()->problems().isEmpty(), qPrintable(w.shtForm()->problems()));
  QVERIFY(run->isEnabled());
  // A missing input file is reported inline when Run is pressed (no job, no dialog).
  w.shtForm()->setValues({{"input", path("no_such_alm.fits")}, {"output", path("v.fits")}, {"nside", std::string("8")}});
  QTest::mouseClick(run, Qt::LeftButton);
  QVERIFY(!w.isBusy());
  QVERIFY2(w.shtForm()->problems().contains(QStringLiteral("no_such_alm.fits")), qPrintable(w.shtForm()->problems()));
  QVERIFY(noDialog(w));

  // The spectrum: no map, then lmax above 4 nside, each beside the Spectrum button.
  QVERIFY(!w.computeSpectrum());
  QVERIFY2(w.spectrumProblem().contains(QStringLiteral("no map")), qPrintable(w.spectrumProblem()));
  QVERIFY(w.openDemoMap(8, 1));
  QCOMPARE(waitJob(finished), State::Completed);
  QVERIFY(!w.computeSpectrum(33));
  QCOMPARE(w.spectrumProblem(), QStringLiteral("lmax: must be at most 4 nside = 32, got 33"));
  QVERIFY(!w.isBusy());
  QVERIFY(noDialog(w));
  QVERIFY(w.computeSpectrum(16));
  QVERIFY(w.spectrumProblem().isEmpty());
  QCOMPARE(waitJob(finished), State::Completed);

  // The synthesis: bad arguments inline, nothing started.
  QVERIFY(!w.openSynthesisFromClFile(QString(), 8, 1));
  QCOMPARE(w.synthesisProblem(), QStringLiteral("C_l file: no file chosen"));
  QVERIFY(!w.openSynthesisFromClFile(QStringLiteral("cl.txt"), 0, 1));
  QCOMPARE(w.synthesisProblem(), QStringLiteral("nside: must be in 1..8192, got 0"));
  QVERIFY(!w.openDemoMap(9000));
  QCOMPARE(w.synthesisProblem(), QStringLiteral("nside: must be in 1..8192, got 9000"));
  QVERIFY(!w.isBusy());
  QVERIFY(noDialog(w));
}

QTEST_MAIN(TestUiSkyMapJobs)
#include "test_ui_skymap_jobs.moc"
