#pragma once
// Analytic randoms in a periodic box (docs/npcf.md, "Analytic randoms"): the expected all-random
// sums of an unclustered catalogue with the data's normalised weights, in closed form (2pCF) or
// from the exact triangle kernel (3pCF), or by semi-analytic quadrature (4pCF, analytic4.cpp).
#include <array>
#include <vector>

#include "almagest/core/job_context.hpp"
#include "almagest/npcf/config.hpp"
#include "almagest/npcf/points.hpp"
#include "almagest/npcf/result.hpp"

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

/// Default relative tolerance of each level of the 4pCF quadrature. The levels' errors are far
/// below their estimates: with it RRRR agrees with 1e-7 per level to a few 1e-6 (docs/npcf.md
/// states 1e-4; test_npcf_analytic4 checks it against a 10x stricter level and Monte Carlo).
inline constexpr double kTetraKernelTolerance = 1e-3;

/// W4 = (1 - 6 s2 + 3 s2^2 + 8 s3 - 6 s4)/24 (sum over unordered quadruplets of w1 w2 w3 w4).
double analytic_w4(double s2, double s3, double s4);

/// integral d3r2 d3r3 d3r4 1[all six edges |r_i - r_j| in [lo_e, hi_e)] with r1 = 0, edges in
/// edge order 12 13 14 23 24 34 (= 8 pi^2 Q of the note): four nested adaptive Gauss-Kronrod
/// levels over r12, r13, r23, r14 around a closed-form solid angle (two signed spherical bands
/// = four cap-cap intersections), each level refined to the relative tolerance `rel`.
double tetra_kernel(const std::array<double, 6>& lo, const std::array<double, 6>& hi,
                    double rel = kTetraKernelTolerance);

/// Number of distinct raw 6-tuples among the 24 vertex relabellings of t (1 .. 24).
int orbit_size(const std::array<int, 6>& t);

/// RRRR of a canonical 4pCF configuration (0-based bins, edge order): W4 x orbit_size(c) x
/// tetra_kernel / V^3, the expected count of all unordered quadruplets whose raw tuple (hub =
/// lowest index, as the engine counts them) canonicalises to c.
double analytic_rrrr(const Binning& bins, const std::array<int, 6>& c, double w4, double volume,
                     double rel = kTetraKernelTolerance);

/// 4pCF estimators with analytic randoms (periodic box, no random catalogue): r.r = analytic
/// RRRR per row, r.r_odd = 0, zeta = DDDD/RRRR - 1 - (six xi's from r.xi_internal) - (the four
/// faces' connected 3pCF from zeta3, the internal analytic 3pCF of the same graph and bins),
/// zeta_disc as with randoms, zeta_conn = zeta - zeta_disc, zeta_odd = DDDD_odd/RRRR.
void finalize_4pcf_analytic(NpcfResult& r, const PointSet& p, const NpcfResult& zeta3,
                            const JobContext& ctx, double rel = kTetraKernelTolerance);

}  // namespace almagest::npcf
