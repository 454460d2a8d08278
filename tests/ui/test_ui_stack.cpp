// The "Moving objects" window (StackWindow) end to end: a seeded synthetic stack with two movers
// loads and shows a non-uniform exposure; the search run through the window recovers both movers
// (origin within 1.5 px, velocity within 0.1 px/day, Z above threshold) and gives exactly the
// candidates of the engine called directly with the same configuration; the best-Z image has the
// stack's size and peaks at the strongest mover; a bad file fails with a message naming it; a long
// search cancels within 2 s leaving no result and no file; saving writes one ECSV row per
// candidate; WorkUnit FITS, HDF5 cubes and exposure folders written by the engine open.
// No VTK here: runs under Xvfb (ctest) or QT_QPA_PLATFORM=offscreen.
#include <QApplication>
#include <QComboBox>
#include <QLabel>
#include <QStandardItemModel>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSlider>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <vector>

#include "almagest/core/gpu.hpp"
#include "almagest/stack/filters.hpp"
#include "almagest/stack/psiphi.hpp"
#include "almagest/stack/search.hpp"
#include "almagest/stack/stack_io.hpp"
#include "almagest/stack/synthetic.hpp"
#include "jobs/JobRunner.hpp"
#include "panels/LogPanel.hpp"
#include "stackview/SearchPanel.hpp"
#include "stackview/StackImages.hpp"
#include "stackview/StackWindow.hpp"

using almagest::ui::JobRunner;
using almagest::ui::StackWindow;
using State = almagest::ui::JobRunner::State;
namespace stk = almagest::stack;

namespace {

QString testTmpRoot() {
  const QString env = qEnvironmentVariable("ALMAGEST_TEST_TMP");
  return env.isEmpty() ? QDir::tempPath() : env;
}

/// 24 exposures of 64 x 64 over 10 days, two movers on the grid vx, vy in -2..2 step 0.5 (9 x 9;
/// one grid step moves the end of a track by 5 px, so neighbouring velocities are resolved).
stk::SyntheticConfig smallConfig() {
  stk::SyntheticConfig c;
  c.n_exp = 24;
  c.width = 64;
  c.height = 64;
  c.seed = 4242;
  c.baseline_days = 10.0;
  c.movers = {stk::Mover{20.0, 30.0, 1.5, -1.0, 16.0, 0}, stk::Mover{44.0, 30.0, -2.0, 1.0, 12.0, 0}};
  return c;
}

almagest::ui::stackview::SearchSettings smallSettings() {
  almagest::ui::stackview::SearchSettings s;
  s.vxMin = -2;
  s.vxMax = 2;
  s.nvx = 9;
  s.vyMin = -2;
  s.vyMax = 2;
  s.nvy = 9;
  s.falseAlarms = 1.0;
  s.minObs = 12;
  s.cluster = true;
  s.clusterRadius = 2.0;
  s.bestZMap = true;
  s.stampRadius = 8;
  return s;
}

/// Waits for the next jobFinished of `w` and returns its state (Failed on timeout).
State waitJob(StackWindow& w, QSignalSpy& finished, int timeoutMs = 120000) {
  if (finished.isEmpty() && !finished.wait(timeoutMs)) return State::Idle;
  return finished.takeFirst().at(0).value<State>();
}

bool loadSmall(StackWindow& w, QString* why) {
  QSignalSpy finished(&w, &StackWindow::jobFinished);
  if (!w.newSyntheticStack(smallConfig())) {
    *why = QStringLiteral("newSyntheticStack refused");
    return false;
  }
  const State s = waitJob(w, finished);
  if (s != State::Completed) *why = w.currentJob() ? w.currentJob()->errorMessage() : QStringLiteral("timeout");
  return s == State::Completed;
}

bool searchSmall(StackWindow& w, QString* why, const QString& save = {}) {
  w.setSearchSettings(smallSettings());
  QSignalSpy finished(&w, &StackWindow::jobFinished);
  if (!w.runSearch(save)) {
    *why = QStringLiteral("runSearch refused");
    return false;
  }
  const State s = waitJob(w, finished);
  if (s != State::Completed) *why = w.currentJob() ? w.currentJob()->errorMessage() : QStringLiteral("timeout");
  return s == State::Completed;
}

}  // namespace

class TestUiStack : public QObject {
  Q_OBJECT

private slots:
  void syntheticStackLoadsAndShows();
  void searchRecoversMoversAndMatchesEngine();
  void opensWorkUnitAndCube();
  void badFilesFailNamingTheFile();
  void cancelLongSearch();
  void savesCandidatesAndResult();
  void cudaEntriesFollowGpuStatus();
};

void TestUiStack::syntheticStackLoadsAndShows() {
  StackWindow w;
  w.setInteractiveErrors(false);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QSignalSpy loaded(&w, &StackWindow::stackLoaded);
  QString why;
  QVERIFY2(loadSmall(w, &why), qPrintable(why));
  QCOMPARE(loaded.count(), 1);
  QCOMPARE(w.exposureCount(), 24);
  QCOMPARE(w.stackWidth(), 64);
  QCOMPARE(w.stackHeight(), 64);
  QVERIFY(w.stack()->synthetic);
  QCOMPARE(w.stack()->movers.size(), std::size_t(2));
  QCOMPARE(w.stack()->curveDx.size(), std::size_t(24));

  // The viewer shows exposure 0, not a uniform image: many grey levels, mostly mid-tones.
  const QImage img = w.exposureImage();
  QCOMPARE(img.size(), QSize(64, 64));
  std::set<QRgb> colours;
  for (int y = 0; y < img.height(); ++y)
    for (int x = 0; x < img.width(); ++x) colours.insert(img.pixel(x, y));
  qInfo("exposure 0: %zu distinct colours", colours.size());
  QVERIFY2(colours.size() > 50, qPrintable(QString::number(colours.size())));

  // The slider moves through the exposures; the status bar shows the exposure's MJD.
  QCOMPARE(w.exposureSlider()->maximum(), 23);
  w.exposureSlider()->setValue(5);
  QCOMPARE(w.exposure(), 5);
  const auto* mjd = w.findChild<QLabel*>(QStringLiteral("mjdLabel"));
  QVERIFY(mjd);
  QVERIFY2(mjd->text().contains(QString::number(w.stack()->stack.mjd[5], 'f', 5)), qPrintable(mjd->text()));
  QVERIFY(w.exposureImage() != img);
  QVERIFY(!w.setExposure(24));
  QVERIFY(w.setExposure(0));
}

void TestUiStack::searchRecoversMoversAndMatchesEngine() {
  StackWindow w;
  w.setInteractiveErrors(false);
  w.resize(1300, 850);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QString why;
  QVERIFY2(loadSmall(w, &why), qPrintable(why));
  QSignalSpy searched(&w, &StackWindow::searchFinished);
  QSignalSpy progress(&w, &StackWindow::jobProgress);
  QVERIFY2(searchSmall(w, &why), qPrintable(why));
  QCOMPARE(searched.count(), 1);
  QList<int> p;
  for (const auto& a : progress) p << a.at(0).toInt();
  for (int i = 1; i < p.size(); ++i) QVERIFY2(p[i] >= p[i - 1], "progress went down");
  QVERIFY(!p.isEmpty() && p.last() == 100);

  const stk::SearchResult* r = w.result();
  QVERIFY(r);
  qInfo("%zu candidates, threshold %.3f, max Z %.2f", r->candidates.size(), r->threshold_z, r->digest.max_z);
  QVERIFY(!r->candidates.empty());

  // (b) both movers recovered.
  for (const stk::Mover& m : w.stack()->movers) {
    const stk::Candidate* hit = nullptr;
    for (const auto& c : w.candidates())
      if (std::fabs(c.x - m.x0) <= 1.5 && std::fabs(c.y - m.y0) <= 1.5 && std::fabs(c.vx - m.vx) <= 0.1 &&
          std::fabs(c.vy - m.vy) <= 0.1 && c.z >= r->threshold_z && (!hit || c.z > hit->z))
        hit = &c;
    if (!hit)
      for (const auto& c : w.candidates())
        if (std::fabs(c.x - m.x0) <= 4 && std::fabs(c.y - m.y0) <= 4)
          qInfo("near: (%d, %d) v (%.2f, %.2f) Z %.2f obs %d members %d", c.x, c.y, c.vx, c.vy, c.z, c.obs, c.members);
    QVERIFY2(hit, qPrintable(QStringLiteral("mover at (%1, %2) v (%3, %4) not recovered").arg(m.x0).arg(m.y0).arg(m.vx).arg(m.vy)));
    qInfo("mover SNR %.0f at (%.1f, %.1f) v (%.2f, %.2f) -> Z %.2f at (%d, %d) v (%.2f, %.2f), %d merged", m.snr, m.x0,
          m.y0, m.vx, m.vy, hit->z, hit->x, hit->y, hit->vx, hit->vy, hit->members);
  }

  // (c) identical to the engine called directly with the same configuration.
  // The job turns the plan's clustering off (duplicates are merged by the filters below).
  stk::SearchConfig cfg = w.searchConfig();
  QVERIFY(w.searchOutput() && !w.searchOutput()->config.cluster.enabled);
  cfg.cluster.enabled = false;
  const stk::PsiPhi planes = stk::compute_psiphi(w.stack()->stack, almagest::JobContext{});
  const stk::SearchPlan plan = stk::make_plan(cfg, planes.mjd, planes.width, planes.height, almagest::JobContext{});
  stk::SearchResult direct = plan.execute(stk::encode(planes, cfg.encoding), almagest::JobContext{});
  // The job then runs the post-search filters (stack/filters.hpp) on the planes it summed.
  const stk::PsiPhi summed = cfg.encoding == stk::Encoding::Fp32 ? planes : stk::decode(stk::encode(planes, cfg.encoding));
  stk::filter_candidates(direct, plan, summed, &w.stack()->stack, w.searchOutput()->job.filters, almagest::JobContext{});
  QCOMPARE(w.candidates().size(), direct.candidates.size());
  QCOMPARE(r->threshold_z, direct.threshold_z);
  for (std::size_t i = 0; i < direct.candidates.size(); ++i) {
    const auto& a = w.candidates()[i];
    const auto& b = direct.candidates[i];
    QCOMPARE(a.x, b.x);
    QCOMPARE(a.y, b.y);
    QCOMPARE(a.v, b.v);
    QCOMPARE(a.obs, b.obs);
    QCOMPARE(a.members, b.members);
    QVERIFY(std::memcmp(&a.a, &b.a, sizeof(float)) == 0);
    QVERIFY(std::memcmp(&a.b, &b.b, sizeof(float)) == 0);
    QCOMPARE(a.z, b.z);
  }
  QCOMPARE(r->digest.sum_a, direct.digest.sum_a);
  QCOMPARE(r->digest.count_above, direct.digest.count_above);

  // The table shows every candidate.
  QCOMPARE(w.candidateTable()->model()->rowCount(), static_cast<int>(direct.candidates.size()));

  // (d) best-Z image: the stack's size, peak at (or within 1 px of) the strongest mover.
  const QImage z = w.bestZImage();
  QCOMPARE(z.size(), QSize(64, 64));
  const std::vector<float>& bz = w.bestZ();
  QCOMPARE(bz.size(), std::size_t(64 * 64));
  const auto imax = static_cast<int>(std::max_element(bz.begin(), bz.end()) - bz.begin());
  const int mx = imax % 64, my = imax / 64;
  const stk::Mover strongest =
      *std::max_element(w.stack()->movers.begin(), w.stack()->movers.end(), [](const auto& a, const auto& b) { return a.snr < b.snr; });
  qInfo("best Z %.2f at (%d, %d); strongest mover at (%.1f, %.1f)", bz[std::size_t(imax)], mx, my, strongest.x0, strongest.y0);
  QVERIFY(std::fabs(mx - strongest.x0) <= 1.0 && std::fabs(my - strongest.y0) <= 1.0);
  QCOMPARE(z.pixel(mx, my), almagest::ui::stackview::viridis(1.0));
  QCOMPARE(static_cast<double>(bz[std::size_t(imax)]), r->digest.max_z);
  QVERIFY(z.pixel(0, 0) != z.pixel(mx, my));

  // Selecting a candidate: stamps, cutout strip, track on the exposure viewer.
  QCOMPARE(w.selectedCandidate(), 0);  // the best one is selected after a search
  QVERIFY(w.selectCandidate(1 < static_cast<int>(w.candidates().size()) ? 1 : 0));
  const stk::CandidateDetail* d = w.selectedDetail();
  QVERIFY(d);
  QCOMPARE(d->stamp_size, 17);
  QCOMPARE(w.stampImage().size(), QSize(17, 17));
  QVERIFY(!w.cutoutImage().isNull());
  QCOMPARE(d->px.size(), std::size_t(24));
  // Selecting the top row of the table (sorted by Z, descending) selects candidate 0.
  w.candidateTable()->selectRow(0);
  QCOMPARE(w.selectedCandidate(), 0);
  QVERIFY(!w.selectCandidate(static_cast<int>(w.candidates().size())));
  QTest::qWait(100);  // let the layouts follow the new texts before the picture
  w.grab().save(testTmpRoot() + QStringLiteral("/ui_stack_window.png"));
}

void TestUiStack::opensWorkUnitAndCube() {
  StackWindow w;
  w.setInteractiveErrors(false);
  QTemporaryDir tmp(testTmpRoot() + QStringLiteral("/ui_stack_open_XXXXXX"));
  QVERIFY(tmp.isValid());
  stk::SyntheticConfig c;
  c.n_exp = 6;
  c.width = 40;
  c.height = 30;
  c.seed = 7;
  const stk::ExposureStack s = stk::make_synthetic(c).stack;
  const QString fits = tmp.filePath(QStringLiteral("workunit.fits")), h5 = tmp.filePath(QStringLiteral("cube.h5"));
  stk::write_workunit(fits.toStdString(), s);
  stk::write_stack_hdf5(h5.toStdString(), s);
  const QString folder = tmp.filePath(QStringLiteral("exposures"));
  QVERIFY(QDir().mkpath(folder));
  stk::write_exposure_files(folder.toStdString(), s);
  for (const QString& path : {fits, h5, folder}) {
    QSignalSpy finished(&w, &StackWindow::jobFinished);
    QSignalSpy loaded(&w, &StackWindow::stackLoaded);
    QVERIFY(w.openStack(path));
    const State st = waitJob(w, finished);
    QVERIFY2(st == State::Completed, qPrintable(w.currentJob()->errorMessage()));
    QCOMPARE(loaded.count(), 1);
    QCOMPARE(w.exposureCount(), 6);
    QCOMPARE(w.stackWidth(), 40);
    QCOMPARE(w.stackHeight(), 30);
    QVERIFY(!w.stack()->synthetic);
    QVERIFY(w.stack()->curveDx.empty());
    QCOMPARE(w.stack()->stack.mjd, s.mjd);
    QCOMPARE(w.exposureImage().size(), QSize(40, 30));
    QVERIFY(w.windowTitle().contains(QFileInfo(path).fileName()));
  }
  // A search of a file stack runs too (no common curve), and a bad output name is refused.
  QVERIFY(!w.runSearch(tmp.filePath(QStringLiteral("out.txt"))));
  QString why;
  QVERIFY2(searchSmall(w, &why), qPrintable(why));
  QVERIFY(w.result());
  QVERIFY(w.searchConfig().curve_dx.empty());
}

void TestUiStack::badFilesFailNamingTheFile() {
  StackWindow w;
  w.setInteractiveErrors(false);
  w.show();
  QTemporaryDir tmp(testTmpRoot() + QStringLiteral("/ui_stack_XXXXXX"));
  QVERIFY(tmp.isValid());

  // Not a FITS file.
  const QString bad = tmp.filePath(QStringLiteral("not_a_workunit.fits"));
  {
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("this is not FITS\n");
  }
  // A missing file.
  const QString missing = tmp.filePath(QStringLiteral("missing_cube.h5"));
  // A cube whose MJD of exposure 2 is missing (NaN); nothing else is wrong with it.
  const QString noMjd = tmp.filePath(QStringLiteral("nan_mjd.h5"));
  {
    stk::SyntheticConfig c;
    c.n_exp = 4;
    c.width = 16;
    c.height = 16;
    stk::ExposureStack s = stk::make_synthetic(c).stack;
    stk::write_stack_hdf5(noMjd.toStdString(), s);
    // The writer refuses a missing MJD, so overwrite /mjd in the written cube.
    const hid_t f = H5Fopen(noMjd.toLocal8Bit().constData(), H5F_ACC_RDWR, H5P_DEFAULT);
    QVERIFY(f >= 0);
    const hid_t d = H5Dopen2(f, "/mjd", H5P_DEFAULT);
    QVERIFY(d >= 0);
    std::vector<double> mjd = s.mjd;
    mjd[2] = std::nan("");
    QVERIFY(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, mjd.data()) >= 0);
    H5Dclose(d);
    H5Fclose(f);
  }
  for (const QString& path : {bad, missing, noMjd}) {
    QSignalSpy finished(&w, &StackWindow::jobFinished);
    QVERIFY(w.openStack(path));
    QCOMPARE(waitJob(w, finished), State::Failed);
    const QString msg = w.currentJob()->errorMessage();
    qInfo("%s", qPrintable(msg));
    QVERIFY2(msg.contains(path), qPrintable(msg));
    QVERIFY(w.logPanel()->text().contains(path));
    QVERIFY(!w.stack());
  }
  // MJD: the message names the field.
  QVERIFY2(w.currentJob()->errorMessage().contains(QStringLiteral("mjd"), Qt::CaseInsensitive),
           qPrintable(w.currentJob()->errorMessage()));
  // The window still works.
  QString why;
  QVERIFY2(loadSmall(w, &why), qPrintable(why));
  QCOMPARE(w.exposureCount(), 24);
}

void TestUiStack::cancelLongSearch() {
  StackWindow w;
  w.setInteractiveErrors(false);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  stk::SyntheticConfig c;
  c.n_exp = 64;
  c.width = 256;
  c.height = 256;
  c.seed = 99;
  c.movers = {stk::Mover{100, 120, 1.0, 2.0, 10, 0}};
  {
    QSignalSpy finished(&w, &StackWindow::jobFinished);
    QVERIFY(w.newSyntheticStack(c));
    QCOMPARE(waitJob(w, finished), State::Completed);
  }
  auto s = smallSettings();
  s.vxMin = s.vyMin = -8;
  s.vxMax = s.vyMax = 8;
  s.nvx = s.nvy = 81;  // 6,561 velocities: tens of seconds on a few cores
  w.setSearchSettings(s);
  QTemporaryDir tmp(testTmpRoot() + QStringLiteral("/ui_stack_cancel_XXXXXX"));
  QVERIFY(tmp.isValid());
  const QString out = tmp.filePath(QStringLiteral("cancelled.ecsv"));

  QSignalSpy finished(&w, &StackWindow::jobFinished);
  QSignalSpy searched(&w, &StackWindow::searchFinished);
  QVERIFY(w.runSearch(out));
  JobRunner* job = w.currentJob();
  QVERIFY(job);
  QTRY_COMPARE_WITH_TIMEOUT(job->state(), State::Running, 10000);
  // Wait until the scan itself runs (after psi/phi).
  QTRY_VERIFY_WITH_TIMEOUT(job->stage().contains(QStringLiteral("search")) || job->isFinished(), 60000);
  QTest::qWait(300);
  QVERIFY2(finished.isEmpty(), "the search finished before it could be cancelled");
  QVERIFY(w.cancelButton()->isEnabled());
  const int pct = job->percent();
  QElapsedTimer t;
  t.start();
  QTest::mouseClick(w.cancelButton(), Qt::LeftButton);
  QVERIFY(finished.count() == 1 || finished.wait(5000));
  const qint64 ms = t.elapsed();
  qInfo("cancelled at %d %% ('%s') in %lld ms", pct, qPrintable(job->stage()), static_cast<long long>(ms));
  QVERIFY2(ms < 2000, qPrintable(QStringLiteral("cancel took %1 ms").arg(ms)));
  QCOMPARE(finished.at(0).at(0).value<State>(), State::Cancelled);
  QCOMPARE(job->state(), State::Cancelled);
  QVERIFY(!job->result().has_value());
  QVERIFY(w.result() == nullptr);
  QVERIFY(w.candidates().empty());
  QCOMPARE(searched.count(), 0);
  QVERIFY(!QFileInfo::exists(out));
  QCOMPARE(QDir(tmp.path()).entryList(QDir::Files | QDir::NoDotAndDotDot | QDir::Hidden).size(), 0);
  QVERIFY(!w.cancelButton()->isEnabled());
  QVERIFY(w.searchPanel()->runButton()->isEnabled());
}

void TestUiStack::savesCandidatesAndResult() {
  StackWindow w;
  w.setInteractiveErrors(false);
  QString why;
  QVERIFY2(loadSmall(w, &why), qPrintable(why));
  QVERIFY2(searchSmall(w, &why), qPrintable(why));
  const auto& cands = w.candidates();
  QVERIFY(!cands.empty());
  QTemporaryDir tmp(testTmpRoot() + QStringLiteral("/ui_stack_save_XXXXXX"));
  QVERIFY(tmp.isValid());
  const QString ecsv = tmp.filePath(QStringLiteral("candidates.ecsv"));
  const QString h5 = tmp.filePath(QStringLiteral("result.h5"));
  {
    QSignalSpy finished(&w, &StackWindow::jobFinished);
    QSignalSpy saved(&w, &StackWindow::saved);
    QVERIFY(w.saveCandidates(ecsv));
    QCOMPARE(waitJob(w, finished), State::Completed);
    QCOMPARE(saved.count(), 1);
    QCOMPARE(saved.at(0).at(0).toString(), ecsv);
  }
  QFile f(ecsv);
  QVERIFY(f.open(QIODevice::ReadOnly));
  QList<QByteArray> rows;
  for (const QByteArray& line : f.readAll().split('\n'))
    if (!line.trimmed().isEmpty() && !line.startsWith('#')) rows << line.trimmed();
  QVERIFY(rows.size() >= 1);
  QVERIFY(rows.front().startsWith("x,y,v,vx,vy,z"));
  rows.removeFirst();
  QCOMPARE(rows.size(), static_cast<int>(cands.size()));
  for (int i = 0; i < rows.size(); ++i) {
    const QList<QByteArray> cols = rows[i].split(',');
    QCOMPARE(cols.at(0).toInt(), cands[std::size_t(i)].x);
    QCOMPARE(cols.at(1).toInt(), cands[std::size_t(i)].y);
    QCOMPARE(cols.at(2).toInt(), cands[std::size_t(i)].v);
  }
  {
    QSignalSpy finished(&w, &StackWindow::jobFinished);
    QVERIFY(w.saveResult(h5));
    QCOMPARE(waitJob(w, finished), State::Completed);
  }
  QVERIFY(QFileInfo(h5).size() > 0);
  // Searching with a save path writes the file in the same job.
  const QString direct = tmp.filePath(QStringLiteral("direct.ecsv"));
  QVERIFY2(searchSmall(w, &why, direct), qPrintable(why));
  QVERIFY(QFileInfo::exists(direct));
  QFile g(direct);
  QVERIFY(g.open(QIODevice::ReadOnly));
  int dataRows = -1;  // minus the header line
  for (const QByteArray& line : g.readAll().split('\n'))
    if (!line.trimmed().isEmpty() && !line.startsWith('#')) ++dataRows;
  QCOMPARE(dataRows, static_cast<int>(w.candidates().size()));
}

void TestUiStack::cudaEntriesFollowGpuStatus() {
  StackWindow w;
  QComboBox* backend = w.searchPanel()->backendCombo();
  auto* model = qobject_cast<QStandardItemModel*>(backend->model());
  QVERIFY(model);
  const bool gpu = almagest::gpu_status().available;
  for (int i = 1; i < backend->count(); ++i) {
    if (backend->itemData(i).toString() == QStringLiteral("auto")) continue;  // falls back to the CPU
    QCOMPARE(model->item(i)->isEnabled(), gpu);
    if (!gpu) QVERIFY(model->item(i)->toolTip().contains(QString::fromStdString(almagest::gpu_status().reason)));
  }
  // Without a stack, Run is refused with a message (no crash).
  w.setInteractiveErrors(false);
  QVERIFY(!w.runSearch());
  QVERIFY(w.logPanel()->text().contains(QStringLiteral("stack")));
}

QTEST_MAIN(TestUiStack)
#include "test_ui_stack.moc"
