#include <cmath>
#include <nlohmann/json.hpp>

#include "almagest/core/error.hpp"
#include "almagest/stack/search.hpp"

namespace almagest::stack {

std::string to_string(Backend b) {
  switch (b) {
    case Backend::Cpu: return "cpu";
    case Backend::GpuGather: return "gpu-gather";
    case Backend::GpuTiled: return "gpu-tiled";
    case Backend::GpuFourier: return "gpu-fourier";
  }
  return "?";
}

Backend parse_backend(const std::string& s, const std::string& field) {
  if (s == "cpu") return Backend::Cpu;
  if (s == "gpu-gather") return Backend::GpuGather;
  if (s == "gpu-tiled" || s == "gpu") return Backend::GpuTiled;
  if (s == "gpu-fourier") return Backend::GpuFourier;
  throw ConfigError(field, "unknown backend '" + s + "' (expected cpu, gpu-gather, gpu-tiled or gpu-fourier)");
}

double bonferroni_threshold(double false_alarms, double trials) {
  if (!(false_alarms > 0) || !(trials > 0))
    throw ConfigError("false_alarms", "false-alarm count and number of trials must be positive");
  const double p = false_alarms / trials;
  if (p >= 0.5) return 0.0;
  double lo = 0, hi = 40;
  for (int it = 0; it < 200; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (0.5 * std::erfc(mid / std::sqrt(2.0)) > p) lo = mid; else hi = mid;
  }
  return 0.5 * (lo + hi);
}

std::vector<std::string> SearchConfig::validate() const {
  std::vector<std::string> out;
  auto bad = [&](const std::string& f, const std::string& m) { out.push_back(f + ": " + m); };
  if (bank.size() == 0) bad("bank", "the trajectory bank is empty");
  if (bank.size() > kMaxBankVelocities)
    bad("bank", "the trajectory bank holds " + std::to_string(bank.size()) + " velocities, more than the " +
                    std::to_string(kMaxBankVelocities) + " a search accepts");
  if (bank.vx.size() != bank.vy.size()) bad("bank", "vx and vy lists differ in length");
  for (std::size_t i = 0; i < bank.vx.size() && i < bank.vy.size(); ++i)
    if (!std::isfinite(bank.vx[i]) || !std::isfinite(bank.vy[i])) {
      bad("bank", "velocity " + std::to_string(i) + " is not finite");
      break;
    }
  if (bank.kind == BankKind::Cartesian &&
      (bank.nvx <= 0 || bank.nvy <= 0 || std::size_t(bank.nvx) * bank.nvy != bank.size() ||
       bank.grid_vx.size() != std::size_t(bank.nvx) || bank.grid_vy.size() != std::size_t(bank.nvy)))
    bad("bank", "Cartesian grid dimensions do not match the velocity list");
  if (!std::isnan(reference_mjd) && !std::isfinite(reference_mjd)) bad("reference_mjd", "must be finite (or NaN for exposure 0)");
  if (curve_dx.size() != curve_dy.size()) bad("curve_dx", "curve_dx and curve_dy differ in length");
  if (threshold_z < 0 || !std::isfinite(threshold_z)) bad("threshold_z", "must be >= 0 (0: Bonferroni)");
  if (threshold_z == 0 && !(false_alarms > 0 && std::isfinite(false_alarms))) bad("false_alarms", "must be positive");
  if (mode == ResultMode::TopK && (top_k < 1 || top_k > 16)) bad("top_k", "must be between 1 and 16");
  if (min_obs < 0) bad("min_obs", "must be >= 0");
  if (max_candidates == 0) bad("max_candidates", "must be positive");
  if (cluster.enabled && !(cluster.radius_px >= 0)) bad("cluster.radius_px", "must be >= 0");
  if (backend == Backend::GpuFourier) {
    if (!bank.separable()) bad("backend", "gpu-fourier needs a Cartesian (vx, vy) grid bank (its phase tables are separable per axis)");
    if (mode == ResultMode::TopK) bad("mode", "top-k mode is not available with gpu-fourier; use a threshold");
  }
  if (device < 0) bad("device", "must be >= 0");
  if (fractional) {
    if (backend == Backend::GpuFourier)
      bad("fractional", "sub-pixel shifts run on cpu, gpu-gather and gpu-tiled (the Fourier method's phase tables are exact for whole pixels only)");
    if (mode == ResultMode::TopK) bad("fractional", "sub-pixel shifts run in threshold mode only");
    for (float r : psf_rho)
      if (!(std::fabs(r) <= 1.0f)) {
        bad("psf_rho", "PSF autocorrelations must lie in [-1, 1]");
        break;
      }
  }
  return out;
}

void SearchConfig::check() const {
  const auto p = validate();
  if (p.empty()) return;
  if (p.size() == 1) {
    const auto c = p[0].find(": ");
    throw ConfigError(p[0].substr(0, c), p[0].substr(c + 2));
  }
  std::string all;
  for (std::size_t i = 0; i < p.size(); ++i) all += (i ? "; " : "") + p[i];
  throw ConfigError("", all);
}

std::string SearchConfig::to_json() const {
  nlohmann::json j;
  j["bank"]["kind"] = bank.kind == BankKind::Cartesian ? "cartesian" : bank.kind == BankKind::SpeedAngle ? "speed_angle" : "explicit";
  j["bank"]["n_vel"] = bank.size();
  if (bank.separable()) {
    j["bank"]["vx"] = {bank.grid_vx.front(), bank.grid_vx.back(), bank.nvx};
    j["bank"]["vy"] = {bank.grid_vy.front(), bank.grid_vy.back(), bank.nvy};
  } else {
    j["bank"]["vx_list"] = bank.vx;
    j["bank"]["vy_list"] = bank.vy;
  }
  if (std::isnan(reference_mjd)) j["reference_mjd"] = nullptr; else j["reference_mjd"] = reference_mjd;
  j["common_curve"] = !curve_dx.empty();
  j["encoding"] = to_string(encoding);
  j["backend"] = to_string(backend);
  j["mode"] = mode == ResultMode::Threshold ? "threshold" : "top-k";
  j["false_alarms"] = false_alarms;
  j["threshold_z"] = threshold_z;
  j["top_k"] = top_k;
  j["min_obs"] = min_obs;
  j["max_candidates"] = max_candidates;
  j["cluster"] = {{"enabled", cluster.enabled}, {"radius_px", cluster.radius_px}};
  j["dense"] = dense;
  j["threads"] = threads;
  j["device"] = device;
  j["device_memory_limit"] = device_memory_limit;
  if (fractional) j["shifts"] = "fractional";
  return j.dump();
}

}  // namespace almagest::stack
