#include "npcf/ConfigurationGeometry.hpp"

#include <algorithm>
#include <cmath>

namespace almagest::ui {

namespace {

/// sqrt of v, clamped at 0; `ok` cleared when v is clearly negative (sides that cannot close).
double root(double v, double scale, bool& ok) {
  if (v < -1e-9 * scale * scale) ok = false;
  return std::sqrt(std::max(0.0, v));
}

}  // namespace

std::array<double, 3> bin_colour(int b, int n) {
  // A perceptual ramp (dark violet -> blue -> teal -> green -> yellow), distinct for neighbours.
  const double t = n > 1 ? std::clamp(double(b) / double(n - 1), 0.0, 1.0) : 0.5;
  static const double stops[5][3] = {{0.27, 0.00, 0.33}, {0.23, 0.32, 0.55}, {0.13, 0.57, 0.55}, {0.37, 0.79, 0.38}, {0.99, 0.91, 0.14}};
  const double x = t * 4;
  const int k = std::min(3, static_cast<int>(x));
  const double f = x - k;
  return {stops[k][0] + f * (stops[k + 1][0] - stops[k][0]), stops[k][1] + f * (stops[k + 1][1] - stops[k][1]),
          stops[k][2] + f * (stops[k + 1][2] - stops[k][2])};
}

ConfigurationGeometry triangle_geometry(std::array<double, 3> s) {
  std::sort(s.begin(), s.end());
  ConfigurationGeometry g;
  const double r1 = s[0], r2 = s[1], r3 = s[2];
  bool ok = r1 > 0 && r1 + r2 > r3;
  const double cx = r1 > 0 ? (r1 * r1 + r2 * r2 - r3 * r3) / (2 * r1) : 0.0;
  const double cy = root(r2 * r2 - cx * cx, r3, ok);
  g.vertices = {{0, 0, 0}, {r1, 0, 0}, {cx, cy, 0}};
  g.edges = {{0, 1}, {0, 2}, {1, 2}};
  g.lengths = {r1, r2, r3};
  g.realisable = ok && cy > 1e-9 * r3;
  return g;
}

ConfigurationGeometry tetrahedron_geometry(const std::array<double, 6>& d, bool mirror) {
  ConfigurationGeometry g;
  const double d12 = d[0], d13 = d[1], d14 = d[2], d23 = d[3], d24 = d[4], d34 = d[5];
  const double scale = *std::max_element(d.begin(), d.end());
  bool ok = d12 > 0;
  const double x3 = d12 > 0 ? (d12 * d12 + d13 * d13 - d23 * d23) / (2 * d12) : 0.0;
  const double y3 = root(d13 * d13 - x3 * x3, scale, ok);
  const double x4 = d12 > 0 ? (d12 * d12 + d14 * d14 - d24 * d24) / (2 * d12) : 0.0;
  const double y4 = y3 > 0 ? ((d14 * d14 + x3 * x3 + y3 * y3 - d34 * d34) / 2 - x4 * x3) / y3 : 0.0;
  if (!(y3 > 0)) ok = false;
  double z4 = root(d14 * d14 - x4 * x4 - y4 * y4, scale, ok);
  if (mirror) z4 = -z4;
  g.vertices = {{0, 0, 0}, {d12, 0, 0}, {x3, y3, 0}, {x4, y4, z4}};
  g.edges = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};
  g.lengths = {d12, d13, d14, d23, d24, d34};
  // V = v2 . (v3 x v4) / 6 with v2 = (d12, 0, 0): d12 (y3 z4 - 0 y4) / 6.
  g.signed_volume = d12 * (y3 * z4) / 6.0;
  g.realisable = ok && std::abs(g.signed_volume) > 1e-9 * scale * scale * scale;
  return g;
}

}  // namespace almagest::ui
