// CPU backend: healpix_cxx 3.80 (libsharp) transforms on RING maps. Its alm2map_adjoint and
// alm2map_spin_adjoint are the exact transposes Y^T (no quadrature weights), which the identity
// tests check. libsharp runs OpenMP threads; the thread count is set per calling thread.
#include <dlfcn.h>

#include <alm.h>
#include <alm_healpix_tools.h>
#include <healpix_map.h>

#include <cstring>
#include <fstream>
#include <thread>

#include "almagest/core/error.hpp"
#include "almagest/sht/alm.hpp"
#include "backend.hpp"

namespace almagest::sht {
namespace {

/// omp_set_num_threads from the OpenMP runtime healpix_cxx loaded (looked up at run time so the
/// engine's link line needs no OpenMP flags). Affects only the calling thread's parallel regions.
void set_omp_threads(int n) {
  using Fn = void (*)(int);
  static const Fn fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (fn && n > 0) fn(n);
}

class CpuBackend final : public ShtBackendImpl {
public:
  explicit CpuBackend(const ShtConfig& c) : ShtBackendImpl(c) {
    lmax_ = c.effective_lmax();
    nalm_ = alm_size(lmax_);
    npix_ = npix_of(c.nside);
    ncomp_ = c.spin == 0 ? 1 : 2;
    msize_ = c.observed_pixels.empty() ? static_cast<std::size_t>(npix_) : c.observed_pixels.size();
  }
  Backend kind() const noexcept override { return Backend::Cpu; }
  std::string device() const override {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
      if (line.rfind("model name", 0) == 0) {
        auto p = line.find(':');
        if (p != std::string::npos) return line.substr(p + 2);
      }
    return "unknown CPU";
  }

  void synthesis(const std::complex<double>* alm, double* map, int ncols,
                 const JobContext& ctx) const override {
    set_omp_threads(threads(ctx));
    const bool cut = !config().observed_pixels.empty();
    std::vector<std::complex<double>> abuf(nalm_ * ncomp_);
    std::vector<double> full(cut ? static_cast<std::size_t>(npix_) * ncomp_ : 0);
    for (int c = 0; c < ncols; ++c) {
      ctx.check_cancel();
      std::memcpy(abuf.data(), alm + c * nalm_ * ncomp_, abuf.size() * sizeof(abuf[0]));
      sanitize_alm(abuf.data(), lmax_, config().spin, ncomp_);
      double* out = cut ? full.data() : map + c * msize_ * ncomp_;
      std::vector<Alm<xcomplex<double>>> a(ncomp_);
      std::vector<Healpix_Map<double>> m(ncomp_);
      for (int k = 0; k < ncomp_; ++k) {
        arr<xcomplex<double>> wa(abuf.data() + k * nalm_, nalm_);
        a[k].Set(wa, lmax_, lmax_);
        arr<double> wm(out + k * npix_, npix_);
        m[k].Set(wm, RING);
      }
      if (ncomp_ == 1)
        alm2map(a[0], m[0]);
      else
        alm2map_spin(a[0], a[1], m[0], m[1], 2);
      if (cut) {
        const auto& obs = config().observed_pixels;
        for (int k = 0; k < ncomp_; ++k)
          for (std::size_t i = 0; i < msize_; ++i)
            map[(c * ncomp_ + k) * msize_ + i] = full[k * npix_ + obs[i]];
      }
    }
  }

  void adjoint(const double* map, std::complex<double>* alm, int ncols,
               const JobContext& ctx) const override {
    set_omp_threads(threads(ctx));
    const bool cut = !config().observed_pixels.empty();
    std::vector<double> full(cut ? static_cast<std::size_t>(npix_) * ncomp_ : 0);
    for (int c = 0; c < ncols; ++c) {
      ctx.check_cancel();
      const double* in = map + c * msize_ * ncomp_;
      if (cut) {
        std::fill(full.begin(), full.end(), 0.0);
        const auto& obs = config().observed_pixels;
        for (int k = 0; k < ncomp_; ++k)
          for (std::size_t i = 0; i < msize_; ++i)
            full[k * npix_ + obs[i]] = map[(c * ncomp_ + k) * msize_ + i];
        in = full.data();
      }
      std::complex<double>* out = alm + c * nalm_ * ncomp_;
      std::vector<Alm<xcomplex<double>>> a(ncomp_);
      std::vector<Healpix_Map<double>> m(ncomp_);
      for (int k = 0; k < ncomp_; ++k) {
        arr<xcomplex<double>> wa(out + k * nalm_, nalm_);
        a[k].Set(wa, lmax_, lmax_);
        arr<double> wm(const_cast<double*>(in) + k * npix_, npix_);  // read only
        m[k].Set(wm, RING);
      }
      if (ncomp_ == 1)
        alm2map_adjoint(m[0], a[0]);
      else
        alm2map_spin_adjoint(m[0], m[1], a[0], a[1], 2);
      sanitize_alm(out, lmax_, config().spin, ncomp_);
    }
  }

private:
  int threads(const JobContext& ctx) const {
    int t = config().threads > 0 ? config().threads : ctx.threads;
    if (t <= 0) t = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    return t;
  }
  int lmax_ = 0, ncomp_ = 1;
  std::size_t nalm_ = 0, msize_ = 0;
  std::int64_t npix_ = 0;
};

}  // namespace

std::unique_ptr<ShtBackendImpl> make_cpu_backend(const ShtConfig& cfg) {
  if (cfg.nside > 8192) throw BackendUnavailable("sht cpu backend: nside > 8192 unsupported");
  return std::make_unique<CpuBackend>(cfg);
}

}  // namespace almagest::sht
