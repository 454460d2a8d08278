// The combined point set: data first, then randoms, weights normalised to +1 / -1.
#include "almagest/npcf/points.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

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

namespace almagest::npcf {

namespace {

/// Spreads the low 16 bits of v to every third bit (bit k -> bit 3k).
std::uint64_t spread3(std::uint64_t v) {
  v &= 0xFFFF;
  v = (v | (v << 16)) & 0x0000FF0000FFull;
  v = (v | (v << 8)) & 0x00F00F00F00Full;
  v = (v | (v << 4)) & 0x0C30C30C30C3ull;
  v = (v | (v << 2)) & 0x249249249249ull;
  return v;
}

}  // namespace

std::vector<std::uint32_t> sort_spatially(PointSet& p, double box) {
  const std::size_t n = p.size();
  std::vector<std::uint32_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
  if (n < 2) return order;
  // One grid for both blocks, so that data and randoms of the same place get the same cell.
  double lo[3], span[3];
  const std::vector<double>* col[3] = {&p.x, &p.y, &p.z};
  for (int d = 0; d < 3; ++d) {
    if (box > 0) {
      lo[d] = 0;
      span[d] = box;
    } else {
      const auto [mn, mx] = std::minmax_element(col[d]->begin(), col[d]->end());
      lo[d] = *mn;
      span[d] = *mx - *mn;
    }
  }
  constexpr double kCells = 65536.0;
  auto cell = [&](int d, double v) -> std::uint64_t {
    if (!(span[d] > 0)) return 0;
    const double t = (v - lo[d]) / span[d] * kCells;
    return t <= 0 ? 0 : t >= kCells - 1 ? 65535 : static_cast<std::uint64_t>(t);
  };
  std::vector<std::uint64_t> key(n);
  for (std::size_t i = 0; i < n; ++i)
    key[i] = spread3(cell(0, p.x[i])) | (spread3(cell(1, p.y[i])) << 1) | (spread3(cell(2, p.z[i])) << 2);

  // Stable LSD radix sort of each block by its 48-bit keys (three 16-bit digits): equal keys
  // keep the input order.
  std::vector<std::uint32_t> tmp(n);
  std::vector<std::size_t> count(65537);
  auto sort_block = [&](std::size_t b0, std::size_t b1) {
    if (b1 - b0 < 2) return;
    std::uint32_t* src = order.data() + b0;
    std::uint32_t* dst = tmp.data() + b0;
    const std::size_t m = b1 - b0;
    for (int shift = 0; shift < 48; shift += 16) {
      std::fill(count.begin(), count.end(), 0);
      for (std::size_t k = 0; k < m; ++k) ++count[((key[src[k]] >> shift) & 0xFFFF) + 1];
      for (std::size_t c = 1; c < count.size(); ++c) count[c] += count[c - 1];
      for (std::size_t k = 0; k < m; ++k) dst[count[(key[src[k]] >> shift) & 0xFFFF]++] = src[k];
      std::swap(src, dst);
    }
    if (src != order.data() + b0) std::copy(src, src + m, order.data() + b0);
  };
  sort_block(0, p.ndata);
  sort_block(p.ndata, n);
  bool identity = true;
  for (std::size_t i = 0; i < n && identity; ++i) identity = order[i] == i;
  if (identity) return order;
  auto permute = [&](std::vector<double>& v) {
    std::vector<double> out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = v[order[i]];
    v.swap(out);
  };
  permute(p.x);
  permute(p.y);
  permute(p.z);
  permute(p.w);
  return order;
}

}  // namespace almagest::npcf
