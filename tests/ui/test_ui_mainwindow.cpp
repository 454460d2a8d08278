// The desktop window end to end under Xvfb: open the bundled demo data, run a 2pCF job through the
// window (progress monotone to 100, chart filled with the result's estimator, VTK frame showing
// the catalogue), save the result, rotate the camera with the mouse, and cancel a long job
// (takes effect within 1 s and leaves no result).
//
// VTK needs a real OpenGL context: main() sets the surface format before QApplication exists,
// and the tests skip themselves when the platform is not xcb or no GL 3.2 context can be made.
#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QOpenGLContext>
#include <QChartView>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSurfaceFormat>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <set>

#include <QComboBox>
#include <QStandardItemModel>

#include "MainWindow.hpp"
#include "almagest/core/gpu.hpp"
#include "almagest/npcf/result.hpp"
#include "jobs/JobRunner.hpp"
#include "panels/JobPanel.hpp"
#include "panels/SchemaForm.hpp"
#include "sky/SkyMapWindow.hpp"
#include "stackview/StackWindow.hpp"
#include "views/CorrelationChart.hpp"
#include "views/PointCloudScene.hpp"
#include "views/VtkView.hpp"

using almagest::ui::CorrelationChart;
using almagest::ui::JobRunner;
using almagest::ui::MainWindow;
using State = almagest::ui::JobRunner::State;

namespace {

QString testTmpRoot() {
  const QString env = qEnvironmentVariable("ALMAGEST_TEST_TMP");
  return env.isEmpty() ? QDir::tempPath() : env;
}

struct FrameStats {
  int distinctColours = 0;
  int dataPixels = 0;    ///< warm gold: the data points
  int randomPixels = 0;  ///< light blue: the randoms
  int pixels = 0;
};

FrameStats analyse(const QImage& img) {
  FrameStats s;
  std::set<QRgb> colours;
  const QImage im = img.convertToFormat(QImage::Format_RGB32);
  for (int y = 0; y < im.height(); ++y) {
    const auto* line = reinterpret_cast<const QRgb*>(im.constScanLine(y));
    for (int x = 0; x < im.width(); ++x) {
      const QRgb c = line[x];
      colours.insert(c);
      const int r = qRed(c), g = qGreen(c), b = qBlue(c);
      if (r > 140 && g > 90 && r > b + 70 && g > b + 30) ++s.dataPixels;
      if (b > 130 && b > r + 40 && g > r) ++s.randomPixels;
    }
  }
  s.distinctColours = static_cast<int>(colours.size());
  s.pixels = im.width() * im.height();
  return s;
}

bool openAndWait(MainWindow& w, bool run, QString* why) {
  QSignalSpy loaded(&w, &MainWindow::cataloguesLoaded);
  QSignalSpy failed(&w, &MainWindow::loadFailed);
  if (!w.openDemoData(run)) {
    *why = QStringLiteral("openDemoData failed");
    return false;
  }
  QElapsedTimer t;
  t.start();
  while (loaded.isEmpty() && failed.isEmpty() && t.elapsed() < 30000) QTest::qWait(20);
  if (!failed.isEmpty()) *why = failed.at(0).at(0).toString();
  else if (loaded.isEmpty()) *why = QStringLiteral("timeout loading the demo data");
  return !loaded.isEmpty();
}

/// Shows `w` at `size` (errors to the log only) and loads the demo catalogues without running.
bool showWithDemoData(MainWindow& w, QSize size, QString* why) {
  w.setInteractiveErrors(false);
  w.resize(size);
  w.show();
  if (!QTest::qWaitForWindowExposed(&w)) {
    *why = QStringLiteral("the window was not exposed");
    return false;
  }
  return openAndWait(w, false, why);
}

}  // namespace

class TestUiMainWindow : public QObject {
  Q_OBJECT

private slots:
  void initTestCase();
  void demoJobFillsChartAndView();
  void mouseDragRotatesTheCamera();
  void threePointJobShowsZeta();
  void parityJobShowsOddChannel();
  void cancelledJobLeavesNoResult();
  void backendChoiceFollowsGpuStatus();
  void toolsMenuOpensSkyMap();  // and the moving-object window
};

void TestUiMainWindow::initTestCase() {
  if (QGuiApplication::platformName() != QLatin1String("xcb"))
    QSKIP(qPrintable(QStringLiteral("needs the xcb platform under Xvfb (platform is '%1')")
                         .arg(QGuiApplication::platformName())));
  QOpenGLContext ctx;
  ctx.setFormat(almagest::ui::VtkView::defaultFormat());
  if (!ctx.create()) QSKIP("no OpenGL context can be created here");
  const auto v = ctx.format().version();
  if (v < qMakePair(3, 2)) QSKIP(qPrintable(QStringLiteral("OpenGL %1.%2 < 3.2").arg(v.first).arg(v.second)));
  QVERIFY2(!MainWindow::demoDirectory().isEmpty(),
           "the demo catalogues resources/demo/{data,randoms}.txt are missing");
}

void TestUiMainWindow::demoJobFillsChartAndView() {
  MainWindow w;
  w.setInteractiveErrors(false);
  w.resize(1200, 760);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));

  QSignalSpy progress(&w, &MainWindow::jobProgress);
  QSignalSpy finished(&w, &MainWindow::jobFinished);
  QString why;
  QVERIFY2(openAndWait(w, /*run=*/true, &why), qPrintable(why));
  QVERIFY(w.data() && w.randoms());
  QVERIFY(w.data()->size() > 0 && w.randoms()->size() > 0);
  QCOMPARE(w.scene()->shownData(), std::min(w.data()->size(), almagest::ui::PointCloudScene::kMaxShownPoints));

  QVERIFY(finished.count() == 1 || finished.wait(60000));
  QCOMPARE(finished.count(), 1);
  QVERIFY2(finished.at(0).at(0).value<State>() == State::Completed,
           qPrintable(w.currentJob() ? w.currentJob()->errorMessage() : QStringLiteral("no job")));

  // Progress: monotone, ends at 100.
  QList<int> p;
  for (const auto& args : progress) p << args.at(0).toInt();
  QVERIFY(!p.isEmpty());
  for (int i = 1; i < p.size(); ++i) QVERIFY2(p[i] >= p[i - 1], "progress went down");
  QCOMPARE(p.last(), 100);
  QCOMPARE(w.jobPanel()->progressBar()->value(), 100);

  // The chart shows xi(r) of the result: one point per bin with random pairs.
  QVERIFY(w.result());
  const almagest::npcf::NpcfResult& r = w.result()->result;
  QCOMPARE(r.statistic, almagest::npcf::Statistic::TwoPoint);
  CorrelationChart* chart = w.chart();
  QCOMPARE(chart->mode(), CorrelationChart::Mode::Xi);
  int withRandoms = 0;
  for (double rr : r.r) withRandoms += rr > 0 ? 1 : 0;
  QVERIFY2(withRandoms > 0, "the demo job found no random pairs");
  QCOMPARE(chart->pointCount(), withRandoms);
  QCOMPARE(chart->skippedRows(), static_cast<int>(r.rows()) - withRandoms);
  const QList<QPointF> xi = chart->points();
  int k = 0;
  for (std::size_t i = 0; i < r.rows(); ++i) {
    if (!(r.r[i] > 0)) continue;
    QCOMPARE(xi[k].x(), r.config.bins.centre(static_cast<int>(i)));
    QCOMPARE(xi[k].y(), r.estimator[i]);
    ++k;
  }
  chart->setMode(CorrelationChart::Mode::R2Xi);
  QCOMPARE(chart->pointCount(), withRandoms);
  const QList<QPointF> r2xi = chart->points();
  for (int i = 0; i < r2xi.size(); ++i) QCOMPARE(r2xi[i].y(), xi[i].x() * xi[i].x() * xi[i].y());
  QVERIFY(!chart->chartView()->grab().isNull());

  // The VTK frame shows the catalogue: many colours, gold data points and blue randoms.
  QTest::qWait(100);
  const QImage frame = w.vtkView()->grabFramebuffer();
  QVERIFY(!frame.isNull());
  const FrameStats s = analyse(frame);
  qInfo("VTK frame %dx%d: %d colours, %d data pixels, %d random pixels", frame.width(), frame.height(),
        s.distinctColours, s.dataPixels, s.randomPixels);
  QVERIFY2(s.distinctColours > 200, qPrintable(QString::number(s.distinctColours)));
  QVERIFY2(s.dataPixels > 300, qPrintable(QString::number(s.dataPixels)));
  QVERIFY2(s.randomPixels > 100, qPrintable(QString::number(s.randomPixels)));

  // Save as HDF5 and as text; the HDF5 file reads back with the same counts.
  QTemporaryDir tmp(testTmpRoot() + QStringLiteral("/ui_main_XXXXXX"));
  QVERIFY(tmp.isValid());
  const QString h5 = tmp.filePath(QStringLiteral("xi.h5")), txt = tmp.filePath(QStringLiteral("xi.txt"));
  QVERIFY(w.saveResult(h5, MainWindow::SaveFormat::Hdf5));
  QVERIFY(w.saveResult(txt, MainWindow::SaveFormat::Text));
  const almagest::npcf::NpcfResult back = almagest::npcf::read_hdf5(h5.toStdString());
  QCOMPARE(back.tuples, r.tuples);
  QFile t(txt);
  QVERIFY(t.open(QIODevice::ReadOnly));
  int dataLines = 0;
  for (const QByteArray& line : t.readAll().split('\n'))
    if (!line.trimmed().isEmpty() && !line.startsWith('#')) ++dataLines;
  QCOMPARE(dataLines, static_cast<int>(r.rows()));
}

void TestUiMainWindow::mouseDragRotatesTheCamera() {
  MainWindow w;
  QString why;
  QVERIFY2(showWithDemoData(w, QSize(1100, 700), &why), qPrintable(why));
  QTest::qWait(100);
  almagest::ui::VtkView* view = w.vtkView();
  const QImage before = view->grabFramebuffer();
  const QPoint c = view->rect().center();
  QTest::mousePress(view, Qt::LeftButton, Qt::NoModifier, c);
  for (int i = 1; i <= 10; ++i) {
    QMouseEvent move(QEvent::MouseMove, QPointF(c + QPoint(12 * i, 4 * i)),
                     view->mapToGlobal(QPointF(c + QPoint(12 * i, 4 * i))), Qt::NoButton, Qt::LeftButton,
                     Qt::NoModifier);
    QApplication::sendEvent(view, &move);
  }
  QTest::mouseRelease(view, Qt::LeftButton, Qt::NoModifier, c + QPoint(120, 40));
  QTest::qWait(50);
  const QImage after = view->grabFramebuffer();
  QCOMPARE(after.size(), before.size());
  int changed = 0;
  for (int y = 0; y < before.height(); ++y)
    for (int x = 0; x < before.width(); ++x) changed += before.pixel(x, y) != after.pixel(x, y) ? 1 : 0;
  QVERIFY2(changed > before.width() * before.height() / 100, qPrintable(QString::number(changed)));
  QVERIFY(analyse(after).dataPixels > 300);
}

void TestUiMainWindow::threePointJobShowsZeta() {
  MainWindow w;
  QString why;
  QVERIFY2(showWithDemoData(w, QSize(1280, 800), &why), qPrintable(why));
  almagest::npcf::NpcfConfig cfg = w.jobPanel()->config();
  cfg.statistic = almagest::npcf::Statistic::ThreePoint;
  cfg.bins.rmin = 2.0;
  cfg.bins.rmax = 20.0;
  cfg.bins.nbins = 6;
  w.jobPanel()->setConfig(cfg);
  QSignalSpy finished(&w, &MainWindow::jobFinished);
  QVERIFY(w.runJob());
  QVERIFY(finished.wait(60000));
  QVERIFY2(finished.at(0).at(0).value<State>() == State::Completed, qPrintable(w.currentJob()->errorMessage()));
  const almagest::npcf::NpcfResult& r = w.result()->result;
  QCOMPARE(r.rows(), std::size_t(6 * 7 * 8 / 6));

  CorrelationChart* chart = w.chart();
  QCOMPARE(chart->availableModes(),
           (QList<CorrelationChart::Mode>{CorrelationChart::Mode::ZetaEquilateral, CorrelationChart::Mode::ZetaIndex}));
  // "All triangles" opens on all of them (issue 21); the equilateral plot is one choice away.
  QCOMPARE(chart->mode(), CorrelationChart::Mode::ZetaIndex);
  chart->setMode(CorrelationChart::Mode::ZetaEquilateral);
  // Equilateral rows (b, b, b) with random triangles, in bin order, at the bin centre.
  QList<QPointF> expected;
  for (std::size_t i = 0; i < r.rows(); ++i) {
    const auto* b = &r.bins[3 * i];
    if (b[0] == b[1] && b[1] == b[2] && r.r[i] > 0) expected << QPointF(r.config.bins.centre(b[0]), r.estimator[i]);
  }
  QVERIFY(!expected.isEmpty());
  QCOMPARE(chart->points(), expected);
  QTest::qWait(200);  // let the chart lay itself out before the picture
  w.grab().save(testTmpRoot() + QStringLiteral("/ui_3pcf_equilateral.png"));
  chart->setMode(CorrelationChart::Mode::ZetaIndex);
  int withRandoms = 0;
  for (double rr : r.r) withRandoms += rr > 0 ? 1 : 0;
  QCOMPARE(chart->pointCount(), withRandoms);
  // Clustered data: zeta of the smallest equilateral triangles is positive.
  QVERIFY(expected.front().y() > 0);
  QTest::qWait(200);
  w.grab().save(testTmpRoot() + QStringLiteral("/ui_3pcf_by_configuration.png"));
}

void TestUiMainWindow::parityJobShowsOddChannel() {
  MainWindow w;
  QString why;
  QVERIFY2(showWithDemoData(w, QSize(1280, 800), &why), qPrintable(why));
  // The parity statistic is offered by the job panel and reaches the configuration with pixels.
  auto* statistic = w.jobPanel()->findChild<QComboBox*>(QStringLiteral("statistic"));
  QVERIFY2(statistic, "the job panel has no statistic selector");
  const int idx = statistic->findData(static_cast<int>(almagest::npcf::Statistic::FourPointParity));
  QVERIFY2(idx >= 0, "no parity 4pCF entry in the statistic selector");
  statistic->setCurrentIndex(idx);
  almagest::npcf::NpcfConfig cfg = w.jobPanel()->config();
  cfg.statistic = almagest::npcf::Statistic::FourPointParity;
  cfg.bins.rmin = 2.0;
  cfg.bins.rmax = 12.0;
  cfg.bins.nbins = 3;
  w.jobPanel()->setConfig(cfg);
  QCOMPARE(w.jobPanel()->config().statistic, almagest::npcf::Statistic::FourPointParity);
  QVERIFY(w.jobPanel()->config().store_pixels);
  QSignalSpy finished(&w, &MainWindow::jobFinished);
  QVERIFY(w.runJob());
  QVERIFY(finished.wait(120000));
  QVERIFY2(finished.at(0).at(0).value<State>() == State::Completed, qPrintable(w.currentJob()->errorMessage()));
  const almagest::npcf::NpcfResult& r = w.result()->result;
  QCOMPARE(r.zeta_odd.size(), r.rows());
  CorrelationChart* chart = w.chart();
  QVERIFY(chart->availableModes().contains(CorrelationChart::Mode::ZetaOddIndex));
  chart->setMode(CorrelationChart::Mode::ZetaOddIndex);
  QCOMPARE(chart->mode(), CorrelationChart::Mode::ZetaOddIndex);
  // One point per row with random tetrahedra, at (row index, zeta_odd).
  QList<QPointF> expected;
  for (std::size_t i = 0; i < r.rows(); ++i)
    if (r.r[i] > 0) expected << QPointF(static_cast<double>(i), r.zeta_odd[i]);
  QVERIFY(!expected.isEmpty());
  QCOMPARE(chart->points(), expected);
}

void TestUiMainWindow::cancelledJobLeavesNoResult() {
  MainWindow w;
  w.setInteractiveErrors(false);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QString why;
  QVERIFY2(openAndWait(w, false, &why), qPrintable(why));

  // A job of seconds: 3pCF with bins out to a quarter of the catalogue's extent. The engine
  // checks the token between graph chunks of 1024 hubs and between ~512 counting chunks, each a
  // few milliseconds here (more on a loaded machine).
  const auto& d = *w.data();
  const double extent = *std::max_element(d.x.begin(), d.x.end()) - *std::min_element(d.x.begin(), d.x.end());
  almagest::npcf::NpcfConfig cfg = w.jobPanel()->config();
  cfg.statistic = almagest::npcf::Statistic::ThreePoint;
  cfg.bins.rmin = 0.01 * extent;
  cfg.bins.rmax = 0.25 * extent;
  cfg.bins.nbins = 10;
  cfg.bins.scale = almagest::npcf::BinScale::Linear;
  w.jobPanel()->setConfig(cfg);

  QSignalSpy finished(&w, &MainWindow::jobFinished);
  QSignalSpy progress(&w, &MainWindow::jobProgress);
  QVERIFY(w.runJob());
  JobRunner* job = w.currentJob();
  QVERIFY(job);
  QTRY_COMPARE_WITH_TIMEOUT(job->state(), State::Running, 10000);
  QTRY_VERIFY_WITH_TIMEOUT(job->percent() > 0 || job->isFinished(), 20000);  // inside the engine
  QTest::qWait(200);
  QVERIFY2(finished.isEmpty(), "the job finished before it could be cancelled");
  QVERIFY(w.jobPanel()->cancelButton()->isEnabled());

  const int percentAtCancel = job->percent();
  const QString stageAtCancel = job->stage();
  QElapsedTimer latency;
  latency.start();
  QTest::mouseClick(w.jobPanel()->cancelButton(), Qt::LeftButton);
  QVERIFY(finished.count() == 1 || finished.wait(5000));
  const qint64 ms = latency.elapsed();
  qInfo("cancel latency %lld ms (cancelled at %d %%, stage '%s')", static_cast<long long>(ms),
        percentAtCancel, qPrintable(stageAtCancel));
  QVERIFY2(ms < 1000, qPrintable(QStringLiteral("cancel took %1 ms").arg(ms)));
  QCOMPARE(finished.at(0).at(0).value<State>(), State::Cancelled);
  QCOMPARE(job->state(), State::Cancelled);
  QVERIFY(!job->result().has_value());
  QVERIFY(w.result() == nullptr);
  QCOMPARE(w.chart()->pointCount(), 0);
  for (const auto& args : progress) QVERIFY(args.at(0).toInt() < 100);
  QVERIFY(!w.jobPanel()->cancelButton()->isEnabled());
  QVERIFY(w.jobPanel()->runButton()->isEnabled());
}

void TestUiMainWindow::backendChoiceFollowsGpuStatus() {
  MainWindow w;
  // The backend is the schema's field (cpu, cuda, cuda:N, auto); its tool tip says whether a GPU
  // can be used, and the job layer reports an unusable one when the job runs.
  QWidget* backend = w.jobPanel()->form()->editor(QStringLiteral("backend"));
  QVERIFY2(backend, "the job panel has no backend field");
  QVERIFY(backend->toolTip().contains(almagest::gpu_status().available ? QStringLiteral("GPU:") : QStringLiteral("No usable GPU")));
  // The chosen backend reaches the job configuration.
  auto v = w.jobPanel()->values();
  v["backend"] = std::string("auto");
  w.jobPanel()->setValues(v);
  QCOMPARE(int(w.jobPanel()->config().backend.kind), int(almagest::BackendKind::Auto));
}

void TestUiMainWindow::toolsMenuOpensSkyMap() {
  MainWindow w;
  w.setInteractiveErrors(false);
  w.show();
  // The Tools menu holds the action; triggering it opens a sky-map window owned by `w`.
  QAction* action = nullptr;
  for (QAction* a : w.findChildren<QAction*>())
    if (a->text().contains(QStringLiteral("Sky map"))) action = a;
  QVERIFY2(action, "no Sky map action in the menus");
  action->trigger();
  const auto windows = w.findChildren<almagest::ui::SkyMapWindow*>();
  QCOMPARE(windows.size(), 1);
  almagest::ui::SkyMapWindow* sky = windows.front();
  QVERIFY(sky->isWindow() && sky->isVisible());
  QSignalSpy loaded(sky, &almagest::ui::SkyMapWindow::mapLoaded);
  QVERIFY(sky->openDemoMap(16, 7));
  QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 20000);
  QCOMPARE(sky->nside(), 16);
  sky->close();  // WA_DeleteOnClose
  QTRY_VERIFY(w.findChildren<almagest::ui::SkyMapWindow*>().isEmpty());
  // The same for the moving-object window.
  QAction* moving = nullptr;
  for (QAction* a : w.findChildren<QAction*>())
    if (a->text().contains(QStringLiteral("Moving objects"))) moving = a;
  QVERIFY2(moving, "no Moving objects action in the menus");
  moving->trigger();
  const auto stacks = w.findChildren<almagest::ui::StackWindow*>();
  QCOMPARE(stacks.size(), 1);
  QVERIFY(stacks.front()->isWindow() && stacks.front()->isVisible());
  stacks.front()->close();
  QTRY_VERIFY(w.findChildren<almagest::ui::StackWindow*>().isEmpty());
}

int main(int argc, char** argv) {
  // VTK needs an OpenGL 3.2 core context: the format must be set before QApplication exists.
  almagest::ui::VtkView::prepareApplication();
  QApplication app(argc, argv);
  TestUiMainWindow test;
  QTEST_SET_MAIN_SOURCE_PATH
  return QTest::qExec(&test, argc, argv);
}

#include "test_ui_mainwindow.moc"
