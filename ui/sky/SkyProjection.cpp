#include "sky/SkyProjection.hpp"

// healpix_cxx (a private dependency of the engine, linked through it); only this file sees it.
#include <healpix_cxx/healpix_base.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "almagest/sht/config.hpp"

namespace almagest::ui::sky {
namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kSqrt2 = std::numbers::sqrt2;

Healpix_Base2 ringBase(int nside) {
  return Healpix_Base2(static_cast<std::int64_t>(nside), RING, SET_NSIDE);
}

}  // namespace

bool isUnseen(double v) noexcept {
  return !std::isfinite(v) || std::abs(v - sht::kUnseen) <= 1e-5 * std::abs(sht::kUnseen);
}

bool mollweideInverse(double x, double y, double& theta, double& phi) noexcept {
  if (x * x / 8.0 + y * y / 2.0 > 1.0) return false;
  const double s = std::clamp(y / kSqrt2, -1.0, 1.0);
  const double aux = std::asin(s);
  const double sinLat = std::clamp((2.0 * aux + std::sin(2.0 * aux)) / kPi, -1.0, 1.0);
  const double lat = std::asin(sinLat);
  const double c = std::cos(aux);
  // Longitude grows to the left (healpy); at the poles (c = 0) every longitude is the same point.
  double lon = c > 1e-12 ? -kPi * x / (2.0 * kSqrt2 * c) : 0.0;
  lon = std::clamp(lon, -kPi, kPi);
  theta = kPi / 2.0 - lat;
  phi = lon < 0.0 ? lon + 2.0 * kPi : lon;
  if (phi >= 2.0 * kPi) phi -= 2.0 * kPi;
  return true;
}

void mollweideForward(double theta, double phi, double& x, double& y) noexcept {
  const double lat = kPi / 2.0 - theta;
  double lon = std::remainder(phi, 2.0 * kPi);  // (-pi, pi]
  // Solve 2a + sin 2a = pi sin(lat) for the auxiliary angle a by Newton's method.
  const double target = kPi * std::sin(lat);
  double a = lat;
  if (std::abs(std::abs(lat) - kPi / 2.0) < 1e-12) {
    a = lat;
  } else {
    for (int i = 0; i < 50; ++i) {
      const double f = 2.0 * a + std::sin(2.0 * a) - target;
      const double d = 2.0 + 2.0 * std::cos(2.0 * a);
      if (d <= 0.0) break;
      const double step = f / d;
      a -= step;
      if (std::abs(step) < 1e-15) break;
    }
  }
  x = -2.0 * kSqrt2 / kPi * lon * std::cos(a);
  y = kSqrt2 * std::sin(a);
}

bool imageToSky(double u, double v, double& theta, double& phi) noexcept {
  const double x = (2.0 * u - 1.0) * 2.0 * kSqrt2;
  const double y = (1.0 - 2.0 * v) * kSqrt2;
  return mollweideInverse(x, y, theta, phi);
}

std::int64_t ang2pixRing(int nside, double theta, double phi) {
  return ringBase(nside).ang2pix(pointing(theta, phi));
}

void pix2angRing(int nside, std::int64_t pix, double& theta, double& phi) {
  const pointing p = ringBase(nside).pix2ang(pix);
  theta = p.theta;
  phi = p.phi;
}

std::vector<std::int64_t> mollweideLookup(int nside, int width, int height,
                                          const JobContext& ctx) {
  const Healpix_Base2 base = ringBase(nside);
  std::vector<std::int64_t> out(static_cast<std::size_t>(width) * static_cast<std::size_t>(height),
                                -1);
  for (int j = 0; j < height; ++j) {
    ctx.check_cancel();
    const double v = (j + 0.5) / height;
    std::int64_t* row = out.data() + static_cast<std::size_t>(j) * static_cast<std::size_t>(width);
    for (int i = 0; i < width; ++i) {
      double theta = 0.0, phi = 0.0;
      if (imageToSky((i + 0.5) / width, v, theta, phi)) row[i] = base.ang2pix(pointing(theta, phi));
    }
    if (j % 16 == 15 || j == height - 1) ctx.progress(j + 1, height, "projecting (Mollweide)");
  }
  return out;
}

ValueRange valueRange(std::span<const double> values) noexcept {
  ValueRange r;
  double lo = 0.0, hi = 0.0;
  for (const double v : values) {
    if (isUnseen(v)) {
      ++r.unseen;
      continue;
    }
    if (r.seen == 0) lo = hi = v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    ++r.seen;
  }
  r.min = lo;
  r.max = hi;
  return r;
}

const std::array<QRgb, 256>& viridis() {
  static const std::array<QRgb, 256> table = [] {
    // The 10 viridis stops (matplotlib's viridis sampled at k / 9, as R's viridisLite(10)).
    static constexpr int stops[10][3] = {{68, 1, 84},    {72, 40, 120},  {62, 74, 137},
                                         {49, 104, 142}, {38, 130, 142}, {31, 158, 137},
                                         {53, 183, 121}, {109, 205, 89}, {180, 222, 44},
                                         {253, 231, 37}};
    std::array<QRgb, 256> t{};
    for (int i = 0; i < 256; ++i) {
      const double s = i / 255.0 * 9.0;
      const int k = std::min(8, static_cast<int>(s));
      const double f = s - k;
      int c[3];
      for (int ch = 0; ch < 3; ++ch)
        c[ch] = static_cast<int>(std::lround(stops[k][ch] + f * (stops[k + 1][ch] - stops[k][ch])));
      t[static_cast<std::size_t>(i)] = qRgb(c[0], c[1], c[2]);
    }
    return t;
  }();
  return table;
}

QRgb colourAt(double t) noexcept {
  if (!(t > 0.0)) t = 0.0;  // also NaN
  if (t > 1.0) t = 1.0;
  return viridis()[static_cast<std::size_t>(std::lround(t * 255.0))];
}

QImage colouriseMollweide(std::span<const std::int64_t> lookup, int width, int height,
                          std::span<const double> values, double min, double max) {
  QImage img(width, height, QImage::Format_ARGB32);
  if (img.isNull()) return img;
  const auto& lut = viridis();
  const bool flat = !(max > min);
  const double scale = flat ? 0.0 : 255.0 / (max - min);
  const auto npix = static_cast<std::int64_t>(values.size());
  for (int j = 0; j < height; ++j) {
    auto* line = reinterpret_cast<QRgb*>(img.scanLine(j));
    const std::int64_t* row =
        lookup.data() + static_cast<std::size_t>(j) * static_cast<std::size_t>(width);
    for (int i = 0; i < width; ++i) {
      const std::int64_t p = row[i];
      if (p < 0 || p >= npix) {
        line[i] = kBackground;
        continue;
      }
      const double v = values[static_cast<std::size_t>(p)];
      if (isUnseen(v)) {
        line[i] = kUnseenColour;
        continue;
      }
      double k = flat ? 127.5 : (v - min) * scale;
      k = std::clamp(k, 0.0, 255.0);
      line[i] = lut[static_cast<std::size_t>(k + 0.5)];
    }
  }
  return img;
}

}  // namespace almagest::ui::sky
