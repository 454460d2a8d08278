#include "stackview/StackWindow.hpp"

#include "jobs/JobProgressBar.hpp"

#include <QAction>
#include <QChartView>
#include <QCloseEvent>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QLineEdit>
#include <QDockWidget>
#include <QFileInfo>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSlider>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QToolBar>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "almagest/core/error.hpp"
#include "app/Export.hpp"
#include "panels/LogPanel.hpp"
#include "panels/SchemaForm.hpp"
#include "stackview/ScoreCubeView.hpp"
#include "sky/AtomicImage.hpp"
#include "views/VtkView.hpp"
#include "stackview/CandidateCurves.hpp"
#include "stackview/CandidateModel.hpp"
#include "stackview/SearchPanel.hpp"
#include "stackview/StackImageView.hpp"
#include "stackview/StackImages.hpp"

namespace almagest::ui {

namespace stk = almagest::stack;
using namespace stackview;

namespace {

constexpr int kStampSide = 200;    // screen pixels of the coadded stamp (at least 6 per pixel)
constexpr int kCutoutScale = 6;    // screen pixels per cutout pixel
constexpr int kCutoutsPerRow = 8;

QString stackSummary(const LoadedStack& s) {
  const auto& st = s.stack;
  double baseline = 0;
  if (!st.mjd.empty()) {
    const auto [mn, mx] = std::minmax_element(st.mjd.begin(), st.mjd.end());
    baseline = *mx - *mn;
  }
  return QObject::tr("%1 exposures · %2 × %3 px · baseline %4 d%5")
      .arg(st.size())
      .arg(st.width)
      .arg(st.height)
      .arg(baseline, 0, 'f', 2)
      .arg(st.wcs_header.empty() ? QString() : QObject::tr(" · WCS"));
}

}  // namespace

StackWindow::StackWindow(QWidget* parent) : JobWindow(parent) {
  setWindowTitle(tr("Moving objects — Almagest"));
  setObjectName(QStringLiteral("StackWindow"));
  buildUi();
  buildActions();
  resize(1440, 920);
  updateActions();
}

StackWindow::~StackWindow() { stopJob(); }  // while the views still exist

void StackWindow::closeEvent(QCloseEvent* event) {
  // A running search may be minutes of work: closing asks before the job is dropped.
  if (isBusy() && confirmCloseDuringJob_) {
    const auto answer = QMessageBox::question(
        this, tr("A job is running"),
        tr("A job is running in this window. Cancel it and close the window? Nothing of it will be written."),
        QMessageBox::Yes | QMessageBox::No, QMessageBox::No);
    if (answer != QMessageBox::Yes) {
      event->ignore();
      return;
    }
  }
  cancelJob();
  JobWindow::closeEvent(event);
}

// ---- layout ---------------------------------------------------------------------------------

void StackWindow::buildUi() {
  // Exposure viewer with its slider.
  exposureView_ = new StackImageView(this);
  exposureView_->setObjectName(QStringLiteral("exposureView"));
  exposureView_->setToolTip(tr("Science plane of the shown exposure, y up (zscale by default; masked pixels dark "
                               "red); the selected candidate's predicted track in orange, its pixel in green. "
                               "Wheel or +/- zooms, drag pans, double-click or 0 fits"));
  slider_ = new QSlider(Qt::Horizontal, this);
  slider_->setObjectName(QStringLiteral("exposureSlider"));
  slider_->setRange(0, 0);
  slider_->setEnabled(false);
  slider_->setToolTip(tr("Exposure (Ctrl+Left / Ctrl+Right)"));
  exposureLabel_ = new QLabel(tr("no stack"), this);
  exposureLabel_->setMinimumWidth(110);
  auto* exposureBox = new QWidget(this);
  auto* ev = new QVBoxLayout(exposureBox);
  ev->setContentsMargins(0, 0, 0, 0);
  ev->addWidget(exposureView_, 1);
  auto* sl = new QHBoxLayout;
  sl->addWidget(slider_, 1);
  sl->addWidget(exposureLabel_);
  ev->addLayout(sl);
  connect(slider_, &QSlider::valueChanged, this, [this](int v) { setExposure(v); });

  bestZView_ = new StackImageView(this);
  bestZView_->setObjectName(QStringLiteral("bestZView"));
  bestZView_->setToolTip(tr("Best Z over the velocity grid for every origin pixel (viridis, 0 to max Z), y up; "
                            "candidates circled. Click a circle to select it; zoom and pan follow the exposure"));
  // Both views show the same pixels: zoom and pan of one follow the other.
  for (auto [a, b] : {std::pair{exposureView_, bestZView_}, std::pair{bestZView_, exposureView_}})
    connect(a, &StackImageView::viewChanged, b, [a, b] {
      if (a->image().size() != b->image().size()) return;
      const QSignalBlocker block(b);
      b->setZoom(a->zoom());
      b->setCentre(a->centre());
    });

  auto* images = new QSplitter(Qt::Horizontal, this);
  images->addWidget(exposureBox);
  images->addWidget(bestZView_);
  images->setChildrenCollapsible(false);
  images->setSizes({520, 520});

  // Candidate table.
  model_ = new CandidateModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(CandidateModel::SortRole);
  table_ = new QTableView(this);
  table_->setObjectName(QStringLiteral("candidateTable"));
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(CandidateModel::Z, Qt::DescendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setAlternatingRowColors(true);
  table_->verticalHeader()->setDefaultSectionSize(22);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  table_->setToolTip(tr("Candidates of the last search; click a header to sort, a row to see its stamps"));
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &StackWindow::onTableSelection);

  // Stamps: coadd and cutout strip.
  auto* stamps = new QGroupBox(tr("Stamps"), this);
  auto* sv = new QHBoxLayout(stamps);
  stampLabel_ = new QLabel(stamps);
  stampLabel_->setObjectName(QStringLiteral("stampLabel"));
  stampLabel_->setAlignment(Qt::AlignCenter);
  stampLabel_->setMinimumSize(kStampSide, kStampSide);
  stampLabel_->setToolTip(tr("Coadded stamp along the selected candidate's track"));
  stampKind_ = new QComboBox(stamps);
  stampKind_->addItems({tr("mean"), tr("median"), tr("weighted"), tr("sum")});
  stampKind_->setToolTip(tr("Coadd of the science planes along the track: mean and median over valid pixels, "
                            "inverse-variance weighted mean, or sum"));
  connect(stampKind_, &QComboBox::currentIndexChanged, this, [this] { showSelection(); });
  detailLabel_ = new QLabel(tr("Select a candidate"), stamps);
  detailLabel_->setObjectName(QStringLiteral("candidateDetail"));
  detailLabel_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  detailLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* left = new QVBoxLayout;
  left->addWidget(stampLabel_);
  left->addWidget(stampKind_);
  left->addWidget(detailLabel_);
  noteEdit_ = new QLineEdit(stamps);
  noteEdit_->setObjectName(QStringLiteral("vetNote"));
  noteEdit_->setPlaceholderText(tr("note (N)"));
  noteEdit_->setToolTip(tr("Note on the selected candidate, saved with the vetting (Enter keeps it)"));
  connect(noteEdit_, &QLineEdit::editingFinished, this, [this] {
    if (selected_ >= 0) setCandidateNote(selected_, noteEdit_->text());
  });
  left->addWidget(noteEdit_);
  left->addStretch(1);
  sv->addLayout(left);
  cutoutLabel_ = new QLabel(stamps);
  cutoutLabel_->setObjectName(QStringLiteral("cutoutLabel"));
  cutoutLabel_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  cutoutLabel_->setToolTip(tr("Per-exposure cutouts at the predicted pixel, in exposure order, each with its own "
                              "stretch (dark red: masked or off the image)"));
  cutoutScroll_ = new QScrollArea(stamps);
  cutoutScroll_->setWidget(cutoutLabel_);
  cutoutScroll_->setWidgetResizable(false);
  cutoutScroll_->setMinimumSize(160, 100);
  // Cutouts and the per-exposure curves share the space beside the coadd.
  curves_ = new CandidateCurves(stamps);
  curves_->setObjectName(QStringLiteral("candidateCurves"));
  detailTabs_ = new QTabWidget(stamps);
  detailTabs_->setObjectName(QStringLiteral("candidateDetailTabs"));
  detailTabs_->addTab(cutoutScroll_, tr("Cutouts"));
  detailTabs_->addTab(curves_, tr("Curves"));
  detailTabs_->setTabToolTip(1, tr("psi and phi along the track, the likelihood per exposure and the running Z"));
  // Right-click on a chart: PNG / SVG / PDF with the search's provenance (app::Export).
  for (auto [view, name] : {std::pair{static_cast<QWidget*>(curves_->samplesView()), QStringLiteral("psi_phi")},
                            std::pair{static_cast<QWidget*>(curves_->likelihoodView()), QStringLiteral("likelihood")}})
    app::installExportMenu(view, [this, name] { return app::ExportMeta{curvesTitle(name), searchProvenance()}; }, name);
  sv->addWidget(detailTabs_, 1);

  auto* results = new QSplitter(Qt::Horizontal, this);
  results->addWidget(table_);
  results->addWidget(stamps);
  results->setChildrenCollapsible(false);
  results->setSizes({560, 480});

  auto* central = new QSplitter(Qt::Vertical, this);
  central->addWidget(images);
  central->addWidget(results);
  central->setStretchFactor(0, 3);
  central->setStretchFactor(1, 2);
  central->setSizes({520, 330});
  central->setChildrenCollapsible(false);
  setCentralWidget(central);

  // Side panel and log.
  panel_ = new SearchPanel(this);
  panel_->setObjectName(QStringLiteral("searchPanel"));
  auto* scroll = new QScrollArea(this);
  scroll->setWidget(panel_);
  scroll->setWidgetResizable(true);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll->setMinimumWidth(panel_->sizeHint().width() + 24);
  auto* panelDock = new QDockWidget(tr("Search"), this);
  panelDock->setObjectName(QStringLiteral("stackSearchDock"));
  panelDock->setWidget(scroll);
  panelDock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
  addDockWidget(Qt::LeftDockWidgetArea, panelDock);
  connect(panel_, &SearchPanel::runRequested, this, [this] { runSearch(); });
  connect(panel_, &SearchPanel::cancelRequested, this, &StackWindow::cancelJob);
  // Every change is validated by the job layer at once: the form shows its message.
  connect(panel_, &SearchPanel::settingsChanged, this, [this] { checkSearchForm(); });

  log_ = new LogPanel(this);
  setJobLog(log_);
  auto* logDock = new QDockWidget(tr("Log"), this);
  logDock->setObjectName(QStringLiteral("stackLogDock"));
  logDock->setWidget(log_);
  addDockWidget(Qt::BottomDockWidgetArea, logDock);
  resizeDocks({logDock}, {110}, Qt::Vertical);

  // Status bar: readout, MJD, stack, progress, Cancel.
  readout_ = new QLabel(this);
  readout_->setObjectName(QStringLiteral("readout"));
  mjdLabel_ = new QLabel(this);
  mjdLabel_->setObjectName(QStringLiteral("mjdLabel"));
  mjdLabel_->setToolTip(tr("Shown exposure and its observation time"));
  stackInfo_ = new QLabel(this);
  statusBar()->addWidget(readout_, 1);
  statusBar()->addPermanentWidget(mjdLabel_);
  statusBar()->addPermanentWidget(stackInfo_);
  addJobStatus();

  buildDisplayBar();
  connect(exposureView_, &StackImageView::hovered, this, &StackWindow::onHoverExposure);
  connect(bestZView_, &StackImageView::hovered, this, &StackWindow::onHoverBestZ);
  connect(bestZView_, &StackImageView::clicked, this, &StackWindow::onBestZClicked);
}

void StackWindow::buildActions() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  openAction_ = file->addAction(tr("&Open stack…"), this, [this] { openStackDialog(false); });
  openAction_->setShortcut(QKeySequence::Open);
  openAction_->setIconText(tr("Open…"));
  openAction_->setToolTip(tr("Open a KBMOD WorkUnit FITS file or an HDF5 stack cube (Ctrl+O)"));
  openFolderAction_ = file->addAction(tr("Open exposure &folder…"), this, [this] { openStackDialog(true); });
  openFolderAction_->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+O")));
  openFolderAction_->setToolTip(tr("Open a folder of per-exposure FITS files (Ctrl+Shift+O)"));
  syntheticAction_ = file->addAction(tr("&New synthetic stack…"), this, &StackWindow::syntheticDialog);
  syntheticAction_->setShortcut(QKeySequence::New);
  syntheticAction_->setIconText(tr("Synthetic…"));
  syntheticAction_->setToolTip(tr("Generate a seeded synthetic stack with injected movers (Ctrl+N)"));
  file->addSeparator();
  saveCandidatesAction_ = file->addAction(tr("&Save candidates (ECSV)…"), this, &StackWindow::saveCandidatesDialog);
  saveCandidatesAction_->setShortcut(QKeySequence::Save);
  saveCandidatesAction_->setIconText(tr("Save ECSV"));
  saveCandidatesAction_->setToolTip(tr("Write the candidate table as ECSV 1.0 (Ctrl+S)"));
  saveResultAction_ = file->addAction(tr("Save &result (HDF5)…"), this, &StackWindow::saveResultDialog);
  saveResultAction_->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+S")));
  saveResultAction_->setToolTip(tr("Write candidates, curves, tracks and stamps as HDF5 (Ctrl+Shift+S)"));
  saveImageAction_ = file->addAction(tr("Save best-Z &image…"), this, &StackWindow::saveBestZDialog);
  saveImageAction_->setToolTip(tr("Save the best-Z image with the candidate circles as PNG"));
  file->addAction(tr("Save e&xposure image…"), this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Save exposure image"),
                                                      QDir(lastDir_).filePath(QStringLiteral("exposure.png")),
                                                      tr("PNG (*.png);;All files (*)"));
    if (!path.isEmpty()) saveExposureImage(path);
  });
  file->addAction(tr("Export score &cube view…"), this, [this] {
    if (!cubeView_ || !cube_) {
      reportError(tr("No score cube"), tr("Compute the score cube first (View > Score cube)."));
      return;
    }
    app::exportWithDialog(cubeView_->vtkView(), [this] { return app::ExportMeta{tr("score cube Z(x, y, v)"), searchProvenance()}; },
                          QStringLiteral("score_cube"));
  });
  file->addSeparator();
  QAction* close = file->addAction(tr("&Close"), this, &QWidget::close);
  close->setShortcut(QKeySequence::Close);

  QMenu* search = menuBar()->addMenu(tr("&Search"));
  runAction_ = search->addAction(tr("&Run search"), this, [this] { runSearch(); });
  runAction_->setShortcut(QKeySequence(QStringLiteral("Ctrl+R")));
  runAction_->setIconText(tr("Run"));
  runAction_->setToolTip(tr("psi/phi, plan and scan with the panel's settings (Ctrl+R)"));
  cancelAction_ = search->addAction(tr("&Cancel job"), this, &StackWindow::cancelJob);
  cancelAction_->setShortcut(QKeySequence(Qt::Key_Escape));
  cancelAction_->setIconText(tr("Cancel"));
  cancelAction_->setToolTip(tr("Cancel the running job (Esc)"));

  QMenu* view = menuBar()->addMenu(tr("&View"));
  prevAction_ = view->addAction(tr("&Previous exposure"), this, [this] { setExposure(exposure_ - 1); });
  prevAction_->setShortcut(QKeySequence(QStringLiteral("Ctrl+Left")));
  prevAction_->setIconText(tr("◀"));
  prevAction_->setToolTip(tr("Previous exposure (Ctrl+Left)"));
  nextAction_ = view->addAction(tr("&Next exposure"), this, [this] { setExposure(exposure_ + 1); });
  nextAction_->setShortcut(QKeySequence(QStringLiteral("Ctrl+Right")));
  nextAction_->setIconText(tr("▶"));
  nextAction_->setToolTip(tr("Next exposure (Ctrl+Right)"));
  view->addAction(blinkAction_);
  QAction* cubeAction = view->addAction(tr("Score &cube (3D)…"), this, [this] {
    showScoreCube();
    if (output_ && !cube_) computeScoreCube();
  });
  cubeAction->setShortcut(QKeySequence(QStringLiteral("Ctrl+3")));
  cubeAction->setToolTip(tr("Z(x, y, v) of the last search as a VTK volume, slices and isosurface (Ctrl+3)"));
  view->addSeparator();
  buildVettingActions(menuBar()->addMenu(tr("V&et")));
  for (QDockWidget* dock : findChildren<QDockWidget*>()) view->addAction(dock->toggleViewAction());

  QToolBar* tb = addToolBar(tr("Moving objects"));
  tb->setObjectName(QStringLiteral("stackToolBar"));
  tb->setToolButtonStyle(Qt::ToolButtonTextOnly);
  tb->addAction(openAction_);
  tb->addAction(syntheticAction_);
  tb->addSeparator();
  tb->addAction(runAction_);
  tb->addAction(cancelAction_);
  tb->addSeparator();
  tb->addAction(prevAction_);
  tb->addAction(nextAction_);
  tb->addAction(blinkAction_);
  tb->addSeparator();
  tb->addAction(saveCandidatesAction_);
}

// ---- jobs -----------------------------------------------------------------------------------

bool StackWindow::busyGuard(const QString& what) {
  if (!isBusy()) return false;
  reportError(tr("Busy"), tr("A job is running: cancel it or wait before %1.").arg(what));
  return true;
}

bool StackWindow::openStack(const QString& path) {
  if (busyGuard(tr("opening a stack"))) return false;
  if (path.isEmpty()) {
    reportError(tr("Open stack"), tr("No file or folder given."));
    return false;
  }
  lastDir_ = QFileInfo(path).absolutePath();
  log_->info(tr("Opening %1").arg(path));
  return startJob(JobKind::Load, tr("open stack"), makeOpenStackJob(path, 0.0));
}

bool StackWindow::newSyntheticStack(const stk::SyntheticConfig& config) {
  if (busyGuard(tr("generating a stack"))) return false;
  QString movers;
  for (const stk::Mover& m : config.movers)
    movers += tr("; mover at (%1, %2), v = (%3, %4) px/day, SNR %5")
                  .arg(m.x0, 0, 'f', 2)
                  .arg(m.y0, 0, 'f', 2)
                  .arg(m.vx, 0, 'f', 3)
                  .arg(m.vy, 0, 'f', 3)
                  .arg(m.snr, 0, 'g', 3);
  log_->info(tr("New synthetic stack: %1 exposures of %2 × %3, seed %4%5")
                 .arg(config.n_exp)
                 .arg(config.width)
                 .arg(config.height)
                 .arg(config.seed)
                 .arg(movers));
  return startJob(JobKind::Load, tr("synthetic stack"), makeSyntheticJob(config));
}

bool StackWindow::newSyntheticStack(int nExp, int width, int height, std::uint64_t seed, int movers, double snr) {
  stk::SyntheticConfig c;
  c.n_exp = nExp;
  c.width = width;
  c.height = height;
  c.seed = seed;
  c.movers = makeMovers(movers, snr, width, height, panel_->settings(), c.baseline_days, seed);
  return newSyntheticStack(c);
}

bool StackWindow::runSearch(const QString& savePath) {
  if (busyGuard(tr("starting a search"))) return false;
  if (!stack_) {
    reportError(tr("No stack"), tr("Open a stack or generate a synthetic one first."));
    return false;
  }
  // The job layer validates (the schema's ranges and choices, then make_stack_job's cross-field
  // rules, e.g. a .txt output or threshold-sigma with false-alarms): its message, the CLI's
  // without the "--", goes to the form's problem label and the log.
  stk::StackJob job;
  try {
    job = makeSearchStackJob(panel_->values(), stack_.get(), savePath);
  } catch (const almagest::ConfigError& e) {
    // Inline, as every form (SchemaForm): the problem under its field, Run greyed; no dialog.
    const QString why = QString::fromUtf8(e.what());
    panel_->showProblems(why);
    log_->error(tr("Invalid search settings: %1").arg(why));
    statusBar()->showMessage(tr("Invalid search settings: see the form"), 8000);
    updateActions();
    return false;
  }
  panel_->showProblems({});
  log_->info(tr("Search: %1 velocities, %2%3")
                 .arg(qulonglong(job.bank_from_file ? 0 : job.search.bank.size()))
                 .arg(QString::fromStdString(job.config_json()))
                 .arg(savePath.isEmpty() ? QString() : tr(", writing %1").arg(savePath)));
  return startJob(JobKind::Search, tr("search"), makeSearchJob(stack_, psiphiCache_, std::move(job), panel_->bestZMap()));
}

bool StackWindow::saveCandidates(const QString& path) {
  if (busyGuard(tr("saving"))) return false;
  if (!output_) {
    reportError(tr("No result"), tr("Run a search first."));
    return false;
  }
  lastDir_ = QFileInfo(path).absolutePath();
  return startJob(JobKind::Save, tr("save candidates"),
                  makeSaveJob(output_, SaveKind::CandidatesEcsv, path, panel_->stampRadius()));
}

bool StackWindow::saveResult(const QString& path) {
  if (busyGuard(tr("saving"))) return false;
  if (!output_) {
    reportError(tr("No result"), tr("Run a search first."));
    return false;
  }
  lastDir_ = QFileInfo(path).absolutePath();
  return startJob(JobKind::Save, tr("save result"),
                  makeSaveJob(output_, SaveKind::ResultHdf5, path, panel_->stampRadius()));
}

bool StackWindow::saveBestZImage(const QString& path) {
  if (bestZImage_.isNull()) {
    reportError(tr("No best-Z image"), tr("Run a search with the best-Z map enabled first."));
    return false;
  }
  // As drawn (y up, candidate circles, the highlighted one), at least ~768 pixels across.
  const int scale = std::clamp(768 / std::max(1, std::max(bestZImage_.width(), bestZImage_.height())), 1, 8);
  QString why;
  if (!saveImageAtomic(bestZView_->renderScene(scale), path, &why)) {
    reportError(tr("Could not save the image"), why);
    return false;
  }
  log_->info(tr("Saved the best-Z image to %1").arg(path));
  return true;
}

bool StackWindow::startJob(JobKind kind, const QString& name, JobRunner::Job job) {
  launchJob(name, std::move(job), [this, kind](JobRunner* runner) { onJobFinished(runner, kind); });
  return true;
}

void StackWindow::onJobFinished(JobRunner* runner, JobKind kind) {
  const JobRunner::State state = runner->state();
  bool loaded = false, searched = false;
  QString savedPath;
  if (state == JobRunner::State::Completed) {
    if (kind == JobKind::Load) {
      if (const auto* s = runner->resultAs<StackPtr>()) {
        showStack(*s);
        log_->info(tr("Loaded %1: %2 (%3 s)")
                       .arg((*s)->label, stackSummary(**s))
                       .arg(runner->elapsedSeconds(), 0, 'f', 2));
        loaded = true;
      }
    } else if (kind == JobKind::Search) {
      if (const auto* o = runner->resultAs<SearchOutputPtr>()) {
        showSearch(*o);
        searched = true;
        savedPath = (*o)->savedPath;
      }
    } else if (kind == JobKind::Cube) {
      if (const auto* c = runner->resultAs<std::shared_ptr<const stk::ScoreCube>>()) showCube(*c);
    } else if (const auto* p = runner->resultAs<QString>()) {
      savedPath = *p;
    }
    if (!savedPath.isEmpty()) {
      log_->info(tr("Saved %1").arg(savedPath));
      statusBar()->showMessage(tr("Saved %1").arg(QFileInfo(savedPath).fileName()), 5000);
    }
  } else if (state == JobRunner::State::Cancelled) {
    log_->info(tr("%1 cancelled.").arg(runner->name()));
  }
  if (state == JobRunner::State::Failed) {
    const QString title = kind == JobKind::Load     ? tr("Could not open the stack")
                          : kind == JobKind::Search ? tr("Search failed")
                          : kind == JobKind::Cube   ? tr("Score cube failed")
                                                    : tr("Could not save");
    reportError(title, runner->errorMessage());
  }
  endJob(state);
  // Last, so that slots may start the next job (the finished runner is deleted later).
  if (loaded) emit stackLoaded();
  if (searched) emit searchFinished();
  if (!savedPath.isEmpty()) emit saved(savedPath);
  emit jobFinished(state);
}

// ---- showing --------------------------------------------------------------------------------

void StackWindow::showStack(StackPtr s) {
  stack_ = std::move(s);
  psiphiCache_ = {};
  output_.reset();
  detail_.reset();
  showCube(nullptr);
  selected_ = -1;
  model_->clear();
  vetting_.clear();
  bestZImage_ = QImage();
  bestZView_->setImage({});
  bestZView_->clearOverlays();
  bestZView_->setTitle({});
  exposureView_->clearOverlays();
  stampImage_ = QImage();
  cutoutImage_ = QImage();
  stampLabel_->clear();
  cutoutLabel_->clear();
  cutoutLabel_->adjustSize();
  detailLabel_->setText(tr("Select a candidate"));
  const auto& st = stack_->stack;
  double baseline = 0;
  if (!st.mjd.empty()) {
    const auto [mn, mx] = std::minmax_element(st.mjd.begin(), st.mjd.end());
    baseline = *mx - *mn;
  }
  panel_->setBaseline(baseline);
  stackInfo_->setText(stackSummary(*stack_));
  setWindowTitle(tr("%1 — Moving objects — Almagest").arg(stack_->label));
  {
    const QSignalBlocker block(slider_);
    slider_->setRange(0, std::max(0, stack_->n() - 1));
    slider_->setValue(0);
  }
  exposure_ = 0;
  wcs_.reset();
  if (!st.wcs_header.empty()) {
    try {
      wcs_ = std::make_shared<stk::Wcs>(stk::Wcs::from_header(st.wcs_header, st.source));
    } catch (const std::exception& e) {
      log_->warning(tr("No RA/Dec readout: %1").arg(QString::fromUtf8(e.what())));
    }
  }
  widenGridForMovers();
  showExposure();
}

void StackWindow::showSearch(SearchOutputPtr out) {
  output_ = std::move(out);
  if (output_->stack == stack_) psiphiCache_ = {stack_, output_->psiphiOnGpu, output_->psiphi};
  const stk::SearchResult& r = output_->result;
  detail_.reset();
  showCube(nullptr);
  selected_ = -1;
  model_->setCandidates(r.candidates);
  vetting_.assign(r.candidates.size(), Vet{});
  table_->sortByColumn(proxy_->sortColumn() < 0 ? CandidateModel::Z : proxy_->sortColumn(), proxy_->sortOrder());

  QVector<QPointF> circles;
  circles.reserve(static_cast<int>(r.candidates.size()));
  for (const auto& c : r.candidates) circles << QPointF(c.x, c.y);
  if (!output_->bestZ.empty()) {
    const float zMax = *std::max_element(output_->bestZ.begin(), output_->bestZ.end());
    bestZImage_ = renderBestZ(output_->bestZ, r.width, r.height, zMax);
    bestZView_->setTitle(tr("best Z per origin (0 to %1)").arg(zMax, 0, 'f', 1));
  } else {
    // Without the top-1 scan: the candidates' Z at their origins, 0 elsewhere.
    std::vector<float> z(std::size_t(r.width) * std::size_t(r.height), 0.0f);
    float zMax = 0;
    for (const auto& c : r.candidates) {
      float& v = z[std::size_t(c.y) * std::size_t(r.width) + std::size_t(c.x)];
      v = std::max(v, static_cast<float>(c.z));
      zMax = std::max(zMax, v);
    }
    bestZImage_ = renderBestZ(z, r.width, r.height, zMax);
    bestZView_->setTitle(tr("candidate Z at their origins (no best-Z scan)"));
  }
  bestZView_->setImage(bestZImage_);
  bestZView_->setCircles(circles, std::max(1.5, output_->config.cluster.radius_px), -1);
  exposureView_->clearOverlays();
  stampLabel_->clear();
  cutoutLabel_->clear();
  cutoutLabel_->adjustSize();
  stampImage_ = QImage();
  cutoutImage_ = QImage();
  detailLabel_->setText(r.candidates.empty() ? tr("No candidates above Z = %1").arg(r.threshold_z, 0, 'f', 2)
                                             : tr("Select a candidate"));
  log_->info(tr("Search done on %1 (%2): %3 candidates (%4 hits%5), threshold Z >= %6, max Z %7; "
                "psi/phi %8 s, scan %9 s")
                 .arg(QString::fromStdString(r.backend), QString::fromStdString(r.device))
                 .arg(r.candidates.size())
                 .arg(r.raw_hits)
                 .arg(r.truncated ? tr(", truncated") : QString())
                 .arg(r.threshold_z, 0, 'f', 3)
                 .arg(r.digest.max_z, 0, 'f', 2)
                 .arg(output_->psiphiSeconds, 0, 'f', 2)
                 .arg(r.scan_seconds, 0, 'f', 2));
  statusBar()->showMessage(tr("%1 candidates, threshold Z >= %2").arg(r.candidates.size()).arg(r.threshold_z, 0, 'f', 2),
                           8000);
  if (!r.candidates.empty()) selectCandidate(0);
}

bool StackWindow::setExposure(int e) {
  if (!stack_ || e < 0 || e >= stack_->n()) return false;
  exposure_ = e;
  if (slider_->value() != e) {
    const QSignalBlocker block(slider_);
    slider_->setValue(e);
  }
  showExposure();
  return true;
}

void StackWindow::showExposure() {
  if (!stack_) return;
  exposureImage_ = renderExposureWith(stack_->stack, exposure_, stretchMode_, manual_, &shownStretch_);
  exposureView_->setImage(exposureImage_);
  exposureView_->setOverlay(maskOverlay_ ? renderMaskOverlay(stack_->stack, exposure_) : QImage());
  exposureView_->setTitle(tr("exposure %1 / %2").arg(exposure_ + 1).arg(stack_->n()));
  exposureLabel_->setText(tr("%1 / %2").arg(exposure_ + 1).arg(stack_->n()));
  if (detail_ && std::size_t(exposure_) < detail_->px.size())
    exposureView_->setMarker(QPointF(detail_->px[std::size_t(exposure_)], detail_->py[std::size_t(exposure_)]), true);
  else exposureView_->setMarker({}, false);
  updateMjdLabel();
  updateActions();
}

void StackWindow::updateMjdLabel() {
  if (!stack_ || stack_->stack.mjd.empty()) {
    mjdLabel_->clear();
    return;
  }
  const auto& mjd = stack_->stack.mjd;
  const double t = mjd[std::size_t(exposure_)];
  mjdLabel_->setText(tr("exposure %1 · MJD %2 · t = %3 d").arg(exposure_).arg(t, 0, 'f', 5).arg(t - mjd.front(), 0, 'f', 4));
}

bool StackWindow::selectCandidate(int index) {
  const int n = static_cast<int>(candidates().size());
  if (index < -1 || index >= n) return false;
  selected_ = index;
  detail_.reset();
  if (index >= 0) {
    try {
      detail_ = std::make_unique<stk::CandidateDetail>(describeOne(*output_, index, panel_->stampRadius()));
    } catch (const std::exception& e) {
      reportError(tr("Candidate details"), QString::fromUtf8(e.what()));
    }
  }
  // Keep the table's selection in step (without re-entering through selectionChanged).
  if (!syncingSelection_) {
    syncingSelection_ = true;
    if (index < 0) table_->clearSelection();
    else {
      const QModelIndex pi = proxy_->mapFromSource(model_->index(index, 0));
      table_->selectionModel()->select(pi, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
      table_->scrollTo(pi);
    }
    syncingSelection_ = false;
  }
  bestZView_->setHighlighted(index);
  showSelection();
  showVetting(index);
  emit candidateSelected(index);
  return true;
}

void StackWindow::showSelection() {
  curves_->setDetail(detail_.get());
  if (!detail_ || !stack_) {
    exposureView_->setTrack({});
    exposureView_->setMarker({}, false);
    stampLabel_->clear();
    cutoutLabel_->clear();
    cutoutLabel_->adjustSize();
    stampImage_ = QImage();
    cutoutImage_ = QImage();
    return;
  }
  const stk::CandidateDetail& d = *detail_;
  const stk::SearchConfig& cfg = output_->config;
  // Continuous predicted track x0 + v t + curve, in exposure order.
  QVector<QPointF> track;
  for (std::size_t e = 0; e < d.t.size(); ++e) {
    const double dx = cfg.curve_dx.size() == d.t.size() ? cfg.curve_dx[e] : 0.0;
    const double dy = cfg.curve_dy.size() == d.t.size() ? cfg.curve_dy[e] : 0.0;
    track << QPointF(d.c.x + d.c.vx * d.t[e] + dx, d.c.y + d.c.vy * d.t[e] + dy);
  }
  exposureView_->setTrack(track);
  if (std::size_t(exposure_) < d.px.size())
    exposureView_->setMarker(QPointF(d.px[std::size_t(exposure_)], d.py[std::size_t(exposure_)]), true);

  const std::vector<float>* st = &d.stamp_mean;
  switch (stampKind_->currentIndex()) {
    case 1: st = &d.stamp_median; break;
    case 2: st = &d.stamp_weighted; break;
    case 3: st = &d.stamp_sum; break;
    default: break;
  }
  stampImage_ = renderStamp(*st, d.stamp_size);
  // Whole screen pixels per stamp pixel, y up as in the exposure view.
  const int stampScale = stampImage_.isNull() ? 1 : std::max(6, kStampSide / std::max(1, stampImage_.width()));
  stampLabel_->setPixmap(stampImage_.isNull() ? QPixmap()
                                              : QPixmap::fromImage(stampImage_.mirrored(false, true).scaled(
                                                    stampImage_.size() * stampScale, Qt::IgnoreAspectRatio,
                                                    Qt::FastTransformation)));
  const int radius = (d.stamp_size - 1) / 2;
  cutoutImage_ = renderCutoutStrip(stack_->stack, d, radius, kCutoutsPerRow);
  cutoutLabel_->setPixmap(cutoutImage_.isNull() ? QPixmap()
                                                : QPixmap::fromImage(cutoutImage_.scaled(
                                                      cutoutImage_.size() * kCutoutScale, Qt::IgnoreAspectRatio,
                                                      Qt::FastTransformation)));
  cutoutLabel_->adjustSize();
  int valid = 0;
  for (auto v : d.valid) valid += v ? 1 : 0;
  detailLabel_->setText(tr("#%1 at (%2, %3)\nv (%4, %5) px/d\nZ %6 · flux %7\n%8/%9 valid · %10 merged%11")
                            .arg(selected_ + 1)
                            .arg(d.c.x)
                            .arg(d.c.y)
                            .arg(d.c.vx, 0, 'f', 3)
                            .arg(d.c.vy, 0, 'f', 3)
                            .arg(d.c.z, 0, 'f', 2)
                            .arg(d.c.flux, 0, 'g', 4)
                            .arg(valid)
                            .arg(d.valid.size())
                            .arg(d.c.members)
                            .arg(d.ra.empty() ? QString()
                                              : tr("\nRA %1° Dec %2°").arg(d.ra.front(), 0, 'f', 6).arg(d.dec.front(), 0, 'f', 6)));
}

void StackWindow::onTableSelection() {
  if (syncingSelection_) return;
  const QModelIndexList rows = table_->selectionModel()->selectedRows();
  const int index = rows.isEmpty() ? -1 : proxy_->mapToSource(rows.front()).row();
  if (index == selected_) return;
  syncingSelection_ = true;
  selectCandidate(index);
  syncingSelection_ = false;
}

const std::vector<stk::Candidate>& StackWindow::candidates() const {
  static const std::vector<stk::Candidate> empty;
  return output_ ? output_->result.candidates : empty;
}

const std::vector<float>& StackWindow::bestZ() const {
  static const std::vector<float> empty;
  return output_ ? output_->bestZ : empty;
}

QString StackWindow::searchProvenance() const {
  return output_ ? QString::fromStdString(output_->result.provenance.to_json()) : QString();
}

QString StackWindow::curvesTitle(const QString& which) const {
  const stk::Candidate* c = detail_ ? &detail_->c : nullptr;
  const QString what = which == QLatin1String("psi_phi") ? tr("psi and phi along the track") : tr("likelihood and running Z");
  return c ? tr("%1 of candidate #%2 at (%3, %4), v (%5, %6) px/d")
                 .arg(what)
                 .arg(selected_ + 1)
                 .arg(c->x)
                 .arg(c->y)
                 .arg(c->vx, 0, 'f', 3)
                 .arg(c->vy, 0, 'f', 3)
           : what;
}

void StackWindow::setSearchSettings(const SearchSettings& s) { panel_->setSettings(s); }
SearchSettings StackWindow::searchSettings() const { return panel_->settings(); }

stk::SearchConfig StackWindow::searchConfig() const {
  if (!stack_) throw almagest::ConfigError("stack", "no stack loaded");
  return searchConfigOf(makeSearchStackJob(panel_->values(), stack_.get()), *stack_);
}

QString StackWindow::checkSearchForm() {
  QString text;
  try {
    (void)makeSearchStackJob(panel_->values(), stack_.get());
  } catch (const almagest::ConfigError& e) {
    text = QString::fromUtf8(e.what());
  }
  panel_->showProblems(text);
  updateActions();  // Run is greyed while the form has problems
  return text;
}

void StackWindow::updateActions() {
  const bool busy = isBusy();
  const bool haveStack = stack_ != nullptr, haveResult = output_ != nullptr;
  openAction_->setEnabled(!busy);
  openFolderAction_->setEnabled(!busy);
  syntheticAction_->setEnabled(!busy);
  const bool formOk = panel_->form()->problems().isEmpty();
  runAction_->setEnabled(!busy && haveStack && formOk);
  cancelAction_->setEnabled(busy);
  cancelButton_->setEnabled(busy);
  panel_->setRunEnabled(!busy && haveStack && formOk);
  panel_->setCancelEnabled(busy);
  panel_->setLocked(busy);
  saveCandidatesAction_->setEnabled(!busy && haveResult);
  saveResultAction_->setEnabled(!busy && haveResult);
  saveImageAction_->setEnabled(!bestZImage_.isNull());
  slider_->setEnabled(haveStack && stack_->n() > 1);
  prevAction_->setEnabled(haveStack && exposure_ > 0);
  nextAction_->setEnabled(haveStack && exposure_ + 1 < stack_->n());
}

}  // namespace almagest::ui
