// Benchmark of the CPU N-point engine on the reference workload of npcf-conventions.md:
// data N/3 Neyman-Scott points (10 children per parent, sigma 5 Mpc/h) + randoms 2N/3 uniform in
// a 1000 Mpc/h box (not periodic), rmin 1.
//
//   bench_npcf [--n N] [--rmax R] [--nbins B] [--stat 3pcf,4pcf,4pcf-parity] [--threads T]
//              [--seed S] [--box L] [--exact]
//
// Reports the graph build time, for each statistic the query time (wall, and process CPU seconds
// divided by the thread count, the reference's measure), the number of stored edges, the graph's
// bytes per edge and the peak resident memory (total and per edge). Not a test: numbers go to
// docs/benchmarks.md.
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "almagest/core/error.hpp"
#include "almagest/core/provenance.hpp"
#include "almagest/io/catalogue.hpp"
#include "almagest/npcf/plan.hpp"
#include "almagest/npcf/synthetic.hpp"
#include "bench_common.hpp"

using namespace almagest;
using namespace almagest::npcf;

namespace {

using bench::cpu_now;
using bench::wall_now;

double peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

double current_rss_mib() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long pages = 0, resident = 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return static_cast<double>(resident) * 4096.0 / (1024.0 * 1024.0);
}

void usage() {
  std::puts(
      "bench_npcf [--n N] [--rmax R] [--nbins B] [--stat LIST] [--threads T] [--seed S] [--box L] "
      "[--exact] [--hub-order ORDER]\n"
      "  --n        total points (data N/3 Neyman-Scott + randoms 2N/3 uniform), default 100000\n"
      "  --rmax     maximum separation in Mpc/h (rmin = 1), default 71.0\n"
      "  --nbins    radial bins, default 10 (use 5 for the 4pCF)\n"
      "  --stat     comma-separated statistics: 2pcf 3pcf 3pcf-equilateral 4pcf 4pcf-parity\n"
      "  --threads  worker threads, default 2\n"
      "  --seed     catalogue seed, default 20240601\n"
      "  --box      box side in Mpc/h, default 1000\n"
      "  --exact    parity directions from coordinates instead of pixels\n"
      "  --hub-order auto|spatial|input  the CPU plan's hub order (NpcfConfig::hub_order), default auto\n"
      "  --write-catalogues DIR  write the workload's data.txt and randoms.txt into DIR and stop\n"
      "             (the same points through `almagest-cli npcf` / `run`: the job layer's cost)");
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 100000;
  double rmax = 71.0, box = synthetic::kBenchmarkBox;
  int nbins = 10, threads = 2;
  std::uint64_t seed = 20240601;
  bool exact = false;
  std::string write_dir, hub_order = "auto";
  std::vector<Statistic> stats;
  try {
    bench::Args args(argc, argv);
    while (args.next()) {
      if (args.is("--n"))
        n = args.count();
      else if (args.is("--rmax"))
        rmax = args.real();
      else if (args.is("--nbins"))
        nbins = args.integer();
      else if (args.is("--threads"))
        threads = args.integer();
      else if (args.is("--seed"))
        seed = args.count();
      else if (args.is("--box"))
        box = args.real();
      else if (args.is("--exact"))
        exact = true;
      else if (args.is("--hub-order"))
        hub_order = args.value();
      else if (args.is("--write-catalogues"))
        write_dir = args.value();
      else if (args.is("--stat")) {
        std::stringstream ss(args.value());
        std::string s;
        while (std::getline(ss, s, ',')) stats.push_back(statistic_from_string(s));
      } else if (args.is("--help") || args.is("-h")) {
        usage();
        return 0;
      } else {
        usage();
        return 2;
      }
    }
    if (stats.empty()) stats.push_back(Statistic::ThreePoint);

    NpcfConfig c;
    c.statistic = stats.front();
    c.bins = {1.0, rmax, nbins, BinScale::Linear};
    c.threads = threads;
    c.directions = exact ? DirectionMode::Exact : DirectionMode::Pixel;
    for (Statistic s : stats)
      if (s == Statistic::FourPointParity) {
        if (!exact) c.store_pixels = true;
        c.hub_order = HubOrder::Input;  // as the job layer does (docs/npcf.md, "Hub order")
      }
    if (hub_order == "input") c.hub_order = HubOrder::Input;
    if (hub_order == "spatial") c.hub_order = HubOrder::Spatial;
    c.check();

    std::printf("# bench_npcf  Almagest %s  %s  threads %d\n", almagest::version().c_str(),
                cpu_model_name().c_str(), threads);
    std::printf("# workload: N = %zu (data %zu Neyman-Scott 10 children sigma 5, randoms %zu uniform), "
                "box %g, rmin 1, rmax %g, %d bins, seed %llu\n",
                n, n / 3, n - n / 3, box, rmax, nbins, static_cast<unsigned long long>(seed));
    const auto cats = synthetic::benchmark_catalogues(n, seed, box);
    if (!write_dir.empty()) {
      io::save_catalogue_text(cats.data, write_dir + "/data.txt");
      io::save_catalogue_text(cats.randoms, write_dir + "/randoms.txt");
      std::printf("wrote %s/data.txt (%zu points) and %s/randoms.txt (%zu points)\n", write_dir.c_str(),
                  cats.data.size(), write_dir.c_str(), cats.randoms.size());
      return 0;
    }
    PointSet points = make_point_set(cats.data, &cats.randoms);
    const double rss_points = current_rss_mib();

    const GraphEstimate est = estimate_graph(points, c);
    const double w0 = wall_now(), c0 = cpu_now();
    NpcfPlan plan(c, std::move(points), JobContext{});
    const double graph_wall = wall_now() - w0, graph_cpu = (cpu_now() - c0) / threads;
    const Graph& g = plan.graph();
    const double edges = static_cast<double>(g.num_edges());
    const double rss_graph = current_rss_mib();
    std::printf("graph: edges %.0f (estimate %.0f), mean neighbours m %.1f, build %.3f s wall, "
                "%.3f s CPU/thread, %.2f bytes/edge (graph arrays %.1f MiB, estimate %.1f MiB)\n",
                edges, est.edges, 2 * edges / static_cast<double>(n), graph_wall, graph_cpu,
                static_cast<double>(g.memory_bytes()) / edges, g.memory_bytes() / 1048576.0,
                est.bytes / 1048576.0);

    for (Statistic s : stats) {
      const double qw0 = wall_now(), qc0 = cpu_now();
      const NpcfResult r = plan.execute(s, JobContext{});
      const double qwall = wall_now() - qw0, qcpu = (cpu_now() - qc0) / threads;
      std::uint64_t tuples = 0;
      for (auto t : r.tuples) tuples += t;
      const double peak = peak_rss_mib();
      std::printf("%-16s rows %6zu  tuples %14llu  query %8.3f s wall  %8.3f s CPU/thread  "
                  "peak RSS %8.1f MiB  (%.1f bytes/edge above the points, %.1f total)\n",
                  to_string(s), r.rows(), static_cast<unsigned long long>(tuples), qwall, qcpu, peak,
                  (peak - rss_points) * 1048576.0 / edges, peak * 1048576.0 / edges);
    }
    std::printf("# RSS after points %.1f MiB, after graph %.1f MiB\n", rss_points, rss_graph);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_npcf: %s\n", e.what());
    return 1;
  }
  return 0;
}
