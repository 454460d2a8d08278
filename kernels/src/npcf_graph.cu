// NpCF graph construction on the device: cell lists (radix sort by cell), a counting pass, a
// scan for the 64-bit offsets, a filling pass, and a per-hub rank sort that also assigns the bins
// and direction pixels. Equal to the CPU graph: the separation and the edge test use the CPU's
// arithmetic without contraction (npcf_common.cuh), bins come from exact squared-distance
// thresholds computed by the engine from Binning::bin_of, and pixels within rounding of a pixel
// boundary are listed for the engine to recompute with its libm.
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <numbers>
#include <string>
#include <thread>
#include <vector>

#include "cuda_check.cuh"
#include "device_buffer.cuh"
#include "npcf_common.cuh"
#include "npcf_staging.cuh"

namespace almagest::kernels {
namespace {

using u8 = std::uint8_t;
using u16 = std::uint16_t;
using u32 = std::uint32_t;
using u64 = std::uint64_t;
using ull = unsigned long long;

struct Grid {
  double lo[3] = {0, 0, 0};
  double inv[3] = {1, 1, 1};  // cells per unit length
  int nc[3] = {1, 1, 1};
  bool periodic = false;
  double box = 0;
  double rmin2 = 0, rmax2 = 0;
};

struct Pts {
  const double *x, *y, *z;
  u32 n;
};

__device__ __forceinline__ int cell_coord(double v, double lo, double inv, int nc) {
  const double t = (v - lo) * inv;
  int c = t >= 0 ? static_cast<int>(t) : 0;
  return c >= nc ? nc - 1 : c;
}

__global__ void cell_keys_kernel(Pts p, Grid g, u32* keys, u32* idx) {
  for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += gridDim.x * blockDim.x) {
    const int cx = cell_coord(p.x[i], g.lo[0], g.inv[0], g.nc[0]);
    const int cy = cell_coord(p.y[i], g.lo[1], g.inv[1], g.nc[1]);
    const int cz = cell_coord(p.z[i], g.lo[2], g.inv[2], g.nc[2]);
    keys[i] = static_cast<u32>((cz * g.nc[1] + cy) * g.nc[0] + cx);
    idx[i] = i;
  }
}

__global__ void cell_bounds_kernel(const u32* keys, u32 n, u32* start, u32* end) {
  for (u32 q = blockIdx.x * blockDim.x + threadIdx.x; q < n; q += gridDim.x * blockDim.x) {
    const u32 c = keys[q];
    if (q == 0 || keys[q - 1] != c) start[c] = q;
    if (q + 1 == n || keys[q + 1] != c) end[c] = q + 1;
  }
}

/// Neighbour-cell offsets along one axis: {-1, 0, 1} (fewer when a periodic axis has < 3 cells).
__device__ __forceinline__ int axis_offsets(int c, int nc, bool periodic, int* out) {
  int k = 0;
  if (periodic) {
    if (nc >= 3) {
      out[k++] = (c + nc - 1) % nc;
      out[k++] = c;
      out[k++] = (c + 1) % nc;
    } else {
      for (int q = 0; q < nc; ++q) out[k++] = q;
    }
  } else {
    for (int q = c - 1; q <= c + 1; ++q)
      if (q >= 0 && q < nc) out[k++] = q;
  }
  return k;
}

/// Visits every candidate j > i of hub i in the neighbouring cells (lanes of one warp) and calls
/// f(j, dx, dy, dz, d2) for the edges (rmin2 < d2 < rmax2).
template <class F>
__device__ __forceinline__ void visit_edges(const Pts& p, const Grid& g, const u32* sorted_idx,
                                            const u32* cstart, const u32* cend, u32 i, F&& f) {
  using namespace npcf_dev;
  const u32 lane = threadIdx.x & 31;
  const int cx = cell_coord(p.x[i], g.lo[0], g.inv[0], g.nc[0]);
  const int cy = cell_coord(p.y[i], g.lo[1], g.inv[1], g.nc[1]);
  const int cz = cell_coord(p.z[i], g.lo[2], g.inv[2], g.nc[2]);
  int ox[3], oy[3], oz[3];
  const int kx = axis_offsets(cx, g.nc[0], g.periodic, ox);
  const int ky = axis_offsets(cy, g.nc[1], g.periodic, oy);
  const int kz = axis_offsets(cz, g.nc[2], g.periodic, oz);
  for (int a = 0; a < kz; ++a)
    for (int b = 0; b < ky; ++b)
      for (int c = 0; c < kx; ++c) {
        const u32 cell = static_cast<u32>((oz[a] * g.nc[1] + oy[b]) * g.nc[0] + ox[c]);
        const u32 s = cstart[cell], e = cend[cell];
        for (u32 base = s; base < e; base += 32) {  // warp-uniform trip count
          const u32 q = base + lane;
          const u32 j = q < e ? sorted_idx[q] : 0;
          bool edge = false;
          double dx = 0, dy = 0, dz = 0, d2 = 0;
          if (q < e && j > i) {
            delta(p.x, p.y, p.z, i, j, g.periodic, g.box, dx, dy, dz);
            d2 = norm2(dx, dy, dz);
            edge = g.rmin2 < d2 && d2 < g.rmax2;
          }
          f(edge, j, dx, dy, dz, d2);
        }
      }
}

__global__ void count_kernel(Pts p, Grid g, const u32* sorted_idx, const u32* cstart,
                             const u32* cend, u64* deg) {
  const u32 warps = gridDim.x * (blockDim.x >> 5);
  for (u32 q = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); q < p.n; q += warps) {
    const u32 i = sorted_idx[q];
    u32 cnt = 0;
    visit_edges(p, g, sorted_idx, cstart, cend, i,
                [&](bool edge, u32, double, double, double, double) { cnt += edge; });
    for (int o = 16; o > 0; o >>= 1) cnt += __shfl_xor_sync(0xffffffffu, cnt, o);
    if ((threadIdx.x & 31) == 0) deg[i] = cnt;
  }
}

__global__ void fill_kernel(Pts p, Grid g, const u32* sorted_idx, const u32* cstart,
                            const u32* cend, const u64* offsets, u32* tmp) {
  const u32 warps = gridDim.x * (blockDim.x >> 5);
  const u32 lane = threadIdx.x & 31;
  for (u32 q = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); q < p.n; q += warps) {
    const u32 i = sorted_idx[q];
    u64 at = offsets[i];
    visit_edges(p, g, sorted_idx, cstart, cend, i,
                [&](bool edge, u32 j, double, double, double, double) {
                  const unsigned m = __ballot_sync(0xffffffffu, edge);
                  if (edge) tmp[at + __popc(m & ((1u << lane) - 1))] = j;
                  at += __popc(m);
                });
  }
}

struct BinSpec {
  const double* thr = nullptr;  // nbins - 1 ascending squared-distance thresholds
  int nthr = 0;
  bool pixels = false;
  int ntheta = 0, nphi = 0;
  u64* recheck = nullptr;
  u32* nrecheck = nullptr;
  u32 recheck_cap = 0;
};

inline constexpr u32 kSortCap = 512;  // per-warp shared buffer (elements)

/// Per hub: rank sort of the neighbour ids (all distinct), then bin and pixel of each edge.
__global__ void sort_bin_kernel(Pts p, Grid g, const u64* offsets, const u32* tmp, u32* nb_out,
                                u8* bin_out, u16* pix_out, BinSpec bs) {
  using namespace npcf_dev;
  __shared__ u32 buf[8][kSortCap];
  const u32 lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  const u32 warps = gridDim.x * (blockDim.x >> 5);
  const double pi = 3.141592653589793;
  for (u32 i = blockIdx.x * (blockDim.x >> 5) + wid; i < p.n; i += warps) {
    const u64 e0 = offsets[i];
    const u32 d = static_cast<u32>(offsets[i + 1] - e0);
    const bool in_smem = d <= kSortCap;
    const u32* src = in_smem ? buf[wid] : tmp + e0;
    if (in_smem)
      for (u32 e = lane; e < d; e += 32) buf[wid][e] = tmp[e0 + e];
    __syncwarp();
    for (u32 e = lane; e < d; e += 32) {
      const u32 v = src[e];
      u32 rank = 0;
      for (u32 f = 0; f < d; ++f) rank += src[f] < v;
      const u64 out = e0 + rank;
      nb_out[out] = v;
      double dx, dy, dz;
      delta(p.x, p.y, p.z, i, v, g.periodic, g.box, dx, dy, dz);
      const double d2 = norm2(dx, dy, dz);
      // bin = number of thresholds <= d2
      int lo = 0, hi = bs.nthr;
      while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (bs.thr[mid] <= d2)
          lo = mid + 1;
        else
          hi = mid;
      }
      bin_out[out] = static_cast<u8>(lo);
      if (bs.pixels) {
        const double dd = sqrt(d2);
        double ct = dd > 0 ? dz / dd : 1.0;
        ct = fmin(1.0, fmax(-1.0, ct));
        const double tt = acos(ct) / pi * bs.ntheta;
        const double tp = (atan2(dy, dx) + pi) / (2 * pi) * bs.nphi;
        int it = static_cast<int>(floor(tt)), ip = static_cast<int>(floor(tp));
        it = min(max(it, 0), bs.ntheta - 1);
        ip = min(max(ip, 0), bs.nphi - 1);
        pix_out[out] = static_cast<u16>(it * bs.nphi + ip);
        if (fabs(tt - rint(tt)) < 1e-7 || fabs(tp - rint(tp)) < 1e-7) {
          const u32 k = atomicAdd(bs.nrecheck, 1u);
          if (k < bs.recheck_cap) bs.recheck[k] = out;
        }
      }
    }
    __syncwarp();
  }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

NpcfGraphHost npcf_build_graph(const NpcfPointsView& pv, const NpcfGraphSpec& spec,
                               const NpcfOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  if (pv.size == 0) throw DeviceError("graph build on the GPU: empty point set");
  if (pv.size > 0x7FFFFFFFull) throw DeviceError("graph build on the GPU: more than 2^31 - 1 points");
  if (spec.nbins < 1 || spec.nbins > 255) throw DeviceError("graph build on the GPU: nbins out of 1..255");
  if (!(spec.rmax2 > spec.rmin2)) throw DeviceError("graph build on the GPU: rmax must exceed rmin");
  const u32 n = static_cast<u32>(pv.size);
  const int device = opt.devices.empty() ? 0 : opt.devices.front();
  DeviceGuard guard(device);
  Stream s;

  // Cell grid: cells at least rmax (1 + 1e-9) wide, at most ~4 per point.
  Grid g;
  g.periodic = spec.periodic;
  g.box = spec.box;
  g.rmin2 = spec.rmin2;
  g.rmax2 = spec.rmax2;
  const double rmax = std::sqrt(spec.rmax2) * (1.0 + 1e-9);
  double side[3];
  const double* coord[3] = {pv.x, pv.y, pv.z};
  for (int a = 0; a < 3; ++a) {
    if (spec.periodic) {
      g.lo[a] = 0;
      side[a] = spec.box;
    } else {
      double lo = coord[a][0], hi = coord[a][0];
      for (u32 i = 1; i < n; ++i) {
        lo = std::min(lo, coord[a][i]);
        hi = std::max(hi, coord[a][i]);
      }
      g.lo[a] = lo;
      side[a] = std::max(hi - lo, 1e-300);
    }
  }
  const double cap = std::min(1073741824.0, std::max(64.0, 4.0 * n));
  double width = rmax;
  for (;;) {
    double total = 1;
    for (int a = 0; a < 3; ++a)
      total *= std::max(1.0, std::floor(side[a] / width));
    if (total <= cap) break;
    width *= std::cbrt(total / cap) * 1.0001;
  }
  for (int a = 0; a < 3; ++a) {
    g.nc[a] = static_cast<int>(std::max(1.0, std::floor(side[a] / width)));
    g.inv[a] = g.nc[a] / side[a];
  }
  const u64 ncell = static_cast<u64>(g.nc[0]) * g.nc[1] * g.nc[2];

  DeviceBuffer<double> x(n), y(n), z(n), thr(std::max(1, spec.nbins - 1));
  x.upload(pv.x, n, s);
  y.upload(pv.y, n, s);
  z.upload(pv.z, n, s);
  if (spec.nbins > 1) thr.upload(spec.bin_threshold, spec.nbins - 1, s);
  CUDA_CHECK(cudaStreamSynchronize(s));

  cudaEvent_t ev0, ev1;
  CUDA_CHECK(cudaEventCreate(&ev0));
  CUDA_CHECK(cudaEventCreate(&ev1));
  struct EvGuard {
    cudaEvent_t a, b;
    ~EvGuard() {
      cudaEventDestroy(a);
      cudaEventDestroy(b);
    }
  } evg{ev0, ev1};
  CUDA_CHECK(cudaEventRecord(ev0, s));

  const Pts p{x.data(), y.data(), z.data(), n};
  DeviceBuffer<u32> keys(n), keys_sorted(n), idx(n), idx_sorted(n), cstart(ncell), cend(ncell);
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<u64>((n + threads - 1) / threads, 65535));
  cell_keys_kernel<<<blocks, threads, 0, s>>>(p, g, keys.data(), idx.data());
  CUDA_CHECK_LAUNCH();
  int end_bit = 1;
  while (end_bit < 32 && (1ull << end_bit) < ncell) ++end_bit;
  std::size_t temp_bytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys.data(), keys_sorted.data(),
                                             idx.data(), idx_sorted.data(), static_cast<int>(n), 0,
                                             end_bit, cudaStream_t(s)));
  DeviceBuffer<unsigned char> temp(std::max<std::size_t>(temp_bytes, 1));
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), temp_bytes, keys.data(), keys_sorted.data(),
                                             idx.data(), idx_sorted.data(), static_cast<int>(n), 0,
                                             end_bit, cudaStream_t(s)));
  cstart.zero(s);
  cend.zero(s);
  cell_bounds_kernel<<<blocks, threads, 0, s>>>(keys_sorted.data(), n, cstart.data(), cend.data());
  CUDA_CHECK_LAUNCH();

  DeviceBuffer<u64> deg(static_cast<std::size_t>(n) + 1), offsets(static_cast<std::size_t>(n) + 1);
  deg.zero(s);
  const int wblocks = static_cast<int>(std::min<u64>((n + 7) / 8, 1u << 20));  // 8 warps per block
  count_kernel<<<wblocks, 256, 0, s>>>(p, g, idx_sorted.data(), cstart.data(), cend.data(), deg.data());
  CUDA_CHECK_LAUNCH();
  std::size_t scan_bytes = 0;
  CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, deg.data(), offsets.data(),
                                           static_cast<int>(n) + 1, cudaStream_t(s)));
  DeviceBuffer<unsigned char> scan_temp(std::max<std::size_t>(scan_bytes, 1));
  CUDA_CHECK(cub::DeviceScan::ExclusiveSum(scan_temp.data(), scan_bytes, deg.data(), offsets.data(),
                                           static_cast<int>(n) + 1, cudaStream_t(s)));
  u64 E = 0;
  offsets.download(&E, 1, s, n);
  CUDA_CHECK(cudaStreamSynchronize(s));

  // The host arrays are made while the device fills and sorts: their pages populated by several
  // threads, then value-initialised (a serial memset that now takes no page faults), so that the
  // copies below run at the staging rate (npcf_staging.cuh).
  NpcfGraphHost out;
  std::exception_ptr prep_error;
  std::thread prep([&] {
    try {
      auto make = [](auto& v, u64 count) {
        v.reserve(count);
        npcf_staging::prefault_host(v.data(), count * sizeof(v[0]));
        v.resize(count);
      };
      make(out.offsets, static_cast<u64>(n) + 1);
      make(out.neighbour, E);
      make(out.bin, E);
      if (spec.pixels) make(out.pixel, E);
    } catch (...) {
      prep_error = std::current_exception();
    }
  });
  struct Join {
    std::thread& t;
    ~Join() {
      if (t.joinable()) t.join();
    }
  } join{prep};

  DeviceBuffer<u32> tmp(std::max<u64>(E, 1)), nb(std::max<u64>(E, 1));
  DeviceBuffer<u8> bins(std::max<u64>(E, 1));
  DeviceBuffer<u16> pix(spec.pixels ? std::max<u64>(E, 1) : 0);
  const u32 recheck_cap = static_cast<u32>(std::min<u64>(E / 64 + 4096, 1u << 24));
  DeviceBuffer<u64> recheck(spec.pixels ? recheck_cap : 0);
  DeviceBuffer<u32> nrecheck(1);
  nrecheck.zero(s);
  fill_kernel<<<wblocks, 256, 0, s>>>(p, g, idx_sorted.data(), cstart.data(), cend.data(),
                                      offsets.data(), tmp.data());
  CUDA_CHECK_LAUNCH();
  BinSpec bs;
  bs.thr = thr.data();
  bs.nthr = spec.nbins - 1;
  bs.pixels = spec.pixels;
  bs.ntheta = spec.ntheta;
  bs.nphi = spec.nphi;
  bs.recheck = recheck.data();
  bs.nrecheck = nrecheck.data();
  bs.recheck_cap = recheck_cap;
  sort_bin_kernel<<<wblocks, 256, 0, s>>>(p, g, offsets.data(), tmp.data(), nb.data(), bins.data(),
                                          pix.data(), bs);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaEventRecord(ev1, s));
  CUDA_CHECK(cudaEventSynchronize(ev1));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, ev0, ev1));

  out.build_s = ms * 1e-3;
  prep.join();
  if (prep_error) std::rethrow_exception(prep_error);
  npcf_staging::download(out.offsets.data(), offsets.data(), (static_cast<std::size_t>(n) + 1) * sizeof(u64), s);
  npcf_staging::download(out.neighbour.data(), nb.data(), E * sizeof(u32), s);
  npcf_staging::download(out.bin.data(), bins.data(), E * sizeof(u8), s);
  if (spec.pixels) {
    npcf_staging::download(out.pixel.data(), pix.data(), E * sizeof(u16), s);
    u32 nr = 0;
    nrecheck.download(&nr, 1, s);
    CUDA_CHECK(cudaStreamSynchronize(s));
    if (nr > recheck_cap) {
      out.recheck_all = true;
    } else {
      out.recheck.resize(nr);
      recheck.download(out.recheck.data(), nr, s);
    }
  }
  CUDA_CHECK(cudaStreamSynchronize(s));
  std::sort(out.recheck.begin(), out.recheck.end());
  out.total_s = seconds_since(t0);
  return out;
}

}  // namespace almagest::kernels
