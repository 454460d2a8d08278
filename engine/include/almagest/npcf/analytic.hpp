#pragma once
// Analytic randoms in a periodic box (docs/npcf.md, "Analytic randoms"): the expected all-random
// sums of an unclustered catalogue with the data's normalised weights, in closed form (2pCF) or
// from the exact triangle kernel (3pCF).
#include <array>
#include <vector>

#include "almagest/npcf/config.hpp"

namespace almagest::npcf {

/// Elementary symmetric sums of normalised weights (sum w = 1) from the power sums
/// s2 = sum w^2, s3 = sum w^3: W2 = (1 - s2)/2, W3 = (1 - 3 s2 + 2 s3)/6 ("each unordered tuple
/// once").
double analytic_w2(double s2);
double analytic_w3(double s2, double s3);

/// RR of radial bin b: W2 (4 pi / 3)(r_hi^3 - r_lo^3) / V.
double analytic_rr(const Binning& bins, int b, double w2, double volume);

/// T = integral over s1 in [a0, a1], s2 in [b0, b1], s3 in [c0, c1] of s1 s2 s3 under the
/// triangle inequality |s1 - s2| <= s3 <= s1 + s2. Piecewise-polynomial integrand integrated
/// exactly (to rounding): s3 analytically, then s2 and s1 by Gauss-Legendre on the pieces between
/// every kink of the inequality and the bin edges.
double triangle_kernel(double a0, double a1, double b0, double b1, double c0, double c1);

/// RRR of the sorted side bins (b1 <= b2 <= b3): W3 Nperm 8 pi^2 T / V^2, Nperm = 1, 3 or 6 for
/// 1, 2 or 3 distinct bins.
double analytic_rrr(const Binning& bins, const std::array<int, 3>& b, double w3, double volume);

}  // namespace almagest::npcf
