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
#include "almagest/stack/job.hpp"
#include "panels/SchemaForm.hpp"

namespace almagest::ui::stackview {

namespace stk = almagest::stack;
namespace sc = almagest::schema;

namespace {

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

QStringList SearchPanel::hiddenKeys() {
  return {QStringLiteral("op"), QStringLiteral("stack"), QStringLiteral("output"), QStringLiteral("backend")};
}

SearchPanel::SearchPanel(QWidget* parent) : QWidget(parent) {
  auto* top = new QVBoxLayout(this);

  // ---- the schema's search options (every option of `almagest-cli stack search`)
  form_ = new SchemaForm(stk::stack_schema(), {}, hiddenKeys(), this);
  form_->setObjectName(QStringLiteral("searchForm"));
  form_->setOperation(QStringLiteral("search"));
  top->addWidget(form_);

  // ---- backend: the schema's `backend` text as a combo (CUDA disabled with the reason)
  auto* comp = new QGroupBox(tr("Run"), this);
  auto* cf = new QFormLayout(comp);
  backend_ = new QComboBox(comp);
  backend_->setObjectName(QStringLiteral("backend"));
  backend_->addItem(tr("CPU"), QStringLiteral("cpu"));
  backend_->addItem(tr("CUDA"), QStringLiteral("cuda"));
  backend_->addItem(tr("Auto (GPU when usable)"), QStringLiteral("auto"));
  if (const sc::Field* f = stk::stack_schema().find("backend"))
    backend_->setToolTip(QString::fromStdString(sc::full_help(*f)));
  const GpuStatus& gpu = gpu_status();
  if (!gpu.available) {
    const QString why = QString::fromStdString(gpu.reason.empty() ? std::string("no usable GPU") : gpu.reason);
    if (auto* model = qobject_cast<QStandardItemModel*>(backend_->model()))
      if (QStandardItem* item = model->item(1)) {
        item->setEnabled(false);
        item->setToolTip(tr("Unavailable: %1").arg(why));
      }
  }
  cf->addRow(tr("Backend"), backend_);

  // ---- reach helper (fills vx-range, vy-range and grid)
  reach_ = new QDoubleSpinBox(comp);
  reach_->setRange(0.5, 10000.0);
  reach_->setDecimals(1);
  reach_->setValue(16.0);
  reach_->setSuffix(tr(" px"));
  reach_->setToolTip(tr("Largest displacement over the stack's baseline: the grid spans "
                        "±reach / baseline pixels/day on both axes"));
  reachN_ = countBox(33, tr("Steps per axis for the reach grid (odd keeps v = 0 on the grid)"), comp);
  applyReach_ = new QPushButton(tr("Set"), comp);
  cf->addRow(tr("Reach"), row({reach_, reachN_, applyReach_}));

  // ---- the window's own options
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
  connect(form_, &SchemaForm::changed, this, &SearchPanel::settingsChanged);
  connect(backend_, &QComboBox::currentIndexChanged, this, &SearchPanel::settingsChanged);
  connect(bestZ_, &QCheckBox::toggled, this, &SearchPanel::settingsChanged);
  connect(stampRadius_, &QSpinBox::valueChanged, this, &SearchPanel::settingsChanged);
  setBaseline(0);
}

sc::Values SearchPanel::values() const {
  sc::Values v = form_->values();
  const std::string b = backend_->currentData().toString().toStdString();
  if (b != "cpu") v["backend"] = b;  // the schema's default is cpu: only what the user chose
  return v;
}

void SearchPanel::setValues(const sc::Values& v) {
  sc::Values f = v;
  QString b = QStringLiteral("cpu");
  if (auto it = f.find("backend"); it != f.end()) {
    if (const auto* t = std::get_if<std::string>(&it->second)) b = QString::fromStdString(*t);
    f.erase(it);
  }
  const int i = backend_->findData(b.startsWith(QStringLiteral("cuda")) ? QStringLiteral("cuda") : b);
  backend_->setCurrentIndex(std::max(0, i));
  form_->setValues(f);
}

SearchSettings SearchPanel::settings() const {
  SearchSettings s = fromValues(values());
  s.backend = backend_->currentData().toString() == QStringLiteral("cpu") ? stk::Backend::Cpu : stk::Backend::GpuTiled;
  s.bestZMap = bestZ_->isChecked();
  s.stampRadius = stampRadius_->value();
  return s;
}

void SearchPanel::setSettings(const SearchSettings& s) {
  bestZ_->setChecked(s.bestZMap);
  stampRadius_->setValue(s.stampRadius);
  setValues(toValues(s));
}

bool SearchPanel::bestZMap() const { return bestZ_->isChecked(); }
int SearchPanel::stampRadius() const { return stampRadius_->value(); }
void SearchPanel::showProblems(const QString& text) { form_->showProblems(text); }

void SearchPanel::setBaseline(double days) {
  baseline_ = days;
  applyReach_->setEnabled(days > 0);
  reach_->setEnabled(days > 0);
  reachN_->setEnabled(days > 0);
  if (days <= 0) applyReach_->setToolTip(tr("Load a stack with more than one exposure time first"));
  else
    applyReach_->setToolTip(tr("Fill vx-range, vy-range and grid with ±reach / %1 days on both axes").arg(days, 0, 'f', 3));
}

void SearchPanel::setRunEnabled(bool on) { run_->setEnabled(on); }
void SearchPanel::setCancelEnabled(bool on) { cancel_->setEnabled(on); }
void SearchPanel::setLocked(bool locked) {
  form_->setLocked(locked);
  backend_->setEnabled(!locked);
}

void SearchPanel::applyReach() {
  if (!(baseline_ > 0)) return;
  const double v = reach_->value() / baseline_;
  sc::Values vals = values();
  vals.erase("speed-range");
  vals.erase("angle-range");
  vals.erase("velocities");
  const QString r = QStringLiteral("%1,%2").arg(-v, 0, 'g', 10).arg(v, 0, 'g', 10);
  vals["vx-range"] = r.toStdString();
  vals["vy-range"] = r.toStdString();
  vals["grid"] = std::to_string(reachN_->value());
  setValues(vals);
}

}  // namespace almagest::ui::stackview
