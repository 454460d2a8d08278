#include "npcf/ConfigurationExplorer.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QJsonArray>
#include <QLabel>
#include <QLocale>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

#include "npcf/ConfigurationModel.hpp"

namespace almagest::ui {

ConfigurationExplorer::ConfigurationExplorer(QWidget* parent) : QWidget(parent) {
  model_ = new ConfigurationModel(this);
  filter_ = new ConfigurationFilter(this);
  filter_->setSourceModel(model_);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* bar = new QHBoxLayout;
  auto* sideLabel = new QLabel(tr("Sides:"), this);
  sideMin_ = new QDoubleSpinBox(this);
  sideMax_ = new QDoubleSpinBox(this);
  for (QDoubleSpinBox* b : {sideMin_, sideMax_}) {
    b->setDecimals(3);
    b->setRange(0, 1e6);
    b->setSuffix(tr(" Mpc/h"));
    b->setKeyboardTracking(false);
  }
  sideMin_->setToolTip(tr("Smallest side centre shown"));
  sideMax_->setToolTip(tr("Largest side centre shown"));
  shape_ = new QComboBox(this);
  shape_->addItem(tr("any shape"), 0);
  shape_->addItem(tr("equilateral"), int(ConfigurationModel::Equilateral));
  shape_->addItem(tr("isosceles"), int(ConfigurationModel::Isosceles));
  shape_->addItem(tr("squeezed"), int(ConfigurationModel::Squeezed));
  shape_->setToolTip(tr("Equilateral: all side bins equal; isosceles: a repeated bin; squeezed: the smallest side at most half the median"));
  realisable_ = new QCheckBox(tr("realisable only"), this);
  realisable_->setToolTip(tr("Only tetrahedra whose bin-centre edges can be realised (Cayley-Menger determinant > 0)"));
  count_ = new QLabel(this);
  bar->addWidget(sideLabel);
  bar->addWidget(sideMin_);
  bar->addWidget(new QLabel(QStringLiteral("–"), this));
  bar->addWidget(sideMax_);
  bar->addWidget(shape_);
  bar->addWidget(realisable_);
  bar->addStretch(1);
  bar->addWidget(count_);
  layout->addLayout(bar);

  table_ = new QTableView(this);
  table_->setModel(filter_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(0, Qt::AscendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->setAlternatingRowColors(true);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  table_->horizontalHeader()->setStretchLastSection(true);
  layout->addWidget(table_, 1);

  connect(sideMin_, &QDoubleSpinBox::valueChanged, this, [this] { applyFilters(); });
  connect(sideMax_, &QDoubleSpinBox::valueChanged, this, [this] { applyFilters(); });
  connect(shape_, &QComboBox::currentIndexChanged, this, [this] { applyFilters(); });
  connect(realisable_, &QCheckBox::toggled, this, [this] { applyFilters(); });
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
    if (!quiet_) emit rowsSelected(selectedRows());
  });
  clear();
}

void ConfigurationExplorer::setResult(const almagest::npcf::NpcfResult& result) {
  model_->setResult(result);
  const auto& e = model_->binEdges();
  const QSignalBlocker b1(sideMin_), b2(sideMax_);
  if (!e.empty()) {
    sideMin_->setRange(0, e.back());
    sideMax_->setRange(0, e.back());
    sideMin_->setValue(0);
    sideMax_->setValue(e.back());
  }
  realisable_->setEnabled(model_->hasRealisable());
  applyFilters();
  table_->resizeColumnsToContents();
}

void ConfigurationExplorer::setSigma(const std::vector<double>& sigma) { model_->setSigma(sigma); }

void ConfigurationExplorer::clear() {
  model_->clear();
  updateCount();
}

void ConfigurationExplorer::applyFilters() {
  filter_->setFilters(sideMin_->value(), sideMax_->value(), static_cast<std::uint8_t>(shape_->currentData().toInt()),
                      realisable_->isChecked() && model_->hasRealisable());
  updateCount();
}

void ConfigurationExplorer::updateCount() {
  const QLocale loc;
  count_->setText(tr("%1 of %2 configurations").arg(loc.toString(filter_->rowCount()), loc.toString(model_->rowCount())));
}

QList<int> ConfigurationExplorer::selectedRows() const {
  QList<int> rows;
  for (const QModelIndex& i : table_->selectionModel()->selectedRows()) rows << model_->resultRow(filter_->mapToSource(i).row());
  std::sort(rows.begin(), rows.end());
  return rows;
}

void ConfigurationExplorer::selectRows(const QList<int>& rows) {
  quiet_ = true;
  QItemSelection sel;
  QModelIndex first;
  for (int r : rows) {
    if (r < 0 || r >= model_->rowCount()) continue;
    const QModelIndex p = filter_->mapFromSource(model_->index(model_->modelRow(r), 0));
    if (!p.isValid()) continue;
    sel.select(p, p);
    if (!first.isValid()) first = p;
  }
  table_->selectionModel()->select(sel, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  if (first.isValid()) table_->scrollTo(first);
  quiet_ = false;
}

QJsonObject ConfigurationExplorer::save_state() const {
  QJsonObject o;
  o[QStringLiteral("side_min")] = sideMin_->value();
  o[QStringLiteral("side_max")] = sideMax_->value();
  o[QStringLiteral("shape")] = shape_->currentIndex();
  o[QStringLiteral("realisable_only")] = realisable_->isChecked();
  o[QStringLiteral("sort_column")] = table_->horizontalHeader()->sortIndicatorSection();
  o[QStringLiteral("sort_descending")] = table_->horizontalHeader()->sortIndicatorOrder() == Qt::DescendingOrder;
  QJsonArray sel;
  for (int r : selectedRows()) sel.append(r);
  o[QStringLiteral("selected")] = sel;
  return o;
}

void ConfigurationExplorer::restore_state(const QJsonObject& s) {
  {
    const QSignalBlocker b1(sideMin_), b2(sideMax_), b3(shape_), b4(realisable_);
    if (s.contains(QStringLiteral("side_min"))) sideMin_->setValue(s.value(QStringLiteral("side_min")).toDouble());
    if (s.contains(QStringLiteral("side_max"))) sideMax_->setValue(s.value(QStringLiteral("side_max")).toDouble());
    shape_->setCurrentIndex(std::clamp(s.value(QStringLiteral("shape")).toInt(), 0, shape_->count() - 1));
    realisable_->setChecked(s.value(QStringLiteral("realisable_only")).toBool());
  }
  applyFilters();
  const int col = s.value(QStringLiteral("sort_column")).toInt(0);
  if (col >= 0 && col < model_->columnCount())
    table_->sortByColumn(col, s.value(QStringLiteral("sort_descending")).toBool() ? Qt::DescendingOrder : Qt::AscendingOrder);
  QList<int> rows;
  for (const QJsonValue& v : s.value(QStringLiteral("selected")).toArray())
    if (v.toInt(-1) >= 0 && v.toInt() < model_->rowCount()) rows << v.toInt();
  selectRows(rows);
  emit rowsSelected(selectedRows());
}

}  // namespace almagest::ui
