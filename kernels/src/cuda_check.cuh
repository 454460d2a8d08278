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

/// The status of a CUDA library call (cuFFT, cuBLAS): DeviceOutOfMemory for the library's
/// allocation failure, DeviceError for any other failure, naming the library, file, line and call.
template <class Status>
inline void check_library_status(Status st, Status success, Status alloc_failed, const char* lib,
                                 const char* expr, const char* file, int line) {
  if (st == success) return;
  const std::string msg = std::string(lib) + " error at " + file + ":" + std::to_string(line) +
                          ": " + expr + " returned " + std::to_string(static_cast<int>(st));
  if (st == alloc_failed) throw DeviceOutOfMemory(msg);
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

/// cuFFT and cuBLAS calls (the including file includes cufft.h or cublas_v2.h).
#define CUFFT_CHECK(expr)                                                                        \
  ::almagest::kernels::detail::check_library_status((expr), CUFFT_SUCCESS, CUFFT_ALLOC_FAILED,  \
                                                    "cuFFT", #expr, __FILE__, __LINE__)
#define CUBLAS_CHECK(expr)                                                                       \
  ::almagest::kernels::detail::check_library_status((expr), CUBLAS_STATUS_SUCCESS,              \
                                                    CUBLAS_STATUS_ALLOC_FAILED, "cuBLAS", #expr, \
                                                    __FILE__, __LINE__)
