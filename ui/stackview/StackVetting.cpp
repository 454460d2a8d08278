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

#include <cmath>

#include "almagest/core/atomic_file.hpp"
#include "almagest/stack/observations.hpp"
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
  menu->addAction(tr("E&xport real candidates (ADES / MPC)…"), this, [this] {
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export observations"), QDir(lastDir_).filePath(QStringLiteral("real.psv")),
        tr("ADES PSV (*.psv);;MPC 80-column (*.mpc *.obs *.txt);;All files (*)"));
    if (!path.isEmpty()) exportRealObservations(path);
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

bool StackWindow::exportRealObservations(const QString& path) {
  namespace stk = almagest::stack;
  if (!output_ || !stack_) {
    reportError(tr("No result"), tr("Run a search and mark candidates real first."));
    return false;
  }
  const stk::ExposureStack& st = stack_->stack;
  if (!wcs_) {
    reportError(tr("No WCS"), tr("The stack %1 has no world coordinate system: ADES and MPC rows need RA/Dec.")
                                  .arg(stack_->label));
    return false;
  }
  std::vector<stk::CandidateDetail> real;
  try {
    for (std::size_t i = 0; i < vetting_.size() && i < candidates().size(); ++i)
      if (vetting_[i].verdict == Verdict::Real) real.push_back(describeOne(*output_, int(i), 0));
  } catch (const std::exception& e) {
    reportError(tr("Could not export"), QString::fromUtf8(e.what()));
    return false;
  }
  if (real.empty()) {
    reportError(tr("Nothing to export"), tr("No candidate is marked real (R)."));
    return false;
  }
  // As the job layer writes them (stack/job_run.cpp): the station of the form, the pixel scale at
  // the image centre and the mean PSF sigma for rmsRA / rmsDec.
  stk::ObservationOptions opt;
  opt.station = output_->job.station;
  opt.reference_mjd = output_->plan->reference_mjd();
  try {
    const double cx = 0.5 * (st.width - 1), cy = 0.5 * (st.height - 1);
    const auto [ra0, de0] = wcs_->pixel_to_sky(cx, cy);
    const auto [ra1, de1] = wcs_->pixel_to_sky(cx + 1, cy);
    opt.pixel_scale_arcsec = std::hypot((ra1 - ra0) * std::cos(de0 * 3.14159265358979323846 / 180.0), de1 - de0) * 3600.0;
    double m2 = 0;
    for (const stk::Psf& k : st.psf) {
      double sum = 0, mm = 0;
      const int r = k.size / 2;
      for (int y = 0; y < k.size; ++y)
        for (int x = 0; x < k.size; ++x) {
          const double v = k.kernel[std::size_t(y) * std::size_t(k.size) + std::size_t(x)];
          sum += v;
          mm += v * double((x - r) * (x - r) + (y - r) * (y - r));
        }
      m2 += sum > 0 ? mm / sum / 2.0 : 1.0;
    }
    opt.psf_sigma_px = st.psf.empty() ? 1.0 : std::sqrt(m2 / double(st.psf.size()));
    if (path.endsWith(QStringLiteral(".psv"), Qt::CaseInsensitive)) stk::write_ades_psv(path.toStdString(), real, opt);
    else stk::write_mpc80(path.toStdString(), real, opt);
  } catch (const std::exception& e) {
    reportError(tr("Could not export"), QString::fromUtf8(e.what()));
    return false;
  }
  lastDir_ = QFileInfo(path).absolutePath();
  log_->info(tr("Exported %1 real candidates as %2 to %3")
                 .arg(real.size())
                 .arg(path.endsWith(QStringLiteral(".psv"), Qt::CaseInsensitive) ? tr("ADES PSV") : tr("MPC 80-column"))
                 .arg(path));
  emit saved(path);
  return true;
}

}  // namespace almagest::ui
