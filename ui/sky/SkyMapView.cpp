#include "sky/SkyMapView.hpp"

#include <QLinearGradient>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>

#include <cmath>
#include <numbers>

#include "sky/SkyProjection.hpp"

namespace almagest::ui {

namespace {
constexpr int kMargin = 8;
constexpr double kDeg = 180.0 / std::numbers::pi;

QString number(double v) { return QString::number(v, 'g', 6); }
}  // namespace

SkyMapView::SkyMapView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setAttribute(Qt::WA_OpaquePaintEvent, false);
  setToolTip(tr("The map in the display toolbar's projection (the sky seen from inside: longitude increasing "
                "to the left). Move the mouse over the map to read direction, pixel and value."));
}

void SkyMapView::setMap(sky::SkyMapPtr map, int column, const QImage& image, double min, double max,
                        const QString& label) {
  map_ = std::move(map);
  column_ = column;
  image_ = image;
  min_ = min;
  max_ = max;
  label_ = label;
  update();
}

void SkyMapView::setRender(const sky::ViewSpec& view, const sky::ScaleMap& scale, sky::ColourMap cmap,
                           const sky::Graticule* graticule) {
  view_ = view;
  scale_ = scale;
  cmap_ = cmap;
  showGraticule_ = graticule != nullptr;
  graticule_ = graticule ? *graticule : sky::Graticule{};
  update();
}

QImage SkyMapView::figure(int scaleUp) const {
  return sky::composeFigure(image_, showGraticule_ ? graticule_ : sky::Graticule{}, scale_, cmap_, label_, scaleUp);
}

void SkyMapView::clear() {
  map_.reset();
  image_ = QImage();
  label_.clear();
  update();
  emit hovered(QString());
}

int SkyMapView::barHeight() const { return 14 + 2 * fontMetrics().height() + 6; }

QRectF SkyMapView::imageRect() const {
  if (image_.isNull()) return {};
  const QRectF avail(kMargin, kMargin, width() - 2 * kMargin, height() - 2 * kMargin - barHeight());
  if (avail.width() <= 0 || avail.height() <= 0) return {};
  const double aspect = static_cast<double>(image_.width()) / image_.height();
  double w = avail.width(), h = w / aspect;
  if (h > avail.height()) {
    h = avail.height();
    w = h * aspect;
  }
  return {avail.x() + (avail.width() - w) / 2.0, avail.y() + (avail.height() - h) / 2.0, w, h};
}

bool SkyMapView::probe(const QPointF& pos, Probe* out) const {
  if (!map_ || column_ < 0 || column_ >= static_cast<int>(map_->columns.size())) return false;
  const QRectF r = imageRect();
  if (r.isEmpty() || !r.contains(pos)) return false;
  Probe p;
  if (!sky::unprojectDir(view_, (pos.x() - r.x()) / r.width(), (pos.y() - r.y()) / r.height(), p.theta, p.phi))
    return false;
  p.pixel = sky::ang2pixRing(map_->nside, p.theta, p.phi);
  const auto& col = map_->columns[static_cast<std::size_t>(column_)];
  if (p.pixel < 0 || p.pixel >= static_cast<std::int64_t>(col.size())) return false;
  p.value = col[static_cast<std::size_t>(p.pixel)];
  if (out) *out = p;
  return true;
}

QString SkyMapView::describe(const sky::SkyMapData* map, const Probe& p) {
  const double lat = 90.0 - p.theta * kDeg;
  const double lon = p.phi * kDeg;
  QString where;
  const std::string cs = map ? map->coordsys : std::string();
  if (cs == "G" || cs == "GALACTIC")
    where = tr("l = %1°, b = %2°").arg(lon, 0, 'f', 3).arg(lat, 0, 'f', 3);
  else if (cs == "C" || cs == "Q" || cs == "CELESTIAL" || cs == "EQUATORIAL")
    where = tr("RA = %1°, Dec = %2°").arg(lon, 0, 'f', 3).arg(lat, 0, 'f', 3);
  else if (cs == "E" || cs == "ECLIPTIC")
    where = tr("λ = %1°, β = %2°").arg(lon, 0, 'f', 3).arg(lat, 0, 'f', 3);
  else
    where = tr("θ = %1°, φ = %2°").arg(p.theta * kDeg, 0, 'f', 3).arg(lon, 0, 'f', 3);
  const QString value = sky::isUnseen(p.value) ? tr("UNSEEN") : number(p.value);
  return tr("%1   pixel %2 (RING, nside %3)   value %4")
      .arg(where)
      .arg(p.pixel)
      .arg(map ? map->nside : 0)
      .arg(value);
}

void SkyMapView::mouseMoveEvent(QMouseEvent* event) {
  Probe p;
  if (probe(event->position(), &p)) emit hovered(describe(p));
  else emit hovered(QString());
  QWidget::mouseMoveEvent(event);
}

void SkyMapView::leaveEvent(QEvent* event) {
  emit hovered(QString());
  QWidget::leaveEvent(event);
}

void SkyMapView::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), palette().window());
  if (image_.isNull()) {
    painter.setPen(palette().color(QPalette::PlaceholderText));
    painter.drawText(rect(), Qt::AlignCenter,
                     tr("No map.\nFile > Open map… (Ctrl+O) or File > Open demo map (Ctrl+D)."));
    return;
  }
  const QRectF r = imageRect();
  if (r.isEmpty()) return;
  painter.setRenderHint(QPainter::SmoothPixmapTransform, true);
  painter.setRenderHint(QPainter::Antialiasing, true);
  painter.drawImage(r, image_);
  painter.setPen(QPen(palette().color(QPalette::Mid), 1.0));
  painter.setBrush(Qt::NoBrush);
  if (view_.projection == sky::Projection::Gnomonic) painter.drawRect(r);
  else painter.drawEllipse(r);
  if (showGraticule_) {
    painter.setPen(QPen(QColor(20, 20, 20, 140), 1.0));
    for (const auto& line : graticule_.lines)
      for (const auto& piece : line.pieces) {
        QPolygonF q;
        for (const QPointF& pt : piece) q << QPointF(r.left() + pt.x() * r.width(), r.top() + pt.y() * r.height());
        painter.drawPolyline(q);
      }
    painter.setPen(palette().color(QPalette::WindowText));
    for (const auto& l : graticule_.labels)
      painter.drawText(QPointF(r.left() + l.at.x() * r.width() + 2, r.top() + l.at.y() * r.height() - 2), l.text);
  }

  // Colour bar: 60% of the image width, centred below it; min and max at its ends.
  const QFontMetrics fm = fontMetrics();
  const double bw = std::max(120.0, r.width() * 0.6);
  const QRectF bar(r.center().x() - bw / 2.0, r.bottom() + 6, bw, 14);
  QLinearGradient grad(bar.topLeft(), bar.topRight());
  const auto& lut = sky::colourTable(cmap_);
  for (int i = 0; i < 256; i += 5) grad.setColorAt(i / 255.0, QColor::fromRgb(lut[static_cast<std::size_t>(i)]));
  grad.setColorAt(1.0, QColor::fromRgb(lut[255]));
  painter.setPen(QPen(palette().color(QPalette::WindowText), 1.0));
  painter.setBrush(grad);
  painter.drawRect(bar);
  const double textY = bar.bottom() + 2;
  const bool haveScale = scale_.hi() > scale_.lo();
  const QString lo = number(haveScale ? scale_.lo() : min_), hi = number(haveScale ? scale_.hi() : max_);
  painter.drawText(QRectF(bar.left() - 200, textY, 200 + fm.horizontalAdvance(lo), fm.height()),
                   Qt::AlignRight | Qt::AlignTop, lo);
  painter.drawText(QRectF(bar.right() - fm.horizontalAdvance(hi), textY, 200 + fm.horizontalAdvance(hi),
                          fm.height()),
                   Qt::AlignLeft | Qt::AlignTop, hi);
  if (haveScale && scale_.scaling() != sky::Scaling::Linear) {
    // Non-linear scalings: the value at the bar's middle says how the colours are spread.
    const QString mid = number(scale_.inverse(0.5));
    painter.drawText(QRectF(bar.center().x() - 100, textY, 200, fm.height()), Qt::AlignHCenter | Qt::AlignTop, mid);
  }
  painter.drawText(QRectF(bar.left(), textY + fm.height(), bar.width(), fm.height()),
                   Qt::AlignHCenter | Qt::AlignTop, label_);
}

}  // namespace almagest::ui
