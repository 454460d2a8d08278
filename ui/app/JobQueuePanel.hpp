#pragma once
// JobQueuePanel: the job panel every window shares (a dock of the main window, View > Jobs):
// one row per job of the JobQueue -- name, window, device, state, stage, percent, elapsed and
// remaining time (elapsed x (100 - p) / p, shown once p >= 1), and a Cancel button per running
// or queued job. A failed job's row shows the engine's message (tooltip and state text).
// Refreshed on every queue signal and twice a second while jobs are active (elapsed times).
#include <QWidget>

class QPushButton;
class QTableWidget;
class QTimer;

namespace almagest::ui {

class JobQueue;

class JobQueuePanel : public QWidget {
  Q_OBJECT
public:
  explicit JobQueuePanel(JobQueue& queue, QWidget* parent = nullptr);

  QTableWidget* table() const noexcept { return table_; }
  /// "12.3 s", "4 min 05 s", "1 h 02 min".
  static QString formatDuration(double seconds);
  /// Remaining seconds from elapsed time and percent (< 0: unknown).
  static double remainingSeconds(double elapsed, int percent);

private:
  void rebuild();
  void refreshTimes();

  JobQueue& queue_;
  QTableWidget* table_ = nullptr;
  QPushButton* clear_ = nullptr;
  QTimer* timer_ = nullptr;
};

}  // namespace almagest::ui
