#pragma once
// Counting kernels of the NpCF CUDA backend (included by npcf_count.cu only).
//
// Layout of the work: one block per hub (3pCF, 4pCF) taken from a list of hubs sorted by
// decreasing degree through an atomic counter (persistent grid, heavy hubs first), or one warp
// per hub (2pCF). Per hub the block copies the hub's half list into shared memory, walks the rows
// of its neighbours (lanes over the row, coalesced) and binary-searches each entry in the hub
// list: for the 3pCF every hit is a triangle; for the 4pCF the hits fill the connectivity table
// T[a][b] = bin(j_a, j_b) + 1 and its bitsets, and tetrahedra are the set bits of
// bits(a) & bits(b) for connected pairs (a, b), which lanes take from a per-warp queue.
//
// Tiling: rows live in up to three resident windows (hub window H, search windows S1 and S2); a
// launch only walks rows of its search windows, so that over all tiles (H, S1 <= S2) every tuple
// i < j < k < l is counted exactly once (j's row in S1, k's row in S2).
//
// Histograms: per block in shared memory (32-bit counts, double sums), flushed into the block's
// own partial slot before a count could overflow and at the end; partial slots are reduced in
// block order. Rows too many for shared memory use global atomics instead.
#include <cuda_runtime.h>

#include <cstdint>

#include "npcf_common.cuh"

namespace almagest::kernels::npcf_dev {

using u8 = std::uint8_t;
using u16 = std::uint16_t;
using u32 = std::uint32_t;
using u64 = std::uint64_t;
using ull = unsigned long long;

/// A resident window of rows [lo, hi): their edges start at global edge index `base`.
struct Win {
  const u32* nb = nullptr;
  const u8* bin = nullptr;
  const u16* pix = nullptr;
  u64 base = 0;
  u32 lo = 0, hi = 0;
};

/// Accumulators of one launch. Shared mode: block histograms flushed into partial slots
/// part_*[(half * G + block) * rows + row]; global mode: atomics into acc_*[half * rows + row].
struct Acc {
  u32 rows = 0;
  int half = 0;       // 0: data hubs, 1: random hubs (all-random tuples)
  u32 G = 0;          // partial slots per half
  bool shared = true;
  ull* part_cnt = nullptr;
  double* part_sum = nullptr;
  double* part_odd = nullptr;
  ull* part_deg = nullptr;
  ull* acc_cnt = nullptr;
  double* acc_sum = nullptr;
  double* acc_odd = nullptr;
  ull* acc_deg = nullptr;
};

struct Common {
  const u64* offsets = nullptr;
  const double* w = nullptr;
  const double *x = nullptr, *y = nullptr, *z = nullptr;
  bool periodic = false;
  double box = 0;
  u64 ndata = 0;
};

// Reductions into shared memory through explicit shared-space instructions (the histogram
// pointers are generic, so the compiler would otherwise emit generic atomics). On sm_90 only the
// 32-bit integer add is a native shared-memory atomic (ATOMS.ADD); f64 and u64 adds compile to
// compare-and-swap loops (ATOMS.CAST.SPIN.64), hence the fixed-point 4pCF histograms below.
__device__ __forceinline__ void red_shared(u32* p, u32 v) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(a), "r"(v) : "memory");
}
__device__ __forceinline__ void red_shared(double* p, double v) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("red.shared.add.f64 [%0], %1;" ::"r"(a), "d"(v) : "memory");
}
__device__ __forceinline__ u32 atom_shared_add(u32* p, u32 v) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
  u32 old;
  asm volatile("atom.shared.add.u32 %0, [%1], %2;" : "=r"(old) : "r"(a), "r"(v) : "memory");
  return old;
}

// Fixed-point sums (4pCF): a product v becomes the integer x = rint(v * 2^k) (|x| < 2^60, k per
// job from the largest weight) and is added into a 96-bit two's-complement accumulator of three
// 32-bit words with native atomics; the carry out of a word is propagated by the thread whose add
// produced it, so the accumulator is exact whatever the order. Per-tetrahedron error: the rounding
// of v to a multiple of 2^-k <= 2^-55 max|w|^4 (at most half of that), a relative 2^-53 or better
// for products within a factor 8 of max|w|^4; the block sums are then exact integers.
__device__ __forceinline__ void fx_add(u32* w, long long x) {
  const u32 lo = static_cast<u32>(x);
  const u32 mid = static_cast<u32>(static_cast<unsigned long long>(x) >> 32);
  const u32 old0 = atom_shared_add(w, lo);
  const u32 c1 = (old0 + lo) < old0 ? 1u : 0u;  // carry out of word 0
  const u32 m = mid + c1;
  u32 h = (x < 0 ? 0xFFFFFFFFu : 0u) + ((m < mid) ? 1u : 0u);
  if (m != 0) {
    const u32 old1 = atom_shared_add(w + 1, m);
    h += (old1 + m) < old1 ? 1u : 0u;
  }
  if (h != 0) red_shared(w + 2, h);
}
/// The 96-bit accumulator at w as a signed integer.
__device__ __forceinline__ __int128 fx_load(const u32* w) {
  const unsigned __int128 u = static_cast<unsigned __int128>(w[0]) |
                              (static_cast<unsigned __int128>(w[1]) << 32) |
                              (static_cast<unsigned __int128>(w[2]) << 64);
  return static_cast<__int128>(u << 32) >> 32;  // sign extension from bit 95
}
__device__ __forceinline__ double fx_to_double(__int128 v) {
  const long long hi = static_cast<long long>(v >> 64);
  const unsigned long long lo = static_cast<unsigned long long>(v);
  return __dadd_rn(__dmul_rn(__ll2double_rn(hi), 18446744073709551616.0), __ull2double_rn(lo));
}

// ---------------------------------------------------------------------------------------------
// Block histogram in shared memory (or pass-through to global atomics).
struct BlockHist {
  u32* cnt;
  double* sum;   // parity: P, the products with odd sign +1
  double* odd;   // parity: M, the products with odd sign -1
  double* dsum;  // parity: D, the products of degenerate tetrahedra
  u32* deg;
  u32* fx;       // fixed point: 3 words per row for the sum (parity: P, M, D, each rows x 3)
  double fx_inv; // 2^-k
  bool shared;
  bool fixed;
  u32 rows;

  __device__ void add(const Acc& A, u32 row, double v) const {
    if (shared) {
      red_shared(cnt + row, 1u);
      red_shared(sum + row, v);
    } else {
      const u64 at = static_cast<u64>(A.half) * A.rows + row;
      atomicAdd(A.acc_cnt + at, 1ull);
      atomicAdd(A.acc_sum + at, v);
    }
  }
  /// n tuples of summed product v into one row (the dense 3pCF's per-lane partial counts).
  __device__ void add_n(const Acc& A, u32 row, u32 n, double v) const {
    if (shared) {
      red_shared(cnt + row, n);
      red_shared(sum + row, v);
    } else {
      const u64 at = static_cast<u64>(A.half) * A.rows + row;
      atomicAdd(A.acc_cnt + at, static_cast<ull>(n));
      atomicAdd(A.acc_sum + at, v);
    }
  }
  /// Parity: one tetrahedron of product v with odd sign sigma (+1/-1), or degenerate. In shared
  /// memory one double reduction per tetrahedron: even = P + M + D and odd = P - M at the flush.
  __device__ void add_parity(const Acc& A, u32 row, double v, bool degenerate, bool negative) const {
    if (shared) {
      red_shared(cnt + row, 1u);
      if (degenerate) {
        red_shared(deg + row, 1u);
        red_shared(dsum + row, v);
      } else {
        red_shared((negative ? odd : sum) + row, v);
      }
    } else {
      const u64 at = static_cast<u64>(A.half) * A.rows + row;
      atomicAdd(A.acc_cnt + at, 1ull);
      atomicAdd(A.acc_sum + at, v);
      if (degenerate)
        atomicAdd(A.acc_deg + at, 1ull);
      else
        atomicAdd(A.acc_odd + at, negative ? -v : v);
    }
  }
  /// Fixed-point forms of add / add_parity (shared mode only): x = rint(v * 2^k).
  __device__ __forceinline__ void add_fx(u32 row, long long x) const {
    red_shared(cnt + row, 1u);
    fx_add(fx + 3 * row, x);
  }
  __device__ __forceinline__ void add_parity_fx(u32 row, long long x, bool degenerate, bool negative) const {
    red_shared(cnt + row, 1u);
    u32 arr = negative ? 1u : 0u;
    if (degenerate) {
      red_shared(deg + row, 1u);
      arr = 2;
    }
    fx_add(fx + 3 * (arr * rows + row), x);
  }
  __device__ void zero(bool parity) const {
    if (!shared) return;
    for (u32 r = threadIdx.x; r < rows; r += blockDim.x) {
      cnt[r] = 0;
      if (parity) deg[r] = 0;
      if (fixed) {
        for (u32 k = 0; k < (parity ? 3u : 1u); ++k) {
          u32* w = fx + 3 * (k * rows + r);
          w[0] = w[1] = w[2] = 0;
        }
        continue;
      }
      sum[r] = 0;
      if (parity) {
        odd[r] = 0;
        dsum[r] = 0;
      }
    }
  }
  /// Adds the block histogram to the block's partial slot and clears it (call with all threads,
  /// between barriers).
  __device__ void flush(const Acc& A, bool parity) const {
    if (!shared) return;
    const u64 slot = (static_cast<u64>(A.half) * A.G + blockIdx.x) * A.rows;
    for (u32 r = threadIdx.x; r < rows; r += blockDim.x) {
      A.part_cnt[slot + r] += cnt[r];
      cnt[r] = 0;
      if (fixed) {
        const __int128 P = fx_load(fx + 3 * r);
        if (parity) {
          const __int128 M = fx_load(fx + 3 * (rows + r));
          const __int128 D = fx_load(fx + 3 * (2 * rows + r));
          A.part_sum[slot + r] += __dmul_rn(fx_to_double(P + M + D), fx_inv);
          A.part_odd[slot + r] += __dmul_rn(fx_to_double(P - M), fx_inv);
          A.part_deg[slot + r] += deg[r];
          deg[r] = 0;
        } else {
          A.part_sum[slot + r] += __dmul_rn(fx_to_double(P), fx_inv);
        }
        for (u32 k = 0; k < (parity ? 3u : 1u); ++k) {
          u32* w = fx + 3 * (k * rows + r);
          w[0] = w[1] = w[2] = 0;
        }
        continue;
      }
      if (parity) {
        A.part_sum[slot + r] += (sum[r] + odd[r]) + dsum[r];
        A.part_odd[slot + r] += sum[r] - odd[r];
        A.part_deg[slot + r] += deg[r];
        odd[r] = 0;
        dsum[r] = 0;
        deg[r] = 0;
      } else {
        A.part_sum[slot + r] += sum[r];
      }
      sum[r] = 0;
    }
  }
};

/// Carves the block histogram from the front of dynamic shared memory; returns bytes used.
__host__ __device__ inline std::size_t hist_bytes(u32 rows, bool parity, bool fixed = false) {
  const std::size_t r = rows;
  std::size_t b;
  if (fixed)
    b = parity ? r * (3 * 12 + 2 * 4) : r * (12 + 4);
  else
    b = parity ? r * (3 * 8 + 2 * 4) : r * (8 + 4);
  return (b + 15) & ~std::size_t{15};
}

__device__ inline BlockHist make_hist(unsigned char* smem, u32 rows, bool parity, bool shared,
                                      bool fixed = false, double fx_inv = 0) {
  BlockHist h{};
  h.shared = shared;
  h.fixed = shared && fixed;
  h.fx_inv = fx_inv;
  h.rows = rows;
  if (!shared) return h;
  const std::size_t r = rows;
  std::size_t at = 0;
  if (h.fixed) {
    h.fx = reinterpret_cast<u32*>(smem);
    at = r * 12 * (parity ? 3 : 1);
  } else {
    h.sum = reinterpret_cast<double*>(smem);
    at = r * 8;
    if (parity) {
      h.odd = reinterpret_cast<double*>(smem + at);
      h.dsum = reinterpret_cast<double*>(smem + at + r * 8);
      at += r * 16;
    }
  }
  h.cnt = reinterpret_cast<u32*>(smem + at);
  at += r * 4;
  if (parity) h.deg = reinterpret_cast<u32*>(smem + at);
  return h;
}

// ---------------------------------------------------------------------------------------------
// 2pCF: one warp per hub over the hub range [h0, h1) of the resident window.
struct TwoArgs {
  Common c;
  Win win;
  u64 h0 = 0, h1 = 0;
  Acc acc;  // rows = nbins, both halves in one launch (half chosen per hub)
};

__global__ void count2_kernel(TwoArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  const u32 R = a.acc.rows;
  double* s_sum = reinterpret_cast<double*>(smem);        // [2][R]
  ull* s_cnt = reinterpret_cast<ull*>(smem + 16 * R);    // [2][R]
  for (u32 r = threadIdx.x; r < 2 * R; r += blockDim.x) {
    s_sum[r] = 0;
    s_cnt[r] = 0;
  }
  __syncthreads();
  const u32 lane = threadIdx.x & 31;
  const u64 warps = static_cast<u64>(gridDim.x) * (blockDim.x >> 5);
  for (u64 i = a.h0 + static_cast<u64>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5); i < a.h1;
       i += warps) {
    const int half = i >= a.c.ndata ? 1 : 0;
    const double wi = a.c.w[i];
    const u64 e0 = a.c.offsets[i] - a.win.base, e1 = a.c.offsets[i + 1] - a.win.base;
    for (u64 e = e0 + lane; e < e1; e += 32) {
      const u32 b = a.win.bin[e];
      atomicAdd(s_cnt + half * R + b, 1ull);
      atomicAdd(s_sum + half * R + b, wi * a.c.w[a.win.nb[e]]);
    }
  }
  __syncthreads();
  for (u32 r = threadIdx.x; r < 2 * R; r += blockDim.x) {
    const u32 half = r / R, row = r % R;
    const u64 slot = (static_cast<u64>(half) * a.acc.G + blockIdx.x) * R + row;
    a.acc.part_cnt[slot] += s_cnt[r];
    a.acc.part_sum[slot] += s_sum[r];
  }
}

/// 2pCF with mu bins and/or Legendre sums: rows (r bin, mu bin) with mu inner, then (legendre)
/// 2 x nbins sum-only rows: L2 sums at mu_rows + b, L4 sums at mu_rows + nbins + b. mu from the
/// coordinates with the CPU's arithmetic (npcf_common.cuh), so every pair lands in its CPU row.
/// A kernel of its own: the isotropic count2_kernel above is unchanged.
struct TwoMuArgs {
  TwoArgs base;
  int nmu = 1;
  int nbins = 0;
  bool legendre = false;
};

__global__ void count2mu_kernel(TwoMuArgs m) {
  const TwoArgs& a = m.base;
  extern __shared__ __align__(16) unsigned char smem[];
  const u32 R = a.acc.rows;
  const u32 mu_rows = static_cast<u32>(m.nbins * m.nmu);
  double* s_sum = reinterpret_cast<double*>(smem);        // [2][R]
  ull* s_cnt = reinterpret_cast<ull*>(smem + 16 * R);    // [2][R]
  for (u32 r = threadIdx.x; r < 2 * R; r += blockDim.x) {
    s_sum[r] = 0;
    s_cnt[r] = 0;
  }
  __syncthreads();
  const u32 lane = threadIdx.x & 31;
  const u64 warps = static_cast<u64>(gridDim.x) * (blockDim.x >> 5);
  for (u64 i = a.h0 + static_cast<u64>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5); i < a.h1;
       i += warps) {
    const int half = i >= a.c.ndata ? 1 : 0;
    const double wi = a.c.w[i];
    const double xi = a.c.x[i], yi = a.c.y[i], zi = a.c.z[i];
    const u64 e0 = a.c.offsets[i] - a.win.base, e1 = a.c.offsets[i + 1] - a.win.base;
    for (u64 e = e0 + lane; e < e1; e += 32) {
      const u32 b = a.win.bin[e];
      const u32 j = a.win.nb[e];
      double dx, dy, dz;
      delta(a.c.x, a.c.y, a.c.z, i, j, a.c.periodic, a.c.box, dx, dy, dz);
      const double mu = pair_mu(xi, yi, zi, dx, dy, dz, a.c.periodic);
      const u32 row = b * static_cast<u32>(m.nmu) + static_cast<u32>(mu_bin_signed(mu, m.nmu));
      const double ww = wi * a.c.w[j];
      atomicAdd(s_cnt + half * R + row, 1ull);
      atomicAdd(s_sum + half * R + row, ww);
      if (m.legendre) {
        const double m2 = mu * mu;
        atomicAdd(s_sum + half * R + mu_rows + b, ww * (1.5 * m2 - 0.5));
        atomicAdd(s_sum + half * R + mu_rows + m.nbins + b,
                  ww * ((35.0 * m2 * m2 - 30.0 * m2 + 3.0) / 8.0));
      }
    }
  }
  __syncthreads();
  for (u32 r = threadIdx.x; r < 2 * R; r += blockDim.x) {
    const u32 half = r / R, row = r % R;
    const u64 slot = (static_cast<u64>(half) * a.acc.G + blockIdx.x) * R + row;
    a.acc.part_cnt[slot] += s_cnt[r];
    a.acc.part_sum[slot] += s_sum[r];
  }
}

// ---------------------------------------------------------------------------------------------
// Hub work list of a launch: hubs order[first .. first + count), taken through *counter.
struct HubList {
  const u32* order = nullptr;
  u32 first = 0, count = 0;
  u32* counter = nullptr;
};

/// Takes the next hub for the whole block; returns false when the list is exhausted.
__device__ inline bool next_hub(const HubList& L, u32* s_item, u32& hub) {
  if (threadIdx.x == 0) *s_item = atomicAdd(L.counter, 1u);
  __syncthreads();
  const u32 item = *s_item;
  __syncthreads();  // everyone read s_item before thread 0 may overwrite it
  if (item >= L.count) return false;
  hub = L.order[L.first + item];
  return true;
}

// ---------------------------------------------------------------------------------------------
// 3pCF: block per hub. Hub list in shared memory when deg <= dcap, else read from global.
struct ThreeArgs {
  Common c;
  Win wh, ws;   // hub window, search window (rows j)
  HubList list;
  const u32* tri_offset = nullptr;  // nbins * nbins
  int nbins = 0;
  bool equilateral = false;
  u32 dcap = 0;  // shared list capacity
  int nmu = 1;   // kMu: rows (configuration, mu bin of the triangle's normal), mu inner
  Acc acc;
};

template <bool kMu>
__global__ void count3_kernel(ThreeArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ u32 s_item;
  __shared__ u32 s_range[2];
  __shared__ u64 s_bound;
  const BlockHist hist = make_hist(smem, a.acc.rows, false, a.acc.shared);
  unsigned char* p = smem + (a.acc.shared ? hist_bytes(a.acc.rows, false) : 0);
  double* l_w = reinterpret_cast<double*>(p);
  u32* l_nb = reinterpret_cast<u32*>(p + 8ull * a.dcap);
  u8* l_bin = reinterpret_cast<u8*>(p + 12ull * a.dcap);
  hist.zero(false);
  if (threadIdx.x == 0) s_bound = 0;
  const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  const int n = a.nbins;
  u32 hub;
  while (next_hub(a.list, &s_item, hub)) {
    const u64 e0 = a.c.offsets[hub] - a.wh.base;
    const u32 d = static_cast<u32>(a.c.offsets[hub + 1] - a.c.offsets[hub]);
    // Flush before a 32-bit count could overflow: a hub adds at most d(d-1)/2 triangles.
    const u64 bound = static_cast<u64>(d) * (d - 1) / 2;
    if (a.acc.shared && s_bound + bound >= 0xFFFFFFFFull) {
      hist.flush(a.acc, false);
      __syncthreads();
      if (threadIdx.x == 0) s_bound = 0;
    }
    const bool in_smem = d <= a.dcap;
    const u32* nb = in_smem ? l_nb : a.wh.nb + e0;
    const u8* hb = in_smem ? l_bin : a.wh.bin + e0;
    if (in_smem)
      for (u32 q = threadIdx.x; q < d; q += blockDim.x) {
        const u32 j = a.wh.nb[e0 + q];
        l_nb[q] = j;
        l_bin[q] = a.wh.bin[e0 + q];
        l_w[q] = a.c.w[j];
      }
    __syncthreads();
    if (threadIdx.x == 0) {
      s_range[0] = lower_bound<u32>(nb, 0, d, a.ws.lo);
      s_range[1] = lower_bound<u32>(nb, s_range[0], d, a.ws.hi);
      s_bound += bound;
    }
    __syncthreads();
    const double wi = a.c.w[hub];
    const u32 last = nb[d - 1];
    for (u32 q = s_range[0] + warp; q < s_range[1]; q += nwarps) {
      const u32 j = nb[q];
      const int bij = hb[q];
      const double wij = wi * (in_smem ? l_w[q] : a.c.w[j]);
      const u64 r0 = a.c.offsets[j] - a.ws.base, r1 = a.c.offsets[j + 1] - a.ws.base;
      for (u64 e = r0 + lane; e < r1; e += 32) {
        const u32 k = a.ws.nb[e];
        if (k > last) break;
        const u32 pos = lower_bound<u32>(nb, q + 1, d, k);
        if (pos >= d || nb[pos] != k) continue;
        const int bik = hb[pos], bjk = a.ws.bin[e];
        u32 row;
        if (a.equilateral) {
          if (bij != bik || bij != bjk) continue;
          row = static_cast<u32>(bij);
        } else {
          int lo = min(bij, min(bik, bjk)), hi = max(bij, max(bik, bjk));
          int mid = bij + bik + bjk - lo - hi;
          row = a.tri_offset[lo * n + mid] + static_cast<u32>(hi - mid);
        }
        if constexpr (kMu) {
          // |mu| of the normal, as the CPU's triangle_mu (spokes hub -> j, hub -> k).
          double ax, ay, az, bx, by, bz;
          delta(a.c.x, a.c.y, a.c.z, hub, j, a.c.periodic, a.c.box, ax, ay, az);
          delta(a.c.x, a.c.y, a.c.z, hub, k, a.c.periodic, a.c.box, bx, by, bz);
          const double mu = triangle_mu(a.c.x[hub], a.c.y[hub], a.c.z[hub], ax, ay, az, bx, by,
                                        bz, a.c.periodic);
          row = row * static_cast<u32>(a.nmu) + static_cast<u32>(mu_bin_unsigned(mu, a.nmu));
        }
        hist.add(a.acc, row, wij * (in_smem ? l_w[pos] : a.c.w[k]));
      }
    }
    __syncthreads();
  }
  __syncthreads();
  hist.flush(a.acc, false);
}

// ---------------------------------------------------------------------------------------------
// 3pCF, dense neighbourhoods (hubs with many neighbours; isotropic rows, not equilateral): block
// per hub. Instead of walking each neighbour's row and searching the hub list, the block tests
// every pair {q, r} of the hub's neighbours from coordinates with the graph's own edge test and
// bins: the separation and d2 as the graph builders compute them (npcf_common.cuh: sub/mul/add
// rounded to nearest, minimum image; d2 is the same for (j, k) and (k, j) because IEEE
// subtraction is antisymmetric), rmin2 < d2 < rmax2, and the bin as the number of exact
// squared-distance thresholds <= d2 (a start from a lookup table on the high word of d2, then
// the thresholds). So a pair is a triangle exactly when the graph has the edge (j, k) and its bin
// is the graph's: the counts are the graph walk's. The hub's own edges are checked the same way
// (a graph built with another binning sets *error).
//
// Per hub: the neighbours' (x, y, z, w) are staged in the block's global scratch grouped by their
// bin from the hub, then warps take units (32 consecutive staged q's, one group of r's): lane q
// loops over the group's r > q (broadcast loads), and with b(hub, q) and b(hub, r) fixed inside a
// unit only the third bin varies: the lane's counts and weight sums per third bin live in a
// lane-private shared-memory column (no atomics), added to the block histogram once per unit
// (count n, sum w_hub w_q sum_r w_r: the same products as the graph walk up to rounding order).
inline constexpr int kDenseMaxBins = 16;
inline constexpr int kDenseThreads = 256;
inline constexpr u32 kDenseLutMax = 128;  // 32 words: one per bank, conflict-free lookups

struct alignas(32) Pt4 {
  double x, y, z, w;
};

struct Dense3Args {
  Common c;
  const Pt4* pts = nullptr;  // (x, y, z, w) per point
  Win wh;                    // hub window (the hubs' lists)
  HubList list;
  const u32* tri_offset = nullptr;
  int nbins = 0;
  double rmin2 = 0, rmax2 = 0;
  const double* thr = nullptr;  // nbins - 1 ascending squared-distance thresholds
  const u8* lut = nullptr;      // lut_size entries: thresholds <= the cell's lowest d2
  u32 lut_base = 0, lut_size = 0;
  int lut_shift = 0;
  Pt4* scratch = nullptr;  // per block: scratch_stride entries
  u64 scratch_stride = 0;
  u32* error = nullptr;
  Acc acc;
};

__host__ __device__ inline std::size_t align16(std::size_t b) { return (b + 15) & ~std::size_t{15}; }

/// Dynamic shared memory of the dense kernel: histogram, thresholds, table, lane columns.
__host__ __device__ inline std::size_t dense3_smem(u32 rows, bool shared_hist, int nbins, u32 lut_size,
                                                   int threads, int q_per_lane) {
  return (shared_hist ? hist_bytes(rows, false) : 0) + align16(8ull * (nbins > 1 ? nbins - 1 : 0)) +
         align16(lut_size) + static_cast<std::size_t>(12) * nbins * threads * q_per_lane;
}

__device__ __forceinline__ double dense_wrap(double v, bool periodic, double box, double half) {
  return periodic ? wrap(v, box, half) : v;
}

/// kQ staged q's per lane (1 or 2): a unit is 32 kQ consecutive q's; each broadcast r serves kQ
/// pairs per lane, and each q has its own lane column (kQ columns of 32 per warp and third bin).
template <int kQ>
__global__ void __launch_bounds__(kDenseThreads) count3_dense_kernel(Dense3Args a) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ u32 s_item;
  __shared__ u32 s_goff[kDenseMaxBins + 1];
  __shared__ u32 s_cur[kDenseMaxBins];
  __shared__ u64 s_bound;
  const BlockHist hist = make_hist(smem, a.acc.rows, false, a.acc.shared);
  std::size_t at = a.acc.shared ? hist_bytes(a.acc.rows, false) : 0;
  const u32 nb = static_cast<u32>(a.nbins);
  const u32 nthr = nb - 1;
  double* s_thr = reinterpret_cast<double*>(smem + at);
  at += align16(8ull * nthr);
  u8* s_lut = smem + at;
  at += align16(a.lut_size);
  const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  constexpr u32 kW = 32 * kQ;  // columns per warp and third bin
  u32* p_cnt = reinterpret_cast<u32*>(smem + at) + static_cast<std::size_t>(warp) * nb * kW;
  at += 4ull * nb * blockDim.x * kQ;
  double* p_sum = reinterpret_cast<double*>(smem + at) + static_cast<std::size_t>(warp) * nb * kW;
  for (u32 t = threadIdx.x; t < nthr; t += blockDim.x) s_thr[t] = a.thr[t];
  for (u32 t = threadIdx.x; t < a.lut_size; t += blockDim.x) s_lut[t] = a.lut[t];
  for (u32 b = 0; b < nb * kQ; ++b) {
    p_cnt[b * 32 + lane] = 0;
    p_sum[b * 32 + lane] = 0;
  }
  hist.zero(false);
  if (threadIdx.x == 0) s_bound = 0;
  __syncthreads();
  const bool periodic = a.c.periodic;
  const double box = a.c.box, half = 0.5 * a.c.box;
  const double rmin2 = a.rmin2, rmax2 = a.rmax2;
  auto bin_of = [&](double d2) {
    const u32 key = static_cast<u32>(static_cast<unsigned long long>(__double_as_longlong(d2)) >> 32) - a.lut_base;
    u32 b = s_lut[min(key >> a.lut_shift, a.lut_size - 1)];
    while (b < nthr && s_thr[b] <= d2) ++b;
    return b;
  };
  Pt4* stage = a.scratch + a.scratch_stride * blockIdx.x;
  u32 hub;
  while (next_hub(a.list, &s_item, hub)) {
    const u64 e0 = a.c.offsets[hub] - a.wh.base;
    const u32 d = static_cast<u32>(a.c.offsets[hub + 1] - a.c.offsets[hub]);
    const u64 bound = static_cast<u64>(d) * (d - 1) / 2;
    if (a.acc.shared && s_bound + bound >= 0xFFFFFFFFull) {
      hist.flush(a.acc, false);
      __syncthreads();
      if (threadIdx.x == 0) s_bound = 0;
    }
    // 1. group sizes by the bin from the hub, then their offsets
    if (threadIdx.x < nb) s_cur[threadIdx.x] = 0;
    __syncthreads();
    for (u32 q = threadIdx.x; q < d; q += blockDim.x)
      atomicAdd(&s_cur[min(static_cast<u32>(a.wh.bin[e0 + q]), nb - 1)], 1u);  // bins >= nb: *error below
    __syncthreads();
    if (threadIdx.x == 0) {
      u32 o = 0;
      for (u32 b = 0; b < nb; ++b) {
        s_goff[b] = o;
        o += s_cur[b];
        s_cur[b] = s_goff[b];
      }
      s_goff[nb] = o;
      s_bound += bound;
    }
    __syncthreads();
    // 2. stage the neighbours by group; check the hub's own edges against the binning
    const Pt4 ph = a.pts[hub];
    for (u32 q = threadIdx.x; q < d; q += blockDim.x) {
      const u32 j = a.wh.nb[e0 + q];
      const u32 b = min(static_cast<u32>(a.wh.bin[e0 + q]), nb - 1);
      const Pt4 pj = a.pts[j];
      stage[atomicAdd(&s_cur[b], 1u)] = pj;
      const double dx = dense_wrap(sub(pj.x, ph.x), periodic, box, half);
      const double dy = dense_wrap(sub(pj.y, ph.y), periodic, box, half);
      const double dz = dense_wrap(sub(pj.z, ph.z), periodic, box, half);
      const double d2 = norm2(dx, dy, dz);
      if (!(rmin2 < d2 && d2 < rmax2) || a.wh.bin[e0 + q] != bin_of(d2)) atomicOr(a.error, 1u);
    }
    __syncthreads();
    // 3. units (kQ x 32 q's, one group of r's), group-major so that a block's warps share a
    //    group in L1; lane column k of q = q0 + 32 k + lane is [b3 * kW + 32 k + lane]
    const u32 nqb = (d + kW - 1) / kW;
    const u32 units = nqb * nb;
    for (u32 u = warp; u < units; u += nwarps) {
      const u32 g = u / nqb, qb = u % nqb;
      const u32 q0 = qb * kW, g1 = s_goff[g + 1];
      const u32 rs = max(s_goff[g], q0 + 1);
      if (rs >= g1) continue;
      u32 q[kQ], bq[kQ];
      bool qv[kQ], any[kQ];
      Pt4 pq[kQ];
#pragma unroll
      for (int k = 0; k < kQ; ++k) {
        q[k] = q0 + 32 * k + lane;
        qv[k] = q[k] < d;
        pq[k] = qv[k] ? stage[q[k]] : Pt4{0, 0, 0, 0};
        bq[k] = 0;
        for (u32 b = 1; b < nb; ++b) bq[k] += q[k] >= s_goff[b] ? 1u : 0u;
        any[k] = false;
      }
#pragma unroll 2
      for (u32 r = rs; r < g1; ++r) {
        const Pt4 pr = stage[r];
#pragma unroll
        for (int k = 0; k < kQ; ++k) {
          const double dx = dense_wrap(sub(pr.x, pq[k].x), periodic, box, half);
          const double dy = dense_wrap(sub(pr.y, pq[k].y), periodic, box, half);
          const double dz = dense_wrap(sub(pr.z, pq[k].z), periodic, box, half);
          const double d2 = norm2(dx, dy, dz);
          if (qv[k] && r > q[k] && rmin2 < d2 && d2 < rmax2) {
            const u32 col = bin_of(d2) * kW + 32 * k + lane;
            p_cnt[col] += 1;
            p_sum[col] = add(p_sum[col], pr.w);
            any[k] = true;
          }
        }
      }
      // Flush the unit's columns. Inside a group the q's of a warp usually share b(hub, q):
      // then the warp sums each third bin's column (shuffles) and one lane adds it to the block
      // histogram, instead of 32 lanes contending for the same row's double-precision atomic.
#pragma unroll
      for (int k = 0; k < kQ; ++k) {
        if (!__any_sync(0xffffffffu, any[k])) continue;
        const u32 b0 = __shfl_sync(0xffffffffu, bq[k], 0);  // lane 0's q is valid (q0 < d)
        const bool uniform = __all_sync(0xffffffffu, !qv[k] || bq[k] == b0);
        const double wiq = mul(ph.w, pq[k].w);
        for (u32 b3 = 0; b3 < nb; ++b3) {
          const u32 col = b3 * kW + 32 * k + lane;
          u32 c = p_cnt[col];
          double v = c ? mul(wiq, p_sum[col]) : 0.0;
          p_cnt[col] = 0;
          p_sum[col] = 0;
          const u32 bb = uniform ? b0 : bq[k];
          if (uniform) {
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) {
              c += __shfl_xor_sync(0xffffffffu, c, o);
              v = add(v, __shfl_xor_sync(0xffffffffu, v, o));
            }
            if (lane != 0) c = 0;
          }
          if (c == 0) continue;
          const u32 lo = min(bb, min(g, b3)), hi = max(bb, max(g, b3));
          const u32 mid = bb + g + b3 - lo - hi;
          const u32 row = a.tri_offset[lo * nb + mid] + (hi - mid);
          hist.add_n(a.acc, row, c, v);
        }
      }
    }
    __syncthreads();  // the stage is rewritten by the next hub
  }
  __syncthreads();
  hist.flush(a.acc, false);
}

// ---------------------------------------------------------------------------------------------
// 4pCF: block per hub with the connectivity table of the hub's neighbourhood.
//
// A launch counts the window pairs `pairs` of its resident search windows ws[0..nsw) (distinct,
// ascending rows): bit 3p + q (p <= q) counts the tetrahedra (i, j, k, l) with j's row in ws[p]
// and k's row in ws[q]. A hub builds its neighbourhood once per launch for all of those pairs:
// its list splits into one contiguous range per window, and only the rows of windows that occur
// in a pair are walked.
struct FourArgs {
  Common c;
  Win wh;         // hub window
  Win ws[3];      // search windows, distinct, ascending
  u32 nsw = 1;
  u32 pairs = 1;  // bit 3p + q (p <= q)
  HubList list;
  const u32* packed = nullptr;    // n^6 canonicalisation entries
  const u16* packed16 = nullptr;  // the same as 16 bits when every entry fits (n <= 8): less cache
  u32 n = 0, n2 = 0, n3 = 0, n4 = 0, n5 = 0;
  bool exact = false;                 // parity directions from coordinates
  const double* pixel_unit = nullptr; // parity pixel mode
  u32 dcap = 0;
  unsigned char* scratch = nullptr;   // per-block neighbourhood in global memory (dcap large)
  u64 scratch_stride = 0;
  double fx_scale = 0, fx_inv = 0;    // fixed-point histograms: 2^k and 2^-k
  Acc acc;
};

/// Byte layout of a neighbourhood of capacity D (shared memory or global scratch). Per entry
/// `ent`: even {w, bin(i,c) * n^3} in 16 bytes; parity {ux, uy, uz, w} in 32 bytes (the bin term
/// then in cb3), so that the tetrahedron loop reads an entry with one or two 16-byte loads.
/// The connectivity table holds only its upper triangle (entries (r, c) with c > r, the only ones
/// the tetrahedron loop reads), row after row: d (d - 1) / 2 bytes instead of d^2, so that more
/// blocks fit in shared memory.
__host__ __device__ inline std::size_t tri_size(u32 d) {
  return static_cast<std::size_t>(d) * (d > 0 ? d - 1 : 0) / 2;
}
/// Offset of row r in the packed table, less r + 1: row r's entry for column c > r is at
/// tri_row(r, d) + c.
__host__ __device__ inline long long tri_row(u32 r, u32 d) {
  return static_cast<long long>(r) * (2 * static_cast<long long>(d) - r - 1) / 2 - r - 1;
}
struct HoodLayout {
  std::size_t ent, cb3, nb, bits, bin, T, total;
};
__host__ __device__ inline HoodLayout hood_layout(u32 D, bool parity) {
  HoodLayout L{};
  const std::size_t d = D, nw = (D + 31) / 32;
  std::size_t at = 0;
  L.ent = at;
  at += (parity ? 32 : 16) * d;
  L.cb3 = at;
  at += parity ? ((4 * d + 15) & ~std::size_t{15}) : 0;
  L.nb = at;
  at += 4 * d;
  L.bits = at;
  at += 4 * d * nw;
  L.bin = at;
  at += (d + 15) & ~std::size_t{15};
  L.T = at;
  at += (tri_size(D) + 15) & ~std::size_t{15};
  L.total = at;
  return L;
}

inline constexpr int kQueue = 64;  // per-warp pair queue

/// The t-th position of the union of the ranges [lo[k], lo[k] + len[k]) selected by `sel`
/// (ascending k); its range index in `k_out`.
__device__ __forceinline__ u32 range_pick(const u32 (&lo)[3], const u32 (&len)[3], u32 sel, u32 t,
                                          u32& k_out) {
  k_out = 0;
  u32 pos = 0;
  bool found = false;
#pragma unroll
  for (u32 k = 0; k < 3; ++k) {
    if (!found && ((sel >> k) & 1u)) {
      if (t < len[k]) {
        k_out = k;
        pos = lo[k] + t;
        found = true;
      } else {
        t -= len[k];
      }
    }
  }
  return pos;
}

template <bool kParity, bool kScratch, bool kFixed>
__global__ void count4_kernel(FourArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ u32 s_item;
  __shared__ u32 s_range[6];
  __shared__ u64 s_bound;
  const BlockHist hist = make_hist(smem, a.acc.rows, kParity, a.acc.shared, kFixed, a.fx_inv);
  std::size_t at = a.acc.shared ? hist_bytes(a.acc.rows, kParity, kFixed) : 0;
  u32* queue_all = reinterpret_cast<u32*>(smem + at);
  at += sizeof(u32) * kQueue * (blockDim.x >> 5);
  unsigned char* hood = kScratch ? a.scratch + a.scratch_stride * blockIdx.x : smem + at;
  const HoodLayout L = hood_layout(a.dcap, kParity);
  uint4* l_ent = reinterpret_cast<uint4*>(hood + L.ent);      // even: {w lo, w hi, cb3, 0}
  double2* l_ent2 = reinterpret_cast<double2*>(hood + L.ent);  // parity: {ux, uy}, {uz, w}
  u32* l_cb3 = reinterpret_cast<u32*>(hood + L.cb3);
  u32* l_nb = reinterpret_cast<u32*>(hood + L.nb);
  u32* l_bits = reinterpret_cast<u32*>(hood + L.bits);
  u8* l_bin = hood + L.bin;
  u8* T = hood + L.T;

  hist.zero(kParity);
  if (threadIdx.x == 0) s_bound = 0;
  const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  u32* queue = queue_all + kQueue * warp;
  const u32 n = a.n;
  const u32 bias = a.n2 + a.n + 1;
  // Roles of the windows: a (j's row), b (k's row), walked (either).
  u32 role_a = 0, role_b = 0;
#pragma unroll
  for (u32 p = 0; p < 3; ++p)
#pragma unroll
    for (u32 q = p; q < 3; ++q)
      if ((a.pairs >> (3 * p + q)) & 1u) {
        role_a |= 1u << p;
        role_b |= 1u << q;
      }
  const u32 role_walk = role_a | role_b;
  auto win_nb = [&](u32 p) { return p == 0 ? a.ws[0].nb : p == 1 ? a.ws[1].nb : a.ws[2].nb; };
  auto win_bin = [&](u32 p) { return p == 0 ? a.ws[0].bin : p == 1 ? a.ws[1].bin : a.ws[2].bin; };
  auto win_base = [&](u32 p) { return p == 0 ? a.ws[0].base : p == 1 ? a.ws[1].base : a.ws[2].base; };
  u32 hub;
  while (next_hub(a.list, &s_item, hub)) {
    const u64 e0 = a.c.offsets[hub] - a.wh.base;
    const u32 d = static_cast<u32>(a.c.offsets[hub + 1] - a.c.offsets[hub]);
    const u32 nw = (d + 31) / 32;
    const u64 bound = static_cast<u64>(d) * (d - 1) * (d - 2) / 6;
    if (a.acc.shared && s_bound + bound >= 0xFFFFFFFFull) {
      hist.flush(a.acc, kParity);
      __syncthreads();
      if (threadIdx.x == 0) s_bound = 0;
    }
    // 1. the hub's neighbour ids, then each search window's range of the list (in parallel)
    for (u32 q = threadIdx.x; q < d; q += blockDim.x) l_nb[q] = a.wh.nb[e0 + q];
    __syncthreads();
    if (threadIdx.x < 2 * a.nsw) {
      const u32 p = threadIdx.x >> 1;
      const Win& w = p == 0 ? a.ws[0] : p == 1 ? a.ws[1] : a.ws[2];
      s_range[threadIdx.x] = lower_bound<u32>(l_nb, 0, d, (threadIdx.x & 1) ? w.hi : w.lo);
    }
    if (threadIdx.x == 0) s_bound += bound;
    __syncthreads();
    u32 lo[3], len[3];
#pragma unroll
    for (u32 p = 0; p < 3; ++p) {
      lo[p] = p < a.nsw ? s_range[2 * p] : 0;
      len[p] = p < a.nsw ? s_range[2 * p + 1] - lo[p] : 0;
    }
    // Any pair (a < b) to count for this hub? (block-uniform: shared values)
    bool work = false;
    u32 nwalk = 0, na = 0;
#pragma unroll
    for (u32 p = 0; p < 3; ++p) {
      if (role_walk & (1u << p)) nwalk += len[p];
      if (role_a & (1u << p)) na += len[p];
#pragma unroll
      for (u32 q = p; q < 3; ++q)
        if ((a.pairs >> (3 * p + q)) & 1u) work |= p == q ? len[p] >= 2 : (len[p] > 0 && len[q] > 0);
    }
    if (!work) continue;
    // 2. the rest of the list; clear the bitsets of the rows we fill (T needs no clearing:
    //    an entry is read only where its bit is set)
    for (u32 q = threadIdx.x; q < d; q += blockDim.x) {
      const u32 j = l_nb[q];
      const u32 b = a.wh.bin[e0 + q];
      l_bin[q] = static_cast<u8>(b);
      const double wj = a.c.w[j];
      if constexpr (kParity) {
        double ux, uy, uz;
        if (a.exact) {
          delta(a.c.x, a.c.y, a.c.z, hub, j, a.c.periodic, a.c.box, ux, uy, uz);
          const double dd = sqrt(norm2(ux, uy, uz));
          ux /= dd;
          uy /= dd;
          uz /= dd;
        } else {
          const u32 px = a.wh.pix[e0 + q];
          ux = a.pixel_unit[3 * px];
          uy = a.pixel_unit[3 * px + 1];
          uz = a.pixel_unit[3 * px + 2];
        }
        l_ent2[2 * q] = make_double2(ux, uy);
        l_ent2[2 * q + 1] = make_double2(uz, wj);
        l_cb3[q] = b * a.n3;
      } else {
        l_ent[q] = make_uint4(static_cast<u32>(__double_as_longlong(wj)),
                              static_cast<u32>(static_cast<unsigned long long>(__double_as_longlong(wj)) >> 32),
                              b * a.n3, 0u);
      }
    }
    for (u32 t = threadIdx.x; t < nwalk * nw; t += blockDim.x) {
      u32 p;
      const u32 r = range_pick(lo, len, role_walk, t / nw, p);
      l_bits[r * nw + t % nw] = 0;
    }
    __syncthreads();
    // 3. connectivity: walked rows j_r against the hub list by binary search
    const u32 last = l_nb[d - 1];
    for (u32 t = warp; t < nwalk; t += nwarps) {
      u32 p;
      const u32 r = range_pick(lo, len, role_walk, t, p);
      const u32* wnb = win_nb(p);
      const u8* wbin = win_bin(p);
      const u64 base = win_base(p);
      const u32 j = l_nb[r];
      const u64 r0 = a.c.offsets[j] - base, r1 = a.c.offsets[j + 1] - base;
      for (u64 e = r0 + lane; e < r1; e += 32) {
        const u32 k = wnb[e];
        if (k > last) break;
        const u32 pos = lower_bound<u32>(l_nb, r + 1, d, k);
        if (pos < d && l_nb[pos] == k) {
          T[tri_row(r, d) + pos] = static_cast<u8>(wbin[e] + 1);
          atomicOr(l_bits + r * nw + (pos >> 5), 1u << (pos & 31));
        }
      }
    }
    __syncthreads();
    // 5. tetrahedra: connected pairs (a, b), a < b, of the launch's window pairs, through the
    //    per-warp queue
    const double wi = a.c.w[hub];
    auto weight = [&](u32 q) {
      if constexpr (kParity) {
        return l_ent2[2 * q + 1].y;
      } else {
        const uint4 v = l_ent[q];
        return __hiloint2double(static_cast<int>(v.y), static_cast<int>(v.x));
      }
    };
    auto process = [&](u32 pa, u32 pb) {
      const u8* ta = T + tri_row(pa, d);  // read at columns > pa
      const u8* tb = T + tri_row(pb, d);  // read at columns > pb
      const u32* ra = l_bits + pa * nw;
      const u32* rb = l_bits + pb * nw;
      const double wab = wi * weight(pa) * weight(pb);
      const u32 code_ab = static_cast<u32>(l_bin[pa]) * a.n5 - bias +
                          static_cast<u32>(l_bin[pb]) * a.n4 + static_cast<u32>(ta[pb]) * a.n2;
      double cx = 0, cy = 0, cz = 0;
      if constexpr (kParity) {
        const double2 a0 = l_ent2[2 * pa], a1 = l_ent2[2 * pa + 1];
        const double2 b0 = l_ent2[2 * pb], b1 = l_ent2[2 * pb + 1];
        // (ux, uy, uz) = (a0.x, a0.y, a1.x)
        cx = sub(mul(a0.y, b1.x), mul(a1.x, b0.y));
        cy = sub(mul(a1.x, b0.x), mul(a0.x, b1.x));
        cz = sub(mul(a0.x, b0.y), mul(a0.y, b0.x));
      }
      for (u32 q = (pb + 1) >> 5; q < nw; ++q) {
        u32 common = ra[q] & rb[q];
        while (common) {
          const u32 c = q * 32 + (__ffs(common) - 1);
          common &= common - 1;
          double wc;
          u32 cb3;
          double vx = 0, vy = 0, vz = 0;
          if constexpr (kParity) {
            const double2 c0 = l_ent2[2 * c], c1 = l_ent2[2 * c + 1];
            vx = c0.x;
            vy = c0.y;
            vz = c1.x;
            wc = c1.y;
            cb3 = l_cb3[c];
          } else {
            const uint4 v = l_ent[c];
            wc = __hiloint2double(static_cast<int>(v.y), static_cast<int>(v.x));
            cb3 = v.z;
          }
          const u32 code = code_ab + cb3 + static_cast<u32>(ta[c]) * n + static_cast<u32>(tb[c]);
          const u32 pk = a.packed16 ? static_cast<u32>(__ldg(a.packed16 + code)) : __ldg(a.packed + code);
          const u32 row = pk >> 1;
          const double prod = wab * wc;
          if constexpr (kParity) {
            const double v = add(add(mul(cx, vx), mul(cy, vy)), mul(cz, vz));
            // odd sign: relabelling sign x sign(V); |V| < 1e-9 is degenerate
            const bool degenerate = fabs(v) < 1e-9, negative = (v > 0) == ((pk & 1u) != 0);
            if constexpr (kFixed)
              hist.add_parity_fx(row, __double2ll_rn(mul(prod, a.fx_scale)), degenerate, negative);
            else
              hist.add_parity(a.acc, row, prod, degenerate, negative);
          } else {
            if constexpr (kFixed)
              hist.add_fx(row, __double2ll_rn(mul(prod, a.fx_scale)));
            else
              hist.add(a.acc, row, prod);
          }
        }
      }
    };
    u32 qn = 0;
    for (u32 t = warp; t < na; t += nwarps) {
      u32 p;
      const u32 pa = range_pick(lo, len, role_a, t, p);
#pragma unroll
      for (u32 qw = 0; qw < 3; ++qw) {
        if (qw < p || !((a.pairs >> (3 * p + qw)) & 1u)) continue;
        const u32 bs = max(lo[qw], pa + 1), be = lo[qw] + len[qw];
        for (u32 base = bs; base < be; base += 32) {
          const u32 pb = base + lane;
          const bool conn = pb < be && ((l_bits[pa * nw + (pb >> 5)] >> (pb & 31)) & 1u);
          const unsigned m = __ballot_sync(0xffffffffu, conn);
          if (conn) queue[qn + __popc(m & ((1u << lane) - 1))] = (pa << 16) | pb;
          qn += __popc(m);
          __syncwarp();
          if (qn >= 32) {
            const u32 e = queue[qn - 32 + lane];
            __syncwarp();
            qn -= 32;
            process(e >> 16, e & 0xffffu);
            __syncwarp();
          }
        }
      }
    }
    if (lane < qn) {
      const u32 e = queue[lane];
      process(e >> 16, e & 0xffffu);
    }
    __syncwarp();
    __syncthreads();
  }
  __syncthreads();
  hist.flush(a.acc, kParity);
}

// ---------------------------------------------------------------------------------------------
// Reduction of the partial slots, in block order: out[half * rows + row].
__global__ void reduce_kernel(Acc a, bool parity, ull* out_cnt, double* out_sum, double* out_odd,
                              ull* out_deg) {
  const u64 total = 2ull * a.rows;
  for (u64 t = blockIdx.x * static_cast<u64>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<u64>(gridDim.x) * blockDim.x) {
    const u64 half = t / a.rows, row = t % a.rows;
    ull cnt = a.acc_cnt[t];
    double sum = a.acc_sum[t];
    double odd = parity ? a.acc_odd[t] : 0;
    ull deg = parity ? a.acc_deg[t] : 0;
    for (u32 g = 0; g < a.G; ++g) {
      const u64 s = (half * a.G + g) * a.rows + row;
      cnt += a.part_cnt[s];
      sum += a.part_sum[s];
      if (parity) {
        odd += a.part_odd[s];
        deg += a.part_deg[s];
      }
    }
    out_cnt[t] = cnt;
    out_sum[t] = sum;
    if (parity) {
      out_odd[t] = odd;
      out_deg[t] = deg;
    }
  }
}

}  // namespace almagest::kernels::npcf_dev
