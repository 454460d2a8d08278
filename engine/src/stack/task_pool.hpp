#pragma once
// Internal: worker threads kept for the duration of one filter_candidates() call. The filters run
// many short parallel rounds (per batch of candidates: static-source pixels, stamp gather, stamp
// sums, medians; duplicate scans), each a fraction of a millisecond of work; starting and joining
// a fresh set of threads for every round (parallel::parallel_for) costs about as much as the work
// on a many-core host. Same contract as parallel::parallel_for (core/parallel.hpp): tasks
// 0..n-1 taken dynamically by the workers and the calling thread, tasks write disjoint outputs (so
// results do not depend on the thread count), a cancel check before every task, progress as tasks
// done out of n under `stage`, the first exception (Cancelled included) rethrown on the caller.
// Workers start when a round needs them, wait for the next round spinning briefly (50
// microseconds), then sleeping on the round counter, and are joined by the destructor.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "almagest/core/job_context.hpp"

namespace almagest::stack::detail {

class TaskPool {
public:
  TaskPool(int threads, const JobContext& ctx) : nt_(resolve_threads(threads)), ctx_(ctx) {}
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;
  ~TaskPool() {
    if (workers_.empty()) return;
    quit_.store(true, std::memory_order_relaxed);
    round_.fetch_add(1, std::memory_order_release);
    round_.notify_all();
    for (auto& w : workers_) w.join();
  }

  int threads() const noexcept { return nt_; }

  /// fn(task) for task in 0..n-1; returns when all are done.
  template <class Fn>
  void run(std::size_t n, const char* stage, Fn&& fn) {
    if (n == 0) return;
    if (nt_ <= 1 || n == 1) {
      const std::size_t every = std::max<std::size_t>(1, n / 100);
      for (std::size_t t = 0; t < n; ++t) {
        ctx_.check_cancel();
        fn(t);
        if ((t + 1) % every == 0 || t + 1 == n) ctx_.progress(double(t + 1), double(n), stage);
      }
      return;
    }
    // Workers are started as rounds need them (at most threads - 1, at most n - 1 for n tasks);
    // every started worker takes part in every later round.
    const std::size_t want_workers = std::min<std::size_t>(std::size_t(nt_ - 1), n - 1);
    while (workers_.size() < want_workers) workers_.emplace_back([this, r = round_.load(std::memory_order_relaxed)] { worker(r); });
    using F = std::remove_reference_t<Fn>;
    call_ = [](void* f, std::size_t t) { (*static_cast<F*>(f))(t); };
    fn_ = const_cast<void*>(static_cast<const void*>(&fn));
    n_ = n;
    stage_ = stage;
    every_ = std::max<std::size_t>(1, n / 100);
    next_.store(0, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    stop_.store(false, std::memory_order_relaxed);
    error_ = nullptr;
    finished_.store(0, std::memory_order_relaxed);
    round_.fetch_add(1, std::memory_order_release);
    round_.notify_all();
    take_tasks();
    // Every worker checks in once per round (also those that found no task left).
    const int want = int(workers_.size());
    for (int seen = finished_.load(std::memory_order_acquire); seen != want; seen = finished_.load(std::memory_order_acquire))
      if (!spin_until([&] { return finished_.load(std::memory_order_acquire) == want; })) finished_.wait(seen, std::memory_order_acquire);
    if (error_) std::rethrow_exception(error_);
  }

private:
  /// Spins (about 50 microseconds at most) until pred(); false if it did not come true.
  template <class Pred>
  static bool spin_until(Pred pred) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 1;; ++i) {
      if (pred()) return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      if (i % 64 == 0 && std::chrono::steady_clock::now() - t0 > std::chrono::microseconds(50)) return false;
    }
  }

  void take_tasks() {
    try {
      for (;;) {
        if (stop_.load(std::memory_order_relaxed)) return;
        ctx_.check_cancel();
        const std::size_t t = next_.fetch_add(1, std::memory_order_relaxed);
        if (t >= n_) return;
        call_(fn_, t);
        const std::size_t d = done_.fetch_add(1, std::memory_order_relaxed) + 1;
        if (d % every_ == 0 || d == n_) ctx_.progress(double(d), double(n_), stage_);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
      stop_.store(true, std::memory_order_relaxed);
    }
  }

  void worker(std::uint32_t seen) {
    for (;;) {
      if (!spin_until([&] { return round_.load(std::memory_order_acquire) != seen; })) round_.wait(seen, std::memory_order_acquire);
      seen = round_.load(std::memory_order_acquire);
      if (quit_.load(std::memory_order_relaxed)) return;
      take_tasks();
      finished_.fetch_add(1, std::memory_order_acq_rel);
      finished_.notify_one();
    }
  }

  const int nt_;
  const JobContext& ctx_;
  std::vector<std::thread> workers_;
  std::atomic<std::uint32_t> round_{0};
  std::atomic<int> finished_{0};
  std::atomic<bool> quit_{false};
  // The current round (written by run() before round_ is advanced).
  void (*call_)(void*, std::size_t) = nullptr;
  void* fn_ = nullptr;
  std::size_t n_ = 0, every_ = 1;
  const char* stage_ = "";
  std::atomic<std::size_t> next_{0}, done_{0};
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;
  std::mutex error_mutex_;
};

}  // namespace almagest::stack::detail
