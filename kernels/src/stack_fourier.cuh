#pragma once
// Tensor-core separable-phase Fourier path of the shift-and-stack search (stack_fourier.cu).
#include <cuda_runtime.h>

#include <memory>

#include "almagest/kernels/stack_cuda.hpp"
#include "stack_common.cuh"

namespace almagest::kernels::stack_detail {

/// Owns cuFFT plans and device work buffers between scans of one session.
class FourierEngine {
public:
  FourierEngine();
  ~FourierEngine();
  FourierEngine(const FourierEngine&) = delete;
  FourierEngine& operator=(const FourierEngine&) = delete;

  /// Runs the scan over all exposures of `planes` (fully resident on the device; `storage` its
  /// encoding) for the separable bank in `shifts` (host tables). Fills digest, hits (threshold
  /// mode), dense outputs (obs = -1) and stage timings of `out`.
  void scan(const DevPlanes& planes, int storage, const StackShifts& shifts,
            const StackScanParams& params, cudaStream_t stream, StackScanResult& out);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace almagest::kernels::stack_detail
