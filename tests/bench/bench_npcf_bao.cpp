// BAO-scale 3pCF benchmark (issue 23, "Performance"): the size of the published survey example
// (3.0e6 points, 9.0e9 edges at rmax = 150 Mpc/h) built synthetically.
//
// Catalogues (seeded, parameters printed): data = 1.5e6 Neyman-Scott points (Poisson parent
// centres uniform in the box, 10 children per parent displaced by a 3-D Gaussian of sigma 5 Mpc/h
// per axis, wrapped into the box; npcf::synthetic::neyman_scott, seed 20240601), randoms = 1.5e6
// uniform points (seed 20240602), unit weights, in a cube of side L (not periodic). L is chosen
// from the expected pair count of uniform points in a cube,
//   E = N (N - 1)/2 * integral_a^b 4 pi r^2 gbar(r) / L^6 dr,
//   gbar(r) = L^3 - (3/2) L^2 r + (2/pi) L r^2 - r^3/(4 pi)   (isotropised covariogram, r <= L),
// solved for E = 9.0e9 at a = 50, b = 150 Mpc/h and N = 3.0e6 (the clustering adds only pairs
// below a few sigma, far under 50 Mpc/h). The program reports the measured edge count.
//
// The job: 3pCF, 10 linear bins over 50 < r < 150 Mpc/h. Reported separately: graph construction
// and query seconds, host memory (peak RSS, and the graph's bytes) and device memory (the
// module's figure).
//
// Usage: bench_npcf_bao [--backend cuda|cpu] [--scale S] [--subsample F] [--cap-gb G]
//                       [--threads T] [--seed K]
//   --scale S      N = 3.0e6 S points in the same box (edges ~ S^2): a small version (default 1)
//   --subsample F  also run the CPU backend on a random fraction F of the points (e.g. 0.1);
//                  with --backend cpu the CPU run is on that fraction only
//   --cap-gb G     cuda: also run with at most G GB of device memory (CudaOptions::memory_limit,
//                  out-of-core edge windows), e.g. 24, and report the slowdown
//   --dense-min D  cuda: CudaOptions::dense_min_degree (0 automatic, 4294967295 never)
//
// The capped run is checked against the resident one on what must agree: the tuple counts of
// every row (exact integers) and each row's weighted sums n and r within 1e-10 of the row's
// sum of |terms| (tuples x max|w|^3, an upper bound). Both runs add the same products in another
// order (per-lane, per-unit, per-block and per-partition partial sums in double): two orders
// differ by ~eps x sqrt(chain length) of the sum of |terms| in practice (measured on the H200:
// 6e-13 at full size, 1.5e-12 to 2e-12 at half size) and at most ~eps x chain length (chains of
// <= 1e7 additions: 1e-9 in the worst case, not approached). The bound catches a weighting error
// that affects a fraction > 1e-10 of a row's tuples; single products are checked exactly by the
// self-test's small catalogues. The total signed sum (printed) is no check: it cancels between
// data and randoms to ~1e-12 of its terms, so its relative difference means nothing.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numbers>
#include <string>
#include <thread>
#include <vector>

#include "almagest/core/gpu.hpp"
#include "almagest/npcf/cuda.hpp"
#include "almagest/npcf/graph.hpp"
#include "almagest/npcf/plan.hpp"
#include "almagest/npcf/points.hpp"
#include "almagest/npcf/synthetic.hpp"

using namespace almagest;
using namespace almagest::npcf;
using Clock = std::chrono::steady_clock;

namespace {

constexpr double kRmin = 50.0, kRmax = 150.0, kTargetEdges = 9.0e9, kFullN = 3.0e6;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Integral of 4 pi r^2 gbar(r) over [a, b] (closed form of the polynomial), r <= L.
double shell_integral(double a, double b, double L) {
  auto F = [L](double r) {
    const double pi = std::numbers::pi;
    return 4.0 * pi * (L * L * L * r * r * r / 3.0 - 1.5 * L * L * r * r * r * r / 4.0 +
                       (2.0 / pi) * L * std::pow(r, 5) / 5.0 - std::pow(r, 6) / (4.0 * pi * 6.0));
  };
  return F(b) - F(a);
}

double expected_edges(double n, double L) {
  return n * (n - 1.0) / 2.0 * shell_integral(kRmin, kRmax, L) / std::pow(L, 6);
}

/// The side giving kTargetEdges for kFullN points (bisection: E decreases with L).
double box_side() {
  double lo = 2 * kRmax, hi = 1e5;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (expected_edges(kFullN, mid) > kTargetEdges ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double status_gib(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string k;
  while (in >> k) {
    if (k == key) {
      double kb = 0;
      in >> kb;
      return kb / 1048576.0;
    }
    std::string rest;
    std::getline(in, rest);
  }
  return 0;
}

io::Catalogue subsample(const io::Catalogue& c, double f, std::uint64_t seed) {
  synthetic::Rng rng(seed);
  io::Catalogue out;
  for (std::size_t i = 0; i < c.size(); ++i)
    if (rng.uniform() < f) {
      out.x.push_back(c.x[i]);
      out.y.push_back(c.y[i]);
      out.z.push_back(c.z[i]);
      out.w.push_back(c.w[i]);
    }
  out.source = c.source;
  return out;
}

/// Capped against resident: counts identical, sums within 1e-10 of each row's sum of |terms|.
std::string compare_runs(const NpcfResult& ref, const NpcfResult& r, double wmax) {
  if (ref.tuples.size() != r.tuples.size()) return "DIFFERS (row count)";
  std::size_t bad_counts = 0;
  double worst = 0;
  const double w3 = wmax * wmax * wmax;
  for (std::size_t k = 0; k < ref.tuples.size(); ++k) {
    if (ref.tuples[k] != r.tuples[k] || ref.random_tuples[k] != r.random_tuples[k]) ++bad_counts;
    const double sn = static_cast<double>(ref.tuples[k]) * w3, sr = static_cast<double>(ref.random_tuples[k]) * w3;
    if (sn > 0) worst = std::max(worst, std::fabs(ref.n[k] - r.n[k]) / sn);
    if (sr > 0) worst = std::max(worst, std::fabs(ref.r[k] - r.r[k]) / sr);
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s: counts %s in %zu rows, sums max |diff| / sum|terms| %.2e", 
                bad_counts == 0 && worst <= 1e-10 ? "= resident" : "DIFFERS",
                bad_counts == 0 ? "identical" : "differ", ref.tuples.size(), worst);
  if (bad_counts) std::snprintf(buf + std::strlen(buf), sizeof buf - std::strlen(buf), " (%zu rows)", bad_counts);
  return buf;
}

double total(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

/// CPU: graph and 3pCF on the CPU backend, timed separately.
void run_cpu(const PointSet& p, const NpcfConfig& c, const char* what) {
  JobContext ctx;
  auto t0 = Clock::now();
  const Graph g = build_graph(p, c, ctx);
  const double tg = since(t0);
  t0 = Clock::now();
  NpcfResult r = count_3pcf_cpu(g, p, c, false, ctx);
  const double tq = since(t0);
  finalize(r, p);
  std::printf("| cpu (%s) | %zu | %llu | %.2f | %.2f | %.2f (graph %.2f) | - | NNN sum %.10e |\n", what, p.size(),
              static_cast<unsigned long long>(g.num_edges()), tg, tq, status_gib("VmHWM:"),
              static_cast<double>(g.memory_bytes()) / 1073741824.0, total(r.n));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = "cuda";
  double scale = 1.0, sub = 0.0, cap_gb = 0.0;
  std::uint32_t dense_min = 0;
  int threads = 0;
  std::uint64_t seed = 20240601;
  for (int i = 1; i < argc; ++i) {
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_npcf_bao: %s needs a value\n", argv[i]);
        std::exit(2);
      }
      return argv[++i];
    };
    if (!std::strcmp(argv[i], "--backend")) backend = next();
    else if (!std::strcmp(argv[i], "--scale")) scale = std::atof(next());
    else if (!std::strcmp(argv[i], "--subsample")) sub = std::atof(next());
    else if (!std::strcmp(argv[i], "--cap-gb")) cap_gb = std::atof(next());
    else if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(next());
    else if (!std::strcmp(argv[i], "--seed")) seed = std::strtoull(next(), nullptr, 10);
    else if (!std::strcmp(argv[i], "--dense-min")) dense_min = static_cast<std::uint32_t>(std::strtoul(next(), nullptr, 10));
    else {
      std::fprintf(stderr, "usage: bench_npcf_bao [--backend cuda|cpu] [--scale S] [--subsample F] "
                           "[--cap-gb G] [--threads T] [--seed K] [--dense-min D]\n");
      return 2;
    }
  }
  if (!(scale > 0 && scale <= 1) || sub < 0 || sub > 1 || (backend != "cuda" && backend != "cpu")) {
    std::fprintf(stderr, "bench_npcf_bao: --scale in (0, 1], --subsample in [0, 1], --backend cuda|cpu\n");
    return 2;
  }
  const double L = box_side();
  const std::size_t nd = static_cast<std::size_t>(std::llround(kFullN * scale / 2));
  auto t0 = Clock::now();
  const io::Catalogue data = synthetic::neyman_scott(nd, 10, 5.0, L, seed);
  const io::Catalogue randoms = synthetic::uniform(nd, L, seed + 1);
  const double gen_s = since(t0);
  NpcfConfig c;
  c.statistic = Statistic::ThreePoint;
  c.bins.rmin = kRmin;
  c.bins.rmax = kRmax;
  c.bins.nbins = 10;
  c.threads = threads;
  std::printf("# BAO-scale 3pCF: %zu Neyman-Scott data (10 children per parent, Gaussian sigma 5 Mpc/h, "
              "seed %llu) + %zu uniform randoms (seed %llu), box L = %.2f Mpc/h (not periodic), "
              "%g < r < %g Mpc/h, 10 bins; catalogues %.2f s\n",
              nd, static_cast<unsigned long long>(seed), nd, static_cast<unsigned long long>(seed + 1), L,
              kRmin, kRmax, gen_s);
  std::printf("# expected edges (uniform, formula): %.4e for N = %.0f (full size %.4e for N = 3.0e6)\n",
              expected_edges(2.0 * nd, L), 2.0 * nd, expected_edges(kFullN, L));
  std::printf("| run | points | edges (measured) | graph s | query s | host peak GiB | device GiB | check |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);

  const PointSet p = make_point_set(data, &randoms);
  if (backend == "cuda") {
    if (!gpu_status().available) {
      std::fprintf(stderr, "bench_npcf_bao: no usable GPU: %s\n", gpu_status().summary().c_str());
      return 4;
    }
    JobContext ctx;
    double dev_s = 0, tot_s = 0;
    t0 = Clock::now();
    const Graph g = build_graph_cuda(p, c, ctx, {}, &dev_s, &tot_s);
    const double tg = since(t0);
    std::printf("# graph: %.2f s (module call %.2f s, device kernels %.2f s)\n", tg, tot_s, dev_s);
    double wmax = 0;
    for (double w : p.w) wmax = std::max(wmax, std::fabs(w));
    NpcfResult ref;
    std::vector<double> caps{0.0};  // resident first: the reference of the capped run
    if (cap_gb > 0) caps.push_back(cap_gb);
    for (double cap : caps) {
      CudaOptions o;
      o.memory_limit = static_cast<std::uint64_t>(cap * 1e9);
      o.dense_min_degree = dense_min;
      DeviceGraph dg;
      if (cap == 0.0) {
        dg = make_device_graph();  // resident as an NpcfPlan keeps it
        o.device_graph = dg.get();
      }
      CudaStats st;
      t0 = Clock::now();
      NpcfResult r = count_cuda(Statistic::ThreePoint, g, p, c, ctx, o, &st);
      const double tq = since(t0);
      finalize(r, p);
      const double sum = total(r.n);
      const std::string check = cap > 0 ? ", " + compare_runs(ref, r, wmax) : std::string();
      char what[64];
      std::snprintf(what, sizeof what, cap > 0 ? "cuda, cap %.0f GB, %d windows" : "cuda, resident", cap, st.windows);
      std::printf("# %s: %llu tiles, uploads %.2f s, kernels %.2f s, call %.2f s\n", what,
                  static_cast<unsigned long long>(st.tiles), st.upload_s, st.kernel_s, st.total_s);
      std::printf("| %s | %zu | %llu | %.2f (device %.2f) | %.2f (kernels %.2f) | %.2f (graph %.2f) | %.2f | "
                  "NNN sum %.10e%s |\n",
                  what, p.size(), static_cast<unsigned long long>(g.num_edges()), tg, dev_s, tq, st.kernel_s,
                  status_gib("VmHWM:"), static_cast<double>(g.memory_bytes()) / 1073741824.0,
                  static_cast<double>(st.device_bytes) / 1073741824.0, sum, check.c_str());
      std::fflush(stdout);
      if (cap == 0.0) ref = std::move(r);
    }
  }
  if (backend == "cpu" && sub == 0.0) run_cpu(p, c, "all points");
  if (sub > 0.0) {
    const io::Catalogue ds = subsample(data, sub, seed + 2), rs = subsample(randoms, sub, seed + 3);
    const PointSet ps = make_point_set(ds, &rs);
    char what[48];
    std::snprintf(what, sizeof what, "%g subsample", sub);
    run_cpu(ps, c, what);
  }
  std::printf("# threads %u, host peak RSS %.2f GiB\n",
              threads > 0 ? static_cast<unsigned>(threads) : std::thread::hardware_concurrency(),
              status_gib("VmHWM:"));
  return 0;
}
