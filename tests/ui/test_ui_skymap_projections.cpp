// The sky-map drawing of issue 25, checked against values known without the code under test:
//  - every projection (Mollweide, orthographic, gnomonic) about several centres puts the poles,
//    the equator at longitude 0, 90, 180 and 270 where the projection's formula says (sky seen
//    from inside: longitude grows to the left), refuses the far side, and inverts;
//  - the drawn image of an nside 1 map whose value is its RING pixel index shows, at those
//    screen positions, the base pixel that holds the direction (pixel 4 is centred on the
//    equator at longitude 0, pixel 6 at 180, pixels 0..3 and 8..11 are the polar caps);
//  - graticule lines pass through known points: the native meridian 0 and equator are the
//    image's centre lines, the Galactic equator and l = 0 meridian drawn over an equatorial map
//    pass through the Galactic centre (RA 266.405, Dec -28.936, J2000) and the l = 0 meridian
//    through the north Galactic pole (RA 192.859, Dec 27.128), and the celestial equator drawn
//    over a Galactic map through (l 96.337, b -60.189) (RA 0, Dec 0);
//  - histogram equalisation of a known, very skewed map gives a flat histogram of colour
//    positions, table entries and image pixels (equal-area Mollweide), where linear scaling of
//    the same map does not.
// No OpenGL; runs under Xvfb (ctest) or with QT_QPA_PLATFORM=offscreen.
#include <QImage>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "sky/SkyProjection.hpp"
#include "sky/SkyRender.hpp"

namespace sky = almagest::ui::sky;

namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kDeg = kPi / 180.0;

struct Landmark {
  const char* name;
  double lonDeg, latDeg;
  bool visible;
  double u, w;  ///< expected normalised image position (u = -1: either edge, u in {0, 1})
};

sky::ViewSpec view(sky::Projection p, double lon, double lat, double fov = 60.0) {
  sky::ViewSpec v;
  v.projection = p;
  v.lonDeg = lon;
  v.latDeg = lat;
  v.fovDeg = fov;
  return v;
}

double theta(double latDeg) { return (90.0 - latDeg) * kDeg; }
double phi(double lonDeg) {
  double p = std::fmod(lonDeg, 360.0);
  if (p < 0) p += 360.0;
  return p * kDeg;
}

/// Angle between two directions (radians).
double separation(double t1, double p1, double t2, double p2) {
  const double c = std::sin(t1) * std::sin(t2) * std::cos(p1 - p2) + std::cos(t1) * std::cos(t2);
  return std::acos(std::clamp(c, -1.0, 1.0));
}

/// Distance from point p to the polyline pieces of a graticule line (normalised units).
double distanceToLine(const sky::GraticuleLine& line, QPointF p) {
  double best = 1e9;
  for (const QPolygonF& piece : line.pieces)
    for (int k = 1; k < piece.size(); ++k) {
      const QPointF a = piece[k - 1], b = piece[k], ab = b - a, ap = p - a;
      const double len2 = QPointF::dotProduct(ab, ab);
      const double t = len2 > 0 ? std::clamp(QPointF::dotProduct(ap, ab) / len2, 0.0, 1.0) : 0.0;
      const QPointF d = ap - t * ab;
      best = std::min(best, std::hypot(d.x(), d.y()));
    }
  return best;
}

const sky::GraticuleLine* findLine(const sky::Graticule& g, bool meridian, double valueDeg) {
  for (const auto& l : g.lines)
    if (l.meridian == meridian && std::abs(l.valueDeg - valueDeg) < 1e-9) return &l;
  return nullptr;
}

/// Equatorial (RA, Dec) <-> Galactic (l, b) through the module's frame conversion.
bool toMap(sky::Frame f, const char* coordsys, double lonDeg, double latDeg, double& t, double& p) {
  t = theta(latDeg);
  p = phi(lonDeg);
  return sky::frameToMap(f, coordsys, t, p);
}

}  // namespace

class TestUiSkyMapProjections : public QObject {
  Q_OBJECT

private slots:
  void landmarksLandWhereTheFormulaSays_data();
  void landmarksLandWhereTheFormulaSays();
  void imageShowsTheBasePixelAtEachLandmark_data();
  void imageShowsTheBasePixelAtEachLandmark();
  void graticuleLinesPassThroughKnownPoints();
  void histogramEqualisationIsFlat();
  void logScalingIsDs9s();
};

void TestUiSkyMapProjections::landmarksLandWhereTheFormulaSays_data() {
  QTest::addColumn<int>("projection");
  QTest::addColumn<double>("lon0");
  QTest::addColumn<double>("lat0");
  QTest::addColumn<double>("fov");
  QTest::addColumn<QList<double>>("cases");  // (lon, lat, visible, u, w) * n
  using L = QList<double>;
  const double t20 = std::tan(20 * kDeg) / std::tan(30 * kDeg);
  // Mollweide about lon 0: poles at the top and bottom midpoints, lon 90 at a quarter width to
  // the left, lon 180 on the edge (u = 0 or 1: -1 below), lon 270 at three quarters.
  QTest::newRow("mollweide lon 0") << int(sky::Projection::Mollweide) << 0.0 << 0.0 << 60.0
                                   << L{0, 90, 1, 0.5, 0.0, 0, -90, 1, 0.5, 1.0, 0, 0, 1, 0.5, 0.5,
                                        90, 0, 1, 0.25, 0.5, 180, 0, 1, -1, 0.5, 270, 0, 1, 0.75, 0.5};
  QTest::newRow("mollweide lon 180") << int(sky::Projection::Mollweide) << 180.0 << 0.0 << 60.0
                                     << L{180, 0, 1, 0.5, 0.5, 0, 0, 1, -1, 0.5, 270, 0, 1, 0.25, 0.5,
                                          90, 0, 1, 0.75, 0.5, 0, 90, 1, 0.5, 0.0, 0, -90, 1, 0.5, 1.0};
  // Orthographic (unit disc in the square): the centre's hemisphere only. Seen from the
  // equator the poles and longitudes +-90 are on the limb (the poles are tested from the poles
  // below): 60 degrees from the centre is at sin 60 of the radius.
  const double s60 = 0.5 * std::sin(60 * kDeg);
  QTest::newRow("orthographic 0,0") << int(sky::Projection::Orthographic) << 0.0 << 0.0 << 60.0
                                    << L{0, 60, 1, 0.5, 0.5 - s60, 0, -60, 1, 0.5, 0.5 + s60, 0, 0, 1, 0.5, 0.5,
                                         60, 0, 1, 0.5 - s60, 0.5, 300, 0, 1, 0.5 + s60, 0.5, 180, 0, 0, 0, 0};
  QTest::newRow("orthographic 180,0") << int(sky::Projection::Orthographic) << 180.0 << 0.0 << 60.0
                                      << L{180, 0, 1, 0.5, 0.5, 0, 0, 0, 0, 0, 120, 0, 1, 0.5 + s60, 0.5,
                                           240, 0, 1, 0.5 - s60, 0.5, 180, 60, 1, 0.5, 0.5 - s60, 180, -60, 1, 0.5, 0.5 + s60};
  // Looking at the north pole from inside: lon 0 straight down, lon 90 to the left; 30 degrees
  // from the pole is sin 30 = 0.5 of the radius.
  QTest::newRow("orthographic north pole") << int(sky::Projection::Orthographic) << 0.0 << 90.0 << 60.0
                                           << L{0, 90, 1, 0.5, 0.5, 0, 60, 1, 0.5, 0.75, 90, 60, 1, 0.25, 0.5,
                                                180, 60, 1, 0.5, 0.25, 0, -90, 0, 0, 0};
  QTest::newRow("orthographic south pole") << int(sky::Projection::Orthographic) << 0.0 << -90.0 << 60.0
                                           << L{0, -90, 1, 0.5, 0.5, 0, 90, 0, 0, 0, 0, -60, 1, 0.5, 0.25,
                                                90, -60, 1, 0.25, 0.5};
  // Gnomonic, 60 degree field: tan(angle) / tan(30 degrees) of the half width.
  QTest::newRow("gnomonic 0,0") << int(sky::Projection::Gnomonic) << 0.0 << 0.0 << 60.0
                                << L{0, 0, 1, 0.5, 0.5, 20, 0, 1, 0.5 - 0.5 * t20, 0.5, -20, 0, 1, 0.5 + 0.5 * t20, 0.5,
                                     0, 20, 1, 0.5, 0.5 - 0.5 * t20, 0, 90, 0, 0, 0, 0, -90, 0, 0, 0, 180, 0, 0, 0, 0,
                                     40, 0, 0, 0, 0};
  QTest::newRow("gnomonic 180,0") << int(sky::Projection::Gnomonic) << 180.0 << 0.0 << 60.0
                                  << L{180, 0, 1, 0.5, 0.5, 200, 0, 1, 0.5 - 0.5 * t20, 0.5, 0, 0, 0, 0, 0};
  QTest::newRow("gnomonic north pole") << int(sky::Projection::Gnomonic) << 0.0 << 90.0 << 60.0
                                       << L{0, 90, 1, 0.5, 0.5, 0, 70, 1, 0.5, 0.5 + 0.5 * t20, 90, 70, 1, 0.5 - 0.5 * t20, 0.5,
                                            0, 0, 0, 0, 0, 0, -90, 0, 0, 0};
  QTest::newRow("gnomonic south pole") << int(sky::Projection::Gnomonic) << 0.0 << -90.0 << 60.0
                                       << L{0, -90, 1, 0.5, 0.5, 0, -70, 1, 0.5, 0.5 - 0.5 * t20, 0, 90, 0, 0, 0};
}

void TestUiSkyMapProjections::landmarksLandWhereTheFormulaSays() {
  QFETCH(int, projection);
  QFETCH(double, lon0);
  QFETCH(double, lat0);
  QFETCH(double, fov);
  QFETCH(QList<double>, cases);
  const sky::ViewSpec v = view(static_cast<sky::Projection>(projection), lon0, lat0, fov);
  QVERIFY(cases.size() % 5 == 0);
  for (int k = 0; k < cases.size(); k += 5) {
    const double lon = cases[k], lat = cases[k + 1], eu = cases[k + 3], ew = cases[k + 4];
    const bool visible = cases[k + 2] != 0;
    const QString what = QStringLiteral("lon %1 lat %2").arg(lon).arg(lat);
    double u = -9, w = -9;
    const bool ok = sky::projectDir(v, theta(lat), phi(lon), u, w);
    QVERIFY2(ok == visible, qPrintable(what + QStringLiteral(": visible %1, expected %2").arg(ok).arg(visible)));
    if (!visible) continue;
    if (eu < 0)
      QVERIFY2(std::min(std::abs(u), std::abs(u - 1.0)) < 1e-9, qPrintable(what + QStringLiteral(": u %1").arg(u)));
    else
      QVERIFY2(std::abs(u - eu) < 1e-9, qPrintable(what + QStringLiteral(": u %1, expected %2").arg(u).arg(eu)));
    QVERIFY2(std::abs(w - ew) < 1e-9, qPrintable(what + QStringLiteral(": w %1, expected %2").arg(w).arg(ew)));
    // The inverse gives the direction back (the edge of a Mollweide map and the poles are
    // single points whatever the longitude: compare directions, not angles).
    const double iu = std::clamp(u, 1e-12, 1 - 1e-12), iw = std::clamp(w, 1e-12, 1 - 1e-12);
    double t2 = 0, p2 = 0;
    QVERIFY2(sky::unprojectDir(v, iu, iw, t2, p2), qPrintable(what + QStringLiteral(": inverse refused")));
    QVERIFY2(separation(t2, p2, theta(lat), phi(lon)) < 1e-5,
             qPrintable(what + QStringLiteral(": inverse off by %1 rad").arg(separation(t2, p2, theta(lat), phi(lon)))));
  }
}

void TestUiSkyMapProjections::imageShowsTheBasePixelAtEachLandmark_data() {
  QTest::addColumn<int>("projection");
  QTest::addColumn<double>("lon0");
  QTest::addColumn<double>("lat0");
  QTest::newRow("mollweide lon 0") << int(sky::Projection::Mollweide) << 0.0 << 0.0;
  QTest::newRow("mollweide lon 120") << int(sky::Projection::Mollweide) << 120.0 << 0.0;
  QTest::newRow("orthographic 0,0") << int(sky::Projection::Orthographic) << 0.0 << 0.0;
  QTest::newRow("orthographic 180,0") << int(sky::Projection::Orthographic) << 180.0 << 0.0;
  QTest::newRow("orthographic 45,60") << int(sky::Projection::Orthographic) << 45.0 << 60.0;
  QTest::newRow("orthographic 0,-90") << int(sky::Projection::Orthographic) << 0.0 << -90.0;
  QTest::newRow("gnomonic 0,0") << int(sky::Projection::Gnomonic) << 0.0 << 0.0;
  QTest::newRow("gnomonic 180,0") << int(sky::Projection::Gnomonic) << 180.0 << 0.0;
  QTest::newRow("gnomonic 45,90") << int(sky::Projection::Gnomonic) << 45.0 << 90.0;
}

// nside 1: RING pixels 0..3 are the north cap (centres at z = 2/3, longitudes 45 + 90 k), 4..7
// the equatorial pixels centred at longitude 0, 90, 180, 270 on the equator, 8..11 the south
// cap. A map with value = pixel index in grey over [0, 11] shows pixel p as grey level
// round(255 p / 11).
void TestUiSkyMapProjections::imageShowsTheBasePixelAtEachLandmark() {
  QFETCH(int, projection);
  QFETCH(double, lon0);
  QFETCH(double, lat0);
  const sky::ViewSpec v = view(static_cast<sky::Projection>(projection), lon0, lat0, 60.0);
  std::vector<double> values(12);
  for (int p = 0; p < 12; ++p) values[std::size_t(p)] = p;
  const QSize size = sky::imageSize(v, 300);
  const auto lookup = sky::projectionLookup(v, 1, size.width(), size.height());
  const sky::ScaleMap scale(sky::Scaling::Linear, values, 0.0, 11.0);
  const QImage img = sky::colourise(lookup, size.width(), size.height(), values, scale, sky::ColourMap::Grey);
  QCOMPARE(img.size(), size);
  struct Known {
    double lon, lat;
    int pixel;
  };
  // Pixel centres (healpix_cxx pix2ang would say the same; they are the definition's).
  const Known known[] = {{0, 0, 4},     {90, 0, 5},    {180, 0, 6},    {270, 0, 7},   {45, 41.81, 0},
                         {135, 41.81, 1}, {225, 41.81, 2}, {315, 41.81, 3}, {45, -41.81, 8}, {315, -41.81, 11},
                         {10, 80, 0},    {100, 80, 1},  {10, -80, 8},   {280, -80, 11}};
  int checked = 0;
  for (const Known& k : known) {
    QCOMPARE(sky::ang2pixRing(1, theta(k.lat), phi(k.lon)), std::int64_t(k.pixel));  // the table is right
    double u = 0, w = 0;
    if (!sky::projectDir(v, theta(k.lat), phi(k.lon), u, w)) continue;
    const int x = std::clamp(int(u * size.width()), 0, size.width() - 1);
    const int y = std::clamp(int(w * size.height()), 0, size.height() - 1);
    const QRgb c = img.pixel(x, y);
    const int grey = int(std::lround(255.0 * k.pixel / 11.0));
    QVERIFY2(qAlpha(c) == 255 && qRed(c) == grey && qGreen(c) == grey && qBlue(c) == grey,
             qPrintable(QStringLiteral("lon %1 lat %2 at (%3, %4): grey %5, expected pixel %6 (grey %7)")
                            .arg(k.lon).arg(k.lat).arg(x).arg(y).arg(qRed(c)).arg(k.pixel).arg(grey)));
    QCOMPARE(lookup[std::size_t(y) * std::size_t(size.width()) + std::size_t(x)], std::int64_t(k.pixel));
    ++checked;
  }
  // A 60 degree gnomonic field holds one or two of the landmarks, the wider views more.
  QVERIFY2(checked >= (v.projection == sky::Projection::Gnomonic ? 1 : 3), qPrintable(QString::number(checked)));
  // The far side of an orthographic view and the outside of a gnomonic field are background.
  if (v.projection != sky::Projection::Mollweide) {
    double u = 0, w = 0;
    QVERIFY(!sky::projectDir(v, kPi - theta(lat0), phi(lon0 + 180), u, w));
  }
  if (v.projection == sky::Projection::Orthographic) QCOMPARE(img.pixel(0, 0), sky::kBackground);
}

void TestUiSkyMapProjections::graticuleLinesPassThroughKnownPoints() {
  // Native Mollweide: meridian 0 is the vertical centre line, the equator the horizontal one,
  // meridian 90 runs through (lon 90, lat b) for every b.
  {
    const sky::ViewSpec v;
    const sky::Graticule g = sky::graticule(v, sky::Frame::Native, "", 30.0);
    QCOMPARE(int(g.frame), int(sky::Frame::Native));
    const auto* m0 = findLine(g, true, 0.0);
    const auto* eq = findLine(g, false, 0.0);
    const auto* m90 = findLine(g, true, 90.0);
    QVERIFY(m0 && eq && m90);
    for (const auto& piece : m0->pieces)
      for (const QPointF& p : piece) QVERIFY2(std::abs(p.x() - 0.5) < 1e-12, qPrintable(QString::number(p.x())));
    for (const auto& piece : eq->pieces)
      for (const QPointF& p : piece) QVERIFY2(std::abs(p.y() - 0.5) < 1e-12, qPrintable(QString::number(p.y())));
    for (double b = -75; b <= 75; b += 15) {
      double u = 0, w = 0;
      QVERIFY(sky::projectDir(v, theta(b), phi(90), u, w));
      QVERIFY2(distanceToLine(*m90, {u, w}) < 1e-4, qPrintable(QString::number(b)));
    }
    // A point off the line is not on it (the check can fail).
    double u = 0, w = 0;
    QVERIFY(sky::projectDir(v, theta(10), phi(95), u, w));
    QVERIFY(distanceToLine(*m90, {u, w}) > 5e-3);
    // 30 degree steps: 12 meridians and 5 parallels, labelled.
    QCOMPARE(g.lines.size(), std::size_t(17));
    QVERIFY(g.labels.size() >= 12);
  }
  // A Galactic graticule over an equatorial map (COORDSYS C), and the reverse.
  struct Case {
    sky::Frame frame;
    const char* coordsys;
    bool meridian;
    double value;
    double lon, lat;  ///< a point in the map's frame the line must pass through (degrees)
    const char* what;
  };
  const Case cases[] = {
      {sky::Frame::Galactic, "C", false, 0.0, 266.40499, -28.93617, "Galactic equator through the Galactic centre"},
      {sky::Frame::Galactic, "C", true, 0.0, 266.40499, -28.93617, "l = 0 through the Galactic centre"},
      {sky::Frame::Galactic, "C", true, 0.0, 192.85948, 27.12825, "l = 0 through the north Galactic pole"},
      {sky::Frame::Galactic, "C", true, 180.0, 192.85948, 27.12825, "l = 180 through the north Galactic pole"},
      {sky::Frame::Equatorial, "G", false, 0.0, 96.33728, -60.18855, "celestial equator through RA 0, Dec 0"},
      {sky::Frame::Equatorial, "G", true, 0.0, 96.33728, -60.18855, "RA 0 through RA 0, Dec 0"},
      {sky::Frame::Equatorial, "G", true, 90.0, 122.93192, 27.12825, "RA 6h through the north celestial pole"},
  };
  for (const sky::ViewSpec& v : {sky::ViewSpec{}, view(sky::Projection::Orthographic, 266.4, -28.9),
                                 view(sky::Projection::Gnomonic, 266.4, -28.9, 40.0)}) {
    for (const Case& c : cases) {
      const sky::Graticule g = sky::graticule(v, c.frame, c.coordsys, 30.0);
      QCOMPARE(int(g.frame), int(c.frame));
      const auto* line = findLine(g, c.meridian, c.value);
      double u = 0, w = 0;
      if (!sky::projectDir(v, theta(c.lat), phi(c.lon), u, w)) continue;  // not in this view
      // On an orthographic view's limb a line may be all on the far side but for that point.
      if (v.projection != sky::Projection::Mollweide &&
          separation(theta(c.lat), phi(c.lon), theta(v.latDeg), phi(v.lonDeg)) > 80 * kDeg)
        continue;
      QVERIFY2(line, c.what);
      // 0.01 degree on the sky is < 1e-4 of a Mollweide image's width; 3e-4 allows for the
      // published coordinates' last digit.
      const double d = distanceToLine(*line, {u, w});
      QVERIFY2(d < 3e-4, qPrintable(QStringLiteral("%1: %2 away").arg(QString::fromLatin1(c.what)).arg(d)));
    }
  }
  // The same Galactic centre is not on the Galactic 30 degree parallel.
  const sky::Graticule g = sky::graticule(sky::ViewSpec{}, sky::Frame::Galactic, "C", 30.0);
  double u = 0, w = 0;
  QVERIFY(sky::projectDir(sky::ViewSpec{}, theta(-28.93617), phi(266.40499), u, w));
  QVERIFY(distanceToLine(*findLine(g, false, 30.0), {u, w}) > 0.03);
  // And the module's conversion of the Galactic centre itself (independent of the graticule).
  double t = 0, p = 0;
  QVERIFY(toMap(sky::Frame::Galactic, "C", 0.0, 0.0, t, p));
  QVERIFY2(separation(t, p, theta(-28.93617), phi(266.40499)) < 2e-6, "Galactic centre");
  QVERIFY(!sky::frameSupported(sky::Frame::Galactic, "X"));
  QCOMPARE(int(sky::graticule(sky::ViewSpec{}, sky::Frame::Galactic, "", 30.0).frame), int(sky::Frame::Native));
}

void TestUiSkyMapProjections::histogramEqualisationIsFlat() {
  // nside 32, a very skewed map with distinct values (a log-normal-like field), and 300 UNSEEN
  // pixels that histogram equalisation must ignore.
  const int nside = 32;
  const std::int64_t npix = 12LL * nside * nside;
  std::vector<double> values(static_cast<std::size_t>(npix));
  for (std::int64_t p = 0; p < npix; ++p) {
    double t = 0, ph = 0;
    sky::pix2angRing(nside, p, t, ph);
    values[std::size_t(p)] = std::exp(4.0 * std::sin(3.0 * t) * std::cos(2.0 * ph)) + 1e-9 * double(p);
  }
  for (std::int64_t p = 0; p < 300; ++p) values[std::size_t(p * 37)] = -1.6375e30;
  const sky::ValueRange r = sky::valueRange(values);
  QCOMPARE(r.unseen, std::int64_t(300));
  const std::int64_t seen = r.seen;
  const sky::ScaleMap eq(sky::Scaling::HistEq, values, r.min, r.max);
  const sky::ScaleMap lin(sky::Scaling::Linear, values, r.min, r.max);

  // Positions: 64 equal bins of [0, 1] hold seen / 64 values each, to one value.
  std::vector<int> pos(64, 0), linPos(64, 0);
  for (double v : values) {
    if (sky::isUnseen(v)) continue;
    ++pos[std::size_t(std::min(63, int(eq.position(v) * 64.0)))];
    ++linPos[std::size_t(std::min(63, int(lin.position(v) * 64.0)))];
  }
  const double mean = double(seen) / 64.0;
  for (int b = 0; b < 64; ++b)
    QVERIFY2(std::abs(pos[std::size_t(b)] - mean) <= 1.0, qPrintable(QStringLiteral("bin %1: %2, mean %3").arg(b).arg(pos[std::size_t(b)]).arg(mean)));
  const int linMax = *std::max_element(linPos.begin(), linPos.end());
  QVERIFY2(linMax > 5 * mean, qPrintable(QString::number(linMax)));  // the map is skewed: linear is not flat

  // Table entries: the 254 inner entries hold seen / 255 each (to one value), the two end
  // entries half as many (rounding to the nearest entry).
  std::vector<int> idx(256, 0);
  for (double v : values)
    if (!sky::isUnseen(v)) ++idx[std::size_t(eq.index(v))];
  const double per = double(seen) / 255.0;
  for (int k = 1; k < 255; ++k)
    QVERIFY2(std::abs(idx[std::size_t(k)] - per) <= 1.5, qPrintable(QStringLiteral("entry %1: %2, expected %3").arg(k).arg(idx[std::size_t(k)]).arg(per)));
  QVERIFY(std::abs(idx[0] - per / 2) <= 1.5 && std::abs(idx[255] - per / 2) <= 1.5);

  // The drawn Mollweide image (equal-area projection of equal-area pixels): grey levels in 16
  // groups of 16 entries hold the same number of image pixels to a few percent.
  const int w = 1200, h = 600;
  const auto lookup = sky::mollweideLookup(nside, w, h);
  const QImage img = sky::colourise(lookup, w, h, values, eq, sky::ColourMap::Grey);
  std::vector<double> groups(16, 0.0);
  double total = 0;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const QRgb c = img.pixel(x, y);
      const std::int64_t p = lookup[std::size_t(y) * std::size_t(w) + std::size_t(x)];
      // Outside the ellipse, or an UNSEEN pixel (grey 128, so told apart by its value).
      if (p < 0 || sky::isUnseen(values[std::size_t(p)])) continue;
      QVERIFY(qAlpha(c) == 255);
      groups[std::size_t(qRed(c) / 16)] += 1;
      total += 1;
    }
  // Entries 0 and 255 count half: the first and last groups expect 15.5 entries of 255.
  for (int k = 0; k < 16; ++k) {
    const double expected = total * (k == 0 || k == 15 ? 15.5 : 16.0) / 255.0;
    const double dev = groups[std::size_t(k)] / expected - 1.0;
    qInfo("grey group %2d: %.0f image pixels, %+.2f%% from flat", k, groups[std::size_t(k)], 100 * dev);
    QVERIFY2(std::abs(dev) < 0.02, qPrintable(QStringLiteral("group %1: %2").arg(k).arg(dev)));
  }
  // Ties share their mid-rank: a two-valued map sits at 1/4 and 3/4.
  std::vector<double> two(100, 1.0);
  std::fill(two.begin(), two.begin() + 50, 0.0);
  const sky::ScaleMap t2(sky::Scaling::HistEq, two, 0.0, 1.0);
  QCOMPARE(t2.position(0.0), 0.25);
  QCOMPARE(t2.position(1.0), 0.75);
}

void TestUiSkyMapProjections::logScalingIsDs9s() {
  const std::vector<double> none;
  const sky::ScaleMap s(sky::Scaling::Log, none, -2.0, 8.0);
  QCOMPARE(s.position(-2.0), 0.0);
  // At the top DS9's log10(1000 x + 1) / log10(1000) is log10(1001) / 3 (the table clamps it).
  QCOMPARE(s.position(8.0), std::log10(1001.0) / 3.0);
  QCOMPARE(s.index(8.0), 255);
  // x = 0.5: log10(501) / 3.
  QVERIFY(std::abs(s.position(3.0) - std::log10(501.0) / 3.0) < 1e-15);
  QVERIFY(std::abs(s.inverse(s.position(0.7)) - 0.7) < 1e-12);
  QCOMPARE(s.position(-50.0), 0.0);  // clamped
}

QTEST_MAIN(TestUiSkyMapProjections)
#include "test_ui_skymap_projections.moc"
