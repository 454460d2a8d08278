#pragma once
// CandidateModel: the candidates of a search as a table (x, y, vx, vy, Z, flux, obs, members).
// DisplayRole gives formatted text; SortRole (Qt::UserRole) the raw number, so a
// QSortFilterProxyModel with setSortRole(CandidateModel::SortRole) sorts numerically. Row i is
// candidate i of the result (Z descending, as the engine returns them).
#include <QAbstractTableModel>

#include <vector>

#include "almagest/stack/search.hpp"

namespace almagest::ui::stackview {

class CandidateModel : public QAbstractTableModel {
  Q_OBJECT
public:
  enum Column { X, Y, Vx, Vy, Z, Flux, Obs, Members, ColumnCount };
  static constexpr int SortRole = Qt::UserRole;

  explicit CandidateModel(QObject* parent = nullptr);

  void setCandidates(std::vector<almagest::stack::Candidate> candidates);
  void clear();
  const std::vector<almagest::stack::Candidate>& candidates() const noexcept { return candidates_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
  std::vector<almagest::stack::Candidate> candidates_;
};

}  // namespace almagest::ui::stackview
