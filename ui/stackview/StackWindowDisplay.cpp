// StackWindow: how exposures are displayed (zscale / robust / manual stretch, mask overlay,
// blinking), the exposure image export and the grid widening for synthetic movers. Split from
// StackWindow.cpp to keep files short; see StackWindow.hpp.
#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QTimer>
#include <QToolBar>

#include <algorithm>
#include <cmath>

#include "panels/LogPanel.hpp"
#include "sky/AtomicImage.hpp"
#include "stackview/SearchPanel.hpp"
#include "stackview/StackImageView.hpp"
#include "stackview/StackReach.hpp"
#include "stackview/StackWindow.hpp"

namespace almagest::ui {

using namespace stackview;

void StackWindow::buildDisplayBar() {
  QToolBar* tb = addToolBar(tr("Display"));
  tb->setObjectName(QStringLiteral("stackDisplayBar"));
  stretchBox_ = new QComboBox(tb);
  stretchBox_->setObjectName(QStringLiteral("stretchMode"));
  stretchBox_->addItems({tr("zscale"), tr("robust asinh"), tr("manual")});
  stretchBox_->setToolTip(tr("Exposure stretch: zscale (linear between DS9's zscale limits, contrast 0.25), robust "
                             "percentiles with asinh, or the manual limits"));
  loSpin_ = new QDoubleSpinBox(tb);
  hiSpin_ = new QDoubleSpinBox(tb);
  for (QDoubleSpinBox* b : {loSpin_, hiSpin_}) {
    b->setRange(-1e30, 1e30);
    b->setDecimals(4);
    b->setKeyboardTracking(false);
    b->setEnabled(false);
  }
  loSpin_->setObjectName(QStringLiteral("stretchLo"));
  hiSpin_->setObjectName(QStringLiteral("stretchHi"));
  loSpin_->setToolTip(tr("Lower display limit (black); editing switches to manual limits"));
  hiSpin_->setToolTip(tr("Upper display limit (white)"));
  maskCheck_ = new QCheckBox(tr("mask"), tb);
  maskCheck_->setObjectName(QStringLiteral("maskOverlay"));
  maskCheck_->setToolTip(tr("Overlay masked and invalid pixels in translucent red"));
  rateSpin_ = new QDoubleSpinBox(tb);
  rateSpin_->setObjectName(QStringLiteral("blinkRate"));
  rateSpin_->setRange(0.2, 30.0);
  rateSpin_->setValue(4.0);
  rateSpin_->setSuffix(tr(" fps"));
  rateSpin_->setToolTip(tr("Blink rate: exposures per second"));
  blinkTimer_ = new QTimer(this);
  blinkTimer_->setInterval(250);
  connect(blinkTimer_, &QTimer::timeout, this, &StackWindow::blinkStep);
  blinkAction_ = new QAction(tr("&Blink"), this);
  blinkAction_->setObjectName(QStringLiteral("blinkAction"));
  blinkAction_->setCheckable(true);
  blinkAction_->setShortcut(QKeySequence(QStringLiteral("Ctrl+B")));
  blinkAction_->setToolTip(tr("Blink through the exposures at the chosen rate, keeping zoom, pan and the track (Ctrl+B)"));
  connect(blinkAction_, &QAction::toggled, this, [this](bool on) { setBlinking(on); });

  tb->addWidget(new QLabel(tr(" stretch "), tb));
  tb->addWidget(stretchBox_);
  tb->addWidget(loSpin_);
  tb->addWidget(hiSpin_);
  tb->addWidget(maskCheck_);
  tb->addSeparator();
  tb->addWidget(rateSpin_);

  connect(stretchBox_, &QComboBox::currentIndexChanged, this,
          [this](int i) { setStretchMode(i == 1 ? StretchMode::Robust : i == 2 ? StretchMode::Manual : StretchMode::ZScale); });
  auto manualEdit = [this] {
    if (!loSpin_->isEnabled()) return;
    setManualLimits(loSpin_->value(), hiSpin_->value());
  };
  connect(loSpin_, &QDoubleSpinBox::valueChanged, this, manualEdit);
  connect(hiSpin_, &QDoubleSpinBox::valueChanged, this, manualEdit);
  connect(maskCheck_, &QCheckBox::toggled, this, &StackWindow::setMaskOverlay);
  connect(rateSpin_, &QDoubleSpinBox::valueChanged, this, &StackWindow::setBlinkRate);
}

void StackWindow::setStretchMode(StretchMode mode) {
  if (mode == StretchMode::Manual && stretchMode_ != StretchMode::Manual) manual_ = shownStretch_;  // start from what is shown
  stretchMode_ = mode;
  {
    const QSignalBlocker b(stretchBox_);
    stretchBox_->setCurrentIndex(mode == StretchMode::Robust ? 1 : mode == StretchMode::Manual ? 2 : 0);
  }
  showExposure();
  const QSignalBlocker b1(loSpin_), b2(hiSpin_);
  loSpin_->setEnabled(mode == StretchMode::Manual);
  hiSpin_->setEnabled(mode == StretchMode::Manual);
  loSpin_->setValue(shownStretch_.lo);
  hiSpin_->setValue(shownStretch_.hi);
}

void StackWindow::setManualLimits(double lo, double hi) {
  manual_ = {float(lo), float(hi)};
  if (stretchMode_ != StretchMode::Manual) {
    stretchMode_ = StretchMode::Manual;
    const QSignalBlocker b(stretchBox_);
    stretchBox_->setCurrentIndex(2);
    loSpin_->setEnabled(true);
    hiSpin_->setEnabled(true);
  }
  showExposure();
}

void StackWindow::setMaskOverlay(bool on) {
  maskOverlay_ = on;
  if (maskCheck_->isChecked() != on) {
    const QSignalBlocker b(maskCheck_);
    maskCheck_->setChecked(on);
  }
  showExposure();
}

void StackWindow::setBlinkRate(double fps) {
  const double f = std::clamp(fps, 0.2, 30.0);
  blinkTimer_->setInterval(std::max(1, int(std::lround(1000.0 / f))));
  if (std::abs(rateSpin_->value() - f) > 1e-9) {
    const QSignalBlocker b(rateSpin_);
    rateSpin_->setValue(f);
  }
}

void StackWindow::setBlinking(bool on) {
  on = on && stack_ && stack_->n() > 1;
  if (on) blinkTimer_->start();
  else blinkTimer_->stop();
  if (blinkAction_->isChecked() != on) {
    const QSignalBlocker b(blinkAction_);
    blinkAction_->setChecked(on);
  }
}

bool StackWindow::isBlinking() const { return blinkTimer_->isActive(); }

void StackWindow::blinkStep() {
  if (!stack_ || stack_->n() < 2) {
    setBlinking(false);
    return;
  }
  setExposure((exposure_ + 1) % stack_->n());
}

bool StackWindow::saveExposureImage(const QString& path) {
  if (exposureImage_.isNull()) {
    reportError(tr("No exposure"), tr("Open or generate a stack first."));
    return false;
  }
  const int scale = std::clamp(768 / std::max(1, std::max(exposureImage_.width(), exposureImage_.height())), 1, 8);
  QString why;
  if (!saveImageAtomic(exposureView_->renderScene(scale), path, &why)) {
    reportError(tr("Could not save the image"), why);
    return false;
  }
  log_->info(tr("Saved exposure %1 to %2").arg(exposure_).arg(path));
  return true;
}

void StackWindow::widenGridForMovers() {
  // A synthetic stack knows its movers: a grid that misses them would make the defaults fail.
  // Only a Cartesian bank is widened (a velocities file or a speed x angle bank is the user's).
  if (!stack_ || stack_->movers.empty()) return;
  almagest::schema::Values v = panel_->values();
  if (v.count("velocities") || v.count("speed-range") || v.count("angle-range")) return;
  const SearchSettings now = fromValues(v);
  const auto& mjd = stack_->stack.mjd;
  const double baseline = mjd.empty() ? 0.0 : *std::max_element(mjd.begin(), mjd.end()) - *std::min_element(mjd.begin(), mjd.end());
  const SearchSettings wide = coveringGrid(now, stack_->movers, baseline);
  if (wide.vxMax == now.vxMax && wide.vxMin == now.vxMin && wide.vyMin == now.vyMin && wide.vyMax == now.vyMax) return;
  const almagest::schema::Values w = toValues(wide);
  for (const char* key : {"vx-range", "vy-range", "grid"}) {
    const auto it = w.find(key);
    if (it != w.end()) v[key] = it->second;
  }
  panel_->setValues(v);
  log_->info(tr("The search grid did not cover the injected movers: widened to ±%1 px/day, %2 × %2 velocities")
                 .arg(wide.vxMax, 0, 'g', 6)
                 .arg(wide.nvx));
}

}  // namespace almagest::ui
