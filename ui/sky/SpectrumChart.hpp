#pragma once
// SpectrumChart: D_l = l (l + 1) C_l / (2 pi) against l in Qt Charts, with linear or logarithmic
// axes. With log axes, l = 0 and multipoles with D_l <= 1e-10 max D_l (zero to transform
// precision, e.g. C_0 and C_1 of a map without monopole and dipole) are left out.
// An optional reference curve (e.g. the input spectrum of a synthesised map) is drawn dashed.
// Several spectra (TT, EE, BB, TE, EB, TB of a polarised map) go on one chart with a legend;
// with log axes their non-positive values (cross spectra) are left out.
#include <QChartView>
#include <QStringList>

#include <vector>

class QLineSeries;

namespace almagest::ui {

class SpectrumChart : public QChartView {
  Q_OBJECT
public:
  explicit SpectrumChart(QWidget* parent = nullptr);

  /// cl: C_l for l = 0..lmax; reference: the same for a reference spectrum (may be empty).
  void setSpectrum(const std::vector<double>& cl, const QString& title,
                   const std::vector<double>& reference = {});
  /// Several spectra on one chart: names[k] labels cls[k] (C_l, l = 0..lmax).
  void setSpectra(const QStringList& names, const std::vector<std::vector<double>>& cls, const QString& title);
  void clear();
  void setLogAxes(bool on);
  bool logAxes() const noexcept { return log_; }

  /// Points in the measured / reference series (for tests).
  int pointCount() const;
  int referencePointCount() const;
  /// The measured spectra drawn (the reference not counted), their names and point counts.
  int seriesCount() const noexcept { return static_cast<int>(cls_.size()); }
  QString seriesName(int k) const { return k >= 0 && k < names_.size() ? names_[k] : QString(); }
  int seriesPointCount(int k) const;

  QSize sizeHint() const override { return {900, 320}; }

private:
  void rebuild();

  std::vector<std::vector<double>> cls_;
  QStringList names_;
  std::vector<double> ref_;
  QString title_;
  bool log_ = false;
};

}  // namespace almagest::ui
