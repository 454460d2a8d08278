#include "jobs/JobProgressBar.hpp"

#include <QPushButton>

#include <exception>
#include <new>

#include "almagest/core/error.hpp"

namespace almagest::ui {

JobProgressBar::JobProgressBar(QWidget* parent) : QProgressBar(parent) {
  setRange(0, 100);
  setValue(0);
  setMaximumWidth(260);
  setTextVisible(true);
  setToolTip(tr("Progress of the running job"));
}

void JobProgressBar::queued(const QString& jobName) {
  setValue(0);
  setFormat(tr("%1: queued").arg(jobName));
}

void JobProgressBar::update(int percent, const QString& stage) {
  setValue(percent);
  setFormat(stage.isEmpty() ? QStringLiteral("%p%") : stage + QStringLiteral(" %p%"));
}

void JobProgressBar::cancelling() { setFormat(tr("cancelling…")); }

void JobProgressBar::finished(JobRunner::State state) {
  const bool done = state == JobRunner::State::Completed;
  setFormat(done ? tr("done") : state == JobRunner::State::Cancelled ? tr("cancelled") : tr("failed"));
  setValue(done ? 100 : 0);
}

QPushButton* makeCancelButton(QWidget* parent) {
  auto* b = new QPushButton(QObject::tr("Cancel"), parent);
  b->setToolTip(QObject::tr("Cancel the running job (Esc)"));
  b->setEnabled(false);
  return b;
}

void rethrowNamingFile(const std::string& path) {
  try {
    throw;
  } catch (const almagest::Cancelled&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const almagest::Error& e) {
    if (std::string(e.what()).find(path) != std::string::npos) throw;
    throw almagest::IoError(path, "", e.what());
  } catch (const std::exception& e) {
    throw almagest::IoError(path, "", e.what());
  }
}

}  // namespace almagest::ui
