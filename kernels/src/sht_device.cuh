#pragma once
// Device helpers shared by the SHT's Legendre kernels (sht_kernels.cu: synthesis and the FFT-stage
// glue; sht_adjoint.cu: adjoints): launch constants, the start and the steps of the recursion
// chains with their scale tracking, warp votes, cp.async staging, and the environment overrides
// of the launch shapes.
#include <cstdlib>
#include <type_traits>

#include "sht_kernels.cuh"

namespace almagest::kernels::sht::dev {

inline constexpr int kThreads = 128;

__device__ __forceinline__ RingPair pair_geometry(int nside, int p) {
  const RingInfo g = ring_info(nside, p);
  return {g.z, g.omz, 1.0 + g.z, g.sth};
}

/// One step of the two spin-2 chains mu_l = (A z -+ B) mu_{l-1} - mu_{l-2} (two FMAs each).
__device__ __forceinline__ void step2(double al, double be, double z, double& v0, double& v1,
                                      double& w0, double& w1) {
  const double vn = fma(fma(al, z, -be), v1, -v0);
  const double wn = fma(fma(al, z, be), w1, -w0);
  v0 = v1;
  v1 = vn;
  w0 = w1;
  w1 = wn;
}

/// Scale tracking, checked every few steps (growth between checks stays far below 2^700).
__device__ __forceinline__ void rescale2(int& e, double& v0, double& v1, double& w0, double& w1) {
  if (e < 0 && fmax(fabs(v1), fabs(w1)) > kBig) {
    v1 *= kDown;
    v0 *= kDown;
    w1 *= kDown;
    w0 *= kDown;
    ++e;
  }
}

/// Starts the two spin-2 chains of ring pair p (-1: none) for mode m: z, the first values and
/// the scale. Returns whether the chains' output counts; chains that do not (no pair, or m above
/// the pair's mlim) run on zeros at scale 0, so that they never keep their warp off the fast path.
__device__ __forceinline__ bool start_chain2(const LegendreArgs& a, int m, double nu, int p,
                                             double& z, double& v0, double& v1, double& w0,
                                             double& w1, int& e) {
  const bool on = p >= 0 && m <= a.mlim[p];
  const RingPair g = pair_geometry(a.nside, p >= 0 ? p : 0);
  z = g.z;
  v0 = w0 = 0.0;
  start_spin2(m, nu, g, v1, w1, e);
  if (!on) {
    v1 = w1 = 0.0;
    e = 0;
  }
  return on;
}

/// True when every chain of every lane of the warp is at scale 0 (its values count); once true
/// it stays true (scales only grow towards 0). Warp-uniform.
template <int P>
__device__ __forceinline__ bool warp_all_scaled_in(const int (&e)[P]) {
  bool all = true;
#pragma unroll
  for (int k = 0; k < P; ++k) all = all && e[k] == 0;
  return __all_sync(0xffffffffu, all);
}

/// Magnitude below which a spin-0 adjoint chain at scale 0 counts as dead for a reduction chunk
/// (chain_dead), as the high word of |v|: biased exponent below 1023 - 150, |v| < 2^-150.
/// Scanned on the host over the modes and ring pairs of nside 256, 1024 and 2048 (the normalized
/// recursion, every 7th pair): a value below 2^-150 at a chunk's start stays below 2^-106 over
/// the chunk's 16 degrees (the largest growth over 16 degrees after any crossing is 2^44), so
/// what a skipped chunk drops is under 1e-32 of a unit-normalized Legendre value.
inline constexpr int kDeadHi = (1023 - 150) << 20;

/// True when an odd chain is dead for the coming chunk: underflowed (e < 0), or at scale 0 with
/// both values below 2^-150 (an idle chain runs on zeros: dead).
__device__ __forceinline__ bool chain_dead(int e, double v0, double v1) {
  return e < 0 || ((__double2hiint(v0) & 0x7fffffff) < kDeadHi &&
                   (__double2hiint(v1) & 0x7fffffff) < kDeadHi);
}

/// True when no chain of the warp counts: each is underflowed (e < 0) or idle. Warp-uniform.
template <int P>
__device__ __forceinline__ bool warp_none_counts(const int (&e)[P], const bool (&on)[P]) {
  bool none = true;
#pragma unroll
  for (int k = 0; k < P; ++k) none = none && (e[k] < 0 || !on[k]);
  return __all_sync(0xffffffffu, none);
}

/// 16-byte global -> shared copy that bypasses registers (completes at cp_async_wait).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
/// 8-byte global -> shared copy through L1 (completes at cp_async_wait).
__device__ __forceinline__ void cp_async8(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}

/// The odd chain's start computed (start_odd_chain).
__device__ __forceinline__ bool compute_odd_start(const LegendreArgs& a, int m, double nu, int p,
                                                  double& x, double& x2, double& v0, double& v1,
                                                  int& e) {
  const bool on = p >= 0 && m <= a.mlim[p];
  const RingPair g = pair_geometry(a.nside, p >= 0 ? p : 0);
  x = g.z;
  x2 = g.z * g.z;
  odd_start(m, nu, g, v0, v1, e);
  if (!on) {
    v0 = 0.0;
    e = 0;
  }
  return on;
}

/// Starts the odd chain of ring pair p (-1: none) for mode m: x, x^2, (mu_{-2}, mu_{-1}) =
/// (-mu_0, 0) and the scale. Returns whether its output counts (an idle chain runs on zeros).
/// TAB: read from the plan's start table at index t (active index minus first_active[m]), else
/// computed (compute_odd_start). The computation (a power by squaring, square roots and
/// divisions: several hundred dependent FP64 cycles per chain) held ~15% of the spin-0
/// synthesis' warp time at nside 1024 (ncu, session 6); kernels that may compute are separate
/// instances, as the fallback's code costs the table instances registers.
template <bool TAB>
__device__ __forceinline__ bool start_odd_chain(const Spin0Args& a, int m, double nu,
                                                long long t, int p, double& x, double& x2,
                                                double& v0, double& v1, int& e) {
  if constexpr (!TAB) {
    return compute_odd_start(a, m, nu, p, x, x2, v0, v1, e);
  } else {
    const bool on = p >= 0 && m <= a.mlim[p];
    x = a.pair_z[p >= 0 ? p : 0];
    x2 = x * x;
    v0 = on ? a.start_v[a.soff[m] + t] : 0.0;
    e = on ? a.start_e[a.soff[m] + t] : 0;
    v1 = 0.0;
    return on;
  }
}

/// One odd-chain step (sht::odd_step) with the step's (A, B) as the kernels stage them.
__device__ __forceinline__ void odd_step(double2 ab, double x2, double& v0, double& v1) {
  sht::odd_step(ab.x, ab.y, x2, v0, v1);
}

/// The tiles of a mode's n active ring pairs in tiles of `cap` pairs (kThreads P for P pairs per
/// thread), the last one holding the remainder: tile t covers [t cap, min((t + 1) cap, n)). The
/// kernels run ceil(tile / kThreads) chains per thread (dispatch_chains), so that fewer than
/// kThreads chain slots per mode idle. Measured on the H200 (docs/benchmarks.md): equal-size
/// tiles idle more (1-11% of the chains against 2-6% with the remainder tile); full tiles alone
/// idled 7-21%.
__device__ __forceinline__ int mode_tile_count(int n, int cap) {
  return n > 0 ? (n + cap - 1) / cap : 0;
}

/// Chains per thread of a tile of n ring pairs (n <= kThreads P).
__device__ __forceinline__ int tile_chains(int n) { return (n + kThreads - 1) / kThreads; }

/// Active index of chain k (of kc per thread) of this thread in the tile that starts at `tile`:
/// each warp takes 32 kc consecutive pairs, so that a warp's chains lie at nearby colatitudes and
/// agree more often on their scale state (a warp takes the fast path of a chunk only when every
/// chain of it is scaled in). With chains 128 pairs apart instead, 21% / 36% of the warp steps
/// at nside 512 had a chain still underflowed for four / eight chains per thread; 13% / 24% so
/// (host count over all modes and ring pairs, session 7).
__device__ __forceinline__ int chain_index(int tile, int kc, int k) {
  return tile + ((static_cast<int>(threadIdx.x) >> 5) * kc + k) * 32 + (threadIdx.x & 31);
}

/// Calls f(std::integral_constant<int, K>) with K = k (1 <= k <= P): the chains per thread of
/// a tile as a compile-time count, so that idle chain slots cost no instructions. Shapes of
/// fewer than four pairs per thread (small nside, batched columns: a tile or two per mode) keep
/// K = P, which leaves their register allocation as it was.
template <int P, class F>
__device__ __forceinline__ void dispatch_chains(int k, F&& f) {
  if constexpr (P >= 4) {
    if (k < P) {
      dispatch_chains<P - 1>(k, f);
      return;
    }
  }
  f(std::integral_constant<int, P>{});
}

/// Ring pairs per thread of a kernel shape from the environment variable `name` (tuning on other
/// cards): 2, 4 or 8; 0 when unset or another value.
inline int pairs_override(const char* name) {
  const char* e = std::getenv(name);
  const int p = e ? std::atoi(e) : 0;
  return (p == 2 || p == 4 || p == 8) ? p : 0;
}

}  // namespace almagest::kernels::sht::dev
