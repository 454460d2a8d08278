// 2pCF pair counts on the CPU: one pass over the half graph.
#include <cstdint>
#include <vector>

#include "almagest/npcf/graph.hpp"
#include "almagest/npcf/plan.hpp"
#include "parallel.hpp"

namespace almagest::npcf {

namespace {

struct PairAcc {
  std::vector<std::uint64_t> count, rcount;  // all pairs / all-random pairs, per bin
  std::vector<double> sum, rsum;             // sum of w_i w_j / over all-random pairs
};

struct MuAcc {
  std::vector<std::uint64_t> count, rcount;  // per (r bin, mu bin), r outer
  std::vector<double> sum, rsum;
  std::vector<double> l2, l4;                // per r bin: sum of L_l(mu) w_i w_j over all pairs
};

/// Anisotropic pass (nmu > 1 or multipoles): mu per pair from the coordinates. A separate
/// function so that the isotropic loop below stays exactly as it was.
NpcfResult count_2pcf_mu(const Graph& g, const PointSet& p, const NpcfConfig& c,
                         const JobContext& ctx) {
  const int nb = c.bins.nbins, nmu = c.nmu;
  const std::size_t rows = static_cast<std::size_t>(nb) * nmu;
  const bool legendre = c.wants_multipoles();
  const std::uint64_t ndata = p.ndata;
  const auto bounds = detail::make_chunks(g, 1, 256);
  const int threads = resolve_threads(c.threads > 0 ? c.threads : ctx.threads);
  Geometry geo;
  geo.periodic = c.periodic;
  geo.box = c.box;

  auto make = [&] {
    MuAcc a;
    a.count.assign(rows, 0);
    a.rcount.assign(rows, 0);
    a.sum.assign(rows, 0.0);
    a.rsum.assign(rows, 0.0);
    a.l2.assign(nb, 0.0);
    a.l4.assign(nb, 0.0);
    return a;
  };
  auto body = [&](std::uint64_t, std::uint64_t h0, std::uint64_t h1, MuAcc& a, const Graph& lists) {
    for (std::uint64_t i = h0; i < h1; ++i) {
      const double wi = p.w[i];
      const bool random_hub = i >= ndata;
      std::uint64_t* cnt = random_hub ? a.rcount.data() : a.count.data();
      double* sum = random_hub ? a.rsum.data() : a.sum.data();
      for (std::uint64_t e = lists.offsets[i]; e < lists.offsets[i + 1]; ++e) {
        const std::uint32_t j = lists.neighbour[e];
        double dx, dy, dz;
        geo.delta(p, i, j, dx, dy, dz);
        const double mu = pair_mu(p.x[i], p.y[i], p.z[i], dx, dy, dz, c.periodic);
        const int b = lists.bin[e];
        const std::size_t row = static_cast<std::size_t>(b) * nmu + mu_bin_signed(mu, nmu);
        const double ww = wi * p.w[j];
        ++cnt[row];
        sum[row] += ww;
        if (legendre) {
          const double m2 = mu * mu;
          a.l2[b] += ww * (1.5 * m2 - 0.5);
          a.l4[b] += ww * ((35.0 * m2 * m2 - 30.0 * m2 + 3.0) / 8.0);
        }
      }
    }
  };
  auto merge = [&](MuAcc& t, const MuAcc& a) {
    for (std::size_t k = 0; k < rows; ++k) {
      t.count[k] += a.count[k];
      t.rcount[k] += a.rcount[k];
      t.sum[k] += a.sum[k];
      t.rsum[k] += a.rsum[k];
    }
    for (int b = 0; b < nb; ++b) {
      t.l2[b] += a.l2[b];
      t.l4[b] += a.l4[b];
    }
  };
  MuAcc total = detail::chunked_reduce<MuAcc>(g, bounds, threads, ctx, "counting pairs", make, body, merge);

  NpcfResult r;
  r.config = c;
  r.config.statistic = Statistic::TwoPoint;
  r.statistic = Statistic::TwoPoint;
  r.order = 2;
  r.edges_per_row = 1;
  r.bins.resize(rows);
  r.tuples.resize(rows);
  r.random_tuples.resize(rows);
  r.n.resize(rows);
  r.r.resize(rows);
  if (nmu > 1) r.mu.resize(rows);
  for (std::size_t k = 0; k < rows; ++k) {
    r.bins[k] = static_cast<std::uint8_t>(k / nmu);
    if (nmu > 1) r.mu[k] = static_cast<std::uint8_t>(k % nmu);
    r.tuples[k] = total.count[k] + total.rcount[k];
    r.random_tuples[k] = total.rcount[k];
    r.n[k] = total.sum[k] + total.rsum[k];
    r.r[k] = total.rsum[k];
  }
  if (legendre) {
    r.legendre2 = std::move(total.l2);
    r.legendre4 = std::move(total.l4);
  }
  r.ndata = p.ndata;
  r.nrandom = p.size() - p.ndata;
  r.graph_edges = g.num_edges();
  return r;
}

}  // namespace

NpcfResult count_2pcf_cpu(const Graph& g, const PointSet& p, const NpcfConfig& c,
                          const JobContext& ctx) {
  if (c.nmu > 1 || c.wants_multipoles()) return count_2pcf_mu(g, p, c, ctx);
  const int nb = c.bins.nbins;
  const std::uint64_t ndata = p.ndata;
  const auto bounds = detail::make_chunks(g, 1, 256);
  const int threads = resolve_threads(c.threads > 0 ? c.threads : ctx.threads);

  auto make = [nb] {
    PairAcc a;
    a.count.assign(nb, 0);
    a.rcount.assign(nb, 0);
    a.sum.assign(nb, 0.0);
    a.rsum.assign(nb, 0.0);
    return a;
  };
  auto body = [&](std::uint64_t, std::uint64_t h0, std::uint64_t h1, PairAcc& a, const Graph& lists) {
    for (std::uint64_t i = h0; i < h1; ++i) {
      const double wi = p.w[i];
      const bool random_hub = i >= ndata;
      std::uint64_t* cnt = random_hub ? a.rcount.data() : a.count.data();
      double* sum = random_hub ? a.rsum.data() : a.sum.data();
      for (std::uint64_t e = lists.offsets[i]; e < lists.offsets[i + 1]; ++e) {
        const int b = lists.bin[e];
        ++cnt[b];
        sum[b] += wi * p.w[lists.neighbour[e]];
      }
    }
  };
  auto merge = [nb](PairAcc& t, const PairAcc& a) {
    for (int b = 0; b < nb; ++b) {
      t.count[b] += a.count[b];
      t.rcount[b] += a.rcount[b];
      t.sum[b] += a.sum[b];
      t.rsum[b] += a.rsum[b];
    }
  };
  PairAcc total = detail::chunked_reduce<PairAcc>(g, bounds, threads, ctx, "counting pairs", make, body, merge);

  NpcfResult r;
  r.config = c;
  r.config.statistic = Statistic::TwoPoint;
  r.statistic = Statistic::TwoPoint;
  r.order = 2;
  r.edges_per_row = 1;
  r.bins.resize(nb);
  r.tuples.resize(nb);
  r.random_tuples.resize(nb);
  r.n.resize(nb);
  r.r.resize(nb);
  for (int b = 0; b < nb; ++b) {
    r.bins[b] = static_cast<std::uint8_t>(b);
    r.tuples[b] = total.count[b] + total.rcount[b];
    r.random_tuples[b] = total.rcount[b];
    r.n[b] = total.sum[b] + total.rsum[b];
    r.r[b] = total.rsum[b];  // (-1)^2: the product of two negative weights is already positive
  }
  r.ndata = p.ndata;
  r.nrandom = p.size() - p.ndata;
  r.graph_edges = g.num_edges();
  return r;
}

}  // namespace almagest::npcf
