#pragma once
// The CUDA backend of the N-point engine. Same inputs, configurations and raw sums as the CPU
// functions of plan.hpp (count_*_cpu, build_graph); the plan dispatches Backend::Cuda / Auto here.
//
// Agreement with the CPU backend:
//  - graph: identical (offsets, neighbours, bins, pixels): the device uses the CPU's arithmetic
//    for separations, exact squared-distance thresholds derived from Binning::bin_of for the bins,
//    and pixels within rounding of a pixel boundary are recomputed on the host;
//  - tuple counts (tuples, random_tuples, degenerate): identical integers;
//  - weighted sums (n, r, n_odd, r_odd): the same products summed in another order (per block
//    in double, or for the 4pCF by default in exact 96-bit fixed point after rounding each
//    product to a multiple of 2^-k <= 2^-55 max|w|^4; blocks and partitions merged in a fixed
//    order). max |gpu - cpu| / max(|n|, |r|):
//    ~1e-15 on the self-test catalogues (tested at 1e-12); 1e-13..1e-11 at N = 10^6, where rows
//    sum 10^7-10^8 products and both summation orders round differently (docs/npcf-cuda.md).
//
// Every function throws BackendUnavailable (with gpu_status().reason) when no GPU can be used,
// CudaError on device failures, ConfigError on inputs the backend cannot take, and Cancelled when
// ctx is cancelled (checked between tiles and kernel launches).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "almagest/core/job_context.hpp"
#include "almagest/npcf/config.hpp"
#include "almagest/npcf/graph.hpp"
#include "almagest/npcf/points.hpp"
#include "almagest/npcf/result.hpp"

namespace almagest::kernels {
class NpcfDeviceGraph;  // almagest/kernels/npcf_cuda.hpp
}

namespace almagest::npcf {

/// Frees a device graph in the module (its destructor releases the device memory); never throws.
struct DeviceGraphDeleter {
  void operator()(kernels::NpcfDeviceGraph* g) const noexcept;
};
/// The device copy of one graph and point set, owned by the caller (NpcfPlan holds one per plan)
/// and passed to counting calls in CudaOptions::device_graph: when the graph fits one edge
/// window the first call uploads it and later calls reuse it; destroying it frees its device
/// memory. Independent of every other device graph; no process-wide state.
using DeviceGraph = std::unique_ptr<kernels::NpcfDeviceGraph, DeviceGraphDeleter>;

/// A new, empty device graph for calls on `devices` (empty: every visible device).
/// BackendUnavailable (with gpu_status().reason) when no GPU can be used.
DeviceGraph make_device_graph(const std::vector<int>& devices = {});
/// Device memory a device graph holds now (bytes, summed over devices); 0 for null.
std::uint64_t device_graph_bytes(const kernels::NpcfDeviceGraph* g);

/// Execution knobs of the CUDA backend (defaults: automatic).
struct CudaOptions {
  int windows = 0;        ///< out-of-core edge windows: 0 = automatic, >= 1 forced (tests: 2, 3, 5)
  int partitions = 0;     ///< hub partitions: 0 = one per device, >= 1 forced (merged in order)
  /// >= 0: count only this partition of `partitions` (one process of a split job; its sums are
  /// those the merge in partition order adds: count_cuda_partitioned chains them)
  int only_partition = -1;
  std::vector<int> devices;          ///< CUDA device indices; empty = all visible
  std::uint64_t memory_limit = 0;    ///< bytes per device the job may use; 0 = 85% of free memory
  std::uint32_t shared_degree_cap = 0;  ///< 4pCF: 0 = automatic; small values test the global path
  int accumulate = 0;  ///< 4pCF block sums: 0 = automatic (fixed point), 1 = double, 2 = fixed point
  /// 3pCF: hubs with at least this many neighbours use the dense-neighbourhood kernel (pairs of
  /// neighbours tested from coordinates with the graph's exact edge test and bins; the counts are
  /// the graph walk's). 0 = automatic (1024), 0xFFFFFFFF = never; tests use 2 (every hub).
  std::uint32_t dense_min_degree = 0;
  /// Non-null (not owned): keep the graph and points on the devices in this device graph between
  /// calls (make_device_graph); it must always see the same graph and points and outlive the
  /// call. With `devices` empty the call runs on the device graph's devices. Null: upload per call.
  kernels::NpcfDeviceGraph* device_graph = nullptr;
};

/// What one CUDA call did (also recorded in the result's provenance timings).
struct CudaStats {
  int windows = 1, partitions = 1, devices = 1;
  std::uint64_t tiles = 0;
  double upload_s = 0;   ///< host -> device transfers
  double kernel_s = 0;   ///< device time of the counting kernels (events)
  double total_s = 0;    ///< whole call, wall clock
  std::uint64_t device_bytes = 0;
  std::string device;
};

NpcfResult count_2pcf_cuda(const Graph& g, const PointSet& p, const NpcfConfig& c,
                           const JobContext& ctx, const CudaOptions& opt = {},
                           CudaStats* stats = nullptr);
NpcfResult count_3pcf_cuda(const Graph& g, const PointSet& p, const NpcfConfig& c, bool equilateral,
                           const JobContext& ctx, const CudaOptions& opt = {},
                           CudaStats* stats = nullptr);
NpcfResult count_4pcf_cuda(const Graph& g, const PointSet& p, const NpcfConfig& c, bool parity,
                           const JobContext& ctx, const CudaOptions& opt = {},
                           CudaStats* stats = nullptr);

/// Builds the graph on the GPU (cell lists + sort); equal to build_graph(points, config, ctx).
/// Periodic jobs need coordinates in [0, box) (wrap_periodic), as the CPU builder does.
/// device_s / total_s receive the device build time and the whole call's wall time if non-null.
Graph build_graph_cuda(const PointSet& points, const NpcfConfig& config, const JobContext& ctx,
                       const CudaOptions& opt = {}, double* device_s = nullptr,
                       double* total_s = nullptr);

/// Runs the statistic of `statistic` on the GPU (dispatch helper for the plan).
NpcfResult count_cuda(Statistic statistic, const Graph& g, const PointSet& p, const NpcfConfig& c,
                      const JobContext& ctx, const CudaOptions& opt = {}, CudaStats* stats = nullptr);

/// Backend::Auto policy: true when a GPU is available and the job is large enough to pay for the
/// transfers (graph with at least `min_edges` edges; 3pCF and 4pCF always qualify above 10^5).
bool cuda_worthwhile(Statistic statistic, std::uint64_t graph_edges);

/// Squared-distance thresholds t_1..t_{nbins-1} with bin_of(sqrt(d2)) >= k iff d2 >= t_k for
/// every double d2 in (rmin^2, rmax^2): found by bisection over doubles with bins.bin_of itself.
std::vector<double> squared_bin_thresholds(const Binning& bins);

}  // namespace almagest::npcf
