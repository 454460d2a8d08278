// The sky-map window end to end: a seeded demo map (pixel count, finite, varied, reproducible),
// its Mollweide image (ellipse, colours, mouse readout), the angular power spectrum of a map
// synthesised from a known C_l (recovered within cosmic variance, no monopole or dipole), FITS
// maps written by the engine and read back through the window (RING and NESTED, several columns,
// UNSEEN pixels), bad files (a Failed job naming the file, no crash), cancelling a spectrum job
// on an nside 512 map (Cancelled within 2 s, no spectrum, no file), and the saved spectrum file.
//
// No OpenGL is involved: runs under Xvfb (ctest) or with QT_QPA_PLATFORM=offscreen.
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTemporaryDir>
#include <QTextStream>
#include <QtTest>

#include <cmath>
#include <numbers>
#include <random>
#include <set>

#include "almagest/core/gpu.hpp"
#include "almagest/npcf/synthetic.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/sht/config.hpp"
#include "almagest/sht/healpix_io.hpp"
#include "fits_tables.hpp"
#include "almagest/sht/plan.hpp"
#include "almagest/sht/spectra.hpp"
#include "jobs/JobRunner.hpp"
#include "panels/LogPanel.hpp"
#include "sky/SkyMapView.hpp"
#include "sky/SkyMapWindow.hpp"
#include "sky/SkyProjection.hpp"
#include "sky/SpectrumChart.hpp"
#include "panels/SchemaForm.hpp"
#include "almagest/sht/job.hpp"

using almagest::ui::JobRunner;
using almagest::ui::SkyMapWindow;
using State = almagest::ui::JobRunner::State;
namespace sky = almagest::ui::sky;
namespace sht = almagest::sht;
namespace schema = almagest::schema;

namespace {

QString testTmpRoot() {
  const QString env = qEnvironmentVariable("ALMAGEST_TEST_TMP");
  return env.isEmpty() ? QDir::tempPath() : env;
}

/// Waits for the next jobFinished of `w` (spy created before the job started).
State waitJob(QSignalSpy& finished, int timeoutMs = 120000) {
  if (finished.isEmpty()) finished.wait(timeoutMs);
  if (finished.isEmpty()) return State::Idle;
  return finished.takeFirst().at(0).value<State>();
}

QString jobError(const SkyMapWindow& w) {
  return w.currentJob() ? w.currentJob()->errorMessage() : QStringLiteral("no job");
}

/// Data rows of a spectrum file: (l, C_l, D_l) per non-comment line.
QList<QList<double>> readRows(const QString& path) {
  QList<QList<double>> rows;
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly | QIODevice::Text)) return rows;
  QTextStream in(&f);
  while (!in.atEnd()) {
    const QString line = in.readLine().trimmed();
    if (line.isEmpty() || line.startsWith(QLatin1Char('#'))) continue;
    QList<double> row;
    for (const QString& t : line.split(QLatin1Char(' '), Qt::SkipEmptyParts)) row << t.toDouble();
    rows << row;
  }
  return rows;
}

double luminance(QRgb c) {
  auto lin = [](int v) {
    const double s = v / 255.0;
    return s <= 0.04045 ? s / 12.92 : std::pow((s + 0.055) / 1.055, 2.4);
  };
  return 0.2126 * lin(qRed(c)) + 0.7152 * lin(qGreen(c)) + 0.0722 * lin(qBlue(c));
}

}  // namespace

class TestUiSkyMap : public QObject {
  Q_OBJECT

private slots:
  void initTestCase();
  void demoMapIsSeededAndVaried();
  void mollweideImageAndReadout();
  void projectionAndColourMap();
  void spectrumRecoversInputCl();
  void fitsMapsRoundTrip();
  void badFilesFailNamingTheFile();
  void cancelSpectrumOnLargeMap();
  void savedSpectrumHasLmaxPlusOneRows();
  void backendChoiceFollowsGpuStatus();
  void windowShowsMapAndSpectrum();
  void chainedJobsAndClosingWhileBusy();
  void spectrumWithHealpyWeights();
  void shtJobsThroughTheJobLayer();

private:
  QString tmpDir_;
  std::unique_ptr<QTemporaryDir> tmp_;
};

void TestUiSkyMap::initTestCase() {
  QVERIFY(QDir().mkpath(testTmpRoot()));
  tmp_ = std::make_unique<QTemporaryDir>(testTmpRoot() + QStringLiteral("/ui_skymap_XXXXXX"));
  tmp_->setAutoRemove(qEnvironmentVariableIsEmpty("ALMAGEST_KEEP_TEST_FILES"));
  QVERIFY2(tmp_->isValid(), qPrintable(tmp_->errorString()));
  tmpDir_ = tmp_->path();
}

// (a) npix = 12 nside^2, finite, not all equal; same seed -> same map, other seed -> other map.
void TestUiSkyMap::demoMapIsSeededAndVaried() {
  SkyMapWindow w;
  w.setInteractiveErrors(false);
  QSignalSpy finished(&w, &SkyMapWindow::jobFinished);
  QSignalSpy loaded(&w, &SkyMapWindow::mapLoaded);
  QSignalSpy progress(&w, &SkyMapWindow::jobProgress);
  QVERIFY(w.openDemoMap(64, 12345));
  QVERIFY(w.isBusy() || !finished.isEmpty());
  const State s = waitJob(finished);
  QVERIFY2(s == State::Completed, qPrintable(jobError(w)));
  QCOMPARE(loaded.count(), 1);
  QCOMPARE(w.nside(), 64);
  QCOMPARE(w.npix(), std::int64_t(12 * 64 * 64));
  const std::vector<double> a = w.values();
  QCOMPARE(static_cast<std::int64_t>(a.size()), w.npix());
  double lo = a[0], hi = a[0], sum2 = 0.0;
  for (double v : a) {
    QVERIFY(std::isfinite(v));
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum2 += v * v;
  }
  QVERIFY2(hi > lo, "all values equal");
  // D_l = 1 for l = 2..191: the variance sum (2l+1) C_l / 4pi = sum 1/(l(l+1)) (2l+1)/2 is ~5.
  const double var = sum2 / static_cast<double>(a.size());
  QVERIFY2(var > 2.0 && var < 10.0, qPrintable(QString::number(var)));
  QList<int> p;
  for (const auto& args : progress) p << args.at(0).toInt();
  QVERIFY(!p.isEmpty());
  for (int i = 1; i < p.size(); ++i) QVERIFY2(p[i] >= p[i - 1], "progress went down");
  QCOMPARE(p.last(), 100);

  QVERIFY(w.openDemoMap(64, 12345));
  QCOMPARE(waitJob(finished), State::Completed);
  QVERIFY(w.values() == a);
  QVERIFY(w.openDemoMap(64, 12346));
  QCOMPARE(waitJob(finished), State::Completed);
  QVERIFY(w.values() != a);
}

// (b) the Mollweide image: background corners, coloured centre with the right colour, many
// colours; the mouse readout names the pixel under the cursor.
void TestUiSkyMap::mollweideImageAndReadout() {
  SkyMapWindow w;
  w.setInteractiveErrors(false);
  w.resize(1100, 900);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QSignalSpy finished(&w, &SkyMapWindow::jobFinished);
  QVERIFY(w.openDemoMap(128, 777));
  QVERIFY2(waitJob(finished) == State::Completed, qPrintable(jobError(w)));
  const QImage img = w.image();
  QCOMPARE(img.size(), QSize(sky::kImageWidth, sky::kImageHeight));
  for (const QPoint c : {QPoint(0, 0), QPoint(img.width() - 1, 0), QPoint(0, img.height() - 1),
                         QPoint(img.width() - 1, img.height() - 1)})
    QCOMPARE(img.pixel(c), sky::kBackground);
  const QPoint centre(img.width() / 2, img.height() / 2);
  const QRgb cc = img.pixel(centre);
  QCOMPARE(qAlpha(cc), 255);
  QVERIFY(cc != sky::kUnseenColour);
  // The centre pixel shows the value of the HEALPix pixel under its centre.
  double theta = 0, phi = 0;
  QVERIFY(sky::imageToSky((centre.x() + 0.5) / img.width(), (centre.y() + 0.5) / img.height(), theta, phi));
  QVERIFY(std::abs(theta - std::numbers::pi / 2) < 0.01);
  const std::int64_t pix = sky::ang2pixRing(128, theta, phi);
  const sky::ValueRange r = sky::valueRange(w.values());
  QCOMPARE(r.seen, w.npix());
  QCOMPARE(cc, sky::colourAt((w.values()[static_cast<std::size_t>(pix)] - r.min) / (r.max - r.min)));
  // Inside the ellipse everything is coloured; outside everything is background.
  int inside = 0, outside = 0;
  std::set<QRgb> colours;
  for (int y = 0; y < img.height(); ++y)
    for (int x = 0; x < img.width(); ++x) {
      const double u = 2.0 * (x + 0.5) / img.width() - 1.0, v = 2.0 * (y + 0.5) / img.height() - 1.0;
      const QRgb c = img.pixel(x, y);
      colours.insert(c);
      if (u * u + v * v < 0.98) inside += qAlpha(c) == 255 ? 1 : 0;
      else if (u * u + v * v > 1.02) outside += c == sky::kBackground ? 1 : 0;
      if (u * u + v * v < 0.98) QVERIFY(qAlpha(c) == 255);
      if (u * u + v * v > 1.02) QVERIFY(c == sky::kBackground);
    }
  QVERIFY(inside > 500000 && outside > 100000);
  QVERIFY2(colours.size() > 100, qPrintable(QString::number(colours.size())));
  QCOMPARE(w.mapView()->image(), img);

  // The readout at the centre of the drawn image.
  const QRectF rect = w.mapView()->imageRect();
  QVERIFY(!rect.isEmpty());
  almagest::ui::SkyMapView::Probe probe;
  QVERIFY(w.mapView()->probe(rect.center(), &probe));
  QVERIFY(probe.pixel >= 0 && probe.pixel < w.npix());
  QCOMPARE(probe.value, w.values()[static_cast<std::size_t>(probe.pixel)]);
  QVERIFY(!w.mapView()->probe(rect.topLeft() + QPointF(2, 2), nullptr));
  auto* readout = w.findChild<QLabel*>(QStringLiteral("readout"));
  QVERIFY(readout);
  QTest::mouseMove(w.mapView(), rect.center().toPoint());
  QTRY_VERIFY_WITH_TIMEOUT(readout->text().contains(QStringLiteral("pixel")), 2000);
  QVERIFY(readout->text().contains(QString::number(probe.pixel)) ||
          readout->text().contains(QStringLiteral("nside 128")));
}

// Projection identities and the colour map.
void TestUiSkyMap::projectionAndColourMap() {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> uz(-0.999, 0.999), uphi(0.0, 2 * std::numbers::pi);
  for (int i = 0; i < 2000; ++i) {
    const double theta = std::acos(uz(rng)), phi = uphi(rng);
    double x = 0, y = 0, t2 = 0, p2 = 0;
    sky::mollweideForward(theta, phi, x, y);
    QVERIFY(sky::mollweideInverse(x, y, t2, p2));
    QVERIFY2(std::abs(t2 - theta) < 1e-9, qPrintable(QString::number(t2 - theta)));
    const double dphi = std::remainder(p2 - phi, 2 * std::numbers::pi);
    QVERIFY2(std::abs(dphi) * std::sin(theta) < 1e-9, qPrintable(QString::number(dphi)));
  }
  // Longitude grows to the left; north is up.
  double t = 0, p = 0;
  QVERIFY(sky::imageToSky(0.25, 0.5, t, p));
  QVERIFY(std::abs(p - std::numbers::pi / 2) < 0.01);
  QVERIFY(sky::imageToSky(0.5, 0.1, t, p) && t < std::numbers::pi / 2);
  QVERIFY(!sky::imageToSky(0.01, 0.01, t, p));
  // pix2ang / ang2pix are inverse on pixel centres.
  for (std::int64_t pix : {0LL, 1LL, 100LL, 12LL * 16 * 16 - 1}) {
    sky::pix2angRing(16, pix, t, p);
    QCOMPARE(sky::ang2pixRing(16, t, p), pix);
  }
  // Colour map: 256 entries, starts dark purple, ends yellow, luminance strictly increasing.
  const auto& lut = sky::viridis();
  QCOMPARE(lut.front(), qRgb(68, 1, 84));
  QCOMPARE(lut.back(), qRgb(253, 231, 37));
  // 8-bit rounding of each channel may merge a neighbouring pair or dip the luminance by less
  // than one quantisation step (< 1e-3); over two steps it always grows.
  QVERIFY(std::set<QRgb>(lut.begin(), lut.end()).size() >= 250);
  for (std::size_t i = 1; i < lut.size(); ++i)
    QVERIFY2(luminance(lut[i]) > luminance(lut[i - 1]) - 1e-3, qPrintable(QString::number(i)));
  for (std::size_t i = 2; i < lut.size(); ++i)
    QVERIFY2(luminance(lut[i]) > luminance(lut[i - 2]), qPrintable(QString::number(i)));
  QCOMPARE(sky::colourAt(-1.0), lut.front());
  QCOMPARE(sky::colourAt(2.0), lut.back());
  QVERIFY(sky::isUnseen(sht::kUnseen) && sky::isUnseen(std::nan("")) && !sky::isUnseen(0.0));
}

// (c) the spectrum of a map synthesised from C_l = 1/(l+1)^2 (l >= 2) agrees with it.
void TestUiSkyMap::spectrumRecoversInputCl() {
  SkyMapWindow w;
  w.setInteractiveErrors(false);
  w.setBackendChoice(sky::BackendChoice::Cpu);
  QSignalSpy finished(&w, &SkyMapWindow::jobFinished);
  QSignalSpy ready(&w, &SkyMapWindow::spectrumReady);
  const int nside = 32, lmax = 64;
  std::vector<double> cl(lmax + 1, 0.0);
  for (int l = 2; l <= lmax; ++l) cl[l] = 1.0 / ((l + 1.0) * (l + 1.0));
  QVERIFY(w.openSynthesisedMap(nside, cl, 20240601));
  QVERIFY2(waitJob(finished) == State::Completed, qPrintable(jobError(w)));
  QCOMPARE(w.lmaxSpin()->value(), 3 * nside - 1);
  QSignalSpy progress(&w, &SkyMapWindow::jobProgress);
  QVERIFY(w.computeSpectrum(lmax));
  QVERIFY2(waitJob(finished) == State::Completed, qPrintable(jobError(w)));
  QCOMPARE(ready.count(), 1);
  const std::vector<double> m = w.spectrum();
  QCOMPARE(static_cast<int>(m.size()), lmax + 1);
  double ratio = 0.0, total = 0.0;
  for (int l = 10; l <= 60; ++l) ratio += m[l] / cl[l];
  ratio /= 51.0;
  for (double c : m) total += c;
  qInfo("mean C_l(measured) / C_l(input), l = 10..60: %.4f; C_0 = %.3g, C_1 = %.3g, sum C_l = %.4g",
        ratio, m[0], m[1], total);
  QVERIFY2(ratio > 0.85 && ratio < 1.15, qPrintable(QString::number(ratio)));
  QVERIFY2(std::abs(m[0]) < 1e-6 * total, qPrintable(QString::number(m[0])));
  QVERIFY2(std::abs(m[1]) < 1e-6 * total, qPrintable(QString::number(m[1])));
  for (double c : m) QVERIFY(std::isfinite(c) && c >= 0.0);
  // Progress over the 7 transforms: monotone, ends at 100 (updates are throttled to ~10 Hz, so a
  // job of a few milliseconds may report only its end).
  QList<int> p;
  for (const auto& args : progress) p << args.at(0).toInt();
  QVERIFY(!p.isEmpty());
  for (int i = 1; i < p.size(); ++i) QVERIFY(p[i] >= p[i - 1]);
  QCOMPARE(p.last(), 100);
  QCOMPARE(w.spectrumResult()->backend, std::string("cpu"));
  // The chart: D_l for l = 0..lmax (linear axes), l >= 2 with log axes; input drawn too.
  QCOMPARE(w.spectrumChart()->pointCount(), lmax + 1);
  QCOMPARE(w.spectrumChart()->referencePointCount(), lmax + 1);
  w.setLogAxes(true);
  QVERIFY(w.spectrumChart()->logAxes());
  // Log axes: l = 2..lmax; D_1 (~1e-15, zero to transform precision) is left out.
  QCOMPARE(w.spectrumChart()->pointCount(), lmax - 1);
  QCOMPARE(w.spectrumChart()->referencePointCount(), lmax - 1);
  // lmax beyond 4 nside is refused without a job.
  QVERIFY(!w.computeSpectrum(4 * nside + 1));
}

// (d) FITS maps written by the engine come back identical (RING and NESTED, any column).
void TestUiSkyMap::fitsMapsRoundTrip() {
  const int nside = 16;
  const std::int64_t npix = sht::npix_of(nside);
  almagest::npcf::synthetic::Rng rng(99);  // portable seeded normals
  sht::HealpixMap ring;
  ring.nside = nside;
  ring.names = {"I_STOKES", "Q_STOKES", "U_STOKES"};
  ring.units = {"uK", "uK", "uK"};
  ring.coordsys.assign(1, 'G');  // (= "G" trips GCC 12's false -Wrestrict)
  for (int c = 0; c < 3; ++c) {
    std::vector<double> v(static_cast<std::size_t>(npix));
    for (auto& x : v) x = rng.normal() * (c + 1);
    ring.columns.push_back(std::move(v));
  }
  for (std::int64_t p = 0; p < npix / 4; ++p) ring.columns[1][static_cast<std::size_t>(p)] = sht::kUnseen;
  const QString ringPath = tmpDir_ + QStringLiteral("/map_ring.fits");
  const QString nestPath = tmpDir_ + QStringLiteral("/map_nest.fits");
  sht::write_healpix_map(ringPath.toStdString(), ring);
  sht::HealpixMap nest = ring;
  nest.ordering = sht::Ordering::Nested;
  for (auto& col : nest.columns) col = sht::ring_to_nest(col, nside);
  sht::write_healpix_map(nestPath.toStdString(), nest);

  SkyMapWindow w;
  w.setInteractiveErrors(false);
  QSignalSpy finished(&w, &SkyMapWindow::jobFinished);
  for (const QString& path : {ringPath, nestPath}) {
    QVERIFY(w.openMap(path, 1));
    QVERIFY2(waitJob(finished) == State::Completed, qPrintable(jobError(w)));
    QCOMPARE(w.nside(), nside);
    QCOMPARE(w.columnCount(), 3);
    QCOMPARE(w.column(), 1);
    QCOMPARE(w.columnCombo()->count(), 3);
    QCOMPARE(w.columnCombo()->currentIndex(), 1);
    QVERIFY(w.columnCombo()->itemText(0).contains(QStringLiteral("I_STOKES")));
    QVERIFY2(w.values() == ring.columns[1], qPrintable(path));
    QCOMPARE(w.map()->wasNested, path == nestPath);
    QCOMPARE(w.map()->coordsys, std::string("G"));
    // A quarter of column 1 is UNSEEN: grey in the image.
    const QImage img = w.image();
    int grey = 0;
    for (int y = 0; y < img.height(); ++y)
      for (int x = 0; x < img.width(); ++x) grey += img.pixel(x, y) == sky::kUnseenColour ? 1 : 0;
    QVERIFY2(grey > 50000, qPrintable(QString::number(grey)));
    QVERIFY(w.setColumn(2));
    QVERIFY(w.values() == ring.columns[2]);
    QCOMPARE(w.columnCombo()->currentIndex(), 2);
    QVERIFY(!w.setColumn(3));
  }
  // A partial-sky (explicit index) map: the observed pixels keep their values, the rest is UNSEEN.
  sht::HealpixMap part;
  part.nside = nside;
  part.names = {"TEMPERATURE"};
  std::vector<double> partValues;
  for (std::int64_t p = 0; p < npix; p += 3) {
    part.pixels.push_back(p);
    partValues.push_back(ring.columns[0][static_cast<std::size_t>(p)]);
  }
  part.columns = {partValues};
  const QString partPath = tmpDir_ + QStringLiteral("/map_partial.fits");
  sht::write_healpix_map(partPath.toStdString(), part);
  QVERIFY(w.openMap(partPath));
  QVERIFY2(waitJob(finished) == State::Completed, qPrintable(jobError(w)));
  QVERIFY(w.map()->wasPartial);
  QCOMPARE(w.columnCount(), 1);
  QVERIFY(!w.columnCombo()->isEnabled());
  for (std::int64_t p = 0; p < npix; ++p) {
    const double v = w.values()[static_cast<std::size_t>(p)];
    if (p % 3 == 0) QCOMPARE(v, ring.columns[0][static_cast<std::size_t>(p)]);
    else QCOMPARE(v, sht::kUnseen);
  }
  // A column that does not exist: a Failed job naming the column.
  QVERIFY(w.openMap(ringPath, 2));
  QCOMPARE(waitJob(finished), State::Completed);
  QVERIFY(w.openMap(ringPath, 5));
  QCOMPARE(waitJob(finished), State::Failed);
  QVERIFY(jobError(w).contains(QStringLiteral("column")));
  QVERIFY(w.values() == ring.columns[2]);  // the shown map is kept
  // The spectrum of a map with UNSEEN pixels is computed with them set to 0 and a warning.
  QVERIFY(w.openMap(ringPath, 1));
  QCOMPARE(waitJob(finished), State::Completed);
  QVERIFY(w.computeSpectrum(2 * nside));
  QVERIFY2(waitJob(finished) == State::Completed, qPrintable(jobError(w)));
  QCOMPARE(w.spectrumResult()->unseen, npix / 4);
  QTRY_VERIFY(w.logPanel()->text().contains(QStringLiteral("blind pixels")));
}

// (e) not FITS, truncated FITS, missing file: a Failed job whose message names the file.
void TestUiSkyMap::badFilesFailNamingTheFile() {
  const QString notFits = tmpDir_ + QStringLiteral("/not_a_map.fits");
  {
    QFile f(notFits);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("SIMPLE? no. This is a plain text file, not FITS.\n");
  }
  // A real map, cut short in the middle of its data.
  sht::HealpixMap m;
  m.nside = 32;
  m.columns.push_back(std::vector<double>(static_cast<std::size_t>(sht::npix_of(32)), 1.5));
  const QString full = tmpDir_ + QStringLiteral("/full_map.fits");
  sht::write_healpix_map(full.toStdString(), m);
  const QString truncated = tmpDir_ + QStringLiteral("/truncated_map.fits");
  {
    QFile in(full);
    QVERIFY(in.open(QIODevice::ReadOnly));
    const QByteArray bytes = in.readAll();
    QVERIFY(bytes.size() > 20000);
    QFile out(truncated);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(bytes.left(bytes.size() / 2));
  }
  // A FITS table without NSIDE: write one with the engine, then blank the keyword.
  const QString noNside = tmpDir_ + QStringLiteral("/no_nside.fits");
  {
    QFile in(full);
    QVERIFY(in.open(QIODevice::ReadOnly));
    QByteArray bytes = in.readAll();
    const qsizetype at = bytes.indexOf("NSIDE   =");
    QVERIFY(at > 0);
    bytes.replace(at, 8, "XSIDE   ");
    QFile out(noNside);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(bytes);
  }
  const QString missing = tmpDir_ + QStringLiteral("/does_not_exist.fits");

  SkyMapWindow w;
  w.setInteractiveErrors(false);
  QSignalSpy finished(&w, &SkyMapWindow::jobFinished);
  QSignalSpy loaded(&w, &SkyMapWindow::mapLoaded);
  for (const QString& path : {notFits, truncated, noNside, missing}) {
    QVERIFY(w.openMap(path));
    const State s = waitJob(finished);
    QVERIFY2(s == State::Failed, qPrintable(path + QStringLiteral(": ") + JobRunner::stateName(s)));
    const QString msg = jobError(w);
    qInfo("%s", qPrintable(msg));
    QVERIFY2(msg.contains(QFileInfo(path).fileName()), qPrintable(msg));
    QVERIFY(w.logPanel()->text().contains(QFileInfo(path).fileName()));
    QCOMPARE(w.nside(), 0);
    QVERIFY(w.image().isNull());
  }
  QVERIFY(jobError(w).isEmpty() == false);
  QCOMPARE(loaded.count(), 0);
  // The window still works after the failures.
  QVERIFY(w.openMap(full));
  QCOMPARE(waitJob(finished), State::Completed);
  QCOMPARE(w.nside(), 32);
}

// (f) cancelling the spectrum of an nside 512 map: Cancelled within 2 s, nothing left behind.
void TestUiSkyMap::cancelSpectrumOnLargeMap() {
  SkyMapWindow w;
  w.setInteractiveErrors(false);
  w.setBackendChoice(sky::BackendChoice::Cpu);
  QSignalSpy finished(&w, &SkyMapWindow::jobFinished);
  QVERIFY(w.openDemoMap(512, 5));
  QVERIFY2(waitJob(finished, 300000) == State::Completed, qPrintable(jobError(w)));
  QCOMPARE(w.npix(), std::int64_t(12) * 512 * 512);

  QTemporaryDir dir(tmpDir_ + QStringLiteral("/cancel_XXXXXX"));
  QVERIFY(dir.isValid());
  const QString out = dir.path() + QStringLiteral("/spectrum_512.txt");
  QSignalSpy progress(&w, &SkyMapWindow::jobProgress);
  QVERIFY(w.computeSpectrum(-1, out));  // lmax 1535
  JobRunner* job = w.currentJob();
  QVERIFY(job);
  QTRY_VERIFY_WITH_TIMEOUT(job->state() == State::Running, 10000);
  QTest::qWait(300);
  QVERIFY2(!job->isFinished(), "the nside 512 spectrum finished before it could be cancelled");
  QElapsedTimer t;
  t.start();
  w.cancelJob();
  const State s = waitJob(finished, 10000);
  const qint64 ms = t.elapsed();
  qInfo("cancel took %lld ms", static_cast<long long>(ms));
  QCOMPARE(s, State::Cancelled);
  QVERIFY2(ms < 2000, qPrintable(QString::number(ms)));
  QVERIFY(w.spectrum().empty());
  QVERIFY(!w.spectrumResult());
  QVERIFY(!QFile::exists(out));
  QVERIFY2(QDir(dir.path()).entryList(QDir::NoDotAndDotDot | QDir::AllEntries).isEmpty(),
           "a temporary file was left behind");
  QVERIFY(w.currentJob()->result().has_value() == false);
  QVERIFY(!w.isBusy());
}

// (g) the saved spectrum: lmax + 1 rows of (l, C_l, D_l), through saveSpectrum and the job.
void TestUiSkyMap::savedSpectrumHasLmaxPlusOneRows() {
  SkyMapWindow w;
  w.setInteractiveErrors(false);
  QSignalSpy finished(&w, &SkyMapWindow::jobFinished);
  QVERIFY(!w.saveSpectrum(tmpDir_ + QStringLiteral("/none.txt")));  // no spectrum yet
  QVERIFY(!QFile::exists(tmpDir_ + QStringLiteral("/none.txt")));
  QVERIFY(w.openDemoMap(16, 3));
  QCOMPARE(waitJob(finished), State::Completed);
  const int lmax = 40;
  const QString viaJob = tmpDir_ + QStringLiteral("/spectrum_job.txt");
  QVERIFY(w.computeSpectrum(lmax, viaJob));
  QVERIFY2(waitJob(finished) == State::Completed, qPrintable(jobError(w)));
  const QString viaSave = tmpDir_ + QStringLiteral("/spectrum_save.txt");
  QVERIFY(w.saveSpectrum(viaSave));
  const std::vector<double> cl = w.spectrum();
  QCOMPARE(static_cast<int>(cl.size()), lmax + 1);
  for (const QString& path : {viaJob, viaSave}) {
    const auto rows = readRows(path);
    QCOMPARE(rows.size(), lmax + 1);
    for (int l = 0; l <= lmax; ++l) {
      QCOMPARE(rows[l].size(), 3);
      QCOMPARE(rows[l][0], double(l));
      QCOMPARE(rows[l][1], cl[static_cast<std::size_t>(l)]);  // %.17g round-trips exactly
      const double dl = l * (l + 1.0) * cl[static_cast<std::size_t>(l)] / (2 * std::numbers::pi);
      QVERIFY(std::abs(rows[l][2] - dl) <= 1e-14 * std::abs(dl) + 1e-300);
    }
  }
  // A save into a missing folder fails with a message and leaves nothing.
  const QString bad = tmpDir_ + QStringLiteral("/no/such/dir/spectrum.txt");
  QVERIFY(!w.saveSpectrum(bad));
  QVERIFY(!QFile::exists(bad));
  // The image saves too.
  const QString png = tmpDir_ + QStringLiteral("/skymap.png");
  QVERIFY(w.saveImage(png));
  QImage back(png);
  // The figure: the map image plus margins and the colour bar below it.
  QVERIFY(back.width() > w.image().width() && back.height() > w.image().height());
}

void TestUiSkyMap::backendChoiceFollowsGpuStatus() {
  SkyMapWindow w;
  QComboBox* box = w.backendCombo();
  QCOMPARE(box->count(), 3);
  auto* model = qobject_cast<QStandardItemModel*>(box->model());
  QVERIFY(model);
  const auto& gpu = almagest::gpu_status();
  QCOMPARE(model->item(1)->isEnabled(), gpu.available);
  if (!gpu.available) {
    QVERIFY(box->toolTip().contains(QString::fromStdString(gpu.reason)));
    QCOMPARE(sky::resolveBackend(sky::BackendChoice::Auto), sht::Backend::Cpu);
  } else {
    QCOMPARE(sky::resolveBackend(sky::BackendChoice::Auto), sht::Backend::Cuda);
  }
}

// The whole window on screen: map view and chart drawn (not blank), progress at 100, Cancel
// disabled when idle. The picture is kept in the test's temporary folder for inspection.
void TestUiSkyMap::windowShowsMapAndSpectrum() {
  SkyMapWindow w;
  w.setInteractiveErrors(false);
  w.resize(1100, 900);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QVERIFY(!w.cancelButton()->isEnabled());
  QSignalSpy finished(&w, &SkyMapWindow::jobFinished);
  QVERIFY(w.openDemoMap(64, 42));
  QVERIFY(w.cancelButton()->isEnabled() || !finished.isEmpty());
  QCOMPARE(waitJob(finished), State::Completed);
  QVERIFY(w.computeSpectrum());
  QVERIFY2(waitJob(finished) == State::Completed, qPrintable(jobError(w)));
  QCOMPARE(static_cast<int>(w.spectrum().size()), 3 * 64);
  QCOMPARE(w.progressBar()->value(), 100);
  QVERIFY(!w.cancelButton()->isEnabled());
  QTest::qWait(50);
  const QImage shot = w.grab().toImage();
  const QString png = tmpDir_ + QStringLiteral("/skymap_window.png");
  QVERIFY(shot.save(png));
  qInfo("window picture: %s", qPrintable(png));
  auto colours = [](const QImage& im) {
    std::set<QRgb> c;
    const QImage rgb = im.convertToFormat(QImage::Format_RGB32);
    for (int y = 0; y < rgb.height(); ++y)
      for (int x = 0; x < rgb.width(); ++x) c.insert(rgb.pixel(x, y));
    return c.size();
  };
  const std::size_t mapColours = colours(w.mapView()->grab().toImage());
  const std::size_t chartColours = colours(w.spectrumChart()->grab().toImage());
  qInfo("distinct colours: map view %zu, chart %zu", mapColours, chartColours);
  QVERIFY(mapColours > 100);
  QVERIFY(chartColours > 10);
  w.setLogAxes(true);
  QTest::qWait(50);
  QVERIFY(w.grab().toImage().save(tmpDir_ + QStringLiteral("/skymap_window_log.png")));
  QVERIFY(colours(w.spectrumChart()->grab().toImage()) > 10);
}

// Slots may start the next job from mapLoaded; destroying the window while a job runs cancels
// it and returns promptly.
void TestUiSkyMap::chainedJobsAndClosingWhileBusy() {
  auto w = std::make_unique<SkyMapWindow>();
  w->setInteractiveErrors(false);
  QSignalSpy finished(w.get(), &SkyMapWindow::jobFinished);
  QSignalSpy ready(w.get(), &SkyMapWindow::spectrumReady);
  SkyMapWindow* raw = w.get();
  const auto chain = connect(raw, &SkyMapWindow::mapLoaded, raw, [raw] { QVERIFY(raw->computeSpectrum(20)); });
  QVERIFY(w->openDemoMap(8, 1));
  QCOMPARE(waitJob(finished), State::Completed);  // the map
  QCOMPARE(waitJob(finished), State::Completed);  // the spectrum started from mapLoaded
  QCOMPARE(ready.count(), 1);
  QCOMPARE(static_cast<int>(w->spectrum().size()), 21);
  disconnect(chain);

  QVERIFY(w->openDemoMap(256, 2));
  QCOMPARE(waitJob(finished), State::Completed);
  QVERIFY(w->computeSpectrum());
  QTRY_VERIFY_WITH_TIMEOUT(w->currentJob()->state() == State::Running, 10000);
  QElapsedTimer t;
  t.start();
  w.reset();
  qInfo("destroying the window with a running spectrum took %lld ms", static_cast<long long>(t.elapsed()));
  QVERIFY(t.elapsed() < 2000);
}

// healpy's quadrature weights in the window: a ring weight file (3 iterations) and a full pixel
// weight file (no iterations) give the engine's spectrum with those weights; a weight file of
// another nside fails the job naming the file; back to uniform weights.
void TestUiSkyMap::spectrumWithHealpyWeights() {
  const int nside = 16, lmax = 40;
  std::vector<double> ring(2 * nside), pixel(((3 * nside + 1) * (nside + 1)) / 4);
  for (std::size_t i = 0; i < ring.size(); ++i) ring[i] = 0.04 * std::cos(0.4 * static_cast<double>(i));
  for (std::size_t i = 0; i < pixel.size(); ++i) pixel[i] = 0.03 * std::sin(0.2 * static_cast<double>(i));
  const QString ringFile = tmpDir_ + QStringLiteral("/weight_ring_n00016.fits");
  const QString pixelFile = tmpDir_ + QStringLiteral("/healpix_full_weights_nside_0016.fits");
  const QString otherFile = tmpDir_ + QStringLiteral("/weight_ring_n00008.fits");
  using almagest::testing::write_fits_table;
  QCOMPARE(write_fits_table(ringFile.toStdString(), {"TEMPERATURE WEIGHTS"}, ring, 'D', 1, nside), 0);
  QCOMPARE(write_fits_table(pixelFile.toStdString(), {"COMPRESSED PIXEL WEIGHTS"}, pixel, 'D', 1, nside), 0);
  QCOMPARE(write_fits_table(otherFile.toStdString(), {"TEMPERATURE WEIGHTS"}, std::vector<double>(16, 0.0), 'D', 1, 8), 0);

  SkyMapWindow w;
  w.setInteractiveErrors(false);
  w.setBackendChoice(sky::BackendChoice::Cpu);
  QSignalSpy finished(&w, &SkyMapWindow::jobFinished);
  std::vector<double> cl(lmax + 1, 0.0);
  for (int l = 2; l <= lmax; ++l) cl[l] = 1.0 / (l * (l + 1.0));
  QVERIFY(w.openSynthesisedMap(nside, cl, 777));
  QCOMPARE(waitJob(finished), State::Completed);
  QCOMPARE(w.weightsCombo()->currentText(), QStringLiteral("Uniform"));

  sht::ShtConfig c;
  c.nside = nside;
  c.lmax = lmax;
  const sht::ShtPlan plan = sht::make_plan(c);
  const std::vector<double> values = w.values();
  auto check = [&](const std::vector<sht::Complex>& alm, int iterations, const char* what) {
    const auto ref = sht::alm2cl(alm, alm, lmax);
    const auto got = w.spectrum();
    QCOMPARE(got.size(), ref.size());
    double worst = 0.0, big = 0.0;
    for (std::size_t l = 0; l < ref.size(); ++l) {
      worst = std::max(worst, std::abs(got[l] - ref[l]));
      big = std::max(big, std::abs(ref[l]));
    }
    QVERIFY2(worst <= 1e-12 * big, qPrintable(QString("%1: %2").arg(what).arg(worst / big)));
    QCOMPARE(w.spectrumResult()->iterations, iterations);
    QVERIFY2(w.spectrumResult()->weights.find(what) != std::string::npos, w.spectrumResult()->weights.c_str());
  };

  w.setWeights({sky::SkyWeights::Kind::Ring, ringFile.toStdString()});
  QCOMPARE(w.weightsCombo()->currentText(), QStringLiteral("Ring weights…"));
  QVERIFY(w.computeSpectrum(lmax));
  QVERIFY2(waitJob(finished) == State::Completed, qPrintable(jobError(w)));
  std::vector<sht::Complex> a(plan.nalm());
  plan.map2alm(values, a, 3, sht::read_ring_weights(ringFile.toStdString(), nside));
  check(a, 3, "ring weights");

  w.setWeights({sky::SkyWeights::Kind::Pixel, pixelFile.toStdString()});
  QVERIFY(w.computeSpectrum(lmax));
  QVERIFY2(waitJob(finished) == State::Completed, qPrintable(jobError(w)));
  plan.map2alm_pixel_weights(values, a, sht::read_pixel_weights(pixelFile.toStdString(), nside));
  check(a, 0, "pixel weights");

  w.setWeights({sky::SkyWeights::Kind::Ring, otherFile.toStdString()});
  QVERIFY(w.computeSpectrum(lmax));
  QCOMPARE(waitJob(finished), State::Failed);
  QVERIFY2(jobError(w).contains(QStringLiteral("weight_ring_n00008.fits")) && jobError(w).contains(QStringLiteral("NSIDE")),
           qPrintable(jobError(w)));
  QVERIFY(w.spectrumResult()->weights.find("pixel weights") != std::string::npos);  // kept

  w.setWeights({});
  QCOMPARE(w.weightsCombo()->currentText(), QStringLiteral("Uniform"));
  QVERIFY(w.computeSpectrum(lmax));
  QCOMPARE(waitJob(finished), State::Completed);
  plan.map2alm(values, a, 3);
  check(a, 3, "uniform");
}

// The SHT job dock: every sht operation's schema fields have an editor; synthesis of (T, E, B)
// alm writes the map (atomically, through the job layer) and shows it; polarised spectra give
// TT, EE, BB, TE, EB, TB equal to run_sht_job's through the C++ API; a bad value shows the
// schema's message in the form and starts nothing.
void TestUiSkyMap::shtJobsThroughTheJobLayer() {
  SkyMapWindow w;
  w.setInteractiveErrors(false);
  for (const auto& op : sht::sht_schema().find("op")->choices) {
    w.shtOperationCombo()->setCurrentText(QString::fromStdString(op));
    for (const schema::Field* f : sht::sht_schema().fields_for(op)) {
      if (f->key != "op" && f->key != "backend") QVERIFY2(w.shtForm()->editor(QString::fromStdString(f->key)), (op + " " + f->key).c_str());
    }
  }
  const int lmax = 24, nside = 8;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> g;
  std::vector<std::vector<sht::Complex>> teb(3, std::vector<sht::Complex>(sht::alm_size(lmax)));
  for (auto& a : teb) {
    for (auto& x : a) x = {g(rng), g(rng)};
    for (int l = 0; l <= lmax; ++l) a[l] = {a[l].real(), 0.0};
  }
  for (int k = 1; k < 3; ++k)
    for (int m = 0; m <= 1; ++m)
      for (int l = m; l < 2; ++l) teb[k][sht::alm_index(lmax, l, m)] = 0.0;
  const std::string alm = (tmpDir_ + "/teb.fits").toStdString(), map = (tmpDir_ + "/tqu_job.fits").toStdString();
  sht::write_alm(alm, teb, lmax);

  QSignalSpy finished(&w, &SkyMapWindow::jobFinished);
  QSignalSpy done(&w, &SkyMapWindow::shtJobDone);
  QSignalSpy loaded(&w, &SkyMapWindow::mapLoaded);
  schema::Values bad = {{"op", std::string("synth")}, {"input", alm}, {"output", map}, {"nside", std::string("8")},
                       {"spin", std::string("1")}};
  QVERIFY(!w.runShtJob(bad));
  QCOMPARE(w.shtForm()->problems(), QStringLiteral("--spin: must be 0 or 2, got 1"));
  QVERIFY(!w.isBusy());

  schema::Values synth = {{"op", std::string("synth")}, {"input", alm}, {"output", map},
                          {"nside", std::string("8")}, {"pol", true}, {"threads", std::string("2")}};
  QVERIFY(w.runShtJob(synth));
  QCOMPARE(waitJob(finished), State::Completed);
  QCOMPARE(done.size(), 1);
  QCOMPARE(w.shtForm()->problems(), QString());
  QVERIFY(QFile::exists(QString::fromStdString(map)));
  QCOMPARE(w.shtResult()->map->columns.size(), std::size_t(3));
  QCOMPARE(waitJob(finished), State::Completed);  // the written map is opened
  QCOMPARE(loaded.size(), 1);
  QCOMPARE(w.nside(), nside);
  QCOMPARE(w.columnCount(), 3);

  const std::string cl = (tmpDir_ + "/cl_job.fits").toStdString();
  schema::Values spectra = {{"op", std::string("cl")}, {"input", map}, {"output", cl}, {"pol", true},
                            {"lmax", std::string("20")}, {"threads", std::string("2")}};
  QVERIFY(w.runShtJob(spectra));
  QCOMPARE(waitJob(finished), State::Completed);
  QCOMPARE(w.shtResult()->spectra, (std::vector<std::string>{"TT", "EE", "BB", "TE", "EB", "TB"}));
  spectra["output"] = (tmpDir_ + "/cl_api.fits").toStdString();
  const sht::ShtOutcome api = sht::run_sht_job(sht::parse_sht_job({"sht", spectra, "", ""}), {}, {});
  QCOMPARE(w.shtResult()->cl, api.cl);
  QCOMPARE(w.spectrumChart() != nullptr, true);
}

QTEST_MAIN(TestUiSkyMap)
#include "test_ui_skymap.moc"
