// `almagest-cli run JOBFILE`: jobs of every engine, batches with resume and aggregation steps
// from a TOML or JSON job file (docs/jobs.md). A thin adapter over the job layer
// (almagest/jobs/batch.hpp): this file adds the progress bar, the summary lines, the JSON-lines
// log and the exit codes.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <fmt/format.h>
#include <memory>
#include <nlohmann/json.hpp>

#include "almagest/core/error.hpp"
#include "almagest/jobs/aggregate.hpp"
#include "almagest/jobs/batch.hpp"
#include "almagest/jobs/job_file.hpp"
#include "almagest/jobs/log.hpp"
#include "options.hpp"
#include "progress_bar.hpp"
#include "run_command.hpp"
#if ALMAGEST_HAVE_MPI
#include "almagest/dist/batch.hpp"
#include "almagest/dist/mpi.hpp"
#endif

namespace almagest::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct RunFlags {
  bool dry_run = false, quiet = false, verbose = false, force = false;
  std::string log_json;
  int threads = 0;
  std::vector<std::string> devices;  ///< --devices: one GPU (or "cpu") per MPI rank
};

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (b >= 1024.0 && u < 5) {
    b /= 1024.0;
    ++u;
  }
  return fmt::format("{:.1f} {}", b, units[u]);
}

std::string human_seconds(double s) {
  if (s <= 0) return "unknown";
  if (s < 120) return fmt::format("{:.1f} s", s);
  if (s < 7200) return fmt::format("{:.1f} min", s / 60);
  return fmt::format("{:.1f} h", s / 3600);
}

/// The terminal side and the JSON-lines side of a run.
class CliObserver : public jobs::BatchObserver {
public:
  CliObserver(const RunFlags& flags, const jobs::RunPlan& plan, jobs::JsonLog& log)
      : flags_(flags), plan_(plan), log_(log), bar_(!flags.quiet && ProgressBar::stderr_is_tty()),
        log_sink_(bar_.log_sink(flags.verbose, flags.quiet)) {
    total_ = plan.member_count();
    many_ = total_ > 1 || plan.batches.size() > 1;
  }

  std::string failed_label;               ///< label of the member or aggregate that failed
  std::vector<std::string> failed_outputs;
  /// Under mpirun (docs/mpi.md): the rank the next events come from (-1: one process); every
  /// JSON line then carries it and a failure's message names it.
  int rank = -1;
  int ranks = 1;

  /// One JSON line per rank at the end of the members: what it ran and its timings.
  void rank_done(int r, std::size_t computed, std::size_t skipped, double busy_s, double wall_s, const std::string& device) {
    nlohmann::json j{{"event", "rank"}, {"rank", r}, {"of", ranks}, {"computed", computed}, {"skipped", skipped},
                     {"busy_s", round3(busy_s)}};
    if (wall_s > 0) j["wall_s"] = round3(wall_s);
    if (!device.empty()) j["device"] = device;
    log_.write(j);
  }

  void member_started(const jobs::Batch& b, const jobs::Member& m) override {
    ++started_;
    member_t0_ = Clock::now();
    last_stage_.clear();
    nlohmann::json j = ids(b, m);
    j["event"] = "start";
    if (!m.varied.empty()) j["varied"] = m.varied;
    log_.write(j);
  }

  void progress(const jobs::Batch& b, const jobs::Member& m, double done, double total, std::string_view stage) override {
    std::string prefix = many_ ? fmt::format("[{}/{}] ", started_, total_) : std::string();
    if (rank >= 0) prefix += fmt::format("rank {}: ", rank);  // one bar: the latest rank's stage
    bar_.update(done, total, prefix + std::string(stage));
    if (!log_.enabled()) return;
    const auto now = Clock::now();
    // At most two lines a second per member, plus every change of stage.
    if (stage == last_stage_ && now - last_progress_ < std::chrono::milliseconds(500) && done < total) return;
    if (stage != last_stage_) stage_t0_ = now;
    last_stage_ = std::string(stage);
    last_progress_ = now;
    nlohmann::json j = ids(b, m);
    j["event"] = "progress";
    j["stage"] = stage;
    j["done"] = done;
    j["total"] = total;
    const double el = std::chrono::duration<double>(now - member_t0_).count();
    const double st = std::chrono::duration<double>(now - stage_t0_).count();
    j["elapsed_s"] = round3(el);
    if (done > 0 && total > done) j["stage_remaining_s"] = round3(st * (total - done) / done);
    log_.write(j);
  }

  void log(const jobs::Batch& b, const jobs::Member& m, LogLevel level, std::string_view text) override {
    log_sink_(level, text);
    if (level == LogLevel::Debug) return;
    nlohmann::json j = ids(b, m);
    j["event"] = "log";
    j["level"] = level == LogLevel::Info ? "info" : level == LogLevel::Warning ? "warning" : "error";
    j["message"] = text;
    log_.write(j);
  }

  void member_finished(const jobs::Batch& b, const jobs::Member& m, const jobs::Outcome& o, double secs) override {
    bar_.finish();
    const std::string label = many_ ? m.label : std::string();
    if (o.plan) print_plan(label, o);
    else if (!flags_.quiet)
      for (const auto& line : o.summary) std::printf("%s%s\n", label.c_str(), line.c_str());
    std::fflush(stdout);
    if (!o.skipped && !o.plan) {
      ++computed_;
      computed_seconds_ += secs;
    }
    nlohmann::json j = ids(b, m);
    j["event"] = "member";
    j["outcome"] = o.plan ? (o.skipped ? "planned (up to date)" : "planned") : o.skipped ? "skipped" : "written";
    j["elapsed_s"] = round3(secs);
    j["outputs"] = o.outputs.empty() ? m.job->output_paths() : o.outputs;
    if (!o.timings_s.empty()) j["timings_s"] = o.timings_s;
    if (!o.backend.empty()) j["backend"] = o.backend;
    j["summary"] = o.summary;
    const std::size_t left = total_ - started_;
    if (computed_ > 0) j["batch_remaining_s"] = round3(computed_seconds_ / double(computed_) * double(left));
    j["done"] = started_;
    j["total"] = total_;
    log_.write(j);
  }

  void member_failed(const jobs::Batch& b, const jobs::Member& m, std::exception_ptr e) override {
    bar_.finish();
    failed_label = (rank >= 0 ? fmt::format("rank {}: ", rank) : std::string()) + m.label;
    failed_outputs = m.job->output_paths();
    std::string message;
    const int code = exit_code_of(e, message);
    nlohmann::json j = ids(b, m);
    j["event"] = "member";
    j["outcome"] = code >= 128 ? "cancelled" : "failed";
    j["exit_code"] = code;
    j["message"] = message;
    j["elapsed_s"] = round3(std::chrono::duration<double>(Clock::now() - member_t0_).count());
    log_.write(j);
  }

  void aggregate_started(const jobs::AggregateStep& a) override {
    bar_.update(0, 1, "aggregating (" + a.kind + ")");
  }

  void aggregate_finished(const jobs::AggregateStep& a, const jobs::Outcome& o, double secs) override {
    bar_.finish();
    const std::string label = a.label;
    if (o.plan) print_plan(label, o);
    else if (!flags_.quiet)
      for (const auto& line : o.summary) std::printf("%s%s\n", label.c_str(), line.c_str());
    std::fflush(stdout);
    nlohmann::json j{{"event", "aggregate"}, {"kind", a.kind}, {"batch", plan_.batches[a.batch].name},
                     {"output", a.output}, {"outcome", o.plan ? "planned" : "written"},
                     {"elapsed_s", round3(secs)}, {"summary", o.summary}};
    log_.write(j);
  }

  void aggregate_failed(const jobs::AggregateStep& a, std::exception_ptr e) override {
    bar_.finish();
    failed_label = a.label;
    failed_outputs = {a.output};
    std::string message;
    const int code = exit_code_of(e, message);
    log_.write({{"event", "aggregate"}, {"kind", a.kind}, {"output", a.output},
                {"outcome", code >= 128 ? "cancelled" : "failed"}, {"exit_code", code}, {"message", message}});
  }

private:
  static double round3(double x) { return std::round(x * 1000.0) / 1000.0; }

  nlohmann::json ids(const jobs::Batch& b, const jobs::Member& m) const {
    nlohmann::json j{{"job", b.name}, {"engine", b.engine}, {"name", m.name}};
    if (rank >= 0) j["rank"] = rank;
    if (b.is_batch) {
      j["member"] = m.index + 1;
      j["of"] = b.members.size();
    }
    return j;
  }

  void print_plan(const std::string& label, const jobs::Outcome& o) const {
    const jobs::PlanReport& p = *o.plan;
    const char* l = label.c_str();
    std::printf("%sdry run: %s %s%s\n", l, o.engine.c_str(), o.operation.c_str(), o.skipped ? " (up to date: a run skips it)" : "");
    for (const auto& in : p.inputs)
      std::printf("%sinput: %s (%s, %s)\n", l, in.path.c_str(), in.what.c_str(), human_bytes(double(in.bytes)).c_str());
    std::printf("%smemory: host %s, device %s\n", l, human_bytes(p.host_bytes).c_str(),
                p.device_bytes > 0 ? human_bytes(p.device_bytes).c_str() : "none");
    if (!p.tiling.empty()) std::printf("%stiling: %s\n", l, p.tiling.c_str());
    std::printf("%sestimated time: %s\n", l, human_seconds(p.estimated_seconds).c_str());
    for (const auto& n : p.notes) std::printf("%s%s\n", l, n.c_str());
    for (const auto& s : o.summary) std::printf("%s%s\n", l, s.c_str());
    for (const auto& out : p.outputs) std::printf("%snot written: %s\n", l, out.c_str());
  }

  const RunFlags& flags_;
  const jobs::RunPlan& plan_;
  jobs::JsonLog& log_;
  ProgressBar bar_;
  LogFn log_sink_;
  std::size_t total_ = 0, started_ = 0, computed_ = 0;
  double computed_seconds_ = 0;
  bool many_ = false;
  std::string last_stage_;
  Clock::time_point member_t0_, stage_t0_, last_progress_;
};

int run_job_file(const std::string& path, const RunFlags& flags_in) {
  RunFlags flags = flags_in;
  int my_rank = 0, ranks = 1;
  std::string device;
#if ALMAGEST_HAVE_MPI
  // Under mpirun: rank 0 prints, shows the one progress bar and writes the JSON log; each rank
  // takes its own GPU before anything loads CUDA (docs/mpi.md).
  if (dist::active()) {
    my_rank = dist::rank();
    ranks = dist::size();
    // --devices, else the job file's top-level `devices` (reading it loads no CUDA).
    std::vector<std::string> map = flags.devices;
    if (map.empty()) {
      try {
        map = jobs::read_job_file(path).devices;
      } catch (const std::exception&) {
        // Reported below, where the job file is read for the run.
      }
    }
    device = dist::select_device(map);
    if (my_rank != 0) {
      flags.quiet = true;
      flags.verbose = false;
    }
  }
#endif
  const bool distributed = ranks > 1;
  std::unique_ptr<jobs::JsonLog> log = flags.log_json.empty() || my_rank != 0
                                           ? std::make_unique<jobs::JsonLog>()
                                           : std::make_unique<jobs::JsonLog>(flags.log_json);
  jobs::JobFile jf = jobs::read_job_file(path);
  jobs::PlanOptions po;
  if (!flags.log_json.empty()) po.protected_paths.push_back(flags.log_json);
  jobs::RunPlan plan;
  try {
    plan = jobs::plan_job_file(jf, po);
  } catch (const jobs::OutputProblem& e) {
    throw CliFailure(kExitOutputIo, e.what());  // an output that cannot be written: exit 5
  }
  log->write({{"event", "plan"}, {"file", path}, {"jobs", plan.batches.size()}, {"members", plan.member_count()},
              {"aggregates", plan.aggregates.size()}, {"dry_run", flags.dry_run}});
  CliObserver obs(flags, plan, *log);
  if (distributed) {
    obs.rank = 0;
    obs.ranks = ranks;
  }
  jobs::BatchRunOptions ro;
  ro.dry_run = flags.dry_run;
  ro.resume = !flags.force;
  ro.threads = flags.threads;
  const auto t0 = Clock::now();
  int code = kExitOk;
  jobs::BatchSummary s;
  try {
#if ALMAGEST_HAVE_MPI
    if (distributed) {
      dist::DistHooks hooks;
      hooks.device = device;
      hooks.from_rank = [&obs](int r) { obs.rank = r; };
      hooks.rank_done = [&obs](const dist::RankReport& r) {
        obs.rank_done(r.rank, r.computed, r.skipped, r.busy_s, r.wall_s, r.device);
      };
      hooks.exit_code = [](std::exception_ptr e, std::string& message) { return exit_code_of(e, message); };
      hooks.print_error = [](const std::string& context, const std::string& message) { print_error(context, message); };
      s = dist::run_plan_distributed(plan, interrupt_token(), ro, obs, hooks);
    } else
#endif
      s = jobs::run_plan(plan, interrupt_token(), ro, obs);
  } catch (...) {
    std::string message;
    code = exit_code_of(std::current_exception(), message);
    try {
      throw;
    } catch (const IoError& e) {
      // An IoError about one of the failing member's outputs is an output error (exit 5).
      for (const auto& o : obs.failed_outputs)
        if (o == e.file()) code = kExitOutputIo;
    } catch (...) {
    }
    print_error(obs.failed_label, message);
  }
#if ALMAGEST_HAVE_MPI
  if (distributed) {
    // Every rank ends with rank 0's exit code (mpirun reports it).
    code = dist::agree_exit_code(code);
    if (my_rank != 0) return code;
  }
#endif
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  log->write({{"event", "summary"}, {"ranks", ranks}, {"members", plan.member_count()}, {"written", s.written}, {"skipped", s.skipped},
              {"planned", s.planned}, {"aggregates", s.aggregates}, {"elapsed_s", std::round(secs * 1000) / 1000},
              {"exit_code", code}});
  if (code == kExitOk && !flags.quiet && (plan.member_count() > 1 || !plan.aggregates.empty() || s.skipped)) {
    if (flags.dry_run)
      std::printf("%zu members planned, %zu aggregates planned; nothing was written\n", s.planned, s.aggregates);
    else
      std::printf("%zu members: %zu written, %zu skipped (up to date); %zu aggregates written; %.2f s\n", s.members, s.written,
                  s.skipped, s.aggregates, secs);
    std::fflush(stdout);
  }
  if (!log->ok() && code == kExitOk) {
    print_error("", log->path() + ": the JSON log could not be written completely (disk full?)");
    return kExitOutputIo;
  }
  return code;
}

}  // namespace

Command add_run_command(CLI::App& parent) {
  auto* app = parent.add_subcommand(
      "run", wrap_text("Run the jobs of a TOML (.toml) or JSON (.json) job file: jobs of every engine (engine = "
                       "\"npcf\" | \"sht\" | \"stack\"; keys as in `almagest-cli schema ENGINE`), batches over many "
                       "inputs or parameter values, and aggregation steps over a batch (docs/jobs.md). Every job "
                       "and batch member is validated first; members whose outputs are up to date (same "
                       "configuration and input content hashes in their provenance) are skipped, so an "
                       "interrupted batch resumes where it stopped. The run stops at the first failing member "
                       "with its exit code; members already written stay.",
                       80));
  auto path = std::make_shared<std::string>();
  auto flags = std::make_shared<RunFlags>();
  app->add_option("JOBFILE", *path, "Job file (.toml or .json).")->required();
  app->add_flag("--dry-run", flags->dry_run,
                wrap_text("Print each job's and member's plan (inputs and sizes, host and device memory, tiling, "
                          "estimated time) and exit 0 without computing or writing anything.", 62))
      ->group("Run");
  app->add_flag("--force", flags->force, "Recompute every member, even those whose outputs are up to date.")->group("Run");
  app->add_option("--log-json", flags->log_json,
                  wrap_text("Append JSON lines to FILE as the run goes (per job and member: stage, done/total, "
                            "elapsed, estimated remaining, timings, outcome). FILE may not be an input or output.", 62))
      ->type_name("FILE")
      ->group("Run");
  app->add_option("--devices", flags->devices,
                  wrap_text("Under mpirun: the GPU of each rank, rank r taking entry r modulo their count "
                            "(an index into the visible devices, or cpu for a CPU rank); default: the rank "
                            "on its host modulo the visible GPUs (docs/mpi.md).", 62))
      ->delimiter(',')
      ->type_name("LIST")
      ->group("Run");
  app->add_flag("-q,--quiet", flags->quiet, "No progress bar and no summary; errors are still printed.")->group("Run");
  app->add_flag("-v,--verbose", flags->verbose, "Also print the engine's log messages.")->group("Run");
  app->footer(exit_code_help() +
              "\nExample job file (jobs.toml):\n"
              "  randoms = \"ran.txt\"      # top-level keys are shared by every [[job]]\n"
              "  rmin = 1.0\n  rmax = 40.0\n  nbins = 6\n  stat = \"3pcf\"\n"
              "  [[job]]\n  name = \"mocks\"\n  output = \"out/{stem}.h5\"\n"
              "  [job.batch]\n  data = \"mocks/mock_*.txt\"\n"
              "  [[aggregate]]\n  kind = \"npcf-mean-cov\"\n  batch = \"mocks\"\n  output = \"cov.h5\"\n");
  return Command{app, [path, flags]() { return run_job_file(*path, *flags); }};
}

}  // namespace almagest::cli
