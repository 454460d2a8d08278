// ShtConfig validation and helpers.
#include "almagest/sht/config.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <utility>

#include "almagest/core/error.hpp"
#include "almagest/sht/alm.hpp"

namespace almagest::sht {

const char* to_string(Backend b) {
  return b == Backend::Cuda ? "cuda" : b == Backend::Auto ? "auto" : "cpu";
}

Backend backend_from_string(const std::string& s) {
  return resolve_backend(parse_backend(s == "gpu" ? "cuda" : s, "backend")).kind;
}

namespace {
std::vector<std::pair<std::string, std::string>> problems_of(const ShtConfig& c) {
  std::vector<std::pair<std::string, std::string>> p;
  if (c.nside < 1 || c.nside > 8192)
    p.emplace_back("nside", "must be in 1..8192, got " + std::to_string(c.nside));
  if (c.lmax < -1) p.emplace_back("lmax", "must be >= 0 (or -1 for 3 nside - 1)");
  if (c.nside >= 1 && c.lmax > 4 * c.nside)
    p.emplace_back("lmax", "must be <= 4 nside = " + std::to_string(4 * c.nside) + ", got " +
                               std::to_string(c.lmax));
  if (c.spin != 0 && c.spin != 2)
    p.emplace_back("spin", "must be 0 or 2, got " + std::to_string(c.spin));
  if (c.spin == 2 && c.nside >= 1 && c.effective_lmax() < 2)
    p.emplace_back("lmax", "spin 2 needs lmax >= 2");
  if (c.batch < 1 || c.batch > 4096)
    p.emplace_back("batch", "must be in 1..4096, got " + std::to_string(c.batch));
  if (c.threads < 0) p.emplace_back("threads", "must be >= 0");
  if (c.device < 0) p.emplace_back("device", "must be >= 0");
  if (c.backend == Backend::Auto)
    p.emplace_back("backend", "auto must be resolved (almagest::resolve_backend) before a plan is made");
  if (!c.observed_pixels.empty() && c.nside >= 1 && c.nside <= 8192) {
    const std::int64_t np = npix_of(c.nside);
    for (std::size_t i = 0; i < c.observed_pixels.size(); ++i) {
      const auto v = c.observed_pixels[i];
      if (v < 0 || v >= np) {
        p.emplace_back("observed_pixels", "pixel " + std::to_string(v) + " at position " +
                                              std::to_string(i) + " is outside 0.." +
                                              std::to_string(np - 1));
        break;
      }
      if (i > 0 && v <= c.observed_pixels[i - 1]) {
        p.emplace_back("observed_pixels", "must be strictly increasing (position " +
                                              std::to_string(i) + ")");
        break;
      }
    }
  }
  return p;
}
}  // namespace

std::vector<std::string> ShtConfig::validate() const { return format_problems(problems_of(*this)); }

void ShtConfig::check() const { throw_if_problems(problems_of(*this)); }

std::string ShtConfig::to_json() const {
  nlohmann::json j;
  j["nside"] = nside;
  j["lmax"] = effective_lmax();
  j["spin"] = spin;
  j["batch"] = batch;
  j["backend"] = to_string(backend);
  j["threads"] = threads;
  j["device"] = device;
  j["observed_pixels"] = observed_pixels.size();
  return j.dump();
}

int nside_of_npix(std::int64_t npix) noexcept {
  if (npix < 12 || npix % 12 != 0) return -1;
  const std::int64_t n2 = npix / 12;
  // A corrupt header may give any npix: a square root, not a loop of sqrt(npix) steps, and no
  // NSIDE beyond HEALPix's 2^29 (whose square cannot overflow).
  if (n2 > (std::int64_t{1} << 58)) return -1;
  auto n = static_cast<std::int64_t>(std::sqrt(static_cast<double>(n2)));
  while (n * n > n2) --n;
  while ((n + 1) * (n + 1) <= n2) ++n;
  return n * n == n2 ? static_cast<int>(n) : -1;
}

double alm_dot(std::span<const Complex> a, std::span<const Complex> b, int lmax) {
  double s0 = 0.0, s1 = 0.0;
  const std::size_t n0 = static_cast<std::size_t>(lmax) + 1;  // m = 0 block
  for (std::size_t i = 0; i < n0 && i < a.size(); ++i) s0 += a[i].real() * b[i].real();
  for (std::size_t i = n0; i < a.size(); ++i)
    s1 += a[i].real() * b[i].real() + a[i].imag() * b[i].imag();
  return s0 + 2.0 * s1;
}

double map_dot(std::span<const double> a, std::span<const double> b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

void sanitize_alm(std::complex<double>* alm, int lmax, int spin, int ncomp) {
  const std::size_t n = alm_size(lmax);
  for (int c = 0; c < ncomp; ++c) {
    std::complex<double>* a = alm + c * n;
    for (int l = 0; l <= lmax; ++l) a[l] = {a[l].real(), 0.0};
    if (spin == 2) {
      for (int m = 0; m <= std::min(1, lmax); ++m)
        for (int l = m; l < 2 && l <= lmax; ++l) a[alm_index(lmax, l, m)] = 0.0;
    }
  }
}

}  // namespace almagest::sht
