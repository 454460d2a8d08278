#pragma once
// Engine-internal backend interface behind ShtPlan. Arrays are raw pointers with the shapes of
// plan.hpp: alm [ncols][ncomp][nalm] complex, map [ncols][ncomp][map_size] double. Backends are
// immutable after construction from the caller's point of view; a backend with mutable device
// state serialises calls internally.
#include <complex>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "almagest/core/job_context.hpp"
#include "almagest/sht/config.hpp"

namespace almagest::sht {

class ShtBackendImpl {
public:
  explicit ShtBackendImpl(ShtConfig cfg) : cfg_(std::move(cfg)) {}
  virtual ~ShtBackendImpl() = default;
  const ShtConfig& config() const noexcept { return cfg_; }
  virtual Backend kind() const noexcept = 0;
  virtual std::string device() const = 0;
  /// Columns per call: config().batch, or fewer where a device could not hold that many.
  virtual int batch() const noexcept { return cfg_.batch; }
  /// ncols <= batch().
  virtual void synthesis(const std::complex<double>* alm, double* map, int ncols,
                         const JobContext& ctx) const = 0;
  virtual void adjoint(const double* map, std::complex<double>* alm, int ncols,
                       const JobContext& ctx) const = 0;
  /// Device pointers (ShtPlan::synthesis_device); the CPU backend refuses them (ConfigError).
  virtual void synthesis_device(const std::complex<double>* alm, double* map, int ncols,
                                const JobContext& ctx) const;
  virtual void adjoint_device(const double* map, std::complex<double>* alm, int ncols,
                              const JobContext& ctx) const;

private:
  ShtConfig cfg_;
};

std::unique_ptr<ShtBackendImpl> make_cpu_backend(const ShtConfig& cfg);
std::unique_ptr<ShtBackendImpl> make_cuda_backend(const ShtConfig& cfg);

/// Zeroes Im a_l0 and, for spin 2, every entry with l < 2, in `ncomp` consecutive alm vectors.
void sanitize_alm(std::complex<double>* alm, int lmax, int spin, int ncomp);

}  // namespace almagest::sht
