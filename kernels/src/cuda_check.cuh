#pragma once
// CUDA_CHECK: every CUDA runtime call in the module goes through it. A failing call throws
// kernels::DeviceError (kernels::DeviceOutOfMemory for cudaErrorMemoryAllocation) whose message
// names the file, the line, the expression and CUDA's own text.
#include <cuda_runtime.h>

#include <string>

#include "almagest/kernels/cuda_module.hpp"

namespace almagest::kernels::detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* expr, const char* file,
                                          int line) {
  cudaGetLastError();  // reset the thread's last-error state so later launch checks start clean
  std::string msg = std::string("CUDA error at ") + file + ":" + std::to_string(line) + ": " +
                    expr + " returned " + cudaGetErrorName(err) + " (" +
                    cudaGetErrorString(err) + ")";
  if (err == cudaErrorMemoryAllocation) throw DeviceOutOfMemory(msg);
  throw DeviceError(msg);
}

}  // namespace almagest::kernels::detail

#define CUDA_CHECK(expr)                                                                     \
  do {                                                                                       \
    const cudaError_t almagest_cuda_err_ = (expr);                                           \
    if (almagest_cuda_err_ != cudaSuccess)                                                   \
      ::almagest::kernels::detail::throw_cuda_error(almagest_cuda_err_, #expr, __FILE__,     \
                                                    __LINE__);                               \
  } while (0)

/// After a kernel launch: checks the launch itself (configuration errors) without synchronising.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
