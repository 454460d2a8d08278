#pragma once
// Internal: the one thread-pool helper of every engine (docs/design.md, "Threads"). Two loops,
// both with a cancel check between pieces of work and the first exception (Cancelled included)
// rethrown on the calling thread:
//
//  - parallel_for(n, threads, ctx, stage, fn): independent tasks 0..n-1 taken dynamically; tasks
//    write to disjoint outputs, so results do not depend on the thread count (the stack engine).
//  - chunked_reduce(bounds, threads, ctx, stage, make, body, merge): a deterministic reduction
//    over chunks [bounds[c], bounds[c+1]) whose boundaries the caller fixes independently of the
//    thread count; each chunk accumulates into its own accumulator and accumulators are merged
//    into the total strictly in chunk order, so floating-point results are identical for any
//    thread count (the N-point engine; its chunking by hub degree is npcf/parallel.hpp's).
//    Memory is bounded: at most 4 x threads finished-but-unmerged accumulators exist at a time.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "almagest/core/job_context.hpp"

namespace almagest::parallel {

/// worker() on `threads` threads (the calling thread alone when 1), joined before it returns;
/// the workers catch their own exceptions.
template <class Worker>
void run_workers(int threads, Worker worker) {
  if (threads <= 1) {
    worker();
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (auto& th : pool) th.join();
}

/// fn(task) for task in 0..n_tasks-1 on resolve_threads(threads) workers; progress reported as
/// tasks done out of n_tasks under `stage`.
template <class Fn>
void parallel_for(std::size_t n_tasks, int threads, const JobContext& ctx, const std::string& stage,
                  Fn fn) {
  if (n_tasks == 0) return;
  const int nt = static_cast<int>(std::min<std::size_t>(resolve_threads(threads), n_tasks));
  std::atomic<std::size_t> next{0}, done{0};
  std::atomic<bool> stop{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  const std::size_t report_every = std::max<std::size_t>(1, n_tasks / 100);
  auto worker = [&] {
    try {
      for (;;) {
        if (stop.load(std::memory_order_relaxed)) return;
        ctx.check_cancel();
        const std::size_t t = next.fetch_add(1);
        if (t >= n_tasks) return;
        fn(t);
        const std::size_t d = done.fetch_add(1) + 1;
        if (d % report_every == 0 || d == n_tasks)
          ctx.progress(static_cast<double>(d), static_cast<double>(n_tasks), stage);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      stop = true;
    }
  };
  run_workers(nt, worker);
  if (error) std::rethrow_exception(error);
}

/// body(chunk, begin, end, acc) fills `acc` (created by make()); merge(total, part) adds a part.
/// `threads` is used as given (at least 1, at most the chunk count). Progress is reported as the
/// items merged (bounds[cursor] of bounds.back()), monotone across workers.
template <class Acc, class Make, class Body, class Merge>
Acc chunked_reduce(const std::vector<std::uint64_t>& bounds, int threads, const JobContext& ctx,
                   const std::string& stage, Make make, Body body, Merge merge) {
  const std::uint64_t nchunks = bounds.size() - 1;
  const std::uint64_t nitems = bounds.back();
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
        const double done = static_cast<double>(cursor < nchunks ? bounds[cursor] : nitems);
        // Reported under the lock so that progress is monotone across workers.
        ctx.progress(done, static_cast<double>(std::max<std::uint64_t>(1, nitems)), stage);
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

  run_workers(threads, worker);
  if (error) std::rethrow_exception(error);
  ctx.check_cancel();
  return total;
}

}  // namespace almagest::parallel
