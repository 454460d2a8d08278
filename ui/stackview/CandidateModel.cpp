#include "stackview/CandidateModel.hpp"

#include <QColor>

namespace almagest::ui::stackview {

CandidateModel::CandidateModel(QObject* parent) : QAbstractTableModel(parent) {}

void CandidateModel::setCandidates(std::vector<almagest::stack::Candidate> candidates) {
  beginResetModel();
  candidates_ = std::move(candidates);
  vets_.assign(candidates_.size(), Vet{});
  endResetModel();
}

void CandidateModel::setVet(int row, const Vet& vet) {
  if (row < 0 || std::size_t(row) >= candidates_.size()) return;
  vets_[std::size_t(row)] = vet;
  emit dataChanged(index(row, VerdictCol), index(row, Note));
}

void CandidateModel::setVets(const std::vector<Vet>& vets) {
  for (std::size_t i = 0; i < vets_.size() && i < vets.size(); ++i) vets_[i] = vets[i];
  if (!vets_.empty()) emit dataChanged(index(0, VerdictCol), index(rowCount() - 1, Note));
}

void CandidateModel::clear() { setCandidates({}); }

int CandidateModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(candidates_.size());
}

int CandidateModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant CandidateModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() < 0 || std::size_t(index.row()) >= candidates_.size()) return {};
  const auto& c = candidates_[std::size_t(index.row())];
  const Vet& vet = vets_[std::size_t(index.row())];
  if (index.column() == VerdictCol || index.column() == Note) {
    const QString name = QString::fromLatin1(verdictName(vet.verdict));
    if (role == SortRole) return index.column() == Note ? vet.note : QString::number(int(vet.verdict));
    if (role == Qt::DisplayRole) return index.column() == Note ? vet.note : name;
    if (role == Qt::ForegroundRole && index.column() == VerdictCol && vet.verdict != Verdict::None)
      return QColor(vet.verdict == Verdict::Real ? QColor(30, 150, 60) : QColor(200, 40, 40));
    if (role == Qt::ToolTipRole)
      return tr("R: real, B: bogus, U: not vetted, N: edit the note (keys act on the selected candidate)");
    return {};
  }
  if (role == SortRole) {
    switch (index.column()) {
      case X: return c.x;
      case Y: return c.y;
      case Vx: return c.vx;
      case Vy: return c.vy;
      case Z: return c.z;
      case Flux: return c.flux;
      case Obs: return c.obs;
      case Members: return c.members;
      default: return {};
    }
  }
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case X: return QString::number(c.x);
      case Y: return QString::number(c.y);
      case Vx: return QString::number(c.vx, 'f', 3);
      case Vy: return QString::number(c.vy, 'f', 3);
      case Z: return QString::number(c.z, 'f', 2);
      case Flux: return QString::number(c.flux, 'g', 4);
      case Obs: return QString::number(c.obs);
      case Members: return QString::number(c.members);
      default: return {};
    }
  }
  if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole)
    return tr("origin (%1, %2), v = (%3, %4) px/day, Z %5, flux %6, %7 valid samples, %8 merged, bank index %9")
        .arg(c.x)
        .arg(c.y)
        .arg(c.vx, 0, 'f', 4)
        .arg(c.vy, 0, 'f', 4)
        .arg(c.z, 0, 'f', 3)
        .arg(c.flux, 0, 'g', 5)
        .arg(c.obs)
        .arg(c.members)
        .arg(c.v);
  return {};
}

QVariant CandidateModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) {
    if (role == Qt::DisplayRole) return section + 1;
    return {};
  }
  if (role == Qt::DisplayRole) {
    switch (section) {
      case X: return tr("x");
      case Y: return tr("y");
      case Vx: return tr("vx");
      case Vy: return tr("vy");
      case Z: return tr("Z");
      case Flux: return tr("flux");
      case Obs: return tr("obs");
      case Members: return tr("members");
      case VerdictCol: return tr("verdict");
      case Note: return tr("note");
      default: return {};
    }
  }
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case X:
      case Y: return tr("Origin pixel at the reference time (exposure 0), 0-based");
      case Vx:
      case Vy: return tr("Velocity in pixels/day");
      case Z: return tr("Score A / sqrt(B): the stack SNR along the trajectory");
      case Flux: return tr("Flux estimate A / B per exposure, in the science units");
      case Obs: return tr("Valid samples along the trajectory");
      case Members: return tr("Near-duplicate trajectories merged into this one by clustering");
      default: return {};
    }
  }
  return {};
}

}  // namespace almagest::ui::stackview
