#include "almagest/stack/exposure_stack.hpp"

#include <cmath>

#include "almagest/core/error.hpp"

namespace almagest::stack {

Psf Psf::gaussian(double sigma) {
  if (!(sigma > 0) || !std::isfinite(sigma) || sigma > kMaxPsfSigma)
    throw ConfigError("psf.sigma", "Gaussian PSF sigma must be a positive number of pixels up to " +
                                       std::to_string(int(kMaxPsfSigma)) + ", got " + std::to_string(sigma));
  const int r = static_cast<int>(std::ceil(3.0 * sigma));
  Psf p;
  p.size = 2 * r + 1;
  p.kernel.resize(std::size_t(p.size) * p.size);
  double sum = 0;
  for (int v = -r; v <= r; ++v)
    for (int u = -r; u <= r; ++u) {
      const double w = std::exp(-0.5 * (u * u + v * v) / (sigma * sigma));
      p.kernel[std::size_t(v + r) * p.size + (u + r)] = static_cast<float>(w);
      sum += w;
    }
  for (auto& k : p.kernel) k = static_cast<float>(k / sum);
  return p;
}

void ExposureStack::validate() const {
  const std::string src = source.empty() ? std::string("stack") : source;
  const std::size_t n = mjd.size();
  if (n == 0) throw IoError(src, "NUMIMG", "the stack holds no exposures");
  if (width <= 0 || height <= 0)
    throw IoError(src, "NAXIS", "image size " + std::to_string(width) + " x " +
                                    std::to_string(height) + " is not positive");
  const std::size_t np = pixels() * n;
  auto where = [&](std::size_t e) { return origin.size() == n ? origin[e] : src; };
  if (sci.size() != np) throw IoError(src, "SCI", "science planes hold " + std::to_string(sci.size()) + " values, expected " + std::to_string(np));
  if (var.size() != np) throw IoError(src, "VAR", "variance planes hold " + std::to_string(var.size()) + " values, expected " + std::to_string(np));
  if (mask.size() != np) throw IoError(src, "MSK", "mask planes hold " + std::to_string(mask.size()) + " values, expected " + std::to_string(np));
  if (psf.size() != n) throw IoError(src, "PSF", std::to_string(psf.size()) + " PSFs for " + std::to_string(n) + " exposures");
  if (!weight.empty() && weight.size() != n)
    throw IoError(src, "WEIGHT", std::to_string(weight.size()) + " weights for " + std::to_string(n) + " exposures");
  for (std::size_t e = 0; e < n; ++e) {
    const std::string idx = std::to_string(e);
    if (!std::isfinite(mjd[e])) throw IoError(where(e), "MJD (exposure " + idx + ")", "observation time is missing or not finite");
    const Psf& p = psf[e];
    if (p.size <= 0 || p.size % 2 == 0 || p.kernel.size() != std::size_t(p.size) * p.size)
      throw IoError(where(e), "PSF_" + idx, "PSF must be an odd square kernel, got size " + std::to_string(p.size) + " with " + std::to_string(p.kernel.size()) + " values");
    double s = 0;
    for (float k : p.kernel) {
      if (!std::isfinite(k)) throw IoError(where(e), "PSF_" + idx, "PSF holds a non-finite value");
      s += k;
    }
    if (!(s > 0)) throw IoError(where(e), "PSF_" + idx, "PSF sum is not positive");
    if (!weight.empty() && !(std::isfinite(weight[e]) && weight[e] > 0))
      throw IoError(where(e), "WEIGHT_" + idx, "exposure weight must be positive and finite");
    bool any = false;
    const std::size_t base = e * pixels();
    for (std::size_t i = 0; i < pixels() && !any; ++i) {
      const float vv = var[base + i];
      any = mask[base + i] == 0 && std::isfinite(vv) && vv > 0 && std::isfinite(sci[base + i]);
    }
    if (!any) throw IoError(where(e), "VAR_" + idx, "no valid pixel: variance is non-positive, non-finite or masked everywhere");
  }
}

}  // namespace almagest::stack
