#pragma once
// JobPanel: inputs and controls of an N-point job: a form generated from the N-point job schema
// (npcf::npcf_schema(): catalogue paths as editable fields with Browse, FITS/HDF5 columns and
// weights, sky coordinates and omega-m, binning, geometry, threads, backend -- every option of
// `almagest-cli npcf` except the output, which File > Save writes), the statistic, Run and
// Cancel, a progress bar with the stage text. It only edits and reports; MainWindow loads files
// for the view and runs the job through the job layer (npcf::run_npcf_job).
#include <QWidget>

#include "almagest/core/schema.hpp"
#include "almagest/io/catalogue.hpp"
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

class SchemaForm;

class JobPanel : public QWidget {
  Q_OBJECT
public:
  explicit JobPanel(QWidget* parent = nullptr);

  /// The job as schema values: the statistic, the catalogue paths and every form field the user
  /// set (defaults stay the schema's). No output: the window adds it when it saves.
  almagest::schema::Values values() const;
  /// Sets the statistic and the form (keys absent: schema defaults; paths kept if absent).
  void setValues(const almagest::schema::Values& values);
  /// The generated form (one editor per schema field but stat, output and format).
  SchemaForm* form() const noexcept { return form_; }

  /// The configuration the values give (through npcf::make_npcf_job), or the defaults with the
  /// panel's statistic when they are not valid yet.
  almagest::npcf::NpcfConfig config() const;
  /// Sets statistic, binning, geometry, threads and backend from a configuration.
  void setConfig(const almagest::npcf::NpcfConfig& config);
  /// How the form reads a catalogue at `path` (format, columns, weights, sky, omega-m), for the
  /// view's own load; the defaults when the form is not valid yet.
  almagest::io::CatalogueSpec catalogueSpec(const QString& path, bool randoms) const;
  /// The periodic flag of the form (a periodic box runs without randoms).
  bool periodic() const;

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
  void updateRunEnabled();
  void pathEdited(bool randoms);
  void setFormPath(const char* key, const QString& path);
  QString formPath(const char* key) const;

  QString dataPath_, randomsPath_;
  SchemaForm* form_ = nullptr;
  QLabel* dataInfo_ = nullptr;
  QLabel* randomsInfo_ = nullptr;
  QComboBox* statistic_ = nullptr;
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
