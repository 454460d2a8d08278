#pragma once
// CandidateModel: the candidates of a search as a table (x, y, vx, vy, Z, flux, obs, members)
// and their vetting (verdict, note: setVet; the verdict cell is green for real, red for bogus).
// DisplayRole gives formatted text; SortRole (Qt::UserRole) the raw number, so a
// QSortFilterProxyModel with setSortRole(CandidateModel::SortRole) sorts numerically. Row i is
// candidate i of the result (Z descending, as the engine returns them).
#include <QAbstractTableModel>

#include <vector>

#include "almagest/stack/search.hpp"
#include "stackview/Vetting.hpp"

namespace almagest::ui::stackview {

class CandidateModel : public QAbstractTableModel {
  Q_OBJECT
public:
  enum Column { X, Y, Vx, Vy, Z, Flux, Obs, Members, VerdictCol, Note, ColumnCount };
  static constexpr int SortRole = Qt::UserRole;

  explicit CandidateModel(QObject* parent = nullptr);

  void setCandidates(std::vector<almagest::stack::Candidate> candidates);
  void clear();
  const std::vector<almagest::stack::Candidate>& candidates() const noexcept { return candidates_; }
  /// Vetting of candidate `row` (rows beyond the candidates are ignored).
  void setVet(int row, const Vet& vet);
  void setVets(const std::vector<Vet>& vets);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
  std::vector<almagest::stack::Candidate> candidates_;
  std::vector<Vet> vets_;
};

}  // namespace almagest::ui::stackview
