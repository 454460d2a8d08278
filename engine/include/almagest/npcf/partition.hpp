#pragma once
// One N-point job split over several processes (docs/mpi.md), without MPI: the engine states
// what a process computes and which data it exchanges; the distribution layer (engine/dist,
// almagest_dist) moves the bytes. Results are bit-identical to one process for any process
// count because the one-process reduction is kept as it is: the hubs are cut into the same
// chunks (from the whole graph's degrees, never from the process count), every chunk is counted
// by exactly one process into its own accumulator, and the chunk accumulators are merged into
// the total strictly in chunk order -- the running total travels from the process that holds
// one run of consecutive chunks to the process that holds the next.
//
//   HubPartition part;                          // rank, ranks, statistics and the exchanges
//   PartitionScope scope(part);                 // on the thread that runs the job
//   run_npcf_job(job, ctx, {.write = rank == 0});  // graph: only this process's part;
//                                               // counts: complete on rank 0 only
//
// (a) The hub ranges: a hub with half-graph degree d costs (d + 1)^p, p = 2 for triangles and 3
// for tetrahedra (1 for pairs), as the chunking weighs it; the ranges weigh it by the fitted
// CostModel. Each process owns the chunks that start in its range. (b) A process builds the
// lists of the hubs of its chunks and of their neighbours only (build_graph_hubs). (c) Chunks
// are handed out dynamically (ChunkLedger, served by the distribution layer): a process counts
// its own chunks from the front of its range; once they are all taken it takes the last
// untaken chunk of the process with the most work left, builds that chunk's lists on demand
// from its kd-tree, and counts it. (d) The chunk-ordered merge (npcf/partition_reduce.hpp).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "almagest/core/job_context.hpp"
#include "almagest/npcf/config.hpp"
#include "almagest/npcf/graph.hpp"
#include "almagest/npcf/points.hpp"
#include "almagest/npcf/result.hpp"

namespace almagest::npcf {

/// Power of the per-hub cost of a statistic: 1 (pairs), 2 (triangles), 3 (tetrahedra).
int cost_power(Statistic s);
/// (d + 1)^power for every hub, d its half-graph degree (the chunking's weights).
std::vector<double> hub_costs(const std::vector<std::uint32_t>& degrees, int power);
/// The work of a hub for the hub ranges (the chunks keep the pure (d + 1)^power weights, which
/// fix one process's summation order; the ranges only decide which chunks a process counts, so
/// their weights change no result):
///   power_term (d + 1)^power + walk_term walk + linear_term (d + 1),
/// walk = the sum of the half-graph degrees of the hub's neighbours (the lists the triangle and
/// tetrahedron walks read: the intersection work that (d + 1)^power misses, which dominates for
/// hubs whose neighbours have long lists), d + 1 the per-neighbour set-up; data and random hubs
/// have their own coefficients (the data are clustered: more closed triangles and tetrahedra
/// per neighbour). Coefficients relative to the data's power term, fitted to measured chunk
/// times (bench_npcf_loadbalance --fit-costs).
struct CostModel {
  double power_term = 1, walk_term = 0, linear_term = 0;                    ///< data hubs
  double random_power_term = 1, random_walk_term = 0, random_linear_term = 0;  ///< random hubs
};
/// The fitted model for a power (2 triangles, 3 tetrahedra; 1 pairs: (d + 1)).
/// ALMAGEST_NPCF_COST_MODEL replaces it: "P,W,L" (both classes) or "P,W,L,Pr,Wr,Lr" (data,
/// randoms), for the triangles and tetrahedra alike, or "triangles;tetrahedra".
CostModel default_cost_model(int power);
/// Work of every hub under `model`; hubs [0, ndata) are data, the rest randoms; `walks` may be
/// empty (then the walk terms are not used).
std::vector<double> range_costs(const std::vector<std::uint32_t>& degrees, const std::vector<double>& walks, int power,
                                const CostModel& model, std::uint64_t ndata);
/// parts + 1 hub boundaries: part r holds the hubs [b[r], b[r+1]), cut where the running cost
/// first reaches r/parts of the total.
std::vector<std::uint64_t> balance_hubs(const std::vector<double>& costs, int parts);
/// Chunks of `bounds` (chunk c = [bounds[c], bounds[c+1])) whose first hub lies in
/// [h0, h1): [first, last) chunk indices.
std::pair<std::uint64_t, std::uint64_t> chunks_starting_in(const std::vector<std::uint64_t>& bounds,
                                                           std::uint64_t h0, std::uint64_t h1);

/// The chunks of one counting pass, for the hand-out: process r owns the chunks
/// [first[r], first[r + 1]) (those starting in its hub range); cost[c] is chunk c's work under
/// the ranges' cost model.
struct PassShare {
  std::vector<std::uint64_t> first;  ///< ranks + 1 chunk indices; first.back() = the pass's chunk count
  std::vector<double> cost;          ///< one per chunk
  /// Chunks may go to processes other than their owner (false for pair counts: building a
  /// chunk's lists costs about as much as counting its pairs).
  bool take_others = true;
};

/// Who counts which chunk of a pass (one per job, on the process that serves the hand-out; not
/// thread-safe: its caller serialises). A process takes its own chunks front to back; when none
/// is left it takes the last untaken chunk of the owner with the most untaken work (cost), so
/// every owner's untaken chunks stay one contiguous run and the chunks a process took from one
/// owner in a row are consecutive.
class ChunkLedger {
public:
  explicit ChunkLedger(PassShare share);
  /// The next chunk for `rank`, -1 when every chunk is taken.
  std::int64_t claim(int rank);
  /// No chunk is handed out any more (a process failed: the others stop soon).
  void close();
  /// Who took each chunk (-1: never handed out).
  const std::vector<std::int32_t>& owners() const noexcept { return owner_; }

private:
  PassShare share_;
  std::vector<std::uint64_t> front_, back_;  ///< per owner: untaken chunks [front, back)
  std::vector<double> prefix_;               ///< cost prefix sums over chunks
  std::vector<std::int32_t> owner_;
};

struct PartitionIndex;

/// What one process of a split job does and how it exchanges data.
struct HubPartition {
  int rank = 0, ranks = 1;
  /// Every statistic the job evaluates (the graph part must serve all of them).
  std::vector<Statistic> statistics;
  /// The hub ranges' cost model; unset: default_cost_model of the heaviest statistic.
  std::optional<CostModel> cost_model;
  /// Record each chunk's counting seconds (chunk_seconds; benchmarks).
  bool time_chunks = false;

  // ---- supplied by the distribution layer --------------------------------------------------
  /// Every process passes the degrees of the hubs [first, first + mine.size()) (its slice of
  /// all hubs); returns the degrees of all hubs, in hub order, on every process.
  std::function<std::vector<std::uint32_t>(const std::vector<std::uint32_t>& mine, std::uint64_t first)>
      all_degrees;
  /// The same for one double per hub (each hub's walk): every process passes its slice.
  std::function<std::vector<double>(const std::vector<double>& mine, std::uint64_t first)> all_walks;
  /// Bytes to every process (to[q] for process q; to[rank] stays here) and from every process
  /// (the result's [q]), collective over the processes: the lists of hubs in other processes'
  /// degree slices travel from there instead of being queried again (b). Unset: queried here.
  std::function<std::vector<std::vector<std::uint8_t>>(std::vector<std::vector<std::uint8_t>>& to)> exchange;
  /// The dynamic hand-out of a counting pass's chunks (c). Every process calls begin_pass with
  /// the same share, then claim (from any of its counting threads; thread-safe) until it returns
  /// -1, then end_pass, which returns who counted each chunk (the same on every process). Unset:
  /// every process counts exactly the chunks it owns (no hand-out; replays and tests).
  std::function<void(const PassShare&)> begin_pass;
  std::function<std::int64_t()> claim;
  std::function<std::vector<std::int32_t>()> end_pass;
  /// Called instead of end_pass when this process stops counting with an error (the hand-out
  /// must not wait for it).
  std::function<void()> leave_pass;
  /// The running total of the chunk-ordered merge (d): to process `to`, from process `from`
  /// (a receive replaces `bytes`).
  std::function<void(std::vector<std::uint8_t>& bytes, int to)> send_total;
  std::function<void(std::vector<std::uint8_t>& bytes, int from)> receive_total;
  /// After this process's part of a pass's merge (optional).
  std::function<void()> merged;

  // ---- filled by the engine ----------------------------------------------------------------
  std::vector<std::uint32_t> degrees;        ///< half-graph degree of every hub
  std::vector<double> walks;                 ///< sum of the neighbours' half degrees, every hub (CostModel)
  std::vector<double> costs;                 ///< range_costs of every hub (the ranges' and the hand-out's work)
  std::vector<std::uint64_t> hub_bounds;     ///< ranks + 1: this process owns the chunks starting in its range
  bool probing = false;                      ///< internal: counting kernels record their chunks only
  std::vector<std::vector<std::uint64_t>> probed;  ///< internal: chunk bounds of every counting pass
  std::vector<int> pass_powers;              ///< internal: cost_power of every probed pass
  std::size_t pass = 0;                      ///< internal: the next counting pass
  std::uint64_t built_hubs = 0, built_edges = 0;   ///< this process's part of the graph (before any taken chunk)
  double counted_cost = 0, total_cost = 0;   ///< range_costs work of the chunks this process counted / of all
  std::uint64_t taken_chunks = 0;            ///< chunks counted from other processes' ranges
  bool gpu = false;                          ///< counted on the GPU (count_cuda_partitioned)
  double graph_s = 0;                        ///< seconds building this process's part of the graph
  double count_s = 0, wait_s = 0;            ///< seconds counting / in the merge's exchanges
  double taken_graph_s = 0;                  ///< seconds building the lists of taken chunks (in count_s)
  /// Seconds of build_partition_graph's stages: kd-tree, degree query, joins (degrees and
  /// walks), probing, the range's lists, the neighbours' lists, assembly.
  std::vector<double> graph_stages_s;
  /// Seconds of every list fetch's steps (the range's, then the neighbours'): requests, their
  /// exchange, answers, their exchange, unpacking.
  std::vector<double> exchange_stages_s;
  /// With time_chunks: per counting pass (as `probed`), the seconds of every chunk this process
  /// counted (0 for the others), by chunk index.
  std::vector<std::vector<double>> chunk_seconds;
  /// internal: what build_partition_graph keeps for the lists of taken chunks (its kd-tree).
  std::shared_ptr<PartitionIndex> index;
};

/// Installs a partition for the calling thread (build_graph and the CPU counting kernels called
/// on it then work on the partition); restores the previous one when it ends.
class PartitionScope {
public:
  explicit PartitionScope(HubPartition& p);
  ~PartitionScope();
  PartitionScope(const PartitionScope&) = delete;
  PartitionScope& operator=(const PartitionScope&) = delete;

private:
  HubPartition* previous_;
};

/// The calling thread's partition (nullptr: a whole job).
HubPartition* active_partition() noexcept;

struct CudaOptions;
struct CudaStats;
/// A CUDA job split over processes (every process holds the whole graph, built on its GPU): this
/// process counts hub partition `rank` of `ranks` (CudaOptions::only_partition; the partitions
/// the CUDA backend cuts from the graph's (d + 1)^p, as one process with `ranks` devices does)
/// and the sums go down the chain in partition order, so rank 0 ends with the sums one process
/// with `ranks` partitions merges: counts identical to any one-process run, sums to the CUDA
/// backend's summation order. Sets part.gpu and the seconds.
NpcfResult count_cuda_partitioned(HubPartition& part, Statistic statistic, const Graph& g, const PointSet& p,
                                  const NpcfConfig& c, const JobContext& ctx, CudaOptions opt, CudaStats* stats);

/// (b): this process's part of the graph: degrees of every hub (each process queries a slice,
/// all_degrees joins them), the chunks of every counting pass the statistics run, and the lists
/// of the hubs of this process's chunks and of their neighbours. build_graph calls it when a
/// partition is active. Offsets cover every hub; whole_edges is the whole graph's edge count.
Graph build_partition_graph(const PointSet& points, const NpcfConfig& config, const JobContext& ctx,
                            HubPartition& part);
/// (c): the lists of the hubs [h0, h1) (a chunk taken from another process's range) and of
/// their neighbours, from the kd-tree build_partition_graph kept; offsets cover every hub.
Graph build_taken_lists(const HubPartition& part, std::uint64_t h0, std::uint64_t h1, const JobContext& ctx);

}  // namespace almagest::npcf
