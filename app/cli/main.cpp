// almagest-cli: the headless front end. Parses the command line, dispatches to a subcommand and
// maps every failure to one line on stderr and a documented exit code (docs/cli.md).
#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/core/provenance.hpp"
#include "options.hpp"
#include "run_command.hpp"
#include "sht_command.hpp"
#include "stack_command.hpp"
#if ALMAGEST_HAVE_MPI
#include "almagest/dist/mpi.hpp"
#endif

namespace almagest::cli {

namespace {

CancelToken g_interrupt;         // cancelled by SIGINT, SIGTERM or SIGHUP; read by every job
std::atomic<int> g_signal{0};    // the first of those signals received (0: none)
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_cancel_signal(int sig) {
  // Async-signal-safe only: lock-free atomics, unlink/rmdir through remove_temp_files_now,
  // signal/raise. The first signal cancels the job, which unwinds and removes its temporaries;
  // a second one removes every live temporary at once and ends the process by that signal.
  int expected = 0;
  if (g_signal.compare_exchange_strong(expected, sig)) {
    g_interrupt.cancel();
    return;
  }
  almagest::remove_temp_files_now();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

[[noreturn]] void on_terminate() {
  almagest::remove_temp_files_now();
  std::abort();
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace

const CancelToken& interrupt_token() { return g_interrupt; }

int cancelled_exit_code() {
  const int sig = g_signal.load();
  return sig > 0 ? 128 + sig : kExitCancelled;
}

void install_interrupt_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_cancel_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // reads and writes resume; the job sees the token at its next check
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  std::set_terminate(on_terminate);
}

std::string exit_code_help() {
  return "Exit codes:\n"
         "  0    success\n"
         "  1    internal error (a bug: please report it)\n"
         "  2    usage or configuration error (bad option, value out of range, job file)\n"
         "  3    input I/O error (missing file or column, NaN/inf values, empty catalogue)\n"
         "  4    backend unavailable (e.g. --backend cuda without a usable GPU)\n"
         "  5    output I/O error (output directory missing or not writable, disk full)\n"
         "  130  cancelled with Ctrl-C (SIGINT); no output is left behind\n"
         "  143  cancelled by SIGTERM (what batch schedulers send); 129 by SIGHUP\n";
}

std::string wrap_text(const std::string& text, std::size_t width) {
  std::string out, line, word;
  auto flush_word = [&] {
    if (word.empty()) return;
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    word.clear();
  };
  for (char c : text) {
    if (c == ' ') flush_word();
    else if (c == '\n') {
      flush_word();
      out += line + "\n";
      line.clear();
    } else {
      word += c;
    }
  }
  flush_word();
  return out + line;
}

int exit_code_of(std::exception_ptr e, std::string& message) {
  try {
    std::rethrow_exception(e);
  } catch (const CliFailure& x) {
    message = x.what();
    return x.code();
  } catch (const Cancelled&) {
    const int code = cancelled_exit_code();
    message = std::string("cancelled") +
              (code == 143 ? " (SIGTERM)" : code == 129 ? " (SIGHUP)" : "") +
              "; no output was written";
    return code;
  } catch (const ConfigError& x) {
    message = x.what();
    return kExitUsage;
  } catch (const IoError& x) {
    message = x.what();
    return kExitInputIo;
  } catch (const BackendUnavailable& x) {
    message = std::string("backend unavailable: ") + x.what();
    return kExitBackend;
  } catch (const CudaError& x) {
    message = std::string("CUDA error: ") + x.what();
    return kExitBackend;
  } catch (const Error& x) {
    message = x.what();
    return kExitInternal;
  } catch (const std::bad_alloc&) {
    message = "out of memory";
    return kExitInternal;
  } catch (const std::exception& x) {
    message = std::string("internal error: ") + x.what();
    return kExitInternal;
  } catch (...) {
    message = "internal error: unknown exception";
    return kExitInternal;
  }
}

void print_error(const std::string& context, const std::string& message) {
  std::string line = "almagest-cli: error: " + one_line(context + message) + "\n";
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace almagest::cli

int main(int argc, char** argv) {
  using namespace almagest::cli;
#if ALMAGEST_HAVE_MPI
  // MPI only when mpirun started this process (docs/mpi.md); one process without it as always.
  almagest::dist::Session mpi(&argc, &argv);
  const bool mpi_many = almagest::dist::size() > 1;
  const bool mpi_quiet = almagest::dist::rank() != 0;  // rank 0 prints the run's errors
#else
  const bool mpi_many = false, mpi_quiet = false;
#endif
  CLI::App app{"Almagest " + almagest::version() +
                   " headless command line: N-point correlation functions of galaxy catalogues.",
               "almagest-cli"};
  auto fmt = std::make_shared<CLI::Formatter>();
  fmt->column_width(36);
  app.formatter(fmt);
  app.set_version_flag("--version", "almagest-cli " + almagest::version());
  app.require_subcommand(1);
  app.footer(exit_code_help() + "\nRun `almagest-cli <command> --help` for the options of a command.\n");

  std::vector<Command> commands{add_npcf_command(app), add_run_command(app),
                                add_info_command(app), add_demo_command(app), add_selftest_command(app),
                                add_sht_command(app), add_stack_command(app),
                                add_schema_command(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::string hint;
    for (const auto& c : commands)
      if (c.app->parsed()) hint = " (see almagest-cli " + c.app->get_name() + " --help)";
    if (hint.empty()) hint = " (see almagest-cli --help)";
    if (!mpi_quiet) print_error("", e.what() + hint);
    return kExitUsage;
  }

  install_interrupt_handler();
  for (const auto& c : commands) {
    if (!c.app->parsed()) continue;
    if (mpi_many && c.app->get_name() != "run") {
      if (!mpi_quiet)
        print_error("", "only `almagest-cli run JOBFILE` runs on several MPI ranks (docs/mpi.md); run `" +
                            c.app->get_name() + "` without mpirun");
      return kExitUsage;
    }
    try {
      return c.run();
    } catch (...) {
      std::string message;
      int code = exit_code_of(std::current_exception(), message);
      if (!mpi_quiet) print_error("", message);
      return code;
    }
  }
  return kExitUsage;
}
