#pragma once
// Large host <-> device copies of the NpCF backend through pinned staging buffers.
//
// A copy from or to pageable host memory goes through the driver's own small staging at a
// fraction of the link's rate; here two pinned buffers of 128 MB alternate: the device copies one
// chunk while host threads move the other between the pinned buffer and the caller's memory
// (memcpy split over up to 8 threads). Pinning is slow (~0.1 s per buffer pair), so one pair is
// kept for the process after first use (256 MB pinned; a concurrent second caller makes and frees
// its own). Copies below 64 MB, or when pinned memory cannot be had, use plain cudaMemcpyAsync.
// Both functions return with the copy complete (the stream synchronised).
//
// prefault_host: populates the pages of [p, p + bytes) writable in parallel (madvise
// MADV_POPULATE_WRITE, transparent huge pages requested first), so that a following single-
// threaded first touch (std::vector's value-initialisation) takes no page faults. A no-op where
// the kernel lacks MADV_POPULATE_WRITE.
#include <cuda_runtime.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "cuda_check.cuh"

namespace almagest::kernels::npcf_staging {

inline constexpr std::size_t kChunk = 128ull << 20;
inline constexpr std::size_t kMinStaged = 64ull << 20;

inline unsigned copy_threads() {
  return std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
}

/// memcpy split over threads (page-aligned pieces).
inline void parallel_memcpy(void* dst, const void* src, std::size_t bytes) {
  const unsigned t = bytes >= (16ull << 20) ? copy_threads() : 1u;
  if (t <= 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const std::size_t piece = ((bytes + t - 1) / t + 4095) & ~std::size_t{4095};
  std::vector<std::thread> pool;
  for (unsigned k = 0; k < t; ++k) {
    const std::size_t a = std::min(bytes, k * piece), b = std::min(bytes, a + piece);
    if (a >= b) break;
    pool.emplace_back([=] {
      std::memcpy(static_cast<char*>(dst) + a, static_cast<const char*>(src) + a, b - a);
    });
  }
  for (auto& th : pool) th.join();
}

/// Two pinned buffers and their events (freed by the destructor).
class Staging {
public:
  Staging() {
    CUDA_CHECK(cudaGetDevice(&device_));
    for (int b = 0; b < 2; ++b) {
      if (cudaMallocHost(&buf_[b], kChunk) != cudaSuccess) {
        cudaGetLastError();  // clear the sticky-free error state of the failed call
        release();
        return;
      }
      CUDA_CHECK(cudaEventCreateWithFlags(&ev_[b], cudaEventDisableTiming));
    }
    ok_ = true;
  }
  ~Staging() { release(); }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  bool ok() const { return ok_; }
  int device() const { return device_; }  // its events belong to this device
  void* buf(int b) const { return buf_[b]; }
  cudaEvent_t ev(int b) const { return ev_[b]; }

private:
  void release() {
    for (int b = 0; b < 2; ++b) {
      if (buf_[b]) cudaFreeHost(buf_[b]);
      if (ev_[b]) cudaEventDestroy(ev_[b]);
      buf_[b] = nullptr;
      ev_[b] = nullptr;
    }
    ok_ = false;
  }
  void* buf_[2] = {nullptr, nullptr};
  cudaEvent_t ev_[2] = {nullptr, nullptr};
  bool ok_ = false;
  int device_ = 0;
};

/// The kept buffer pair: take() hands it out (or a new pair while it is out), give() keeps one.
class StagingPool {
public:
  std::unique_ptr<Staging> take() {
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (kept_ && kept_->device() == device) return std::move(kept_);
    }
    return std::make_unique<Staging>();
  }
  void give(std::unique_ptr<Staging> st) {
    if (!st || !st->ok()) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (!kept_) kept_ = std::move(st);
  }
  static StagingPool& instance() {
    static StagingPool* pool = new StagingPool;  // never destroyed: no cudaFreeHost at process exit
    return *pool;
  }

private:
  std::mutex mu_;
  std::unique_ptr<Staging> kept_;
};

/// A pair from the pool for the scope of one copy.
class StagingLease {
public:
  StagingLease() : st_(StagingPool::instance().take()) {}
  ~StagingLease() { StagingPool::instance().give(std::move(st_)); }
  StagingLease(const StagingLease&) = delete;
  StagingLease& operator=(const StagingLease&) = delete;
  Staging* operator->() const { return st_.get(); }
  bool ok() const { return st_ && st_->ok(); }
  void* buf(int b) const { return st_->buf(b); }
  cudaEvent_t ev(int b) const { return st_->ev(b); }

private:
  std::unique_ptr<Staging> st_;
};

/// Device -> host, `bytes` bytes; complete on return.
inline void download(void* host, const void* dev, std::size_t bytes, cudaStream_t s) {
  if (bytes == 0) return;
  if (bytes >= kMinStaged) {
    StagingLease st;
    if (st.ok()) {
      const std::size_t chunks = (bytes + kChunk - 1) / kChunk;
      auto issue = [&](std::size_t c) {
        const std::size_t a = c * kChunk, len = std::min(kChunk, bytes - a);
        CUDA_CHECK(cudaMemcpyAsync(st.buf(static_cast<int>(c & 1)), static_cast<const char*>(dev) + a, len,
                                   cudaMemcpyDeviceToHost, s));
        CUDA_CHECK(cudaEventRecord(st.ev(static_cast<int>(c & 1)), s));
      };
      issue(0);
      for (std::size_t c = 0; c < chunks; ++c) {
        // buffer (c + 1) & 1 was emptied by the host in the previous iteration
        if (c + 1 < chunks) issue(c + 1);
        CUDA_CHECK(cudaEventSynchronize(st.ev(static_cast<int>(c & 1))));
        const std::size_t a = c * kChunk, len = std::min(kChunk, bytes - a);
        parallel_memcpy(static_cast<char*>(host) + a, st.buf(static_cast<int>(c & 1)), len);
      }
      return;
    }
  }
  CUDA_CHECK(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
}

/// Host -> device, `bytes` bytes; complete on return.
inline void upload(void* dev, const void* host, std::size_t bytes, cudaStream_t s) {
  if (bytes == 0) return;
  if (bytes >= kMinStaged) {
    StagingLease st;
    if (st.ok()) {
      const std::size_t chunks = (bytes + kChunk - 1) / kChunk;
      for (std::size_t c = 0; c < chunks; ++c) {
        const int b = static_cast<int>(c & 1);
        if (c >= 2) CUDA_CHECK(cudaEventSynchronize(st.ev(b)));  // chunk c - 2 has left buffer b
        const std::size_t a = c * kChunk, len = std::min(kChunk, bytes - a);
        parallel_memcpy(st.buf(b), static_cast<const char*>(host) + a, len);
        CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dev) + a, st.buf(b), len, cudaMemcpyHostToDevice, s));
        CUDA_CHECK(cudaEventRecord(st.ev(b), s));
      }
      CUDA_CHECK(cudaStreamSynchronize(s));
      return;
    }
  }
  CUDA_CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
}

/// Populates the pages of [p, p + bytes) in parallel (see the header comment).
inline void prefault_host(void* p, std::size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  if (bytes < (64ull << 20)) return;
  const std::uintptr_t lo = (reinterpret_cast<std::uintptr_t>(p) + 4095) & ~std::uintptr_t{4095};
  const std::uintptr_t hi = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~std::uintptr_t{4095};
  if (hi <= lo) return;
#ifdef MADV_HUGEPAGE
  madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);  // advice only: errors ignored
#endif
  const unsigned t = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  const std::size_t piece = (((hi - lo) + t - 1) / t + (2u << 20) - 1) & ~((std::size_t{2} << 20) - 1);
  std::vector<std::thread> pool;
  for (unsigned k = 0; k < t; ++k) {
    const std::uintptr_t a = std::min<std::uintptr_t>(hi, lo + k * piece), b = std::min<std::uintptr_t>(hi, a + piece);
    if (a >= b) break;
    pool.emplace_back([=] { madvise(reinterpret_cast<void*>(a), b - a, MADV_POPULATE_WRITE); });
  }
  for (auto& th : pool) th.join();
#else
  (void)p;
  (void)bytes;
#endif
}

}  // namespace almagest::kernels::npcf_staging
