#pragma once
// JobRunner: runs one engine job off the GUI thread and reports back to the GUI thread.
//
//   auto* runner = new JobRunner(QStringLiteral("2pCF"), [spec](const almagest::JobContext& ctx) {
//     return std::any(run_npcf(spec, ctx));          // any engine call taking a JobContext
//   }, parent);
//   connect(runner, &JobRunner::finished, ...);
//   runner->start();                                 // Queued, then Running on a pool thread
//   runner->cancel();                                // only sets the cancel token
//
// State machine: Idle -> Queued -> Running -> {Completed, Cancelled, Failed}. The state is an
// atomic written by the worker; state() may be read from any thread. Terminal states are final.
//  - Completed: the job returned; result() holds its value.
//  - Cancelled: the token was set (before or while running). An outcome, not an error: there is
//    no result, and a job that writes files through AtomicFile leaves none.
//  - Failed: the job threw. almagest::Error messages are passed on verbatim; other exceptions
//    are reported as internal errors. errorMessage() holds the text.
//
// Progress: the job reports overall progress through ctx.progress(done, total, stage) (use
// stageContext() to map a sub-step onto a part of the range). The runner converts it to whole
// percent, keeps it monotone, and posts it to the GUI thread as a queued signal at most every
// 100 ms (about 10 Hz), and at once when the stage text changes (stages are few); a Completed job
// always ends with 100.
// Log messages (ctx.log) are forwarded as queued signals too.
//
// Lifetime: destroying a running JobRunner cancels the job and waits for the worker to return.
#include <QFuture>
#include <QObject>
#include <QString>

#include <any>
#include <atomic>
#include <functional>
#include <memory>

#include "almagest/core/job_context.hpp"

class QThreadPool;

namespace almagest::ui {

class JobRunner : public QObject {
  Q_OBJECT
public:
  enum class State { Idle, Queued, Running, Completed, Cancelled, Failed };
  Q_ENUM(State)

  using Job = std::function<std::any(const almagest::JobContext&)>;

  JobRunner(QString name, Job job, QObject* parent = nullptr);
  ~JobRunner() override;
  JobRunner(const JobRunner&) = delete;
  JobRunner& operator=(const JobRunner&) = delete;

  /// Queues the job on `pool` (QThreadPool::globalInstance() when null; a pool with one thread
  /// runs jobs one at a time). Only the first call has an effect.
  void start(QThreadPool* pool = nullptr);
  /// Sets the cancel token. Thread-safe, returns at once; the outcome arrives via finished().
  void cancel();

  State state() const noexcept { return state_.load(std::memory_order_acquire); }
  bool isFinished() const noexcept;
  const QString& name() const noexcept { return name_; }
  /// Number of worker threads the job may use (JobContext::threads; 0 = all). Set before start().
  void setThreads(int threads) { threads_ = threads; }

  /// Last percent posted to the GUI thread (0..100).
  int percent() const noexcept { return percent_; }
  const QString& stage() const noexcept { return stage_; }
  /// The job's return value once state() == Completed; empty otherwise.
  const std::any& result() const;
  template <class T>
  const T* resultAs() const {
    return std::any_cast<T>(&result());
  }
  /// Failure text once state() == Failed.
  QString errorMessage() const;
  /// Wall-clock seconds between Running and the terminal state (0 before).
  double elapsedSeconds() const;

  /// Blocks until the worker has returned (without processing events). For tests and shutdown.
  void waitForWorker();

  /// A context for a sub-step: its progress(done, total) maps onto [lo, hi] of `parent`'s range
  /// (fractions 0..1); it shares the cancel token, log sink and thread count. `parent` must
  /// outlive the returned context.
  static almagest::JobContext stageContext(const almagest::JobContext& parent, double lo, double hi);

  static QString stateName(State s);
  /// Completed, Cancelled or Failed.
  static bool isFinishedState(State s) noexcept {
    return s == State::Completed || s == State::Cancelled || s == State::Failed;
  }

signals:
  void stateChanged(almagest::ui::JobRunner::State state);
  /// Percent 0..100, monotone; stage text from the engine.
  void progressChanged(int percent, const QString& stage);
  /// level: 0 debug, 1 info, 2 warning, 3 error (almagest::LogLevel).
  void logMessage(int level, const QString& message);
  /// Emitted once, on the GUI thread, after the terminal state is set.
  void finished(almagest::ui::JobRunner::State state);

private:
  struct Shared;
  void onProgressPosted(int percent, const QString& stage);
  void onFinishedPosted();

  QString name_;
  Job job_;
  int threads_ = 0;
  std::atomic<State> state_{State::Idle};
  std::shared_ptr<Shared> shared_;
  QFuture<void> future_;
  bool started_ = false;
  int percent_ = 0;
  QString stage_;
};

}  // namespace almagest::ui
