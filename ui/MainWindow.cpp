#include "MainWindow.hpp"

#include <QAction>
#include <QChart>
#include <QChartView>
#include <QApplication>
#include <QCloseEvent>
#include <QCoreApplication>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QJsonArray>
#include <QJsonDocument>
#include <QMimeData>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QLabel>
#include <QLocale>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QScrollArea>
#include <QSplitter>
#include <QStatusBar>
#include <QTimer>
#include <QUrl>
#include <QtConcurrent/QtConcurrentRun>

#include <cmath>

#include "AppIcon.hpp"
#include "app/AppSettings.hpp"
#include "app/Export.hpp"
#include "app/FileKind.hpp"
#include "app/JobQueue.hpp"
#include "app/JobQueuePanel.hpp"
#include "app/ViewCamera.hpp"
#include "almagest/core/error.hpp"
#include "almagest/core/gpu.hpp"
#include "almagest/core/provenance.hpp"
#include "almagest/npcf/result.hpp"
#include "npcf/CataloguePanel.hpp"
#include "npcf/ConfigurationExplorer.hpp"
#include "npcf/NpcfViews.hpp"
#include "npcf/ParityPanel.hpp"
#include "npcf/VolumeCheck.hpp"
#include "panels/JobPanel.hpp"
#include "panels/SchemaForm.hpp"
#include "panels/LogPanel.hpp"
#include "sky/SkyMapWindow.hpp"
#include "stackview/StackWindow.hpp"
#include "views/CorrelationChart.hpp"
#include "views/PointCloudScene.hpp"
#include "views/VtkView.hpp"

// The resources live in the static almagest_ui library: register them explicitly (outside any
// namespace, as Q_INIT_RESOURCE requires).
static void initAlmagestResources() { Q_INIT_RESOURCE(almagest); }

namespace almagest::ui {

namespace npcf = almagest::npcf;

namespace {

QString catalogueInfo(const almagest::io::Catalogue& c) {
  double wsum = 0;
  for (double w : c.w) wsum += w;
  const QLocale loc;
  QString s = QObject::tr("%1 points").arg(loc.toString(qulonglong(c.size())));
  if (!c.w.empty()) s += QObject::tr(" · Σw = %1").arg(QString::number(wsum, 'g', 6));
  return s;
}

QString seconds(double s) {
  return s < 10 ? QString::number(s, 'f', 2) + QStringLiteral(" s")
                : QString::number(s, 'f', 1) + QStringLiteral(" s");
}

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  initAlmagestResources();
  setWindowTitle(tr("Almagest"));
  setWindowIcon(appIcon());
  setObjectName(QStringLiteral("AlmagestMainWindow"));

  // Central area: the 3D view and the chart side by side.
  splitter_ = new QSplitter(Qt::Horizontal, this);
  view_ = new VtkView(splitter_);
  chart_ = new CorrelationChart(splitter_);
  splitter_->addWidget(view_);
  splitter_->addWidget(chart_);
  splitter_->setStretchFactor(0, 1);
  splitter_->setStretchFactor(1, 1);
  splitter_->setSizes({560, 440});
  splitter_->setChildrenCollapsible(false);
  setCentralWidget(splitter_);
  scene_ = std::make_unique<PointCloudScene>(view_);
  // The result views beside the chart (configuration table, configuration in 3D, parity null
  // test), wired to the chart: findChild<NpcfViews*>() reaches them.
  auto* views = new NpcfViews(this, chart_);
  // The catalogue view's controls (colour, clip box, neighbour graph of a typed or double-clicked
  // point), tabbed with the result views.
  cataloguePanel_ = new CataloguePanel(scene_.get(), view_);
  cataloguePanel_->setBinningSource([this](QString* why) { return formBinning(why); });
  {
    auto* scroll = new QScrollArea;
    scroll->setWidget(cataloguePanel_);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* dock = new QDockWidget(tr("Catalogue"), this);
    dock->setObjectName(QStringLiteral("CatalogueDock"));
    dock->setWidget(scroll);
    dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable | QDockWidget::DockWidgetClosable);
    addDockWidget(Qt::RightDockWidgetArea, dock);
    tabifyDockWidget(views->explorerDock(), dock);
    views->explorerDock()->raise();
  }
  // The parity panel's batch over mock catalogues takes the Job form's other settings.
  views->parityPanel()->setValuesProvider([this] { return panel_->values(); });
  // A row selected in the configuration table is the configuration drawn through the point.
  connect(views->explorer(), &ConfigurationExplorer::rowsSelected, this, [this](const QList<int>& rows) {
    if (!rows.isEmpty()) cataloguePanel_->setConfiguration(rows.first());
  });
  // Right-click on the chart: export it with the shown result's provenance (File > Export too;
  // the 3D view keeps the right button for zooming, so it exports from the File menu only).
  app::installExportMenu(chart_->chartView(), [this] {
    return app::ExportMeta{chart_->plotTitle().isEmpty() ? tr("chart") : chart_->plotTitle(), resultProvenance()};
  }, QStringLiteral("chart"));

  // Job panel (left) and log (bottom) as docks.
  panel_ = new JobPanel;
  auto* scroll = new QScrollArea;
  scroll->setWidget(panel_);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll->setMinimumWidth(panel_->sizeHint().width() + 12);
  auto* jobDock = new QDockWidget(tr("Job"), this);
  jobDock->setObjectName(QStringLiteral("JobDock"));
  jobDock->setWidget(scroll);
  jobDock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
  addDockWidget(Qt::LeftDockWidgetArea, jobDock);

  log_ = new LogPanel;
  auto* logDock = new QDockWidget(tr("Log"), this);
  logDock->setObjectName(QStringLiteral("LogDock"));
  logDock->setWidget(log_);
  logDock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable |
                       QDockWidget::DockWidgetClosable);
  addDockWidget(Qt::BottomDockWidgetArea, logDock);
  // The job panel of every window (one queue, JobQueue::instance()).
  auto* jobsDock = new QDockWidget(tr("Jobs"), this);
  jobsDock->setObjectName(QStringLiteral("JobsDock"));
  jobsDock->setWidget(new JobQueuePanel(JobQueue::instance(), jobsDock));
  jobsDock->setFeatures(logDock->features());
  addDockWidget(Qt::BottomDockWidgetArea, jobsDock);
  splitDockWidget(logDock, jobsDock, Qt::Horizontal);  // side by side: the log and the queue
  resizeDocks({logDock}, {150}, Qt::Vertical);
  // A job of another window that fails is logged here too (its window shows the dialog).
  connect(&JobQueue::instance(), &JobQueue::jobFailed, this,
          [this](int id, const QString& name, const QString& owner, const QString& message) {
            const JobQueue::Entry* e = JobQueue::instance().entry(id);
            if (e && e->ownerObject == this) return;  // reported by onJobFinished
            log_->error(tr("%1 (%2) failed: %3").arg(name, owner, message));
          });

  // Status bar: backend and GPU.
  backendLabel_ = new QLabel(this);
  gpuLabel_ = new QLabel(tr("GPU: querying…"), this);
  statusBar()->addPermanentWidget(backendLabel_);
  statusBar()->addPermanentWidget(gpuLabel_);
  backendLabel_->setText(tr("Backend: CPU"));

  buildMenus();
  (void)logDock->toggleViewAction();

  connect(panel_, &JobPanel::dataFileChosen, this, [this](const QString& p) { loadCatalogues(p, {}); });
  connect(panel_, &JobPanel::randomsFileChosen, this, [this](const QString& p) { loadCatalogues({}, p); });
  connect(panel_, &JobPanel::runRequested, this, [this] { runJob(); });
  connect(panel_, &JobPanel::cancelRequested, this, [this] { cancelJob(); });

  log_->info(tr("Almagest %1 ready. Open a catalogue, or File > Open demo data.")
                 .arg(QString::fromStdString(almagest::version())));
  updateActions();
  startGpuQuery();
  resize(1280, 800);
  app::fitToScreen(this);  // a smaller screen than 1280 x 800 (and its panels) still fits
  setAcceptDrops(true);    // catalogues, results, maps, stacks and workspaces (openPath)
  // "Keep running" at quit: close once the last job of any window has finished.
  connect(&JobQueue::instance(), &JobQueue::idle, this, [this] {
    if (quitWhenIdle_) QTimer::singleShot(0, this, &QWidget::close);
  });
  // "Keep running" when a tool window closes: it closes once its own jobs have finished.
  connect(&JobQueue::instance(), &JobQueue::jobFinished, this, [this](int id, JobRunner::State) {
    const JobQueue::Entry* e = JobQueue::instance().entry(id);
    if (!e || !e->ownerObject) return;
    auto* w = qobject_cast<QWidget*>(e->ownerObject.data());
    if (w && w != this && w->property("closeWhenIdle").toBool() &&
        JobQueue::instance().activeCount(w) == 0)
      QTimer::singleShot(0, w, &QWidget::close);
  });
}

MainWindow::~MainWindow() {
  // Stop jobs before the widgets they report to go away (JobRunner waits for its worker).
  if (npcfRunner_) npcfRunner_->cancel();
  if (loadRunner_) loadRunner_->cancel();
  delete npcfRunner_.data();
  delete loadRunner_.data();
  scene_.reset();
}

template <class Tool>
Tool* MainWindow::showTool() {
  auto* w = new Tool(this);               // a top-level window owned by this one
  w->setAttribute(Qt::WA_DeleteOnClose);  // closing it frees it (a running job is cancelled)
  w->setInteractiveErrors(interactiveErrors_);
  w->installEventFilter(this);            // closing while its job runs asks first (eventFilter)
  if (rememberSession_) {
    // The last parameters of this kind of window (its forms), then its geometry.
    const QJsonObject last = app::lastState(w->objectName());
    if (!last.isEmpty()) app::restoreGenericWindowState(w, last);
    app::restoreGeometry(w);
  }
  tools_.append(w);
  w->show();
  app::fitToScreen(w);  // now that the frame is known
  return w;
}

QList<QMainWindow*> MainWindow::toolWindows() const {
  QList<QMainWindow*> out;
  for (const auto& t : tools_)
    if (t) out << t.data();
  return out;
}

SkyMapWindow* MainWindow::showSkyMap() { return showTool<SkyMapWindow>(); }
StackWindow* MainWindow::showMovingObjects() { return showTool<StackWindow>(); }

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  openDataAction_ = file->addAction(tr("Open &data…"), this, [this] { openFile(false); });
  openDataAction_->setShortcut(QKeySequence::Open);
  openRandomsAction_ = file->addAction(tr("Open &randoms…"), this, [this] { openFile(true); });
  openRandomsAction_->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+O")));
  openDemoAction_ = file->addAction(tr("Open d&emo data"), this, [this] { openDemoData(false); });
  openDemoAction_->setShortcut(QKeySequence(QStringLiteral("Ctrl+D")));
  file->addAction(tr("Open &any file…"), this, [this] {
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Open a catalogue, result, map, stack or workspace"), QString(),
        tr("Almagest files (*.txt *.dat *.csv *.fits *.fit *.fits.gz *.h5 *.hdf5 *.json);;All files (*)"));
    if (!path.isEmpty()) openPath(path);
  });
  recentMenu_ = file->addMenu(tr("Open &recent"));
  recentMenu_->setObjectName(QStringLiteral("recentMenu"));
  rebuildRecentMenu();
  file->addSeparator();
  file->addAction(tr("Open &workspace…"), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open workspace"), QString(),
                                                      tr("Workspaces (*.almagest.json *.json)"));
    if (!path.isEmpty()) openWorkspace(path);
  });
  file->addAction(tr("Save wor&kspace…"), this, [this] {
    QString path = QFileDialog::getSaveFileName(this, tr("Save workspace"),
                                                QStringLiteral("workspace") + QLatin1String(app::kWorkspaceSuffix),
                                                tr("Workspaces (*.almagest.json)"));
    if (path.isEmpty()) return;
    if (!path.endsWith(QLatin1String(".json"))) path += QLatin1String(app::kWorkspaceSuffix);
    saveWorkspace(path);
  });
  file->addSeparator();
  saveHdf5Action_ = file->addAction(tr("Save result as &HDF5…"), this, [this] { saveAs(SaveFormat::Hdf5); });
  saveHdf5Action_->setShortcut(QKeySequence::Save);
  saveTextAction_ = file->addAction(tr("Save result as &text (GRAMSCI)…"), this,
                                    [this] { saveAs(SaveFormat::Text); });
  QMenu* exportMenu = file->addMenu(tr("&Export"));
  exportMenu->addAction(tr("&Chart as PNG, SVG or PDF…"), this, &MainWindow::exportChart);
  exportMenu->addAction(tr("&3D view as PNG, SVG or PDF…"), this, &MainWindow::export3dView);
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);
  quit->setMenuRole(QAction::QuitRole);

  QMenu* job = menuBar()->addMenu(tr("&Job"));
  runAction_ = job->addAction(tr("&Run"), this, [this] { runJob(); });
  runAction_->setShortcut(QKeySequence(QStringLiteral("Ctrl+R")));
  cancelAction_ = job->addAction(tr("&Cancel"), this, [this] { cancelJob(); });
  cancelAction_->setShortcut(QKeySequence(Qt::Key_Escape));

  QMenu* viewMenu = menuBar()->addMenu(tr("&View"));
  QAction* showRandoms = viewMenu->addAction(tr("Show &randoms"));
  showRandoms->setCheckable(true);
  showRandoms->setChecked(true);
  connect(showRandoms, &QAction::toggled, this, [this](bool on) { scene_->setRandomsVisible(on); });
  viewMenu->addAction(tr("Reset &camera"), this, [this] { scene_->resetCamera(); });
  viewMenu->addSeparator();
  for (QDockWidget* dock : findChildren<QDockWidget*>()) viewMenu->addAction(dock->toggleViewAction());

  QMenu* tools = menuBar()->addMenu(tr("&Tools"));
  QAction* skyMap = tools->addAction(tr("&Sky map (HEALPix)…"), this, [this] { showSkyMap(); });
  skyMap->setShortcut(QKeySequence(QStringLiteral("Ctrl+M")));
  skyMap->setToolTip(tr("HEALPix maps: Mollweide view and angular power spectrum"));
  QAction* moving = tools->addAction(tr("&Moving objects (shift and stack)…"), this, [this] { showMovingObjects(); });
  moving->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+M")));
  moving->setToolTip(tr("Shift-and-stack search for faint moving objects in an exposure stack"));

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&GPU status…"), this, &MainWindow::showGpuStatus);
  help->addSeparator();
  QAction* about = help->addAction(tr("&About Almagest"), this, &MainWindow::showAbout);
  about->setMenuRole(QAction::AboutRole);
  help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);
}

QString MainWindow::demoDirectory() {
  QStringList candidates;
  const QString env = qEnvironmentVariable("ALMAGEST_DEMO_DIR");
  if (!env.isEmpty()) candidates << env;
  const QString appDir = QCoreApplication::applicationDirPath();
  if (!appDir.isEmpty()) candidates << appDir + QStringLiteral("/../share/almagest/demo");
#ifdef ALMAGEST_RESOURCE_DIR
  candidates << QStringLiteral(ALMAGEST_RESOURCE_DIR "/demo");
#endif
  for (const QString& dir : candidates) {
    const QDir d(dir);
    if (d.exists(QStringLiteral("data.txt")) && d.exists(QStringLiteral("randoms.txt")))
      return d.canonicalPath();
  }
  return {};
}

bool MainWindow::isBusy() const noexcept {
  return (loadRunner_ && !loadRunner_->isFinished()) || (npcfRunner_ && !npcfRunner_->isFinished());
}

bool MainWindow::openDemoData(bool run) {
  const QString dir = demoDirectory();
  if (dir.isEmpty()) {
    reportError(tr("Demo data not found"),
                tr("The demo catalogues (data.txt, randoms.txt) were not found. Set "
                   "ALMAGEST_DEMO_DIR to the folder that holds them."));
    return false;
  }
  log_->info(tr("Opening demo data from %1").arg(QDir::toNativeSeparators(dir)));
  if (!loadCatalogues(dir + QStringLiteral("/data.txt"), dir + QStringLiteral("/randoms.txt")))
    return false;
  if (run) {
    npcf::NpcfConfig cfg = panel_->config();
    cfg.statistic = npcf::Statistic::TwoPoint;
    panel_->setConfig(cfg);
  }
  runAfterLoad_ = run;
  return true;
}

bool MainWindow::loadCatalogues(const QString& dataPath, const QString& randomsPath) {
  if (isBusy()) {
    reportError(tr("Busy"), tr("A job is running: cancel it or wait before opening files."));
    return false;
  }
  if (dataPath.isEmpty() && randomsPath.isEmpty()) return false;
  runAfterLoad_ = false;
  if (loadRunner_) delete loadRunner_.data();
  // The view reads the catalogues as the job will (format, columns, weights, sky coordinates).
  almagest::io::CatalogueSpec dataSpec, randomsSpec;
  if (!dataPath.isEmpty()) dataSpec = panel_->catalogueSpec(dataPath, false);
  if (!randomsPath.isEmpty()) randomsSpec = panel_->catalogueSpec(randomsPath, true);
  auto* runner = new JobRunner(tr("load"), makeLoadJob(dataSpec, randomsSpec), this);
  loadRunner_ = runner;
  connect(runner, &JobRunner::logMessage, log_, &LogPanel::append);
  connect(runner, &JobRunner::progressChanged, panel_, &JobPanel::setProgress);
  connect(runner, &JobRunner::finished, this, [this, runner, dataPath, randomsPath] {
    onLoadFinished(runner, dataPath, randomsPath);
  });
  panel_->setRunning(true);
  panel_->setStatusText(tr("Reading catalogues…"));
  JobQueue::instance().submit(runner, QStringLiteral("cpu"), this);
  updateActions();
  return true;
}

void MainWindow::onLoadFinished(JobRunner* runner, QString dataPath, QString randomsPath) {
  panel_->setRunning(false);
  const JobRunner::State state = runner->state();
  if (state == JobRunner::State::Completed) {
    const auto* out = runner->resultAs<LoadedCatalogues>();
    if (out && out->data) {
      data_ = out->data;
      dataPath_ = dataPath;
      panel_->setDataPath(dataPath, catalogueInfo(*data_));
      rememberFile(dataPath);
    }
    if (out && out->randoms) {
      randoms_ = out->randoms;
      randomsPath_ = randomsPath;
      panel_->setRandomsPath(randomsPath, catalogueInfo(*randoms_));
      rememberFile(randomsPath);
    }
    // A result belongs to the catalogues it came from.
    result_.reset();
    resultPath_.clear();
    chart_->clear();
    scene_->setCatalogues(data_.get(), randoms_.get());
    cataloguePanel_->setResult(nullptr);
    cataloguePanel_->setCatalogues(data_, randoms_);
    if (auto* views = findChild<NpcfViews*>()) views->clear();
    if (!pendingState_.isEmpty()) {
      // A restored workspace: its camera (setCatalogues reset it) and its result file.
      const QJsonObject st = pendingState_;
      pendingState_ = {};
      if (st.contains(QStringLiteral("camera"))) app::setCameraState(view_, st.value(QStringLiteral("camera")).toObject());
      if (st.contains(QStringLiteral("catalogue"))) cataloguePanel_->restore_state(st.value(QStringLiteral("catalogue")).toObject());
      if (st.contains(QStringLiteral("views"))) pendingViews_ = st.value(QStringLiteral("views")).toObject();
      if (st.contains(QStringLiteral("result"))) {
        pendingMode_ = st.value(QStringLiteral("chart_mode")).toInt(-1);
        openResult(st.value(QStringLiteral("result")).toString());
      }
    }
    scene_->setStatusText({});
    panel_->setProgress(0, {});
    panel_->setStatusText(data_ && randoms_ ? tr("Ready.")
                                            : tr("Open a %1 catalogue to run a job.")
                                                  .arg(data_ ? tr("random") : tr("data")));
    // Data and randoms over different volumes bias every estimator (xi levels off at the
    // volume ratio): say so inline, under the form, and in the log.
    if (data_ && randoms_) {
      const QString warning = volumeMismatch(*data_, *randoms_);
      if (!warning.isEmpty()) {
        panel_->setStatusText(warning);
        log_->warning(warning);
      }
    }
    updateActions();
    emit cataloguesLoaded();
    if (runAfterLoad_) {
      runAfterLoad_ = false;
      runJob();
    }
  } else {
    runAfterLoad_ = false;
    const QString msg = state == JobRunner::State::Cancelled ? tr("Loading cancelled.")
                                                             : runner->errorMessage();
    panel_->setStatusText(msg);
    if (state == JobRunner::State::Failed) reportError(tr("Could not read the catalogue"), msg);
    else log_->info(msg);
    updateActions();
    emit loadFailed(msg);
  }
}

std::optional<npcf::Binning> MainWindow::formBinning(QString* why) const {
  // The job form's binning (rmin, rmax, nbins, log-bins), checked as the engine checks it.
  const almagest::schema::Values v = panel_->values();
  auto number = [&v](const char* key) -> std::optional<double> {
    const auto it = v.find(key);
    if (it == v.end()) return std::nullopt;
    if (auto d = std::get_if<double>(&it->second)) return *d;
    if (auto i = std::get_if<std::int64_t>(&it->second)) return double(*i);
    if (auto t = std::get_if<std::string>(&it->second)) {  // a form's number as typed
      bool ok = false;
      const double x = QString::fromStdString(*t).trimmed().toDouble(&ok);  // C locale, as job files
      if (ok) return x;
    }
    return std::nullopt;
  };
  npcf::Binning b;
  if (auto x = number("rmin")) b.rmin = *x;
  if (auto x = number("rmax")) b.rmax = *x;
  if (auto x = number("nbins")) b.nbins = static_cast<int>(*x);
  const auto lg = v.find("log-bins");
  b.scale = lg != v.end() && std::holds_alternative<bool>(lg->second) && std::get<bool>(lg->second) ? npcf::BinScale::Log
                                                                                                      : npcf::BinScale::Linear;
  npcf::NpcfConfig c;
  c.bins = b;
  const std::vector<std::string> problems = c.validate();
  if (!problems.empty()) {
    if (why) *why = QString::fromStdString(problems.front());
    return std::nullopt;
  }
  return b;
}

bool MainWindow::runJob() {
  if (isBusy()) return false;
  if (!data_) {
    reportError(tr("No data"), tr("Open a data catalogue first (File > Open data…)."));
    return false;
  }
  // The job layer validates (the schema's and the engine's messages, as on the CLI); the window
  // computes without writing and File > Save writes the result.
  almagest::schema::Values values = panel_->values();
  values["output"] = std::string("unsaved.h5");
  npcf::NpcfJob job;
  try {
    job = npcf::make_npcf_job(values, "", "");
  } catch (const almagest::ConfigError& e) {
    // One validation style: the schema's message inline in the form (never a dialog).
    panel_->form()->showProblems(QString::fromUtf8(e.what()).replace(QStringLiteral("; "), QStringLiteral("\n")));
    log_->warning(QString::fromUtf8(e.what()));
    return false;
  }
  const npcf::NpcfConfig cfg = job.config;

  // The previous result stays shown until the new job completes: a cancelled or failed re-run
  // leaves it (work is never lost without asking).
  if (npcfRunner_) delete npcfRunner_.data();  // the previous job is finished (not busy)
  auto* runner = new JobRunner(QString::fromLatin1(npcf::to_string(cfg.statistic)),
                               makeNpcfJob(job), this);
  runner->setThreads(cfg.threads);
  npcfRunner_ = runner;
  connect(runner, &JobRunner::logMessage, log_, &LogPanel::append);
  connect(runner, &JobRunner::progressChanged, this, [this](int pct, const QString& stage) {
    panel_->setProgress(pct, stage);
    emit jobProgress(pct, stage);
  });
  connect(runner, &JobRunner::finished, this, [this, runner] { onJobFinished(runner); });

  log_->info(tr("Running %1: %2 bins in %3 < r < %4 Mpc/h (%5), %6 data + %7 random points")
                 .arg(runner->name())
                 .arg(cfg.bins.nbins)
                 .arg(cfg.bins.rmin)
                 .arg(cfg.bins.rmax)
                 .arg(cfg.bins.scale == npcf::BinScale::Log ? tr("log") : tr("linear"))
                 .arg(data_->size())
                 .arg(randoms_ ? randoms_->size() : 0));
  panel_->setRunning(true);
  panel_->setProgress(0, tr("queued"));
  panel_->setStatusText(tr("Running %1…").arg(runner->name()));
  scene_->setStatusText(tr("running %1…").arg(runner->name()));
  JobQueue::instance().submit(runner, JobQueue::deviceFor(QString::fromStdString(almagest::to_string(cfg.backend))), this);
  updateActions();
  emit jobStarted(runner);
  return true;
}

void MainWindow::cancelJob() {
  if (npcfRunner_ && !npcfRunner_->isFinished()) {
    log_->info(tr("Cancelling %1…").arg(npcfRunner_->name()));
    npcfRunner_->cancel();
  }
  if (loadRunner_ && !loadRunner_->isFinished()) loadRunner_->cancel();
}

void MainWindow::onJobFinished(JobRunner* runner) {
  panel_->setRunning(false);
  const JobRunner::State state = runner->state();
  switch (state) {
    case JobRunner::State::Completed: {
      const auto* out = runner->resultAs<NpcfOutputPtr>();
      result_ = out ? *out : nullptr;
      cataloguePanel_->setResult(result_ ? &result_->result : nullptr);  // never the replaced one
      if (result_) {
        const npcf::NpcfResult& r = result_->result;
        chart_->setResult(r);
        if (auto* views = findChild<NpcfViews*>()) views->setResult(r);
        const QString summary =
            tr("%1: %2 rows in %3 (graph %4, %5 edges) on %6")
                .arg(runner->name())
                .arg(r.rows())
                .arg(seconds(runner->elapsedSeconds()))
                .arg(seconds(result_->graphSeconds))
                .arg(QLocale().toString(qulonglong(r.graph_edges)))
                .arg(QString::fromStdString(result_->backend));
        log_->info(summary);
        panel_->setStatusText(summary);
        scene_->setStatusText(tr("%1 computed in %2").arg(runner->name(), seconds(runner->elapsedSeconds())));
        backendLabel_->setText(tr("Backend: %1").arg(QString::fromStdString(result_->backend).toUpper()));
      }
      break;
    }
    case JobRunner::State::Cancelled:
      log_->info(tr("%1 cancelled after %2; no new result.").arg(runner->name(), seconds(runner->elapsedSeconds())));
      panel_->setStatusText(result_ ? tr("Cancelled: the previous result is kept.") : tr("Cancelled: no result."));
      panel_->setProgress(0, tr("Cancelled"));
      scene_->setStatusText({});
      break;
    case JobRunner::State::Failed:
      panel_->setStatusText(tr("Failed: %1").arg(runner->errorMessage()));
      panel_->setProgress(panel_->progressBar()->value(), tr("failed"));
      scene_->setStatusText({});
      reportError(tr("The job failed"), runner->errorMessage());
      break;
    default: break;
  }
  updateActions();
  emit jobFinished(state);
}

bool MainWindow::saveResult(const QString& path, SaveFormat format) {
  if (!result_) {
    reportError(tr("Nothing to save"), tr("Run a job first."));
    return false;
  }
  try {
    if (format == SaveFormat::Hdf5) npcf::write_hdf5(result_->result, path.toStdString());
    else npcf::write_gramsci(result_->result, path.toStdString());
  } catch (const almagest::Error& e) {
    reportError(tr("Could not save the result"), QString::fromUtf8(e.what()));
    return false;
  } catch (const std::exception& e) {
    reportError(tr("Could not save the result"), tr("Internal error: %1").arg(QString::fromUtf8(e.what())));
    return false;
  }
  log_->info(tr("Saved %1").arg(QDir::toNativeSeparators(path)));
  statusBar()->showMessage(tr("Saved %1").arg(QFileInfo(path).fileName()), 5000);
  return true;
}

bool MainWindow::saveScreenshot(const QString& path) {
  const QPixmap pm = grab();
  if (pm.isNull() || !pm.save(path)) {
    log_->error(tr("Could not write the screenshot %1").arg(path));
    return false;
  }
  log_->info(tr("Screenshot written to %1").arg(path));
  return true;
}

void MainWindow::closeEvent(QCloseEvent* event) {
  // Work is never lost without asking: jobs of any window still queued or running.
  JobQueue& queue = JobQueue::instance();
  const int active = queue.activeCount();
  if (active > 0 && !quitWhenIdle_) {
    switch (app::askCloseDuringJob(this, active, true)) {
      case app::CloseChoice::CancelJobs:
        queue.cancelAll();
        break;
      case app::CloseChoice::KeepRunning:
        quitWhenIdle_ = true;
        statusBar()->showMessage(tr("Almagest quits when the last job has finished."));
        log_->info(tr("Quitting when the %n running job(s) have finished.", nullptr, active));
        event->ignore();
        return;
      case app::CloseChoice::DontClose:
        event->ignore();
        return;
    }
  } else if (active > 0) {
    event->ignore();  // quit requested again while waiting: keep waiting for the idle signal
    return;
  }
  if (rememberSession_) saveSession();
  closingAll_ = true;
  for (QMainWindow* t : toolWindows()) {
    if (auto* st = qobject_cast<StackWindow*>(t)) st->setConfirmCloseDuringJob(false);
    t->close();
  }
  cancelJob();
  QMainWindow::closeEvent(event);
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
  auto* w = qobject_cast<QMainWindow*>(watched);
  if (event->type() != QEvent::Close || !w || w == this || !tools_.contains(w)) return QMainWindow::eventFilter(watched, event);
  const int active = JobQueue::instance().activeCount(w);
  if (active > 0 && !closingAll_ && !w->property("closeWhenIdle").toBool()) {
    switch (app::askCloseDuringJob(w, active, false)) {
      case app::CloseChoice::CancelJobs:
        if (auto* st = qobject_cast<StackWindow*>(w)) st->setConfirmCloseDuringJob(false);  // asked already
        break;
      case app::CloseChoice::KeepRunning:
        w->setProperty("closeWhenIdle", true);
        w->statusBar()->showMessage(tr("This window closes when its job has finished."));
        event->ignore();
        return true;
      case app::CloseChoice::DontClose:
        event->ignore();
        return true;
    }
  }
  if (rememberSession_) {
    app::saveGeometry(w);
    app::saveLastState(w->objectName(), toolState(w));
  }
  return QMainWindow::eventFilter(watched, event);
}

void MainWindow::updateActions() {
  const bool busy = isBusy();
  const bool ready = data_ && (randoms_ || panel_->periodic());
  panel_->setReady(ready);
  runAction_->setEnabled(ready && !busy);
  cancelAction_->setEnabled(busy);
  saveHdf5Action_->setEnabled(result_ != nullptr && !busy);
  saveTextAction_->setEnabled(result_ != nullptr && !busy);
  openDataAction_->setEnabled(!busy);
  openRandomsAction_->setEnabled(!busy);
  openDemoAction_->setEnabled(!busy);
}

void MainWindow::reportError(const QString& title, const QString& message) {
  log_->error(message);
  if (!interactiveErrors_) return;
  auto* box = new QMessageBox(QMessageBox::Warning, title, message, QMessageBox::Ok, this);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();  // window-modal, does not block the event loop
}

void MainWindow::openFile(bool randoms) {
  const QString filter =
      tr("Catalogues (*.txt *.dat *.csv *.fits *.fit *.fits.gz *.h5 *.hdf5);;All files (*)");
  const QString current = randoms ? (randomsPath_.isEmpty() ? dataPath_ : randomsPath_) : dataPath_;
  const QString path = QFileDialog::getOpenFileName(
      this, randoms ? tr("Open random catalogue") : tr("Open data catalogue"),
      current.isEmpty() ? QString() : QFileInfo(current).absolutePath(), filter);
  if (path.isEmpty()) return;
  if (randoms) loadCatalogues({}, path);
  else loadCatalogues(path, {});
}

void MainWindow::saveAs(SaveFormat format) {
  if (!result_) return;
  const QString stat = QString::fromLatin1(npcf::to_string(result_->result.statistic));
  const QString base = QFileInfo(dataPath_).completeBaseName();
  const QString dir = dataPath_.isEmpty() ? QDir::homePath() : QFileInfo(dataPath_).absolutePath();
  const QString suggestion = dir + QLatin1Char('/') + (base.isEmpty() ? QStringLiteral("result") : base) +
                             QLatin1Char('_') + stat + (format == SaveFormat::Hdf5 ? QStringLiteral(".h5")
                                                                                  : QStringLiteral(".txt"));
  const QString filter = format == SaveFormat::Hdf5 ? tr("HDF5 files (*.h5 *.hdf5)") : tr("Text files (*.txt)");
  const QString path = QFileDialog::getSaveFileName(this, tr("Save result"), suggestion, filter);
  if (!path.isEmpty()) saveResult(path, format);
}

void MainWindow::showAbout() {
  QString text;
  QFile f(QStringLiteral(":/almagest/about.html"));
  if (f.open(QIODevice::ReadOnly)) text = QString::fromUtf8(f.readAll());
  else text = QStringLiteral("<h2>Almagest %1</h2><p>Qt %2, VTK %3</p>");
  text = text.arg(QString::fromStdString(almagest::version()), QString::fromLatin1(qVersion()),
                  VtkView::vtkVersionString());
  QMessageBox::about(this, tr("About Almagest"), text);
}

void MainWindow::showGpuStatus() {
  const almagest::GpuStatus& st = almagest::gpu_status();
  // summary() is the reason itself when no GPU is usable: say it once, under one heading.
  QString text = st.available
                     ? QStringLiteral("<p><b>%1</b></p>").arg(QString::fromStdString(st.summary()).toHtmlEscaped())
                     : tr("<p><b>No usable GPU.</b></p><p>Reason: %1</p>")
                           .arg(QString::fromStdString(st.reason.empty() ? st.summary() : st.reason).toHtmlEscaped());
  if (!st.module_path.empty())
    text += tr("<p>CUDA module: <tt>%1</tt></p>").arg(QString::fromStdString(st.module_path).toHtmlEscaped());
  for (const auto& d : st.query.devices)
    text += tr("<p>Device %1: %2, sm_%3%4, %5 multiprocessors, %6 GiB</p>")
                .arg(d.index)
                .arg(QString::fromStdString(d.name).toHtmlEscaped())
                .arg(d.cc_major)
                .arg(d.cc_minor)
                .arg(d.multiprocessors)
                .arg(static_cast<double>(d.total_memory) / (1024.0 * 1024.0 * 1024.0), 0, 'f', 1);
  text += tr("<p>The CPU backend is always available; choose the CUDA or Auto backend in the job panel where a GPU is.</p>");
  QMessageBox::information(this, tr("GPU status"), text);
}

void MainWindow::startGpuQuery() {
  // Loading the CUDA module and querying devices can take a moment: do it off the GUI thread.
  auto* watcher = new QFutureWatcher<QString>(this);
  connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher] {
    const QString summary = watcher->result();
    const bool ok = almagest::gpu_status().available;
    gpuLabel_->setText(tr("GPU: %1").arg(ok ? summary : tr("none")));
    gpuLabel_->setToolTip(summary);
    watcher->deleteLater();
  });
  watcher->setFuture(QtConcurrent::run([] { return QString::fromStdString(almagest::gpu_status().summary()); }));
}

}  // namespace almagest::ui
