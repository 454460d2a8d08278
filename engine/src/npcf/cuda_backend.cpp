// CUDA backend of the N-point engine: converts the engine's Graph/PointSet/NpcfConfig into the
// module's plain views, calls the kernels and fills NpcfResult exactly as the CPU functions do.
#include "almagest/npcf/cuda.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "almagest/core/error.hpp"
#include "almagest/core/gpu.hpp"
#include "almagest/kernels/npcf_cuda.hpp"
#include "almagest/npcf/configurations.hpp"

namespace almagest::npcf {

namespace {

kernels::NpcfKernels& npcf_kernels() {
  kernels::CudaModule& m = cuda_module();  // BackendUnavailable with the reason
  kernels::NpcfKernels* k = m.npcf();
  if (!k)
    throw BackendUnavailable("CUDA backend unavailable: the CUDA module " + gpu_status().module_path +
                             " was built without the N-point kernels");
  return *k;
}

kernels::NpcfOptions module_options(const CudaOptions& o, const JobContext& ctx) {
  kernels::NpcfOptions k;
  k.windows = o.windows;
  k.partitions = o.partitions;
  k.only_partition = o.only_partition;
  k.devices = o.devices;
  k.memory_limit = o.memory_limit;
  k.shared_degree_cap = o.shared_degree_cap;
  k.accumulate = o.accumulate;
  k.dense_min_degree = o.dense_min_degree;
  k.device_graph = o.device_graph;
  k.progress = [&ctx](double done, double total, const char* stage) {
    ctx.check_cancel();
    ctx.progress(done, total > 0 ? total : 1, stage);
  };
  return k;
}

kernels::NpcfGraphView graph_view(const Graph& g) {
  kernels::NpcfGraphView v;
  v.offsets = g.offsets.data();
  v.neighbour = g.neighbour.data();
  v.bin = g.bin.data();
  v.pixel = g.pixel.empty() ? nullptr : g.pixel.data();
  v.num_vertices = g.num_vertices();
  v.num_edges = g.num_edges();
  return v;
}

kernels::NpcfPointsView points_view(const PointSet& p) {
  kernels::NpcfPointsView v;
  v.x = p.x.data();
  v.y = p.y.data();
  v.z = p.z.data();
  v.w = p.w.data();
  v.size = p.size();
  v.ndata = p.ndata;
  return v;
}

void check_inputs(const Graph& g, const PointSet& p) {
  if (g.num_vertices() != p.size())
    throw ConfigError("graph", "the graph has " + std::to_string(g.num_vertices()) +
                                   " vertices but the point set " + std::to_string(p.size()) + " points");
  if (p.size() == 0) throw ConfigError("points", "empty point set");
}

void fill_stats(const kernels::NpcfRunInfo& i, CudaStats* s, NpcfResult& r) {
  r.provenance = Provenance::current("cuda");
  r.provenance.device = i.device_name;
  r.provenance.timings_s["gpu_upload"] = i.upload_s;
  r.provenance.timings_s["gpu_kernels"] = i.kernel_s;
  r.provenance.timings_s["gpu_total"] = i.total_s;
  if (!s) return;
  s->windows = i.windows;
  s->partitions = i.partitions;
  s->devices = i.devices;
  s->tiles = i.tiles;
  s->upload_s = i.upload_s;
  s->kernel_s = i.kernel_s;
  s->total_s = i.total_s;
  s->device_bytes = i.device_bytes;
  s->device = i.device_name;
}

/// Common part of every result; `sign` makes the all-random sums positive ((-1)^order).
void fill_sums(NpcfResult& r, kernels::NpcfSums& s, double sign, const Graph& g, const PointSet& p) {
  r.tuples = std::move(s.tuples);
  r.random_tuples = std::move(s.random_tuples);
  r.n = std::move(s.n);
  r.r = std::move(s.r);
  for (double& v : r.r) v *= sign;
  r.ndata = p.ndata;
  r.nrandom = p.size() - p.ndata;
  r.graph_edges = g.num_edges();
}

/// mu binning and Legendre sums of the 2pCF / 3pCF (kernels::NpcfOptions::nmu ...).
void set_mu_options(kernels::NpcfOptions& k, const NpcfConfig& c, bool legendre) {
  k.nmu = c.nmu;
  k.legendre = legendre;
  k.mu_periodic = c.periodic;
  k.mu_box = c.box;
}

std::uint64_t to_bits(double v) { return std::bit_cast<std::uint64_t>(v); }
double from_bits(std::uint64_t b) { return std::bit_cast<double>(b); }

}  // namespace

std::vector<double> squared_bin_thresholds(const Binning& bins) {
  const double lo2 = bins.rmin * bins.rmin, hi2 = bins.rmax * bins.rmax;
  // Non-negative doubles are ordered like their bit patterns. bin(d2) is monotone in d2.
  auto bin = [&](double d2) { return bins.bin_of(std::sqrt(d2)); };
  std::vector<double> t;
  for (int k = 1; k < bins.nbins; ++k) {
    std::uint64_t a = to_bits(lo2), b = to_bits(hi2);  // find the first d2 in (a, b] with bin >= k
    if (bin(from_bits(b)) < k) {
      t.push_back(std::numeric_limits<double>::infinity());
      continue;
    }
    while (b - a > 1) {
      const std::uint64_t mid = a + (b - a) / 2;
      if (bin(from_bits(mid)) >= k)
        b = mid;
      else
        a = mid;
    }
    t.push_back(from_bits(b));
  }
  return t;
}

Graph build_graph_cuda(const PointSet& points, const NpcfConfig& config, const JobContext& ctx,
                       const CudaOptions& opt, double* device_s, double* total_s) {
  config.check();
  if (points.size() == 0) throw ConfigError("points", "empty point set");
  if (points.size() > 0x7FFFFFFFull)
    throw ConfigError("points", "the GPU graph builder takes at most 2^31 - 1 points");
  if (config.periodic)
    for (std::size_t i = 0; i < points.size(); ++i)
      if (!(points.x[i] >= 0 && points.x[i] < config.box && points.y[i] >= 0 &&
            points.y[i] < config.box && points.z[i] >= 0 && points.z[i] < config.box))
        throw ConfigError("box", "point " + std::to_string(i) +
                                     " lies outside the periodic box [0, box); wrap the catalogue first");
  kernels::NpcfKernels& k = npcf_kernels();
  const std::vector<double> thr = squared_bin_thresholds(config.bins);
  kernels::NpcfGraphSpec spec;
  spec.rmin2 = config.bins.rmin * config.bins.rmin;
  spec.rmax2 = config.bins.rmax * config.bins.rmax;
  spec.nbins = config.bins.nbins;
  spec.bin_threshold = thr.data();
  spec.periodic = config.periodic;
  spec.box = config.box;
  spec.pixels = stores_direction_pixels(config);
  spec.ntheta = config.pixel_ntheta;
  spec.nphi = config.pixel_nphi;
  ctx.progress(0, 1, "building graph on the GPU");
  kernels::NpcfOptions kopt = module_options(opt, ctx);
  kernels::NpcfGraphHost h = with_cuda_errors([&] { return k.build_graph(points_view(points), spec, kopt); });
  ctx.check_cancel();
  Graph g;
  g.offsets = std::move(h.offsets);
  g.neighbour = std::move(h.neighbour);
  g.bin = std::move(h.bin);
  if (spec.pixels) {
    g.pixel = std::move(h.pixel);
    g.ntheta = config.pixel_ntheta;
    g.nphi = config.pixel_nphi;
    Geometry geo;
    geo.periodic = config.periodic;
    geo.box = config.box;
    auto redo = [&](std::uint64_t i, std::uint64_t e) {
      double dx, dy, dz;
      geo.delta(points, i, g.neighbour[e], dx, dy, dz);
      g.pixel[e] = direction_pixel(dx, dy, dz, g.ntheta, g.nphi);
    };
    if (h.recheck_all) {
      for (std::uint64_t i = 0; i < g.num_vertices(); ++i)
        for (std::uint64_t e = g.offsets[i]; e < g.offsets[i + 1]; ++e) redo(i, e);
    } else {
      for (std::uint64_t e : h.recheck) {
        const auto it = std::upper_bound(g.offsets.begin(), g.offsets.end(), e);
        redo(static_cast<std::uint64_t>(it - g.offsets.begin()) - 1, e);
      }
    }
  }
  if (device_s) *device_s = h.build_s;
  if (total_s) *total_s = h.total_s;
  ctx.progress(1, 1, "building graph on the GPU");
  return g;
}

NpcfResult count_2pcf_cuda(const Graph& g, const PointSet& p, const NpcfConfig& c,
                           const JobContext& ctx, const CudaOptions& opt, CudaStats* stats) {
  check_inputs(g, p);
  kernels::NpcfKernels& k = npcf_kernels();
  const int nb = c.bins.nbins;
  kernels::NpcfOptions kopt = module_options(opt, ctx);
  set_mu_options(kopt, c, c.wants_multipoles());
  kernels::NpcfSums s =
      with_cuda_errors([&] { return k.count_2pcf(graph_view(g), points_view(p), nb, kopt); });
  NpcfResult r;
  r.config = c;
  r.config.statistic = Statistic::TwoPoint;
  r.statistic = Statistic::TwoPoint;
  r.order = 2;
  r.edges_per_row = 1;
  const int nmu = c.nmu;
  const std::size_t rows = static_cast<std::size_t>(nb) * nmu;  // r outer, mu inner
  r.bins.resize(rows);
  if (nmu > 1) r.mu.resize(rows);
  for (std::size_t k = 0; k < rows; ++k) {
    r.bins[k] = static_cast<std::uint8_t>(k / nmu);
    if (nmu > 1) r.mu[k] = static_cast<std::uint8_t>(k % nmu);
  }
  if (c.wants_multipoles()) {
    r.legendre2 = std::move(s.legendre2);
    r.legendre4 = std::move(s.legendre4);
  }
  fill_sums(r, s, 1.0, g, p);
  fill_stats(s.info, stats, r);
  return r;
}

NpcfResult count_3pcf_cuda(const Graph& g, const PointSet& p, const NpcfConfig& c, bool equilateral,
                           const JobContext& ctx, const CudaOptions& opt, CudaStats* stats) {
  check_inputs(g, p);
  kernels::NpcfKernels& k = npcf_kernels();
  const int nb = c.bins.nbins;
  const TriangleTable table(nb);
  std::vector<std::uint32_t> offset(static_cast<std::size_t>(nb) * nb, 0);
  for (int b1 = 0; b1 < nb; ++b1)
    for (int b2 = b1; b2 < nb; ++b2) offset[static_cast<std::size_t>(b1) * nb + b2] = table.row_sorted(b1, b2, b2);
  kernels::NpcfTriangleRows rows;
  rows.nbins = nb;
  rows.offset = offset.data();
  rows.rows = table.rows();
  // The graph's own edge test and bins, for the dense-neighbourhood kernel (hubs with many
  // neighbours test their neighbour pairs from coordinates exactly as the graph builders do).
  const std::vector<double> thr = squared_bin_thresholds(c.bins);
  rows.bin_threshold = thr.data();
  rows.rmin2 = c.bins.rmin * c.bins.rmin;
  rows.rmax2 = c.bins.rmax * c.bins.rmax;
  kernels::NpcfOptions kopt = module_options(opt, ctx);
  set_mu_options(kopt, c, false);
  kernels::NpcfSums s = with_cuda_errors(
      [&] { return k.count_3pcf(graph_view(g), points_view(p), rows, equilateral, kopt); });
  NpcfResult r;
  r.config = c;
  r.statistic = equilateral ? Statistic::ThreePointEquilateral : Statistic::ThreePoint;
  r.config.statistic = r.statistic;
  r.order = 3;
  r.edges_per_row = 3;
  const int nmu = c.nmu;  // rows (configuration, mu bin), mu inner
  const std::size_t nrows = (equilateral ? static_cast<std::size_t>(nb) : table.rows()) * nmu;
  r.bins.resize(nrows * 3);
  if (nmu > 1) r.mu.resize(nrows);
  for (std::size_t row = 0; row < nrows; ++row) {
    const std::size_t cf = row / nmu;
    const auto b = equilateral ? std::array<std::uint8_t, 3>{static_cast<std::uint8_t>(cf),
                                                             static_cast<std::uint8_t>(cf),
                                                             static_cast<std::uint8_t>(cf)}
                               : table.bins(static_cast<std::uint32_t>(cf));
    std::copy(b.begin(), b.end(), r.bins.begin() + static_cast<std::ptrdiff_t>(3 * row));
    if (nmu > 1) r.mu[row] = static_cast<std::uint8_t>(row % nmu);
  }
  fill_sums(r, s, -1.0, g, p);
  fill_stats(s.info, stats, r);
  return r;
}

NpcfResult count_4pcf_cuda(const Graph& g, const PointSet& p, const NpcfConfig& c, bool parity,
                           const JobContext& ctx, const CudaOptions& opt, CudaStats* stats) {
  check_inputs(g, p);
  kernels::NpcfKernels& k = npcf_kernels();
  const TetraTable tt(c.bins.nbins);  // ConfigError for nbins outside 1..20
  kernels::NpcfTetraRows rows;
  rows.nbins = c.bins.nbins;
  rows.packed = tt.packed_table().data();
  rows.rows = tt.rows();
  kernels::NpcfParity par;
  std::vector<double> unit;
  if (parity) {
    par.exact = c.directions == DirectionMode::Exact;
    par.periodic = c.periodic;
    par.box = c.box;
    if (!par.exact) {
      if (g.pixel.size() != g.num_edges() || g.ntheta <= 0 || g.nphi <= 0)
        throw ConfigError("directions",
                          "pixel-mode parity needs a graph with direction pixels (store_pixels)");
      const int np = g.ntheta * g.nphi;
      unit.resize(3 * static_cast<std::size_t>(np));
      for (int q = 0; q < np; ++q) pixel_centre(q, g.ntheta, g.nphi, unit[3 * q], unit[3 * q + 1], unit[3 * q + 2]);
      par.pixel_unit = unit.data();
      par.npixels = np;
    }
  }
  kernels::NpcfOptions kopt = module_options(opt, ctx);
  kernels::NpcfSums s = with_cuda_errors([&] {
    return k.count_4pcf(graph_view(g), points_view(p), rows, parity ? &par : nullptr, kopt);
  });
  NpcfResult r;
  r.config = c;
  r.statistic = parity ? Statistic::FourPointParity : Statistic::FourPoint;
  r.config.statistic = r.statistic;
  r.order = 4;
  r.edges_per_row = 6;
  const std::size_t nrows = tt.rows();
  r.bins.resize(nrows * 6);
  for (std::size_t row = 0; row < nrows; ++row) {
    const auto& cb = tt.canonical(static_cast<std::uint32_t>(row));
    std::copy(cb.begin(), cb.end(), r.bins.begin() + static_cast<std::ptrdiff_t>(6 * row));
  }
  if (parity) {
    r.n_odd = std::move(s.n_odd);
    r.r_odd = std::move(s.r_odd);
    r.degenerate = std::move(s.degenerate);
  }
  fill_sums(r, s, 1.0, g, p);
  fill_stats(s.info, stats, r);
  return r;
}

NpcfResult count_cuda(Statistic statistic, const Graph& g, const PointSet& p, const NpcfConfig& c,
                      const JobContext& ctx, const CudaOptions& opt, CudaStats* stats) {
  switch (statistic) {
    case Statistic::TwoPoint: return count_2pcf_cuda(g, p, c, ctx, opt, stats);
    case Statistic::ThreePoint: return count_3pcf_cuda(g, p, c, false, ctx, opt, stats);
    case Statistic::ThreePointEquilateral: return count_3pcf_cuda(g, p, c, true, ctx, opt, stats);
    case Statistic::FourPoint: return count_4pcf_cuda(g, p, c, false, ctx, opt, stats);
    case Statistic::FourPointParity: return count_4pcf_cuda(g, p, c, true, ctx, opt, stats);
  }
  throw ConfigError("statistic", "unknown statistic");
}

void DeviceGraphDeleter::operator()(kernels::NpcfDeviceGraph* g) const noexcept {
  delete g;  // module code: frees the graph's device memory on each of its devices
}

DeviceGraph make_device_graph(const std::vector<int>& devices) {
  kernels::NpcfKernels& k = npcf_kernels();
  return DeviceGraph(with_cuda_errors([&] { return k.make_device_graph(devices); }).release());
}

std::uint64_t device_graph_bytes(const kernels::NpcfDeviceGraph* g) {
  return g ? with_cuda_errors([&] { return g->device_bytes(); }) : 0;
}

bool cuda_worthwhile(Statistic statistic, std::uint64_t graph_edges) {
  if (!gpu_status().available) return false;
  // Transfers cost ~5 bytes per edge at ~10 GB/s; the CPU does ~1e8 edges/s for pairs but the
  // 3pCF/4pCF cost grows with m^2 / m^3 per hub, so those pay off far sooner.
  if (statistic == Statistic::TwoPoint) return graph_edges >= 50'000'000ull;
  return graph_edges >= 100'000ull;
}

}  // namespace almagest::npcf
