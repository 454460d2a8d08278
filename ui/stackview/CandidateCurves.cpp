#include "stackview/CandidateCurves.hpp"

#include <QChart>
#include <QFont>
#include <QChartView>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QPainter>
#include <QScatterSeries>
#include <QValueAxis>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace almagest::ui::stackview {

namespace {

QValueAxis* axis(const QString& title, int ticks) {
  auto* a = new QValueAxis;
  a->setTitleText(title);
  a->setLabelFormat(QStringLiteral("%.3g"));
  a->setTickCount(ticks);
  QFont f = a->labelsFont();
  f.setPointSizeF(std::max(6.0, f.pointSizeF() * 0.85));
  a->setLabelsFont(f);
  a->setTitleFont(f);
  return a;
}

void compactLegend(QChart* c) {
  c->legend()->setAlignment(Qt::AlignTop);
  QFont f = c->legend()->font();
  f.setPointSizeF(std::max(6.0, f.pointSizeF() * 0.85));
  c->legend()->setFont(f);
  c->legend()->setContentsMargins(0, 0, 0, 0);
  c->setMargins(QMargins(0, 0, 0, 0));
  c->setBackgroundRoundness(0);
}

/// Range of the series' y values with a 5% margin (a flat curve gets +-1).
void fit(QValueAxis* a, const QVector<QPointF>& p, bool x) {
  if (p.isEmpty()) {
    a->setRange(0, 1);
    return;
  }
  double lo = x ? p.front().x() : p.front().y(), hi = lo;
  for (const QPointF& q : p) {
    const double v = x ? q.x() : q.y();
    lo = std::min(lo, v), hi = std::max(hi, v);
  }
  const double pad = hi > lo ? 0.05 * (hi - lo) : 1.0;
  a->setRange(lo - pad, hi + pad);
}

}  // namespace

CandidateCurves::CandidateCurves(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);

  auto* c1 = new QChart;
  c1->setToolTip(tr("psi and phi sampled along the predicted track (unobserved exposures left out)"));
  c1->setMargins(QMargins(2, 2, 2, 2));
  psi_ = new QLineSeries;
  psi_->setName(tr("psi_e"));
  psiDots_ = new QScatterSeries;
  psiDots_->setName(tr("psi_e samples"));
  psiDots_->setMarkerSize(5);
  phi_ = new QLineSeries;
  phi_->setName(tr("phi_e (right)"));
  c1->addSeries(psi_);
  c1->addSeries(psiDots_);
  c1->addSeries(phi_);
  tAxis1_ = axis(tr("t [days]"), 5);
  psiAxis_ = axis(tr("psi"), 3);
  phiAxis_ = axis(tr("phi"), 3);
  // The two charts share t: only the lower one labels it, the upper keeps its height for curves.
  tAxis1_->setLabelsVisible(false);
  tAxis1_->setTitleVisible(false);
  c1->addAxis(tAxis1_, Qt::AlignBottom);
  c1->addAxis(psiAxis_, Qt::AlignLeft);
  c1->addAxis(phiAxis_, Qt::AlignRight);
  for (auto* s : {static_cast<QXYSeries*>(psi_), static_cast<QXYSeries*>(psiDots_)}) {
    s->attachAxis(tAxis1_);
    s->attachAxis(psiAxis_);
  }
  phi_->attachAxis(tAxis1_);
  phi_->attachAxis(phiAxis_);
  compactLegend(c1);
  c1->legend()->markers(psiDots_).value(0)->setVisible(false);
  samplesView_ = new QChartView(c1, this);
  samplesView_->setObjectName(QStringLiteral("curvesSamples"));
  samplesView_->setRenderHint(QPainter::Antialiasing);
  samplesView_->setMinimumHeight(110);

  auto* c2 = new QChart;
  c2->setToolTip(tr("Single-exposure likelihood psi/sqrt(phi) and the running Z of the exposures so far"));
  c2->setMargins(QMargins(2, 2, 2, 2));
  lik_ = new QLineSeries;
  lik_->setName(tr("L_e = psi_e / sqrt(phi_e)"));
  runZ_ = new QLineSeries;
  runZ_->setName(tr("running Z   (x: t [d])"));
  c2->addSeries(lik_);
  c2->addSeries(runZ_);
  tAxis2_ = axis(tr("t [days]"), 5);
  lAxis_ = axis(tr("L, Z"), 4);
  tAxis2_->setTitleVisible(false);  // the legend says "t [d]": the labels keep the room
  c2->addAxis(tAxis2_, Qt::AlignBottom);
  c2->addAxis(lAxis_, Qt::AlignLeft);
  for (auto* s : {lik_, runZ_}) {
    s->attachAxis(tAxis2_);
    s->attachAxis(lAxis_);
  }
  compactLegend(c2);
  likelihoodView_ = new QChartView(c2, this);
  likelihoodView_->setObjectName(QStringLiteral("curvesLikelihood"));
  likelihoodView_->setRenderHint(QPainter::Antialiasing);
  likelihoodView_->setMinimumHeight(110);

  layout->addWidget(samplesView_, 1);
  layout->addWidget(likelihoodView_, 1);
  setDetail(nullptr);
}

void CandidateCurves::setDetail(const almagest::stack::CandidateDetail* d) {
  QVector<QPointF> psi, phi, lik, runz;
  if (d) {
    double A = 0, B = 0;
    const std::size_t n = std::min({d->t.size(), d->psi.size(), d->phi.size()});
    for (std::size_t e = 0; e < n; ++e) {
      if (!(d->phi[e] > 0.0f)) continue;
      const double t = d->t[e];
      psi << QPointF(t, d->psi[e]);
      phi << QPointF(t, d->phi[e]);
      lik << QPointF(t, d->psi[e] / std::sqrt(double(d->phi[e])));
      A += d->psi[e];
      B += d->phi[e];
      runz << QPointF(t, A / std::sqrt(B));
    }
  }
  psi_->replace(psi);
  psiDots_->replace(psi);
  phi_->replace(phi);
  lik_->replace(lik);
  runZ_->replace(runz);
  fit(tAxis1_, psi, true);
  fit(tAxis2_, psi, true);
  fit(psiAxis_, psi, false);
  fit(phiAxis_, phi, false);
  QVector<QPointF> both = lik;
  both += runz;
  fit(lAxis_, both, false);
}

QVector<QPointF> CandidateCurves::psiPoints() const { return psi_->points(); }
QVector<QPointF> CandidateCurves::phiPoints() const { return phi_->points(); }
QVector<QPointF> CandidateCurves::likelihoodPoints() const { return lik_->points(); }
QVector<QPointF> CandidateCurves::runningZPoints() const { return runZ_->points(); }

}  // namespace almagest::ui::stackview
