#pragma once
// JobWindow: the job plumbing the tool windows share (Sky map, Moving objects). One job at a time
// on the window's own one-thread pool through JobRunner; a status-bar progress bar and Cancel
// button (JobProgressBar); the job's log messages go to the window's LogPanel; errors go to the
// log, the status bar and (unless setInteractiveErrors(false)) a non-blocking message box.
// Destroying the window cancels the running job and waits for its worker.
//
// A derived window builds its UI, calls setJobLog() and addJobStatus() once, starts jobs with
// launchJob(), and in its finished callback updates its views, then calls endJob(state) (progress
// text and actions) before emitting its own result signals and finally jobFinished(state).
#include <QMainWindow>
#include <QPointer>
#include <QThreadPool>

#include <functional>

#include "jobs/JobProgressBar.hpp"
#include "jobs/JobRunner.hpp"

class QPushButton;

namespace almagest::ui {

class LogPanel;

class JobWindow : public QMainWindow {
  Q_OBJECT
public:
  explicit JobWindow(QWidget* parent = nullptr);
  ~JobWindow() override;

  /// Cancels the running job, if any (returns at once; the outcome arrives via jobFinished).
  void cancelJob();
  bool isBusy() const noexcept;
  /// When false, errors go to the log only (no message boxes): for tests and scripted runs.
  void setInteractiveErrors(bool on) { interactiveErrors_ = on; }
  /// The running (or last finished) job.
  JobRunner* currentJob() const noexcept { return runner_; }
  QProgressBar* progressBar() const noexcept { return progress_; }
  QPushButton* cancelButton() const noexcept { return cancelButton_; }

signals:
  void jobStarted(almagest::ui::JobRunner* job);
  void jobProgress(int percent, const QString& stage);
  void jobFinished(almagest::ui::JobRunner::State state);

protected:
  void setJobLog(LogPanel* log) { jobLog_ = log; }
  /// Cancels the running job and waits for its worker (derived destructors call it first, while
  /// their views still exist; the base destructor calls it again, then it does nothing).
  void stopJob();
  /// Adds the progress bar and the Cancel button to the status bar (permanent widgets).
  void addJobStatus();
  /// Starts `job` (the previous runner must be finished); `finished` runs on the GUI thread.
  /// The job goes to the application's JobQueue on `device` ("cpu", or "cuda:N" from
  /// JobQueue::deviceFor(backend): one job per GPU at a time).
  void launchJob(const QString& name, JobRunner::Job job, std::function<void(JobRunner*)> finished,
                 const QString& device = QStringLiteral("cpu"));
  /// Progress text of the finished job, then updateActions().
  void endJob(JobRunner::State state);
  void reportError(const QString& title, const QString& message);
  /// Enables the window's actions for the current state (busy, data present).
  virtual void updateActions() = 0;

  QPointer<JobRunner> runner_;
  bool interactiveErrors_ = true;
  JobProgressBar* progress_ = nullptr;
  QPushButton* cancelButton_ = nullptr;

private:
  QThreadPool pool_;
  LogPanel* jobLog_ = nullptr;
};

}  // namespace almagest::ui
