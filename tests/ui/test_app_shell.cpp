// The application shell: settings remembered across restarts (geometry, recent files, last
// parameters, in a temporary INI file), windows inside the available screen, closing or quitting
// while a job runs asks (cancel / keep running / don't close), the one inline validation style
// of SchemaForm, files recognised by content for drag and drop, workspaces saved and restored,
// and exports that carry the provenance.
#include <QChart>
#include <QChartView>
#include <QDir>
#include <QFile>
#include <QGuiApplication>
#include <QImageReader>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QOpenGLContext>
#include <QPushButton>
#include <QScreen>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <chrono>
#include <thread>

#include "MainWindow.hpp"
#include "almagest/core/error.hpp"
#include "almagest/io/hdf5_file.hpp"
#include "almagest/npcf/job.hpp"
#include "app/AppSettings.hpp"
#include "app/Export.hpp"
#include "app/FileKind.hpp"
#include "app/JobQueue.hpp"
#include "app/ViewCamera.hpp"
#include "app/Workspace.hpp"
#include "npcf/CataloguePanel.hpp"
#include "npcf/ConfigurationExplorer.hpp"
#include "npcf/ConfigurationModel.hpp"
#include "npcf/NpcfViews.hpp"
#include "panels/JobPanel.hpp"
#include "panels/SchemaForm.hpp"
#include "sky/SkyMapWindow.hpp"
#include "stackview/StackWindow.hpp"
#include "views/CorrelationChart.hpp"
#include "views/PointCloudScene.hpp"
#include "views/VtkView.hpp"

using namespace almagest::ui;
namespace sc = almagest::schema;
using State = JobRunner::State;

namespace {

QString testTmpRoot() {
  const QString env = qEnvironmentVariable("ALMAGEST_TEST_TMP");
  return env.isEmpty() ? QDir::tempPath() : env;
}

QString demoFile(const char* name) {
  return QStringLiteral(ALMAGEST_SOURCE_DIR "/resources/demo/") + QLatin1String(name);
}

bool glAvailable() {
  if (QGuiApplication::platformName() != QLatin1String("xcb")) return false;
  QOpenGLContext ctx;
  ctx.setFormat(VtkView::defaultFormat());
  return ctx.create() && ctx.format().version() >= qMakePair(3, 2);
}

// A job of `owner` that runs until `hold` is cleared (or it is cancelled).
JobRunner* holdingJob(QObject* owner, std::atomic<bool>& hold) {
  auto* r = new JobRunner(QStringLiteral("hold"), [&hold](const almagest::JobContext& ctx) -> std::any {
    while (hold) {
      ctx.check_cancel();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return {};
  }, owner);
  JobQueue::instance().submit(r, QStringLiteral("cpu"), owner);
  return r;
}

// Writes one FITS HDU header (cards padded to 2880 bytes) and `dataBytes` zero bytes.
void fitsHdu(QByteArray& out, const QStringList& cards, qint64 dataBytes) {
  QByteArray h;
  for (const QString& c : cards) h += c.leftJustified(80, QLatin1Char(' '), true).toLatin1();
  h += QByteArray("END").leftJustified(80, ' ');
  while (h.size() % 2880) h += ' ';
  out += h;
  out += QByteArray(static_cast<int>((dataBytes + 2879) / 2880 * 2880), '\0');
}

bool writeFile(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

// A form value as written (a line edit's text unquoted, a number in shortest form).
QString asText(const sc::Value& v) {
  if (auto t = std::get_if<std::string>(&v)) return QString::fromStdString(*t);
  return QString::fromStdString(sc::describe(v));
}

int distinctColours(const QImage& img) {
  QSet<QRgb> seen;
  for (int y = 0; y < img.height(); y += 3)
    for (int x = 0; x < img.width(); x += 3) seen.insert(img.pixel(x, y));
  return seen.size();
}

}  // namespace

class TestAppShell : public QObject {
  Q_OBJECT

private slots:
  void init();
  void recentFilesAreDedupedOrderedAndExisting();
  void geometryAndParametersSurviveARestart();
  void windowsOpenInsideTheScreen();
  void closingDuringAJobAsks();
  void toolWindowKeepRunningClosesWhenDone();
  void schemaFormShowsProblemsInlineAndDisablesRun();
  void filesAreRecognisedByContent();
  void workspaceRestoresFilesSettingsAndSelections();
  void exportsCarryTheProvenance();
  void exportedTitlesArePlainText();
  void malformedWorkspaceIsOneMessage();

private:
  QTemporaryDir* tmp_ = nullptr;
};

void TestAppShell::init() {
  delete tmp_;
  tmp_ = new QTemporaryDir(testTmpRoot() + QStringLiteral("/app_shell_XXXXXX"));
  QVERIFY(tmp_->isValid());
  app::setSettingsFile(tmp_->filePath(QStringLiteral("settings.ini")));
  app::setCloseAnswer(std::nullopt);
}

void TestAppShell::recentFilesAreDedupedOrderedAndExisting() {
  QStringList files;
  for (int i = 0; i < 13; ++i) {
    files << tmp_->filePath(QStringLiteral("f%1.txt").arg(i));
    QVERIFY(writeFile(files.last(), "1 2 3\n"));
  }
  for (const QString& f : files) app::addRecentFile(f);
  app::addRecentFile(files[5]);  // again: moves to the front
  QStringList got = app::recentFiles();
  QCOMPARE(got.size(), app::kMaxRecent);
  QCOMPARE(got.first(), QFileInfo(files[5]).absoluteFilePath());
  QCOMPARE(got.at(1), QFileInfo(files[12]).absoluteFilePath());
  QCOMPARE(got.count(QFileInfo(files[5]).absoluteFilePath()), 1);
  QFile::remove(files[12]);  // gone files are not offered
  got = app::recentFiles();
  QVERIFY(!got.contains(QFileInfo(files[12]).absoluteFilePath()));
}

void TestAppShell::geometryAndParametersSurviveARestart() {
  QRect geometry;
  {
    MainWindow w;
    w.setInteractiveErrors(false);
    w.restoreSession();
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.resize(900, 640);
    w.move(40, 30);
    sc::Values v = w.jobPanel()->values();
    v["nbins"] = std::int64_t(7);
    v["rmax"] = 33.5;
    w.jobPanel()->setValues(v);
    QCoreApplication::processEvents();
    geometry = w.geometry();
    QVERIFY(w.close());
  }
  MainWindow w2;
  w2.restoreSession();
  w2.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w2));
  const sc::Values v2 = w2.jobPanel()->values();
  QVERIFY(v2.count("nbins") && v2.count("rmax"));
  // As the form gives them (a spin box an integer, a line edit its text): compare as written.
  QCOMPARE(asText(v2.at("nbins")), QStringLiteral("7"));
  QCOMPARE(asText(v2.at("rmax")), QStringLiteral("33.5"));
  QCOMPARE(w2.size(), geometry.size());
}

void TestAppShell::windowsOpenInsideTheScreen() {
  const QRect avail = QGuiApplication::primaryScreen()->availableGeometry();
  qInfo("screen %dx%d", avail.width(), avail.height());
  MainWindow w;
  w.setInteractiveErrors(false);
  w.restoreSession();
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QVERIFY2(avail.contains(w.geometry()), qPrintable(QStringLiteral("main %1,%2 %3x%4").arg(w.x()).arg(w.y()).arg(w.width()).arg(w.height())));
  // The tool windows ask for more than a small screen has (Moving objects: 1440 x 920).
  StackWindow* st = w.showMovingObjects();
  SkyMapWindow* sky = w.showSkyMap();
  QVERIFY(QTest::qWaitForWindowExposed(st));
  for (QWidget* t : {static_cast<QWidget*>(st), static_cast<QWidget*>(sky)})
    QVERIFY2(avail.contains(t->geometry()),
             qPrintable(QStringLiteral("%1 at %2,%3 %4x%5").arg(t->objectName()).arg(t->x()).arg(t->y()).arg(t->width()).arg(t->height())));
  // A geometry saved on a larger monitor comes back inside this one.
  st->move(avail.right() + 500, avail.bottom() + 300);
  st->resize(avail.width() + 400, avail.height() + 400);
  app::fitToScreen(st);
  QVERIFY(avail.contains(st->geometry()));
}

void TestAppShell::closingDuringAJobAsks() {
  std::atomic<bool> hold{true};
  {
    MainWindow w;
    w.setInteractiveErrors(false);
    w.show();
    JobRunner* r = holdingJob(&w, hold);
    QTRY_COMPARE_WITH_TIMEOUT(r->state(), State::Running, 5000);
    app::setCloseAnswer(app::CloseChoice::DontClose);
    QVERIFY(!w.close());
    QVERIFY(w.isVisible());
    QCOMPARE(r->state(), State::Running);
    app::setCloseAnswer(app::CloseChoice::KeepRunning);
    QVERIFY(!w.close());  // waits for the job
    QVERIFY(w.isVisible());
    hold = false;
    QTRY_VERIFY_WITH_TIMEOUT(!w.isVisible(), 5000);  // closed once the queue went idle
    QCOMPARE(r->state(), State::Completed);
  }
  hold = true;
  MainWindow w;
  w.setInteractiveErrors(false);
  w.show();
  JobRunner* r = holdingJob(&w, hold);
  QTRY_COMPARE_WITH_TIMEOUT(r->state(), State::Running, 5000);
  app::setCloseAnswer(app::CloseChoice::CancelJobs);
  QVERIFY(w.close());
  QTRY_COMPARE_WITH_TIMEOUT(r->state(), State::Cancelled, 5000);
}

void TestAppShell::toolWindowKeepRunningClosesWhenDone() {
  MainWindow w;
  w.setInteractiveErrors(false);
  w.show();
  QPointer<StackWindow> st = w.showMovingObjects();
  std::atomic<bool> hold{true};
  JobRunner* r = holdingJob(st, hold);
  QTRY_COMPARE_WITH_TIMEOUT(r->state(), State::Running, 5000);
  app::setCloseAnswer(app::CloseChoice::KeepRunning);
  QVERIFY(!st->close());
  QVERIFY(st->isVisible());
  hold = false;
  QTRY_VERIFY_WITH_TIMEOUT(st.isNull(), 5000);  // closed (and deleted) once its job finished
  app::setCloseAnswer(app::CloseChoice::DontClose);
  QPointer<SkyMapWindow> sky = w.showSkyMap();
  hold = true;
  holdingJob(sky, hold);
  QVERIFY(!sky->close());
  QVERIFY(sky);
  app::setCloseAnswer(app::CloseChoice::CancelJobs);
  hold = false;
}

void TestAppShell::schemaFormShowsProblemsInlineAndDisablesRun() {
  SchemaForm form(almagest::npcf::npcf_schema());
  QPushButton run(QStringLiteral("Run"));
  form.setRunControl(&run);
  form.show();
  form.showProblems(QStringLiteral("jobs.toml: job 2: --nbins: must be in [1, 3071], got 0; rmax: must be greater than rmin\n"
                                   "a problem of no field"));
  QCOMPARE(form.fieldProblem(QStringLiteral("nbins")), QStringLiteral("must be in [1, 3071], got 0"));
  QCOMPARE(form.fieldProblem(QStringLiteral("rmax")), QStringLiteral("must be greater than rmin"));
  QCOMPARE(form.fieldProblem(QStringLiteral("rmin")), QString());
  auto* inlineLabel = form.findChild<QLabel*>(QStringLiteral("nbins:problem"));
  QVERIFY(inlineLabel && inlineLabel->isVisible());
  QVERIFY(!run.isEnabled());
  // A validator runs on every change: the engine's own rule, its message inline.
  form.setValidator([](const sc::Values& v) -> QString {
    auto it = v.find("nbins");
    if (it != v.end() && asText(it->second).toInt() > 20)
      return QStringLiteral("--nbins: at most 20 here");
    return {};
  });
  QVERIFY(run.isEnabled());
  QVERIFY(!inlineLabel->isVisible());
  // Typed as a user would (a spin box or a line edit, whichever the schema's range gives).
  QWidget* nbins = form.editor(QStringLiteral("nbins"));
  QVERIFY(nbins);
  auto type = [nbins](const QString& text) {
    if (auto* spin = qobject_cast<QSpinBox*>(nbins)) return spin->setValue(text.toInt());
    auto* edit = qobject_cast<QLineEdit*>(nbins);
    QVERIFY(edit);
    edit->selectAll();
    QTest::keyClicks(edit, text);
  };
  type(QStringLiteral("25"));
  QCOMPARE(form.fieldProblem(QStringLiteral("nbins")), QStringLiteral("at most 20 here"));
  QVERIFY(!run.isEnabled());
  type(QStringLiteral("12"));
  QVERIFY(run.isEnabled());
  QVERIFY(form.problems().isEmpty());
}

void TestAppShell::filesAreRecognisedByContent() {
  using app::FileKind;
  // FITS built here card by card (independent of the engine's writers).
  QByteArray map, stack, cat, plain;
  fitsHdu(map, {"SIMPLE  =                    T", "BITPIX  =                    8", "NAXIS   =                    0", "EXTEND  =                    T"}, 0);
  fitsHdu(map, {"XTENSION= 'BINTABLE'", "BITPIX  =                    8", "NAXIS   =                    2", "NAXIS1  =                    4",
                "NAXIS2  =                   12", "PCOUNT  =                    0", "GCOUNT  =                    1", "TFIELDS =                    1",
                "TTYPE1  = 'TEMPERATURE'", "TFORM1  = 'E       '", "PIXTYPE = 'HEALPIX '", "ORDERING= 'RING    '", "NSIDE   =                    1"}, 48);
  fitsHdu(stack, {"SIMPLE  =                    T", "BITPIX  =                  -32", "NAXIS   =                    3", "NAXIS1  =                    4",
                  "NAXIS2  =                    4", "NAXIS3  =                    5"}, 4 * 4 * 4 * 5);
  fitsHdu(cat, {"SIMPLE  =                    T", "BITPIX  =                    8", "NAXIS   =                    0"}, 0);
  fitsHdu(cat, {"XTENSION= 'BINTABLE'", "BITPIX  =                    8", "NAXIS   =                    2", "NAXIS1  =                   24",
                "NAXIS2  =                    3", "PCOUNT  =                    0", "GCOUNT  =                    1", "TFIELDS =                    3",
                "TTYPE1  = 'RA      '", "TTYPE2  = 'DEC     '", "TTYPE3  = 'Z       '"}, 72);
  fitsHdu(plain, {"SIMPLE  =                    T", "BITPIX  =                    8", "NAXIS   =                    0"}, 0);
  const QString d = tmp_->path();
  QVERIFY(writeFile(d + "/m.fits", map) && writeFile(d + "/s.fits", stack) && writeFile(d + "/c.fits", cat) &&
          writeFile(d + "/p.fits", plain));
  QCOMPARE(app::sniffFile(d + "/m.fits").kind, FileKind::HealpixMap);
  QCOMPARE(app::sniffFile(d + "/s.fits").kind, FileKind::Stack);
  QCOMPARE(app::sniffFile(d + "/c.fits").kind, FileKind::Catalogue);
  QCOMPARE(app::sniffFile(d + "/p.fits").kind, FileKind::Unknown);
  {  // HDF5 by dataset names
    almagest::io::Hdf5Writer r((d + "/r.h5").toStdString());
    r.create_group("/npcf");
    r.write("/npcf/estimator", std::vector<double>{0.5, 0.25});
    r.commit();
    almagest::io::Hdf5Writer c((d + "/c.h5").toStdString());
    for (const char* k : {"/x", "/y", "/z"}) c.write(k, std::vector<double>{1, 2, 3});
    c.commit();
    almagest::io::Hdf5Writer m((d + "/m.h5").toStdString());
    m.write("/map", std::vector<double>(12, 1.0));
    m.commit();
  }
  QCOMPARE(app::sniffFile(d + "/r.h5").kind, FileKind::NpcfResult);
  QCOMPARE(app::sniffFile(d + "/c.h5").kind, FileKind::Catalogue);
  QCOMPARE(app::sniffFile(d + "/m.h5").kind, FileKind::HealpixMap);
  QVERIFY(writeFile(d + "/xi.txt", "# Almagest 0.1.0: xi (GRAMSCI v2 column layout)\n# statistic: 2pcf\n1 2 3\n"));
  QVERIFY(writeFile(d + "/cat.txt", "# x y z w\n1 2 3 1\n4 5 6 1\n"));
  QVERIFY(writeFile(d + "/w.almagest.json", "{\"almagest_workspace\": 1, \"windows\": []}"));
  QVERIFY(writeFile(d + "/junk.bin", QByteArray("\x01\x02\x00\x04", 4)));
  QCOMPARE(app::sniffFile(d + "/xi.txt").kind, FileKind::NpcfResult);
  QCOMPARE(app::sniffFile(d + "/cat.txt").kind, FileKind::Catalogue);
  QCOMPARE(app::sniffFile(d + "/w.almagest.json").kind, FileKind::Workspace);
  QCOMPARE(app::sniffFile(d + "/junk.bin").kind, FileKind::Unknown);
  QCOMPARE(app::sniffFile(d + "/missing.fits").kind, FileKind::Unknown);
}

void TestAppShell::workspaceRestoresFilesSettingsAndSelections() {
  if (!glAvailable()) QSKIP("needs the xcb platform with OpenGL 3.2 under Xvfb");
  const QString ws = tmp_->filePath(QStringLiteral("ws.almagest.json"));
  const QString h5 = tmp_->filePath(QStringLiteral("xi.h5"));
  QJsonObject camera;
  std::size_t rows = 0;
  {
    MainWindow w;
    w.setInteractiveErrors(false);
    w.show();
    QSignalSpy loaded(&w, &MainWindow::cataloguesLoaded);
    QVERIFY(w.loadCatalogues(demoFile("data.txt"), demoFile("randoms.txt")));
    QVERIFY(loaded.wait(20000));
    sc::Values v = w.jobPanel()->values();
    v["stat"] = std::vector<std::string>{"2pcf"};
    v["rmin"] = 2.0;
    v["rmax"] = 24.0;
    v["nbins"] = std::int64_t(6);
    w.jobPanel()->setValues(v);
    QSignalSpy finished(&w, &MainWindow::jobFinished);
    QVERIFY(w.runJob());
    QVERIFY(finished.wait(30000));
    QVERIFY(w.saveResult(h5, MainWindow::SaveFormat::Hdf5));
    const QString txt = tmp_->filePath(QStringLiteral("xi.txt"));
    QVERIFY(w.saveResult(txt, MainWindow::SaveFormat::Text));
    // Wait for the file's result (a new one), not the job's still shown: the read finishing later
    // would set the chart's plot back to its default after the setMode below.
    const auto computed = w.result();
    auto* views = w.findChild<NpcfViews*>();
    QVERIFY(views);
    // A `--format gramsci` text result opens as a result: chart and configuration table.
    QVERIFY(w.openResult(txt));
    QTRY_VERIFY_WITH_TIMEOUT(w.result() && w.result() != computed && w.chart()->hasResult(), 10000);
    const auto fromText = w.result();
    QCOMPARE(fromText->result.rows(), computed->result.rows());
    QCOMPARE(views->explorer()->model()->rowCount(), int(computed->result.rows()));
    for (std::size_t i = 0; i < computed->result.rows(); ++i)  // e14.7: 8 significant digits
      QVERIFY(std::abs(fromText->result.estimator[i] - computed->result.estimator[i]) <= 1e-6 * std::abs(computed->result.estimator[i]) + 1e-12);
    // And the HDF5 file (exact).
    QVERIFY(w.openResult(h5));
    QTRY_VERIFY_WITH_TIMEOUT(w.result() && w.result() != fromText && w.chart()->hasResult(), 10000);
    QCOMPARE(w.result()->result.estimator, computed->result.estimator);
    QCOMPARE(views->explorer()->model()->rowCount(), int(computed->result.rows()));
    rows = w.result()->result.rows();
    // Selections: rows of the configuration table, the neighbour graph's point and colouring.
    views->explorer()->selectRows({1, 3});
    QCOMPARE(views->explorer()->selectedRows(), (QList<int>{1, 3}));
    QVERIFY(w.cataloguePanel()->showNeighbours(5));
    w.cataloguePanel()->colourBox()->setCurrentIndex(1);
    w.chart()->setMode(CorrelationChart::Mode::R2Xi);
    QJsonObject cam = app::cameraState(w.vtkView());
    QJsonArray pos = cam[QStringLiteral("position")].toArray();
    pos[0] = pos[0].toDouble() + 123.0;
    cam[QStringLiteral("position")] = pos;
    app::setCameraState(w.vtkView(), cam);
    camera = app::cameraState(w.vtkView());
    SkyMapWindow* sky = w.showSkyMap();
    QSignalSpy mapLoaded(sky, &SkyMapWindow::mapLoaded);
    QVERIFY(sky->openDemoMap(16));
    QVERIFY(mapLoaded.wait(20000));
    sky->lmaxSpin()->setValue(20);
    QVERIFY(w.saveWorkspace(ws));
  }
  MainWindow w;
  w.setInteractiveErrors(false);
  w.show();
  QSignalSpy loaded(&w, &MainWindow::cataloguesLoaded);
  QVERIFY(w.openWorkspace(ws));
  QVERIFY(loaded.wait(20000));
  QCOMPARE(QFileInfo(w.jobPanel()->dataPath()).canonicalFilePath(), QFileInfo(demoFile("data.txt")).canonicalFilePath());
  QCOMPARE(QFileInfo(w.jobPanel()->randomsPath()).canonicalFilePath(), QFileInfo(demoFile("randoms.txt")).canonicalFilePath());
  const sc::Values v = w.jobPanel()->values();
  QCOMPARE(asText(v.at("nbins")), QStringLiteral("6"));
  QCOMPARE(asText(v.at("rmax")), QStringLiteral("24"));
  QTRY_VERIFY_WITH_TIMEOUT(w.result() != nullptr, 10000);
  QCOMPARE(w.result()->result.rows(), rows);
  QCOMPARE(w.chart()->mode(), CorrelationChart::Mode::R2Xi);
  auto* views = w.findChild<NpcfViews*>();
  QTRY_COMPARE_WITH_TIMEOUT(views->explorer()->selectedRows(), (QList<int>{1, 3}), 5000);
  QCOMPARE(w.cataloguePanel()->point(), 5LL);
  QCOMPARE(w.cataloguePanel()->colourBox()->currentIndex(), 1);
  QCOMPARE(w.scene()->colourBy(), PointCloudScene::ColourBy::Weight);
  const QJsonObject cam = app::cameraState(w.vtkView());
  for (int i = 0; i < 3; ++i)
    QVERIFY(std::abs(cam[QStringLiteral("position")].toArray()[i].toDouble() - camera[QStringLiteral("position")].toArray()[i].toDouble()) < 1e-9);
  QCOMPARE(w.toolWindows().size(), 1);
  auto* sky = qobject_cast<SkyMapWindow*>(w.toolWindows().first());
  QVERIFY(sky);
  QTRY_COMPARE_WITH_TIMEOUT(sky->nside(), 16, 20000);
  QTRY_COMPARE_WITH_TIMEOUT(sky->lmaxSpin()->value(), 20, 5000);
}

void TestAppShell::exportsCarryTheProvenance() {
  const QString prov = QStringLiteral("{\"software\":\"Almagest\",\"inputs\":[\"a&b<c>.txt\"],\"seed\":42}");
  auto* series = new QLineSeries;
  for (int i = 0; i < 20; ++i) series->append(i, std::sin(i * 0.4));
  auto* chart = new QChart;
  chart->addSeries(series);
  chart->createDefaultAxes();
  chart->setTitle(QStringLiteral("test chart"));
  QChartView view(chart);
  view.resize(480, 320);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  const app::ExportMeta meta{QStringLiteral("test chart"), prov};
  QString error;
  const QString png = tmp_->filePath(QStringLiteral("c.png")), svg = tmp_->filePath(QStringLiteral("c.svg")),
                pdf = tmp_->filePath(QStringLiteral("c.pdf")), csv = tmp_->filePath(QStringLiteral("t.csv"));
  QVERIFY2(app::exportView(&view, png, meta, &error), qPrintable(error));
  QImageReader reader(png);
  QCOMPARE(reader.text(QStringLiteral("Provenance")), prov);
  QCOMPARE(reader.text(QStringLiteral("Title")), QStringLiteral("test chart"));
  const QImage img = reader.read();
  QCOMPARE(img.size(), view.size());
  QVERIFY2(distinctColours(img) > 3, "the exported chart is blank");

  QVERIFY2(app::exportView(&view, svg, meta, &error), qPrintable(error));
  QFile s(svg);
  QVERIFY(s.open(QIODevice::ReadOnly));
  const QString text = QString::fromUtf8(s.readAll());
  QVERIFY(text.contains(QStringLiteral("<metadata id=\"almagest-provenance\">") + prov.toHtmlEscaped() + QStringLiteral("</metadata>")));
  QVERIFY(text.contains(QStringLiteral("<desc>")));
  QVERIFY2(text.contains(QStringLiteral("<path")) || text.contains(QStringLiteral("<polyline")), "no vector content");

  QVERIFY2(app::exportView(&view, pdf, meta, &error), qPrintable(error));
  QFile p(pdf);
  QVERIFY(p.open(QIODevice::ReadOnly));
  const QByteArray pdfBytes = p.readAll();
  QVERIFY(pdfBytes.startsWith("%PDF"));
  QVERIFY(pdfBytes.size() > 1000);

  QStandardItemModel model(3, 2);
  model.setHorizontalHeaderLabels({QStringLiteral("r"), QStringLiteral("xi, estimated")});
  for (int r = 0; r < 3; ++r) {
    model.setItem(r, 0, new QStandardItem(QString::number(r + 1)));
    model.setItem(r, 1, new QStandardItem(QString::number(0.5 / (r + 1))));
  }
  QVERIFY2(app::exportTable(&model, csv, meta, &error), qPrintable(error));
  QFile c(csv);
  QVERIFY(c.open(QIODevice::ReadOnly));
  const QStringList lines = QString::fromUtf8(c.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
  QCOMPARE(lines.at(0), QStringLiteral("# test chart"));
  QCOMPARE(lines.at(2), QStringLiteral("# provenance: ") + prov);
  QCOMPARE(lines.at(3), QStringLiteral("r,\"xi, estimated\""));
  QCOMPARE(lines.at(4), QStringLiteral("1,0.5"));
  QCOMPARE(lines.size(), 7);

  // A bad extension is a message naming the file, and nothing is written.
  QVERIFY(!app::exportView(&view, tmp_->filePath(QStringLiteral("c.bmpx")), meta, &error));
  QVERIFY(error.contains(QStringLiteral("c.bmpx")));
  QVERIFY(!QFile::exists(tmp_->filePath(QStringLiteral("c.bmpx"))));

  if (glAvailable()) {  // the 3D view exports its rendered frame
    MainWindow w;
    w.setInteractiveErrors(false);
    w.show();
    QSignalSpy loaded(&w, &MainWindow::cataloguesLoaded);
    QVERIFY(w.loadCatalogues(demoFile("data.txt"), demoFile("randoms.txt")));
    QVERIFY(loaded.wait(20000));
    QTest::qWait(300);
    const QString v3 = tmp_->filePath(QStringLiteral("v.png"));
    QVERIFY2(app::exportView(w.vtkView(), v3, meta, &error), qPrintable(error));
    QImageReader r3(v3);
    QCOMPARE(r3.text(QStringLiteral("Provenance")), prov);
    QVERIFY2(distinctColours(r3.read()) > 3, "the exported 3D view is blank");
  }
}

void TestAppShell::exportedTitlesArePlainText() {
  // The markup of a wrapped chart title never reaches the files (a literal "<br>" did).
  QCOMPARE(app::plainTitle(QStringLiteral("Parity-odd four-point<br>correlation")), QStringLiteral("Parity-odd four-point correlation"));
  QCOMPARE(app::plainTitle(QStringLiteral("a<BR/>b <b>c</b> &amp; d &lt;e&gt;")), QStringLiteral("a b c & d <e>"));
  QCOMPARE(app::plainTitle(QStringLiteral("xi for 10 < r < 40")), QStringLiteral("xi for 10 < r < 40"));  // plain: unchanged
  QCOMPARE(app::plainTitle(QStringLiteral("two\nlines")), QStringLiteral("two lines"));

  CorrelationChart chart;
  chart.resize(220, 320);  // narrow: the title breaks into two rich-text lines
  chart.show();
  QVERIFY(QTest::qWaitForWindowExposed(&chart));
  QTRY_VERIFY_WITH_TIMEOUT(chart.chart()->title().contains(QStringLiteral("<br>")), 3000);
  QVERIFY(!chart.plotTitle().contains(QLatin1Char('<')));
  const QString shown = chart.chart()->title();
  const QString expected = app::plainTitle(shown);
  QVERIFY(!expected.contains(QLatin1Char('<')));
  const app::ExportMeta meta{shown, QStringLiteral("{\"software\":\"Almagest\"}")};  // as a caller might pass it
  QString error;
  const QString png = tmp_->filePath(QStringLiteral("wrapped.png")), svg = tmp_->filePath(QStringLiteral("wrapped.svg")),
                csv = tmp_->filePath(QStringLiteral("wrapped.csv"));
  QVERIFY2(app::exportView(chart.chartView(), png, meta, &error), qPrintable(error));
  QCOMPARE(QImageReader(png).text(QStringLiteral("Title")), expected);
  QVERIFY2(app::exportView(chart.chartView(), svg, meta, &error), qPrintable(error));
  QFile s(svg);
  QVERIFY(s.open(QIODevice::ReadOnly));
  const QString text = QString::fromUtf8(s.readAll());
  QVERIFY2(text.contains(QStringLiteral("<title>") + expected.toHtmlEscaped() + QStringLiteral("</title>")), qPrintable(text.left(600)));
  QVERIFY(!text.contains(QStringLiteral("&lt;br&gt;")));
  QStandardItemModel model(1, 1);
  model.setItem(0, 0, new QStandardItem(QStringLiteral("1")));
  QVERIFY2(app::exportTable(&model, csv, meta, &error), qPrintable(error));
  QFile c(csv);
  QVERIFY(c.open(QIODevice::ReadOnly));
  QCOMPARE(QString::fromUtf8(c.readLine()).trimmed(), QStringLiteral("# ") + expected);
}

void TestAppShell::malformedWorkspaceIsOneMessage() {
  const QString bad = tmp_->filePath(QStringLiteral("bad.almagest.json"));
  QJsonArray windows;
  QString error;
  QVERIFY(writeFile(bad, "{\"almagest_workspace\": 1, \"windows\": [{\"nokind\": 1}]}"));
  QVERIFY(!app::readWorkspace(bad, &windows, &error));
  QCOMPARE(error, bad + QStringLiteral(": windows[0].kind: each window must be an object with a kind"));
  QVERIFY(writeFile(bad, "{\"almagest_workspace\": 1, "));
  QVERIFY(!app::readWorkspace(bad, &windows, &error));
  QVERIFY(error.startsWith(bad + QStringLiteral(": not JSON")));
  QVERIFY(writeFile(bad, "{\"windows\": []}"));
  QVERIFY(!app::readWorkspace(bad, &windows, &error));
  QVERIFY(error.contains(QStringLiteral("almagest_workspace: missing")));
  // Values round-trip through JSON typed by the schema.
  sc::Values v{{"nbins", std::int64_t(12)}, {"rmax", 40.0}, {"stat", std::vector<std::string>{"2pcf", "3pcf"}},
               {"periodic", true}, {"data", std::string("d.txt")}};
  const sc::Values back = app::valuesFromJson(app::valuesToJson(v), almagest::npcf::npcf_schema());
  QVERIFY(back == v);
}

QTEST_MAIN(TestAppShell)
#include "test_app_shell.moc"
