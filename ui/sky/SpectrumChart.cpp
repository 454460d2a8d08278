#include "sky/SpectrumChart.hpp"

#include <QChart>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPen>
#include <QValueAxis>

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>

namespace almagest::ui {

namespace {

/// Below this fraction of the largest D_l a value is zero to transform precision (e.g. C_0 and
/// C_1 of a map without monopole and dipole come out at ~1e-14); log axes leave such points out.
constexpr double kLogFloor = 1e-10;

QList<QPointF> dlPoints(const std::vector<double>& cl, bool log) {
  auto dl = [&cl](std::size_t l) {
    return static_cast<double>(l) * (l + 1.0) * cl[l] / (2.0 * std::numbers::pi);
  };
  double dmax = 0.0;
  for (std::size_t l = 0; l < cl.size(); ++l)
    if (std::isfinite(dl(l))) dmax = std::max(dmax, dl(l));
  QList<QPointF> pts;
  pts.reserve(static_cast<qsizetype>(cl.size()));
  for (std::size_t l = 0; l < cl.size(); ++l) {
    const double d = dl(l);
    if (!std::isfinite(d)) continue;
    if (log && (l == 0 || !(d > kLogFloor * dmax))) continue;
    pts.append(QPointF(static_cast<double>(l), d));
  }
  return pts;
}

}  // namespace

SpectrumChart::SpectrumChart(QWidget* parent) : QChartView(parent) {
  setRenderHint(QPainter::Antialiasing, true);
  setToolTip(tr("Angular power spectrum D_l = l(l+1) C_l / 2π of the shown column."));
  rebuild();
}

void SpectrumChart::setSpectrum(const std::vector<double>& cl, const QString& title,
                                const std::vector<double>& reference) {
  cls_.assign(1, cl);
  names_ = QStringList{tr("measured")};
  ref_ = reference;
  title_ = title;
  rebuild();
}

void SpectrumChart::setSpectra(const QStringList& names, const std::vector<std::vector<double>>& cls,
                               const QString& title) {
  cls_ = cls;
  names_ = names;
  while (names_.size() < static_cast<qsizetype>(cls_.size())) names_ << tr("spectrum %1").arg(names_.size() + 1);
  ref_.clear();
  title_ = title;
  rebuild();
}

void SpectrumChart::clear() {
  cls_.clear();
  names_.clear();
  ref_.clear();
  title_.clear();
  rebuild();
}

void SpectrumChart::setLogAxes(bool on) {
  if (on == log_) return;
  log_ = on;
  rebuild();
}

int SpectrumChart::pointCount() const {
  const auto series = chart()->series();
  if (series.isEmpty()) return 0;
  auto* s = qobject_cast<QLineSeries*>(series.front());
  return s ? static_cast<int>(s->count()) : 0;
}

int SpectrumChart::referencePointCount() const {
  if (ref_.empty()) return 0;
  const auto series = chart()->series();
  auto* s = qobject_cast<QLineSeries*>(series.isEmpty() ? nullptr : series.back());
  return s ? static_cast<int>(s->count()) : 0;
}

int SpectrumChart::seriesPointCount(int k) const {
  const auto series = chart()->series();
  if (k < 0 || k >= seriesCount() || k >= series.size()) return 0;
  auto* s = qobject_cast<QLineSeries*>(series.at(k));
  return s ? static_cast<int>(s->count()) : 0;
}

void SpectrumChart::rebuild() {
  auto* chart = new QChart();
  chart->setTitle(title_.isEmpty() ? tr("Angular power spectrum (none computed yet)") : title_);
  chart->legend()->setVisible(!ref_.empty() || cls_.size() > 1);
  chart->legend()->setAlignment(Qt::AlignTop);
  chart->setMargins(QMargins(4, 4, 4, 4));

  // One series per spectrum (colour-blind-safe Okabe-Ito colours); an empty one without any.
  static const QColor kColours[] = {QColor(0x30, 0x68, 0x8e), QColor(0xe6, 0x9f, 0x00), QColor(0x00, 0x9e, 0x73),
                                    QColor(0xcc, 0x79, 0xa7), QColor(0x56, 0xb4, 0xe9), QColor(0xd5, 0x5e, 0x00)};
  std::vector<QLineSeries*> measured;
  std::vector<QList<QPointF>> lists;
  const std::size_t nseries = std::max<std::size_t>(1, cls_.size());
  for (std::size_t k = 0; k < nseries; ++k) {
    auto* s = new QLineSeries(chart);
    s->setName(k < cls_.size() ? names_.value(static_cast<qsizetype>(k)) : tr("measured"));
    lists.push_back(k < cls_.size() ? dlPoints(cls_[k], log_) : QList<QPointF>());
    s->replace(lists.back());
    s->setPen(QPen(kColours[k % 6], 1.5));
    chart->addSeries(s);
    measured.push_back(s);
  }

  QLineSeries* input = nullptr;
  QList<QPointF> refPts;
  if (!ref_.empty()) {
    input = new QLineSeries(chart);
    input->setName(tr("input C_l"));
    refPts = dlPoints(ref_, log_);
    input->replace(refPts);
    QPen pen(QColor(0xd9, 0x5f, 0x02), 1.5, Qt::DashLine);
    input->setPen(pen);
    chart->addSeries(input);
  }

  double xmax = 1.0, ymin = 0.0, ymax = 1.0;
  bool any = false;
  double lo = 0.0, hi = 0.0;
  lists.push_back(refPts);
  for (const QList<QPointF>& list : lists)
    for (const QPointF& p : list) {
      xmax = std::max(xmax, p.x());
      if (!any) lo = hi = p.y();
      lo = std::min(lo, p.y());
      hi = std::max(hi, p.y());
      any = true;
    }

  QAbstractAxis* ax = nullptr;
  QAbstractAxis* ay = nullptr;
  if (log_) {
    auto* x = new QLogValueAxis(chart);
    x->setBase(10.0);
    x->setRange(1.0, std::max(2.0, xmax));
    x->setLabelFormat(QStringLiteral("%g"));
    x->setMinorTickCount(8);
    auto* y = new QLogValueAxis(chart);
    y->setBase(10.0);
    if (any && lo > 0.0) {
      // Whole decades, so that at least two labelled ticks (powers of ten) are visible.
      ymin = std::pow(10.0, std::floor(std::log10(lo)));
      ymax = std::pow(10.0, std::ceil(std::log10(hi)));
      if (!(ymax > ymin)) ymax = ymin * 10.0;
    } else {
      ymin = 1e-3;
      ymax = 1.0;
    }
    y->setRange(ymin, ymax);
    y->setLabelFormat(QStringLiteral("%.3g"));
    y->setMinorTickCount(8);
    ax = x;
    ay = y;
  } else {
    auto* x = new QValueAxis(chart);
    x->setRange(0.0, std::max(2.0, xmax));
    x->setLabelFormat(QStringLiteral("%g"));
    auto* y = new QValueAxis(chart);
    if (any) {
      ymin = std::min(0.0, lo);
      ymax = hi > ymin ? hi + 0.05 * (hi - ymin) : ymin + 1.0;
    }
    y->setRange(ymin, ymax);
    y->setLabelFormat(QStringLiteral("%.3g"));
    x->applyNiceNumbers();
    y->applyNiceNumbers();
    ax = x;
    ay = y;
  }
  ax->setTitleText(tr("multipole l"));
  ay->setTitleText(tr("D_l = l(l+1) C_l / 2π"));
  chart->addAxis(ax, Qt::AlignBottom);
  chart->addAxis(ay, Qt::AlignLeft);
  for (QLineSeries* s : measured) {
    s->attachAxis(ax);
    s->attachAxis(ay);
  }
  if (input) {
    input->attachAxis(ax);
    input->attachAxis(ay);
  }
  QChart* old = this->chart();
  setChart(chart);
  if (old) delete old;
}

}  // namespace almagest::ui
