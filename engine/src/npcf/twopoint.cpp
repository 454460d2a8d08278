// 2pCF pair counts on the CPU: one pass over the half graph.
#include <cstdint>
#include <vector>

#include "almagest/npcf/plan.hpp"
#include "parallel.hpp"

namespace almagest::npcf {

namespace {

struct PairAcc {
  std::vector<std::uint64_t> count, rcount;  // all pairs / all-random pairs, per bin
  std::vector<double> sum, rsum;             // sum of w_i w_j / over all-random pairs
};

}  // namespace

NpcfResult count_2pcf_cpu(const Graph& g, const PointSet& p, const NpcfConfig& c,
                          const JobContext& ctx) {
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
  auto body = [&](std::uint64_t, std::uint64_t h0, std::uint64_t h1, PairAcc& a) {
    for (std::uint64_t i = h0; i < h1; ++i) {
      const double wi = p.w[i];
      const bool random_hub = i >= ndata;
      std::uint64_t* cnt = random_hub ? a.rcount.data() : a.count.data();
      double* sum = random_hub ? a.rsum.data() : a.sum.data();
      for (std::uint64_t e = g.offsets[i]; e < g.offsets[i + 1]; ++e) {
        const int b = g.bin[e];
        ++cnt[b];
        sum[b] += wi * p.w[g.neighbour[e]];
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
  PairAcc total = detail::chunked_reduce<PairAcc>(bounds, threads, ctx, "counting pairs", make, body, merge);

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
