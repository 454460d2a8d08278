#include "stackview/SearchPanel.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include "almagest/core/gpu.hpp"

namespace almagest::ui::stackview {

namespace stk = almagest::stack;

namespace {

QDoubleSpinBox* velocityBox(double value, const QString& tip, QWidget* parent) {
  auto* b = new QDoubleSpinBox(parent);
  b->setRange(-1000.0, 1000.0);
  b->setDecimals(3);
  b->setSingleStep(0.5);
  b->setSuffix(QObject::tr(" px/d"));
  b->setValue(value);
  b->setToolTip(tip);
  return b;
}

QSpinBox* countBox(int value, const QString& tip, QWidget* parent) {
  auto* b = new QSpinBox(parent);
  b->setRange(1, 4001);
  b->setValue(value);
  b->setToolTip(tip);
  return b;
}

QHBoxLayout* row(std::initializer_list<QWidget*> widgets) {
  auto* h = new QHBoxLayout;
  h->setContentsMargins(0, 0, 0, 0);
  for (QWidget* w : widgets) h->addWidget(w, w->inherits("QLabel") ? 0 : 1);
  return h;
}

}  // namespace

SearchPanel::SearchPanel(QWidget* parent) : QWidget(parent) {
  auto* top = new QVBoxLayout(this);

  // ---- velocity grid
  auto* grid = new QGroupBox(tr("Velocity grid"), this);
  auto* gf = new QFormLayout(grid);
  vxMin_ = velocityBox(-4, tr("Smallest vx of the Cartesian grid (pixels/day)"), grid);
  vxMax_ = velocityBox(4, tr("Largest vx of the grid (inclusive)"), grid);
  nvx_ = countBox(17, tr("Number of vx values (1: only the minimum)"), grid);
  vyMin_ = velocityBox(-4, tr("Smallest vy of the Cartesian grid (pixels/day)"), grid);
  vyMax_ = velocityBox(4, tr("Largest vy of the grid (inclusive)"), grid);
  nvy_ = countBox(17, tr("Number of vy values (1: only the minimum)"), grid);
  gf->addRow(tr("vx"), row({vxMin_, new QLabel(tr("to"), grid), vxMax_}));
  gf->addRow(tr("  steps"), nvx_);
  gf->addRow(tr("vy"), row({vyMin_, new QLabel(tr("to"), grid), vyMax_}));
  gf->addRow(tr("  steps"), nvy_);
  reach_ = new QDoubleSpinBox(grid);
  reach_->setRange(0.5, 10000.0);
  reach_->setDecimals(1);
  reach_->setValue(16.0);
  reach_->setSuffix(tr(" px"));
  reach_->setToolTip(tr("Largest displacement over the stack's baseline: the grid spans "
                        "±reach / baseline pixels/day on both axes"));
  reachN_ = countBox(33, tr("Steps per axis for the reach grid (odd keeps v = 0 on the grid)"), grid);
  applyReach_ = new QPushButton(tr("Set"), grid);
  applyReach_->setToolTip(tr("Fill the ranges from the reach and the loaded stack's baseline"));
  gf->addRow(tr("Reach"), row({reach_, reachN_, applyReach_}));
  top->addWidget(grid);

  // ---- detection
  auto* det = new QGroupBox(tr("Detection"), this);
  auto* df = new QFormLayout(det);
  bonferroni_ = new QRadioButton(tr("False alarms"), det);
  bonferroni_->setToolTip(tr("Bonferroni threshold: the Z whose Gaussian tail probability times the "
                             "number of trials (origins × velocities) equals this number"));
  fixed_ = new QRadioButton(tr("Fixed Z"), det);
  fixed_->setToolTip(tr("A fixed threshold on Z = A / sqrt(B)"));
  bonferroni_->setChecked(true);
  falseAlarms_ = new QDoubleSpinBox(det);
  falseAlarms_->setRange(1e-6, 1e6);
  falseAlarms_->setDecimals(4);
  falseAlarms_->setValue(1.0);
  falseAlarms_->setToolTip(bonferroni_->toolTip());
  thresholdZ_ = new QDoubleSpinBox(det);
  thresholdZ_->setRange(0.1, 1000.0);
  thresholdZ_->setDecimals(2);
  thresholdZ_->setValue(6.0);
  thresholdZ_->setToolTip(fixed_->toolTip());
  df->addRow(bonferroni_, falseAlarms_);
  df->addRow(fixed_, thresholdZ_);
  minObs_ = new QSpinBox(det);
  minObs_->setRange(0, 1000000);
  minObs_->setValue(1);
  minObs_->setToolTip(tr("Candidates need at least this many valid samples along their track"));
  df->addRow(tr("Min obs"), minObs_);
  cluster_ = new QCheckBox(tr("Cluster"), det);
  cluster_->setChecked(true);
  cluster_->setToolTip(tr("Merge near-duplicates: in Z order, a candidate within the radius of a kept one at "
                          "the first and the last exposure is merged into it"));
  clusterRadius_ = new QDoubleSpinBox(det);
  clusterRadius_->setRange(0.0, 1000.0);
  clusterRadius_->setDecimals(1);
  clusterRadius_->setValue(2.0);
  clusterRadius_->setSuffix(tr(" px"));
  clusterRadius_->setToolTip(cluster_->toolTip());
  df->addRow(cluster_, clusterRadius_);
  top->addWidget(det);

  // ---- computation
  auto* comp = new QGroupBox(tr("Computation"), this);
  auto* cf = new QFormLayout(comp);
  encoding_ = new QComboBox(comp);
  encoding_->setObjectName(QStringLiteral("encoding"));
  encoding_->addItem(tr("fp32 (8 B/sample)"), static_cast<int>(stk::Encoding::Fp32));
  encoding_->addItem(tr("fp16 (4 B/sample)"), static_cast<int>(stk::Encoding::Fp16));
  encoding_->addItem(tr("int8 (2 B/sample)"), static_cast<int>(stk::Encoding::Int8));
  encoding_->setToolTip(tr("Storage of the psi/phi planes. fp16 and int8 scale per exposure by the noise; "
                           "every backend decodes them identically"));
  cf->addRow(tr("Storage"), encoding_);
  backend_ = new QComboBox(comp);
  backend_->setObjectName(QStringLiteral("backend"));
  backend_->addItem(tr("CPU"), static_cast<int>(stk::Backend::Cpu));
  backend_->addItem(tr("CUDA tiled"), static_cast<int>(stk::Backend::GpuTiled));
  backend_->addItem(tr("CUDA Fourier"), static_cast<int>(stk::Backend::GpuFourier));
  backend_->setItemData(0, tr("Multithreaded CPU twin: the exact oracle"), Qt::ToolTipRole);
  backend_->setItemData(1, tr("Shared-memory tiled gather on the GPU: bit-identical to the CPU"), Qt::ToolTipRole);
  backend_->setItemData(2, tr("FP16 tensor-core Fourier scan; candidates re-scored exactly"), Qt::ToolTipRole);
  const GpuStatus& gpu = gpu_status();
  if (!gpu.available) {
    const QString why = QString::fromStdString(gpu.reason.empty() ? std::string("no usable GPU") : gpu.reason);
    if (auto* model = qobject_cast<QStandardItemModel*>(backend_->model()))
      for (int i : {1, 2})
        if (QStandardItem* item = model->item(i)) {
          item->setEnabled(false);
          item->setToolTip(tr("Unavailable: %1").arg(why));
        }
    backend_->setToolTip(tr("Search backend. CUDA unavailable: %1").arg(why));
  } else {
    backend_->setToolTip(tr("Search backend. GPU: %1").arg(QString::fromStdString(gpu.summary())));
  }
  cf->addRow(tr("Backend"), backend_);
  bestZ_ = new QCheckBox(tr("Best-Z map"), comp);
  bestZ_->setChecked(true);
  bestZ_->setToolTip(tr("Run a second scan keeping the best velocity of every origin pixel (top-1) and show "
                        "its Z as an image"));
  cf->addRow(QString(), bestZ_);
  stampRadius_ = new QSpinBox(comp);
  stampRadius_->setRange(0, 100);
  stampRadius_->setValue(10);
  stampRadius_->setSuffix(tr(" px"));
  stampRadius_->setToolTip(tr("Radius of the coadded stamps and the per-exposure cutouts"));
  cf->addRow(tr("Stamp radius"), stampRadius_);
  top->addWidget(comp);

  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  summary_->setObjectName(QStringLiteral("searchSummary"));
  top->addWidget(summary_);

  run_ = new QPushButton(tr("Run search"), this);
  run_->setToolTip(tr("psi/phi, plan and scan in one job (Ctrl+R)"));
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->setToolTip(tr("Cancel the running job (Esc)"));
  cancel_->setEnabled(false);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(run_, 2);
  buttons->addWidget(cancel_, 1);
  top->addLayout(buttons);
  top->addStretch(1);

  connect(run_, &QPushButton::clicked, this, &SearchPanel::runRequested);
  connect(cancel_, &QPushButton::clicked, this, &SearchPanel::cancelRequested);
  connect(applyReach_, &QPushButton::clicked, this, &SearchPanel::applyReach);
  for (QDoubleSpinBox* b : {vxMin_, vxMax_, vyMin_, vyMax_, falseAlarms_, thresholdZ_, clusterRadius_})
    connect(b, &QDoubleSpinBox::valueChanged, this, [this] { updateSummary(); emit settingsChanged(); });
  for (QSpinBox* b : {nvx_, nvy_, minObs_, stampRadius_})
    connect(b, &QSpinBox::valueChanged, this, [this] { updateSummary(); emit settingsChanged(); });
  for (QAbstractButton* b : std::initializer_list<QAbstractButton*>{bonferroni_, fixed_, cluster_, bestZ_})
    connect(b, &QAbstractButton::toggled, this, [this] { updateEnabled(); emit settingsChanged(); });
  for (QComboBox* b : {encoding_, backend_})
    connect(b, &QComboBox::currentIndexChanged, this, [this] { emit settingsChanged(); });
  setBaseline(0);
  updateEnabled();
  updateSummary();
}

SearchSettings SearchPanel::settings() const {
  SearchSettings s;
  s.vxMin = vxMin_->value();
  s.vxMax = vxMax_->value();
  s.nvx = nvx_->value();
  s.vyMin = vyMin_->value();
  s.vyMax = vyMax_->value();
  s.nvy = nvy_->value();
  s.fixedThreshold = fixed_->isChecked();
  s.falseAlarms = falseAlarms_->value();
  s.thresholdZ = thresholdZ_->value();
  s.minObs = minObs_->value();
  s.encoding = static_cast<stk::Encoding>(encoding_->currentData().toInt());
  s.backend = static_cast<stk::Backend>(backend_->currentData().toInt());
  s.cluster = cluster_->isChecked();
  s.clusterRadius = clusterRadius_->value();
  s.bestZMap = bestZ_->isChecked();
  s.stampRadius = stampRadius_->value();
  return s;
}

void SearchPanel::setSettings(const SearchSettings& s) {
  vxMin_->setValue(s.vxMin);
  vxMax_->setValue(s.vxMax);
  nvx_->setValue(s.nvx);
  vyMin_->setValue(s.vyMin);
  vyMax_->setValue(s.vyMax);
  nvy_->setValue(s.nvy);
  (s.fixedThreshold ? fixed_ : bonferroni_)->setChecked(true);
  falseAlarms_->setValue(s.falseAlarms);
  thresholdZ_->setValue(s.thresholdZ);
  minObs_->setValue(s.minObs);
  encoding_->setCurrentIndex(std::max(0, encoding_->findData(static_cast<int>(s.encoding))));
  backend_->setCurrentIndex(std::max(0, backend_->findData(static_cast<int>(s.backend))));
  cluster_->setChecked(s.cluster);
  clusterRadius_->setValue(s.clusterRadius);
  bestZ_->setChecked(s.bestZMap);
  stampRadius_->setValue(s.stampRadius);
  updateEnabled();
  updateSummary();
}

void SearchPanel::setBaseline(double days) {
  baseline_ = days;
  applyReach_->setEnabled(days > 0);
  reach_->setEnabled(days > 0);
  reachN_->setEnabled(days > 0);
  if (days <= 0) applyReach_->setToolTip(tr("Load a stack with more than one exposure time first"));
  else
    applyReach_->setToolTip(tr("Fill the ranges with ±reach / %1 days on both axes").arg(days, 0, 'f', 3));
}

void SearchPanel::setRunEnabled(bool on) { run_->setEnabled(on); }
void SearchPanel::setCancelEnabled(bool on) { cancel_->setEnabled(on); }

void SearchPanel::applyReach() {
  if (!(baseline_ > 0)) return;
  const double v = reach_->value() / baseline_;
  vxMin_->setValue(-v);
  vxMax_->setValue(v);
  vyMin_->setValue(-v);
  vyMax_->setValue(v);
  nvx_->setValue(reachN_->value());
  nvy_->setValue(reachN_->value());
}

void SearchPanel::updateEnabled() {
  falseAlarms_->setEnabled(bonferroni_->isChecked());
  thresholdZ_->setEnabled(fixed_->isChecked());
  clusterRadius_->setEnabled(cluster_->isChecked());
}

void SearchPanel::updateSummary() {
  const SearchSettings s = settings();
  const double stepX = s.nvx > 1 ? (s.vxMax - s.vxMin) / (s.nvx - 1) : 0.0;
  const double stepY = s.nvy > 1 ? (s.vyMax - s.vyMin) / (s.nvy - 1) : 0.0;
  const QStringList problems = s.validate();
  summary_->setText(problems.isEmpty()
                        ? tr("%1 velocities, steps %2 × %3 px/day").arg(qint64(s.nvx) * s.nvy).arg(stepX, 0, 'g', 3).arg(stepY, 0, 'g', 3)
                        : problems.join(QStringLiteral("\n")));
}

}  // namespace almagest::ui::stackview
