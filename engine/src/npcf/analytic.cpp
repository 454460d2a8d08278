// Analytic randoms of the 2pCF and 3pCF in a periodic box (see almagest/npcf/analytic.hpp).
#include "almagest/npcf/analytic.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace almagest::npcf {

namespace {

// 8-point Gauss-Legendre on [-1, 1]: exact for polynomials of degree <= 15. Between two kinks
// the inner integrand is a cubic in s2 and the outer one a polynomial of degree <= 8 in s1.
constexpr double kX[8] = {-0.9602898564975363, -0.7966664774136267, -0.5255324099163290,
                          -0.1834346424956498, 0.1834346424956498,  0.5255324099163290,
                          0.7966664774136267,  0.9602898564975363};
constexpr double kW[8] = {0.1012285362903763, 0.2223810344533745, 0.3137066458778873,
                          0.3626837833783620, 0.3626837833783620, 0.3137066458778873,
                          0.2223810344533745, 0.1012285362903763};

template <class F>
double gauss(double lo, double hi, const F& f) {
  const double h = 0.5 * (hi - lo), m = 0.5 * (hi + lo);
  double s = 0;
  for (int q = 0; q < 8; ++q) s += kW[q] * f(m + h * kX[q]);
  return s * h;
}

/// Integral of f over [lo, hi] split at the breakpoints inside it.
template <class F>
double piecewise(double lo, double hi, std::vector<double> cuts, const F& f) {
  if (!(hi > lo)) return 0.0;
  cuts.push_back(lo);
  cuts.push_back(hi);
  std::sort(cuts.begin(), cuts.end());
  double s = 0;
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
    const double a = std::max(lo, cuts[k]), b = std::min(hi, cuts[k + 1]);
    if (b > a) s += gauss(a, b, f);
  }
  return s;
}

}  // namespace

double analytic_w2(double s2) { return 0.5 * (1.0 - s2); }
double analytic_w3(double s2, double s3) { return (1.0 - 3.0 * s2 + 2.0 * s3) / 6.0; }

double analytic_rr(const Binning& bins, int b, double w2, double volume) {
  const double lo = bins.edge(b), hi = bins.edge(b + 1);
  return w2 * 4.0 / 3.0 * std::numbers::pi * (hi * hi * hi - lo * lo * lo) / volume;
}

double triangle_kernel(double a0, double a1, double b0, double b1, double c0, double c1) {
  // F(s1, s2) = integral of s3 over [max(c0, |s1 - s2|), min(c1, s1 + s2)].
  auto F = [&](double s1, double s2) {
    const double hi = std::min(c1, s1 + s2), lo = std::max(c0, std::fabs(s1 - s2));
    return hi > lo ? 0.5 * (hi * hi - lo * lo) : 0.0;
  };
  const double ks[5] = {0.0, c0, -c0, c1, -c1};  // kinks s2 = s1 + k
  const double km[2] = {c0, c1};                 // kinks s2 = k - s1
  std::vector<double> outer{0.0};
  for (double b : {b0, b1}) {
    outer.push_back(b);
    for (double k : ks) outer.push_back(b - k);
    for (double k : km) outer.push_back(k - b);
  }
  for (double k2 : km)
    for (double k : ks) outer.push_back(0.5 * (k2 - k));
  return piecewise(a0, a1, outer, [&](double s1) {
    std::vector<double> inner;
    for (double k : ks) inner.push_back(s1 + k);
    for (double k : km) inner.push_back(k - s1);
    return s1 * piecewise(b0, b1, inner, [&](double s2) { return s2 * F(s1, s2); });
  });
}

double analytic_rrr(const Binning& bins, const std::array<int, 3>& b, double w3, double volume) {
  const int distinct = 1 + (b[1] != b[0]) + (b[2] != b[1]);
  const double nperm = distinct == 1 ? 1.0 : distinct == 2 ? 3.0 : 6.0;
  const double t = triangle_kernel(bins.edge(b[0]), bins.edge(b[0] + 1), bins.edge(b[1]),
                                   bins.edge(b[1] + 1), bins.edge(b[2]), bins.edge(b[2] + 1));
  return w3 * nperm * 8.0 * std::numbers::pi * std::numbers::pi * t / (volume * volume);
}

}  // namespace almagest::npcf
