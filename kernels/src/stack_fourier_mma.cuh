#pragma once
// The phase product of the Fourier path on mma.sync m16n8k16 (included by stack_fourier.cu only).
//
// Per frequency f = (fx, fy) and quantity q (psi, phi):
//   C_q[j][i] = sum_e Y_q[j][e] * X[i][e],   Y_q[j][e] = PY[fy][j][e] * S_q[f][e],
// X the x phase table (fx, i), PY the y phase table (fy, j), S the scaled FP16 spectrum. Complex
// numbers stay interleaved (re, im) as half2 along k, so one k16 step of the tensor product covers
// 8 exposures: with A = Y (rows (q, j), k = (e, re/im)) and B = X (columns i),
//   Re C = A * Br, Br[(e, .)][i] = (Xr, -Xi);   Im C = A * Bi, Bi[(e, .)][i] = (Xi, Xr),
// and Br, Bi are derived in registers from the one X fragment (a sign flip, a half swap).
// A block owns a 144 x 72 output tile: rows (q, j) = 2 x 72 velocities of the y axis (both
// quantities, so the spectrum's complex product is shared), columns 72 velocities of the x axis
// (a 65 x 65 grid is padded to 72 x 72 instead of WMMA's 80 x 80: 0.81 of the products useful
// instead of 0.66). 6 warps, each 48 rows x 40 or 32 columns (3 x 5 or 3 x 4 m16n8 tiles, re and
// im accumulators: 120 registers), fragments loaded by ldmatrix. Per 64-exposure chunk: X (two
// stages, asynchronous copies), PY and the spectrum slice copied; Y = PY * S formed once in shared
// memory; 8 k16 steps of 30 or 24 mma per warp. Two blocks per multiprocessor (97 KB of shared
// memory, 168 registers a thread), so that one block's copies and Y formation overlap the other's
// tensor products.
#include <cuda_fp16.h>
#include <cuda_pipeline.h>

namespace almagest::kernels::stack_detail {
namespace mma5 {

constexpr int kTJ = 72;             // y velocities per block (rows: 2 x kTJ, both quantities)
constexpr int kTI = 72;             // x velocities per block (columns)
constexpr int kRows = 2 * kTJ;      // 144
constexpr int kC = 64;              // exposures per chunk
constexpr int kRs = kC + 4;         // shared row stride in half2 (272 B: ldmatrix rows on distinct banks)
constexpr int kThreads = 192;       // 6 warps: 3 (rows, 48 each) x 2 (columns, 40 and 32)
constexpr int kStageF2 = kTI + 2;   // epilogue staging row stride in float2

constexpr std::size_t smem_bytes() {
  return std::size_t(kRows) * kRs * 4       // Y
         + std::size_t(2) * kTI * kRs * 4   // X, two stages
         + std::size_t(kTJ) * kC * 4        // PY
         + std::size_t(2) * kC * 4;         // spectrum, both quantities
}
static_assert(std::size_t(kRows) * kStageF2 * 8 <= smem_bytes(), "epilogue staging fits the operand area");

__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], const void* p) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

__device__ __forceinline__ void ldsm_x2(unsigned (&r)[2], const void* p) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(a));
}

__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// One 64-exposure chunk of a warp's products: 3 m16 tiles (rows of Y) x NT n8 tiles (columns of
// X), re and im. ya / xa: the lane's ldmatrix addresses of the warp's first tile.
template <int NT>
__device__ __forceinline__ void chunk_products(const __half2* ya, const __half2* xa, float (&acc_r)[3][5][4],
                                               float (&acc_i)[3][5][4]) {
#pragma unroll
  for (int ks = 0; ks < kC; ks += 8) {  // one k16 step: 8 exposures (half2 units)
    unsigned a[3][4];
#pragma unroll
    for (int mt = 0; mt < 3; ++mt) ldsm_x4(a[mt], ya + mt * 16 * kRs + ks);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      unsigned b[2];
      ldsm_x2(b, xa + nt * 8 * kRs + ks);
      const unsigned r0 = b[0] ^ 0x80000000u, r1 = b[1] ^ 0x80000000u;  // (Xr, -Xi)
#pragma unroll
      for (int mt = 0; mt < 3; ++mt) mma16816(acc_r[mt][nt], a[mt], r0, r1);
      const unsigned i0 = __byte_perm(b[0], 0, 0x1032), i1 = __byte_perm(b[1], 0, 0x1032);  // (Xi, Xr)
#pragma unroll
      for (int mt = 0; mt < 3; ++mt) mma16816(acc_i[mt][nt], a[mt], i0, i1);
    }
  }
}

// The warp's accumulators as float2 (re, im) into stg[row][col] (row stride kStageF2).
template <int NT>
__device__ __forceinline__ void stage_products(float2* stg, int r0, int c0, int lane, const float (&acc_r)[3][5][4],
                                               const float (&acc_i)[3][5][4]) {
  const int g = lane >> 2, t2 = (lane & 3) * 2;
#pragma unroll
  for (int mt = 0; mt < 3; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        float2* d = stg + (r0 + mt * 16 + g + hh * 8) * kStageF2 + c0 + nt * 8 + t2;
        d[0] = make_float2(acc_r[mt][nt][2 * hh], acc_i[mt][nt][2 * hh]);
        d[1] = make_float2(acc_r[mt][nt][2 * hh + 1], acc_i[mt][nt][2 * hh + 1]);
      }
}

// One axis's phase table: tab[f][i][e] = FP16 pair of tw[(f * shift[i][e]) mod nf]; 0 for
// i >= nv or e >= n. Rows padded to rows (a multiple of the tile), exposures to np. The x table
// (xc, rows_x a multiple of kTI) and the y table (py) of the product are both made by it.
__global__ void phase_table_kernel(const float2* __restrict__ tw, const int* __restrict__ shift, int n, int np, int nf,
                                   int nv, int rows, __half2* __restrict__ tab) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = blockIdx.y, f = blockIdx.z;
  if (e >= np) return;
  float2 t = make_float2(0.f, 0.f);
  if (i < nv && e < n) t = tw[(f * shift[std::size_t(i) * n + e]) % nf];
  tab[(std::size_t(f) * rows + i) * np + e] = __floats2half2_rn(t.x, t.y);
}

// One block per (frequency, kTI columns i, kTJ rows j); products written as out[q][f][v], v = j * nvx
// + i, scaled by fscale[q][f] * norm. py rows j0 + jb + r for r < kTJ must exist (rows_y >= nvy +
// kTJ, zero beyond nvy); xc rows ib + r likewise (rows_x a multiple of kTI, zero beyond nvx).
__global__ void __launch_bounds__(kThreads, 2)
phase_mma_kernel(const __half2* __restrict__ spech, const float* __restrict__ fscale, const __half2* __restrict__ xc_t,
                 const __half2* __restrict__ py_t, int np, int nfx, int ny, int nf, int nvx, int rows_x, int rows_y,
                 int j0, int nj, int strip_w, float norm, float2* __restrict__ out) {
  extern __shared__ __align__(128) unsigned char smem[];
  __half2* Ys = reinterpret_cast<__half2*>(smem);  // [kRows][kRs]
  __half2* Xs = Ys + kRows * kRs;                  // [2][kTI][kRs]
  __half2* Ps = Xs + 2 * kTI * kRs;                // [kTJ][kC]
  __half2* Ss = Ps + kTJ * kC;                     // [2][kC]

  // block -> frequency: strips of strip_w columns fx, walked fy by fy (X and PY slices stay in L2)
  const int bl = blockIdx.x;
  const int strip = bl / (strip_w * ny);
  const int rr0 = bl - strip * strip_w * ny;
  const int sw = min(strip_w, nfx - strip * strip_w);
  const int fy = rr0 / sw, fx = strip * strip_w + (rr0 - fy * sw);
  const int f = fy * nfx + fx;
  const int ib = blockIdx.y * kTI, jb = blockIdx.z * kTJ;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  // rows wm * 48.., columns wn * 40.. (5 or 4 n8 tiles); the three 5-tile warps first, so that
  // with warps dealt round-robin to the 4 schedulers two blocks load them within one tile
  const int wm = warp % 3, wn = warp / 3;
  const __half2* xb = xc_t + (std::size_t(fx) * rows_x + ib) * np;
  const __half2* pb = py_t + (std::size_t(fy) * rows_y + j0 + jb) * np;
  const __half2* s0 = spech + std::size_t(f) * np;
  const __half2* s1 = spech + (std::size_t(nf) + f) * np;

  auto issue_x = [&](int c, int st) {
    const int e0 = c * kC;
#pragma unroll
    for (int k = 0; k < kTI * 16 / kThreads; ++k) {
      const int idx = tid + k * kThreads, r = idx >> 4, pc = idx & 15;
      __pipeline_memcpy_async(Xs + (st * kTI + r) * kRs + pc * 4, xb + std::size_t(r) * np + e0 + pc * 4, 16);
    }
  };
  auto issue_p = [&](int c) {
    const int e0 = c * kC;
#pragma unroll
    for (int k = 0; k < kTJ * 16 / kThreads; ++k) {
      const int idx = tid + k * kThreads, r = idx >> 4, pc = idx & 15;
      __pipeline_memcpy_async(Ps + r * kC + pc * 4, pb + std::size_t(r) * np + e0 + pc * 4, 16);
    }
    if (tid < 32) {
      const int qq = tid >> 4, pc = tid & 15;
      __pipeline_memcpy_async(Ss + qq * kC + pc * 4, (qq ? s1 : s0) + e0 + pc * 4, 16);
    }
  };

  float acc_r[3][5][4], acc_i[3][5][4];
#pragma unroll
  for (int a = 0; a < 3; ++a)
#pragma unroll
    for (int b = 0; b < 5; ++b)
#pragma unroll
      for (int t = 0; t < 4; ++t) acc_r[a][b][t] = acc_i[a][b][t] = 0.f;

  // ldmatrix lane addresses (half2 offsets inside a stage)
  const int a_off = (wm * 48 + (lane & 15)) * kRs + (lane >> 4) * 4;
  const int b_off = (wn * 40 + (lane & 7)) * kRs + ((lane >> 3) & 1) * 4;

  const int nch = np / kC;
  issue_x(0, 0);
  issue_p(0);
  __pipeline_commit();
  for (int c = 0; c < nch; ++c) {
    const int st = c & 1;
    __pipeline_wait_prior(0);
    __syncthreads();  // chunk c's X, PY, spectrum landed; the last chunk's products done (Y free)
#pragma unroll
    for (int k = 0; k < kTJ * 16 / kThreads; ++k) {
      const int idx = tid + k * kThreads, j = idx >> 4, kq = (idx & 15) * 4;
      const uint4 pv = *reinterpret_cast<const uint4*>(Ps + j * kC + kq);
      const __half2* ph = reinterpret_cast<const __half2*>(&pv);
#pragma unroll
      for (int qq = 0; qq < 2; ++qq) {
        const uint4 sv = *reinterpret_cast<const uint4*>(Ss + qq * kC + kq);
        const __half2* sp = reinterpret_cast<const __half2*>(&sv);
        uint4 yv;
        __half2* yh = reinterpret_cast<__half2*>(&yv);
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          const float2 tw = __half22float2(ph[t]);
          const float2 p = __half22float2(sp[t]);
          yh[t] = __floats2half2_rn(tw.x * p.x - tw.y * p.y, tw.x * p.y + tw.y * p.x);
        }
        *reinterpret_cast<uint4*>(Ys + (qq * kTJ + j) * kRs + kq) = yv;
      }
    }
    __syncthreads();  // Y visible; PY, spectrum and the other X stage free
    if (c + 1 < nch) {
      issue_x(c + 1, st ^ 1);
      issue_p(c + 1);
    }
    __pipeline_commit();
    const __half2* xs = Xs + st * kTI * kRs;
    if (wn == 0) chunk_products<5>(Ys + a_off, xs + b_off, acc_r, acc_i);
    else chunk_products<4>(Ys + a_off, xs + b_off, acc_r, acc_i);
  }
  __syncthreads();  // operands dead: stage the products as float2 [row][col] in shared memory
  float2* stg = reinterpret_cast<float2*>(smem);
  if (wn == 0) stage_products<5>(stg, wm * 48, 0, lane, acc_r, acc_i);
  else stage_products<4>(stg, wm * 48, 40, lane, acc_r, acc_i);
  __syncthreads();
  const int hj = min(kTJ, nj - jb), wi = min(kTI, nvx - ib), per_q = hj * wi;
  const int nvc = nvx * nj;
  const float sc0 = fscale[f] * norm, sc1 = fscale[std::size_t(nf) + f] * norm;
  for (int u = tid; u < 2 * per_q; u += kThreads) {
    const int q = u >= per_q, rem = u - q * per_q, jl = rem / wi, il = rem - jl * wi;
    const float sc = q ? sc1 : sc0;
    const float2 v = stg[(q * kTJ + jl) * kStageF2 + il];
    const std::size_t vel = std::size_t(jb + jl) * nvx + ib + il;
    const float2 val = make_float2(v.x * sc, v.y * sc);
    out[(std::size_t(q) * nf + f) * nvc + vel] = val;
  }
}

}  // namespace mma5
}  // namespace almagest::kernels::stack_detail
