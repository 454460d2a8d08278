#pragma once
// Batches (docs/jobs.md): a job file's jobs expanded into members, every member validated before
// the first runs, members run in order with resume (a member whose outputs record the same
// configuration and input content hashes in their provenance is skipped), then the file's
// aggregation steps. Engine-agnostic: engines are reached through jobs::Job only.
//
//   JobFile jf = read_job_file("jobs.toml");
//   RunPlan plan = plan_job_file(jf, {{"run.log"}});      // ConfigError / IoError, nothing run
//   BatchSummary s = run_plan(plan, token, {}, observer);  // Cancelled, engine errors
#include <cstddef>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "almagest/core/error.hpp"
#include "almagest/core/job_context.hpp"
#include "almagest/core/provenance.hpp"
#include "almagest/jobs/job.hpp"
#include "almagest/jobs/job_file.hpp"

namespace almagest::jobs {

struct Member {
  std::size_t index = 0;      ///< 0-based, in batch order
  std::string name;           ///< {name}: the input's stem, "nbins-8", a member table's name
  std::string stem;           ///< {stem}: stem of the varied input (else of the job's first input)
  std::string label;          ///< message prefix: "jobs.toml: job 1: member 3 (mock_3): "
  std::string varied;         ///< "data = /abs/mock_3.txt", "" for a plain job
  std::unique_ptr<Job> job;
};

struct Batch {
  std::string name;           ///< the job's name ("job 2" unless named)
  std::string engine;
  std::string label;          ///< the job's label ("jobs.toml: job 2: ")
  bool is_batch = false;      ///< false: a plain job (one member, labelled as the job)
  std::vector<Member> members;
};

struct AggregateStep {
  std::string label;          ///< "jobs.toml: aggregate 1: "
  std::string kind;           ///< aggregate_kinds() (jobs/aggregate.hpp)
  std::size_t batch = 0;      ///< index into RunPlan::batches
  std::string output;         ///< resolved path
  schema::Values values;      ///< as written (the aggregate schema's keys)
  std::vector<std::string> inputs;  ///< the member files it reads, in batch order
};

struct RunPlan {
  std::string path, base_dir;
  std::vector<Batch> batches;
  std::vector<AggregateStep> aggregates;
  std::size_t member_count() const noexcept;
};

/// plan_job_file's error when the only problems are outputs that cannot be written (an output
/// that is an input, a special file, a folder missing or not writable): the CLI's exit 5.
class OutputProblem : public IoError {
public:
  using IoError::IoError;
};

struct PlanOptions {
  /// Files that may be neither an input nor an output of any job (the --log-json stream).
  std::vector<std::string> protected_paths;
};

/// Expands batches (templates {stem}, {index}, {name} in output fields), builds every member's
/// job (make_job), checks every input (exists, regular, readable), that outputs are distinct
/// across all jobs, members and aggregates, and that no protected path is read or written.
/// Throws ConfigError listing every problem (with its label) when any is a configuration
/// problem, else IoError listing the unreadable inputs, else OutputProblem. Touches no output.
RunPlan plan_job_file(const JobFile& jf, const PlanOptions& options = {});

/// The provenance recorded in an output written by an engine: the HDF5 root attribute
/// "provenance", the FITS HISTORY cards of the first table HDU, or the "# provenance: " /
/// ECSV "provenance" meta line of a text file. Throws IoError naming the file when none is found.
Provenance read_provenance(const std::string& path);

/// Content hashes of inputs, computed once per run (inputs shared by every member, such as a
/// random catalogue, are hashed once).
class HashCache {
public:
  const std::string& hash(const std::string& path);

private:
  std::map<std::string, std::string> cache_;
};

/// "" when every output of `job` exists and records, in its provenance, the job's configuration
/// (config_json(), compared as JSON) and the current content hash of every input; else why not
/// ("output x.h5 does not exist", "the configuration differs", "input d.txt changed").
std::string stale_reason(const Job& job, HashCache& hashes);

/// What a front end is told while a plan runs. Calls come from the running thread (progress and
/// log are serialised by the JobContext).
class BatchObserver {
public:
  virtual ~BatchObserver() = default;
  virtual void member_started(const Batch&, const Member&) {}
  virtual void progress(const Batch&, const Member&, double /*done*/, double /*total*/, std::string_view /*stage*/) {}
  virtual void log(const Batch&, const Member&, LogLevel, std::string_view) {}
  /// `outcome.skipped` for an up-to-date member; `outcome.plan` set for a dry run.
  virtual void member_finished(const Batch&, const Member&, const Outcome&, double /*seconds*/) {}
  virtual void member_failed(const Batch&, const Member&, std::exception_ptr) {}
  virtual void aggregate_started(const AggregateStep&) {}
  virtual void aggregate_finished(const AggregateStep&, const Outcome&, double /*seconds*/) {}
  virtual void aggregate_failed(const AggregateStep&, std::exception_ptr) {}
};

struct BatchSummary {
  std::size_t members = 0, written = 0, skipped = 0, planned = 0, aggregates = 0;
};

struct BatchRunOptions {
  bool dry_run = false;   ///< every member's PlanReport; nothing written (aggregates: planned)
  bool resume = true;     ///< false: recompute members even when up to date
  int threads = 0;        ///< JobContext::threads
};

/// One member: skipped with an "up to date" outcome when resume is on and stale_reason() is empty
/// (not for a dry run, which plans it and says whether a run would skip it), else run with a
/// JobContext whose progress and log go to `observer`. Engine errors propagate; the caller reports
/// member_started/finished/failed. run_plan and the MPI distribution layer share it.
std::unique_ptr<Outcome> run_member(const Batch& b, const Member& m, const CancelToken& cancel,
                                    const BatchRunOptions& options, BatchObserver& observer, HashCache& hashes);

/// Runs every member in order (skipping the up-to-date ones), then every aggregate. The first
/// failure is reported to the observer and rethrown: members already written stay (they are
/// complete and a re-run skips them). Throws Cancelled when `cancel` is set between members.
BatchSummary run_plan(const RunPlan& plan, const CancelToken& cancel, const BatchRunOptions& options,
                      BatchObserver& observer);

}  // namespace almagest::jobs
