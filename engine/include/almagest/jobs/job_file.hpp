#pragma once
// Job files (docs/jobs.md): TOML (.toml) or JSON (.json) files of jobs of any engine, batches of
// one job over many inputs or parameter values, and aggregation steps over a batch's outputs.
//
//   engine = "npcf"                 # top-level keys are shared by every [[job]] whose engine
//   randoms = "ran.txt"             # knows them
//   [[job]]
//   name = "mocks"                  # what [[aggregate]] refers to (default "job N")
//   stat = "3pcf"
//   output = "out/{stem}.h5"        # {stem}, {index}, {name} of the member
//   [job.batch]
//   data = "mocks/mock_*.txt"       # a glob or a list for one input field, or a parameter
//                                   # list (nbins = [8, 16]), or [[job.batch.member]] tables
//   [[aggregate]]
//   kind = "npcf-mean-cov"
//   batch = "mocks"
//   output = "cov.h5"
//
// Reading a file checks its syntax and structure only (two spellings of one key and JSON
// duplicate keys are errors); values are checked by the engines (jobs/batch.hpp plan_job_file).
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "almagest/core/schema.hpp"

namespace almagest::jobs {

/// The one axis a batch varies.
struct BatchAxis {
  /// The varied key ("data", "nbins"); empty for a list of member tables.
  std::string key;
  /// One value per member (a glob already expanded into sorted absolute paths).
  std::vector<schema::Value> values;
  /// Member tables ([[job.batch.member]]): values each member adds to or replaces in the job.
  std::vector<schema::Values> members;
  /// The `name` of each member table ("" where none was given).
  std::vector<std::string> member_names;
  /// The glob as written, when `values` came from one.
  std::string pattern;
  std::size_t size() const noexcept { return key.empty() ? members.size() : values.size(); }
};

struct JobEntry {
  std::string engine;             ///< "npcf" (default), "sht", "stack"
  std::string name;               ///< the job's name (default "job N")
  std::string label;              ///< message prefix: "jobs.toml: job 2: " or "jobs.toml: "
  schema::Values values;          ///< the job's own keys and the shared top-level keys
  std::optional<BatchAxis> batch; ///< set when the job is a batch
};

struct AggregateEntry {
  std::string label;              ///< "jobs.toml: aggregate 1: "
  schema::Values values;          ///< keys of aggregate_schema() (jobs/aggregate.hpp)
};

struct JobFile {
  std::string path;
  std::string base_dir;           ///< directory of the job file (absolute)
  std::vector<JobEntry> jobs;
  std::vector<AggregateEntry> aggregates;
  /// Top-level `devices = [0, 1, "cpu"]`: under mpirun rank r takes entry r modulo their count
  /// (an index into the visible GPUs, or "cpu"); empty: its local rank modulo the visible GPUs.
  /// `almagest-cli run --devices` replaces it (docs/mpi.md, "Devices").
  std::vector<std::string> devices;
};

/// Reads a job file. Throws IoError (missing or unreadable file) or ConfigError (syntax error
/// with line and column, unknown extension, wrong structure, value of an unsupported type, a key
/// written twice, a glob that matches nothing, a batch with more than one axis).
JobFile read_job_file(const std::string& path);

/// Key as stored: '_' written as '-' ("log_bins" -> "log-bins").
std::string normalise_key(std::string key);

}  // namespace almagest::jobs
