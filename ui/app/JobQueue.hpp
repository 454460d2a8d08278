#pragma once
// JobQueue: the one queue of jobs of every window and engine (docs/gui.md, "Jobs").
//
//   auto* runner = new JobRunner(tr("spectrum"), job, window);   // the window owns its runner
//   JobQueue::instance().submit(runner, JobQueue::deviceFor("cuda:0"), window);
//
// Scheduling: jobs of one GPU ("cuda:N") run one at a time, in the order they were submitted
// (one single-thread pool per device: two jobs sharing a device would only compete for its
// memory); CPU jobs ("cpu") run beside them and beside each other, as many as there are cores.
// Each job keeps its JobRunner states (Queued -> Running -> Completed / Cancelled / Failed), and
// the queue keeps a row per job (window, device, submit and start times, the failure text) for
// the job panel (JobQueuePanel). A finished job stays listed until clearFinished() (the last
// kMaxFinished are kept); a runner deleted by its window (closed) is dropped from the list.
#include <QObject>
#include <QPointer>
#include <QString>
#include <QThreadPool>

#include <map>
#include <memory>
#include <vector>

#include "jobs/JobRunner.hpp"

namespace almagest::ui {

class JobQueue : public QObject {
  Q_OBJECT
public:
  static constexpr int kMaxFinished = 50;

  struct Entry {
    int id = 0;
    QPointer<JobRunner> runner;
    QString name;                 ///< the runner's name (kept after the runner is gone)
    QString owner;                ///< the submitting window's title ("" when none)
    QPointer<QObject> ownerObject;
    QString device;               ///< "cpu" or "cuda:N"
    JobRunner::State state = JobRunner::State::Queued;
    int percent = 0;
    QString stage;
    QString error;                ///< the engine's message when Failed
    double elapsed = 0;           ///< seconds running (final once finished)
  };

  explicit JobQueue(QObject* parent = nullptr);
  ~JobQueue() override;

  /// The application's queue (created on first use, a child of the QCoreApplication).
  static JobQueue& instance();

  /// "cpu" for the CPU backend; "cuda:N" for cuda / cuda:N, and for auto when the CUDA module
  /// and a device are usable (the engine's Auto policy, almagest::resolve_backend). Unknown text
  /// gives "cpu" (the job itself reports the bad backend).
  static QString deviceFor(const QString& backend);

  /// Queues `runner` (not yet started) on `device`; returns the job's id. The queue does not own
  /// the runner. `owner`: the window the job belongs to (its title is shown).
  int submit(JobRunner* runner, const QString& device = QStringLiteral("cpu"), QObject* owner = nullptr);

  /// Snapshot of every listed job, oldest first (elapsed of running jobs is current).
  std::vector<Entry> entries() const;
  const Entry* entry(int id) const;
  /// Jobs queued or running (of one owner when given).
  int activeCount(const QObject* owner = nullptr) const;
  /// Sets the cancel token of job `id` (false when unknown or finished).
  bool cancel(int id);
  /// Cancels every queued and running job (of one owner when given).
  void cancelAll(const QObject* owner = nullptr);
  /// Drops the finished jobs from the list.
  void clearFinished();
  /// Blocks until every started job returned (tests, shutdown); does not process events.
  void waitForDone();

signals:
  void jobAdded(int id);
  /// State, percent or stage of job `id` changed.
  void jobChanged(int id);
  void jobFinished(int id, almagest::ui::JobRunner::State state);
  /// A job failed: its name, its window's title and the engine's message.
  void jobFailed(int id, const QString& name, const QString& owner, const QString& message);
  /// The last active job finished.
  void idle();
  void listChanged();

private:
  QThreadPool* poolFor(const QString& device);
  Entry* find(int id);
  void trimFinished();

  std::vector<Entry> entries_;
  int nextId_ = 1;
  QThreadPool cpuPool_;
  std::map<QString, std::unique_ptr<QThreadPool>> devicePools_;
};

}  // namespace almagest::ui
