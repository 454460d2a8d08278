#include "sky/SkyMapWindow.hpp"

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QScreen>
#include <QSpinBox>
#include <QScrollArea>
#include <QSplitter>
#include <QStandardItemModel>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolBar>
#include <QVBoxLayout>

#include <string>

#include "almagest/core/error.hpp"
#include "almagest/core/gpu.hpp"
#include "almagest/sht/config.hpp"
#include "almagest/sht/job.hpp"
#include "jobs/JobProgressBar.hpp"
#include "panels/LogPanel.hpp"
#include "panels/SchemaForm.hpp"
#include "sky/AtomicImage.hpp"
#include "sky/SkyMapView.hpp"
#include "sky/SkyProjection.hpp"
#include "sky/SkySphereView.hpp"
#include "sky/SpectrumChart.hpp"

namespace almagest::ui {

namespace {

QString describeMap(const sky::SkyMapData& m) {
  QString s = QObject::tr("nside %1, %2 pixels, %3 column(s)")
                  .arg(m.nside)
                  .arg(m.npix())
                  .arg(m.columns.size());
  if (m.wasNested) s += QObject::tr(", NESTED on disk");
  if (m.wasPartial) s += QObject::tr(", partial sky");
  if (!m.coordsys.empty()) s += QObject::tr(", COORDSYS %1").arg(QString::fromStdString(m.coordsys));
  return s;
}

}  // namespace

SkyMapWindow::SkyMapWindow(QWidget* parent) : JobWindow(parent) {
  setWindowTitle(tr("Sky map — Almagest"));
  setObjectName(QStringLiteral("SkyMapWindow"));
  buildUi();
  buildShtDock();
  buildActions();
  buildDisplayBar();
  // 1100 x 880, or 90% of the screen where that is smaller.
  QSize size(1100, 880);
  if (const QScreen* sc = screen()) size = size.boundedTo(sc->availableGeometry().size() * 0.9);
  resize(size);
  updateActions();
}

SkyMapWindow::~SkyMapWindow() { stopJob(); }  // while the views still exist

void SkyMapWindow::buildUi() {
  view_ = new SkyMapView(this);
  chart_ = new SpectrumChart(this);
  // The 2D view and the sphere as tabs; the sphere's VTK view is made when its tab is first
  // shown (a window that never shows it needs no OpenGL).
  tabs_ = new QTabWidget(this);
  tabs_->setObjectName(QStringLiteral("skyViews"));
  tabs_->addTab(view_, tr("Map"));
  spherePage_ = new QWidget(tabs_);
  spherePage_->setObjectName(QStringLiteral("spherePage"));
  auto* sphereLayout = new QVBoxLayout(spherePage_);
  sphereLayout->setContentsMargins(0, 0, 0, 0);
  tabs_->addTab(spherePage_, tr("Sphere (3D)"));
  tabs_->setTabToolTip(1, tr("The map on a sphere in VTK, with the mask overlaid: drag to rotate, wheel to zoom"));
  connect(tabs_, &QTabWidget::currentChanged, this, [this](int index) {
    if (index == 1) showSphere();
  });
  auto* splitter = new QSplitter(Qt::Vertical, this);
  splitter->addWidget(tabs_);
  splitter->addWidget(chart_);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 2);
  splitter->setSizes({430, 330});
  splitter->setChildrenCollapsible(false);
  setCentralWidget(splitter);

  log_ = new LogPanel(this);
  setJobLog(log_);
  auto* dock = new QDockWidget(tr("Log"), this);
  dock->setObjectName(QStringLiteral("skyLogDock"));
  dock->setWidget(log_);
  addDockWidget(Qt::BottomDockWidgetArea, dock);
  resizeDocks({dock}, {110}, Qt::Vertical);  // a few lines; the chart needs the height

  columnBox_ = new QComboBox(this);
  columnBox_->setObjectName(QStringLiteral("column"));
  columnBox_->setToolTip(tr("Map column to show and analyse (e.g. I, Q, U)."));
  columnBox_->setMinimumContentsLength(14);
  columnBox_->setEnabled(false);
  connect(columnBox_, &QComboBox::activated, this, [this](int index) { setColumn(index); });

  lmaxSpin_ = new QSpinBox(this);
  lmaxSpin_->setObjectName(QStringLiteral("lmax"));
  lmaxSpin_->setRange(0, 4 * 8192);
  lmaxSpin_->setValue(3 * kDemoNside - 1);
  lmaxSpin_->setToolTip(tr("Band limit of the spectrum (default 3 nside - 1, at most 4 nside)."));

  // Backend: the CUDA entry is disabled (with the reason) where no GPU can be used.
  backendBox_ = new QComboBox(this);
  backendBox_->setObjectName(QStringLiteral("backend"));
  backendBox_->addItem(tr("CPU"), static_cast<int>(sky::BackendChoice::Cpu));
  backendBox_->addItem(tr("CUDA (GPU)"), static_cast<int>(sky::BackendChoice::Cuda));
  backendBox_->addItem(tr("Auto"), static_cast<int>(sky::BackendChoice::Auto));
  const GpuStatus& gpu = gpu_status();
  if (!gpu.available) {
    if (auto* model = qobject_cast<QStandardItemModel*>(backendBox_->model()))
      if (QStandardItem* item = model->item(1)) {
        item->setEnabled(false);
        item->setToolTip(QString::fromStdString(gpu.reason));
      }
    backendBox_->setToolTip(tr("SHT backend. No usable GPU: %1 (Auto runs on the CPU).")
                                .arg(QString::fromStdString(gpu.reason)));
  } else {
    backendBox_->setToolTip(tr("SHT backend. GPU: %1 (Auto runs on it).")
                                .arg(QString::fromStdString(gpu.summary())));
  }
  backendBox_->setCurrentIndex(2);

  // Quadrature weights of map2alm: picking a weight-file entry asks for the file.
  weightsBox_ = new QComboBox(this);
  weightsBox_->setObjectName(QStringLiteral("weights"));
  weightsBox_->addItem(tr("Uniform"), static_cast<int>(sky::SkyWeights::Kind::Uniform));
  weightsBox_->addItem(tr("Ring weights…"), static_cast<int>(sky::SkyWeights::Kind::Ring));
  weightsBox_->addItem(tr("Pixel weights…"), static_cast<int>(sky::SkyWeights::Kind::Pixel));
  weightsBox_->setToolTip(tr("Quadrature weights of map2alm, as healpy's: uniform 4 pi / Npix with 3 "
                             "iterations; a ring weight file (weight_ring_nNNNNN.fits, use_weights) "
                             "with 3 iterations; a full pixel weight file "
                             "(healpix_full_weights_nside_NNNN.fits, use_pixel_weights), no iterations."));
  connect(weightsBox_, &QComboBox::activated, this, &SkyMapWindow::chooseWeights);

  spectrumProblem_ = new QLabel(this);
  spectrumProblem_->setObjectName(QStringLiteral("spectrumProblem"));
  spectrumProblem_->setStyleSheet(QStringLiteral("color: #b00020"));
  spectrumProblem_->setVisible(false);

  readout_ = new QLabel(this);
  readout_->setObjectName(QStringLiteral("readout"));
  readout_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  mapInfo_ = new QLabel(this);
  statusBar()->addWidget(readout_, 1);
  statusBar()->addPermanentWidget(mapInfo_);
  addJobStatus();
  connect(view_, &SkyMapView::hovered, readout_, &QLabel::setText);
}

void SkyMapWindow::buildActions() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  openAction_ = file->addAction(tr("&Open map…"), this, &SkyMapWindow::openMapDialog);
  openAction_->setShortcut(QKeySequence::Open);
  openAction_->setIconText(tr("Open…"));
  openAction_->setToolTip(tr("Open a HEALPix map FITS file (Ctrl+O)"));
  demoAction_ = file->addAction(tr("Open &demo map"), this, [this] { openDemoMap(); });
  demoAction_->setShortcut(QKeySequence(QStringLiteral("Ctrl+D")));
  demoAction_->setIconText(tr("Demo map"));
  demoAction_->setToolTip(tr("Synthesise a seeded Gaussian random map, nside %1, with "
                             "D_l = 1 (Ctrl+D)").arg(kDemoNside));
  clSynthAction_ = file->addAction(tr("Synthesise from a &C_l file…"), this, &SkyMapWindow::synthesiseFromClDialog);
  clSynthAction_->setToolTip(tr("A Gaussian random map with the power spectrum of a C_l file (text \"l C_l\" or a "
                                "healpy write_cl FITS table) at the nside and seed you choose"));
  openMaskAction_ = file->addAction(tr("Open &mask…"), this, &SkyMapWindow::openMaskDialog);
  openMaskAction_->setToolTip(tr("A HEALPix mask map of the same nside: pixels where it is 0 or UNSEEN are drawn "
                                 "blended with magenta in the map and on the sphere"));
  planeMaskAction_ = file->addAction(tr("Mask the plane |lat| < 20°"), this, [this] { setPlaneMask(20.0); });
  planeMaskAction_->setToolTip(tr("Mask the band within 20° of the map's equator (the Galactic plane of a Galactic map)"));
  clearMaskAction_ = file->addAction(tr("Clear mask"), this, &SkyMapWindow::clearMask);
  QMenu* demoSizes = file->addMenu(tr("Open demo map with &nside"));
  demoSizes->setToolTipsVisible(true);
  for (int ns : {32, 64, 128, 256, 512, 1024}) {
    QAction* a = demoSizes->addAction(tr("nside %1 (%2 pixels)").arg(ns).arg(12LL * ns * ns), this,
                                      [this, ns] { openDemoMap(ns); });
    a->setToolTip(tr("Gaussian random map with D_l = 1 up to lmax = %1").arg(3 * ns - 1));
    demoSizeActions_.push_back(a);
  }
  file->addSeparator();
  saveSpectrumAction_ = file->addAction(tr("&Save spectrum…"), this, &SkyMapWindow::saveSpectrumDialog);
  saveSpectrumAction_->setShortcut(QKeySequence::Save);
  saveSpectrumAction_->setIconText(tr("Save spectrum"));
  saveSpectrumAction_->setToolTip(tr("Save the spectrum as text: l, C_l, D_l (Ctrl+S)"));
  saveImageAction_ = file->addAction(tr("Save &image…"), this, &SkyMapWindow::saveImageDialog);
  saveImageAction_->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+S")));
  saveImageAction_->setToolTip(tr("Save the Mollweide image as PNG (Ctrl+Shift+S)"));
  file->addSeparator();
  QAction* close = file->addAction(tr("&Close"), this, &QWidget::close);
  close->setShortcut(QKeySequence::Close);

  QMenu* analysis = menuBar()->addMenu(tr("&Analysis"));
  spectrumAction_ = analysis->addAction(tr("Compute &spectrum"), this, [this] { computeSpectrum(); });
  spectrumAction_->setShortcut(QKeySequence(QStringLiteral("Ctrl+R")));
  spectrumAction_->setIconText(tr("Spectrum"));
  spectrumAction_->setToolTip(tr("Angular power spectrum of the shown column: map2alm (3 "
                                 "iterations) and alm2cl (Ctrl+R)"));
  cancelAction_ = analysis->addAction(tr("&Cancel job"), this, &SkyMapWindow::cancelJob);
  cancelAction_->setShortcut(QKeySequence(Qt::Key_Escape));
  cancelAction_->setIconText(tr("Cancel"));
  cancelAction_->setToolTip(tr("Cancel the running job (Esc)"));

  QMenu* viewMenu = menuBar()->addMenu(tr("&View"));
  logAxesAction_ = viewMenu->addAction(tr("&Logarithmic axes"));
  logAxesAction_->setCheckable(true);
  logAxesAction_->setShortcut(QKeySequence(QStringLiteral("Ctrl+L")));
  logAxesAction_->setIconText(tr("Log axes"));
  logAxesAction_->setToolTip(tr("Logarithmic l and D_l axes for the spectrum (Ctrl+L)"));
  connect(logAxesAction_, &QAction::toggled, chart_, &SpectrumChart::setLogAxes);
  viewMenu->addSeparator();
  for (QDockWidget* dock : findChildren<QDockWidget*>()) viewMenu->addAction(dock->toggleViewAction());

  QToolBar* tb = addToolBar(tr("Sky map"));
  tb->setObjectName(QStringLiteral("skyToolBar"));
  tb->addAction(openAction_);
  tb->addAction(demoAction_);
  tb->addSeparator();
  tb->addWidget(new QLabel(tr(" Column "), tb));
  tb->addWidget(columnBox_);
  tb->addSeparator();
  tb->addWidget(new QLabel(tr(" lmax "), tb));
  tb->addWidget(lmaxSpin_);
  tb->addWidget(new QLabel(tr(" Backend "), tb));
  tb->addWidget(backendBox_);
  tb->addWidget(new QLabel(tr(" Weights "), tb));
  tb->addWidget(weightsBox_);
  tb->addAction(spectrumAction_);
  tb->addWidget(spectrumProblem_);
  tb->addAction(cancelAction_);
  tb->addSeparator();
  tb->addAction(logAxesAction_);
  tb->addAction(saveSpectrumAction_);
}

const std::vector<double>& SkyMapWindow::values() const {
  static const std::vector<double> empty;
  if (!map_ || column_ < 0 || column_ >= static_cast<int>(map_->columns.size())) return empty;
  return map_->columns[static_cast<std::size_t>(column_)];
}

const std::vector<double>& SkyMapWindow::spectrum() const {
  static const std::vector<double> empty;
  return spectrum_ ? spectrum_->cl : empty;
}

void SkyMapWindow::setBackendChoice(sky::BackendChoice choice) {
  const int i = backendBox_->findData(static_cast<int>(choice));
  if (i >= 0) backendBox_->setCurrentIndex(i);
}

sky::BackendChoice SkyMapWindow::backendChoice() const {
  return static_cast<sky::BackendChoice>(backendBox_->currentData().toInt());
}

void SkyMapWindow::setWeights(const sky::SkyWeights& weights) {
  weights_ = weights;
  const int i = weightsBox_->findData(static_cast<int>(weights.kind));
  if (i >= 0) weightsBox_->setCurrentIndex(i);
  const QString file = QString::fromStdString(weights.path);
  for (int k = 1; k < weightsBox_->count(); ++k) weightsBox_->setItemData(k, QVariant(), Qt::ToolTipRole);
  if (weights.kind != sky::SkyWeights::Kind::Uniform && i >= 0)
    weightsBox_->setItemData(i, file, Qt::ToolTipRole);
}

void SkyMapWindow::chooseWeights(int index) {
  const auto kind = static_cast<sky::SkyWeights::Kind>(weightsBox_->itemData(index).toInt());
  if (kind == sky::SkyWeights::Kind::Uniform) {
    setWeights({});
    return;
  }
  const QString path = QFileDialog::getOpenFileName(
      this, kind == sky::SkyWeights::Kind::Ring ? tr("Ring weight file") : tr("Pixel weight file"),
      lastDir_, tr("HEALPix weight files (*.fits *.fit *.fits.gz);;All files (*)"));
  if (path.isEmpty()) {
    setWeights(weights_);  // keep the previous choice
    return;
  }
  lastDir_ = QFileInfo(path).absolutePath();
  setWeights({kind, QDir::toNativeSeparators(path).toStdString()});
  log_->info(tr("map2alm weights: %1").arg(QString::fromStdString(weights_.describe())));
}

void SkyMapWindow::setLogAxes(bool on) { logAxesAction_->setChecked(on); }

bool SkyMapWindow::openMap(const QString& path, int column) {
  if (isBusy()) {
    reportError(tr("Busy"), tr("A job is running: cancel it or wait before opening a map."));
    return false;
  }
  const std::string p = QDir::toNativeSeparators(path).toStdString();
  log_->info(tr("Opening %1").arg(path));
  lastDir_ = QFileInfo(path).absolutePath();
  return startJob(JobKind::Map, tr("open map"),
                  [p, column](const JobContext& ctx) -> std::any {
                    try {
                      return std::any(std::make_shared<const sky::SkyMapData>(sky::loadSkyMap(
                          p, column, sky::kImageWidth, sky::kImageHeight, ctx)));
                    } catch (...) {
                      rethrowNamingFile(p);
                    }
                  },
                  column);
}

bool SkyMapWindow::openDemoMap(int nside, std::uint64_t seed) {
  if (nside < 1 || nside > 8192) {
    synthesisProblem_ = tr("nside: must be in 1..8192, got %1").arg(nside);
    log_->warning(tr("Demo map not started: %1").arg(synthesisProblem_));
    statusBar()->showMessage(synthesisProblem_, 10000);
    return false;
  }
  synthesisProblem_.clear();
  return openSynthesisedMap(nside, sky::demoCl(3 * nside - 1), seed);
}

bool SkyMapWindow::openSynthesisedMap(int nside, const std::vector<double>& cl, std::uint64_t seed,
                                      const QString& savePath) {
  if (isBusy()) {
    reportError(tr("Busy"), tr("A job is running: cancel it or wait before opening a map."));
    return false;
  }
  log_->info(tr("Synthesising a Gaussian random map: nside %1, lmax %2, seed %3%4")
                 .arg(nside)
                 .arg(static_cast<int>(cl.size()) - 1)
                 .arg(seed)
                 .arg(savePath.isEmpty() ? QString() : tr(", saving to %1").arg(savePath)));
  const std::string save = savePath.isEmpty() ? std::string() : QDir::toNativeSeparators(savePath).toStdString();
  return startJob(JobKind::Map, tr("synthesise map"),
                  [nside, cl, seed, save](const JobContext& ctx) {
                    auto m = std::make_shared<sky::SkyMapData>(
                        sky::synthesiseSkyMap(nside, cl, seed, sky::kImageWidth, sky::kImageHeight, ctx));
                    if (!save.empty()) sky::writeSkyMap(save, *m, ctx);
                    return std::any(std::shared_ptr<const sky::SkyMapData>(std::move(m)));
                  },
                  0);
}

bool SkyMapWindow::openSynthesisFromClFile(const QString& clPath, int nside, std::uint64_t seed,
                                           const QString& savePath, int lmax) {
  // The arguments' problems inline (the status-bar label and the log), as forms show them.
  synthesisProblem_.clear();
  if (clPath.isEmpty()) synthesisProblem_ = tr("C_l file: no file chosen");
  else if (nside < 1 || nside > 8192) synthesisProblem_ = tr("nside: must be in 1..8192, got %1").arg(nside);
  else if (lmax > 4 * nside) synthesisProblem_ = tr("lmax: must be at most 4 nside = %1, got %2").arg(4 * nside).arg(lmax);
  if (!synthesisProblem_.isEmpty()) {
    log_->warning(tr("Synthesis not started: %1").arg(synthesisProblem_));
    statusBar()->showMessage(synthesisProblem_, 10000);
    return false;
  }
  if (isBusy()) {
    synthesisProblem_ = tr("a job is running: cancel it or wait");
    statusBar()->showMessage(synthesisProblem_, 10000);
    return false;
  }
  const std::string cls = QDir::toNativeSeparators(clPath).toStdString();
  const std::string save = savePath.isEmpty() ? std::string() : QDir::toNativeSeparators(savePath).toStdString();
  log_->info(tr("Synthesising a Gaussian random map from %1: nside %2, seed %3%4")
                 .arg(clPath)
                 .arg(nside)
                 .arg(seed)
                 .arg(save.empty() ? QString() : tr(", saving to %1").arg(savePath)));
  return startJob(JobKind::Map, tr("synthesise map from C_l"),
                  [cls, nside, seed, save, lmax](const JobContext& ctx) -> std::any {
                    try {
                      std::vector<double> cl = sky::readClFile(cls);
                      // The band limit: the file's, at most 4 nside (larger l dropped), or the given one.
                      const int L = lmax >= 0 ? lmax : std::min(static_cast<int>(cl.size()) - 1, 4 * nside);
                      cl.resize(static_cast<std::size_t>(L) + 1, 0.0);
                      auto m = std::make_shared<sky::SkyMapData>(
                          sky::synthesiseSkyMap(nside, cl, seed, sky::kImageWidth, sky::kImageHeight, ctx));
                      m->source = "Gaussian random map from " + cls + " (nside " + std::to_string(nside) +
                                  ", lmax " + std::to_string(L) + ", seed " + std::to_string(seed) + ")";
                      if (!save.empty()) sky::writeSkyMap(save, *m, ctx);
                      return std::any(std::shared_ptr<const sky::SkyMapData>(std::move(m)));
                    } catch (const IoError&) {
                      throw;
                    } catch (...) {
                      rethrowNamingFile(cls);
                    }
                  },
                  0);
}

QString SkyMapWindow::spectrumProblem() const { return spectrumProblem_->text(); }

void SkyMapWindow::showSpectrumProblem(const QString& text) {
  spectrumProblem_->setText(text);
  spectrumProblem_->setToolTip(text);
  spectrumProblem_->setVisible(!text.isEmpty());
  if (!text.isEmpty()) {
    log_->warning(tr("Spectrum not started: %1").arg(text));
    statusBar()->showMessage(text, 10000);
  }
}

bool SkyMapWindow::computeSpectrum(int lmax, const QString& savePath) {
  if (isBusy()) {
    reportError(tr("Busy"), tr("A job is running: cancel it or wait."));
    return false;
  }
  // Problems the user can correct are shown inline beside the Spectrum button (never a dialog).
  if (!map_) {
    showSpectrumProblem(tr("no map: open one first (File > Open map… or Open demo map)"));
    return false;
  }
  if (lmax < 0) lmax = lmaxSpin_->value();
  if (lmax > 4 * map_->nside) {
    showSpectrumProblem(tr("lmax: must be at most 4 nside = %1, got %2").arg(4 * map_->nside).arg(lmax));
    return false;
  }
  const sky::BackendChoice choice = backendChoice();
  if (choice == sky::BackendChoice::Cuda && !gpu_status().available) {
    showSpectrumProblem(tr("backend: CUDA cannot run here: %1").arg(QString::fromStdString(gpu_status().reason)));
    return false;
  }
  showSpectrumProblem({});
  const sht::Backend backend = sky::resolveBackend(choice);
  sky::SkyMapPtr map = map_;
  const int column = column_;
  const std::string save = savePath.isEmpty() ? std::string() : QDir::toNativeSeparators(savePath).toStdString();
  const sky::SkyWeights weights = weights_;
  log_->info(tr("Spectrum of %1: lmax %2, map2alm with %3 weights (%4 iterations) on the %5 backend%6")
                 .arg(columnLabel(column))
                 .arg(lmax)
                 .arg(QString::fromStdString(weights.describe()))
                 .arg(weights.kind == sky::SkyWeights::Kind::Pixel ? 0 : 3)
                 .arg(QString::fromLatin1(sht::to_string(backend)))
                 .arg(save.empty() ? QString() : tr(", saving to %1").arg(savePath)));
  return startJob(JobKind::Spectrum, tr("spectrum"),
                  [map, column, lmax, backend, save, weights](const JobContext& ctx) {
                    return std::any(std::make_shared<const sky::SkySpectrum>(
                        sky::computeSkySpectrum(*map, column, lmax, backend, save, ctx, weights)));
                  },
                  column);
}

bool SkyMapWindow::startJob(JobKind kind, const QString& name, JobRunner::Job job, int column) {
  launchJob(name, std::move(job),
            [this, kind, column](JobRunner* runner) { onJobFinished(runner, kind, column); });
  return true;
}

void SkyMapWindow::onJobFinished(JobRunner* runner, JobKind kind, int column) {
  const JobRunner::State state = runner->state();
  bool loaded = false, spectrum = false, gotMask = false;
  if (state == JobRunner::State::Completed) {
    if (kind == JobKind::Mask) {
      if (const auto* m = runner->resultAs<std::shared_ptr<const sky::SkyMapData>>()) {
        onMaskLoaded(*m);
        gotMask = !mask_.empty();
      }
    } else if (kind == JobKind::Map) {
      if (const auto* m = runner->resultAs<std::shared_ptr<const sky::SkyMapData>>()) {
        if (map_ && map_->nside != (*m)->nside && !mask_.empty()) {
          log_->warning(tr("The mask (nside %1) was cleared: the new map has nside %2")
                            .arg(map_->nside)
                            .arg((*m)->nside));
          mask_.clear();
          maskSource_.clear();
        }
        map_ = *m;
        spectrum_.reset();
        chart_->clear();
        columnBox_->clear();
        for (int c = 0; c < static_cast<int>(map_->columns.size()); ++c)
          columnBox_->addItem(columnLabel(c));
        lmaxSpin_->setRange(0, 4 * map_->nside);
        lmaxSpin_->setValue(3 * map_->nside - 1);
        mapInfo_->setText(describeMap(*map_));
        setWindowTitle(tr("%1 — Sky map — Almagest")
                           .arg(QFileInfo(QString::fromStdString(map_->source)).fileName()));
        showColumn(column);
        log_->info(tr("Loaded %1: %2 (%3 s)")
                       .arg(QString::fromStdString(map_->source), describeMap(*map_))
                       .arg(runner->elapsedSeconds(), 0, 'f', 2));
        loaded = true;
      }
    } else if (kind == JobKind::Sht) {
      if (const auto* r = runner->resultAs<std::shared_ptr<const sht::ShtOutcome>>()) {
        shtResult_ = *r;
        const sht::ShtOutcome& o = **r;
        log_->info(tr("sht %1: wrote %2 (%3 %4) in %5 s on %6 (%7)")
                       .arg(QString::fromStdString(o.operation),
                            QString::fromStdString(o.outputs.empty() ? std::string() : o.outputs.front()),
                            QString::fromLatin1(sht::to_string(o.format)), QString::fromStdString(o.what))
                       .arg(runner->elapsedSeconds(), 0, 'f', 2)
                       .arg(QString::fromStdString(o.backend), QString::fromStdString(o.device)));
        for (const auto& line : o.summary) log_->info(QStringLiteral("  ") + QString::fromStdString(line));
        if (o.what == "spectra" && !o.cl.empty()) {
          // Every spectrum in the log (TT, EE, BB, TE, EB, TB); the first one plotted.
          for (std::size_t k = 0; k < o.spectra.size(); ++k) {
            QStringList head;
            for (std::size_t l = 0; l < o.cl[k].size() && l < 6; ++l) head << QString::number(o.cl[k][l], 'g', 6);
            log_->info(tr("  C_l %1: %2%3").arg(QString::fromStdString(o.spectra[k]), head.join(QStringLiteral(", ")),
                                                o.cl[k].size() > 6 ? QStringLiteral(", ...") : QString()));
          }
          // Every spectrum on one chart (TT, EE, BB, TE, EB, TB of a polarised map; TT of a
          // scalar one; the cross spectra of --cross).
          QStringList names;
          for (const auto& n : o.spectra) names << QString::fromStdString(n);
          chart_->setSpectra(names, o.cl,
                             tr("%1 — lmax %2, %3 backend (sht cl)")
                                 .arg(names.join(QStringLiteral(", ")))
                                 .arg(o.lmax)
                                 .arg(QString::fromStdString(o.backend)));
        }
      }
    } else if (const auto* s = runner->resultAs<std::shared_ptr<const sky::SkySpectrum>>()) {
      spectrum_ = *s;
      const std::vector<double> ref =
          map_ && map_->source == spectrum_->source ? map_->inputCl : std::vector<double>();
      chart_->setSpectrum(spectrum_->cl,
                          tr("%1 — lmax %2, %3 backend").arg(QString::fromStdString(spectrum_->column))
                              .arg(spectrum_->lmax)
                              .arg(QString::fromStdString(spectrum_->backend)),
                          ref);
      log_->info(tr("Spectrum done: lmax %1, %2 weights, on %3 (%4) in %5 s")
                     .arg(spectrum_->lmax)
                     .arg(QString::fromStdString(spectrum_->weights),
                          QString::fromStdString(spectrum_->backend),
                          QString::fromStdString(spectrum_->device))
                     .arg(spectrum_->seconds, 0, 'f', 2));
      spectrum = true;
    }
  } else if (state == JobRunner::State::Cancelled) {
    log_->info(tr("%1 cancelled.").arg(runner->name()));
  }
  if (state == JobRunner::State::Failed) {
    if (kind == JobKind::Sht) shtForm_->showProblems(runner->errorMessage());
    reportError(kind == JobKind::Map    ? tr("Could not open the map")
                : kind == JobKind::Sht  ? tr("SHT job failed")
                : kind == JobKind::Mask ? tr("Could not open the mask")
                                        : tr("Spectrum failed"),
                runner->errorMessage());
  }
  endJob(state);
  // A map written by the job is shown (after endJob: opening it is the next job).
  const bool showMap = state == JobRunner::State::Completed && kind == JobKind::Sht && shtResult_ &&
                       shtResult_->what == "map" && !shtResult_->outputs.empty() &&
                       shtResult_->format == sht::FileFormat::Fits;
  if (showMap) openMap(QString::fromStdString(shtResult_->outputs.front()));
  // Last, so that slots may start the next job (the finished runner is deleted later).
  if (loaded) emit mapLoaded();
  if (gotMask) emit maskLoaded();
  if (spectrum) emit spectrumReady();
  if (kind == JobKind::Sht && state == JobRunner::State::Completed) emit shtJobDone();
  emit jobFinished(state);
}

QString SkyMapWindow::columnLabel(int column) const {
  if (!map_ || column < 0 || column >= static_cast<int>(map_->names.size())) return {};
  QString s = QString::fromStdString(map_->names[static_cast<std::size_t>(column)]);
  const std::string& unit = map_->units[static_cast<std::size_t>(column)];
  if (!unit.empty()) s += QStringLiteral(" [%1]").arg(QString::fromStdString(unit));
  return s;
}

bool SkyMapWindow::setColumn(int column) {
  if (!map_ || column < 0 || column >= static_cast<int>(map_->columns.size())) return false;
  showColumn(column);
  return true;
}

void SkyMapWindow::showColumn(int column) {
  column_ = column;
  if (columnBox_->currentIndex() != column) columnBox_->setCurrentIndex(column);
  const auto& vals = values();
  const sky::ValueRange r = static_cast<std::size_t>(column) < map_->ranges.size()
                                ? map_->ranges[static_cast<std::size_t>(column)]
                                : sky::valueRange(vals);
  if (!manualRange_) {
    lo_ = r.min;
    hi_ = r.max;
  }
  render();
  if (r.unseen > 0)
    log_->info(tr("%1: %2 UNSEEN pixels (shown grey)").arg(columnLabel(column)).arg(r.unseen));
  updateActions();
}

bool SkyMapWindow::saveSpectrum(const QString& path) {
  if (!spectrum_) {
    reportError(tr("No spectrum"), tr("Compute a spectrum first (Analysis > Compute spectrum)."));
    return false;
  }
  try {
    sky::writeSpectrum(QDir::toNativeSeparators(path).toStdString(), *spectrum_);
  } catch (const std::exception& e) {
    reportError(tr("Could not save the spectrum"), QString::fromUtf8(e.what()));
    return false;
  }
  log_->info(tr("Saved the spectrum to %1 (%2 rows)").arg(path).arg(spectrum_->cl.size()));
  statusBar()->showMessage(tr("Saved %1").arg(QFileInfo(path).fileName()), 5000);
  return true;
}

bool SkyMapWindow::saveImage(const QString& path) {
  if (image_.isNull()) {
    reportError(tr("No map"), tr("Open a map first."));
    return false;
  }
  QString why;
  if (!saveImageAtomic(view_->figure(), path, &why)) {
    reportError(tr("Could not save the image"), why);
    return false;
  }
  log_->info(tr("Saved the image to %1").arg(path));
  return true;
}

void SkyMapWindow::buildShtDock() {
  // Every operation of `almagest-cli sht`, its options generated from the job schema (the same
  // fields, ranges, defaults and help as the command line); validation is the job layer's.
  auto* panel = new QWidget(this);
  auto* layout = new QVBoxLayout(panel);
  shtOpBox_ = new QComboBox(panel);
  shtOpBox_->setObjectName(QStringLiteral("shtOperation"));
  const schema::Field* op = sht::sht_schema().find("op");
  for (const auto& name : op->choices) shtOpBox_->addItem(QString::fromStdString(name));
  shtOpBox_->setToolTip(QString::fromStdString(schema::full_help(*op)));
  // The backend is the window's one Backend box (toolbar), given to the job at Run.
  shtForm_ = new SchemaForm(sht::sht_schema(), {}, {QStringLiteral("op"), QStringLiteral("backend")}, panel);
  shtForm_->setObjectName(QStringLiteral("shtForm"));
  shtForm_->setOperation(shtOpBox_->currentText());
  connect(shtOpBox_, &QComboBox::currentTextChanged, shtForm_, &SchemaForm::setOperation);
  shtRun_ = new QPushButton(tr("Run SHT job"), panel);
  shtRun_->setObjectName(QStringLiteral("shtRun"));
  connect(shtRun_, &QPushButton::clicked, this, [this] {
    schema::Values v = shtForm_->values();
    v["op"] = shtOpBox_->currentText().toStdString();
    v["backend"] = sky::backendText(backendChoice());
    runShtJob(v);
  });
  // The job layer's messages inline as the user edits (Run greyed while there are any); the
  // files are checked too when Run is pressed.
  shtForm_->setValidator([this](const schema::Values& values) {
    schema::Values v = values;
    v["op"] = shtOpBox_->currentText().toStdString();
    try {
      sht::make_sht_job({"sht", v, "", ""});
    } catch (const Error& e) {
      return QString::fromUtf8(e.what());
    }
    return QString();
  });
  shtForm_->setRunControl(shtRun_);
  connect(shtOpBox_, &QComboBox::currentTextChanged, shtForm_, [this] { shtForm_->validate(); });
  layout->addWidget(shtOpBox_);
  layout->addWidget(shtForm_);
  layout->addWidget(shtRun_);
  layout->addStretch(1);
  auto* dock = new QDockWidget(tr("SHT job"), this);
  dock->setObjectName(QStringLiteral("skyShtDock"));
  // Scrolled: the schema form's fields are taller than a 1280 x 800 screen holds.
  auto* scroll = new QScrollArea;
  scroll->setWidget(panel);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  dock->setWidget(scroll);
  addDockWidget(Qt::RightDockWidgetArea, dock);
}

bool SkyMapWindow::runShtJob(const schema::Values& values) {
  if (isBusy()) {
    reportError(tr("Busy"), tr("A job is running: cancel it or wait."));
    return false;
  }
  // Validate here so that the form shows the schema's message at once (as the CLI prints it).
  std::string problems;
  try {
    jobs::check_job_files(*sht::make_sht_job({"sht", values, "", ""}), "");
  } catch (const Error& e) {
    problems = e.what();
  }
  shtForm_->showProblems(QString::fromStdString(problems));
  if (!problems.empty()) {
    log_->warning(tr("SHT job not started: %1").arg(QString::fromStdString(problems)));
    return false;
  }
  const auto it = values.find("op");
  const QString op = it != values.end() ? QString::fromStdString(schema::describe(it->second)).remove('\'') : QString();
  log_->info(tr("SHT job: sht %1").arg(op));
  return startJob(JobKind::Sht, tr("sht %1").arg(op),
                  [values](const JobContext& ctx) { return std::any(sky::runShtJob(values, ctx)); }, 0);
}

void SkyMapWindow::updateActions() {
  const bool busy = isBusy();
  openAction_->setEnabled(!busy);
  demoAction_->setEnabled(!busy);
  for (QAction* a : demoSizeActions_) a->setEnabled(!busy);
  spectrumAction_->setEnabled(!busy && map_ != nullptr);
  cancelAction_->setEnabled(busy);
  cancelButton_->setEnabled(busy);
  saveSpectrumAction_->setEnabled(spectrum_ != nullptr);
  saveImageAction_->setEnabled(!image_.isNull());
  columnBox_->setEnabled(map_ && map_->columns.size() > 1);
  lmaxSpin_->setEnabled(map_ != nullptr);
  if (openMaskAction_) {
    openMaskAction_->setEnabled(!busy && map_ != nullptr);
    planeMaskAction_->setEnabled(map_ != nullptr);
    clearMaskAction_->setEnabled(!mask_.empty());
    clSynthAction_->setEnabled(!busy);
  }
  if (shtRun_) {
    shtRun_->setEnabled(!busy && shtForm_->problems().isEmpty());
    shtOpBox_->setEnabled(!busy);
    shtForm_->setLocked(busy);
  }
}

void SkyMapWindow::openMapDialog() {
  const QString path = QFileDialog::getOpenFileName(
      this, tr("Open HEALPix map"), lastDir_,
      tr("HEALPix maps (*.fits *.fit *.fits.gz *.fit.gz);;All files (*)"));
  if (!path.isEmpty()) openMap(path, 0);
}

void SkyMapWindow::saveSpectrumDialog() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Save spectrum"),
                                                    lastDir_.isEmpty() ? QStringLiteral("spectrum.txt")
                                                                       : lastDir_ + QStringLiteral("/spectrum.txt"),
                                                    tr("Text (*.txt *.dat);;All files (*)"));
  if (!path.isEmpty()) saveSpectrum(path);
}

void SkyMapWindow::saveImageDialog() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Save image"),
                                                    lastDir_.isEmpty() ? QStringLiteral("skymap.png")
                                                                       : lastDir_ + QStringLiteral("/skymap.png"),
                                                    tr("PNG images (*.png);;All files (*)"));
  if (!path.isEmpty()) saveImage(path);
}

}  // namespace almagest::ui
