// NpCF CUDA backend: orchestration of the counting kernels (windows, tiles, partitions, devices).
//
// Windows: rows [win_row[k], win_row[k+1]) with about E/W edges each; up to three are resident in
// slots (hub window, search windows). Partitions: contiguous hub ranges balanced by the expected
// work, spread over the devices round robin; each partition's sums are reduced on its device and
// the partitions are merged on the host in partition order.
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cuda_check.cuh"
#include "device_buffer.cuh"
#include "npcf_common.cuh"
#include "npcf_kernels.cuh"
#include "npcf_staging.cuh"

namespace almagest::kernels {
namespace {

using namespace npcf_dev;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

enum class Kind { Two, Three, Four };

/// Everything a device needs to count one statistic.
struct Job {
  Kind kind = Kind::Two;
  NpcfGraphView g;
  NpcfPointsView p;
  u32 rows = 0;
  int nbins = 0;
  const u32* tri_offset = nullptr;
  bool equilateral = false;
  // 3pCF dense-neighbourhood kernel (count3_dense_kernel): exact thresholds and edge test of the
  // graph, and the smallest hub degree that uses it.
  const double* tri_thr = nullptr;
  double rmin2 = 0, rmax2 = 0;
  u32 dense_min = 0;
  bool dense_possible() const {
    return kind == Kind::Three && !equilateral && nmu == 1 && tri_thr != nullptr && nbins >= 1 &&
           nbins <= kDenseMaxBins && dense_min != 0xFFFFFFFFu;
  }
  const u32* packed = nullptr;
  u64 packed_size = 0;
  bool parity = false;
  NpcfParity par;
  int nmu = 1;            // 2pCF/3pCF mu bins (rows already multiplied by nmu)
  bool legendre = false;  // 2pCF: 2 x nbins Legendre sum rows after the mu rows
  /// Coordinates on the device: exact parity spokes, or mu from positions.
  bool needs_xyz() const { return (parity && par.exact) || nmu > 1 || legendre; }
  bool mu2() const { return kind == Kind::Two && (nmu > 1 || legendre); }
  std::vector<u64> win_row;   // W + 1 row boundaries
  std::vector<u64> part_row;  // P + 1 row boundaries
  std::vector<u64> seg_row;   // union of the above and ndata: segments are pure windows/partitions
  int slots = 1;
  u64 max_window_edges = 0;
  const NpcfOptions* opt = nullptr;
  std::mutex* progress_mu = nullptr;
  u64* tiles_done = nullptr;
  u64 tiles_total = 0;
};

/// Sums of one partition: [half * rows + row].
struct PartSums {
  std::vector<ull> cnt, deg;
  std::vector<double> sum, odd;
};

u32 degree(const NpcfGraphView& g, u64 i) {
  return static_cast<u32>(g.offsets[i + 1] - g.offsets[i]);
}

/// Row boundaries splitting [0, n) into k ranges of about equal cost.
std::vector<u64> balanced_rows(u64 n, int k, const std::vector<double>& prefix_cost) {
  std::vector<u64> b{0};
  const double total = prefix_cost.back();
  for (int q = 1; q < k; ++q) {
    const double target = total * q / k;
    u64 r = static_cast<u64>(std::lower_bound(prefix_cost.begin(), prefix_cost.end(), target) -
                             prefix_cost.begin());
    r = std::clamp<u64>(r, b.back(), n);
    b.push_back(r);
  }
  b.push_back(n);
  return b;
}

/// One launch class of the 4pCF: neighbourhood capacity, threads, shared bytes, global scratch.
struct Class4 {
  u32 dcap = 0;
  int threads = 256;
  std::size_t smem = 0;
  bool scratch = false;
  int grid = 0;
};

/// Graph and points of an NpcfDeviceGraph on one device: all rows in one window. The mutex
/// serialises the calls that use it.
struct ResidentGraph {
  std::mutex mu;
  u64 n = 0, edges = 0;
  DeviceBuffer<double> w, x, y, z;
  DeviceBuffer<u64> offsets;
  DeviceBuffer<u32> nb;
  DeviceBuffer<u8> bin;
  DeviceBuffer<u16> pix;
  DeviceBuffer<Pt4> pts;  // (x, y, z, w): the dense 3pCF kernel
  bool have_graph = false, have_xyz = false, have_pix = false, have_pts = false;
  u64 bytes() const {
    return w.bytes() + offsets.bytes() + nb.bytes() + bin.bytes() + pix.bytes() + x.bytes() +
           y.bytes() + z.bytes() + pts.bytes();
  }
};

/// The module's NpcfDeviceGraph: one ResidentGraph per device, made on a call's first use of the
/// device and freed (on its device) when the owner destroys the object.
class DeviceGraphImpl final : public NpcfDeviceGraph {
public:
  explicit DeviceGraphImpl(std::vector<int> devices) : devices_(std::move(devices)) {}
  ~DeviceGraphImpl() override {
    for (auto& [device, entry] : by_device_) {
      try {
        DeviceGuard g(device);
        entry.reset();
      } catch (...) {
        // freeing device memory at teardown: nothing useful to report
      }
    }
  }
  const std::vector<int>& devices() const noexcept override { return devices_; }
  std::uint64_t device_bytes() const override {
    u64 b = 0;
    for (ResidentGraph* e : entries()) {
      std::lock_guard<std::mutex> el(e->mu);
      b += e->bytes();
    }
    return b;
  }
  /// The entry of `device`, made on first use (entries live as long as the object).
  ResidentGraph& on(int device) {
    if (!devices_.empty() && std::find(devices_.begin(), devices_.end(), device) == devices_.end())
      throw DeviceError("NpCF on the GPU: device graph used on device " + std::to_string(device) +
                        ", which it was not made for");
    std::lock_guard<std::mutex> lock(mu_);
    auto& entry = by_device_[device];
    if (!entry) entry = std::make_unique<ResidentGraph>();
    return *entry;
  }
  /// True when `device` holds the whole graph (a later call then needs no window split).
  bool holds(int device) const {
    ResidentGraph* e = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = by_device_.find(device);
      if (it == by_device_.end()) return false;
      e = it->second.get();
    }
    std::lock_guard<std::mutex> el(e->mu);  // never while holding mu_: calls hold e->mu throughout
    return e->have_graph;
  }

private:
  std::vector<int> devices_;
  mutable std::mutex mu_;
  std::map<int, std::unique_ptr<ResidentGraph>> by_device_;

  std::vector<ResidentGraph*> entries() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<ResidentGraph*> v;
    for (const auto& [device, entry] : by_device_) v.push_back(entry.get());
    return v;
  }
};

DeviceGraphImpl* device_graph_of(const NpcfOptions& opt) {
  if (!opt.device_graph) return nullptr;
  auto* g = dynamic_cast<DeviceGraphImpl*>(opt.device_graph);
  if (!g) throw DeviceError("NpCF on the GPU: the device graph was not made by this module");
  return g;
}

class DeviceRunner {
public:
  DeviceRunner(const Job& job, int device) : job_(job), device_(device) {}

  std::vector<PartSums> run(const std::vector<int>& partitions, NpcfRunInfo& info) {
    DeviceGuard guard(device_);
    Stream stream;
    s_ = stream;
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
    info.device_name = prop.name;
    sms_ = prop.multiProcessorCount;
    smem_optin_ = prop.sharedMemPerBlockOptin;
    const auto t_up = Clock::now();
    setup();
    stream.sync();
    info.upload_s += since(t_up);
    std::vector<PartSums> out;
    for (int part : partitions) out.push_back(run_partition(part, info));
    info.device_bytes = std::max<u64>(info.device_bytes, device_bytes_);
    return out;
  }

private:
  template <class T>
  void alloc(DeviceBuffer<T>& b, std::size_t n) {
    b.allocate(n);
    device_bytes_ += b.bytes();
  }

  /// All rows in one window and a device graph: the graph and points live in the device graph's
  /// entry for this device (uploaded by the first call with it, reused by the next ones).
  void setup_resident(DeviceGraphImpl& dg) {
    const Job& J = job_;
    const u64 n = J.p.size, edges = J.g.num_edges;
    res_ = &dg.on(device_);
    res_lock_ = std::unique_lock<std::mutex>(res_->mu);
    ResidentGraph& R = *res_;
    if (R.have_graph && (R.n != n || R.edges != edges))
      throw DeviceError("NpCF on the GPU: device graph used with another graph");
    if (!R.have_graph) {
      R.w.allocate(n);
      R.w.upload(J.p.w, n, s_);
      R.offsets.allocate(n + 1);
      R.offsets.upload(J.g.offsets, n + 1, s_);
      R.nb.allocate(std::max<u64>(1, edges));
      R.bin.allocate(std::max<u64>(1, edges));
      npcf_staging::upload(R.nb.data(), J.g.neighbour, edges * sizeof(u32), s_);
      npcf_staging::upload(R.bin.data(), J.g.bin, edges * sizeof(u8), s_);
      R.n = n;
      R.edges = edges;
      R.have_graph = true;
    }
    if (J.needs_xyz() && !R.have_xyz) {
      R.x.allocate(n);
      R.y.allocate(n);
      R.z.allocate(n);
      R.x.upload(J.p.x, n, s_);
      R.y.upload(J.p.y, n, s_);
      R.z.upload(J.p.z, n, s_);
      R.have_xyz = true;
    }
    if (J.parity && !J.par.exact && !R.have_pix) {
      R.pix.allocate(std::max<u64>(1, edges));
      npcf_staging::upload(R.pix.data(), J.g.pixel, edges * sizeof(u16), s_);
      R.have_pix = true;
    }
    if (dense_ && !R.have_pts) {
      upload_pts(R.pts);
      R.have_pts = true;
    }
    device_bytes_ += R.bytes();
    slot_win_.assign(1, 0);  // window 0 (every row) is in "slot" 0 for good
    slot_used_.assign(1, 0);
  }

  /// (x, y, z, w) of every point, packed for the dense 3pCF kernel.
  void upload_pts(DeviceBuffer<Pt4>& b) {
    const Job& J = job_;
    const u64 n = J.p.size;
    std::vector<Pt4> host(n);
    for (u64 i = 0; i < n; ++i) host[i] = Pt4{J.p.x[i], J.p.y[i], J.p.z[i], J.p.w[i]};
    b.allocate(n);
    b.upload(host.data(), n, s_);
    CUDA_CHECK(cudaStreamSynchronize(s_));  // `host` leaves scope
  }

  /// The dense 3pCF path: used when the job allows it and some hub reaches dense_min_; its
  /// thresholds, the lookup table on the high word of d2 and the error flag.
  void setup_dense() {
    const Job& J = job_;
    dense_ = false;
    if (!J.dense_possible()) return;
    dense_min_ = std::max<u32>(2, J.dense_min == 0 ? 1024 : J.dense_min);
    u32 maxdeg = 0;
    for (u64 i = 0; i < J.p.size; ++i) maxdeg = std::max(maxdeg, degree(J.g, i));
    if (maxdeg < dense_min_) return;
    dense_ = true;
    dense_maxdeg_ = maxdeg;
    // Out of core (several windows) with the automatic threshold every hub goes through the dense
    // kernel: it needs only the hub's own window, so no graph-walk tiles (h, s > h) and their
    // window uploads remain (a hub near the box edge has few neighbours but a far last one).
    if (J.dense_min == 0 && J.win_row.size() > 2) dense_min_ = 2;
    const int nthr = J.nbins - 1;
    auto hi32 = [](double v) {
      u64 b;
      std::memcpy(&b, &v, sizeof b);
      return static_cast<u32>(b >> 32);
    };
    lut_base_ = hi32(J.rmin2);
    const u32 span = hi32(J.rmax2) - lut_base_;
    lut_shift_ = 0;
    while ((span >> lut_shift_) + 1 > kDenseLutMax) ++lut_shift_;
    lut_size_ = (span >> lut_shift_) + 1;
    std::vector<u8> lut(lut_size_);
    for (u32 c = 0; c < lut_size_; ++c) {
      const u64 bits = static_cast<u64>(lut_base_ + (c << lut_shift_)) << 32;
      double low;
      std::memcpy(&low, &bits, sizeof low);
      u32 b = 0;
      while (static_cast<int>(b) < nthr && J.tri_thr[b] <= low) ++b;
      lut[c] = static_cast<u8>(b);
    }
    alloc(dense_lut_, lut_size_);
    dense_lut_.upload(lut.data(), lut_size_, s_);
    alloc(dense_thr_, static_cast<std::size_t>(std::max(1, nthr)));
    if (nthr > 0) dense_thr_.upload(J.tri_thr, static_cast<std::size_t>(nthr), s_);
    alloc(dense_err_, 1);
    dense_err_.zero(s_);
    CUDA_CHECK(cudaStreamSynchronize(s_));  // `lut` leaves scope
  }

  void setup() {
    const Job& J = job_;
    const u64 n = J.p.size;
    const bool pix = J.parity && !J.par.exact;
    setup_dense();
    DeviceGraphImpl* dg = device_graph_of(*J.opt);
    if (dg && J.win_row.size() == 2) {
      setup_resident(*dg);
    } else {
      if (dense_) {
        upload_pts(pts_);
        device_bytes_ += pts_.bytes();
      }
      alloc(w_, n);
      w_.upload(J.p.w, n, s_);
      if (J.needs_xyz()) {
        alloc(x_, n);
        alloc(y_, n);
        alloc(z_, n);
        x_.upload(J.p.x, n, s_);
        y_.upload(J.p.y, n, s_);
        z_.upload(J.p.z, n, s_);
      }
      alloc(offsets_, n + 1);
      offsets_.upload(J.g.offsets, n + 1, s_);
      slot_nb_.resize(J.slots);
      slot_bin_.resize(J.slots);
      slot_pix_.resize(J.slots);
      slot_win_.assign(J.slots, -1);
      slot_used_.assign(J.slots, 0);
      const u64 cap = std::max<u64>(1, J.max_window_edges);
      for (int s = 0; s < J.slots; ++s) {
        alloc(slot_nb_[s], cap);
        alloc(slot_bin_[s], cap);
        if (pix) alloc(slot_pix_[s], cap);
      }
    }
    if (J.kind == Kind::Three && !J.equilateral) {
      alloc(tri_, static_cast<std::size_t>(J.nbins) * J.nbins);
      tri_.upload(J.tri_offset, tri_.size(), s_);
    }
    if (J.kind == Kind::Four) {
      if (2ull * J.rows + 1 < 65536) {  // compact copy: the lookups stay in L1
        std::vector<u16> compact(J.packed_size);
        for (u64 k = 0; k < J.packed_size; ++k) compact[k] = static_cast<u16>(J.packed[k]);
        alloc(packed16_, J.packed_size);
        packed16_.upload(compact.data(), J.packed_size, s_);
        CUDA_CHECK(cudaStreamSynchronize(s_));  // `compact` leaves scope
      } else {
        alloc(packed_, J.packed_size);
        packed_.upload(J.packed, J.packed_size, s_);
      }
      if (pix) {
        alloc(pixel_unit_, 3ull * J.par.npixels);
        pixel_unit_.upload(J.par.pixel_unit, pixel_unit_.size(), s_);
      }
    }
    // 4pCF: fixed-point block histograms (native 32-bit shared atomics) unless asked otherwise or
    // the scale 2^k cannot be represented; the histogram must fit 48 KB of shared memory.
    fixed_ = false;
    if (J.kind == Kind::Four && J.opt->accumulate != 1) {
      double maxw = 0;
      for (u64 i = 0; i < n; ++i) maxw = std::max(maxw, std::fabs(J.p.w[i]));
      // 2^k * max|w|^4 <= 2^59: |x| < 2^60 per product, < 2^92 per flush (< 2^32 products)
      const int k = maxw > 0 && std::isfinite(maxw) ? 55 - 4 * std::ilogb(maxw) : 0;
      if (k > -900 && k < 900 && hist_bytes(J.rows, J.parity, true) <= 48 * 1024) {
        fixed_ = true;
        fx_scale_ = std::ldexp(1.0, k);
        fx_inv_ = std::ldexp(1.0, -k);
      }
    }
    shared_hist_ = J.kind == Kind::Two || hist_bytes(J.rows, J.parity, fixed_) <= 48 * 1024;
    plan_launches();
    // Accumulators (global mode and the reduce target), partial slots (shared mode).
    const u64 R2 = 2ull * J.rows;
    alloc(acc_cnt_, R2);
    alloc(acc_sum_, R2);
    alloc(out_cnt_, R2);
    alloc(out_sum_, R2);
    if (J.parity) {
      alloc(acc_odd_, R2);
      alloc(acc_deg_, R2);
      alloc(out_odd_, R2);
      alloc(out_deg_, R2);
    }
    if (shared_hist_) {
      const u64 slots = R2 * static_cast<u64>(G_);
      alloc(part_cnt_, slots);
      alloc(part_sum_, slots);
      if (J.parity) {
        alloc(part_odd_, slots);
        alloc(part_deg_, slots);
      }
    }
    alloc(counters_, 64);
    if (dense_) alloc(dense_scratch_, static_cast<std::size_t>(dense_maxdeg_) * gridD_);
    // 3pCF: per hub window, the last search window a graph-walk hub (not a dense one) needs
    // (the window of its last neighbour); without the dense path every window is searched.
    const int W = static_cast<int>(J.win_row.size()) - 1;
    last_search_.assign(static_cast<std::size_t>(std::max(W, 1)), W - 1);
    if (dense_ && W > 1) {
      for (int h = 0; h < W; ++h) {
        int last = h;
        for (u64 i = J.win_row[h]; i < J.win_row[h + 1]; ++i) {
          const u32 d = degree(J.g, i);
          if (d < 2 || d >= dense_min_) continue;
          const u32 k = J.g.neighbour[J.g.offsets[i + 1] - 1];
          const int wk = static_cast<int>(std::upper_bound(J.win_row.begin(), J.win_row.end(), k) -
                                          J.win_row.begin()) - 1;
          last = std::max(last, wk);
        }
        last_search_[static_cast<std::size_t>(h)] = last;
      }
    }
    if (J.kind != Kind::Two) {
      sort_hubs();
      // Hubs per segment above each class threshold (the sorted order is by decreasing degree).
      std::vector<u32> thresholds{1, 2};
      for (const Class4& c : classes_) thresholds.push_back(c.dcap);
      if (dense_) thresholds.push_back(dense_min_ - 1);
      for (std::size_t sg = 0; sg + 1 < J.seg_row.size(); ++sg) {
        std::vector<u64> cnt(thresholds.size(), 0);
        for (u64 i = J.seg_row[sg]; i < J.seg_row[sg + 1]; ++i) {
          const u32 d = degree(J.g, i);
          for (std::size_t t = 0; t < thresholds.size(); ++t) cnt[t] += d > thresholds[t];
        }
        for (std::size_t t = 0; t < thresholds.size(); ++t) above_[{sg, thresholds[t]}] = cnt[t];
      }
    }
  }

  using KernelD = void (*)(Dense3Args);
  KernelD dense_kernel() const { return dense_q_ == 1 ? count3_dense_kernel<1> : count3_dense_kernel<2>; }

  using Kernel4 = void (*)(FourArgs);
  /// The 4pCF kernel instance of this job: parity, neighbourhood in global scratch, fixed point.
  Kernel4 kernel4(bool scratch) const {
    const bool p = job_.parity, f = fixed_;
    if (p)
      return scratch ? (f ? count4_kernel<true, true, true> : count4_kernel<true, true, false>)
                     : (f ? count4_kernel<true, false, true> : count4_kernel<true, false, false>);
    return scratch ? (f ? count4_kernel<false, true, true> : count4_kernel<false, true, false>)
                   : (f ? count4_kernel<false, false, true> : count4_kernel<false, false, false>);
  }

  /// Shared-memory neighbourhood classes of the 4pCF: (capacity, threads per block), ascending.
  /// Default measured on the H200 (docs/benchmarks.md): with the packed connectivity table the
  /// 128/192 classes fit 3-4 blocks per SM, and 384 threads keep more warps on each neighbourhood.
  /// The environment variable ALMAGEST_NPCF4_CLASSES ("cap:threads,cap:threads,...") replaces
  /// the default, for tuning on other cards; a malformed value is an error, not ignored.
  static std::vector<std::pair<u32, int>> class_shapes() {
    std::vector<std::pair<u32, int>> caps{{64, 256}, {128, 384}, {192, 384}, {384, 512}};
    const char* env = std::getenv("ALMAGEST_NPCF4_CLASSES");
    if (env == nullptr || *env == '\0') return caps;
    caps.clear();
    const std::string s(env);
    std::size_t at = 0;
    while (at < s.size()) {
      const std::size_t end = std::min(s.find(',', at), s.size());
      const std::string item = s.substr(at, end - at);
      const std::size_t colon = item.find(':');
      unsigned long cap = 0, threads = 0;
      try {
        if (colon == std::string::npos) throw std::invalid_argument("no colon");
        std::size_t used = 0;
        cap = std::stoul(item.substr(0, colon), &used);
        if (used != colon) throw std::invalid_argument("cap");
        threads = std::stoul(item.substr(colon + 1), &used);
        if (used != item.size() - colon - 1) throw std::invalid_argument("threads");
      } catch (const std::exception&) {
        throw DeviceError("ALMAGEST_NPCF4_CLASSES: '" + item + "' is not cap:threads");
      }
      if (cap < 3 || cap > 65535 || threads < 32 || threads > 1024 || threads % 32 != 0 ||
          (!caps.empty() && cap <= caps.back().first))
        throw DeviceError("ALMAGEST_NPCF4_CLASSES: '" + item +
                          "' needs 3 <= cap <= 65535 (ascending) and threads a multiple of 32 up to 1024");
      caps.emplace_back(static_cast<u32>(cap), static_cast<int>(threads));
      at = end + 1;
    }
    return caps;
  }

  /// Launch shapes and the number of partial slots G.
  void plan_launches() {
    const Job& J = job_;
    int occ = 0;
    if (J.kind == Kind::Two) {
      smem2_ = 32ull * J.rows;
      if (J.mu2()) {
        if (smem2_ > static_cast<std::size_t>(smem_optin_))
          throw DeviceError("2pCF on the GPU: " + std::to_string(J.rows) +
                            " (r, mu) rows do not fit the shared-memory histogram");
        if (smem2_ > 48 * 1024)
          CUDA_CHECK(cudaFuncSetAttribute(count2mu_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(smem2_)));
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, count2mu_kernel, 256, smem2_));
      } else {
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, count2_kernel, 256, smem2_));
      }
      grid2_ = std::max(1, occ) * sms_;
      G_ = grid2_;
      return;
    }
    const std::size_t hb = shared_hist_ ? hist_bytes(J.rows, J.parity, fixed_) : 0;
    if (J.kind == Kind::Three) {
      dcap3_ = 1024;
      smem3_ = hb + 13ull * dcap3_;
      // mu bins: the kMu instantiation; the isotropic kernel is count3_kernel<false> as before.
      const auto kernel3 = J.nmu > 1 ? count3_kernel<true> : count3_kernel<false>;
      cudaFuncAttributes fa{};
      CUDA_CHECK(cudaFuncGetAttributes(&fa, kernel3));
      if (smem3_ + fa.sharedSizeBytes > static_cast<std::size_t>(smem_optin_))
        throw DeviceError("3pCF on the GPU: " + std::to_string(J.rows) +
                          " rows do not fit the shared-memory histogram");
      if (smem3_ > 48 * 1024)
        CUDA_CHECK(cudaFuncSetAttribute(kernel3, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(smem3_)));
      CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kernel3, 256, smem3_));
      grid3_ = std::max(1, occ) * sms_;
      G_ = grid3_;
      if (dense_) {
        // q's per lane: 1 by default (measured faster on the H200: 40 registers and ~5 blocks
        // per SM against 56 and 3 for two); ALMAGEST_NPCF3_DENSE_Q=2 for the other (tuning)
        const char* env = std::getenv("ALMAGEST_NPCF3_DENSE_Q");
        dense_q_ = 1;
        if (env != nullptr && *env != '\0') {
          if (std::string(env) == "2") dense_q_ = 2;
          else if (std::string(env) != "1")
            throw DeviceError(std::string("ALMAGEST_NPCF3_DENSE_Q: '") + env + "' is not 1 or 2");
        }
        const auto kernelD = dense_kernel();
        smemD_ = dense3_smem(J.rows, shared_hist_, J.nbins, lut_size_, kDenseThreads, dense_q_);
        CUDA_CHECK(cudaFuncGetAttributes(&fa, kernelD));
        if (smemD_ + fa.sharedSizeBytes > static_cast<std::size_t>(smem_optin_))
          throw DeviceError("3pCF on the GPU: the dense kernel's shared memory does not fit");
        if (smemD_ > 48 * 1024)
          CUDA_CHECK(cudaFuncSetAttribute(kernelD, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(smemD_)));
        int occd = 0;
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occd, kernelD, kDenseThreads, smemD_));
        gridD_ = std::max(1, occd) * sms_;
        G_ = std::max(G_, gridD_);
      }
      return;
    }
    // 4pCF classes: shared-memory neighbourhoods of growing capacity, then global scratch.
    u32 maxdeg = 0;
    for (u64 i = 0; i < J.p.size; ++i) maxdeg = std::max(maxdeg, degree(J.g, i));
    if (maxdeg > 65535)
      throw DeviceError("4pCF on the GPU: a hub has " + std::to_string(maxdeg) +
                        " neighbours, more than the 65535 this backend supports");
    auto kernel = kernel4(false);
    cudaFuncAttributes fa{};
    CUDA_CHECK(cudaFuncGetAttributes(&fa, kernel));
    const std::size_t max_dyn = static_cast<std::size_t>(smem_optin_) - fa.sharedSizeBytes;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(max_dyn)));
    CUDA_CHECK(cudaFuncSetAttribute(kernel4(true), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(max_dyn)));
    const std::vector<std::pair<u32, int>> caps = class_shapes();
    G_ = 1;
    const u32 forced = J.opt->shared_degree_cap;
    for (auto [cap, threads] : caps) {
      if (forced > 0 && cap > forced) {
        if (classes_.empty() || classes_.back().dcap < forced) {
          cap = std::max<u32>(forced, 3);
        } else {
          break;
        }
      }
      const std::size_t smem = hb + sizeof(u32) * kQueue * (threads / 32) + hood_layout(cap, J.parity).total;
      if (smem > max_dyn) break;
      Class4 c;
      c.dcap = cap;
      c.threads = threads;
      c.smem = smem;
      CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kernel, threads, smem));
      if (occ < 1) break;
      c.grid = occ * sms_;
      G_ = std::max(G_, c.grid);
      classes_.push_back(c);
    }
    const u32 prev = classes_.empty() ? 2 : classes_.back().dcap;
    if (maxdeg > prev) {
      Class4 c;
      c.dcap = maxdeg;
      c.threads = 512;
      c.smem = hb + sizeof(u32) * kQueue * 16;
      c.scratch = true;
      CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kernel4(true), c.threads, c.smem));
      const u64 stride = (hood_layout(maxdeg, J.parity).total + 255) & ~u64{255};
      std::size_t free_b = 0, total_b = 0;
      CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
      const u64 budget = free_b / 4;
      c.grid = static_cast<int>(std::clamp<u64>(budget / stride, 1, static_cast<u64>(sms_) * std::max(1, occ)));
      scratch_stride_ = stride;
      alloc(scratch_, stride * c.grid);
      G_ = std::max(G_, c.grid);
      classes_.push_back(c);
    }
  }

  /// Sorts hubs by (segment, decreasing degree): a segment's hubs keep their row range positions.
  void sort_hubs() {
    const Job& J = job_;
    const u64 n = J.p.size;
    std::vector<u64> keys(n);
    for (std::size_t s = 0; s + 1 < J.seg_row.size(); ++s)
      for (u64 i = J.seg_row[s]; i < J.seg_row[s + 1]; ++i)
        keys[i] = (static_cast<u64>(s) << 32) | (0xFFFFFFFFull - degree(J.g, i));
    DeviceBuffer<u64> k_in(n), k_out(n);
    DeviceBuffer<u32> v_in(n);
    alloc(order_, n);
    k_in.upload(keys.data(), n, s_);
    std::vector<u32> iota(n);
    std::iota(iota.begin(), iota.end(), 0u);
    v_in.upload(iota.data(), n, s_);
    int end_bit = 33;
    while ((1ull << (end_bit - 32)) < J.seg_row.size()) ++end_bit;
    std::size_t temp_bytes = 0;
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, k_in.data(), k_out.data(),
                                               v_in.data(), order_.data(), static_cast<int>(n), 0,
                                               end_bit, cudaStream_t(s_)));
    DeviceBuffer<unsigned char> temp(std::max<std::size_t>(1, temp_bytes));
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), temp_bytes, k_in.data(), k_out.data(),
                                               v_in.data(), order_.data(), static_cast<int>(n), 0,
                                               end_bit, cudaStream_t(s_)));
    CUDA_CHECK(cudaStreamSynchronize(s_));
  }

  /// Makes windows `need` resident; returns their slots.
  std::array<int, 3> ensure(const std::array<int, 3>& need, int count, NpcfRunInfo& info) {
    const Job& J = job_;
    std::array<int, 3> slot{-1, -1, -1};
    ++tick_;
    for (int q = 0; q < count; ++q)
      for (int s = 0; s < J.slots; ++s)
        if (slot_win_[s] == need[q]) {
          slot[q] = s;
          slot_used_[s] = tick_;
        }
    for (int q = 0; q < count; ++q) {
      if (slot[q] >= 0) continue;
      for (int r = 0; r < q; ++r)
        if (need[r] == need[q]) slot[q] = slot[r];
      if (slot[q] >= 0) continue;
      int victim = -1;
      for (int s = 0; s < J.slots; ++s)
        if (slot_used_[s] != tick_ && (victim < 0 || slot_used_[s] < slot_used_[victim])) victim = s;
      const auto t0 = Clock::now();
      const u64 e0 = J.g.offsets[J.win_row[need[q]]], e1 = J.g.offsets[J.win_row[need[q] + 1]];
      npcf_staging::upload(slot_nb_[victim].data(), J.g.neighbour + e0, (e1 - e0) * sizeof(u32), s_);
      npcf_staging::upload(slot_bin_[victim].data(), J.g.bin + e0, (e1 - e0) * sizeof(u8), s_);
      if (!slot_pix_[victim].empty())
        npcf_staging::upload(slot_pix_[victim].data(), J.g.pixel + e0, (e1 - e0) * sizeof(u16), s_);
      CUDA_CHECK(cudaStreamSynchronize(s_));
      info.upload_s += since(t0);
      slot_win_[victim] = need[q];
      slot_used_[victim] = tick_;
      slot[q] = victim;
    }
    return slot;
  }

  Win window(int slot, int win) const {
    const Job& J = job_;
    Win w;
    if (res_) {
      w.nb = res_->nb.data();
      w.bin = res_->bin.data();
      w.pix = J.parity && !J.par.exact ? res_->pix.data() : nullptr;
    } else {
      w.nb = slot_nb_[slot].data();
      w.bin = slot_bin_[slot].data();
      w.pix = slot_pix_[slot].empty() ? nullptr : slot_pix_[slot].data();
    }
    w.base = J.g.offsets[J.win_row[win]];
    w.lo = static_cast<u32>(J.win_row[win]);
    w.hi = static_cast<u32>(J.win_row[win + 1]);
    return w;
  }

  Acc make_acc(int half) {
    Acc a;
    a.rows = job_.rows;
    a.half = half;
    a.G = static_cast<u32>(G_);
    a.shared = shared_hist_;
    a.part_cnt = part_cnt_.data();
    a.part_sum = part_sum_.data();
    a.part_odd = part_odd_.data();
    a.part_deg = part_deg_.data();
    a.acc_cnt = acc_cnt_.data();
    a.acc_sum = acc_sum_.data();
    a.acc_odd = acc_odd_.data();
    a.acc_deg = acc_deg_.data();
    return a;
  }

  Common common() const {
    Common c;
    c.offsets = res_ ? res_->offsets.data() : offsets_.data();
    c.w = res_ ? res_->w.data() : w_.data();
    c.x = res_ ? res_->x.data() : x_.data();
    c.y = res_ ? res_->y.data() : y_.data();
    c.z = res_ ? res_->z.data() : z_.data();
    c.periodic = job_.par.periodic;
    c.box = job_.par.box;
    c.ndata = job_.p.ndata;
    return c;
  }

  /// Hub segments of partition `part` inside window h: [seg index].
  std::vector<std::size_t> segments(int part, int h) const {
    const Job& J = job_;
    std::vector<std::size_t> out;
    for (std::size_t s = 0; s + 1 < J.seg_row.size(); ++s) {
      const u64 lo = J.seg_row[s], hi = J.seg_row[s + 1];
      if (lo >= hi) continue;
      if (lo >= J.part_row[part] && hi <= J.part_row[part + 1] && lo >= J.win_row[h] &&
          hi <= J.win_row[h + 1])
        out.push_back(s);
    }
    return out;
  }

  void launch_tile(int part, int h, const std::array<int, 3>& slot, int s1, int s2) {
    const Job& J = job_;
    int counter = 0;
    CUDA_CHECK(cudaMemsetAsync(counters_.data(), 0, counters_.bytes(), s_));
    if (J.kind == Kind::Two) {
      TwoArgs a;
      a.c = common();
      a.win = window(slot[0], h);
      a.h0 = std::max(J.part_row[part], J.win_row[h]);
      a.h1 = std::min(J.part_row[part + 1], J.win_row[h + 1]);
      a.acc = make_acc(0);
      if (a.h0 < a.h1) {
        if (J.mu2()) {
          TwoMuArgs m;
          m.base = a;
          m.nmu = J.nmu;
          m.nbins = J.nbins;
          m.legendre = J.legendre;
          count2mu_kernel<<<grid2_, 256, smem2_, s_>>>(m);
        } else {
          count2_kernel<<<grid2_, 256, smem2_, s_>>>(a);
        }
        CUDA_CHECK_LAUNCH();
      }
      return;
    }
    for (std::size_t seg : segments(part, h)) {
      const u64 lo = J.seg_row[seg], hi = J.seg_row[seg + 1];
      const int half = lo >= J.p.ndata ? 1 : 0;
      auto count_above = [&](u32 t) {  // hubs of the segment with degree > t
        return static_cast<u32>(above_.at({seg, t}));
      };
      if (J.kind == Kind::Three) {
        // Hubs of degree >= dense_min_ lead the segment's list (decreasing degree): the dense
        // kernel counts all their triangles from the hub window alone, in the tile (h, h).
        const u32 ndense = dense_ ? count_above(dense_min_ - 1) : 0;
        if (ndense > 0 && s1 == h) {
          Dense3Args a;
          a.c = common();
          a.pts = res_ ? res_->pts.data() : pts_.data();
          a.wh = window(slot[0], h);
          a.list = HubList{order_.data(), static_cast<u32>(lo), ndense, counters_.data() + counter++};
          a.tri_offset = tri_.data();
          a.nbins = J.nbins;
          a.rmin2 = J.rmin2;
          a.rmax2 = J.rmax2;
          a.thr = dense_thr_.data();
          a.lut = dense_lut_.data();
          a.lut_base = lut_base_;
          a.lut_size = lut_size_;
          a.lut_shift = lut_shift_;
          a.scratch = dense_scratch_.data();
          a.scratch_stride = dense_maxdeg_;
          a.error = dense_err_.data();
          a.acc = make_acc(half);
          dense_kernel()<<<std::min<int>(gridD_, static_cast<int>(ndense)), kDenseThreads, smemD_, s_>>>(a);
          CUDA_CHECK_LAUNCH();
        }
        ThreeArgs a;
        a.c = common();
        a.wh = window(slot[0], h);
        a.ws = window(slot[1], s1);
        a.list = HubList{order_.data(), static_cast<u32>(lo) + ndense, count_above(1) - ndense,
                         counters_.data() + counter++};
        a.tri_offset = tri_.data();
        a.nbins = J.nbins;
        a.equilateral = J.equilateral;
        a.dcap = dcap3_;
        a.nmu = J.nmu;
        a.acc = make_acc(half);
        if (a.list.count > 0) {
          if (J.nmu > 1)
            count3_kernel<true><<<std::min<int>(grid3_, a.list.count), 256, smem3_, s_>>>(a);
          else
            count3_kernel<false><<<std::min<int>(grid3_, a.list.count), 256, smem3_, s_>>>(a);
          CUDA_CHECK_LAUNCH();
        }
        continue;
      }
      throw DeviceError("internal error: 4pCF tiles go through launch_group");
    }
  }

  /// 4pCF: one launch group of hub window h over the distinct ascending search windows
  /// wins[0..nw) in slots slot[0..nw) (wins[0] == h), counting the window pairs `pairs`.
  void launch_group(int part, int h, const std::array<int, 3>& slot, const std::array<int, 3>& wins,
                    int nwin, u32 pairs) {
    const Job& J = job_;
    int counter = 0;
    CUDA_CHECK(cudaMemsetAsync(counters_.data(), 0, counters_.bytes(), s_));
    for (std::size_t seg : segments(part, h)) {
      const u64 lo = J.seg_row[seg];
      const int half = lo >= J.p.ndata ? 1 : 0;
      auto count_above = [&](u32 t) {  // hubs of the segment with degree > t
        return static_cast<u32>(above_.at({seg, t}));
      };
      u32 first = static_cast<u32>(lo);
      const u32 usable = count_above(2);  // tetrahedra need degree >= 3
      // classes_ ascend in capacity; walk them from the largest (heaviest hubs first).
      for (int ci = static_cast<int>(classes_.size()) - 1; ci >= 0; --ci) {
        const Class4& c = classes_[ci];
        const u32 lower = ci > 0 ? classes_[ci - 1].dcap : 2;
        const u32 upto = count_above(lower);  // hubs with degree > lower in this or larger classes
        const u32 start = first - static_cast<u32>(lo);
        const u32 end = std::min(upto, usable);
        if (end <= start) continue;
        FourArgs a;
        a.c = common();
        a.wh = window(slot[0], h);
        for (int k = 0; k < nwin; ++k) a.ws[k] = window(slot[k], wins[k]);
        a.nsw = static_cast<u32>(nwin);
        a.pairs = pairs;
        a.list = HubList{order_.data(), first, end - start, counters_.data() + counter++};
        a.packed = packed_.data();
        a.packed16 = packed16_.data();
        a.n = static_cast<u32>(J.nbins);
        a.n2 = a.n * a.n;
        a.n3 = a.n2 * a.n;
        a.n4 = a.n3 * a.n;
        a.n5 = a.n4 * a.n;
        a.exact = J.par.exact;
        a.pixel_unit = pixel_unit_.data();
        a.dcap = c.dcap;
        a.scratch = c.scratch ? scratch_.data() : nullptr;
        a.scratch_stride = scratch_stride_;
        a.fx_scale = fx_scale_;
        a.fx_inv = fx_inv_;
        a.acc = make_acc(half);
        const int grid = std::min<int>(c.grid, static_cast<int>(a.list.count));
        kernel4(c.scratch)<<<grid, c.threads, c.smem, s_>>>(a);
        CUDA_CHECK_LAUNCH();
        first += end - start;
        if (counter >= 64) throw DeviceError("internal error: too many launches in one tile");
      }
    }
  }

  PartSums run_partition(int part, NpcfRunInfo& info) {
    const Job& J = job_;
    acc_cnt_.zero(s_);
    acc_sum_.zero(s_);
    acc_odd_.zero(s_);
    acc_deg_.zero(s_);
    part_cnt_.zero(s_);
    part_sum_.zero(s_);
    part_odd_.zero(s_);
    part_deg_.zero(s_);
    const int W = static_cast<int>(J.win_row.size()) - 1;
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
    // One timed launch: progress, the windows it needs made resident, the launch between two
    // events, then its device time and the tile counters.
    auto timed = [&](const std::array<int, 3>& wins, int nwin, auto&& launch) {
      if (J.opt->progress) {
        std::lock_guard<std::mutex> lock(*J.progress_mu);
        J.opt->progress(static_cast<double>(*J.tiles_done), static_cast<double>(J.tiles_total),
                        "counting on the GPU");
      }
      const auto slot = ensure(wins, nwin, info);
      CUDA_CHECK(cudaEventRecord(ev0, s_));
      launch(slot);
      CUDA_CHECK(cudaEventRecord(ev1, s_));
      CUDA_CHECK(cudaEventSynchronize(ev1));
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, ev0, ev1));
      std::lock_guard<std::mutex> lock(*J.progress_mu);
      info.kernel_s += ms * 1e-3;
      ++info.tiles;
      ++*J.tiles_done;
    };
    auto tile = [&](int h, int s1, int s2) {
      const int count = J.kind == Kind::Two ? 1 : J.kind == Kind::Three ? 2 : 3;
      timed({h, s1, s2}, count,
            [&](const std::array<int, 3>& slot) { launch_tile(part, h, slot, s1, s2); });
    };
    auto group = [&](int h, const std::array<int, 3>& gw, int nwin, u32 pairs) {
      timed(gw, nwin,
            [&](const std::array<int, 3>& slot) { launch_group(part, h, slot, gw, nwin, pairs); });
    };
    for (int h = 0; h < W; ++h) {
      if (std::max(J.part_row[part], J.win_row[h]) >= std::min(J.part_row[part + 1], J.win_row[h + 1]))
        continue;
      if (J.kind == Kind::Two) {
        tile(h, h, h);
      } else if (J.kind == Kind::Three) {
        for (int s = h; s < W; ++s) {
          if (s > h && s > last_search_[static_cast<std::size_t>(h)]) {
            // no graph-walk hub of window h has a neighbour (a j) in window s: nothing to count
            std::lock_guard<std::mutex> lock(*J.progress_mu);
            ++*J.tiles_done;
            continue;
          }
          tile(h, s, s);
        }
      } else {
        // Launch groups {h, x, y} (x < y search windows above h) until every window pair
        // (s1 <= s2) of [h, W) is counted once; a hub builds its neighbourhood once per group.
        std::vector<std::array<int, 3>> groups;
        const int m = W - 1 - h;
        if (m == 0) groups.push_back({h, -1, -1});
        else if (m == 1) groups.push_back({h, h + 1, -1});
        else
          for (int x = h + 1; x < W; ++x)
            for (int y = x + 1; y < W; ++y) groups.push_back({h, x, y});
        std::vector<char> done(static_cast<std::size_t>(W) * W, 0);
        for (const auto& gw : groups) {
          const int nwin = gw[2] >= 0 ? 3 : gw[1] >= 0 ? 2 : 1;
          u32 pairs = 0;
          for (int p = 0; p < nwin; ++p)
            for (int q = p; q < nwin; ++q) {
              char& d = done[static_cast<std::size_t>(gw[p]) * W + gw[q]];
              if (!d) {
                d = 1;
                pairs |= 1u << (3 * p + q);
              }
            }
          if (pairs) group(h, gw, nwin, pairs);
        }
      }
    }
    // Reduce partial slots in block order and download.
    Acc a = make_acc(0);
    const int rgrid = static_cast<int>(std::min<u64>(1024, (2ull * J.rows + 255) / 256));
    if (!shared_hist_) a.G = 0;
    reduce_kernel<<<rgrid, 256, 0, s_>>>(a, J.parity, out_cnt_.data(), out_sum_.data(),
                                         out_odd_.data(), out_deg_.data());
    CUDA_CHECK_LAUNCH();
    PartSums ps;
    const u64 R2 = 2ull * J.rows;
    ps.cnt.resize(R2);
    ps.sum.resize(R2);
    out_cnt_.download(ps.cnt.data(), R2, s_);
    out_sum_.download(ps.sum.data(), R2, s_);
    if (J.parity) {
      ps.odd.resize(R2);
      ps.deg.resize(R2);
      out_odd_.download(ps.odd.data(), R2, s_);
      out_deg_.download(ps.deg.data(), R2, s_);
    }
    CUDA_CHECK(cudaStreamSynchronize(s_));
    if (dense_) {
      u32 err = 0;
      dense_err_.download(&err, 1, s_);
      CUDA_CHECK(cudaStreamSynchronize(s_));
      if (err)
        throw DeviceError("3pCF on the GPU: the graph's edges or bins differ from the binning passed "
                          "with it (the dense kernel re-derives them from coordinates): build the "
                          "graph with the same rmin, rmax and bins");
    }
    return ps;
  }

  const Job& job_;
  int device_;
  cudaStream_t s_ = nullptr;
  int sms_ = 1;
  int smem_optin_ = 48 * 1024;
  u64 device_bytes_ = 0;
  bool shared_hist_ = true;
  bool fixed_ = false;
  double fx_scale_ = 0, fx_inv_ = 0;
  int G_ = 1;
  int grid2_ = 1, grid3_ = 1;
  std::size_t smem2_ = 0, smem3_ = 0;
  u32 dcap3_ = 0;
  bool dense_ = false;
  u32 dense_min_ = 0, dense_maxdeg_ = 0, lut_base_ = 0, lut_size_ = 0;
  std::vector<int> last_search_;
  int lut_shift_ = 0, gridD_ = 0, dense_q_ = 1;
  std::size_t smemD_ = 0;
  DeviceBuffer<Pt4> pts_, dense_scratch_;
  DeviceBuffer<double> dense_thr_;
  DeviceBuffer<u8> dense_lut_;
  DeviceBuffer<u32> dense_err_;
  std::vector<Class4> classes_;
  std::map<std::pair<std::size_t, u32>, u64> above_;
  u64 scratch_stride_ = 0;
  u64 tick_ = 0;
  ResidentGraph* res_ = nullptr;           // resident mode: graph and points (else the buffers below)
  std::unique_lock<std::mutex> res_lock_;  // held for the whole call
  DeviceBuffer<double> w_, x_, y_, z_, pixel_unit_;
  DeviceBuffer<u64> offsets_;
  std::vector<DeviceBuffer<u32>> slot_nb_;
  std::vector<DeviceBuffer<u8>> slot_bin_;
  std::vector<DeviceBuffer<u16>> slot_pix_;
  std::vector<int> slot_win_;
  std::vector<u64> slot_used_;
  DeviceBuffer<u32> tri_, packed_, order_, counters_;
  DeviceBuffer<u16> packed16_;
  DeviceBuffer<unsigned char> scratch_;
  DeviceBuffer<ull> acc_cnt_, acc_deg_, out_cnt_, out_deg_, part_cnt_, part_deg_;
  DeviceBuffer<double> acc_sum_, acc_odd_, out_sum_, out_odd_, part_sum_, part_odd_;
};

std::vector<int> devices_of(const NpcfOptions& opt) {
  if (!opt.devices.empty()) return opt.devices;
  if (opt.device_graph && !opt.device_graph->devices().empty()) return opt.device_graph->devices();
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  if (count <= 0) throw DeviceError("no CUDA device is available");
  std::vector<int> d(static_cast<std::size_t>(count));
  std::iota(d.begin(), d.end(), 0);
  return d;
}

/// Fills windows, partitions and slots of `job`, runs every device and merges in partition order.
NpcfSums run_job(Job& job, const NpcfOptions& opt) {
  const auto t0 = Clock::now();
  const NpcfGraphView& g = job.g;
  const u64 n = job.p.size;
  if (g.num_vertices != n) throw DeviceError("NpCF on the GPU: graph and point set differ in size");
  if (n == 0) throw DeviceError("NpCF on the GPU: empty point set");
  if (n > 0x7FFFFFFFull) throw DeviceError("NpCF on the GPU: more than 2^31 - 1 points");
  const std::vector<int> devices = devices_of(opt);
  job.opt = &opt;
  job.slots = job.kind == Kind::Two ? 1 : job.kind == Kind::Three ? 2 : 3;
  const int order = job.kind == Kind::Two ? 1 : job.kind == Kind::Three ? 2 : 3;
  std::vector<double> prefix_cost(n + 1, 0.0), prefix_edges(n + 1, 0.0);
  for (u64 i = 0; i < n; ++i) {
    const double d = degree(g, i) + 1.0;
    prefix_cost[i + 1] = prefix_cost[i] + (order == 1 ? d : order == 2 ? d * d : d * d * d);
    prefix_edges[i + 1] = static_cast<double>(g.offsets[i + 1]);
  }
  // Windows: forced, or as few as fit the memory limit.
  int W = opt.windows;
  // The graph already resident on the devices in the caller's device graph: no split (it fitted
  // before).
  const DeviceGraphImpl* dg = device_graph_of(opt);
  if (W <= 0 && dg &&
      std::all_of(devices.begin(), devices.end(), [&](int d) { return dg->holds(d); }))
    W = 1;
  const double per_edge = 5.0 + (job.parity && !job.par.exact ? 2.0 : 0.0);
  const double edge_bytes = per_edge * static_cast<double>(g.num_edges);
  if (W <= 0) {
    double limit = static_cast<double>(opt.memory_limit);
    if (limit <= 0) {
      DeviceGuard guard(devices.front());
      std::size_t free_b = 0, total_b = 0;
      CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
      limit = 0.85 * static_cast<double>(free_b);
    }
    // (+ 32 bytes per point and the per-block neighbourhoods of the dense 3pCF kernel)
    const double fixed = (job.dense_possible() ? 96.0 : 64.0) * static_cast<double>(n) +
                         4.0 * job.packed_size + 512.0 * 1024 * 1024;
    const double avail = limit - fixed;
    if (avail <= 0) throw DeviceOutOfMemory("NpCF on the GPU: the points alone exceed the device memory limit");
    W = edge_bytes <= avail ? 1 : static_cast<int>(std::ceil(job.slots * edge_bytes / avail)) + 1;
  }
  W = static_cast<int>(std::clamp<u64>(static_cast<u64>(W), 1, n));
  job.slots = std::min(job.slots, W);  // all-resident: one slot holds every row
  job.win_row = W == 1 ? std::vector<u64>{0, n} : balanced_rows(n, W, prefix_edges);
  job.max_window_edges = 0;
  for (int k = 0; k < W; ++k)
    job.max_window_edges = std::max<u64>(job.max_window_edges,
                                         g.offsets[job.win_row[k + 1]] - g.offsets[job.win_row[k]]);
  const int P = static_cast<int>(std::clamp<u64>(
      static_cast<u64>(opt.partitions > 0 ? opt.partitions : static_cast<int>(devices.size())), 1, n));
  // The partitions this call computes: every one, or one only (a process of a split job: its
  // partition's sums returned alone).
  const int only = opt.only_partition;
  if (only >= 0 && (opt.partitions < 1 || only >= P))
    throw DeviceError("NpCF on the GPU: only_partition " + std::to_string(only) + " outside the " +
                      std::to_string(P) + " partitions");
  std::vector<int> todo;
  if (only >= 0)
    todo.push_back(only);
  else
    for (int p = 0; p < P; ++p) todo.push_back(p);
  job.part_row = balanced_rows(n, P, prefix_cost);
  job.seg_row = job.win_row;
  job.seg_row.insert(job.seg_row.end(), job.part_row.begin(), job.part_row.end());
  job.seg_row.push_back(std::min<u64>(job.p.ndata, n));
  std::sort(job.seg_row.begin(), job.seg_row.end());
  job.seg_row.erase(std::unique(job.seg_row.begin(), job.seg_row.end()), job.seg_row.end());

  // Tiles per partition (for progress).
  u64 tiles = 0;
  for (int p : todo)
    for (int h = 0; h < W; ++h) {
      if (std::max(job.part_row[p], job.win_row[h]) >= std::min(job.part_row[p + 1], job.win_row[h + 1])) continue;
      const u64 m = static_cast<u64>(W - h);
      tiles += job.kind == Kind::Two ? 1 : job.kind == Kind::Three ? m : m <= 2 ? 1 : (m - 1) * (m - 2) / 2;
    }
  std::mutex progress_mu;
  u64 tiles_done = 0;
  job.progress_mu = &progress_mu;
  job.tiles_done = &tiles_done;
  job.tiles_total = tiles;

  // Partitions round robin over devices; one host thread per device.
  const int ndev = std::min<int>(static_cast<int>(devices.size()), static_cast<int>(todo.size()));
  std::vector<std::vector<int>> parts_of(static_cast<std::size_t>(ndev));
  for (std::size_t t = 0; t < todo.size(); ++t) parts_of[t % static_cast<std::size_t>(ndev)].push_back(todo[t]);
  std::vector<std::vector<PartSums>> results(static_cast<std::size_t>(ndev));
  std::vector<NpcfRunInfo> infos(static_cast<std::size_t>(ndev));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(ndev));
  auto work = [&](int k) {
    try {
      DeviceRunner runner(job, devices[static_cast<std::size_t>(k)]);
      results[static_cast<std::size_t>(k)] = runner.run(parts_of[static_cast<std::size_t>(k)], infos[static_cast<std::size_t>(k)]);
    } catch (...) {
      errors[static_cast<std::size_t>(k)] = std::current_exception();
    }
  };
  if (ndev == 1) {
    work(0);
  } else {
    std::vector<std::thread> pool;
    for (int k = 0; k < ndev; ++k) pool.emplace_back(work, k);
    for (auto& t : pool) t.join();
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);

  // Merge in partition order.
  NpcfSums out;
  const u64 R = job.rows;
  out.tuples.assign(R, 0);
  out.random_tuples.assign(R, 0);
  out.n.assign(R, 0.0);
  out.r.assign(R, 0.0);
  if (job.parity) {
    out.n_odd.assign(R, 0.0);
    out.r_odd.assign(R, 0.0);
    out.degenerate.assign(R, 0);
  }
  std::vector<std::size_t> next(static_cast<std::size_t>(ndev), 0);
  for (std::size_t t = 0; t < todo.size(); ++t) {
    const std::size_t k = t % static_cast<std::size_t>(ndev);
    const PartSums& s = results[k][next[k]++];
    for (u64 r = 0; r < R; ++r) {
      out.tuples[r] += s.cnt[r] + s.cnt[R + r];
      out.random_tuples[r] += s.cnt[R + r];
      out.n[r] += s.sum[r] + s.sum[R + r];
      out.r[r] += s.sum[R + r];
      if (job.parity) {
        out.n_odd[r] += s.odd[r] + s.odd[R + r];
        out.r_odd[r] += s.odd[R + r];
        out.degenerate[r] += s.deg[r] + s.deg[R + r];
      }
    }
  }
  out.info.windows = W;
  out.info.partitions = P;
  out.info.devices = ndev;
  out.info.device_name = infos.front().device_name;
  for (const auto& i : infos) {
    out.info.tiles += i.tiles;
    out.info.upload_s += i.upload_s;
    out.info.kernel_s += i.kernel_s;
    out.info.device_bytes = std::max(out.info.device_bytes, i.device_bytes);
  }
  out.info.total_s = since(t0);
  return out;
}

class NpcfImpl final : public NpcfKernels {
public:
  NpcfSums count_2pcf(const NpcfGraphView& g, const NpcfPointsView& p, int nbins,
                      const NpcfOptions& opt) override {
    Job job;
    job.kind = Kind::Two;
    job.g = g;
    job.p = p;
    job.nbins = nbins;
    job.nmu = std::max(1, opt.nmu);
    job.legendre = opt.legendre;
    // mu from minimum-image separations in a periodic box (Common takes them from par).
    job.par.periodic = opt.mu_periodic;
    job.par.box = opt.mu_box;
    job.rows = static_cast<u32>(nbins * job.nmu + (job.legendre ? 2 * nbins : 0));
    NpcfSums s = run_job(job, opt);
    if (job.legendre) {
      // The sum-only rows: L2 then L4 per radial bin, moved out of the row arrays.
      const std::size_t mu_rows = static_cast<std::size_t>(nbins) * job.nmu;
      s.legendre2.assign(s.n.begin() + mu_rows, s.n.begin() + mu_rows + nbins);
      s.legendre4.assign(s.n.begin() + mu_rows + nbins, s.n.end());
      for (auto* v : {&s.tuples, &s.random_tuples}) v->resize(mu_rows);
      for (auto* v : {&s.n, &s.r}) v->resize(mu_rows);
    }
    return s;
  }
  NpcfSums count_3pcf(const NpcfGraphView& g, const NpcfPointsView& p, const NpcfTriangleRows& rows,
                      bool equilateral, const NpcfOptions& opt) override {
    Job job;
    job.kind = Kind::Three;
    job.g = g;
    job.p = p;
    job.nbins = rows.nbins;
    job.tri_offset = rows.offset;
    job.equilateral = equilateral;
    job.nmu = std::max(1, opt.nmu);
    job.par.periodic = opt.mu_periodic;
    job.par.box = opt.mu_box;
    job.rows = static_cast<u32>((equilateral ? static_cast<u64>(rows.nbins) : rows.rows) *
                                static_cast<u64>(job.nmu));
    job.tri_thr = rows.bin_threshold;
    job.rmin2 = rows.rmin2;
    job.rmax2 = rows.rmax2;
    job.dense_min = opt.dense_min_degree;
    return run_job(job, opt);
  }
  NpcfSums count_4pcf(const NpcfGraphView& g, const NpcfPointsView& p, const NpcfTetraRows& rows,
                      const NpcfParity* parity, const NpcfOptions& opt) override {
    Job job;
    job.kind = Kind::Four;
    job.g = g;
    job.p = p;
    job.nbins = rows.nbins;
    job.packed = rows.packed;
    u64 n6 = 1;
    for (int k = 0; k < 6; ++k) n6 *= static_cast<u64>(rows.nbins);
    job.packed_size = n6;
    job.rows = static_cast<u32>(rows.rows);
    job.parity = parity != nullptr;
    if (parity) {
      job.par = *parity;
      if (!parity->exact && (g.pixel == nullptr || parity->pixel_unit == nullptr))
        throw DeviceError("pixel-mode parity on the GPU needs graph pixels and pixel centres");
    }
    return run_job(job, opt);
  }
  std::unique_ptr<NpcfDeviceGraph> make_device_graph(const std::vector<int>& devices) override {
    return std::make_unique<DeviceGraphImpl>(devices);
  }

  NpcfGraphHost build_graph(const NpcfPointsView& p, const NpcfGraphSpec& spec,
                            const NpcfOptions& opt) override {
    return npcf_build_graph(p, spec, opt);
  }
};

}  // namespace

NpcfKernels* npcf_kernels_instance() {
  static NpcfImpl impl;
  return &impl;
}

}  // namespace almagest::kernels
