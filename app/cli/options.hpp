#pragma once
// Shared declarations of the almagest-cli front end: exit codes, run options, the job runner and
// the subcommands. The CLI is the catch boundary: every engine exception becomes one line on
// stderr and a documented exit code (see docs/cli.md).
#include <cstdint>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "almagest/core/job_context.hpp"
#include "almagest/npcf/graph.hpp"
#include "almagest/npcf/job.hpp"
#include "almagest/npcf/result.hpp"

namespace CLI {
class App;
}

namespace almagest::cli {

/// Documented exit codes (docs/cli.md, --help footer).
enum ExitCode : int {
  kExitOk = 0,
  kExitInternal = 1,    ///< unexpected failure (a bug): please report it
  kExitUsage = 2,       ///< bad command line, job file or configuration value
  kExitInputIo = 3,     ///< an input file is missing, unreadable or has invalid content
  kExitBackend = 4,     ///< the requested backend cannot run here (or failed on the device)
  kExitOutputIo = 5,    ///< the output cannot be written (directory missing, disk full, ...)
  kExitCancelled = 130  ///< interrupted (Ctrl-C); no output was written (SIGTERM: 143, SIGHUP: 129)
};

/// The exit-code table as text (help footer).
std::string exit_code_help();

/// A failure whose exit code the CLI chooses itself (e.g. output errors). Message is one line.
class CliFailure : public std::runtime_error {
public:
  CliFailure(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
  int code() const noexcept { return code_; }

private:
  int code_;
};

/// Maps the exception being handled (call inside a catch block) to an exit code and a one-line
/// message.
int exit_code_of(std::exception_ptr e, std::string& message);
/// Prints "almagest-cli: error: <context><message>" (one line) to stderr.
void print_error(const std::string& context, const std::string& message);

struct RunOptions {
  bool dry_run = false;  ///< estimate the graph and stop; write nothing
  bool quiet = false;    ///< no progress bar, no summary (errors still go to stderr)
  bool verbose = false;  ///< also print the engine's info log lines
};

/// What a finished job produced (used by the summary and the demo report).
struct JobOutcome {
  std::vector<npcf::NpcfResult> results;   ///< one per statistic, in job order
  std::vector<std::string> written;        ///< output files, in job order
  npcf::GraphEstimate estimate;            ///< dry run only
  std::size_t ndata = 0, nrandom = 0;
  std::uint64_t graph_edges = 0;
  std::string backend;
  int threads = 0;
  double load_seconds = 0, graph_seconds = 0, write_seconds = 0;
  std::vector<double> statistic_seconds;   ///< per statistic
};

/// Runs one job: loads the catalogues, builds the plan, evaluates every statistic and writes the
/// outputs (all or nothing). Throws engine errors, almagest::Cancelled (SIGINT) or CliFailure
/// (output errors: kExitOutputIo). `label` prefixes summary lines ("" or "job 2: ").
JobOutcome run_npcf_job(const npcf::NpcfJob& job, const RunOptions& options,
                        const std::string& label = "");

/// The token SIGINT, SIGTERM and SIGHUP cancel (installed by main).
const CancelToken& interrupt_token();
void install_interrupt_handler();
/// Exit code of a cancelled run: 128 + the signal that cancelled it (130 for SIGINT, 143 for
/// SIGTERM, 129 for SIGHUP), 130 when cancelled otherwise.
int cancelled_exit_code();

/// Word-wraps `text` to `width` columns (help texts).
std::string wrap_text(const std::string& text, std::size_t width);

// Subcommands: each registers itself on the app and returns the action run after parsing.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};
Command add_npcf_command(CLI::App& parent);
Command add_run_command(CLI::App& parent);
Command add_info_command(CLI::App& parent);
Command add_demo_command(CLI::App& parent);
Command add_selftest_command(CLI::App& parent);

}  // namespace almagest::cli
