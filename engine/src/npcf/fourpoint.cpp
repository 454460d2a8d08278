// 4pCF counting on the CPU: tetrahedra i < a < b < c of the half graph, hub i the lowest index.
// See docs/npcf-fourpoint.md for the algorithm, the canonicalisation and the parity convention.
//
// Per hub i with half list N(i) = (j_1 < ... < j_m) (local indices 1..m; 0 is a junk slot):
//  1. connectivity table T[a][b] = bin(j_a, j_b) + 1 for a < b, and one bitset row per a (bit b
//     set iff the edge a-b exists). The walk over N(j_a) looks every neighbour up in a position
//     map pos[j] = local index (0 when j is not in N(i)); the lists are sorted, so the walk stops
//     at the last element of N(i) and the matches come out in increasing local order;
//  2. tetrahedra: for every edge a < b of the neighbourhood, the common neighbours c > b are the
//     set bits of row(a) & row(b); raw bins (b_ia, b_ib, b_ic, T[a][b], T[a][c], T[b][c]) index the
//     canonicalisation table (row and relabelling sign).
// Parity: V = u_a . (u_b x u_c) evaluated as (u_a x u_b) . u_c with the cross product computed once
// per pair (a, b); |V| < 1e-9 is degenerate (zero odd weight, counted).
//
// Determinism: hubs are split into chunks that depend only on the graph and the table size; a chunk
// is processed by one thread in hub order, its row sums are kept in eight interleaved banks (so
// consecutive tetrahedra of the same row do not wait on each other's store) that are folded in a
// fixed order, and chunks are merged in chunk order. Results do not depend on the thread count.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "almagest/npcf/configurations.hpp"
#include "almagest/npcf/plan.hpp"
#include "npcf/parallel.hpp"

namespace almagest::npcf {

namespace {

/// Product of four all-random signed weights: (-1)^4 = +1 makes RRRR positive as it stands; the
/// factor is kept explicit so that the convention "all-random sums made positive" is visible.
constexpr double kRandomSign4 = 1.0;  // (-1)^4
constexpr double kDegenerateVolume = 1e-9;
constexpr std::uint64_t kSignBit = std::uint64_t{1} << 63;

/// Per-chunk accumulator (rows of the 4pCF table).
struct Acc4 {
  std::vector<std::uint64_t> tuples, random_tuples, degenerate;
  std::vector<double> n, r, n_odd, r_odd;
  void init(std::size_t rows, bool parity) {
    tuples.assign(rows, 0);
    random_tuples.assign(rows, 0);
    n.assign(rows, 0.0);
    r.assign(rows, 0.0);
    if (parity) {
      degenerate.assign(rows, 0);
      n_odd.assign(rows, 0.0);
      r_odd.assign(rows, 0.0);
    }
  }
};

/// Working memory of one worker, reused from chunk to chunk (taken from a pool, so there is no
/// per-hub and almost no per-chunk allocation). Local neighbour indices run 1..m; 0 is junk.
struct Scratch {
  std::vector<std::uint32_t> pos;      // N: local index of a vertex in the current hub's list
  std::vector<std::uint8_t> table;     // (m+1)^2: T[a*(m+1) + b] = bin + 1 (valid where the bit is set)
  std::vector<std::uint64_t> bits;     // (m+1)*W: row a, bit b set iff b > a and edge (j_a, j_b)
  std::vector<double> w, ux, uy, uz;   // per local neighbour
  std::vector<std::uint32_t> hub_bin;  // per local neighbour: bin of the hub edge
  std::vector<std::uint32_t> off_c;    // per local neighbour: hub-edge bin * n^3
  std::vector<std::uint32_t> match;    // matches of one walk (local indices)
  std::vector<std::uint8_t> match_bin;
  // Banked row sums of the hubs of one class (data hubs or all-random hubs) of the current chunk,
  // one record per (bank, row): {sum, count[, odd sum, degenerate count]} so that a tetrahedron
  // touches one cache line. Counts are held exactly as doubles (far below 2^53 per chunk).
  std::vector<double> slots;

  Scratch(std::size_t nvert, std::size_t maxdeg, std::size_t banked_rows, bool parity) {
    const std::size_t m1 = maxdeg + 1;
    pos.assign(nvert, 0);
    table.resize(m1 * m1);
    bits.resize(m1 * ((m1 + 63) / 64));
    w.resize(m1);
    off_c.resize(m1);
    hub_bin.resize(m1);
    match.resize(m1);
    match_bin.resize(m1);
    slots.assign(banked_rows * (parity ? 4 : 2), 0.0);
    if (parity) {
      ux.resize(m1);
      uy.resize(m1);
      uz.resize(m1);
    }
  }
};

struct Params {
  const Graph* g;
  const PointSet* p;
  Geometry geo;
  std::uint32_t n, n2, n3, n4, n5;
  bool parity;
  bool exact;
  std::size_t rows;
  std::size_t banks;  // power of two
};

/// Fills the connectivity table and bitsets of hub i (pos must hold the hub's list); returns m.
std::size_t build_neighbourhood(const Params& P, std::uint64_t i, Scratch& s) {
  const Graph& g = *P.g;
  const std::uint64_t e0 = g.offsets[i];
  const std::size_t m = static_cast<std::size_t>(g.offsets[i + 1] - e0);
  const std::uint32_t* nb = g.neighbour.data() + e0;
  const std::size_t m1 = m + 1;
  const std::size_t words = (m1 + 63) / 64;
  std::memset(s.bits.data(), 0, m1 * words * sizeof(std::uint64_t));
  const std::uint32_t last = nb[m - 1];
  std::uint32_t* pos = s.pos.data();
  for (std::size_t k = 0; k < m; ++k) {
    pos[nb[k]] = static_cast<std::uint32_t>(k + 1);
    s.w[k + 1] = P.p->w[nb[k]];
    s.hub_bin[k + 1] = g.bin[e0 + k];
    s.off_c[k + 1] = static_cast<std::uint32_t>(g.bin[e0 + k]) * P.n3;
  }
  for (std::size_t a = 1; a < m; ++a) {
    const std::uint32_t j = nb[a - 1];
    const std::uint64_t jb = g.offsets[j], je = g.offsets[j + 1];
    const std::uint32_t* other = g.neighbour.data() + jb;
    const std::uint8_t* obin = g.bin.data() + jb;
    const std::size_t olen = static_cast<std::size_t>(je - jb);
    // Branch-free gather of the matches (local index != 0), in increasing local order.
    std::size_t cnt = 0;
    for (std::size_t q = 0; q < olen && other[q] <= last; ++q) {
      const std::uint32_t t = pos[other[q]];
      s.match[cnt] = t;
      s.match_bin[cnt] = obin[q];
      cnt += (t != 0);
    }
    if (cnt == 0) continue;
    std::uint8_t* trow = s.table.data() + a * m1;
    std::uint64_t* brow = s.bits.data() + a * words;
    std::size_t cw = s.match[0] >> 6;
    std::uint64_t cur = 0;
    for (std::size_t q = 0; q < cnt; ++q) {
      const std::uint32_t t = s.match[q];
      trow[t] = static_cast<std::uint8_t>(s.match_bin[q] + 1);
      if ((t >> 6) != cw) {
        brow[cw] = cur;
        cur = 0;
        cw = t >> 6;
      }
      cur |= std::uint64_t{1} << (t & 63);
    }
    brow[cw] = cur;
  }
  if (P.parity) {
    for (std::size_t k = 0; k < m; ++k) {
      double dx, dy, dz;
      if (P.exact) {
        P.geo.delta(*P.p, i, nb[k], dx, dy, dz);
        const double d = std::sqrt(dx * dx + dy * dy + dz * dz);
        dx /= d;
        dy /= d;
        dz /= d;
      } else {
        pixel_centre(g.pixel[e0 + k], g.ntheta, g.nphi, dx, dy, dz);
      }
      s.ux[k + 1] = dx;
      s.uy[k + 1] = dy;
      s.uz[k + 1] = dz;
    }
  }
  return m;
}

void clear_positions(const Graph& g, std::uint64_t i, Scratch& s) {
  for (std::uint64_t e = g.offsets[i]; e < g.offsets[i + 1]; ++e) s.pos[g.neighbour[e]] = 0;
}

/// Enumerates the tetrahedra of hub i (neighbourhood already built) into the banked row sums of
/// the scratch. kParity selects the odd channel. TableT is uint16_t or uint32_t.
template <bool kParity, class TableT>
void enumerate_hub(const Params& P, std::uint64_t i, std::size_t m, Scratch& s,
                   const TableT* __restrict tab) {
  const std::size_t m1 = m + 1;
  const std::size_t words = (m1 + 63) / 64;
  const double wi = P.p->w[i];
  const std::uint32_t n = P.n;
  const std::uint32_t n2 = P.n2, n4 = P.n4, n5 = P.n5;
  const std::uint32_t bias = n2 + n + 1;  // T holds bin + 1 on the edges ab, ac, bc
  const std::size_t rows = P.rows;
  const std::size_t bank_mask = P.banks - 1;
  const double* __restrict w = s.w.data();
  const std::uint32_t* __restrict off_c = s.off_c.data();
  const std::uint32_t* __restrict hub_bin = s.hub_bin.data();
  const std::uint64_t* __restrict bits = s.bits.data();
  const std::uint8_t* __restrict table = s.table.data();
  const double* __restrict ux = s.ux.data();
  const double* __restrict uy = s.uy.data();
  const double* __restrict uz = s.uz.data();
  constexpr std::size_t kStride = kParity ? 4 : 2;
  double* __restrict slots = s.slots.data();
  std::size_t bank = 0;
  for (std::size_t a = 1; a + 2 <= m; ++a) {
    const std::uint64_t* ra = bits + a * words;
    const std::uint8_t* ta = table + a * m1;
    const double wia = wi * w[a];
    const std::uint32_t code_a = hub_bin[a] * n5 - bias;
    for (std::size_t wa = (a + 1) >> 6; wa < words; ++wa) {
      std::uint64_t bitsa = ra[wa];
      while (bitsa) {
        const std::size_t b = wa * 64 + static_cast<std::size_t>(std::countr_zero(bitsa));
        bitsa &= bitsa - 1;
        const std::uint64_t* rb = bits + b * words;
        const std::uint8_t* tb = table + b * m1;
        const double wab = wia * w[b];
        const std::uint32_t code_ab = code_a + hub_bin[b] * n4 +
                                      static_cast<std::uint32_t>(ta[b]) * n2;
        double cx = 0, cy = 0, cz = 0;
        if constexpr (kParity) {
          cx = uy[a] * uz[b] - uz[a] * uy[b];
          cy = uz[a] * ux[b] - ux[a] * uz[b];
          cz = ux[a] * uy[b] - uy[a] * ux[b];
        }
        for (std::size_t wc = (b + 1) >> 6; wc < words; ++wc) {
          std::uint64_t common = ra[wc] & rb[wc];
          while (common) {
            const std::size_t c = wc * 64 + static_cast<std::size_t>(std::countr_zero(common));
            common &= common - 1;
            const std::uint32_t code = code_ab + off_c[c] + static_cast<std::uint32_t>(ta[c]) * n +
                                       static_cast<std::uint32_t>(tb[c]);
            const std::uint32_t pk = tab[code];
            double* __restrict rec = slots + kStride * (bank * rows + (pk >> 1));
            bank = (bank + 1) & bank_mask;
            const double prod = wab * w[c];
            rec[0] += prod;
            rec[1] += 1.0;
            if constexpr (kParity) {
              const double v = cx * ux[c] + cy * uy[c] + cz * uz[c];
              if (std::fabs(v) < kDegenerateVolume) {
                rec[3] += 1.0;
              } else {
                // relabelling sign x sign(V) x prod, branch-free: flip the sign bit of prod by
                // the sign bit of V and the table's sign bit.
                const std::uint64_t flip = (std::bit_cast<std::uint64_t>(v) & kSignBit) ^
                                           (static_cast<std::uint64_t>(pk & 1u) << 63);
                rec[2] += std::bit_cast<double>(std::bit_cast<std::uint64_t>(prod) ^ flip);
              }
            }
          }
        }
      }
    }
  }
}

/// Folds the banks of the scratch (bank 0 first) into the chunk accumulator and clears them.
void fold_banks(const Params& P, Scratch& s, bool all_random, Acc4& acc) {
  const std::size_t rows = P.rows;
  std::uint64_t* tuples = all_random ? acc.random_tuples.data() : acc.tuples.data();
  double* sum = all_random ? acc.r.data() : acc.n.data();
  double* odd = P.parity ? (all_random ? acc.r_odd.data() : acc.n_odd.data()) : nullptr;
  const std::size_t stride = P.parity ? 4 : 2;
  for (std::size_t b = 0; b < P.banks; ++b) {
    const double* rec = s.slots.data() + stride * b * rows;
    for (std::size_t k = 0; k < rows; ++k, rec += stride) {
      sum[k] += rec[0];
      tuples[k] += static_cast<std::uint64_t>(rec[1]);
      if (P.parity) {
        odd[k] += rec[2];
        acc.degenerate[k] += static_cast<std::uint64_t>(rec[3]);
      }
    }
  }
  std::fill(s.slots.begin(), s.slots.end(), 0.0);
}

template <class TableT>
NpcfResult run(const Graph& g, const PointSet& p, const NpcfConfig& c, bool parity,
               const JobContext& ctx, const TetraTable& tt, const TableT* tab) {
  const std::size_t rows = static_cast<std::size_t>(tt.rows());
  Params P{};
  P.g = &g;
  P.p = &p;
  P.geo.periodic = c.periodic;
  P.geo.box = c.box;
  P.n = static_cast<std::uint32_t>(c.bins.nbins);
  P.n2 = P.n * P.n;
  P.n3 = P.n2 * P.n;
  P.n4 = P.n3 * P.n;
  P.n5 = P.n4 * P.n;
  P.parity = parity;
  P.exact = c.directions == DirectionMode::Exact;
  P.rows = rows;
  P.banks = rows <= 16384 ? 8 : 1;  // large tables: same-row neighbours are rare anyway
  if (parity && !P.exact && g.pixel.size() != g.num_edges())
    throw ConfigError("directions",
                      "pixel-mode parity needs a graph with direction pixels (store_pixels)");

  // Chunk boundaries depend on the graph and the table size only (never on the thread count);
  // fewer chunks for large tables bound the accumulator memory that is zeroed per chunk.
  const double acc_bytes = static_cast<double>(rows) * (parity ? 56.0 : 32.0);
  const auto target = static_cast<std::uint64_t>(
      std::clamp(2.0e9 / std::max(1.0, acc_bytes), 16.0, 512.0));
  const std::vector<std::uint64_t> bounds = detail::make_chunks(g, 3, target);
  const int threads = resolve_threads(c.threads > 0 ? c.threads : ctx.threads);
  const std::uint64_t ndata = p.ndata;
  const std::size_t maxdeg = detail::max_degree(g);

  // Scratch pool: a worker takes one for a chunk and returns it (at most `threads` exist).
  std::mutex pool_mu;
  std::vector<std::unique_ptr<Scratch>> pool;
  auto acquire = [&]() -> std::unique_ptr<Scratch> {
    {
      std::lock_guard<std::mutex> lock(pool_mu);
      if (!pool.empty()) {
        auto s = std::move(pool.back());
        pool.pop_back();
        return s;
      }
    }
    return std::make_unique<Scratch>(g.num_vertices(), maxdeg, P.banks * rows, parity);
  };
  auto release = [&](std::unique_ptr<Scratch> s) {
    std::lock_guard<std::mutex> lock(pool_mu);
    pool.push_back(std::move(s));
  };

  auto make = [&] {
    Acc4 a;
    a.init(rows, parity);
    return a;
  };
  auto body = [&](std::uint64_t, std::uint64_t hb, std::uint64_t he, Acc4& acc, const Graph& lists) {
    // The chunk's lists: g, or those a split job built for a chunk of another range.
    Params Q = P;
    Q.g = &lists;
    std::unique_ptr<Scratch> s = acquire();
    // Data hubs first (their tetrahedra go to n), then all-random hubs (every vertex >= hub >=
    // ndata is a random: into r, added to n below). A chunk holds at most one switch.
    bool any[2] = {false, false};
    for (std::uint64_t i = hb; i < he; ++i) {
      // Prompt cancel inside long chunks (the scratch is discarded with the job).
      if (((i - hb) & 15u) == 0 && ctx.cancelled()) throw Cancelled();
      const bool all_random = i >= ndata;
      if (i == ndata && any[0]) {
        fold_banks(Q, *s, false, acc);
        any[0] = false;
      }
      if (lists.offsets[i + 1] - lists.offsets[i] < 3) continue;
      any[all_random ? 1 : 0] = true;
      const std::size_t m = build_neighbourhood(Q, i, *s);
      if (parity)
        enumerate_hub<true>(Q, i, m, *s, tab);
      else
        enumerate_hub<false>(Q, i, m, *s, tab);
      clear_positions(lists, i, *s);
    }
    if (any[0]) fold_banks(Q, *s, false, acc);
    if (any[1]) fold_banks(Q, *s, true, acc);
    release(std::move(s));
    for (std::size_t k = 0; k < rows; ++k) {
      acc.tuples[k] += acc.random_tuples[k];
      acc.n[k] += acc.r[k];
      acc.r[k] *= kRandomSign4;
    }
    if (parity)
      for (std::size_t k = 0; k < rows; ++k) {
        acc.n_odd[k] += acc.r_odd[k];
        acc.r_odd[k] *= kRandomSign4;
      }
  };
  auto merge = [&](Acc4& total, const Acc4& part) {
    for (std::size_t k = 0; k < rows; ++k) {
      total.tuples[k] += part.tuples[k];
      total.random_tuples[k] += part.random_tuples[k];
      total.n[k] += part.n[k];
      total.r[k] += part.r[k];
    }
    if (parity)
      for (std::size_t k = 0; k < rows; ++k) {
        total.degenerate[k] += part.degenerate[k];
        total.n_odd[k] += part.n_odd[k];
        total.r_odd[k] += part.r_odd[k];
      }
  };
  Acc4 total = detail::chunked_reduce<Acc4>(g, bounds, threads, ctx, parity ? "4pcf-parity" : "4pcf",
                                            make, body, merge);

  NpcfResult res;
  res.config = c;
  res.statistic = parity ? Statistic::FourPointParity : Statistic::FourPoint;
  res.config.statistic = res.statistic;
  res.order = 4;
  res.edges_per_row = 6;
  res.bins.resize(rows * 6);
  for (std::size_t k = 0; k < rows; ++k) {
    const auto& cb = tt.canonical(static_cast<std::uint32_t>(k));
    std::copy(cb.begin(), cb.end(), res.bins.begin() + static_cast<std::ptrdiff_t>(6 * k));
  }
  res.tuples = std::move(total.tuples);
  res.random_tuples = std::move(total.random_tuples);
  res.n = std::move(total.n);
  res.r = std::move(total.r);
  if (parity) {
    res.n_odd = std::move(total.n_odd);
    res.r_odd = std::move(total.r_odd);
    res.degenerate = std::move(total.degenerate);
  }
  res.ndata = p.ndata;
  res.nrandom = p.size() - p.ndata;
  res.graph_edges = g.num_edges();
  return res;
}

}  // namespace

NpcfResult count_4pcf_cpu(const Graph& g, const PointSet& p, const NpcfConfig& c, bool parity,
                          const JobContext& ctx) {
  ALMAGEST_ASSERT(g.num_vertices() == p.size(), "graph and point set differ in size");
  const TetraTable tt(c.bins.nbins);  // throws ConfigError for nbins outside 1..20
  // Compact 16-bit copy of the packed table when the rows fit (n <= 8): the lookups stay in L1/L2.
  if (2 * tt.rows() + 1 < 65536) {
    const auto& packed = tt.packed_table();
    std::vector<std::uint16_t> compact(packed.size());
    for (std::size_t k = 0; k < packed.size(); ++k) compact[k] = static_cast<std::uint16_t>(packed[k]);
    return run(g, p, c, parity, ctx, tt, compact.data());
  }
  return run(g, p, c, parity, ctx, tt, tt.packed_table().data());
}

}  // namespace almagest::npcf
