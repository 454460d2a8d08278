// The sphere view of the sky-map window (issue 25) and the pointer readout:
//  - the rendered frame is not blank, changes when the camera rotates (programmatically and by a
//    mouse drag) and when the wheel zooms;
//  - every display pixel's cell colour (the VTK scalars) is the 2D view's colour of its value
//    through the same scale and colour map (UNSEEN grey, masked pixels blended), and the colour
//    read back from the rendered frame at a chosen pixel's screen position is that colour; the
//    orthographic 2D image of the same centre shows it too;
//  - a map above the display nside is drawn at a divisor nside with the mean of the seen map
//    pixels inside each display pixel (brute force over all map pixels), masked by majority;
//  - the window's mask (a FITS mask map, same nside) is drawn in 2D and on the sphere; a mask of
//    another nside is refused naming NSIDE;
//  - the readout names the pixel under the mouse in an orthographic 2D view and on the sphere.
// VTK needs a real OpenGL context: main() sets the surface format before QApplication; ctest
// runs it under Xvfb.
#include <QApplication>
#include <QElapsedTimer>
#include <QLabel>
#include <QOpenGLContext>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QWheelEvent>
#include <QtTest>

#include <cmath>
#include <numbers>
#include <set>

#include "almagest/sht/config.hpp"
#include "almagest/sht/healpix_io.hpp"
#include "jobs/JobRunner.hpp"
#include "panels/LogPanel.hpp"
#include "sky/SkyMapView.hpp"
#include "sky/SkyMapWindow.hpp"
#include "sky/SkyProjection.hpp"
#include "sky/SkyRender.hpp"
#include "sky/SkySphereView.hpp"
#include "views/VtkView.hpp"

using almagest::ui::SkyMapView;
using almagest::ui::SkyMapWindow;
using almagest::ui::SkySphereView;
using State = almagest::ui::JobRunner::State;
namespace sky = almagest::ui::sky;
namespace sht = almagest::sht;

namespace {

constexpr double kDeg = std::numbers::pi / 180.0;

State waitJob(QSignalSpy& finished, int timeoutMs = 120000) {
  if (finished.isEmpty()) finished.wait(timeoutMs);
  if (finished.isEmpty()) return State::Idle;
  return finished.takeFirst().at(0).value<State>();
}

int distinctColours(const QImage& img) {
  std::set<QRgb> s;
  for (int y = 0; y < img.height(); y += 2)
    for (int x = 0; x < img.width(); x += 2) s.insert(img.pixel(x, y) | 0xff000000u);
  return static_cast<int>(s.size());
}

double changedFraction(const QImage& a, const QImage& b) {
  if (a.size() != b.size()) return 1.0;
  long changed = 0, all = 0;
  for (int y = 0; y < a.height(); y += 2)
    for (int x = 0; x < a.width(); x += 2, ++all) changed += (a.pixel(x, y) | 0xff000000u) != (b.pixel(x, y) | 0xff000000u);
  return double(changed) / double(all);
}

bool near(QRgb a, QRgb b, int tol = 1) {
  return std::abs(qRed(a) - qRed(b)) <= tol && std::abs(qGreen(a) - qGreen(b)) <= tol && std::abs(qBlue(a) - qBlue(b)) <= tol;
}

QString rgb(QRgb c) { return QStringLiteral("(%1, %2, %3)").arg(qRed(c)).arg(qGreen(c)).arg(qBlue(c)); }

/// A seeded map of nside `nside` (values a smooth function of direction plus a ramp).
std::shared_ptr<sky::SkyMapData> makeMap(int nside) {
  auto m = std::make_shared<sky::SkyMapData>();
  m->nside = nside;
  m->names = {"TEMPERATURE"};
  m->units = {"uK"};
  m->source = "test map";
  m->columns.assign(1, std::vector<double>(static_cast<std::size_t>(m->npix())));
  for (std::int64_t p = 0; p < m->npix(); ++p) {
    double t = 0, ph = 0;
    sky::pix2angRing(nside, p, t, ph);
    m->columns[0][std::size_t(p)] = std::cos(2 * t) + 0.5 * std::sin(3 * ph) * std::sin(t) + 1e-4 * double(p);
  }
  m->ranges = {sky::valueRange(m->columns[0])};
  return m;
}

/// The colour of the rendered frame at a widget position of the view.
QRgb frameAt(SkySphereView& s, QPointF pos) {
  const QImage img = s.vtkView()->grabFramebuffer();
  const double dpr = s.vtkView()->devicePixelRatioF();
  return img.pixel(std::clamp(int(pos.x() * dpr), 0, img.width() - 1), std::clamp(int(pos.y() * dpr), 0, img.height() - 1));
}

}  // namespace

class TestUiSkyMapSphere : public QObject {
  Q_OBJECT

private slots:
  void initTestCase();
  void frameNotBlankAndChangesWithRotation();
  void colourAtChosenPixelsMatchesTheColourMap();
  void largeMapsAreDrawnAtADivisorNside();
  void maskInTheWindow();
  void graticuleOnTheSphere();
  void readoutNamesThePixelUnderTheMouse();

private:
  std::unique_ptr<QTemporaryDir> tmp_;
};

void TestUiSkyMapSphere::initTestCase() {
  if (QGuiApplication::platformName() != QLatin1String("xcb"))
    QSKIP("needs OpenGL on the xcb platform (run under Xvfb; ctest does)");
  QOpenGLContext probe;
  if (!probe.create()) QSKIP("no OpenGL context can be created here");
  const QString root = qEnvironmentVariable("ALMAGEST_TEST_TMP", QDir::tempPath());
  QVERIFY(QDir().mkpath(root));
  tmp_ = std::make_unique<QTemporaryDir>(root + QStringLiteral("/ui_sphere_XXXXXX"));
  QVERIFY(tmp_->isValid());
  tmp_->setAutoRemove(qEnvironmentVariableIsEmpty("ALMAGEST_KEEP_TEST_FILES"));
}

void TestUiSkyMapSphere::frameNotBlankAndChangesWithRotation() {
  SkyMapWindow w;
  w.setInteractiveErrors(false);
  w.resize(1100, 880);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QSignalSpy finished(&w, &SkyMapWindow::jobFinished);
  QVERIFY(w.openDemoMap(32, 4242));
  QCOMPARE(waitJob(finished), State::Completed);
  QVERIFY(!w.sphereView());  // made when first shown
  w.viewTabs()->setCurrentIndex(1);
  SkySphereView* s = w.sphereView();
  QVERIFY(s);
  QCOMPARE(s->displayNside(), 32);
  QCOMPARE(s->cellCount(), std::int64_t(12 * 32 * 32));
  QTest::qWait(100);
  const QImage a = s->vtkView()->grabFramebuffer();
  const int colours = distinctColours(a);
  qInfo("sphere frame %dx%d: %d distinct colours", a.width(), a.height(), colours);
  QVERIFY2(colours > 100, qPrintable(QString::number(colours)));
  QVERIFY(a.save(tmp_->filePath(QStringLiteral("sphere.png"))));
  qInfo("frame: %s", qPrintable(tmp_->filePath(QStringLiteral("sphere.png"))));

  s->rotateBy(40.0, 15.0);
  const QImage b = s->vtkView()->grabFramebuffer();
  QVERIFY(b.save(tmp_->filePath(QStringLiteral("sphere_rotated.png"))));
  const double rot = changedFraction(a, b);
  QVERIFY2(rot > 0.2, qPrintable(QString::number(rot)));

  // A left-drag through the interactor rotates the camera too.
  const QPoint c = s->vtkView()->rect().center();
  QTest::mousePress(s->vtkView(), Qt::LeftButton, Qt::NoModifier, c);
  for (int i = 1; i <= 8; ++i) QTest::mouseMove(s->vtkView(), c + QPoint(12 * i, 4 * i));
  QTest::mouseRelease(s->vtkView(), Qt::LeftButton, Qt::NoModifier, c + QPoint(96, 32));
  const QImage d = s->vtkView()->grabFramebuffer();
  const double drag = changedFraction(b, d);
  QVERIFY2(drag > 0.1, qPrintable(QString::number(drag)));

  // The wheel zooms (parallel scale).
  const double z0 = s->zoom();
  for (int i = 0; i < 3; ++i) {
    QWheelEvent wheel(QPointF(c), s->vtkView()->mapToGlobal(QPointF(c)), QPoint(), QPoint(0, 120), Qt::NoButton,
                      Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(s->vtkView(), &wheel);
  }
  QVERIFY2(s->zoom() > 1.2 * z0, qPrintable(QStringLiteral("%1 -> %2").arg(z0).arg(s->zoom())));
  QVERIFY(changedFraction(d, s->vtkView()->grabFramebuffer()) > 0.1);
}

void TestUiSkyMapSphere::colourAtChosenPixelsMatchesTheColourMap() {
  // nside 4 (large pixels, drawn as a finer grid), one UNSEEN pixel, a mask of 10 pixels.
  auto m = makeMap(4);
  const std::int64_t unseenPix = 77, maskedPix = 100, plainPix = 60;
  m->columns[0][std::size_t(unseenPix)] = sht::kUnseen;
  m->ranges = {sky::valueRange(m->columns[0])};
  std::vector<std::uint8_t> masked(std::size_t(m->npix()), 0);
  for (std::int64_t p = 95; p < 105; ++p) masked[std::size_t(p)] = 1;
  const auto& v = m->columns[0];
  const sky::ValueRange r = m->ranges[0];

  SkySphereView s;
  s.resize(640, 640);
  s.show();
  QVERIFY(QTest::qWaitForWindowExposed(&s));
  for (const auto [scaling, cmap] : {std::pair{sky::Scaling::Linear, sky::ColourMap::Viridis},
                                     std::pair{sky::Scaling::HistEq, sky::ColourMap::Diverging}}) {
    const sky::ScaleMap scale(scaling, v, r.min, r.max);
    s.setMap(m, 0, scale, cmap, masked, 0.5);
    QCOMPARE(s.displayNside(), 4);
    QCOMPARE(s.cellCount(), std::int64_t(12 * 16 * 16));  // tessellated at nside 16
    // Every display pixel's scalars: the 2D colour of its value (exactly).
    for (std::int64_t p = 0; p < m->npix(); ++p) {
      const QRgb want = sky::pixelColour(v[std::size_t(p)], scale, cmap, masked[std::size_t(p)] != 0, 0.5);
      QVERIFY2(s.cellColour(p) == (want | 0xff000000u),
               qPrintable(QStringLiteral("pixel %1: %2, expected %3").arg(p).arg(rgb(s.cellColour(p)), rgb(want))));
    }
    QCOMPARE(s.cellColour(unseenPix), sky::kUnseenColour);
    QCOMPARE(s.cellColour(maskedPix), sky::maskedColour(sky::pixelColour(v[std::size_t(maskedPix)], scale, cmap), 0.5));
    // Read back from the rendered frame at each chosen pixel's centre, looked at from there.
    for (const std::int64_t p : {plainPix, unseenPix, maskedPix, std::int64_t(0), std::int64_t(191)}) {
      double t = 0, ph = 0;
      sky::pix2angRing(4, p, t, ph);
      s.lookAt(ph / kDeg, 90.0 - t / kDeg, 1.0);
      QPointF pos;
      QVERIFY(s.screenPosition(t, ph, &pos));
      const QPointF centre(s.vtkView()->width() / 2.0, s.vtkView()->height() / 2.0);
      QVERIFY2(std::hypot(pos.x() - centre.x(), pos.y() - centre.y()) < 2.0,
               qPrintable(QStringLiteral("pixel %1 drawn at (%2, %3)").arg(p).arg(pos.x()).arg(pos.y())));
      const QRgb want = sky::pixelColour(v[std::size_t(p)], scale, cmap, masked[std::size_t(p)] != 0, 0.5);
      const QRgb got = frameAt(s, pos);
      QVERIFY2(near(got, want), qPrintable(QStringLiteral("pixel %1 on screen: %2, expected %3").arg(p).arg(rgb(got), rgb(want))));
      SkyMapView::Probe probe;
      QVERIFY(s.probe(pos, &probe));
      QCOMPARE(probe.pixel, p);
      // The orthographic 2D view of the same centre shows the same colour at its centre.
      sky::ViewSpec view;
      view.projection = sky::Projection::Orthographic;
      view.lonDeg = ph / kDeg;
      view.latDeg = 90.0 - t / kDeg;
      const auto lookup = sky::projectionLookup(view, 4, 101, 101);
      const QImage img = sky::colourise(lookup, 101, 101, v, scale, cmap, masked, 0.5);
      QCOMPARE(img.pixel(50, 50), want | 0xff000000u);
      // Looked at from the far side, the pixel is hidden.
      s.lookAt(ph / kDeg + 180.0, t / kDeg - 90.0, 1.0);
      QVERIFY(!s.screenPosition(t, ph, nullptr));
    }
  }
  // The sphere mirrors longitude like the 2D views: looking at (0, 0), longitude 45 is left.
  s.lookAt(0, 0, 1);
  QPointF left, centre;
  QVERIFY(s.screenPosition(90 * kDeg, 45 * kDeg, &left) && s.screenPosition(90 * kDeg, 0, &centre));
  QVERIFY2(left.x() < centre.x() - 50, qPrintable(QStringLiteral("%1 vs %2").arg(left.x()).arg(centre.x())));
  QPointF north;
  QVERIFY(s.screenPosition(45 * kDeg, 0, &north));
  QVERIFY(north.y() < centre.y() - 50);
}

void TestUiSkyMapSphere::largeMapsAreDrawnAtADivisorNside() {
  QCOMPARE(SkySphereView::displayNsideFor(8), 8);
  QCOMPARE(SkySphereView::displayNsideFor(128), 128);
  QCOMPARE(SkySphereView::displayNsideFor(256), 128);
  QCOMPARE(SkySphereView::displayNsideFor(300), 100);
  QCOMPARE(SkySphereView::displayNsideFor(131), 1);  // a prime above 128: the 12 base pixels
  auto m = makeMap(256);
  auto& v = m->columns[0];
  for (std::int64_t p = 0; p < m->npix(); p += 7) v[std::size_t(p)] = sht::kUnseen;
  for (std::int64_t p = 0; p < 4000; ++p) v[std::size_t(p)] = sht::kUnseen;  // whole display pixels UNSEEN
  std::vector<std::uint8_t> masked(std::size_t(m->npix()), 0);
  for (std::int64_t p = 0; p < m->npix(); p += 2) masked[std::size_t(p)] = 1;  // every other pixel
  m->ranges = {sky::valueRange(v)};
  SkySphereView s;
  s.resize(400, 400);
  const sky::ScaleMap scale(sky::Scaling::Linear, v, m->ranges[0].min, m->ranges[0].max);
  s.setMap(m, 0, scale, sky::ColourMap::Grey, masked, 0.5);
  QCOMPARE(s.displayNside(), 128);
  QCOMPARE(s.cellCount(), std::int64_t(12 * 128 * 128));
  // Brute force: the display pixel of each map pixel from its centre; means of the seen ones.
  const std::int64_t nd = 12LL * 128 * 128;
  std::vector<double> sum(std::size_t(nd), 0.0);
  std::vector<int> seen(std::size_t(nd), 0), inside(std::size_t(nd), 0), nmask(std::size_t(nd), 0);
  for (std::int64_t p = 0; p < m->npix(); ++p) {
    double t = 0, ph = 0;
    sky::pix2angRing(256, p, t, ph);
    const std::int64_t q = sky::ang2pixRing(128, t, ph);
    QCOMPARE(s.displayPixelOf(p), q);
    ++inside[std::size_t(q)];
    nmask[std::size_t(q)] += masked[std::size_t(p)];
    if (!sky::isUnseen(v[std::size_t(p)])) {
      sum[std::size_t(q)] += v[std::size_t(p)];
      ++seen[std::size_t(q)];
    }
  }
  int allUnseen = 0;
  for (std::int64_t q = 0; q < nd; ++q) {
    QCOMPARE(inside[std::size_t(q)], 4);
    allUnseen += seen[std::size_t(q)] == 0;
    const double want = seen[std::size_t(q)] ? sum[std::size_t(q)] / seen[std::size_t(q)] : sht::kUnseen;
    if (std::abs(s.displayValue(q) - want) > 1e-12 * std::max(1.0, std::abs(want)))
      QFAIL(qPrintable(QStringLiteral("display pixel %1: %2, expected %3").arg(q).arg(s.displayValue(q)).arg(want)));
    QCOMPARE(s.displayMasked(q), 2 * nmask[std::size_t(q)] >= 4);
    QCOMPARE(s.cellColour(q), sky::pixelColour(want, scale, sky::ColourMap::Grey, s.displayMasked(q), 0.5) | 0xff000000u);
  }
  QVERIFY(allUnseen > 100);

  // The cost of drawing a large map on the GUI thread (reported): nside 1024 at display 128.
  auto big = makeMap(1024);
  QElapsedTimer t;
  t.start();
  s.setMap(big, 0, sky::ScaleMap(sky::Scaling::Linear, big->columns[0], big->ranges[0].min, big->ranges[0].max),
           sky::ColourMap::Viridis);
  const qint64 first = t.restart();
  s.setMap(big, 0, sky::ScaleMap(sky::Scaling::Linear, big->columns[0], big->ranges[0].min, big->ranges[0].max),
           sky::ColourMap::Grey);
  const qint64 recolour = t.elapsed();
  qInfo("nside 1024 (12.6 M pixels) on the sphere: %lld ms to average to nside 128 and colour, %lld ms to recolour",
        static_cast<long long>(first), static_cast<long long>(recolour));
  QCOMPARE(s.displayNside(), 128);
  QVERIFY(recolour < first);
}

void TestUiSkyMapSphere::maskInTheWindow() {
  SkyMapWindow w;
  w.setInteractiveErrors(false);
  w.resize(1000, 800);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QSignalSpy finished(&w, &SkyMapWindow::jobFinished);
  QVERIFY(w.openDemoMap(16, 99));
  QCOMPARE(waitJob(finished), State::Completed);
  // A FITS mask map: the southern hemisphere (z < 0) and one UNSEEN pixel masked.
  sht::HealpixMap mask;
  mask.nside = 16;
  mask.names = {"MASK"};
  mask.units = {""};
  mask.columns.assign(1, std::vector<double>(std::size_t(sht::npix_of(16)), 1.0));
  std::int64_t expected = 0;
  for (std::int64_t p = 0; p < sht::npix_of(16); ++p) {
    double t = 0, ph = 0;
    sky::pix2angRing(16, p, t, ph);
    if (std::cos(t) < 0) {
      mask.columns[0][std::size_t(p)] = 0.0;
      ++expected;
    }
  }
  mask.columns[0][5] = sht::kUnseen;
  ++expected;
  const QString path = tmp_->filePath(QStringLiteral("mask16.fits"));
  sht::write_healpix_map(path.toStdString(), mask);
  QSignalSpy maskLoaded(&w, &SkyMapWindow::maskLoaded);
  QVERIFY(w.openMask(path));
  QCOMPARE(waitJob(finished), State::Completed);
  QCOMPARE(maskLoaded.count(), 1);
  QCOMPARE(w.maskedCount(), expected);
  // 2D: the image pixel at the centre of the default Mollweide view is on the equator (z ~ 0);
  // a point at latitude -30 is masked, one at +30 is not.
  const QImage img = w.image();
  const auto& vals = w.values();
  for (const double lat : {-30.0, 30.0}) {
    double u = 0, ww = 0;
    QVERIFY(sky::projectDir(w.viewSpec(), (90 - lat) * kDeg, 20 * kDeg, u, ww));
    const int x = int(u * img.width()), y = int(ww * img.height());
    double t = 0, ph = 0;
    QVERIFY(sky::imageToSky((x + 0.5) / img.width(), (y + 0.5) / img.height(), t, ph));
    const std::int64_t p = sky::ang2pixRing(16, t, ph);
    const bool m = w.maskFlags()[std::size_t(p)] != 0;
    QCOMPARE(m, lat < 0);
    QCOMPARE(img.pixel(x, y), sky::pixelColour(vals[std::size_t(p)], w.scaleMap(), sky::ColourMap::Viridis, m, w.maskOpacity()));
  }
  // The sphere shows the same flags and colours.
  SkySphereView* s = w.showSphere();
  QCOMPARE(w.viewTabs()->currentIndex(), 1);
  for (std::int64_t p : {std::int64_t(5), std::int64_t(1500), std::int64_t(3000)})
    QCOMPARE(s->cellColour(p), sky::pixelColour(vals[std::size_t(p)], w.scaleMap(), sky::ColourMap::Viridis,
                                                w.maskFlags()[std::size_t(p)] != 0, w.maskOpacity()));
  // Opacity 0 draws the masked pixels as they are; clearing the mask drops the flags.
  w.setMaskOpacity(0.0);
  QCOMPARE(s->cellColour(3000), sky::pixelColour(vals[3000], w.scaleMap(), sky::ColourMap::Viridis));
  w.setMaskOpacity(0.5);
  w.clearMask();
  QVERIFY(w.maskFlags().empty());
  QCOMPARE(s->cellColour(3000), sky::pixelColour(vals[3000], w.scaleMap(), sky::ColourMap::Viridis));
  // A mask of another nside is refused, naming NSIDE; nothing is masked.
  mask.nside = 8;
  mask.columns.assign(1, std::vector<double>(std::size_t(sht::npix_of(8)), 0.0));
  const QString other = tmp_->filePath(QStringLiteral("mask8.fits"));
  sht::write_healpix_map(other.toStdString(), mask);
  QVERIFY(w.openMask(other));
  waitJob(finished);
  QVERIFY(w.maskFlags().empty());
  QVERIFY2(w.logPanel()->text().contains(QStringLiteral("NSIDE")), qPrintable(w.logPanel()->text().right(300)));
  QVERIFY(!w.setMask(std::vector<double>(10, 1.0), QStringLiteral("short")));
}

// The graticule on the sphere: a Galactic grid over an equatorial map passes through the Galactic
// centre (RA 266.405, Dec -28.936) on b = 0 and l = 0, and is drawn (the frame changes).
void TestUiSkyMapSphere::graticuleOnTheSphere() {
  auto m = makeMap(8);
  m->coordsys = "C";
  SkySphereView s;
  s.resize(500, 500);
  s.show();
  QVERIFY(QTest::qWaitForWindowExposed(&s));
  const auto& v = m->columns[0];
  s.setMap(m, 0, sky::ScaleMap(sky::Scaling::Linear, v, m->ranges[0].min, m->ranges[0].max), sky::ColourMap::Grey);
  const double gcT = (90 + 28.93617) * kDeg, gcP = 266.40499 * kDeg;
  s.lookAt(266.4, -28.9, 1.0);
  const QImage without = s.vtkView()->grabFramebuffer();
  QCOMPARE(s.graticuleLineCount(), 0);
  s.setGraticule(true, sky::Frame::Galactic, "C", 30.0);
  QCOMPARE(s.graticuleLineCount(), 12 + 5);
  QVERIFY2(s.graticuleDistance(gcT, gcP, false, 0.0) < 0.01, qPrintable(QString::number(s.graticuleDistance(gcT, gcP, false, 0.0))));
  QVERIFY(s.graticuleDistance(gcT, gcP, true, 0.0) < 0.01);
  QVERIFY(s.graticuleDistance(gcT, gcP, false, 30.0) > 0.45);  // 30 degrees off the b = 30 parallel
  QVERIFY(s.graticuleDistance(gcT, gcP, true, 90.0) > 1.0);
  const QImage with = s.vtkView()->grabFramebuffer();
  const double changed = changedFraction(without, with);
  QVERIFY2(changed > 0.003 && changed < 0.2, qPrintable(QString::number(changed)));
  // The Galactic centre itself is on two lines: the pixel there is the line colour (dark).
  QPointF pos;
  QVERIFY(s.screenPosition(gcT, gcP, &pos));
  int dark = 0;
  for (int dy = -1; dy <= 1; ++dy)
    for (int dx = -1; dx <= 1; ++dx) dark += qGray(frameAt(s, pos + QPointF(dx, dy))) < 40;
  QVERIFY2(dark >= 3, qPrintable(QString::number(dark)));
  s.setGraticule(false);
  QCOMPARE(s.graticuleLineCount(), 0);
  // A map of unknown COORDSYS gets its own frame's grid (12 + 5 lines as well).
  s.setGraticule(true, sky::Frame::Galactic, "", 30.0);
  QVERIFY(s.graticuleDistance(kDeg * 90, 0.0, false, 0.0) < 0.01);  // native equator
}

void TestUiSkyMapSphere::readoutNamesThePixelUnderTheMouse() {
  SkyMapWindow w;
  w.setInteractiveErrors(false);
  w.resize(1100, 880);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QSignalSpy finished(&w, &SkyMapWindow::jobFinished);
  QVERIFY(w.openDemoMap(8, 5));
  QCOMPARE(waitJob(finished), State::Completed);
  auto* readout = w.findChild<QLabel*>(QStringLiteral("readout"));
  QVERIFY(readout);
  const std::int64_t pix = 300;  // nside 8: a pixel of the northern equatorial belt
  double t = 0, ph = 0;
  sky::pix2angRing(8, pix, t, ph);
  // 2D: an orthographic view centred on the pixel; the mouse at the image's centre.
  sky::ViewSpec v;
  v.projection = sky::Projection::Orthographic;
  v.lonDeg = ph / kDeg;
  v.latDeg = 90 - t / kDeg;
  w.setViewSpec(v);
  QTest::qWait(20);
  const QRectF rect = w.mapView()->imageRect();
  SkyMapView::Probe probe;
  QVERIFY(w.mapView()->probe(rect.center(), &probe));
  QCOMPARE(probe.pixel, pix);
  QVERIFY2(std::abs(probe.theta - t) < 0.01 && std::abs(std::remainder(probe.phi - ph, 2 * std::numbers::pi)) < 0.01,
           qPrintable(QStringLiteral("%1 %2 vs %3 %4").arg(probe.theta).arg(probe.phi).arg(t).arg(ph)));
  QCOMPARE(probe.value, w.values()[std::size_t(pix)]);
  QTest::mouseMove(w.mapView(), rect.center().toPoint());
  QTRY_VERIFY_WITH_TIMEOUT(readout->text().contains(QStringLiteral("pixel %1 ").arg(pix)), 2000);
  QVERIFY(readout->text().contains(QString::number(w.values()[std::size_t(pix)], 'g', 6)));
  // Another pixel a quarter of the image to the left: longitude grows to the left.
  QVERIFY(w.mapView()->probe(rect.center() - QPointF(rect.width() / 4, 0), &probe));
  QVERIFY(std::remainder(probe.phi - ph, 2 * std::numbers::pi) > 0.2);

  // The sphere: looked at from the pixel, the mouse at its screen position.
  SkySphereView* s = w.showSphere();
  s->lookAt(ph / kDeg, 90 - t / kDeg, 1.5);
  QTest::qWait(50);
  QPointF pos;
  QVERIFY(s->screenPosition(t, ph, &pos));
  QVERIFY(s->probe(pos, &probe));
  QCOMPARE(probe.pixel, pix);
  QVERIFY(std::abs(probe.theta - t) < 0.01);
  readout->clear();
  QTest::mouseMove(s->vtkView(), pos.toPoint());
  QTRY_VERIFY_WITH_TIMEOUT(readout->text().contains(QStringLiteral("pixel %1 ").arg(pix)), 2000);
  // Off the sphere (a corner of the view) there is no readout.
  QVERIFY(!s->probe(QPointF(2, 2), nullptr));
  // The display toolbar's centre turns the sphere: the centre direction is drawn mid-view.
  sky::ViewSpec g;
  g.projection = sky::Projection::Gnomonic;
  g.lonDeg = 200.0;
  g.latDeg = -35.0;
  w.setViewSpec(g);
  QVERIFY(s->screenPosition((90 + 35.0) * kDeg, 200.0 * kDeg, &pos));
  QVERIFY2(std::hypot(pos.x() - s->vtkView()->width() / 2.0, pos.y() - s->vtkView()->height() / 2.0) < 2.0,
           qPrintable(QStringLiteral("(%1, %2)").arg(pos.x()).arg(pos.y())));
  QVERIFY(std::abs(s->zoom() - 1.5) < 1e-9);  // the zoom is kept
}

int main(int argc, char** argv) {
  almagest::ui::VtkView::prepareApplication();
  QApplication app(argc, argv);
  TestUiSkyMapSphere t;
  return QTest::qExec(&t, argc, argv);
}

#include "test_ui_skymap_sphere.moc"
