#pragma once
// Device helpers shared by the shift-and-stack kernels: decoding of the stored planes (the same
// float operations as the engine's decode()), the per-trajectory epilogue (score, digest,
// threshold hits, top-k, dense output) and the per-block digest reduction.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "almagest/kernels/stack_cuda.hpp"

namespace almagest::kernels::stack_detail {

/// Planes resident on the device: rows [r0, r0 + rows) of every exposure (a band), plane stride
/// rows * width. Samples outside the image are invalid; the host guarantees that every row a
/// kernel touches inside the image lies in the band.
struct DevPlanes {
  const void* psi = nullptr;
  const void* phi = nullptr;
  const float* psi_scale = nullptr;
  const float* phi_scale = nullptr;
  int n = 0, width = 0, height = 0, r0 = 0, rows = 0;
};

struct BlockDigest {
  double sum_a, sum_b;
  float max_z;
  unsigned long long count;
};

struct ScanArgs {
  float threshold;
  int top_k;                 // 0: threshold mode
  StackHit* hits;            // threshold: capacity max_hits; top-k: [origins][top_k]
  unsigned long long* hit_count;
  unsigned long long max_hits;
  float* dense_a;            // [n_vel][H][W] or null
  float* dense_b;
  int* dense_obs;
  BlockDigest* partials;     // [blocks of this launch]
  int n_vel;
};

/// Sample (psi, phi) of exposure e at pixel (x, y); the planes hold exposures from e0 on (exposure
/// chunks; 0 for whole stacks and row bands), the scales are indexed by the absolute e.
template <int S>
__device__ __forceinline__ float2 load_sample(const DevPlanes& P, int e, int x, int y, int e0 = 0) {
  if (x < 0 || x >= P.width || y < 0 || y >= P.height) return make_float2(0.f, 0.f);
  const std::size_t i = (std::size_t(e - e0) * P.rows + std::size_t(y - P.r0)) * P.width + x;
  if constexpr (S == 0) {
    return make_float2(__ldg(static_cast<const float*>(P.psi) + i), __ldg(static_cast<const float*>(P.phi) + i));
  } else if constexpr (S == 1) {
    const __half hp = __ushort_as_half(__ldg(static_cast<const unsigned short*>(P.psi) + i));
    const __half hf = __ushort_as_half(__ldg(static_cast<const unsigned short*>(P.phi) + i));
    return make_float2(__fmul_rn(__half2float(hp), __ldg(P.psi_scale + e)),
                       __fmul_rn(__half2float(hf), __ldg(P.phi_scale + e)));
  } else {
    const signed char c = __ldg(static_cast<const signed char*>(P.psi) + i);
    const unsigned char f = __ldg(static_cast<const unsigned char*>(P.phi) + i);
    const float psi = c == -128 ? 0.f : __fmul_rn(float(c), __ldg(P.psi_scale + e));
    return make_float2(psi, __fmul_rn(float(f), __ldg(P.phi_scale + e)));
  }
}

__device__ __forceinline__ float score(float a, float b) { return b > 0.f ? __fdiv_rn(a, __fsqrt_rn(b)) : 0.f; }

__device__ __forceinline__ bool better(float z1, int v1, float z2, int v2) {
  return z1 > z2 || (z1 == z2 && v1 < v2);
}

constexpr int kMaxTopK = 16;

struct TopK {
  float z[kMaxTopK];
  int v[kMaxTopK];
  __device__ void init() {
#pragma unroll
    for (int i = 0; i < kMaxTopK; ++i) {
      z[i] = -INFINITY;
      v[i] = 0x7fffffff;
    }
  }
  __device__ void push(float zz, int vv, int k) {
    if (!better(zz, vv, z[k - 1], v[k - 1])) return;
    bool placed = false;
#pragma unroll
    for (int i = kMaxTopK - 1; i >= 1; --i) {
      if (i < k && !placed) {
        if (better(zz, vv, z[i - 1], v[i - 1])) {
          z[i] = z[i - 1];
          v[i] = v[i - 1];
        } else {
          z[i] = zz;
          v[i] = vv;
          placed = true;
        }
      }
    }
    if (!placed) {
      z[0] = zz;
      v[0] = vv;
    }
  }
};

struct ThreadDigest {
  double sum_a = 0, sum_b = 0;
  float max_z = 0;
  unsigned long long count = 0;
};

/// Epilogue for one trajectory (origin x, y inside the image; velocity v).
__device__ __forceinline__ void finish(float a, float b, int obs, int x, int y, int v, int W, int H,
                                       const ScanArgs& S, ThreadDigest& d, TopK* topk) {
  const float z = score(a, b);
  d.sum_a += a;
  d.sum_b += b;
  d.max_z = fmaxf(d.max_z, z);
  if (z >= S.threshold) ++d.count;
  if (S.dense_a) {
    const std::size_t o = (std::size_t(v) * H + y) * W + x;
    S.dense_a[o] = a;
    S.dense_b[o] = b;
    S.dense_obs[o] = obs;
  }
  if (S.top_k > 0) {
    topk->push(z, v, S.top_k);
  } else if (z >= S.threshold) {
    const unsigned long long k = atomicAdd(S.hit_count, 1ull);
    if (k < S.max_hits) S.hits[k] = StackHit{x, y, v, z};
  }
}

/// Reduces the block's thread digests in a fixed order (warp shuffles, then warp 0) and writes
/// one partial per block. Must be called by every thread of the block.
__device__ __forceinline__ void reduce_digest(ThreadDigest d, BlockDigest* out) {
  __shared__ BlockDigest warp_part[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int nwarps = (blockDim.x + 31) >> 5;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    d.sum_a += __shfl_down_sync(0xffffffffu, d.sum_a, off);
    d.sum_b += __shfl_down_sync(0xffffffffu, d.sum_b, off);
    d.max_z = fmaxf(d.max_z, __shfl_down_sync(0xffffffffu, d.max_z, off));
    d.count += __shfl_down_sync(0xffffffffu, d.count, off);
  }
  if (lane == 0) warp_part[warp] = BlockDigest{d.sum_a, d.sum_b, d.max_z, d.count};
  __syncthreads();
  if (threadIdx.x == 0) {
    BlockDigest t{0, 0, 0.f, 0};
    for (int w = 0; w < nwarps; ++w) {
      t.sum_a += warp_part[w].sum_a;
      t.sum_b += warp_part[w].sum_b;
      t.max_z = fmaxf(t.max_z, warp_part[w].max_z);
      t.count += warp_part[w].count;
    }
    out[blockIdx.x + std::size_t(gridDim.x) * blockIdx.y] = t;
  }
}

}  // namespace almagest::kernels::stack_detail
