#pragma once
// JobProgressBar: the status-bar progress of a window's jobs, with the texts every window shows:
// "<name>: queued", "<stage> 42%", "cancelling…", then "done" (100%), "cancelled" or "failed".
// makeCancelButton(): the matching Cancel button (tooltip names Esc). rethrowNamingFile(): for
// jobs that read a file, makes sure the error that reaches the user names it.
#include <QProgressBar>
#include <QString>

#include <string>

#include "jobs/JobRunner.hpp"

class QPushButton;

namespace almagest::ui {

class JobProgressBar : public QProgressBar {
  Q_OBJECT
public:
  explicit JobProgressBar(QWidget* parent = nullptr);

  void queued(const QString& jobName);
  void update(int percent, const QString& stage);
  void cancelling();
  void finished(JobRunner::State state);
};

/// A "Cancel" push button for the status bar, disabled until a job runs.
QPushButton* makeCancelButton(QWidget* parent);

/// Call inside a catch block of a job that reads `path`: rethrows Cancelled and bad_alloc as they
/// are, engine errors that already name the file as they are, and any other error as an IoError
/// naming the file.
[[noreturn]] void rethrowNamingFile(const std::string& path);

}  // namespace almagest::ui
