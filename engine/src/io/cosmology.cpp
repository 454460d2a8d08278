// Flat LCDM comoving distances: adaptive Gauss-Kronrod (7/15) quadrature, plus an interpolation
// table with verified error for converting many redshifts at once.
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "almagest/core/error.hpp"
#include "almagest/io/catalogue.hpp"
#include "io/cosmology_table.hpp"

namespace almagest::io {
namespace {

constexpr double kHubbleDistance = 2997.92458;  // c/H0 in Mpc/h (c in km/s over 100 km/s/Mpc)

// Gauss-Kronrod 15-point nodes (positive half, descending) and weights; the 7-point Gauss rule
// uses the odd-indexed nodes (1, 3, 5) and the centre.
constexpr std::array<double, 8> kXgk = {
    0.991455371120812639206854697526329, 0.949107912342758524526189684047851,
    0.864864423359769072789712788640926, 0.741531185599394439863864773280788,
    0.586087235467691130294144845693013, 0.405845151377397166906606412076961,
    0.207784955007898467600689403773245, 0.000000000000000000000000000000000};
constexpr std::array<double, 8> kWgk = {
    0.022935322010529224963732008058970, 0.063092092629978553290700663189204,
    0.104790010322250183839876322541518, 0.140653259715525918745189590510238,
    0.169004726639267902826583426598550, 0.190350578064785409913256402421014,
    0.204432940075298892414161999234649, 0.209482141084727828012999174891714};
constexpr std::array<double, 4> kWg = {
    0.129484966168869693270611432679082, 0.279705391489276667901467771423780,
    0.381830050505118944950369775488975, 0.417959183673469387755102040816327};

struct Segment {
  double a, b, integral, error;
};

/// One Gauss-Kronrod 7/15 step on [a, b]: integral (Kronrod) and |Kronrod - Gauss|.
template <class F>
Segment gk15(const F& f, double a, double b) {
  const double c = 0.5 * (a + b), h = 0.5 * (b - a);
  const double fc = f(c);
  double k = kWgk[7] * fc, g = kWg[3] * fc;
  for (int j = 0; j < 7; ++j) {
    const double dx = h * kXgk[j];
    const double s = f(c - dx) + f(c + dx);
    k += kWgk[j] * s;
    if (j % 2 == 1) g += kWg[j / 2] * s;
  }
  return {a, b, k * h, std::abs((k - g) * h)};
}

/// Globally adaptive quadrature: bisects the segment with the largest error estimate until the
/// summed estimate is below rel_tol * |integral|. The |K15 - G7| estimate is very pessimistic
/// for smooth integrands (the Kronrod value is far more accurate than the difference).
template <class F>
double integrate(const F& f, double a, double b, double rel_tol, const char* what) {
  if (a == b) return 0.0;
  std::vector<Segment> segs{gk15(f, a, b)};
  constexpr int kMaxSegments = 2000;
  for (;;) {
    double total = 0, err = 0;
    for (const auto& s : segs) {
      total += s.integral;
      err += s.error;
    }
    if (err <= rel_tol * std::abs(total) || err < 1e-300) return total;
    if (static_cast<int>(segs.size()) >= kMaxSegments)
      throw NotConverged(std::string(what) + ": adaptive quadrature did not converge",
                         static_cast<int>(segs.size()), err / std::abs(total));
    auto worst = std::max_element(segs.begin(), segs.end(), [](const Segment& x, const Segment& y) {
      return x.error < y.error;
    });
    const Segment s = *worst;
    const double mid = 0.5 * (s.a + s.b);
    *worst = gk15(f, s.a, mid);
    segs.push_back(gk15(f, mid, s.b));
  }
}

void check_cosmology(const Cosmology& c) {
  if (!std::isfinite(c.omega_m) || c.omega_m < 0.0 || c.omega_m > 1.0)
    throw ConfigError("omega_m", "Omega_m = " + std::to_string(c.omega_m) +
                                     " is outside [0, 1] (flat LCDM)");
}

void check_redshift(double z) {
  if (!std::isfinite(z) || z < 0.0)
    throw ConfigError("redshift", "redshift " + std::to_string(z) +
                                      " is not a finite non-negative number");
}

}  // namespace

double Cosmology::efunc(double z) const {
  const double a = 1.0 + z;
  return std::sqrt(omega_m * a * a * a + (1.0 - omega_m));
}

double Cosmology::comoving_distance(double z) const {
  check_cosmology(*this);
  check_redshift(z);
  const auto inv_e = [this](double zz) { return 1.0 / efunc(zz); };
  return kHubbleDistance * integrate(inv_e, 0.0, z, 1e-13, "comoving distance");
}

void sky_to_cartesian(double ra_deg, double dec_deg, double dist, double& x, double& y,
                      double& z) {
  constexpr double kDeg = 3.14159265358979323846 / 180.0;
  const double ra = ra_deg * kDeg, dec = dec_deg * kDeg;
  const double cd = std::cos(dec);
  x = dist * cd * std::cos(ra);
  y = dist * cd * std::sin(ra);
  z = dist * std::sin(dec);
}

namespace detail {

double comoving_segment(const Cosmology& cosmo, double z0, double z1) {
  const auto inv_e = [&cosmo](double zz) { return 1.0 / cosmo.efunc(zz); };
  return kHubbleDistance * integrate(inv_e, z0, z1, 1e-14, "comoving distance");
}

ComovingTable::ComovingTable(const Cosmology& cosmo, double zmax, double rel_tol)
    : cosmo_(cosmo), zmax_(zmax) {
  check_cosmology(cosmo);
  check_redshift(zmax);
  if (zmax > kMaxRedshift)
    throw ConfigError("redshift", "largest redshift " + std::to_string(zmax) +
                                      " is above the supported maximum " +
                                      std::to_string(static_cast<int>(kMaxRedshift)));
  const double om = cosmo.omega_m;
  // Start at spacing 1/256 in redshift (at least 8 intervals) and halve until verified.
  std::size_t n = std::max<std::size_t>(8, static_cast<std::size_t>(std::ceil(zmax * 256.0)));
  for (int attempt = 0; attempt < 8; ++attempt, n *= 2) {
    h_ = zmax > 0 ? zmax / static_cast<double>(n) : 1.0;
    d_.assign(n + 1, 0.0);
    d1_.assign(n + 1, 0.0);
    d2_.assign(n + 1, 0.0);
    std::vector<double> mid_exact(n);
    double acc = 0;
    for (std::size_t i = 0; i <= n; ++i) {
      const double z = static_cast<double>(i) * h_;
      if (i > 0) {
        const double z0 = static_cast<double>(i - 1) * h_;
        const double zm = z0 + 0.5 * h_;
        mid_exact[i - 1] = acc + comoving_segment(cosmo, z0, zm);
        acc = mid_exact[i - 1] + comoving_segment(cosmo, zm, z);
      }
      const double e = cosmo.efunc(z), a = 1.0 + z;
      d_[i] = acc;
      d1_[i] = kHubbleDistance / e;
      d2_[i] = -kHubbleDistance * 1.5 * om * a * a / (e * e * e);
    }
    if (zmax == 0) {
      max_rel_err_ = 0;
      return;
    }
    max_rel_err_ = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double zm = (static_cast<double>(i) + 0.5) * h_;
      const double err = std::abs((*this)(zm) - mid_exact[i]) / mid_exact[i];
      max_rel_err_ = std::max(max_rel_err_, err);
    }
    if (max_rel_err_ <= rel_tol) return;
  }
  throw NotConverged("comoving distance table: interpolation error above tolerance", 8,
                     max_rel_err_);
}

double ComovingTable::operator()(double z) const {
  z = std::clamp(z, 0.0, zmax_);
  const std::size_t last = d_.size() - 1;
  if (last == 0) return 0.0;
  std::size_t i = std::min(static_cast<std::size_t>(z / h_), last - 1);
  const double t = (z - static_cast<double>(i) * h_) / h_;
  // Quintic Hermite basis on [0, 1].
  const double t2 = t * t, t3 = t2 * t, t4 = t3 * t, t5 = t4 * t;
  const double h0 = 1 - 10 * t3 + 15 * t4 - 6 * t5;
  const double h1 = t - 6 * t3 + 8 * t4 - 3 * t5;
  const double h2 = 0.5 * (t2 - 3 * t3 + 3 * t4 - t5);
  const double h3 = 0.5 * (t3 - 2 * t4 + t5);
  const double h4 = -4 * t3 + 7 * t4 - 3 * t5;
  const double h5 = 10 * t3 - 15 * t4 + 6 * t5;
  const double hh = h_ * h_;
  return d_[i] * h0 + h_ * d1_[i] * h1 + hh * d2_[i] * h2 + hh * d2_[i + 1] * h3 +
         h_ * d1_[i + 1] * h4 + d_[i + 1] * h5;
}

}  // namespace detail
}  // namespace almagest::io
