// Estimators from the raw signed sums (conventions: docs/npcf.md).
//   xi = NN/RR, zeta = NNN/RRR (no "-1"), 0 where the random count is 0.
//   Periodic box without randoms (2pCF only): RR = W2 V_shell / V, W2 = (1 - sum w^2)/2 over the
//   normalised data weights, and xi = DD/RR - 1.
#include <cmath>
#include <numbers>
#include <string>

#include "almagest/core/error.hpp"
#include "almagest/npcf/plan.hpp"
#include "internal.hpp"

namespace almagest::npcf {

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
    if (r.order != 2)
      throw ConfigError("randoms", std::string("a random catalogue is required for the ") +
                                       to_string(r.statistic) +
                                       " statistic (analytic randoms exist only for the 2pcf in a "
                                       "periodic box)");
    if (!r.config.periodic)
      throw ConfigError("randoms", "a random catalogue is required unless the box is periodic "
                                   "(analytic randoms)");
    // Analytic randoms: the expected DD of an unclustered catalogue with these weights.
    const double box = r.config.box;
    const double volume = box * box * box;
    const double w2 = 0.5 * (1.0 - p.data_w2_sum);
    r.analytic_randoms = true;
    r.estimator.assign(rows, 0.0);
    for (std::size_t k = 0; k < rows; ++k) {
      const int b = r.bins[k];
      const double lo = r.config.bins.edge(b), hi = r.config.bins.edge(b + 1);
      const double shell = 4.0 / 3.0 * std::numbers::pi * (hi * hi * hi - lo * lo * lo);
      r.r[k] = w2 * shell / volume;
      r.random_tuples[k] = 0;
      r.estimator[k] = r.r[k] != 0.0 ? r.n[k] / r.r[k] - 1.0 : 0.0;
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
}

}  // namespace almagest::npcf
