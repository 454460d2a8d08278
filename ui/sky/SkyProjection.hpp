#pragma once
// Mollweide images of HEALPix RING maps: the projection (healpy's mollview orientation), the
// image-pixel -> HEALPix-pixel lookup, and the viridis-like colour map used to draw values.
//
// Orientation (as healpy mollview): the centre of the image is (lon 0, lat 0), north is up and
// longitude increases to the LEFT (the sky seen from inside). Plane coordinates of the ellipse:
// x in [-2 sqrt 2, 2 sqrt 2], y in [-sqrt 2, sqrt 2]; an image of width w and height h = w / 2
// maps its pixel centres linearly onto that box, so the ellipse touches the four edge midpoints
// and the corners are background.
//
// Angles: theta is the colatitude in [0, pi] (0 = north pole), phi the longitude in [0, 2 pi),
// both radians, as in HEALPix. Pixel indices are RING, 0 .. 12 nside^2 - 1 (64-bit).
#include <QImage>
#include <QRgb>

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "almagest/core/job_context.hpp"

namespace almagest::ui::sky {

/// Image pixels outside the ellipse (fully transparent) and blind (UNSEEN) map pixels (grey).
inline constexpr QRgb kBackground = 0x00000000u;
inline constexpr QRgb kUnseenColour = 0xff808080u;

/// True for healpy's blind value (within 1e-5 relative, as healpy) and for NaN / infinities.
bool isUnseen(double v) noexcept;

/// Inverse Mollweide: plane (x, y) -> (theta, phi). False (outputs untouched) outside the ellipse.
bool mollweideInverse(double x, double y, double& theta, double& phi) noexcept;
/// Forward Mollweide: (theta, phi) -> plane (x, y) (Newton iteration for the auxiliary angle).
void mollweideForward(double theta, double phi, double& x, double& y) noexcept;
/// Normalised image position (u, v in [0, 1], u to the right, v downwards) -> (theta, phi).
bool imageToSky(double u, double v, double& theta, double& phi) noexcept;

/// RING pixel of direction (theta, phi): healpix_cxx Healpix_Base2::ang2pix. nside >= 1.
std::int64_t ang2pixRing(int nside, double theta, double phi);
/// Centre of RING pixel `pix`: healpix_cxx Healpix_Base2::pix2ang.
void pix2angRing(int nside, std::int64_t pix, double& theta, double& phi);

/// For every pixel of a width x height image (row-major, top row first) the RING pixel under its
/// centre, or -1 outside the ellipse. Checks ctx's cancel token once per row (throws Cancelled)
/// and reports progress per 16 rows. Cost: one ang2pix per pixel inside the ellipse (~0.57 M
/// for 1200 x 600), independent of nside.
std::vector<std::int64_t> mollweideLookup(int nside, int width, int height,
                                          const JobContext& ctx = {});

/// Range of the seen (not UNSEEN, finite) values; seen == 0 leaves min = max = 0.
struct ValueRange {
  double min = 0.0, max = 0.0;
  std::int64_t seen = 0, unseen = 0;
};
ValueRange valueRange(std::span<const double> values) noexcept;

/// 256-entry viridis-like table (perceptually uniform; lightness increases monotonically up to
/// 8-bit rounding, which can dip it by less than one quantisation step between neighbours),
/// piecewise linear through the 10 published viridis stops at t = k / 9 (R viridisLite(10)).
const std::array<QRgb, 256>& viridis();
/// Colour of t in [0, 1] (clamped; NaN gives the lowest colour).
QRgb colourAt(double t) noexcept;

/// The Mollweide image: lookup from mollweideLookup (width * height entries), values indexed by
/// RING pixel. Values are scaled linearly from [min, max] onto the colour map (all mid colour
/// when max <= min); UNSEEN pixels are kUnseenColour, outside pixels kBackground. ARGB32.
QImage colouriseMollweide(std::span<const std::int64_t> lookup, int width, int height,
                          std::span<const double> values, double min, double max);

}  // namespace almagest::ui::sky
