#include "jobs/JobRunner.hpp"

#include <QMetaObject>
#include <QThreadPool>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <new>
#include <string>

#include "almagest/core/error.hpp"

namespace almagest::ui {

namespace {
using Clock = std::chrono::steady_clock;
constexpr auto kMinProgressInterval = std::chrono::milliseconds(100);  // ~10 Hz
}  // namespace

// State shared between the GUI-thread object and the worker. The worker writes the outcome
// under `mutex` before it sets the terminal state, so result()/errorMessage() are consistent
// with state() from any thread.
struct JobRunner::Shared {
  almagest::CancelToken token;
  mutable std::mutex mutex;
  std::any result;
  QString error;
  Clock::time_point started{}, ended{};
  bool hasStarted = false, hasEnded = false;

  // Progress throttling; touched only inside JobContext::progress (serialised by its mutex).
  int lastSeenPercent = 0;
  int lastPostedPercent = -1;
  std::string lastPostedStage;
  std::string lastSeenStage;
  Clock::time_point lastPost{};
};

JobRunner::JobRunner(QString name, Job job, QObject* parent)
    : QObject(parent), name_(std::move(name)), job_(std::move(job)),
      shared_(std::make_shared<Shared>()) {}

JobRunner::~JobRunner() {
  if (started_) {
    shared_->token.cancel();
    future_.waitForFinished();
  }
}

bool JobRunner::isFinished() const noexcept {
  const State s = state();
  return s == State::Completed || s == State::Cancelled || s == State::Failed;
}

void JobRunner::start(QThreadPool* pool) {
  if (started_) return;
  started_ = true;
  state_.store(State::Queued, std::memory_order_release);
  emit stateChanged(State::Queued);
  if (!pool) pool = QThreadPool::globalInstance();

  std::shared_ptr<Shared> sh = shared_;
  const int threads = threads_;
  future_ = QtConcurrent::run(pool, [this, sh, threads] {
    auto finish = [this, sh](State s) {
      {
        std::lock_guard<std::mutex> lock(sh->mutex);
        sh->ended = Clock::now();
        sh->hasEnded = true;
      }
      state_.store(s, std::memory_order_release);
      QMetaObject::invokeMethod(this, [this] { onFinishedPosted(); }, Qt::QueuedConnection);
    };
    if (sh->token.cancelled()) {  // cancelled while queued: never runs
      finish(State::Cancelled);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(sh->mutex);
      sh->started = Clock::now();
      sh->hasStarted = true;
    }
    state_.store(State::Running, std::memory_order_release);
    QMetaObject::invokeMethod(this, [this] { emit stateChanged(State::Running); },
                              Qt::QueuedConnection);

    almagest::ProgressFn progress = [this, sh](double done, double total, std::string_view stage) {
      double f = total > 0 ? done / total : 0.0;
      if (!std::isfinite(f)) f = 0.0;
      f = std::clamp(f, 0.0, 1.0);
      // 100 is reserved for completion; the value never goes down.
      const int pct = std::max(sh->lastSeenPercent, std::min(99, static_cast<int>(f * 100.0)));
      sh->lastSeenPercent = pct;
      if (!stage.empty()) sh->lastSeenStage.assign(stage);
      const auto now = Clock::now();
      // A new stage is shown at once (stages are few); percent changes at most every 100 ms.
      const bool newStage = sh->lastSeenStage != sh->lastPostedStage;
      const bool changed = pct != sh->lastPostedPercent || newStage;
      if (!changed || (!newStage && now - sh->lastPost < kMinProgressInterval)) return;
      sh->lastPost = now;
      sh->lastPostedPercent = pct;
      sh->lastPostedStage = sh->lastSeenStage;
      const QString text = QString::fromStdString(sh->lastSeenStage);
      QMetaObject::invokeMethod(this, [this, pct, text] { onProgressPosted(pct, text); },
                                Qt::QueuedConnection);
    };
    almagest::LogFn log = [this](almagest::LogLevel level, std::string_view message) {
      const QString text = QString::fromUtf8(message.data(), static_cast<qsizetype>(message.size()));
      const int lvl = static_cast<int>(level);
      QMetaObject::invokeMethod(this, [this, lvl, text] { emit logMessage(lvl, text); },
                                Qt::QueuedConnection);
    };
    almagest::JobContext ctx(sh->token, std::move(progress), std::move(log));
    ctx.threads = threads;

    try {
      std::any value = job_(ctx);
      if (sh->token.cancelled()) {  // finished, but the user asked to stop: no result
        finish(State::Cancelled);
        return;
      }
      {
        std::lock_guard<std::mutex> lock(sh->mutex);
        sh->result = std::move(value);
      }
      finish(State::Completed);
    } catch (const almagest::Cancelled&) {
      finish(State::Cancelled);
    } catch (const almagest::Error& e) {
      {
        std::lock_guard<std::mutex> lock(sh->mutex);
        sh->error = QString::fromUtf8(e.what());
      }
      finish(State::Failed);
    } catch (const std::bad_alloc&) {
      {
        std::lock_guard<std::mutex> lock(sh->mutex);
        sh->error = tr("Out of memory.");
      }
      finish(State::Failed);
    } catch (const std::exception& e) {
      {
        std::lock_guard<std::mutex> lock(sh->mutex);
        sh->error = tr("Internal error: %1").arg(QString::fromUtf8(e.what()));
      }
      finish(State::Failed);
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(sh->mutex);
        sh->error = tr("Internal error: unknown exception.");
      }
      finish(State::Failed);
    }
  });
}

void JobRunner::cancel() { shared_->token.cancel(); }

const std::any& JobRunner::result() const {
  static const std::any empty;
  if (state() != State::Completed) return empty;
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return shared_->result;  // written once, before the Completed state was published
}

QString JobRunner::errorMessage() const {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return shared_->error;
}

double JobRunner::elapsedSeconds() const {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  if (!shared_->hasStarted) return 0.0;
  const auto end = shared_->hasEnded ? shared_->ended : Clock::now();
  return std::chrono::duration<double>(end - shared_->started).count();
}

void JobRunner::waitForWorker() {
  if (started_) future_.waitForFinished();
}

void JobRunner::onProgressPosted(int percent, const QString& stage) {
  if (isFinished()) return;  // a late tick must not follow the final value
  if (percent < percent_) return;
  percent_ = percent;
  if (!stage.isEmpty()) stage_ = stage;
  emit progressChanged(percent_, stage_);
}

void JobRunner::onFinishedPosted() {
  const State s = state();
  if (s == State::Completed) {
    percent_ = 100;
    stage_ = tr("done");
    emit progressChanged(100, stage_);
  }
  emit stateChanged(s);
  emit finished(s);
}

almagest::JobContext JobRunner::stageContext(const almagest::JobContext& parent, double lo,
                                             double hi) {
  almagest::ProgressFn progress = [&parent, lo, hi](double done, double total,
                                                    std::string_view stage) {
    double f = total > 0 ? done / total : 0.0;
    if (!std::isfinite(f)) f = 0.0;
    f = std::clamp(f, 0.0, 1.0);
    parent.progress(lo + (hi - lo) * f, 1.0, stage);
  };
  almagest::LogFn log = [&parent](almagest::LogLevel level, std::string_view message) {
    parent.log(level, message);
  };
  almagest::JobContext sub(parent.token(), std::move(progress), std::move(log));
  sub.threads = parent.threads;
  return sub;
}

QString JobRunner::stateName(State s) {
  switch (s) {
    case State::Idle: return tr("idle");
    case State::Queued: return tr("queued");
    case State::Running: return tr("running");
    case State::Completed: return tr("completed");
    case State::Cancelled: return tr("cancelled");
    case State::Failed: return tr("failed");
  }
  return {};
}

}  // namespace almagest::ui
