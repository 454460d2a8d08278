// `almagest-cli info`: version, build, CPU, threads, GPU status and resource location.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <thread>

#include "almagest/core/gpu.hpp"
#include "almagest/core/job_context.hpp"
#include "almagest/core/provenance.hpp"
#include "options.hpp"
#include "resources.hpp"

namespace almagest::cli {

Command add_info_command(CLI::App& parent) {
  auto* app = parent.add_subcommand(
      "info", "Print version, build, CPU, thread count, GPU status and where the demo data is.");
  app->footer(exit_code_help());
  return Command{app, [] {
                   Provenance p = Provenance::current("cpu");
                   std::printf("Almagest %s (almagest-cli)\n", version().c_str());
                   std::printf("build:     %s\n", p.build.c_str());
                   std::printf("CPU:       %s\n", cpu_model_name().c_str());
                   std::printf("threads:   %d (default for --threads 0)\n", resolve_threads(0));
                   const GpuStatus& g = gpu_status();
                   std::printf("GPU:       %s\n", g.summary().c_str());
                   if (!g.available) {
                     // summary() already carries the reason when it is known.
                     if (g.reason.empty() || g.summary().find(g.reason) == std::string::npos)
                       std::printf("           reason: %s\n",
                                   g.reason.empty() ? "unknown" : g.reason.c_str());
                   } else {
                     for (const auto& d : g.query.devices)
                       std::printf("           device %d: %s, sm_%d%d, %d SMs, %.1f GiB\n",
                                   d.index, d.name.c_str(), d.cc_major, d.cc_minor,
                                   d.multiprocessors, d.total_memory / 1073741824.0);
                   }
                   if (!g.module_path.empty())
                     std::printf("           module: %s\n", g.module_path.c_str());
                   std::string res = find_resource_dir("demo/data.txt");
                   std::printf("demo data: %s\n",
                               res.empty() ? "not found" : (res + "/demo").c_str());
                   return static_cast<int>(kExitOk);
                 }};
}

}  // namespace almagest::cli
