// Neighbour graph on the CPU: nanoflann kd-tree queries, half graph in CSR form.
//
// Each hub is queried independently (with periodic image queries when the box is periodic),
// candidates are re-tested exactly on the squared separation computed by Geometry::delta, so the
// graph equals a brute-force enumeration bit for bit. Hubs are processed in fixed chunks whose
// buffers are concatenated in chunk order: the result does not depend on the thread count.
#include "almagest/npcf/graph.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <nanoflann.hpp>
#include <numbers>
#include <random>
#include <string>
#include <thread>

#include "almagest/core/error.hpp"
#include "almagest/npcf/partition.hpp"

namespace almagest::npcf {

namespace {

/// Packed xyz copy of the point set, the dataset adaptor of the kd-tree. The tree keeps a
/// reference to it: it must outlive the tree (both live in one NeighbourSearch).
struct PackedPoints {
  std::vector<double> xyz;  // 3 * N
  std::size_t kdtree_get_point_count() const { return xyz.size() / 3; }
  double kdtree_get_pt(std::uint32_t idx, std::size_t dim) const { return xyz[3 * idx + dim]; }
  template <class BBox>
  bool kdtree_get_bbox(BBox&) const {
    return false;
  }
};

using Tree = nanoflann::KDTreeSingleIndexAdaptor<nanoflann::L2_Simple_Adaptor<double, PackedPoints>,
                                                 PackedPoints, 3, std::uint32_t>;

/// Collects candidate indices above `min_index` within the (slightly inflated) query radius.
/// Mapped: the tree holds a subset of the points, ids[tree index] is the point's index.
template <bool Mapped>
struct Collector {
  double radius2;
  std::int64_t min_index;  // -1: every index
  std::vector<std::uint32_t>* out;
  const std::uint32_t* ids;
  std::size_t size() const { return out->size(); }
  bool full() const { return true; }
  bool addPoint(double d2, std::uint32_t idx) {
    if constexpr (Mapped) idx = ids[idx];
    if (d2 < radius2 && static_cast<std::int64_t>(idx) > min_index) out->push_back(idx);
    return true;
  }
  double worstDist() const { return radius2; }
};

int threads_of(const NpcfConfig& c, const JobContext& ctx) {
  return resolve_threads(c.threads > 0 ? c.threads : ctx.threads);
}

/// kd-tree plus the exact edge test shared by build_graph and estimate_graph.
class NeighbourSearch {
public:
  /// Over every point, or over `subset` only (point indices; the tree's own are positions in it).
  NeighbourSearch(const PointSet& p, const NpcfConfig& c, std::vector<std::uint32_t> subset = {}, bool mapped = false)
      : p_(p), c_(c), ids_(std::move(subset)), mapped_(mapped) {
    const std::size_t m = mapped_ ? ids_.size() : p.size();
    for (const std::uint32_t i : ids_) ALMAGEST_ASSERT(i < p.size(), "kd-tree subset: a point index outside the point set");
    pts_.xyz.resize(3 * m);
    for (std::size_t k = 0; k < m; ++k) {
      const std::size_t i = mapped_ ? ids_[k] : k;
      pts_.xyz[3 * k] = p.x[i];
      pts_.xyz[3 * k + 1] = p.y[i];
      pts_.xyz[3 * k + 2] = p.z[i];
    }
    geo_.periodic = c.periodic;
    geo_.box = c.box;
    rmin2_ = c.bins.rmin * c.bins.rmin;
    rmax2_ = c.bins.rmax * c.bins.rmax;
    query2_ = rmax2_ * (1.0 + 1e-9);
    // An empty subset has no tree (and no candidates).
    if (m > 0) tree_ = std::make_unique<Tree>(3, pts_, nanoflann::KDTreeSingleIndexAdaptorParams(32));
  }

  /// Candidates j > min_index near hub i (all images when periodic), sorted and unique, into out.
  void candidates(std::uint64_t i, std::int64_t min_index, std::vector<std::uint32_t>& out) const {
    if (mapped_)
      collect(Collector<true>{query2_, min_index, &out, ids_.data()}, i, out);
    else
      collect(Collector<false>{query2_, min_index, &out, nullptr}, i, out);
  }

  /// Exact test: squared separation (minimum image) strictly inside (rmin^2, rmax^2).
  bool edge(std::uint64_t i, std::uint32_t j, double& dx, double& dy, double& dz, double& d2) const {
    geo_.delta(p_, i, j, dx, dy, dz);
    d2 = dx * dx + dy * dy + dz * dz;
    return rmin2_ < d2 && d2 < rmax2_;
  }

private:
  template <class Col>
  void collect(Col col, std::uint64_t i, std::vector<std::uint32_t>& out) const {
    out.clear();
    if (!tree_) return;
    const double q[3] = {p_.x[i], p_.y[i], p_.z[i]};
    if (!c_.periodic) {
      tree_->findNeighbors(col, q, nanoflann::SearchParams(32, 0, false));
      std::sort(out.begin(), out.end());
      return;
    }
    const double L = c_.box, r = c_.bins.rmax;
    double shifts[3][3];
    int ns[3];
    for (int d = 0; d < 3; ++d) {
      ns[d] = 0;
      shifts[d][ns[d]++] = 0;
      if (q[d] < r) shifts[d][ns[d]++] = L;
      if (q[d] > L - r) shifts[d][ns[d]++] = -L;
    }
    for (int a = 0; a < ns[0]; ++a)
      for (int b = 0; b < ns[1]; ++b)
        for (int c = 0; c < ns[2]; ++c) {
          const double qs[3] = {q[0] + shifts[0][a], q[1] + shifts[1][b], q[2] + shifts[2][c]};
          tree_->findNeighbors(col, qs, nanoflann::SearchParams(32, 0, false));
        }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }

  const PointSet& p_;
  const NpcfConfig& c_;
  std::vector<std::uint32_t> ids_;
  bool mapped_ = false;
  PackedPoints pts_;
  Geometry geo_;
  double rmin2_ = 0, rmax2_ = 0, query2_ = 0;
  std::unique_ptr<Tree> tree_;
};

struct ChunkEdges {
  std::vector<std::uint32_t> degree;  // per hub of the chunk
  std::vector<std::uint32_t> neighbour;
  std::vector<std::uint8_t> bin;
  std::vector<std::uint16_t> pixel;
};

}  // namespace

bool stores_direction_pixels(const NpcfConfig& c) {
  return c.store_pixels || (c.statistic == Statistic::FourPointParity && c.directions == DirectionMode::Pixel);
}

std::uint64_t Graph::memory_bytes() const noexcept {
  return offsets.size() * sizeof(std::uint64_t) + neighbour.size() * sizeof(std::uint32_t) +
         bin.size() * sizeof(std::uint8_t) + pixel.size() * sizeof(std::uint16_t);
}

std::uint16_t direction_pixel(double dx, double dy, double dz, int ntheta, int nphi) {
  const double d = std::sqrt(dx * dx + dy * dy + dz * dz);
  const double pi = std::numbers::pi;
  double ct = d > 0 ? dz / d : 1.0;
  ct = std::clamp(ct, -1.0, 1.0);
  const double theta = std::acos(ct);
  const double phi = std::atan2(dy, dx);
  int it = static_cast<int>(std::floor(theta / pi * ntheta));
  int ip = static_cast<int>(std::floor((phi + pi) / (2 * pi) * nphi));
  it = std::clamp(it, 0, ntheta - 1);
  ip = std::clamp(ip, 0, nphi - 1);
  return static_cast<std::uint16_t>(it * nphi + ip);
}

void pixel_centre(int pixel, int ntheta, int nphi, double& ux, double& uy, double& uz) {
  const double pi = std::numbers::pi;
  const int it = pixel / nphi, ip = pixel % nphi;
  const double theta = (it + 0.5) * pi / ntheta;
  const double phi = -pi + (ip + 0.5) * 2 * pi / nphi;
  const double st = std::sin(theta);
  ux = st * std::cos(phi);
  uy = st * std::sin(phi);
  uz = std::cos(theta);
}

void Geometry::delta(const PointSet& p, std::uint64_t i, std::uint64_t j, double& dx, double& dy,
                     double& dz) const {
  dx = p.x[j] - p.x[i];
  dy = p.y[j] - p.y[i];
  dz = p.z[j] - p.z[i];
  if (periodic) {
    const double h = 0.5 * box;
    auto wrap = [&](double& v) {
      if (v > h)
        v -= box;
      else if (v < -h)
        v += box;
    };
    wrap(dx);
    wrap(dy);
    wrap(dz);
  }
}

namespace {
Graph build_graph_masked(const PointSet& points, const NpcfConfig& config, const JobContext& ctx,
                         const std::vector<std::uint8_t>* want, const NeighbourSearch* prebuilt = nullptr);
}  // namespace

struct NeighbourIndex::Impl {
  const PointSet& points;
  const NpcfConfig& config;
  NeighbourSearch search;
  Impl(const PointSet& p, const NpcfConfig& c) : points(p), config(c), search(p, c) {}
  Impl(const PointSet& p, const NpcfConfig& c, std::vector<std::uint32_t> subset)
      : points(p), config(c), search(p, c, std::move(subset), true) {}
};

NeighbourIndex::NeighbourIndex(const PointSet& points, const NpcfConfig& config) {
  config.check();
  impl_ = std::make_unique<Impl>(points, config);
}
NeighbourIndex::NeighbourIndex(const PointSet& points, const NpcfConfig& config, std::vector<std::uint32_t> subset) {
  config.check();
  impl_ = std::make_unique<Impl>(points, config, std::move(subset));
}
NeighbourIndex::~NeighbourIndex() = default;

CellGrid::CellGrid(const PointSet& points, const NpcfConfig& config) {
  config.check();
  const std::uint64_t n = points.size();
  if (n > std::numeric_limits<std::uint32_t>::max())
    throw ConfigError("points", "more than 2^32 - 1 points cannot be indexed by the graph");
  periodic_ = config.periodic;
  // Side at least rmax (1 + 1e-6): two points closer than the query radius (rmax (1 + 5e-10))
  // lie in the same or adjacent cells per axis whatever the rounding of x / side. At most about
  // one cell per point (at least 4096, at most 2^22): a small rmax gets larger cells.
  const double rmax = config.bins.rmax * (1.0 + 1e-6);
  double lo[3] = {0, 0, 0}, extent[3] = {0, 0, 0};
  const std::vector<double>* col[3] = {&points.x, &points.y, &points.z};
  for (int d = 0; d < 3; ++d) {
    if (periodic_) {
      extent[d] = config.box;
    } else if (n > 0) {
      const auto [mn, mx] = std::minmax_element(col[d]->begin(), col[d]->end());
      lo[d] = *mn;
      extent[d] = *mx - *mn;
    }
  }
  const double cap = std::clamp(static_cast<double>(n), 4096.0, 4194304.0);
  double side = rmax;
  auto count = [&](double s, int* nc) {
    double total = 1;
    for (int d = 0; d < 3; ++d) {
      // Periodic: whole cells of the box (side >= s); else cells from the lowest point on.
      const double k = periodic_ ? std::floor(extent[d] / s) : std::floor(extent[d] / s) + 1;
      nc[d] = static_cast<int>(std::clamp(k, 1.0, 4194304.0));
      total *= nc[d];
    }
    return total;
  };
  while (count(side, nc_) > cap) side *= std::cbrt(count(side, nc_) / cap) * 1.0001;
  double width[3];
  for (int d = 0; d < 3; ++d) width[d] = periodic_ ? extent[d] / nc_[d] : side;
  const std::uint64_t cells = static_cast<std::uint64_t>(nc_[0]) * nc_[1] * nc_[2];
  cell_.resize(n);
  start_.assign(cells + 1, 0);
  for (std::uint64_t i = 0; i < n; ++i) {
    std::uint64_t c[3];
    for (int d = 0; d < 3; ++d) {
      const double t = ((*col[d])[i] - lo[d]) / width[d];
      c[d] = t <= 0 ? 0 : std::min<std::uint64_t>(static_cast<std::uint64_t>(nc_[d] - 1), static_cast<std::uint64_t>(t));
    }
    const auto k = static_cast<std::uint32_t>((c[2] * nc_[1] + c[1]) * nc_[0] + c[0]);
    cell_[i] = k;
    ++start_[k + 1];
  }
  for (std::uint64_t c = 0; c < cells; ++c) start_[c + 1] += start_[c];
  by_cell_.resize(n);
  std::vector<std::uint32_t> at(start_.begin(), start_.end() - 1);
  for (std::uint64_t i = 0; i < n; ++i) by_cell_[at[cell_[i]]++] = static_cast<std::uint32_t>(i);
}

std::vector<std::uint32_t> CellGrid::near(std::uint64_t h0, std::uint64_t h1, int reach, std::uint64_t first) const {
  ALMAGEST_ASSERT(h0 <= h1 && h1 <= cell_.size(), "cell grid: hubs outside the point set");
  ALMAGEST_ASSERT(reach >= 0, "cell grid: negative reach");
  const std::uint64_t cells = this->cells();
  std::vector<std::uint8_t> hub(cells, 0), sel(cells, 0);
  std::vector<std::uint32_t> hub_cells;
  for (std::uint64_t i = h0; i < h1; ++i)
    if (!hub[cell_[i]]) {
      hub[cell_[i]] = 1;
      hub_cells.push_back(cell_[i]);
    }
  // Offsets per axis within reach: wrapped (each cell once) when periodic, clipped otherwise.
  for (const std::uint32_t c : hub_cells) {
    const int cx = static_cast<int>(c % nc_[0]), cy = static_cast<int>(c / nc_[0] % nc_[1]),
              cz = static_cast<int>(c / nc_[0] / nc_[1]);
    const int at[3] = {cx, cy, cz};
    int lo[3], hi[3];
    for (int d = 0; d < 3; ++d) {
      if (2 * reach + 1 >= nc_[d]) {
        lo[d] = 0;
        hi[d] = nc_[d] - 1;
      } else if (periodic_) {
        lo[d] = at[d] - reach;
        hi[d] = at[d] + reach;
      } else {
        lo[d] = std::max(0, at[d] - reach);
        hi[d] = std::min(nc_[d] - 1, at[d] + reach);
      }
    }
    auto wrap = [](int v, int m) { return v < 0 ? v + m : v >= m ? v - m : v; };
    for (int z = lo[2]; z <= hi[2]; ++z)
      for (int y = lo[1]; y <= hi[1]; ++y)
        for (int x = lo[0]; x <= hi[0]; ++x) {
          const std::uint64_t k = (static_cast<std::uint64_t>(wrap(z, nc_[2])) * nc_[1] + wrap(y, nc_[1])) * nc_[0] + wrap(x, nc_[0]);
          sel[k] = 1;
        }
  }
  std::vector<std::uint32_t> out;
  for (std::uint64_t c = 0; c < cells; ++c) {
    if (!sel[c]) continue;
    const auto b = by_cell_.begin() + start_[c], e = by_cell_.begin() + start_[c + 1];
    out.insert(out.end(), std::lower_bound(b, e, first), e);
  }
  return out;
}

Graph build_graph_hubs(const NeighbourIndex& index, const std::vector<std::uint8_t>& want,
                       const JobContext& ctx) {
  const auto& x = index.impl();
  ALMAGEST_ASSERT(want.size() == x.points.size(), "hub mask and point set differ in size");
  return build_graph_masked(x.points, x.config, ctx, &want, &x.search);
}

namespace {
/// The lists of the hubs hub(k), k < count, with local offsets (build_graph_range, build_graph_list).
template <class Hub>
Graph build_graph_local(const NeighbourIndex& index, std::uint64_t count, Hub hub, const JobContext& ctx) {
  const auto& x = index.impl();
  const bool pixels = stores_direction_pixels(x.config);
  const Binning bins = x.config.bins;
  Graph g;
  if (pixels) {
    g.ntheta = x.config.pixel_ntheta;
    g.nphi = x.config.pixel_nphi;
  }
  g.offsets.assign(count + 1, 0);
  std::vector<std::uint32_t> cand;
  cand.reserve(1024);
  for (std::uint64_t k = 0; k < count; ++k) {
    if ((k & 255u) == 0) ctx.check_cancel();
    const std::uint64_t i = hub(k);
    x.search.candidates(i, static_cast<std::int64_t>(i), cand);
    for (std::uint32_t j : cand) {
      double dx, dy, dz, d2;
      if (!x.search.edge(i, j, dx, dy, dz, d2)) continue;
      g.neighbour.push_back(j);
      g.bin.push_back(static_cast<std::uint8_t>(bins.bin_of(std::sqrt(d2))));
      if (pixels) g.pixel.push_back(direction_pixel(dx, dy, dz, g.ntheta, g.nphi));
    }
    g.offsets[k + 1] = g.neighbour.size();
  }
  return g;
}
}  // namespace

Graph build_graph_range(const NeighbourIndex& index, std::uint64_t h0, std::uint64_t h1, const JobContext& ctx) {
  ALMAGEST_ASSERT(h0 <= h1 && h1 <= index.impl().points.size(), "hub range outside the point set");
  return build_graph_local(index, h1 - h0, [h0](std::uint64_t k) { return h0 + k; }, ctx);
}

Graph build_graph_list(const NeighbourIndex& index, const std::vector<std::uint32_t>& hubs, const JobContext& ctx) {
  const std::uint64_t n = index.impl().points.size();
  for (const std::uint32_t h : hubs) ALMAGEST_ASSERT(h < n, "hub outside the point set");
  return build_graph_local(index, hubs.size(), [&hubs](std::uint64_t k) { return std::uint64_t{hubs[k]}; }, ctx);
}

Graph build_graph(const PointSet& points, const NpcfConfig& config, const JobContext& ctx) {
  // One process of a job split over several (npcf/partition.hpp) builds only its part.
  if (HubPartition* part = active_partition()) return build_partition_graph(points, config, ctx, *part);
  return build_graph_masked(points, config, ctx, nullptr);
}

Graph build_graph_hubs(const PointSet& points, const NpcfConfig& config,
                       const std::vector<std::uint8_t>& want, const JobContext& ctx) {
  ALMAGEST_ASSERT(want.size() == points.size(), "hub mask and point set differ in size");
  return build_graph_masked(points, config, ctx, &want);
}

namespace {

Graph build_graph_masked(const PointSet& points, const NpcfConfig& config, const JobContext& ctx,
                         const std::vector<std::uint8_t>* want, const NeighbourSearch* prebuilt) {
  config.check();
  if (points.size() > std::numeric_limits<std::uint32_t>::max())
    throw ConfigError("points", "more than 2^32 - 1 points cannot be indexed by the graph");
  const std::uint64_t n = points.size();
  const bool pixels = stores_direction_pixels(config);
  const int ntheta = config.pixel_ntheta, nphi = config.pixel_nphi;
  const Binning bins = config.bins;

  std::unique_ptr<NeighbourSearch> search_owner;
  if (!prebuilt) {
    ctx.progress(0, 1, "building kd-tree");
    search_owner = std::make_unique<NeighbourSearch>(points, config);
  }
  const NeighbourSearch& search = prebuilt ? *prebuilt : *search_owner;
  ctx.check_cancel();

  constexpr std::uint64_t kChunk = 1024;
  const std::uint64_t nchunks = (n + kChunk - 1) / kChunk;
  std::vector<ChunkEdges> chunks(nchunks);
  std::atomic<std::uint64_t> next{0}, done_hubs{0};
  std::atomic<bool> stop{false};
  std::exception_ptr error;
  std::mutex error_mu;

  auto worker = [&]() {
    std::vector<std::uint32_t> cand;
    cand.reserve(1024);
    try {
      for (;;) {
        if (stop.load(std::memory_order_relaxed)) return;
        if (ctx.cancelled()) throw Cancelled();
        const std::uint64_t c = next.fetch_add(1);
        if (c >= nchunks) return;
        const std::uint64_t h0 = c * kChunk, h1 = std::min(n, h0 + kChunk);
        ChunkEdges& out = chunks[c];
        out.degree.resize(h1 - h0);
        for (std::uint64_t i = h0; i < h1; ++i) {
          if (want && !(*want)[i]) {
            out.degree[i - h0] = 0;
            continue;
          }
          search.candidates(i, static_cast<std::int64_t>(i), cand);
          std::uint32_t deg = 0;
          for (std::uint32_t j : cand) {
            double dx, dy, dz, d2;
            if (!search.edge(i, j, dx, dy, dz, d2)) continue;
            out.neighbour.push_back(j);
            out.bin.push_back(static_cast<std::uint8_t>(bins.bin_of(std::sqrt(d2))));
            if (pixels) out.pixel.push_back(direction_pixel(dx, dy, dz, ntheta, nphi));
            ++deg;
          }
          out.degree[i - h0] = deg;
        }
        // No growth slack: the chunk buffers together hold one copy of the graph.
        out.neighbour.shrink_to_fit();
        out.bin.shrink_to_fit();
        out.pixel.shrink_to_fit();
        const std::uint64_t d = done_hubs.fetch_add(h1 - h0) + (h1 - h0);
        ctx.progress(static_cast<double>(d), static_cast<double>(n), "building graph");
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mu);
      if (!error) error = std::current_exception();
      stop = true;
    }
  };

  const int threads = std::max(1, std::min<int>(threads_of(config, ctx),
                                                static_cast<int>(std::max<std::uint64_t>(1, nchunks))));
  if (threads == 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
    for (auto& th : pool) th.join();
  }
  search_owner.reset();  // the kd-tree and its point copy are not needed any more
  if (error) std::rethrow_exception(error);
  ctx.check_cancel();

  Graph g;
  g.offsets.resize(n + 1);
  g.offsets[0] = 0;
  std::uint64_t e = 0;
  for (std::uint64_t c = 0; c < nchunks; ++c)
    for (std::uint64_t k = 0; k < chunks[c].degree.size(); ++k) {
      e += chunks[c].degree[k];
      g.offsets[c * kChunk + k + 1] = e;
    }
  // reserve() does not touch the pages: appending chunk by chunk while releasing the chunk
  // buffers keeps the peak near one copy of the graph.
  g.neighbour.reserve(e);
  g.bin.reserve(e);
  if (pixels) {
    g.pixel.reserve(e);
    g.ntheta = ntheta;
    g.nphi = nphi;
  }
  for (std::uint64_t c = 0; c < nchunks; ++c) {
    ChunkEdges& ch = chunks[c];
    g.neighbour.insert(g.neighbour.end(), ch.neighbour.begin(), ch.neighbour.end());
    g.bin.insert(g.bin.end(), ch.bin.begin(), ch.bin.end());
    if (pixels) g.pixel.insert(g.pixel.end(), ch.pixel.begin(), ch.pixel.end());
    ch = ChunkEdges{};  // release as we go
  }
  ALMAGEST_ASSERT(g.neighbour.size() == e, "graph edge count mismatch");
  ctx.progress(static_cast<double>(n), static_cast<double>(std::max<std::uint64_t>(1, n)),
               "building graph");
  return g;
}

}  // namespace

GraphEstimate estimate_graph(const PointSet& points, const NpcfConfig& config, std::uint64_t sample,
                             std::uint64_t seed) {
  config.check();
  GraphEstimate est;
  const std::uint64_t n = points.size();
  if (n == 0) return est;
  const std::uint64_t nd = points.ndata, nr = n - nd;
  NeighbourSearch search(points, config);

  // Sample hubs from data and randoms in proportion to their sizes (at least one of each
  // non-empty class); all hubs of a class when the sample covers it.
  sample = std::max<std::uint64_t>(sample, 2);
  std::uint64_t sd = nd == 0 ? 0
                             : std::clamp<std::uint64_t>(static_cast<std::uint64_t>(std::llround(
                                                             static_cast<double>(sample) * nd / n)),
                                                         1, nd);
  std::uint64_t sr = nr == 0 ? 0 : std::clamp<std::uint64_t>(sample > sd ? sample - sd : 1, 1, nr);
  std::mt19937_64 rng(seed);
  std::vector<std::uint32_t> cand;
  auto mean_degree = [&](std::uint64_t first, std::uint64_t count, std::uint64_t picks) {
    if (count == 0 || picks == 0) return 0.0;
    double total = 0;
    for (std::uint64_t s = 0; s < picks; ++s) {
      // Every hub once when the sample covers the class, otherwise seeded uniform picks.
      const std::uint64_t i =
          first + (picks >= count ? s
                                  : static_cast<std::uint64_t>(
                                        (static_cast<unsigned __int128>(rng()) * count) >> 64));
      // Full neighbour count: both directions, i excluded.
      std::uint64_t deg = 0;
      search.candidates(i, -1, cand);
      for (std::uint32_t j : cand) {
        if (j == i) continue;
        double dx, dy, dz, d2;
        if (search.edge(i, j, dx, dy, dz, d2)) ++deg;
      }
      total += static_cast<double>(deg);
    }
    return total / static_cast<double>(picks);
  };
  const double md = mean_degree(0, nd, sd);
  const double mr = mean_degree(nd, nr, sr);
  const double full = md * static_cast<double>(nd) + mr * static_cast<double>(nr);
  est.sampled = sd + sr;
  est.mean_neighbours = full / static_cast<double>(n);
  est.edges = full / 2;
  const double per_edge = 4.0 + 1.0 + (stores_direction_pixels(config) ? 2.0 : 0.0);
  est.bytes = 8.0 * static_cast<double>(n + 1) + est.edges * per_edge;
  return est;
}

}  // namespace almagest::npcf
