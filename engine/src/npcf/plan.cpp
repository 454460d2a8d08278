// NpcfPlan: validates, builds the neighbour graph once, evaluates statistics from it.
#include "almagest/npcf/plan.hpp"

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "almagest/core/backend.hpp"
#include "almagest/core/error.hpp"
#include "almagest/core/gpu.hpp"
#include "almagest/npcf/analytic.hpp"
#include "almagest/npcf/cuda.hpp"
#include "almagest/npcf/partition.hpp"

namespace almagest::npcf {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool needs_randoms(const NpcfConfig& c) {
  // Analytic randoms in a periodic box exist for every statistic (finalize.cpp, analytic.hpp;
  // the 4pCF's RRRR by quadrature in analytic4.cpp).
  return !c.periodic;
}

/// Periodic jobs: coordinates must lie in [0, box); values within one box length of it (e.g.
/// exactly `box`, or a catalogue in [-L/2, L/2)) are wrapped, anything further is an error.
void prepare_periodic(PointSet& p, double box) {
  const std::vector<double>* cols[3] = {&p.x, &p.y, &p.z};
  const char* names[3] = {"x", "y", "z"};
  for (int d = 0; d < 3; ++d)
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double v = (*cols[d])[i];
      if (v < -box || v >= 2 * box)
        throw ConfigError("box", "point " + std::to_string(i) + " (" +
                                     (i < p.ndata ? "data" : "randoms") + " row " +
                                     std::to_string(i < p.ndata ? i + 1 : i - p.ndata + 1) +
                                     ") has " + names[d] + " = " + std::to_string(v) +
                                     ", outside the periodic box [0, " + std::to_string(box) + ")");
    }
  wrap_periodic(p, box);
}

}  // namespace

struct NpcfPlan::Impl {
  NpcfConfig config;
  PointSet points;
  Graph graph;
  double graph_seconds = 0;
  std::string backend = "cpu";
  std::string backend_note;  // why Auto chose the CPU
  std::vector<int> devices;  // CUDA devices (empty: every visible one)
  std::vector<std::uint32_t> input_index;  // spatial hub order: input index of every point
  bool auto_spatial = false;  // hub_order auto chose the spatial order (for the plan's statistic)
  // CUDA plans: the graph and points stay on the devices between runs; freed with the plan.
  DeviceGraph device_graph;
};

NpcfPlan::NpcfPlan(NpcfConfig config, PointSet points, const JobContext& ctx)
    : impl_(std::make_unique<Impl>()) {
  config.check();
  if (points.ndata == 0) throw ConfigError("data", "the data catalogue is empty");
  if (!points.has_randoms() && needs_randoms(config))
    throw ConfigError("randoms", std::string("a random catalogue is required for the ") +
                                     to_string(config.statistic) +
                                     " statistic outside a periodic box (analytic randoms "
                                     "exist in a periodic box)");
  // The one Auto policy of every engine (core/backend.hpp): CUDA when a device is usable.
  const ResolvedBackend rb = resolve_backend(config.backend);
  if (rb.cuda()) {
    // cuda (= cuda:0) spreads hub partitions over every visible device, as before; cuda:N with
    // N > 0 runs on device N alone.
    if (rb.device != 0) impl_->devices = {rb.device};
    impl_->backend = "cuda";
    impl_->device_graph = make_device_graph(impl_->devices);
  }
  impl_->backend_note = rb.note;
  if (!rb.note.empty()) ctx.info(rb.note);
  if (config.periodic) prepare_periodic(points, config.box);
  // The CPU kernels and a split job's hub ranges work on compact regions of hubs (HubOrder).
  // The order used is recorded (results carry it in their configuration).
  const bool spatial = impl_->backend == "cpu" && config.spatial_hubs();
  impl_->auto_spatial = spatial && config.hub_order == HubOrder::Auto;
  config.hub_order = spatial ? HubOrder::Spatial : HubOrder::Input;
  if (spatial) {
    ctx.progress(0, 1, "sorting points spatially");
    impl_->input_index = sort_spatially(points, config.periodic ? config.box : 0.0);
  }
  impl_->config = std::move(config);
  impl_->points = std::move(points);
  const auto t0 = std::chrono::steady_clock::now();
  impl_->graph = impl_->backend == "cuda" ? build_graph_cuda(impl_->points, impl_->config, ctx, cuda_options())
                                          : build_graph(impl_->points, impl_->config, ctx);
  impl_->graph_seconds = seconds_since(t0);
}

CudaOptions NpcfPlan::cuda_options() const {
  CudaOptions o;
  o.device_graph = impl_->device_graph.get();
  o.devices = impl_->devices;
  return o;
}

NpcfPlan::~NpcfPlan() = default;
NpcfPlan::NpcfPlan(NpcfPlan&&) noexcept = default;
NpcfPlan& NpcfPlan::operator=(NpcfPlan&&) noexcept = default;

const NpcfConfig& NpcfPlan::config() const noexcept { return impl_->config; }
const PointSet& NpcfPlan::points() const noexcept { return impl_->points; }
const Graph& NpcfPlan::graph() const noexcept { return impl_->graph; }
const std::vector<std::uint32_t>& NpcfPlan::input_index() const noexcept { return impl_->input_index; }
double NpcfPlan::graph_seconds() const noexcept { return impl_->graph_seconds; }
std::string NpcfPlan::backend_name() const { return impl_->backend; }
const std::string& NpcfPlan::backend_note() const noexcept { return impl_->backend_note; }

NpcfResult NpcfPlan::execute(const JobContext& ctx) const {
  return execute(impl_->config.statistic, ctx);
}

NpcfResult NpcfPlan::execute(Statistic statistic, const JobContext& ctx) const {
  NpcfConfig cfg = impl_->config;
  cfg.statistic = statistic;
  cfg.check();  // e.g. nbins <= 20 or rmax <= box/4 for the statistic asked for
  const PointSet& p = impl_->points;
  const Graph& g = impl_->graph;
  if (!p.has_randoms() && needs_randoms(cfg))
    throw ConfigError("randoms", std::string("a random catalogue is required for the ") +
                                     to_string(statistic) +
                                     " statistic outside a periodic box (analytic randoms "
                                     "exist in a periodic box)");
  const bool parity = statistic == Statistic::FourPointParity;
  if (parity && impl_->auto_spatial)
    throw ConfigError("hub_order",
                      "the 4pcf-parity statistic depends on which point of a tuple is its hub: this plan sorted "
                      "its points spatially (hub_order auto, chosen for its own statistic); build the plan for "
                      "4pcf-parity or with hub_order = input");
  if (parity && cfg.directions == DirectionMode::Pixel && g.pixel.size() != g.num_edges())
    throw ConfigError("store_pixels",
                      "pixel-direction parity needs direction pixels in the graph: build the plan "
                      "with store_pixels = true (or for the 4pcf-parity statistic)");

  const auto t0 = std::chrono::steady_clock::now();
  NpcfResult r;
  double xi_seconds = 0;
  const bool cuda = impl_->backend == "cuda";
  CudaStats stats;
  auto count = [&](Statistic st, const NpcfConfig& c) {
    if (cuda) {
      // A job split over processes: this process's GPU counts its partition (partition.hpp).
      if (HubPartition* part = active_partition())
        return count_cuda_partitioned(*part, st, g, p, c, ctx, cuda_options(), &stats);
      return count_cuda(st, g, p, c, ctx, cuda_options(), &stats);
    }
    switch (st) {
      case Statistic::TwoPoint:
        return count_2pcf_cpu(g, p, c, ctx);
      case Statistic::ThreePoint:
      case Statistic::ThreePointEquilateral:
        return count_3pcf_cpu(g, p, c, st == Statistic::ThreePointEquilateral, ctx);
      case Statistic::FourPoint:
      case Statistic::FourPointParity:
        break;
    }
    return count_4pcf_cpu(g, p, c, st == Statistic::FourPointParity, ctx);
  };
  if (is_four_point(statistic)) {
    NpcfConfig c2 = cfg;
    c2.statistic = Statistic::TwoPoint;
    // With mu bins or in a periodic box zeta_disc gets the multipole terms: the internal pass
    // accumulates the Legendre sums (isotropic rows).
    c2.nmu = 1;
    c2.multipoles = cfg.nmu > 1 || cfg.periodic;
    NpcfResult xi = count(Statistic::TwoPoint, c2);
    finalize(xi, p);
    xi_seconds = seconds_since(t0);
    // Analytic randoms: the estimator also subtracts the four faces' internal (connected) 3pCF.
    NpcfResult zeta3;
    if (!p.has_randoms()) {
      NpcfConfig c3 = cfg;
      c3.statistic = Statistic::ThreePoint;
      c3.nmu = 1;
      c3.multipoles = false;
      zeta3 = count(Statistic::ThreePoint, c3);
      zeta3.xi_internal = xi.estimator;
      finalize(zeta3, p);
      xi_seconds = seconds_since(t0);
    }
    r = count(statistic, cfg);
    r.xi_internal = xi.estimator;
    if (c2.multipoles) {
      r.xi2_internal = xi.xi2;
      r.xi4_internal = xi.xi4;
    }
    if (!p.has_randoms()) {
      r.config = cfg;
      r.statistic = statistic;
      r.ndata = p.ndata;
      r.nrandom = 0;
      finalize_4pcf_analytic(r, p, zeta3, ctx);  // RRRR by quadrature (analytic4.cpp)
    }
  } else if (!p.has_randoms() && statistic != Statistic::TwoPoint) {
    // 3pCF with analytic randoms: the estimator subtracts the internal (analytic) 2pCF.
    NpcfConfig c2 = cfg;
    c2.statistic = Statistic::TwoPoint;
    c2.nmu = 1;
    c2.multipoles = false;
    NpcfResult xi = count(Statistic::TwoPoint, c2);
    finalize(xi, p);
    xi_seconds = seconds_since(t0);
    r = count(statistic, cfg);
    r.xi_internal = xi.estimator;
  } else {
    r = count(statistic, cfg);
  }
  r.config = cfg;
  r.statistic = statistic;
  if (!r.analytic_randoms || r.order != 4) finalize(r, p);
  const double query_seconds = seconds_since(t0);

  r.ndata = p.ndata;
  r.nrandom = p.size() - p.ndata;
  r.graph_edges = g.whole_edge_count();  // a split job's part reports the whole graph's
  r.provenance = Provenance::current(impl_->backend);
  if (cuda) {
    r.provenance.device = stats.device.empty() ? gpu_status().summary() : stats.device;
    r.provenance.timings_s["device_kernels"] = stats.kernel_s;
    r.provenance.timings_s["device_upload"] = stats.upload_s;
  }
  r.provenance.config_json = cfg.to_json();
  if (!impl_->backend_note.empty()) {
    // Auto: record which backend ran and why.
    auto j = nlohmann::json::parse(r.provenance.config_json);
    j["backend_used"] = impl_->backend;
    j["backend_note"] = impl_->backend_note;
    r.provenance.config_json = j.dump();
  }
  r.provenance.threads = resolve_threads(cfg.threads > 0 ? cfg.threads : ctx.threads);
  r.provenance.timings_s["graph_build"] = impl_->graph_seconds;
  r.provenance.timings_s["query"] = query_seconds;
  if (xi_seconds > 0) r.provenance.timings_s["internal_2pcf"] = xi_seconds;
  return r;
}

}  // namespace almagest::npcf
