#include "jobs/JobWindow.hpp"

#include <QMessageBox>
#include <QPushButton>
#include <QStatusBar>

#include "app/JobQueue.hpp"
#include "panels/LogPanel.hpp"

namespace almagest::ui {

JobWindow::JobWindow(QWidget* parent) : QMainWindow(parent) {
  pool_.setMaxThreadCount(1);  // one job at a time
  progress_ = new JobProgressBar(this);
  cancelButton_ = makeCancelButton(this);
  connect(cancelButton_, &QPushButton::clicked, this, &JobWindow::cancelJob);
}

JobWindow::~JobWindow() { stopJob(); }

void JobWindow::stopJob() {
  if (runner_) {
    runner_->cancel();
    delete runner_.data();  // waits for the worker
  }
  pool_.waitForDone();
}

void JobWindow::addJobStatus() {
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancelButton_);
}

bool JobWindow::isBusy() const noexcept { return runner_ && !runner_->isFinished(); }

void JobWindow::cancelJob() {
  if (isBusy()) {
    runner_->cancel();
    progress_->cancelling();
  }
}

void JobWindow::launchJob(const QString& name, JobRunner::Job job,
                          std::function<void(JobRunner*)> finished, const QString& device) {
  // The previous runner is finished; deleteLater because this may run inside its finished().
  if (runner_) runner_->deleteLater();
  auto* runner = new JobRunner(name, std::move(job), this);
  runner_ = runner;
  if (jobLog_) connect(runner, &JobRunner::logMessage, jobLog_, &LogPanel::append);
  connect(runner, &JobRunner::progressChanged, this, [this](int pct, const QString& stage) {
    progress_->update(pct, stage);
    emit jobProgress(pct, stage);
  });
  connect(runner, &JobRunner::finished, this,
          [runner, finished = std::move(finished)] { finished(runner); });
  progress_->queued(name);
  JobQueue::instance().submit(runner, device, this);  // the application's one job queue
  updateActions();
  emit jobStarted(runner);
}

void JobWindow::endJob(JobRunner::State state) {
  progress_->finished(state);
  updateActions();
}

void JobWindow::reportError(const QString& title, const QString& message) {
  if (jobLog_) jobLog_->error(message);
  statusBar()->showMessage(message, 10000);
  if (!interactiveErrors_) return;
  auto* box = new QMessageBox(QMessageBox::Warning, title, message, QMessageBox::Ok, this);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();  // window-modal, does not block the event loop
}

}  // namespace almagest::ui
