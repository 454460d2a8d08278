#include "panels/JobPanel.hpp"

#include <QStandardItemModel>

#include <QComboBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QStyle>
#include <QVBoxLayout>

#include "almagest/core/error.hpp"
#include "almagest/core/gpu.hpp"
#include "almagest/npcf/job.hpp"
#include "panels/SchemaForm.hpp"

namespace almagest::ui {

namespace npcf = almagest::npcf;
namespace sc = almagest::schema;

namespace {

QLabel* makeInfoLabel(QWidget* parent) {
  auto* l = new QLabel(parent);
  l->setStyleSheet(QStringLiteral("color: palette(mid);"));
  l->setWordWrap(true);
  return l;
}

QLineEdit* lineEditOf(QWidget* editor) {
  if (auto* e = qobject_cast<QLineEdit*>(editor)) return e;
  return editor ? editor->findChild<QLineEdit*>() : nullptr;
}

/// Placeholder values for the required keys a form may not have yet, so that make_npcf_job can
/// derive a configuration or a catalogue spec from what is there.
sc::Values completed(sc::Values v) {
  v.try_emplace("stat", std::string("2pcf"));
  v.try_emplace("data", std::string("data"));
  v.try_emplace("randoms", std::string("randoms"));
  v.try_emplace("rmin", 1.0);
  v.try_emplace("rmax", 2.0);
  v.try_emplace("nbins", std::int64_t{1});
  v.try_emplace("output", std::string("unsaved.h5"));
  return v;
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

  // Statistic: one at a time in the window (the chart shows one result).
  auto* stat = new QGroupBox(tr("Statistic"), settings_);
  auto* statForm = new QFormLayout(stat);
  statForm->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  statistic_ = new QComboBox(stat);
  statistic_->setObjectName(QStringLiteral("statistic"));
  statistic_->addItem(tr("2pCF  ξ(r)"), static_cast<int>(npcf::Statistic::TwoPoint));
  statistic_->addItem(tr("3pCF  all triangles"), static_cast<int>(npcf::Statistic::ThreePoint));
  statistic_->addItem(tr("3pCF  equilateral"), static_cast<int>(npcf::Statistic::ThreePointEquilateral));
  statistic_->addItem(tr("4pCF  with connected part"), static_cast<int>(npcf::Statistic::FourPoint));
  statistic_->addItem(tr("4pCF  parity (even and odd)"), static_cast<int>(npcf::Statistic::FourPointParity));
  statistic_->setToolTip(QString::fromStdString(sc::full_help(*npcf::npcf_schema().find("stat"))));
  statForm->addRow(tr("Statistic"), statistic_);
  settingsLayout->addWidget(stat);

  // Every other option of the job, generated from the schema (the CLI's help texts and ranges).
  form_ = new SchemaForm(npcf::npcf_schema(), {}, {QStringLiteral("stat"), QStringLiteral("output"), QStringLiteral("format")},
                         settings_);
  form_->setObjectName(QStringLiteral("npcfForm"));
  settingsLayout->addWidget(form_);
  dataInfo_ = makeInfoLabel(settings_);
  randomsInfo_ = makeInfoLabel(settings_);
  settingsLayout->insertWidget(1, dataInfo_);
  settingsLayout->insertWidget(2, randomsInfo_);
  dataInfo_->hide();
  randomsInfo_->hide();

  // Backend: say where no GPU can be used (the job layer reports it when cuda is asked for).
  const GpuStatus& gpu = gpu_status();
  if (QWidget* b = form_->editor(QStringLiteral("backend")))
    b->setToolTip(gpu.available ? tr("GPU: %1").arg(QString::fromStdString(gpu.summary()))
                                : tr("No usable GPU: %1").arg(QString::fromStdString(gpu.reason)));

  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setWidget(settings_);
  outer->addWidget(scroll, 1);

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

  connect(run_, &QPushButton::clicked, this, &JobPanel::runRequested);
  connect(cancel_, &QPushButton::clicked, this, &JobPanel::cancelRequested);
  connect(statistic_, &QComboBox::currentIndexChanged, this, [this] { updateRunEnabled(); });
  connect(form_, &SchemaForm::changed, this, [this] {
    // A path picked with Browse (the edit does not have the focus): load it for the view now;
    // a typed path when editing finishes.
    for (bool randoms : {false, true}) {
      QLineEdit* e = lineEditOf(form_->editor(randoms ? QStringLiteral("randoms") : QStringLiteral("data")));
      if (e && !e->hasFocus()) pathEdited(randoms);
    }
    updateRunEnabled();
  });
  for (bool randoms : {false, true})
    if (QLineEdit* e = lineEditOf(form_->editor(randoms ? QStringLiteral("randoms") : QStringLiteral("data"))))
      connect(e, &QLineEdit::editingFinished, this, [this, randoms] { pathEdited(randoms); });

  setConfig(npcf::NpcfConfig{});  // binning prefilled (1 < r < 50 Mpc/h, 10 bins), as before
  setRunning(false);
}

void JobPanel::pathEdited(bool randoms) {
  const QString p = formPath(randoms ? "randoms" : "data");
  if (p.isEmpty() || p == (randoms ? randomsPath_ : dataPath_)) return;
  if (randoms) emit randomsFileChosen(p);
  else emit dataFileChosen(p);
}

QString JobPanel::formPath(const char* key) const {
  QLineEdit* e = lineEditOf(form_->editor(QString::fromLatin1(key)));
  return e ? e->text().trimmed() : QString();
}

void JobPanel::setFormPath(const char* key, const QString& path) {
  sc::Values v = form_->values();
  if (path.isEmpty()) v.erase(key);
  else v[key] = path.toStdString();
  form_->setValues(v);
}

sc::Values JobPanel::values() const {
  sc::Values v = form_->values();
  v["stat"] = std::string(npcf::to_string(static_cast<npcf::Statistic>(statistic_->currentData().toInt())));
  for (const char* key : {"data", "randoms"}) {
    const QString p = formPath(key);
    if (p.isEmpty()) v.erase(key);
    else v[key] = p.toStdString();
  }
  return v;
}

void JobPanel::setValues(const sc::Values& values) {
  sc::Values v = values;
  if (auto it = v.find("stat"); it != v.end()) {
    std::string s;
    if (auto t = std::get_if<std::string>(&it->second)) s = *t;
    else if (auto l = std::get_if<std::vector<std::string>>(&it->second); l && !l->empty()) s = l->front();
    try {
      const int idx = statistic_->findData(static_cast<int>(npcf::statistic_from_string(s)));
      if (idx >= 0) statistic_->setCurrentIndex(idx);
    } catch (const almagest::ConfigError&) {
    }
    v.erase(it);
  }
  for (const char* key : {"data", "randoms"})
    if (!v.count(key) && !formPath(key).isEmpty()) v[key] = formPath(key).toStdString();
  v.erase("output");
  v.erase("format");
  form_->setValues(v);
  updateRunEnabled();
}

npcf::NpcfConfig JobPanel::config() const {
  try {
    return npcf::make_npcf_job(completed(values()), "", "").config;
  } catch (const almagest::ConfigError&) {
    npcf::NpcfConfig c;
    c.statistic = static_cast<npcf::Statistic>(statistic_->currentData().toInt());
    return c;
  }
}

void JobPanel::setConfig(const npcf::NpcfConfig& c) {
  sc::Values v = form_->values();
  v["stat"] = std::string(npcf::to_string(c.statistic));
  v["rmin"] = c.bins.rmin;
  v["rmax"] = c.bins.rmax;
  v["nbins"] = std::int64_t{c.bins.nbins};
  v["log-bins"] = c.bins.scale == npcf::BinScale::Log;
  v["periodic"] = c.periodic;
  if (c.periodic) v["box"] = c.box;
  else v.erase("box");
  v["directions"] = std::string(c.directions == npcf::DirectionMode::Exact ? "exact" : "pixel");
  v["pixel-grid"] = std::to_string(c.pixel_ntheta) + "x" + std::to_string(c.pixel_nphi);
  v["threads"] = std::int64_t{c.threads};
  v["backend"] = almagest::to_string(c.backend);
  setValues(v);
}

io::CatalogueSpec JobPanel::catalogueSpec(const QString& path, bool randoms) const {
  sc::Values v = completed(values());
  v[randoms ? "randoms" : "data"] = path.toStdString();
  if (randoms) v.try_emplace("data", path.toStdString());
  else if (!v.count("randoms")) v["periodic"] = true, v["box"] = 1e9;  // only the spec matters
  try {
    npcf::NpcfJob job = npcf::make_npcf_job(v, "", "");
    if (randoms && job.randoms) return *job.randoms;
    if (!randoms) return job.data;
  } catch (const almagest::ConfigError&) {
  }
  io::CatalogueSpec spec;
  spec.path = path.toStdString();
  return spec;
}

bool JobPanel::periodic() const {
  auto v = form_->values();
  auto it = v.find("periodic");
  return it != v.end() && std::holds_alternative<bool>(it->second) && std::get<bool>(it->second);
}

void JobPanel::setDataPath(const QString& path, const QString& info) {
  dataPath_ = path;
  if (formPath("data") != path) setFormPath("data", path);
  dataInfo_->setText(info.isEmpty() ? QString() : tr("Data: %1").arg(info));
  dataInfo_->setVisible(!info.isEmpty());
}

void JobPanel::setRandomsPath(const QString& path, const QString& info) {
  randomsPath_ = path;
  if (formPath("randoms") != path) setFormPath("randoms", path);
  randomsInfo_->setText(info.isEmpty() ? QString() : tr("Randoms: %1").arg(info));
  randomsInfo_->setVisible(!info.isEmpty());
}

void JobPanel::setReady(bool ready) {
  ready_ = ready;
  updateRunEnabled();
}

void JobPanel::setRunning(bool running) {
  running_ = running;
  settings_->setEnabled(!running);
  form_->setLocked(running);
  cancel_->setEnabled(running);
  updateRunEnabled();
}

void JobPanel::setProgress(int percent, const QString& stage) {
  progress_->setValue(percent);
  stage_->setText(stage);
}

void JobPanel::setStatusText(const QString& text) { status_->setText(text); }

void JobPanel::updateRunEnabled() {
  // The job layer's own messages, shown under the form as the user edits (the same text the
  // CLI prints for the same values).
  QString problems;
  try {
    npcf::make_npcf_job(completed(values()), "", "");
  } catch (const almagest::ConfigError& e) {
    problems = QString::fromUtf8(e.what()).replace(QStringLiteral("; "), QStringLiteral("\n"));
  }
  form_->showProblems(problems);
  run_->setEnabled(ready_ && !running_ && problems.isEmpty());
  if (!problems.isEmpty())
    run_->setToolTip(problems);
  else if (!ready_)
    run_->setToolTip(tr("Open a data and a random catalogue first"));
  else
    run_->setToolTip(tr("Compute the statistic (Ctrl+R)"));
}

}  // namespace almagest::ui
