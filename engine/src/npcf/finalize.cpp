// Estimators from the raw signed sums (conventions: docs/npcf.md).
//   xi = NN/RR, zeta = NNN/RRR (no "-1"), 0 where the random count is 0.
//   Periodic box without randoms: RR = W2 V_shell / V, W2 = (1 - sum w^2)/2 over the normalised
//   data weights, and xi = DD/RR - 1; the 3pCF from the exact triangle kernel (analytic.hpp),
//   zeta = DDD/RRR - 1 - xi(r1) - xi(r2) - xi(r3). Random counts are split evenly over mu bins.
//   Multipoles (2pCF): xi_l = (2l + 1) S_l / RR(r), RR(r) summed over the mu bins.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "almagest/core/error.hpp"
#include "almagest/npcf/analytic.hpp"
#include "almagest/npcf/plan.hpp"
#include "internal.hpp"

namespace almagest::npcf {

namespace {

/// xi_0, xi_2, xi_4 per radial bin from the rows (summed over mu) and the Legendre sums.
void finalize_multipoles(NpcfResult& r) {
  if (r.legendre2.empty()) return;
  const int nb = r.config.bins.nbins;
  std::vector<double> nn(nb, 0.0), rr(nb, 0.0);
  for (std::size_t k = 0; k < r.rows(); ++k) {
    nn[r.bins[k]] += r.n[k];
    rr[r.bins[k]] += r.r[k];
  }
  r.xi0.assign(nb, 0.0);
  r.xi2.assign(nb, 0.0);
  r.xi4.assign(nb, 0.0);
  for (int b = 0; b < nb; ++b) {
    if (rr[b] == 0.0) continue;
    r.xi0[b] = nn[b] / rr[b] - (r.analytic_randoms ? 1.0 : 0.0);
    r.xi2[b] = 5.0 * r.legendre2[b] / rr[b];
    r.xi4[b] = 9.0 * r.legendre4[b] / rr[b];
  }
}

}  // namespace

void finalize(NpcfResult& r, const PointSet& p) {
  const std::size_t rows = r.rows();
  ALMAGEST_ASSERT(r.n.size() == rows && r.r.size() == rows, "finalize: result without raw sums");
  ALMAGEST_ASSERT(r.bins.size() == rows * static_cast<std::size_t>(r.edges_per_row),
                  "finalize: result without bins");
  r.ndata = p.ndata;
  r.nrandom = p.size() - p.ndata;
  // Empty rows: the sign flip that makes RR..RRRR positive turns 0 into -0; report +0.
  for (auto* v : {&r.n, &r.r, &r.n_odd, &r.r_odd})
    for (double& x : *v) x += 0.0;

  if (!p.has_randoms()) {
    if (r.order == 4)
      throw ConfigError("randoms", std::string("a random catalogue is required for the ") +
                                       to_string(r.statistic) +
                                       " statistic here (in a periodic box NpcfPlan::execute "
                                       "gives the 4pCF analytic randoms: finalize_4pcf_analytic)");
    if (!r.config.periodic)
      throw ConfigError("randoms", "a random catalogue is required unless the box is periodic "
                                   "(analytic randoms)");
    // Analytic randoms: the expected counts of an unclustered catalogue with these weights.
    const double box = r.config.box;
    const double volume = box * box * box;
    const int nmu = std::max(1, r.config.nmu);  // random pairs/normals are uniform in mu
    r.analytic_randoms = true;
    r.estimator.assign(rows, 0.0);
    if (r.order == 2) {
      const double w2 = analytic_w2(p.data_w2_sum);
      for (std::size_t k = 0; k < rows; ++k) {
        r.r[k] = analytic_rr(r.config.bins, r.bins[k], w2, volume) / nmu;
        r.random_tuples[k] = 0;
        r.estimator[k] = r.r[k] != 0.0 ? r.n[k] / r.r[k] - 1.0 : 0.0;
      }
      finalize_multipoles(r);
      return;
    }
    // 3pCF: zeta = DDD/RRR - 1 - xi(r1) - xi(r2) - xi(r3), xi the internal analytic 2pCF.
    if (r.xi_internal.size() != static_cast<std::size_t>(r.config.bins.nbins))
      throw Error("3pCF with analytic randoms: the internal 2pCF (xi_internal) must hold one value "
                  "per radial bin");
    double s3 = 0;
    for (std::size_t i = 0; i < p.ndata; ++i) s3 += p.w[i] * p.w[i] * p.w[i];
    const double w3 = analytic_w3(p.data_w2_sum, s3);
    for (std::size_t k = 0; k < rows; ++k) {
      const std::uint8_t* b = r.bins.data() + 3 * k;
      r.r[k] = analytic_rrr(r.config.bins, {b[0], b[1], b[2]}, w3, volume) / nmu;
      r.random_tuples[k] = 0;
      if (r.r[k] != 0.0)
        r.estimator[k] = r.n[k] / r.r[k] - 1.0 - r.xi_internal[b[0]] - r.xi_internal[b[1]] -
                         r.xi_internal[b[2]];
    }
    return;
  }

  r.analytic_randoms = false;
  if (r.order == 4) {
    detail::finalize_4pcf(r, p);
    return;
  }
  r.estimator.assign(rows, 0.0);
  for (std::size_t k = 0; k < rows; ++k) r.estimator[k] = r.r[k] != 0.0 ? r.n[k] / r.r[k] : 0.0;
  if (r.order == 2) finalize_multipoles(r);
}

}  // namespace almagest::npcf
