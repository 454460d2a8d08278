#include "almagest/stack/bank.hpp"

#include <algorithm>
#include <cmath>

#include "almagest/core/error.hpp"
#include "almagest/stack/search.hpp"  // kMaxShiftEntries

namespace almagest::stack {

namespace {
std::vector<double> linspace(double a, double b, int n) {
  std::vector<double> v(n);
  for (int i = 0; i < n; ++i) v[i] = n == 1 ? a : a + (b - a) * double(i) / double(n - 1);
  return v;
}
void check_range(const char* field, double a, double b, int n) {
  if (n <= 0) throw ConfigError(field, "number of grid values must be positive, got " + std::to_string(n));
  if (!std::isfinite(a) || !std::isfinite(b)) throw ConfigError(field, "range limits must be finite");
  if (b < a) throw ConfigError(field, "range maximum is below its minimum");
}
}  // namespace

std::int32_t nearest_pixel(double x) { return static_cast<std::int32_t>(std::floor(x + 0.5)); }

TrajectoryBank TrajectoryBank::cartesian(double vx_min, double vx_max, int nvx, double vy_min,
                                         double vy_max, int nvy) {
  check_range("bank.vx", vx_min, vx_max, nvx);
  check_range("bank.vy", vy_min, vy_max, nvy);
  TrajectoryBank b;
  b.kind = BankKind::Cartesian;
  b.nvx = nvx;
  b.nvy = nvy;
  b.grid_vx = linspace(vx_min, vx_max, nvx);
  b.grid_vy = linspace(vy_min, vy_max, nvy);
  b.vx.reserve(std::size_t(nvx) * nvy);
  for (int j = 0; j < nvy; ++j)
    for (int i = 0; i < nvx; ++i) {
      b.vx.push_back(b.grid_vx[i]);
      b.vy.push_back(b.grid_vy[j]);
    }
  return b;
}

TrajectoryBank TrajectoryBank::speed_angle(double smin, double smax, int ns, double centre,
                                           double half, int na) {
  check_range("bank.speed", smin, smax, ns);
  check_range("bank.angle", centre - half, centre + half, na);
  if (smin < 0) throw ConfigError("bank.speed", "speeds must be non-negative");
  TrajectoryBank b;
  b.kind = BankKind::SpeedAngle;
  const auto sp = linspace(smin, smax, ns);
  const auto an = linspace(centre - half, centre + half, na);
  for (int a = 0; a < na; ++a)
    for (int s = 0; s < ns; ++s) {
      b.vx.push_back(sp[s] * std::cos(an[a]));
      b.vy.push_back(sp[s] * std::sin(an[a]));
    }
  return b;
}

TrajectoryBank TrajectoryBank::list(std::vector<double> vx, std::vector<double> vy) {
  if (vx.size() != vy.size())
    throw ConfigError("bank.velocities", "vx and vy lists differ in length (" +
                                             std::to_string(vx.size()) + " vs " + std::to_string(vy.size()) + ")");
  if (vx.empty()) throw ConfigError("bank.velocities", "the velocity list is empty");
  for (std::size_t i = 0; i < vx.size(); ++i)
    if (!std::isfinite(vx[i]) || !std::isfinite(vy[i]))
      throw ConfigError("bank.velocities", "velocity " + std::to_string(i) + " is not finite");
  TrajectoryBank b;
  b.kind = BankKind::Explicit;
  b.vx = std::move(vx);
  b.vy = std::move(vy);
  return b;
}

ShiftTable compute_shifts(const TrajectoryBank& bank, const std::vector<double>& mjd,
                          double reference_mjd, const std::vector<double>& dx,
                          const std::vector<double>& dy) {
  const int n = static_cast<int>(mjd.size());
  if (bank.size() == 0) throw ConfigError("bank", "the trajectory bank is empty");
  if (!dx.empty() && dx.size() != mjd.size())
    throw ConfigError("curve_dx", "common-curve offsets hold " + std::to_string(dx.size()) + " values for " + std::to_string(n) + " exposures");
  if (!dy.empty() && dy.size() != mjd.size())
    throw ConfigError("curve_dy", "common-curve offsets hold " + std::to_string(dy.size()) + " values for " + std::to_string(n) + " exposures");
  ShiftTable s;
  s.n_vel = static_cast<int>(bank.size());
  s.n_exp = n;
  auto shift = [&](double v, int e, const std::vector<double>& off, const char* field) {
    const double t = mjd[e] - reference_mjd;
    const double x = v * t + (off.empty() ? 0.0 : off[e]);
    if (!std::isfinite(x) || std::fabs(x) > 1e9)
      throw ConfigError(field, "predicted shift " + std::to_string(x) + " px at exposure " + std::to_string(e) + " is out of range");
    return nearest_pixel(x);
  };
  if (std::uint64_t(bank.size()) * std::uint64_t(n) > kMaxShiftEntries)
    throw ConfigError("bank", std::to_string(bank.size()) + " velocities x " + std::to_string(n) +
                                  " exposures is more than the " + std::to_string(kMaxShiftEntries) +
                                  " shift-table entries a search accepts");
  s.sx.resize(std::size_t(s.n_vel) * n);
  s.sy.resize(std::size_t(s.n_vel) * n);
  for (int v = 0; v < s.n_vel; ++v)
    for (int e = 0; e < n; ++e) {
      s.sx[std::size_t(v) * n + e] = shift(bank.vx[v], e, dx, "bank.vx");
      s.sy[std::size_t(v) * n + e] = shift(bank.vy[v], e, dy, "bank.vy");
    }
  if (bank.separable()) {
    s.nvx = bank.nvx;
    s.nvy = bank.nvy;
    s.sxi.resize(std::size_t(bank.nvx) * n);
    s.syj.resize(std::size_t(bank.nvy) * n);
    for (int i = 0; i < bank.nvx; ++i)
      for (int e = 0; e < n; ++e) s.sxi[std::size_t(i) * n + e] = shift(bank.grid_vx[i], e, dx, "bank.vx");
    for (int j = 0; j < bank.nvy; ++j)
      for (int e = 0; e < n; ++e) s.syj[std::size_t(j) * n + e] = shift(bank.grid_vy[j], e, dy, "bank.vy");
  }
  if (!s.sx.empty()) {
    auto [a, b] = std::minmax_element(s.sx.begin(), s.sx.end());
    s.min_sx = *a;
    s.max_sx = *b;
    auto [c, d] = std::minmax_element(s.sy.begin(), s.sy.end());
    s.min_sy = *c;
    s.max_sy = *d;
  }
  return s;
}

void compute_fractional_shifts(ShiftTable& s, const TrajectoryBank& bank, const std::vector<double>& mjd,
                               double reference_mjd, const std::vector<double>& dx, const std::vector<double>& dy) {
  const int n = static_cast<int>(mjd.size());
  const std::size_t total = bank.size() * std::size_t(n);
  s.fx.resize(total);
  s.fy.resize(total);
  s.wx.resize(total);
  s.wy.resize(total);
  for (std::size_t v = 0; v < bank.size(); ++v)
    for (int e = 0; e < n; ++e) {
      const double t = mjd[e] - reference_mjd;
      const double ox = bank.vx[v] * t + (dx.empty() ? 0.0 : dx[e]);
      const double oy = bank.vy[v] * t + (dy.empty() ? 0.0 : dy[e]);
      // compute_shifts bounded |o| <= 1e9 already.
      const double fx = std::floor(ox), fy = std::floor(oy);
      const std::size_t i = v * std::size_t(n) + std::size_t(e);
      s.fx[i] = static_cast<std::int32_t>(fx);
      s.fy[i] = static_cast<std::int32_t>(fy);
      // w < 1 after rounding to float too (a value just below 1 would round up to 1.0f).
      s.wx[i] = std::min(static_cast<float>(ox - fx), std::nextafter(1.0f, 0.0f));
      s.wy[i] = std::min(static_cast<float>(oy - fy), std::nextafter(1.0f, 0.0f));
    }
}

}  // namespace almagest::stack
