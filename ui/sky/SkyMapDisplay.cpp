// SkyMapWindow: how the shown column is drawn (projection and centre, colour map, scaling and
// range, graticule, the mask overlay, the sphere tab) and the dialogs of the mask and of the
// C_l synthesis. Split from SkyMapWindow.cpp to keep files short; see SkyMapWindow.hpp.
#include <QAction>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QLayout>
#include <QLineEdit>
#include <QSpinBox>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolBar>

#include <algorithm>
#include <cmath>

#include "panels/LogPanel.hpp"
#include "sky/SkyMapView.hpp"
#include "sky/SkyMapWindow.hpp"
#include "sky/SkyProjection.hpp"
#include "sky/SkySphereView.hpp"

namespace almagest::ui {

namespace {
QDoubleSpinBox* angleBox(QWidget* parent, double lo, double hi, double v, const QString& suffix, const QString& tip) {
  auto* b = new QDoubleSpinBox(parent);
  b->setRange(lo, hi);
  b->setValue(v);
  b->setDecimals(1);
  b->setSuffix(suffix);
  b->setKeyboardTracking(false);
  b->setToolTip(tip);
  return b;
}
}  // namespace

void SkyMapWindow::buildDisplayBar() {
  addToolBarBreak();
  QToolBar* tb = addToolBar(tr("Map display"));
  tb->setObjectName(QStringLiteral("skyDisplayBar"));
  projBox_ = new QComboBox(tb);
  projBox_->setObjectName(QStringLiteral("projection"));
  projBox_->addItems({tr("Mollweide"), tr("orthographic"), tr("gnomonic")});
  projBox_->setToolTip(tr("Projection (the sky seen from inside: longitude increases to the left)"));
  lonSpin_ = angleBox(tb, -360, 360, 0, tr("° lon"), tr("Longitude of the view centre"));
  latSpin_ = angleBox(tb, -90, 90, 0, tr("° lat"), tr("Latitude of the view centre (orthographic, gnomonic)"));
  fovSpin_ = angleBox(tb, 1, 170, 60, tr("° field"), tr("Gnomonic: width of the field"));
  cmapBox_ = new QComboBox(tb);
  cmapBox_->setObjectName(QStringLiteral("colourMap"));
  cmapBox_->addItems({tr("viridis"), tr("diverging"), tr("grey")});
  cmapBox_->setToolTip(tr("Colour map (UNSEEN pixels are grey in every map)"));
  scaleBox_ = new QComboBox(tb);
  scaleBox_->setObjectName(QStringLiteral("scaling"));
  scaleBox_->addItems({tr("linear"), tr("log"), tr("hist. eq.")});
  scaleBox_->setToolTip(tr("Value scaling: linear, DS9's log, or histogram-equalised (equal areas per colour)"));
  loSpin_ = new QDoubleSpinBox(tb);
  hiSpin_ = new QDoubleSpinBox(tb);
  for (QDoubleSpinBox* b : {loSpin_, hiSpin_}) {
    b->setRange(-1e300, 1e300);
    b->setDecimals(6);
    b->setKeyboardTracking(false);
    b->setToolTip(tr("Colour range (values outside are clamped); editing it fixes the range"));
  }
  loSpin_->setObjectName(QStringLiteral("rangeLo"));
  hiSpin_->setObjectName(QStringLiteral("rangeHi"));
  auto* autoAction = new QAction(tr("Auto range"), tb);
  autoAction->setToolTip(tr("Colour range back to the column's minimum and maximum"));
  connect(autoAction, &QAction::triggered, this, &SkyMapWindow::autoRange);
  gratBox_ = new QComboBox(tb);
  gratBox_->setObjectName(QStringLiteral("graticule"));
  gratBox_->addItems({tr("no graticule"), tr("map frame"), tr("RA/Dec"), tr("Galactic")});
  gratBox_->setToolTip(tr("Graticule every 30° with labels, in the map's frame, equatorial or Galactic"));
  auto* maskSpin = new QDoubleSpinBox(tb);
  maskSpin->setObjectName(QStringLiteral("maskOpacity"));
  maskSpin->setRange(0.0, 1.0);
  maskSpin->setSingleStep(0.1);
  maskSpin->setDecimals(2);
  maskSpin->setValue(maskOpacity_);
  maskSpin->setPrefix(tr("mask "));
  maskSpin->setToolTip(tr("Opacity of the mask overlay (File > Open mask…): masked pixels are blended with magenta"));
  connect(maskSpin, &QDoubleSpinBox::valueChanged, this, &SkyMapWindow::setMaskOpacity);

  tb->addWidget(projBox_);
  tb->addWidget(lonSpin_);
  tb->addWidget(latSpin_);
  tb->addWidget(fovSpin_);
  tb->addSeparator();
  tb->addWidget(cmapBox_);
  tb->addWidget(scaleBox_);
  tb->addWidget(loSpin_);
  tb->addWidget(hiSpin_);
  tb->addAction(autoAction);
  tb->addSeparator();
  tb->addWidget(gratBox_);
  tb->addWidget(maskSpin);

  auto spec = [this] {
    sky::ViewSpec v;
    v.projection = static_cast<sky::Projection>(projBox_->currentIndex());
    v.lonDeg = lonSpin_->value();
    v.latDeg = latSpin_->value();
    v.fovDeg = fovSpin_->value();
    setViewSpec(v);
  };
  connect(projBox_, &QComboBox::currentIndexChanged, this, spec);
  for (QDoubleSpinBox* b : {lonSpin_, latSpin_, fovSpin_}) connect(b, &QDoubleSpinBox::valueChanged, this, spec);
  connect(cmapBox_, &QComboBox::currentIndexChanged, this, [this](int i) { setColourMap(static_cast<sky::ColourMap>(i)); });
  connect(scaleBox_, &QComboBox::currentIndexChanged, this, [this](int i) { setScaling(static_cast<sky::Scaling>(i)); });
  auto range = [this] { setRange(loSpin_->value(), hiSpin_->value()); };
  connect(loSpin_, &QDoubleSpinBox::valueChanged, this, range);
  connect(hiSpin_, &QDoubleSpinBox::valueChanged, this, range);
  connect(gratBox_, &QComboBox::currentIndexChanged, this, [this](int i) {
    setGraticule(i > 0, i == 2 ? sky::Frame::Equatorial : i == 3 ? sky::Frame::Galactic : sky::Frame::Native, stepDeg_);
  });
  syncDisplayWidgets();
}

void SkyMapWindow::syncDisplayWidgets() {
  if (!projBox_) return;
  const QSignalBlocker b1(projBox_), b2(lonSpin_), b3(latSpin_), b4(fovSpin_), b5(cmapBox_), b6(scaleBox_), b7(loSpin_),
      b8(hiSpin_), b9(gratBox_);
  projBox_->setCurrentIndex(int(viewSpec_.projection));
  lonSpin_->setValue(viewSpec_.lonDeg);
  latSpin_->setValue(viewSpec_.latDeg);
  fovSpin_->setValue(viewSpec_.fovDeg);
  latSpin_->setEnabled(viewSpec_.projection != sky::Projection::Mollweide);
  fovSpin_->setEnabled(viewSpec_.projection == sky::Projection::Gnomonic);
  cmapBox_->setCurrentIndex(int(cmap_));
  scaleBox_->setCurrentIndex(int(scaling_));
  loSpin_->setValue(lo_);
  hiSpin_->setValue(hi_);
  gratBox_->setCurrentIndex(!graticuleOn_ ? 0 : frame_ == sky::Frame::Equatorial ? 2 : frame_ == sky::Frame::Galactic ? 3 : 1);
}

void SkyMapWindow::setViewSpec(const sky::ViewSpec& view) {
  viewSpec_ = view;
  // The sphere turns to the same centre (its picture is then the orthographic view's).
  if (sphere_) sphere_->lookAt(view.lonDeg, view.projection == sky::Projection::Mollweide ? 0.0 : view.latDeg, sphere_->zoom());
  render();
}

void SkyMapWindow::setColourMap(sky::ColourMap map) {
  cmap_ = map;
  render();
}

void SkyMapWindow::setScaling(sky::Scaling scaling) {
  scaling_ = scaling;
  render();
}

void SkyMapWindow::setRange(double lo, double hi) {
  manualRange_ = true;
  lo_ = lo;
  hi_ = hi;
  render();
}

void SkyMapWindow::autoRange() {
  manualRange_ = false;
  if (map_) {
    const sky::ValueRange r = std::size_t(column_) < map_->ranges.size() ? map_->ranges[std::size_t(column_)]
                                                                          : sky::valueRange(values());
    lo_ = r.min;
    hi_ = r.max;
  }
  render();
}

void SkyMapWindow::setGraticule(bool on, sky::Frame frame, double stepDeg) {
  graticuleOn_ = on;
  frame_ = frame;
  stepDeg_ = stepDeg;
  render();
}

void SkyMapWindow::render() {
  syncDisplayWidgets();
  if (!map_) return;
  const auto& vals = values();
  // The job's Mollweide lookup serves the default view; other views are projected here (one
  // ang2pix per image pixel, ~0.1 s for 700 x 700) and cached until the view or map changes.
  const bool jobLookup = viewSpec_ == sky::ViewSpec{} && !map_->lookup.empty();
  const QSize size = jobLookup ? QSize(map_->imageWidth, map_->imageHeight) : sky::imageSize(viewSpec_, 700);
  const std::vector<std::int64_t>* lookup = &map_->lookup;
  if (!jobLookup) {
    if (!(lookupCache_.view == viewSpec_) || lookupCache_.nside != map_->nside || lookupCache_.width != size.width() ||
        lookupCache_.height != size.height() || lookupCache_.lookup.empty()) {
      lookupCache_ = {viewSpec_, map_->nside, size.width(), size.height(),
                      sky::projectionLookup(viewSpec_, map_->nside, size.width(), size.height())};
    }
    lookup = &lookupCache_.lookup;
  }
  scale_ = sky::ScaleMap(scaling_, vals, lo_, hi_);
  image_ = sky::colourise(*lookup, size.width(), size.height(), vals, scale_, cmap_, mask_, maskOpacity_);
  if (sphere_) {
    sphere_->setMap(map_, column_, scale_, cmap_, mask_, maskOpacity_);
    sphere_->setGraticule(graticuleOn_, frame_, map_->coordsys, stepDeg_);
  }
  view_->setMap(map_, column_, image_, lo_, hi_, columnLabel(column_));
  if (graticuleOn_) {
    const sky::Graticule g = sky::graticule(viewSpec_, frame_, map_->coordsys, stepDeg_);
    if (g.frame != frame_ && log_)
      log_->warning(tr("The map's COORDSYS '%1' is unknown: the graticule is drawn in the map's own frame")
                        .arg(QString::fromStdString(map_->coordsys)));
    view_->setRender(viewSpec_, scale_, cmap_, &g);
  } else {
    view_->setRender(viewSpec_, scale_, cmap_, nullptr);
  }
  updateActions();
}

}  // namespace almagest::ui

namespace almagest::ui {

SkySphereView* SkyMapWindow::showSphere() {
  if (!sphere_) {
    sphere_ = new SkySphereView(spherePage_);
    sphere_->setObjectName(QStringLiteral("skySphere"));
    spherePage_->layout()->addWidget(sphere_);
    connect(sphere_, &SkySphereView::hovered, readout_, &QLabel::setText);
    sphere_->lookAt(viewSpec_.lonDeg, viewSpec_.projection == sky::Projection::Mollweide ? 0.0 : viewSpec_.latDeg);
    if (map_) {
      sphere_->setMap(map_, column_, scale_, cmap_, mask_, maskOpacity_);
      sphere_->setGraticule(graticuleOn_, frame_, map_->coordsys, stepDeg_);
    }
  }
  if (tabs_->currentIndex() != 1) tabs_->setCurrentIndex(1);
  return sphere_;
}

std::int64_t SkyMapWindow::maskedCount() const { return std::count(mask_.begin(), mask_.end(), std::uint8_t(1)); }

bool SkyMapWindow::openMask(const QString& path) {
  if (isBusy()) {
    reportError(tr("Busy"), tr("A job is running: cancel it or wait before opening a mask."));
    return false;
  }
  if (!map_) {
    statusBar()->showMessage(tr("Open a map before its mask."), 10000);
    log_->warning(tr("Mask not opened: open a map first."));
    return false;
  }
  const std::string p = QDir::toNativeSeparators(path).toStdString();
  log_->info(tr("Opening the mask %1").arg(path));
  lastDir_ = QFileInfo(path).absolutePath();
  return startJob(JobKind::Mask, tr("open mask"),
                  [p](const JobContext& ctx) -> std::any {
                    try {
                      return std::any(std::make_shared<const sky::SkyMapData>(sky::loadSkyMap(p, 0, 0, 0, ctx)));
                    } catch (...) {
                      rethrowNamingFile(p);
                    }
                  },
                  column_);
}

void SkyMapWindow::onMaskLoaded(const sky::SkyMapPtr& mask) {
  if (!map_ || mask->nside != map_->nside) {
    const QString why = tr("%1: NSIDE: the mask has nside %2, the map %3; a mask must have the map's nside")
                            .arg(QString::fromStdString(mask->source))
                            .arg(mask->nside)
                            .arg(map_ ? map_->nside : 0);
    reportError(tr("Could not use the mask"), why);
    return;
  }
  setMask(mask->columns.front(), QString::fromStdString(mask->source));
}

bool SkyMapWindow::setMask(const std::vector<double>& maskValues, const QString& source) {
  if (!map_ || static_cast<std::int64_t>(maskValues.size()) != map_->npix()) {
    const QString why = tr("%1: the mask has %2 pixels, the map %3").arg(source).arg(maskValues.size()).arg(npix());
    log_->error(why);
    statusBar()->showMessage(why, 10000);
    return false;
  }
  mask_ = sky::maskFlags(maskValues);
  maskSource_ = source;
  log_->info(tr("Mask %1: %2 of %3 pixels masked (drawn blended with magenta)").arg(source).arg(maskedCount()).arg(npix()));
  render();
  return true;
}

bool SkyMapWindow::setPlaneMask(double halfWidthDeg) {
  if (!map_ || !(halfWidthDeg > 0.0 && halfWidthDeg <= 90.0)) return false;
  std::vector<double> m(static_cast<std::size_t>(map_->npix()), 1.0);
  const double zcut = std::sin(halfWidthDeg * 3.14159265358979323846 / 180.0);
  for (std::int64_t p = 0; p < map_->npix(); ++p) {
    double theta = 0, phi = 0;
    sky::pix2angRing(map_->nside, p, theta, phi);
    if (std::abs(std::cos(theta)) < zcut) m[static_cast<std::size_t>(p)] = 0.0;
  }
  return setMask(m, tr("plane cut |lat| < %1°").arg(halfWidthDeg));
}

void SkyMapWindow::clearMask() {
  if (mask_.empty()) return;
  mask_.clear();
  maskSource_.clear();
  log_->info(tr("Mask cleared"));
  render();
}

void SkyMapWindow::setMaskOpacity(double opacity) {
  maskOpacity_ = std::clamp(opacity, 0.0, 1.0);
  if (!mask_.empty()) render();
}

void SkyMapWindow::openMaskDialog() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open HEALPix mask"), lastDir_,
                                                    tr("HEALPix maps (*.fits *.fit *.fits.gz *.fit.gz);;All files (*)"));
  if (!path.isEmpty()) openMask(path);
}

void SkyMapWindow::synthesiseFromClDialog() {
  const QString cl = QFileDialog::getOpenFileName(this, tr("C_l file for the synthesis"), lastDir_,
                                                  tr("Spectra (*.txt *.dat *.fits *.fit);;All files (*)"));
  if (cl.isEmpty()) return;
  lastDir_ = QFileInfo(cl).absolutePath();
  QDialog dialog(this);
  dialog.setWindowTitle(tr("Synthesise from %1").arg(QFileInfo(cl).fileName()));
  auto* form = new QFormLayout(&dialog);
  auto* nside = new QSpinBox(&dialog);
  nside->setRange(1, 8192);
  nside->setValue(map_ ? map_->nside : kDemoNside);
  auto* seed = new QSpinBox(&dialog);
  seed->setRange(0, 2147483647);
  seed->setValue(static_cast<int>(kDemoSeed % 2147483647u));
  auto* save = new QLineEdit(&dialog);
  save->setPlaceholderText(tr("(optional) map FITS file to write"));
  form->addRow(tr("nside"), nside);
  form->addRow(tr("seed"), seed);
  form->addRow(tr("save map to"), save);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
  form->addRow(buttons);
  connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
  if (dialog.exec() != QDialog::Accepted) return;
  openSynthesisFromClFile(cl, nside->value(), static_cast<std::uint64_t>(seed->value()), save->text().trimmed());
}

}  // namespace almagest::ui
