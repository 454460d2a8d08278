#include "progress_bar.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fmt/format.h>

namespace almagest::cli {

namespace {

int terminal_width() {
  winsize ws{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40) return ws.ws_col;
  return 80;
}

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "--:--";
  auto t = static_cast<long long>(std::llround(s));
  if (t >= 3600) return fmt::format("{}:{:02}:{:02}", t / 3600, (t / 60) % 60, t % 60);
  return fmt::format("{}:{:02}", t / 60, t % 60);
}

}  // namespace

ProgressBar::ProgressBar(bool enabled) : enabled_(enabled) {}

ProgressBar::~ProgressBar() { finish(); }

bool ProgressBar::stderr_is_tty() { return ::isatty(STDERR_FILENO) == 1; }

void ProgressBar::update(double done, double total, std::string_view stage) {
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  bool new_stage = stage != stage_;
  if (new_stage) {
    stage_ = std::string(stage);
    stage_start_ = now;
  }
  double fraction = total > 0 ? std::clamp(done / total, 0.0, 1.0) : 0.0;
  // At most 10 redraws a second, but always show a new stage and its completion.
  if (!new_stage && fraction < 1.0 && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  draw(fraction);
}

void ProgressBar::draw(double fraction) {
  double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - stage_start_).count();
  std::string eta = fraction >= 1.0 ? "done"
                    : (fraction > 0.005 && elapsed > 0.3)
                        ? "ETA " + format_duration(elapsed * (1.0 - fraction) / fraction)
                        : "ETA --:--";
  const int width = terminal_width();
  std::string stage = stage_.size() > 28 ? stage_.substr(0, 27) + "~" : stage_;
  int bar = std::clamp(width - static_cast<int>(stage.size()) - 26, 10, 40);
  int filled = static_cast<int>(fraction * bar);
  std::string line = fmt::format("\r{} [{}{}] {:5.1f}% {}\x1b[K", stage, std::string(filled, '#'),
                                 std::string(bar - filled, '.'), 100.0 * fraction, eta);
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::message(std::string_view line) {
  if (drawn_) {
    std::fputs("\r\x1b[K", stderr);
    drawn_ = false;
  }
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (drawn_) {
    std::fputs("\r\x1b[K", stderr);
    std::fflush(stderr);
    drawn_ = false;
  }
}

ProgressFn ProgressBar::sink() {
  return [this](double done, double total, std::string_view stage) { update(done, total, stage); };
}

LogFn ProgressBar::log_sink(bool verbose, bool quiet) {
  return [this, verbose, quiet](LogLevel level, std::string_view text) {
    if (level == LogLevel::Error || (!quiet && level == LogLevel::Warning)) {
      message(fmt::format("almagest-cli: {}: {}", level == LogLevel::Error ? "error" : "warning", text));
    } else if (verbose && !quiet) {
      message(fmt::format("almagest-cli: {}", text));
    }
  };
}

}  // namespace almagest::cli
