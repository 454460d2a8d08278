#pragma once
// The configuration explorer's data: one row per configuration of an N-point result (3pCF
// triangles, 4pCF tetrahedra with the realisability flag; also 2pCF bins), as a table model,
// and the sort/filter proxy over it.
//
// Columns (those the result has): index, bins, sides (bin centres, Mpc/h), tuples, random
// tuples, N (NNN/NNNN), R (RRR/RRRR), estimator, zeta_disc, zeta_conn, odd channel (zeta_odd),
// jackknife sigma (setSigma), realisable. The values are the result's, unrounded, under
// Qt::UserRole; Qt::DisplayRole is their text.
//
// Shapes on the side bins: equilateral (all bins equal), isosceles (a repeated bin, not all
// equal), squeezed (the smallest side centre at most half the median one).
//
// Sorting is the model's own (sort(): one std::stable_sort of a row permutation on the raw
// values, then layoutChanged), and the proxy forwards its sort() to it and only filters, on the
// raw arrays (never through QVariant): a 10-bin 4pCF (45,475 configurations) sorts and filters
// in milliseconds. QSortFilterProxyModel's own sort compares through model indices, about
// ten times slower (130 ms under load). Model rows are therefore a permutation of the result
// rows: resultRow() / modelRow() convert.
#include <QAbstractTableModel>
#include <QSortFilterProxyModel>

#include <cstdint>
#include <vector>

#include "almagest/npcf/result.hpp"

namespace almagest::ui {

class ConfigurationModel : public QAbstractTableModel {
  Q_OBJECT
public:
  enum class Column { Index, Bins, Sides, Tuples, RandomTuples, N, R, Estimator, ZetaDisc, ZetaConn, ZetaOdd, Sigma, Realisable };
  Q_ENUM(Column)
  enum Shape : std::uint8_t { Equilateral = 1, Isosceles = 2, Squeezed = 4 };

  explicit ConfigurationModel(QObject* parent = nullptr);

  void setResult(const almagest::npcf::NpcfResult& result);
  /// Jackknife sigma per configuration (empty removes the column).
  void setSigma(const std::vector<double>& sigma);
  void clear();

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  /// Reorders the rows by `column` (ties in result order), keeping persistent indexes.
  void sort(int column, Qt::SortOrder order = Qt::AscendingOrder) override;
  int resultRow(int modelRow) const { return perm_[static_cast<std::size_t>(modelRow)]; }
  int modelRow(int resultRow) const { return inv_[static_cast<std::size_t>(resultRow)]; }

  int order() const noexcept { return order_; }
  int edgesPerRow() const noexcept { return epr_; }
  /// Column kind of a section, and the section of a kind (-1 when absent).
  Column columnKind(int section) const { return columns_[static_cast<std::size_t>(section)]; }
  int section(Column c) const;

  // Raw access for the proxy and the views, by result row.
  double sortValue(int row, int section) const;
  double minSide(int row) const { return minSide_[static_cast<std::size_t>(row)]; }
  double maxSide(int row) const { return maxSide_[static_cast<std::size_t>(row)]; }
  std::uint8_t shape(int row) const { return shape_[static_cast<std::size_t>(row)]; }
  bool realisable(int row) const { return realisable_.empty() || realisable_[static_cast<std::size_t>(row)] != 0; }
  bool hasRealisable() const noexcept { return !realisable_.empty(); }
  int bin(int row, int edge) const { return bins_[static_cast<std::size_t>(row) * epr_ + static_cast<std::size_t>(edge)]; }
  /// Bin edges of the result's binning (nbins + 1).
  const std::vector<double>& binEdges() const noexcept { return edges_; }
  double binCentre(int b) const { return centres_[static_cast<std::size_t>(b)]; }
  int nbins() const noexcept { return static_cast<int>(centres_.size()); }
  bool parity() const noexcept { return !odd_.empty(); }

private:
  const std::vector<double>* doubles(Column c) const;

  int order_ = 0, epr_ = 1;
  std::vector<Column> columns_;
  std::vector<int> perm_, inv_;
  std::vector<std::uint8_t> bins_;
  std::vector<double> tuples_, randomTuples_, n_, r_, est_, disc_, conn_, odd_, sigma_;
  std::vector<std::uint8_t> realisable_, shape_;
  std::vector<double> minSide_, maxSide_;
  std::vector<double> edges_, centres_;
};

class ConfigurationFilter : public QSortFilterProxyModel {
  Q_OBJECT
public:
  explicit ConfigurationFilter(QObject* parent = nullptr);
  void setSourceModel(QAbstractItemModel* model) override;

  /// Every side centre within [lo, hi] (Mpc/h); lo > hi or both 0: no limit.
  void setSideRange(double lo, double hi);
  /// Bit mask of ConfigurationModel::Shape (0: any shape).
  void setShapes(std::uint8_t mask);
  void setRealisableOnly(bool on);
  /// All three at once (one re-filter).
  void setFilters(double lo, double hi, std::uint8_t mask, bool realisableOnly);
  /// Sorting is the source model's (ConfigurationModel::sort).
  void sort(int column, Qt::SortOrder order = Qt::AscendingOrder) override;
  double sideMin() const noexcept { return lo_; }
  double sideMax() const noexcept { return hi_; }
  std::uint8_t shapes() const noexcept { return shapes_; }
  bool realisableOnly() const noexcept { return realisableOnly_; }

protected:
  bool filterAcceptsRow(int row, const QModelIndex& parent) const override;

private:
  ConfigurationModel* model_ = nullptr;
  double lo_ = 0, hi_ = 0;
  std::uint8_t shapes_ = 0;
  bool realisableOnly_ = false;
};

}  // namespace almagest::ui
