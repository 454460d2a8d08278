#pragma once
// Terminal progress bar on stderr: stage text, bar, percent and an ETA for the current stage,
// redrawn at most 10 times a second. Disabled (silent) when stderr is not a TTY or with --quiet.
#include <chrono>
#include <string>
#include <string_view>

#include "almagest/core/job_context.hpp"

namespace almagest::cli {

class ProgressBar {
public:
  /// enabled = false: every call is a no-op except message(), which still prints.
  explicit ProgressBar(bool enabled);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  /// True when stderr is a terminal.
  static bool stderr_is_tty();

  /// done/total of `stage` (the JobContext progress sink; calls are serialised by JobContext).
  void update(double done, double total, std::string_view stage);
  /// Prints a line on stderr without garbling the bar (the bar is redrawn on the next update).
  void message(std::string_view line);
  /// Clears the bar line (call before printing anything else).
  void finish();

  /// A ProgressFn bound to this bar (the bar must outlive the job).
  ProgressFn sink();
  /// A LogFn printing warnings and errors (and info when verbose) through message().
  LogFn log_sink(bool verbose, bool quiet);

private:
  void draw(double fraction);
  bool enabled_;
  bool drawn_ = false;
  std::string stage_;
  std::chrono::steady_clock::time_point stage_start_, last_draw_;
};

}  // namespace almagest::cli
