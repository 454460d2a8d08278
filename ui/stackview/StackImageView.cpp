#include "stackview/StackImageView.hpp"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace almagest::ui::stackview {

namespace {
constexpr double kMinZoom = 0.25, kMaxZoom = 256.0;
constexpr double kWheelStep = 1.25;  // zoom factor per wheel notch
constexpr double kDragThreshold = 4.0;  // screen pixels before a press becomes a pan
}  // namespace

StackImageView::StackImageView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setAutoFillBackground(false);
  setFocusPolicy(Qt::StrongFocus);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void StackImageView::setImage(const QImage& image) {
  const bool sameSize = !image_.isNull() && image.size() == image_.size();
  image_ = image;
  // y up: row 0 of the data is drawn at the bottom, so the drawn picture is the mirrored image.
  flipped_ = image_.isNull() ? QImage() : image_.mirrored(false, true);
  if (!sameSize) {
    zoom_ = 1.0;
    centre_ = image_.isNull() ? QPointF() : QPointF(0.5 * (image_.width() - 1), 0.5 * (image_.height() - 1));
    if (overlay_.size() != image_.size()) setOverlay({});
  }
  update();
}

void StackImageView::setTitle(const QString& title) {
  title_ = title;
  update();
}

void StackImageView::setCircles(const QVector<QPointF>& centres, double radiusPx, int highlighted) {
  circles_ = centres;
  radius_ = radiusPx;
  highlighted_ = highlighted;
  update();
}

void StackImageView::setHighlighted(int index) {
  highlighted_ = index;
  update();
}

void StackImageView::setTrack(const QVector<QPointF>& track) {
  track_ = track;
  update();
}

void StackImageView::setMarker(const QPointF& p, bool visible) {
  marker_ = p;
  markerVisible_ = visible;
  update();
}

void StackImageView::setOverlay(const QImage& overlay) {
  overlay_ = overlay;
  overlayFlipped_ = overlay.isNull() ? QImage() : overlay.mirrored(false, true);
  update();
}

void StackImageView::clearOverlays() {
  circles_.clear();
  track_.clear();
  highlighted_ = -1;
  markerVisible_ = false;
  update();
}

void StackImageView::setYUp(bool on) {
  yUp_ = on;
  update();
}

double StackImageView::fitScale() const {
  if (image_.isNull()) return 1.0;
  return std::max(1e-6, std::min(double(width()) / image_.width(), double(height()) / image_.height()));
}

double StackImageView::scale() const { return fitScale() * zoom_; }

void StackImageView::setZoom(double zoom) {
  const double z = std::clamp(zoom, kMinZoom, kMaxZoom);
  if (z == zoom_) return;
  zoom_ = z;
  update();
  emit viewChanged();
}

void StackImageView::zoomAbout(double factor, const QPointF& anchor) {
  const double old = zoom_;
  const double z = std::clamp(old * factor, kMinZoom, kMaxZoom);
  if (z == old) return;
  // Keep `anchor` fixed on screen: centre' = anchor - (anchor - centre) * old / new.
  centre_ = anchor - (anchor - centre_) * (old / z);
  zoom_ = z;
  update();
  emit viewChanged();
}

void StackImageView::setCentre(const QPointF& imagePos) {
  if (centre_ == imagePos) return;
  centre_ = imagePos;
  update();
  emit viewChanged();
}

QPointF StackImageView::centre() const { return centre_; }

void StackImageView::resetView() {
  zoom_ = 1.0;
  centre_ = image_.isNull() ? QPointF() : QPointF(0.5 * (image_.width() - 1), 0.5 * (image_.height() - 1));
  update();
  emit viewChanged();
}

QPointF StackImageView::map(const QPointF& p, double s, const QPointF& c, const QSizeF& size) const {
  const double dy = (p.y() - c.y()) * s;
  return {0.5 * size.width() + (p.x() - c.x()) * s, 0.5 * size.height() + (yUp_ ? -dy : dy)};
}

QPointF StackImageView::unmap(const QPointF& q, double s, const QPointF& c, const QSizeF& size) const {
  const double dy = (q.y() - 0.5 * size.height()) / s;
  return {c.x() + (q.x() - 0.5 * size.width()) / s, c.y() + (yUp_ ? -dy : dy)};
}

QPointF StackImageView::toImage(const QPointF& pos) const {
  if (image_.isNull()) return {-1, -1};
  const QPointF q = unmap(pos, scale(), centre_, QSizeF(size()));
  if (q.x() < -0.5 || q.y() < -0.5 || q.x() >= image_.width() - 0.5 || q.y() >= image_.height() - 0.5) return {-1, -1};
  return q;
}

QPointF StackImageView::toWidget(const QPointF& p) const {
  if (image_.isNull()) return {};
  return map(p, scale(), centre_, QSizeF(size()));
}

void StackImageView::paintScene(QPainter& p, double s, const QPointF& c, const QSizeF& size) const {
  const int iw = image_.width(), ih = image_.height();
  // The whole image's rectangle on the canvas (top-left is data (-0.5, ih - 0.5) when y is up).
  const QPointF tl = map(QPointF(-0.5, yUp_ ? ih - 0.5 : -0.5), s, c, size);
  const QRectF full(tl, QSizeF(iw * s, ih * s));
  // Draw only the visible source pixels (a 256x zoom of a large image stays cheap).
  const QRectF vis = full.intersected(QRectF(QPointF(0, 0), size));
  if (!vis.isEmpty()) {
    const int x0 = std::max(0, int(std::floor((vis.left() - full.left()) / s)));
    const int y0 = std::max(0, int(std::floor((vis.top() - full.top()) / s)));
    const int x1 = std::min(iw, int(std::ceil((vis.right() - full.left()) / s)));
    const int y1 = std::min(ih, int(std::ceil((vis.bottom() - full.top()) / s)));
    const QRectF src(x0, y0, x1 - x0, y1 - y0);
    const QRectF dst(full.left() + x0 * s, full.top() + y0 * s, (x1 - x0) * s, (y1 - y0) * s);
    p.setRenderHint(QPainter::SmoothPixmapTransform, false);
    p.drawImage(dst, yUp_ ? flipped_ : image_, src);
    if (!overlay_.isNull()) p.drawImage(dst, yUp_ ? overlayFlipped_ : overlay_, src);
  }
  p.setRenderHint(QPainter::Antialiasing, true);
  if (track_.size() > 1) {
    QPainterPath path;
    path.moveTo(map(track_.front(), s, c, size));
    for (int i = 1; i < track_.size(); ++i) path.lineTo(map(track_[i], s, c, size));
    p.setBrush(Qt::NoBrush);
    p.setPen(QPen(QColor(0, 0, 0, 170), 6.0, Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin));
    p.drawPath(path);
    p.setPen(QPen(QColor(255, 150, 40), 4.0, Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin));
    p.drawPath(path);
  }
  const double rr = std::max(6.0, radius_ * s);
  for (int i = 0; i < circles_.size(); ++i) {
    const bool hi = i == highlighted_;
    const QPointF w = map(circles_[i], s, c, size);
    const double r = hi ? rr * 1.4 : rr;
    p.setBrush(Qt::NoBrush);
    p.setPen(QPen(QColor(0, 0, 0, 160), hi ? 4.5 : 3.5));
    p.drawEllipse(w, r, r);
    p.setPen(QPen(hi ? QColor(255, 70, 70) : QColor(255, 255, 255), hi ? 2.5 : 1.6));
    p.drawEllipse(w, r, r);
  }
  if (markerVisible_) {
    const QPointF m = map(marker_, s, c, size);
    const double a = std::max(7.0, 1.5 * s);
    for (const auto& [pen, wid] : {std::pair{QColor(0, 0, 0, 170), 4.5}, std::pair{QColor(80, 255, 120), 2.2}}) {
      p.setPen(QPen(pen, wid, Qt::SolidLine, Qt::RoundCap));
      p.drawLine(m + QPointF(-2 * a, 0), m + QPointF(-a, 0));
      p.drawLine(m + QPointF(a, 0), m + QPointF(2 * a, 0));
      p.drawLine(m + QPointF(0, -2 * a), m + QPointF(0, -a));
      p.drawLine(m + QPointF(0, a), m + QPointF(0, 2 * a));
    }
  }
}

QImage StackImageView::renderScene(int scale) const {
  if (image_.isNull() || scale < 1) return {};
  QImage out(image_.width() * scale, image_.height() * scale, QImage::Format_ARGB32_Premultiplied);
  out.fill(Qt::black);
  QPainter p(&out);
  const QPointF c(0.5 * (image_.width() - 1), 0.5 * (image_.height() - 1));
  paintScene(p, scale, c, QSizeF(out.size()));
  p.end();
  return out.convertToFormat(QImage::Format_RGB32);
}

void StackImageView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), QColor(24, 24, 30));
  if (image_.isNull()) {
    p.setPen(QColor(150, 150, 160));
    p.drawText(rect(), Qt::AlignCenter, tr("No image"));
    return;
  }
  paintScene(p, scale(), centre_, QSizeF(size()));
  QString title = title_;
  if (std::abs(zoom_ - 1.0) > 1e-9) title += (title.isEmpty() ? QString() : QStringLiteral(" · ")) + tr("zoom %1×").arg(zoom_, 0, 'g', 3);
  if (!title.isEmpty()) {
    p.setPen(QColor(235, 235, 240));
    p.fillRect(QRectF(6, 4, p.fontMetrics().horizontalAdvance(title) + 8, 18), QColor(0, 0, 0, 150));
    p.drawText(QRectF(10, 4, std::max(10, width() - 16), 20), Qt::AlignLeft | Qt::AlignTop, title);
  }
}

void StackImageView::mouseMoveEvent(QMouseEvent* event) {
  if (pressed_) {
    const QPointF d = event->position() - pressPos_;
    if (!dragged_ && std::hypot(d.x(), d.y()) >= kDragThreshold) dragged_ = true;
    if (dragged_) {
      const double s = scale();
      setCentre(pressCentre_ - QPointF(d.x() / s, yUp_ ? -d.y() / s : d.y() / s));
    }
  }
  const QPointF q = toImage(event->position());
  if (q.x() < -0.5 || q.y() < -0.5) emit hovered(-1, -1);
  else emit hovered(static_cast<int>(std::floor(q.x() + 0.5)), static_cast<int>(std::floor(q.y() + 0.5)));
}

void StackImageView::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton && event->button() != Qt::MiddleButton) return;
  pressed_ = true;
  dragged_ = event->button() == Qt::MiddleButton;  // middle button always pans
  pressPos_ = event->position();
  pressCentre_ = centre_;
}

void StackImageView::mouseReleaseEvent(QMouseEvent* event) {
  if (!pressed_) return;
  pressed_ = false;
  if (dragged_ || event->button() != Qt::LeftButton) return;
  const QPointF q = toImage(event->position());
  if (q.x() >= -0.5 && q.y() >= -0.5) emit clicked(q);
}

void StackImageView::mouseDoubleClickEvent(QMouseEvent* event) {
  if (event->button() == Qt::LeftButton) resetView();
}

void StackImageView::wheelEvent(QWheelEvent* event) {
  if (image_.isNull()) return;
  const double notches = event->angleDelta().y() / 120.0;
  if (notches == 0) return;
  zoomAbout(std::pow(kWheelStep, notches), unmap(event->position(), scale(), centre_, QSizeF(size())));
  event->accept();
}

void StackImageView::keyPressEvent(QKeyEvent* event) {
  const double step = 40.0 / scale();  // 40 screen pixels
  switch (event->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal: zoomAbout(kWheelStep, centre_); break;
    case Qt::Key_Minus: zoomAbout(1.0 / kWheelStep, centre_); break;
    case Qt::Key_0: resetView(); break;
    case Qt::Key_Left: setCentre(centre_ - QPointF(step, 0)); break;
    case Qt::Key_Right: setCentre(centre_ + QPointF(step, 0)); break;
    case Qt::Key_Up: setCentre(centre_ + QPointF(0, yUp_ ? step : -step)); break;
    case Qt::Key_Down: setCentre(centre_ - QPointF(0, yUp_ ? step : -step)); break;
    default: QWidget::keyPressEvent(event); return;
  }
  event->accept();
}

void StackImageView::leaveEvent(QEvent*) { emit hovered(-1, -1); }

}  // namespace almagest::ui::stackview
