// Shift-and-stack kernels: device psi/phi, the one-origin-per-thread gather, the tiled gather
// (origin tile x velocity packet, union of source pixels staged in shared memory, decoded once),
// exact evaluation of listed trajectories, and the session that owns the device copy of a stack
// (or streams it in row bands when it does not fit). The Fourier path is in stack_fourier.cu.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "almagest/kernels/stack_cuda.hpp"
#include "cuda_check.cuh"
#include "device_buffer.cuh"
#include "stack_common.cuh"
#include "stack_fourier.cuh"

namespace almagest::kernels {
namespace stack_detail {
namespace {

constexpr int kTX = 32, kTY = 8, kThreads = kTX * kTY;
constexpr int kNV = 8;                  // velocities per packet
constexpr int kMaxPer = 8;              // staged elements per thread
constexpr int kMaxRegion = kThreads * kMaxPer;
constexpr int kGatherVC = 8;            // velocities per block in the plain gather

std::size_t elem_bytes(StackStorage s) { return s == StackStorage::Fp32 ? 4 : s == StackStorage::Fp16 ? 2 : 1; }

// ---------------------------------------------------------------------------------------------
template <int S>
__global__ void __launch_bounds__(kThreads) gather_kernel(DevPlanes P, const int* __restrict__ sx,
                                                          const int* __restrict__ sy, int v_begin,
                                                          int v_end, int tiles_x, int y_begin,
                                                          int y_end, ScanArgs A) {
  const int tile = blockIdx.x;
  const int x = (tile % tiles_x) * kTX + threadIdx.x % kTX;
  const int y = y_begin + (tile / tiles_x) * kTY + threadIdx.x / kTX;
  const bool inside = x < P.width && y < y_end;
  int vb, ve;
  if (A.top_k > 0) {
    vb = 0;
    ve = A.n_vel;
  } else {
    vb = v_begin + blockIdx.y * kGatherVC;
    ve = min(vb + kGatherVC, v_end);
  }
  ThreadDigest d;
  TopK tk;
  if (A.top_k > 0) tk.init();
  if (inside) {
    for (int v = vb; v < ve; ++v) {
      float a = 0.f, b = 0.f;
      int c = 0;
      const int* sxv = sx + std::size_t(v) * P.n;
      const int* syv = sy + std::size_t(v) * P.n;
      for (int e = 0; e < P.n; ++e) {
        const float2 s = load_sample<S>(P, e, x + __ldg(sxv + e), y + __ldg(syv + e));
        a += s.x;
        b += s.y;
        c += s.y > 0.f ? 1 : 0;
      }
      finish(a, b, c, x, y, v, P.width, P.height, A, d, &tk);
    }
  }
  reduce_digest(d, A.partials);
  if (A.top_k > 0 && inside) {
    StackHit* out = A.hits + (std::size_t(y) * P.width + x) * A.top_k;
    for (int k = 0; k < A.top_k; ++k) out[k] = StackHit{x, y, tk.v[k], tk.z[k]};
  }
}

// ---------------------------------------------------------------------------------------------
// Sub-pixel (fractional) mode: every sample is a bilinear combination of the four neighbours of
// the exact track position with B corrected for the PSF correlation of neighbours. The float
// operations are those of the CPU twin's fractional_sample() (engine/src/stack/search_internal.hpp)
// in the same order, written as round-to-nearest intrinsics so that nothing is contracted into an
// FMA: GPU and CPU sums are bit-identical.
struct FracTables {
  const int* fx;
  const int* fy;
  const float* wx;
  const float* wy;
  const float* rho;  // [n][4]
};

template <int S>
__device__ __forceinline__ void frac_sample(const DevPlanes& P, int e, int e0, int x, int y, int fx, int fy, float wx,
                                            float wy, const float* __restrict__ r, float& a, float& b) {
  float v[4], h[4], q[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 s = load_sample<S>(P, e, x + fx + (k & 1), y + fy + (k >> 1), e0);
    v[k] = s.x;
    h[k] = s.y;
    q[k] = __fsqrt_rn(s.y);
  }
  const float ux = __fsub_rn(1.0f, wx), uy = __fsub_rn(1.0f, wy);
  const float w00 = __fmul_rn(ux, uy), w10 = __fmul_rn(wx, uy), w01 = __fmul_rn(ux, wy), w11 = __fmul_rn(wx, wy);
  a = __fadd_rn(__fadd_rn(__fadd_rn(__fmul_rn(w00, v[0]), __fmul_rn(w10, v[1])), __fmul_rn(w01, v[2])), __fmul_rn(w11, v[3]));
  const float d = __fadd_rn(__fadd_rn(__fadd_rn(__fmul_rn(__fmul_rn(w00, w00), h[0]), __fmul_rn(__fmul_rn(w10, w10), h[1])),
                                      __fmul_rn(__fmul_rn(w01, w01), h[2])),
                            __fmul_rn(__fmul_rn(w11, w11), h[3]));
  const float cx = __fadd_rn(__fmul_rn(__fmul_rn(w00, w10), __fmul_rn(q[0], q[1])), __fmul_rn(__fmul_rn(w01, w11), __fmul_rn(q[2], q[3])));
  const float cy = __fadd_rn(__fmul_rn(__fmul_rn(w00, w01), __fmul_rn(q[0], q[2])), __fmul_rn(__fmul_rn(w10, w11), __fmul_rn(q[1], q[3])));
  const float cd = __fmul_rn(__fmul_rn(w00, w11), __fmul_rn(q[0], q[3]));
  const float ca = __fmul_rn(__fmul_rn(w10, w01), __fmul_rn(q[1], q[2]));
  const float r0 = __ldg(r), r1 = __ldg(r + 1), r2 = __ldg(r + 2), r3 = __ldg(r + 3);
  const float corr = __fadd_rn(__fadd_rn(__fadd_rn(__fmul_rn(r0, cx), __fmul_rn(r1, cy)), __fmul_rn(r2, cd)), __fmul_rn(r3, ca));
  b = __fadd_rn(d, __fmul_rn(2.0f, corr));
}

/// One origin per thread, kGatherVC velocities per block (threshold) or all (top-k), as the
/// integer gather; the host bounds the rows of streamed bands by fy .. fy + 1.
template <int S>
__global__ void __launch_bounds__(kThreads) frac_gather_kernel(DevPlanes P, FracTables T, int v_begin, int v_end,
                                                               int tiles_x, int y_begin, int y_end, ScanArgs A) {
  const int tile = blockIdx.x;
  const int x = (tile % tiles_x) * kTX + threadIdx.x % kTX;
  const int y = y_begin + (tile / tiles_x) * kTY + threadIdx.x / kTX;
  const bool inside = x < P.width && y < y_end;
  int vb, ve;
  if (A.top_k > 0) {
    vb = 0;
    ve = A.n_vel;
  } else {
    vb = v_begin + blockIdx.y * kGatherVC;
    ve = min(vb + kGatherVC, v_end);
  }
  ThreadDigest d;
  TopK tk;
  if (A.top_k > 0) tk.init();
  if (inside) {
    for (int v = vb; v < ve; ++v) {
      float a = 0.f, b = 0.f;
      int c = 0;
      const std::size_t o = std::size_t(v) * P.n;
      for (int e = 0; e < P.n; ++e) {
        float sa, sb;
        frac_sample<S>(P, e, 0, x, y, __ldg(T.fx + o + e), __ldg(T.fy + o + e), __ldg(T.wx + o + e), __ldg(T.wy + o + e),
                       T.rho + 4 * std::size_t(e), sa, sb);
        a = __fadd_rn(a, sa);
        b = __fadd_rn(b, sb);
        c += sb > 0.f ? 1 : 0;
      }
      finish(a, b, c, x, y, v, P.width, P.height, A, d, &tk);
    }
  }
  reduce_digest(d, A.partials);
  if (A.top_k > 0 && inside) {
    StackHit* out = A.hits + (std::size_t(y) * P.width + x) * A.top_k;
    for (int k = 0; k < A.top_k; ++k) out[k] = StackHit{x, y, tk.v[k], tk.z[k]};
  }
}

/// Fractional sums of listed trajectories over exposures [e_begin, e_end) (exposure chunks as
/// evaluate_kernel).
template <int S>
__global__ void frac_evaluate_kernel(DevPlanes P, FracTables T, const StackHit* __restrict__ list, std::size_t n_list,
                                     int e_data, int e_begin, int e_end, float* a_out, float* b_out, int* obs_out) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i >= n_list) return;
  const StackHit h = list[i];
  float a = 0.f, b = 0.f;
  int c = 0;
  if (e_begin > 0) {
    a = a_out[i];
    b = b_out[i];
    c = obs_out[i];
  }
  const std::size_t o = std::size_t(h.v) * P.n;
  for (int e = e_begin; e < e_end; ++e) {
    float sa, sb;
    frac_sample<S>(P, e, e_data, h.x, h.y, T.fx[o + e], T.fy[o + e], T.wx[o + e], T.wy[o + e], T.rho + 4 * std::size_t(e), sa, sb);
    a = __fadd_rn(a, sa);
    b = __fadd_rn(b, sb);
    c += sb > 0.f ? 1 : 0;
  }
  a_out[i] = a;
  b_out[i] = b;
  obs_out[i] = c;
}

// ---------------------------------------------------------------------------------------------
// Tiled gather. For packet p and exposure e the host gives box = (ox, oy, RW, RH): the smallest
// shifts of the packet and the staged region's size; loc packs each velocity's offset inside the
// region (lx | ly << 16). The region of exposure e + 1 is loaded into registers while exposure e
// is summed from shared memory (double buffer, one barrier per exposure).
template <int S>
__device__ __forceinline__ void stage_load(const DevPlanes& P, int e, int4 b, int gx0, int gy0,
                                           float2 (&pre)[kMaxPer]) {
  const int total = b.z * b.w;
#pragma unroll
  for (int i = 0; i < kMaxPer; ++i) {
    const int idx = threadIdx.x + i * kThreads;
    if (idx < total) {
      const int r = idx / b.z, c = idx - r * b.z;
      pre[i] = load_sample<S>(P, e, gx0 + b.x + c, gy0 + b.y + r);
    }
  }
}

__device__ __forceinline__ void stage_store(float2* buf, int4 b, const float2 (&pre)[kMaxPer]) {
  const int total = b.z * b.w;
#pragma unroll
  for (int i = 0; i < kMaxPer; ++i) {
    const int idx = threadIdx.x + i * kThreads;
    if (idx < total) buf[idx] = pre[i];
  }
}

/// The double-buffered staging of one packet's regions: begin() stages exposure 0 into buf[0];
/// per exposure e, prefetch(e) loads region e + 1 into registers, the caller sums region e from
/// buf[e & 1] (row width region().z), then commit(e) stores region e + 1 into the other buffer.
/// The caller puts a barrier after begin() and after every commit().
template <int S>
struct Stager {
  const DevPlanes& P;
  const int4* bx;
  int gx0, gy0, n;
  int4 b, bn;
  float2 pre[kMaxPer];

  __device__ __forceinline__ Stager(const DevPlanes& planes, const int4* boxes, int x0, int y0)
      : P(planes), bx(boxes), gx0(x0), gy0(y0), n(planes.n) {}
  __device__ __forceinline__ void begin(float2* buf0) {
    b = __ldg(bx);
    stage_load<S>(P, 0, b, gx0, gy0, pre);
    stage_store(buf0, b, pre);
  }
  __device__ __forceinline__ void prefetch(int e) {
    bn = b;
    if (e + 1 < n) {
      bn = __ldg(bx + e + 1);
      stage_load<S>(P, e + 1, bn, gx0, gy0, pre);
    }
  }
  __device__ __forceinline__ int4 region() const { return b; }
  __device__ __forceinline__ void commit(float2 (&buf)[2][kMaxRegion], int e) {
    if (e + 1 < n) stage_store(buf[(e + 1) & 1], bn, pre);
    b = bn;
  }
};

template <int S>
__global__ void __launch_bounds__(kThreads) tiled_kernel(DevPlanes P, const int4* __restrict__ box,
                                                         const int* __restrict__ loc,
                                                         const int2* __restrict__ packets,
                                                         int packet_begin, int packet_end,
                                                         int tiles_x, int y_begin, int y_end,
                                                         ScanArgs A) {
  __shared__ float2 buf[2][kMaxRegion];
  const int tile = blockIdx.x;
  const int tx = threadIdx.x % kTX, ty = threadIdx.x / kTX;
  const int gx0 = (tile % tiles_x) * kTX, gy0 = y_begin + (tile / tiles_x) * kTY;
  const int x = gx0 + tx, y = gy0 + ty;
  const bool inside = x < P.width && y < y_end;
  int pb, pe;
  if (A.top_k > 0) {
    pb = packet_begin;
    pe = packet_end;
  } else {
    pb = packet_begin + blockIdx.y;
    pe = pb + 1;
  }
  ThreadDigest d;
  TopK tk;
  if (A.top_k > 0) tk.init();
  const int n = P.n;
  for (int p = pb; p < pe; ++p) {
    const int2 pk = packets[p];
    const int4* bx = box + std::size_t(p) * n;
    const int* lc = loc + std::size_t(p) * n * kNV;
    float acc_a[kNV], acc_b[kNV];
    int acc_c[kNV];
#pragma unroll
    for (int k = 0; k < kNV; ++k) {
      acc_a[k] = 0.f;
      acc_b[k] = 0.f;
      acc_c[k] = 0;
    }
    Stager<S> st(P, bx, gx0, gy0);
    st.begin(buf[0]);
    __syncthreads();
    for (int e = 0; e < n; ++e) {
      st.prefetch(e);
      const float2* cur = buf[e & 1];
      const int rw = st.region().z;
#pragma unroll
      for (int k = 0; k < kNV; ++k) {
        const int l = __ldg(lc + std::size_t(e) * kNV + k);
        const float2 s = cur[(ty + (l >> 16)) * rw + tx + (l & 0xffff)];
        acc_a[k] += s.x;
        acc_b[k] += s.y;
        acc_c[k] += s.y > 0.f ? 1 : 0;
      }
      st.commit(buf, e);
      __syncthreads();
    }
    if (inside) {
#pragma unroll
      for (int k = 0; k < kNV; ++k)
        if (k < pk.y) finish(acc_a[k], acc_b[k], acc_c[k], x, y, pk.x + k, P.width, P.height, A, d, &tk);
    }
  }
  reduce_digest(d, A.partials);
  if (A.top_k > 0 && inside) {
    StackHit* out = A.hits + (std::size_t(y) * P.width + x) * A.top_k;
    for (int k = 0; k < A.top_k; ++k) out[k] = StackHit{x, y, tk.v[k], tk.z[k]};
  }
}

// Threshold scans without dense output: packets of 16 velocities, 32 x 16 origin tiles, each
// thread sums two origins (rows ty and ty + 8) for all 16 velocities from one staged region, and
// obs is not accumulated (hits get exact obs from evaluate()). Same per-trajectory float sums in
// exposure order as every other backend.
constexpr int kNV2 = 16, kTY2 = 16;

template <int S>
__global__ void __launch_bounds__(kThreads, 2) tiled16_kernel(DevPlanes P, const int4* __restrict__ box,
                                                              const int4* __restrict__ loc,
                                                              const int2* __restrict__ packets,
                                                              int packet_begin, int tiles_x, int y_begin,
                                                              int y_end, ScanArgs A) {
  __shared__ float2 buf[2][kMaxRegion];
  const int tile = blockIdx.x;
  const int tx = threadIdx.x % kTX, ty = threadIdx.x / kTX;  // ty in [0, 8)
  const int gx0 = (tile % tiles_x) * kTX, gy0 = y_begin + (tile / tiles_x) * kTY2;
  const int x = gx0 + tx, y0 = gy0 + ty, y1 = y0 + 8;
  const int p = packet_begin + blockIdx.y;
  const int n = P.n;
  const int2 pk = packets[p];
  const int4* bx = box + std::size_t(p) * n;
  const int4* lc = loc + std::size_t(p) * n * (kNV2 / 4);
  float a0[kNV2], b0[kNV2], a1[kNV2], b1[kNV2];
#pragma unroll
  for (int k = 0; k < kNV2; ++k) {
    a0[k] = 0.f;
    b0[k] = 0.f;
    a1[k] = 0.f;
    b1[k] = 0.f;
  }
  Stager<S> st(P, bx, gx0, gy0);
  st.begin(buf[0]);
  __syncthreads();
  for (int e = 0; e < n; ++e) {
    st.prefetch(e);
    const float2* cur = buf[e & 1];
    const int rw = st.region().z;
    int4 L[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) L[q] = __ldg(lc + std::size_t(e) * 4 + q);
#pragma unroll
    for (int k = 0; k < kNV2; ++k) {
      const int4 lq = L[k / 4];
      const int l = (k % 4) == 0 ? lq.x : (k % 4) == 1 ? lq.y : (k % 4) == 2 ? lq.z : lq.w;
      const int off = (ty + (l >> 16)) * rw + tx + (l & 0xffff);
      const float2 s0 = cur[off];
      const float2 s1 = cur[off + 8 * rw];
      a0[k] += s0.x;
      b0[k] += s0.y;
      a1[k] += s1.x;
      b1[k] += s1.y;
    }
    st.commit(buf, e);
    __syncthreads();
  }
  ThreadDigest d;
  if (x < P.width) {
#pragma unroll
    for (int k = 0; k < kNV2; ++k) {
      if (k < pk.y) {
        if (y0 < y_end) finish(a0[k], b0[k], 0, x, y0, pk.x + k, P.width, P.height, A, d, nullptr);
        if (y1 < y_end) finish(a1[k], b1[k], 0, x, y1, pk.x + k, P.width, P.height, A, d, nullptr);
      }
    }
  }
  reduce_digest(d, A.partials);
}

/// Exact sums of listed trajectories over exposures [e_begin, e_end), continuing the running
/// sums in a_out / b_out / obs_out when e_begin > 0 (exposure chunks keep the exposure order);
/// the planes hold exposures from e_data on.
template <int S>
__global__ void evaluate_kernel(DevPlanes P, const int* __restrict__ sx, const int* __restrict__ sy,
                                const StackHit* __restrict__ list, std::size_t n_list, int e_data,
                                int e_begin, int e_end, float* a_out, float* b_out, int* obs_out) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i >= n_list) return;
  const StackHit h = list[i];
  float a = 0.f, b = 0.f;
  int c = 0;
  if (e_begin > 0) {
    a = a_out[i];
    b = b_out[i];
    c = obs_out[i];
  }
  for (int e = e_begin; e < e_end; ++e) {
    const float2 s = load_sample<S>(P, e, h.x + sx[std::size_t(h.v) * P.n + e], h.y + sy[std::size_t(h.v) * P.n + e], e_data);
    a += s.x;
    b += s.y;
    c += s.y > 0.f ? 1 : 0;
  }
  a_out[i] = a;
  b_out[i] = b;
  obs_out[i] = c;
}

// psi/phi: one thread per output pixel of one exposure (blockIdx.y), double accumulation.
__global__ void psiphi_kernel(const float* __restrict__ sci, const float* __restrict__ var,
                              const unsigned char* __restrict__ mask, const float* __restrict__ psf,
                              const unsigned long long* __restrict__ psf_off, const int* __restrict__ psf_size,
                              const double* __restrict__ weight, int W, int H, int e0, float* psi,
                              float* phi) {
  const int el = blockIdx.y, e = e0 + el;
  const int pix = blockIdx.x * blockDim.x + threadIdx.x;
  if (pix >= W * H) return;
  const int x = pix % W, y = pix / W;
  const int K = psf_size[e], r = K / 2;
  const float* k = psf + psf_off[e];
  const std::size_t base = std::size_t(el) * W * H;
  double s1 = 0, p1 = 0, s2 = 0;
  for (int v = -r; v <= r; ++v)
    for (int u = -r; u <= r; ++u) {
      const double kk = k[(v + r) * K + (u + r)];
      const int xx = x + u, yy = y + v;
      if (xx < 0 || xx >= W || yy < 0 || yy >= H) continue;
      const std::size_t i = base + std::size_t(yy) * W + xx;
      const float sv = sci[i], vv = var[i];
      if (mask[i] != 0 || !isfinite(sv) || !isfinite(vv) || !(vv > 0.f)) continue;
      s1 += kk * (double(sv) / double(vv));
      p1 += kk;
      s2 += kk * kk * (1.0 / double(vv));
    }
  const double a = weight ? weight[e] : 1.0;
  const std::size_t o = base + std::size_t(y) * W + x;
  if (p1 > 0) {
    psi[o] = float(a * s1 / p1);
    phi[o] = float(a * a * s2 / (p1 * p1));
  } else {
    psi[o] = 0.f;
    phi[o] = 0.f;
  }
}

struct Packets {
  std::vector<int2> packets;  // (v_begin, count)
  std::vector<int4> box;      // [p][e]
  std::vector<int> loc;       // [p][e][kNV]
};

/// Greedy packets of consecutive velocities whose staged region fits kMaxRegion for every exposure.
Packets make_packets(const StackShifts& s, int nv = kNV, int ty = kTY) {
  Packets out;
  const int n = s.n_exp;
  std::vector<int> mnx(n), mxx(n), mny(n), mxy(n);
  int v = 0;
  while (v < s.n_vel) {
    int cnt = 0;
    for (; cnt < nv && v + cnt < s.n_vel; ++cnt) {
      const int w = v + cnt;
      bool fits = true;
      for (int e = 0; e < n && fits; ++e) {
        const int x = s.sx[std::size_t(w) * n + e], y = s.sy[std::size_t(w) * n + e];
        const int ax = cnt ? std::min(mnx[e], x) : x, bx = cnt ? std::max(mxx[e], x) : x;
        const int ay = cnt ? std::min(mny[e], y) : y, by = cnt ? std::max(mxy[e], y) : y;
        const long long region = (long long)(kTX + bx - ax) * (ty + by - ay);
        fits = region <= kMaxRegion && (bx - ax) < 32768 && (by - ay) < 32768;
      }
      if (!fits) {
        if (cnt == 0) throw DeviceError("tiled gather: velocity " + std::to_string(w) + " cannot be staged (internal)");
        break;
      }
      for (int e = 0; e < n; ++e) {
        const int x = s.sx[std::size_t(w) * n + e], y = s.sy[std::size_t(w) * n + e];
        mnx[e] = cnt ? std::min(mnx[e], x) : x;
        mxx[e] = cnt ? std::max(mxx[e], x) : x;
        mny[e] = cnt ? std::min(mny[e], y) : y;
        mxy[e] = cnt ? std::max(mxy[e], y) : y;
      }
    }
    out.packets.push_back(make_int2(v, cnt));
    for (int e = 0; e < n; ++e) out.box.push_back(make_int4(mnx[e], mny[e], kTX + mxx[e] - mnx[e], ty + mxy[e] - mny[e]));
    for (int e = 0; e < n; ++e)
      for (int k = 0; k < nv; ++k) {
        if (k < cnt) {
          const int w = v + k;
          const int lx = s.sx[std::size_t(w) * n + e] - mnx[e], ly = s.sy[std::size_t(w) * n + e] - mny[e];
          out.loc.push_back(lx | (ly << 16));
        } else {
          out.loc.push_back(0);
        }
      }
    v += cnt;
  }
  return out;
}

/// Device copies of the fractional tables of a shift table (empty when integer).
struct FracDev {
  DeviceBuffer<int> fx, fy;
  DeviceBuffer<float> wx, wy, rho;
  FracTables tables() const { return FracTables{fx.data(), fy.data(), wx.data(), wy.data(), rho.data()}; }
};

bool is_fractional(const StackShifts& s) {
  if (!s.fx) return false;
  if (!s.fy || !s.wx || !s.wy || !s.rho) throw DeviceError("stack scan: fractional shift tables are incomplete (fx, fy, wx, wy and rho are needed)");
  return true;
}

FracDev upload_frac(const StackShifts& s, cudaStream_t st) {
  FracDev f;
  const std::size_t m = std::size_t(s.n_vel) * s.n_exp;
  f.fx.allocate(m);
  f.fy.allocate(m);
  f.wx.allocate(m);
  f.wy.allocate(m);
  f.rho.allocate(4 * std::size_t(s.n_exp));
  f.fx.upload(s.fx, m, st);
  f.fy.upload(s.fy, m, st);
  f.wx.upload(s.wx, m, st);
  f.wy.upload(s.wy, m, st);
  f.rho.upload(s.rho, 4 * std::size_t(s.n_exp), st);
  return f;
}

class Timer {
public:
  explicit Timer(cudaStream_t s) : s_(s) {
    CUDA_CHECK(cudaEventCreate(&a_));
    CUDA_CHECK(cudaEventCreate(&b_));
    CUDA_CHECK(cudaEventRecord(a_, s_));
  }
  ~Timer() {
    cudaEventDestroy(a_);
    cudaEventDestroy(b_);
  }
  double stop() {
    CUDA_CHECK(cudaEventRecord(b_, s_));
    CUDA_CHECK(cudaEventSynchronize(b_));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a_, b_));
    return ms * 1e-3;
  }

private:
  cudaStream_t s_;
  cudaEvent_t a_{}, b_{};
};

class Session final : public StackSession {
public:
  Session(const StackPlanes& planes, int device) : host_(planes), device_(device) {
    DeviceGuard g(device_);
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
    name_ = prop.name;
    stream_ = std::make_unique<Stream>();
    const std::size_t eb = elem_bytes(host_.storage);
    const std::size_t total = std::size_t(host_.n) * host_.width * host_.height;
    const std::size_t phi_eb = host_.storage == StackStorage::Int8 ? 1 : eb;
    if (host_.storage != StackStorage::Fp32) {
      psi_scale_ = DeviceBuffer<float>::from(std::vector<float>(host_.psi_scale, host_.psi_scale + host_.n), *stream_);
      phi_scale_ = DeviceBuffer<float>::from(std::vector<float>(host_.phi_scale, host_.phi_scale + host_.n), *stream_);
    }
    Timer t(*stream_);
    try {
      if (host_.memory_limit > 0 && total * (eb + phi_eb) > host_.memory_limit)
        throw DeviceOutOfMemory("stack planes above the session's memory limit");
      psi_.allocate(total * eb);
      phi_.allocate(total * phi_eb);
      psi_.upload(static_cast<const unsigned char*>(host_.psi), total * eb, *stream_);
      phi_.upload(static_cast<const unsigned char*>(host_.phi), total * phi_eb, *stream_);
      resident_ = true;
    } catch (const DeviceOutOfMemory&) {
      cudaGetLastError();
      psi_.release();
      phi_.release();
      resident_ = false;  // scans stream row bands
    }
    upload_s_ = t.stop();
  }

  std::string device_name() const override { return name_; }
  double upload_seconds() const override { return upload_s_; }

  DevPlanes planes(int r0, int rows) const {
    DevPlanes P;
    P.psi = psi_.data();
    P.phi = phi_.data();
    P.psi_scale = psi_scale_.data();
    P.phi_scale = phi_scale_.data();
    P.n = host_.n;
    P.width = host_.width;
    P.height = host_.height;
    P.r0 = r0;
    P.rows = rows;
    return P;
  }

  /// Device bytes the session may use now: the free memory, capped by the planes' limit.
  std::size_t budget() const {
    std::size_t fr = 0, tot = 0;
    CUDA_CHECK(cudaMemGetInfo(&fr, &tot));
    return host_.memory_limit > 0 ? std::min<std::size_t>(fr, host_.memory_limit) : fr;
  }

  /// Uploads exposures [e0, e1) (all rows) into the band buffers.
  void upload_exposures(int e0, int e1) {
    const std::size_t eb = elem_bytes(host_.storage), np = std::size_t(host_.width) * host_.height;
    const std::size_t phi_eb = host_.storage == StackStorage::Int8 ? 1 : eb;
    const std::size_t ne = std::size_t(e1 - e0);
    psi_.reserve(ne * np * eb);
    phi_.reserve(ne * np * phi_eb);
    CUDA_CHECK(cudaMemcpyAsync(psi_.data(), static_cast<const unsigned char*>(host_.psi) + e0 * np * eb,
                               ne * np * eb, cudaMemcpyHostToDevice, *stream_));
    CUDA_CHECK(cudaMemcpyAsync(phi_.data(), static_cast<const unsigned char*>(host_.phi) + e0 * np * phi_eb,
                               ne * np * phi_eb, cudaMemcpyHostToDevice, *stream_));
  }

  /// Uploads rows [r0, r0 + rows) of every exposure into the band buffers.
  void upload_band(int r0, int rows) {
    const std::size_t eb = elem_bytes(host_.storage), W = host_.width, H = host_.height;
    const std::size_t phi_eb = host_.storage == StackStorage::Int8 ? 1 : eb;
    psi_.reserve(std::size_t(host_.n) * rows * W * eb);
    phi_.reserve(std::size_t(host_.n) * rows * W * phi_eb);
    CUDA_CHECK(cudaMemcpy2DAsync(psi_.data(), rows * W * eb, static_cast<const unsigned char*>(host_.psi) + r0 * W * eb,
                                 H * W * eb, rows * W * eb, host_.n, cudaMemcpyHostToDevice, *stream_));
    CUDA_CHECK(cudaMemcpy2DAsync(phi_.data(), rows * W * phi_eb, static_cast<const unsigned char*>(host_.phi) + r0 * W * phi_eb,
                                 H * W * phi_eb, rows * W * phi_eb, host_.n, cudaMemcpyHostToDevice, *stream_));
  }

  StackScanResult scan(const StackShifts& sh, const StackScanParams& prm) override {
    DeviceGuard g(device_);
    cudaStream_t s = *stream_;
    StackScanResult out;
    if (sh.n_exp != host_.n) throw DeviceError("stack scan: shift table has " + std::to_string(sh.n_exp) + " exposures, the stack " + std::to_string(host_.n));
    const int W = host_.width, H = host_.height;
    const int k = prm.top_k_mode ? std::max(1, std::min(prm.top_k, std::min(kMaxTopK, sh.n_vel))) : 0;
    const bool frac = is_fractional(sh);
    if (prm.method == StackMethod::Fourier) {
      if (frac) throw DeviceError("the Fourier method uses integer shifts only (its phase tables are exact for whole pixels); use the gather or tiled method for fractional shifts");
      if (!resident_) throw DeviceOutOfMemory("the Fourier path needs the whole stack on the device (" + name_ + " could not hold it); use the tiled gather, which streams row bands");
      if (!fourier_) fourier_ = std::make_unique<FourierEngine>();
      fourier_->scan(planes(0, H), int(host_.storage), sh, prm, s, out);
      return out;
    }
    // shift tables (fractional: the sub-pixel tables, scanned by the fractional gather for both
    // the gather and the tiled method)
    DeviceBuffer<int> dsx, dsy;
    FracDev fdev;
    if (frac) {
      fdev = upload_frac(sh, s);
    } else {
      dsx.allocate(std::size_t(sh.n_vel) * sh.n_exp);
      dsy.allocate(std::size_t(sh.n_vel) * sh.n_exp);
      dsx.upload(sh.sx, dsx.size(), s);
      dsy.upload(sh.sy, dsy.size(), s);
    }
    const bool tiled = prm.method == StackMethod::Tiled && !frac;
    Packets pk;
    DeviceBuffer<int4> dbox;
    DeviceBuffer<int> dloc;
    DeviceBuffer<int2> dpk;
    const bool wide = tiled && k == 0 && !prm.dense;
    const int tile_h = wide ? kTY2 : kTY;
    if (tiled) {
      pk = wide ? make_packets(sh, kNV2, kTY2) : make_packets(sh);
      dbox = DeviceBuffer<int4>::from(pk.box, s);
      dloc = DeviceBuffer<int>::from(pk.loc, s);
      dpk = DeviceBuffer<int2>::from(pk.packets, s);
    }
    const std::size_t n_origins = std::size_t(W) * H;
    const std::size_t cap = k > 0 ? n_origins * k : std::max<std::size_t>(1, prm.max_hits);
    DeviceBuffer<StackHit> dhits(cap);
    DeviceBuffer<unsigned long long> dcount(1);
    dcount.zero(s);
    DeviceBuffer<float> da, db;
    DeviceBuffer<int> dobs;
    if (prm.dense) {
      da.allocate(n_origins * sh.n_vel);
      db.allocate(n_origins * sh.n_vel);
      dobs.allocate(n_origins * sh.n_vel);
    }
    // Bands: the whole image when resident, else as many rows as a quarter of free memory holds.
    int band = H;
    if (!resident_) {
      const std::size_t fr = budget();
      const std::size_t per_row = std::size_t(host_.n) * W * (elem_bytes(host_.storage) * 2);
      const int extra = tile_h;
      int span = 0;
      for (std::size_t i = 0; i < std::size_t(sh.n_vel) * sh.n_exp; ++i)
        span = std::max(span, frac ? std::max(std::abs(sh.fy[i]), std::abs(sh.fy[i] + 1)) : std::abs(sh.sy[i]));
      const long long rows_fit = (long long)(fr / 4 / std::max<std::size_t>(1, per_row)) - 2 * span - extra;
      if (rows_fit < tile_h) throw DeviceOutOfMemory("stack scan: not even " + std::to_string(kTY) + " rows of the stack fit on " + name_);
      band = int(std::min<long long>(H, rows_fit / tile_h * tile_h));
    }
    int min_sy = 0, max_sy = 0;
    for (std::size_t i = 0; i < std::size_t(sh.n_vel) * sh.n_exp; ++i) {
      min_sy = std::min(min_sy, frac ? sh.fy[i] : sh.sy[i]);
      max_sy = std::max(max_sy, frac ? sh.fy[i] + 1 : sh.sy[i]);
    }
    ScanArgs A{};
    A.threshold = prm.threshold;
    A.top_k = k;
    A.hits = dhits.data();
    A.hit_count = dcount.data();
    A.max_hits = cap;
    A.dense_a = da.data();
    A.dense_b = db.data();
    A.dense_obs = dobs.data();
    A.n_vel = sh.n_vel;
    const int tiles_x = (W + kTX - 1) / kTX;
    double sum_a = 0, sum_b = 0, max_z = 0;
    unsigned long long count = 0;
    double scan_s = 0;
    DeviceBuffer<BlockDigest> dpart;
    std::vector<BlockDigest> hpart;
    const int n_units = tiled ? int(pk.packets.size()) : (sh.n_vel + kGatherVC - 1) / kGatherVC;
    const int storage = int(host_.storage);
    for (int y0 = 0; y0 < H; y0 += band) {
      const int y1 = std::min(H, y0 + band);
      DevPlanes P;
      if (resident_) {
        P = planes(0, H);
      } else {
        const int r0 = std::max(0, y0 + min_sy), r1 = std::min(H, y1 + tile_h + max_sy);
        upload_band(r0, std::max(1, r1 - r0));
        P = planes(r0, std::max(1, r1 - r0));
      }
      const int tiles = tiles_x * ((y1 - y0 + tile_h - 1) / tile_h);
      // chunks of velocity units (threshold) or of nothing (top-k: one launch per band)
      const int chunk = k > 0 ? n_units : std::max(1, std::min(65535, int((1u << 22) / std::max(1, tiles))));
      for (int u0 = 0; u0 < n_units; u0 += chunk) {
        if (prm.cancelled && prm.cancelled()) {
          out.cancelled = true;
          return out;
        }
        const int u1 = std::min(n_units, u0 + chunk);
        dim3 grid(tiles, k > 0 ? 1 : u1 - u0);
        const std::size_t nb = std::size_t(grid.x) * grid.y;
        dpart.reserve(nb);
        A.partials = dpart.data();
        Timer t(s);
        if (wide) {
          const int4* l4 = reinterpret_cast<const int4*>(dloc.data());
          if (storage == 0) tiled16_kernel<0><<<grid, kThreads, 0, s>>>(P, dbox.data(), l4, dpk.data(), u0, tiles_x, y0, y1, A);
          else if (storage == 1) tiled16_kernel<1><<<grid, kThreads, 0, s>>>(P, dbox.data(), l4, dpk.data(), u0, tiles_x, y0, y1, A);
          else tiled16_kernel<2><<<grid, kThreads, 0, s>>>(P, dbox.data(), l4, dpk.data(), u0, tiles_x, y0, y1, A);
        } else if (frac) {
          const int vb = u0 * kGatherVC, ve = std::min(sh.n_vel, u1 * kGatherVC);
          const FracTables T = fdev.tables();
          if (storage == 0) frac_gather_kernel<0><<<grid, kThreads, 0, s>>>(P, T, vb, ve, tiles_x, y0, y1, A);
          else if (storage == 1) frac_gather_kernel<1><<<grid, kThreads, 0, s>>>(P, T, vb, ve, tiles_x, y0, y1, A);
          else frac_gather_kernel<2><<<grid, kThreads, 0, s>>>(P, T, vb, ve, tiles_x, y0, y1, A);
        } else if (tiled) {
          const int pb = k > 0 ? 0 : u0, pe = k > 0 ? n_units : u1;
          if (storage == 0) tiled_kernel<0><<<grid, kThreads, 0, s>>>(P, dbox.data(), dloc.data(), dpk.data(), pb, pe, tiles_x, y0, y1, A);
          else if (storage == 1) tiled_kernel<1><<<grid, kThreads, 0, s>>>(P, dbox.data(), dloc.data(), dpk.data(), pb, pe, tiles_x, y0, y1, A);
          else tiled_kernel<2><<<grid, kThreads, 0, s>>>(P, dbox.data(), dloc.data(), dpk.data(), pb, pe, tiles_x, y0, y1, A);
        } else {
          const int vb = u0 * kGatherVC, ve = std::min(sh.n_vel, u1 * kGatherVC);
          if (storage == 0) gather_kernel<0><<<grid, kThreads, 0, s>>>(P, dsx.data(), dsy.data(), vb, ve, tiles_x, y0, y1, A);
          else if (storage == 1) gather_kernel<1><<<grid, kThreads, 0, s>>>(P, dsx.data(), dsy.data(), vb, ve, tiles_x, y0, y1, A);
          else gather_kernel<2><<<grid, kThreads, 0, s>>>(P, dsx.data(), dsy.data(), vb, ve, tiles_x, y0, y1, A);
        }
        CUDA_CHECK_LAUNCH();
        scan_s += t.stop();
        hpart.resize(nb);
        dpart.download(hpart.data(), nb, s);
        CUDA_CHECK(cudaStreamSynchronize(s));
        for (const auto& b : hpart) {
          sum_a += b.sum_a;
          sum_b += b.sum_b;
          max_z = std::max<double>(max_z, b.max_z);
          count += b.count;
        }
        if (prm.progress) prm.progress(double(y0) / H + double(u1) / n_units * double(y1 - y0) / H, 1.0, "search (gpu)");
      }
    }
    out.sum_a = sum_a;
    out.sum_b = sum_b;
    out.max_z = max_z;
    out.count_above = count;
    out.scan_seconds = scan_s;
    out.stage_seconds["scan"] = scan_s;
    if (k > 0) {
      std::vector<StackHit> all(n_origins * k);
      dhits.download(all.data(), all.size(), s);
      CUDA_CHECK(cudaStreamSynchronize(s));
      for (const auto& h : all)
        if (h.v != INT_MAX) out.hits.push_back(h);
      out.total_hits = out.hits.size();
    } else {
      unsigned long long n_hits = 0;
      dcount.download(&n_hits, 1, s);
      CUDA_CHECK(cudaStreamSynchronize(s));
      out.total_hits = n_hits;
      out.hits.resize(std::min<unsigned long long>(n_hits, cap));
      dhits.download(out.hits.data(), out.hits.size(), s);
      CUDA_CHECK(cudaStreamSynchronize(s));
      std::sort(out.hits.begin(), out.hits.end(), [](const StackHit& a, const StackHit& b) {
        if (a.y != b.y) return a.y < b.y;
        if (a.x != b.x) return a.x < b.x;
        return a.v < b.v;
      });
    }
    if (prm.dense) {
      out.dense_a.resize(da.size());
      out.dense_b.resize(db.size());
      out.dense_obs.resize(dobs.size());
      da.download(out.dense_a.data(), da.size(), s);
      db.download(out.dense_b.data(), db.size(), s);
      dobs.download(out.dense_obs.data(), dobs.size(), s);
      CUDA_CHECK(cudaStreamSynchronize(s));
    }
    return out;
  }

  void evaluate(const StackShifts& sh, const StackHit* list, std::size_t n, float* a, float* b,
                std::int32_t* obs) override {
    if (n == 0) return;
    DeviceGuard g(device_);
    cudaStream_t s = *stream_;
    const bool frac = is_fractional(sh);
    DeviceBuffer<int> dsx, dsy;
    FracDev fdev;
    if (frac) {
      fdev = upload_frac(sh, s);
    } else {
      dsx.allocate(std::size_t(sh.n_vel) * sh.n_exp);
      dsy.allocate(std::size_t(sh.n_vel) * sh.n_exp);
      dsx.upload(sh.sx, dsx.size(), s);
      dsy.upload(sh.sy, dsy.size(), s);
    }
    DeviceBuffer<StackHit> dl(n);
    dl.upload(list, n, s);
    DeviceBuffer<float> da(n), db(n);
    DeviceBuffer<int> dobs(n);
    const unsigned blocks = unsigned((n + 255) / 256);
    const int storage = int(host_.storage);
    auto launch = [&](const DevPlanes& P, int ed, int e0, int e1) {
      if (frac) {
        const FracTables T = fdev.tables();
        if (storage == 0) frac_evaluate_kernel<0><<<blocks, 256, 0, s>>>(P, T, dl.data(), n, ed, e0, e1, da.data(), db.data(), dobs.data());
        else if (storage == 1) frac_evaluate_kernel<1><<<blocks, 256, 0, s>>>(P, T, dl.data(), n, ed, e0, e1, da.data(), db.data(), dobs.data());
        else frac_evaluate_kernel<2><<<blocks, 256, 0, s>>>(P, T, dl.data(), n, ed, e0, e1, da.data(), db.data(), dobs.data());
        CUDA_CHECK_LAUNCH();
        return;
      }
      if (storage == 0) evaluate_kernel<0><<<blocks, 256, 0, s>>>(P, dsx.data(), dsy.data(), dl.data(), n, ed, e0, e1, da.data(), db.data(), dobs.data());
      else if (storage == 1) evaluate_kernel<1><<<blocks, 256, 0, s>>>(P, dsx.data(), dsy.data(), dl.data(), n, ed, e0, e1, da.data(), db.data(), dobs.data());
      else evaluate_kernel<2><<<blocks, 256, 0, s>>>(P, dsx.data(), dsy.data(), dl.data(), n, ed, e0, e1, da.data(), db.data(), dobs.data());
      CUDA_CHECK_LAUNCH();
    };
    if (resident_) {
      launch(planes(0, host_.height), 0, 0, host_.n);
    } else {
      // Exposure chunks in order: each launch continues the running sums of the previous one.
      const std::size_t eb = elem_bytes(host_.storage);
      const std::size_t per_exp = std::size_t(host_.width) * host_.height *
                                  (eb + (host_.storage == StackStorage::Int8 ? 1 : eb));
      const int chunk = int(std::clamp<std::size_t>(budget() / 2 / per_exp, 1, std::size_t(host_.n)));
      for (int e0 = 0; e0 < host_.n; e0 += chunk) {
        const int e1 = std::min(host_.n, e0 + chunk);
        upload_exposures(e0, e1);  // throws DeviceOutOfMemory if not even one exposure fits
        launch(planes(0, host_.height), e0, e0, e1);  // the next upload is ordered after it
      }
    }
    da.download(a, n, s);
    db.download(b, n, s);
    dobs.download(reinterpret_cast<int*>(obs), n, s);
    CUDA_CHECK(cudaStreamSynchronize(s));
  }

private:
  StackPlanes host_;
  int device_;
  std::string name_;
  std::unique_ptr<Stream> stream_;
  DeviceBuffer<unsigned char> psi_, phi_;
  DeviceBuffer<float> psi_scale_, phi_scale_;
  bool resident_ = false;
  double upload_s_ = 0;
  std::unique_ptr<FourierEngine> fourier_;
};

class Kernels final : public StackKernels {
public:
  std::unique_ptr<StackSession> open(const StackPlanes& planes, int device) override {
    if (planes.n <= 0 || planes.width <= 0 || planes.height <= 0 || !planes.psi || !planes.phi)
      throw DeviceError("stack session: empty or null planes");
    if (planes.storage != StackStorage::Fp32 && (!planes.psi_scale || !planes.phi_scale))
      throw DeviceError("stack session: FP16/INT8 planes need per-image scales");
    return std::make_unique<Session>(planes, device);
  }

  void psiphi(const PsiPhiInputs& in, float* psi, float* phi, int device) override {
    if (in.n <= 0 || in.width <= 0 || in.height <= 0) throw DeviceError("psi/phi: empty stack");
    DeviceGuard g(device);
    Stream s;
    const std::size_t np = std::size_t(in.width) * in.height;
    std::vector<float> kern;
    std::vector<unsigned long long> off(in.n);
    std::vector<int> size(in.psf_size, in.psf_size + in.n);
    for (int e = 0; e < in.n; ++e) {
      const int K = in.psf_size[e];
      const float* k = in.psf + in.psf_offset[e];
      double sum = 0;
      for (int i = 0; i < K * K; ++i) sum += k[i];
      off[e] = kern.size();
      for (int i = 0; i < K * K; ++i) kern.push_back(float(k[i] / sum));
    }
    auto dk = DeviceBuffer<float>::from(kern, s);
    auto doff = DeviceBuffer<unsigned long long>::from(off, s);
    auto dsz = DeviceBuffer<int>::from(size, s);
    DeviceBuffer<double> dw;
    if (in.weight) dw = DeviceBuffer<double>::from(std::vector<double>(in.weight, in.weight + in.n), s);
    const int chunk = int(std::max<std::size_t>(1, std::min<std::size_t>(in.n, (std::size_t(1) << 28) / (np * 17))));
    DeviceBuffer<float> dsci(chunk * np), dvar(chunk * np), dpsi(chunk * np), dphi(chunk * np);
    DeviceBuffer<unsigned char> dmask(chunk * np);
    for (int e0 = 0; e0 < in.n; e0 += chunk) {
      const int ne = std::min(chunk, in.n - e0);
      const std::size_t m = std::size_t(ne) * np, at = std::size_t(e0) * np;
      dsci.upload(in.sci + at, m, s);
      dvar.upload(in.var + at, m, s);
      dmask.upload(in.mask + at, m, s);
      dim3 grid(unsigned((np + 255) / 256), unsigned(ne));
      psiphi_kernel<<<grid, 256, 0, s>>>(dsci.data(), dvar.data(), dmask.data(), dk.data(), doff.data(), dsz.data(),
                                         in.weight ? dw.data() : nullptr, in.width, in.height, e0, dpsi.data(), dphi.data());
      CUDA_CHECK_LAUNCH();
      dpsi.download(psi + at, m, s);
      dphi.download(phi + at, m, s);
      s.sync();
    }
  }
};

}  // namespace
}  // namespace stack_detail
}  // namespace almagest::kernels

almagest::kernels::StackKernels* almagest_stack_kernels() {
  static almagest::kernels::stack_detail::Kernels k;
  return &k;
}
