#include "npcf/ConfigurationModel.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace almagest::ui {

using Column = ConfigurationModel::Column;

ConfigurationModel::ConfigurationModel(QObject* parent) : QAbstractTableModel(parent) {}

void ConfigurationModel::clear() {
  beginResetModel();
  order_ = 0;
  columns_.clear();
  bins_.clear();
  for (auto* v : {&tuples_, &randomTuples_, &n_, &r_, &est_, &disc_, &conn_, &odd_, &sigma_, &minSide_, &maxSide_, &edges_, &centres_})
    v->clear();
  realisable_.clear();
  shape_.clear();
  perm_.clear();
  inv_.clear();
  endResetModel();
}

void ConfigurationModel::setResult(const almagest::npcf::NpcfResult& res) {
  beginResetModel();
  const std::size_t rows = res.rows();
  order_ = res.order;
  epr_ = std::clamp(res.edges_per_row, 1, 6);
  bins_.assign(res.bins.begin(), res.bins.end());
  bins_.resize(rows * static_cast<std::size_t>(epr_), 0);
  auto take = [rows](const auto& src, std::vector<double>& dst) {
    dst.clear();
    if (src.size() != rows) return;
    dst.assign(src.begin(), src.end());
  };
  take(res.tuples, tuples_);
  take(res.random_tuples, randomTuples_);
  take(res.n, n_);
  take(res.r, r_);
  take(res.estimator, est_);
  take(res.zeta_disc, disc_);
  take(res.zeta_conn, conn_);
  take(res.zeta_odd, odd_);
  sigma_.clear();
  realisable_.clear();
  if (res.realisable.size() == rows) realisable_ = res.realisable;

  const int nb = std::max(1, res.config.bins.nbins);
  edges_.resize(static_cast<std::size_t>(nb) + 1);
  centres_.resize(static_cast<std::size_t>(nb));
  for (int b = 0; b <= nb; ++b) edges_[static_cast<std::size_t>(b)] = res.config.bins.edge(b);
  for (int b = 0; b < nb; ++b) centres_[static_cast<std::size_t>(b)] = res.config.bins.centre(b);

  minSide_.resize(rows);
  maxSide_.resize(rows);
  shape_.resize(rows);
  double s[6];
  for (std::size_t i = 0; i < rows; ++i) {
    for (int e = 0; e < epr_; ++e) s[e] = centres_[std::min<std::size_t>(bins_[i * epr_ + e], centres_.size() - 1)];
    std::sort(s, s + epr_);
    minSide_[i] = s[0];
    maxSide_[i] = s[epr_ - 1];
    std::uint8_t shape = 0;
    if (epr_ > 1) {
      bool repeated = false;
      for (int e = 1; e < epr_; ++e) repeated = repeated || s[e] == s[e - 1];
      if (s[0] == s[epr_ - 1]) shape |= Equilateral;
      else if (repeated) shape |= Isosceles;
      const double median = s[epr_ / 2];
      if (s[0] <= 0.5 * median) shape |= Squeezed;
    }
    shape_[i] = shape;
  }

  // A text result carries no tuple counts (read_gramsci reports 0): no columns of zeros.
  const bool counts = std::any_of(tuples_.begin(), tuples_.end(), [](double v) { return v != 0; });
  if (!counts) {
    tuples_.clear();
    randomTuples_.clear();
  }
  columns_ = {Column::Index, Column::Bins, Column::Sides};
  if (!tuples_.empty()) columns_.push_back(Column::Tuples);
  if (!randomTuples_.empty()) columns_.push_back(Column::RandomTuples);
  if (!n_.empty()) columns_.push_back(Column::N);
  if (!r_.empty()) columns_.push_back(Column::R);
  if (!est_.empty()) columns_.push_back(Column::Estimator);
  if (!disc_.empty()) columns_.push_back(Column::ZetaDisc);
  if (!conn_.empty()) columns_.push_back(Column::ZetaConn);
  if (!odd_.empty()) columns_.push_back(Column::ZetaOdd);
  if (!realisable_.empty()) columns_.push_back(Column::Realisable);
  perm_.resize(rows);
  std::iota(perm_.begin(), perm_.end(), 0);
  inv_ = perm_;
  endResetModel();
}

void ConfigurationModel::setSigma(const std::vector<double>& sigma) {
  beginResetModel();
  sigma_ = sigma.size() == minSide_.size() ? sigma : std::vector<double>{};
  columns_.erase(std::remove(columns_.begin(), columns_.end(), Column::Sigma), columns_.end());
  if (!sigma_.empty()) {
    const int at = section(Column::Realisable);
    columns_.insert(at < 0 ? columns_.end() : columns_.begin() + at, Column::Sigma);
  }
  endResetModel();
}

int ConfigurationModel::section(Column c) const {
  auto it = std::find(columns_.begin(), columns_.end(), c);
  return it == columns_.end() ? -1 : static_cast<int>(it - columns_.begin());
}

int ConfigurationModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(minSide_.size());
}
int ConfigurationModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(columns_.size());
}

const std::vector<double>* ConfigurationModel::doubles(Column c) const {
  switch (c) {
    case Column::Tuples: return &tuples_;
    case Column::RandomTuples: return &randomTuples_;
    case Column::N: return &n_;
    case Column::R: return &r_;
    case Column::Estimator: return &est_;
    case Column::ZetaDisc: return &disc_;
    case Column::ZetaConn: return &conn_;
    case Column::ZetaOdd: return &odd_;
    case Column::Sigma: return &sigma_;
    default: return nullptr;
  }
}

double ConfigurationModel::sortValue(int row, int sec) const {
  const Column c = columns_[static_cast<std::size_t>(sec)];
  switch (c) {
    case Column::Index:
    case Column::Bins: return row;  // rows are in canonical (lexicographic) bin order
    case Column::Sides: return maxSide_[static_cast<std::size_t>(row)];
    case Column::Realisable: return realisable(row) ? 1 : 0;
    default: return (*doubles(c))[static_cast<std::size_t>(row)];
  }
}

void ConfigurationModel::sort(int column, Qt::SortOrder order) {
  if (column < 0 || column >= columnCount() || perm_.empty()) return;
  emit layoutAboutToBeChanged({}, QAbstractItemModel::VerticalSortHint);
  const QModelIndexList before = persistentIndexList();
  std::vector<int> resultRows;
  resultRows.reserve(static_cast<std::size_t>(before.size()));
  for (const QModelIndex& i : before) resultRows.push_back(resultRow(i.row()));
  std::vector<double> key(perm_.size());
  for (std::size_t r = 0; r < key.size(); ++r) key[r] = sortValue(static_cast<int>(r), column);
  std::iota(perm_.begin(), perm_.end(), 0);
  if (order == Qt::AscendingOrder)
    std::stable_sort(perm_.begin(), perm_.end(), [&](int a, int b) { return key[a] < key[b]; });
  else
    std::stable_sort(perm_.begin(), perm_.end(), [&](int a, int b) { return key[a] > key[b]; });
  for (std::size_t m = 0; m < perm_.size(); ++m) inv_[static_cast<std::size_t>(perm_[m])] = static_cast<int>(m);
  QModelIndexList after;
  after.reserve(before.size());
  for (qsizetype k = 0; k < before.size(); ++k)
    after << index(modelRow(resultRows[static_cast<std::size_t>(k)]), before[k].column());
  changePersistentIndexList(before, after);
  emit layoutChanged({}, QAbstractItemModel::VerticalSortHint);
}

QVariant ConfigurationModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
  const int row = resultRow(index.row());
  const Column c = columns_[static_cast<std::size_t>(index.column())];
  if (role == Qt::TextAlignmentRole)
    return c == Column::Bins || c == Column::Sides ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                                                   : QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole && role != Qt::UserRole && role != Qt::ToolTipRole) return {};
  switch (c) {
    case Column::Index: return row;
    case Column::Bins: {
      QString s;
      for (int e = 0; e < epr_; ++e) s += (e ? QStringLiteral(" ") : QString()) + QString::number(bin(row, e));
      return s;
    }
    case Column::Sides: {
      QString s;
      for (int e = 0; e < epr_; ++e) s += (e ? QStringLiteral(" ") : QString()) + QString::number(binCentre(bin(row, e)), 'g', 4);
      return s;
    }
    case Column::Realisable:
      if (role == Qt::UserRole) return realisable(row);
      return realisable(row) ? tr("yes") : tr("no");
    default: {
      const double v = (*doubles(c))[static_cast<std::size_t>(row)];
      if (role == Qt::UserRole) return v;
      if (c == Column::Tuples || c == Column::RandomTuples) return QString::number(v, 'f', 0);
      return QString::number(v, 'g', role == Qt::ToolTipRole ? 17 : 6);
    }
  }
}

QVariant ConfigurationModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || section < 0 || section >= columnCount()) return QAbstractTableModel::headerData(section, o, role);
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  const bool tip = role == Qt::ToolTipRole;
  const QString nn = order_ == 2 ? QStringLiteral("NN") : order_ == 3 ? QStringLiteral("NNN") : QStringLiteral("NNNN");
  const QString rr = order_ == 2 ? QStringLiteral("RR") : order_ == 3 ? QStringLiteral("RRR") : QStringLiteral("RRRR");
  switch (columns_[static_cast<std::size_t>(section)]) {
    case Column::Index: return tip ? tr("Configuration (row) index of the result") : tr("#");
    case Column::Bins: return tip ? (order_ == 4 ? tr("Edge bins 12 13 14 23 24 34 (0-based)") : tr("Side bins, sorted (0-based)")) : tr("bins");
    case Column::Sides: return tip ? tr("Bin centres of the sides, Mpc/h") : tr("sides [Mpc/h]");
    case Column::Tuples: return tip ? tr("Tuples counted (data and random)") : tr("tuples");
    case Column::RandomTuples: return tip ? tr("All-random tuples") : tr("random tuples");
    case Column::N: return tip ? tr("Sum of signed weight products") : nn;
    case Column::R: return tip ? tr("All-random sum, made positive") : rr;
    case Column::Estimator: return tip ? tr("Estimator %1/%2").arg(nn, rr) : order_ == 2 ? tr("ξ") : tr("ζ");
    case Column::ZetaDisc: return tip ? tr("Disconnected part: Σ over pairings of ξ ξ") : tr("ζ_disc");
    case Column::ZetaConn: return tip ? tr("Connected part ζ − ζ_disc") : tr("ζ_conn");
    case Column::ZetaOdd: return tip ? tr("Parity-odd channel NNNN_odd/RRRR") : tr("ζ_odd");
    case Column::Sigma: return tip ? tr("Jackknife standard deviation of the estimator") : tr("σ (jackknife)");
    case Column::Realisable: return tip ? tr("Cayley-Menger determinant on bin centres > 0") : tr("realisable");
  }
  return {};
}

ConfigurationFilter::ConfigurationFilter(QObject* parent) : QSortFilterProxyModel(parent) {
  setDynamicSortFilter(false);  // the result does not change under the proxy
}

void ConfigurationFilter::setSourceModel(QAbstractItemModel* model) {
  model_ = qobject_cast<ConfigurationModel*>(model);
  QSortFilterProxyModel::setSourceModel(model);
}

void ConfigurationFilter::setSideRange(double lo, double hi) {
  lo_ = lo;
  hi_ = hi;
  invalidateRowsFilter();
}

void ConfigurationFilter::setShapes(std::uint8_t mask) {
  shapes_ = mask;
  invalidateRowsFilter();
}

void ConfigurationFilter::setRealisableOnly(bool on) {
  realisableOnly_ = on;
  invalidateRowsFilter();
}

void ConfigurationFilter::setFilters(double lo, double hi, std::uint8_t mask, bool realisableOnly) {
  lo_ = lo;
  hi_ = hi;
  shapes_ = mask;
  realisableOnly_ = realisableOnly;
  // One re-mapping and one layout change: invalidateRowsFilter() announces every removed range
  // separately, which costs the view seconds over 45,475 rows.
  invalidate();
}

void ConfigurationFilter::sort(int column, Qt::SortOrder order) {
  if (model_) model_->sort(column, order);
  else QSortFilterProxyModel::sort(column, order);
}

bool ConfigurationFilter::filterAcceptsRow(int sourceRow, const QModelIndex&) const {
  if (!model_) return true;
  const int row = model_->resultRow(sourceRow);
  if (realisableOnly_ && !model_->realisable(row)) return false;
  if (shapes_ && !(model_->shape(row) & shapes_)) return false;
  if (lo_ <= hi_ && !(lo_ == 0 && hi_ == 0)) {
    // A small tolerance: limits typed from the displayed centres (4 digits) still match.
    const double tol = 1e-9 * std::max(1.0, std::abs(hi_));
    if (model_->minSide(row) < lo_ - tol || model_->maxSide(row) > hi_ + tol) return false;
  }
  return true;
}

}  // namespace almagest::ui
