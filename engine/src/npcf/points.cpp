// The combined point set: data first, then randoms, weights normalised to +1 / -1.
#include "almagest/npcf/points.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "almagest/core/error.hpp"

namespace almagest::npcf {

namespace {

std::string name_of(const io::Catalogue& c, const char* role) {
  return c.source.empty() ? std::string(role) + " catalogue" : c.source;
}

/// Checks one catalogue and returns the raw weight sum (unit weights when c.w is empty).
double check_catalogue(const io::Catalogue& c, const char* role) {
  const std::string file = name_of(c, role);
  const std::size_t n = c.x.size();
  if (c.y.size() != n || c.z.size() != n)
    throw IoError(file, "y/z", std::string("the ") + role +
                                   " catalogue has coordinate columns of different lengths");
  if (!c.w.empty() && c.w.size() != n)
    throw IoError(file, "w", std::string("the ") + role + " catalogue has " + std::to_string(n) +
                                 " coordinates but " + std::to_string(c.w.size()) + " weights");
  const char* names[3] = {"x", "y", "z"};
  const std::vector<double>* cols[3] = {&c.x, &c.y, &c.z};
  for (int d = 0; d < 3; ++d)
    for (std::size_t i = 0; i < n; ++i)
      if (!std::isfinite((*cols[d])[i]))
        throw IoError(file, names[d], "non-finite coordinate in row " + std::to_string(i + 1) +
                                          " of the " + role + " catalogue");
  double sum = 0, abs_sum = 0;
  if (c.w.empty()) {
    sum = abs_sum = static_cast<double>(n);
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      if (!std::isfinite(c.w[i]))
        throw IoError(file, "w", "non-finite weight in row " + std::to_string(i + 1) + " of the " +
                                     role + " catalogue");
      sum += c.w[i];
      abs_sum += std::fabs(c.w[i]);
    }
  }
  if (!(std::fabs(sum) > 1e-14 * abs_sum) || sum == 0)
    throw IoError(file, "w", std::string("the weights of the ") + role +
                                 " catalogue sum to zero; they cannot be normalised");
  return sum;
}

void append(PointSet& p, const io::Catalogue& c, double scale) {
  const std::size_t n = c.x.size();
  p.x.insert(p.x.end(), c.x.begin(), c.x.end());
  p.y.insert(p.y.end(), c.y.begin(), c.y.end());
  p.z.insert(p.z.end(), c.z.begin(), c.z.end());
  for (std::size_t i = 0; i < n; ++i) p.w.push_back((c.w.empty() ? 1.0 : c.w[i]) * scale);
}

}  // namespace

PointSet make_point_set(const io::Catalogue& data, const io::Catalogue* randoms) {
  if (data.size() == 0)
    throw IoError(name_of(data, "data"), "", "the data catalogue is empty (no points)");
  if (randoms && randoms->size() == 0)
    throw IoError(name_of(*randoms, "randoms"), "", "the random catalogue is empty (no points)");
  const std::uint64_t total =
      static_cast<std::uint64_t>(data.size()) + (randoms ? randoms->size() : 0);
  if (total > std::numeric_limits<std::uint32_t>::max())
    throw ConfigError("points", "data plus randoms hold " + std::to_string(total) +
                                    " points, more than the 2^32 - 1 the graph can index (" +
                                    name_of(data, "data") + ")");

  PointSet p;
  p.data_weight_sum = check_catalogue(data, "data");
  if (randoms) p.random_weight_sum = check_catalogue(*randoms, "random");
  p.x.reserve(total);
  p.y.reserve(total);
  p.z.reserve(total);
  p.w.reserve(total);
  append(p, data, 1.0 / p.data_weight_sum);
  p.ndata = data.size();
  if (randoms) append(p, *randoms, -1.0 / p.random_weight_sum);
  double w2 = 0;
  for (std::size_t i = 0; i < p.ndata; ++i) w2 += p.w[i] * p.w[i];
  p.data_w2_sum = w2;
  return p;
}

void wrap_periodic(PointSet& points, double box) {
  if (!(box > 0) || !std::isfinite(box))
    throw ConfigError("box", "a periodic box needs a finite side length > 0");
  auto wrap = [box](std::vector<double>& v) {
    for (double& x : v) {
      if (x >= 0 && x < box) continue;
      double y = x - box * std::floor(x / box);
      if (y >= box || y < 0) y = 0;  // rounding at the upper edge
      x = y;
    }
  };
  wrap(points.x);
  wrap(points.y);
  wrap(points.z);
}

}  // namespace almagest::npcf
