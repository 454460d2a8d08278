#include "panels/JobPanel.hpp"

#include <QStandardItemModel>

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QStyle>
#include <QToolButton>
#include <QVBoxLayout>

#include <thread>

#include "almagest/core/gpu.hpp"

namespace almagest::ui {

namespace npcf = almagest::npcf;

namespace {

QLabel* makeInfoLabel(QWidget* parent) {
  auto* l = new QLabel(parent);
  l->setStyleSheet(QStringLiteral("color: palette(mid);"));
  l->setWordWrap(true);
  return l;
}

}  // namespace

JobPanel::JobPanel(QWidget* parent) : QWidget(parent) {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(8, 8, 8, 8);
  outer->setSpacing(10);

  settings_ = new QWidget(this);
  auto* settingsLayout = new QVBoxLayout(settings_);
  settingsLayout->setContentsMargins(0, 0, 0, 0);
  settingsLayout->setSpacing(10);

  // Catalogues.
  auto* files = new QGroupBox(tr("Catalogues"), settings_);
  auto* filesForm = new QFormLayout(files);
  filesForm->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  auto fileRow = [this, files](QLineEdit*& edit, QLabel*& info, bool randoms) {
    auto* row = new QWidget(files);
    auto* h = new QHBoxLayout(row);
    h->setContentsMargins(0, 0, 0, 0);
    h->setSpacing(4);
    edit = new QLineEdit(row);
    edit->setReadOnly(true);
    edit->setPlaceholderText(randoms ? tr("random catalogue") : tr("data catalogue"));
    auto* browseButton = new QToolButton(row);
    browseButton->setText(tr("…"));
    browseButton->setToolTip(randoms ? tr("Open a random catalogue") : tr("Open a data catalogue"));
    browseButton->setIcon(style()->standardIcon(QStyle::SP_DirOpenIcon));
    browseButton->setAutoRaise(false);
    connect(browseButton, &QToolButton::clicked, this, [this, randoms] { browse(randoms); });
    h->addWidget(edit, 1);
    h->addWidget(browseButton);
    info = makeInfoLabel(files);
    return row;
  };
  filesForm->addRow(tr("Data"), fileRow(dataEdit_, dataInfo_, false));
  filesForm->addRow(QString(), dataInfo_);
  filesForm->addRow(tr("Randoms"), fileRow(randomsEdit_, randomsInfo_, true));
  filesForm->addRow(QString(), randomsInfo_);
  settingsLayout->addWidget(files);

  // Statistic and binning.
  auto* stat = new QGroupBox(tr("Statistic and binning"), settings_);
  auto* form = new QFormLayout(stat);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  statistic_ = new QComboBox(stat);
  statistic_->setObjectName(QStringLiteral("statistic"));
  statistic_->addItem(tr("2pCF  ξ(r)"), static_cast<int>(npcf::Statistic::TwoPoint));
  statistic_->addItem(tr("3pCF  all triangles"), static_cast<int>(npcf::Statistic::ThreePoint));
  statistic_->addItem(tr("3pCF  equilateral"), static_cast<int>(npcf::Statistic::ThreePointEquilateral));
  statistic_->addItem(tr("4pCF  with connected part"), static_cast<int>(npcf::Statistic::FourPoint));
  statistic_->addItem(tr("4pCF  parity (even and odd)"), static_cast<int>(npcf::Statistic::FourPointParity));
  form->addRow(tr("Statistic"), statistic_);

  rmin_ = new QDoubleSpinBox(stat);
  rmin_->setRange(0.0, 1e5);
  rmin_->setDecimals(2);
  rmin_->setSuffix(tr(" Mpc/h"));
  rmin_->setToolTip(tr("Pairs closer than r min are ignored (strict)."));
  rmax_ = new QDoubleSpinBox(stat);
  rmax_->setRange(0.01, 1e5);
  rmax_->setDecimals(2);
  rmax_->setSuffix(tr(" Mpc/h"));
  rmax_->setToolTip(tr("Pairs farther than r max are ignored (strict)."));
  nbins_ = new QSpinBox(stat);
  nbins_->setRange(1, 255);
  log_ = new QCheckBox(tr("logarithmic bins"), stat);
  form->addRow(tr("r min"), rmin_);
  form->addRow(tr("r max"), rmax_);
  form->addRow(tr("Bins"), nbins_);
  form->addRow(QString(), log_);

  threads_ = new QSpinBox(stat);
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads_->setRange(0, std::max(256, 4 * hw));
  threads_->setSpecialValueText(tr("all (%1)").arg(hw));
  threads_->setToolTip(tr("Worker threads of the CPU backend. Results do not depend on it."));
  form->addRow(tr("Threads"), threads_);

  // Backend: the CUDA entry is disabled (with the reason) where no GPU can be used.
  backend_ = new QComboBox(stat);
  backend_->setObjectName(QStringLiteral("backend"));
  backend_->addItem(tr("CPU"), static_cast<int>(npcf::Backend::Cpu));
  backend_->addItem(tr("CUDA (GPU)"), static_cast<int>(npcf::Backend::Cuda));
  backend_->addItem(tr("Auto (GPU when it pays)"), static_cast<int>(npcf::Backend::Auto));
  const GpuStatus& gpu = gpu_status();
  if (!gpu.available) {
    if (auto* model = qobject_cast<QStandardItemModel*>(backend_->model()))
      if (QStandardItem* item = model->item(1)) {
        item->setEnabled(false);
        item->setToolTip(QString::fromStdString(gpu.reason));
      }
    backend_->setToolTip(tr("No usable GPU: %1").arg(QString::fromStdString(gpu.reason)));
  } else {
    backend_->setToolTip(tr("GPU: %1").arg(QString::fromStdString(gpu.summary())));
  }
  form->addRow(tr("Backend"), backend_);
  settingsLayout->addWidget(stat);
  outer->addWidget(settings_);

  // Run / Cancel.
  auto* buttons = new QHBoxLayout;
  run_ = new QPushButton(style()->standardIcon(QStyle::SP_MediaPlay), tr("Run"), this);
  run_->setDefault(true);
  run_->setToolTip(tr("Compute the statistic (Ctrl+R)"));
  cancel_ = new QPushButton(style()->standardIcon(QStyle::SP_MediaStop), tr("Cancel"), this);
  cancel_->setToolTip(tr("Stop the running job; it leaves no result"));
  buttons->addWidget(run_, 1);
  buttons->addWidget(cancel_, 1);
  outer->addLayout(buttons);

  progress_ = new QProgressBar(this);
  progress_->setRange(0, 100);
  progress_->setValue(0);
  progress_->setTextVisible(true);
  stage_ = makeInfoLabel(this);
  status_ = new QLabel(this);
  status_->setWordWrap(true);
  status_->setTextFormat(Qt::PlainText);
  outer->addWidget(progress_);
  outer->addWidget(stage_);
  outer->addWidget(status_);
  outer->addStretch(1);

  connect(run_, &QPushButton::clicked, this, &JobPanel::runRequested);
  connect(cancel_, &QPushButton::clicked, this, &JobPanel::cancelRequested);
  connect(statistic_, &QComboBox::currentIndexChanged, this, [this] { statisticChanged(); });
  connect(rmin_, &QDoubleSpinBox::valueChanged, this, [this] { updateRunEnabled(); });
  connect(rmax_, &QDoubleSpinBox::valueChanged, this, [this] { updateRunEnabled(); });
  connect(log_, &QCheckBox::toggled, this, [this] { updateRunEnabled(); });

  setConfig(npcf::NpcfConfig{});
  setRunning(false);
}

npcf::NpcfConfig JobPanel::config() const {
  npcf::NpcfConfig c;
  c.statistic = static_cast<npcf::Statistic>(statistic_->currentData().toInt());
  c.bins.rmin = rmin_->value();
  c.bins.rmax = rmax_->value();
  c.bins.nbins = nbins_->value();
  c.bins.scale = log_->isChecked() ? npcf::BinScale::Log : npcf::BinScale::Linear;
  c.threads = threads_->value();
  c.backend = static_cast<npcf::Backend>(backend_->currentData().toInt());
  // Parity: spoke directions from the edges' direction pixels (the engine's default mode).
  c.store_pixels = c.statistic == npcf::Statistic::FourPointParity;
  return c;
}

void JobPanel::setConfig(const npcf::NpcfConfig& c) {
  const int idx = statistic_->findData(static_cast<int>(c.statistic));
  statistic_->setCurrentIndex(idx >= 0 ? idx : 0);
  rmin_->setValue(c.bins.rmin);
  rmax_->setValue(c.bins.rmax);
  nbins_->setValue(c.bins.nbins);
  log_->setChecked(c.bins.scale == npcf::BinScale::Log);
  threads_->setValue(c.threads);
  const int bidx = backend_->findData(static_cast<int>(c.backend));
  backend_->setCurrentIndex(bidx >= 0 ? bidx : 0);
  statisticChanged();
}

void JobPanel::setDataPath(const QString& path, const QString& info) {
  dataPath_ = path;
  dataEdit_->setText(QFileInfo(path).fileName());
  dataEdit_->setToolTip(path);
  dataInfo_->setText(info);
  dataInfo_->setVisible(!info.isEmpty());
}

void JobPanel::setRandomsPath(const QString& path, const QString& info) {
  randomsPath_ = path;
  randomsEdit_->setText(QFileInfo(path).fileName());
  randomsEdit_->setToolTip(path);
  randomsInfo_->setText(info);
  randomsInfo_->setVisible(!info.isEmpty());
}

void JobPanel::setReady(bool ready) {
  ready_ = ready;
  updateRunEnabled();
}

void JobPanel::setRunning(bool running) {
  running_ = running;
  settings_->setEnabled(!running);
  cancel_->setEnabled(running);
  updateRunEnabled();
}

void JobPanel::setProgress(int percent, const QString& stage) {
  progress_->setValue(percent);
  stage_->setText(stage);
}

void JobPanel::setStatusText(const QString& text) { status_->setText(text); }

void JobPanel::browse(bool randoms) {
  const QString filter = tr("Catalogues (*.txt *.dat *.csv *.fits *.fit *.fits.gz *.h5 *.hdf5);;All files (*)");
  const QString start = randoms ? (randomsPath_.isEmpty() ? dataPath_ : randomsPath_) : dataPath_;
  const QString path = QFileDialog::getOpenFileName(
      this, randoms ? tr("Open random catalogue") : tr("Open data catalogue"),
      start.isEmpty() ? QString() : QFileInfo(start).absolutePath(), filter);
  if (path.isEmpty()) return;
  if (randoms) emit randomsFileChosen(path);
  else emit dataFileChosen(path);
}

void JobPanel::statisticChanged() {
  const auto s = static_cast<npcf::Statistic>(statistic_->currentData().toInt());
  const bool four = s == npcf::Statistic::FourPoint || s == npcf::Statistic::FourPointParity;
  nbins_->setMaximum(four ? 16 : 255);
  updateRunEnabled();
}

void JobPanel::updateRunEnabled() {
  const bool binsOk = rmax_->value() > rmin_->value() && (!log_->isChecked() || rmin_->value() > 0);
  run_->setEnabled(ready_ && !running_ && binsOk);
  if (!binsOk)
    run_->setToolTip(log_->isChecked() && rmin_->value() <= 0
                         ? tr("Logarithmic bins need r min > 0")
                         : tr("r max must be larger than r min"));
  else if (!ready_)
    run_->setToolTip(tr("Open a data and a random catalogue first"));
  else
    run_->setToolTip(tr("Compute the statistic (Ctrl+R)"));
}

}  // namespace almagest::ui
