#include "stackview/StackImageView.hpp"

#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <cmath>

namespace almagest::ui::stackview {

StackImageView::StackImageView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setAutoFillBackground(false);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void StackImageView::setImage(const QImage& image) {
  image_ = image;
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

void StackImageView::clearOverlays() {
  circles_.clear();
  track_.clear();
  highlighted_ = -1;
  markerVisible_ = false;
  update();
}

QRectF StackImageView::target() const {
  if (image_.isNull()) return {};
  const double sx = double(width()) / image_.width(), sy = double(height()) / image_.height();
  const double s = std::max(1e-6, std::min(sx, sy));
  const double w = s * image_.width(), h = s * image_.height();
  return {0.5 * (width() - w), 0.5 * (height() - h), w, h};
}

QPointF StackImageView::toImage(const QPointF& pos) const {
  const QRectF t = target();
  if (t.isEmpty() || !t.contains(pos)) return {-1, -1};
  const double s = t.width() / image_.width();
  // Pixel centres at integers: the left edge of pixel 0 is at -0.5.
  return {(pos.x() - t.left()) / s - 0.5, (pos.y() - t.top()) / s - 0.5};
}

QPointF StackImageView::toWidget(const QPointF& p) const {
  const QRectF t = target();
  if (t.isEmpty()) return {};
  const double s = t.width() / image_.width();
  return {t.left() + (p.x() + 0.5) * s, t.top() + (p.y() + 0.5) * s};
}

void StackImageView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), QColor(24, 24, 30));
  if (image_.isNull()) {
    p.setPen(QColor(150, 150, 160));
    p.drawText(rect(), Qt::AlignCenter, tr("No image"));
    return;
  }
  const QRectF t = target();
  p.setRenderHint(QPainter::SmoothPixmapTransform, false);
  p.drawImage(t, image_);
  p.setRenderHint(QPainter::Antialiasing, true);
  const double s = t.width() / image_.width();
  if (track_.size() > 1) {
    QPainterPath path;
    path.moveTo(toWidget(track_.front()));
    for (int i = 1; i < track_.size(); ++i) path.lineTo(toWidget(track_[i]));
    p.setPen(QPen(QColor(255, 150, 40, 210), 1.5));
    p.setBrush(Qt::NoBrush);
    p.drawPath(path);
  }
  const double rr = std::max(5.0, radius_ * s);
  for (int i = 0; i < circles_.size(); ++i) {
    const bool hi = i == highlighted_;
    p.setPen(QPen(hi ? QColor(255, 80, 80) : QColor(255, 255, 255, 200), hi ? 2.5 : 1.2));
    p.setBrush(Qt::NoBrush);
    p.drawEllipse(toWidget(circles_[i]), hi ? rr * 1.4 : rr, hi ? rr * 1.4 : rr);
  }
  if (markerVisible_) {
    const QPointF c = toWidget(marker_);
    const double a = std::max(6.0, 1.5 * s);
    p.setPen(QPen(QColor(80, 255, 120), 1.8));
    p.drawLine(c + QPointF(-2 * a, 0), c + QPointF(-a, 0));
    p.drawLine(c + QPointF(a, 0), c + QPointF(2 * a, 0));
    p.drawLine(c + QPointF(0, -2 * a), c + QPointF(0, -a));
    p.drawLine(c + QPointF(0, a), c + QPointF(0, 2 * a));
  }
  if (!title_.isEmpty()) {
    p.setPen(QColor(235, 235, 240));
    const QRectF box(t.left() + 6, t.top() + 4, std::max(10.0, t.width() - 12), 20);
    p.fillRect(QRectF(box.topLeft(), QSizeF(p.fontMetrics().horizontalAdvance(title_) + 8, 18)),
               QColor(0, 0, 0, 140));
    p.drawText(box.adjusted(4, 0, 0, 0), Qt::AlignLeft | Qt::AlignTop, title_);
  }
}

void StackImageView::mouseMoveEvent(QMouseEvent* event) {
  const QPointF q = toImage(event->position());
  if (q.x() < -0.5 || q.y() < -0.5) emit hovered(-1, -1);
  else emit hovered(static_cast<int>(std::floor(q.x() + 0.5)), static_cast<int>(std::floor(q.y() + 0.5)));
}

void StackImageView::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  const QPointF q = toImage(event->position());
  if (q.x() >= -0.5 && q.y() >= -0.5) emit clicked(q);
}

void StackImageView::leaveEvent(QEvent*) { emit hovered(-1, -1); }

}  // namespace almagest::ui::stackview
