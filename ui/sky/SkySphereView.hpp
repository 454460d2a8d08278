#pragma once
// SkySphereView: the shown column of a HEALPix map on a sphere in VTK (a VtkView: left-drag
// rotates, the wheel zooms), one polygon per HEALPix pixel, coloured exactly as the 2D view
// colours it (sky::pixelColour: the same ScaleMap, colour table and UNSEEN grey), with the mask
// overlaid (masked pixels blended with sky::kMaskColour, as in the 2D view), and the pointer
// readout (pixel, angles, value) through hovered(), as the 2D view's.
//
// Orientation: the sphere is seen from outside but mirrored in longitude, so that the picture
// is the sky seen from inside, as the 2D views draw it: looking at (lon, lat) with north up, the
// view is the orthographic view of that centre (longitude increasing to the left). The camera
// is a parallel (orthographic) projection; zoom 1 shows the whole sphere's height.
//
// Resolution: maps up to nside kMaxDisplayNside are drawn pixel for pixel. Larger maps are drawn
// at the largest display nside <= kMaxDisplayNside that divides their nside (HEALPix grids nest
// for integer factors): a display pixel shows the mean of the seen map pixels inside it (UNSEEN
// when none is seen; healpy ud_grade's rule) and is masked when at least half of them are. The
// readout always reports the map's own pixel and value. Pixels of display nside < 16 are drawn
// as several polygons (a finer HEALPix grid), so that large pixels follow the sphere.
// No VTK types in this header.
#include <QRgb>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sky/SkyJobs.hpp"
#include "sky/SkyMapView.hpp"
#include "sky/SkyRender.hpp"

class QLabel;

namespace almagest::ui {

class VtkView;

class SkySphereView : public QWidget {
  Q_OBJECT
public:
  static constexpr int kMaxDisplayNside = 128;

  explicit SkySphereView(QWidget* parent = nullptr);
  ~SkySphereView() override;

  /// Shows column `column` of `map` coloured through `scale` and `cmap`; `masked` (empty or one
  /// flag per RING pixel of the map) is drawn blended at `maskOpacity`. A null map clears.
  void setMap(sky::SkyMapPtr map, int column, const sky::ScaleMap& scale, sky::ColourMap cmap,
              std::vector<std::uint8_t> masked = {}, double maskOpacity = sky::kDefaultMaskOpacity);
  void clear();
  /// Graticule lines on the sphere (as the 2D graticule: meridians and parallels every stepDeg
  /// of `frame`, converted into the map's frame through its COORDSYS; Native when unknown), drawn
  /// just above the surface. Off: none.
  void setGraticule(bool on, sky::Frame frame = sky::Frame::Native, const std::string& coordsys = {},
                    double stepDeg = 30.0);
  /// Graticule lines drawn (0 when off).
  int graticuleLineCount() const;
  /// Angle (radians) from direction (theta, phi) to the nearest sample of the graticule line
  /// (meridian or parallel) of value valueDeg; a large value when there is no such line.
  double graticuleDistance(double theta, double phi, bool meridian, double valueDeg) const;

  /// The display nside of a map of `nside` (see the header comment).
  static int displayNsideFor(int nside);
  int displayNside() const noexcept;
  /// Polygons in the VTK scene (12 n^2 of the tessellation's nside; 0 without a map).
  std::int64_t cellCount() const;
  /// The display pixel (RING at displayNside()) drawing RING pixel `mapPixel` of the map.
  std::int64_t displayPixelOf(std::int64_t mapPixel) const;
  /// The value drawn for a display pixel (the map's value at display nside = nside).
  double displayValue(std::int64_t displayPixel) const;
  bool displayMasked(std::int64_t displayPixel) const;
  /// The RGB colour (alpha 255) the scene's cell scalars give display pixel `displayPixel`.
  QRgb cellColour(std::int64_t displayPixel) const;

  /// Camera looking at (lonDeg, latDeg) with north up; zoom 2 shows half the height.
  void lookAt(double lonDeg, double latDeg, double zoom = 1.0);
  /// Rotates the camera about the sphere: azimuth about the view's up axis, then elevation.
  void rotateBy(double azimuthDeg, double elevationDeg);
  double zoom() const;

  /// Widget position where direction (theta, phi) (radians) is drawn; false on the far side.
  bool screenPosition(double theta, double phi, QPointF* pos) const;
  /// The direction under a widget position; false off the sphere.
  bool directionAt(const QPointF& pos, double* theta, double* phi) const;
  /// The readout under a widget position (the map's RING pixel and value); false off the sphere.
  bool probe(const QPointF& pos, SkyMapView::Probe* out) const;

  VtkView* vtkView() const noexcept { return view_; }

  QSize sizeHint() const override { return {700, 520}; }

signals:
  /// Text for the status bar (SkyMapView::describe's); empty off the sphere.
  void hovered(const QString& text);

protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

private:
  struct Impl;
  void rebuildGeometry(int displayNside);
  void recolour();

  std::unique_ptr<Impl> d_;
  VtkView* view_ = nullptr;
  QLabel* caption_ = nullptr;
};

}  // namespace almagest::ui
