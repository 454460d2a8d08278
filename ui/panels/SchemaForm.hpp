#pragma once
// SchemaForm: a job form generated from an engine's schema (almagest/core/schema.hpp): one
// editor per field, grouped by the field's group, with the schema's range, choices, default,
// unit and help (the same text as `almagest-cli <engine> --help`). It only edits: a window
// takes values(), builds the job through the job layer and shows the job layer's problems in
// the form's visible problem label (showProblems), so validation is the same as on the CLI.
//
//   SchemaForm* form = new SchemaForm(npcf::npcf_schema(), {"Binning", "Geometry"});
//   form->setOperation("synth");              // sht/stack: only the fields of that operation
//   schema::Values v = form->values();         // fields the user set, as the CLI would pass them
#include <QMap>
#include <QPointer>
#include <QStringList>
#include <QWidget>

#include <functional>

#include "almagest/core/schema.hpp"

class QFormLayout;
class QLabel;

namespace almagest::ui {

class SchemaForm : public QWidget {
  Q_OBJECT
public:
  /// `groups`: the schema groups shown, in that order (empty: every group in schema order).
  /// `hidden`: keys the window edits itself (e.g. the operation key, or paths it picks).
  SchemaForm(const almagest::schema::Schema& schema, QStringList groups = {}, QStringList hidden = {},
             QWidget* parent = nullptr);

  const almagest::schema::Schema& schema() const noexcept { return schema_; }

  /// Shows only the fields that apply to `operation` (schema fields with no operations: always).
  void setOperation(const QString& operation);
  QString operation() const { return operation_; }

  /// The values of the visible fields the user set (fields left at their schema default are
  /// omitted, so the schema's default applies exactly as on the command line).
  almagest::schema::Values values() const;
  /// Sets the editors of the keys in `values` (others back to their defaults).
  void setValues(const almagest::schema::Values& values);
  /// Back to the schema defaults.
  void reset();

  /// The editor of `key` (QLineEdit, QSpinBox, QDoubleSpinBox, QComboBox, QCheckBox or a file
  /// row widget), nullptr if the key is not in the form.
  QWidget* editor(const QString& key) const;
  QStringList keys() const;

  /// The problems of the form's values, in the one validation style of every window (never a
  /// dialog): each problem that names a field ("--nbins: must be ...", "rmax: ...", also after a
  /// "jobs.toml: job 2: " prefix) is shown inline under that field, whose label turns red; the
  /// others in the label under the form. Problems are separated by newlines or "; ". Empty
  /// clears them. A bound run control (setRunControl) is disabled while there are problems.
  void showProblems(const QString& text);
  /// The whole text last given to showProblems().
  QString problems() const;
  /// The inline message under `key` ("" when none).
  QString fieldProblem(const QString& key) const;
  /// Validates on every change: `validator` returns the problems of the values ("" when none),
  /// e.g. the job layer's ConfigError text; shown with showProblems().
  void setValidator(std::function<QString(const almagest::schema::Values&)> validator);
  /// Re-runs the validator now (after the window changed something the form does not see).
  void validate();
  /// A Run button (or action's widget) enabled exactly when the form has no problems.
  void setRunControl(QWidget* run);

  /// Enables or disables every editor (a job is running).
  void setLocked(bool locked);

signals:
  void changed();

private:
  struct Entry {
    const almagest::schema::Field* field = nullptr;
    QWidget* row = nullptr;       ///< the widget in the layout (editor or file row)
    QWidget* editor = nullptr;    ///< the value editor
    QLabel* label = nullptr;
    QLabel* error = nullptr;      ///< the inline problem under the row (hidden when none)
    bool set = false;             ///< the user changed it (or setValues set it)
  };
  QWidget* makeEditor(Entry& e);
  void applyDefault(Entry& e);
  void markSet(const QString& key);
  void updateVisibility();

  const almagest::schema::Schema& schema_;
  QString operation_;
  QMap<QString, Entry> entries_;
  QStringList order_;
  QLabel* problems_ = nullptr;
  QString problemsText_;
  std::function<QString(const almagest::schema::Values&)> validator_;
  QPointer<QWidget> runControl_;
  bool loading_ = false;
};

}  // namespace almagest::ui
