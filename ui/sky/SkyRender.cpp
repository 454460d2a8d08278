#include "sky/SkyRender.hpp"

// healpix_cxx (a private dependency of the engine, linked through it): the lookup's ang2pix.
#include <healpix_cxx/healpix_base.h>

#include <QFontMetrics>
#include <QLinearGradient>
#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "sky/SkyProjection.hpp"

namespace almagest::ui::sky {

namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kSqrt2 = std::numbers::sqrt2;
constexpr double kDeg = kPi / 180.0;

struct Vec {
  double x, y, z;
};

Vec toVec(double theta, double phi) {
  const double s = std::sin(theta);
  return {s * std::cos(phi), s * std::sin(phi), std::cos(theta)};
}

void fromVec(const Vec& v, double& theta, double& phi) {
  const double r = std::sqrt(v.x * v.x + v.y * v.y + v.z * v.z);
  theta = std::acos(std::clamp(v.z / r, -1.0, 1.0));
  phi = std::atan2(v.y, v.x);
  if (phi < 0) phi += 2 * kPi;
  if (phi >= 2 * kPi) phi -= 2 * kPi;
}

/// Sky -> view frame (the centre goes to +x, its meridian's north to +z).
Vec toView(const ViewSpec& s, const Vec& p) {
  const double l = s.lonDeg * kDeg, b = s.projection == Projection::Mollweide ? 0.0 : s.latDeg * kDeg;
  const double cl = std::cos(l), sl = std::sin(l), cb = std::cos(b), sb = std::sin(b);
  const double x1 = p.x * cl + p.y * sl, y1 = -p.x * sl + p.y * cl;
  return {x1 * cb + p.z * sb, y1, -x1 * sb + p.z * cb};
}

Vec fromView(const ViewSpec& s, const Vec& q) {
  const double l = s.lonDeg * kDeg, b = s.projection == Projection::Mollweide ? 0.0 : s.latDeg * kDeg;
  const double cl = std::cos(l), sl = std::sin(l), cb = std::cos(b), sb = std::sin(b);
  const double x1 = q.x * cb - q.z * sb, z = q.x * sb + q.z * cb;
  return {x1 * cl - q.y * sl, x1 * sl + q.y * cl, z};
}

double halfWidth(const ViewSpec& s) { return std::tan(0.5 * std::clamp(s.fovDeg, 0.1, 179.0) * kDeg); }

// IAU 1958 / J2000 equatorial -> Galactic rotation (Hipparcos, as astropy's FK5 -> Galactic).
constexpr double kEqToGal[3][3] = {{-0.0548755604162154, -0.8734370902348850, -0.4838350155487132},
                                   {0.4941094278755837, -0.4448296299600112, 0.7469822444972189},
                                   {-0.8676661490190047, -0.1980763734312015, 0.4559837761750669}};

Vec rotate(const Vec& p, bool transpose) {
  const auto& m = kEqToGal;
  if (!transpose)
    return {m[0][0] * p.x + m[0][1] * p.y + m[0][2] * p.z, m[1][0] * p.x + m[1][1] * p.y + m[1][2] * p.z,
            m[2][0] * p.x + m[2][1] * p.y + m[2][2] * p.z};
  return {m[0][0] * p.x + m[1][0] * p.y + m[2][0] * p.z, m[0][1] * p.x + m[1][1] * p.y + m[2][1] * p.z,
          m[0][2] * p.x + m[1][2] * p.y + m[2][2] * p.z};
}

/// 'E' equatorial, 'G' Galactic, 0 unknown.
char frameOf(const std::string& cs) {
  if (cs == "C" || cs == "Q" || cs == "EQUATORIAL" || cs == "CELESTIAL") return 'E';
  if (cs == "G" || cs == "GALACTIC") return 'G';
  return 0;
}

}  // namespace

QSize imageSize(const ViewSpec& v, int base) {
  return v.projection == Projection::Mollweide ? QSize(2 * base, base) : QSize(base, base);
}

bool projectDir(const ViewSpec& s, double theta, double phi, double& u, double& w) {
  if (s.projection == Projection::Mollweide) {
    double x = 0, y = 0;
    mollweideForward(theta, phi - s.lonDeg * kDeg, x, y);
    u = (x / (2.0 * kSqrt2) + 1.0) / 2.0;
    w = (1.0 - y / kSqrt2) / 2.0;
    return true;
  }
  const Vec q = toView(s, toVec(theta, phi));
  if (q.x <= 0) return false;
  double X = q.y, Y = q.z;  // +y (longitude increasing) is drawn to the left
  if (s.projection == Projection::Gnomonic) {
    const double hw = halfWidth(s);
    X = q.y / q.x / hw;
    Y = q.z / q.x / hw;
    if (std::abs(X) > 1.0 + 1e-12 || std::abs(Y) > 1.0 + 1e-12) return false;
  }
  u = 0.5 - 0.5 * X;
  w = 0.5 - 0.5 * Y;
  return true;
}

bool unprojectDir(const ViewSpec& s, double u, double w, double& theta, double& phi) {
  if (s.projection == Projection::Mollweide) {
    if (!imageToSky(u, w, theta, phi)) return false;
    if (s.lonDeg != 0.0) {
      phi = std::fmod(phi + s.lonDeg * kDeg, 2 * kPi);
      if (phi < 0) phi += 2 * kPi;
    }
    return true;
  }
  const double X = (0.5 - u) * 2.0, Y = (0.5 - w) * 2.0;
  Vec q;
  if (s.projection == Projection::Orthographic) {
    const double r2 = X * X + Y * Y;
    if (r2 > 1.0) return false;
    q = {std::sqrt(1.0 - r2), X, Y};
  } else {
    if (std::abs(X) > 1.0 || std::abs(Y) > 1.0) return false;
    const double hw = halfWidth(s);
    q = {1.0, X * hw, Y * hw};
  }
  fromVec(fromView(s, q), theta, phi);
  return true;
}

std::vector<std::int64_t> projectionLookup(const ViewSpec& s, int nside, int width, int height, const JobContext& ctx) {
  if (s.projection == Projection::Mollweide && s.lonDeg == 0.0) return mollweideLookup(nside, width, height, ctx);
  const Healpix_Base2 base(static_cast<std::int64_t>(nside), RING, SET_NSIDE);
  std::vector<std::int64_t> out(std::size_t(width) * std::size_t(height), -1);
  for (int j = 0; j < height; ++j) {
    ctx.check_cancel();
    std::int64_t* row = out.data() + std::size_t(j) * std::size_t(width);
    for (int i = 0; i < width; ++i) {
      double theta = 0, phi = 0;
      if (unprojectDir(s, (i + 0.5) / width, (j + 0.5) / height, theta, phi)) row[i] = base.ang2pix(pointing(theta, phi));
    }
  }
  return out;
}

const std::array<QRgb, 256>& colourTable(ColourMap m) {
  static const std::array<QRgb, 256> diverging = [] {
    std::array<QRgb, 256> t{};
    static constexpr int lo[3] = {59, 76, 192}, mid[3] = {247, 247, 247}, hi[3] = {180, 4, 38};
    for (int i = 0; i < 256; ++i) {
      const double s = i / 255.0;
      const int* a = s < 0.5 ? lo : mid;
      const int* b = s < 0.5 ? mid : hi;
      const double f = s < 0.5 ? s / 0.5 : (s - 0.5) / 0.5;
      int c[3];
      for (int ch = 0; ch < 3; ++ch) c[ch] = int(std::lround(a[ch] + f * (b[ch] - a[ch])));
      t[std::size_t(i)] = qRgb(c[0], c[1], c[2]);
    }
    return t;
  }();
  static const std::array<QRgb, 256> grey = [] {
    std::array<QRgb, 256> t{};
    for (int i = 0; i < 256; ++i) t[std::size_t(i)] = qRgb(i, i, i);
    return t;
  }();
  switch (m) {
    case ColourMap::Diverging: return diverging;
    case ColourMap::Grey: return grey;
    default: return viridis();
  }
}

const char* colourMapName(ColourMap m) {
  switch (m) {
    case ColourMap::Diverging: return "diverging";
    case ColourMap::Grey: return "grey";
    default: return "viridis";
  }
}

ScaleMap::ScaleMap(Scaling s, std::span<const double> values, double lo, double hi) : s_(s), lo_(lo), hi_(hi) {
  if (s_ != Scaling::HistEq) return;
  sorted_.reserve(values.size());
  for (double v : values)
    if (!isUnseen(v) && v >= lo && v <= hi) sorted_.push_back(v);
  std::sort(sorted_.begin(), sorted_.end());
}

double ScaleMap::position(double v) const {
  if (!(hi_ > lo_)) return 0.5;
  const double x = std::clamp((v - lo_) / (hi_ - lo_), 0.0, 1.0);
  switch (s_) {
    case Scaling::Log: return std::log10(1000.0 * x + 1.0) / 3.0;
    case Scaling::HistEq: {
      if (sorted_.size() < 2) return x;
      // Mid-rank of v among the seen values: ties share the middle of their ranks.
      const auto a = std::lower_bound(sorted_.begin(), sorted_.end(), v);
      const auto b = std::upper_bound(a, sorted_.end(), v);
      const double below = double(a - sorted_.begin()), equal = double(b - a);
      return std::clamp((below + 0.5 * equal) / double(sorted_.size()), 0.0, 1.0);
    }
    default: return x;
  }
}

int ScaleMap::index(double v) const {
  if (s_ == Scaling::Linear) {
    // colouriseMollweide's arithmetic, so the default drawing is unchanged.
    const bool flat = !(hi_ > lo_);
    const double k = std::clamp(flat ? 127.5 : (v - lo_) * (255.0 / (hi_ - lo_)), 0.0, 255.0);
    return int(k + 0.5);
  }
  return std::clamp(int(position(v) * 255.0 + 0.5), 0, 255);
}

double ScaleMap::inverse(double t) const {
  t = std::clamp(t, 0.0, 1.0);
  switch (s_) {
    case Scaling::Log: return lo_ + (hi_ - lo_) * (std::pow(10.0, 3.0 * t) - 1.0) / 1000.0;
    case Scaling::HistEq:
      if (!sorted_.empty()) {
        const double r = t * double(sorted_.size()) - 0.5;
        const std::size_t k = std::size_t(std::clamp(r, 0.0, double(sorted_.size() - 1)));
        return sorted_[k];
      }
      [[fallthrough]];
    default: return lo_ + (hi_ - lo_) * t;
  }
}

QRgb maskedColour(QRgb c, double opacity) noexcept {
  const double a = std::clamp(opacity, 0.0, 1.0);
  auto mix = [a](int x, int m) { return int(std::lround((1.0 - a) * x + a * m)); };
  return qRgb(mix(qRed(c), qRed(kMaskColour)), mix(qGreen(c), qGreen(kMaskColour)), mix(qBlue(c), qBlue(kMaskColour)));
}

QRgb pixelColour(double v, const ScaleMap& scale, ColourMap map, bool masked, double maskOpacity) {
  const QRgb c = isUnseen(v) ? kUnseenColour : colourTable(map)[std::size_t(scale.index(v))];
  return masked ? maskedColour(c, maskOpacity) : c;
}

std::vector<std::uint8_t> maskFlags(std::span<const double> maskValues) {
  std::vector<std::uint8_t> out(maskValues.size());
  for (std::size_t i = 0; i < maskValues.size(); ++i)
    out[i] = (isUnseen(maskValues[i]) || maskValues[i] == 0.0) ? 1 : 0;
  return out;
}

QImage colourise(std::span<const std::int64_t> lookup, int width, int height, std::span<const double> values,
                 const ScaleMap& scale, ColourMap map, std::span<const std::uint8_t> masked, double maskOpacity) {
  QImage img(width, height, QImage::Format_ARGB32);
  if (img.isNull() || lookup.size() < std::size_t(width) * std::size_t(height)) return {};
  const auto& lut = colourTable(map);
  const auto npix = static_cast<std::int64_t>(values.size());
  const bool haveMask = masked.size() == values.size() && !masked.empty();
  for (int j = 0; j < height; ++j) {
    auto* line = reinterpret_cast<QRgb*>(img.scanLine(j));
    const std::int64_t* row = lookup.data() + std::size_t(j) * std::size_t(width);
    for (int i = 0; i < width; ++i) {
      const std::int64_t p = row[i];
      if (p < 0 || p >= npix) {
        line[i] = kBackground;
        continue;
      }
      const double v = values[std::size_t(p)];
      line[i] = isUnseen(v) ? kUnseenColour : lut[std::size_t(scale.index(v))];
      if (haveMask && masked[std::size_t(p)]) line[i] = maskedColour(line[i], maskOpacity);
    }
  }
  return img;
}

bool frameSupported(Frame f, const std::string& coordsys) { return f == Frame::Native || frameOf(coordsys) != 0; }

bool frameToMap(Frame f, const std::string& coordsys, double& theta, double& phi) {
  if (f == Frame::Native) return true;
  const char m = frameOf(coordsys);
  if (!m) return false;
  const char g = f == Frame::Galactic ? 'G' : 'E';
  if (g == m) return true;
  // Galactic -> equatorial is the transpose; equatorial -> Galactic the matrix.
  fromVec(rotate(toVec(theta, phi), g == 'G'), theta, phi);
  return true;
}

bool mapToFrame(Frame f, const std::string& coordsys, double& theta, double& phi) {
  if (f == Frame::Native) return true;
  const char m = frameOf(coordsys);
  if (!m) return false;
  const char g = f == Frame::Galactic ? 'G' : 'E';
  if (g == m) return true;
  fromVec(rotate(toVec(theta, phi), m == 'G'), theta, phi);
  return true;
}

Graticule graticule(const ViewSpec& v, Frame f, const std::string& coordsys, double stepDeg) {
  Graticule g;
  g.frame = frameSupported(f, coordsys) ? f : Frame::Native;
  stepDeg = std::clamp(stepDeg, 1.0, 90.0);
  auto add = [&](bool meridian, double value) {
    GraticuleLine line;
    line.meridian = meridian;
    line.valueDeg = value;
    QPolygonF cur;
    double lastU = 0;
    const int n = meridian ? 360 : 720;  // 0.5 degree samples
    for (int k = 0; k <= n; ++k) {
      double lat = meridian ? -90.0 + 180.0 * k / n : value, lon = meridian ? value : 360.0 * k / n;
      lat = std::clamp(lat, -89.999, 89.999);  // the poles have no longitude
      double theta = (90.0 - lat) * kDeg, phi = lon * kDeg;
      frameToMap(g.frame, coordsys, theta, phi);
      double u = 0, w = 0;
      const bool ok = projectDir(v, theta, phi, u, w);
      // A Mollweide line crossing the map's edge longitude jumps from one side to the other.
      const bool jump = ok && !cur.isEmpty() && std::abs(u - lastU) > 0.25;
      if (!ok || jump) {
        if (cur.size() > 1) line.pieces.push_back(cur);
        cur.clear();
      }
      if (ok) cur << QPointF(u, w), lastU = u;
    }
    if (cur.size() > 1) line.pieces.push_back(cur);
    if (!line.pieces.empty()) g.lines.push_back(std::move(line));
  };
  for (double lon = 0; lon < 360.0 - 1e-9; lon += stepDeg) add(true, lon);
  for (double lat = -90.0 + stepDeg; lat < 90.0 - 1e-9; lat += stepDeg) add(false, lat);
  // Labels: meridians where they cross the frame's latitude of the view centre, parallels on the
  // centre's meridian (both in the graticule frame).
  double ct = (90.0 - (v.projection == Projection::Mollweide ? 0.0 : v.latDeg)) * kDeg, cp = v.lonDeg * kDeg;
  mapToFrame(g.frame, coordsys, ct, cp);
  const double cLat = 90.0 - ct / kDeg, cLon = cp / kDeg;
  const bool galactic = g.frame == Frame::Galactic || (g.frame == Frame::Native && frameOf(coordsys) == 'G');
  const bool equatorial = g.frame == Frame::Equatorial || (g.frame == Frame::Native && frameOf(coordsys) == 'E');
  auto place = [&](double lat, double lon, const QString& text) {
    double theta = (90.0 - std::clamp(lat, -89.999, 89.999)) * kDeg, phi = lon * kDeg;
    frameToMap(g.frame, coordsys, theta, phi);
    double u = 0, w = 0;
    if (projectDir(v, theta, phi, u, w) && u >= 0 && u <= 1 && w >= 0 && w <= 1) g.labels.push_back({QPointF(u, w), text});
  };
  for (double lon = 0; lon < 360.0 - 1e-9; lon += stepDeg) {
    const QString t = equatorial ? QStringLiteral("%1h").arg(lon / 15.0, 0, 'g', 3)
                                 : QStringLiteral("%1%2°").arg(galactic ? QStringLiteral("l ") : QString()).arg(lon, 0, 'g', 4);
    place(cLat, lon, t);
  }
  for (double lat = -90.0 + stepDeg; lat < 90.0 - 1e-9; lat += stepDeg)
    place(lat, cLon, QStringLiteral("%1%2°").arg(galactic ? QStringLiteral("b ") : QString()).arg(lat, 0, 'g', 3));
  return g;
}

QImage composeFigure(const QImage& map, const Graticule& g, const ScaleMap& scale, ColourMap cmap, const QString& label,
                     int scaleUp) {
  if (map.isNull()) return {};
  scaleUp = std::max(1, scaleUp);
  const int mw = map.width() * scaleUp, mh = map.height() * scaleUp;
  const int margin = 24, barH = 18, textH = 18;
  QImage out(mw + 2 * margin, mh + margin + 12 + barH + 2 * textH + margin, QImage::Format_RGB32);
  out.fill(Qt::white);
  QPainter p(&out);
  p.setRenderHint(QPainter::Antialiasing, true);
  const QRectF r(margin, margin, mw, mh);
  p.drawImage(r, map);
  // Graticule: thin translucent dark lines, labels in a small font.
  p.setPen(QPen(QColor(20, 20, 20, 150), 1.0));
  for (const auto& line : g.lines)
    for (const auto& piece : line.pieces) {
      QPolygonF q;
      for (const QPointF& pt : piece) q << QPointF(r.left() + pt.x() * mw, r.top() + pt.y() * mh);
      p.drawPolyline(q);
    }
  QFont f = p.font();
  f.setPixelSize(11);
  p.setFont(f);
  p.setPen(QColor(10, 10, 10));
  for (const auto& l : g.labels) p.drawText(QPointF(r.left() + l.at.x() * mw + 2, r.top() + l.at.y() * mh - 2), l.text);
  // Colour bar with 5 ticks labelled through the scaling.
  const double bw = std::max(160.0, 0.6 * mw);
  const QRectF bar(r.center().x() - bw / 2, r.bottom() + 12, bw, barH);
  const auto& lut = colourTable(cmap);
  for (int i = 0; i < int(bw); ++i) {
    const int k = std::clamp(int(std::lround(255.0 * i / std::max(1.0, bw - 1))), 0, 255);
    p.setPen(QColor::fromRgb(lut[std::size_t(k)]));
    p.drawLine(QPointF(bar.left() + i + 0.5, bar.top()), QPointF(bar.left() + i + 0.5, bar.bottom()));
  }
  p.setPen(QPen(Qt::black, 1.0));
  p.setBrush(Qt::NoBrush);
  p.drawRect(bar);
  const QFontMetrics fm(f);
  for (int k = 0; k <= 4; ++k) {
    const double t = k / 4.0, x = bar.left() + t * bar.width();
    p.drawLine(QPointF(x, bar.bottom()), QPointF(x, bar.bottom() + 4));
    const QString s = QString::number(scale.inverse(t), 'g', 4);
    p.drawText(QRectF(x - 60, bar.bottom() + 4, 120, textH), Qt::AlignHCenter | Qt::AlignTop, s);
  }
  const char* sc = scale.scaling() == Scaling::Log ? "log" : scale.scaling() == Scaling::HistEq ? "histogram-equalised" : "linear";
  p.drawText(QRectF(bar.left(), bar.bottom() + 4 + textH, bar.width(), textH), Qt::AlignHCenter | Qt::AlignTop,
             QStringLiteral("%1 (%2, %3)").arg(label, QString::fromLatin1(sc), QString::fromLatin1(colourMapName(cmap))));
  p.end();
  return out;
}

}  // namespace almagest::ui::sky
