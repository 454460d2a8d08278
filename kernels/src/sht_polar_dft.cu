// The adjoint's polar ring pairs as one DFT per pair and block in shared memory (the algorithm
// and its pieces: sht_polar_dft.cuh): map -> the pairs' rows in PU (the first N entries of each,
// c_k Y(k) as the Bluestein chain leaves them), in place of the polar load, the batched cuFFT
// Bluestein FFTs and the chirp-spectrum product, which move the padded rows through device
// memory eight to ten times. Here the map's polar pixels are read once per quarter (from L2 after
// the first), each quarter's FFTs stay in the block's two buffers of shared memory (128 KB for
// the longest quarters), and each row entry is written once.
#include <algorithm>
#include <cstdint>

#include "cuda_check.cuh"
#include "sht_fft_device.cuh"
#include "sht_kernels.cuh"
#include "sht_polar_dft.cuh"

namespace almagest::kernels::sht {
namespace {

using namespace dev;
using namespace pdft;

/// Shared-memory index of buffer entry i: one unused entry after every 8, so that the radix-8
/// passes' scattered writes fall in distinct banks (measured on the H200: 0.95 against 1.14 ms
/// for the polar rows at nside 2048, with the twiddle powers below).
__device__ __forceinline__ int sidx(int i) { return i + (i >> 3); }
/// Entries of a padded buffer of L.
__host__ __device__ __forceinline__ int padded(int L) { return L + L / 8; }

/// One Stockham pass of radix R (pass_radix) from buffer src to buffer dst: each butterfly reads
/// its R inputs (from `load` on the first pass) and writes its R outputs (to `store` on the last
/// pass), one butterfly after another; a barrier. (In place, with every butterfly's values held
/// over a barrier between the reads and the writes, ptxas spilled at 64 to 128 registers, and
/// the kernel ran 1.5 times as long.)
template <int R, int T, class Load, class Store>
__device__ __forceinline__ void pass(const cplx* src, cplx* dst, int L, int lg, int sign,
                                     bool first, bool last, const cplx* tws, Load& load,
                                     Store& store) {
  const int nb = L / R;
#pragma unroll 1
  for (int j = static_cast<int>(threadIdx.x); j < nb; j += T) {
    cplx v[R];
#pragma unroll
    for (int r = 0; r < R; ++r) v[r] = first ? load(j + r * nb) : src[sidx(j + r * nb)];
    butterfly<R>(v, j, lg, sign, tws, L);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int i = out_index(j, lg, R, r);
      if (last)
        store(i, v[r]);
      else
        dst[sidx(i)] = v[r];
    }
  }
  __syncthreads();
}

/// FFT of length L (sign -1 forward, +1 inverse) through the block's buffers a and b: the first
/// pass reads load(i), the last writes store(i, v), the passes between alternate between the
/// buffers (a pass writes the buffer it does not read); tws: the block's twiddle table.
template <int T, class Load, class Store>
__device__ __forceinline__ void block_fft(cplx* a, cplx* b, int L, int sign, const cplx* tws,
                                          Load load, Store store) {
  const int np = pass_count(L);
#pragma unroll 1
  for (int p = 0, lg = 0; p < np; ++p) {
    const int R = pass_radix(L, p);
    const bool first = p == 0, last = p == np - 1;
    if (R == 8)
      pass<8, T>(a, b, L, lg, sign, first, last, tws, load, store);
    else if (R == 4)
      pass<4, T>(a, b, L, lg, sign, first, last, tws, load, store);
    else if (R == 3)
      pass<3, T>(a, b, L, lg, sign, first, last, tws, load, store);
    else
      pass<2, T>(a, b, L, lg, sign, first, last, tws, load, store);
    lg += R == 8 ? 3 : R == 4 ? 2 : 1;  // (no pass follows a 3)
    cplx* t = a;
    a = b;
    b = t;
  }
}

/// The block's twiddle table for length L (tws[m] = e^{-2 pi i m / L}, m < L / 4) from the
/// plan's, then a barrier.
template <int T>
__device__ __forceinline__ void fill_twiddles(cplx* tws, int L, const cplx* tw) {
  for (int m = static_cast<int>(threadIdx.x); m < L / 4; m += T) tws[m] = tw[m * (kTwiddles / L)];
  __syncthreads();
}

/// tw[k] = e^{-2 pi i k / kTwiddles} (grid-stride), and the chirps b_t = e^{i pi t^2 / n} of
/// every quarter size n < nside at chirp_offset(n) + t (blocks over n, threads over t).
__global__ void k_pdft_twiddles_chirps(int nside, cplx* tw, cplx* chirps) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < kTwiddles; i += gridDim.x * blockDim.x) {
    double s, c;
    sincospi(2.0 * static_cast<double>(i) / kTwiddles, &s, &c);
    tw[i] = {c, -s};
  }
  for (int n = blockIdx.x + 1; n < nside; n += gridDim.x)
    for (int t = threadIdx.x; t < n; t += blockDim.x) chirps[chirp_offset(n) + t] = chirp(t, n);
}

/// Threads per block of the table kernel and of the adjoint kernel for the longer quarters (one
/// radix-8 butterfly each at kMaxLength), and of the adjoint kernel for quarters of length <=
/// kShortLength.
constexpr int kThreads = 512;
constexpr int kShortThreads = 128;
constexpr int kShortLength = 1024;

/// The chirp spectra: FFT of h (h_j = b_j, h_{L - j} = b_j for 0 < j < n) / L of every quarter
/// size n = q + 1 < nside, at spec + spec_off[q]; blocks over q.
__global__ void __launch_bounds__(kThreads) k_pdft_spectra(const cplx* tw, const cplx* chirps,
                                                           cplx* spec,
                                                           const long long* spec_off) {
  extern __shared__ cplx buf[];
  const int q = blockIdx.x, n = q + 1, L = quarter_length(n);
  const cplx* b = chirps + chirp_offset(n);
  cplx* out = spec + spec_off[q];
  cplx* tws = buf + 2 * padded(L);
  fill_twiddles<kThreads>(tws, L, tw);
  const double inv = 1.0 / L;
  auto load = [&](int i) -> cplx {
    if (i < n) return b[i];
    if (L - i < n) return b[L - i];
    return {0.0, 0.0};
  };
  auto store = [&](int i, cplx v) { out[i] = {v.re * inv, v.im * inv}; };
  block_fft<kThreads>(buf, buf + padded(L), L, -1, tws, load, store);
}

/// What k_pdft_adjoint reads of a call's FftArgs (the kernel takes no FftArgs: a run-time index
/// into its class array, a kernel parameter, had ptxas hold the array in registers).
struct PdftCall {
  int nside, ncc;
  std::int64_t npix;
  cplx* PU;
};

/// The adjoint's polar rows: block (x, cc) takes ring pair q = q0 - x (longest first) of
/// column-component cc and writes c_k Y(k), k < N = 4 (q + 1), to its row in PU. Dynamic shared
/// memory (pdft_smem): two padded buffers of the launch's longest quarter length and the block's
/// twiddle table. (G blocks taking every G-th pair, which leave SMs to the belt FFT beside them,
/// measured no faster at G = 132 and slower at 120 and 100: 21.38 / 21.41 / 21.55 against 21.42
/// ms for the spin-0 adjoint at nside 2048.)
template <int T>
__global__ void __launch_bounds__(T) k_pdft_adjoint(PdftCall a, PolarDftArgs d, int q0,
                                                    const double* full) {
  extern __shared__ cplx buf[];
  const int q = q0 - static_cast<int>(blockIdx.x), cc = blockIdx.y;
  const int n = q + 1, N = 4 * n, L = quarter_length(n), Lmax = quarter_length(q0 + 1);
  cplx* const b0 = buf;
  cplx* const b1 = buf + padded(Lmax);
  cplx* const tws = buf + 2 * padded(Lmax);
  const double* mn = full + static_cast<std::size_t>(cc) * a.npix + 2LL * n * (n - 1);
  const double* ms = full + static_cast<std::size_t>(cc) * a.npix + a.npix - 2LL * n * (n + 1);
  const cplx* b = d.chirps + chirp_offset(n);
  const cplx* H = d.spec + d.spec_off[q];
  const long long* pr = d.prow + 3 * q;  // (the row offsets unaliased_polar_pair reads)
  cplx* row = a.PU + pr[0] * a.ncc + cc * pr[1] + pr[2];
  fill_twiddles<T>(tws, L, d.tw);
  // Where the forward FFT's last pass writes (and the inverse's first reads).
  cplx* const prod = pass_count(L) % 2 == 0 ? b0 : b1;
  cplx* const other = prod == b0 ? b1 : b0;
#pragma unroll 1
  for (int rho = 0; rho < 4; ++rho) {
    // The forward FFT: the first pass reads the quarter's input from the map, the last writes
    // its product with the chirp spectrum.
    auto input = [&](int t) -> cplx {
      if (t >= n) return {0.0, 0.0};
      return quarter_input(mn, ms, n, rho, t, quarter_twiddle(n, rho, t), b[t]);
    };
    auto times_h = [&](int i, cplx v) { prod[sidx(i)] = cmul(v, H[i]); };
    block_fft<T>(b0, b1, L, -1, tws, input, times_h);
    // The inverse FFT from there: its last pass writes Y(4 s + rho) = conj(b_s) v, s < n, as the
    // row's c_k Y(k) (c_k = chirp(k, N): the values of the polar chirp table).
    auto from_prod = [&](int i) { return prod[sidx(i)]; };
    auto to_row = [&](int s, cplx v) {
      if (s >= n) return;
      const int k = 4 * s + rho;
      row[k] = cmul(chirp(k, N), mulc(v, b[s]));
    };
    block_fft<T>(prod, other, L, 1, tws, from_prod, to_row);
  }
}

}  // namespace

int polar_dft_max_nside() { return kMaxQuarter + 1; }

long long polar_dft_spectrum_size(int nside, std::vector<long long>& spec_off) {
  spec_off.assign(nside > 1 ? nside - 1 : 0, 0);
  long long total = 0;
  for (int q = 0; q + 1 < nside; ++q) {
    spec_off[q] = total;
    total += quarter_length(q + 1);
  }
  return total;
}

namespace {

/// Dynamic shared memory of the kernels for quarters up to length L: two padded buffers and
/// the twiddle table.
int pdft_smem(int L) { return (2 * padded(L) + L / 4) * static_cast<int>(sizeof(cplx)); }

/// Last ring pair q of the short launch (quarter length <= kShortLength), -1 where none.
int short_pairs_end(int nside) {
  int q = -1;
  while (q + 2 < nside && quarter_length(q + 2) <= kShortLength) ++q;
  return q;
}

}  // namespace

void launch_polar_dft_tables(int nside, cplx* tw, cplx* chirps, cplx* spec,
                             const long long* spec_off, cudaStream_t s) {
  if (nside < 2) return;
  const int smem = pdft_smem(quarter_length(nside - 1));
  for (const void* k : {reinterpret_cast<const void*>(k_pdft_spectra),
                        reinterpret_cast<const void*>(k_pdft_adjoint<kThreads>)})
    CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CUDA_CHECK(cudaFuncSetAttribute(k_pdft_adjoint<kShortThreads>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  pdft_smem(kShortLength)));
  k_pdft_twiddles_chirps<<<std::min(nside - 1, 4096), 256, 0, s>>>(nside, tw, chirps);
  CUDA_CHECK_LAUNCH();
  k_pdft_spectra<<<nside - 1, kThreads, smem, s>>>(tw, chirps, spec, spec_off);
  CUDA_CHECK_LAUNCH();
}

void launch_polar_dft_adjoint(const FftArgs& a, const PolarDftArgs& d, const double* full_map,
                              cudaStream_t s) {
  if (a.nside < 2) return;
  const PdftCall c{a.nside, a.ncc, a.npix, a.PU};
  // The longer quarters first (at nside 2048 their blocks take most of an SM's shared memory),
  // then the short ones (their own launch, with less shared memory and smaller blocks, so that
  // several share an SM).
  const int qs = short_pairs_end(a.nside), qlast = a.nside - 2;
  if (qlast > qs) {
    k_pdft_adjoint<kThreads><<<dim3(qlast - qs, a.ncc), kThreads,
                               pdft_smem(quarter_length(qlast + 1)), s>>>(c, d, qlast, full_map);
    CUDA_CHECK_LAUNCH();
  }
  if (qs >= 0) {
    k_pdft_adjoint<kShortThreads><<<dim3(qs + 1, a.ncc), kShortThreads,
                                    pdft_smem(quarter_length(qs + 1)), s>>>(c, d, qs, full_map);
    CUDA_CHECK_LAUNCH();
  }
}

}  // namespace almagest::kernels::sht
