// The N-point chart's defects of issue 21, each with a test, and its plots:
//  - the title font is the same after any number of redraws (it grew 15% per redraw);
//  - a 16-bin 4pCF (165,660 configurations) is set and painted in < 1 s, drawn as a bounded
//    envelope that keeps the extremes, without markers;
//  - "3pCF all triangles" opens on all triangles (it opened on the equilateral subset);
//  - tick labels are never elided or overlapping (log r axis and configuration index);
//  - symmetric-log axis, jackknife error bars, overlays with a legend, selection rings, the
//    configuration key; state round trip.
#include <QAbstractAxis>
#include <QCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QElapsedTimer>
#include <QGraphicsScene>
#include <QGraphicsSimpleTextItem>
#include <QGraphicsTextItem>
#include <QLabel>
#include <QTimer>
#include <QLegend>
#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>
#include <QtTest>

#include <cmath>

#include "almagest/npcf/configurations.hpp"
#include "almagest/npcf/result.hpp"
#include "almagest/npcf/synthetic.hpp"
#include "views/CorrelationChart.hpp"

using namespace almagest;
using almagest::ui::CorrelationChart;
using Mode = CorrelationChart::Mode;

namespace {

npcf::NpcfResult twoPoint(int nbins, bool log) {
  npcf::NpcfResult r;
  r.statistic = npcf::Statistic::TwoPoint;
  r.order = 2;
  r.edges_per_row = 1;
  r.config.bins.nbins = nbins;
  r.config.bins.rmin = log ? 0.7 : 2;
  r.config.bins.rmax = log ? 180 : 40;
  r.config.bins.scale = log ? npcf::BinScale::Log : npcf::BinScale::Linear;
  for (int b = 0; b < nbins; ++b) {
    r.bins.push_back(static_cast<std::uint8_t>(b));
    r.tuples.push_back(100 + b);
    r.random_tuples.push_back(50);
    r.n.push_back(1.0);
    r.r.push_back(2.0 + b);
    r.estimator.push_back(std::pow(r.config.bins.centre(b) / 5.0, -1.8));
  }
  return r;
}

/// A 4pCF result with `rows` configurations of seeded values spanning decades.
npcf::NpcfResult fourPoint(std::size_t rows, int nbins, std::uint64_t seed, bool parity = false) {
  npcf::NpcfResult r;
  r.statistic = parity ? npcf::Statistic::FourPointParity : npcf::Statistic::FourPoint;
  r.order = 4;
  r.edges_per_row = 6;
  r.config.bins.nbins = nbins;
  r.config.bins.rmin = 5;
  r.config.bins.rmax = 5 + 5.0 * nbins;
  npcf::synthetic::Rng rng(seed);
  r.bins.resize(rows * 6);
  for (std::size_t i = 0; i < rows; ++i) {
    for (int e = 0; e < 6; ++e) r.bins[i * 6 + e] = static_cast<std::uint8_t>((i / (e + 1)) % nbins);
    r.tuples.push_back(10);
    r.random_tuples.push_back(5);
    r.n.push_back(rng.normal());
    r.r.push_back(i % 97 == 5 ? 0.0 : 1.0 + rng.uniform());  // some rows without randoms
    const double mag = std::pow(10.0, -3.0 * rng.uniform());
    r.estimator.push_back(rng.normal() * mag);
    r.zeta_disc.push_back(0.5 * mag);
    r.zeta_conn.push_back(r.estimator.back() - r.zeta_disc.back());
    r.realisable.push_back(1);
    if (parity) r.zeta_odd.push_back(rng.normal() * 1e-3);
  }
  return r;
}

QLineSeries* mainLine(QChart* c) {
  QLineSeries* best = nullptr;
  for (QAbstractSeries* s : c->series())
    if (auto* l = qobject_cast<QLineSeries*>(s); l && s->type() == QAbstractSeries::SeriesTypeLine)
      if (!best || l->count() > best->count()) best = l;
  return best;
}

}  // namespace

class TestNpcfChart : public QObject {
  Q_OBJECT

private slots:
  void switchingPlotsLeavesOnlyTheNewAxes() {
    // Switching xi(r) -> r^2 xi(r) from inside a slot (as the demo and a workspace restore do)
    // left the old axes' labels and titles on screen: Qt Charts deletes a removed axis's
    // graphics later, and the deferred delete never ran there.
    CorrelationChart chart;
    chart.resize(700, 600);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    QStringList texts;
    QEventLoop loop;
    QTimer::singleShot(0, &loop, [&] {
      chart.setResult(twoPoint(10, false));
      const Mode seq[] = {Mode::Xi, Mode::R2Xi, Mode::Xi, Mode::R2Xi};
      for (Mode m : seq) {
        chart.setMode(m);
        QTest::qWait(50);
      }
      for (QGraphicsItem* it : chart.chartView()->scene()->items())
        if (auto* t = dynamic_cast<QGraphicsTextItem*>(it); t && t->isVisible()) texts << t->toPlainText();
      loop.quit();
    });
    loop.exec();
    QCOMPARE(chart.chart()->axes(Qt::Horizontal).size(), 1);
    QCOMPARE(chart.chart()->axes(Qt::Vertical).size(), 1);
    QCOMPARE(chart.chart()->axes(Qt::Horizontal).front()->titleText(), QStringLiteral("r [Mpc/h]"));
    QCOMPARE(chart.chart()->axes(Qt::Vertical).front()->titleText(), QStringLiteral("r² ξ(r) [(Mpc/h)²]"));
    QCOMPARE(texts.count(QStringLiteral("r [Mpc/h]")), 1);             // one x title on screen
    QCOMPARE(texts.count(QStringLiteral("r² ξ(r) [(Mpc/h)²]")), 1);
    QVERIFY2(!texts.contains(QStringLiteral("ξ(r)")), qPrintable(texts.join(QLatin1Char('|'))));  // xi's y title gone
    QCOMPARE(texts.count(QStringLiteral("0")), 2);  // one zero per axis ("0 0" was two x axes)

    // Index plots of a 4pCF the same way: one axis per orientation, the new plot's titles.
    chart.setResult(fourPoint(300, 4, 3, true));
    for (Mode m : {Mode::ZetaConnIndex, Mode::ZetaOddIndex, Mode::ZetaIndex, Mode::ZetaDiscIndex}) chart.setMode(m);
    QCOMPARE(chart.chart()->axes(Qt::Horizontal).size(), 1);
    QCOMPARE(chart.chart()->axes(Qt::Vertical).size(), 1);
    QCOMPARE(chart.chart()->axes(Qt::Horizontal).front()->titleText(), QStringLiteral("configuration index"));
    QVERIFY(chart.chart()->axes(Qt::Vertical).front()->titleText().startsWith(QStringLiteral("ζ_disc")));
  }

  void longTitleAndCaptionFit() {
    // A narrow chart breaks the title into lines instead of cutting it, and elides the caption
    // with the whole text in its tooltip.
    CorrelationChart chart;
    chart.resize(340, 500);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    chart.setResult(fourPoint(300, 4, 5, true));
    chart.setMode(Mode::ZetaIndex);
    QTest::qWait(20);
    QVERIFY2(chart.chart()->title().contains(QStringLiteral("<br>")), qPrintable(chart.chart()->title()));
    QVERIFY(!chart.chart()->title().contains(QStringLiteral("…")));
    auto* caption = chart.findChildren<QLabel*>().back();
    for (QLabel* l : chart.findChildren<QLabel*>())
      if (l->toolTip().contains(QStringLiteral("points"))) caption = l;
    QVERIFY(caption->toolTip().contains(QStringLiteral("rows without randoms")));
    QVERIFY(caption->fontMetrics().horizontalAdvance(caption->text()) <= caption->width());
  }

  void titleFontDoesNotGrow() {
    CorrelationChart chart;
    chart.setResult(fourPoint(300, 4, 1, true));
    const QFont f0 = chart.chart()->titleFont();
    for (int k = 0; k < 12; ++k) chart.setMode(k % 2 ? Mode::ZetaConnIndex : Mode::ZetaOddIndex);
    chart.setResult(twoPoint(12, true));
    chart.setMode(Mode::R2Xi);
    QCOMPARE(chart.chart()->titleFont().pointSizeF(), f0.pointSizeF());
    QVERIFY(chart.chart()->titleFont().bold());
  }

  void largeResultRendersInBoundedTime() {
    // (A full 16-bin 4pCF has 723,776 rows; the run drew 165,660 markers.)
    const std::size_t rows = 165660;  // the configurations of the report in issue 21
    const npcf::NpcfResult r = fourPoint(rows, 16, 7, true);
    CorrelationChart chart;
    chart.resize(900, 600);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    QElapsedTimer t;
    t.start();
    chart.setResult(r);
    chart.setMode(Mode::ZetaOddIndex);
    chart.setMode(Mode::ZetaIndex);
    const QPixmap frame = chart.grab();  // a real paint of the chart and its key
    const qint64 ms = t.elapsed();
    qInfo("165,660 configurations: set, two plot switches and a paint in %lld ms (%d points drawn of %d)",
          static_cast<long long>(ms), chart.drawnPointCount(), chart.pointCount());
    QVERIFY2(ms < 1000, qPrintable(QStringLiteral("took %1 ms").arg(ms)));
    QVERIFY(!frame.isNull());
    int withRandoms = 0;
    double ymax = -HUGE_VAL, ymin = HUGE_VAL;
    for (std::size_t i = 0; i < rows; ++i)
      if (r.r[i] > 0) {
        ++withRandoms;
        ymax = std::max(ymax, r.estimator[i]);
        ymin = std::min(ymin, r.estimator[i]);
      }
    QCOMPARE(chart.pointCount(), withRandoms);
    QVERIFY(chart.drawnPointCount() <= CorrelationChart::kMaxDrawnPoints);
    QCOMPARE(chart.drawnMarkerCount(), 0);
    // The envelope keeps the extremes of the full curve.
    QLineSeries* line = mainLine(chart.chart());
    QVERIFY(line);
    double dmax = -HUGE_VAL, dmin = HUGE_VAL;
    for (const QPointF& p : line->points()) {
      dmax = std::max(dmax, p.y());
      dmin = std::min(dmin, p.y());
    }
    QCOMPARE(dmax, chart.axisY(ymax));
    QCOMPARE(dmin, chart.axisY(ymin));
  }

  void allTrianglesOpenOnAllTriangles() {
    npcf::NpcfResult r;
    r.statistic = npcf::Statistic::ThreePoint;
    r.order = 3;
    r.edges_per_row = 3;
    r.config.bins.nbins = 4;
    npcf::TriangleTable tt(4);
    for (std::uint32_t k = 0; k < tt.rows(); ++k) {
      const auto b = tt.bins(k);
      r.bins.insert(r.bins.end(), b.begin(), b.end());
      r.tuples.push_back(1);
      r.random_tuples.push_back(1);
      r.n.push_back(1);
      r.r.push_back(1);
      r.estimator.push_back(0.1 * (k + 1));
    }
    CorrelationChart chart;
    chart.setResult(r);
    QCOMPARE(chart.mode(), Mode::ZetaIndex);
    QCOMPARE(chart.pointCount(), static_cast<int>(tt.rows()));
    QVERIFY(chart.keyView()->isVisibleTo(&chart));
    chart.setMode(Mode::ZetaEquilateral);
    QCOMPARE(chart.pointCount(), 4);
    QVERIFY(!chart.keyView()->isVisibleTo(&chart));
    r.statistic = npcf::Statistic::ThreePointEquilateral;
    chart.setResult(r);
    QCOMPARE(chart.mode(), Mode::ZetaEquilateral);
  }

  void logAxisLabelsAreNumbersThatFit() {
    CorrelationChart chart;
    chart.resize(520, 400);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    chart.setResult(twoPoint(20, true));
    QTest::qWait(50);
    chart.setMode(Mode::R2Xi);
    chart.setMode(Mode::Xi);
    QTest::qWait(50);
    auto* ax = qobject_cast<QCategoryAxis*>(chart.xAxis());
    QVERIFY(ax);
    QVERIFY(!ax->truncateLabels());
    const QStringList labels = ax->categoriesLabels();
    QVERIFY2(labels.size() >= 3, qPrintable(labels.join(',')));
    const QFontMetricsF fm(ax->labelsFont());
    const double width = chart.chart()->plotArea().width();
    double prevRight = -1e9;
    for (const QString& l : labels) {
      bool ok = false;
      const double v = l.toDouble(&ok);
      QVERIFY2(ok && v > 0, qPrintable(l));
      QVERIFY(!l.contains(QStringLiteral("...")) && !l.contains(QChar(0x2026)));
      QVERIFY(std::abs(ax->endValue(l) - std::log10(v)) < 1e-12);  // at log10 of its value
      const double px = (ax->endValue(l) - ax->min()) / (ax->max() - ax->min()) * width;
      QVERIFY2(px - fm.horizontalAdvance(l) / 2 >= prevRight, qPrintable(l));
      prevRight = px + fm.horizontalAdvance(l) / 2;
    }
    // The points are the bin centres, unscaled.
    QCOMPARE(chart.points().front().x(), npcf::NpcfResult(twoPoint(20, true)).config.bins.centre(0));
  }

  void indexTicksFitTheirLabels() {
    CorrelationChart chart;
    chart.resize(420, 400);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    chart.setResult(fourPoint(45475, 10, 3));
    QTest::qWait(50);
    auto* ax = qobject_cast<QValueAxis*>(chart.xAxis());
    QVERIFY(ax);
    QVERIFY(!ax->truncateLabels());
    const QFontMetricsF fm(ax->labelsFont());
    const double pxPerTick = ax->tickInterval() / (ax->max() - ax->min()) * chart.chart()->plotArea().width();
    QVERIFY2(pxPerTick > fm.horizontalAdvance(QStringLiteral("45475")),
             qPrintable(QStringLiteral("%1 px per tick").arg(pxPerTick)));
  }

  void symlogErrorsOverlaysAndSelection() {
    CorrelationChart chart;
    const npcf::NpcfResult r = fourPoint(900, 5, 11);
    chart.setResult(r, QStringLiteral("data"));
    QVERIFY(chart.symlogY());  // |zeta| spans three decades
    const double c = chart.symlogThreshold();
    QCOMPARE(chart.axisY(0.0), 0.0);
    QCOMPARE(chart.axisY(c), std::log10(2.0));
    QVERIFY(std::abs(chart.axisY(-9 * c) + 1.0) < 1e-12);
    QVERIFY(chart.keyView()->chart()->series().size() == 6);  // six edge bins as a staircase

    npcf::NpcfResult mock = fourPoint(900, 5, 12);
    QVERIFY(chart.addOverlay(mock, QStringLiteral("mock")));
    QVERIFY(!chart.addOverlay(fourPoint(66, 3, 1), QStringLiteral("other")));  // rows differ
    QCOMPARE(chart.overlayCount(), 1);
    QVERIFY(chart.chart()->legend()->isVisible());

    chart.setSelectedRows({3, 10, 5});  // 5: no randoms, not plotted
    int rings = -1;
    for (QAbstractSeries* s : chart.chart()->series())
      if (s->objectName() == QLatin1String("selection")) rings = static_cast<QScatterSeries*>(s)->count();
    QCOMPARE(rings, 2);
    QCOMPARE(chart.rowNear(10.2), 10);
    QCOMPARE(chart.rowNear(5.4), 6);  // 5 is not plotted: the nearest plotted row

    const QJsonObject st = chart.save_state();
    CorrelationChart other;
    other.setResult(r);
    other.restore_state(st);
    QCOMPARE(other.selectedRows(), (QList<int>{3, 5, 10}));
    QCOMPARE(other.mode(), chart.mode());

    // Jackknife errors on xi(r): one bar per point, spanning +-sigma.
    CorrelationChart xi;
    const npcf::NpcfResult two = twoPoint(8, false);
    std::vector<double> sigma;
    for (int b = 0; b < 8; ++b) sigma.push_back(0.01 * (b + 1));
    const int before = static_cast<int>(xi.chart()->series().size());
    xi.setResult(two);
    const int plain = static_cast<int>(xi.chart()->series().size());
    xi.setErrors(sigma);
    QCOMPARE(static_cast<int>(xi.chart()->series().size()), plain + 8);
    int found = 0;
    for (QAbstractSeries* s : xi.chart()->series()) {
      auto* l = qobject_cast<QLineSeries*>(s);
      if (!l || l->count() != 2 || l->at(0).x() != l->at(1).x()) continue;
      for (int b = 0; b < 8; ++b)
        if (l->at(0).x() == two.config.bins.centre(b)) {
          QVERIFY(std::abs((l->at(1).y() - l->at(0).y()) - 2 * sigma[b]) < 1e-12);
          ++found;
        }
    }
    QCOMPARE(found, 8);
    Q_UNUSED(before);
  }
};

QTEST_MAIN(TestNpcfChart)
#include "test_npcf_chart.moc"
