#pragma once
// ParityPanel: the parity null test over many realisations of a parity 4pCF. Realisations come
// from result files (HDF5 or `--format gramsci` text: openFiles) or from a batch of the job
// model over a folder of mock catalogues (makeParityBatchJob, run through the engine's batch
// API). The numbers are jobs::parity_null_test's -- the computation the batch aggregation
// `npcf-parity` writes -- and the panel shows:
//  - the pull z = mean/sigma_mean per configuration with the +-1 and +-2 sigma bands;
//  - the histogram of z against a unit Gaussian;
//  - chi^2/dof against its expectation (N - 1)/(N - 3) for N realisations (Student-t), with its
//    spread, and the fraction of configurations beyond 2 sigma.
#include <QJsonObject>
#include <QPointer>
#include <QStringList>
#include <QWidget>

#include <cstdint>
#include <functional>
#include <vector>

#include "almagest/core/schema.hpp"
#include "almagest/jobs/aggregate.hpp"
#include "jobs/JobRunner.hpp"

class QChartView;
class QLabel;
class QLineEdit;
class QPushButton;

namespace almagest::ui {

class ParityPanel : public QWidget {
  Q_OBJECT
public:
  explicit ParityPanel(QWidget* parent = nullptr);

  /// Reads every file (HDF5 or gramsci text) and uses its odd channel (zeta_odd). All files
  /// must hold parity 4pCF results with the same configurations. False, with the message in
  /// errorText() (file and field named), when one cannot be used; nothing changes then.
  bool openFiles(const QStringList& paths);
  /// Realisations as vectors of the odd channel (one per realisation, equal lengths).
  bool setRealisations(const std::vector<std::vector<double>>& samples, const QStringList& labels = {});
  void clear();

  const almagest::jobs::ParityNullTest& test() const noexcept { return test_; }
  int realisationCount() const noexcept { return static_cast<int>(samples_.size()); }
  QString errorText() const { return error_; }
  QString summaryText() const;
  QStringList files() const { return labels_; }

  /// Histogram of z: bin edges (kHistBins + 1 over [-kHistRange, kHistRange]) and counts (z
  /// outside the range land in the end bins).
  static constexpr int kHistBins = 24;
  static constexpr double kHistRange = 4.0;
  std::vector<double> histogramCounts() const { return hist_; }

  QChartView* pullView() const noexcept { return pullView_; }
  QChartView* histogramView() const noexcept { return histView_; }

  // ---- a batch of the job model over a folder of mock catalogues --------------------------
  /// The N-point form's values (randoms, binning, backend...) the batch's members start from.
  void setValuesProvider(std::function<almagest::schema::Values()> provider) { values_ = std::move(provider); }
  /// Starts makeParityBatchJob over `folder`/`pattern` on the job queue (JobQueue::instance(),
  /// the device of the values' backend); outputs in `outputDir` (empty: <folder>/parity-batch).
  /// When it completes, the members' outputs are opened as the realisations (openFiles) and
  /// aggregatePath() is the `npcf-parity` file the batch wrote. False (message in errorText())
  /// when a batch is running or there is no folder.
  bool runBatch(const QString& folder, const QString& pattern = QStringLiteral("*.txt"), const QString& outputDir = {});
  void cancelBatch();
  JobRunner* batchJob() const noexcept { return batch_; }
  QString aggregatePath() const { return aggregatePath_; }
  QLineEdit* folderEdit() const noexcept { return folderEdit_; }
  QLineEdit* patternEdit() const noexcept { return patternEdit_; }
  QPushButton* runBatchButton() const noexcept { return runButton_; }

  QJsonObject save_state() const;
  void restore_state(const QJsonObject& state);

signals:
  void realisationsChanged();
  /// The batch ended (its realisations are open when Completed).
  void batchFinished(almagest::ui::JobRunner::State state);

private:
  void rebuild();

  std::vector<std::vector<double>> samples_;
  QStringList labels_;
  QStringList paths_;  ///< the files opened (for workspaces); empty for in-memory realisations
  almagest::jobs::ParityNullTest test_;
  std::vector<double> hist_;
  QString error_;
  QLabel* summary_ = nullptr;
  QChartView* pullView_ = nullptr;
  QChartView* histView_ = nullptr;
  std::function<almagest::schema::Values()> values_;
  QPointer<JobRunner> batch_;
  QString aggregatePath_;
  QLineEdit* folderEdit_ = nullptr;
  QLineEdit* patternEdit_ = nullptr;
  QPushButton* runButton_ = nullptr;
  QPushButton* cancelButton_ = nullptr;
  QLabel* batchStatus_ = nullptr;
};

/// A batch of parity 4pCF jobs over the mock catalogues in `folder` matching `pattern` ("*.txt"),
/// through the engine's batch API (jobs::plan_job_file, run_plan: validation of every member
/// first, resume of up-to-date members), the form's `values` for everything else (randoms,
/// binning, ...), member outputs `outputDir/<stem>_parity.h5`, then the `npcf-parity`
/// aggregation into `outputDir/parity.h5`. The job's value is a QStringList of the member
/// outputs (for ParityPanel::openFiles). ConfigError when nothing matches or a member is invalid.
JobRunner::Job makeParityBatchJob(const almagest::schema::Values& values, const QString& folder, const QString& pattern,
                                  const QString& outputDir);

}  // namespace almagest::ui
