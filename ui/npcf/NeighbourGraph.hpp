#pragma once
// The neighbour graph around one point, for the catalogue view: its neighbours within the
// binning's range (rmin < d < rmax, as the engine's graph) with their radial bins, and the
// triangles (3pCF) or tetrahedra (4pCF) through it whose sorted/canonical bins are one chosen
// configuration. Points are indexed as the engine indexes them: data first, then randoms.
// Brute force over the catalogue (O(N) for the neighbours, O(k^2) / O(k^3) for the tuples of
// k neighbours, capped): one point at a time, on demand.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "almagest/io/catalogue.hpp"
#include "almagest/npcf/config.hpp"

namespace almagest::ui {

struct NeighbourGraph {
  std::size_t hub = 0;
  std::array<double, 3> centre{0, 0, 0};
  std::vector<std::size_t> index;              ///< neighbours (engine indices), by distance
  std::vector<std::array<double, 3>> position;
  std::vector<int> bin;                        ///< 0-based radial bin of hub -> neighbour
  /// Matching tuples as slots into `index`: triangles (a, b, -1), tetrahedra (a, b, c).
  std::vector<std::array<int, 3>> tuples;
  std::size_t tuplesFound = 0;                 ///< before the cap
  bool capped = false;
};

/// Neighbours of point `hub` (0 <= hub < data + randoms). `randoms` may be null.
NeighbourGraph neighbour_graph(const almagest::io::Catalogue& data, const almagest::io::Catalogue* randoms,
                               std::size_t hub, const almagest::npcf::Binning& bins);

/// Fills g.tuples with the triangles (rowBins: 3 sorted bins) or tetrahedra (6 canonical bins in
/// edge order) through the hub, at most `cap` of them (tuplesFound counts all).
void find_tuples(NeighbourGraph& g, const almagest::npcf::Binning& bins, const std::vector<std::uint8_t>& rowBins,
                 std::size_t cap = 5000);

}  // namespace almagest::ui
