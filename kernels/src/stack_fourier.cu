// Tensor-core separable-phase Fourier path. For a Cartesian bank, velocity v = (i, j) shifts
// exposure e by (sxi[i][e], syj[j][e]); with Psi_e(f) the 2-D spectrum of exposure e (zero padded
// so that circular shifts never wrap valid pixels onto valid pixels),
//   A^(f, i, j) = sum_e exp(2 pi i fx sxi[i][e] / Nx) * exp(2 pi i fy syj[j][e] / Ny) * Psi_e(f),
// i.e. for every frequency a complex product X(f) Y(f)^T of an (nvx x n) phase table with an
// (nvy x n) table whose rows are the other axis' phases times the spectrum. Both operands are FP16
// (the spectrum scaled per frequency), multiplied on the tensor cores with FP32 accumulation;
// nothing of size n_vel x n is materialised. The products [q][f][v] are transposed to [q][v][f]
// (contiguous spectra), inverse real FFTs (cuFFT), then crop, score, threshold and digest in one
// pass. Integer shifts make this the exact statistic up to FP16 rounding.
//
// Operands (the default, stack_fourier_mma.cuh): the x phase table depends on fx alone and the y
// phase table on fy alone, so both are built once per bank as FP16 tables in device memory
// (xc [nfx][i][e], py [ny][j][e], complex pairs; kept between scans of the same shifts) instead of
// being regenerated for every frequency. Per 64-exposure chunk a block copies its X rows, PY rows
// and the spectrum slice into shared memory with asynchronous copies, forms Y = PY * spectrum
// (one complex product per element, both quantities) and multiplies on the tensor cores
// (mma.sync m16n8k16). Blocks walk the frequencies in strips of kSW columns (fx) so that the X
// and PY slices of the blocks in flight stay in L2. ALMAGEST_STACK_FOURIER_GEMM=v1 selects the
// earlier WMMA kernel that generates the phases per frequency (also the fallback when the tables
// would take more than a quarter of the free memory).
#include <cuda_fp16.h>
#include <cuda_pipeline.h>
#include <cuda_runtime.h>
#include <cufft.h>
#include <mma.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_check.cuh"
#include "device_buffer.cuh"
#include "stack_fourier.cuh"
#include "stack_fourier_mma.cuh"

namespace almagest::kernels::stack_detail {
namespace {

using namespace nvcuda;

constexpr double kPi = 3.14159265358979323846;
constexpr int kGI = 80, kGJ = 80, kKC = 64, kLd = kKC + 8, kWarps = 20, kGemmThreads = kWarps * 32;

int good_size(int n) {
  for (int m = std::max(1, n);; ++m) {
    int r = m;
    for (int p : {2, 3, 5, 7})
      while (r % p == 0) r /= p;
    if (r == 1) return m;
  }
}

// Exposures e0 .. e0 + gridDim.y - 1 zero padded into [q][el][ny][nx]; the smallest positive phi
// of exposure e0 + el goes to min_phi_bits[el] (float bits: positive floats order as their bits).
// One slot per exposure, not one for the whole stack: the warp-aggregated atomics of all blocks
// on a single address cost 0.4 ms of the reference workload's 2.2 ms (H100).
template <int S>
__global__ void pad_kernel(DevPlanes P, int nx, int ny, int e0, float* __restrict__ out, unsigned int* __restrict__ min_phi_bits) {
  const int el = blockIdx.y, e = e0 + el;
  const std::size_t npad = std::size_t(nx) * ny;
  const std::size_t per_q = std::size_t(gridDim.y) * npad;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < npad; i += std::size_t(gridDim.x) * blockDim.x) {
    const int x = int(i % nx), y = int(i / nx);
    float2 v = make_float2(0.f, 0.f);
    if (x < P.width && y < P.height) v = load_sample<S>(P, e, x, y);
    out[std::size_t(el) * npad + i] = v.x;
    out[per_q + std::size_t(el) * npad + i] = v.y;
    if (v.y > 0.f) atomicMin(min_phi_bits + el, __float_as_uint(v.y));
  }
}

// fscale[q][f] = max_e |spec[q][e][f]| (1 where all are zero)
__global__ void scale_kernel(const float2* __restrict__ spec, int n, int nf, float* fscale) {
  const int f = blockIdx.x * blockDim.x + threadIdx.x, q = blockIdx.y;
  if (f >= nf) return;
  float m = 0.f;
  for (int e = 0; e < n; ++e) {
    const float2 v = spec[(std::size_t(q) * n + e) * nf + f];
    m = fmaxf(m, fmaxf(fabsf(v.x), fabsf(v.y)));
  }
  fscale[std::size_t(q) * nf + f] = m > 0.f ? m : 1.f;
}

// spec[q][e][f] (float2) -> spech[q][f][e] (half2) / fscale[q][f]
__global__ void transpose_kernel(const float2* __restrict__ spec, const float* __restrict__ fscale, int n,
                                 int nf, int np, __half2* spech) {
  __shared__ float2 t[32][33];
  const int q = blockIdx.z;
  const int f0 = blockIdx.x * 32, e0 = blockIdx.y * 32;
  for (int r = threadIdx.y; r < 32; r += blockDim.y) {
    const int e = e0 + r, f = f0 + threadIdx.x;
    t[r][threadIdx.x] = (e < n && f < nf) ? spec[(std::size_t(q) * n + e) * nf + f] : make_float2(0.f, 0.f);
  }
  __syncthreads();
  for (int r = threadIdx.y; r < 32; r += blockDim.y) {
    const int f = f0 + r, e = e0 + threadIdx.x;
    if (f < nf && e < n) {
      const float inv = 1.f / fscale[std::size_t(q) * nf + f];
      const float2 v = t[threadIdx.x][r];
      spech[(std::size_t(q) * nf + f) * np + e] = __floats2half2_rn(v.x * inv, v.y * inv);
    }
  }
}

/// a mod n for 0 <= a < 2^24 (host guarantees n <= 4096 and a = f * s_mod < n^2): float
/// quotient, off by at most one, then one correction step.
__device__ __forceinline__ int fast_mod(int a, int n, float inv_n) {
  const int q = __float2int_rz(__int2float_rn(a) * inv_n);
  int r = a - q * n;
  if (r < 0) r += n;
  else if (r >= n) r -= n;
  return r;
}

// prod[q][f][v] (float2) -> prodT[q][v][f], contiguous spectra for the inverse FFT
__global__ void transpose_c_kernel(const float2* __restrict__ in, int rows, int cols, float2* __restrict__ out) {
  __shared__ float2 t[32][33];
  const std::size_t qoff = std::size_t(blockIdx.z) * rows * cols;
  const int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
  for (int r = threadIdx.y; r < 32; r += blockDim.y) {
    const int rr = r0 + r, cc = c0 + threadIdx.x;
    if (rr < rows && cc < cols) t[r][threadIdx.x] = in[qoff + std::size_t(rr) * cols + cc];
  }
  __syncthreads();
  for (int r = threadIdx.y; r < 32; r += blockDim.y) {
    const int cc = c0 + r, rr = r0 + threadIdx.x;
    if (rr < rows && cc < cols) out[qoff + std::size_t(cc) * rows + rr] = t[threadIdx.x][r];
  }
}

// One block per (frequency, 80-row tile of i, 80-row tile of j). Warp w: quantity w / 10 (psi,
// phi), i tile (w % 10) / 2, j tiles 0-2 or 3-4 (real and imaginary accumulators). sxi/syj hold
// the shifts reduced modulo nx / ny.
__global__ void __launch_bounds__(kGemmThreads, 1)
phase_gemm_kernel(const __half2* __restrict__ spech, const float* __restrict__ fscale,
                  const float2* __restrict__ twx_g, const float2* __restrict__ twy_g,
                  const int* __restrict__ sxi, const int* __restrict__ syj, int n, int np, int nx, int ny,
                  int nfx, int nf, int nvx, int j0, int nj, float norm, float2* __restrict__ out) {
  const float inv_nx = 1.f / float(nx), inv_ny = 1.f / float(ny);
  extern __shared__ __align__(128) unsigned char smem[];
  __half* Xr = reinterpret_cast<__half*>(smem);
  __half* Xi = Xr + kGI * kLd;
  __half* Yr = Xi + kGI * kLd;       // [2][kGJ][kLd]
  __half* Yi = Yr + 2 * kGJ * kLd;   // [2][kGJ][kLd]
  float2* psiS = reinterpret_cast<float2*>(Yi + 2 * kGJ * kLd);  // [2][kKC]
  float2* twx = psiS + 2 * kKC;
  float2* twy = twx + nx;

  const int f = blockIdx.x, fy = f / nfx, fx = f - fy * nfx;
  const int ib = blockIdx.y * kGI, jb = blockIdx.z * kGJ;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int q = warp / 10, it = (warp % 10) / 2, jt0 = (warp % 2) * 3, njt = (warp % 2) ? 2 : 3;
  for (int m = threadIdx.x; m < nx; m += blockDim.x) twx[m] = twx_g[m];
  for (int m = threadIdx.x; m < ny; m += blockDim.x) twy[m] = twy_g[m];

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> re[3], im[3];
#pragma unroll
  for (int t = 0; t < 3; ++t) {
    wmma::fill_fragment(re[t], 0.f);
    wmma::fill_fragment(im[t], 0.f);
  }
  const bool warp_active = ib + it * 16 < nvx;

  for (int e0 = 0; e0 < n; e0 += kKC) {
    __syncthreads();
    if (threadIdx.x < 2 * kKC) {
      const int qq = threadIdx.x / kKC, kk = threadIdx.x % kKC, e = e0 + kk;
      psiS[threadIdx.x] = e < n ? __half22float2(spech[(std::size_t(qq) * nf + f) * np + e]) : make_float2(0.f, 0.f);
    }
    for (int idx = threadIdx.x; idx < kGI * kKC; idx += blockDim.x) {
      const int i = idx / kKC, kk = idx - i * kKC, e = e0 + kk, gi = ib + i;
      float2 tw = make_float2(0.f, 0.f);
      if (gi < nvx && e < n) tw = twx[fast_mod(fx * sxi[std::size_t(gi) * n + e], nx, inv_nx)];
      Xr[i * kLd + kk] = __float2half_rn(tw.x);
      Xi[i * kLd + kk] = __float2half_rn(tw.y);
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < kGJ * kKC; idx += blockDim.x) {
      const int j = idx / kKC, kk = idx - j * kKC, e = e0 + kk, jj = jb + j;
      float2 tw = make_float2(0.f, 0.f);
      if (jj < nj && e < n) tw = twy[fast_mod(fy * syj[std::size_t(j0 + jj) * n + e], ny, inv_ny)];
#pragma unroll
      for (int qq = 0; qq < 2; ++qq) {
        const float2 p = psiS[qq * kKC + kk];
        Yr[(qq * kGJ + j) * kLd + kk] = __float2half_rn(tw.x * p.x - tw.y * p.y);
        Yi[(qq * kGJ + j) * kLd + kk] = __float2half_rn(tw.x * p.y + tw.y * p.x);
      }
    }
    __syncthreads();
    if (warp_active) {
#pragma unroll
      for (int ks = 0; ks < kKC; ks += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> ar, ai, an;
        wmma::load_matrix_sync(ar, Xr + it * 16 * kLd + ks, kLd);
        wmma::load_matrix_sync(ai, Xi + it * 16 * kLd + ks, kLd);
#pragma unroll
        for (int t = 0; t < ai.num_elements; ++t) an.x[t] = __hneg(ai.x[t]);
#pragma unroll
        for (int t = 0; t < 3; ++t) {
          const int jt = jt0 + t;
          if (t < njt && jb + jt * 16 < nj) {
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> br, bi;
            wmma::load_matrix_sync(br, Yr + (q * kGJ + jt * 16) * kLd + ks, kLd);
            wmma::load_matrix_sync(bi, Yi + (q * kGJ + jt * 16) * kLd + ks, kLd);
            wmma::mma_sync(re[t], ar, br, re[t]);
            wmma::mma_sync(re[t], an, bi, re[t]);
            wmma::mma_sync(im[t], ar, bi, im[t]);
            wmma::mma_sync(im[t], ai, br, im[t]);
          }
        }
      }
    }
  }
  __syncthreads();
  // Write out: per warp a 2 x 16 x 16 float scratch inside the (now free) operand area.
  float* scratch = reinterpret_cast<float*>(smem) + warp * 2 * 256;
  const int nvc = nvx * nj;
  const float sc = fscale[std::size_t(q) * nf + f] * norm;
  float2* outq = out + (std::size_t(q) * nf + f) * nvc;
  if (warp_active) {
#pragma unroll
    for (int t = 0; t < 3; ++t) {
      const int jt = jt0 + t;
      if (t >= njt || jb + jt * 16 >= nj) continue;
      wmma::store_matrix_sync(scratch, re[t], 16, wmma::mem_row_major);
      wmma::store_matrix_sync(scratch + 256, im[t], 16, wmma::mem_row_major);
      __syncwarp();
      for (int t = lane; t < 256; t += 32) {
        const int c = t / 16, r = t % 16;  // r: i within tile (fastest), c: j within tile
        const int gi = ib + it * 16 + r, jj = jb + jt * 16 + c;
        if (gi < nvx && jj < nj)
          outq[std::size_t(jj) * nvx + gi] = make_float2(scratch[r * 16 + c] * sc, scratch[256 + r * 16 + c] * sc);
      }
      __syncwarp();
    }
  }
}

// ---- the mma product's phase tables and the product itself are in stack_fourier_mma.cuh ------
constexpr int kSW = 8;  // frequency strip width (fx columns) of the block order

// vpt velocities per thread (blockIdx.y * vpt .. + vpt - 1 of the chunk's nvc), rout as
// [q][v][y][x]: one digest reduction per block of 256 x vpt trajectories. The loads of 8
// velocities are issued before their epilogues (which store and may add hits).
__global__ void score_kernel(const float* __restrict__ ra, const float* __restrict__ rb, int nx, int ny, int W, int H,
                             int v0, int nvc, int vpt, float bfloor, ScanArgs A) {
  const int pix = blockIdx.x * blockDim.x + threadIdx.x;
  ThreadDigest d;
  if (pix < W * H) {
    const int x = pix % W, y = pix / W;
    const int vb = blockIdx.y * vpt, ve = min(nvc, vb + vpt);
    for (int v8 = vb; v8 < ve; v8 += 8) {
      float av[8], bv[8];
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        const std::size_t i = (std::size_t(min(v8 + k, ve - 1)) * ny + y) * nx + x;
        av[k] = __ldg(ra + i);
        bv[k] = __ldg(rb + i);
      }
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        if (v8 + k >= ve) break;
        float a = av[k], b = bv[k];
        if (!(b >= bfloor)) {
          a = 0.f;
          b = 0.f;
        }
        finish(a, b, -1, x, y, v0 + v8 + k, W, H, A, d, nullptr);
      }
    }
  }
  reduce_digest(d, A.partials);
}

struct Plans {
  cufftHandle h = 0;
  int a = -1, b = -1, c = -1;
  ~Plans() {
    if (h) cufftDestroy(h);
  }
  void reset() {
    if (h) cufftDestroy(h);
    h = 0;
    a = b = c = -1;
  }
};

}  // namespace

struct FourierEngine::Impl {
  Plans fwd, inv;
  // Phase tables of the last bank (the mma product's), reused while the shifts are the same.
  int tnx = -1, tny = -1, tn = -1, tnvx = -1, tnvy = -1;
  std::vector<int> tsxm, tsym;
  DeviceBuffer<__half2> xc, py;  // [nfx][rows_x][np], [ny][rows_y][np] complex pairs
};

FourierEngine::FourierEngine() : impl_(std::make_unique<Impl>()) {}
FourierEngine::~FourierEngine() = default;

void FourierEngine::scan(const DevPlanes& P, int storage, const StackShifts& sh,
                         const StackScanParams& prm, cudaStream_t s, StackScanResult& out) {
  if (!sh.sxi || !sh.syj || sh.nvx <= 0 || sh.nvy <= 0 || sh.nvx * sh.nvy != sh.n_vel)
    throw DeviceError("Fourier path: the bank is not a separable Cartesian grid");
  if (prm.top_k_mode) throw DeviceError("Fourier path: top-k mode is not supported");
  const int n = P.n, W = P.width, H = P.height;
  int ax = 0, ay = 0;
  for (std::size_t i = 0; i < std::size_t(sh.nvx) * n; ++i) ax = std::max(ax, std::abs(sh.sxi[i]));
  for (std::size_t i = 0; i < std::size_t(sh.nvy) * n; ++i) ay = std::max(ay, std::abs(sh.syj[i]));
  const int nx = good_size(W + ax), ny = good_size(H + ay), nfx = nx / 2 + 1, nf = ny * nfx;
  const double norm = 1.0 / (double(nx) * ny);
  cudaEvent_t ev[2];
  CUDA_CHECK(cudaEventCreate(&ev[0]));
  CUDA_CHECK(cudaEventCreate(&ev[1]));
  auto tic = [&] { CUDA_CHECK(cudaEventRecord(ev[0], s)); };
  auto toc = [&](const char* stage) {
    CUDA_CHECK(cudaEventRecord(ev[1], s));
    CUDA_CHECK(cudaEventSynchronize(ev[1]));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, ev[0], ev[1]));
    out.stage_seconds[stage] += ms * 1e-3;
    out.scan_seconds += ms * 1e-3;
  };
  struct EvGuard {
    cudaEvent_t* e;
    ~EvGuard() {
      cudaEventDestroy(e[0]);
      cudaEventDestroy(e[1]);
    }
  } evg{ev};

  // ---- forward: pad + decode, R2C in exposure chunks, per-frequency scale, transpose to FP16
  DeviceBuffer<float2> spec(2 * std::size_t(n) * nf);
  const int ec = std::max(1, std::min(n, int((std::size_t(1) << 30) / (std::size_t(nx) * ny * 8))));
  std::vector<unsigned int> minbits_h(std::size_t(n), 0x7f7fffffu);  // smallest positive phi per exposure
  DeviceBuffer<unsigned int> minphi{std::size_t(n)};
  minphi.upload(minbits_h.data(), minbits_h.size(), s);
  DeviceBuffer<float> real(2 * std::size_t(ec) * nx * ny);
  tic();
  for (int e0 = 0; e0 < n; e0 += ec) {
    const int ne = std::min(ec, n - e0);
    dim3 g(unsigned(std::min<std::size_t>((std::size_t(nx) * ny + 255) / 256, 4096)), unsigned(ne));
    unsigned int* mp = minphi.data() + e0;
    if (storage == 0) pad_kernel<0><<<g, 256, 0, s>>>(P, nx, ny, e0, real.data(), mp);
    else if (storage == 1) pad_kernel<1><<<g, 256, 0, s>>>(P, nx, ny, e0, real.data(), mp);
    else pad_kernel<2><<<g, 256, 0, s>>>(P, nx, ny, e0, real.data(), mp);
    CUDA_CHECK_LAUNCH();
    if (impl_->fwd.a != nx || impl_->fwd.b != ny || impl_->fwd.c != ne) {
      impl_->fwd.reset();
      int dims[2] = {ny, nx};
      CUFFT_CHECK(cufftPlanMany(&impl_->fwd.h, 2, dims, nullptr, 1, nx * ny, nullptr, 1, nf, CUFFT_R2C, ne));
      impl_->fwd.a = nx;
      impl_->fwd.b = ny;
      impl_->fwd.c = ne;
    }
    CUFFT_CHECK(cufftSetStream(impl_->fwd.h, s));
    for (int q = 0; q < 2; ++q) {
      // the real planes of quantity q for this chunk are at q * ne * nx * ny
      CUFFT_CHECK(cufftExecR2C(impl_->fwd.h, real.data() + std::size_t(q) * ne * nx * ny,
                               reinterpret_cast<cufftComplex*>(spec.data() + (std::size_t(q) * n + e0) * nf)));
    }
  }
  DeviceBuffer<float> fscale(2 * std::size_t(nf));
  scale_kernel<<<dim3(unsigned((nf + 255) / 256), 2), 256, 0, s>>>(spec.data(), n, nf, fscale.data());
  CUDA_CHECK_LAUNCH();
  const int np = (n + kKC - 1) / kKC * kKC;  // exposures padded to whole chunks (zeros)
  DeviceBuffer<__half2> spech(2 * std::size_t(nf) * np);
  if (np != n) CUDA_CHECK(cudaMemsetAsync(spech.data(), 0, spech.bytes(), s));
  transpose_kernel<<<dim3(unsigned((nf + 31) / 32), unsigned((n + 31) / 32), 2), dim3(32, 8), 0, s>>>(spec.data(), fscale.data(), n, nf, np, spech.data());
  CUDA_CHECK_LAUNCH();
  toc("forward_fft");
  minphi.download(minbits_h.data(), minbits_h.size(), s);
  CUDA_CHECK(cudaStreamSynchronize(s));
  const unsigned int minbits = *std::min_element(minbits_h.begin(), minbits_h.end());  // positive floats order as their bits
  float minphi_f;
  std::memcpy(&minphi_f, &minbits, 4);
  const float bfloor = 0.5f * minphi_f;
  spec.release();
  real.release();

  // ---- twiddles and shift tables
  std::vector<float2> twx(nx), twy(ny);
  for (int m = 0; m < nx; ++m) twx[m] = make_float2(float(std::cos(2 * kPi * m / nx)), float(std::sin(2 * kPi * m / nx)));
  for (int m = 0; m < ny; ++m) twy[m] = make_float2(float(std::cos(2 * kPi * m / ny)), float(std::sin(2 * kPi * m / ny)));
  auto dtwx = DeviceBuffer<float2>::from(twx, s), dtwy = DeviceBuffer<float2>::from(twy, s);
  if (nx > 4096 || ny > 4096)
    throw DeviceError("Fourier path: padded FFT size " + std::to_string(nx) + " x " + std::to_string(ny) +
                      " exceeds 4096 (image plus shift range too large); use the tiled gather");
  std::vector<int> sxm(std::size_t(sh.nvx) * n), sym(std::size_t(sh.nvy) * n);
  for (std::size_t i = 0; i < sxm.size(); ++i) sxm[i] = ((sh.sxi[i] % nx) + nx) % nx;
  for (std::size_t i = 0; i < sym.size(); ++i) sym[i] = ((sh.syj[i] % ny) + ny) % ny;
  auto dsxi = DeviceBuffer<int>::from(sxm, s), dsyj = DeviceBuffer<int>::from(sym, s);
  const std::size_t smem = std::size_t(kGI) * kLd * 2 * 2 + std::size_t(kGJ) * kLd * 2 * 2 * 2 +
                           2 * kKC * sizeof(float2) + std::size_t(nx + ny) * sizeof(float2);
  CUDA_CHECK(cudaFuncSetAttribute(phase_gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  // The table-fed mma product unless asked for v1 or the tables would take more than a quarter
  // of the free memory. Earlier products, measured and dropped (docs/benchmarks.md, issue 24):
  // WMMA m16n16k16 on the same tables (v2: 22.5 ms on the reference workload against 12.0 ms
  // for the mma product, both on an H100; v2t, v3, v4 and a CUDA-core edge slower still), the
  // mma product writing the inverse FFT's layout itself (19.9 ms: scattered 8-byte writes).
  const int rows_x = (sh.nvx + mma5::kTI - 1) / mma5::kTI * mma5::kTI, rows_y = sh.nvy + mma5::kTJ;
  const std::size_t table_bytes = (std::size_t(nfx) * rows_x + std::size_t(ny) * rows_y) * std::size_t(np) * sizeof(__half2);
  bool tables = true;
  if (const char* e = std::getenv("ALMAGEST_STACK_FOURIER_GEMM"))
    if (std::string(e) == "v1") tables = false;
  int vpt = 8;
  if (const char* e = std::getenv("ALMAGEST_STACK_FOURIER_VPT")) vpt = std::max(1, std::atoi(e));
  {
    std::size_t fr0 = 0, tot0 = 0;
    CUDA_CHECK(cudaMemGetInfo(&fr0, &tot0));
    if (table_bytes > fr0 / 4) tables = false;
  }
  if (tables) {
    Impl& I = *impl_;
    if (!(I.tnx == nx && I.tny == ny && I.tn == n && I.tnvx == sh.nvx && I.tnvy == sh.nvy && I.tsxm == sxm && I.tsym == sym)) {
      tic();
      I.tnx = -1;
      I.xc.release();
      I.py.release();
      I.xc.allocate(std::size_t(nfx) * rows_x * np);
      I.py.allocate(std::size_t(ny) * rows_y * np);
      mma5::phase_table_kernel<<<dim3(unsigned((np + 255) / 256), unsigned(rows_x), unsigned(nfx)), 256, 0, s>>>(
          dtwx.data(), dsxi.data(), n, np, nx, sh.nvx, rows_x, I.xc.data());
      CUDA_CHECK_LAUNCH();
      mma5::phase_table_kernel<<<dim3(unsigned((np + 255) / 256), unsigned(rows_y), unsigned(ny)), 256, 0, s>>>(
          dtwy.data(), dsyj.data(), n, np, ny, sh.nvy, rows_y, I.py.data());
      CUDA_CHECK_LAUNCH();
      toc("phase_tables");
      I.tnx = nx;
      I.tny = ny;
      I.tn = n;
      I.tnvx = sh.nvx;
      I.tnvy = sh.nvy;
      I.tsxm = sxm;
      I.tsym = sym;
    }
    CUDA_CHECK(cudaFuncSetAttribute(mma5::phase_mma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(mma5::smem_bytes())));
  }

  // ---- velocity chunks over j
  std::size_t fr = 0, tot = 0;
  CUDA_CHECK(cudaMemGetInfo(&fr, &tot));
  const std::size_t per_vel = std::size_t(nf) * 32 + std::size_t(nx) * ny * 8;
  int nj = sh.nvy;
  while (nj > 1 && double(per_vel) * sh.nvx * nj * 2.0 > 0.6 * double(fr)) nj = (nj + 1) / 2;
  const std::size_t n_org = std::size_t(W) * H;
  DeviceBuffer<StackHit> dhits(std::max<std::size_t>(1, prm.max_hits));
  DeviceBuffer<unsigned long long> dcount(1);
  dcount.zero(s);
  DeviceBuffer<float> da, db;
  DeviceBuffer<int> dobs;
  if (prm.dense) {
    da.allocate(n_org * sh.n_vel);
    db.allocate(n_org * sh.n_vel);
    dobs.allocate(n_org * sh.n_vel);
    CUDA_CHECK(cudaMemsetAsync(dobs.data(), 0xff, dobs.bytes(), s));
  }
  ScanArgs A{};
  A.threshold = prm.threshold;
  A.top_k = 0;
  A.hits = dhits.data();
  A.hit_count = dcount.data();
  A.max_hits = std::max<std::size_t>(1, prm.max_hits);
  A.dense_a = da.data();
  A.dense_b = db.data();
  A.dense_obs = dobs.data();  // pre-filled with -1; finish() writes -1 too
  A.n_vel = sh.n_vel;
  DeviceBuffer<BlockDigest> dpart;
  std::vector<BlockDigest> hpart;
  double sum_a = 0, sum_b = 0, max_z = 0;
  unsigned long long count = 0;
  for (int j0 = 0; j0 < sh.nvy;) {
    if (prm.cancelled && prm.cancelled()) {
      out.cancelled = true;
      return;
    }
    const int njc = std::min(nj, sh.nvy - j0);
    const int nvc = sh.nvx * njc;
    DeviceBuffer<float2> prod, prodT;
    DeviceBuffer<float> rout;
    try {
      prod.allocate(2 * std::size_t(nf) * nvc);
      prodT.allocate(2 * std::size_t(nf) * nvc);
      rout.allocate(2 * std::size_t(nvc) * nx * ny);
      if (impl_->inv.a != nx || impl_->inv.b != ny || impl_->inv.c != nvc) {
        impl_->inv.reset();
        int dims[2] = {ny, nx};
        CUFFT_CHECK(cufftPlanMany(&impl_->inv.h, 2, dims, nullptr, 1, nf, nullptr, 1, nx * ny, CUFFT_C2R, nvc));
        impl_->inv.a = nx;
        impl_->inv.b = ny;
        impl_->inv.c = nvc;
      }
    } catch (const DeviceOutOfMemory&) {
      cudaGetLastError();
      impl_->inv.reset();
      if (nj == 1) throw;
      nj = (nj + 1) / 2;
      continue;
    }
    tic();
    if (tables) {
      const Impl& I = *impl_;
      const dim3 g(unsigned(nf), unsigned((sh.nvx + mma5::kTI - 1) / mma5::kTI), unsigned((njc + mma5::kTJ - 1) / mma5::kTJ));
      mma5::phase_mma_kernel<<<g, mma5::kThreads, mma5::smem_bytes(), s>>>(spech.data(), fscale.data(), I.xc.data(), I.py.data(), np, nfx, ny,
                                                                          nf, sh.nvx, rows_x, rows_y, j0, njc, kSW, float(norm), prod.data());
    } else {
      const dim3 g(unsigned(nf), unsigned((sh.nvx + kGI - 1) / kGI), unsigned((njc + kGJ - 1) / kGJ));
      phase_gemm_kernel<<<g, kGemmThreads, smem, s>>>(spech.data(), fscale.data(), dtwx.data(), dtwy.data(), dsxi.data(),
                                                      dsyj.data(), n, np, nx, ny, nfx, nf, sh.nvx, j0, njc, float(norm), prod.data());
    }
    CUDA_CHECK_LAUNCH();
    toc("phase_gemm");
    tic();  // [q][f][v] -> [q][v][f]: contiguous spectra for the inverse FFT
    transpose_c_kernel<<<dim3(unsigned((nvc + 31) / 32), unsigned((nf + 31) / 32), 2), dim3(32, 8), 0, s>>>(prod.data(), nf, nvc, prodT.data());
    CUDA_CHECK_LAUNCH();
    toc("transpose");
    tic();
    CUFFT_CHECK(cufftSetStream(impl_->inv.h, s));
    for (int q = 0; q < 2; ++q)
      CUFFT_CHECK(cufftExecC2R(impl_->inv.h, reinterpret_cast<cufftComplex*>(prodT.data() + std::size_t(q) * nf * nvc),
                               rout.data() + std::size_t(q) * nvc * nx * ny));
    toc("inverse_fft");
    tic();
    dim3 gs(unsigned((n_org + 255) / 256), unsigned((nvc + vpt - 1) / vpt));
    dpart.reserve(std::size_t(gs.x) * gs.y);
    A.partials = dpart.data();
    score_kernel<<<gs, 256, 0, s>>>(rout.data(), rout.data() + std::size_t(nvc) * nx * ny, nx, ny, W, H, j0 * sh.nvx, nvc, vpt,
                                    bfloor, A);
    CUDA_CHECK_LAUNCH();
    toc("score");
    hpart.resize(std::size_t(gs.x) * gs.y);
    dpart.download(hpart.data(), hpart.size(), s);
    CUDA_CHECK(cudaStreamSynchronize(s));
    for (const auto& b : hpart) {
      sum_a += b.sum_a;
      sum_b += b.sum_b;
      max_z = std::max<double>(max_z, b.max_z);
      count += b.count;
    }
    j0 += njc;
    if (prm.progress) prm.progress(double(j0), double(sh.nvy), "search (gpu fourier)");
  }
  out.sum_a = sum_a;
  out.sum_b = sum_b;
  out.max_z = max_z;
  out.count_above = count;
  unsigned long long n_hits = 0;
  dcount.download(&n_hits, 1, s);
  CUDA_CHECK(cudaStreamSynchronize(s));
  out.total_hits = n_hits;
  out.hits.resize(std::min<unsigned long long>(n_hits, A.max_hits));
  dhits.download(out.hits.data(), out.hits.size(), s);
  if (prm.dense) {
    out.dense_a.resize(da.size());
    out.dense_b.resize(db.size());
    out.dense_obs.resize(dobs.size());
    da.download(out.dense_a.data(), da.size(), s);
    db.download(out.dense_b.data(), db.size(), s);
    dobs.download(out.dense_obs.data(), dobs.size(), s);
  }
  CUDA_CHECK(cudaStreamSynchronize(s));
  std::sort(out.hits.begin(), out.hits.end(), [](const StackHit& a, const StackHit& b) {
    if (a.y != b.y) return a.y < b.y;
    if (a.x != b.x) return a.x < b.x;
    return a.v < b.v;
  });
}

}  // namespace almagest::kernels::stack_detail
