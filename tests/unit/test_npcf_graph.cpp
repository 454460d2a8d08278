// Neighbour graph against an O(N^2) brute-force neighbour list (bins, pixels, periodic box, log
// bins), thread-count independence of the graph, the graph-size estimate, binning formulas,
// point-set construction and configuration validation messages.
#include <QtTest>

#include <algorithm>
#include <barrier>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <numbers>
#include <string>
#include <vector>

#include "almagest/core/error.hpp"
#include "almagest/npcf/config.hpp"
#include "almagest/npcf/graph.hpp"
#include "almagest/npcf/partition.hpp"
#include "almagest/npcf/plan.hpp"
#include "almagest/npcf/points.hpp"
#include "almagest/npcf/synthetic.hpp"

using namespace almagest;
using namespace almagest::npcf;
using namespace std::chrono_literals;

namespace {

struct BruteEdge {
  std::uint32_t j;
  int bin;
  int pixel;
};

/// O(N^2) half neighbour lists. Periodic: minimum image per axis over the shifts {-L, 0, +L},
/// written independently of Geometry::delta.
std::vector<std::vector<BruteEdge>> brute_force(const PointSet& p, const NpcfConfig& c, bool pixels) {
  const std::size_t n = p.size();
  std::vector<std::vector<BruteEdge>> out(n);
  const double rmin2 = c.bins.rmin * c.bins.rmin, rmax2 = c.bins.rmax * c.bins.rmax;
  auto axis = [&](double a, double b) {
    double d = b - a;
    if (!c.periodic) return d;
    double best = d;
    for (double s : {-c.box, c.box})
      if (std::fabs(d + s) < std::fabs(best)) best = d + s;
    return best;
  };
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) {
      const double dx = axis(p.x[i], p.x[j]), dy = axis(p.y[i], p.y[j]), dz = axis(p.z[i], p.z[j]);
      const double d2 = dx * dx + dy * dy + dz * dz;
      if (!(d2 > rmin2 && d2 < rmax2)) continue;
      int pix = -1;
      if (pixels) {
        // theta = acos(dz/d) in ntheta bins of [0, pi]; phi = atan2(dy, dx) in nphi bins of [-pi, pi).
        const double d = std::sqrt(d2);
        const double th = std::acos(std::clamp(dz / d, -1.0, 1.0));
        const double ph = std::atan2(dy, dx);
        int it = std::min(c.pixel_ntheta - 1, static_cast<int>(th / std::numbers::pi * c.pixel_ntheta));
        int ip = std::min(c.pixel_nphi - 1,
                          static_cast<int>((ph + std::numbers::pi) / (2 * std::numbers::pi) * c.pixel_nphi));
        pix = it * c.pixel_nphi + ip;
      }
      out[i].push_back({static_cast<std::uint32_t>(j), c.bins.bin_of(std::sqrt(d2)), pix});
    }
  return out;
}

void compare(const Graph& g, const std::vector<std::vector<BruteEdge>>& ref, bool pixels) {
  QCOMPARE(g.num_vertices(), static_cast<std::uint64_t>(ref.size()));
  std::uint64_t e = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    QCOMPARE(g.offsets[i], e);
    QCOMPARE(g.offsets[i + 1] - g.offsets[i], static_cast<std::uint64_t>(ref[i].size()));
    for (const auto& be : ref[i]) {
      QCOMPARE(g.neighbour[e], be.j);
      QCOMPARE(static_cast<int>(g.bin[e]), be.bin);
      if (pixels) QCOMPARE(static_cast<int>(g.pixel[e]), be.pixel);
      ++e;
    }
  }
  QCOMPARE(g.num_edges(), e);
  QVERIFY(e > 0);
  if (!pixels) QVERIFY(g.pixel.empty());
}

PointSet clustered(std::size_t ndata, std::size_t nrand, double box, std::uint64_t seed) {
  auto d = synthetic::neyman_scott(ndata, 8, 3.0, box, seed);
  auto r = synthetic::uniform(nrand, box, seed + 1);
  return make_point_set(d, &r);
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& m) { return m.find(s) != std::string::npos; });
}

}  // namespace

class TestNpcfGraph : public QObject {
  Q_OBJECT
private slots:
  void binning_formulas() {
    Binning b;
    b.rmin = 2;
    b.rmax = 12;
    b.nbins = 5;  // dr = 2
    QCOMPARE(b.bin_of(2.5), 0);
    QCOMPARE(b.bin_of(4.0), 1);  // floor((4-2)/2)+1 = 2 (1-based)
    QCOMPARE(b.bin_of(11.99), 4);
    QCOMPARE(b.edge(0), 2.0);
    QCOMPARE(b.edge(3), 8.0);
    QCOMPARE(b.edge(5), 12.0);
    QCOMPARE(b.centre(1), 5.0);
    b.scale = BinScale::Log;
    b.rmin = 1;
    b.rmax = 1000;
    b.nbins = 3;  // decades
    QCOMPARE(b.bin_of(5.0), 0);
    QCOMPARE(b.bin_of(50.0), 1);
    QCOMPARE(b.bin_of(999.0), 2);
    QVERIFY(std::fabs(b.edge(1) - 10.0) < 1e-12);
    QVERIFY(std::fabs(b.edge(2) - 100.0) < 1e-10);
    QCOMPARE(b.edge(3), 1000.0);
    QVERIFY(std::fabs(b.centre(0) - std::sqrt(10.0)) < 1e-12);
  }

  void graph_equals_brute_force() {
    const PointSet p = clustered(500, 700, 100.0, 11);
    NpcfConfig c;
    c.statistic = Statistic::ThreePoint;
    c.bins = {1.0, 12.0, 7, BinScale::Linear};
    c.threads = 2;
    compare(build_graph(p, c, JobContext{}), brute_force(p, c, false), false);
  }

  void graph_with_pixels() {
    const PointSet p = clustered(400, 500, 80.0, 12);
    NpcfConfig c;
    c.statistic = Statistic::FourPointParity;  // pixel directions: pixels are stored
    c.bins = {0.5, 10.0, 4, BinScale::Linear};
    c.pixel_ntheta = 6;
    c.pixel_nphi = 10;
    c.threads = 2;
    compare(build_graph(p, c, JobContext{}), brute_force(p, c, true), true);
    const Graph g = build_graph(p, c, JobContext{});
    QCOMPARE(g.ntheta, 6);
    QCOMPARE(g.nphi, 10);
  }

  void graph_log_bins() {
    const PointSet p = clustered(600, 600, 100.0, 13);
    NpcfConfig c;
    c.bins = {0.3, 15.0, 9, BinScale::Log};
    c.store_pixels = true;
    compare(build_graph(p, c, JobContext{}), brute_force(p, c, true), true);
  }

  void graph_periodic_box() {
    // Points crowd the faces and corners so that many edges cross the boundary.
    PointSet p = clustered(700, 500, 60.0, 14);
    for (std::size_t i = 0; i < p.size(); i += 3) p.x[i] = std::fmod(p.x[i] * 0.05 + 59.0, 60.0);
    NpcfConfig c;
    c.statistic = Statistic::ThreePoint;
    c.periodic = true;
    c.box = 60.0;
    c.bins = {0.0, 15.0, 5, BinScale::Linear};
    const auto ref = brute_force(p, c, false);
    const Graph g = build_graph(p, c, JobContext{});
    compare(g, ref, false);
    // Edges that wrap exist (direct separation >= rmax).
    std::size_t wrapped = 0;
    for (std::size_t i = 0; i < ref.size(); ++i)
      for (const auto& e : ref[i])
        if (std::fabs(p.x[e.j] - p.x[i]) > 15.0) ++wrapped;
    QVERIFY2(wrapped > 50, qPrintable(QString("only %1 wrapped edges").arg(wrapped)));
  }

  void graph_independent_of_threads() {
    const PointSet p = clustered(3000, 3000, 150.0, 15);
    NpcfConfig c;
    c.bins = {1.0, 14.0, 6, BinScale::Linear};
    c.store_pixels = true;
    c.threads = 1;
    const Graph g1 = build_graph(p, c, JobContext{});
    c.threads = 2;
    const Graph g2 = build_graph(p, c, JobContext{});
    c.threads = 3;
    const Graph g3 = build_graph(p, c, JobContext{});
    QVERIFY(g1.num_edges() > 10000);
    QVERIFY(g1.offsets == g2.offsets && g1.neighbour == g2.neighbour && g1.bin == g2.bin && g1.pixel == g2.pixel);
    QVERIFY(g1.offsets == g3.offsets && g1.neighbour == g3.neighbour && g1.bin == g3.bin && g1.pixel == g3.pixel);
    QCOMPARE(g1.memory_bytes(), 8 * (p.size() + 1) + g1.num_edges() * 7);
  }

  // CellGrid::near and kd-trees over its subsets (what one process of a split job queries):
  // near() holds every point within reach * rmax of the hubs (brute force), is much smaller than
  // the catalogue for a small range, and a tree over it gives the whole graph's lists of the hubs
  // (reach 1) and of their later neighbours (reach 2). Open and periodic boxes, direction
  // pixels, and an rmax so small that the cells are enlarged (at most about one per point).
  void region_index() {
    struct Case {
      bool periodic;
      double rmax;
      bool pixels;
    };
    for (const Case cs : {Case{false, 9.0, false}, Case{true, 9.0, true}, Case{false, 0.4, false}, Case{true, 20.0, false}}) {
      PointSet p = clustered(2000, 2500, 80.0, 21);
      NpcfConfig c;
      c.statistic = Statistic::FourPoint;
      c.periodic = cs.periodic;
      c.box = 80.0;
      c.bins = {cs.rmax / 10, cs.rmax, 4, BinScale::Linear};
      c.store_pixels = cs.pixels;
      if (cs.periodic)  // points crowd a face: many lists wrap
        for (std::size_t i = 0; i < p.size(); i += 4) p.x[i] = std::fmod(p.x[i] * 0.05 + 78.0, 80.0);
      sort_spatially(p, cs.periodic ? c.box : 0.0);
      const std::uint64_t n = p.size();
      const Graph whole = build_graph(p, c, JobContext{});
      const CellGrid grid(p, c);
      QVERIFY(grid.cells() >= 1 && grid.cells() <= std::max<std::uint64_t>(4096, n) + 1);
      auto sep2 = [&](std::uint64_t i, std::uint64_t j) {
        double dx, dy, dz;
        Geometry{c.periodic, c.box}.delta(p, i, j, dx, dy, dz);
        return dx * dx + dy * dy + dz * dz;
      };
      for (const auto& [h0, h1] : {std::pair<std::uint64_t, std::uint64_t>{0, 150}, {1234, 1500}, {2100, 2300}, {4400, n}}) {
        for (int reach : {1, 2}) {
          const std::vector<std::uint32_t> sub = grid.near(h0, h1, reach, h0);
          std::vector<std::uint8_t> in(n, 0);
          for (std::uint32_t j : sub) {
            QVERIFY(j >= h0 && j < n && !in[j]);  // each once, none before h0
            in[j] = 1;
          }
          const double r2 = reach * reach * cs.rmax * cs.rmax;
          for (std::uint64_t j = h0; j < n; ++j) {
            if (in[j]) continue;
            for (std::uint64_t i = h0; i < h1; ++i)
              QVERIFY2(sep2(i, j) >= r2, qPrintable(QString("point %1 within %2 rmax of hub %3 is missing").arg(j).arg(reach).arg(i)));
          }
          if (reach == 1 && cs.rmax < 10 && h1 - h0 <= 300 && h1 + 1000 < n)
            QVERIFY2(sub.size() < (n - h0) * 3 / 4, qPrintable(QString("subset of %1 points of %2").arg(sub.size()).arg(n - h0)));
        }
        // Lists from trees over the subsets equal the whole graph's.
        auto same = [&](const Graph& part, std::uint64_t k, std::uint64_t i) {
          const std::uint64_t a = part.offsets[k], b = part.offsets[k + 1], wa = whole.offsets[i], wb = whole.offsets[i + 1];
          if (b - a != wb - wa) return false;
          for (std::uint64_t e = 0; e < b - a; ++e)
            if (part.neighbour[a + e] != whole.neighbour[wa + e] || part.bin[a + e] != whole.bin[wa + e] ||
                (cs.pixels && part.pixel[a + e] != whole.pixel[wa + e]))
              return false;
          return true;
        };
        const NeighbourIndex near1(p, c, grid.near(h0, h1, 1, h0));
        const Graph hubs = build_graph_range(near1, h0, h1, JobContext{});
        for (std::uint64_t i = h0; i < h1; ++i) QVERIFY2(same(hubs, i - h0, i), qPrintable(QString("hub %1").arg(i)));
        const NeighbourIndex near2(p, c, grid.near(h0, h1, 2, h0));
        std::vector<std::uint32_t> after;
        for (std::uint64_t e = whole.offsets[h0]; e < whole.offsets[h1]; ++e)
          if (whole.neighbour[e] >= h1) after.push_back(whole.neighbour[e]);
        std::sort(after.begin(), after.end());
        after.erase(std::unique(after.begin(), after.end()), after.end());
        if (h1 < n && cs.rmax >= 9) QVERIFY(!after.empty());
        const Graph extra = build_graph_list(near2, after, JobContext{});
        for (std::size_t k = 0; k < after.size(); ++k)
          QVERIFY2(same(extra, k, after[k]), qPrintable(QString("neighbour %1").arg(after[k])));
      }
    }
  }

  // Degenerate regions: every point at one place (one cell), an empty hub range (an empty
  // subset: a tree of no points gives empty lists), and a subset of one point.
  void region_index_degenerate() {
    PointSet p = clustered(50, 50, 30.0, 23);
    for (std::size_t i = 0; i < p.size(); ++i) p.x[i] = p.y[i] = p.z[i] = 7.5;
    NpcfConfig c;
    c.bins = {0.0, 2.0, 3, BinScale::Linear};
    const CellGrid one(p, c);
    QCOMPARE(one.cells(), std::uint64_t{1});
    QCOMPARE(one.near(10, 20, 1, 10).size(), p.size() - 10);
    const PointSet q = clustered(300, 300, 40.0, 24);
    const CellGrid grid(q, c);
    QVERIFY(grid.near(5, 5, 1, 5).empty());
    const NeighbourIndex none(q, c, {});
    const Graph g = build_graph_range(none, 0, 10, JobContext{});
    QCOMPARE(g.num_edges(), std::uint64_t{0});
    QCOMPARE(g.offsets.size(), std::size_t{11});
    // A tree of point 7 alone: hub 9 finds nothing (lists hold later points only), hub 3 finds 7
    // exactly when it is within (rmin, rmax).
    const NeighbourIndex single(q, c, {7});
    const Graph s = build_graph_list(single, {3, 9}, JobContext{});
    const double dx = q.x[7] - q.x[3], dy = q.y[7] - q.y[3], dz = q.z[7] - q.z[3];
    const bool near = dx * dx + dy * dy + dz * dz < 4.0;
    QCOMPARE(s.offsets[1] - s.offsets[0], std::uint64_t{near ? 1u : 0u});
    QCOMPARE(s.offsets[2] - s.offsets[1], std::uint64_t{0});
    if (near) QCOMPARE(s.neighbour[0], 7u);
  }

  // The spatial hub order (NpcfConfig::hub_order, sort_spatially): a permutation within each
  // block that brings neighbours together; sorting again changes nothing; plans in either order
  // count the same tuples and the same sums up to the summation order.
  void spatial_order() {
    const PointSet p = clustered(2000, 3000, 150.0, 21);
    PointSet s = p;
    const std::vector<std::uint32_t> order = sort_spatially(s);
    QCOMPARE(order.size(), p.size());
    std::vector<std::uint8_t> seen(p.size(), 0);
    for (std::size_t i = 0; i < order.size(); ++i) {
      QVERIFY(order[i] < p.size() && !seen[order[i]]);
      seen[order[i]] = 1;
      QCOMPARE(i < p.ndata, order[i] < p.ndata);  // data stay data, randoms randoms
      QCOMPARE(s.x[i], p.x[order[i]]);
      QCOMPARE(s.y[i], p.y[order[i]]);
      QCOMPARE(s.z[i], p.z[order[i]]);
      QCOMPARE(s.w[i], p.w[order[i]]);
    }
    QCOMPARE(s.ndata, p.ndata);
    QCOMPARE(s.data_weight_sum, p.data_weight_sum);
    // Consecutive randoms (uniform) are far closer than in the input order.
    auto mean_step = [](const PointSet& q) {
      double sum = 0;
      for (std::size_t i = q.ndata + 1; i < q.size(); ++i)
        sum += std::sqrt(std::pow(q.x[i] - q.x[i - 1], 2) + std::pow(q.y[i] - q.y[i - 1], 2) + std::pow(q.z[i] - q.z[i - 1], 2));
      return sum / static_cast<double>(q.size() - q.ndata - 1);
    };
    QVERIFY2(mean_step(s) < 0.25 * mean_step(p), qPrintable(QString("%1 vs %2").arg(mean_step(s)).arg(mean_step(p))));
    PointSet again = s;
    const std::vector<std::uint32_t> order2 = sort_spatially(again);
    for (std::size_t i = 0; i < order2.size(); ++i) QCOMPARE(order2[i], std::uint32_t(i));

    // Auto: spatial for statistics that do not depend on which point is the hub, the input order
    // with mu bins, direction pixels or the parity statistic.
    for (int k = 0; k < 4; ++k) {
      NpcfConfig c;
      c.statistic = k == 0 ? Statistic::TwoPoint : k == 3 ? Statistic::FourPoint : Statistic::FourPointParity;
      c.nmu = k == 0 ? 4 : 1;
      c.store_pixels = k == 1;
      c.directions = k == 2 ? DirectionMode::Exact : DirectionMode::Pixel;
      c.bins = {1.0, 12.0, 4, BinScale::Linear};
      const NpcfPlan plan(c, p, JobContext{});
      QCOMPARE(plan.input_index().empty(), k < 3);
      QCOMPARE(plan.config().hub_order, k < 3 ? HubOrder::Input : HubOrder::Spatial);
    }
    // A plan that auto sorted for the 4pCF refuses the parity statistic (it would need the input order).
    {
      NpcfConfig c;
      c.statistic = Statistic::FourPoint;
      c.directions = DirectionMode::Exact;
      c.bins = {1.0, 12.0, 4, BinScale::Linear};
      const NpcfPlan plan(c, p, JobContext{});
      bool refused = false;
      try {
        (void)plan.execute(Statistic::FourPointParity, JobContext{});
      } catch (const ConfigError& e) {
        refused = std::string(e.what()).find("hub_order") != std::string::npos;
      }
      QVERIFY(refused);
    }
    // The parity odd channel depends on which point is the hub (relabelling signs of configurations
    // with repeated bins), also with exact spokes: only the even sums are compared there.
    for (Statistic st : {Statistic::ThreePoint, Statistic::FourPoint, Statistic::FourPointParity}) {
      NpcfConfig c;
      c.statistic = st;
      c.directions = DirectionMode::Exact;
      c.bins = {1.0, 12.0, 4, BinScale::Linear};
      c.threads = 2;
      c.hub_order = HubOrder::Spatial;
      NpcfPlan spatial(c, p, JobContext{});
      c.hub_order = HubOrder::Input;
      NpcfPlan input(c, p, JobContext{});
      QCOMPARE(spatial.input_index(), order);
      QVERIFY(input.input_index().empty());
      QCOMPARE(spatial.graph().num_edges(), input.graph().num_edges());
      const NpcfResult a = spatial.execute(JobContext{}), b = input.execute(JobContext{});
      QVERIFY(a.tuples == b.tuples);
      QVERIFY(a.random_tuples == b.random_tuples);
      std::uint64_t total = 0;
      double scale = 0;
      for (std::size_t k = 0; k < a.rows(); ++k) {
        total += a.tuples[k];
        scale = std::max({scale, std::fabs(b.n[k]), std::fabs(b.r[k])});
      }
      QVERIFY(total > 1000);
      for (std::size_t k = 0; k < a.rows(); ++k) {
        QVERIFY(std::fabs(a.n[k] - b.n[k]) <= 1e-12 * scale);
        QVERIFY(std::fabs(a.r[k] - b.r[k]) <= 1e-12 * scale);

      }
    }
  }

  void chunk_ledger() {
    // Owners 0..2 of chunks [0,4), [4,4) (none), [4,10); costs make owner 2's chunks heavy.
    PassShare share{{0, 4, 4, 10}, {1, 1, 1, 1, 5, 5, 5, 5, 5, 1}, true};
    ChunkLedger ledger(share);
    // An owner takes its own chunks front to back.
    QCOMPARE(ledger.claim(0), std::int64_t(0));
    QCOMPARE(ledger.claim(2), std::int64_t(4));
    // Owner 1 has none: it takes the last untaken chunk of the owner with most work left (2).
    QCOMPARE(ledger.claim(1), std::int64_t(9));
    QCOMPARE(ledger.claim(1), std::int64_t(8));
    QCOMPARE(ledger.claim(0), std::int64_t(1));
    QCOMPARE(ledger.claim(0), std::int64_t(2));
    QCOMPARE(ledger.claim(0), std::int64_t(3));
    // Owner 0 done: owner 2 has 5, 6, 7 left (15) -- taken from the back.
    QCOMPARE(ledger.claim(0), std::int64_t(7));
    QCOMPARE(ledger.claim(2), std::int64_t(5));
    QCOMPARE(ledger.claim(2), std::int64_t(6));
    QCOMPARE(ledger.claim(2), std::int64_t(-1));
    QCOMPARE(ledger.claim(0), std::int64_t(-1));
    const std::vector<std::int32_t> owners{0, 0, 0, 0, 2, 2, 2, 0, 1, 1};
    QCOMPARE(ledger.owners(), owners);
    // Chunks each process took from other owners' ranges: 0 one (7), 1 two (8, 9), 2 none.
    auto taken_from_others = [&](int r) {
      int n = 0;
      for (int q = 0; q < 3; ++q)
        for (std::uint64_t c = share.first[static_cast<std::size_t>(q)]; c < share.first[static_cast<std::size_t>(q) + 1]; ++c)
          n += q != r && ledger.owners()[c] == r;
      return n;
    };
    QCOMPARE(taken_from_others(0), 1);
    QCOMPARE(taken_from_others(1), 2);
    QCOMPARE(taken_from_others(2), 0);
    // Pair passes: only one's own chunks; a closed ledger hands nothing out.
    share.take_others = false;
    ChunkLedger own(share);
    QCOMPARE(own.claim(1), std::int64_t(-1));
    QCOMPARE(own.claim(0), std::int64_t(0));
    own.close();
    QCOMPARE(own.claim(2), std::int64_t(-1));
    QCOMPARE(own.owners()[4], std::int32_t(-1));
  }

  void split_replayed_in_threads() {
    // A split job's processes as threads of this one (no MPI): the exchanges in memory, the
    // hand-out from one ledger, one process slowed so that the others take its chunks and build
    // their lists on demand. Rank 0's results equal one process's bit for bit.
    const PointSet p = clustered(1500, 3000, 120.0, 33);
    NpcfConfig c;
    c.bins = {1.0, 14.0, 4, BinScale::Linear};
    c.threads = 1;
    for (Statistic st : {Statistic::ThreePoint, Statistic::FourPoint}) {
      c.statistic = st;
      const NpcfResult one = NpcfPlan(c, p, JobContext{}).execute(JobContext{});
      for (int K : {2, 3}) {
        std::barrier sync(K);
        std::vector<std::vector<std::uint8_t>> slot_bytes(static_cast<std::size_t>(K));
        std::vector<std::vector<std::uint32_t>> deg_slots(static_cast<std::size_t>(K));
        std::vector<std::vector<double>> walk_slots(static_cast<std::size_t>(K));
        std::vector<std::vector<std::vector<std::uint8_t>>> mailbox(static_cast<std::size_t>(K));
        std::mutex mu;
        std::condition_variable cv;
        std::map<std::pair<int, int>, std::deque<std::vector<std::uint8_t>>> totals;
        std::optional<ChunkLedger> ledger;
        std::vector<NpcfResult> results(static_cast<std::size_t>(K));
        std::vector<std::uint64_t> taken(static_cast<std::size_t>(K));
        std::vector<std::string> errors(static_cast<std::size_t>(K));
        auto process = [&](int r) {
          try {
            HubPartition part;
            part.rank = r;
            part.ranks = K;
            part.statistics = {st};
            auto join = [&](auto& store, const auto& mine) {
              store[static_cast<std::size_t>(r)] = mine;
              sync.arrive_and_wait();
              std::remove_cvref_t<decltype(mine)> all;
              for (const auto& s : store) all.insert(all.end(), s.begin(), s.end());
              sync.arrive_and_wait();
              return all;
            };
            part.all_degrees = [&](const std::vector<std::uint32_t>& mine, std::uint64_t) { return join(deg_slots, mine); };
            part.all_walks = [&](const std::vector<double>& mine, std::uint64_t) { return join(walk_slots, mine); };
            part.exchange = [&](std::vector<std::vector<std::uint8_t>>& to) {
              mailbox[static_cast<std::size_t>(r)] = to;
              sync.arrive_and_wait();
              std::vector<std::vector<std::uint8_t>> from(static_cast<std::size_t>(K));
              for (int q = 0; q < K; ++q) from[static_cast<std::size_t>(q)] = mailbox[static_cast<std::size_t>(q)][static_cast<std::size_t>(r)];
              sync.arrive_and_wait();
              return from;
            };
            part.begin_pass = [&](const PassShare& share) {
              if (r == 0) ledger.emplace(share);
              sync.arrive_and_wait();
            };
            part.claim = [&]() -> std::int64_t {
              if (r == K - 1) std::this_thread::sleep_for(2ms);  // the slow process
              std::lock_guard<std::mutex> lock(mu);
              return ledger->claim(r);
            };
            part.end_pass = [&] {
              sync.arrive_and_wait();
              std::vector<std::int32_t> owners = ledger->owners();
              sync.arrive_and_wait();
              return owners;
            };
            part.send_total = [&](std::vector<std::uint8_t>& b, int to) {
              std::lock_guard<std::mutex> lock(mu);
              totals[{r, to}].push_back(b);
              cv.notify_all();
            };
            part.receive_total = [&](std::vector<std::uint8_t>& b, int from) {
              std::unique_lock<std::mutex> lock(mu);
              auto& q = totals[{from, r}];
              cv.wait(lock, [&] { return !q.empty(); });
              b = std::move(q.front());
              q.pop_front();
            };
            PartitionScope scope(part);
            results[static_cast<std::size_t>(r)] = NpcfPlan(c, p, JobContext{}).execute(JobContext{});
            taken[static_cast<std::size_t>(r)] = part.taken_chunks;
          } catch (const std::exception& e) {
            errors[static_cast<std::size_t>(r)] = e.what();
          }
        };
        std::vector<std::thread> threads;
        for (int r = 0; r < K; ++r) threads.emplace_back(process, r);
        for (auto& t : threads) t.join();
        for (const auto& e : errors) QVERIFY2(e.empty(), e.c_str());
        const NpcfResult& got = results[0];
        QVERIFY(got.tuples == one.tuples);
        QVERIFY(got.random_tuples == one.random_tuples);
        QCOMPARE(got.n.size(), one.n.size());
        QVERIFY(std::memcmp(got.n.data(), one.n.data(), one.n.size() * sizeof(double)) == 0);
        QVERIFY(std::memcmp(got.r.data(), one.r.data(), one.r.size() * sizeof(double)) == 0);
        QCOMPARE(got.graph_edges, one.graph_edges);
        std::uint64_t others = 0;
        for (int r = 0; r + 1 < K; ++r) others += taken[static_cast<std::size_t>(r)];
        QVERIFY2(others > 0, "the slow process's chunks were not taken by the others");
      }
    }
  }

  void estimate_within_ten_percent() {
    // Clustered data plus randoms, as in the benchmark recipe.
    const auto cats = synthetic::benchmark_catalogues(30000, 7, 300.0);
    const PointSet p = make_point_set(cats.data, &cats.randoms);
    NpcfConfig c;
    c.bins = {1.0, 20.0, 10, BinScale::Linear};
    const GraphEstimate est = estimate_graph(p, c, 2000, 99);
    const Graph g = build_graph(p, c, JobContext{});
    const double actual = static_cast<double>(g.num_edges());
    QVERIFY(est.sampled >= 1999);
    QVERIFY2(std::fabs(est.edges - actual) < 0.1 * actual,
             qPrintable(QString("estimate %1 actual %2").arg(est.edges).arg(actual)));
    QVERIFY(std::fabs(est.bytes - static_cast<double>(g.memory_bytes())) < 0.1 * g.memory_bytes());
    QVERIFY(std::fabs(est.mean_neighbours - 2 * actual / p.size()) < 0.1 * 2 * actual / p.size());
    // Deterministic for a seed.
    QCOMPARE(estimate_graph(p, c, 2000, 99).edges, est.edges);
  }

  void pixel_functions() {
    // +z is in the first theta ring, -z in the last; pixel centres point into their pixel.
    QCOMPARE(static_cast<int>(direction_pixel(0, 0, 1, 8, 32)) / 32, 0);
    QCOMPARE(static_cast<int>(direction_pixel(0, 0, -1, 8, 32)) / 32, 7);
    QCOMPARE(static_cast<int>(direction_pixel(1, 0, 0, 8, 32)), 4 * 32 + 16);  // theta = pi/2, phi = 0
    for (int pix = 0; pix < 8 * 32; ++pix) {
      double ux, uy, uz;
      pixel_centre(pix, 8, 32, ux, uy, uz);
      QVERIFY(std::fabs(ux * ux + uy * uy + uz * uz - 1) < 1e-12);
      QCOMPARE(static_cast<int>(direction_pixel(3 * ux, 3 * uy, 3 * uz, 8, 32)), pix);
    }
  }

  void point_set_normalisation() {
    io::Catalogue d;
    d.x = {1, 2, 3};
    d.y = {0, 0, 0};
    d.z = {0, 0, 0};
    d.w = {1, 2, 5};
    d.source = "data.txt";
    io::Catalogue r = synthetic::uniform(10, 5.0, 1);
    for (auto& w : r.w) w = 3;
    const PointSet p = make_point_set(d, &r);
    QCOMPARE(p.ndata, std::size_t(3));
    QCOMPARE(p.size(), std::size_t(13));
    QCOMPARE(p.data_weight_sum, 8.0);
    QCOMPARE(p.random_weight_sum, 30.0);
    double sd = 0, sr = 0;
    for (std::size_t i = 0; i < 3; ++i) sd += p.w[i];
    for (std::size_t i = 3; i < 13; ++i) sr += p.w[i];
    QVERIFY(std::fabs(sd - 1) < 1e-15 && std::fabs(sr + 1) < 1e-15);
    QVERIFY(std::fabs(p.data_w2_sum - (1.0 + 4.0 + 25.0) / 64.0) < 1e-15);
    QCOMPARE(p.x[3], r.x[0]);  // data first, then randoms
  }

  void point_set_errors() {
    io::Catalogue d = synthetic::uniform(5, 10.0, 2);
    d.source = "galaxies.fits";
    io::Catalogue empty;
    empty.source = "empty.txt";
    try {
      make_point_set(empty, nullptr);
      QFAIL("empty data accepted");
    } catch (const IoError& e) {
      QVERIFY(std::string(e.what()).find("empty.txt") != std::string::npos);
      QVERIFY(std::string(e.what()).find("empty") != std::string::npos);
    }
    io::Catalogue bad = d;
    bad.y[3] = std::nan("");
    try {
      make_point_set(bad, nullptr);
      QFAIL("NaN accepted");
    } catch (const IoError& e) {
      const std::string m = e.what();
      QVERIFY2(m.find("galaxies.fits") != std::string::npos && m.find("row 4") != std::string::npos &&
                   e.field() == "y",
               m.c_str());
    }
    bad = d;
    bad.w[1] = INFINITY;
    QVERIFY_THROWS_EXCEPTION(IoError, make_point_set(bad, nullptr));
    bad = d;
    bad.w = {1, -1, 2, -2, 0};
    try {
      make_point_set(d, &bad);
      QFAIL("zero weight sum accepted");
    } catch (const IoError& e) {
      QVERIFY2(std::string(e.what()).find("sum to zero") != std::string::npos, e.what());
      QVERIFY(std::string(e.what()).find("galaxies.fits") != std::string::npos);
    }
  }

  void wrap_into_box() {
    PointSet p = make_point_set(synthetic::uniform(4, 10.0, 3), nullptr);
    p.x = {-1.0, 10.0, 25.0, 3.0};
    wrap_periodic(p, 10.0);
    QCOMPARE(p.x[0], 9.0);
    QCOMPARE(p.x[1], 0.0);
    QCOMPARE(p.x[2], 5.0);
    QCOMPARE(p.x[3], 3.0);
    QVERIFY_THROWS_EXCEPTION(ConfigError, wrap_periodic(p, 0.0));
  }

  void config_validation_messages() {
    NpcfConfig ok;
    QVERIFY(ok.validate().empty());
    ok.check();

    NpcfConfig c;
    c.bins.rmin = -1;
    c.bins.rmax = -2;
    c.bins.nbins = 0;
    c.threads = -3;
    c.pixel_nphi = 7;
    auto v = c.validate();
    QVERIFY(contains(v, "rmin: must be >= 0"));
    QVERIFY(contains(v, "rmax: must be greater than rmin"));
    QVERIFY(contains(v, "nbins: must be in 1..255"));
    QVERIFY(contains(v, "threads:"));
    QVERIFY(contains(v, "pixel_nphi: must be even"));
    try {
      c.check();
      QFAIL("invalid config accepted");
    } catch (const ConfigError& e) {
      const std::string m = e.what();
      for (const char* f : {"rmin", "rmax", "nbins", "threads", "pixel_nphi"})
        QVERIFY2(m.find(f) != std::string::npos, m.c_str());
    }

    NpcfConfig four;
    four.statistic = Statistic::FourPoint;
    four.bins.nbins = 20;
    QVERIFY(!contains(four.validate(), "nbins"));
    four.bins.nbins = 21;
    QVERIFY(contains(four.validate(), "nbins: must be in 1..20"));
    four.bins.nbins = 256;
    QVERIFY(contains(four.validate(), "nbins: must be in 1..255"));

    NpcfConfig lg;
    lg.bins.scale = BinScale::Log;
    lg.bins.rmin = 0;
    QVERIFY(contains(lg.validate(), "rmin: logarithmic bins need rmin > 0"));

    NpcfConfig per;
    per.periodic = true;
    per.box = 0;
    QVERIFY(contains(per.validate(), "box:"));
    per.box = 100;
    per.bins.rmax = 50;  // not < box/2
    QVERIFY(contains(per.validate(), "rmax: must be less than box/2"));
    per.bins.rmax = 49.9;
    QVERIFY(per.validate().empty());
    per.statistic = Statistic::ThreePoint;
    QVERIFY(contains(per.validate(), "rmax: must be at most box/4"));
    per.bins.rmax = 25;
    QVERIFY(per.validate().empty());

    NpcfConfig pix;
    pix.pixel_ntheta = 512;
    pix.pixel_nphi = 256;
    QVERIFY(contains(pix.validate(), "exceeds 65536"));
    try {
      pix.check();
      QFAIL("pixel grid accepted");
    } catch (const ConfigError& e) {
      QCOMPARE(e.field(), std::string("pixel_nphi"));
    }

    QCOMPARE(statistic_from_string("4pcf-parity"), Statistic::FourPointParity);
    QCOMPARE(std::string(to_string(Statistic::ThreePointEquilateral)), std::string("3pcf-equilateral"));
    QVERIFY_THROWS_EXCEPTION(ConfigError, statistic_from_string("5pcf"));
    QCOMPARE(parse_backend("auto").kind, BackendKind::Auto);
    QVERIFY(ok.to_json().find("\"nbins\":10") != std::string::npos);
  }

  void synthetic_is_reproducible() {
    const auto a = synthetic::neyman_scott(1000, 10, 5.0, 100.0, 42);
    const auto b = synthetic::neyman_scott(1000, 10, 5.0, 100.0, 42);
    const auto c = synthetic::neyman_scott(1000, 10, 5.0, 100.0, 43);
    QCOMPARE(a.size(), std::size_t(1000));
    QVERIFY(a.x == b.x && a.y == b.y && a.z == b.z);
    QVERIFY(a.x != c.x);
    for (std::size_t i = 0; i < a.size(); ++i) QVERIFY(a.x[i] >= 0 && a.x[i] < 100.0);
    // Children of one parent are close: consecutive groups of 10 have a small spread.
    double spread = 0;
    for (int k = 1; k < 10; ++k) spread += std::fabs(a.z[k] - a.z[0]);
    QVERIFY(spread / 9 < 20.0);
    // The portable generator: mt19937_64's 10000th output is fixed by the C++ standard.
    synthetic::Rng rng(5489u);
    std::uint64_t v = 0;
    for (int i = 0; i < 10000; ++i) v = rng.next();
    QCOMPARE(v, std::uint64_t(9981545732273789042ull));
    // Normals: mean ~ 0, variance ~ 1.
    double s = 0, s2 = 0;
    for (int i = 0; i < 200000; ++i) {
      const double g = rng.normal();
      s += g;
      s2 += g * g;
    }
    QVERIFY(std::fabs(s / 200000) < 0.01 && std::fabs(s2 / 200000 - 1) < 0.02);
    const auto bench = synthetic::benchmark_catalogues(3000);
    QCOMPARE(bench.data.size(), std::size_t(1000));
    QCOMPARE(bench.randoms.size(), std::size_t(2000));
  }
};

QTEST_GUILESS_MAIN(TestNpcfGraph)
#include "test_npcf_graph.moc"
