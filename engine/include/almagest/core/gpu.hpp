#pragma once
// Run-time access to the CUDA module. The application starts and runs on machines with neither a
// GPU nor CUDA libraries: the module is loaded on first use and every failure is explained.
//
// Module search order: $ALMAGEST_CUDA_MODULE (a path), the directory of the running executable,
// <exe dir>/../lib/almagest, then the dynamic loader's default search.
#include <string>

#include "almagest/kernels/cuda_module.hpp"

namespace almagest {

struct GpuStatus {
  bool available = false;     ///< module loaded and at least one device usable
  std::string reason;         ///< why not (module missing, dlopen error, driver, no device)
  std::string module_path;    ///< where the module was loaded from
  kernels::DeviceQuery query; ///< devices found
  /// One line for status bars and logs: "NVIDIA H200 (sm_90, 139.8 GiB)" or the reason.
  std::string summary() const;
};

/// Loads the module if needed and queries devices. Never throws. Thread-safe; cached after the
/// first call (pass refresh = true to query again).
const GpuStatus& gpu_status(bool refresh = false);

/// The loaded module; throws BackendUnavailable with gpu_status().reason when unavailable.
kernels::CudaModule& cuda_module();

/// Runs `f` and converts kernels::DeviceError into almagest::CudaError.
template <class F>
decltype(auto) with_cuda_errors(F&& f);

}  // namespace almagest

#include "almagest/core/error.hpp"

template <class F>
decltype(auto) almagest::with_cuda_errors(F&& f) {
  try {
    return f();
  } catch (const kernels::DeviceError& e) {
    throw CudaError(e.what());
  }
}
