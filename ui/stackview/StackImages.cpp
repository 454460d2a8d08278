#include "stackview/StackImages.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace almagest::ui::stackview {

namespace {

constexpr QRgb kInvalid = 0xff5a1010;  // dark red: masked / invalid / off the image
constexpr QRgb kGap = 0xff202028;

bool valid(float v, const std::uint8_t* mask, std::size_t i) {
  return std::isfinite(v) && (mask == nullptr || mask[i] == 0);
}

}  // namespace

Stretch robustStretch(const float* values, const std::uint8_t* mask, std::size_t n) {
  Stretch s;
  if (n == 0) return s;
  const std::size_t stride = std::max<std::size_t>(1, n / 50000);
  std::vector<float> v;
  v.reserve(n / stride + 1);
  for (std::size_t i = 0; i < n; i += stride)
    if (valid(values[i], mask, i)) v.push_back(values[i]);
  if (v.empty()) return s;
  auto pct = [&](double q) {
    const std::size_t k = std::min(v.size() - 1, static_cast<std::size_t>(q * double(v.size() - 1) + 0.5));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
  };
  s.lo = pct(0.005);
  s.hi = pct(0.997);
  if (!(s.hi > s.lo)) {
    const auto [mn, mx] = std::minmax_element(v.begin(), v.end());
    s.lo = *mn;
    s.hi = *mx > *mn ? *mx : *mn + 1.0f;
  }
  return s;
}

ZScaleLimits zscale(const float* values, const std::uint8_t* mask, std::size_t n, const ZScaleOptions& o) {
  ZScaleLimits z;
  std::vector<double> v;
  v.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    if (valid(values[i], mask, i)) v.push_back(values[i]);
  if (v.empty()) return z;
  const std::size_t want = std::size_t(std::max(1, o.samples));
  const std::size_t stride = std::max<std::size_t>(1, std::size_t(std::max(1.0, double(v.size()) / double(want))));
  std::vector<double> s;
  for (std::size_t i = 0; i < v.size() && s.size() < want; i += stride) s.push_back(v[i]);
  std::sort(s.begin(), s.end());
  const int npix = int(s.size());
  z.sampled = npix;
  z.lo = s.front();
  z.hi = s.back();
  const int minpix = std::max(o.minPixels, int(npix * o.maxReject));
  const int ngrow = std::max(1, int(npix * 0.01));
  std::vector<char> bad(std::size_t(npix), 0), grown(std::size_t(npix), 0);
  int good = npix, lastGood = npix + 1;
  double slope = 0, icpt = 0;
  bool haveFit = false;
  for (int it = 0; it < o.maxIterations; ++it) {
    if (good >= lastGood || good < minpix) break;
    // Least squares of value against rank over the good samples (centred for accuracy).
    double sx = 0, sy = 0, w = 0;
    for (int i = 0; i < npix; ++i)
      if (!bad[std::size_t(i)]) sx += i, sy += s[std::size_t(i)], w += 1;
    const double mx = sx / w, my = sy / w;
    double sxx = 0, sxy = 0;
    for (int i = 0; i < npix; ++i)
      if (!bad[std::size_t(i)]) {
        const double dx = i - mx;
        sxx += dx * dx;
        sxy += dx * (s[std::size_t(i)] - my);
      }
    slope = sxx > 0 ? sxy / sxx : 0.0;
    icpt = my - slope * mx;
    haveFit = true;
    // k-sigma threshold from the good residuals (population sigma).
    double m1 = 0, m2 = 0;
    for (int i = 0; i < npix; ++i)
      if (!bad[std::size_t(i)]) m1 += s[std::size_t(i)] - (icpt + slope * i);
    m1 /= w;
    for (int i = 0; i < npix; ++i)
      if (!bad[std::size_t(i)]) {
        const double r = s[std::size_t(i)] - (icpt + slope * i) - m1;
        m2 += r * r;
      }
    const double thr = o.krej * std::sqrt(m2 / w);
    for (int i = 0; i < npix; ++i) {
      const double r = s[std::size_t(i)] - (icpt + slope * i);
      if (r < -thr || r > thr) bad[std::size_t(i)] = 1;
    }
    // Dilate the rejected ranks by ngrow (numpy's convolve 'same': [i - ngrow/2, i + (ngrow-1)/2]).
    for (int i = 0; i < npix; ++i) {
      char b = 0;
      for (int j = std::max(0, i - ngrow / 2); j <= std::min(npix - 1, i + (ngrow - 1) / 2) && !b; ++j) b = bad[std::size_t(j)];
      grown[std::size_t(i)] = b;
    }
    bad.swap(grown);
    lastGood = good;
    good = int(std::count(bad.begin(), bad.end(), 0));
  }
  z.kept = good;
  if (haveFit && good >= minpix) {
    if (o.contrast > 0) slope /= o.contrast;
    const int centre = (npix - 1) / 2;
    const double median = npix % 2 ? s[std::size_t(npix / 2)] : 0.5 * (s[std::size_t(npix / 2 - 1)] + s[std::size_t(npix / 2)]);
    z.lo = std::max(z.lo, median - (centre - 1) * slope);
    z.hi = std::min(z.hi, median + (npix - centre) * slope);
    z.fitted = true;
  }
  return z;
}

QImage renderExposureWith(const almagest::stack::ExposureStack& st, int e, StretchMode mode, Stretch manual, Stretch* used) {
  if (mode == StretchMode::Robust) return renderExposure(st, e, used);
  if (e < 0 || std::size_t(e) >= st.size() || st.width <= 0 || st.height <= 0) return {};
  const std::size_t np = st.pixels(), off = std::size_t(e) * np;
  const float* sci = st.sci.data() + off;
  const std::uint8_t* mask = st.mask.size() == st.sci.size() ? st.mask.data() + off : nullptr;
  Stretch s = manual;
  if (mode == StretchMode::ZScale) {
    const ZScaleLimits z = zscale(sci, mask, np);
    s = {float(z.lo), float(z.hi)};
  }
  if (!(s.hi > s.lo)) s.hi = s.lo + 1.0f;
  if (used) *used = s;
  const double inv = 255.0 / (double(s.hi) - s.lo);
  QImage img(st.width, st.height, QImage::Format_RGB32);
  for (int y = 0; y < st.height; ++y) {
    auto* line = reinterpret_cast<QRgb*>(img.scanLine(y));
    for (int x = 0; x < st.width; ++x) {
      const std::size_t i = std::size_t(y) * std::size_t(st.width) + std::size_t(x);
      if (!valid(sci[i], mask, i)) {
        line[x] = kInvalid;
        continue;
      }
      const int g = std::clamp(static_cast<int>(std::lround((double(sci[i]) - s.lo) * inv)), 0, 255);
      line[x] = qRgb(g, g, g);
    }
  }
  return img;
}

QImage renderMaskOverlay(const almagest::stack::ExposureStack& st, int e) {
  if (e < 0 || std::size_t(e) >= st.size() || st.width <= 0 || st.height <= 0) return {};
  const std::size_t np = st.pixels(), off = std::size_t(e) * np;
  const float* sci = st.sci.data() + off;
  const std::uint8_t* mask = st.mask.size() == st.sci.size() ? st.mask.data() + off : nullptr;
  QImage img(st.width, st.height, QImage::Format_ARGB32);
  for (int y = 0; y < st.height; ++y) {
    auto* line = reinterpret_cast<QRgb*>(img.scanLine(y));
    for (int x = 0; x < st.width; ++x) {
      const std::size_t i = std::size_t(y) * std::size_t(st.width) + std::size_t(x);
      line[x] = valid(sci[i], mask, i) ? 0u : qRgba(255, 40, 40, 150);
    }
  }
  return img;
}

int asinhGrey(float v, const Stretch& s) {
  static const double norm = std::asinh(10.0);
  double t = (double(v) - s.lo) / (double(s.hi) - s.lo);
  t = std::clamp(t, 0.0, 1.0);
  return std::clamp(static_cast<int>(std::lround(255.0 * std::asinh(10.0 * t) / norm)), 0, 255);
}

QImage renderExposure(const almagest::stack::ExposureStack& st, int e, Stretch* used) {
  if (e < 0 || std::size_t(e) >= st.size() || st.width <= 0 || st.height <= 0) return {};
  const std::size_t np = st.pixels(), off = std::size_t(e) * np;
  const float* sci = st.sci.data() + off;
  const std::uint8_t* mask = st.mask.size() == st.sci.size() ? st.mask.data() + off : nullptr;
  const Stretch s = robustStretch(sci, mask, np);
  if (used) *used = s;
  QImage img(st.width, st.height, QImage::Format_RGB32);
  for (int y = 0; y < st.height; ++y) {
    auto* line = reinterpret_cast<QRgb*>(img.scanLine(y));
    for (int x = 0; x < st.width; ++x) {
      const std::size_t i = std::size_t(y) * std::size_t(st.width) + std::size_t(x);
      if (!valid(sci[i], mask, i)) {
        line[x] = kInvalid;
        continue;
      }
      const int g = asinhGrey(sci[i], s);
      line[x] = qRgb(g, g, g);
    }
  }
  return img;
}

QImage renderStamp(const std::vector<float>& values, int side) {
  if (side <= 0 || values.size() != std::size_t(side) * std::size_t(side)) return {};
  const Stretch s = robustStretch(values.data(), nullptr, values.size());
  QImage img(side, side, QImage::Format_RGB32);
  for (int y = 0; y < side; ++y) {
    auto* line = reinterpret_cast<QRgb*>(img.scanLine(y));
    for (int x = 0; x < side; ++x) {
      const float v = values[std::size_t(y) * std::size_t(side) + std::size_t(x)];
      const int g = std::isfinite(v) ? asinhGrey(v, s) : 0;
      line[x] = std::isfinite(v) ? qRgb(g, g, g) : kInvalid;
    }
  }
  return img;
}

QRgb viridis(double t) {
  // Samples of matplotlib's viridis at t = 0, 0.125, ..., 1, linearly interpolated.
  static constexpr std::array<std::array<int, 3>, 9> kLut{{{68, 1, 84},
                                                           {71, 44, 122},
                                                           {59, 81, 139},
                                                           {44, 113, 142},
                                                           {33, 144, 141},
                                                           {39, 173, 129},
                                                           {92, 200, 99},
                                                           {170, 220, 50},
                                                           {253, 231, 37}}};
  if (!std::isfinite(t)) t = 0;
  t = std::clamp(t, 0.0, 1.0) * 8.0;
  const int i = std::min(7, static_cast<int>(t));
  const double f = t - i;
  auto mix = [&](int c) {
    return static_cast<int>(std::lround(kLut[std::size_t(i)][std::size_t(c)] * (1 - f) +
                                        kLut[std::size_t(i) + 1][std::size_t(c)] * f));
  };
  return qRgb(mix(0), mix(1), mix(2));
}

QImage renderBestZ(const std::vector<float>& z, int width, int height, float zMax) {
  if (width <= 0 || height <= 0 || z.size() != std::size_t(width) * std::size_t(height)) return {};
  const double top = zMax > 0 ? zMax : 1.0;
  QImage img(width, height, QImage::Format_RGB32);
  for (int y = 0; y < height; ++y) {
    auto* line = reinterpret_cast<QRgb*>(img.scanLine(y));
    for (int x = 0; x < width; ++x) line[x] = viridis(std::max(0.0, double(z[std::size_t(y) * width + x])) / top);
  }
  return img;
}

QImage renderCutoutStrip(const almagest::stack::ExposureStack& st, const almagest::stack::CandidateDetail& d,
                         int r, int perRow) {
  const int n = static_cast<int>(d.px.size());
  if (n == 0 || r < 0 || perRow < 1 || d.py.size() != d.px.size()) return {};
  const int side = 2 * r + 1, cols = std::min(perRow, n), rows = (n + cols - 1) / cols;
  QImage img(cols * (side + 1) + 1, rows * (side + 1) + 1, QImage::Format_RGB32);
  img.fill(kGap);
  const std::size_t np = st.pixels();
  const bool hasMask = st.mask.size() == st.sci.size();
  std::vector<float> cut(std::size_t(side) * std::size_t(side));
  std::vector<std::uint8_t> bad(cut.size());
  for (int e = 0; e < n && std::size_t(e) < st.size(); ++e) {
    for (int v = -r; v <= r; ++v)
      for (int u = -r; u <= r; ++u) {
        const int x = d.px[std::size_t(e)] + u, y = d.py[std::size_t(e)] + v;
        const std::size_t k = std::size_t(v + r) * std::size_t(side) + std::size_t(u + r);
        bad[k] = 1;
        cut[k] = 0;
        if (x < 0 || x >= st.width || y < 0 || y >= st.height) continue;
        const std::size_t i = std::size_t(e) * np + std::size_t(y) * std::size_t(st.width) + std::size_t(x);
        if (!std::isfinite(st.sci[i]) || (hasMask && st.mask[i])) continue;
        cut[k] = st.sci[i];
        bad[k] = 0;
      }
    const Stretch s = robustStretch(cut.data(), bad.data(), cut.size());
    const int ox = 1 + (e % cols) * (side + 1), oy = 1 + (e / cols) * (side + 1);
    for (int y = 0; y < side; ++y) {
      auto* line = reinterpret_cast<QRgb*>(img.scanLine(oy + y));
      for (int x = 0; x < side; ++x) {
        // y up inside each cutout, as the exposure view draws the frames.
        const std::size_t k = std::size_t(side - 1 - y) * std::size_t(side) + std::size_t(x);
        const int g = bad[k] ? 0 : asinhGrey(cut[k], s);
        line[ox + x] = bad[k] ? kInvalid : qRgb(g, g, g);
      }
    }
  }
  return img;
}

}  // namespace almagest::ui::stackview
