#pragma once
// Job files for `almagest-cli run`: TOML (.toml) or JSON (.json), keys as in the npcf option
// schema (almagest/npcf/job.hpp; '_' may be written for '-'). Either one job at the top level, or
// several jobs as [[job]] tables (JSON: "job": [{...}, ...], or a top-level array); with [[job]]
// tables the other top-level keys are defaults shared by every job. Relative paths inside a job
// are resolved against the job file's directory.
#include <string>
#include <vector>

#include "almagest/npcf/job.hpp"

namespace almagest::cli {

struct JobFileEntry {
  npcf::JobValues values;
  std::string label;  ///< message prefix, e.g. "jobs.toml: job 2: " or "jobs.toml: "
};

struct JobFile {
  std::string path;
  std::string base_dir;  ///< directory of the job file (absolute)
  std::vector<JobFileEntry> jobs;
};

/// Reads a job file. Throws IoError (missing or unreadable file) or ConfigError (syntax error
/// with line and column, unknown extension, wrong structure, value of an unsupported type).
JobFile read_job_file(const std::string& path);

/// Builds and checks every job of a file before the first runs: each job's values
/// (npcf::make_npcf_job), each input catalogue (exists, is a regular file, is readable), and
/// that no two jobs (or statistics) write the same output file (paths compared absolute and
/// normalised, through symbolic links, and by file identity where the file exists). Throws
/// ConfigError listing every problem, each with its job label; IoError when the only problems
/// are inputs that cannot be read.
std::vector<npcf::NpcfJob> validate_jobs(const JobFile& jf);

}  // namespace almagest::cli
