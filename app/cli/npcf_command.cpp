// `almagest-cli npcf` (flags generated from the option schema of almagest/npcf/job.hpp),
// `almagest-cli run JOBFILE`, and the job runner both use.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <optional>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/io/catalogue.hpp"
#include "almagest/npcf/plan.hpp"
#include "almagest/npcf/points.hpp"
#include "job_file.hpp"
#include "options.hpp"
#include "progress_bar.hpp"

namespace almagest::cli {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (b >= 1024.0 && u < 5) {
    b /= 1024.0;
    ++u;
  }
  return fmt::format("{:.1f} {}", b, units[u]);
}

std::string statistics_text(const npcf::NpcfJob& job) {
  std::string s;
  for (std::size_t i = 0; i < job.statistics.size(); ++i)
    s += (i ? "," : "") + std::string(npcf::to_string(job.statistics[i]));
  return s;
}

/// Every output may be written (directory exists and is writable, an existing target is a
/// regular file, no output is an input or written twice): checked before any work. Exit 5.
void check_output_paths(const OutputSet& set, const std::vector<std::string>& paths) {
  try {
    for (std::size_t i = 0; i < paths.size(); ++i) {
      set.check(paths[i]);
      for (std::size_t j = 0; j < i; ++j)
        if (fs::weakly_canonical(fs::absolute(paths[j])) == fs::weakly_canonical(fs::absolute(paths[i])))
          throw IoError(paths[i], "", "is written twice by this job");
    }
  } catch (const IoError& e) {
    throw CliFailure(kExitOutputIo, e.what());
  }
}

/// Writes every result into the job's output set and commits the set: a failure or a cancel
/// (honoured until the renames) leaves none of the outputs (almagest/core/atomic_file.hpp).
void write_outputs(OutputSet& set, const std::vector<npcf::NpcfResult>& results,
                   const std::vector<std::string>& paths, npcf::OutputFormat format) {
  try {
    OutputSet::Scope scope(set);
    for (std::size_t i = 0; i < results.size(); ++i) {
      if (format == npcf::OutputFormat::Gramsci)
        npcf::write_gramsci(results[i], paths[i]);
      else
        npcf::write_hdf5(results[i], paths[i]);
    }
    set.commit();
  } catch (const IoError& e) {
    throw CliFailure(kExitOutputIo, e.what());
  }
}

/// Binds the option schema to CLI11 options: flags "--key", lists comma-separated.
struct SchemaBinding {
  std::map<std::string, std::string> text;
  std::map<std::string, std::vector<std::string>> lists;
  std::map<std::string, bool> flags;
  std::map<std::string, CLI::Option*> options;

  void bind(CLI::App& app) {
    for (const auto& o : npcf::npcf_job_options()) {
      std::string name = (o.short_flag.empty() ? "" : o.short_flag + ",") + "--" + o.key;
      std::string help = wrap_text(o.help, 62);
      CLI::Option* opt = nullptr;
      switch (o.kind) {
        case npcf::OptionKind::Flag:
          opt = app.add_flag(name, flags[o.key], help);
          break;
        case npcf::OptionKind::TextList:
        case npcf::OptionKind::ChoiceList:
          opt = app.add_option(name, lists[o.key], help)->delimiter(',')->expected(1, 1 << 16);
          break;
        default:
          opt = app.add_option(name, text[o.key], help);
          break;
      }
      if (!o.choices.empty()) {
        std::string t;
        for (std::size_t i = 0; i < o.choices.size(); ++i) t += (i ? "|" : "") + o.choices[i];
        opt->type_name(o.kind == npcf::OptionKind::ChoiceList ? t + "[,...]" : t);
      } else if (!o.value_name.empty()) {
        opt->type_name(o.value_name);
      }
      opt->group(o.group);
      options[o.key] = opt;
    }
  }

  /// Only the options given on the command line (required ones are checked by make_npcf_job,
  /// so every problem is reported the same way for flags and job files).
  npcf::JobValues values() const {
    npcf::JobValues v;
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
               wrap_text("Read the catalogues, print the graph estimate (stored edges, mean "
                         "neighbours, memory in bytes) and exit 0 without computing or "
                         "writing anything.", 62))
      ->group("Run");
  app.add_flag("-q,--quiet", o.quiet,
               "No progress bar and no summary; errors are still printed.")
      ->group("Run");
  app.add_flag("-v,--verbose", o.verbose, "Also print the engine's log messages.")->group("Run");
}

}  // namespace

JobOutcome run_npcf_job(const npcf::NpcfJob& job, const RunOptions& options,
                        const std::string& label) {
  JobOutcome out;
  const auto paths = job.output_paths();
  std::vector<std::string> inputs{job.data.path};
  if (job.randoms) inputs.push_back(job.randoms->path);
  OutputSet outputs(inputs, interrupt_token());
  check_output_paths(outputs, paths);

  ProgressBar bar(!options.quiet && ProgressBar::stderr_is_tty());
  JobContext ctx(interrupt_token(), bar.sink(), bar.log_sink(options.verbose, options.quiet));
  ctx.threads = job.config.threads;
  out.threads = resolve_threads(job.config.threads);

  // Catalogues -> point set (data first, then randoms; weights normalised).
  auto t0 = Clock::now();
  std::optional<npcf::PointSet> points;
  {
    ctx.progress(0, job.randoms ? 2 : 1, "reading catalogues");
    io::Catalogue data = io::load_catalogue(job.data);
    ctx.check_cancel();
    std::optional<io::Catalogue> randoms;
    if (job.randoms) {
      ctx.progress(1, 2, "reading catalogues");
      randoms = io::load_catalogue(*job.randoms);
      ctx.check_cancel();
    }
    points = npcf::make_point_set(data, randoms ? &*randoms : nullptr);
    if (job.config.periodic) npcf::wrap_periodic(*points, job.config.box);
  }
  out.ndata = points->ndata;
  out.nrandom = points->size() - points->ndata;
  out.load_seconds = seconds_since(t0);

  if (options.dry_run) {
    ctx.progress(0, 1, "estimating graph");
    out.estimate = npcf::estimate_graph(*points, job.config);
    bar.finish();
    const auto& e = out.estimate;
    std::printf("%sdry run: %s on %zu points (%zu data, %zu randoms)\n", label.c_str(),
                statistics_text(job).c_str(), points->size(), out.ndata, out.nrandom);
    std::printf("%sgraph estimate: %.0f edges (half graph), mean neighbours %.2f, memory %.0f "
                "bytes (%s), from %llu sampled hubs\n",
                label.c_str(), e.edges, e.mean_neighbours, e.bytes, human_bytes(e.bytes).c_str(),
                static_cast<unsigned long long>(e.sampled));
    for (const auto& p : paths) std::printf("%snot written: %s\n", label.c_str(), p.c_str());
    std::fflush(stdout);
    return out;
  }

  npcf::NpcfPlan plan(job.config, std::move(*points), ctx);
  points.reset();
  out.graph_seconds = plan.graph_seconds();
  out.graph_edges = plan.graph().num_edges();
  out.backend = plan.backend_name();

  for (npcf::Statistic s : job.statistics) {
    auto ts = Clock::now();
    npcf::NpcfResult r = plan.execute(s, ctx);
    out.statistic_seconds.push_back(seconds_since(ts));
    if (r.provenance.inputs.empty()) {
      r.provenance.inputs.push_back(job.data.path);
      if (job.randoms) r.provenance.inputs.push_back(job.randoms->path);
    }
    out.results.push_back(std::move(r));
  }
  ctx.check_cancel();

  ctx.progress(0, 1, "writing results");
  auto tw = Clock::now();
  write_outputs(outputs, out.results, paths, job.format);
  out.write_seconds = seconds_since(tw);
  out.written = paths;
  bar.finish();

  if (!options.quiet) {
    for (std::size_t i = 0; i < out.results.size(); ++i)
      std::printf("%swrote %s (%s, %zu rows, %s)\n", label.c_str(), paths[i].c_str(),
                  npcf::to_string(job.statistics[i]), out.results[i].rows(),
                  npcf::to_string(job.format));
    std::string timing = fmt::format("catalogues {:.2f} s, graph {:.2f} s", out.load_seconds,
                                     out.graph_seconds);
    for (std::size_t i = 0; i < job.statistics.size(); ++i)
      timing += fmt::format(", {} {:.2f} s", npcf::to_string(job.statistics[i]),
                            out.statistic_seconds[i]);
    std::printf("%s%zu data + %zu random points, %llu graph edges, backend %s, %d threads; %s\n",
                label.c_str(), out.ndata, out.nrandom,
                static_cast<unsigned long long>(out.graph_edges), out.backend.c_str(),
                out.threads, timing.c_str());
    std::fflush(stdout);
  }
  return out;
}

Command add_npcf_command(CLI::App& parent) {
  auto* app = parent.add_subcommand(
      "npcf", wrap_text("Compute N-point correlation functions (2pCF, 3pCF, 4pCF, parity 4pCF) "
                        "of a catalogue with the GRAMSCI v2 estimator.", 80));
  auto binding = std::make_shared<SchemaBinding>();
  auto run = std::make_shared<RunOptions>();
  binding->bind(*app);
  add_run_flags(*app, *run);
  app->footer(exit_code_help() +
              "\nExample:\n  almagest-cli npcf --stat 3pcf --data gal.txt --randoms ran.txt "
              "--rmin 1 --rmax 40 --nbins 10 -o out.h5\n");
  return Command{app, [binding, run]() {
                   npcf::NpcfJob job = npcf::make_npcf_job(binding->values(), "", "--");
                   run_npcf_job(job, *run);
                   return static_cast<int>(kExitOk);
                 }};
}

Command add_run_command(CLI::App& parent) {
  auto* app = parent.add_subcommand(
      "run", wrap_text("Run the jobs of a TOML (.toml) or JSON (.json) job file in order. Keys are "
                       "the npcf options without '--' (see `almagest-cli npcf --help`). Every job "
                       "is validated first; the run stops at the first failing job with its exit "
                       "code. Relative paths are resolved against the job file's directory.",
                       80));
  auto path = std::make_shared<std::string>();
  auto run = std::make_shared<RunOptions>();
  app->add_option("JOBFILE", *path, "Job file (.toml or .json).")->required();
  add_run_flags(*app, *run);
  app->footer(exit_code_help() +
              "\nExample job file (jobs.toml):\n"
              "  data = \"gal.txt\"        # top-level keys are shared by every [[job]]\n"
              "  randoms = \"ran.txt\"\n"
              "  rmin = 1.0\n  rmax = 40.0\n  nbins = 10\n"
              "  [[job]]\n  stat = \"2pcf\"\n  output = \"xi.h5\"\n"
              "  [[job]]\n  stat = [\"3pcf\", \"4pcf\"]\n  nbins = 5\n  output = \"npcf.h5\"\n");
  return Command{app, [path, run]() {
                   JobFile jf = read_job_file(*path);
                   // Every job (values, inputs, distinct outputs) before the first runs.
                   const std::vector<npcf::NpcfJob> jobs = validate_jobs(jf);
                   for (std::size_t i = 0; i < jobs.size(); ++i) {
                     const std::string& label = jf.jobs[i].label;
                     try {
                       run_npcf_job(jobs[i], *run, jobs.size() > 1 ? label : "");
                     } catch (...) {
                       std::string message;
                       int code = exit_code_of(std::current_exception(), message);
                       print_error(label, message);
                       return code;
                     }
                   }
                   return static_cast<int>(kExitOk);
                 }};
}

}  // namespace almagest::cli
