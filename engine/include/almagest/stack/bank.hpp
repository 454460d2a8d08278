#pragma once
// Trajectory banks and the integer shift tables every backend shares.
//
// A trajectory is (x0, y0, vx, vy): integer origin pixel at the reference time, velocity in
// pixels/day. Its predicted pixel in exposure e is KBMOD's nearest pixel
//   x_e = floor(x0 + vx * t_e + dx_e + 0.5),   t_e = mjd_e - reference_mjd,
// with (dx_e, dy_e) an optional known common curve (e.g. parallax) added to every trajectory.
// Because x0 is an integer, x_e = x0 + sx[v][e] with sx = floor(vx t_e + dx_e + 0.5): the shift
// tables below are computed once in double precision on the host and used verbatim by every
// backend (CPU twin, GPU gathers, Fourier path), which is why they agree exactly.
#include <cstdint>
#include <string>
#include <vector>

namespace almagest::stack {

enum class BankKind { Cartesian, SpeedAngle, Explicit };

struct TrajectoryBank {
  BankKind kind = BankKind::Explicit;
  std::vector<double> vx, vy;  ///< [n_vel] pixels/day
  /// Cartesian grids only: velocity v = j * nvx + i has vx = grid_vx[i], vy = grid_vy[j].
  int nvx = 0, nvy = 0;
  std::vector<double> grid_vx, grid_vy;

  std::size_t size() const noexcept { return vx.size(); }
  bool separable() const noexcept { return kind == BankKind::Cartesian; }

  /// nvx x nvy grid, inclusive ranges (n = 1 gives the minimum). Throws ConfigError("bank.*").
  static TrajectoryBank cartesian(double vx_min, double vx_max, int nvx, double vy_min,
                                  double vy_max, int nvy);
  /// KBMOD's default search: speeds [s_min, s_max] x angles [centre - half, centre + half]
  /// (radians, measured from +x towards +y); v = a * n_speed + s.
  static TrajectoryBank speed_angle(double speed_min, double speed_max, int n_speed,
                                    double angle_centre, double angle_half_width, int n_angle);
  static TrajectoryBank list(std::vector<double> vx, std::vector<double> vy);
};

/// Integer shift tables, [n_vel][n_exp] (plus the separable per-axis form for Cartesian banks).
struct ShiftTable {
  int n_vel = 0, n_exp = 0;
  std::vector<std::int32_t> sx, sy;  ///< [n_vel][n_exp]
  int nvx = 0, nvy = 0;              ///< separable form (0 when not separable)
  std::vector<std::int32_t> sxi, syj;  ///< [nvx][n_exp], [nvy][n_exp]
  int min_sx = 0, max_sx = 0, min_sy = 0, max_sy = 0;
  /// Fractional (sub-pixel) mode only, else empty: the exact offset o = v t_e + d_e split as
  /// o = f + w with f = floor(o) and w = o - f in [0, 1) (rounded to float), [n_vel][n_exp]. The
  /// track samples the four pixels (x0 + fx, y0 + fy) .. (x0 + fx + 1, y0 + fy + 1) bilinearly.
  std::vector<std::int32_t> fx, fy;
  std::vector<float> wx, wy;
  bool fractional() const noexcept { return !fx.empty(); }
};

/// t_e = mjd_e - reference_mjd; dx/dy empty or [n_exp]. Throws ConfigError on size mismatch or
/// shifts beyond +-2^30.
ShiftTable compute_shifts(const TrajectoryBank& bank, const std::vector<double>& mjd,
                          double reference_mjd, const std::vector<double>& dx,
                          const std::vector<double>& dy);

/// Fills the fractional tables of `s` (same bank, times and curve as compute_shifts).
void compute_fractional_shifts(ShiftTable& s, const TrajectoryBank& bank, const std::vector<double>& mjd,
                               double reference_mjd, const std::vector<double>& dx, const std::vector<double>& dy);

/// KBMOD's nearest-pixel prediction floor(x + 0.5) as an integer.
std::int32_t nearest_pixel(double x);

}  // namespace almagest::stack
