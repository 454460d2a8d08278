// One N-point job split over several processes (almagest/npcf/partition.hpp): the cost model,
// the hub ranges and each process's part of the graph.
#include "almagest/npcf/partition.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <string>

#include "almagest/core/error.hpp"
#include "almagest/npcf/cuda.hpp"
#include "almagest/npcf/plan.hpp"
#include "npcf/partition_reduce.hpp"

namespace almagest::npcf {

namespace {
thread_local HubPartition* t_partition = nullptr;

// Fitted cost models: bench_npcf_loadbalance --fit-costs on the device host's 16 cores (Intel Xeon,
// 2026-12-07; docs/benchmarks.md, "Issue 22, session 15"): every chunk of the N = 10^6 benchmark's
// 3pCF (10 bins) and 4pCF (5 bins) timed on 16 threads and fitted (non-negative least squares) to
// its hubs' (d+1)^p, walk and d+1. Against (d+1)^p alone the measured counting max/mean of 16
// ranks fell from 1.434 to 1.056 (3pCF) and from 1.442 to 1.136 (4pCF) on the replayed chunk times.
constexpr CostModel kModel3{1.0, 1.87295, 94.29, 1.0, 1.87295, 94.29}, kModel4{1.0, 70.9872, 0.0, 1.0, 70.9872, 0.0};
}  // namespace

PartitionScope::PartitionScope(HubPartition& p) : previous_(t_partition) { t_partition = &p; }
PartitionScope::~PartitionScope() { t_partition = previous_; }
HubPartition* active_partition() noexcept { return t_partition; }

/// What one process of a split job queries lists from: a grid of cells over the catalogue and
/// kd-trees over the regions that hubs need (CellGrid::near), not over the whole catalogue.
struct PartitionIndex {
  const PointSet* points = nullptr;
  NpcfConfig config;  // the job's, threads 0 (each build's context decides)
  std::unique_ptr<CellGrid> grid;
  /// The kd-tree of the hubs [h0, h1) (this process's share of the degree query) and of the
  /// points their lists can hold.
  std::unique_ptr<NeighbourIndex> share;
  std::uint64_t share_h0 = 0, share_h1 = 0;

  /// A kd-tree serving the hubs [h0, h1) (reach 1), or also their neighbours (reach 2).
  std::unique_ptr<NeighbourIndex> region(std::uint64_t h0, std::uint64_t h1, int reach) const {
    return std::make_unique<NeighbourIndex>(*points, config, grid->near(h0, h1, reach, h0));
  }
  /// The whole catalogue's kd-tree, built on first use (lists of any hubs: a split job without
  /// the list exchange).
  const NeighbourIndex& whole() {
    std::call_once(whole_once_, [this] { whole_ = std::make_unique<NeighbourIndex>(*points, config); });
    return *whole_;
  }

private:
  std::once_flag whole_once_;
  std::unique_ptr<NeighbourIndex> whole_;
};

ChunkLedger::ChunkLedger(PassShare share) : share_(std::move(share)) {
  const std::size_t K = share_.first.size() - 1;
  ALMAGEST_ASSERT(share_.first.size() >= 2, "chunk ledger: no owners");
  const std::uint64_t n = share_.first.back();
  ALMAGEST_ASSERT(share_.cost.size() == n, "chunk ledger: one cost per chunk");
  front_.assign(share_.first.begin(), share_.first.end() - 1);
  back_.assign(share_.first.begin() + 1, share_.first.end());
  for (std::size_t r = 0; r < K; ++r) ALMAGEST_ASSERT(front_[r] <= back_[r], "chunk ledger: owner ranges out of order");
  prefix_.assign(n + 1, 0.0);
  for (std::uint64_t c = 0; c < n; ++c) prefix_[c + 1] = prefix_[c] + std::max(0.0, share_.cost[c]);
  owner_.assign(n, -1);
}

std::int64_t ChunkLedger::claim(int rank) {
  const auto me = static_cast<std::size_t>(rank);
  ALMAGEST_ASSERT(me < front_.size(), "chunk ledger: rank outside the owners");
  if (front_[me] < back_[me]) {
    const std::uint64_t c = front_[me]++;
    owner_[c] = rank;
    return static_cast<std::int64_t>(c);
  }
  if (!share_.take_others) return -1;
  // The owner with the most untaken work (the first of equals); its last untaken chunk.
  std::size_t victim = front_.size();
  double most = -1;
  for (std::size_t r = 0; r < front_.size(); ++r) {
    if (front_[r] >= back_[r]) continue;
    const double left = prefix_[back_[r]] - prefix_[front_[r]];
    if (left > most) {
      most = left;
      victim = r;
    }
  }
  if (victim == front_.size()) return -1;
  const std::uint64_t c = --back_[victim];
  owner_[c] = rank;
  return static_cast<std::int64_t>(c);
}

void ChunkLedger::close() { front_ = back_; }

int cost_power(Statistic s) {
  switch (s) {
    case Statistic::TwoPoint: return 1;
    case Statistic::ThreePoint:
    case Statistic::ThreePointEquilateral: return 2;
    case Statistic::FourPoint:
    case Statistic::FourPointParity: break;
  }
  return 3;
}

std::vector<double> hub_costs(const std::vector<std::uint32_t>& degrees, int power) {
  std::vector<double> cost(degrees.size());
  for (std::size_t i = 0; i < degrees.size(); ++i) {
    // As make_chunks (npcf/parallel.hpp) weighs a hub: (d + 1)^power by repeated products.
    const double d = static_cast<double>(degrees[i]) + 1.0;
    double c = d;
    for (int k = 1; k < power; ++k) c *= d;
    cost[i] = c;
  }
  return cost;
}

std::vector<double> range_costs(const std::vector<std::uint32_t>& degrees, const std::vector<double>& walks, int power,
                                const CostModel& model, std::uint64_t ndata) {
  std::vector<double> cost = hub_costs(degrees, power);
  const bool walk = !walks.empty();
  ALMAGEST_ASSERT(!walk || walks.size() == degrees.size(), "range_costs: one walk per hub");
  for (std::size_t i = 0; i < degrees.size(); ++i) {
    const bool data = i < ndata;
    const double p = data ? model.power_term : model.random_power_term;
    const double w = data ? model.walk_term : model.random_walk_term;
    const double l = data ? model.linear_term : model.random_linear_term;
    cost[i] = p * cost[i] + l * (static_cast<double>(degrees[i]) + 1.0);
    if (walk) cost[i] += w * walks[i];
  }
  return cost;
}

CostModel default_cost_model(int power) {
  // ALMAGEST_NPCF_COST_MODEL="P,W,L" (or "P3,W3,L3;P4,W4,L4": triangles; tetrahedra) replaces
  // the fitted coefficients, for machines where bench_npcf_loadbalance --fit-costs finds others.
  if (const char* env = std::getenv("ALMAGEST_NPCF_COST_MODEL"); env && power >= 2) {
    std::string text(env);
    const auto semi = text.find(';');
    if (semi != std::string::npos) text = power == 2 ? text.substr(0, semi) : text.substr(semi + 1);
    double v[6];
    const int got = std::sscanf(text.c_str(), "%lf,%lf,%lf,%lf,%lf,%lf", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]);
    bool ok = got == 3 || got == 6;
    for (int k = 0; k < got && ok; ++k) ok = v[k] >= 0;
    if (ok && got == 3)
      for (int k = 0; k < 3; ++k) v[k + 3] = v[k];
    if (!ok || !(v[0] + v[1] + v[2] > 0) || !(v[3] + v[4] + v[5] > 0))
      throw ConfigError("ALMAGEST_NPCF_COST_MODEL", "'" + std::string(env) +
                                                        "' is not 3 or 6 non-negative numbers P,W,L[,Pr,Wr,Lr] (or "
                                                        "triangles;tetrahedra)");
    return CostModel{v[0], v[1], v[2], v[3], v[4], v[5]};
  }
  switch (power) {
    case 3: return kModel4;
    case 2: return kModel3;
    default: return CostModel{};
  }
}

std::vector<std::uint64_t> balance_hubs(const std::vector<double>& costs, int parts) {
  parts = std::max(1, parts);
  const std::uint64_t n = costs.size();
  double total = 0;
  for (double c : costs) total += c;
  std::vector<std::uint64_t> b(static_cast<std::size_t>(parts) + 1, n);
  b[0] = 0;
  double acc = 0;
  int r = 1;
  for (std::uint64_t i = 0; i < n && r < parts; ++i) {
    while (r < parts && acc >= total * r / parts) b[static_cast<std::size_t>(r++)] = i;
    acc += costs[i];
  }
  for (; r < parts; ++r) b[static_cast<std::size_t>(r)] = n;
  return b;
}

std::pair<std::uint64_t, std::uint64_t> chunks_starting_in(const std::vector<std::uint64_t>& bounds,
                                                           std::uint64_t h0, std::uint64_t h1) {
  const std::uint64_t nchunks = bounds.size() - 1;
  // Chunk c starts at bounds[c]; the first chunk starting at or after h (empty chunks included).
  auto first_at = [&](std::uint64_t h) {
    const auto it = std::lower_bound(bounds.begin(), bounds.begin() + static_cast<std::ptrdiff_t>(nchunks), h);
    return static_cast<std::uint64_t>(it - bounds.begin());
  };
  const std::uint64_t c0 = first_at(h0);
  // The last range ends at the last hub: every remaining chunk (an empty trailing one too).
  const std::uint64_t c1 = h1 >= bounds.back() ? nchunks : first_at(h1);
  return {c0, std::max(c0, c1)};
}

namespace {
/// A graph with offsets over every hub and room for the lists of the hubs keep(i) selects, laid
/// out from the joined degrees (every other hub has none); the lists are to be filled in.
template <class Keep>
Graph layout_lists(const std::vector<std::uint32_t>& degrees, int ntheta, int nphi, Keep keep) {
  const std::uint64_t n = degrees.size();
  Graph g;
  g.ntheta = ntheta;
  g.nphi = nphi;
  g.offsets.resize(n + 1);
  g.offsets[0] = 0;
  for (std::uint64_t h = 0; h < n; ++h) g.offsets[h + 1] = g.offsets[h] + (keep(h) ? degrees[h] : 0);
  g.neighbour.resize(g.offsets[n]);
  g.bin.resize(g.offsets[n]);
  if (ntheta > 0) g.pixel.resize(g.offsets[n]);
  return g;
}

/// Copies list k of `from` into hub h's place in `into` (the same length in both; k = h when
/// `from` has offsets over every hub too).
void copy_list(Graph& into, std::uint64_t h, const Graph& from, std::uint64_t k) {
  const std::uint64_t e0 = from.offsets[k], d = from.offsets[k + 1] - e0, t = into.offsets[h];
  ALMAGEST_ASSERT(into.offsets[h + 1] - t == d, "partition graph: a list of another length than its degree");
  if (d == 0) return;
  std::memcpy(into.neighbour.data() + t, from.neighbour.data() + e0, d * sizeof(std::uint32_t));
  std::memcpy(into.bin.data() + t, from.bin.data() + e0, d * sizeof(std::uint8_t));
  if (into.ntheta > 0) std::memcpy(into.pixel.data() + t, from.pixel.data() + e0, d * sizeof(std::uint16_t));
}

/// The lists of the hubs `mask` selects that other processes hold, each from the process that
/// queried it (owner(i); this process's own are in `mine`, offsets over every hub), written into
/// their places in `into` (laid out with room for them: layout_lists). Requests of hub indices
/// go to every process, which answers from its lists (degree, neighbours, bins, pixels per hub,
/// in the requested order). Collective: every process calls it alike.
template <class Owner>
void fetch_lists(HubPartition& part, const Graph& mine, const std::vector<std::uint8_t>& mask, Owner owner, Graph& into) {
  const std::uint64_t n = mine.num_vertices();
  const auto K = static_cast<std::size_t>(part.ranks);
  const auto me = static_cast<std::size_t>(part.rank);
  const bool pixels = mine.ntheta > 0;
  using Clock = std::chrono::steady_clock;
  auto t = Clock::now();
  auto lap = [&] {  // HubPartition::exchange_stages_s
    const auto now = Clock::now();
    part.exchange_stages_s.push_back(std::chrono::duration<double>(now - t).count());
    t = now;
  };
  ALMAGEST_ASSERT(part.degrees.size() == n, "list exchange: the degrees are joined first");
  const std::size_t per_edge = sizeof(std::uint32_t) + sizeof(std::uint8_t) + (pixels ? sizeof(std::uint16_t) : 0);
  // Requests: the wanted hubs each process holds, in order (buffers sized first, then filled).
  std::vector<std::vector<std::uint8_t>> ask(K);
  {
    std::vector<std::size_t> count(K, 0);
    for (std::uint64_t i = 0; i < n; ++i)
      if (mask[i]) ++count[static_cast<std::size_t>(owner(i))];
    for (std::size_t q = 0; q < K; ++q)
      if (q != me) ask[q].resize(count[q] * sizeof(std::uint32_t));
    std::fill(count.begin(), count.end(), 0);
    for (std::uint64_t i = 0; i < n; ++i)
      if (mask[i]) {
        const auto q = static_cast<std::size_t>(owner(i));
        if (q == me) continue;
        const auto h = static_cast<std::uint32_t>(i);
        std::memcpy(ask[q].data() + count[q]++ * sizeof h, &h, sizeof h);
      }
  }
  lap();
  std::vector<std::vector<std::uint8_t>> asked = part.exchange(ask);
  ALMAGEST_ASSERT(asked.size() == K, "list exchange: one request per process");
  lap();
  // Answers from this process's lists: per hub its degree, neighbours, bins (and pixels).
  std::vector<std::vector<std::uint8_t>> answer(K);
  for (std::size_t q = 0; q < K; ++q) {
    const auto& req = asked[q];
    if (req.size() % sizeof(std::uint32_t) != 0) throw Error("list exchange: a request of broken size");
    const std::size_t m = req.size() / sizeof(std::uint32_t);
    std::vector<std::uint32_t> hubs(m);
    if (m) std::memcpy(hubs.data(), req.data(), req.size());
    std::size_t bytes = 0;
    for (const std::uint32_t h : hubs) {
      if (h >= n || static_cast<std::size_t>(owner(h)) != me)
        throw Error("list exchange: a hub this process does not hold was requested");
      bytes += sizeof(std::uint32_t) + (mine.offsets[h + 1] - mine.offsets[h]) * per_edge;
    }
    auto& out = answer[q];
    out.resize(bytes);
    std::uint8_t* w = out.data();
    auto put = [&w](const void* from, std::size_t b) {
      if (b) std::memcpy(w, from, b);
      w += b;
    };
    for (const std::uint32_t h : hubs) {
      const std::uint64_t e0 = mine.offsets[h], e1 = mine.offsets[h + 1];
      const auto d = static_cast<std::uint32_t>(e1 - e0);
      put(&d, sizeof d);
      put(mine.neighbour.data() + e0, d * sizeof(std::uint32_t));
      put(mine.bin.data() + e0, d * sizeof(std::uint8_t));
      if (pixels) put(mine.pixel.data() + e0, d * sizeof(std::uint16_t));
    }
  }
  ask.clear();
  asked.clear();
  lap();
  std::vector<std::vector<std::uint8_t>> got = part.exchange(answer);
  answer.clear();
  lap();
  // Into their places (each process's answers are in hub order); every list received must have
  // its hub's degree, and `into` room for it.
  Graph& g = into;
  ALMAGEST_ASSERT(g.offsets.size() == n + 1 && g.ntheta == mine.ntheta, "list exchange: the target is not laid out");
  std::vector<std::size_t> at(K, 0);
  for (std::uint64_t h = 0; h < n; ++h) {
    if (!mask[h]) continue;
    const auto q = static_cast<std::size_t>(owner(h));
    if (q == me) continue;
    const auto& b = got[q];
    auto take = [&](void* to, std::size_t bytes) {
      if (b.size() - at[q] < bytes) throw Error("list exchange: the lists received are truncated");
      if (bytes) std::memcpy(to, b.data() + at[q], bytes);
      at[q] += bytes;
    };
    std::uint32_t d = 0;
    take(&d, sizeof d);
    if (d != part.degrees[h]) throw Error("list exchange: a list received does not have its hub's degree");
    ALMAGEST_ASSERT(g.offsets[h + 1] - g.offsets[h] == d, "list exchange: no room for a list received");
    const std::uint64_t e = g.offsets[h];
    take(g.neighbour.data() + e, d * sizeof(std::uint32_t));
    take(g.bin.data() + e, d * sizeof(std::uint8_t));
    if (pixels) take(g.pixel.data() + e, d * sizeof(std::uint16_t));
  }
  for (std::size_t q = 0; q < K; ++q)
    if (at[q] != got[q].size()) throw Error("list exchange: the lists received have the wrong size");
  lap();
}
}  // namespace

Graph build_partition_graph(const PointSet& points, const NpcfConfig& config, const JobContext& ctx,
                            HubPartition& part) {
  config.check();
  const std::uint64_t n = points.size();
  const int K = std::max(1, part.ranks);
  const auto r = static_cast<std::uint64_t>(part.rank);
  ALMAGEST_ASSERT(part.rank >= 0 && part.rank < K, "partition rank outside 0..ranks-1");

  // 1. Degrees: this process queries its slice of hubs; the distribution layer joins them. One
  //    kd-tree serves every build of this process; the slice's lists are kept and reused below
  //    for the hubs and neighbours this process needs (with the spatial hub order its slice and
  //    its range are mostly the same region).
  using Clock = std::chrono::steady_clock;
  const auto t_start = Clock::now();
  auto t_stage = t_start;
  part.graph_stages_s.clear();
  part.exchange_stages_s.clear();
  auto stage_done = [&] {
    const auto now = Clock::now();
    part.graph_stages_s.push_back(std::chrono::duration<double>(now - t_stage).count());
    t_stage = now;
  };
  // The job's threads for this process's builds (the kept configuration leaves them to the
  // context: a taken chunk's lists are built on the counting thread that took it).
  JobContext bctx = ctx;
  bctx.threads = config.threads > 0 ? config.threads : ctx.threads;
  // The hubs whose lists this process queries (its part of the degree query): with the hand-out
  // and the list exchange, blocks of hubs handed out dynamically (a slow query region does not
  // hold the others at the join); else the slice [s0, s1). `slice` holds their lists.
  const bool blocks = K > 1 && part.claim && part.begin_pass && part.end_pass && part.exchange;
  const std::uint64_t s0 = n * r / static_cast<std::uint64_t>(K), s1 = n * (r + 1) / static_cast<std::uint64_t>(K);
  const std::uint64_t bs = blocks ? std::max<std::uint64_t>(1, (n + 32 * K - 1) / (32 * static_cast<std::uint64_t>(K))) : 1;
  const std::uint64_t nb = blocks ? (n + bs - 1) / bs : 0;
  // The kd-tree of this process's share of the degree query (its own blocks, which it queries
  // first, or its slice) over the points their lists can hold: about the share's region plus a
  // margin of rmax, not the whole catalogue. Blocks of other shares get a tree of their own.
  part.index = std::make_shared<PartitionIndex>();
  PartitionIndex& px = *part.index;
  px.points = &points;
  px.config = config;
  px.config.threads = 0;
  px.grid = std::make_unique<CellGrid>(points, px.config);
  px.share_h0 = blocks ? std::min(n, nb * r / static_cast<std::uint64_t>(K) * bs) : s0;
  px.share_h1 = blocks ? std::min(n, nb * (r + 1) / static_cast<std::uint64_t>(K) * bs) : s1;
  px.share = px.region(px.share_h0, px.share_h1, 1);
  const NeighbourIndex& index = *px.share;
  stage_done();  // kd-tree
  std::vector<std::int32_t> block_owner;
  auto in_slice = [&](std::uint64_t i) {
    return blocks ? block_owner[i / bs] == static_cast<std::int32_t>(r) : i >= s0 && i < s1;
  };
  std::vector<std::uint8_t> want;
  Graph slice;
  if (blocks) {
    PassShare share;
    share.first.resize(static_cast<std::size_t>(K) + 1);
    for (int q = 0; q <= K; ++q) share.first[static_cast<std::size_t>(q)] = nb * static_cast<std::uint64_t>(q) / static_cast<std::uint64_t>(K);
    share.cost.assign(nb, 1.0);
    part.begin_pass(share);
    std::vector<std::pair<std::uint64_t, Graph>> got;
    std::mutex mu;
    std::exception_ptr error;
    auto worker = [&] {
      try {
        for (;;) {
          const std::int64_t b = part.claim();
          if (b < 0) return;
          const auto u = static_cast<std::uint64_t>(b);
          const std::uint64_t b0 = u * bs, b1 = std::min(n, (u + 1) * bs);
          // A block of another share (taken when this process's own are done): its own tree.
          const bool own = b0 >= px.share_h0 && b1 <= px.share_h1;
          const std::unique_ptr<NeighbourIndex> other = own ? nullptr : px.region(b0, b1, 1);
          Graph lists = build_graph_range(own ? index : *other, b0, b1, ctx);
          std::lock_guard<std::mutex> lock(mu);
          got.emplace_back(u, std::move(lists));
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
      }
    };
    almagest::parallel::run_workers(std::max(1, resolve_threads(bctx.threads)), worker);
    if (error) {
      if (part.leave_pass) part.leave_pass();
      std::rethrow_exception(error);
    }
    block_owner = part.end_pass();
    if (part.merged) part.merged();  // no merge follows this hand-out
    ALMAGEST_ASSERT(block_owner.size() == nb, "graph hand-out: one owner per block");
    std::sort(got.begin(), got.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    // One CSR over every hub of this process's blocks.
    if (stores_direction_pixels(config)) {  // as every process has it, with or without blocks
      slice.ntheta = config.pixel_ntheta;
      slice.nphi = config.pixel_nphi;
    }
    slice.offsets.assign(n + 1, 0);
    std::uint64_t edges = 0;
    for (const auto& [u, lists] : got) edges += lists.neighbour.size();
    slice.neighbour.reserve(edges);
    slice.bin.reserve(edges);
    if (slice.ntheta > 0) slice.pixel.reserve(edges);
    std::size_t k = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      while (k < got.size() && (got[k].first + 1) * bs <= i) ++k;
      if (k < got.size() && got[k].first * bs <= i) {
        const Graph& lists = got[k].second;
        const std::uint64_t local = i - got[k].first * bs;
        const auto e0 = static_cast<std::ptrdiff_t>(lists.offsets[local]), e1 = static_cast<std::ptrdiff_t>(lists.offsets[local + 1]);
        slice.neighbour.insert(slice.neighbour.end(), lists.neighbour.begin() + e0, lists.neighbour.begin() + e1);
        slice.bin.insert(slice.bin.end(), lists.bin.begin() + e0, lists.bin.begin() + e1);
        if (slice.ntheta > 0) slice.pixel.insert(slice.pixel.end(), lists.pixel.begin() + e0, lists.pixel.begin() + e1);
      }
      slice.offsets[i + 1] = slice.neighbour.size();
    }
    got.clear();
    stage_done();  // degree query (blocks)
    // The joins: every process sends its blocks' degrees, then their walks, to every other.
    auto join = [&](auto value, auto& all) {
      using T = decltype(value(std::uint64_t{0}));
      std::vector<std::uint8_t> bytes;
      for (std::uint64_t u = 0; u < nb; ++u) {
        if (block_owner[u] != static_cast<std::int32_t>(r)) continue;
        for (std::uint64_t i = u * bs; i < std::min(n, (u + 1) * bs); ++i) {
          const T v = value(i);
          detail::raw::append(bytes, &v, sizeof(T));
        }
      }
      std::vector<std::vector<std::uint8_t>> to(static_cast<std::size_t>(K), bytes);
      to[r].clear();
      const std::vector<std::vector<std::uint8_t>> from = part.exchange(to);
      all.assign(n, T{});
      for (std::uint64_t i = 0; i < n; ++i)
        if (in_slice(i)) all[i] = value(i);
      for (int q = 0; q < K; ++q) {
        if (q == static_cast<int>(r)) continue;
        const auto& in = from[static_cast<std::size_t>(q)];
        std::size_t at = 0;
        for (std::uint64_t u = 0; u < nb; ++u) {
          if (block_owner[u] != q) continue;
          for (std::uint64_t i = u * bs; i < std::min(n, (u + 1) * bs); ++i) {
            if (in.size() - at < sizeof(T)) throw Error("graph join: the values received are truncated");
            std::memcpy(&all[i], in.data() + at, sizeof(T));
            at += sizeof(T);
          }
        }
        if (at != in.size()) throw Error("graph join: the values received have the wrong size");
      }
    };
    join([&](std::uint64_t i) { return static_cast<std::uint32_t>(slice.offsets[i + 1] - slice.offsets[i]); }, part.degrees);
    join([&](std::uint64_t i) {
      double w = 0;
      for (std::uint64_t e = slice.offsets[i]; e < slice.offsets[i + 1]; ++e) w += part.degrees[slice.neighbour[e]];
      return w;
    }, part.walks);
    want.assign(n, 0);
    ctx.check_cancel();
  } else {
    want.assign(n, 0);
    std::fill(want.begin() + static_cast<std::ptrdiff_t>(s0), want.begin() + static_cast<std::ptrdiff_t>(s1), 1);
    std::vector<std::uint32_t> mine(s1 - s0);
    slice = build_graph_hubs(index, want, bctx);
    for (std::uint64_t i = s0; i < s1; ++i) mine[i - s0] = static_cast<std::uint32_t>(slice.offsets[i + 1] - slice.offsets[i]);
    stage_done();  // degree slice
    part.degrees = K > 1 ? part.all_degrees(mine, s0) : mine;
    ALMAGEST_ASSERT(part.degrees.size() == n, "joined degrees do not cover every hub");
    ctx.check_cancel();
    // Each hub's walk (CostModel) from the slice's lists and the joined degrees.
    std::vector<double> walk(s1 - s0, 0.0);
    for (std::uint64_t i = s0; i < s1; ++i)
      for (std::uint64_t e = slice.offsets[i]; e < slice.offsets[i + 1]; ++e) walk[i - s0] += part.degrees[slice.neighbour[e]];
    part.walks = K > 1 ? part.all_walks(walk, s0) : std::move(walk);
    ALMAGEST_ASSERT(part.walks.size() == n, "joined walks do not cover every hub");
  }
  stage_done();  // joins

  // 2. The chunks of every counting pass, from the counting kernels themselves (probing: they
  //    record their chunk bounds and count nothing), on a graph of offsets only.
  Graph probe;
  probe.offsets.resize(n + 1);
  probe.offsets[0] = 0;
  for (std::uint64_t i = 0; i < n; ++i) probe.offsets[i + 1] = probe.offsets[i] + part.degrees[i];
  const std::uint64_t whole_edges = probe.offsets[n];
  int power = 1;
  std::vector<int> pass_power;
  {
    part.probing = true;
    part.probed.clear();
    struct Reset {
      HubPartition& p;
      ~Reset() { p.probing = false; }
    } reset{part};
    const JobContext quiet(ctx.token());
    std::vector<Statistic> done;
    // The passes NpcfPlan::execute runs for each statistic, with the same configurations (the
    // chunk counts depend on them): the internal 2pCF of a 4pCF, the internal 3pCF of a 4pCF
    // with analytic randoms, the internal 2pCF of a 3pCF with analytic randoms.
    const bool randoms = points.has_randoms();
    auto pass = [&](int p) { pass_power.push_back(p); };
    for (Statistic s : part.statistics) {
      if (std::find(done.begin(), done.end(), s) != done.end()) continue;
      done.push_back(s);
      NpcfConfig c = config;
      c.statistic = s;
      power = std::max(power, cost_power(s));
      const std::size_t before = part.probed.size();
      if (is_four_point(s)) {
        NpcfConfig c2 = c;
        c2.statistic = Statistic::TwoPoint;
        c2.nmu = 1;
        c2.multipoles = c.nmu > 1 || c.periodic;
        count_2pcf_cpu(probe, points, c2, quiet);
        pass(1);
        if (!randoms) {
          NpcfConfig c3 = c;
          c3.statistic = Statistic::ThreePoint;
          c3.nmu = 1;
          c3.multipoles = false;
          count_3pcf_cpu(probe, points, c3, false, quiet);
          pass(2);
        }
        count_4pcf_cpu(probe, points, c, s == Statistic::FourPointParity, quiet);
        pass(3);
      } else if (s == Statistic::TwoPoint) {
        count_2pcf_cpu(probe, points, c, quiet);
        pass(1);
      } else {
        if (!randoms) {
          NpcfConfig c2 = c;
          c2.statistic = Statistic::TwoPoint;
          c2.nmu = 1;
          c2.multipoles = false;
          count_2pcf_cpu(probe, points, c2, quiet);
          pass(1);
        }
        count_3pcf_cpu(probe, points, c, s == Statistic::ThreePointEquilateral, quiet);
        pass(2);
      }
      ALMAGEST_ASSERT(part.probed.size() == pass_power.size() && part.probed.size() > before,
                      "partition: a counting pass was not probed");
    }
  }
  probe = Graph{};
  stage_done();  // probing

  // 3. Hub ranges balanced by the cost model of the heaviest statistic (range_costs).
  part.costs =
      range_costs(part.degrees, part.walks, power, part.cost_model ? *part.cost_model : default_cost_model(power), points.ndata);
  const std::vector<double>& costs = part.costs;
  part.hub_bounds = balance_hubs(costs, K);
  part.total_cost = 0;
  for (double c : costs) part.total_cost += c;
  const std::uint64_t h0 = part.hub_bounds[r], h1 = part.hub_bounds[r + 1];

  // 4. The hubs this process counts: those of its chunks in every pass.
  std::fill(want.begin(), want.end(), 0);
  part.counted_cost = 0;
  part.pass_powers = pass_power;
  for (std::size_t k = 0; k < part.probed.size(); ++k) {
    const auto& bounds = part.probed[k];
    const auto [c0, c1] = chunks_starting_in(bounds, h0, h1);
    if (c1 == c0) continue;
    std::fill(want.begin() + static_cast<std::ptrdiff_t>(bounds[c0]), want.begin() + static_cast<std::ptrdiff_t>(bounds[c1]), 1);
  }
  part.pass = 0;
  // The lists the slice does not hold: of this process's hubs, then of their neighbours, whose
  // lists the triangle and tetrahedron walks read.
  // From the processes whose slices hold them (every list was queried once, in some slice),
  // else queried here.
  const bool exchange = K > 1 && static_cast<bool>(part.exchange);
  auto owner_of = [&](std::uint64_t i) {
    if (blocks) return static_cast<std::uint64_t>(block_owner[i / bs]);
    std::uint64_t q = std::min<std::uint64_t>(K - 1, i * K / n);  // slice q = [n q / K, n (q + 1) / K)
    while (q + 1 < static_cast<std::uint64_t>(K) && n * (q + 1) / K <= i) ++q;
    while (q > 0 && n * q / K > i) --q;
    return q;
  };
  // The lists of the hubs `mask` selects that the slice does not hold, into their places in
  // `into` (laid out for them).
  auto lists_outside_slice = [&](const std::vector<std::uint8_t>& mask, Graph& into) {
    std::vector<std::uint8_t> build(n, 0);
    bool any = false;
    for (std::uint64_t i = 0; i < n; ++i)
      if (mask[i] && !in_slice(i)) {
        build[i] = 1;
        any = true;
      }
    if (exchange) {  // collective: every process takes part
      fetch_lists(part, slice, build, owner_of, into);
      return;
    }
    if (!any) return;
    const Graph built = build_graph_hubs(px.whole(), build, bctx);
    for (std::uint64_t i = 0; i < n; ++i)
      if (build[i]) copy_list(into, i, built, i);
  };
  Graph hubs = layout_lists(part.degrees, slice.ntheta, slice.nphi, [&](std::uint64_t i) { return want[i] && !in_slice(i); });
  lists_outside_slice(want, hubs);
  stage_done();  // the range's lists
  // 5. ... and of their neighbours (hubs and neighbours are disjoint sets). The graph is laid
  //    out for both from the joined degrees; the slice's and the range's lists are copied in,
  //    the neighbours' lists fetched straight into their places.
  auto source = [&](std::uint64_t i) -> const Graph& { return in_slice(i) ? slice : hubs; };
  std::vector<std::uint8_t> more(n, 0);
  for (std::uint64_t i = 0; i < n; ++i)
    if (want[i]) {
      const Graph& src = source(i);
      for (std::uint64_t e = src.offsets[i]; e < src.offsets[i + 1]; ++e)
        if (!want[src.neighbour[e]]) more[src.neighbour[e]] = 1;
    }
  const auto t_assembly = Clock::now();
  Graph g = layout_lists(part.degrees, slice.ntheta, slice.nphi, [&](std::uint64_t i) { return want[i] || more[i]; });
  for (std::uint64_t i = 0; i < n; ++i)
    if ((want[i] || more[i]) && (in_slice(i) || want[i])) copy_list(g, i, source(i), i);
  hubs = Graph{};
  const double assembly_s = std::chrono::duration<double>(Clock::now() - t_assembly).count();
  lists_outside_slice(more, g);
  stage_done();  // the neighbours' lists (the assembly's seconds apart)
  part.graph_stages_s.back() -= assembly_s;
  part.graph_stages_s.push_back(assembly_s);  // assembly
  slice = Graph{};
  part.built_hubs = 0;
  for (std::uint64_t i = 0; i < n; ++i) part.built_hubs += want[i] || more[i];
  part.built_edges = g.neighbour.size();
  // The whole graph's edge count for the results (graph_edges, Graph::whole_edge_count).
  g.whole_edges = whole_edges;
  if (g.whole_edges == g.neighbour.size()) g.whole_edges = 0;
  part.graph_s = std::chrono::duration<double>(Clock::now() - t_start).count();
  return g;
}

Graph build_taken_lists(const HubPartition& part, std::uint64_t h0, std::uint64_t h1, const JobContext& ctx) {
  ALMAGEST_ASSERT(part.index && part.index->grid, "taken chunk: the partition kept no cell grid");
  const std::uint64_t n = part.degrees.size();
  ALMAGEST_ASSERT(h0 <= h1 && h1 <= n, "taken chunk outside the hubs");
  // One thread: the counting thread that took the chunk builds its lists, from a kd-tree of the
  // points within 2 rmax of the chunk's hubs (their lists and their neighbours').
  JobContext one(ctx.token());
  one.threads = 1;
  const std::unique_ptr<NeighbourIndex> index = part.index->region(h0, h1, 2);
  const Graph hubs = build_graph_range(*index, h0, h1, one);
  // The neighbours' lists (the triangle and tetrahedron walks read them): those after the chunk.
  std::vector<std::uint32_t> after;
  for (const std::uint32_t j : hubs.neighbour)
    if (j >= h1) after.push_back(j);
  std::sort(after.begin(), after.end());
  after.erase(std::unique(after.begin(), after.end()), after.end());
  const Graph extra = build_graph_list(*index, after, one);
  // One CSR, offsets over every hub (laid out from the joined degrees): the chunk's hubs, then
  // the neighbours.
  std::vector<std::uint8_t> keep(n, 0);
  std::fill(keep.begin() + static_cast<std::ptrdiff_t>(h0), keep.begin() + static_cast<std::ptrdiff_t>(h1), 1);
  for (const std::uint32_t j : after) keep[j] = 1;
  Graph g = layout_lists(part.degrees, hubs.ntheta, hubs.nphi, [&](std::uint64_t i) { return keep[i] != 0; });
  for (std::uint64_t i = h0; i < h1; ++i) copy_list(g, i, hubs, i - h0);
  for (std::size_t k = 0; k < after.size(); ++k) copy_list(g, after[k], extra, k);
  return g;
}

namespace {
/// The sums a CUDA count returns (the chain's accumulator: detail::chain_runs serialises it).
struct CudaSums {
  std::vector<std::uint64_t> tuples, random_tuples, degenerate;
  std::vector<double> n, r, n_odd, r_odd, legendre2, legendre4;
};

template <class T>
void add_rows(std::vector<T>& total, const std::vector<T>& mine) {
  if (total.empty()) {
    total = mine;
    return;
  }
  ALMAGEST_ASSERT(total.size() == mine.size(), "split CUDA job: partitions with different row counts");
  for (std::size_t k = 0; k < mine.size(); ++k) total[k] += mine[k];
}
}  // namespace

NpcfResult count_cuda_partitioned(HubPartition& part, Statistic statistic, const Graph& g, const PointSet& p,
                                  const NpcfConfig& c, const JobContext& ctx, CudaOptions opt, CudaStats* stats) {
  using Clock = std::chrono::steady_clock;
  part.gpu = true;
  opt.partitions = std::max(1, part.ranks);
  opt.only_partition = part.rank;
  const auto t0 = Clock::now();
  NpcfResult r = count_cuda(statistic, g, p, c, ctx, opt, stats);
  part.count_s += std::chrono::duration<double>(Clock::now() - t0).count();
  if (part.ranks <= 1) return r;
  // The running total of the partitions before this one, plus this one (rows in order: the
  // same additions as the merge of one process with `ranks` partitions, which starts from zero).
  CudaSums total;
  std::vector<int> holders(static_cast<std::size_t>(part.ranks));
  for (int k = 0; k < part.ranks; ++k) holders[static_cast<std::size_t>(k)] = k;
  detail::chain_runs(part, total, holders, [&](CudaSums& t, std::size_t) {
    add_rows(t.tuples, r.tuples);
    add_rows(t.random_tuples, r.random_tuples);
    add_rows(t.degenerate, r.degenerate);
    add_rows(t.n, r.n);
    add_rows(t.r, r.r);
    add_rows(t.n_odd, r.n_odd);
    add_rows(t.r_odd, r.r_odd);
    add_rows(t.legendre2, r.legendre2);
    add_rows(t.legendre4, r.legendre4);
  });
  r.tuples = std::move(total.tuples);
  r.random_tuples = std::move(total.random_tuples);
  r.degenerate = std::move(total.degenerate);
  r.n = std::move(total.n);
  r.r = std::move(total.r);
  r.n_odd = std::move(total.n_odd);
  r.r_odd = std::move(total.r_odd);
  r.legendre2 = std::move(total.legendre2);
  r.legendre4 = std::move(total.legendre4);
  ctx.check_cancel();
  return r;
}

}  // namespace almagest::npcf
