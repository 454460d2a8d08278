#pragma once
// SearchPanel: the side panel of the "Moving objects" window. The search options are a SchemaForm
// generated from the stack job schema (almagest/stack/job.hpp: every option of `almagest-cli stack
// search`, the common-curve file, velocity files and speed x angle banks included), with the keys
// the window supplies itself hidden (op, stack, output) and the backend as a combo box whose CUDA
// entries are disabled with the reason when no GPU is usable. Besides the form: a reach helper
// (fills the Cartesian ranges from a displacement over the stack's baseline), the window's own
// best-Z map and stamp radius, Run and Cancel. The form's problem label shows make_stack_job()'s
// message (the window sets it through showProblems()).
#include <QWidget>

#include "almagest/core/schema.hpp"
#include "stackview/StackJobs.hpp"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QPushButton;
class QSpinBox;

namespace almagest::ui {
class SchemaForm;
}

namespace almagest::ui::stackview {

class SearchPanel : public QWidget {
  Q_OBJECT
public:
  explicit SearchPanel(QWidget* parent = nullptr);

  /// The keys of the stack schema the form does not show (the window supplies them; the backend
  /// is the combo box).
  static QStringList hiddenKeys();

  /// The search values as the CLI would pass them: the form's set fields plus the backend.
  almagest::schema::Values values() const;
  /// Sets the form (others back to the schema defaults) and the backend combo.
  void setValues(const almagest::schema::Values& v);

  SearchSettings settings() const;
  void setSettings(const SearchSettings& s);
  bool bestZMap() const;
  int stampRadius() const;

  /// Shows make_stack_job()'s problems in the form's visible problem label ("" hides it).
  void showProblems(const QString& text);

  /// Baseline of the loaded stack (days, last minus first MJD) for the reach helper; 0 = none.
  void setBaseline(double days);
  /// Enables Run / Cancel (the window calls this when its state changes).
  void setRunEnabled(bool on);
  void setCancelEnabled(bool on);
  /// Locks the form while a job runs.
  void setLocked(bool locked);

  SchemaForm* form() const noexcept { return form_; }
  QPushButton* runButton() const noexcept { return run_; }
  QPushButton* cancelButton() const noexcept { return cancel_; }
  QComboBox* backendCombo() const noexcept { return backend_; }

signals:
  void runRequested();
  void cancelRequested();
  void settingsChanged();

private:
  void applyReach();

  SchemaForm* form_ = nullptr;
  QComboBox* backend_ = nullptr;
  QDoubleSpinBox* reach_ = nullptr;
  QSpinBox* reachN_ = nullptr;
  QPushButton* applyReach_ = nullptr;
  QCheckBox* bestZ_ = nullptr;
  QSpinBox* stampRadius_ = nullptr;
  QPushButton *run_ = nullptr, *cancel_ = nullptr;
  double baseline_ = 0;
};

}  // namespace almagest::ui::stackview
