#pragma once
// The neighbour graph: a half graph in CSR form. Hub i stores only neighbours j > i with
// rmin < |x_j - x_i| < rmax, sorted by index. Per edge: 32-bit neighbour, 8-bit radial bin
// (0-based), optionally a 16-bit direction pixel of the spoke i -> j. Offsets are 64-bit.
#include <cstdint>
#include <memory>
#include <vector>

#include "almagest/core/job_context.hpp"
#include "almagest/npcf/config.hpp"
#include "almagest/npcf/points.hpp"

namespace almagest::npcf {

struct Graph {
  std::vector<std::uint64_t> offsets;   ///< size N + 1; edges of hub i are [offsets[i], offsets[i+1])
  std::vector<std::uint32_t> neighbour; ///< size E; sorted ascending within a hub, all > hub
  std::vector<std::uint8_t> bin;        ///< size E; 0-based radial bin
  std::vector<std::uint16_t> pixel;     ///< size E or empty; direction pixel of the spoke hub -> neighbour
  int ntheta = 0, nphi = 0;             ///< pixel grid when `pixel` is filled
  /// Edges of the whole graph when this is one process's part of it (npcf/partition.hpp: the
  /// hubs of its range and their neighbours); 0 for a whole graph.
  std::uint64_t whole_edges = 0;

  std::uint64_t num_vertices() const noexcept { return offsets.empty() ? 0 : offsets.size() - 1; }
  std::uint64_t num_edges() const noexcept { return neighbour.size(); }
  /// What results report as graph_edges: the whole graph's edge count, also for a part of it.
  std::uint64_t whole_edge_count() const noexcept { return whole_edges ? whole_edges : neighbour.size(); }
  std::uint64_t memory_bytes() const noexcept;
};

/// Whether a graph built for `config` stores a direction pixel per edge (store_pixels, or the
/// parity 4pCF in pixel mode): the CPU and CUDA graph builds and a split job's parts agree on it.
bool stores_direction_pixels(const NpcfConfig& config);

/// Direction pixel of a unit-less displacement (dx, dy, dz): theta = acos(dz/d) in ntheta equal
/// bins of [0, pi], phi = atan2(dy, dx) in nphi equal bins of [-pi, pi); pixel = itheta*nphi + iphi.
std::uint16_t direction_pixel(double dx, double dy, double dz, int ntheta, int nphi);
/// Unit vector of the pixel centre.
void pixel_centre(int pixel, int ntheta, int nphi, double& ux, double& uy, double& uz);

/// Separation vector j - i (minimum image when periodic).
struct Geometry {
  bool periodic = false;
  double box = 0;
  void delta(const PointSet& p, std::uint64_t i, std::uint64_t j, double& dx, double& dy,
             double& dz) const;
};

/// Builds the graph on the CPU (nanoflann kd-tree; periodic boxes through image queries).
/// Multithreaded; the result does not depend on the thread count. Checks ctx for cancel.
Graph build_graph(const PointSet& points, const NpcfConfig& config, const JobContext& ctx);
/// The same lists, for the hubs with want[i] != 0 only (every other hub has none): what one
/// process of a split job builds (npcf/partition.hpp). want.size() == points.size().
Graph build_graph_hubs(const PointSet& points, const NpcfConfig& config,
                       const std::vector<std::uint8_t>& want, const JobContext& ctx);

/// Cells of side at least rmax over a point set (over the box when periodic; at most about one
/// cell per point): which points can lie within a few rmax of some hubs, so that one process of a
/// split job indexes only the region its hubs need (NeighbourIndex over a subset). Keeps no
/// reference to the points.
class CellGrid {
public:
  CellGrid(const PointSet& points, const NpcfConfig& config);
  /// The points with index >= first in the cells within `reach` cells (per axis, wrapped when
  /// periodic) of the cells of hubs [h0, h1): every point within reach * rmax of one of those hubs
  /// (and some farther). Grouped by cell, ascending within a cell.
  std::vector<std::uint32_t> near(std::uint64_t h0, std::uint64_t h1, int reach, std::uint64_t first) const;
  std::uint64_t cells() const noexcept { return start_.empty() ? 0 : start_.size() - 1; }

private:
  int nc_[3] = {1, 1, 1};
  bool periodic_ = false;
  std::vector<std::uint32_t> cell_;    ///< cell of every point
  std::vector<std::uint32_t> start_;   ///< cells + 1: cell c's points are by_cell_[start_[c], start_[c + 1])
  std::vector<std::uint32_t> by_cell_; ///< point indices by cell, ascending within a cell
};

/// The kd-tree of a point set, built once for several partial builds (one process of a split
/// job builds its slice, its hubs and their neighbours from one index). Keeps references to the
/// points and the configuration: both must outlive it.
class NeighbourIndex {
public:
  NeighbourIndex(const PointSet& points, const NpcfConfig& config);
  /// Over the points `subset` only (indices into `points`, each once; CellGrid::near): the lists
  /// it gives are those of the whole catalogue for every hub whose neighbours j > hub all lie in
  /// the subset (the hubs the subset was chosen for), and wrong for any other hub.
  NeighbourIndex(const PointSet& points, const NpcfConfig& config, std::vector<std::uint32_t> subset);
  ~NeighbourIndex();
  NeighbourIndex(const NeighbourIndex&) = delete;
  NeighbourIndex& operator=(const NeighbourIndex&) = delete;
  struct Impl;
  const Impl& impl() const noexcept { return *impl_; }

private:
  std::unique_ptr<Impl> impl_;
};
/// The lists of the hubs [h0, h1) only, on the calling thread, with local offsets: hub h0 + k's
/// list is [offsets[k], offsets[k + 1]) (h1 - h0 + 1 offsets; the same lists as build_graph).
Graph build_graph_range(const NeighbourIndex& index, std::uint64_t h0, std::uint64_t h1, const JobContext& ctx);
/// The lists of the hubs `hubs` (any order; each hub's list as in build_graph), on the calling
/// thread, with local offsets: hubs[k]'s list is [offsets[k], offsets[k + 1]).
Graph build_graph_list(const NeighbourIndex& index, const std::vector<std::uint32_t>& hubs, const JobContext& ctx);
/// build_graph_hubs over a prebuilt index (the points and configuration it was made with).
Graph build_graph_hubs(const NeighbourIndex& index, const std::vector<std::uint8_t>& want,
                       const JobContext& ctx);

/// Estimate of the graph before building it, from a sample of hubs of the actual catalogue.
struct GraphEstimate {
  double edges = 0;            ///< expected stored (half-graph) edges
  double mean_neighbours = 0;  ///< mean full neighbour count m
  double bytes = 0;            ///< expected graph memory
  std::uint64_t sampled = 0;   ///< hubs sampled
};
GraphEstimate estimate_graph(const PointSet& points, const NpcfConfig& config,
                             std::uint64_t sample = 2000, std::uint64_t seed = 12345);

}  // namespace almagest::npcf
