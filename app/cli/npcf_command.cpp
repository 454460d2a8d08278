// `almagest-cli npcf`: a thin adapter over the N-point job layer (almagest/npcf/job.hpp). The
// options are generated from npcf_schema() (one per field, "--" + key, help = full_help()), the
// values given are passed as text to make_npcf_job, and the run is run_npcf_job's; this file adds
// only the progress bar, the summary lines and the exit codes (`almagest-cli run` is
// run_command.cpp, over the same job layer).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <memory>

#include "almagest/core/error.hpp"
#include "almagest/core/schema.hpp"
#include "almagest/npcf/job.hpp"
#include "options.hpp"
#include "progress_bar.hpp"

namespace almagest::cli {

namespace {

/// Binds the schema to CLI11 options: "--key" (and the short flag), lists comma-separated.
struct SchemaBinding {
  std::map<std::string, std::string> text;
  std::map<std::string, std::vector<std::string>> lists;
  std::map<std::string, bool> flags;
  std::map<std::string, CLI::Option*> options;

  void bind(CLI::App& app, const schema::Schema& schema) {
    for (const auto& f : schema.fields) {
      std::string name = (f.short_flag.empty() ? "" : f.short_flag + ",") + "--" + f.key;
      std::string help = wrap_text(schema::full_help(f), 62);
      CLI::Option* opt = nullptr;
      switch (f.kind) {
        case schema::Kind::Flag:
          opt = app.add_flag(name, flags[f.key], help);
          break;
        case schema::Kind::TextList:
        case schema::Kind::ChoiceList:
          opt = app.add_option(name, lists[f.key], help)->delimiter(',')->expected(1, 1 << 16);
          break;
        default:  // numbers and integers as text: the schema reads and range-checks them
          opt = app.add_option(name, text[f.key], help);
          break;
      }
      if (!f.choices.empty()) {
        std::string t;
        for (std::size_t i = 0; i < f.choices.size(); ++i) t += (i ? "|" : "") + f.choices[i];
        opt->type_name(f.kind == schema::Kind::ChoiceList ? t + "[,...]" : t);
      } else if (!f.value_name.empty()) {
        opt->type_name(f.value_name);
      }
      opt->group(f.group);
      options[f.key] = opt;
    }
  }

  /// Only the options given on the command line, so that defaults stay the schema's and required
  /// ones are reported by make_npcf_job the same way for flags and job files.
  schema::Values values() const {
    schema::Values v;
    for (const auto& [key, opt] : options) {
      if (opt->count() == 0) continue;
      if (auto it = flags.find(key); it != flags.end()) v[key] = it->second;
      else if (auto l = lists.find(key); l != lists.end()) v[key] = l->second;
      else v[key] = text.at(key);
    }
    return v;
  }
};

void add_run_flags(CLI::App& app, RunOptions& o) {
  app.add_flag("--dry-run", o.dry_run,
               wrap_text("Read the catalogues, print the plan (inputs and sizes, graph estimate, "
                         "host and device memory, tiling, estimated time) and exit 0 without "
                         "computing or writing anything.", 62))
      ->group("Run");
  app.add_flag("-q,--quiet", o.quiet,
               "No progress bar and no summary; errors are still printed.")
      ->group("Run");
  app.add_flag("-v,--verbose", o.verbose, "Also print the engine's log messages.")->group("Run");
}

bool is_output(const npcf::NpcfJob& job, const std::string& file) {
  for (const auto& p : job.output_paths())
    if (p == file) return true;
  return false;
}

}  // namespace

JobOutcome run_npcf_job(const npcf::NpcfJob& job, const RunOptions& options,
                        const std::string& label) {
  ProgressBar bar(!options.quiet && ProgressBar::stderr_is_tty());
  JobContext ctx(interrupt_token(), bar.sink(), bar.log_sink(options.verbose, options.quiet));
  ctx.threads = job.config.threads;
  jobs::RunOptions ro;
  ro.dry_run = options.dry_run;
  npcf::NpcfOutcome o;
  try {
    o = npcf::run_npcf_job(job, ctx, ro);
  } catch (const IoError& e) {
    // An output that cannot be written is exit 5, an input exit 3 (docs/cli.md).
    if (is_output(job, e.file())) throw CliFailure(kExitOutputIo, e.what());
    throw;
  }
  bar.finish();
  // A dry run always prints its report (that is what it is for); a run's summary unless quiet.
  if (options.dry_run || !options.quiet) {
    for (const auto& line : o.summary) std::printf("%s%s\n", label.c_str(), line.c_str());
    std::fflush(stdout);
  }
  JobOutcome out;
  out.results = std::move(o.results);
  out.written = o.outputs;
  out.estimate = o.estimate;
  out.ndata = o.ndata;
  out.nrandom = o.nrandom;
  out.graph_edges = o.graph_edges;
  out.backend = o.backend;
  out.threads = o.threads;
  out.load_seconds = o.load_seconds;
  out.graph_seconds = o.graph_seconds;
  out.write_seconds = o.write_seconds;
  out.statistic_seconds = o.statistic_seconds;
  return out;
}

Command add_npcf_command(CLI::App& parent) {
  const schema::Schema& schema = npcf::npcf_schema();
  auto* app = parent.add_subcommand("npcf", wrap_text(schema.help, 80));
  auto binding = std::make_shared<SchemaBinding>();
  auto run = std::make_shared<RunOptions>();
  binding->bind(*app, schema);
  add_run_flags(*app, *run);
  app->footer(exit_code_help() +
              "\nExample:\n  almagest-cli npcf --stat 3pcf --data gal.txt --randoms ran.txt "
              "--rmin 1 --rmax 40 --nbins 10 -o out.h5\n"
              "  almagest-cli npcf --stat 3pcf --data survey.fits --randoms randoms.fits --sky "
              "--data-columns RA,DEC,Z --weights WEIGHT_FKP --rmin 5 --rmax 80 --nbins 15 -o s.h5\n");
  return Command{app, [binding, run]() {
                   npcf::NpcfJob job = npcf::make_npcf_job(binding->values(), "", "--");
                   run_npcf_job(job, *run);
                   return static_cast<int>(kExitOk);
                 }};
}

// `almagest-cli run` is in run_command.cpp (every engine, batches, aggregation).

}  // namespace almagest::cli
