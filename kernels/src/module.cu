// The CUDA module's entry point: almagest_cuda_module_v1() returns the process-wide CudaModule of
// this library. query() reports devices and never throws; engine entry points are reached through
// the accessors (npcf(), ...).
#include <cuda_runtime.h>

#include <exception>
#include <string>

#include "almagest/kernels/cuda_module.hpp"
#include "almagest/kernels/npcf_cuda.hpp"
#include "almagest/kernels/sht_cuda.hpp"
#include "almagest/kernels/stack_cuda.hpp"
#include "cuda_check.cuh"
#include "npcf_common.cuh"

// Defined in stack_module.cu.
almagest::kernels::StackKernels* almagest_stack_kernels();

namespace almagest::kernels {
namespace {

std::string explain(cudaError_t err) {
  std::string s = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
  switch (err) {
    case cudaErrorInsufficientDriver:
      return "no usable NVIDIA driver (" + s +
             "): the CUDA driver library is missing or older than the CUDA runtime of the module";
    case cudaErrorNoDevice:
      return "no CUDA-capable device found (" + s + ")";
    case cudaErrorCallRequiresNewerDriver:
      return "the NVIDIA driver is too old for this module (" + s + ")";
    default:
      return "CUDA runtime initialisation failed (" + s + ")";
  }
}

DeviceQuery run_query() {
  DeviceQuery q;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error state of this thread
    q.reason = explain(err);
    return q;
  }
  if (count <= 0) {
    q.reason = "no CUDA-capable device found (cudaGetDeviceCount returned 0)";
    return q;
  }
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  std::string problems;
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    cudaError_t e = cudaGetDeviceProperties(&prop, d);
    if (e != cudaSuccess) {
      problems += "device " + std::to_string(d) + ": " + explain(e) + "; ";
      cudaGetLastError();
      continue;
    }
    DeviceInfo info;
    info.index = d;
    info.name = prop.name;
    info.cc_major = prop.major;
    info.cc_minor = prop.minor;
    info.multiprocessors = prop.multiProcessorCount;
    info.total_memory = prop.totalGlobalMem;
    info.driver_version = driver;
    info.runtime_version = runtime;
    int prev = 0;
    if (cudaGetDevice(&prev) == cudaSuccess && cudaSetDevice(d) == cudaSuccess) {
      std::size_t free_b = 0, total_b = 0;
      e = cudaMemGetInfo(&free_b, &total_b);
      if (e == cudaSuccess) {
        info.free_memory = free_b;
        info.total_memory = total_b;
      } else {
        problems += "device " + std::to_string(d) + ": cudaMemGetInfo failed (" + explain(e) + "); ";
        cudaGetLastError();
      }
      cudaSetDevice(prev);
    }
    if (info.cc_major < 6) {
      problems += "device " + std::to_string(d) + " (" + info.name + ") has compute capability " +
                  std::to_string(info.cc_major) + "." + std::to_string(info.cc_minor) +
                  ", below the 6.0 this module needs; ";
      continue;
    }
    q.devices.push_back(std::move(info));
  }
  q.ok = !q.devices.empty();
  if (!q.ok) q.reason = problems.empty() ? "no usable CUDA device" : problems;
  return q;
}

class Module final : public CudaModule {
public:
  std::uint32_t abi_version() const override { return kAbiVersion; }
  DeviceQuery query() const override {
    try {
      return run_query();
    } catch (const std::exception& e) {
      DeviceQuery q;
      q.reason = std::string("device query failed: ") + e.what();
      return q;
    } catch (...) {
      DeviceQuery q;
      q.reason = "device query failed with an unknown exception";
      return q;
    }
  }
  NpcfKernels* npcf() override { return npcf_kernels_instance(); }
  StackKernels* stack() override { return almagest_stack_kernels(); }
  ShtKernels* sht() override { return almagest_sht_kernels(); }
};

}  // namespace
}  // namespace almagest::kernels

extern "C" __attribute__((visibility("default"))) almagest::kernels::CudaModule*
almagest_cuda_module_v1() {
  static almagest::kernels::Module module;
  return &module;
}
