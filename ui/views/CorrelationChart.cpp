#include "views/CorrelationChart.hpp"

#include <QAreaSeries>
#include <QCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QGraphicsObject>
#include <QPointer>
#include <QComboBox>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

namespace almagest::ui {

namespace {

using Mode = CorrelationChart::Mode;

QColor modeColour(Mode m) {
  switch (m) {
    case Mode::Xi: return QColor(0x1c, 0x64, 0xd2);
    case Mode::R2Xi: return QColor(0xd9, 0x48, 0x0f);
    case Mode::ZetaEquilateral: return QColor(0x2b, 0x8a, 0x3e);
    case Mode::ZetaIndex: return QColor(0x2b, 0x8a, 0x3e);
    case Mode::ZetaDiscIndex: return QColor(0x9c, 0x6b, 0x1e);
    case Mode::ZetaConnIndex: return QColor(0x86, 0x2e, 0x9c);
    case Mode::ZetaOddIndex: return QColor(0xc2, 0x25, 0x5c);
  }
  return Qt::black;
}

const QColor kOverlayColours[] = {QColor(0x55, 0x55, 0x55), QColor(0xe0, 0x8e, 0x0b), QColor(0x0b, 0x9e, 0xa8),
                                  QColor(0x8a, 0x4b, 0xd1), QColor(0x6b, 0x8e, 0x23)};

/// 1, 2 or 5 times a power of ten, close to `raw` (> 0).
double niceStep(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1.0;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / p;
  return (f < 1.5 ? 1.0 : f < 3.5 ? 2.0 : f < 7.5 ? 5.0 : 10.0) * p;
}

bool isRadial(Mode m) { return m == Mode::Xi || m == Mode::R2Xi || m == Mode::ZetaEquilateral; }

/// The min and max point of each of `buckets` equal x ranges, in x order: the drawn curve keeps
/// every excursion of the full one (a pixel column cannot show more) at a bounded point count.
QList<QPointF> envelope(const QList<QPointF>& pts, int buckets) {
  if (pts.size() <= 2 * buckets) return pts;
  const double x0 = pts.front().x(), x1 = pts.back().x();
  const double width = (x1 - x0) / buckets;
  QList<QPointF> out;
  out.reserve(2 * buckets + 2);
  qsizetype i = 0;
  while (i < pts.size()) {
    const int b = width > 0 ? std::min(buckets - 1, static_cast<int>((pts[i].x() - x0) / width)) : 0;
    qsizetype lo = i, hi = i, j = i;
    while (j < pts.size() && (width > 0 ? std::min(buckets - 1, static_cast<int>((pts[j].x() - x0) / width)) : 0) == b) {
      if (pts[j].y() < pts[lo].y()) lo = j;
      if (pts[j].y() > pts[hi].y()) hi = j;
      ++j;
    }
    if (lo == hi) out << pts[lo];
    else if (lo < hi) out << pts[lo] << pts[hi];
    else out << pts[hi] << pts[lo];
    i = j;
  }
  return out;
}

QString numberLabel(double v) {
  QString s = QString::number(v, 'g', 3);
  return s == QStringLiteral("-0") ? QStringLiteral("0") : s;
}

}  // namespace

CorrelationChart::CorrelationChart(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);

  auto* top = new QHBoxLayout;
  top->setContentsMargins(8, 4, 8, 4);
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
  // The title font is set once here: rebuild() only changes the text (it used to scale the
  // current font by 1.15 on every redraw).
  QFont tf = chart->titleFont();
  tf.setPointSizeF(tf.pointSizeF() * 1.15);
  tf.setBold(true);
  chart->setTitleFont(tf);
  view_ = new QChartView(chart, this);
  view_->setRenderHint(QPainter::Antialiasing);
  view_->setMinimumSize(320, 240);
  layout->addWidget(view_, 1);

  auto* key = new QChart;
  key->setAnimationOptions(QChart::NoAnimation);
  key->legend()->hide();
  key->setMargins(QMargins(6, 0, 6, 2));
  key->setBackgroundRoundness(0);
  keyView_ = new QChartView(key, this);
  keyView_->setFixedHeight(120);
  keyView_->setToolTip(tr("Configuration key: the side bins of each configuration (sorted), as a staircase"));
  keyView_->hide();
  layout->addWidget(keyView_);

  connect(modeBox_, &QComboBox::activated, this, [this](int index) {
    setMode(static_cast<Mode>(modeBox_->itemData(index).toInt()));
  });
  clear();
}

CorrelationChart::~CorrelationChart() = default;

QChart* CorrelationChart::chart() const { return view_->chart(); }

QAbstractAxis* CorrelationChart::xAxis() const {
  const auto axes = chart()->axes(Qt::Horizontal);
  return axes.isEmpty() ? nullptr : axes.front();
}

QString CorrelationChart::modeName(Mode m) {
  switch (m) {
    case Mode::Xi: return tr("ξ(r)");
    case Mode::R2Xi: return tr("r² ξ(r)");
    case Mode::ZetaEquilateral: return tr("ζ equilateral (r, r, r)");
    case Mode::ZetaIndex: return tr("ζ by configuration");
    case Mode::ZetaDiscIndex: return tr("ζ disconnected by configuration");
    case Mode::ZetaConnIndex: return tr("ζ connected by configuration");
    case Mode::ZetaOddIndex: return tr("ζ parity-odd by configuration");
  }
  return {};
}

QList<Mode> CorrelationChart::availableModes() const {
  switch (order_) {
    case 2: return {Mode::Xi, Mode::R2Xi};
    case 3: return {Mode::ZetaEquilateral, Mode::ZetaIndex};
    case 4: {
      QList<Mode> m{Mode::ZetaIndex};
      if (hasConn_) m << Mode::ZetaDiscIndex << Mode::ZetaConnIndex;
      if (hasOdd_) m << Mode::ZetaOddIndex;
      return m;
    }
    default: return {};
  }
}

std::vector<CorrelationChart::Row> CorrelationChart::copyRows(const almagest::npcf::NpcfResult& result) {
  std::vector<Row> rows;
  const std::size_t n = result.rows();
  const int epr = std::clamp(result.edges_per_row, 1, 6);
  const bool conn = result.zeta_conn.size() == n, disc = result.zeta_disc.size() == n, odd = result.zeta_odd.size() == n;
  rows.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    Row row;
    for (int e = 0; e < epr; ++e) {
      const std::size_t k = i * static_cast<std::size_t>(epr) + static_cast<std::size_t>(e);
      row.b[e] = k < result.bins.size() ? result.bins[k] : 0;
    }
    row.r = result.config.bins.centre(row.b[0]);
    row.est = i < result.estimator.size() ? result.estimator[i] : 0.0;
    row.conn = conn ? result.zeta_conn[i] : 0.0;
    row.disc = disc ? result.zeta_disc[i] : 0.0;
    row.odd = odd ? result.zeta_odd[i] : 0.0;
    row.rr = i < result.r.size() ? result.r[i] : 0.0;
    rows.push_back(row);
  }
  return rows;
}

void CorrelationChart::setResult(const almagest::npcf::NpcfResult& result, const QString& label) {
  order_ = result.order;
  edgesPerRow_ = std::clamp(result.edges_per_row, 1, 6);
  nbins_ = result.config.bins.nbins;
  logR_ = result.config.bins.scale == almagest::npcf::BinScale::Log;
  hasConn_ = result.zeta_conn.size() == result.rows() && result.rows() > 0;
  hasOdd_ = result.zeta_odd.size() == result.rows() && result.rows() > 0;
  allTriangles_ = result.statistic == almagest::npcf::Statistic::ThreePoint;
  label_ = label.isEmpty() ? QString::fromLatin1(almagest::npcf::to_string(result.statistic)) : label;
  rows_ = copyRows(result);
  keyDirty_ = true;
  sigma_.clear();
  overlays_.clear();
  selected_.clear();

  const QList<Mode> modes = availableModes();
  modeBox_->clear();
  for (Mode m : modes) modeBox_->addItem(modeName(m), static_cast<int>(m));
  modeBox_->setEnabled(modes.size() > 1);
  // "All triangles" opens on all of them; the equilateral plot is one choice away.
  mode_ = modes.isEmpty() ? Mode::Xi : allTriangles_ ? Mode::ZetaIndex : modes.front();
  modeBox_->setCurrentIndex(std::max(0, modeBox_->findData(static_cast<int>(mode_))));
  rebuild();
  emit modeChanged(mode_);
}

void CorrelationChart::setErrors(const std::vector<double>& sigma) {
  sigma_ = sigma.size() == rows_.size() ? sigma : std::vector<double>{};
  rebuild();
}

bool CorrelationChart::addOverlay(const almagest::npcf::NpcfResult& result, const QString& label) {
  if (order_ == 0 || result.order != order_ || result.rows() != rows_.size()) return false;
  overlays_.push_back({label, copyRows(result)});
  rebuild();
  return true;
}

void CorrelationChart::clear() {
  rows_.clear();
  keyDirty_ = true;
  sigma_.clear();
  overlays_.clear();
  selected_.clear();
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

double CorrelationChart::axisY(double y) const {
  if (!(symlog_ > 0)) return y;
  return std::copysign(std::log10(1.0 + std::abs(y) / symlog_), y);
}

bool CorrelationChart::valueOf(const Row& row, std::size_t i, double& x, double& y) const {
  switch (mode_) {
    case Mode::Xi: x = row.r; y = row.est; break;
    case Mode::R2Xi: x = row.r; y = row.r * row.r * row.est; break;
    case Mode::ZetaEquilateral:
      if (row.b[0] != row.b[1] || row.b[1] != row.b[2]) return false;
      x = row.r; y = row.est;
      break;
    case Mode::ZetaIndex: x = static_cast<double>(i); y = row.est; break;
    case Mode::ZetaDiscIndex: x = static_cast<double>(i); y = row.disc; break;
    case Mode::ZetaConnIndex: x = static_cast<double>(i); y = row.conn; break;
    case Mode::ZetaOddIndex: x = static_cast<double>(i); y = row.odd; break;
  }
  return true;
}

int CorrelationChart::rowNear(double x) const {
  if (plotted_.isEmpty()) return -1;
  // plotted_ is in increasing x (row order; bin order for the radial plots).
  auto it = std::lower_bound(plotted_.begin(), plotted_.end(), x, [](const QPointF& p, double v) { return p.x() < v; });
  qsizetype k = it - plotted_.begin();
  if (k >= plotted_.size()) k = plotted_.size() - 1;
  if (k > 0 && std::abs(plotted_[k - 1].x() - x) <= std::abs(plotted_[k].x() - x)) --k;
  return plottedRows_[k];
}

void CorrelationChart::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  fitTicks();
  fitTitle();
  fitCaption();
}

void CorrelationChart::removeAxesAndSeries(QChart* c) {
  for (QAbstractSeries* s : c->series())
    for (QAbstractAxis* a : s->attachedAxes()) s->detachAxis(a);
  c->removeAllSeries();
  const QList<QAbstractAxis*> axes = c->axes();
  for (QAbstractAxis* a : axes) c->removeAxis(a);
  // Qt Charts hides a removed axis's graphics item and deletes it with deleteLater(), but its
  // labels, title and grid are items of the chart, not of that item: they stay on screen until
  // the deferred delete runs, and it never runs when the rebuild comes from a nested
  // processEvents() (the demo, a workspace restore): the old tick labels and titles were drawn
  // over the new ones ("14"/"400", "0 0"). Delete those orphaned axis items now.
  QList<QPointer<QGraphicsObject>> stale;
  for (QGraphicsItem* item : c->childItems())
    if (QGraphicsObject* obj = item->toGraphicsObject(); obj && !obj->isVisible() && obj->inherits("ChartAxisElement"))
      stale << obj;
  for (const QPointer<QGraphicsObject>& obj : stale) delete obj.data();  // null once deleted
  qDeleteAll(axes);  // after their graphics items, which refer to them
}

void CorrelationChart::fitTitle() {
  // The chart elides a title wider than itself ("...by confi..."): break it into two lines at a
  // space instead, and elide only what still does not fit.
  QChart* c = chart();
  if (title_.isEmpty()) {
    c->setTitle(QString());
    return;
  }
  const QFontMetricsF fm(c->titleFont());
  const double width = std::max(80, view_->width() - 24);
  QString text = title_;
  if (fm.horizontalAdvance(title_) > width) {
    QStringList lines{QString()};
    for (const QString& word : title_.split(QLatin1Char(' '))) {
      const QString next = lines.back().isEmpty() ? word : lines.back() + QLatin1Char(' ') + word;
      if (lines.back().isEmpty() || fm.horizontalAdvance(next) <= width || lines.size() == 2) lines.back() = next;
      else lines << word;
    }
    for (QString& l : lines) l = fm.elidedText(l, Qt::ElideRight, width).toHtmlEscaped();
    text = lines.join(QStringLiteral("<br>"));
  }
  if (c->title() != text) c->setTitle(text);
  view_->setToolTip(title_);
}

void CorrelationChart::fitCaption() {
  // The caption never widens the chart (size policy Ignored): elide it to its width, with the
  // whole text in the tooltip.
  const int w = caption_->width() > 20 ? caption_->width() : std::max(60, width() - 260);
  caption_->setText(caption_->fontMetrics().elidedText(captionText_, Qt::ElideRight, w));
}

void CorrelationChart::rebuild() {
  QChart* c = chart();
  removeAxesAndSeries(c);
  plotted_.clear();
  plottedRows_.clear();
  skipped_ = 0;
  drawn_ = 0;
  markers_ = 0;
  symlog_ = 0;

  if (order_ == 0) {
    title_ = tr("No result yet: open a catalogue and press Run");
    fitTitle();
    captionText_.clear();
    caption_->clear();
    caption_->setToolTip(QString());
    if (keyDirty_) rebuildKey();
    keyView_->hide();
    return;
  }

  // Points of the current plot; rows without randoms have no estimate and are left out.
  plotted_.reserve(static_cast<qsizetype>(rows_.size()));
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    const Row& row = rows_[i];
    double x = 0, y = 0;
    if (!valueOf(row, i, x, y)) continue;
    if (!(row.rr > 0) || !std::isfinite(x) || !std::isfinite(y) || (logR_ && isRadial(mode_) && x <= 0)) {
      ++skipped_;
      continue;
    }
    plotted_.append(QPointF(x, y));
    plottedRows_.append(static_cast<int>(i));
  }

  QString xTitle, yTitle, title;
  switch (mode_) {
    case Mode::Xi: title = tr("Two-point correlation ξ(r) = NN/RR"); xTitle = tr("r [Mpc/h]"); yTitle = tr("ξ(r)"); break;
    case Mode::R2Xi: title = tr("r² ξ(r)"); xTitle = tr("r [Mpc/h]"); yTitle = tr("r² ξ(r) [(Mpc/h)²]"); break;
    case Mode::ZetaEquilateral:
      title = tr("Three-point correlation ζ(r, r, r), equilateral");
      xTitle = tr("r [Mpc/h]"); yTitle = tr("ζ = NNN/RRR");
      break;
    case Mode::ZetaIndex:
      title = order_ == 3 ? tr("Three-point correlation ζ by configuration") : tr("Four-point correlation ζ by configuration");
      xTitle = tr("configuration index"); yTitle = order_ == 3 ? tr("ζ = NNN/RRR") : tr("ζ = NNNN/RRRR");
      break;
    case Mode::ZetaDiscIndex:
      title = tr("Disconnected four-point correlation"); xTitle = tr("configuration index"); yTitle = tr("ζ_disc = Σ ξ ξ");
      break;
    case Mode::ZetaConnIndex:
      title = tr("Connected four-point correlation"); xTitle = tr("configuration index"); yTitle = tr("ζ_conn = ζ − ζ_disc");
      break;
    case Mode::ZetaOddIndex:
      title = tr("Parity-odd four-point correlation"); xTitle = tr("configuration index"); yTitle = tr("ζ_odd = NNNN_odd/RRRR");
      break;
  }
  title_ = title;
  fitTitle();

  // Index plots span decades (zeta of small configurations is orders above the large ones):
  // a symmetric-log axis, linear within the threshold, when |y| covers more than two decades.
  const bool radial = isRadial(mode_);
  const bool logX = logR_ && radial;
  if (!radial && plotted_.size() > 2) {
    std::vector<double> mags;
    mags.reserve(static_cast<std::size_t>(plotted_.size()));
    for (const QPointF& p : plotted_)
      if (p.y() != 0) mags.push_back(std::abs(p.y()));
    if (mags.size() > 2) {
      const double top = *std::max_element(mags.begin(), mags.end());
      std::nth_element(mags.begin(), mags.begin() + static_cast<std::ptrdiff_t>(mags.size() / 10), mags.end());
      const double low = mags[mags.size() / 10];
      if (low > 0 && top / low > 100) symlog_ = std::max(low, top * 1e-6);
    }
  }
  auto ax = [&](double x) { return logX ? std::log10(x) : x; };
  QList<QPointF> drawnPts;
  drawnPts.reserve(plotted_.size());
  for (const QPointF& p : plotted_) drawnPts.append(QPointF(ax(p.x()), axisY(p.y())));
  drawnPts = envelope(drawnPts, kMaxDrawnPoints / 2);
  drawn_ = static_cast<int>(drawnPts.size());

  const QColor colour = modeColour(mode_);
  auto* line = new QLineSeries;
  QPen pen(colour);
  pen.setWidthF(plotted_.size() > 2000 ? 1.0 : 2.0);
  line->setPen(pen);
  line->setName(label_);
  line->replace(drawnPts);
  connect(line, &QLineSeries::clicked, this, [this, logX](const QPointF& p) {
    const int row = rowNear(logX ? std::pow(10.0, p.x()) : p.x());
    if (row >= 0) emit rowClicked(row);
  });
  QScatterSeries* markers = nullptr;
  if (plotted_.size() <= kMaxMarkers) {
    markers = new QScatterSeries;
    markers->setMarkerShape(QScatterSeries::MarkerShapeCircle);
    markers->setMarkerSize(plotted_.size() > 200 ? 4.0 : 7.0);
    markers->setColor(colour);
    markers->setBorderColor(colour.darker(130));
    markers->replace(drawnPts);
    markers_ = static_cast<int>(drawnPts.size());
    connect(markers, &QScatterSeries::clicked, line, &QLineSeries::clicked);
  }

  // Axis ranges from the plotted points (and error bars), padded.
  double xmin = std::numeric_limits<double>::max(), xmax = std::numeric_limits<double>::lowest();
  double ymin = xmin, ymax = xmax;
  for (qsizetype k = 0; k < plotted_.size(); ++k) {
    const QPointF& p = plotted_[k];
    const double s = sigma_.empty() ? 0.0 : sigma_[static_cast<std::size_t>(plottedRows_[k])];
    xmin = std::min(xmin, p.x()); xmax = std::max(xmax, p.x());
    ymin = std::min(ymin, p.y() - s); ymax = std::max(ymax, p.y() + s);
  }
  for (const Overlay& o : overlays_)
    for (std::size_t i = 0; i < o.rows.size(); ++i) {
      double x = 0, y = 0;
      if (valueOf(o.rows[i], i, x, y) && o.rows[i].rr > 0 && std::isfinite(y)) { ymin = std::min(ymin, y); ymax = std::max(ymax, y); }
    }
  if (plotted_.isEmpty()) {
    xmin = radial ? rows_.empty() ? 1.0 : rows_.front().r : 0.0;
    xmax = radial ? rows_.empty() ? 10.0 : rows_.back().r : std::max<double>(1.0, static_cast<double>(rows_.size()));
    ymin = -1; ymax = 1;
  }
  if (xmax <= xmin) { xmin -= 0.5 * std::max(1.0, std::abs(xmin)); xmax += 0.5 * std::max(1.0, std::abs(xmax)); }
  if (logX && xmin <= 0) xmin = xmax / 10;
  ymin = std::min(ymin, 0.0);  // keep the zero line in view
  ymax = std::max(ymax, 0.0);
  if (ymax - ymin <= 0) { ymin -= 1; ymax += 1; }

  QAbstractAxis* xAxis = nullptr;
  if (logX) {
    // Log r as log10(r) on a category axis: labels at 1-2-5 values, never elided.
    auto* axc = new QCategoryAxis;
    axc->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
    xmin_ = std::log10(xmin / 1.15);
    xmax_ = std::log10(xmax * 1.15);
    axc->setRange(xmin_, xmax_);
    axc->setStartValue(xmin_);
    xAxis = axc;
  } else {
    auto* axv = new QValueAxis;
    if (radial) {
      const double xpad = 0.04 * (xmax - xmin);
      axv->setRange(std::max(0.0, xmin - xpad), xmax + xpad);
      axv->setLabelFormat(QStringLiteral("%g"));
      axv->applyNiceNumbers();
    } else {  // configuration index: integer ticks from 0, spaced by fitTicks()
      axv->setRange(-0.5, std::max<double>(xmax, static_cast<double>(rows_.size()) - 1.0) + 0.5);
      axv->setLabelFormat(QStringLiteral("%d"));
      axv->setTickType(QValueAxis::TicksDynamic);
      axv->setTickAnchor(0);
      axv->setTickInterval(std::max(1.0, niceStep(xmax / 6.0)));
    }
    xmin_ = axv->min();
    xmax_ = axv->max();
    xAxis = axv;
  }
  xAxis->setTruncateLabels(false);
  xAxis->setTitleText(xTitle);

  QAbstractAxis* yAxis = nullptr;
  if (symlog_ > 0) {
    auto* ayc = new QCategoryAxis;
    ayc->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
    const double lo = axisY(ymin), hi = axisY(ymax);
    const double pad = 0.04 * (hi - lo);
    ayc->setRange(lo - (ymin < 0 ? pad : 0), hi + (ymax > 0 ? pad : 0));
    ayc->setStartValue(ayc->min());
    // Ticks at 0 and +-10^k beyond the threshold.
    QList<double> ticks{0.0};
    const int k0 = static_cast<int>(std::ceil(std::log10(symlog_)));
    for (int k = k0; k < k0 + 40; ++k) {
      const double v = std::pow(10.0, k);
      const bool up = v <= ymax * 1.0001, down = -v >= ymin * 1.0001;
      if (!up && !down) break;
      if (up) ticks << v;
      if (down) ticks << -v;
    }
    std::sort(ticks.begin(), ticks.end());
    for (double v : ticks) ayc->append(numberLabel(v), axisY(v));
    ayc->setTitleText(yTitle + tr(" (symlog)"));
    yAxis = ayc;
  } else {
    auto* ayv = new QValueAxis;
    const double ypad = 0.04 * (ymax - ymin);
    if (ymin < 0) ymin -= ypad;
    if (ymax > 0) ymax += ypad;
    const double ystep = niceStep((ymax - ymin) / 5.0);
    ymin = std::floor(ymin / ystep) * ystep;
    ymax = std::ceil(ymax / ystep) * ystep;
    ayv->setRange(ymin, ymax);
    ayv->setTickType(QValueAxis::TicksDynamic);
    ayv->setTickAnchor(0);
    ayv->setTickInterval(ystep);
    ayv->setLabelFormat(QStringLiteral("%.3g"));
    ayv->setTitleText(yTitle);
    yAxis = ayv;
  }
  yAxis->setTruncateLabels(false);
  c->addAxis(xAxis, Qt::AlignBottom);
  c->addAxis(yAxis, Qt::AlignLeft);
  auto attach = [&](QAbstractSeries* s) {
    c->addSeries(s);
    s->attachAxis(xAxis);
    s->attachAxis(yAxis);
  };

  // Zero line under the curve.
  auto* zero = new QLineSeries;
  QPen zp(QColor(0x86, 0x8e, 0x96));
  zp.setStyle(Qt::DashLine);
  zp.setWidthF(1.0);
  zero->setPen(zp);
  zero->append(xmin_, 0.0);
  zero->append(xmax_, 0.0);
  attach(zero);

  // Jackknife errors: a bar per point (a band above 300 points).
  int bars = 0;
  if (!sigma_.empty() && !plotted_.isEmpty()) {
    QPen ep(colour.lighter(130));
    ep.setWidthF(1.2);
    if (plotted_.size() <= 300) {
      for (qsizetype k = 0; k < plotted_.size(); ++k) {
        const double s = sigma_[static_cast<std::size_t>(plottedRows_[k])];
        if (!(s > 0)) continue;
        auto* bar = new QLineSeries;
        bar->setPen(ep);
        const double x = ax(plotted_[k].x()), y = plotted_[k].y();
        bar->append(x, axisY(y - s));
        bar->append(x, axisY(y + s));
        attach(bar);
        ++bars;
      }
    } else {
      auto* up = new QLineSeries, *down = new QLineSeries;
      for (qsizetype k = 0; k < plotted_.size(); ++k) {
        const double s = sigma_[static_cast<std::size_t>(plottedRows_[k])];
        up->append(ax(plotted_[k].x()), axisY(plotted_[k].y() + s));
        down->append(ax(plotted_[k].x()), axisY(plotted_[k].y() - s));
      }
      auto* band = new QAreaSeries(up, down);
      QColor fill = colour;
      fill.setAlpha(60);
      band->setBrush(fill);
      band->setPen(Qt::NoPen);
      attach(band);
      bars = 1;
    }
  }

  // Overlays (same plot of other results), then the current result on top.
  for (std::size_t o = 0; o < overlays_.size(); ++o) {
    QList<QPointF> pts;
    for (std::size_t i = 0; i < overlays_[o].rows.size(); ++i) {
      double x = 0, y = 0;
      const Row& row = overlays_[o].rows[i];
      if (!valueOf(row, i, x, y) || !(row.rr > 0) || !std::isfinite(y) || (logX && x <= 0)) continue;
      pts.append(QPointF(ax(x), axisY(y)));
    }
    auto* s = new QLineSeries;
    QPen op(kOverlayColours[o % std::size(kOverlayColours)]);
    op.setWidthF(1.5);
    op.setStyle(Qt::DashLine);
    s->setPen(op);
    s->setName(overlays_[o].label);
    s->setObjectName(QStringLiteral("overlay"));
    s->replace(envelope(pts, kMaxDrawnPoints / 2));
    attach(s);
  }
  attach(line);
  if (markers) attach(markers);
  // The legend names the main curve and the overlays only.
  c->legend()->setVisible(!overlays_.empty());
  for (QLegendMarker* m : c->legend()->markers())
    m->setVisible(m->series() == line || m->series()->objectName() == QLatin1String("overlay"));
  drawSelection();
  fitTicks();
  if (keyDirty_) rebuildKey();
  keyView_->setVisible(order_ >= 3 && !isRadial(mode_) && !rows_.empty());

  QString text = plotted_.size() == 1 ? tr("1 point") : tr("%1 points").arg(plotted_.size());
  if (drawn_ < plotted_.size()) text += tr(" (drawn as the envelope of %1)").arg(drawn_);
  if (skipped_ > 0)
    text += skipped_ == 1 ? tr(" (1 row without randoms)") : tr(" (%1 rows without randoms)").arg(skipped_);
  if (bars > 0) text += tr(", jackknife errors");
  if (plotted_.isEmpty()) text = tr("No configuration has random tuples: nothing to plot.");
  captionText_ = text;
  fitCaption();
  caption_->setToolTip(text + tr("\nRows whose random count is zero carry no estimate and are not plotted."));
}

void CorrelationChart::drawSelection() {
  QChart* c = chart();
  for (QAbstractSeries* s : c->series())
    if (s->objectName() == QLatin1String("selection")) {
      c->removeSeries(s);
      delete s;
    }
  if (selected_.isEmpty() || plotted_.isEmpty() || c->axes().size() < 2) return;
  const bool logX = logR_ && isRadial(mode_);
  auto* sel = new QScatterSeries;
  sel->setObjectName(QStringLiteral("selection"));
  sel->setMarkerShape(QScatterSeries::MarkerShapeCircle);
  sel->setMarkerSize(12);
  sel->setColor(Qt::transparent);
  sel->setBorderColor(QColor(0x11, 0x11, 0x11));
  sel->setPen(QPen(QColor(0x11, 0x11, 0x11), 2.0));
  for (int row : selected_) {
    auto it = std::lower_bound(plottedRows_.begin(), plottedRows_.end(), row);
    if (it == plottedRows_.end() || *it != row) continue;
    const QPointF& p = plotted_[it - plottedRows_.begin()];
    sel->append(logX ? std::log10(p.x()) : p.x(), axisY(p.y()));
    if (sel->count() >= 2000) break;
  }
  c->addSeries(sel);
  sel->attachAxis(c->axes(Qt::Horizontal).front());
  sel->attachAxis(c->axes(Qt::Vertical).front());
  for (QLegendMarker* m : c->legend()->markers(sel)) m->setVisible(false);
}

void CorrelationChart::setSelectedRows(const QList<int>& rows) {
  selected_ = rows;
  std::sort(selected_.begin(), selected_.end());
  drawSelection();
}

void CorrelationChart::fitTicks() {
  // Tick spacing from the label widths and the plot width, so labels are never elided ("...")
  // or cut.
  QAbstractAxis* xa = xAxis();
  if (!xa) return;
  const QFontMetricsF fm(xa->labelsFont());
  double width = chart()->plotArea().width();
  if (width < 50) width = std::max(200, view_->width() - 90);
  const double span = xmax_ - xmin_;
  if (!(span > 0)) return;
  if (auto* cat = qobject_cast<QCategoryAxis*>(xa)) {
    for (const QString& l : cat->categoriesLabels()) cat->remove(l);
    QList<double> values;
    const double lo = std::pow(10.0, xmin_), hi = std::pow(10.0, xmax_);
    for (int k = static_cast<int>(std::floor(xmin_)) - 1; k <= static_cast<int>(std::ceil(xmax_)); ++k)
      for (double m : {1.0, 2.0, 5.0}) {
        const double v = m * std::pow(10.0, k);
        if (v >= lo && v <= hi) values << v;
      }
    if (values.size() < 2) values = {std::pow(10.0, xmin_ + 0.1 * span), std::pow(10.0, xmax_ - 0.1 * span)};
    // Keep a label only where it clears the previous kept one; decades first.
    double lastRight = -1e300;
    for (double v : values) {
      const QString text = numberLabel(v);
      const double px = (std::log10(v) - xmin_) / span * width;
      const double w = fm.horizontalAdvance(text);
      if (px - 0.5 * w < lastRight + 8) continue;
      cat->append(text, std::log10(v));
      lastRight = px + 0.5 * w;
    }
  } else if (auto* val = qobject_cast<QValueAxis*>(xa); val && val->tickType() == QValueAxis::TicksDynamic) {
    const double w = fm.horizontalAdvance(QString::number(static_cast<long long>(std::ceil(xmax_)))) + 16;
    const double maxTicks = std::max(2.0, width / w);
    double step = niceStep(span / maxTicks);
    while (span / step > maxTicks) step = niceStep(step * 2.2);
    val->setTickInterval(std::max(1.0, step));
  }
}

void CorrelationChart::rebuildKey() {
  QChart* k = keyView_->chart();
  removeAxesAndSeries(k);
  keyDirty_ = false;
  if (order_ < 3 || rows_.empty()) return;
  const int edges = order_ == 3 ? 3 : edgesPerRow_;
  auto* xa = new QValueAxis;
  xa->setRange(-0.5, static_cast<double>(rows_.size()) - 0.5);  // the index axis of every index plot
  xa->setLabelsVisible(false);
  xa->setGridLineVisible(false);
  auto* ya = new QValueAxis;
  ya->setRange(-0.5, std::max(1, nbins_) - 0.5);
  ya->setLabelFormat(QStringLiteral("%d"));
  ya->setTickType(QValueAxis::TicksDynamic);
  ya->setTickAnchor(0);
  ya->setTickInterval(std::max(1.0, niceStep(nbins_ / 3.0)));
  ya->setTitleText(tr("bin"));
  ya->setTruncateLabels(false);
  k->addAxis(xa, Qt::AlignBottom);
  k->addAxis(ya, Qt::AlignLeft);
  static const QColor keyColours[6] = {QColor(0x1c, 0x64, 0xd2), QColor(0xd9, 0x48, 0x0f), QColor(0x2b, 0x8a, 0x3e),
                                       QColor(0x86, 0x2e, 0x9c), QColor(0x9c, 0x6b, 0x1e), QColor(0x0b, 0x9e, 0xa8)};
  for (int e = 0; e < edges; ++e) {
    // A staircase: the bin steps at each row where it changes.
    QList<QPointF> pts;
    int prev = -1;
    for (std::size_t i = 0; i < rows_.size(); ++i) {
      const int b = rows_[i].b[e];
      if (b != prev && prev >= 0) pts << QPointF(static_cast<double>(i) - 0.5, prev);
      if (b != prev) pts << QPointF(static_cast<double>(i) - 0.5, b);
      prev = b;
    }
    pts << QPointF(static_cast<double>(rows_.size()) - 0.5, prev);
    auto* s = new QLineSeries;
    QPen p(keyColours[e]);
    p.setWidthF(1.0);
    s->setPen(p);
    s->setName(tr("b%1").arg(e + 1));
    s->replace(envelope(pts, kMaxDrawnPoints / 2));
    k->addSeries(s);
    s->attachAxis(xa);
    s->attachAxis(ya);
  }
}

QJsonObject CorrelationChart::save_state() const {
  QJsonObject o;
  o[QStringLiteral("mode")] = static_cast<int>(mode_);
  QJsonArray sel;
  for (int r : selected_) sel.append(r);
  o[QStringLiteral("selected")] = sel;
  return o;
}

void CorrelationChart::restore_state(const QJsonObject& state) {
  if (state.contains(QStringLiteral("mode"))) setMode(static_cast<Mode>(state.value(QStringLiteral("mode")).toInt()));
  QList<int> sel;
  for (const QJsonValue& v : state.value(QStringLiteral("selected")).toArray())
    if (v.toInt(-1) >= 0 && v.toInt() < static_cast<int>(rows_.size())) sel << v.toInt();
  setSelectedRows(sel);
}

}  // namespace almagest::ui
