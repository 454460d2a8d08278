// CUDA backend: forwards to the plan of the run-time loaded CUDA module (kernels/src/sht_*.cu).
// An unavailable module or device is an error naming why; there is no silent CPU fallback.
#include <mutex>
#include <string>

#include "almagest/core/error.hpp"
#include "almagest/core/gpu.hpp"
#include "almagest/kernels/sht_cuda.hpp"
#include "almagest/sht/alm.hpp"
#include "backend.hpp"

namespace almagest::sht {
namespace {

class CudaBackend final : public ShtBackendImpl {
public:
  explicit CudaBackend(const ShtConfig& c) : ShtBackendImpl(c) {
    auto& mod = cuda_module();
    kernels::ShtKernels* k = mod.sht();
    if (!k) throw BackendUnavailable("sht cuda backend: the CUDA module was built without SHT kernels");
    kernels::ShtDeviceDesc d;
    d.device = c.device;
    d.nside = c.nside;
    d.lmax = c.effective_lmax();
    d.spin = c.spin;
    d.observed_pixels = c.observed_pixels;
    // A plan holds its tables and work buffers for max_cols columns. Where that does not fit in
    // device memory the batch is halved until it does (the plan processes columns in chunks of
    // batch(), so a large batch costs more launches instead of failing); a plan that does not
    // fit one column is an error naming the sizes.
    for (int b = c.batch;; b = (b + 1) / 2) {
      d.max_cols = b;
      try {
        plan_ = k->make_plan(d);
        batch_ = b;
        break;
      } catch (const kernels::DeviceOutOfMemory& e) {
        if (b == 1)
          throw CudaError("sht cuda backend: nside " + std::to_string(c.nside) + ", lmax " +
                          std::to_string(d.lmax) + ", spin " + std::to_string(c.spin) +
                          " does not fit in device memory even for one column: " + e.what());
      } catch (const kernels::DeviceError& e) {
        throw CudaError(e.what());
      }
    }
    name_ = plan_->device_name();
    nalm_ = alm_size(d.lmax);
    ncomp_ = c.spin == 0 ? 1 : 2;
  }
  Backend kind() const noexcept override { return Backend::Cuda; }
  int batch() const noexcept override { return batch_; }
  std::string device() const override { return name_; }

  void synthesis(const std::complex<double>* alm, double* map, int ncols,
                 const JobContext& ctx) const override {
    std::lock_guard<std::mutex> lock(mu_);
    ctx.check_cancel();
    // Im a_l0 and the spin-2 l < 2 entries are ignored on input: the kernels never read them.
    with_cuda_errors([&] {
      plan_->synthesis(reinterpret_cast<const double*>(alm), map, ncols);
    });
  }
  void adjoint(const double* map, std::complex<double>* alm, int ncols,
               const JobContext& ctx) const override {
    std::lock_guard<std::mutex> lock(mu_);
    ctx.check_cancel();
    with_cuda_errors([&] { plan_->adjoint(map, reinterpret_cast<double*>(alm), ncols); });
  }

  void synthesis_device(const std::complex<double>* alm, double* map, int ncols,
                        const JobContext& ctx) const override {
    std::lock_guard<std::mutex> lock(mu_);
    ctx.check_cancel();
    with_cuda_errors([&] { plan_->synthesis_device(reinterpret_cast<const double*>(alm), map, ncols); });
  }
  void adjoint_device(const double* map, std::complex<double>* alm, int ncols,
                      const JobContext& ctx) const override {
    std::lock_guard<std::mutex> lock(mu_);
    ctx.check_cancel();
    with_cuda_errors([&] { plan_->adjoint_device(map, reinterpret_cast<double*>(alm), ncols); });
  }

private:
  std::unique_ptr<kernels::ShtDevicePlan> plan_;
  std::string name_;
  std::size_t nalm_ = 0;
  int ncomp_ = 1;
  int batch_ = 1;
  mutable std::mutex mu_;
};

}  // namespace

std::unique_ptr<ShtBackendImpl> make_cuda_backend(const ShtConfig& cfg) {
  return std::make_unique<CudaBackend>(cfg);
}

}  // namespace almagest::sht
