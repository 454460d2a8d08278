#pragma once
// Drawing HEALPix maps: projections (Mollweide, orthographic, gnomonic) about a chosen centre,
// colour maps (viridis, a diverging blue-white-red, grey), value scalings (linear, log,
// histogram-equalised) over a chosen range, graticules (the map's own frame, equatorial RA/Dec or
// Galactic l/b, converted into the map's frame with the IAU J2000 rotation) with labels, and the
// exported figure (map, graticule, labelled colour bar). Pure functions: no widgets.
//
// Image coordinates are normalised: u in [0, 1] to the right, v in [0, 1] downwards. Every
// projection draws the sky as seen from inside (longitude increasing to the LEFT, north up), as
// healpy's mollview / orthview / gnomview do. Mollweide images are 2:1, the others 1:1.
// Angles are radians (theta colatitude, phi longitude, as HEALPix) unless named ...Deg.
#include <QImage>
#include <QPolygonF>
#include <QRgb>
#include <QSize>
#include <QString>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "almagest/core/job_context.hpp"

namespace almagest::ui::sky {

enum class Projection { Mollweide, Orthographic, Gnomonic };
enum class ColourMap { Viridis, Diverging, Grey };
enum class Scaling { Linear, Log, HistEq };
/// Graticule frame: the map's own coordinates, or equatorial / Galactic whatever the map's are.
enum class Frame { Native, Equatorial, Galactic };

struct ViewSpec {
  Projection projection = Projection::Mollweide;
  double lonDeg = 0.0, latDeg = 0.0;  ///< centre of the view (Mollweide: latitude ignored)
  double fovDeg = 60.0;               ///< gnomonic: full width of the square field (< 180)
  bool operator==(const ViewSpec&) const = default;
};

/// Image size for a projection at `base` pixels tall: Mollweide 2 base x base, others base x base.
QSize imageSize(const ViewSpec& v, int base);

/// (theta, phi) -> normalised image position; false when the direction is not drawn (the far
/// hemisphere of an orthographic view, outside a gnomonic field).
bool projectDir(const ViewSpec& v, double theta, double phi, double& u, double& w);
/// Normalised image position -> (theta, phi); false outside the projection.
bool unprojectDir(const ViewSpec& v, double u, double w, double& theta, double& phi);

/// RING pixel under every image pixel centre (row-major, top row first), -1 outside. Checks the
/// cancel token once per row.
std::vector<std::int64_t> projectionLookup(const ViewSpec& v, int nside, int width, int height,
                                           const JobContext& ctx = {});

/// 256-entry colour tables: viridis (SkyProjection's), a diverging blue-white-red (Moreland's
/// cool-warm end points through white, symmetric about the middle entry), and grey.
const std::array<QRgb, 256>& colourTable(ColourMap m);
const char* colourMapName(ColourMap m);

/// The value -> colour-table position map of a scaling over [lo, hi]:
///  Linear: t = (v - lo) / (hi - lo);
///  Log: DS9's log, t = log10(1000 x + 1) / 3 with x the linear t (works for any sign of lo);
///  HistEq: t = the fraction of the seen values in [lo, hi] below v (mid-rank for ties), so the
///          equalised values of a map are uniformly spread over [0, 1].
/// Values outside [lo, hi] are clamped. index(v) is the table entry (0..255; for Linear exactly
/// colouriseMollweide's rounding), inverse(t) the value at position t (colour-bar ticks).
class ScaleMap {
public:
  ScaleMap() = default;
  ScaleMap(Scaling s, std::span<const double> values, double lo, double hi);
  double position(double v) const;
  int index(double v) const;
  double inverse(double t) const;
  Scaling scaling() const noexcept { return s_; }
  double lo() const noexcept { return lo_; }
  double hi() const noexcept { return hi_; }

private:
  Scaling s_ = Scaling::Linear;
  double lo_ = 0.0, hi_ = 1.0;
  std::vector<double> sorted_;  ///< HistEq: seen values within [lo, hi], ascending
};

/// Masked pixels (a mask map's zero or UNSEEN pixels) are drawn blended with this colour, in the
/// 2D views and on the sphere alike.
inline constexpr QRgb kMaskColour = 0xffff00ffu;  // magenta: in none of the colour tables
inline constexpr double kDefaultMaskOpacity = 0.5;

/// c blended with kMaskColour: (1 - opacity) c + opacity kMaskColour per channel (rounded),
/// opaque. opacity is clamped to [0, 1].
QRgb maskedColour(QRgb c, double opacity) noexcept;
/// The colour every view draws for value v: UNSEEN kUnseenColour, else table[scale.index(v)];
/// masked: then blended through maskedColour.
QRgb pixelColour(double v, const ScaleMap& scale, ColourMap map, bool masked = false,
                 double maskOpacity = kDefaultMaskOpacity);

/// Colours `values` through `lookup` (width x height entries): outside kBackground (transparent),
/// else pixelColour(v) (UNSEEN grey). `masked` (empty, or one flag per RING pixel of `values`)
/// marks the pixels drawn blended with kMaskColour at maskOpacity. ARGB32.
QImage colourise(std::span<const std::int64_t> lookup, int width, int height, std::span<const double> values,
                 const ScaleMap& scale, ColourMap map, std::span<const std::uint8_t> masked = {},
                 double maskOpacity = kDefaultMaskOpacity);

/// The mask flags of a mask map (RING values): masked where the value is 0 or UNSEEN, as the
/// sht jobs' --mask reads a map (observed where non-zero and not UNSEEN).
std::vector<std::uint8_t> maskFlags(std::span<const double> maskValues);

/// Direction conversion between the map's frame and a graticule frame. `coordsys` is the map's
/// COORDSYS ("C"/"Q"/"EQUATORIAL"/"CELESTIAL", "G"/"GALACTIC"; anything else is only Native).
/// False when the conversion is unknown (then graticules use the native frame).
bool frameToMap(Frame f, const std::string& coordsys, double& theta, double& phi);
bool mapToFrame(Frame f, const std::string& coordsys, double& theta, double& phi);
/// True when a graticule of frame `f` can be drawn on a map of `coordsys`.
bool frameSupported(Frame f, const std::string& coordsys);

struct GraticuleLine {
  std::vector<QPolygonF> pieces;  ///< normalised image points, split where the line leaves the view
  bool meridian = false;          ///< constant longitude (else constant latitude)
  double valueDeg = 0.0;
};
struct GraticuleLabel {
  QPointF at;  ///< normalised image position
  QString text;
};
struct Graticule {
  std::vector<GraticuleLine> lines;
  std::vector<GraticuleLabel> labels;
  Frame frame = Frame::Native;  ///< the frame drawn (Native when the requested one is unknown)
};
/// Meridians every stepDeg of longitude and parallels every stepDeg of latitude of frame `f`,
/// sampled every 0.5 degree and projected with `v`; labels at the meridians' crossing of the
/// centre parallel and the parallels' crossing of the centre meridian.
Graticule graticule(const ViewSpec& v, Frame f, const std::string& coordsys, double stepDeg = 30.0);

/// The exported figure: the map image (with transparent background on white), the graticule
/// lines and labels, and a colour bar below with 5 labelled ticks (values through
/// scale.inverse), the scaling's name and `label`. `scaleUp` multiplies the image's size.
QImage composeFigure(const QImage& map, const Graticule& g, const ScaleMap& scale, ColourMap cmap,
                     const QString& label, int scaleUp = 1);

}  // namespace almagest::ui::sky
