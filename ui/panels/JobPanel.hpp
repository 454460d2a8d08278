#pragma once
// JobPanel: inputs and controls of an N-point job: data and random catalogue pickers, statistic,
// radial binning, threads, Run and Cancel, a progress bar with the stage text. It only edits and
// reports; MainWindow loads files and runs jobs.
#include <QWidget>

#include "almagest/npcf/config.hpp"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace almagest::ui {

class JobPanel : public QWidget {
  Q_OBJECT
public:
  explicit JobPanel(QWidget* parent = nullptr);

  /// Statistic, binning and threads as set in the panel (other fields at their defaults).
  almagest::npcf::NpcfConfig config() const;
  void setConfig(const almagest::npcf::NpcfConfig& config);

  void setDataPath(const QString& path, const QString& info = {});
  void setRandomsPath(const QString& path, const QString& info = {});
  QString dataPath() const { return dataPath_; }
  QString randomsPath() const { return randomsPath_; }

  /// Enables Run (when not running) once the inputs are ready.
  void setReady(bool ready);
  /// Running: Run disabled, Cancel enabled, settings locked.
  void setRunning(bool running);
  void setProgress(int percent, const QString& stage);
  void setStatusText(const QString& text);

  QPushButton* runButton() const noexcept { return run_; }
  QPushButton* cancelButton() const noexcept { return cancel_; }
  QProgressBar* progressBar() const noexcept { return progress_; }
  QComboBox* statisticBox() const noexcept { return statistic_; }

signals:
  void dataFileChosen(const QString& path);
  void randomsFileChosen(const QString& path);
  void runRequested();
  void cancelRequested();

private:
  void browse(bool randoms);
  void updateRunEnabled();
  void statisticChanged();

  QString dataPath_, randomsPath_;
  QLineEdit* dataEdit_ = nullptr;
  QLineEdit* randomsEdit_ = nullptr;
  QLabel* dataInfo_ = nullptr;
  QLabel* randomsInfo_ = nullptr;
  QComboBox* statistic_ = nullptr;
  QDoubleSpinBox* rmin_ = nullptr;
  QDoubleSpinBox* rmax_ = nullptr;
  QSpinBox* nbins_ = nullptr;
  QCheckBox* log_ = nullptr;
  QSpinBox* threads_ = nullptr;
  QComboBox* backend_ = nullptr;
  QPushButton* run_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* stage_ = nullptr;
  QLabel* status_ = nullptr;
  QWidget* settings_ = nullptr;
  bool ready_ = false;
  bool running_ = false;
};

}  // namespace almagest::ui
