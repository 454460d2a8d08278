// Combination of sky regions at the level of counts (regions.hpp; npcf-conventions.md,
// "Combining sky regions"). Each region is a complete job of its own (point set normalised within
// the region, its own graph); here only its counts are weighted by S^k and summed, and the
// estimators are formed again from the sums.
#include "almagest/npcf/regions.hpp"

#include <cctype>
#include <cmath>
#include <string>

#include "almagest/core/error.hpp"
#include "npcf/internal.hpp"

namespace almagest::npcf {

namespace {

void add_weighted(std::vector<double>& into, const std::vector<double>& x, double f) {
  for (std::size_t k = 0; k < into.size(); ++k) into[k] += f * x[k];
}

void add_counts(std::vector<std::uint64_t>& into, const std::vector<std::uint64_t>& x) {
  for (std::size_t k = 0; k < into.size(); ++k) into[k] += x[k];
}

double ratio(double n, double r) { return r != 0.0 ? n / r : 0.0; }

}  // namespace

std::vector<double> region_weights(const std::vector<RegionResult>& regions, int order) {
  double total = 0;
  for (const auto& g : regions) {
    if (!(g.data_weight_sum > 0) || !std::isfinite(g.data_weight_sum))
      throw Error("region '" + g.name + "': the summed data weight must be positive and finite to "
                  "combine regions (it is " + std::to_string(g.data_weight_sum) + ")");
    total += g.data_weight_sum;
  }
  std::vector<double> f;
  for (const auto& g : regions) f.push_back(std::pow(g.data_weight_sum / total, order));
  return f;
}

NpcfResult combine_regions(const std::vector<RegionResult>& regions) {
  if (regions.empty()) throw Error("combine_regions: no regions");
  const NpcfResult& first = regions.front().result;
  const std::size_t rows = first.rows();
  for (const auto& g : regions) {
    const NpcfResult& x = g.result;
    if (x.statistic != first.statistic || x.rows() != rows || x.bins != first.bins || x.mu != first.mu ||
        x.n_odd.size() != first.n_odd.size() || x.legendre2.size() != first.legendre2.size())
      throw Error("region '" + g.name + "': its result has other rows than region '" +
                  regions.front().name + "' (the regions of a job share one configuration)");
    if (x.analytic_randoms) throw Error("region '" + g.name + "': analytic randoms cannot be combined");
  }
  const std::vector<double> f = region_weights(regions, first.order);
  const std::vector<double> f2 = region_weights(regions, 2);

  NpcfResult c;
  c.config = first.config;
  c.statistic = first.statistic;
  c.order = first.order;
  c.edges_per_row = first.edges_per_row;
  c.bins = first.bins;
  c.mu = first.mu;
  c.realisable = first.realisable;
  c.provenance = first.provenance;
  c.tuples.assign(rows, 0);
  c.random_tuples.assign(rows, 0);
  c.n.assign(rows, 0.0);
  c.r.assign(rows, 0.0);
  const bool parity = !first.n_odd.empty();
  if (parity) {
    c.n_odd.assign(rows, 0.0);
    c.r_odd.assign(rows, 0.0);
    c.degenerate.assign(rows, 0);
  }
  c.legendre2.assign(first.legendre2.size(), 0.0);
  c.legendre4.assign(first.legendre4.size(), 0.0);
  for (std::size_t i = 0; i < regions.size(); ++i) {
    const NpcfResult& x = regions[i].result;
    add_counts(c.tuples, x.tuples);
    add_counts(c.random_tuples, x.random_tuples);
    add_weighted(c.n, x.n, f[i]);
    add_weighted(c.r, x.r, f[i]);
    if (parity) {
      add_weighted(c.n_odd, x.n_odd, f[i]);
      add_weighted(c.r_odd, x.r_odd, f[i]);
      add_counts(c.degenerate, x.degenerate);
    }
    add_weighted(c.legendre2, x.legendre2, f2[i]);
    add_weighted(c.legendre4, x.legendre4, f2[i]);
    c.ndata += x.ndata;
    c.nrandom += x.nrandom;
    c.graph_edges += x.graph_edges;
  }

  const int nb = c.config.bins.nbins;
  if (c.order != 4) {
    c.estimator.assign(rows, 0.0);
    for (std::size_t k = 0; k < rows; ++k) c.estimator[k] = ratio(c.n[k], c.r[k]);
    if (!c.legendre2.empty()) {
      // Multipoles per radial bin from the combined rows and Legendre sums (finalize.cpp's rule).
      std::vector<double> nn(nb, 0.0), rr(nb, 0.0);
      for (std::size_t k = 0; k < rows; ++k) {
        nn[c.bins[k]] += c.n[k];
        rr[c.bins[k]] += c.r[k];
      }
      c.xi0.assign(nb, 0.0);
      c.xi2.assign(nb, 0.0);
      c.xi4.assign(nb, 0.0);
      for (int b = 0; b < nb; ++b) {
        if (rr[b] == 0.0) continue;
        c.xi0[b] = nn[b] / rr[b];
        c.xi2[b] = 5.0 * c.legendre2[b] / rr[b];
        c.xi4[b] = 9.0 * c.legendre4[b] / rr[b];
      }
    }
    return c;
  }

  // 4pCF: the internal 2pCF from the combined pair counts (S^2), then the 4pCF estimators.
  std::vector<double> nn(nb, 0.0), rr(nb, 0.0), l2(nb, 0.0), l4(nb, 0.0);
  const bool aniso = !first.xi2_internal.empty();
  for (std::size_t i = 0; i < regions.size(); ++i) {
    const NpcfResult& x = regions[i].internal_2pcf;
    if (x.order != 2 || x.bins.size() != x.rows() || x.n.size() != x.rows() ||
        (aniso && x.legendre2.size() != static_cast<std::size_t>(nb)))
      throw Error("region '" + regions[i].name + "': the 4pCF combination needs the region's "
                  "internal 2pCF (with Legendre sums when mu bins are used)");
    // Rows summed over mu bins first, so the region's radial sums are formed as its own are.
    std::vector<double> rn(nb, 0.0), rrr(nb, 0.0);
    for (std::size_t k = 0; k < x.rows(); ++k) {
      rn[x.bins[k]] += x.n[k];
      rrr[x.bins[k]] += x.r[k];
    }
    for (int b = 0; b < nb; ++b) {
      nn[b] += f2[i] * rn[b];
      rr[b] += f2[i] * rrr[b];
      if (aniso) {
        l2[b] += f2[i] * x.legendre2[b];
        l4[b] += f2[i] * x.legendre4[b];
      }
    }
  }
  c.xi_internal.assign(nb, 0.0);
  if (aniso) {
    c.xi2_internal.assign(nb, 0.0);
    c.xi4_internal.assign(nb, 0.0);
  }
  for (int b = 0; b < nb; ++b) {
    c.xi_internal[b] = ratio(nn[b], rr[b]);
    if (aniso) {
      c.xi2_internal[b] = rr[b] != 0.0 ? 5.0 * l2[b] / rr[b] : 0.0;
      c.xi4_internal[b] = rr[b] != 0.0 ? 9.0 * l4[b] / rr[b] : 0.0;
    }
  }
  detail::finalize_4pcf(c, PointSet{});
  return c;
}

bool parse_region_entry(const std::string& text, RegionEntry& out, std::string& why) {
  const auto a = text.find(':');
  const auto b = a == std::string::npos ? a : text.find(':', a + 1);
  if (b == std::string::npos || text.find(':', b + 1) != std::string::npos) {
    why = "'" + text + "' is not NAME:DATA:RANDOMS (three fields separated by ':')";
    return false;
  }
  out.name = text.substr(0, a);
  out.data = text.substr(a + 1, b - a - 1);
  out.randoms = text.substr(b + 1);
  if (out.name.empty() || out.name.size() > 64) {
    why = "'" + text + "': the region name must have 1 to 64 characters";
    return false;
  }
  for (char ch : out.name)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-')) {
      why = "'" + text + "': the region name may hold only letters, digits, '_' and '-'";
      return false;
    }
  if (out.data.empty() || out.randoms.empty()) {
    why = "'" + text + "': DATA and RANDOMS must both be given";
    return false;
  }
  return true;
}

}  // namespace almagest::npcf
