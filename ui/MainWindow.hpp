#pragma once
// MainWindow: the first desktop window. Open a data and a random catalogue (or the bundled demo
// data), set the statistic and binning in the job panel, run the job off the GUI thread with
// progress and Cancel, then see xi(r) / zeta in the chart and the catalogue as a 3D point cloud.
//
// Jobs (catalogue loading, N-point counting) run one at a time on the window's own one-thread
// pool through JobRunner; their results are handed to the GUI thread, where the chart and the
// VTK scene are rebuilt. A cancelled job leaves no result; a failed one is reported in the log
// and in a (non-blocking) message box.
#include <QMainWindow>
#include <QPointer>
#include <QThreadPool>

#include <memory>

#include "jobs/JobRunner.hpp"
#include "jobs/NpcfJob.hpp"

class QAction;
class QLabel;
class QSplitter;

namespace almagest::ui {

class CorrelationChart;
class JobPanel;
class LogPanel;
class PointCloudScene;
class SkyMapWindow;
class StackWindow;
class VtkView;

class MainWindow : public QMainWindow {
  Q_OBJECT
public:
  enum class SaveFormat { Hdf5, Text };

  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  /// Folder holding the demo catalogues (data.txt, randoms.txt), or empty when not found.
  /// Looked up in: $ALMAGEST_DEMO_DIR, <exe>/../share/almagest/demo, the source tree's
  /// resources/demo (build tree runs).
  static QString demoDirectory();

  /// Loads the demo catalogues; with `run`, starts a 2pCF job as soon as they are loaded.
  bool openDemoData(bool run = false);
  /// Loads catalogues in a job (either path may be empty to keep the current one).
  bool loadCatalogues(const QString& dataPath, const QString& randomsPath);
  /// Starts a job with the job panel's settings. False (with a message) if not possible.
  bool runJob();
  /// Cancels the running job, if any (returns at once).
  void cancelJob();
  /// Writes the current result. False (with a message) on error or without a result.
  bool saveResult(const QString& path, SaveFormat format);
  /// Saves a picture of the whole window (PNG by extension).
  bool saveScreenshot(const QString& path);
  /// Opens a new HEALPix sky-map window (Tools menu); it closes with this window.
  SkyMapWindow* showSkyMap();
  /// Opens a new shift-and-stack window (Tools menu); it closes with this window.
  StackWindow* showMovingObjects();
  /// When false, errors go to the log only (no message boxes): for tests and scripted runs.
  void setInteractiveErrors(bool on) { interactiveErrors_ = on; }

  JobPanel* jobPanel() const noexcept { return panel_; }
  CorrelationChart* chart() const noexcept { return chart_; }
  VtkView* vtkView() const noexcept { return view_; }
  LogPanel* logPanel() const noexcept { return log_; }
  PointCloudScene* scene() const noexcept { return scene_.get(); }
  /// The running (or last finished, until deleted) N-point job.
  JobRunner* currentJob() const noexcept { return npcfRunner_; }
  bool isBusy() const noexcept;
  NpcfOutputPtr result() const noexcept { return result_; }
  CataloguePtr data() const noexcept { return data_; }
  CataloguePtr randoms() const noexcept { return randoms_; }

signals:
  void cataloguesLoaded();
  void loadFailed(const QString& message);
  void jobStarted(almagest::ui::JobRunner* job);
  void jobProgress(int percent, const QString& stage);
  void jobFinished(almagest::ui::JobRunner::State state);

protected:
  void closeEvent(QCloseEvent* event) override;

private:
  void buildMenus();
  void onLoadFinished(JobRunner* runner, QString dataPath, QString randomsPath);
  void onJobFinished(JobRunner* runner);
  void updateActions();
  void reportError(const QString& title, const QString& message);
  void openFile(bool randoms);
  void saveAs(SaveFormat format);
  void showAbout();
  void showGpuStatus();
  void startGpuQuery();

  QThreadPool pool_;  // one job at a time
  JobPanel* panel_ = nullptr;
  LogPanel* log_ = nullptr;
  VtkView* view_ = nullptr;
  CorrelationChart* chart_ = nullptr;
  QSplitter* splitter_ = nullptr;
  std::unique_ptr<PointCloudScene> scene_;
  QLabel* backendLabel_ = nullptr;
  QLabel* gpuLabel_ = nullptr;

  QAction* saveHdf5Action_ = nullptr;
  QAction* saveTextAction_ = nullptr;
  QAction* runAction_ = nullptr;
  QAction* cancelAction_ = nullptr;
  QAction* openDataAction_ = nullptr;
  QAction* openRandomsAction_ = nullptr;
  QAction* openDemoAction_ = nullptr;

  QPointer<JobRunner> loadRunner_;
  QPointer<JobRunner> npcfRunner_;
  CataloguePtr data_, randoms_;
  QString dataPath_, randomsPath_;
  NpcfOutputPtr result_;
  bool runAfterLoad_ = false;
  bool interactiveErrors_ = true;
  template <class Tool>
  Tool* showTool();
};

}  // namespace almagest::ui
