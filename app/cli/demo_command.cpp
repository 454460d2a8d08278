// `almagest-cli demo`: the main job (2pCF and 3pCF from one graph) on the bundled demo catalogues,
// with a Markdown report (inputs, job, timings, backend, xi(r) table, 3pCF rows) and the HDF5
// results written to one directory.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/core/provenance.hpp"
#include "almagest/io/catalogue.hpp"
#include "almagest/npcf/job.hpp"
#include "options.hpp"
#include "resources.hpp"

namespace almagest::cli {

namespace fs = std::filesystem;

namespace {

struct DemoSettings {
  std::string out_dir = "almagest-demo";
  int threads = 0;
  RunOptions run;
};

std::string report_markdown(const npcf::NpcfJob& job, const JobOutcome& o,
                            const std::string& resource_dir) {
  const npcf::NpcfResult& xi = o.results.at(0);
  const npcf::NpcfResult& zeta = o.results.at(1);
  const Provenance& p = xi.provenance;
  std::string s;
  s += "# Almagest demo report\n\n";
  s += fmt::format("Almagest {} ({}), created {} on {}.\n\n", version(), p.build,
                   p.created_utc.empty() ? "-" : p.created_utc, p.host.empty() ? "-" : p.host);
  s += "## Inputs\n\n| catalogue | file | points |\n|---|---|---|\n";
  s += fmt::format("| data | {} | {} |\n", job.data.path, o.ndata);
  s += fmt::format("| randoms | {} | {} |\n\n", job.randoms->path, o.nrandom);
  s += fmt::format("Bundled demo data from `{}`.\n\n", resource_dir);
  s += "## Job\n\n";
  s += fmt::format("- statistics: 2pcf, 3pcf (one neighbour graph)\n");
  s += fmt::format("- separations: {} < r < {} Mpc/h, {} {} bins\n", job.config.bins.rmin,
                   job.config.bins.rmax, job.config.bins.nbins,
                   job.config.bins.scale == npcf::BinScale::Log ? "logarithmic" : "linear");
  s += fmt::format("- backend: {} ({}), {} threads\n", o.backend, p.device.empty() ? "-" : p.device,
                   o.threads);
  s += fmt::format("- neighbour graph: {} stored edges (half graph)\n\n", o.graph_edges);
  s += "## Timings (wall clock)\n\n| stage | seconds |\n|---|---|\n";
  s += fmt::format("| reading catalogues | {:.3f} |\n", o.load_seconds);
  s += fmt::format("| neighbour graph | {:.3f} |\n", o.graph_seconds);
  s += fmt::format("| 2pCF | {:.3f} |\n", o.statistic_seconds.at(0));
  s += fmt::format("| 3pCF | {:.3f} |\n", o.statistic_seconds.at(1));
  s += fmt::format("| writing HDF5 | {:.3f} |\n\n", o.write_seconds);

  s += "## Two-point correlation function\n\n";
  s += "xi = NN/RR with NN = DD - DR + RR on normalised weights (GRAMSCI v2 convention, no -1).\n\n";
  s += "| r_min | r_max | r_centre | pairs | NN | RR | xi | r^2 xi |\n";
  s += "|---|---|---|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < xi.rows(); ++i) {
    int b = xi.bins[i];
    double rc = xi.config.bins.centre(b);
    s += fmt::format("| {:.3f} | {:.3f} | {:.3f} | {} | {:.6e} | {:.6e} | {:.6f} | {:.4f} |\n",
                     xi.bin_lo(b), xi.bin_hi(b), rc, xi.tuples[i], xi.n[i] + 0.0, xi.r[i] + 0.0,
                     xi.estimator[i], rc * rc * xi.estimator[i]);
  }
  s += "\n## Three-point correlation function (selected rows)\n\n";
  s += fmt::format("{} triangle configurations in total (b1 <= b2 <= b3); shown: the first rows "
                   "and the equilateral ones.\n\n", zeta.rows());
  s += "| r1 | r2 | r3 | triangles | NNN | RRR | zeta |\n|---|---|---|---|---|---|---|\n";
  std::size_t shown = 0;
  for (std::size_t i = 0; i < zeta.rows(); ++i) {
    int b1 = zeta.bins[3 * i], b2 = zeta.bins[3 * i + 1], b3 = zeta.bins[3 * i + 2];
    bool equilateral = b1 == b2 && b2 == b3;
    if (i >= 5 && !equilateral) continue;
    auto mid = [&](int b) { return zeta.config.bins.centre(b); };
    s += fmt::format("| {:.2f} | {:.2f} | {:.2f} | {} | {:.6e} | {:.6e} | {:.6f} |\n", mid(b1),
                     mid(b2), mid(b3), zeta.tuples[i], zeta.n[i] + 0.0, zeta.r[i] + 0.0,
                     zeta.estimator[i] + 0.0);
    if (++shown >= 20) break;
  }
  s += "\n## Files\n\n";
  for (std::size_t i = 0; i < o.written.size(); ++i)
    s += fmt::format("- `{}`: {} (HDF5; datasets with units, bin edges, config and provenance)\n",
                     fs::path(o.written[i]).filename().string(), npcf::to_string(job.statistics[i]));
  s += "- `demo-report.md`: this report\n";
  return s;
}

int run_demo(const DemoSettings& d) {
  const std::string res = find_resource_dir("demo/data.txt");
  if (res.empty()) {
    std::string where;
    for (const auto& c : resource_dir_candidates()) where += (where.empty() ? "" : ", ") + c;
    throw IoError("demo/data.txt", "", "bundled demo data not found (searched " + where +
                                           "; set ALMAGEST_RESOURCE_DIR)");
  }
  const fs::path demo = fs::path(res) / "demo";

  // Scales from the demo catalogue's extent: rmax a tenth of the smallest side, rounded, at most
  // 20 Mpc/h (the bundled 200 Mpc/h box gives 1 < r < 20 Mpc/h), 10 linear bins from rmax/20.
  io::CatalogueSpec spec;
  spec.path = (demo / "data.txt").string();
  io::Catalogue data = io::load_catalogue(spec);
  auto side = [](const std::vector<double>& v) {
    auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    return v.empty() ? 0.0 : *hi - *lo;
  };
  double extent = std::min({side(data.x), side(data.y), side(data.z)});
  double rmax = std::min(20.0, std::round(extent / 10.0));
  if (!(rmax >= 2.0)) rmax = std::max(extent / 10.0, 1e-3);
  double rmin = rmax / 20.0;

  std::error_code ec;
  fs::create_directories(d.out_dir, ec);
  if (!fs::is_directory(d.out_dir, ec))
    throw CliFailure(kExitOutputIo, d.out_dir + ": cannot create the demo output directory");

  schema::Values v{{"stat", std::vector<std::string>{"2pcf", "3pcf"}},
                    {"data", (demo / "data.txt").string()},
                    {"randoms", (demo / "randoms.txt").string()},
                    {"rmin", rmin},
                    {"rmax", rmax},
                    {"nbins", std::int64_t{10}},
                    {"threads", std::int64_t{d.threads}},
                    {"output", (fs::path(d.out_dir) / "demo.h5").string()}};
  npcf::NpcfJob job = npcf::make_npcf_job(v, "", "demo: ");
  JobOutcome o = run_npcf_job(job, d.run);

  std::string report_path = (fs::path(d.out_dir) / "demo-report.md").string();
  try {
    write_text_atomic(report_path, report_markdown(job, o, res));
  } catch (const IoError& e) {
    throw CliFailure(kExitOutputIo, e.what());
  }
  if (!d.run.quiet) std::printf("report: %s\n", report_path.c_str());
  return kExitOk;
}

}  // namespace

Command add_demo_command(CLI::App& parent) {
  auto* app = parent.add_subcommand(
      "demo", wrap_text("Run the main job on the bundled demo catalogues: 2pCF and 3pCF from one "
                        "neighbour graph. Writes demo_2pcf.h5, demo_3pcf.h5 and a Markdown report "
                        "(demo-report.md: inputs, timings, backend, xi(r) and r^2 xi table, 3pCF "
                        "rows) to DIR.", 80));
  auto d = std::make_shared<DemoSettings>();
  app->add_option("--out", d->out_dir, "Output directory, created if missing.")
      ->type_name("DIR")
      ->capture_default_str();
  app->add_option("--threads", d->threads, "Worker threads (0 = all hardware threads).")
      ->type_name("N")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  app->add_flag("-q,--quiet", d->run.quiet, "No progress bar and no summary.");
  app->footer(exit_code_help());
  return Command{app, [d] { return run_demo(*d); }};
}

}  // namespace almagest::cli
