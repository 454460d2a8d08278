#pragma once
// Per-plan state of the batched table path (sht_tables.cuh): the Legendre tables on the device,
// the packed work matrices for up to max_cols columns, and a cuBLAS handle bound to the plan's
// stream. Built for plans of >= 8 columns up to nside 256 (ALMAGEST_SHT_LEGENDRE=tables: from two
// columns, both directions; docs/sht.md).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "device_buffer.cuh"
#include "sht_tables.cuh"

namespace almagest::kernels::sht {

class LegendreTables {
public:
  /// Fills the tables on the host (mlim: per ring pair, as the plan's) and uploads them; work
  /// matrices for max_cols columns. Throws DeviceOutOfMemory where they do not fit.
  LegendreTables(int nside, int lmax, int spin, int max_cols, const std::vector<int>& mlim,
                 cudaStream_t s);
  ~LegendreTables();
  LegendreTables(const LegendreTables&) = delete;
  LegendreTables& operator=(const LegendreTables&) = delete;

  /// alm [ncols ncomp][nalm] -> F [ncols ncomp][4 nside - 1][lmax + 1] (m up to each pair's
  /// mlim), on stream s (the one given to the constructor: the cuBLAS handle is bound to it).
  void synthesis(const cplx* alm, cplx* F, int ncols, cudaStream_t s);
  /// F -> alm (every entry of the ncols columns written).
  void adjoint(const cplx* F, cplx* alm, int ncols, cudaStream_t s);
  std::size_t bytes() const;
  /// Device bytes of the tables and work matrices (what the constructor allocates).
  static std::size_t bytes_needed(int nside, int lmax, int spin, int max_cols);

private:
  void gemm(const GemmDesc& g, const double* A, const double* B, double* C);

  int nside_, lmax_, spin_, max_cols_;
  DeviceBuffer<double> tab_, alm_side_[2], ring_side_[2];
  DeviceBuffer<int> mlim_;
  DeviceBuffer<char> workspace_;
  cublasHandle_t handle_ = nullptr;
};

}  // namespace almagest::kernels::sht
