// The job layer's cost inside one process: the same plan and statistic evaluated alternately with
// a bare JobContext (what bench_npcf passes) and with the CLI's (the interrupt-style cancel token,
// a progress sink and a log sink that draw nothing, as almagest-cli with stderr not a terminal),
// and from catalogues generated in memory or read back from the files bench_npcf writes. Each
// variant's query wall and CPU time per repetition, interleaved so that load drifts hit both.
//   bench_npcf_jobcost [--n N] [--rmax R] [--nbins B] [--stat 4pcf] [--threads T] [--reps K]
//                      [--files DIR]   (DIR/data.txt, DIR/randoms.txt: bench_npcf --write-catalogues)

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "almagest/core/job_context.hpp"
#include "almagest/io/catalogue.hpp"
#include "almagest/npcf/plan.hpp"
#include "almagest/npcf/synthetic.hpp"
#include "bench_common.hpp"

using namespace almagest;
using namespace almagest::npcf;

namespace {

using bench::cpu_now;
using bench::wall_now;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 100000;
  double rmax = 71.0;
  int nbins = 5, threads = 2, reps = 3;
  std::string stat = "4pcf", files;
  try {
    bench::Args args(argc, argv);
    while (args.next()) {
      if (args.is("--n")) n = args.count();
      else if (args.is("--rmax")) rmax = args.real();
      else if (args.is("--nbins")) nbins = args.integer();
      else if (args.is("--threads")) threads = args.integer();
      else if (args.is("--reps")) reps = args.integer();
      else if (args.is("--stat")) stat = args.value();
      else if (args.is("--files")) files = args.value();
      else {
        std::fprintf(stderr, "unknown option %s\n", args.option().c_str());
        return 2;
      }
    }
    const Statistic s = statistic_from_string(stat);
    NpcfConfig c;
    c.statistic = s;
    c.bins = {1.0, rmax, nbins, BinScale::Linear};
    c.threads = threads;
    c.check();
    io::Catalogue data, randoms;
    if (files.empty()) {
      auto cats = synthetic::benchmark_catalogues(n, 20240601);
      data = std::move(cats.data);
      randoms = std::move(cats.randoms);
    } else {
      io::CatalogueSpec d, r;
      d.path = files + "/data.txt";
      r.path = files + "/randoms.txt";
      data = io::load_catalogue(d);
      randoms = io::load_catalogue(r);
    }
    NpcfPlan plan(c, make_point_set(data, &randoms), JobContext{});
    std::printf("# %zu points, %llu edges, %s, %d threads, catalogues %s\n", plan.points().size(),
                static_cast<unsigned long long>(plan.graph().num_edges()), stat.c_str(), threads,
                files.empty() ? "in memory" : files.c_str());

    CancelToken token;
    int calls = 0;
    const JobContext bare;
    JobContext cli(token, [&calls](double, double, std::string_view) { ++calls; },
                   [](LogLevel, std::string_view) {});
    cli.threads = threads;
    std::vector<double> wb, cb, wc, cc;
    for (int r = 0; r < reps; ++r) {
      for (int v = 0; v < 2; ++v) {
        const JobContext& ctx = v == 0 ? bare : cli;
        const double w0 = wall_now(), c0 = cpu_now();
        const NpcfResult res = plan.execute(s, ctx);
        const double w = wall_now() - w0, cpu = cpu_now() - c0;
        (v == 0 ? wb : wc).push_back(w);
        (v == 0 ? cb : cc).push_back(cpu);
        std::printf("rep %d %-4s query %7.3f s wall %7.3f s CPU (rows %zu)\n", r + 1, v == 0 ? "bare" : "cli",
                    w, cpu, res.rows());
      }
    }
    std::printf("median bare %.3f s wall %.3f s CPU; cli %.3f s wall %.3f s CPU (%+.1f%% wall, %+.1f%% CPU); "
                "progress calls per cli query %d\n",
                median(wb), median(cb), median(wc), median(cc), 100.0 * (median(wc) / median(wb) - 1),
                100.0 * (median(cc) / median(cb) - 1), calls / std::max(1, reps));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_npcf_jobcost: %s\n", e.what());
    return 1;
  }
  return 0;
}
