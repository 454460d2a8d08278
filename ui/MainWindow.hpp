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
#include <optional>

#include "app/Workspace.hpp"
#include "jobs/JobRunner.hpp"
#include "jobs/NpcfJob.hpp"

class QAction;
class QLabel;
class QMenu;
class QSplitter;

namespace almagest::ui {

class CataloguePanel;
class CorrelationChart;
class JobPanel;
class LogPanel;
class PointCloudScene;
class SkyMapWindow;
class StackWindow;
class VtkView;

class MainWindow : public QMainWindow, public StatefulView {
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

  // ---- the application shell (ui/app/) -------------------------------------------------------
  /// Opens any file in the view it belongs to (app::sniffFile: catalogue -> this window's data,
  /// or randoms when a data catalogue is loaded and the name says "random"; N-point result ->
  /// this window's chart; HEALPix map -> a Sky map window; stack -> a Moving objects window;
  /// workspace -> openWorkspace). Also what a drop onto the window does. False with a message.
  bool openPath(const QString& path);
  /// Reads an N-point result file (HDF5) in a job and shows it (the chart; no catalogue needed).
  bool openResult(const QString& path);
  /// Saves every open window (files, job settings, selections, cameras) as a JSON workspace.
  bool saveWorkspace(const QString& path);
  /// Restores a workspace: this window's state, and the tool windows it lists (opened anew).
  bool openWorkspace(const QString& path);
  /// Restores the last session's geometry and parameters from the settings, and remembers them
  /// when the window closes (main.cpp calls it; tests call it with a temporary settings file).
  void restoreSession();
  /// The tool windows open now (Sky map, Moving objects), in the order they were opened.
  QList<QMainWindow*> toolWindows() const;

  // StatefulView: data and randoms paths, the job form, the chart's plot, the camera, geometry.
  QString state_kind() const override { return QStringLiteral("npcf"); }
  QJsonObject save_state() const override;
  void restore_state(const QJsonObject& state) override;

  JobPanel* jobPanel() const noexcept { return panel_; }
  CorrelationChart* chart() const noexcept { return chart_; }
  VtkView* vtkView() const noexcept { return view_; }
  LogPanel* logPanel() const noexcept { return log_; }
  PointCloudScene* scene() const noexcept { return scene_.get(); }
  /// The catalogue view's controls (colour, clip box, neighbour graph), in the Catalogue dock.
  CataloguePanel* cataloguePanel() const noexcept { return cataloguePanel_; }
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
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;

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
  void onResultRead(JobRunner* runner, const QString& path);
  void rebuildRecentMenu();
  void rememberFile(const QString& path);
  void exportChart();
  void export3dView();
  QString resultProvenance() const;
  std::optional<almagest::npcf::Binning> formBinning(QString* why) const;
  static QJsonObject toolState(const QMainWindow* w);
  void saveSession();

  JobPanel* panel_ = nullptr;
  LogPanel* log_ = nullptr;
  VtkView* view_ = nullptr;
  CorrelationChart* chart_ = nullptr;
  QSplitter* splitter_ = nullptr;
  std::unique_ptr<PointCloudScene> scene_;
  CataloguePanel* cataloguePanel_ = nullptr;
  QLabel* backendLabel_ = nullptr;
  QLabel* gpuLabel_ = nullptr;

  QAction* saveHdf5Action_ = nullptr;
  QAction* saveTextAction_ = nullptr;
  QAction* runAction_ = nullptr;
  QAction* cancelAction_ = nullptr;
  QAction* openDataAction_ = nullptr;
  QAction* openRandomsAction_ = nullptr;
  QAction* openDemoAction_ = nullptr;

  QMenu* recentMenu_ = nullptr;
  QPointer<JobRunner> loadRunner_;
  QPointer<JobRunner> npcfRunner_;
  CataloguePtr data_, randoms_;
  QString dataPath_, randomsPath_;
  NpcfOutputPtr result_;
  bool runAfterLoad_ = false;
  bool rememberSession_ = false;  // restoreSession() was called: save the session on close
  bool quitWhenIdle_ = false;     // "Keep running" at quit: close once the queue is idle
  QJsonObject pendingState_;      // camera and result to apply once restored catalogues loaded
  int pendingMode_ = -1;          // chart plot to show once a restored result is read
  QJsonObject pendingViews_;      // result views' state (table selection...) once it is read
  bool closingAll_ = false;       // the main window closes: tool windows close without asking
  QString resultPath_;            // the file the shown result was read from ("" when computed)
  QPointer<JobRunner> resultRunner_;
  QList<QPointer<QMainWindow>> tools_;
  bool interactiveErrors_ = true;
  template <class Tool>
  Tool* showTool();
};

}  // namespace almagest::ui
