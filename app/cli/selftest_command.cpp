// `almagest-cli selftest`: runs the GPU self-tests (every NpCF kernel against its CPU twin on
// seeded catalogues; the CUDA SHT against healpix_cxx) and prints one line per check. Users run it on their own GPU; exit code 0 when all
// checks pass, 4 (backend unavailable) when no GPU can be used, 1 when a check fails.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "almagest/core/gpu.hpp"
#include "almagest/core/selftest.hpp"
#include "almagest/sht/selftest.hpp"
#include "options.hpp"

namespace almagest::cli {

Command add_selftest_command(CLI::App& parent) {
  auto* app = parent.add_subcommand(
      "selftest",
      "Check the GPU backends against the CPU backends on seeded inputs: the GPU graph, every "
      "N-point statistic (all-resident, forced tiling, several partitions), the mirror identity "
      "and the chiral injection; the spherical harmonic transforms (synthesis, adjoint, "
      "adjointness, batches, inverse, cut sky) against healpix_cxx. Prints PASS/FAIL per check.");
  auto opts = std::make_shared<SelftestOptions>();
  auto quiet = std::make_shared<bool>(false);
  auto sht_opts = std::make_shared<sht::ShtSelftestOptions>();
  sht_opts->max_nside = 128;
  app->add_option("--points", opts->points,
                  "Points in the main test catalogue (data 1/3, randoms 2/3)")
      ->check(CLI::Range(std::size_t{300}, std::size_t{2000000}))
      ->capture_default_str();
  app->add_option("--seed", opts->seed, "Random seed of the test catalogues")->capture_default_str();
  app->add_flag("--quick", opts->quick, "Fewer tiling variants");
  app->add_option("--only", opts->only,
                  "Groups to run: graph, 2pcf, 3pcf, 3pcf-equilateral, 4pcf, 4pcf-parity, mirror, "
                  "injection, resident (default: all)")
      ->delimiter(',');
  app->add_option("--tolerance", opts->tolerance,
                  "Normwise relative tolerance of the weighted sums")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--sht-nside", sht_opts->max_nside,
                  "Largest nside of the SHT GPU-vs-CPU comparison (8..2048, power of two; 0 skips "
                  "the SHT checks)")
      ->check(CLI::IsMember({0, 8, 16, 32, 64, 128, 256, 512, 1024, 2048}))
      ->capture_default_str();
  app->add_flag("-q,--quiet", *quiet, "Print only the summary line");
  app->footer(exit_code_help());
  return Command{app, [opts, quiet, sht_opts] {
                   const GpuStatus& st = gpu_status();
                   if (!st.available)
                     throw BackendUnavailable("selftest needs a GPU: " + st.reason);
                   JobContext ctx(interrupt_token());
                   SelftestReport report = run_gpu_selftest(*opts, ctx);
                   if (sht_opts->max_nside > 0) {
                     const SelftestReport s = sht::run_sht_gpu_selftest(*sht_opts, ctx);
                     report.checks.insert(report.checks.end(), s.checks.begin(), s.checks.end());
                     report.seconds += s.seconds;
                   }
                   std::string text = report.text();
                   if (*quiet) {
                     auto pos = text.find_last_of('\n', text.size() >= 2 ? text.size() - 2 : 0);
                     text = pos == std::string::npos ? text : text.substr(pos + 1);
                   }
                   std::fputs(text.c_str(), stdout);
                   if (!text.empty() && text.back() != '\n') std::fputc('\n', stdout);
                   return report.passed() ? static_cast<int>(kExitOk) : static_cast<int>(kExitInternal);
                 }};
}

}  // namespace almagest::cli
