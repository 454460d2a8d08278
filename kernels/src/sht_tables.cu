// Device side of the batched table path (sht_tables.cuh, sht_tables_plan.cuh): element kernels
// around strided batched cuBLAS DGEMMs.
#include "cuda_check.cuh"
#include "sht_tables_plan.cuh"

namespace almagest::kernels::sht {
namespace {

constexpr int kBlock = 256;
/// cuBLAS work area set once, so that calls made during graph capture allocate nothing.
constexpr std::size_t kWorkspaceBytes = 4u << 20;

unsigned blocks_for(std::size_t n) {
  const std::size_t b = (n + kBlock - 1) / kBlock;
  return static_cast<unsigned>(b < 65535u * 16u ? (b < 1 ? 1 : b) : 65535u * 16u);
}

__global__ void k_pack_alm(TableLayout L, const cplx* alm, double* side, std::size_t n) {
  for (std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    pack_alm_element(L, alm, side, t);
}
__global__ void k_unpack_ring(TableLayout L, const double* s0, const double* s1, const int* mlim,
                              cplx* F, std::size_t n) {
  for (std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    unpack_ring_element(L, s0, s1, mlim, F, t);
}
__global__ void k_pack_ring(TableLayout L, const cplx* F, const int* mlim, double* s0, double* s1,
                            std::size_t n) {
  for (std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    pack_ring_element(L, F, mlim, s0, s1, t);
}
__global__ void k_unpack_alm(TableLayout L, const double* s0, const double* s1, cplx* alm,
                             std::size_t n) {
  for (std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    unpack_alm_element(L, s0, s1, alm, t);
}

}  // namespace

std::size_t LegendreTables::bytes_needed(int nside, int lmax, int spin, int max_cols) {
  const TableLayout L = table_layout(nside, lmax, spin, max_cols);
  const std::size_t n = L.table_doubles() + L.ntab() * (L.alm_side_doubles() + L.ring_side_doubles());
  return n * sizeof(double) + kWorkspaceBytes;
}

LegendreTables::LegendreTables(int nside, int lmax, int spin, int max_cols,
                               const std::vector<int>& mlim, cudaStream_t s)
    : nside_(nside), lmax_(lmax), spin_(spin), max_cols_(max_cols) {
  const TableLayout L = table_layout(nside, lmax, spin, max_cols);
  for (int t = 0; t < L.ntab(); ++t) {
    alm_side_[t].allocate(L.alm_side_doubles());
    ring_side_[t].allocate(L.ring_side_doubles());
  }
  workspace_.allocate(kWorkspaceBytes);
  const std::vector<double> host = make_tables(L, mlim);
  tab_ = DeviceBuffer<double>::from(host, s);
  mlim_ = DeviceBuffer<int>::from(mlim, s);
  CUBLAS_CHECK(cublasCreate(&handle_));
  CUBLAS_CHECK(cublasSetStream(handle_, s));
  CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_.data(), kWorkspaceBytes));
  CUDA_CHECK(cudaStreamSynchronize(s));  // before the host table is freed
}

LegendreTables::~LegendreTables() {
  if (handle_) cublasDestroy(handle_);
}

std::size_t LegendreTables::bytes() const {
  std::size_t b = tab_.bytes() + mlim_.bytes() + workspace_.bytes();
  for (int t = 0; t < 2; ++t) b += alm_side_[t].bytes() + ring_side_[t].bytes();
  return b;
}

void LegendreTables::gemm(const GemmDesc& g, const double* A, const double* B, double* C) {
  const double one = 1.0, zero = 0.0;
  CUBLAS_CHECK(cublasDgemmStridedBatched(handle_, g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                         CUBLAS_OP_N, g.m, g.n, g.k, &one, A, g.lda, g.stride_a,
                                         B, g.ldb, g.stride_b, &zero, C, g.ldc, g.stride_c,
                                         g.batch));
}

void LegendreTables::synthesis(const cplx* alm, cplx* F, int ncols, cudaStream_t s) {
  if (ncols < 1 || ncols > max_cols_) throw DeviceError("sht tables: bad column count");
  const TableLayout L = table_layout(nside_, lmax_, spin_, ncols);
  const std::size_t na = L.alm_side_doubles();
  k_pack_alm<<<blocks_for(na), kBlock, 0, s>>>(L, alm, alm_side_[0].data(), na);
  CUDA_CHECK_LAUNCH();
  for (int t = 0; t < L.ntab(); ++t)
    gemm(synthesis_gemm(L), tab_.data() + L.table_offset(t, 0, 0), alm_side_[0].data(),
         ring_side_[t].data());
  const std::size_t nu = static_cast<std::size_t>(lmax_ + 1) * L.Rp * ncols;
  k_unpack_ring<<<blocks_for(nu), kBlock, 0, s>>>(L, ring_side_[0].data(),
                                                  ring_side_[L.ntab() - 1].data(), mlim_.data(), F, nu);
  CUDA_CHECK_LAUNCH();
}

void LegendreTables::adjoint(const cplx* F, cplx* alm, int ncols, cudaStream_t s) {
  if (ncols < 1 || ncols > max_cols_) throw DeviceError("sht tables: bad column count");
  const TableLayout L = table_layout(nside_, lmax_, spin_, ncols);
  const std::size_t np = static_cast<std::size_t>(L.batch()) * L.Rp * ncols;
  k_pack_ring<<<blocks_for(np), kBlock, 0, s>>>(L, F, mlim_.data(), ring_side_[0].data(),
                                                ring_side_[L.ntab() - 1].data(), np);
  CUDA_CHECK_LAUNCH();
  for (int t = 0; t < L.ntab(); ++t)
    gemm(adjoint_gemm(L), tab_.data() + L.table_offset(t, 0, 0), ring_side_[t].data(),
         alm_side_[t].data());
  const std::size_t nu = static_cast<std::size_t>(L.batch()) * L.Lp * ncols;
  k_unpack_alm<<<blocks_for(nu), kBlock, 0, s>>>(L, alm_side_[0].data(),
                                                 alm_side_[L.ntab() - 1].data(), alm, nu);
  CUDA_CHECK_LAUNCH();
}

}  // namespace almagest::kernels::sht
