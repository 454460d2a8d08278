#pragma once
// Pictures of the "Moving objects" window: exposures and stamps in grey with an asinh stretch
// between robust (zscale-like) limits, the best-Z map with a viridis-like colour map, and the strip
// of per-exposure cutouts along a candidate's track. Pure functions of their inputs (no widgets).
#include <QImage>
#include <QRgb>

#include <cstdint>
#include <vector>

#include "almagest/stack/candidates.hpp"
#include "almagest/stack/exposure_stack.hpp"

namespace almagest::ui::stackview {

/// Display limits of an image.
struct Stretch {
  float lo = 0, hi = 1;
};

/// Robust limits of the valid values (finite, mask 0 when a mask is given): the 0.5 and 99.7
/// percentiles of up to ~50,000 evenly strided samples (a zscale-like choice that ignores hot
/// pixels and masked garbage). n values; mask may be null.
Stretch robustStretch(const float* values, const std::uint8_t* mask, std::size_t n);

/// DS9 / IRAF zscale limits (the algorithm of astropy's ZScaleInterval): up to `samples` evenly
/// strided valid values (finite, mask 0), sorted; a straight line fitted to value against rank
/// with iterative k-sigma rejection (krej sigma, rejected ranks dilated by 1% of the sample, at
/// most maxIterations rounds, stopping when nothing more is rejected or fewer than
/// max(minPixels, maxReject * samples) remain); the slope divided by the contrast gives
/// lo = max(min, median - (centre - 1) slope), hi = min(max, median + (npix - centre) slope),
/// centre = (npix - 1) / 2 (integer division). When the fit fails the limits are the sample's
/// min and max. Doubles throughout, so that tests can compare with an independent version.
struct ZScaleOptions {
  int samples = 1000;
  double contrast = 0.25;
  double maxReject = 0.5;
  int minPixels = 5;
  double krej = 2.5;
  int maxIterations = 5;
};
struct ZScaleLimits {
  double lo = 0, hi = 1;
  int sampled = 0, kept = 0;  ///< samples used and left after rejection
  bool fitted = false;        ///< false: min / max of the sample
};
ZScaleLimits zscale(const float* values, const std::uint8_t* mask, std::size_t n, const ZScaleOptions& o = {});

/// How exposures are stretched: zscale (linear, the default as in DS9), robust percentiles with
/// asinh (the earlier default), or manual limits (linear).
enum class StretchMode { ZScale, Robust, Manual };

/// Exposure `e` in grey with `mode` (manual: `manual` limits); the limits used go to `used`.
QImage renderExposureWith(const almagest::stack::ExposureStack& st, int e, StretchMode mode, Stretch manual,
                          Stretch* used = nullptr);

/// Translucent red where exposure `e` is masked or invalid, transparent elsewhere (ARGB32), for
/// StackImageView::setOverlay. Null when the exposure does not exist.
QImage renderMaskOverlay(const almagest::stack::ExposureStack& st, int e);

/// Grey level 0..255 of v: asinh stretch, t = (v - lo) / (hi - lo) clipped to [0, 1],
/// grey = asinh(10 t) / asinh(10).
int asinhGrey(float v, const Stretch& s);

/// Exposure `e` of the stack in grey (W x H, Format_RGB32); masked or invalid pixels dark red.
QImage renderExposure(const almagest::stack::ExposureStack& st, int e, Stretch* used = nullptr);

/// A side x side float stamp in grey (its own robust limits).
QImage renderStamp(const std::vector<float>& values, int side);

/// Viridis-like colour of t in [0, 1].
QRgb viridis(double t);

/// Best-Z map [height][width] coloured with viridis over [0, zMax] (values below 0 as 0).
QImage renderBestZ(const std::vector<float>& z, int width, int height, float zMax);

/// The per-exposure cutouts (radius r, side 2r + 1) around the candidate's predicted pixels, each
/// stretched on its own and drawn y up (as the exposure view), `perRow` to a row, separated by 1-pixel dark gaps; pixels off the image or
/// masked dark red. Returns a null image when the detail has no track.
QImage renderCutoutStrip(const almagest::stack::ExposureStack& st,
                         const almagest::stack::CandidateDetail& d, int r, int perRow);

}  // namespace almagest::ui::stackview
