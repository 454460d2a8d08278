#pragma once
// Deterministic chunked reduction over hubs: the hub range is split into chunks whose boundaries
// depend only on the graph (never on the thread count); threads take chunks dynamically, each
// chunk accumulates into its own accumulator, and accumulators are merged into the total strictly
// in chunk order. Floating-point results are therefore identical for any thread count.
// Memory is bounded: at most `max_pending` finished-but-unmerged accumulators exist at a time.
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "almagest/core/job_context.hpp"
#include "almagest/npcf/graph.hpp"

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
  for (std::uint64_t i = 0; i < n; ++i) {
    double d = static_cast<double>(g.offsets[i + 1] - g.offsets[i]) + 1.0;
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

/// body(chunk, hub_begin, hub_end, acc) fills `acc` (created by make()); merge(total, part) adds a
/// part. Checks ctx for cancel between chunks (throws Cancelled) and reports progress as the
/// number of hubs merged. Exceptions from workers are rethrown on the calling thread.
template <class Acc, class Make, class Body, class Merge>
Acc chunked_reduce(const std::vector<std::uint64_t>& bounds, int threads, const JobContext& ctx,
                   const std::string& stage, Make make, Body body, Merge merge) {
  const std::uint64_t nchunks = bounds.size() - 1;
  const std::uint64_t nhubs = bounds.back();
  threads = std::max(1, std::min<int>(threads, static_cast<int>(std::max<std::uint64_t>(1, nchunks))));
  const std::uint64_t max_pending = 4ull * static_cast<std::uint64_t>(threads);

  Acc total = make();
  std::mutex mu;
  std::condition_variable cv;
  std::uint64_t next = 0, cursor = 0;
  std::map<std::uint64_t, Acc> pending;
  std::exception_ptr error;
  bool stop = false;

  auto worker = [&]() {
    for (;;) {
      std::uint64_t c;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return stop || next >= nchunks || next < cursor + max_pending; });
        if (stop || next >= nchunks) return;
        c = next++;
      }
      try {
        if (ctx.cancelled()) throw Cancelled();
        Acc part = make();
        body(c, bounds[c], bounds[c + 1], part);
        std::unique_lock<std::mutex> lock(mu);
        pending.emplace(c, std::move(part));
        while (!pending.empty() && pending.begin()->first == cursor) {
          merge(total, pending.begin()->second);
          pending.erase(pending.begin());
          ++cursor;
        }
        const double done = static_cast<double>(cursor < nchunks ? bounds[cursor] : nhubs);
        // Reported under the lock so that progress is monotone across workers.
        ctx.progress(done, static_cast<double>(std::max<std::uint64_t>(1, nhubs)), stage);
        lock.unlock();
        cv.notify_all();
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
        stop = true;
        cv.notify_all();
        return;
      }
    }
  };

  if (threads == 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
    for (auto& th : pool) th.join();
  }
  if (error) std::rethrow_exception(error);
  ctx.check_cancel();
  return total;
}

}  // namespace almagest::npcf::detail
