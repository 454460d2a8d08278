#pragma once
// StackImageView: a QImage shown scaled to fit (whole pixels stay square, no smoothing) with
// overlays in image pixel coordinates: circles (candidates; one may be highlighted), a polyline
// (a candidate's predicted track) and a cross (its position in the shown exposure). Reports the
// pixel under the mouse and clicks, in image coordinates (pixel centres at integers).
#include <QImage>
#include <QPointF>
#include <QVector>
#include <QWidget>

namespace almagest::ui::stackview {

class StackImageView : public QWidget {
  Q_OBJECT
public:
  explicit StackImageView(QWidget* parent = nullptr);

  void setImage(const QImage& image);
  const QImage& image() const noexcept { return image_; }
  /// Title drawn in the top-left corner (e.g. "exposure 3 / 24").
  void setTitle(const QString& title);
  /// Circles of radius `radiusPx` image pixels (at least 5 screen pixels); `highlighted` is
  /// drawn thicker and in another colour (-1: none).
  void setCircles(const QVector<QPointF>& centres, double radiusPx, int highlighted = -1);
  void setHighlighted(int index);
  void setTrack(const QVector<QPointF>& track);
  /// Cross at `p`; a null optional-like flag hides it.
  void setMarker(const QPointF& p, bool visible);
  void clearOverlays();

  QSize sizeHint() const override { return {420, 420}; }
  QSize minimumSizeHint() const override { return {160, 160}; }

  /// Image pixel (continuous) under widget position `pos`, or (-1, -1) outside the image.
  QPointF toImage(const QPointF& pos) const;
  QPointF toWidget(const QPointF& imagePos) const;

signals:
  /// Pixel under the mouse (integers, centres at integers); (-1, -1) when outside.
  void hovered(int x, int y);
  void clicked(QPointF imagePos);

protected:
  void paintEvent(QPaintEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;

private:
  QRectF target() const;

  QImage image_;
  QString title_;
  QVector<QPointF> circles_;
  double radius_ = 2.0;
  int highlighted_ = -1;
  QVector<QPointF> track_;
  QPointF marker_;
  bool markerVisible_ = false;
};

}  // namespace almagest::ui::stackview
