#pragma once
// StackImageView: a QImage of image data (row r of the QImage = data row y = r) drawn as FITS and
// DS9 draw it, y UP (row 0 at the bottom), with whole pixels square and no smoothing; zoom (wheel
// about the pointer, +/- keys, 0 or double-click to fit) and pan (drag, arrow keys). Overlays in
// image pixel coordinates (pixel centres at integers): circles (candidates; one highlighted), a
// polyline (a candidate's predicted track, drawn 4 px wide over a dark outline so it shows on any
// background), a cross (its position in the shown exposure) and an optional ARGB overlay image of
// the same size (the mask). Reports the pixel under the mouse and clicks (not drags).
#include <QImage>
#include <QPointF>
#include <QVector>
#include <QWidget>

class QPainter;

namespace almagest::ui::stackview {

class StackImageView : public QWidget {
  Q_OBJECT
public:
  explicit StackImageView(QWidget* parent = nullptr);

  /// A new image of the same size keeps the zoom and pan (blinking); another size fits it.
  void setImage(const QImage& image);
  const QImage& image() const noexcept { return image_; }
  /// Title drawn in the top-left corner (e.g. "exposure 3 / 24").
  void setTitle(const QString& title);
  /// Circles of radius `radiusPx` image pixels (at least 6 screen pixels); `highlighted` is
  /// drawn thicker and in another colour (-1: none).
  void setCircles(const QVector<QPointF>& centres, double radiusPx, int highlighted = -1);
  void setHighlighted(int index);
  const QVector<QPointF>& circles() const noexcept { return circles_; }
  void setTrack(const QVector<QPointF>& track);
  const QVector<QPointF>& track() const noexcept { return track_; }
  /// Cross at `p` when `visible`.
  void setMarker(const QPointF& p, bool visible);
  /// ARGB image of the same size drawn over the data (null: none), e.g. the mask in translucent red.
  void setOverlay(const QImage& overlay);
  void clearOverlays();

  /// Data y upwards (default, as FITS / DS9); false draws row 0 at the top.
  void setYUp(bool on);
  bool yUp() const noexcept { return yUp_; }
  /// Zoom relative to the fit-to-widget scale (1 = whole image visible), clamped to [1/4, 256].
  void setZoom(double zoom);
  double zoom() const noexcept { return zoom_; }
  /// Zooms by `factor` keeping image point `anchor` (continuous image coordinates) where it is.
  void zoomAbout(double factor, const QPointF& anchor);
  /// The image point (continuous, pixel centres at integers) at the widget's centre.
  void setCentre(const QPointF& imagePos);
  QPointF centre() const;
  /// Fit the whole image (zoom 1, centred).
  void resetView();
  /// Screen pixels per image pixel now.
  double scale() const;

  /// The image with every overlay, `scale` screen pixels per image pixel (whole image, y as the
  /// view draws it, no title): what "Save image" writes. Null without an image.
  QImage renderScene(int scale) const;

  QSize sizeHint() const override { return {420, 420}; }
  QSize minimumSizeHint() const override { return {160, 160}; }

  /// Image pixel (continuous) under widget position `pos`, or (-1, -1) outside the image.
  QPointF toImage(const QPointF& pos) const;
  QPointF toWidget(const QPointF& imagePos) const;

signals:
  /// Pixel under the mouse (integers, centres at integers); (-1, -1) when outside.
  void hovered(int x, int y);
  void clicked(QPointF imagePos);
  /// Zoom or pan changed (linked views follow through setZoom / setCentre).
  void viewChanged();

protected:
  void paintEvent(QPaintEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void leaveEvent(QEvent* event) override;

private:
  /// Image point -> point of a canvas of `size` whose scale is `s` and centre image point `c`.
  QPointF map(const QPointF& p, double s, const QPointF& c, const QSizeF& size) const;
  QPointF unmap(const QPointF& q, double s, const QPointF& c, const QSizeF& size) const;
  void paintScene(QPainter& p, double s, const QPointF& c, const QSizeF& size) const;
  double fitScale() const;

  QImage image_, flipped_, overlay_, overlayFlipped_;
  QString title_;
  QVector<QPointF> circles_;
  double radius_ = 2.0;
  int highlighted_ = -1;
  QVector<QPointF> track_;
  QPointF marker_;
  bool markerVisible_ = false;
  bool yUp_ = true;
  double zoom_ = 1.0;
  QPointF centre_;  ///< image coordinates at the widget centre
  QPointF pressPos_, pressCentre_;
  bool pressed_ = false, dragged_ = false;
};

}  // namespace almagest::ui::stackview
