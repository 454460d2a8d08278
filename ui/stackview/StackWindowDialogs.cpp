// StackWindow: dialogs (open, synthetic stack, save) and the mouse readouts of the image views.
// Split from StackWindow.cpp to keep files short; see StackWindow.hpp.
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QLabel>
#include <QSpinBox>

#include <cmath>

#include "stackview/StackWindow.hpp"

namespace almagest::ui {

namespace stk = almagest::stack;

// ---- mouse readouts ---------------------------------------------------------------------------

void StackWindow::onHoverExposure(int x, int y) {
  if (!stack_ || x < 0 || y < 0 || x >= stack_->stack.width || y >= stack_->stack.height) {
    readout_->clear();
    return;
  }
  const auto& st = stack_->stack;
  const std::size_t i = std::size_t(exposure_) * st.pixels() + std::size_t(y) * std::size_t(st.width) + std::size_t(x);
  QString sky;
  if (wcs_) {
    try {
      const auto [ra, dec] = wcs_->pixel_to_sky(x, y);
      sky = tr("  RA %1°  Dec %2°").arg(ra, 0, 'f', 6).arg(dec, 0, 'f', 6);
    } catch (const std::exception&) {
      sky = tr("  RA/Dec: none here");
    }
  }
  readout_->setText(tr("(%1, %2)%3  sci %4  var %5%6")
                        .arg(x)
                        .arg(y)
                        .arg(sky)
                        .arg(st.sci[i], 0, 'g', 5)
                        .arg(st.var[i], 0, 'g', 5)
                        .arg(i < st.mask.size() && st.mask[i] ? tr("  masked") : QString()));
}

void StackWindow::onHoverBestZ(int x, int y) {
  const std::vector<float>& z = bestZ();
  if (!output_ || z.empty() || x < 0 || y < 0 || x >= output_->result.width || y >= output_->result.height) {
    readout_->clear();
    return;
  }
  QString sky;
  if (wcs_) {
    try {
      const auto [ra, dec] = wcs_->pixel_to_sky(x, y);
      sky = tr("  RA %1°  Dec %2°").arg(ra, 0, 'f', 6).arg(dec, 0, 'f', 6);
    } catch (const std::exception&) {
    }
  }
  readout_->setText(tr("origin (%1, %2)%3  best Z %4")
                        .arg(x)
                        .arg(y)
                        .arg(sky)
                        .arg(z[std::size_t(y) * output_->result.width + x], 0, 'f', 2));
}

void StackWindow::onBestZClicked(QPointF p) {
  const auto& c = candidates();
  int best = -1;
  double bestD = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const double d = std::hypot(c[i].x - p.x(), c[i].y - p.y());
    if (d <= 3.0 && (best < 0 || d < bestD)) {
      best = static_cast<int>(i);
      bestD = d;
    }
  }
  if (best >= 0) selectCandidate(best);
}

// ---- dialogs --------------------------------------------------------------------------------

void StackWindow::openStackDialog(bool folder) {
  const QString path =
      folder ? QFileDialog::getExistingDirectory(this, tr("Open a folder of exposures"), lastDir_)
             : QFileDialog::getOpenFileName(this, tr("Open stack"), lastDir_,
                                            tr("Stacks (*.fits *.fit *.fits.fz *.h5 *.hdf5);;KBMOD WorkUnit (*.fits *.fit "
                                               "*.fits.fz);;HDF5 cube (*.h5 *.hdf5);;All files (*)"));
  if (!path.isEmpty()) openStack(path);
}

void StackWindow::syntheticDialog() {
  QDialog dlg(this);
  dlg.setWindowTitle(tr("New synthetic stack"));
  auto* form = new QFormLayout(&dlg);
  auto spin = [&](int lo, int hi, int v, const QString& tip) {
    auto* s = new QSpinBox(&dlg);
    s->setRange(lo, hi);
    s->setValue(v);
    s->setToolTip(tip);
    return s;
  };
  QSpinBox* n = spin(2, 100000, 48, tr("Number of exposures"));
  QSpinBox* w = spin(8, 8192, 128, tr("Image width in pixels"));
  QSpinBox* h = spin(8, 8192, 128, tr("Image height in pixels"));
  QSpinBox* seed = spin(0, 2147483647, static_cast<int>(kDemoSeed % 2147483647u), tr("Random seed (same seed, same stack)"));
  QSpinBox* movers = spin(0, 100, 3, tr("Injected movers, with velocities on the current search grid"));
  auto* snr = new QDoubleSpinBox(&dlg);
  snr->setRange(1.0, 1000.0);
  snr->setValue(10.0);
  snr->setToolTip(tr("Stack SNR of each mover along its nearest-pixel track"));
  form->addRow(tr("Exposures"), n);
  form->addRow(tr("Width"), w);
  form->addRow(tr("Height"), h);
  form->addRow(tr("Seed"), seed);
  form->addRow(tr("Movers"), movers);
  form->addRow(tr("Mover SNR"), snr);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dlg);
  connect(buttons, &QDialogButtonBox::accepted, &dlg, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, &dlg, &QDialog::reject);
  form->addRow(buttons);
  if (dlg.exec() != QDialog::Accepted) return;
  newSyntheticStack(n->value(), w->value(), h->value(), static_cast<std::uint64_t>(seed->value()), movers->value(),
                    snr->value());
}

void StackWindow::saveCandidatesDialog() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Save candidates"),
                                                    QDir(lastDir_).filePath(QStringLiteral("candidates.ecsv")),
                                                    tr("ECSV (*.ecsv);;All files (*)"));
  if (!path.isEmpty()) saveCandidates(path);
}

void StackWindow::saveResultDialog() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Save result"),
                                                    QDir(lastDir_).filePath(QStringLiteral("result.h5")),
                                                    tr("HDF5 (*.h5 *.hdf5);;All files (*)"));
  if (!path.isEmpty()) saveResult(path);
}

void StackWindow::saveBestZDialog() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Save best-Z image"),
                                                    QDir(lastDir_).filePath(QStringLiteral("best_z.png")),
                                                    tr("PNG (*.png);;All files (*)"));
  if (!path.isEmpty()) saveBestZImage(path);
}

}  // namespace almagest::ui
