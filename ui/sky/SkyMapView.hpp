#pragma once
// SkyMapView: draws the Mollweide image of a sky map scaled to the widget (aspect kept), a colour
// bar with the value range below it, and reports what is under the mouse (direction, RING pixel,
// value) through hovered(). The direction is computed from the mouse position with the exact
// inverse projection, so the readout does not depend on the image resolution.
#include <QImage>
#include <QString>
#include <QWidget>

#include <cstdint>

#include "sky/SkyJobs.hpp"
#include "sky/SkyRender.hpp"

namespace almagest::ui {

class SkyMapView : public QWidget {
  Q_OBJECT
public:
  explicit SkyMapView(QWidget* parent = nullptr);

  /// Shows `image` of column `column` of `map` with the colour range [min, max] (`label` names the
  /// quantity and unit under the colour bar). A null map clears the view.
  void setMap(sky::SkyMapPtr map, int column, const QImage& image, double min, double max,
              const QString& label);
  void clear();
  /// How the image was drawn (projection for the readout and outline, scaling and colour map for
  /// the colour bar) and the graticule to draw over it (null: none).
  void setRender(const sky::ViewSpec& view, const sky::ScaleMap& scale, sky::ColourMap cmap,
                 const sky::Graticule* graticule);
  const sky::ViewSpec& viewSpec() const noexcept { return view_; }
  const sky::Graticule& graticule() const noexcept { return graticule_; }
  bool showsGraticule() const noexcept { return showGraticule_; }
  /// The exported figure: image, graticule (when shown) and the labelled colour bar.
  QImage figure(int scaleUp = 1) const;

  const QImage& image() const noexcept { return image_; }
  /// Where the image is drawn (widget coordinates); empty without a map.
  QRectF imageRect() const;

  /// The readout at a widget position; false outside the ellipse or without a map.
  struct Probe {
    double theta = 0.0, phi = 0.0;  ///< radians (colatitude, longitude)
    std::int64_t pixel = -1;        ///< RING
    double value = 0.0;
  };
  bool probe(const QPointF& pos, Probe* out) const;
  /// The status-bar text of a probe: coordinates named after the map's COORDSYS.
  QString describe(const Probe& p) const { return describe(map_.get(), p); }
  /// The same text for a probe of `map` (null: no coordinate names), e.g. from the sphere view.
  static QString describe(const sky::SkyMapData* map, const Probe& p);

  QSize sizeHint() const override { return {900, 520}; }
  QSize minimumSizeHint() const override { return {320, 200}; }

signals:
  /// Text for the status bar; empty when the mouse leaves the map.
  void hovered(const QString& text);

protected:
  void paintEvent(QPaintEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;

private:
  int barHeight() const;

  sky::SkyMapPtr map_;
  int column_ = 0;
  QImage image_;
  double min_ = 0.0, max_ = 0.0;
  QString label_;
  sky::ViewSpec view_;
  sky::ScaleMap scale_;
  sky::ColourMap cmap_ = sky::ColourMap::Viridis;
  sky::Graticule graticule_;
  bool showGraticule_ = false;
};

}  // namespace almagest::ui
