#include "views/CorrelationChart.hpp"

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QValueAxis>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

namespace almagest::ui {

namespace {

QColor modeColour(CorrelationChart::Mode m) {
  switch (m) {
    case CorrelationChart::Mode::Xi: return QColor(0x1c, 0x64, 0xd2);
    case CorrelationChart::Mode::R2Xi: return QColor(0xd9, 0x48, 0x0f);
    case CorrelationChart::Mode::ZetaEquilateral: return QColor(0x2b, 0x8a, 0x3e);
    case CorrelationChart::Mode::ZetaIndex: return QColor(0x2b, 0x8a, 0x3e);
    case CorrelationChart::Mode::ZetaConnIndex: return QColor(0x86, 0x2e, 0x9c);
    case CorrelationChart::Mode::ZetaOddIndex: return QColor(0xc2, 0x25, 0x5c);
  }
  return Qt::black;
}

/// 1, 2 or 5 times a power of ten, close to `raw` (> 0).
double niceStep(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1.0;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / p;
  return (f < 1.5 ? 1.0 : f < 3.5 ? 2.0 : f < 7.5 ? 5.0 : 10.0) * p;
}

bool isRadial(CorrelationChart::Mode m) {
  return m == CorrelationChart::Mode::Xi || m == CorrelationChart::Mode::R2Xi ||
         m == CorrelationChart::Mode::ZetaEquilateral;
}

}  // namespace

CorrelationChart::CorrelationChart(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(4);

  auto* top = new QHBoxLayout;
  top->setContentsMargins(8, 4, 8, 0);
  auto* plotLabel = new QLabel(tr("Plot:"), this);
  modeBox_ = new QComboBox(this);
  modeBox_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  modeBox_->setMinimumContentsLength(18);
  plotLabel->setBuddy(modeBox_);
  caption_ = new QLabel(this);
  caption_->setTextFormat(Qt::PlainText);
  caption_->setStyleSheet(QStringLiteral("color: palette(mid);"));
  caption_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // never widens the chart
  top->addWidget(plotLabel);
  top->addWidget(modeBox_);
  top->addSpacing(12);
  top->addWidget(caption_, 1);
  layout->addLayout(top);

  auto* chart = new QChart;
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->legend()->hide();
  chart->setMargins(QMargins(6, 6, 6, 6));
  chart->setBackgroundRoundness(0);
  view_ = new QChartView(chart, this);
  view_->setRenderHint(QPainter::Antialiasing);
  view_->setMinimumSize(320, 240);
  layout->addWidget(view_, 1);

  connect(modeBox_, &QComboBox::activated, this, [this](int index) {
    setMode(static_cast<Mode>(modeBox_->itemData(index).toInt()));
  });
  clear();
}

CorrelationChart::~CorrelationChart() = default;

QChart* CorrelationChart::chart() const { return view_->chart(); }

QString CorrelationChart::modeName(Mode m) {
  switch (m) {
    case Mode::Xi: return tr("ξ(r)");
    case Mode::R2Xi: return tr("r² ξ(r)");
    case Mode::ZetaEquilateral: return tr("ζ equilateral (r, r, r)");
    case Mode::ZetaIndex: return tr("ζ by configuration");
    case Mode::ZetaConnIndex: return tr("ζ connected by configuration");
    case Mode::ZetaOddIndex: return tr("ζ parity-odd by configuration");
  }
  return {};
}

QList<CorrelationChart::Mode> CorrelationChart::availableModes() const {
  switch (order_) {
    case 2: return {Mode::Xi, Mode::R2Xi};
    case 3: return {Mode::ZetaEquilateral, Mode::ZetaIndex};
    case 4: {
      QList<Mode> m{Mode::ZetaIndex};
      if (hasConn_) m << Mode::ZetaConnIndex;
      if (hasOdd_) m << Mode::ZetaOddIndex;
      return m;
    }
    default: return {};
  }
}

void CorrelationChart::setResult(const almagest::npcf::NpcfResult& result) {
  rows_.clear();
  order_ = result.order;
  logR_ = result.config.bins.scale == almagest::npcf::BinScale::Log;
  hasConn_ = result.zeta_conn.size() == result.rows() && result.rows() > 0;
  hasOdd_ = result.zeta_odd.size() == result.rows() && result.rows() > 0;
  const std::size_t n = result.rows();
  const int epr = std::max(1, result.edges_per_row);
  rows_.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    Row row;
    for (int e = 0; e < std::min(epr, 3); ++e) {
      const std::size_t k = i * static_cast<std::size_t>(epr) + static_cast<std::size_t>(e);
      row.b[e] = k < result.bins.size() ? result.bins[k] : 0;
    }
    row.r = result.config.bins.centre(row.b[0]);
    row.est = i < result.estimator.size() ? result.estimator[i] : 0.0;
    row.conn = hasConn_ ? result.zeta_conn[i] : 0.0;
    row.odd = hasOdd_ ? result.zeta_odd[i] : 0.0;
    row.rr = i < result.r.size() ? result.r[i] : 0.0;
    rows_.push_back(row);
  }

  const QList<Mode> modes = availableModes();
  modeBox_->clear();
  for (Mode m : modes) modeBox_->addItem(modeName(m), static_cast<int>(m));
  modeBox_->setEnabled(modes.size() > 1);
  mode_ = modes.isEmpty() ? Mode::Xi : modes.front();
  rebuild();
  emit modeChanged(mode_);
}

void CorrelationChart::clear() {
  rows_.clear();
  order_ = 0;
  modeBox_->clear();
  modeBox_->setEnabled(false);
  rebuild();
}

void CorrelationChart::setMode(Mode m) {
  if (!availableModes().contains(m)) return;
  const int idx = modeBox_->findData(static_cast<int>(m));
  if (idx >= 0) modeBox_->setCurrentIndex(idx);
  if (m == mode_) return;
  mode_ = m;
  rebuild();
  emit modeChanged(mode_);
}

int CorrelationChart::pointCount() const { return static_cast<int>(plotted_.size()); }
QList<QPointF> CorrelationChart::points() const { return plotted_; }

void CorrelationChart::rebuild() {
  QChart* c = chart();
  c->removeAllSeries();
  for (QAbstractAxis* a : c->axes()) {
    c->removeAxis(a);
    delete a;
  }
  plotted_.clear();
  skipped_ = 0;

  if (order_ == 0) {
    c->setTitle(tr("No result yet: open a catalogue and press Run"));
    caption_->clear();
    return;
  }

  // Points of the current plot; rows without randoms have no estimate and are left out.
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    const Row& row = rows_[i];
    double x = 0, y = 0;
    switch (mode_) {
      case Mode::Xi: x = row.r; y = row.est; break;
      case Mode::R2Xi: x = row.r; y = row.r * row.r * row.est; break;
      case Mode::ZetaEquilateral:
        if (row.b[0] != row.b[1] || row.b[1] != row.b[2]) continue;
        x = row.r; y = row.est;
        break;
      case Mode::ZetaIndex: x = static_cast<double>(i); y = row.est; break;
      case Mode::ZetaConnIndex: x = static_cast<double>(i); y = row.conn; break;
      case Mode::ZetaOddIndex: x = static_cast<double>(i); y = row.odd; break;
    }
    if (!(row.rr > 0) || !std::isfinite(x) || !std::isfinite(y) || (logR_ && isRadial(mode_) && x <= 0)) {
      ++skipped_;
      continue;
    }
    plotted_.append(QPointF(x, y));
  }

  QString xTitle, yTitle, title;
  switch (mode_) {
    case Mode::Xi:
      title = tr("Two-point correlation ξ(r) = NN/RR");
      xTitle = tr("r [Mpc/h]"); yTitle = tr("ξ(r)");
      break;
    case Mode::R2Xi:
      title = tr("r² ξ(r)");
      xTitle = tr("r [Mpc/h]"); yTitle = tr("r² ξ(r) [(Mpc/h)²]");
      break;
    case Mode::ZetaEquilateral:
      title = tr("Three-point correlation ζ(r, r, r), equilateral");
      xTitle = tr("r [Mpc/h]"); yTitle = tr("ζ = NNN/RRR");
      break;
    case Mode::ZetaIndex:
      title = order_ == 3 ? tr("Three-point correlation ζ by configuration")
                          : tr("Four-point correlation ζ by configuration");
      xTitle = tr("configuration index"); yTitle = order_ == 3 ? tr("ζ = NNN/RRR") : tr("ζ = NNNN/RRRR");
      break;
    case Mode::ZetaConnIndex:
      title = tr("Connected four-point correlation");
      xTitle = tr("configuration index"); yTitle = tr("ζ_conn = ζ − ζ_disc");
      break;
    case Mode::ZetaOddIndex:
      title = tr("Parity-odd four-point correlation");
      xTitle = tr("configuration index"); yTitle = tr("ζ_odd = NNNN_odd/RRRR");
      break;
  }
  c->setTitle(title);
  QFont tf = c->titleFont();
  tf.setPointSizeF(tf.pointSizeF() * 1.15);
  tf.setBold(true);
  c->setTitleFont(tf);

  const QColor colour = modeColour(mode_);
  auto* line = new QLineSeries;
  QPen pen(colour);
  pen.setWidthF(2.0);
  line->setPen(pen);
  line->replace(plotted_);
  auto* markers = new QScatterSeries;
  markers->setMarkerShape(QScatterSeries::MarkerShapeCircle);
  markers->setMarkerSize(plotted_.size() > 200 ? 4.0 : 7.0);
  markers->setColor(colour);
  markers->setBorderColor(colour.darker(130));
  markers->replace(plotted_);

  // Axis ranges from the plotted points, padded; sensible defaults when nothing is plotted.
  double xmin = std::numeric_limits<double>::max(), xmax = std::numeric_limits<double>::lowest();
  double ymin = xmin, ymax = xmax;
  for (const QPointF& p : plotted_) {
    xmin = std::min(xmin, p.x()); xmax = std::max(xmax, p.x());
    ymin = std::min(ymin, p.y()); ymax = std::max(ymax, p.y());
  }
  if (plotted_.isEmpty()) {
    xmin = isRadial(mode_) ? rows_.empty() ? 1.0 : rows_.front().r : 0.0;
    xmax = isRadial(mode_) ? rows_.empty() ? 10.0 : rows_.back().r : std::max<double>(1.0, rows_.size());
    ymin = -1; ymax = 1;
  }
  if (xmax <= xmin) { xmin -= 0.5 * std::max(1.0, std::abs(xmin)); xmax += 0.5 * std::max(1.0, std::abs(xmax)); }
  ymin = std::min(ymin, 0.0);  // keep the zero line in view
  ymax = std::max(ymax, 0.0);
  if (ymax - ymin <= 0) { ymin -= 1; ymax += 1; }
  // Pad only away from zero, then snap to whole ticks of a 1-2-5 step.
  const double ypad = 0.04 * (ymax - ymin);
  if (ymin < 0) ymin -= ypad;
  if (ymax > 0) ymax += ypad;
  const double ystep = niceStep((ymax - ymin) / 5.0);
  ymin = std::floor(ymin / ystep) * ystep;
  ymax = std::ceil(ymax / ystep) * ystep;

  QAbstractAxis* xAxis = nullptr;
  if (logR_ && isRadial(mode_) && xmin > 0) {
    auto* ax = new QLogValueAxis;
    ax->setBase(10);
    ax->setLabelFormat(QStringLiteral("%g"));
    ax->setMinorTickCount(-1);
    ax->setRange(xmin / 1.15, xmax * 1.15);
    xAxis = ax;
  } else {
    auto* ax = new QValueAxis;
    if (isRadial(mode_)) {
      const double xpad = 0.04 * (xmax - xmin);
      ax->setRange(std::max(0.0, xmin - xpad), xmax + xpad);
      ax->setLabelFormat(QStringLiteral("%g"));
      ax->applyNiceNumbers();
    } else {  // configuration index: integer ticks from 0
      ax->setRange(-0.5, xmax + 0.5);
      ax->setLabelFormat(QStringLiteral("%d"));
      ax->setTickType(QValueAxis::TicksDynamic);
      ax->setTickAnchor(0);
      ax->setTickInterval(std::max(1.0, niceStep(xmax / 6.0)));
    }
    xAxis = ax;
  }
  xAxis->setTitleText(xTitle);
  auto* yAxis = new QValueAxis;
  yAxis->setRange(ymin, ymax);
  yAxis->setTickType(QValueAxis::TicksDynamic);
  yAxis->setTickAnchor(0);
  yAxis->setTickInterval(ystep);
  yAxis->setLabelFormat(QStringLiteral("%.3g"));
  yAxis->setTitleText(yTitle);
  c->addAxis(xAxis, Qt::AlignBottom);
  c->addAxis(yAxis, Qt::AlignLeft);

  // Zero line under the curve.
  auto* zero = new QLineSeries;
  QPen zp(QColor(0x86, 0x8e, 0x96));
  zp.setStyle(Qt::DashLine);
  zp.setWidthF(1.0);
  zero->setPen(zp);
  const double zx0 = logR_ && isRadial(mode_) && xmin > 0 ? xmin / 1.15 : std::min(0.0, xmin) - 1e6;
  const double zx1 = logR_ && isRadial(mode_) && xmin > 0 ? xmax * 1.15 : xmax + 1e6;
  zero->append(zx0, 0.0);
  zero->append(zx1, 0.0);
  for (QAbstractSeries* s : {static_cast<QAbstractSeries*>(zero), static_cast<QAbstractSeries*>(line),
                             static_cast<QAbstractSeries*>(markers)}) {
    c->addSeries(s);
    s->attachAxis(xAxis);
    s->attachAxis(yAxis);
  }

  QString text = plotted_.size() == 1 ? tr("1 point") : tr("%1 points").arg(plotted_.size());
  if (skipped_ > 0)
    text += skipped_ == 1 ? tr(" (1 row without randoms)") : tr(" (%1 rows without randoms)").arg(skipped_);
  if (plotted_.isEmpty()) text = tr("No configuration has random tuples: nothing to plot.");
  caption_->setText(text);
  caption_->setToolTip(text + tr("\nRows whose random count is zero carry no estimate and are not plotted."));
}

}  // namespace almagest::ui
