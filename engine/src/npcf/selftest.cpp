// N-point GPU self-test: the CPU oracle against the CUDA backend on seeded clustered catalogues
// (see selftest.hpp), and its registration with the generic runner (core/selftest.hpp).
#include "almagest/npcf/selftest.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>

#include "almagest/core/error.hpp"
#include "almagest/core/schema.hpp"
#include "almagest/core/gpu.hpp"
#include "almagest/npcf/cuda.hpp"
#include "almagest/npcf/jackknife.hpp"
#include "almagest/npcf/partition.hpp"
#include "almagest/npcf/plan.hpp"
#include "almagest/npcf/points.hpp"
#include "almagest/npcf/synthetic.hpp"

namespace almagest::npcf {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

/// Clustered data (Neyman-Scott) and uniform randoms with weights in [0.5, 1.5].
PointSet make_points(std::size_t total, double box, std::uint64_t seed, bool periodic,
                     int children, double sigma) {
  const std::size_t nd = std::max<std::size_t>(total / 3, 8);
  const std::size_t nr = std::max<std::size_t>(total - nd, 8);
  io::Catalogue d = synthetic::neyman_scott(nd, children, sigma, box, seed);
  io::Catalogue r = synthetic::uniform(nr, box, seed + 1);
  synthetic::Rng rng(seed + 2);
  for (double& w : d.w) w = 0.5 + rng.uniform();
  for (double& w : r.w) w = 0.5 + rng.uniform();
  PointSet p = make_point_set(d, &r);
  if (periodic) wrap_periodic(p, box);
  return p;
}

template <class T>
bool same(const std::vector<T>& a, const std::vector<T>& b) {
  return a == b;
}

double max_abs(const std::vector<double>& a) {
  double m = 0;
  for (double v : a) m = std::max(m, std::fabs(v));
  return m;
}

/// max |a - b| / scale; scale = max |a| when not given (0 when both are empty or zero).
double normwise(const std::vector<double>& a, const std::vector<double>& b, double scale = 0) {
  if (a.size() != b.size()) return INFINITY;
  double num = 0;
  for (std::size_t k = 0; k < a.size(); ++k) num = std::max(num, std::fabs(a[k] - b[k]));
  const double den = scale > 0 ? scale : max_abs(a);
  return den > 0 ? num / den : (num > 0 ? INFINITY : 0.0);
}

struct Runner {
  const NpcfSelftestOptions& opt;
  const JobContext& ctx;
  SelftestReport& report;

  bool wanted(const std::string& group) const {
    return opt.only.empty() || std::find(opt.only.begin(), opt.only.end(), group) != opt.only.end();
  }

  void add(std::string name, bool passed, std::string detail) {
    report.checks.push_back({std::move(name), passed, std::move(detail)});
  }

  /// Runs `gpu` and records an exception as a failed check.
  template <class F>
  bool guarded(const std::string& name, F&& f) {
    try {
      f();
      return true;
    } catch (const Cancelled&) {
      throw;
    } catch (const std::exception& e) {
      add(name, false, std::string("exception: ") + e.what());
      return false;
    }
  }

  void compare(const std::string& name, const NpcfResult& cpu, const NpcfResult& gpu, double cpu_s,
               const CudaStats& st) {
    std::string why;
    if (cpu.rows() != gpu.rows()) why += "row count differs; ";
    if (!same(cpu.bins, gpu.bins)) why += "row bins differ; ";
    if (!same(cpu.tuples, gpu.tuples)) why += "tuples differ; ";
    if (!same(cpu.random_tuples, gpu.random_tuples)) why += "random_tuples differ; ";
    if (!same(cpu.degenerate, gpu.degenerate)) why += "degenerate differ; ";
    if (!same(cpu.mu, gpu.mu)) why += "mu bins differ; ";
    // Scale: the larger of the signed and the all-random sums. The signed sums n cancel between
    // data and randoms (large catalogues: |n| << sum of |terms| ~ |r|), the all-random sums are
    // small when randoms are few (small catalogues); their maximum is the size of the terms.
    const double scale = std::max(max_abs(cpu.n), max_abs(cpu.r));
    const double dn = normwise(cpu.n, gpu.n, scale), dr = normwise(cpu.r, gpu.r, scale);
    const double dno = normwise(cpu.n_odd, gpu.n_odd, scale), dro = normwise(cpu.r_odd, gpu.r_odd, scale);
    // 2pCF multipoles: the Legendre sums, to the same tolerance.
    const double dl = std::max(normwise(cpu.legendre2, gpu.legendre2, scale),
                               normwise(cpu.legendre4, gpu.legendre4, scale));
    if (cpu.legendre2.size() != gpu.legendre2.size() || cpu.legendre4.size() != gpu.legendre4.size())
      why += "Legendre sums missing; ";
    const double worst = std::max({dn, dr, dno, dro, dl});
    if (!(worst <= opt.tolerance)) why += "weighted sums differ beyond " + fmt("%.0e", opt.tolerance) + "; ";
    std::uint64_t tuples = 0;
    for (auto t : cpu.tuples) tuples += t;
    std::uint64_t gt = 0;
    for (auto t : gpu.tuples) gt += t;
    std::string detail = "rows " + std::to_string(cpu.rows()) + ", tuples cpu " + std::to_string(tuples) +
                         " gpu " + std::to_string(gt) + ", max diff / max(|n|,|r|): n " + fmt("%.2e", dn) + " r " +
                         fmt("%.2e", dr);
    if (!cpu.n_odd.empty()) detail += " n_odd " + fmt("%.2e", dno) + " r_odd " + fmt("%.2e", dro);
    if (!cpu.legendre2.empty()) detail += " legendre " + fmt("%.2e", dl);
    detail += ", windows " + std::to_string(st.windows) + " partitions " + std::to_string(st.partitions) +
              " tiles " + std::to_string(st.tiles) + ", cpu " + fmt("%.3f", cpu_s) + " s, gpu " +
              fmt("%.3f", st.total_s) + " s";
    if (!why.empty()) detail = why + detail;
    add(name, why.empty(), detail);
  }

  void graph_check(const std::string& name, const PointSet& p, const NpcfConfig& c, const Graph& cpu) {
    guarded(name, [&] {
      double dev_s = 0, tot_s = 0;
      const Graph g = build_graph_cuda(p, c, ctx, {}, &dev_s, &tot_s);
      std::string why;
      if (g.offsets != cpu.offsets) why += "offsets differ; ";
      if (g.neighbour != cpu.neighbour) why += "neighbours differ; ";
      if (g.bin != cpu.bin) why += "bins differ; ";
      if (g.pixel != cpu.pixel) why += "pixels differ; ";
      std::string detail = "points " + std::to_string(p.size()) + ", edges cpu " +
                           std::to_string(cpu.num_edges()) + " gpu " + std::to_string(g.num_edges()) +
                           ", gpu build " + fmt("%.4f", dev_s) + " s (" + fmt("%.3f", tot_s) +
                           " s with transfers)";
      add(name, why.empty(), why + detail);
    });
  }

  /// The CPU oracle of a statistic.
  NpcfResult oracle(Statistic s, const Graph& g, const PointSet& p, const NpcfConfig& cc) {
    switch (s) {
      case Statistic::TwoPoint: return count_2pcf_cpu(g, p, cc, ctx);
      case Statistic::ThreePoint: return count_3pcf_cpu(g, p, cc, false, ctx);
      case Statistic::ThreePointEquilateral: return count_3pcf_cpu(g, p, cc, true, ctx);
      case Statistic::FourPoint: return count_4pcf_cpu(g, p, cc, false, ctx);
      case Statistic::FourPointParity: break;
    }
    return count_4pcf_cpu(g, p, cc, true, ctx);
  }

  /// A CUDA job split over `parts` processes (count_cuda_partitioned, docs/mpi.md), the processes
  /// replayed here one after the other: each counts its partition and passes the running total
  /// on; the last one holds every partition's sums merged in partition order, which must equal
  /// the CPU oracle as one call does.
  void split(const std::string& label, Statistic s, const Graph& g, const PointSet& p, const NpcfConfig& c, int parts) {
    const auto t0 = Clock::now();
    NpcfConfig cc = c;
    cc.statistic = s;
    const NpcfResult cpu = oracle(s, g, p, cc);
    const double cpu_s = since(t0);
    guarded(label, [&] {
      std::vector<std::uint8_t> passed;
      NpcfResult last;
      CudaStats st;
      for (int r = 0; r < parts; ++r) {
        HubPartition part;
        part.rank = r;
        part.ranks = parts;
        part.receive_total = [&](std::vector<std::uint8_t>& b, int) { b = passed; };
        part.send_total = [&](std::vector<std::uint8_t>& b, int) { passed = b; };
        last = count_cuda_partitioned(part, s, g, p, cc, ctx, CudaOptions{}, &st);
      }
      compare(label, cpu, last, cpu_s, st);
    });
  }

  /// CPU oracle once, then the GPU in every variant.
  void statistic(const std::string& label, Statistic s, const Graph& g, const PointSet& p,
                 const NpcfConfig& c, std::vector<std::pair<std::string, CudaOptions>> variants) {
    const auto t0 = Clock::now();
    NpcfConfig cc = c;
    cc.statistic = s;
    const NpcfResult cpu = oracle(s, g, p, cc);
    const double cpu_s = since(t0);
    for (auto& [vname, o] : variants) {
      const std::string name = vname.empty() ? label : label + " " + vname;
      guarded(name, [&] {
        CudaStats st;
        const NpcfResult gpu = count_cuda(s, g, p, cc, ctx, o, &st);
        compare(name, cpu, gpu, cpu_s, st);
      });
      ctx.check_cancel();
    }
  }
};

std::vector<std::pair<std::string, CudaOptions>> variants(bool quick, bool four) {
  std::vector<std::pair<std::string, CudaOptions>> v;
  auto mk = [](int w, int p, std::uint32_t cap = 0) {
    CudaOptions o;
    o.windows = w;
    o.partitions = p;
    o.shared_degree_cap = cap;
    return o;
  };
  v.emplace_back("W=1 P=1", mk(1, 1));
  v.emplace_back("W=3 P=1", mk(3, 1));
  if (!quick) {
    v.emplace_back("W=2 P=1", mk(2, 1));
    v.emplace_back("W=5 P=1", mk(5, 1));
    v.emplace_back("W=1 P=3", mk(1, 3));
    v.emplace_back("W=3 P=2", mk(3, 2));
  }
  if (four) v.emplace_back("W=2 P=1 shared-cap=12 (global tables)", mk(2, 1, 12));
  if (four) {
    CudaOptions o = mk(5, 1);
    o.accumulate = 1;  // double-precision shared-memory sums instead of fixed point
    v.emplace_back("W=5 P=1 double sums", o);
  }
  return v;
}

}  // namespace

SelftestReport run_npcf_gpu_selftest(const NpcfSelftestOptions& opt, const JobContext& ctx) {
  const auto t0 = Clock::now();
  SelftestReport report = SelftestReport::for_current_gpu();
  if (!report.gpu_available) return report;
  Runner run{opt, ctx, report};

  // A: clustered, not periodic, linear bins, direction pixels stored.
  const double boxA = 220;
  const PointSet pa = make_points(opt.points, boxA, opt.seed, false, 10, 3.0);
  NpcfConfig ca;
  ca.bins = Binning{1.0, 21.0, 5, BinScale::Linear};
  ca.store_pixels = true;
  ca.statistic = Statistic::FourPointParity;
  const Graph ga = build_graph(pa, ca, ctx);
  // B: periodic box, log bins (exact-direction parity, minimum-image spokes).
  const double boxB = 120;
  const PointSet pb = make_points(opt.points / 2, boxB, opt.seed + 10, true, 8, 2.0);
  NpcfConfig cb;
  cb.bins = Binning{2.0, 24.0, 4, BinScale::Log};
  cb.periodic = true;
  cb.box = boxB;
  cb.directions = DirectionMode::Exact;
  cb.statistic = Statistic::FourPointParity;
  const Graph gb = build_graph(pb, cb, ctx);

  if (run.wanted("graph")) {
    run.graph_check("graph clustered linear+pixels", pa, ca, ga);
    run.graph_check("graph periodic log", pb, cb, gb);
    NpcfConfig c10 = ca;
    c10.bins.nbins = 10;
    c10.store_pixels = false;
    c10.statistic = Statistic::ThreePoint;
    run.graph_check("graph clustered 10 bins", pa, c10, build_graph(pa, c10, ctx));
  }
  const auto v3 = variants(opt.quick, false);
  const auto v4 = variants(opt.quick, true);
  if (run.wanted("2pcf")) {
    NpcfConfig c = ca;
    c.bins.nbins = 5;
    run.statistic("2pcf", Statistic::TwoPoint, ga, pa, c, v3);
    run.statistic("2pcf periodic", Statistic::TwoPoint, gb, pb, cb, {v3.front()});
  }
  if (run.wanted("3pcf")) {
    NpcfConfig c10 = ca;
    c10.bins.nbins = 10;
    c10.store_pixels = false;
    const Graph g10 = build_graph(pa, c10, ctx);
    run.statistic("3pcf 10 bins", Statistic::ThreePoint, g10, pa, c10, v3);
    run.statistic("3pcf periodic log", Statistic::ThreePoint, gb, pb, cb, {v3.front(), v3[1]});
    // The dense-neighbourhood kernel (pairs of neighbours from coordinates): every hub through it
    // (dense >= 2), or only the heavier ones beside the graph walk (dense >= 12), resident,
    // windowed and partitioned; the counts must equal the CPU's graph walk exactly.
    auto dense = [](int w, int p, std::uint32_t m) {
      CudaOptions o;
      o.windows = w;
      o.partitions = p;
      o.dense_min_degree = m;
      return o;
    };
    const std::vector<std::pair<std::string, CudaOptions>> vd{
        {"dense>=2 W=1 P=1", dense(1, 1, 2)},
        {"dense>=2 W=3 P=2", dense(3, 2, 2)},
        {"dense>=12 W=1 P=1", dense(1, 1, 12)},
        {"dense>=12 W=5 P=1", dense(5, 1, 12)},
        {"dense never W=1 P=1", dense(1, 1, 0xFFFFFFFFu)}};
    run.statistic("3pcf 10 bins", Statistic::ThreePoint, g10, pa, c10, vd);
    run.statistic("3pcf periodic log", Statistic::ThreePoint, gb, pb, cb, {vd[0], vd[1], vd[3]});
    // A graph built with another binning: the dense kernel's check of the hubs' own edges throws.
    run.guarded("3pcf dense refuses a graph of other bins", [&] {
      NpcfConfig c7 = c10;
      c7.bins.nbins = 7;
      c7.statistic = Statistic::ThreePoint;
      bool threw = false;
      std::string what;
      try {
        count_cuda(Statistic::ThreePoint, g10, pa, c7, ctx, dense(1, 1, 2));
      } catch (const std::exception& e) {
        threw = true;
        what = e.what();
      }
      run.add("3pcf dense refuses a graph of other bins", threw && what.find("binning") != std::string::npos,
              threw ? "threw: " + what : "no error for a 10-bin graph counted with 7 bins");
    });
  }
  if (run.wanted("mu")) {
    // Anisotropic binning (docs/npcf.md): mu bins must agree exactly (same arithmetic on both).
    NpcfConfig c = ca;
    c.nmu = 7;
    run.statistic("2pcf nmu=7 + multipoles", Statistic::TwoPoint, ga, pa, c, v3);
    NpcfConfig cm = ca;
    cm.nmu = 1;
    cm.multipoles = true;
    run.statistic("2pcf multipoles only", Statistic::TwoPoint, ga, pa, cm, {v3.front()});
    NpcfConfig cpm = cb;
    cpm.nmu = 6;
    run.statistic("2pcf nmu=6 periodic (z axis)", Statistic::TwoPoint, gb, pb, cpm, {v3.front(), v3[1]});
    NpcfConfig c3 = ca;
    c3.nmu = 4;
    run.statistic("3pcf nmu=4", Statistic::ThreePoint, ga, pa, c3, v3);
    run.statistic("3pcf-equilateral nmu=4", Statistic::ThreePointEquilateral, ga, pa, c3, {v3.front(), v3[1]});
    NpcfConfig c3p = cb;
    c3p.nmu = 5;
    run.statistic("3pcf nmu=5 periodic (z axis)", Statistic::ThreePoint, gb, pb, c3p, {v3.front(), v3[1]});
  }
  if (run.wanted("3pcf-equilateral"))
    run.statistic("3pcf-equilateral", Statistic::ThreePointEquilateral, ga, pa, ca, v3);
  if (run.wanted("4pcf")) {
    run.statistic("4pcf", Statistic::FourPoint, ga, pa, ca, v4);
    run.statistic("4pcf periodic log", Statistic::FourPoint, gb, pb, cb, {v4.front(), v4.back()});
  }
  if (run.wanted("4pcf-parity")) {
    NpcfConfig cp = ca;
    cp.directions = DirectionMode::Pixel;
    run.statistic("4pcf-parity pixel", Statistic::FourPointParity, ga, pa, cp, v4);
    NpcfConfig ce = ca;
    ce.directions = DirectionMode::Exact;
    run.statistic("4pcf-parity exact", Statistic::FourPointParity, ga, pa, ce, v4);
    run.statistic("4pcf-parity exact periodic", Statistic::FourPointParity, gb, pb, cb, {v4.front(), v4[1]});
  }
  if (run.wanted("jackknife")) {
    // A jackknife realisation is the statistic counted on the point set without one region, with
    // the full set's weights and order (npcf/jackknife.hpp): each backend counts that subset. Two
    // realisations of 4 internal angular regions, 3pCF and parity 4pCF, against the CPU.
    const std::vector<int> labels = angular_regions(pa, 4);
    for (int m : {1, 4}) {
      const PointSet sub = without_region(pa, labels, m);
      NpcfConfig c3 = ca;
      c3.store_pixels = false;
      run.statistic("jackknife 3pcf realisation " + std::to_string(m), Statistic::ThreePoint,
                    build_graph(sub, c3, ctx), sub, c3, {v3.front()});
      NpcfConfig c4 = ca;
      c4.directions = DirectionMode::Pixel;
      run.statistic("jackknife 4pcf-parity realisation " + std::to_string(m), Statistic::FourPointParity,
                    build_graph(sub, c4, ctx), sub, c4, {v4.front()});
    }
  }
  if (run.wanted("split")) {
    // One job over 3 processes by GPU hub partitions (mpirun; here replayed in one process).
    NpcfConfig c3 = ca;
    c3.store_pixels = false;
    const Graph g3 = build_graph(pa, c3, ctx);
    run.split("split 3pcf over 3 processes", Statistic::ThreePoint, g3, pa, c3, 3);
    run.split("split 4pcf-parity over 3 processes", Statistic::FourPointParity, ga, pa, ca, 3);
    NpcfConfig cm = c3;
    cm.nmu = 3;
    cm.multipoles = true;
    run.split("split 2pcf nmu=3 + multipoles over 2 processes", Statistic::TwoPoint, ga, pa, cm, 2);
  }
  if (run.wanted("resident")) {
    // Device graphs (what each NpcfPlan owns): the first call uploads, later calls reuse; a
    // second graph alive at the same time holds its own copy; destroying one leaves the other
    // usable; a graph that needs several windows is tiled and nothing is kept. All equal to the CPU.
    run.guarded("resident device graphs", [&] {
      DeviceGraph da = make_device_graph(), db = make_device_graph(), dt = make_device_graph();
      CudaOptions oa, ob, ot;
      oa.device_graph = da.get();
      ob.device_graph = db.get();
      ot.device_graph = dt.get();
      ot.windows = 3;
      NpcfConfig cp = ca;
      cp.directions = DirectionMode::Pixel;
      NpcfConfig ce = ca;
      ce.directions = DirectionMode::Exact;
      NpcfConfig c2 = ca;
      c2.bins.nbins = 5;
      run.statistic("resident A 4pcf-parity pixel (upload)", Statistic::FourPointParity, ga, pa, cp, {{"", oa}});
      run.statistic("resident A 4pcf-parity pixel (reuse)", Statistic::FourPointParity, ga, pa, cp, {{"", oa}});
      run.statistic("resident A 4pcf-parity exact (reuse + coordinates)", Statistic::FourPointParity, ga, pa, ce, {{"", oa}});
      run.statistic("resident A 2pcf (reuse)", Statistic::TwoPoint, ga, pa, c2, {{"", oa}});
      const std::uint64_t bytes_a = device_graph_bytes(da.get());
      run.statistic("resident B 2pcf periodic (upload, A alive)", Statistic::TwoPoint, gb, pb, cb, {{"", ob}});
      run.statistic("resident A 4pcf (reuse, B alive)", Statistic::FourPoint, ga, pa, ca, {{"", oa}});
      const std::uint64_t bytes_b = device_graph_bytes(db.get());
      run.add("resident A and B held at once", bytes_a > 0 && bytes_b > 0 && device_graph_bytes(da.get()) == bytes_a,
              "A " + std::to_string(bytes_a) + " bytes, B " + std::to_string(bytes_b) + " bytes");
      da.reset();  // frees A's device memory; B keeps its own
      run.statistic("resident B 2pcf periodic (reuse, A destroyed)", Statistic::TwoPoint, gb, pb, cb, {{"", ob}});
      run.add("resident B unchanged by A's destruction", device_graph_bytes(db.get()) == bytes_b,
              "B " + std::to_string(device_graph_bytes(db.get())) + " bytes");
      run.statistic("resident W=3 4pcf (tiled: nothing kept)", Statistic::FourPoint, ga, pa, ca, {{"", ot}});
      run.add("resident tiled graph keeps nothing", device_graph_bytes(dt.get()) == 0,
              std::to_string(device_graph_bytes(dt.get())) + " bytes held");
    });
  }
  if (run.wanted("mirror")) {
    run.guarded("mirror 4pcf-parity exact", [&] {
      PointSet pm = pa;
      for (double& x : pm.x) x = boxA - x;
      NpcfConfig ce = ca;
      ce.directions = DirectionMode::Exact;
      ce.store_pixels = false;
      const Graph gm = build_graph_cuda(pm, ce, ctx);
      const Graph g0 = build_graph_cuda(pa, ce, ctx);
      const NpcfResult r0 = count_4pcf_cuda(g0, pa, ce, true, ctx);
      const NpcfResult rm = count_4pcf_cuda(gm, pm, ce, true, ctx);
      std::vector<double> flipped = rm.n_odd;
      for (double& v : flipped) v = -v;
      const double sc = std::max(max_abs(r0.n), max_abs(r0.r));
      const double de = normwise(r0.n, rm.n, sc), dodd = normwise(r0.n_odd, flipped, sc);
      const bool ok = r0.tuples == rm.tuples && r0.degenerate == rm.degenerate &&
                      de <= opt.tolerance && dodd <= opt.tolerance;
      run.add("mirror 4pcf-parity exact", ok,
              std::string(r0.tuples == rm.tuples ? "" : "tuples differ; ") +
                  "even rel diff " + fmt("%.2e", de) + ", odd + mirrored odd rel " + fmt("%.2e", dodd));
    });
  }
  if (run.wanted("injection")) {
    // N isolated copies of one scalene tetrahedron, a fraction x of them mirrored, randomly
    // rotated (proper rotations), data weights 1/n: sum of NNNN_odd * n^4 / N = eps (2x - 1).
    const double right[4][3] = {{0, 0, 0}, {6.1, 0, 0}, {1.3, 7.2, 0}, {2.2, 1.9, 8.4}};
    for (double x : {1.0, 0.7, 0.5}) {
      const std::string name = "injection chiral x=" + fmt("%.1f", x);
      run.guarded(name, [&] {
        const int nstruct = 200, nleft = static_cast<int>(std::lround(x * nstruct));
        synthetic::Rng rng(opt.seed + 77);
        PointSet p;
        for (int s = 0; s < nstruct; ++s) {
          double q[4], norm = 0;
          for (double& v : q) {
            v = rng.normal();
            norm += v * v;
          }
          norm = std::sqrt(norm);
          for (double& v : q) v /= norm;
          const double a = q[0], b = q[1], c = q[2], d = q[3];
          const double R[3][3] = {{a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c)},
                                  {2 * (b * c + a * d), a * a - b * b + c * c - d * d, 2 * (c * d - a * b)},
                                  {2 * (b * d - a * c), 2 * (c * d + a * b), a * a - b * b - c * c + d * d}};
          const double o[3] = {50.0 + 100.0 * (s % 10), 50.0 + 100.0 * ((s / 10) % 10), 50.0 + 100.0 * (s / 100)};
          for (const auto& v0 : right) {
            const double v[3] = {s < nleft ? -v0[0] : v0[0], v0[1], v0[2]};
            p.x.push_back(o[0] + R[0][0] * v[0] + R[0][1] * v[1] + R[0][2] * v[2]);
            p.y.push_back(o[1] + R[1][0] * v[0] + R[1][1] * v[1] + R[1][2] * v[2]);
            p.z.push_back(o[2] + R[2][0] * v[0] + R[2][1] * v[1] + R[2][2] * v[2]);
          }
        }
        const double n = static_cast<double>(p.x.size());
        p.w.assign(p.x.size(), 1.0 / n);
        p.ndata = p.x.size();
        NpcfConfig c;
        c.statistic = Statistic::FourPointParity;
        c.bins = Binning{2.0, 14.0, 4, BinScale::Linear};
        c.directions = DirectionMode::Exact;
        const Graph g = build_graph_cuda(p, c, ctx);
        const NpcfResult r = count_4pcf_cuda(g, p, c, true, ctx);
        const NpcfResult rc = count_4pcf_cpu(g, p, c, true, ctx);
        double odd = 0;
        std::uint64_t tuples = 0;
        for (std::size_t k = 0; k < r.rows(); ++k) {
          odd += r.n_odd[k];
          tuples += r.tuples[k];
        }
        const double measured = odd * n * n * n * n / nstruct;
        const bool ok = tuples == static_cast<std::uint64_t>(nstruct) &&
                        std::fabs(std::fabs(measured) - std::fabs(2 * x - 1)) < 1e-9 &&
                        r.tuples == rc.tuples && normwise(rc.n_odd, r.n_odd, max_abs(rc.n)) <= opt.tolerance;
        run.add(name, ok, "tetrahedra " + std::to_string(tuples) + ", NNNN_odd n^4/N = " +
                              fmt("%.12f", measured) + " (expected +-" + fmt("%.1f", 2 * x - 1) + ")");
      });
    }
  }
  report.seconds = since(t0);
  return report;
}

namespace {

schema::Schema selftest_options() {
  using schema::Field;
  using schema::Kind;
  schema::Schema s;
  s.engine = "npcf";
  const NpcfSelftestOptions d;
  Field f;
  f = {};
  f.key = "points"; f.kind = Kind::Integer; f.value_name = "N"; f.group = "N-point";
  f.help = "Points in the main test catalogue (data 1/3, randoms 2/3)";
  f.default_value = static_cast<std::int64_t>(d.points); f.min = 300; f.max = 2000000;
  s.fields.push_back(f);
  f = {};
  f.key = "seed"; f.kind = Kind::Integer; f.value_name = "S"; f.group = "N-point";
  f.help = "Random seed of the test catalogues";
  f.default_value = static_cast<std::int64_t>(d.seed); f.min = 0;
  s.fields.push_back(f);
  f = {};
  f.key = "quick"; f.kind = Kind::Flag; f.group = "N-point";
  f.help = "Fewer tiling variants";
  f.default_value = false;
  s.fields.push_back(f);
  f = {};
  f.key = "only"; f.kind = Kind::TextList; f.value_name = "GROUPS"; f.group = "N-point";
  f.help = "Groups to run: graph, 2pcf, 3pcf, 3pcf-equilateral, 4pcf, 4pcf-parity, mu, jackknife, "
           "mirror, injection, resident (default: all)";
  s.fields.push_back(f);
  f = {};
  f.key = "tolerance"; f.kind = Kind::Number; f.value_name = "TOL"; f.group = "N-point";
  f.help = "Normwise relative tolerance of the weighted sums";
  f.default_value = d.tolerance; f.min = 0; f.min_exclusive = true;
  s.fields.push_back(f);
  return s;
}

}  // namespace

void register_selftest(SelftestRegistry& registry) {
  EngineSelftest t;
  t.engine = "npcf";
  t.summary = "the GPU graph, every N-point statistic (all-resident, forced tiling, several "
              "partitions), device graphs kept between calls, the mirror identity and the chiral "
              "injection against the CPU backend";
  t.options = selftest_options();
  t.run = [options = t.options](const schema::Values& values, const JobContext& ctx) {
    schema::Reader r(options, values, "--");
    NpcfSelftestOptions o;
    o.points = static_cast<std::size_t>(r.integer_or_default("points"));
    o.seed = static_cast<std::uint64_t>(r.integer_or_default("seed"));
    o.quick = r.flag("quick");
    if (auto only = r.list("only")) o.only = *only;
    o.tolerance = r.number_or_default("tolerance");
    r.throw_if_problems();
    return run_npcf_gpu_selftest(o, ctx);
  };
  registry.add(std::move(t));
}

}  // namespace almagest::npcf
