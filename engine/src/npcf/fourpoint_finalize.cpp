// Estimators of the 4pCF from the raw sums (see docs/npcf-fourpoint.md):
//   zeta      = NNNN / RRRR                      (0 where RRRR == 0)
//   zeta_disc = xi(r12) xi(r34) + xi(r13) xi(r24) + xi(r14) xi(r23)   (internal 2pCF per bin)
//               + with mu bins or a periodic box, per pairing (a, b):
//                 xi2(a) xi2(b) L2(cos t)/5 + xi4(a) xi4(b) L4(cos t)/9, t the angle between
//                 the two opposite edges from the bin-centre sides
//   zeta_conn = zeta - zeta_disc
//   zeta_odd  = NNNN_odd / RRRR                  (parity mode; 0 where RRRR == 0)
//   realisable: Cayley-Menger determinant of the bin centres > 0
#include <algorithm>
#include <array>
#include <utility>
#include <string>

#include "almagest/core/error.hpp"
#include "almagest/npcf/configurations.hpp"
#include "npcf/internal.hpp"

namespace almagest::npcf::detail {

namespace {
/// The three pairings of opposite edges in edge order 12 13 14 23 24 34: (12,34) (13,24) (14,23).
constexpr int kPairings[3][2] = {{0, 5}, {1, 4}, {2, 3}};
/// Edge e in edge order as its vertex pair (0-based vertices).
constexpr int kEdge[6][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};

int edge_of(int u, int v) {
  if (u > v) std::swap(u, v);
  for (int e = 0; e < 6; ++e)
    if (kEdge[e][0] == u && kEdge[e][1] == v) return e;
  return -1;
}

/// cos of the angle between the opposite edges (u, v) and (s, t) of a tetrahedron with side
/// lengths d (edge order): (x_v - x_u).(x_t - x_s) = (d_ut^2 + d_vs^2 - d_us^2 - d_vt^2) / 2,
/// clamped to [-1, 1] (bin centres need not be realisable).
double opposite_cos(const std::array<double, 6>& d, int ea, int eb) {
  const int u = kEdge[ea][0], v = kEdge[ea][1], s = kEdge[eb][0], t = kEdge[eb][1];
  auto sq = [&](int a, int b) { return d[edge_of(a, b)] * d[edge_of(a, b)]; };
  const double dot = 0.5 * (sq(u, t) + sq(v, s) - sq(u, s) - sq(v, t));
  const double den = d[ea] * d[eb];
  if (!(den > 0)) return 0.0;
  return std::clamp(dot / den, -1.0, 1.0);
}
}  // namespace

void finalize_4pcf(NpcfResult& r, const PointSet& p) {
  (void)p;
  // With analytic randoms (finalize_4pcf_analytic, analytic4.cpp) r.r already holds the
  // analytic RRRR; that function subtracts 1, the xi's and the 3pCF faces afterwards.
  const std::size_t rows = r.rows();
  const int nbins = r.config.bins.nbins;
  ALMAGEST_ASSERT(r.edges_per_row == 6 && r.bins.size() == rows * 6, "4pCF result without 6 bins per row");
  ALMAGEST_ASSERT(r.n.size() == rows && r.r.size() == rows, "4pCF result without raw sums");
  if (r.xi_internal.size() != static_cast<std::size_t>(nbins))
    throw Error("4pCF finalize: the internal 2pCF (xi_internal) must hold one value per radial bin (" +
                std::to_string(nbins) + "), it holds " + std::to_string(r.xi_internal.size()));

  const bool parity = !r.n_odd.empty();
  // Anisotropic terms (mu bins or a periodic box): the internal xi_2 and xi_4 are present.
  const bool aniso = !r.xi2_internal.empty();
  if (aniso && (r.xi2_internal.size() != static_cast<std::size_t>(nbins) ||
                r.xi4_internal.size() != static_cast<std::size_t>(nbins)))
    throw Error("4pCF finalize: the internal xi_2 / xi_4 must hold one value per radial bin");
  r.estimator.assign(rows, 0.0);
  r.zeta_disc.assign(rows, 0.0);
  r.zeta_conn.assign(rows, 0.0);
  r.realisable.assign(rows, 0);
  if (parity) r.zeta_odd.assign(rows, 0.0);

  for (std::size_t k = 0; k < rows; ++k) {
    const std::uint8_t* b = r.bins.data() + 6 * k;
    const double rr = r.r[k];
    const double zeta = rr != 0.0 ? r.n[k] / rr : 0.0;
    double disc = 0.0;
    for (const auto& pr : kPairings) disc += r.xi_internal[b[pr[0]]] * r.xi_internal[b[pr[1]]];
    std::array<double, 6> centres{};
    for (int e = 0; e < 6; ++e) centres[e] = r.config.bins.centre(b[e]);
    if (aniso) {
      // Orientation average of xi(r_a, mu_a) xi(r_b, mu_b): sum_l xi_l xi_l L_l(cos t)/(2l + 1).
      for (const auto& pr : kPairings) {
        const double c = opposite_cos(centres, pr[0], pr[1]), c2 = c * c;
        const double l2 = 1.5 * c2 - 0.5, l4 = (35.0 * c2 * c2 - 30.0 * c2 + 3.0) / 8.0;
        disc += r.xi2_internal[b[pr[0]]] * r.xi2_internal[b[pr[1]]] * l2 / 5.0 +
                r.xi4_internal[b[pr[0]]] * r.xi4_internal[b[pr[1]]] * l4 / 9.0;
      }
    }
    r.estimator[k] = zeta;
    r.zeta_disc[k] = disc;
    r.zeta_conn[k] = zeta - disc;
    r.realisable[k] = cayley_menger_positive(centres) ? 1 : 0;
    if (parity) r.zeta_odd[k] = rr != 0.0 ? r.n_odd[k] / rr : 0.0;
  }
}

}  // namespace almagest::npcf::detail
