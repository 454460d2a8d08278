#pragma once
// The plain C++ facade of the CUDA module (libalmagest_cuda.so), which the engine loads with
// dlopen at run time. Nothing here includes CUDA headers. The module exports one C symbol,
// `almagest_cuda_module_v1`, returning a pointer to a CudaModule that lives as long as the
// library stays loaded. Methods throw kernels::DeviceError (file, line, CUDA's message); the
// engine maps those to almagest::CudaError.
//
// Engine-specific entry points (NpCF, SHT, stack) are added as further abstract interfaces
// returned by accessor methods; bump kAbiVersion whenever this header changes incompatibly.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace almagest::kernels {

inline constexpr std::uint32_t kAbiVersion = 10;  // 2: NpcfOptions::accumulate; 3: StackPlanes::memory_limit;
                                                 // 4: NpcfOptions::resident_key, release_resident;
                                                 // 5: ShtDevicePlan::synthesis_device, adjoint_device;
                                                 // 6: NpcfOptions::device_graph and
                                                 //    NpcfKernels::make_device_graph (a caller-owned
                                                 //    NpcfDeviceGraph) replace resident_key and
                                                 //    release_resident: NpcfOptions' layout and the
                                                 //    NpcfKernels vtable changed;
                                                 // 7: NpcfOptions::nmu/legendre/mu_periodic/mu_box,
                                                 //    NpcfSums::legendre2/legendre4 (mu binning);
                                                 // 8: StackShifts::fx/fy/wx/wy/rho (sub-pixel
                                                 //    shifts on the GPU)
                                                 // 9: NpcfTriangleRows::bin_threshold/rmin2/rmax2,
                                                 //    NpcfOptions::dense_min_degree (dense 3pCF)
                                                 // 10: NpcfOptions::only_partition (a job split
                                                 //    over processes by partitions)

class DeviceError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Thrown by module code when the device runs out of memory, so callers can fall back to tiling.
class DeviceOutOfMemory : public DeviceError {
public:
  using DeviceError::DeviceError;
};

struct DeviceInfo {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int multiprocessors = 0;
  std::uint64_t total_memory = 0, free_memory = 0;
  int driver_version = 0, runtime_version = 0;
};

struct DeviceQuery {
  bool ok = false;            ///< at least one usable device
  std::string reason;         ///< why not, in words (driver missing, no device, ...)
  std::vector<DeviceInfo> devices;
};

class NpcfKernels;   // kernels/include/almagest/kernels/npcf_cuda.hpp
class ShtKernels;    // kernels/include/almagest/kernels/sht_cuda.hpp
class StackKernels;  // kernels/include/almagest/kernels/stack_cuda.hpp

class CudaModule {
public:
  virtual ~CudaModule() = default;
  virtual std::uint32_t abi_version() const = 0;
  /// Never throws: failures are reported in DeviceQuery::reason.
  virtual DeviceQuery query() const = 0;
  /// Engine entry points; nullptr where the module was built without them.
  virtual NpcfKernels* npcf() { return nullptr; }
  virtual ShtKernels* sht() { return nullptr; }
  virtual StackKernels* stack() { return nullptr; }
};

}  // namespace almagest::kernels

extern "C" {
/// The module's only exported symbol.
typedef almagest::kernels::CudaModule* (*almagest_cuda_module_fn)();
almagest::kernels::CudaModule* almagest_cuda_module_v1();
}
