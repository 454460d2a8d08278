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
#include <QStringList>
#include <QWidget>

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

  /// The problem text shown under the form (empty hides it); word-wrapped, selectable.
  void showProblems(const QString& text);
  QString problems() const;

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
  bool loading_ = false;
};

}  // namespace almagest::ui
