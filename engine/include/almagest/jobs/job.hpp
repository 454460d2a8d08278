#pragma once
// The job layer: one model of a job for every engine, shared by the CLI, the GUI, job files,
// batches, Python and MPI (docs/design.md, "Jobs"). A job is stated as schema values
// (almagest/core/schema.hpp), validated into an engine's job, and run by one function that
// reads the inputs, plans, executes, writes the outputs atomically with provenance (one
// OutputSet per job) and reports progress and log lines through the JobContext. It never prints
// and never exits; the front ends adapt the Outcome (summaries, exit codes, dialogs, Python
// objects).
//
//   JobRequest req{"npcf", values, "/dir/of/jobs.toml", "jobs.toml: job 2: "};
//   auto job = make_job(req);                // ConfigError listing every problem
//   check_inputs(*job);                       // IoError: an input is missing or unreadable
//   auto outcome = job->run(ctx, {});         // Cancelled, Error
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "almagest/core/job_context.hpp"
#include "almagest/core/schema.hpp"

namespace almagest::jobs {

/// A job as a user states it.
struct JobRequest {
  std::string engine;            ///< "npcf", "sht" or "stack"
  schema::Values values;         ///< keys of the engine's schema (its operation key included)
  std::string base_dir;          ///< relative paths resolve against it (job file's folder); "" = as given
  std::string label;             ///< message prefix: "" (CLI flags: "--" is added), "jobs.toml: job 2: "
};

/// What a dry run reports before anything heavy is read or allocated.
struct PlanReport {
  struct Input {
    std::string path;
    std::uint64_t bytes = 0;
    std::string what;            ///< "data catalogue", "map", "stack", ...
  };
  std::vector<Input> inputs;
  std::vector<std::string> outputs;
  double host_bytes = 0;         ///< peak host memory estimate
  double device_bytes = 0;       ///< peak device memory estimate (0 on the CPU)
  std::string tiling;            ///< how the work is split ("one pass", "4 column batches", ...)
  double estimated_seconds = 0;  ///< from the engine's cost model; 0 when unknown
  std::vector<std::string> notes;
};

/// What a run produced. Engines derive from it to carry their results (npcf::NpcfOutcome, ...).
struct Outcome {
  virtual ~Outcome() = default;
  std::string engine, operation;
  std::vector<std::string> inputs;       ///< files read
  std::vector<std::string> outputs;      ///< files written (committed together)
  std::vector<std::string> summary;      ///< lines a front end may show (no newlines)
  std::string backend, device;
  int threads = 0;
  std::map<std::string, double> timings_s;
  bool skipped = false;                  ///< batch member whose output was up to date
  std::optional<PlanReport> plan;        ///< set by a dry run (nothing was written)
};

struct RunOptions {
  bool dry_run = false;   ///< report the plan (PlanReport) and stop; write nothing
  bool write = true;      ///< false: compute and return the results only (interactive GUI use)
};

/// A validated job of any engine.
class Job {
public:
  virtual ~Job() = default;
  virtual const std::string& engine() const noexcept = 0;
  virtual std::string operation() const = 0;
  /// Files the job reads and writes (resolved paths), for the checks every front end shares.
  virtual std::vector<std::string> input_paths() const = 0;
  virtual std::vector<std::string> output_paths() const = 0;
  /// Canonical configuration as JSON (keys sorted, defaults applied, paths absolute): recorded in
  /// the provenance of every output and compared when a batch resumes.
  virtual std::string config_json() const = 0;
  /// The job back as schema values (a GUI form saved as a job file; Python repr).
  virtual schema::Values values() const = 0;
  /// Reads, plans, executes and (unless options.write is false) writes with provenance.
  virtual std::unique_ptr<Outcome> run(const JobContext& ctx, const RunOptions& options) const = 0;
};

/// One engine's entry in the job layer.
struct EngineEntry {
  std::string name;                                          ///< "npcf", "sht", "stack"
  const schema::Schema& (*schema)();
  std::unique_ptr<Job> (*make)(const JobRequest& request);   ///< ConfigError on bad values
};

/// Every engine, in the order "npcf", "sht", "stack".
const std::vector<EngineEntry>& engines();
/// nullptr when there is no such engine.
const EngineEntry* find_engine(const std::string& name);

/// Validates a request into a job (ConfigError naming the engine when unknown).
std::unique_ptr<Job> make_job(const JobRequest& request);
/// Every input exists, is a regular file (or a folder where the engine reads folders) and is
/// readable; no output is an input, a special file, or written twice. Throws IoError (inputs)
/// or ConfigError (outputs clash), naming the label, field and file.
void check_job_files(const Job& job, const std::string& label);

}  // namespace almagest::jobs
