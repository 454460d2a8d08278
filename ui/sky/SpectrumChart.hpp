#pragma once
// SpectrumChart: D_l = l (l + 1) C_l / (2 pi) against l in Qt Charts, with linear or logarithmic
// axes. With log axes, l = 0 and multipoles with D_l <= 1e-10 max D_l (zero to transform
// precision, e.g. C_0 and C_1 of a map without monopole and dipole) are left out.
// An optional reference curve (e.g. the input spectrum of a synthesised map) is drawn dashed.
#include <QChartView>

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
  void clear();
  void setLogAxes(bool on);
  bool logAxes() const noexcept { return log_; }

  /// Points in the measured / reference series (for tests).
  int pointCount() const;
  int referencePointCount() const;

  QSize sizeHint() const override { return {900, 320}; }

private:
  void rebuild();

  std::vector<double> cl_, ref_;
  QString title_;
  bool log_ = false;
};

}  // namespace almagest::ui
