#pragma once
// NpcfPlan: owns the point set and the neighbour graph (the expensive state) and evaluates any
// statistic from it, again and again (the GUI re-runs reuse it).
//
//   auto points = make_point_set(data, &randoms);
//   NpcfPlan plan(config, std::move(points), ctx);   // validates, builds the graph
//   NpcfResult r = plan.execute(ctx);                // config.statistic
//   NpcfResult r4 = plan.execute(Statistic::FourPointParity, ctx);
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "almagest/core/job_context.hpp"
#include "almagest/npcf/config.hpp"
#include "almagest/npcf/graph.hpp"
#include "almagest/npcf/points.hpp"
#include "almagest/npcf/result.hpp"

namespace almagest::npcf {

struct CudaOptions;

class NpcfPlan {
public:
  /// Validates config (ConfigError), checks points against it (periodic box range), builds the
  /// graph on the configured backend (BackendUnavailable if it cannot run). Cancellable.
  NpcfPlan(NpcfConfig config, PointSet points, const JobContext& ctx);
  ~NpcfPlan();
  NpcfPlan(NpcfPlan&&) noexcept;
  NpcfPlan& operator=(NpcfPlan&&) noexcept;

  NpcfResult execute(const JobContext& ctx) const;
  NpcfResult execute(Statistic statistic, const JobContext& ctx) const;

  const NpcfConfig& config() const noexcept;
  /// The plan's points and graph: on the CPU backend with the spatial hub order (the default,
  /// NpcfConfig::hub_order) the points are sorted, and point i of the plan is the input's point
  /// input_index()[i]; input_index() is empty when the plan keeps the input order.
  const PointSet& points() const noexcept;
  const Graph& graph() const noexcept;
  const std::vector<std::uint32_t>& input_index() const noexcept;
  double graph_seconds() const noexcept;
  std::string backend_name() const;  ///< "cpu" or "cuda"
  /// Why the Auto policy chose the CPU ("" otherwise): logged, and kept in the provenance.
  const std::string& backend_note() const noexcept;

private:
  CudaOptions cuda_options() const;  // the plan's device graph and devices
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// CPU counting kernels (the oracle backend). Each is multithreaded over fixed hub chunks whose
// partial sums are merged in chunk order, so results do not depend on the thread count.
// They fill bins/tuples/random_tuples/n/r (and n_odd/r_odd/degenerate for parity); estimators are
// filled by finalize().
NpcfResult count_2pcf_cpu(const Graph& g, const PointSet& p, const NpcfConfig& c, const JobContext& ctx);
NpcfResult count_3pcf_cpu(const Graph& g, const PointSet& p, const NpcfConfig& c, bool equilateral,
                          const JobContext& ctx);
NpcfResult count_4pcf_cpu(const Graph& g, const PointSet& p, const NpcfConfig& c, bool parity,
                          const JobContext& ctx);
/// Fills estimators (xi/zeta, zeta_disc, zeta_conn, zeta_odd, realisable) from the raw sums;
/// for 4pCF `xi_internal` must already hold the internal 2pCF estimator per bin.
void finalize(NpcfResult& r, const PointSet& p);

}  // namespace almagest::npcf
