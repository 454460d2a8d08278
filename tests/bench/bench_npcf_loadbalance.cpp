// Load-balance model of an N-point job split over K ranks (docs/mpi.md, issue 22): from the cost
// model of each hub's work measured from the graph -- (d + 1)^2 for triangles, (d + 1)^3 for
// tetrahedra, d the hub's half-graph degree -- the engine's own split (npcf/partition.hpp: the
// one-process chunks, hub ranges from balance_hubs, a rank counts the chunks starting in its
// range) is replayed for K = 2 ... kmax, giving the predicted max/mean work per rank, the share
// of the graph every rank must build (the lists of its hubs and of their neighbours: graph
// replication) and a predicted wall time on K nodes with one H200 each.
//
// Catalogues:
//  - bench: the N = 10^6 benchmark (synthetic::benchmark_catalogues, seed 20240601; rmin 1,
//    rmax 33; 3pCF 10 bins, 4pCF 5 bins): the whole graph is built here (CPU) and every number
//    is exact (the degrees, the chunks, each rank's hubs and their neighbours' lists).
//  - bao: the BAO-scale catalogue of bench_npcf_bao (1.5e6 Neyman-Scott data + 1.5e6 uniform
//    randoms, box 1835.38 Mpc/h, 50 < r < 150, 9.0e9 edges; 3pCF 10 bins), whose graph does not
//    fit here: the half degrees of `--sample` hubs (seeded, uniform over the hub index) are
//    measured exactly against the whole catalogue (build_graph_hubs), each hub's degree is then
//    drawn as its class's (data/randoms) measured ratio d / E[d | index] times E[d | index] =
//    D_class (N - 1 - i) / (N - 1) (a half graph stores the neighbours j > i), and the graph
//    share is the Poisson estimate 1 - exp(-D_j |hubs of the rank below j| / (N - 1)) per hub j
//    (--catalogue bao-check: the same model on a seeded 10% subsample, whose exact graph is
//    built here, against its exact degrees and shares). On the bench catalogue the analytic
//    share is printed beside the exact one but does not apply there: at rmin 1 a data hub's
//    neighbours are mostly its Neyman-Scott siblings, adjacent in index; at 50 < r < 150 the
//    siblings (sigma 5) are no neighbours.
//
// Wall time on K nodes, one H200 each (a model: today a CUDA N-point job is not split, the
// split runs on CPU ranks): t(K) = t_graph * share_max + t_kernels * work_max / work_total +
// t_chain, with t_graph and t_kernels the one-H200 times of docs/benchmarks.md (given below,
// --t-graph / --t-kernels to change) and t_chain = (K - 1) (5 us + S / 12.5 GB/s) for the chain
// reduction of accumulators of S bytes (npcf/partition_reduce.hpp). Every rank also reads the
// whole catalogue (not in t(K): constant per rank).
//
// Usage: bench_npcf_loadbalance [--catalogue bench|bao|both|bao-check] [--n N] [--sample S] [--kmax K]
//        [--threads T] [--write-catalogues DIR [--write-only]] [--ranks K1,K2,...] [--input-order]
//        [--time-ranks K [--cost-model P,W,L[,Pr,Wr,Lr]]...] [--fit-costs]
// --time-ranks K: the bench catalogue's 3pCF and 4pCF split over K ranks run one after the
// other here, one thread each, exchanges replayed: every rank's measured counting seconds
// (--cost-model P,W,L[,Pr,Wr,Lr], repeatable: the hub ranges' CostModel instead of the engine's default).
// --fit-costs: every chunk of one process timed (T threads) and fitted against its hubs' sums of
// (d + 1)^p, walk and d + 1 (CostModel), and the measured counting max/mean per rank that K
// ranks get from the ranges of each model.
// The bench catalogue is in the engine's hub order (NpcfConfig::hub_order: data and randoms each
// sorted along a Morton curve, as NpcfPlan does on the CPU); --input-order keeps the catalogue
// order. The BAO model always uses the catalogue order (its degree model needs it).
//        bench_npcf_loadbalance --compare A.h5 B.h5   (exit 0 when every counting array and the
//        estimator of the two N-point outputs are bitwise equal; for the scaling run)
// --n replaces the bench catalogue's size (the check against measured runs: --n 30000
// --write-catalogues DIR writes DIR/gal.txt, DIR/ran.txt for mpirun -n K almagest-cli run).
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <fstream>
#include <numbers>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "almagest/npcf/configurations.hpp"
#include "almagest/npcf/graph.hpp"
#include "almagest/npcf/partition.hpp"
#include "almagest/npcf/points.hpp"
#include "almagest/npcf/plan.hpp"
#include "almagest/npcf/result.hpp"
#include "almagest/npcf/synthetic.hpp"

using namespace almagest;
using namespace almagest::npcf;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// The one-process chunks (npcf/parallel.hpp make_chunks, same arithmetic), and for triangles
/// the cut at the first random hub (threepoint.cpp split_at).
std::vector<std::uint64_t> chunks(const std::vector<double>& cost, std::uint64_t target, std::uint64_t ndata, bool split) {
  const std::uint64_t n = cost.size();
  std::vector<std::uint64_t> b{0};
  double total = 0;
  for (double c : cost) total += c;
  const double per = total / static_cast<double>(std::max<std::uint64_t>(1, target));
  double acc = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    acc += cost[i];
    if (acc >= per && i + 1 < n) {
      b.push_back(i + 1);
      acc = 0;
    }
  }
  b.push_back(n);
  if (split && ndata > 0 && ndata < n) {
    auto it = std::lower_bound(b.begin(), b.end(), ndata);
    if (*it != ndata) b.insert(it, ndata);
  }
  return b;
}

struct Split {
  double max_mean = 0;        ///< max / mean work per rank
  int working = 0;            ///< ranks with at least one chunk
  double share_max = 0;       ///< largest share of the edges a rank builds (exact or analytic)
  double share_analytic = 0;  ///< the Poisson estimate (bench: beside the exact one)
};

/// What the engine's split gives with K ranks. `lists` (may be null): the whole graph, for the
/// exact share; full[c] the mean full (both directions) degree of class c (0 data, 1 randoms)
/// for the analytic share.
Split replay(const std::vector<std::uint32_t>& deg, const std::array<double, 2>& full, std::uint64_t ndata,
             const std::vector<double>& cost, const std::vector<std::uint64_t>& bounds, int K, const Graph* lists) {
  const std::uint64_t n = deg.size();
  const std::vector<std::uint64_t> hb = balance_hubs(cost, K);
  std::vector<double> work(static_cast<std::size_t>(K), 0.0);
  // Prefix sums of the degrees of each class (the edges of a hub range).
  std::vector<double> pre[2] = {std::vector<double>(n + 1, 0.0), std::vector<double>(n + 1, 0.0)};
  for (std::uint64_t i = 0; i < n; ++i)
    for (int c = 0; c < 2; ++c) pre[c][i + 1] = pre[c][i] + ((i < ndata) == (c == 0) ? deg[i] : 0);
  const double total_edges = std::max(1.0, pre[0][n] + pre[1][n]);
  Split s;
  std::vector<int> mark;
  if (lists) mark.assign(n, -1);
  for (int r = 0; r < K; ++r) {
    const auto [c0, c1] = chunks_starting_in(bounds, hb[static_cast<std::size_t>(r)], hb[static_cast<std::size_t>(r) + 1]);
    if (c1 == c0) continue;
    ++s.working;
    const std::uint64_t h0 = bounds[c0], h1 = bounds[c1];
    for (std::uint64_t i = h0; i < h1; ++i) work[static_cast<std::size_t>(r)] += cost[i];
    // Analytic share: the rank's own hubs, plus each hub j >= h1 with probability
    // 1 - exp(-lambda), lambda = full_c (h1 - h0) / (N - 1) its expected count of lower
    // neighbours in [h0, h1) (hubs below h0 have none there).
    double built = pre[0][h1] - pre[0][h0] + pre[1][h1] - pre[1][h0];
    for (int c = 0; c < 2; ++c)
      built += -std::expm1(-full[static_cast<std::size_t>(c)] * static_cast<double>(h1 - h0) / static_cast<double>(n - 1)) *
               (pre[c][n] - pre[c][h1]);
    s.share_analytic = std::max(s.share_analytic, built / total_edges);
    if (lists) {
      double exact = 0;
      for (std::uint64_t i = h0; i < h1; ++i) {
        if (mark[i] != r) {
          mark[i] = r;
          exact += deg[i];
        }
        for (std::uint64_t e = lists->offsets[i]; e < lists->offsets[i + 1]; ++e) {
          const std::uint32_t j = lists->neighbour[e];
          if (mark[j] != r) {
            mark[j] = r;
            exact += deg[j];
          }
        }
      }
      s.share_max = std::max(s.share_max, exact / total_edges);
    }
  }
  if (!lists) s.share_max = s.share_analytic;
  double mx = 0, sum = 0;
  for (double w : work) {
    mx = std::max(mx, w);
    sum += w;
  }
  s.max_mean = sum > 0 ? mx / (sum / K) : 0;
  return s;
}

struct Statistic_ {
  const char* name;
  int power;
  std::uint64_t target;   ///< the one-process chunk count
  bool split_at_data;     ///< 3pCF: chunks cut at the first random hub
  double t_kernels;       ///< one H200, docs/benchmarks.md
  double acc_bytes;       ///< accumulator bytes passed along the chain
};

void table(const char* title, const std::vector<std::uint32_t>& deg, const std::array<double, 2>& full,
           std::uint64_t ndata, const Graph* lists, const std::vector<Statistic_>& stats, double t_graph,
           const std::vector<int>& ks) {
  for (const auto& st : stats) {
    const std::vector<double> cost = hub_costs(deg, st.power);
    const auto bounds = chunks(cost, st.target, ndata, st.split_at_data);
    double total = 0, biggest = 0;
    for (double c : cost) total += c;
    for (std::size_t c = 0; c + 1 < bounds.size(); ++c) {
      double w = 0;
      for (std::uint64_t i = bounds[c]; i < bounds[c + 1]; ++i) w += cost[i];
      biggest = std::max(biggest, w);
    }
    std::printf("\n%s, %s: %zu hubs, %.4g half-graph edges, work sum (d+1)^%d = %.4g in %zu chunks (largest %.3g of the "
                "work); one H200: graph %.3g s, kernels %.3g s\n",
                title, st.name, deg.size(), [&] { double e = 0; for (auto d : deg) e += d; return e; }(), st.power, total,
                bounds.size() - 1, biggest / total, t_graph, st.t_kernels);
    std::printf("| K | ranks with work | work max/mean | graph share per rank (max)%s | predicted wall s | speed-up | efficiency |\n",
                lists ? " exact / analytic" : " (analytic)");
    std::printf("|---:|---:|---:|---:|---:|---:|---:|\n");
    const double t1 = t_graph + st.t_kernels;
    for (int K : ks) {
      const Split s = replay(deg, full, ndata, cost, bounds, K, lists);
      const double chain = (K - 1) * (5e-6 + st.acc_bytes / 12.5e9);
      const double t = t_graph * s.share_max + st.t_kernels * s.max_mean / K + chain;
      char share[64];
      if (lists) std::snprintf(share, sizeof share, "%.3f / %.3f", s.share_max, s.share_analytic);
      else std::snprintf(share, sizeof share, "%.3f", s.share_max);
      std::printf("| %d | %d | %.3f | %s | %.4g | %.2f | %.2f |\n", K, s.working, s.max_mean, share, t, t1 / t, t1 / t / K);
      std::fflush(stdout);
    }
  }
}

/// Mean full degree of each class for the analytic share, from the half degrees: a half graph
/// keeps the neighbours j > i, E[d_i] = D_class (N - 1 - i) / (N - 1) (hubs near the end, with
/// a tiny fraction left, are not used).
std::array<double, 2> full_from_half(const std::vector<std::uint32_t>& deg, std::uint64_t ndata) {
  const std::uint64_t n = deg.size();
  double s[2] = {0, 0}, w[2] = {0, 0};
  for (std::uint64_t i = 0; i < n; ++i) {
    const double f = static_cast<double>(n - 1 - i) / static_cast<double>(n - 1);
    if (f < 0.05) continue;
    const int c = i < ndata ? 0 : 1;
    s[c] += deg[i];
    w[c] += f;
  }
  return {w[0] > 0 ? s[0] / w[0] : 0, w[1] > 0 ? s[1] / w[1] : 0};
}

void write_text(const std::string& path, const io::Catalogue& c) {
  std::ofstream o(path);
  char line[128];
  for (std::size_t i = 0; i < c.size(); ++i) {
    std::snprintf(line, sizeof line, "%.10g %.10g %.10g\n", c.x[i], c.y[i], c.z[i]);
    o << line;
  }
}

// The BAO catalogue's box (bench_npcf_bao.cpp: the side giving 9.0e9 expected edges for 3.0e6
// uniform points at 50 < r < 150 in a cube, not periodic).
double bao_box() {
  auto F = [](double r, double L) {
    const double pi = std::numbers::pi;
    return 4.0 * pi * (L * L * L * r * r * r / 3.0 - 1.5 * L * L * r * r * r * r / 4.0 + (2.0 / pi) * L * std::pow(r, 5) / 5.0 -
                       std::pow(r, 6) / (4.0 * pi * 6.0));
  };
  auto edges = [&](double L) { return 3.0e6 * (3.0e6 - 1.0) / 2.0 * (F(150, L) - F(50, L)) / std::pow(L, 6); };
  double lo = 300, hi = 1e5;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (edges(mid) > 9.0e9 ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace


/// Each hub's walk (CostModel: the sum of its neighbours' half degrees) from the whole graph.
std::vector<double> whole_walks(const PointSet& p, const NpcfConfig& c, const std::vector<std::uint32_t>& deg) {
  JobContext ctx;
  const Graph g = build_graph(p, c, ctx);
  std::vector<double> w(p.size(), 0.0);
  for (std::size_t i = 0; i < p.size(); ++i)
    for (std::uint64_t e = g.offsets[i]; e < g.offsets[i + 1]; ++e) w[i] += deg[g.neighbour[e]];
  return w;
}

/// Least squares with non-negative coefficients for up to N features (every subset solved by
/// its normal equations, the best one whose coefficients are all >= 0).
template <std::size_t N>
std::array<double, N> nnls(const std::vector<std::array<double, N>>& x, const std::vector<double>& y, double& r2) {
  std::array<double, N> best{};
  double best_rss = -1, tss = 0, mean = 0;
  for (double v : y) mean += v / static_cast<double>(y.size());
  for (double v : y) tss += (v - mean) * (v - mean);
  for (unsigned mask = 1; mask < (1u << N); ++mask) {
    int idx[N], k = 0;
    for (std::size_t f = 0; f < N; ++f)
      if (mask & (1u << f)) idx[k++] = static_cast<int>(f);
    double a[N][N + 1] = {};
    for (std::size_t i = 0; i < y.size(); ++i)
      for (int u = 0; u < k; ++u) {
        for (int v = 0; v < k; ++v) a[u][v] += x[i][idx[u]] * x[i][idx[v]];
        a[u][N] += x[i][idx[u]] * y[i];
      }
    // Gauss-Jordan on the k x k system (the right-hand side in column N).
    bool ok = true;
    for (int u = 0; u < k && ok; ++u) {
      int piv = u;
      for (int v = u + 1; v < k; ++v)
        if (std::fabs(a[v][u]) > std::fabs(a[piv][u])) piv = v;
      for (std::size_t w = 0; w <= N; ++w) std::swap(a[u][w], a[piv][w]);
      if (!(std::fabs(a[u][u]) > 0)) ok = false;
      for (int v = 0; v < k && ok; ++v) {
        if (v == u) continue;
        const double f = a[v][u] / a[u][u];
        for (std::size_t w = 0; w <= N; ++w) a[v][w] -= f * a[u][w];
      }
    }
    if (!ok) continue;
    std::array<double, N> coef{};
    bool neg = false;
    for (int u = 0; u < k; ++u) {
      coef[static_cast<std::size_t>(idx[u])] = a[u][N] / a[u][u];
      neg |= coef[static_cast<std::size_t>(idx[u])] < 0;
    }
    if (neg) continue;
    double rss = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      double e = y[i];
      for (std::size_t f = 0; f < N; ++f) e -= coef[f] * x[i][f];
      rss += e * e;
    }
    if (best_rss < 0 || rss < best_rss) {
      best_rss = rss;
      best = coef;
    }
  }
  r2 = tss > 0 && best_rss >= 0 ? 1 - best_rss / tss : 0;
  return best;
}

/// --fit-costs: one process counts every chunk of the statistic (a one-rank partition that times
/// each chunk, T threads), and each chunk's seconds are fitted against its hubs' sums of
/// (d + 1)^p, walk and (d + 1) (CostModel). Then, for each K, the measured seconds per rank --
/// every pass's chunks that start in the rank's range -- under the hub ranges of (a) (d + 1)^p
/// alone, (b) the engine's default model and (c) the fit: their max/mean is the counting
/// imbalance a K-rank run would have.
void fit_costs(const PointSet& p, NpcfConfig c, int threads, const std::vector<int>& ks) {
  c.threads = threads;
  const int power = c.statistic == Statistic::ThreePoint ? 2 : 3;
  HubPartition part;
  part.rank = 0;
  part.ranks = 1;
  part.statistics = {c.statistic};
  part.time_chunks = true;
  JobContext ctx;
  ctx.threads = threads;
  const auto t0 = Clock::now();
  {
    PartitionScope scope(part);
    NpcfPlan plan(c, p, ctx);
    (void)plan.execute(c.statistic, ctx);
  }
  const double wall = since(t0);
  const auto& bounds = part.probed.back();
  const auto& secs = part.chunk_seconds.back();
  const std::vector<double> pc = hub_costs(part.degrees, power);
  // Features per chunk: (d+1)^p, walk, d+1 of its data hubs, then of its random hubs.
  std::vector<std::array<double, 6>> x6;
  std::vector<std::array<double, 3>> x;
  std::vector<double> y;
  for (std::size_t k = 0; k + 1 < bounds.size(); ++k) {
    std::array<double, 6> f{};
    for (std::uint64_t i = bounds[k]; i < bounds[k + 1]; ++i) {
      const std::size_t o = i < p.ndata ? 0 : 3;
      f[o] += pc[i];
      f[o + 1] += part.walks[i];
      f[o + 2] += part.degrees[i] + 1.0;
    }
    x6.push_back(f);
    x.push_back({f[0] + f[3], f[1] + f[4], f[2] + f[5]});
    y.push_back(secs[k]);
  }
  double r2 = 0, r2c = 0;
  const std::array<double, 3> coef = nnls<3>(x, y, r2);
  const std::array<double, 6> c6 = nnls<6>(x6, y, r2c);
  double total_s = 0;
  for (double v : y) total_s += v;
  std::printf("\n%s, %zu chunks, %d threads (%.2f s wall, %.2f s of chunk time): fit t = %.4g (d+1)^%d + %.4g walk + "
              "%.4g (d+1) seconds, R^2 %.4f; by class (data | randoms): %.4g, %.4g, %.4g | %.4g, %.4g, %.4g, R^2 %.4f\n",
              to_string(c.statistic), y.size(), threads, wall, total_s, coef[0], power, coef[1], coef[2], r2, c6[0], c6[1],
              c6[2], c6[3], c6[4], c6[5], r2c);
  // As models relative to the data's power term (or to its largest term when that is 0).
  auto relative = [](const double* d, const double* r) {
    const double ref = d[0] > 0 ? d[0] : std::max({d[1], d[2], 1e-300});
    return CostModel{d[0] / ref, d[1] / ref, d[2] / ref, r[0] / ref, r[1] / ref, r[2] / ref};
  };
  const CostModel fitted = relative(coef.data(), coef.data());
  const CostModel by_class = relative(c6.data(), c6.data() + 3);
  std::printf("as a CostModel (one for both classes): {%.6g, %.6g, %.6g}\n", fitted.power_term, fitted.walk_term,
              fitted.linear_term);
  std::printf("as a CostModel (data, randoms): {%.6g,%.6g,%.6g,%.6g,%.6g,%.6g}\n", by_class.power_term, by_class.walk_term,
              by_class.linear_term, by_class.random_power_term, by_class.random_walk_term, by_class.random_linear_term);
  const CostModel models[4] = {CostModel{}, default_cost_model(power), fitted, by_class};
  std::printf("| K | measured max/mean, (d+1)^p ranges | default model | fitted model | fitted by class |\n"
              "|---:|---:|---:|---:|---:|\n");
  for (int K : ks) {
    std::printf("| %d |", K);
    for (const CostModel& m : models) {
      const std::vector<std::uint64_t> hb = balance_hubs(range_costs(part.degrees, part.walks, power, m, p.ndata), K);
      std::vector<double> t(static_cast<std::size_t>(K), 0.0);
      for (std::size_t pass = 0; pass < part.probed.size(); ++pass)
        for (int r = 0; r < K; ++r) {
          const auto [c0, c1] = chunks_starting_in(part.probed[pass], hb[static_cast<std::size_t>(r)], hb[static_cast<std::size_t>(r) + 1]);
          for (std::uint64_t ch = c0; ch < c1; ++ch) t[static_cast<std::size_t>(r)] += part.chunk_seconds[pass][ch];
        }
      double mx = 0, sum = 0;
      for (double v : t) {
        mx = std::max(mx, v);
        sum += v;
      }
      std::printf(" %.3f |", sum > 0 ? mx / (sum / K) : 0.0);
    }
    std::printf("\n");
  }
  std::fflush(stdout);
}

/// The split's ranks run one after the other in this process, each on one thread, with the
/// exchanges replayed (rank r receives what rank r - 1 passed on, pass by pass): each rank's
/// counting seconds (HubPartition::count_s) without the contention of ranks sharing cores,
/// against its cost-model share.
void time_ranks(const PointSet& p, NpcfConfig c, const std::vector<std::uint32_t>& deg, int K,
                const std::optional<CostModel>& model) {
  c.threads = 1;
  // The exchanges of the chunk-ordered merge, replayed: what rank `from` sent to rank `to`, in
  // order (rank 0's final receive finds nothing: its total is not used here).
  std::map<std::pair<int, int>, std::deque<std::vector<std::uint8_t>>> mail;
  const CostModel m = model ? *model : default_cost_model(c.statistic == Statistic::ThreePoint ? 2 : 3);
  std::printf("\n%s, %d ranks one after the other, 1 thread each (counting seconds without contention), "
              "cost model %g (d+1)^p + %g walk + %g (d+1) (data), %g, %g, %g (randoms):\n",
              to_string(c.statistic), K, m.power_term, m.walk_term, m.linear_term, m.random_power_term,
              m.random_walk_term, m.random_linear_term);
  std::printf("| rank | hubs | cost-model share | counting s | graph part |\n|---:|---:|---:|---:|---:|\n");
  double tmax = 0, tsum = 0;
  // The whole set's walks, computed here (outside any partition: build_graph under a
  // PartitionScope builds a partition's graph, which asks for the walks).
  const std::vector<double> walks = whole_walks(p, c, deg);
  for (int r = 0; r < K; ++r) {
    HubPartition part;
    part.rank = r;
    part.ranks = K;
    part.statistics = {c.statistic};
    part.cost_model = m;
    part.all_degrees = [&](const std::vector<std::uint32_t>&, std::uint64_t) { return deg; };
    part.all_walks = [&](const std::vector<double>&, std::uint64_t) { return walks; };
    part.send_total = [&, r](std::vector<std::uint8_t>& bytes, int to) { mail[{r, to}].push_back(bytes); };
    part.receive_total = [&, r](std::vector<std::uint8_t>& bytes, int from) {
      auto& q = mail[{from, r}];
      if (q.empty()) return;
      bytes = std::move(q.front());
      q.pop_front();
    };
    JobContext ctx;
    ctx.threads = 1;
    {
      PartitionScope scope(part);
      NpcfPlan plan(c, p, ctx);
      (void)plan.execute(c.statistic, ctx);
    }
    tmax = std::max(tmax, part.count_s);
    tsum += part.count_s;
    std::printf("| %d | %llu-%llu | %.4f | %.3f | %.2f |\n", r, static_cast<unsigned long long>(part.hub_bounds[static_cast<std::size_t>(r)]),
                static_cast<unsigned long long>(part.hub_bounds[static_cast<std::size_t>(r) + 1]),
                part.total_cost > 0 ? part.counted_cost / part.total_cost : 0.0, part.count_s,
                static_cast<double>(part.built_edges) / static_cast<double>(std::max<std::uint64_t>(1, [&] {
                  std::uint64_t e = 0;
                  for (auto d : deg) e += d;
                  return e;
                }())));
    std::fflush(stdout);
  }
  std::printf("measured counting max/mean %.3f\n", tmax / (tsum / K));
}

/// Bitwise comparison of two N-point outputs' counts and estimators.
int compare(const std::string& a, const std::string& b) {
  const NpcfResult x = read_hdf5(a), y = read_hdf5(b);
  int bad = 0;
  auto same = [&](const char* name, const auto& u, const auto& v) {
    const bool eq = u.size() == v.size() && (u.empty() || std::memcmp(u.data(), v.data(), u.size() * sizeof(u[0])) == 0);
    // Differing sums: the largest difference against the largest magnitude of the array.
    double dmax = 0, scale = 0;
    if (!eq && u.size() == v.size())
      for (std::size_t k = 0; k < u.size(); ++k) {
        dmax = std::max(dmax, std::fabs(static_cast<double>(u[k]) - static_cast<double>(v[k])));
        scale = std::max({scale, std::fabs(static_cast<double>(u[k])), std::fabs(static_cast<double>(v[k]))});
      }
    if (eq)
      std::printf("%-14s %8zu values: identical\n", name, u.size());
    else
      std::printf("%-14s %8zu values: DIFFER (max |a - b| / max |a| %.3g)\n", name, u.size(), scale > 0 ? dmax / scale : 0.0);
    bad += !eq;
  };
  same("tuples", x.tuples, y.tuples);
  same("random_tuples", x.random_tuples, y.random_tuples);
  same("n", x.n, y.n);
  same("r", x.r, y.r);
  same("estimator", x.estimator, y.estimator);
  same("zeta_conn", x.zeta_conn, y.zeta_conn);
  std::printf("graph_edges %llu / %llu\n", static_cast<unsigned long long>(x.graph_edges),
              static_cast<unsigned long long>(y.graph_edges));
  return bad || x.graph_edges != y.graph_edges ? 1 : 0;
}

int main(int argc, char** argv) {
  if (argc == 4 && !std::strcmp(argv[1], "--compare")) {
    try {
      return compare(argv[2], argv[3]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_npcf_loadbalance: %s\n", e.what());
      return 3;
    }
  }
  bool write_only = false, input_order = false, fit = false;
  int time_k = 0;
  std::vector<std::optional<CostModel>> cost_models;
  std::string which = "both", write_dir;
  std::size_t n = 1000000, sample = 20000;
  int kmax = 1024, threads = 0;
  std::vector<int> ks;
  for (int i = 1; i < argc; ++i) {
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s: needs a value\n", argv[i]);
        std::exit(2);
      }
      return argv[++i];
    };
    if (!std::strcmp(argv[i], "--catalogue")) which = next();
    else if (!std::strcmp(argv[i], "--n")) n = std::strtoull(next(), nullptr, 10);
    else if (!std::strcmp(argv[i], "--sample")) sample = std::strtoull(next(), nullptr, 10);
    else if (!std::strcmp(argv[i], "--kmax")) kmax = std::atoi(next());
    else if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(next());
    else if (!std::strcmp(argv[i], "--write-catalogues")) write_dir = next();
    else if (!std::strcmp(argv[i], "--write-only")) write_only = true;
    else if (!std::strcmp(argv[i], "--input-order")) input_order = true;
    else if (!std::strcmp(argv[i], "--fit-costs")) fit = true;
    else if (!std::strcmp(argv[i], "--time-ranks")) time_k = std::atoi(next());
    else if (!std::strcmp(argv[i], "--cost-model")) {
      CostModel m;
      const int got = std::sscanf(next(), "%lf,%lf,%lf,%lf,%lf,%lf", &m.power_term, &m.walk_term, &m.linear_term,
                                  &m.random_power_term, &m.random_walk_term, &m.random_linear_term);
      if (got == 3) {
        m.random_power_term = m.power_term;
        m.random_walk_term = m.walk_term;
        m.random_linear_term = m.linear_term;
      } else if (got != 6) {
        std::fprintf(stderr, "--cost-model: P,W,L or P,W,L,Pr,Wr,Lr\n");
        return 2;
      }
      cost_models.push_back(m);
    }
    else if (!std::strcmp(argv[i], "--ranks")) {
      std::string v = next(), cur;
      for (char c : v + ",")
        if (c == ',') {
          if (!cur.empty()) ks.push_back(std::atoi(cur.c_str()));
          cur.clear();
        } else cur += c;
    } else {
      std::fprintf(stderr,
                   "usage: bench_npcf_loadbalance [--catalogue bench|bao|both] [--n N] [--sample S] [--kmax K] "
                   "[--threads T] [--write-catalogues DIR] [--ranks K1,K2,...]\n");
      return 2;
    }
  }
  if (ks.empty())
    for (int K = 2; K <= kmax; K *= 2) ks.push_back(K);
  if (cost_models.empty()) cost_models.push_back(std::nullopt);  // the engine's default
  JobContext ctx;
  ctx.threads = threads;

  if (which == "bench" || which == "both") {
    auto t0 = Clock::now();
    auto cats = synthetic::benchmark_catalogues(n, 20240601);
    if (!write_dir.empty()) {
      write_text(write_dir + "/gal.txt", cats.data);
      write_text(write_dir + "/ran.txt", cats.randoms);
      if (write_only) return 0;
    }
    PointSet p = make_point_set(cats.data, &cats.randoms);
    NpcfConfig c;
    c.statistic = Statistic::ThreePoint;
    c.bins = Binning{1.0, 33.0, 10, BinScale::Linear};
    c.threads = threads;
    // The engine's hub order (NpcfPlan on the CPU: HubOrder::Spatial unless --input-order); the
    // plans below then keep this order as it is.
    if (input_order)
      c.hub_order = HubOrder::Input;
    else
      sort_spatially(p);
    const Graph g = build_graph(p, c, ctx);
    std::vector<std::uint32_t> deg(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) deg[i] = static_cast<std::uint32_t>(g.offsets[i + 1] - g.offsets[i]);
    std::printf("# bench catalogue%s: N = %zu (%zu Neyman-Scott data + %zu uniform randoms, seed 20240601), rmin 1, rmax 33: "
                "%zu half-graph edges (catalogue + graph %.1f s here)\n",
                input_order ? " (input order)" : " (spatial hub order)", p.size(), p.ndata, p.size() - p.ndata, g.num_edges(), since(t0));
    const double rows4 = static_cast<double>(TetraTable::expected_rows(5));
    const std::vector<Statistic_> stats = {
        // 3pCF 10 bins: cube of 1000 cells, count u64 + sum f64, data and random halves.
        {"3pCF 10 bins", 2, 512, true, n == 1000000 ? 0.035 : 0.0, 1000.0 * 32},
        // 4pCF 5 bins: target clamp(2e9 / (rows * 32), 16, 512) = 512; tuples, n, r per row (+ odd: parity).
        {"4pCF 5 bins", 3, static_cast<std::uint64_t>(std::clamp(2.0e9 / (rows4 * 32.0), 16.0, 512.0)), false,
         n == 1000000 ? 0.227 : 0.0, rows4 * 32.0},
    };
    table("N = 10^6 benchmark", deg, full_from_half(deg, p.ndata), p.ndata, &g, stats, n == 1000000 ? 0.306 : 0.0, ks);
    NpcfConfig c4 = c;
    c4.statistic = Statistic::FourPoint;
    c4.bins.nbins = 5;
    if (fit) {
      fit_costs(p, c, threads, ks);
      fit_costs(p, c4, threads, ks);
    }
    if (time_k > 1) {
      for (const auto& m : cost_models) time_ranks(p, c, deg, time_k, m);
      for (const auto& m : cost_models) time_ranks(p, c4, deg, time_k, m);
    }
  }

  if (which == "bao" || which == "both" || which == "bao-check") {
    auto t0 = Clock::now();
    const double L = bao_box();
    const std::size_t nd = 1500000;
    io::Catalogue data = synthetic::neyman_scott(nd, 10, 5.0, L, 20240601);
    io::Catalogue randoms = synthetic::uniform(nd, L, 20240602);
    NpcfConfig c;
    c.statistic = Statistic::ThreePoint;
    c.bins = Binning{50.0, 150.0, 10, BinScale::Linear};
    c.hub_order = HubOrder::Input;  // the degree model below needs the catalogue order
    c.threads = threads;
    const std::vector<Statistic_> stats = {{"3pCF 10 bins", 2, 512, true, 48.92, 1000.0 * 32}};
    if (which == "bao-check") {
      // The model against the exact graph of a seeded 10% subsample (every point kept with
      // probability 0.1, order kept): 9e7 edges, built here.
      auto keep = [](io::Catalogue& cat, std::uint64_t seed) {
        std::mt19937_64 r(seed);
        io::Catalogue out;
        for (std::size_t i = 0; i < cat.size(); ++i)
          if (r() % 10 == 0) {
            out.x.push_back(cat.x[i]);
            out.y.push_back(cat.y[i]);
            out.z.push_back(cat.z[i]);
            if (!cat.w.empty()) out.w.push_back(cat.w[i]);
          }
        cat = std::move(out);
      };
      keep(data, 7);
      keep(randoms, 8);
    }
    const PointSet p = make_point_set(data, &randoms);
    const std::uint64_t N = p.size();
    // Half degrees of `sample` hubs, exactly (their lists against the whole catalogue).
    std::mt19937_64 rng(12345);
    std::vector<std::uint8_t> want(N, 0);
    std::vector<std::uint64_t> picked;
    while (picked.size() < std::min<std::uint64_t>(sample, N)) {
      const std::uint64_t i = rng() % N;
      if (!want[i]) {
        want[i] = 1;
        picked.push_back(i);
      }
    }
    const Graph g = build_graph_hubs(p, c, want, ctx);
    // Ratio to the index trend, per class.
    std::vector<double> ratio[2];
    double sum_ratio_d[2] = {0, 0}, cnt[2] = {0, 0};
    for (std::uint64_t i : picked) {
      const double f = static_cast<double>(N - 1 - i) / static_cast<double>(N - 1);
      const double d = static_cast<double>(g.offsets[i + 1] - g.offsets[i]);
      if (f < 0.01) continue;
      const int cl = i < p.ndata ? 0 : 1;
      sum_ratio_d[cl] += d / f;
      cnt[cl] += 1;
    }
    const double D[2] = {sum_ratio_d[0] / cnt[0], sum_ratio_d[1] / cnt[1]};
    for (std::uint64_t i : picked) {
      const double f = static_cast<double>(N - 1 - i) / static_cast<double>(N - 1);
      if (f < 0.01) continue;
      const int cl = i < p.ndata ? 0 : 1;
      ratio[cl].push_back(static_cast<double>(g.offsets[i + 1] - g.offsets[i]) / (D[cl] * f));
    }
    std::vector<std::uint32_t> deg(N);
    double edges = 0;
    for (std::uint64_t i = 0; i < N; ++i) {
      const int cl = i < p.ndata ? 0 : 1;
      const double f = static_cast<double>(N - 1 - i) / static_cast<double>(N - 1);
      const double q = ratio[cl][rng() % ratio[cl].size()];
      deg[i] = static_cast<std::uint32_t>(std::llround(q * D[cl] * f));
      edges += deg[i];
    }
    std::printf("\n# BAO catalogue%s: %zu Neyman-Scott data + %zu uniform randoms, box %.2f, 50 < r < 150; %zu hubs "
                "sampled exactly: full degree data %.0f, randoms %.0f; modelled half-graph edges %.4g (full size, "
                "measured on the H200: 8,997,341,712); %.1f s here\n",
                which == "bao-check" ? " (10% subsample)" : "", p.ndata, N - p.ndata, L, picked.size(), D[0], D[1], edges,
                since(t0));
    table(which == "bao-check" ? "BAO 10% subsample, modelled degrees" : "BAO scale", deg, {D[0], D[1]}, p.ndata, nullptr,
          stats, which == "bao-check" ? 0.0 : 14.24, ks);
    if (which == "bao-check") {
      t0 = Clock::now();
      const Graph whole = build_graph(p, c, ctx);
      std::vector<std::uint32_t> exact(N);
      for (std::uint64_t i = 0; i < N; ++i) exact[i] = static_cast<std::uint32_t>(whole.offsets[i + 1] - whole.offsets[i]);
      std::printf("\n# the same subsample's whole graph: %zu half-graph edges (built in %.1f s here)\n", whole.num_edges(),
                  since(t0));
      table("BAO 10% subsample, exact graph", exact, full_from_half(exact, p.ndata), p.ndata, &whole, stats, 0.0, ks);
    }
  }
  return 0;
}
