#pragma once
// Internal: fast comoving distances for many redshifts (sky catalogues).
#include <cstddef>
#include <vector>

#include "almagest/io/catalogue.hpp"

namespace almagest::io::detail {

/// Largest redshift a sky catalogue may hold (documented with --sky): the comoving table is
/// built over [0, zmax] at a spacing of 1/256 or finer, so zmax bounds its memory (z = 100:
/// under 1 MB at the first spacing, 160 MB at the finest it may reach).
inline constexpr double kMaxRedshift = 100.0;

/// Comoving distance on [0, zmax] by quintic Hermite interpolation (D, D', D'' known exactly at
/// the nodes; node values integrated interval by interval with Gauss-Kronrod). The spacing is
/// halved until the interpolation error, measured against direct integration at every interval
/// midpoint (where it peaks), is below `rel_tol` relative. Throws ConfigError on a bad
/// cosmology or a zmax outside [0, kMaxRedshift], NotConverged if the tolerance cannot be met.
class ComovingTable {
public:
  ComovingTable(const Cosmology& cosmo, double zmax, double rel_tol = 1e-10);
  /// D(z) in Mpc/h for 0 <= z <= zmax (clamped to the table range).
  double operator()(double z) const;
  double max_relative_error() const noexcept { return max_rel_err_; }
  std::size_t intervals() const noexcept { return d_.empty() ? 0 : d_.size() - 1; }

private:
  Cosmology cosmo_;
  double h_ = 0, zmax_ = 0, max_rel_err_ = 0;
  std::vector<double> d_, d1_, d2_;  // D, dD/dz, d2D/dz2 at nodes z_i = i h
};

/// (c/H0) times the integral of 1/E over [z0, z1] with one 15-point Kronrod rule (for short
/// intervals where it is exact to rounding).
double comoving_segment(const Cosmology& cosmo, double z0, double z1);

}  // namespace almagest::io::detail
