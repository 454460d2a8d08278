// Estimators of the 4pCF from the raw sums (see docs/npcf-fourpoint.md):
//   zeta      = NNNN / RRRR                      (0 where RRRR == 0)
//   zeta_disc = xi(r12) xi(r34) + xi(r13) xi(r24) + xi(r14) xi(r23)   (internal 2pCF per bin)
//   zeta_conn = zeta - zeta_disc
//   zeta_odd  = NNNN_odd / RRRR                  (parity mode; 0 where RRRR == 0)
//   realisable: Cayley-Menger determinant of the bin centres > 0
#include <array>
#include <string>

#include "almagest/core/error.hpp"
#include "almagest/npcf/configurations.hpp"
#include "npcf/internal.hpp"

namespace almagest::npcf::detail {

namespace {
/// The three pairings of opposite edges in edge order 12 13 14 23 24 34: (12,34) (13,24) (14,23).
constexpr int kPairings[3][2] = {{0, 5}, {1, 4}, {2, 3}};
}  // namespace

void finalize_4pcf(NpcfResult& r, const PointSet& p) {
  (void)p;
  if (r.analytic_randoms)
    throw ConfigError("randoms", "4-point statistics need a random catalogue (analytic randoms "
                                 "are only available for the 2pCF and 3pCF)");
  const std::size_t rows = r.rows();
  const int nbins = r.config.bins.nbins;
  ALMAGEST_ASSERT(r.edges_per_row == 6 && r.bins.size() == rows * 6, "4pCF result without 6 bins per row");
  ALMAGEST_ASSERT(r.n.size() == rows && r.r.size() == rows, "4pCF result without raw sums");
  if (r.xi_internal.size() != static_cast<std::size_t>(nbins))
    throw Error("4pCF finalize: the internal 2pCF (xi_internal) must hold one value per radial bin (" +
                std::to_string(nbins) + "), it holds " + std::to_string(r.xi_internal.size()));

  const bool parity = !r.n_odd.empty();
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
    r.estimator[k] = zeta;
    r.zeta_disc[k] = disc;
    r.zeta_conn[k] = zeta - disc;
    std::array<double, 6> centres{};
    for (int e = 0; e < 6; ++e) centres[e] = r.config.bins.centre(b[e]);
    r.realisable[k] = cayley_menger_positive(centres) ? 1 : 0;
    if (parity) r.zeta_odd[k] = rr != 0.0 ? r.n_odd[k] / rr : 0.0;
  }
}

}  // namespace almagest::npcf::detail
