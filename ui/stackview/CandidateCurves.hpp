#pragma once
// CandidateCurves: the per-exposure curves of the selected stack candidate (Qt Charts), in the
// Moving objects window's detail tabs. Top chart: psi_e and phi_e sampled along the predicted
// track (CandidateDetail::psi / phi; psi on the left axis, phi on the right). Bottom chart: the
// single-epoch likelihood L_e = psi_e / sqrt(phi_e) and the running score
// Z_k = sum_{e<=k} psi_e / sqrt(sum_{e<=k} phi_e), whose last value is the trajectory's Z
// before sigma-G clipping. x is the time since the reference exposure (days). Unobserved epochs
// (phi_e <= 0) are left out of every series.
#include <QPointF>
#include <QVector>
#include <QWidget>

#include "almagest/stack/candidates.hpp"

class QChart;
class QChartView;
class QLineSeries;
class QScatterSeries;
class QValueAxis;

namespace almagest::ui::stackview {

class CandidateCurves : public QWidget {
  Q_OBJECT
public:
  explicit CandidateCurves(QWidget* parent = nullptr);

  /// Shows the curves of `d` (null clears them).
  void setDetail(const almagest::stack::CandidateDetail* d);

  /// The plotted points (time, value), as the series hold them.
  QVector<QPointF> psiPoints() const;
  QVector<QPointF> phiPoints() const;
  QVector<QPointF> likelihoodPoints() const;
  QVector<QPointF> runningZPoints() const;
  QChartView* samplesView() const noexcept { return samplesView_; }
  QChartView* likelihoodView() const noexcept { return likelihoodView_; }

private:
  QChartView *samplesView_ = nullptr, *likelihoodView_ = nullptr;
  QLineSeries *psi_ = nullptr, *phi_ = nullptr, *lik_ = nullptr, *runZ_ = nullptr;
  QScatterSeries* psiDots_ = nullptr;
  QValueAxis *tAxis1_ = nullptr, *psiAxis_ = nullptr, *phiAxis_ = nullptr, *tAxis2_ = nullptr, *lAxis_ = nullptr;
};

}  // namespace almagest::ui::stackview
