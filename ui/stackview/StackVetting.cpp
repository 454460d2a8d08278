// StackWindow: vetting of candidates (real / bogus marks with keyboard shortcuts, notes, the
// vetting file written atomically and reloaded to continue). Split from StackWindow.cpp; see
// StackWindow.hpp and Vetting.hpp.
#include <QAction>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QLineEdit>
#include <QMenu>
#include <QStatusBar>

#include "almagest/core/atomic_file.hpp"
#include "panels/LogPanel.hpp"
#include "stackview/CandidateModel.hpp"
#include "stackview/StackWindow.hpp"

namespace almagest::ui {

using namespace stackview;

void StackWindow::buildVettingActions(QMenu* menu) {
  auto add = [&](const QString& text, const QString& key, const QString& tip, auto slot) {
    QAction* a = menu->addAction(text, this, slot);
    a->setShortcut(QKeySequence(key));
    // The keys act anywhere in the window except while the note is being typed.
    a->setShortcutContext(Qt::WindowShortcut);
    a->setToolTip(tip);
    return a;
  };
  add(tr("Mark &real"), QStringLiteral("R"), tr("Mark the selected candidate real (R)"), [this] {
    if (selected_ >= 0 && markCandidate(selected_, Verdict::Real)) selectCandidate(std::min(selected_ + 1, int(candidates().size()) - 1));
  });
  add(tr("Mark &bogus"), QStringLiteral("B"), tr("Mark the selected candidate bogus (B)"), [this] {
    if (selected_ >= 0 && markCandidate(selected_, Verdict::Bogus)) selectCandidate(std::min(selected_ + 1, int(candidates().size()) - 1));
  });
  add(tr("&Unmark"), QStringLiteral("U"), tr("Clear the selected candidate's mark (U)"),
      [this] { if (selected_ >= 0) markCandidate(selected_, Verdict::None); });
  add(tr("Edit &note"), QStringLiteral("N"), tr("Type a note on the selected candidate (N)"), [this] {
    noteEdit_->setFocus();
    noteEdit_->selectAll();
  });
  add(tr("Ne&xt candidate"), QStringLiteral("J"), tr("Select the next candidate in the engine's order (J)"),
      [this] { if (selected_ + 1 < int(candidates().size())) selectCandidate(selected_ + 1); });
  add(tr("&Previous candidate"), QStringLiteral("K"), tr("Select the previous candidate (K)"),
      [this] { if (selected_ > 0) selectCandidate(selected_ - 1); });
  menu->addSeparator();
  menu->addAction(tr("&Save vetting (ECSV)…"), this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Save vetting"), QDir(lastDir_).filePath(QStringLiteral("vetting.ecsv")),
                                                      tr("ECSV (*.ecsv);;All files (*)"));
    if (!path.isEmpty()) saveVetting(path);
  });
  menu->addAction(tr("&Load vetting…"), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Load vetting"), lastDir_, tr("ECSV (*.ecsv);;All files (*)"));
    if (!path.isEmpty()) loadVetting(path);
  });
}

bool StackWindow::markCandidate(int index, Verdict verdict) {
  if (index < 0 || std::size_t(index) >= vetting_.size()) return false;
  vetting_[std::size_t(index)].verdict = verdict;
  refreshVettingRow(index);
  return true;
}

bool StackWindow::setCandidateNote(int index, const QString& note) {
  if (index < 0 || std::size_t(index) >= vetting_.size()) return false;
  vetting_[std::size_t(index)].note = note;
  refreshVettingRow(index);
  return true;
}

void StackWindow::refreshVettingRow(int index) {
  model_->setVet(index, vetting_[std::size_t(index)]);
  if (index == selected_) showVetting(index);
  int real = 0, bogus = 0;
  for (const Vet& v : vetting_) real += v.verdict == Verdict::Real, bogus += v.verdict == Verdict::Bogus;
  statusBar()->showMessage(tr("Vetted %1 of %2: %3 real, %4 bogus").arg(real + bogus).arg(vetting_.size()).arg(real).arg(bogus),
                           4000);
}

void StackWindow::showVetting(int index) {
  const QSignalBlocker b(noteEdit_);
  const bool ok = index >= 0 && std::size_t(index) < vetting_.size();
  noteEdit_->setEnabled(ok);
  noteEdit_->setText(ok ? vetting_[std::size_t(index)].note : QString());
}

bool StackWindow::saveVetting(const QString& path) {
  if (!output_) {
    reportError(tr("No result"), tr("Run a search first."));
    return false;
  }
  try {
    write_text_atomic(path.toStdString(), vettingEcsv(candidates(), vetting_, stack_ ? stack_->label.toStdString() : std::string()));
  } catch (const std::exception& e) {
    reportError(tr("Could not save the vetting"), QString::fromUtf8(e.what()));
    return false;
  }
  lastDir_ = QFileInfo(path).absolutePath();
  log_->info(tr("Saved the vetting of %1 candidates to %2").arg(vetting_.size()).arg(path));
  return true;
}

bool StackWindow::loadVetting(const QString& path) {
  if (!output_) {
    reportError(tr("No result"), tr("Run the search whose candidates were vetted first."));
    return false;
  }
  std::vector<VetRow> rows;
  try {
    rows = readVettingFile(path.toStdString());
  } catch (const std::exception& e) {
    reportError(tr("Could not read the vetting"), QString::fromUtf8(e.what()));
    return false;
  }
  const int matched = applyVetting(rows, candidates(), vetting_);
  model_->setVets(vetting_);
  showVetting(selected_);
  lastDir_ = QFileInfo(path).absolutePath();
  log_->info(tr("Loaded %1: %2 of its %3 rows match a candidate of this search").arg(path).arg(matched).arg(rows.size()));
  if (matched < int(rows.size()))
    log_->warning(tr("%1 vetted rows match no candidate (another search or stack?)").arg(int(rows.size()) - matched));
  return true;
}

}  // namespace almagest::ui
