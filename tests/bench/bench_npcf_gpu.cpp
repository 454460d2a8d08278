// Benchmark of the NpCF CUDA backend (issue 3 workload): Neyman-Scott data (N/3, 10 children,
// sigma 5) plus uniform randoms (2N/3) in a 1000 Mpc/h box, rmin 1, rmax 33; and a heavy-tailed
// case (sigma 2, 30 children). Per case: CPU and GPU graph build (checked identical), 3pCF with
// 10 bins, 4pCF and parity 4pCF with 5 bins on the GPU (all-resident and forced W = 4) and on the
// CPU backend with all cores; counts are checked identical, sums to 1e-12.
//
// Usage: bench_npcf_gpu [--n N] [--case uniform|heavy|both] [--cpu none|3|all] [--reps R]
//        [--threads T] [--rmax R]
// Prints a Markdown table (the body of docs/benchmarks.md's CUDA section) on stdout.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "almagest/core/gpu.hpp"
#include "almagest/npcf/cuda.hpp"
#include "almagest/npcf/plan.hpp"
#include "almagest/npcf/synthetic.hpp"

using namespace almagest;
using namespace almagest::npcf;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Args {
  std::size_t n = 1000000;
  std::string cases = "both";
  std::string cpu = "all";
  int reps = 3;
  int threads = 0;
  double rmax = 33.0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// max |a - b| / max(max |n|, max |r|) (the self-test's measure, see selftest.hpp).
double normwise(const std::vector<double>& a, const std::vector<double>& b, const NpcfResult& ref) {
  double num = 0, den = 0;
  for (std::size_t k = 0; k < a.size() && k < b.size(); ++k) num = std::max(num, std::fabs(a[k] - b[k]));
  for (double v : ref.n) den = std::max(den, std::fabs(v));
  for (double v : ref.r) den = std::max(den, std::fabs(v));
  return den > 0 ? num / den : num;
}

std::uint64_t total(const std::vector<std::uint64_t>& v) {
  std::uint64_t s = 0;
  for (auto x : v) s += x;
  return s;
}

/// Bytes the row walks read: every edge (i, j) reads hub i's list entry and j's whole row (5 bytes
/// per edge entry), plus a weight per neighbour: a lower bound of the traffic through L2.
double walk_bytes(const Graph& g) {
  double b = 0;
  for (std::uint64_t i = 0; i + 1 < g.offsets.size(); ++i)
    for (std::uint64_t e = g.offsets[i]; e < g.offsets[i + 1]; ++e) {
      const std::uint32_t j = g.neighbour[e];
      b += 5.0 * static_cast<double>(g.offsets[j + 1] - g.offsets[j]) + 13.0;
    }
  return b;
}

struct GpuTiming {
  double kernel = 0, total = 0;
  CudaStats stats;
  NpcfResult result;
};

GpuTiming time_gpu(Statistic s, const Graph& g, const PointSet& p, const NpcfConfig& c, int windows,
                   int reps, int accumulate = 0, bool resident = false) {
  JobContext ctx;
  CudaOptions o;
  o.windows = windows;
  o.accumulate = accumulate;
  o.partitions = 1;
  DeviceGraph dg;  // resident: owned here as an NpcfPlan owns its own
  if (resident) dg = make_device_graph();
  o.device_graph = dg.get();
  GpuTiming t;
  std::vector<double> k, tot;
  for (int r = 0; r < reps + 1; ++r) {  // first run is the warm-up
    CudaStats st;
    NpcfResult res = count_cuda(s, g, p, c, ctx, o, &st);
    const bool slow = st.total_s > 4.0;  // a slow call is its own warm-up: keep the budget
    if (r == 0 && !slow) continue;
    k.push_back(st.kernel_s);
    tot.push_back(st.total_s);
    t.stats = st;
    t.result = std::move(res);
    if (slow) break;
  }
  t.kernel = median(k);
  t.total = median(tot);
  return t;
}

void row(const char* what, const char* cs, const std::string& a, const std::string& b,
         const std::string& c, const std::string& d) {
  std::printf("| %s | %s | %s | %s | %s | %s |\n", what, cs, a.c_str(), b.c_str(), c.c_str(), d.c_str());
  std::fflush(stdout);
}

std::string f(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

void run_case(const Args& A, bool heavy) {
  const char* cs = heavy ? "heavy" : "uniform";
  const auto t0 = Clock::now();
  synthetic::CataloguePair cats = synthetic::benchmark_catalogues(A.n, 20240601);
  if (heavy) cats.data = synthetic::neyman_scott(A.n / 3, 30, 2.0, synthetic::kBenchmarkBox, 20240601);
  const PointSet p = make_point_set(cats.data, &cats.randoms);
  std::fprintf(stderr, "[%s] catalogue %zu points in %.1f s\n", cs, p.size(), since(t0));
  JobContext ctx;
  ctx.threads = A.threads;
  const int threads = resolve_threads(A.threads);

  NpcfConfig c3;
  c3.statistic = Statistic::ThreePoint;
  c3.bins = Binning{1.0, A.rmax, 10, BinScale::Linear};
  c3.threads = A.threads;
  NpcfConfig c4 = c3;
  c4.statistic = Statistic::FourPointParity;
  c4.bins.nbins = 5;
  c4.store_pixels = true;
  c4.directions = DirectionMode::Pixel;

  // Graphs: GPU (timed, median of reps after a warm-up) and CPU (all cores), compared.
  std::vector<double> dev, tot;
  Graph g3;
  for (int r = 0; r < A.reps + 1; ++r) {
    double d = 0, t = 0;
    g3 = build_graph_cuda(p, c3, ctx, {}, &d, &t);
    if (r) {
      dev.push_back(d);
      tot.push_back(t);
    }
  }
  double cpu_graph = 0;
  std::string same = "not checked";
  if (A.cpu != "none") {
    const auto tc = Clock::now();
    const Graph c = build_graph(p, c3, ctx);
    cpu_graph = since(tc);
    same = (c.offsets == g3.offsets && c.neighbour == g3.neighbour && c.bin == g3.bin) ? "identical" : "DIFFERENT";
  }
  const double m = 2.0 * static_cast<double>(g3.num_edges()) / static_cast<double>(p.size());
  row("graph build (10 bins)", cs, "GPU " + f("%.3f", median(dev)) + " s (" + f("%.3f", median(tot)) + " s with transfers)",
      A.cpu != "none" ? "CPU " + f("%.2f", cpu_graph) + " s" : "-",
      "edges " + f("%.3g", static_cast<double>(g3.num_edges())) + ", m = " + f("%.1f", m),
      "graph " + same);
  dev.clear();
  tot.clear();
  Graph g4;
  for (int r = 0; r < 2; ++r) {
    double d = 0, t = 0;
    g4 = build_graph_cuda(p, c4, ctx, {}, &d, &t);
    if (r) {
      dev.push_back(d);
      tot.push_back(t);
    }
  }
  row("graph build (5 bins + pixels)", cs, "GPU " + f("%.3f", median(dev)) + " s (" + f("%.3f", median(tot)) + " s with transfers)",
      "-", "edges " + f("%.3g", static_cast<double>(g4.num_edges())), "-");

  const double wb3 = walk_bytes(g3), wb4 = walk_bytes(g4);
  auto report = [&](const char* what, Statistic s, const Graph& g, const NpcfConfig& c, bool cpu_on) {
    GpuTiming t1 = time_gpu(s, g, p, c, 1, A.reps);
    GpuTiming t4 = time_gpu(s, g, p, c, 4, 1);
    const std::uint64_t tuples = total(t1.result.tuples);
    std::string cpu = "-", ratio = "-", check = "counts W=4 " + std::string(t4.result.tuples == t1.result.tuples ? "equal" : "DIFFER");
    if (cpu_on) {
      const auto tc = Clock::now();
      NpcfResult r;
      if (s == Statistic::ThreePoint) r = count_3pcf_cpu(g, p, c, false, ctx);
      else r = count_4pcf_cpu(g, p, c, s == Statistic::FourPointParity, ctx);
      const double cs_ = since(tc);
      cpu = "CPU " + f("%.2f", cs_) + " s (" + std::to_string(threads) + " threads)";
      ratio = f("%.1fx", cs_ / t1.kernel) + " (" + f("%.1fx", cs_ / t1.total) + " incl. transfers)";
      const bool eq = r.tuples == t1.result.tuples && r.random_tuples == t1.result.random_tuples &&
                      r.degenerate == t1.result.degenerate;
      const double dn = std::max({normwise(r.n, t1.result.n, r), normwise(r.r, t1.result.r, r),
                                  normwise(r.n_odd, t1.result.n_odd, r)});
      check += std::string(", vs CPU: counts ") + (eq ? "identical" : "DIFFERENT") + ", sums " +
               f("%.1e", dn) + " normwise";
    }
    const double per_s = static_cast<double>(tuples) / t1.kernel;
    // The plan's way: the graph stays on the device between calls (a device graph); the warm-up
    // call uploads, the timed calls reuse.
    const GpuTiming tr = time_gpu(s, g, p, c, 0, A.reps, 0, true);
    if (tr.result.tuples != t1.result.tuples) check += ", resident counts DIFFER";
    std::string gpu = "GPU " + f("%.3f", t1.kernel) + " s kernels, " + f("%.3f", t1.total) + " s call (" +
                      f("%.3f", tr.total) + " s with the graph resident); W=4 " +
                      f("%.3f", t4.kernel) + " s (" + f("%+.0f%%", 100.0 * (t4.kernel / t1.kernel - 1)) + ", " +
                      std::to_string(t4.stats.tiles) + " tiles)";
    if (s != Statistic::ThreePoint) {
      // The 4pCF with double-precision shared-memory reductions instead of fixed point.
      const GpuTiming td = time_gpu(s, g, p, c, 1, A.reps, 1);
      gpu += "; double reductions " + f("%.3f", td.kernel) + " s";
      check += std::string(", double-reduction counts ") +
               (td.result.tuples == t1.result.tuples && td.result.degenerate == t1.result.degenerate ? "equal" : "DIFFER") +
               ", sums vs fixed " +
               f("%.1e", std::max({normwise(td.result.n, t1.result.n, t1.result), normwise(td.result.r, t1.result.r, t1.result),
                                   normwise(td.result.n_odd, t1.result.n_odd, t1.result)}));
    }
    std::string tp = f("%.3g", static_cast<double>(tuples)) + " tuples, " + f("%.3g", per_s) + "/s";
    tp += ", row walks " + f("%.0f", (s == Statistic::ThreePoint ? wb3 : wb4) / t1.kernel / 1e9) + " GB/s";
    row(what, cs, gpu, cpu + (cpu_on ? ", " + ratio : ""), tp, check);
  };
  const bool cpu3 = A.cpu != "none";
  const bool cpu4 = A.cpu == "all";
  report("3pCF, 10 bins", Statistic::ThreePoint, g3, c3, cpu3);
  NpcfConfig c4e = c4;
  c4e.statistic = Statistic::FourPoint;
  report("4pCF, 5 bins", Statistic::FourPoint, g4, c4e, cpu4);
  report("parity 4pCF (pixel), 5 bins", Statistic::FourPointParity, g4, c4, cpu4);
  NpcfConfig c4x = c4;
  c4x.directions = DirectionMode::Exact;
  report("parity 4pCF (exact), 5 bins", Statistic::FourPointParity, g4, c4x, false);
}

}  // namespace

int main(int argc, char** argv) {
  Args A;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "missing value after %s\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--n") A.n = std::strtoull(next(), nullptr, 10);
    else if (a == "--case") A.cases = next();
    else if (a == "--cpu") A.cpu = next();
    else if (a == "--reps") A.reps = std::atoi(next());
    else if (a == "--threads") A.threads = std::atoi(next());
    else if (a == "--rmax") A.rmax = std::atof(next());
    else {
      std::fprintf(stderr, "usage: %s [--n N] [--case uniform|heavy|both] [--cpu none|3|all] [--reps R] [--threads T] [--rmax R]\n", argv[0]);
      return 2;
    }
  }
  const GpuStatus& s = gpu_status();
  if (!s.available) {
    std::fprintf(stderr, "no usable GPU: %s\n", s.reason.c_str());
    return 77;
  }
  std::printf("Device: %s; CPU: %s, %d threads; N = %zu, rmin 1, rmax %.1f\n\n", s.summary().c_str(),
              cpu_model_name().c_str(), resolve_threads(A.threads), A.n, A.rmax);
  std::printf("| what | case | GPU | CPU backend | size / throughput | check |\n|---|---|---|---|---|---|\n");
  try {
    if (A.cases == "uniform" || A.cases == "both") run_case(A, false);
    if (A.cases == "heavy" || A.cases == "both") run_case(A, true);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
