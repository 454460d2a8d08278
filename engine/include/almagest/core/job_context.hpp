#pragma once
// JobContext: what a running job needs from its caller. A cancel token (checked between chunks,
// hub batches and kernel launches), a thread-safe progress sink (done/total plus stage text) and a
// log sink. The engine never prints, never exits and installs no signal handlers: everything a
// user sees goes through these sinks.
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "almagest/core/error.hpp"

namespace almagest {

/// Shared cancel flag. Copies share the flag; cancel() may be called from any thread.
class CancelToken {
public:
  CancelToken() : flag_(std::make_shared<std::atomic<bool>>(false)) {}
  void cancel() const noexcept { flag_->store(true, std::memory_order_relaxed); }
  bool cancelled() const noexcept { return flag_->load(std::memory_order_relaxed); }

private:
  std::shared_ptr<std::atomic<bool>> flag_;
};

enum class LogLevel { Debug, Info, Warning, Error };

/// Progress callback: fraction = done/total of the current stage (total > 0).
using ProgressFn = std::function<void(double done, double total, std::string_view stage)>;
using LogFn = std::function<void(LogLevel, std::string_view message)>;

class JobContext {
public:
  JobContext() = default;
  JobContext(CancelToken token, ProgressFn progress = {}, LogFn log = {})
      : token_(std::move(token)), progress_(std::move(progress)), log_(std::move(log)) {}

  const CancelToken& token() const noexcept { return token_; }
  bool cancelled() const noexcept { return token_.cancelled(); }
  /// Throws almagest::Cancelled if the token was cancelled.
  void check_cancel() const {
    if (token_.cancelled()) throw Cancelled();
  }

  /// Thread-safe: calls from worker threads are serialised.
  void progress(double done, double total, std::string_view stage) const {
    if (!progress_) return;
    std::lock_guard<std::mutex> lock(*mutex_);
    progress_(done, total, stage);
  }
  void log(LogLevel level, std::string_view message) const {
    if (!log_) return;
    std::lock_guard<std::mutex> lock(*mutex_);
    log_(level, message);
  }
  void info(std::string_view message) const { log(LogLevel::Info, message); }
  void warn(std::string_view message) const { log(LogLevel::Warning, message); }

  /// Number of worker threads the job may use (0 = all hardware threads).
  int threads = 0;

private:
  CancelToken token_;
  ProgressFn progress_;
  LogFn log_;
  std::shared_ptr<std::mutex> mutex_ = std::make_shared<std::mutex>();
};

/// Resolves a thread request (0 = hardware concurrency) to a positive count.
int resolve_threads(int requested);

}  // namespace almagest
