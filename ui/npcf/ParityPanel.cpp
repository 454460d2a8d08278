#include "npcf/ParityPanel.hpp"

#include <QAreaSeries>
#include <QChart>
#include <QChartView>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QPushButton>
#include <QJsonArray>
#include <QLabel>
#include <QLegend>
#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "almagest/core/error.hpp"
#include "almagest/jobs/batch.hpp"
#include "almagest/npcf/read_gramsci.hpp"
#include "almagest/npcf/result.hpp"
#include "app/JobQueue.hpp"

namespace almagest::ui {

namespace {

QChartView* makeView(QWidget* parent) {
  auto* c = new QChart;
  c->setAnimationOptions(QChart::NoAnimation);
  c->setBackgroundRoundness(0);
  c->setMargins(QMargins(4, 4, 4, 4));
  QFont tf = c->titleFont();
  tf.setBold(true);
  c->setTitleFont(tf);
  auto* v = new QChartView(c, parent);
  v->setRenderHint(QPainter::Antialiasing);
  v->setMinimumSize(300, 200);
  return v;
}

void clearChart(QChart* c) {
  c->removeAllSeries();
  for (QAbstractAxis* a : c->axes()) {
    c->removeAxis(a);
    delete a;
  }
}

}  // namespace

ParityPanel::ParityPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  summary_ = new QLabel(this);
  summary_->setTextFormat(Qt::PlainText);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(summary_);
  // A batch of the job model over a folder of mocks (the N-point form's other settings).
  auto* batch = new QGroupBox(tr("Run a batch over mock catalogues"), this);
  auto* bf = new QFormLayout(batch);
  auto* folderRow = new QHBoxLayout;
  folderEdit_ = new QLineEdit(batch);
  folderEdit_->setPlaceholderText(tr("folder of mock data catalogues"));
  auto* browse = new QPushButton(tr("Browse…"), batch);
  folderRow->addWidget(folderEdit_, 1);
  folderRow->addWidget(browse);
  bf->addRow(tr("Folder"), folderRow);
  patternEdit_ = new QLineEdit(QStringLiteral("*.txt"), batch);
  bf->addRow(tr("Files"), patternEdit_);
  auto* buttons = new QHBoxLayout;
  runButton_ = new QPushButton(tr("Run batch"), batch);
  runButton_->setToolTip(tr("A parity 4pCF of every file (randoms, binning and backend from the Job form), then the "
                            "npcf-parity aggregation; the outputs open here"));
  cancelButton_ = new QPushButton(tr("Cancel"), batch);
  cancelButton_->setEnabled(false);
  buttons->addWidget(runButton_);
  buttons->addWidget(cancelButton_);
  buttons->addStretch(1);
  bf->addRow(buttons);
  batchStatus_ = new QLabel(batch);
  batchStatus_->setWordWrap(true);
  batchStatus_->setTextFormat(Qt::PlainText);
  bf->addRow(batchStatus_);
  layout->addWidget(batch);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString d = QFileDialog::getExistingDirectory(this, tr("Folder of mock catalogues"), folderEdit_->text());
    if (!d.isEmpty()) folderEdit_->setText(d);
  });
  connect(runButton_, &QPushButton::clicked, this, [this] { runBatch(folderEdit_->text(), patternEdit_->text()); });
  connect(cancelButton_, &QPushButton::clicked, this, [this] { cancelBatch(); });

  pullView_ = makeView(this);
  histView_ = makeView(this);
  layout->addWidget(pullView_, 3);
  layout->addWidget(histView_, 2);
  clear();
}

void ParityPanel::clear() {
  samples_.clear();
  labels_.clear();
  paths_.clear();
  test_ = {};
  hist_.assign(kHistBins, 0.0);
  rebuild();
}

bool ParityPanel::openFiles(const QStringList& paths) {
  std::vector<std::vector<double>> samples;
  std::vector<std::uint8_t> bins0;
  QStringList labels;
  try {
    for (const QString& p : paths) {
      const std::string path = p.toStdString();
      const almagest::npcf::NpcfResult r =
          almagest::npcf::looks_like_gramsci(path) ? almagest::npcf::read_gramsci(path) : almagest::npcf::read_hdf5(path);
      if (r.statistic != almagest::npcf::Statistic::FourPointParity || r.zeta_odd.size() != r.rows())
        throw almagest::IoError(path, "zeta_odd", "not a parity 4pCF result (no odd channel)");
      if (samples.empty()) bins0 = r.bins;
      else if (r.bins != bins0)
        throw almagest::IoError(path, "bins", "the configurations differ from " + paths.front().toStdString() + "'s");
      samples.push_back(r.zeta_odd);
      labels << QFileInfo(p).fileName();
    }
  } catch (const almagest::Error& e) {
    error_ = QString::fromUtf8(e.what());
    return false;
  }
  if (!setRealisations(samples, labels)) return false;
  paths_ = paths;
  return true;
}

bool ParityPanel::setRealisations(const std::vector<std::vector<double>>& samples, const QStringList& labels) {
  try {
    test_ = almagest::jobs::parity_null_test(samples);
  } catch (const almagest::Error& e) {
    error_ = QString::fromUtf8(e.what());
    return false;
  }
  error_.clear();
  paths_.clear();
  samples_ = samples;
  labels_ = labels;
  hist_.assign(kHistBins, 0.0);
  const double w = 2 * kHistRange / kHistBins;
  for (std::size_t i = 0; i < test_.p; ++i) {
    if (!(test_.sigma_mean[i] > 0)) continue;
    const int b = std::clamp(static_cast<int>(std::floor((test_.z[i] + kHistRange) / w)), 0, kHistBins - 1);
    hist_[static_cast<std::size_t>(b)] += 1;
  }
  rebuild();
  emit realisationsChanged();
  return true;
}

QString ParityPanel::summaryText() const {
  if (test_.n == 0) return tr("Open the parity 4pCF results of several realisations (File > Open realisations) or run a batch over mock catalogues.");
  const auto& t = test_;
  QString s = tr("%1 realisations, %2 configurations (%3 without scatter). χ²/dof = %4 for %5 dof")
                  .arg(t.n).arg(t.p).arg(t.degenerate).arg(t.chi2_per_dof, 0, 'f', 3).arg(t.dof);
  if (std::isfinite(t.expected_chi2_per_dof)) {
    s += tr("; expected for pure noise (N−1)/(N−3) = %1").arg(t.expected_chi2_per_dof, 0, 'f', 3);
    if (std::isfinite(t.expected_spread)) s += tr(" ± %1").arg(t.expected_spread, 0, 'f', 3);
  } else {
    s += tr("; the expectation needs N > 3 realisations");
  }
  s += tr(". Beyond 2σ: %1 of %2 (%3%; ~4.6% for a Gaussian).")
           .arg(t.beyond_2sigma).arg(t.dof).arg(100.0 * t.fraction_beyond_2sigma, 0, 'f', 1);
  return s;
}

void ParityPanel::rebuild() {
  summary_->setText(error_.isEmpty() ? summaryText() : error_ + QStringLiteral("\n") + summaryText());
  QChart* pc = pullView_->chart();
  QChart* hc = histView_->chart();
  clearChart(pc);
  clearChart(hc);
  pc->setTitle(tr("Parity pulls z = mean / σ_mean of ζ_odd"));
  hc->setTitle(tr("Pull histogram against a unit Gaussian"));
  const double p = std::max<double>(1.0, static_cast<double>(test_.p));

  // Pulls with the +-1 and +-2 sigma bands.
  auto* px = new QValueAxis;
  px->setRange(-0.5, p - 0.5);
  px->setLabelFormat(QStringLiteral("%d"));
  px->setTitleText(tr("configuration index"));
  px->setTruncateLabels(false);
  double zmax = 3;
  for (double z : test_.z) zmax = std::max(zmax, std::abs(z));
  auto* py = new QValueAxis;
  py->setRange(-std::ceil(zmax * 1.05), std::ceil(zmax * 1.05));
  py->setTitleText(tr("z"));
  pc->addAxis(px, Qt::AlignBottom);
  pc->addAxis(py, Qt::AlignLeft);
  auto band = [&](double k, QColor colour) {
    auto* up = new QLineSeries, *down = new QLineSeries;
    up->append(-0.5, k); up->append(p - 0.5, k);
    down->append(-0.5, -k); down->append(p - 0.5, -k);
    auto* a = new QAreaSeries(up, down);
    a->setBrush(colour);
    a->setPen(Qt::NoPen);
    a->setName(tr("±%1σ").arg(k));
    pc->addSeries(a);
    a->attachAxis(px);
    a->attachAxis(py);
  };
  band(2, QColor(0xfd, 0xe6, 0x8a, 130));
  band(1, QColor(0xa7, 0xd3, 0x8c, 150));
  auto* pts = new QScatterSeries;
  pts->setName(tr("z"));
  pts->setMarkerSize(test_.p > 2000 ? 3 : 6);
  pts->setColor(QColor(0xc2, 0x25, 0x5c));
  pts->setBorderColor(QColor(0xc2, 0x25, 0x5c));
  // Bounded drawing: at most ~8000 markers (every k-th, and always the ones beyond 2 sigma).
  const std::size_t stride = std::max<std::size_t>(1, test_.p / 8000);
  QList<QPointF> list;
  for (std::size_t i = 0; i < test_.p; ++i)
    if (test_.sigma_mean[i] > 0 && (i % stride == 0 || std::abs(test_.z[i]) > 2)) list << QPointF(double(i), test_.z[i]);
  pts->replace(list);
  pc->addSeries(pts);
  pts->attachAxis(px);
  pts->attachAxis(py);

  // Histogram (as a step line of densities) and the unit Gaussian.
  const double w = 2 * kHistRange / kHistBins;
  const double norm = test_.dof > 0 ? 1.0 / (double(test_.dof) * w) : 0.0;
  auto* hx = new QValueAxis;
  hx->setRange(-kHistRange, kHistRange);
  hx->setTitleText(tr("z"));
  auto* hy = new QValueAxis;
  double top = 0.45;
  for (double c : hist_) top = std::max(top, c * norm * 1.1);
  hy->setRange(0, top);
  hy->setTitleText(tr("density"));
  hc->addAxis(hx, Qt::AlignBottom);
  hc->addAxis(hy, Qt::AlignLeft);
  auto* steps = new QLineSeries;
  steps->setName(tr("pulls"));
  QPen sp(QColor(0x1c, 0x64, 0xd2));
  sp.setWidthF(2);
  steps->setPen(sp);
  for (int b = 0; b < kHistBins; ++b) {
    const double x0 = -kHistRange + b * w, d = hist_[static_cast<std::size_t>(b)] * norm;
    steps->append(x0, d);
    steps->append(x0 + w, d);
  }
  auto* gauss = new QLineSeries;
  gauss->setName(tr("unit Gaussian"));
  QPen gp(QColor(0x33, 0x33, 0x33));
  gp.setStyle(Qt::DashLine);
  gauss->setPen(gp);
  for (int k = 0; k <= 160; ++k) {
    const double x = -kHistRange + k * (2 * kHistRange / 160);
    gauss->append(x, std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI));
  }
  for (QLineSeries* s : {steps, gauss}) {
    hc->addSeries(s);
    s->attachAxis(hx);
    s->attachAxis(hy);
  }
}

QJsonObject ParityPanel::save_state() const {
  QJsonObject o;
  QJsonArray files;
  for (const QString& f : paths_) files.append(f);
  o[QStringLiteral("files")] = files;
  return o;
}

void ParityPanel::restore_state(const QJsonObject& state) {
  QStringList files;
  for (const QJsonValue& v : state.value(QStringLiteral("files")).toArray()) files << v.toString();
  if (!files.isEmpty()) openFiles(files);
}

bool ParityPanel::runBatch(const QString& folder, const QString& pattern, const QString& outputDir) {
  if (batch_ && !batch_->isFinished()) {
    error_ = tr("A batch is running: cancel it or wait for it.");
    batchStatus_->setText(error_);
    return false;
  }
  if (folder.trimmed().isEmpty() || !QFileInfo(folder).isDir()) {
    error_ = tr("folder: '%1' is not a folder of mock catalogues").arg(folder);
    batchStatus_->setText(error_);
    return false;
  }
  const QString out = outputDir.isEmpty() ? QDir(folder).filePath(QStringLiteral("parity-batch")) : outputDir;
  almagest::schema::Values values = values_ ? values_() : almagest::schema::Values{};
  values.erase("data");  // the batch's axis
  folderEdit_->setText(folder);
  patternEdit_->setText(pattern);
  delete batch_.data();
  auto* runner = new JobRunner(tr("parity batch"), makeParityBatchJob(values, folder, pattern, out), this);
  batch_ = runner;
  aggregatePath_.clear();
  connect(runner, &JobRunner::progressChanged, this, [this](int pct, const QString& stage) {
    batchStatus_->setText(tr("%1% %2").arg(pct).arg(stage));
  });
  connect(runner, &JobRunner::finished, this, [this, runner, out](JobRunner::State state) {
    runButton_->setEnabled(true);
    cancelButton_->setEnabled(false);
    if (state == JobRunner::State::Completed) {
      const auto* files = runner->resultAs<QStringList>();
      if (files && openFiles(*files)) {
        aggregatePath_ = QDir(out).absoluteFilePath(QStringLiteral("parity.h5"));
        batchStatus_->setText(tr("%n realisation(s) from the batch; aggregation written to %1", nullptr, int(files->size()))
                                  .arg(QDir::toNativeSeparators(aggregatePath_)));
      } else {
        batchStatus_->setText(tr("The batch's outputs could not be opened: %1").arg(error_));
      }
    } else if (state == JobRunner::State::Cancelled) {
      batchStatus_->setText(tr("Batch cancelled; the members already written are kept (a re-run resumes)."));
    } else {
      error_ = runner->errorMessage();
      batchStatus_->setText(tr("Batch failed: %1").arg(error_));
      rebuild();
    }
    emit batchFinished(state);
  });
  const auto backend = values.find("backend");
  const QString device = backend != values.end() && std::holds_alternative<std::string>(backend->second)
                             ? JobQueue::deviceFor(QString::fromStdString(std::get<std::string>(backend->second)))
                             : QStringLiteral("cpu");
  runButton_->setEnabled(false);
  cancelButton_->setEnabled(true);
  batchStatus_->setText(tr("Batch queued: %1").arg(QDir(folder).filePath(pattern)));
  JobQueue::instance().submit(runner, device, window());
  return true;
}

void ParityPanel::cancelBatch() {
  if (batch_ && !batch_->isFinished()) batch_->cancel();
}

JobRunner::Job makeParityBatchJob(const almagest::schema::Values& values, const QString& folder, const QString& pattern,
                                  const QString& outputDir) {
  return [values, folder, pattern, outputDir](const almagest::JobContext& ctx) -> std::any {
    namespace jobs = almagest::jobs;
    QDir dir(folder);
    const QStringList names = dir.entryList(QStringList{pattern}, QDir::Files, QDir::Name);
    if (names.isEmpty())
      throw almagest::ConfigError("data", "no file matches " + QDir(folder).filePath(pattern).toStdString());
    QDir().mkpath(outputDir);
    jobs::JobFile jf;
    jf.path = QDir(outputDir).filePath(QStringLiteral("parity-batch (GUI)")).toStdString();
    jf.base_dir = QDir(outputDir).absolutePath().toStdString();
    jobs::JobEntry job;
    job.engine = "npcf";
    job.name = "mocks";
    job.label = "parity batch: ";
    job.values = values;
    job.values["stat"] = std::string("4pcf-parity");
    job.values["output"] = QDir(outputDir).absoluteFilePath(QStringLiteral("{stem}_parity.h5")).toStdString();
    job.values.erase("format");
    jobs::BatchAxis axis;
    axis.key = "data";
    for (const QString& n : names) axis.values.push_back(dir.absoluteFilePath(n).toStdString());
    axis.pattern = pattern.toStdString();
    job.batch = axis;
    jf.jobs.push_back(std::move(job));
    jobs::AggregateEntry agg;
    agg.label = "parity batch: aggregate: ";
    agg.values["kind"] = std::string("npcf-parity");
    agg.values["batch"] = std::string("mocks");
    agg.values["output"] = QDir(outputDir).absoluteFilePath(QStringLiteral("parity.h5")).toStdString();
    jf.aggregates.push_back(std::move(agg));

    const jobs::RunPlan plan = jobs::plan_job_file(jf);
    struct Observer : jobs::BatchObserver {
      const almagest::JobContext& ctx;
      std::size_t total;
      explicit Observer(const almagest::JobContext& c, std::size_t n) : ctx(c), total(n) {}
      void progress(const jobs::Batch&, const jobs::Member& m, double done, double tot, std::string_view stage) override {
        const double f = tot > 0 ? std::clamp(done / tot, 0.0, 1.0) : 0.0;
        ctx.progress(double(m.index) + f, double(total), "member " + std::to_string(m.index + 1) + ": " + std::string(stage));
      }
      void log(const jobs::Batch&, const jobs::Member& m, almagest::LogLevel l, std::string_view msg) override {
        ctx.log(l, m.label + std::string(msg));
      }
    } observer(ctx, plan.member_count());
    jobs::BatchRunOptions options;
    options.threads = ctx.threads;
    jobs::run_plan(plan, ctx.token(), options, observer);
    QStringList outputs;
    for (const auto& m : plan.batches.front().members)
      for (const std::string& o : m.job->output_paths()) outputs << QString::fromStdString(o);
    return outputs;
  };
}

}  // namespace almagest::ui
