#pragma once
// SearchPanel: the side panel of the "Moving objects" window. Edits a stackview::SearchSettings:
// Cartesian velocity grid (ranges and counts, or a symmetric grid from the reach in pixels over
// the stack's baseline), threshold (Bonferroni false alarms or a fixed Z), min obs, storage
// encoding, backend (CUDA entries disabled with the reason when no GPU is usable), clustering,
// best-Z map and stamp radius; Run and Cancel buttons.
#include <QWidget>

#include "stackview/StackJobs.hpp"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QRadioButton;
class QSpinBox;

namespace almagest::ui::stackview {

class SearchPanel : public QWidget {
  Q_OBJECT
public:
  explicit SearchPanel(QWidget* parent = nullptr);

  SearchSettings settings() const;
  void setSettings(const SearchSettings& s);
  /// Baseline of the loaded stack (days, last minus first MJD) for the reach helper; 0 = none.
  void setBaseline(double days);
  /// Enables Run / Cancel (the window calls this when its state changes).
  void setRunEnabled(bool on);
  void setCancelEnabled(bool on);

  QPushButton* runButton() const noexcept { return run_; }
  QPushButton* cancelButton() const noexcept { return cancel_; }
  QComboBox* backendCombo() const noexcept { return backend_; }

signals:
  void runRequested();
  void cancelRequested();
  void settingsChanged();

private:
  void applyReach();
  void updateEnabled();
  void updateSummary();

  QDoubleSpinBox *vxMin_ = nullptr, *vxMax_ = nullptr, *vyMin_ = nullptr, *vyMax_ = nullptr;
  QSpinBox *nvx_ = nullptr, *nvy_ = nullptr;
  QDoubleSpinBox* reach_ = nullptr;
  QSpinBox* reachN_ = nullptr;
  QPushButton* applyReach_ = nullptr;
  QRadioButton *bonferroni_ = nullptr, *fixed_ = nullptr;
  QDoubleSpinBox *falseAlarms_ = nullptr, *thresholdZ_ = nullptr;
  QSpinBox* minObs_ = nullptr;
  QComboBox* encoding_ = nullptr;
  QComboBox* backend_ = nullptr;
  QCheckBox* cluster_ = nullptr;
  QDoubleSpinBox* clusterRadius_ = nullptr;
  QCheckBox* bestZ_ = nullptr;
  QSpinBox* stampRadius_ = nullptr;
  QLabel* summary_ = nullptr;
  QPushButton *run_ = nullptr, *cancel_ = nullptr;
  double baseline_ = 0;
};

}  // namespace almagest::ui::stackview
