// 3pCF triangle counts on the CPU, on the half graph.
//
// Intersection: for hub i the bins of its edges go into a per-worker connectivity table
// (mark[k] = bin(i,k) + 1). For each neighbour j of i, the sorted list N(j) is scanned and every
// k with mark[k] != 0 closes a triangle i < j < k with sides (b_ij, b_ik, b_jk). This is the
// two-pointer intersection of "N(i) beyond j" with N(j), with the N(i) pointer replaced by a
// table lookup (k > j > i, so every k of N(j) found in the table lies beyond j): branch-free and
// without the loop-carried dependency of a merge walk, 3.4x faster on the benchmark workload.
// The equilateral mode uses a classic two-pointer merge walk over the same-bin neighbours.
//
// Per-chunk accumulators are indexed by the raw side bins (a small cube when nbins <= 20, the
// sorted row otherwise); chunks never straddle the data/random boundary, so a chunk is either all
// data hubs or all random hubs (all-random tuples are exactly those whose hub is a random).
// Chunks are merged in chunk order: results do not depend on the thread count.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "almagest/npcf/configurations.hpp"
#include "almagest/npcf/graph.hpp"
#include "almagest/npcf/plan.hpp"
#include "parallel.hpp"

namespace almagest::npcf {

namespace {

struct TriAcc {
  bool random_hubs = false;            // parts: all hubs of the chunk are randoms
  std::vector<std::uint64_t> count;    // parts: this class; total: data hubs
  std::vector<double> sum;
  std::vector<std::uint64_t> rcount;   // total only: random hubs (all-random triangles)
  std::vector<double> rsum;
};

/// Splits the chunk containing `cut` so that no chunk straddles it.
void split_at(std::vector<std::uint64_t>& bounds, std::uint64_t cut) {
  if (cut == 0 || cut >= bounds.back()) return;
  auto it = std::lower_bound(bounds.begin(), bounds.end(), cut);
  if (*it != cut) bounds.insert(it, cut);
}

/// Index of a triangle in the accumulator. Cube: raw (b_ij, b_ik, b_jk); rows: sorted row.
struct CubeIndex {
  int n, n2;
  std::uint32_t base(int bij) const { return static_cast<std::uint32_t>(bij * n2); }
  std::uint32_t operator()(std::uint32_t base, int bij, int bik, int bjk) const {
    return base + static_cast<std::uint32_t>(bik * n + bjk);
  }
};
struct RowIndex {
  const TriangleTable* t;
  std::uint32_t base(int) const { return 0; }
  std::uint32_t operator()(std::uint32_t, int bij, int bik, int bjk) const {
    return t->row(bij, bik, bjk);
  }
};

/// Per-worker scratch: a connectivity table over all points (bin of the edge hub -> k, plus 1;
/// 0 = not a neighbour of the current hub) and a match buffer. The table is zero again after
/// every hub.
/// Hubs processed between two cancel checks.
constexpr std::uint64_t kCancelBlock = 64;

struct ThreePointScratch {
  std::vector<std::uint8_t> mark;
  std::vector<std::uint64_t> match;
};

/// All triangles of hubs [h0, h1) into acc.
template <class Index>
void triangles_all(const Graph& g, const PointSet& p, std::uint64_t h0, std::uint64_t h1,
                   const Index& index, TriAcc& acc, ThreePointScratch& sc) {
  const std::uint64_t* off = g.offsets.data();
  const std::uint32_t* nb = g.neighbour.data();
  const std::uint8_t* bn = g.bin.data();
  const double* w = p.w.data();
  std::uint64_t* cnt = acc.count.data();
  double* sum = acc.sum.data();
  std::uint8_t* mark = sc.mark.data();
  for (std::uint64_t i = h0; i < h1; ++i) {
    const std::uint64_t e0 = off[i], e1 = off[i + 1];
    const std::uint64_t deg = e1 - e0;
    if (deg < 2) continue;
    const std::uint32_t* ni = nb + e0;
    const std::uint8_t* bi = bn + e0;
    for (std::uint64_t a = 0; a < deg; ++a) mark[ni[a]] = static_cast<std::uint8_t>(bi[a] + 1);
    const double wi = w[i];
    for (std::uint64_t aj = 0; aj + 1 < deg; ++aj) {
      const std::uint32_t j = ni[aj];
      const std::uint64_t f0 = off[j], f1 = off[j + 1];
      if (f0 == f1) continue;
      if (sc.match.size() < f1 - f0) sc.match.resize(f1 - f0);
      std::uint64_t* mt = sc.match.data();
      std::uint64_t nm = 0;
      // Branch-free scan of N(j): every entry is written, the cursor only advances on a hit.
      // Packed: k (32 bits) | bin(j,k) << 32 | (bin(i,k) + 1) << 40.
      for (std::uint64_t f = f0; f < f1; ++f) {
        const std::uint32_t k = nb[f];
        const std::uint64_t m = mark[k];
        mt[nm] = k | (static_cast<std::uint64_t>(bn[f]) << 32) | (m << 40);
        nm += m != 0;
      }
      const int bij = bi[aj];
      const double wij = wi * w[j];
      const std::uint32_t base = index.base(bij);
      for (std::uint64_t q = 0; q < nm; ++q) {
        const std::uint64_t v = mt[q];
        const std::uint32_t k = static_cast<std::uint32_t>(v);
        const int bjk = static_cast<int>((v >> 32) & 0xff);
        const int bik = static_cast<int>(v >> 40) - 1;
        const std::uint32_t idx = index(base, bij, bik, bjk);
        ++cnt[idx];
        sum[idx] += wij * w[k];
      }
    }
    for (std::uint64_t a = 0; a < deg; ++a) mark[ni[a]] = 0;
  }
}

/// All triangles of hubs [h0, h1) with the mu bin of the triangle's normal (nmu > 1): cell
/// index(...) * nmu + mu bin. A separate loop, so the isotropic one above is untouched.
template <class Index>
void triangles_all_mu(const Graph& g, const PointSet& p, const Geometry& geo, int nmu,
                      std::uint64_t h0, std::uint64_t h1, const Index& index, TriAcc& acc,
                      ThreePointScratch& sc) {
  const std::uint64_t* off = g.offsets.data();
  const std::uint32_t* nb = g.neighbour.data();
  const std::uint8_t* bn = g.bin.data();
  const double* w = p.w.data();
  std::uint64_t* cnt = acc.count.data();
  double* sum = acc.sum.data();
  std::uint8_t* mark = sc.mark.data();
  for (std::uint64_t i = h0; i < h1; ++i) {
    const std::uint64_t e0 = off[i], e1 = off[i + 1];
    const std::uint64_t deg = e1 - e0;
    if (deg < 2) continue;
    const std::uint32_t* ni = nb + e0;
    const std::uint8_t* bi = bn + e0;
    for (std::uint64_t a = 0; a < deg; ++a) mark[ni[a]] = static_cast<std::uint8_t>(bi[a] + 1);
    const double wi = w[i];
    for (std::uint64_t aj = 0; aj + 1 < deg; ++aj) {
      const std::uint32_t j = ni[aj];
      const int bij = bi[aj];
      const double wij = wi * w[j];
      const std::uint32_t base = index.base(bij);
      double ax, ay, az;
      geo.delta(p, i, j, ax, ay, az);
      for (std::uint64_t f = off[j]; f < off[j + 1]; ++f) {
        const std::uint32_t k = nb[f];
        if (mark[k] == 0) continue;
        const int bik = mark[k] - 1, bjk = bn[f];
        double bx, by, bz;
        geo.delta(p, i, k, bx, by, bz);
        const double mu = triangle_mu(p.x[i], p.y[i], p.z[i], ax, ay, az, bx, by, bz, geo.periodic);
        const std::size_t idx =
            static_cast<std::size_t>(index(base, bij, bik, bjk)) * nmu + mu_bin_unsigned(mu, nmu);
        ++cnt[idx];
        sum[idx] += wij * w[k];
      }
    }
    for (std::uint64_t a = 0; a < deg; ++a) mark[ni[a]] = 0;
  }
}

/// Equilateral triangles only: the walk runs over the neighbours of i in the same bin as (i, j).
void triangles_equilateral(const Graph& g, const PointSet& p, std::uint64_t h0, std::uint64_t h1,
                           int nbins, TriAcc& acc, std::vector<std::uint32_t>& same,
                           std::vector<double>& wsame, std::vector<std::uint32_t>& start) {
  const std::uint64_t* off = g.offsets.data();
  const std::uint32_t* nb = g.neighbour.data();
  const std::uint8_t* bn = g.bin.data();
  const double* w = p.w.data();
  start.assign(static_cast<std::size_t>(nbins) + 1, 0);
  for (std::uint64_t i = h0; i < h1; ++i) {
    const std::uint64_t e0 = off[i], e1 = off[i + 1];
    const std::uint64_t deg = e1 - e0;
    if (deg < 2) continue;
    // Neighbours of i grouped by bin (stable: ascending index within a bin).
    std::fill(start.begin(), start.end(), 0);
    for (std::uint64_t e = e0; e < e1; ++e) ++start[bn[e] + 1];
    for (int b = 0; b < nbins; ++b) start[b + 1] += start[b];
    if (same.size() < deg) {
      same.resize(deg);
      wsame.resize(deg);
    }
    {
      std::vector<std::uint32_t>& fill = start;  // reuse as cursors, restored below
      for (std::uint64_t e = e0; e < e1; ++e) {
        const std::uint32_t at = fill[bn[e]]++;
        same[at] = nb[e];
        wsame[at] = w[nb[e]];
      }
      for (int b = nbins; b > 0; --b) fill[b] = fill[b - 1];
      fill[0] = 0;
    }
    const double wi = w[i];
    for (int b = 0; b < nbins; ++b) {
      const std::uint32_t s0 = start[b], s1 = start[b + 1];
      for (std::uint32_t aj = s0; aj + 1 < s1; ++aj) {
        const std::uint32_t j = same[aj];
        const double wij = wi * wsame[aj];
        const std::uint32_t* A = same.data() + aj + 1;
        const std::uint32_t* const Ae = same.data() + s1;
        const std::uint32_t* B = nb + off[j];
        const std::uint32_t* const Be = nb + off[j + 1];
        std::uint64_t c = 0;
        double s = 0;
        while (A < Ae && B < Be) {
          const std::uint32_t x = *A, y = *B;
          if (x == y && bn[B - nb] == b) {
            ++c;
            s += wij * wsame[A - same.data()];
          }
          A += (x <= y);
          B += (y <= x);
        }
        acc.count[b] += c;
        acc.sum[b] += s;
      }
    }
  }
}

}  // namespace

NpcfResult count_3pcf_cpu(const Graph& g, const PointSet& p, const NpcfConfig& c, bool equilateral,
                          const JobContext& ctx) {
  const int nb = c.bins.nbins;
  const TriangleTable table(nb);
  // mu bins: the general walk with the normal's mu; equilateral rows are taken from its cube.
  const int nmu = c.nmu;
  const bool with_mu = nmu > 1;
  const bool walk_equilateral = equilateral && !with_mu;
  Geometry geo;
  geo.periodic = c.periodic;
  geo.box = c.box;
  // Cube accumulators (n^3 cells, no sorting per triangle) while they stay cache-sized.
  const bool cube = !walk_equilateral && nb <= 20;
  const std::size_t cells = (walk_equilateral ? static_cast<std::size_t>(nb)
                             : cube           ? static_cast<std::size_t>(nb) * nb * nb
                                              : static_cast<std::size_t>(table.rows())) *
                            static_cast<std::size_t>(nmu);
  // Fewer, larger chunks when accumulators are big (memory: at most 4 x threads pending).
  const std::uint64_t target = cells * 16 > (1u << 20) ? 64 : 512;
  auto bounds = detail::make_chunks(g, 2, target);
  split_at(bounds, p.ndata);
  const int threads = resolve_threads(c.threads > 0 ? c.threads : ctx.threads);
  const std::uint64_t ndata = p.ndata;

  std::mutex pool_mu;
  std::vector<std::unique_ptr<ThreePointScratch>> pool;
  // Parts fill count/sum for their hub class; the total keeps both classes (rcount/rsum).
  auto make = [cells] {
    TriAcc a;
    a.count.assign(cells, 0);
    a.sum.assign(cells, 0.0);
    return a;
  };
  auto body = [&](std::uint64_t, std::uint64_t h0, std::uint64_t h1, TriAcc& a, const Graph& lists) {
    a.random_hubs = h0 >= ndata;
    if (walk_equilateral) {
      std::vector<std::uint32_t> same, start;
      std::vector<double> wsame;
      for (std::uint64_t s0 = h0; s0 < h1; s0 += kCancelBlock) {
        ctx.check_cancel();
        triangles_equilateral(lists, p, s0, std::min(h1, s0 + kCancelBlock), nb, a, same, wsame, start);
      }
    } else {
      // Connectivity tables are N bytes: reuse them across chunks (at most one per worker).
      std::unique_ptr<ThreePointScratch> sc;
      {
        std::lock_guard<std::mutex> lock(pool_mu);
        if (!pool.empty()) {
          sc = std::move(pool.back());
          pool.pop_back();
        }
      }
      if (!sc) {
        sc = std::make_unique<ThreePointScratch>();
        sc->mark.assign(p.size(), 0);
      }
      // Hubs in blocks so that a cancel request is honoured promptly inside long chunks; the
      // accumulation order is unchanged.
      for (std::uint64_t s0 = h0; s0 < h1; s0 += kCancelBlock) {
        if (ctx.cancelled()) {
          std::lock_guard<std::mutex> lock(pool_mu);
          pool.push_back(std::move(sc));
          throw Cancelled();
        }
        const std::uint64_t s1 = std::min(h1, s0 + kCancelBlock);
        if (with_mu) {
          if (cube)
            triangles_all_mu(lists, p, geo, nmu, s0, s1, CubeIndex{nb, nb * nb}, a, *sc);
          else
            triangles_all_mu(lists, p, geo, nmu, s0, s1, RowIndex{&table}, a, *sc);
        } else if (cube) {
          triangles_all(lists, p, s0, s1, CubeIndex{nb, nb * nb}, a, *sc);
        } else {
          triangles_all(lists, p, s0, s1, RowIndex{&table}, a, *sc);
        }
      }
      std::lock_guard<std::mutex> lock(pool_mu);
      pool.push_back(std::move(sc));  // the table is all zeros again after every hub
    }
  };
  auto merge = [cells](TriAcc& total, const TriAcc& part) {
    if (total.rcount.empty()) {
      total.rcount.assign(cells, 0);
      total.rsum.assign(cells, 0.0);
    }
    auto& cnt = part.random_hubs ? total.rcount : total.count;
    auto& sum = part.random_hubs ? total.rsum : total.sum;
    for (std::size_t k = 0; k < cells; ++k) {
      cnt[k] += part.count[k];
      sum[k] += part.sum[k];
    }
  };
  TriAcc all = detail::chunked_reduce<TriAcc>(
      g, bounds, threads, ctx, equilateral ? "counting equilateral triangles" : "counting triangles",
      make, body, merge);
  if (all.rcount.empty()) {
    all.rcount.assign(cells, 0);
    all.rsum.assign(cells, 0.0);
  }

  NpcfResult r;
  r.config = c;
  r.statistic = equilateral ? Statistic::ThreePointEquilateral : Statistic::ThreePoint;
  r.config.statistic = r.statistic;
  r.order = 3;
  r.edges_per_row = 3;
  const std::size_t configs = equilateral ? static_cast<std::size_t>(nb) : table.rows();
  const std::size_t rows = configs * static_cast<std::size_t>(nmu);  // mu inner
  r.bins.resize(rows * 3);
  r.tuples.assign(rows, 0);
  r.random_tuples.assign(rows, 0);
  r.n.assign(rows, 0.0);
  r.r.assign(rows, 0.0);
  if (with_mu) r.mu.resize(rows);
  std::vector<double> rsum(rows, 0.0);
  // Cell c of the accumulator holds mu bin m at c * nmu + m, the row the same inside a config.
  auto add = [&](std::size_t config, std::size_t cell) {
    for (int m = 0; m < nmu; ++m) {
      const std::size_t row = config * nmu + m, k = cell * nmu + m;
      r.tuples[row] += all.count[k] + all.rcount[k];
      r.random_tuples[row] += all.rcount[k];
      r.n[row] += all.sum[k] + all.rsum[k];
      rsum[row] += all.rsum[k];
    }
  };
  for (std::size_t row = 0; row < rows; ++row) {
    const std::size_t cf = row / nmu;
    const auto b = equilateral ? std::array<std::uint8_t, 3>{static_cast<std::uint8_t>(cf),
                                                             static_cast<std::uint8_t>(cf),
                                                             static_cast<std::uint8_t>(cf)}
                               : table.bins(static_cast<std::uint32_t>(cf));
    r.bins[3 * row] = b[0];
    r.bins[3 * row + 1] = b[1];
    r.bins[3 * row + 2] = b[2];
    if (with_mu) r.mu[row] = static_cast<std::uint8_t>(row % nmu);
  }
  if (walk_equilateral) {
    for (int b = 0; b < nb; ++b) add(static_cast<std::size_t>(b), static_cast<std::size_t>(b));
  } else if (equilateral) {  // with mu bins: the diagonal of the cube or of the rows
    for (int b = 0; b < nb; ++b)
      add(static_cast<std::size_t>(b), cube ? (static_cast<std::size_t>(b) * nb + b) * nb + b
                                            : static_cast<std::size_t>(table.row(b, b, b)));
  } else if (cube) {
    for (int a = 0; a < nb; ++a)
      for (int b = 0; b < nb; ++b)
        for (int d = 0; d < nb; ++d)
          add(table.row(a, b, d), (static_cast<std::size_t>(a) * nb + b) * nb + d);
  } else {
    for (std::size_t cf = 0; cf < configs; ++cf) add(cf, cf);
  }
  // RRR: the all-random sum made positive, (-1)^3 times the product of negative weights.
  for (std::size_t row = 0; row < rows; ++row) r.r[row] = -rsum[row];
  r.ndata = p.ndata;
  r.nrandom = p.size() - p.ndata;
  r.graph_edges = g.num_edges();
  return r;
}

}  // namespace almagest::npcf
