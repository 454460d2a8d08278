// The CUDA SHT plans behind kernels::ShtKernels: persistent device state (ring-pair tables,
// Bluestein chirp spectra, cuFFT plans per column count, work buffers) and the launch sequence
// of synthesis and adjoint. Each plan owns its stream; plans of different nside coexist (no
// process-wide kernel attributes are cached or changed).
#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "almagest/kernels/sht_cuda.hpp"
#include "cuda_check.cuh"
#include "device_buffer.cuh"
#include "sht_kernels.cuh"
#include "sht_polar_dft.cuh"
#include "sht_tables_plan.cuh"

namespace almagest::kernels {
namespace {

using sht::cplx;

/// A cuFFT plan without a work area of its own: the DevicePlan gives its belt plans one work area
/// and its polar plans another (within each group they run one after another).
class FftPlan {
public:
  FftPlan(int n, int batch, cufftType type, int idist, int odist, cudaStream_t s) {
    int dims[1] = {n};
    CUFFT_CHECK(cufftCreate(&h_));
    ok_ = true;
    CUFFT_CHECK(cufftSetAutoAllocation(h_, 0));
    CUFFT_CHECK(cufftMakePlanMany(h_, 1, dims, nullptr, 1, idist, nullptr, 1, odist, type, batch,
                                  &work_));
    CUFFT_CHECK(cufftSetStream(h_, s));
  }
  ~FftPlan() {
    if (ok_) cufftDestroy(h_);
  }
  FftPlan(const FftPlan&) = delete;
  FftPlan& operator=(const FftPlan&) = delete;
  cufftHandle get() const { return h_; }
  void set_stream(cudaStream_t s) { CUFFT_CHECK(cufftSetStream(h_, s)); }
  std::size_t work_size() const { return work_; }
  void set_work_area(void* p) { CUFFT_CHECK(cufftSetWorkArea(h_, p)); }

private:
  cufftHandle h_ = 0;
  bool ok_ = false;
  std::size_t work_ = 0;
};

/// Columns * components up to which the belt FFTs of a full-sky transform read and write the
/// map itself, one execution per column (no copy through BR).
constexpr int kDirectBeltColumns = 4;

struct ColumnPlans {
  std::unique_ptr<FftPlan> belt_c2r, belt_r2c;
  std::unique_ptr<FftPlan> belt_c2r_one, belt_r2c_one;  ///< one column, for direct belt FFTs
  std::vector<std::unique_ptr<FftPlan>> polar;  ///< one per polar class
};

/// Which Legendre stage batched calls take: ALMAGEST_SHT_LEGENDRE=recursion (the recursion
/// kernels always), =tables (the table path for synthesis and adjoint of >= 2 columns), unset or
/// =auto (the table path for adjoints of at least kTableMinCols columns, where measured faster).
enum class LegendreMode { Auto, Recursion, Tables };
LegendreMode legendre_mode() {
  static const LegendreMode v = [] {
    const char* e = std::getenv("ALMAGEST_SHT_LEGENDRE");
    const std::string m = e ? e : "";
    if (m == "recursion") return LegendreMode::Recursion;
    if (m == "tables") return LegendreMode::Tables;
    return LegendreMode::Auto;
  }();
  return v;
}
/// The plans' tuning switches, read once per process from the environment (A/B runs against
/// the earlier forms; the defaults were measured faster on the H200, docs/benchmarks.md).
struct Switches {
  /// The recursion adjoints read the belt rings' F_m from the belt spectra (the unalias kernel
  /// then writes the polar rings' F alone); ALMAGEST_SHT_UNALIAS=kernel: all through F.
  bool belt_from_spectra;
  /// ... and the polar rings' F_m from the Bluestein rows (where the plan has the polar
  /// tables); ALMAGEST_SHT_UNALIAS=polar-kernel: through the unalias kernel.
  bool polar_from_rows;
  /// The spin-0 recursion adjoint's blocks turn their mode's sums into alm at their end;
  /// ALMAGEST_SHT_FINISH=kernel: a finish kernel after the grid.
  bool finish_in_block;
  /// A call runs the belt rings' glue (aliasing or loading, belt FFT, assembly) on a second
  /// stream beside the polar rows' Bluestein chain (forked after the Legendre stage of a
  /// synthesis, joined before that of an adjoint; two branches of the CUDA graphs);
  /// ALMAGEST_SHT_FORK=0: one stream.
  bool fork_belt_rows;
  /// Spin-0 plans keep the chains' start values in a table (DevicePlan::build_start_table);
  /// ALMAGEST_SHT_START=compute: the kernels compute them.
  bool start_table;
  /// Spin-0 plans with a start table also keep the adjoint's skip table (DevicePlan::
  /// build_skip_table: the leading dead chunks of each tile not run) where it skips at least
  /// kAdjSkipMinShare of the chunks; ALMAGEST_SHT_ADJ_SKIP=0: never (every chunk run), =1:
  /// whatever it skips (for checks at small nside).
  int adjoint_skip;  ///< -1 by share, 0 never, 1 always
  /// The polar rows are loaded or aliased into an input buffer whose zero padding stays, and the
  /// forward FFTs read it into PU (DevicePlan::build_polar_input); ALMAGEST_SHT_PU_IN=0: in place
  /// in PU, the padding written by every call.
  bool polar_input;
  /// The polar Bluestein FFTs of a call in two groups of classes on two streams (the second on
  /// the belt rows' stream once its own work is queued; DevicePlan::polar_convolution);
  /// ALMAGEST_SHT_POLAR_SPLIT=0: all on the plan's stream.
  bool polar_two_streams;
  /// The adjoint's polar rows as one DFT per ring pair in a block's shared memory
  /// (sht_polar_dft.cu, DevicePlan::build_polar_dft) in place of the polar load and the cuFFT
  /// Bluestein chain: from nside kPolarDftMinNside (measured on the H200, docs/benchmarks.md:
  /// faster from 1024, slower at 512 and below for spin 0); ALMAGEST_SHT_POLAR_DFT=0: never,
  /// =1: at every nside it reaches (polar_dft_max_nside).
  int polar_dft;  ///< -1 by nside, 0 never, 1 always
};
/// Smallest nside whose adjoint takes the shared-memory polar DFT (Switches::polar_dft): the
/// spin-0 adjoint at nside 2048 / 1024 / 512 / 128 in 21.41 / 3.098 / 0.507 / 0.064 ms against
/// 21.70 / 3.114 / 0.494 / 0.045 through the Bluestein chain (H200, two rounds each).
constexpr int kPolarDftMinNside = 1024;
/// Least share of the spin-0 adjoint's tile chunks that its skip table must skip to be kept
/// (Switches::adjoint_skip). Measured on the H200 (docs/benchmarks.md): at nside 2048 it skips
/// 3.09% and the adjoint takes 20.84 against 21.41 ms; at 1024 it skips almost none and costs
/// 1% (3.132 against 3.103 ms), so it is dropped there.
constexpr double kAdjSkipMinShare = 0.01;

const Switches& switches() {
  static const Switches v = [] {
    auto is = [](const char* name, const char* value) {
      const char* e = std::getenv(name);
      return e && std::string(e) == value;
    };
    Switches w{};
    w.belt_from_spectra = !is("ALMAGEST_SHT_UNALIAS", "kernel");
    w.polar_from_rows = w.belt_from_spectra && !is("ALMAGEST_SHT_UNALIAS", "polar-kernel");
    w.finish_in_block = !is("ALMAGEST_SHT_FINISH", "kernel");
    w.fork_belt_rows = !is("ALMAGEST_SHT_FORK", "0");
    w.start_table = !is("ALMAGEST_SHT_START", "compute");
    w.adjoint_skip = !w.start_table || is("ALMAGEST_SHT_ADJ_SKIP", "0") ? 0
                     : is("ALMAGEST_SHT_ADJ_SKIP", "1")                   ? 1
                                                                          : -1;
    w.polar_two_streams = !is("ALMAGEST_SHT_POLAR_SPLIT", "0");
    w.polar_input = !is("ALMAGEST_SHT_PU_IN", "0");
    w.polar_dft = is("ALMAGEST_SHT_POLAR_DFT", "0") ? 0 : is("ALMAGEST_SHT_POLAR_DFT", "1") ? 1 : -1;
    return w;
  }();
  return v;
}
/// Columns from which the table path takes the adjoint in auto mode: measured on the H200 at
/// nside 64, 128 and 256 (docs/benchmarks.md), it is slower than the recursion below 8 columns
/// and faster from 8 (nside 128 spin 0: 0.0252 against 0.0271 ms per column at 8, 0.0150
/// against 0.0240 at 64).
constexpr int kTableMinCols = 8;
/// Largest nside for which auto mode builds tables (their size grows as nside^3; measured up to
/// this one).
constexpr int kTableMaxNside = 256;
/// The mode's rule: whether a call of ncols columns in direction op takes the table path (where
/// the plan has tables).
bool table_path_for(ShtOp op, int ncols) {
  switch (legendre_mode()) {
    case LegendreMode::Tables:
      return ncols >= 2;
    case LegendreMode::Auto:
      return op == ShtOp::Adjoint && ncols >= kTableMinCols;
    case LegendreMode::Recursion:
      break;
  }
  return false;
}

/// Whether `bytes` are at most a quarter of the current device's free memory: the limit for a
/// plan's optional tables (each falls back to computing its values where it does not fit).
bool within_free_quarter(std::size_t bytes) {
  std::size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  return bytes <= free_b / 4;
}

class DevicePlan final : public ShtDevicePlan {
public:
  explicit DevicePlan(const ShtDeviceDesc& d) : d_(d) {
    if (d.nside < 1 || d.lmax < 0 || (d.spin != 0 && d.spin != 2) || d.max_cols < 1)
      throw DeviceError("sht: invalid device plan description");
    DeviceGuard guard(d.device);
    sht::prepare_legendre_kernels();
    stream_ = std::make_unique<Stream>();
    side_ = std::make_unique<Stream>();
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, d.device));
    name_ = prop.name;
    ns_ = d.nside;
    lmax_ = d.lmax;
    ncomp_ = d.spin == 0 ? 1 : 2;
    nrings_ = 4 * ns_ - 1;
    npix_ = 12LL * ns_ * ns_;
    nalm_ = static_cast<std::size_t>(lmax_ + 1) * (lmax_ + 2) / 2;
    msize_ = d.observed_pixels.empty() ? npix_ : static_cast<std::int64_t>(d.observed_pixels.size());
    const int nbelt = 2 * ns_ + 1, npolar = 2 * (ns_ - 1), N = 4 * ns_;
    cudaStream_t s = *stream_;

    // Ring pairs: mlim and the active list (pairs with an observed pixel), pole -> equator.
    const int npairs = 2 * ns_;
    std::vector<int> mlim(npairs), active;
    std::vector<char> observed_ring(nrings_, d.observed_pixels.empty() ? 1 : 0);
    for (auto p : d.observed_pixels) observed_ring[ring_of(p)] = 1;
    for (int p = 0; p < npairs; ++p) {
      const sht::RingInfo g = sht::ring_info(ns_, p);
      mlim[p] = sht::mlim_of(lmax_, d.spin, g.sth, g.z);
      if (observed_ring[p] || observed_ring[nrings_ - 1 - p]) active.push_back(p);
    }
    std::vector<int> first(lmax_ + 1, static_cast<int>(active.size()));
    for (int m = 0; m <= lmax_; ++m)
      for (std::size_t i = 0; i < active.size(); ++i)
        if (mlim[active[i]] >= m) {
          first[m] = static_cast<int>(i);
          break;
        }
    std::vector<double> nu(lmax_ + 1);
    nu[0] = 1.0;
    for (int m = 1; m <= lmax_; ++m) nu[m] = nu[m - 1] * std::sqrt((2.0 * m - 1.0) / (2.0 * m));
    // Spin 0: odd-parity-basis tables (fill_obasis), each mode padded to whole chunks.
    if (d.spin == 0) {
      const auto koff =
          padded_offsets(sht::kObasisChunk, [&](int m) { return sht::obasis_steps(lmax_, m); });
      std::vector<double2> ab(ktotal_, double2{0.0, 0.0});
      std::vector<sht::ObasisNorm> nrm(ktotal_, sht::ObasisNorm{0.0, 0.0, 0.0});
      for (int m = 0; m <= lmax_; ++m)
        sht::fill_obasis(lmax_, m, reinterpret_cast<double*>(ab.data() + koff[m]),
                         nrm.data() + koff[m]);
      koff_ = DeviceBuffer<long long>::from(koff, s);
      ab_ = DeviceBuffer<double2>::from(ab, s);
      norm_ = DeviceBuffer<sht::ObasisNorm>::from(nrm, s);
    }
    // Spin 2: normalised recursion tables (fill_mu_table) in alm layout.
    if (d.spin == 2) {
      std::vector<double> A(nalm_, 0.0), B(nalm_, 0.0), Nt(nalm_, 0.0);
      for (int m = 0; m <= lmax_; ++m) {
        const std::size_t mst = static_cast<std::size_t>(m) * (2 * lmax_ + 1 - m) / 2;
        sht::fill_mu_table(2, lmax_, m, A.data() + mst, B.data() + mst, Nt.data() + mst);
      }
      // The synthesis reads (A_l, B_l) in the padded step layout (entry l - l0 of mode m).
      const auto koff = padded_offsets(
          sht::kSpin2Chunk, [&](int m) { return std::max(0, lmax_ - sht::l0_of(2, m) + 1); });
      std::vector<double2> ab(ktotal_, double2{0.0, 0.0});
      for (int m = 0; m <= lmax_; ++m) {
        const std::size_t mst = static_cast<std::size_t>(m) * (2 * lmax_ + 1 - m) / 2;
        for (int l = sht::l0_of(2, m); l <= lmax_; ++l)
          ab[koff[m] + l - sht::l0_of(2, m)] = double2{A[mst + l], B[mst + l]};
      }
      koff_ = DeviceBuffer<long long>::from(koff, s);
      ab_ = DeviceBuffer<double2>::from(ab, s);
      tabA_ = DeviceBuffer<double>::from(A, s);
      tabB_ = DeviceBuffer<double>::from(B, s);
      tabN_ = DeviceBuffer<double>::from(Nt, s);
    }
    // The batched table path (docs/sht.md) where its tables and work matrices take at most
    // 4 GiB and a quarter of the free device memory (the tables are filled on the host): in auto
    // mode for plans of at least kTableMinCols columns up to nside kTableMaxNside, adjoints only
    // (measured faster there; the batched recursion synthesis is faster than the tables); with
    // ALMAGEST_SHT_LEGENDRE=tables for both directions from two columns. Otherwise, or if they
    // do not fit after all, the recursion kernels.
    const bool want_tables = table_path_for(ShtOp::Adjoint, d.max_cols) &&
                             (legendre_mode() == LegendreMode::Tables || ns_ <= kTableMaxNside);
    if (want_tables) {
      const std::size_t need = sht::LegendreTables::bytes_needed(ns_, lmax_, d.spin, d.max_cols);
      if (need <= (std::size_t{4} << 30) && within_free_quarter(need)) {
        try {
          tables_ = std::make_unique<sht::LegendreTables>(ns_, lmax_, d.spin, d.max_cols, mlim, s);
        } catch (const DeviceOutOfMemory&) {
          tables_.reset();
        }
      }
    }
    nactive_ = static_cast<int>(active.size());
    active_ = DeviceBuffer<int>::from(active.empty() ? std::vector<int>{0} : active, s);
    first_ = DeviceBuffer<int>::from(first, s);
    mlim_ = DeviceBuffer<int>::from(mlim, s);
    nu_ = DeviceBuffer<double>::from(nu, s);
    if (!d.observed_pixels.empty()) pixels_ = DeviceBuffer<std::int64_t>::from(d.observed_pixels, s);

    // FP64 operation counts of the Legendre stage per column (see docs/sht.md), FMA = 2.
    double steps = 0.0;
    for (int m = 0; m <= lmax_; ++m) {
      const int l0 = d.spin == 0 ? m : std::max(m, 2);
      if (l0 > lmax_) continue;
      const int n = d.spin == 0 ? sht::obasis_steps(lmax_, m) : lmax_ - l0 + 1;
      for (int i = first[m]; i < nactive_; ++i)
        if (mlim[active[i]] >= m) steps += n;
    }
    // spin 0, per odd-chain step (two degrees): two FMAs of recursion (4), four accumulating
    // FMAs (8); spin 2, per degree: t (1), t -+ B (2), two fma (4), eight accumulating FMAs (16).
    const double per = d.spin == 0 ? 12.0 : 23.0;
    counts_.legendre_flops_synthesis = steps * per;
    counts_.legendre_flops_adjoint = steps * per;
    if (tables_) {  // per column: the GEMMs' multiply-adds (padding included), FMA = 2
      const auto L = sht::table_layout(ns_, lmax_, d.spin, 1);
      const double gemm = 2.0 * L.ntab() * L.batch() * static_cast<double>(L.mat()) * L.per_col();
      counts_.legendre_flops_adjoint = gemm;
      if (table_path_for(ShtOp::Synthesis, d.max_cols)) counts_.legendre_flops_synthesis = gemm;
    }

    // Work buffers for max_cols columns.
    const std::size_t ncc = static_cast<std::size_t>(d.max_cols) * ncomp_;
    alm_.allocate(ncc * nalm_);
    map_.allocate(ncc * static_cast<std::size_t>(msize_));
    if (!d.observed_pixels.empty()) full_.allocate(ncc * static_cast<std::size_t>(npix_));
    W_.allocate(static_cast<std::size_t>(d.max_cols) * ktotal_ * 2);
    F_.allocate(ncc * nrings_ * static_cast<std::size_t>(lmax_ + 1));
    F_.zero(s);  // rings never written (unobserved pairs) stay zero
    BH_.allocate(ncc * nbelt * static_cast<std::size_t>(N / 2 + 1));
    {
      std::vector<cplx> ph(static_cast<std::size_t>(N));
      for (int j = 0; j < N; ++j) {
        const double t = 3.141592653589793238462643383279502884 * j / N;
        ph[static_cast<std::size_t>(j)] = {std::cos(t), std::sin(t)};
      }
      belt_phase_ = DeviceBuffer<cplx>::from(ph, s);
    }
    BR_.allocate(ncc * nbelt * static_cast<std::size_t>(N));
    if (npolar > 0) {
      std::vector<unsigned char> cls_of;
      classes_ = sht::polar_classes(ns_, d.max_cols, cls_of);
      for (const auto& c : classes_) polar_per_col_ += static_cast<long long>(c.rows) * c.M;
      // The polar classes in two groups (largest first, each to the group with less work): the
      // second runs its Bluestein FFTs on the belt rows' stream after the belt FFT, the first on
      // the plan's stream after the polar rows' load. Those two start the groups' loads, in
      // padded polar elements of equal time (H200, nside 2048 spin 0 adjoint: belt FFT 0.30 ms,
      // polar load 0.13 ms, the Bluestein FFTs and product 0.97 ms for 19.6 M elements).
      side_class_.assign(classes_.size(), 0);  // all on the plan's stream where not split
      if (switches().polar_two_streams)
        side_class_ = sht::polar_groups(
            classes_, static_cast<long long>(0.13 / 0.97 * static_cast<double>(polar_per_col_)),
            static_cast<long long>(0.30 / 0.97 * 19.6e6 / (4097.0 * 4097.0) * nbelt * (N / 2 + 1)));
      cls_of_ = DeviceBuffer<unsigned char>::from(cls_of, s);
      // Each pair's row in PU: class base (times the call's columns), rows M, (q - qlo) M.
      std::vector<long long> prow(3 * static_cast<std::size_t>(npolar / 2));
      for (int q = 0; q < npolar / 2; ++q) {
        const auto& c = classes_[cls_of[static_cast<std::size_t>(q)]];
        prow[3 * q] = c.cbase;
        prow[3 * q + 1] = static_cast<long long>(c.rows) * c.M;
        prow[3 * q + 2] = static_cast<long long>(q - c.qlo) * c.M;
      }
      prow_ = DeviceBuffer<long long>::from(prow, s);
      PU_.allocate(ncc * static_cast<std::size_t>(polar_per_col_));
      // Bluestein: FFT of the wrapped chirp / M per row; the synthesis uses its conjugate (the
      // FFT of the conjugate chirp, the chirp being even).
      chirp_fft_.allocate(static_cast<std::size_t>(polar_per_col_));
      sht::launch_chirp_rows(fft_args(1), chirp_fft_.data(), s);
      for (const auto& c : classes_) {
        FftPlan p(c.M, c.rows, CUFFT_Z2Z, c.M, c.M, s);
        DeviceBuffer<char> work(std::max<std::size_t>(p.work_size(), 1));
        p.set_work_area(work.data());
        auto* z = reinterpret_cast<cufftDoubleComplex*>(chirp_fft_.data() + c.cbase);
        CUFFT_CHECK(cufftExecZ2Z(p.get(), z, z, CUFFT_FORWARD));
        sht::launch_scale(chirp_fft_.data() + c.cbase, static_cast<std::size_t>(c.rows) * c.M,
                          1.0 / c.M, s);
        stream_->sync();
      }
    }
    // The cuFFT plans and their work area for max_cols columns now, so that a device too small
    // for this plan fails here (DeviceOutOfMemory, which the engine answers with a smaller
    // batch) and not in the first call.
    plans(d.max_cols);
    // The start table and the polar tables take what the work buffers leave.
    if (d.spin == 0 && switches().start_table) build_start_table(first);
    if (d.spin == 0 && adjoint_skip_switch() != 0 && !start_v_.empty()) build_skip_table(first);
    if (npolar > 0) build_polar_tables();
    if (npolar > 0) build_polar_dft();
    if (npolar > 0 && switches().polar_input) build_polar_input(ncc);
    CUDA_CHECK(cudaEventCreate(&ev0_));
    CUDA_CHECK(cudaEventCreate(&ev1_));
    CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&join_, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&polar_in_, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&polar_out_, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&legacy_, cudaEventDisableTiming));
    stream_->sync();
  }

  ~DevicePlan() override {
    for (auto& [k, ex] : graphs_) cudaGraphExecDestroy(ex);
    for (cudaEvent_t e : {ev0_, ev1_, fork_, join_, polar_in_, polar_out_, legacy_})
      if (e) cudaEventDestroy(e);
  }

  std::string device_name() const override { return name_; }
  ShtWorkCounts counts() const override {
    ShtWorkCounts c = counts_;
    c.adjoint_skipped_share = skip_c0_.empty() ? 0.0 : skip_share_;
    c.device_bytes = alm_.bytes() + map_.bytes() + full_.bytes() + F_.bytes() + BH_.bytes() +
                     BR_.bytes() + PU_.bytes() + PUin_.bytes() + chirp_fft_.bytes() +
                     fft_work_.bytes() +
                     fft_work_belt_.bytes() + soff_.bytes() + start_v_.bytes() +
                     pchirp_.bytes() + pphase_.bytes() + prow_.bytes() + pd_tw_.bytes() +
                     pd_chirps_.bytes() + pd_spec_.bytes() + pd_off_.bytes() +
                     start_e_.bytes() + pair_z_.bytes() + skip_c0_.bytes() + skip_v0_.bytes() +
                     skip_v1_.bytes() + skip_e_.bytes() +
                     W_.bytes() + ab_.bytes() + norm_.bytes() + tabA_.bytes() + tabB_.bytes() +
                     tabN_.bytes() + (tables_ ? tables_->bytes() : 0);
    return c;
  }

  void synthesis(const double* alm, double* map, int ncols) override {
    upload_alm(alm, ncols);
    run(ShtOp::Synthesis, ncols);
    download_map(map, ncols);
    synchronize();
  }
  void adjoint(const double* map, double* alm, int ncols) override {
    upload_map(map, ncols);
    run(ShtOp::Adjoint, ncols);
    download_alm(alm, ncols);
    synchronize();
  }
  void synthesis_device(const double* alm, double* map, int ncols) override {
    check_cols(ncols);
    DeviceGuard g(d_.device);
    check_device_pointer(alm, "alm");
    check_device_pointer(map, "map");
    after_legacy_stream();
    CUDA_CHECK(cudaMemcpyAsync(alm_.data(), alm, cc(ncols) * nalm_ * sizeof(cplx), cudaMemcpyDeviceToDevice, *stream_));
    run(ShtOp::Synthesis, ncols);
    CUDA_CHECK(cudaMemcpyAsync(map, map_.data(), cc(ncols) * static_cast<std::size_t>(msize_) * sizeof(double),
                               cudaMemcpyDeviceToDevice, *stream_));
    synchronize();
  }
  void adjoint_device(const double* map, double* alm, int ncols) override {
    check_cols(ncols);
    DeviceGuard g(d_.device);
    check_device_pointer(map, "map");
    check_device_pointer(alm, "alm");
    after_legacy_stream();
    CUDA_CHECK(cudaMemcpyAsync(map_.data(), map, cc(ncols) * static_cast<std::size_t>(msize_) * sizeof(double),
                               cudaMemcpyDeviceToDevice, *stream_));
    run(ShtOp::Adjoint, ncols);
    CUDA_CHECK(cudaMemcpyAsync(alm, alm_.data(), cc(ncols) * nalm_ * sizeof(cplx), cudaMemcpyDeviceToDevice, *stream_));
    synchronize();
  }
  void check_device_pointer(const void* p, const char* what) const {
    cudaPointerAttributes a{};
    if (!p || cudaPointerGetAttributes(&a, p) != cudaSuccess ||
        (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged) || a.device != d_.device) {
      cudaGetLastError();  // clear a failed query
      throw DeviceError(std::string("sht device call: the ") + what + " array is not device memory of CUDA device " +
                        std::to_string(d_.device));
    }
  }
  void after_legacy_stream() {
    CUDA_CHECK(cudaEventRecord(legacy_, cudaStreamLegacy));
    CUDA_CHECK(cudaStreamWaitEvent(*stream_, legacy_, 0));
  }
  void upload_alm(const double* alm, int ncols) override {
    check_cols(ncols);
    alm_.upload(reinterpret_cast<const cplx*>(alm), cc(ncols) * nalm_, *stream_);
  }
  void upload_map(const double* map, int ncols) override {
    check_cols(ncols);
    map_.upload(map, cc(ncols) * static_cast<std::size_t>(msize_), *stream_);
  }
  void download_alm(double* alm, int ncols) override {
    check_cols(ncols);
    alm_.download(reinterpret_cast<cplx*>(alm), cc(ncols) * nalm_, *stream_);
  }
  void download_map(double* map, int ncols) override {
    check_cols(ncols);
    map_.download(map, cc(ncols) * static_cast<std::size_t>(msize_), *stream_);
  }
  void synchronize() override { stream_->sync(); }

  void run(ShtOp op, int ncols) override {
    check_cols(ncols);
    DeviceGuard g(d_.device);
    if (graphs_ok_) {
      const auto key = std::make_pair(static_cast<int>(op), ncols);
      auto it = graphs_.find(key);
      if (it == graphs_.end()) {
        cudaGraphExec_t ex = capture(op, ncols);
        if (!ex) {
          enqueue(op, ncols);
          return;
        }
        it = graphs_.emplace(key, ex).first;
      }
      CUDA_CHECK(cudaGraphLaunch(it->second, *stream_));
      return;
    }
    enqueue(op, ncols);
  }

  std::vector<double> time(ShtOp op, int ncols, int reps) override {
    if (reps > 1 && std::getenv("ALMAGEST_SHT_STAGES")) print_stages(op, ncols);
    std::vector<double> out;
    for (int i = 0; i < reps; ++i) {
      CUDA_CHECK(cudaEventRecord(ev0_, *stream_));
      run(op, ncols);
      CUDA_CHECK(cudaEventRecord(ev1_, *stream_));
      CUDA_CHECK(cudaEventSynchronize(ev1_));
      float ms = 0.f;
      CUDA_CHECK(cudaEventElapsedTime(&ms, ev0_, ev1_));
      out.push_back(ms);
    }
    return out;
  }

  std::vector<double> time_legendre(ShtOp op, int ncols, int reps) override {
    check_cols(ncols);
    DeviceGuard g(d_.device);
    std::vector<double> out;
    for (int i = 0; i < reps; ++i) {
      CUDA_CHECK(cudaEventRecord(ev0_, *stream_));
      legendre(op, ncols, *stream_);
      CUDA_CHECK(cudaEventRecord(ev1_, *stream_));
      CUDA_CHECK(cudaEventSynchronize(ev1_));
      float ms = 0.f;
      CUDA_CHECK(cudaEventElapsedTime(&ms, ev0_, ev1_));
      out.push_back(ms);
    }
    return out;
  }

private:
  /// Records an event after the work enqueued so far when a stage profile is being taken.
  void mark(const char* name) {
    if (!marks_) return;
    cudaEvent_t e = nullptr;
    CUDA_CHECK(cudaEventCreate(&e));
    CUDA_CHECK(cudaEventRecord(e, *stream_));
    marks_->emplace_back(name, e);
  }
  /// ALMAGEST_SHT_STAGES: one call launched directly with events between its stages; the stage
  /// times go to stderr (a tuning aid for the benchmark, not used otherwise).
  void print_stages(ShtOp op, int ncols) {
    DeviceGuard g(d_.device);
    plans(ncols);
    std::vector<std::pair<const char*, cudaEvent_t>> marks;
    marks_ = &marks;
    mark("start");
    enqueue(op, ncols);
    marks_ = nullptr;
    stream_->sync();
    std::string line = std::string("stages ") + (op == ShtOp::Synthesis ? "synthesis" : "adjoint") +
                       " nside " + std::to_string(ns_) + " spin " + std::to_string(d_.spin) +
                       " cols " + std::to_string(ncols) + ":";
    float total = 0.f;
    for (std::size_t i = 1; i < marks.size(); ++i) {
      float ms = 0.f;
      CUDA_CHECK(cudaEventElapsedTime(&ms, marks[i - 1].second, marks[i].second));
      total += ms;
      char buf[96];
      std::snprintf(buf, sizeof buf, " %s %.4f", marks[i].first, ms);
      line += buf;
    }
    char buf[48];
    std::snprintf(buf, sizeof buf, " | total %.4f ms", total);
    std::fprintf(stderr, "%s%s\n", line.c_str(), buf);
    for (auto& [n, e] : marks) cudaEventDestroy(e);
  }
  void enqueue(ShtOp op, int ncols) {
    if (op == ShtOp::Synthesis)
      run_synthesis(ncols);
    else
      run_adjoint(ncols);
  }
  /// Captures one call into a CUDA graph (small transforms are launch-bound); null if capture
  /// is not possible here, in which case the plan launches directly from then on.
  cudaGraphExec_t capture(ShtOp op, int ncols) {
    plans(ncols);  // cuFFT plans are made outside the capture
    cudaStream_t s = *stream_;
    if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
      cudaGetLastError();
      graphs_ok_ = false;
      return nullptr;
    }
    bool ok = true;
    try {
      enqueue(op, ncols);
    } catch (const DeviceError&) {
      ok = false;
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t end = cudaStreamEndCapture(s, &graph);
    cudaGraphExec_t ex = nullptr;
    if (ok && end == cudaSuccess && graph &&
        cudaGraphInstantiate(&ex, graph, 0) == cudaSuccess) {
      cudaGraphDestroy(graph);
      return ex;
    }
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    graphs_ok_ = false;
    return nullptr;
  }
  /// The spin-0 start table (LegendreArgs::start_v): the odd chains' start values of every mode
  /// and active pair, computed once per plan (10 bytes per entry: 169 MB at nside 2048 full
  /// sky). Where it does not fit (DeviceOutOfMemory, or more than a quarter of the free memory)
  /// the kernels compute the values themselves, as they do with ALMAGEST_SHT_START=compute.
  void build_start_table(const std::vector<int>& first) {
    std::vector<long long> soff(lmax_ + 2, 0);
    for (int m = 0; m <= lmax_; ++m) soff[m + 1] = soff[m] + (nactive_ - first[m]);
    const auto n = static_cast<std::size_t>(soff[lmax_ + 1]);
    if (!within_free_quarter(n * (sizeof(double) + sizeof(short)))) return;
    try {  // all four or none (the locals free what was allocated when one fails)
      auto so = DeviceBuffer<long long>::from(soff, *stream_);
      DeviceBuffer<double> v(std::max<std::size_t>(n, 1)), z(2 * static_cast<std::size_t>(ns_));
      DeviceBuffer<short> e(std::max<std::size_t>(n, 1));
      soff_ = std::move(so);
      start_v_ = std::move(v);
      start_e_ = std::move(e);
      pair_z_ = std::move(z);
    } catch (const DeviceOutOfMemory&) {
      return;
    }
    sht::launch_start_table(legendre_args(1), soff_.data(), start_v_.data(), start_e_.data(),
                            pair_z_.data(), *stream_);
  }
  /// The spin-0 adjoint's skip table (AdjointArgs::skip_c0 ...): per mode and tile of the
  /// single-column shape the first chunk in which a chain is live, and the chains' values there
  /// (18 bytes per start-table entry: 304 MB at nside 2048 full sky). Skipped where it would
  /// take more than a quarter of the free memory (every chunk is then run).
  /// The plan's skip-table rule: its descriptor's (ShtDeviceDesc::adjoint_skip), else the
  /// environment's (Switches::adjoint_skip); never without a start table.
  int adjoint_skip_switch() const {
    if (!switches().start_table) return 0;
    return d_.adjoint_skip >= 0 ? d_.adjoint_skip : switches().adjoint_skip;
  }
  void build_skip_table(const std::vector<int>& first) {
    const std::size_t n = start_v_.size();
    const int ntiles = sht::adjoint_skip_tiles(nactive_);
    const std::size_t nc = static_cast<std::size_t>(lmax_ + 1) * ntiles;
    if (ntiles < 1 || ntiles > sht::kAdjSkipMaxTiles ||
        !within_free_quarter(n * (2 * sizeof(double) + sizeof(short)) + nc * sizeof(int)))
      return;
    try {  // all four or none
      DeviceBuffer<int> c0(nc);
      DeviceBuffer<double> v0(n), v1(n);
      DeviceBuffer<short> e(n);
      skip_c0_ = std::move(c0);
      skip_v0_ = std::move(v0);
      skip_v1_ = std::move(v1);
      skip_e_ = std::move(e);
    } catch (const DeviceOutOfMemory&) {
      return;
    }
    sht::AdjointArgs a = adjoint_args(1);
    a.skip_ntiles = ntiles;
    sht::launch_adjoint_skip_table(a, skip_c0_.data(), skip_v0_.data(), skip_v1_.data(),
                                   skip_e_.data(), *stream_);
    // The share of the tiles' chunks it skips; below kAdjSkipMinShare the table is dropped.
    std::vector<int> c0(nc);
    skip_c0_.download(c0.data(), nc, *stream_);
    CUDA_CHECK(cudaStreamSynchronize(*stream_));
    // koff_ as the constructor laid it out (the same ktotal_ again).
    const auto koff =
        padded_offsets(sht::kObasisChunk, [&](int m) { return sht::obasis_steps(lmax_, m); });
    double all = 0.0, skipped = 0.0;
    for (int m = 0; m <= lmax_; ++m) {
      const double nchunk = static_cast<double>(koff[m + 1] - koff[m]) / sht::kAdjSkipChunk;
      const int tiles = sht::adjoint_skip_tiles(nactive_ - first[m]);
      for (int t = 0; t < tiles; ++t) {
        all += nchunk;
        skipped += c0[static_cast<std::size_t>(m) * ntiles + t];
      }
    }
    skip_share_ = all > 0.0 ? skipped / all : 0.0;
    if (adjoint_skip_switch() < 0 && skip_share_ < kAdjSkipMinShare) {
      skip_c0_ = {};
      skip_v0_ = {};
      skip_v1_ = {};
      skip_e_ = {};
    }
  }
  /// The polar chirp and phase tables (FftArgs::pchirp, pphase; 32 bytes per polar bin: 67 / 268
  /// MB at nside 1024 / 2048): the polar glue kernels read their chirps and phases from them, and
  /// with them the recursion adjoints read the polar rings' F_m from the Bluestein rows
  /// (Switches::polar_from_rows). Skipped where they would take more than a quarter of the free
  /// memory (the kernels then compute the values, and the unalias kernel writes the polar F).
  void build_polar_tables() {
    const auto n = static_cast<std::size_t>(sht::polar_table_size(ns_));
    if (!within_free_quarter(2 * n * sizeof(cplx))) return;
    try {  // both or none
      DeviceBuffer<cplx> c(n), p(n);
      pchirp_ = std::move(c);
      pphase_ = std::move(p);
    } catch (const DeviceOutOfMemory&) {
      return;
    }
    sht::launch_polar_tables(ns_, pchirp_.data(), pphase_.data(), *stream_);
  }
  /// The tables of the adjoint's shared-memory polar DFT (PolarDftArgs: 34 + 73 MB at nside
  /// 2048), where nside is within its reach (polar_dft_max_nside) and they fit in a quarter of
  /// the free memory; else the adjoint takes the Bluestein chain.
  void build_polar_dft() {
    const int sw = d_.polar_dft >= 0 ? d_.polar_dft : switches().polar_dft;
    if (sw == 0 || (sw < 0 && ns_ < kPolarDftMinNside) || ns_ > sht::polar_dft_max_nside())
      return;
    std::vector<long long> off;
    const auto nspec = static_cast<std::size_t>(sht::polar_dft_spectrum_size(ns_, off));
    const auto nchirp = static_cast<std::size_t>(sht::pdft::chirp_offset(ns_));
    const std::size_t ntw = sht::pdft::kTwiddles;
    if (!within_free_quarter((nspec + nchirp + ntw) * sizeof(cplx) + off.size() * sizeof(long long)))
      return;
    try {
      DeviceBuffer<cplx> tw(ntw), ch(nchirp), sp(nspec);
      auto o = DeviceBuffer<long long>::from(off, *stream_);
      pd_tw_ = std::move(tw);
      pd_chirps_ = std::move(ch);
      pd_spec_ = std::move(sp);
      pd_off_ = std::move(o);
    } catch (const DeviceOutOfMemory&) {
      return;
    }
    sht::launch_polar_dft_tables(ns_, pd_tw_.data(), pd_chirps_.data(), pd_spec_.data(),
                                 pd_off_.data(), *stream_);
  }
  bool polar_dft() const { return !pd_spec_.empty(); }
  sht::PolarDftArgs polar_dft_args() const {
    return {pd_tw_.data(), pd_chirps_.data(), pd_spec_.data(), pd_off_.data(), prow_.data()};
  }
  /// The polar rows' input buffer (FftArgs::PUin, as large as PU: 628 MB at nside 2048 spin 2):
  /// zeroed once, so that the load and alias kernels write each row's N entries and not its
  /// zero padding (about half of the rows' entries) in every call. Skipped where it does not fit.
  void build_polar_input(std::size_t ncc) {
    const std::size_t n = ncc * static_cast<std::size_t>(polar_per_col_);
    if (!within_free_quarter(n * sizeof(cplx))) return;
    try {
      PUin_.allocate(n);
    } catch (const DeviceOutOfMemory&) {
      return;
    }
    CUDA_CHECK(cudaMemsetAsync(PUin_.data(), 0, PUin_.bytes(), *stream_));
  }
  /// Whether the recursion adjoints of this plan read the polar rings' F_m from the Bluestein
  /// rows (no unalias kernel then).
  bool adjoint_polar_from_rows() const {
    return !pchirp_.empty() && switches().polar_from_rows;
  }
  std::size_t cc(int ncols) const { return static_cast<std::size_t>(ncols) * ncomp_; }
  /// The padded step layout of LegendreArgs::koff: mode m's steps(m) rounded up to whole
  /// chunks, offsets for m = 0..lmax + 1; sets ktotal_ to the total.
  template <class Steps>
  std::vector<long long> padded_offsets(int chunk, Steps steps) {
    std::vector<long long> koff(lmax_ + 2, 0);
    for (int m = 0; m <= lmax_; ++m) koff[m + 1] = koff[m] + (steps(m) + chunk - 1) / chunk * chunk;
    ktotal_ = static_cast<std::size_t>(koff[lmax_ + 1]);
    return koff;
  }
  /// First pixel of the belt (ring nside - 1): the polar cap's 2 nside (nside - 1) pixels.
  std::size_t belt_start() const { return 2ULL * ns_ * (ns_ - 1); }
  void check_cols(int ncols) const {
    if (ncols < 1 || ncols > d_.max_cols)
      throw DeviceError("sht: " + std::to_string(ncols) + " columns requested, plan holds " +
                        std::to_string(d_.max_cols));
  }
  int ring_of(std::int64_t p) const {
    const std::int64_t ncap = 2LL * ns_ * (ns_ - 1);
    if (p < ncap) {
      std::int64_t i = static_cast<std::int64_t>(0.5 * (1.0 + std::sqrt(1.0 + 2.0 * p)));
      while (2 * i * (i - 1) > p) --i;
      while (2 * (i + 1) * i <= p) ++i;
      return static_cast<int>(i - 1);
    }
    if (p < npix_ - ncap) return static_cast<int>((p - ncap) / (4LL * ns_) + ns_ - 1);
    const std::int64_t pp = npix_ - 1 - p;
    std::int64_t i = static_cast<std::int64_t>(0.5 * (1.0 + std::sqrt(1.0 + 2.0 * pp)));
    while (2 * i * (i - 1) > pp) --i;
    while (2 * (i + 1) * i <= pp) ++i;
    return static_cast<int>(4LL * ns_ - 1 - i);
  }

  ColumnPlans& plans(int ncols) {
    auto it = plans_.find(ncols);
    if (it != plans_.end()) return it->second;
    const int N = 4 * ns_, nh = N / 2 + 1, nbelt = 2 * ns_ + 1;
    const int b = static_cast<int>(cc(ncols));
    ColumnPlans p;
    p.belt_c2r = std::make_unique<FftPlan>(N, b * nbelt, CUFFT_Z2D, nh, N, *stream_);
    p.belt_r2c = std::make_unique<FftPlan>(N, b * nbelt, CUFFT_D2Z, N, nh, *stream_);
    if (b <= kDirectBeltColumns) {
      p.belt_c2r_one = std::make_unique<FftPlan>(N, nbelt, CUFFT_Z2D, nh, N, *stream_);
      p.belt_r2c_one = std::make_unique<FftPlan>(N, nbelt, CUFFT_D2Z, N, nh, *stream_);
    }
    for (const auto& c : classes_)
      p.polar.push_back(std::make_unique<FftPlan>(c.M, b * c.rows, CUFFT_Z2Z, c.M, c.M, *stream_));
    // Two work areas, as the belt and the polar FFTs may run at the same time
    // (Switches::fork_belt_rows).
    std::size_t need_belt = std::max(p.belt_c2r->work_size(), p.belt_r2c->work_size());
    if (p.belt_c2r_one)
      need_belt = std::max({need_belt, p.belt_c2r_one->work_size(), p.belt_r2c_one->work_size()});
    std::size_t need = 0;
    for (std::size_t c = 0; c < p.polar.size(); ++c) {  // the side group shares the belt's area
      std::size_t& n = side_class_[c] ? need_belt : need;
      n = std::max(n, p.polar[c]->work_size());
    }
    auto& stored = plans_.emplace(ncols, std::move(p)).first->second;
    if (need > fft_work_.size() || need_belt > fft_work_belt_.size()) {
      // A larger work area: every plan moves to it, and graphs captured with the old one are
      // dropped (they are captured again on their next call).
      if (need > fft_work_.size()) fft_work_.allocate(need);
      if (need_belt > fft_work_belt_.size()) fft_work_belt_.allocate(need_belt);
      for (auto& [n, cp] : plans_) set_work_areas(cp);
      for (auto& [k, ex] : graphs_) cudaGraphExecDestroy(ex);
      graphs_.clear();
    } else {
      set_work_areas(stored);
    }
    return stored;
  }
  void set_work_areas(ColumnPlans& cp) {
    for (auto* q : {cp.belt_c2r.get(), cp.belt_r2c.get(), cp.belt_c2r_one.get(), cp.belt_r2c_one.get()})
      if (q) q->set_work_area(fft_work_belt_.data());
    for (std::size_t c = 0; c < cp.polar.size(); ++c)
      cp.polar[c]->set_work_area(side_class_[c] ? fft_work_belt_.data() : fft_work_.data());
  }

  sht::LegendreArgs legendre_args(int ncols) {
    sht::LegendreArgs a{};
    a.nside = ns_;
    a.lmax = lmax_;
    a.spin = d_.spin;
    a.ncols = ncols;
    a.nactive = nactive_;
    a.active = active_.data();
    a.first_active = first_.data();
    a.mlim = mlim_.data();
    a.nu = nu_.data();
    a.tabA = tabA_.data();
    a.tabB = tabB_.data();
    a.tabN = tabN_.data();
    a.alm = alm_.data();
    a.F = F_.data();
    a.koff = koff_.data();
    a.ab = ab_.data();
    a.norm = norm_.data();
    a.W = W_.data();
    return a;
  }
  sht::Spin0Args spin0_args(int ncols) {
    sht::Spin0Args a{};
    static_cast<sht::LegendreArgs&>(a) = legendre_args(ncols);
    if (!start_v_.empty()) {
      a.soff = soff_.data();
      a.start_v = start_v_.data();
      a.start_e = start_e_.data();
      a.pair_z = pair_z_.data();
    }
    return a;
  }
  sht::AdjointArgs adjoint_args(int ncols) {
    sht::AdjointArgs a{};
    static_cast<sht::Spin0Args&>(a) = spin0_args(ncols);
    a.spectra = switches().belt_from_spectra;
    a.BH = BH_.data();
    a.belt_phase = belt_phase_.data();
    a.polar_spectra = adjoint_polar_from_rows();
    a.ncc = static_cast<int>(cc(ncols));
    a.PU = PU_.data();
    a.prow = prow_.data();
    a.pchirp = pchirp_.data();
    a.pphase = pphase_.data();
    a.finish_in_block = switches().finish_in_block;
    if (!skip_c0_.empty()) {
      a.skip_c0 = skip_c0_.data();
      a.skip_ntiles = sht::adjoint_skip_tiles(nactive_);
      a.skip_v0 = skip_v0_.data();
      a.skip_v1 = skip_v1_.data();
      a.skip_e = skip_e_.data();
    }
    return a;
  }
  sht::FftArgs fft_args(int ncols) {
    sht::FftArgs f{};
    f.nside = ns_;
    f.lmax = lmax_;
    f.ncc = static_cast<int>(cc(ncols));
    f.npix = npix_;
    f.nclass = static_cast<int>(classes_.size());
    for (std::size_t c = 0; c < classes_.size(); ++c) f.cls[c] = classes_[c];
    f.cls_of = cls_of_.data();
    f.mlim = mlim_.data();
    f.F = F_.data();
    f.BH = BH_.data();
    f.BR = BR_.data();
    f.PU = PU_.data();
    f.PUin = PUin_.data();  // null where the plan has none
    f.ncc_in = static_cast<int>(cc(d_.max_cols));  // PUin is laid out for the plan's columns
    f.chirp_fft = chirp_fft_.data();
    f.pchirp = pchirp_.data();  // null where the plan has no polar tables
    f.pphase = pphase_.data();
    return f;
  }

  /// The polar Bluestein convolution: forward FFT per class, the chirp spectrum, inverse FFT.
  /// Where bs is another stream (Switches::polar_two_streams), the second group of classes
  /// (side_class_) runs on it, after what it holds and the plan's stream's work so far; the plan's
  /// stream waits for it at the end. Its cuFFT plans use the belt FFTs' work area (the belt FFT
  /// runs before them on bs).
  void polar_convolution(ColumnPlans& p, const sht::FftArgs& f, bool conjugate, cudaStream_t bs) {
    if (classes_.empty()) return;
    cudaStream_t s = *stream_;
    const bool two = bs != s && switches().polar_two_streams;
    if (two) {
      CUDA_CHECK(cudaEventRecord(polar_in_, s));
      CUDA_CHECK(cudaStreamWaitEvent(bs, polar_in_, 0));
    }
    for (int g = 0; g < (two ? 2 : 1); ++g) {
      const cudaStream_t st = g == 1 ? bs : s;
      sht::FftArgs fg = f;  // the group's classes (k_polar_multiply reads cls only)
      fg.nclass = 0;
      for (std::size_t c = 0; c < classes_.size(); ++c) {
        if (two && side_class_[c] != g) continue;
        fg.cls[fg.nclass++] = classes_[c];
        p.polar[c]->set_stream(st);
        auto* z = reinterpret_cast<cufftDoubleComplex*>(PU_.data() + classes_[c].cbase * f.ncc);
        auto* in = f.PUin ? reinterpret_cast<cufftDoubleComplex*>(f.PUin +
                                                                  classes_[c].cbase * f.ncc_in)
                          : z;
        CUFFT_CHECK(cufftExecZ2Z(p.polar[c]->get(), in, z, CUFFT_FORWARD));
      }
      sht::launch_polar_multiply(fg, conjugate, st);
      for (std::size_t c = 0; c < classes_.size(); ++c) {
        if (two && side_class_[c] != g) continue;
        auto* z = reinterpret_cast<cufftDoubleComplex*>(PU_.data() + classes_[c].cbase * f.ncc);
        CUFFT_CHECK(cufftExecZ2Z(p.polar[c]->get(), z, z, CUFFT_INVERSE));
      }
    }
    if (two) {
      CUDA_CHECK(cudaEventRecord(polar_out_, bs));
      CUDA_CHECK(cudaStreamWaitEvent(s, polar_out_, 0));
    }
    mark("polar-bluestein");
  }

  /// Whether a call of ncols columns in direction op takes the batched table path.
  bool use_tables(ShtOp op, int ncols) const {
    return tables_ && table_path_for(op, ncols);
  }
  /// The Legendre stage of a call: the table path or the recursion kernels.
  void legendre(ShtOp op, int ncols, cudaStream_t s) {
    if (use_tables(op, ncols)) {
      if (op == ShtOp::Synthesis)
        tables_->synthesis(alm_.data(), F_.data(), ncols, s);
      else
        tables_->adjoint(F_.data(), alm_.data(), ncols, s);
    } else if (op == ShtOp::Synthesis) {
      sht::launch_legendre_synthesis(spin0_args(ncols), s);
    } else {
      sht::launch_legendre_adjoint(adjoint_args(ncols), s);
    }
  }

  /// The stream of the belt rows' glue in this call: side_ (forked from the plan's stream, which
  /// keeps the polar rows) unless ALMAGEST_SHT_FORK=0 or a stage profile is being taken.
  cudaStream_t belt_stream() const {
    return switches().fork_belt_rows && !marks_ ? *side_ : *stream_;
  }
  void fork(cudaStream_t bs) {
    if (bs == *stream_) return;
    CUDA_CHECK(cudaEventRecord(fork_, *stream_));
    CUDA_CHECK(cudaStreamWaitEvent(bs, fork_, 0));
  }
  void join(cudaStream_t bs) {
    if (bs == *stream_) return;
    CUDA_CHECK(cudaEventRecord(join_, bs));
    CUDA_CHECK(cudaStreamWaitEvent(*stream_, join_, 0));
  }

  void run_synthesis(int ncols) {
    cudaStream_t s = *stream_;
    ColumnPlans& p = plans(ncols);
    legendre(ShtOp::Synthesis, ncols, s);
    mark("legendre");
    const auto f = fft_args(ncols);
    const bool full_sky = pixels_.empty();
    const bool direct = full_sky && p.belt_c2r_one;
    const std::size_t nbh = static_cast<std::size_t>(2 * ns_ + 1) * (2 * ns_ + 1);
    // Belt rows: aliasing, the FFT and (full sky) their part of the map, on the belt stream.
    const cudaStream_t bs = belt_stream();
    fork(bs);
    sht::launch_alias_synthesis(f, sht::Rows::Belt, bs);
    mark("alias-belt");
    if (direct) {
      p.belt_c2r_one->set_stream(bs);
      for (std::size_t c = 0; c < cc(ncols); ++c)
        CUFFT_CHECK(cufftExecZ2D(p.belt_c2r_one->get(),
                                 reinterpret_cast<cufftDoubleComplex*>(BH_.data() + c * nbh),
                                 map_.data() + c * npix_ + belt_start()));
    } else {
      p.belt_c2r->set_stream(bs);
      CUFFT_CHECK(cufftExecZ2D(p.belt_c2r->get(), reinterpret_cast<cufftDoubleComplex*>(BH_.data()),
                               BR_.data()));
    }
    mark("belt-fft");
    if (full_sky) {
      sht::launch_assemble_map(f, map_.data(), nullptr, msize_, !direct, sht::Rows::Belt, bs);
      mark("assemble-belt");
    }
    // Polar rows on the plan's stream.
    sht::launch_alias_synthesis(f, sht::Rows::Polar, s);
    mark("alias-polar");
    polar_convolution(p, f, true, bs);
    if (full_sky) {
      sht::launch_assemble_map(f, map_.data(), nullptr, msize_, !direct, sht::Rows::Polar, s);
      mark("assemble-polar");
      join(bs);
    } else {
      join(bs);
      sht::launch_assemble_map(f, map_.data(), pixels_.data(), msize_, true, sht::Rows::All, s);
      mark("assemble");
    }
  }

  void run_adjoint(int ncols) {
    cudaStream_t s = *stream_;
    ColumnPlans& p = plans(ncols);
    const double* src = map_.data();
    if (!pixels_.empty()) {
      CUDA_CHECK(cudaMemsetAsync(full_.data(), 0, cc(ncols) * npix_ * sizeof(double), s));
      sht::launch_scatter(map_.data(), pixels_.data(), msize_, npix_, static_cast<int>(cc(ncols)),
                          full_.data(), s);
      src = full_.data();
    }
    const auto f = fft_args(ncols);
    const bool direct = static_cast<bool>(p.belt_r2c_one);
    // Belt rows: loading and the FFT on the belt stream.
    const cudaStream_t bs = belt_stream();
    fork(bs);
    // The spin-0 kernels and the table path write every alm entry; the spin-2 recursion adjoint
    // all but a few (l < 2, modes no ring pair reaches), zeroed here beside the polar rows (a
    // clear of every alm had taken bandwidth from the polar chain: nside 1024 11.68 -> 11.63 ms).
    if (d_.spin == 2 && !use_tables(ShtOp::Adjoint, ncols))
      sht::launch_adjoint2_zero(legendre_args(ncols), bs);
    sht::launch_load_map(f, src, !direct, sht::Rows::Belt, bs);
    mark("load-belt");
    if (direct) {
      p.belt_r2c_one->set_stream(bs);
      const std::size_t nbh = static_cast<std::size_t>(2 * ns_ + 1) * (2 * ns_ + 1);
      for (std::size_t c = 0; c < cc(ncols); ++c)
        CUFFT_CHECK(cufftExecD2Z(p.belt_r2c_one->get(), const_cast<double*>(src) + c * npix_ + belt_start(),
                                 reinterpret_cast<cufftDoubleComplex*>(BH_.data() + c * nbh)));
    } else {
      p.belt_r2c->set_stream(bs);
      CUFFT_CHECK(cufftExecD2Z(p.belt_r2c->get(), BR_.data(),
                               reinterpret_cast<cufftDoubleComplex*>(BH_.data())));
    }
    mark("belt-fft");
    // Polar rows on the plan's stream.
    if (polar_dft()) {
      sht::launch_polar_dft_adjoint(f, polar_dft_args(), src, s);
      mark("polar-dft");
    } else {
      sht::launch_load_map(f, src, !direct, sht::Rows::Polar, s);
      mark("load-polar");
      polar_convolution(p, f, false, bs);
    }
    // The recursion adjoints read the belt rings' F_m from BH themselves
    // (Switches::belt_from_spectra): F of the polar rings alone then, which needs no belt row, and
    // none where they read the polar rings' F_m from the Bluestein rows too.
    const bool recursion = !use_tables(ShtOp::Adjoint, ncols);
    const bool polar_only = recursion && switches().belt_from_spectra;
    if (!polar_only) join(bs);
    if (!(recursion && adjoint_polar_from_rows())) {
      sht::launch_unalias_adjoint(f, polar_only, s);
      mark("unalias");
    }
    if (polar_only) join(bs);
    legendre(ShtOp::Adjoint, ncols, s);
    mark("legendre");
  }

  ShtDeviceDesc d_;
  std::unique_ptr<Stream> stream_;
  std::string name_;
  int ns_ = 0, lmax_ = 0, ncomp_ = 1, nrings_ = 0, nactive_ = 0;
  std::int64_t npix_ = 0, msize_ = 0;
  std::size_t nalm_ = 0, ktotal_ = 0;
  ShtWorkCounts counts_;
  DeviceBuffer<int> active_, first_, mlim_;
  DeviceBuffer<double> nu_, tabA_, tabB_, tabN_;
  DeviceBuffer<long long> koff_;
  DeviceBuffer<double2> ab_;
  DeviceBuffer<sht::ObasisNorm> norm_;
  DeviceBuffer<cplx> W_;
  DeviceBuffer<long long> soff_;  ///< the spin-0 start table (build_start_table)
  DeviceBuffer<double> start_v_, pair_z_;
  DeviceBuffer<short> start_e_;
  DeviceBuffer<int> skip_c0_;  ///< the spin-0 adjoint's skip table (build_skip_table)
  DeviceBuffer<double> skip_v0_, skip_v1_;
  DeviceBuffer<short> skip_e_;
  double skip_share_ = 0.0;  ///< the chunks the skip table skips (build_skip_table)
  DeviceBuffer<std::int64_t> pixels_;
  DeviceBuffer<cplx> alm_, F_, BH_, PU_, chirp_fft_;
  DeviceBuffer<cplx> PUin_;  ///< the polar rows' input (build_polar_input), or empty
  DeviceBuffer<char> fft_work_, fft_work_belt_;  ///< polar and belt cuFFT work areas
  DeviceBuffer<unsigned char> cls_of_;
  /// [4 nside] e^{i pi j / (4 nside)} (Switches::belt_from_spectra)
  DeviceBuffer<cplx> belt_phase_;
  DeviceBuffer<long long> prow_;   ///< [nside - 1][3] the polar pairs' rows in PU
  DeviceBuffer<cplx> pchirp_, pphase_;  ///< polar chirp and phase tables (build_polar_tables)
  DeviceBuffer<cplx> pd_tw_, pd_chirps_, pd_spec_;  ///< the polar DFT's tables (build_polar_dft)
  DeviceBuffer<long long> pd_off_;
  std::vector<sht::PolarClass> classes_;
  std::vector<char> side_class_;  ///< per class: 1 where it runs on the belt stream
  long long polar_per_col_ = 0;
  DeviceBuffer<double> map_, full_, BR_;
  std::map<int, ColumnPlans> plans_;
  std::map<std::pair<int, int>, cudaGraphExec_t> graphs_;
  bool graphs_ok_ = true;
  std::unique_ptr<sht::LegendreTables> tables_;  ///< the batched table path (table_path_for)
  std::vector<std::pair<const char*, cudaEvent_t>>* marks_ = nullptr;
  cudaEvent_t ev0_ = nullptr, ev1_ = nullptr;
  cudaEvent_t legacy_ = nullptr;  // the legacy default stream's work before a device call
  std::unique_ptr<Stream> side_;  ///< the belt rows' stream (Switches::fork_belt_rows)
  cudaEvent_t fork_ = nullptr, join_ = nullptr;
  cudaEvent_t polar_in_ = nullptr, polar_out_ = nullptr;  ///< polar_convolution's two streams
};

class Kernels final : public ShtKernels {
public:
  std::unique_ptr<ShtDevicePlan> make_plan(const ShtDeviceDesc& desc) override {
    return std::make_unique<DevicePlan>(desc);
  }
};

}  // namespace
}  // namespace almagest::kernels

almagest::kernels::ShtKernels* almagest_sht_kernels() {
  static almagest::kernels::Kernels k;
  return &k;
}
