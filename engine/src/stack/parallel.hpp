#pragma once
// Internal: dynamic parallel loop over independent tasks for the stack engine. Tasks write to
// disjoint outputs, so results do not depend on the thread count. Cancel is checked between
// tasks; the first exception (Cancelled included) is rethrown on the calling thread.
#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "almagest/core/job_context.hpp"

namespace almagest::stack::detail {

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
  if (nt <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(nt);
    for (int i = 0; i < nt; ++i) pool.emplace_back(worker);
    for (auto& th : pool) th.join();
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace almagest::stack::detail
