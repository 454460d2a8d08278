// Analytic randoms of the 4pCF in a periodic box (see almagest/npcf/analytic.hpp): the expected
// RRRR of uniform points by semi-analytic quadrature.
//
// With the hub at the origin, vertex 2 on the z axis and vertex 3 in the xz plane,
//   integral d3r2 d3r3 d3r4 1[six edges in their bins]
//     = 8 pi^2 integral r12 r13 r23 dr12 dr13 dr23  integral_{b14} r14^2 Omega(r14) dr14,
// Omega the solid angle of directions of r4 whose distances to vertices 2 and 3 fall in b24 and
// b34. For fixed r14 each condition is a band of cos(angle to r2) (or to r3) between two closed-
// form limits, i.e. a difference of two spherical caps, so Omega is four signed cap-cap
// intersection areas, each in closed form. The remaining four integrals are nested adaptive
// Gauss-Kronrod (7/15) rules, split at every kink we can locate in closed form (the triangle
// inequality of the face, caps appearing, vanishing or covering the sphere) and bisected
// elsewhere until the Kronrod-Gauss difference of each level is below the relative tolerance.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "almagest/npcf/analytic.hpp"
#include "almagest/npcf/configurations.hpp"
#include "almagest/npcf/plan.hpp"
#include "core/parallel.hpp"
#include "npcf/internal.hpp"

namespace almagest::npcf {

namespace {

constexpr double kPi = std::numbers::pi;

// Gauss-Kronrod 7/15 nodes on [-1, 1] (symmetric: index 7 is the centre).
constexpr double kXk[8] = {0.991455371120812639, 0.949107912342758525, 0.864864423359769073,
                           0.741531185599394440, 0.586087235467691130, 0.405845151377397167,
                           0.207784955007898468, 0.0};
constexpr double kWk[8] = {0.022935322010529225, 0.063092092629978553, 0.104790010322250184,
                           0.140653259715525919, 0.169004726639267903, 0.190350578064785410,
                           0.204432940075298892, 0.209482141084727828};
// Gauss 7 weights on the odd Kronrod nodes (1, 3, 5) and the centre.
constexpr double kWg[4] = {0.129484966168869693, 0.279705391489276668, 0.381830050505118945,
                           0.417959183673469388};

template <class F>
double gk15(const F& f, double a, double b, double& err) {
  const double h = 0.5 * (b - a), m = 0.5 * (a + b);
  const double fc = f(m);
  double k = kWk[7] * fc, g = kWg[3] * fc;
  for (int j = 0; j < 7; ++j) {
    const double s = f(m - h * kXk[j]) + f(m + h * kXk[j]);
    k += kWk[j] * s;
    if (j % 2 == 1) g += kWg[j / 2] * s;
  }
  err = std::fabs(k - g) * std::fabs(h);
  return k * h;
}

/// Bisects [a, b] until each panel's Kronrod-Gauss difference is below its share of `tol`.
template <class F>
double adapt(const F& f, double a, double b, double k, double err, double tol, int depth) {
  if (err <= tol || depth >= 40 || b - a <= 1e-13 * (std::fabs(a) + std::fabs(b))) return k;
  const double m = 0.5 * (a + b);
  double e1, e2;
  const double k1 = gk15(f, a, m, e1), k2 = gk15(f, m, b, e2);
  return adapt(f, a, m, k1, e1, 0.5 * tol, depth + 1) + adapt(f, m, b, k2, e2, 0.5 * tol, depth + 1);
}

/// Integral of f over [lo, hi], split at the cuts inside it, each piece refined to the relative
/// tolerance `rel` of the first (unrefined) estimate of the whole.
template <class F>
double integrate(const F& f, double lo, double hi, std::vector<double> cuts, double rel) {
  if (!(hi > lo)) return 0.0;
  cuts.push_back(lo);
  cuts.push_back(hi);
  std::sort(cuts.begin(), cuts.end());
  std::vector<double> a, b, k, e;
  double total = 0;
  for (std::size_t j = 0; j + 1 < cuts.size(); ++j) {
    const double x0 = std::max(lo, cuts[j]), x1 = std::min(hi, cuts[j + 1]);
    if (!(x1 > x0)) continue;
    double err;
    const double v = gk15(f, x0, x1, err);
    a.push_back(x0), b.push_back(x1), k.push_back(v), e.push_back(err);
    total += std::fabs(v);
  }
  const double tol = rel * total;
  double s = 0;
  for (std::size_t j = 0; j < a.size(); ++j)
    s += adapt(f, a[j], b[j], k[j], e[j], tol * (b[j] - a[j]) / (hi - lo), 0);
  return s;
}

/// Area of {x : x.a >= p} intersected with {x : x.b >= q} on the unit sphere, a.b = cg.
double cap_cap(double p, double q, double cg) {
  if (p >= 1.0 || q >= 1.0) return 0.0;
  const double cap_p = 2 * kPi * (1 - std::max(p, -1.0)), cap_q = 2 * kPi * (1 - std::max(q, -1.0));
  if (p <= -1.0) return cap_q;
  if (q <= -1.0) return cap_p;
  const double al = std::acos(p), be = std::acos(q), ga = std::acos(std::clamp(cg, -1.0, 1.0));
  if (ga >= al + be) return 0.0;                          // disjoint
  if (ga + be <= al) return cap_q;                        // b's cap inside a's
  if (ga + al <= be) return cap_p;                        // a's cap inside b's
  if (al + be + ga >= 2 * kPi) return cap_p + cap_q - 4 * kPi;  // complements disjoint
  const double sa = std::sin(al), sb = std::sin(be), sg = std::sin(ga);
  auto acl = [](double x) { return std::acos(std::clamp(x, -1.0, 1.0)); };
  return 2 * (kPi - acl((cg - p * q) / (sa * sb)) - p * acl((q - cg * p) / (sg * sa)) -
              q * acl((p - cg * q) / (sg * sb)));
}

struct Edges {
  double lo[6], hi[6];  // edge order 12 13 14 23 24 34
};

/// G(r12, r13, r23) = integral over b14 of r14^2 Omega(r14) dr14.
double vertex4_volume(const Edges& e, double r12, double r13, double r23, double rel) {
  const double cg = std::clamp((r12 * r12 + r13 * r13 - r23 * r23) / (2 * r12 * r13), -1.0, 1.0);
  const double l24 = e.lo[4], h24 = e.hi[4], l34 = e.lo[5], h34 = e.hi[5];
  const double lo = std::max({e.lo[2], r12 - h24, r13 - h34, 0.0});
  const double hi = std::min({e.hi[2], r12 + h24, r13 + h34});
  if (!(hi > lo)) return 0.0;
  auto omega = [&](double r) {
    // |r4 - r2| < d  <=>  cos(angle to r2) > (r^2 + r12^2 - d^2) / (2 r r12).
    const double p_hi = (r * r + r12 * r12 - h24 * h24) / (2 * r * r12);
    const double p_lo = (r * r + r12 * r12 - l24 * l24) / (2 * r * r12);
    const double q_hi = (r * r + r13 * r13 - h34 * h34) / (2 * r * r13);
    const double q_lo = (r * r + r13 * r13 - l34 * l34) / (2 * r * r13);
    const double w = cap_cap(p_hi, q_hi, cg) - cap_cap(p_lo, q_hi, cg) - cap_cap(p_hi, q_lo, cg) +
                     cap_cap(p_lo, q_lo, cg);
    return r * r * std::max(0.0, w);
  };
  std::vector<double> cuts{r12 + l24, r12 - l24, l24 - r12, h24 - r12,
                           r13 + l34, r13 - l34, l34 - r13, h34 - r13};
  return integrate(omega, lo, hi, cuts, rel);
}

}  // namespace

double analytic_w4(double s2, double s3, double s4) {
  return (1.0 - 6.0 * s2 + 3.0 * s2 * s2 + 8.0 * s3 - 6.0 * s4) / 24.0;
}

double tetra_kernel(const std::array<double, 6>& lo, const std::array<double, 6>& hi, double rel) {
  Edges e;
  for (int j = 0; j < 6; ++j) e.lo[j] = std::max(0.0, lo[j]), e.hi[j] = hi[j];
  for (int j = 0; j < 6; ++j)
    if (!(e.hi[j] > e.lo[j])) return 0.0;
  const double a0 = e.lo[0], a1 = e.hi[0], b0 = e.lo[1], b1 = e.hi[1], c0 = e.lo[3], c1 = e.hi[3];
  // The face's triangle inequality kinks, as in triangle_kernel: r13 = r12 + k, r13 = k - r12.
  const double ks[5] = {0.0, c0, -c0, c1, -c1};
  const double km[2] = {c0, c1};
  std::vector<double> outer;
  for (double b : {b0, b1}) {
    for (double k : ks) outer.push_back(b - k);
    for (double k : km) outer.push_back(k - b);
  }
  for (double k2 : km)
    for (double k : ks) outer.push_back(0.5 * (k2 - k));
  const double t = integrate(
      [&](double r12) {
        if (!(r12 > 0)) return 0.0;
        std::vector<double> inner;
        for (double k : ks) inner.push_back(r12 + k);
        for (double k : km) inner.push_back(k - r12);
        return r12 * integrate(
                         [&](double r13) {
                           if (!(r13 > 0)) return 0.0;
                           const double lo3 = std::max(c0, std::fabs(r12 - r13));
                           const double hi3 = std::min(c1, r12 + r13);
                           return r13 * integrate(
                                            [&](double r23) {
                                              return r23 * vertex4_volume(e, r12, r13, r23, rel);
                                            },
                                            lo3, hi3, {}, rel);
                         },
                         b0, b1, inner, rel);
      },
      a0, a1, outer, rel);
  return 8.0 * kPi * kPi * t;
}

int orbit_size(const std::array<int, 6>& t) {
  // Vertex permutations act on edges; the distinct images of t under the 24 of them.
  std::vector<std::array<int, 6>> seen;
  int perm[4] = {0, 1, 2, 3};
  do {
    std::array<int, 6> img{};
    for (int j = 0; j < 6; ++j) {
      int u = perm[kEdgeVertices[j][0]], v = perm[kEdgeVertices[j][1]];
      if (u > v) std::swap(u, v);
      for (int m = 0; m < 6; ++m)
        if (kEdgeVertices[m][0] == u && kEdgeVertices[m][1] == v) img[j] = t[m];
    }
    if (std::find(seen.begin(), seen.end(), img) == seen.end()) seen.push_back(img);
  } while (std::next_permutation(perm, perm + 4));
  return static_cast<int>(seen.size());
}

double analytic_rrrr(const Binning& bins, const std::array<int, 6>& c, double w4, double volume,
                     double rel) {
  std::array<double, 6> lo{}, hi{};
  for (int j = 0; j < 6; ++j) lo[j] = bins.edge(c[j]), hi[j] = bins.edge(c[j] + 1);
  const double k = tetra_kernel(lo, hi, rel);
  return k == 0.0 ? 0.0 : w4 * orbit_size(c) * k / (volume * volume * volume);
}

void finalize_4pcf_analytic(NpcfResult& r, const PointSet& p, const NpcfResult& zeta3,
                            const JobContext& ctx, double rel) {
  const std::size_t rows = r.rows();
  const int nb = r.config.bins.nbins;
  if (r.xi_internal.size() != static_cast<std::size_t>(nb))
    throw Error("4pCF with analytic randoms: the internal 2pCF must hold one value per radial bin");
  // The internal connected 3pCF by sorted bin triple (dense n^3, any order of its rows).
  if (zeta3.edges_per_row != 3 || zeta3.bins.size() != 3 * zeta3.estimator.size() ||
      zeta3.estimator.size() != num_rows_3pcf(nb))
    throw Error("4pCF with analytic randoms: the internal 3pCF must hold one value per triangle row");
  const std::size_t n = static_cast<std::size_t>(nb);
  std::vector<double> face(n * n * n, 0.0);
  for (std::size_t k = 0; k < zeta3.estimator.size(); ++k) {
    std::array<int, 3> t{zeta3.bins[3 * k], zeta3.bins[3 * k + 1], zeta3.bins[3 * k + 2]};
    std::sort(t.begin(), t.end());
    face[(t[0] * n + t[1]) * n + t[2]] = zeta3.estimator[k];
  }
  auto face_zeta = [&](int a, int b, int c) {
    std::array<int, 3> t{a, b, c};
    std::sort(t.begin(), t.end());
    return face[(t[0] * n + t[1]) * n + t[2]];
  };
  double s3 = 0, s4 = 0;
  for (std::size_t i = 0; i < p.ndata; ++i) {
    const double w = p.w[i];
    s3 += w * w * w;
    s4 += w * w * w * w;
  }
  const double w4 = analytic_w4(p.data_w2_sum, s3, s4);
  const double box = r.config.box, volume = box * box * box;
  // One quadrature per configuration; rows are independent, so spread them over the threads.
  parallel::parallel_for(rows, r.config.threads > 0 ? r.config.threads : ctx.threads, ctx,
                         "analytic RRRR", [&](std::size_t k) {
                           const std::uint8_t* b = r.bins.data() + 6 * k;
                           r.r[k] = analytic_rrrr(r.config.bins,
                                                  {b[0], b[1], b[2], b[3], b[4], b[5]}, w4,
                                                  volume, rel);
                         });
  std::fill(r.random_tuples.begin(), r.random_tuples.end(), 0);
  for (auto* v : {&r.n, &r.n_odd})
    for (double& x : *v) x += 0.0;  // empty rows report +0 (as finalize())
  if (!r.r_odd.empty()) std::fill(r.r_odd.begin(), r.r_odd.end(), 0.0);  // RRRR_odd = 0
  // zeta = NNNN/RRRR, zeta_disc, realisable, zeta_odd as with randoms; then the analytic
  // estimator subtracts 1, the six xi's and the four internal (connected) 3pCF faces.
  r.analytic_randoms = true;
  detail::finalize_4pcf(r, p);
  constexpr int kFaces[4][3] = {{0, 1, 3}, {0, 2, 4}, {1, 2, 5}, {3, 4, 5}};
  for (std::size_t k = 0; k < rows; ++k) {
    if (r.r[k] == 0.0) continue;
    const std::uint8_t* b = r.bins.data() + 6 * k;
    double sub = 1.0;
    for (int e = 0; e < 6; ++e) sub += r.xi_internal[b[e]];
    for (const auto& f : kFaces) sub += face_zeta(b[f[0]], b[f[1]], b[f[2]]);
    r.estimator[k] -= sub;
    r.zeta_conn[k] = r.estimator[k] - r.zeta_disc[k];
  }
}

}  // namespace almagest::npcf
