#pragma once
// The combined point set of an N-point job: data first, then randoms (GRAMSCI index order), with
// signed normalised weights (data sum to +1, randoms to -1).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "almagest/io/catalogue.hpp"

namespace almagest::npcf {

struct PointSet {
  std::vector<double> x, y, z;  ///< Mpc/h
  std::vector<double> w;        ///< signed normalised weights
  std::size_t ndata = 0;        ///< points [0, ndata) are data, [ndata, size) randoms
  double data_weight_sum = 0;   ///< sum of raw data weights before normalisation
  double random_weight_sum = 0; ///< sum of raw random weights before normalisation
  double data_w2_sum = 0;       ///< sum of squared normalised data weights (analytic randoms)
  std::size_t size() const noexcept { return x.size(); }
  bool has_randoms() const noexcept { return size() > ndata; }
};

/// Builds the point set. `randoms` may be null (periodic box with analytic randoms).
/// Throws ConfigError/IoError naming the catalogue on: empty data, non-finite values, weights
/// summing to zero, more than 2^32 - 1 points in total.
PointSet make_point_set(const io::Catalogue& data, const io::Catalogue* randoms);

/// Wraps coordinates into [0, box) (periodic jobs). Throws ConfigError if box <= 0.
void wrap_periodic(PointSet& points, double box);

/// Sorts the data block and the random block of `points` each along a Morton (Z-order) curve of
/// their positions (16 bits per axis over the bounding box of all points, or over [0, box) when
/// box > 0; ties keep the input order), so that consecutive points are close in space. Returns
/// the input index of every point in its new place (new i was old order[i]). Deterministic: the
/// same input gives the same order on every machine and process.
std::vector<std::uint32_t> sort_spatially(PointSet& points, double box = 0);

}  // namespace almagest::npcf
