#include "npcf/NeighbourGraph.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "almagest/core/error.hpp"
#include "almagest/npcf/configurations.hpp"

namespace almagest::ui {

namespace {

double dist2(const std::array<double, 3>& a, const std::array<double, 3>& b) {
  const double dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
  return dx * dx + dy * dy + dz * dz;
}

}  // namespace

NeighbourGraph neighbour_graph(const almagest::io::Catalogue& data, const almagest::io::Catalogue* randoms,
                               std::size_t hub, const almagest::npcf::Binning& bins) {
  const std::size_t nd = data.size(), nr = randoms ? randoms->size() : 0;
  if (hub >= nd + nr)
    throw almagest::ConfigError("point", "index " + std::to_string(hub) + " is beyond the " + std::to_string(nd + nr) + " points");
  auto at = [&](std::size_t i) -> std::array<double, 3> {
    if (i < nd) return {data.x[i], data.y[i], data.z[i]};
    const std::size_t k = i - nd;
    return {randoms->x[k], randoms->y[k], randoms->z[k]};
  };
  NeighbourGraph g;
  g.hub = hub;
  g.centre = at(hub);
  const double lo2 = bins.rmin * bins.rmin, hi2 = bins.rmax * bins.rmax;
  std::vector<std::pair<double, std::size_t>> found;
  for (std::size_t i = 0; i < nd + nr; ++i) {
    if (i == hub) continue;
    const double d2 = dist2(at(i), g.centre);
    if (d2 > lo2 && d2 < hi2) found.emplace_back(d2, i);  // strict both ends, on squares
  }
  std::sort(found.begin(), found.end());
  for (const auto& [d2, i] : found) {
    g.index.push_back(i);
    g.position.push_back(at(i));
    g.bin.push_back(bins.bin_of(std::sqrt(d2)));
  }
  return g;
}

void find_tuples(NeighbourGraph& g, const almagest::npcf::Binning& bins, const std::vector<std::uint8_t>& rowBins,
                 std::size_t cap) {
  g.tuples.clear();
  g.tuplesFound = 0;
  g.capped = false;
  const int k = static_cast<int>(g.index.size());
  const double lo2 = bins.rmin * bins.rmin, hi2 = bins.rmax * bins.rmax;
  auto pairBin = [&](int a, int b) {
    const double d2 = dist2(g.position[a], g.position[b]);
    return d2 > lo2 && d2 < hi2 ? bins.bin_of(std::sqrt(d2)) : -1;
  };
  auto keep = [&](std::array<int, 3> t) {
    ++g.tuplesFound;
    if (g.tuples.size() < cap) g.tuples.push_back(t);
    else g.capped = true;
  };
  if (rowBins.size() == 3) {
    std::array<int, 3> want{rowBins[0], rowBins[1], rowBins[2]};
    std::sort(want.begin(), want.end());
    for (int a = 0; a < k; ++a)
      for (int b = a + 1; b < k; ++b) {
        const int bab = pairBin(a, b);
        if (bab < 0) continue;
        std::array<int, 3> t{g.bin[a], g.bin[b], bab};
        std::sort(t.begin(), t.end());
        if (t == want) keep({a, b, -1});
      }
  } else if (rowBins.size() == 6) {
    std::array<int, 6> want;
    for (int e = 0; e < 6; ++e) want[e] = rowBins[e];
    int sign = 0;
    want = almagest::npcf::TetraTable::canonicalise(want, sign);
    // Only neighbours whose spoke bin occurs in the configuration can be a vertex.
    std::vector<int> cand;
    for (int a = 0; a < k; ++a)
      if (std::find(want.begin(), want.end(), g.bin[a]) != want.end()) cand.push_back(a);
    const int m = static_cast<int>(cand.size());
    for (int x = 0; x < m; ++x)
      for (int y = x + 1; y < m; ++y) {
        const int a = cand[x], b = cand[y];
        const int bab = pairBin(a, b);
        if (bab < 0) continue;
        for (int z = y + 1; z < m; ++z) {
          const int c = cand[z];
          const int bac = pairBin(a, c), bbc = pairBin(b, c);
          if (bac < 0 || bbc < 0) continue;
          // Edge order 12 13 14 23 24 34 with the hub as vertex 1.
          const std::array<int, 6> raw{g.bin[a], g.bin[b], g.bin[c], bab, bac, bbc};
          int s = 0;
          if (almagest::npcf::TetraTable::canonicalise(raw, s) == want) keep({a, b, c});
        }
      }
  }
}

}  // namespace almagest::ui
