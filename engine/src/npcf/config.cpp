// NpcfConfig: names, binning formulas and validation (conventions: docs/npcf.md).
#include "almagest/npcf/config.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "almagest/core/error.hpp"

namespace almagest::npcf {

bool is_four_point(Statistic s) { return s == Statistic::FourPoint || s == Statistic::FourPointParity; }

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string num(double v) {
  std::ostringstream os;
  os.precision(10);
  os << v;
  return os.str();
}

using Problem = std::pair<std::string, std::string>;  // field, message

std::vector<Problem> problems_of(const NpcfConfig& c) {
  std::vector<Problem> p;
  const Binning& b = c.bins;
  const bool finite = std::isfinite(b.rmin) && std::isfinite(b.rmax);
  if (!std::isfinite(b.rmin)) p.emplace_back("rmin", "must be a finite number (got " + num(b.rmin) + ")");
  if (!std::isfinite(b.rmax)) p.emplace_back("rmax", "must be a finite number (got " + num(b.rmax) + ")");
  if (std::isfinite(b.rmin) && b.rmin < 0)
    p.emplace_back("rmin", "must be >= 0 (got " + num(b.rmin) + ")");
  if (finite && b.rmax <= b.rmin)
    p.emplace_back("rmax", "must be greater than rmin (got rmax = " + num(b.rmax) +
                               ", rmin = " + num(b.rmin) + ")");
  if (b.nbins < 1 || b.nbins > 255)
    p.emplace_back("nbins", "must be in 1..255 (got " + std::to_string(b.nbins) + ")");
  else if (is_four_point(c.statistic) && b.nbins > 20)
    p.emplace_back("nbins", std::string("must be in 1..20 for the ") + to_string(c.statistic) +
                                " statistic (got " + std::to_string(b.nbins) + ")");
  if (b.scale == BinScale::Log && std::isfinite(b.rmin) && b.rmin <= 0)
    p.emplace_back("rmin", "logarithmic bins need rmin > 0 (got " + num(b.rmin) + ")");
  if (c.periodic) {
    if (!(c.box > 0) || !std::isfinite(c.box)) {
      p.emplace_back("box", "a periodic box needs a finite side length > 0 (got " + num(c.box) + ")");
    } else if (finite) {
      if (c.statistic == Statistic::TwoPoint) {
        if (!(b.rmax < c.box / 2))
          p.emplace_back("rmax", "must be less than box/2 = " + num(c.box / 2) +
                                     " in a periodic box (got " + num(b.rmax) + ")");
      } else if (!(b.rmax <= c.box / 4)) {
        p.emplace_back("rmax", "must be at most box/4 = " + num(c.box / 4) + " for the " +
                                   to_string(c.statistic) + " statistic in a periodic box (got " +
                                   num(b.rmax) + ")");
      }
    }
  }
  if (c.pixel_ntheta < 1)
    p.emplace_back("pixel_ntheta", "must be >= 1 (got " + std::to_string(c.pixel_ntheta) + ")");
  if (c.pixel_nphi < 2 || c.pixel_nphi % 2 != 0)
    p.emplace_back("pixel_nphi", "must be even and >= 2 (got " + std::to_string(c.pixel_nphi) + ")");
  if (c.pixel_ntheta >= 1 && c.pixel_nphi >= 1 &&
      static_cast<long long>(c.pixel_ntheta) * c.pixel_nphi > 65536)
    p.emplace_back("pixel_nphi", "pixel grid pixel_ntheta x pixel_nphi = " +
                                     std::to_string(static_cast<long long>(c.pixel_ntheta) * c.pixel_nphi) +
                                     " exceeds 65536 pixels");
  if (c.nmu < 1 || c.nmu > 100)
    p.emplace_back("nmu", "must be in 1..100 (got " + std::to_string(c.nmu) + ")");
  if (c.threads < 0)
    p.emplace_back("threads", "must be >= 0 (0 = all hardware threads; got " +
                                  std::to_string(c.threads) + ")");
  return p;
}

}  // namespace

const char* to_string(Statistic s) {
  switch (s) {
    case Statistic::TwoPoint: return "2pcf";
    case Statistic::ThreePoint: return "3pcf";
    case Statistic::ThreePointEquilateral: return "3pcf-equilateral";
    case Statistic::FourPoint: return "4pcf";
    case Statistic::FourPointParity: return "4pcf-parity";
  }
  return "unknown";
}

Statistic statistic_from_string(const std::string& s) {
  const std::string l = lower(s);
  if (l == "2pcf") return Statistic::TwoPoint;
  if (l == "3pcf") return Statistic::ThreePoint;
  if (l == "3pcf-equilateral") return Statistic::ThreePointEquilateral;
  if (l == "4pcf") return Statistic::FourPoint;
  if (l == "4pcf-parity") return Statistic::FourPointParity;
  throw ConfigError("statistic", "unknown statistic '" + s +
                                     "' (expected 2pcf, 3pcf, 3pcf-equilateral, 4pcf or 4pcf-parity)");
}

int Binning::bin_of(double d) const {
  double t;
  if (scale == BinScale::Log) {
    const double l0 = std::log10(rmin);
    const double dl = (std::log10(rmax) - l0) / nbins;
    t = (std::log10(d) - l0) / dl;
  } else {
    const double dr = (rmax - rmin) / nbins;
    t = (d - rmin) / dr;
  }
  // floor(t) + 1 clamped to 1..nbins, returned 0-based.
  if (!(t >= 0)) return 0;
  if (t >= nbins) return nbins - 1;
  const int b = static_cast<int>(std::floor(t));
  return std::min(b, nbins - 1);
}

double Binning::edge(int i) const {
  if (i <= 0) return rmin;
  if (i >= nbins) return rmax;
  if (scale == BinScale::Log) {
    const double l0 = std::log10(rmin);
    const double dl = (std::log10(rmax) - l0) / nbins;
    return std::pow(10.0, l0 + i * dl);
  }
  const double dr = (rmax - rmin) / nbins;
  return rmin + i * dr;
}

double Binning::centre(int i) const {
  const double lo = edge(i), hi = edge(i + 1);
  if (scale == BinScale::Log) return std::sqrt(lo * hi);
  return 0.5 * (lo + hi);
}

int mu_bin_signed(double mu, int nmu) {
  const double t = (mu + 1.0) * (0.5 * nmu);
  if (!(t >= 0)) return 0;
  if (t >= nmu) return nmu - 1;
  return std::min(static_cast<int>(t), nmu - 1);
}

int mu_bin_unsigned(double mu, int nmu) {
  const double t = std::fabs(mu) * nmu;
  if (!(t >= 0)) return 0;
  if (t >= nmu) return nmu - 1;
  return std::min(static_cast<int>(t), nmu - 1);
}

// The operation order below is mirrored by the CUDA kernels (npcf_common.cuh) with explicit
// round-to-nearest operations: keep both in step, mu bins must agree exactly.
double pair_mu(double xi, double yi, double zi, double dx, double dy, double dz, bool zaxis) {
  const double d2 = dx * dx + dy * dy + dz * dz;
  if (zaxis) return d2 > 0 ? dz / std::sqrt(d2) : 0.0;
  const double mx = xi + 0.5 * dx, my = yi + 0.5 * dy, mz = zi + 0.5 * dz;
  const double dot = dx * mx + dy * my + dz * mz;
  const double den = std::sqrt(d2 * (mx * mx + my * my + mz * mz));
  return den > 0 ? dot / den : 0.0;
}

double triangle_mu(double xi, double yi, double zi, double ax, double ay, double az, double bx,
                   double by, double bz, bool zaxis) {
  const double nx = ay * bz - az * by, ny = az * bx - ax * bz, nz = ax * by - ay * bx;
  const double n2 = nx * nx + ny * ny + nz * nz;
  if (zaxis) return n2 > 0 ? std::fabs(nz) / std::sqrt(n2) : 0.0;
  const double cx = xi + (ax + bx) / 3.0, cy = yi + (ay + by) / 3.0, cz = zi + (az + bz) / 3.0;
  const double dot = nx * cx + ny * cy + nz * cz;
  const double den = std::sqrt(n2 * (cx * cx + cy * cy + cz * cz));
  return den > 0 ? std::fabs(dot) / den : 0.0;
}

std::vector<std::string> NpcfConfig::validate() const { return format_problems(problems_of(*this)); }

void NpcfConfig::check() const { throw_if_problems(problems_of(*this)); }

std::string NpcfConfig::to_json() const {
  nlohmann::json j;
  j["statistic"] = to_string(statistic);
  j["rmin"] = bins.rmin;
  j["rmax"] = bins.rmax;
  j["nbins"] = bins.nbins;
  j["bin_scale"] = bins.scale == BinScale::Log ? "log" : "linear";
  j["periodic"] = periodic;
  j["box"] = box;
  j["store_pixels"] = store_pixels;
  j["directions"] = directions == DirectionMode::Exact ? "exact" : "pixel";
  j["pixel_ntheta"] = pixel_ntheta;
  j["pixel_nphi"] = pixel_nphi;
  j["threads"] = threads;
  j["hub_order"] = hub_order == HubOrder::Input ? "input" : hub_order == HubOrder::Spatial ? "spatial" : "auto";
  j["nmu"] = nmu;
  j["multipoles"] = multipoles;
  j["backend"] = almagest::to_string(backend);
  return j.dump();
}

}  // namespace almagest::npcf
