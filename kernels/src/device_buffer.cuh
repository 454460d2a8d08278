#pragma once
// RAII device array. Owns `size` elements of T in device memory (cudaMalloc / cudaFree); move-only.
// Sizes are size_t; allocation failure throws kernels::DeviceOutOfMemory (through CUDA_CHECK), so
// callers can fall back to tiling. Copies take an explicit stream and are asynchronous with
// respect to the host unless the host memory is pageable (CUDA then stages them).
#include <cuda_runtime.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "cuda_check.cuh"

namespace almagest::kernels {

template <class T>
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) { allocate(n); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }

  /// Frees the current array and allocates n elements (contents undefined).
  void allocate(std::size_t n) {
    release();
    if (n == 0) return;
    void* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, n * sizeof(T)));
    ptr_ = static_cast<T*>(p);
    size_ = n;
  }
  /// Grows to at least n elements (contents undefined after growth); never shrinks.
  void reserve(std::size_t n) {
    if (n > size_) allocate(n);
  }
  void release() noexcept {
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
    size_ = 0;
  }

  T* data() noexcept { return ptr_; }
  const T* data() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t bytes() const noexcept { return size_ * sizeof(T); }
  bool empty() const noexcept { return size_ == 0; }

  void zero(cudaStream_t s) {
    if (size_) CUDA_CHECK(cudaMemsetAsync(ptr_, 0, bytes(), s));
  }
  /// Host -> device, n elements at element offset `at`.
  void upload(const T* host, std::size_t n, cudaStream_t s, std::size_t at = 0) {
    if (n) CUDA_CHECK(cudaMemcpyAsync(ptr_ + at, host, n * sizeof(T), cudaMemcpyHostToDevice, s));
  }
  /// Device -> host, n elements from element offset `at`.
  void download(T* host, std::size_t n, cudaStream_t s, std::size_t at = 0) const {
    if (n) CUDA_CHECK(cudaMemcpyAsync(host, ptr_ + at, n * sizeof(T), cudaMemcpyDeviceToHost, s));
  }
  /// Allocates and uploads a whole vector (synchronous with respect to the stream's later work).
  static DeviceBuffer from(const std::vector<T>& v, cudaStream_t s) {
    DeviceBuffer b(v.size());
    b.upload(v.data(), v.size(), s);
    return b;
  }

private:
  T* ptr_ = nullptr;
  std::size_t size_ = 0;
};

/// RAII stream on the current device.
class Stream {
public:
  Stream() { CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  operator cudaStream_t() const noexcept { return s_; }
  void sync() const { CUDA_CHECK(cudaStreamSynchronize(s_)); }

private:
  cudaStream_t s_ = nullptr;
};

/// Selects a device for the lifetime of the guard and restores the previous one afterwards.
class DeviceGuard {
public:
  explicit DeviceGuard(int device) {
    CUDA_CHECK(cudaGetDevice(&prev_));
    if (device != prev_) CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() { cudaSetDevice(prev_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

private:
  int prev_ = 0;
};

}  // namespace almagest::kernels
