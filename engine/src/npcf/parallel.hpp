#pragma once
// Chunking of the hub range for the engines' one deterministic reduction (core/parallel.hpp's
// chunked_reduce): chunk boundaries depend only on the graph (never on the thread count), so the
// chunk-ordered merge gives identical floating-point results for any thread count.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/parallel.hpp"
#include "almagest/npcf/graph.hpp"
#include "npcf/partition_reduce.hpp"

namespace almagest::npcf::detail {

/// Chunk boundaries [bounds[c], bounds[c+1]) over hubs 0..N. `cost_power` weights each hub by
/// (degree + 1)^cost_power so that chunks carry similar work (2 for triangles, 3 for tetrahedra).
inline std::vector<std::uint64_t> make_chunks(const Graph& g, int cost_power,
                                              std::uint64_t target_chunks = 512) {
  const std::uint64_t n = g.num_vertices();
  std::vector<std::uint64_t> bounds{0};
  if (n == 0) {
    bounds.push_back(0);
    return bounds;
  }
  double total = 0;
  std::vector<double> cost(n);
  // A split job (npcf/partition.hpp) holds part of the graph: its chunks are cut from the whole
  // graph's degrees, so that they are the one-process chunks.
  const HubPartition* part = active_partition();
  const bool whole = part && part->degrees.size() == n;
  for (std::uint64_t i = 0; i < n; ++i) {
    double d = static_cast<double>(whole ? part->degrees[i] : g.offsets[i + 1] - g.offsets[i]) + 1.0;
    double c = d;
    for (int k = 1; k < cost_power; ++k) c *= d;
    cost[i] = c;
    total += c;
  }
  const double per_chunk = total / static_cast<double>(std::max<std::uint64_t>(1, target_chunks));
  double acc = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    acc += cost[i];
    if (acc >= per_chunk && i + 1 < n) {
      bounds.push_back(i + 1);
      acc = 0;
    }
  }
  bounds.push_back(n);
  return bounds;
}

/// Highest half-graph degree of any hub (scratch sizes): in a split job from the whole graph's
/// degrees, since this process may count chunks whose lists its own part does not hold.
inline std::size_t max_degree(const Graph& g) {
  std::size_t m = 0;
  const HubPartition* part = active_partition();
  if (part && part->degrees.size() == g.num_vertices()) {
    for (auto d : part->degrees) m = std::max<std::size_t>(m, d);
    return m;
  }
  for (std::uint64_t i = 0; i < g.num_vertices(); ++i) m = std::max<std::size_t>(m, static_cast<std::size_t>(g.offsets[i + 1] - g.offsets[i]));
  return m;
}

/// The one deterministic chunked reduction (core/parallel.hpp), over the chunks above, on graph
/// g: body(chunk, h0, h1, acc, lists) reads the hubs' lists from `lists` -- g, or in a split job
/// the lists built for a chunk of another process's range (npcf/partition_reduce.hpp).
template <class Acc, class Make, class Body, class Merge>
Acc chunked_reduce(const Graph& g, const std::vector<std::uint64_t>& bounds, int threads, const JobContext& ctx,
                   const std::string& stage, Make make, Body body, Merge merge) {
  if (HubPartition* part = active_partition())
    return partitioned_reduce<Acc>(*part, g, bounds, threads, ctx, stage, make, body, merge);
  return almagest::parallel::chunked_reduce<Acc>(
      bounds, threads, ctx, stage, make,
      [&](std::uint64_t c, std::uint64_t h0, std::uint64_t h1, Acc& a) { body(c, h0, h1, a, g); }, merge);
}

}  // namespace almagest::npcf::detail
