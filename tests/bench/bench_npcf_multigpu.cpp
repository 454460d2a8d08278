// Several-GPU scaling of the NpCF CUDA backend (issue 6): the benchmark workload of issue 3
// (Neyman-Scott data N/3 + uniform randoms 2N/3, box 1000, rmin 1, rmax 33), one graph built on
// the GPU, then the 4pCF (5 bins) and the parity 4pCF on 1 GPU and on 2..K GPUs with several
// partition counts. Results must equal the one-GPU results: tuple counts identical, weighted sums
// within 1e-11 normwise (kSumTolerance) (max |a - b| / max(|n|, |r|), the self-test's measure).
//
// Usage: bench_npcf_multigpu [--n N] [--reps R] [--stat 4pcf,4pcf-parity,3pcf] [--resident]
// (--resident: the graph stays on every device between calls, as NpcfPlan keeps it; without it
// every call uploads the graph to every device used.)
// Prints a Markdown table on stdout; exit code 1 when a result differs, 77 without a GPU.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "almagest/core/gpu.hpp"
#include "almagest/npcf/cuda.hpp"
#include "almagest/npcf/plan.hpp"
#include "almagest/npcf/synthetic.hpp"

using namespace almagest;
using namespace almagest::npcf;

namespace {

/// Weighted sums of different partitionings add the same products in another order. At N = 10^6
/// rows hold 10^7-10^8 products and GPU vs CPU already differ by up to ~1e-11 normwise
/// (docs/npcf-cuda.md); the same bound applies between GPU partitionings.
constexpr double kSumTolerance = 1e-11;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

double normwise(const NpcfResult& a, const NpcfResult& ref) {
  double num = 0, den = 0;
  auto diff = [&](const std::vector<double>& x, const std::vector<double>& y) {
    for (std::size_t k = 0; k < x.size() && k < y.size(); ++k) num = std::max(num, std::fabs(x[k] - y[k]));
  };
  diff(a.n, ref.n);
  diff(a.r, ref.r);
  diff(a.n_odd, ref.n_odd);
  diff(a.r_odd, ref.r_odd);
  for (double v : ref.n) den = std::max(den, std::fabs(v));
  for (double v : ref.r) den = std::max(den, std::fabs(v));
  return den > 0 ? num / den : num;
}

bool same_counts(const NpcfResult& a, const NpcfResult& b) {
  return a.tuples == b.tuples && a.random_tuples == b.random_tuples && a.degenerate == b.degenerate;
}

struct Timed {
  double total = 0, kernel = 0;
  NpcfResult result;
};

bool g_resident = false;  // --resident: the graph stays on the devices between calls (as NpcfPlan)

Timed run(Statistic s, const Graph& g, const PointSet& p, const NpcfConfig& c, int devices,
          int partitions, int reps) {
  CudaOptions o;
  for (int d = 0; d < devices; ++d) o.devices.push_back(d);
  DeviceGraph dg;
  if (g_resident) dg = make_device_graph(o.devices);  // the warm-up call uploads
  o.device_graph = dg.get();
  o.partitions = partitions;
  o.windows = 1;
  JobContext ctx;
  std::vector<double> tot, ker;
  Timed t;
  for (int r = 0; r <= reps; ++r) {
    CudaStats st;
    NpcfResult res = count_cuda(s, g, p, c, ctx, o, &st);
    if (r == 0) continue;  // warm-up
    tot.push_back(st.total_s);
    ker.push_back(st.kernel_s);
    t.result = std::move(res);
  }
  t.total = median(tot);
  t.kernel = median(ker);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 1000000;
  int reps = 3;
  std::string stats = "4pcf,4pcf-parity";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--resident") {
      g_resident = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "usage: %s [--n N] [--reps R] [--stat LIST] [--resident]\n", argv[0]);
      return 2;
    }
    if (a == "--n") n = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--reps") reps = std::atoi(argv[++i]);
    else if (a == "--stat") stats = argv[++i];
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  const GpuStatus& st = gpu_status();
  if (!st.available) {
    std::printf("no GPU: %s\n", st.reason.c_str());
    return 77;
  }
  const int ndev = static_cast<int>(st.query.devices.size());
  std::printf("devices: %d x %s\n\n", ndev, st.query.devices.front().name.c_str());

  synthetic::CataloguePair cats = synthetic::benchmark_catalogues(n, 20240601);
  PointSet points = make_point_set(cats.data, &cats.randoms);
  NpcfConfig cfg;
  cfg.bins.rmin = 1.0;
  cfg.bins.rmax = 33.0;
  cfg.bins.nbins = 5;
  cfg.store_pixels = true;
  cfg.statistic = Statistic::FourPointParity;
  JobContext ctx;
  double dev_s = 0, tot_s = 0;
  Graph g = build_graph_cuda(points, cfg, ctx, {}, &dev_s, &tot_s);
  std::printf("N = %zu, edges = %llu, graph build %.3f s (device %.3f s)\n\n", points.size(),
              static_cast<unsigned long long>(g.num_edges()), tot_s, dev_s);

  std::printf("| statistic | GPUs | partitions | wall per call [s] | kernels [s] | speed-up | efficiency | equal to 1 GPU |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  bool all_equal = true;
  std::stringstream ss(stats);
  std::string name;
  while (std::getline(ss, name, ',')) {
    const Statistic s = statistic_from_string(name);
    NpcfConfig c = cfg;
    c.statistic = s;
    if (s == Statistic::ThreePoint || s == Statistic::ThreePointEquilateral) c.bins.nbins = 10;
    const Timed one = run(s, g, points, c, 1, 1, reps);
    std::printf("| %s | 1 | 1 | %.4f | %.4f | 1.00 | 1.00 | reference |\n", name.c_str(), one.total,
                one.kernel);
    std::fflush(stdout);
    for (int k = 2; k <= ndev; ++k)
      for (int parts : {k, 2 * k, 4 * k}) {
        const Timed t = run(s, g, points, c, k, parts, reps);
        const bool counts = same_counts(t.result, one.result);
        const double rel = normwise(t.result, one.result);
        const bool ok = counts && rel <= kSumTolerance;
        all_equal = all_equal && ok;
        const double speedup = one.total / t.total;
        std::printf("| %s | %d | %d | %.4f | %.4f | %.2f | %.2f | %s (counts %s, sums %.1e) |\n",
                    name.c_str(), k, parts, t.total, t.kernel, speedup, speedup / k,
                    ok ? "yes" : "NO", counts ? "identical" : "DIFFER", rel);
        std::fflush(stdout);
      }
  }
  return all_equal ? 0 : 1;
}
