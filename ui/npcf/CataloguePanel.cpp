#include "npcf/CataloguePanel.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QEvent>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QJsonArray>
#include <QLabel>
#include <QLocale>
#include <QMouseEvent>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>

#include "almagest/core/error.hpp"
#include "views/PointCloudScene.hpp"
#include "views/VtkView.hpp"

namespace almagest::ui {

namespace {

std::size_t rowsOf(const almagest::npcf::NpcfResult& r) {
  return r.edges_per_row > 0 ? r.bins.size() / static_cast<std::size_t>(r.edges_per_row) : 0;
}

}  // namespace

CataloguePanel::CataloguePanel(PointCloudScene* scene, VtkView* view, QWidget* parent)
    : QWidget(parent), scene_(scene), view_(view) {
  setObjectName(QStringLiteral("CataloguePanel"));
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);

  auto* form = new QFormLayout;
  colour_ = new QComboBox(this);
  colour_->addItem(tr("Sample (data, randoms)"), int(PointCloudScene::ColourBy::Sample));
  colour_->addItem(tr("Weight"), int(PointCloudScene::ColourBy::Weight));
  form->addRow(tr("Colour by"), colour_);
  layout->addLayout(form);
  connect(colour_, &QComboBox::currentIndexChanged, this, [this] {
    scene_->setColourBy(static_cast<PointCloudScene::ColourBy>(colour_->currentData().toInt()));
  });

  clip_ = new QGroupBox(tr("Clip to a box [Mpc/h]"), this);
  clip_->setCheckable(true);
  clip_->setChecked(false);
  auto* grid = new QGridLayout(clip_);
  const char* axes[3] = {"x", "y", "z"};
  for (int a = 0; a < 3; ++a) {
    grid->addWidget(new QLabel(QString::fromLatin1(axes[a]), clip_), a, 0);
    for (int e = 0; e < 2; ++e) {
      auto* box = new QDoubleSpinBox(clip_);
      box->setRange(-1e9, 1e9);
      box->setDecimals(2);
      box->setKeyboardTracking(false);
      box->setToolTip(e ? tr("upper bound") : tr("lower bound"));
      clipEdits_[2 * a + e] = box;
      grid->addWidget(box, a, 1 + e);
      connect(box, &QDoubleSpinBox::valueChanged, this, [this] { applyClip(); });
    }
  }
  connect(clip_, &QGroupBox::toggled, this, [this] { applyClip(); });
  layout->addWidget(clip_);

  auto* graph = new QGroupBox(tr("Neighbour graph"), this);
  auto* gf = new QFormLayout(graph);
  point_ = new QSpinBox(graph);
  point_->setRange(-1, -1);
  point_->setSpecialValueText(tr("none"));
  point_->setKeyboardTracking(false);  // typed: drawn on Enter or focus out, not per digit
  point_->setToolTip(tr("Engine index of the point (data first, then randoms); or double-click a point in the 3D view"));
  gf->addRow(tr("Point"), point_);
  config_ = new QSpinBox(graph);
  config_->setRange(-1, -1);
  config_->setSpecialValueText(tr("none"));
  config_->setKeyboardTracking(false);
  config_->setToolTip(tr("Configuration row of the result (or select a row in the configuration table): its triangles or "
                         "tetrahedra through the point are drawn"));
  gf->addRow(tr("Configuration"), config_);
  configLabel_ = new QLabel(graph);
  configLabel_->setWordWrap(true);
  gf->addRow(QString(), configLabel_);
  statusLabel_ = new QLabel(graph);
  statusLabel_->setWordWrap(true);
  statusLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  gf->addRow(statusLabel_);
  layout->addWidget(graph);
  layout->addStretch(1);
  connect(point_, &QSpinBox::valueChanged, this, [this](int v) {
    if (!updating_) showNeighbours(v);
  });
  connect(config_, &QSpinBox::valueChanged, this, [this](int v) {
    if (!updating_) setConfiguration(v);
  });
  if (view_) view_->installEventFilter(this);
  status_ = tr("Type a point's index or double-click a point in the 3D view.");
  statusLabel_->setText(status_);
}

CataloguePanel::~CataloguePanel() = default;  // Qt drops the event filter with this object

void CataloguePanel::setCatalogues(CataloguePtr data, CataloguePtr randoms) {
  data_ = std::move(data);
  randoms_ = std::move(randoms);
  graph_.reset();
  const std::size_t n = (data_ ? data_->size() : 0) + (randoms_ ? randoms_->size() : 0);
  {
    const QSignalBlocker block(point_);
    point_->setRange(-1, n > 0 ? static_cast<int>(std::min<std::size_t>(n - 1, std::size_t(INT32_MAX))) : -1);
    point_->setValue(-1);
  }
  const std::array<double, 6> b = scene_->pointBounds();
  {
    updating_ = true;
    for (int k = 0; k < 6; ++k) {
      const QSignalBlocker block(clipEdits_[k]);
      clipEdits_[k]->setValue(b[k]);
    }
    updating_ = false;
  }
  applyClip();
  scene_->setNeighbourGraph(nullptr, 1);
  status_ = n ? tr("%1 points. Type a point's index or double-click a point in the 3D view.").arg(QLocale().toString(qulonglong(n)))
              : tr("No catalogue loaded.");
  statusLabel_->setText(status_);
}

void CataloguePanel::setResult(const almagest::npcf::NpcfResult* result) {
  result_ = result && result->edges_per_row >= 3 ? result : nullptr;
  {
    const QSignalBlocker block(config_);
    const int rows = result_ ? static_cast<int>(rowsOf(*result_)) : 0;
    config_->setRange(-1, rows - 1);
    config_->setValue(pendingConfig_ < rows ? pendingConfig_ : -1);
    if (result_) pendingConfig_ = -1;
    config_->setEnabled(rows > 0);
  }
  configLabel_->setText(result_ ? QString() : tr("(a 3pCF or 4pCF result gives configurations)"));
  if (graph_) redraw();
}

void CataloguePanel::setBinningSource(std::function<std::optional<almagest::npcf::Binning>(QString* why)> source) {
  binningSource_ = std::move(source);
}

std::optional<almagest::npcf::Binning> CataloguePanel::binning(QString* why) const {
  if (result_) return result_->config.bins;
  if (binningSource_) return binningSource_(why);
  if (why) *why = tr("no binning (set rmin, rmax and the bins in the job form)");
  return std::nullopt;
}

bool CataloguePanel::showNeighbours(long long index) {
  graph_.reset();
  const std::size_t n = (data_ ? data_->size() : 0) + (randoms_ ? randoms_->size() : 0);
  auto fail = [this](const QString& why) {
    scene_->setNeighbourGraph(nullptr, 1);
    status_ = why;
    statusLabel_->setText(status_);
    return false;
  };
  if (index < 0) {
    scene_->setNeighbourGraph(nullptr, 1);
    status_ = tr("No point chosen.");
    statusLabel_->setText(status_);
    return true;
  }
  if (!data_) return fail(tr("No catalogue loaded."));
  if (static_cast<std::size_t>(index) >= n)
    return fail(tr("point %1: the catalogues have %2 points (0 .. %3)").arg(index).arg(n).arg(n - 1));
  QString why;
  const std::optional<almagest::npcf::Binning> bins = binning(&why);
  if (!bins) return fail(tr("point %1: %2").arg(index).arg(why));
  try {
    graph_ = neighbour_graph(*data_, randoms_.get(), static_cast<std::size_t>(index), *bins);
  } catch (const almagest::Error& e) {
    return fail(QString::fromUtf8(e.what()));
  }
  if (point_->value() != index) {
    const QSignalBlocker block(point_);
    point_->setValue(static_cast<int>(index));
  }
  redraw();
  return true;
}

void CataloguePanel::setConfiguration(int row) {
  if (config_->value() != row) {
    const QSignalBlocker block(config_);
    config_->setValue(row);
  }
  redraw();
}

int CataloguePanel::configuration() const { return config_->value(); }
long long CataloguePanel::point() const { return graph_ ? static_cast<long long>(graph_->hub) : -1; }

QString CataloguePanel::statusText() const { return status_; }

void CataloguePanel::redraw() {
  const int row = config_->value();
  QString configText;
  bool tooMany = false;
  if (result_ && row >= 0 && static_cast<std::size_t>(row) < rowsOf(*result_)) {
    const int e = result_->edges_per_row;
    const std::vector<std::uint8_t> rowBins(result_->bins.begin() + std::ptrdiff_t(row) * e,
                                            result_->bins.begin() + std::ptrdiff_t(row + 1) * e);
    QStringList b;
    for (std::uint8_t x : rowBins) b << QString::number(x);
    configText = tr("%1 bins (%2)").arg(e == 3 ? tr("triangle") : tr("tetrahedron"), b.join(QStringLiteral(", ")));
    configLabel_->setText(configText);
    // The brute force is O(k^2) triangles / O(k^3) tetrahedra in the k neighbours: beyond these
    // sizes it would hold the GUI for seconds, so it is not started (and the dock says so).
    const std::size_t k = graph_ ? graph_->index.size() : 0;
    tooMany = graph_ && ((e == 3 && k > kMaxTriangleNeighbours) || (e == 6 && k > kMaxTetraNeighbours));
    if (graph_ && !tooMany && (e == 3 || e == 6)) find_tuples(*graph_, result_->config.bins, rowBins);
    else if (graph_) {
      graph_->tuples.clear();
      graph_->tuplesFound = 0;
      graph_->capped = false;
    }
  } else {
    if (result_) configLabel_->setText(tr("(choose a row, or select one in the configuration table)"));
    if (graph_) {
      graph_->tuples.clear();
      graph_->tuplesFound = 0;
      graph_->capped = false;
    }
  }
  if (!graph_) {
    scene_->setNeighbourGraph(nullptr, 1);
    return;
  }
  QString why;
  const std::optional<almagest::npcf::Binning> bins = binning(&why);
  const int nbins = bins ? bins->nbins : 1;
  scene_->setNeighbourGraph(&*graph_, nbins);
  const std::size_t nd = data_ ? data_->size() : 0;
  const NeighbourGraph& g = *graph_;
  status_ = tr("Point %1 (%2): %3 neighbours in %4 < r < %5 Mpc/h, spokes coloured by radial bin")
                .arg(g.hub)
                .arg(g.hub < nd ? tr("data %1").arg(g.hub) : tr("random %1").arg(g.hub - nd))
                .arg(g.index.size())
                .arg(bins ? bins->rmin : 0)
                .arg(bins ? bins->rmax : 0);
  if (!configText.isEmpty() && tooMany) {
    status_ += tr("; too many neighbours to enumerate its %1 here (at most %2): narrow rmax")
                   .arg(result_->edges_per_row == 3 ? tr("triangles") : tr("tetrahedra"))
                   .arg(result_->edges_per_row == 3 ? kMaxTriangleNeighbours : kMaxTetraNeighbours);
  } else if (!configText.isEmpty()) {
    status_ += tr("; %1 %2 through it of this configuration").arg(g.tuplesFound).arg(result_->edges_per_row == 3 ? tr("triangles") : tr("tetrahedra"));
    if (g.capped) status_ += tr(" (%1 drawn)").arg(g.tuples.size());
  }
  status_ += QLatin1Char('.');
  statusLabel_->setText(status_);
}

void CataloguePanel::applyClip() {
  if (updating_) return;
  if (!clip_->isChecked()) {
    if (scene_->hasClipBox()) scene_->clearClipBox();
    return;
  }
  std::array<double, 6> b;
  for (int k = 0; k < 6; ++k) b[k] = clipEdits_[k]->value();
  scene_->setClipBox(b);
}

bool CataloguePanel::eventFilter(QObject* watched, QEvent* event) {
  if (watched == view_ && event->type() == QEvent::MouseButtonDblClick) {
    auto* me = static_cast<QMouseEvent*>(event);
    if (me->button() == Qt::LeftButton) {
      const long long id = scene_->pickPoint(int(me->position().x()), int(me->position().y()));
      if (id >= 0) showNeighbours(id);
    }
  }
  return QWidget::eventFilter(watched, event);
}

QJsonObject CataloguePanel::save_state() const {
  QJsonObject o;
  o[QStringLiteral("colour_by")] = colour_->currentIndex() == 1 ? QStringLiteral("weight") : QStringLiteral("sample");
  if (clip_->isChecked()) {
    QJsonArray box;
    for (auto* e : clipEdits_) box.append(e->value());
    o[QStringLiteral("clip_box")] = box;
  }
  if (graph_) o[QStringLiteral("point")] = static_cast<double>(graph_->hub);
  if (config_->value() >= 0) o[QStringLiteral("configuration")] = config_->value();
  return o;
}

void CataloguePanel::restore_state(const QJsonObject& s) {
  colour_->setCurrentIndex(s.value(QStringLiteral("colour_by")).toString() == QLatin1String("weight") ? 1 : 0);
  const QJsonArray box = s.value(QStringLiteral("clip_box")).toArray();
  if (box.size() == 6) {
    updating_ = true;
    for (int k = 0; k < 6; ++k) clipEdits_[k]->setValue(box[k].toDouble());
    clip_->setChecked(true);
    updating_ = false;
  } else {
    updating_ = true;
    clip_->setChecked(false);
    updating_ = false;
  }
  applyClip();
  if (s.contains(QStringLiteral("configuration"))) {
    const int row = s.value(QStringLiteral("configuration")).toInt(-1);
    if (row > config_->maximum()) pendingConfig_ = row;  // its result is still being read
    const QSignalBlocker block(config_);
    config_->setValue(row);
  }
  if (s.contains(QStringLiteral("point"))) showNeighbours(static_cast<long long>(s.value(QStringLiteral("point")).toDouble()));
  else redraw();
}

}  // namespace almagest::ui
