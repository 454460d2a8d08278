// The configuration explorer (issue 21): the table's rows equal the result file's (written and
// read back through HDF5 and gramsci text), shapes and the realisability filter against an
// independent count, a 10-bin 4pCF (45,475 configurations) sorts and filters in < 100 ms, and
// selection in the table selects in the chart and back.
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QItemSelectionModel>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include <array>
#include <cmath>

#include "almagest/npcf/configurations.hpp"
#include "almagest/npcf/read_gramsci.hpp"
#include "almagest/npcf/result.hpp"
#include "almagest/npcf/synthetic.hpp"
#include "npcf/ConfigurationExplorer.hpp"
#include "npcf/ConfigurationModel.hpp"
#include "views/CorrelationChart.hpp"

using namespace almagest;
using almagest::ui::ConfigurationExplorer;
using almagest::ui::ConfigurationModel;
using Column = ConfigurationModel::Column;

namespace {

QString tmpRoot() {
  const QString env = qEnvironmentVariable("ALMAGEST_TEST_TMP");
  return env.isEmpty() ? QDir::tempPath() : env;
}

/// A 4pCF (parity) result over the canonical rows of `nbins` bins, seeded values.
npcf::NpcfResult tetraResult(int nbins, std::uint64_t seed) {
  npcf::TetraTable tt(nbins);
  npcf::NpcfResult r;
  r.statistic = npcf::Statistic::FourPointParity;
  r.config.statistic = r.statistic;
  r.order = 4;
  r.edges_per_row = 6;
  r.config.bins.nbins = nbins;
  r.config.bins.rmin = 10;
  r.config.bins.rmax = 10 + 4.0 * nbins;
  npcf::synthetic::Rng rng(seed);
  for (std::uint32_t k = 0; k < tt.rows(); ++k) {
    const auto& c = tt.canonical(k);
    r.bins.insert(r.bins.end(), c.begin(), c.end());
    std::array<double, 6> d;
    for (int e = 0; e < 6; ++e) d[e] = r.config.bins.centre(c[e]);
    r.realisable.push_back(npcf::cayley_menger_positive(d) ? 1 : 0);
    r.tuples.push_back(1000 + k);
    r.random_tuples.push_back(500 + k);
    r.n.push_back(rng.normal());
    r.r.push_back(1 + rng.uniform());
    r.estimator.push_back(r.n.back() / r.r.back());
    r.zeta_disc.push_back(0.1 * rng.normal());
    r.zeta_conn.push_back(r.estimator.back() - r.zeta_disc.back());
    r.n_odd.push_back(0.01 * rng.normal());
    r.r_odd.push_back(0.001 * rng.normal());
    r.zeta_odd.push_back(r.n_odd.back() / r.r.back());
    r.degenerate.push_back(0);
  }
  r.xi_internal.assign(static_cast<std::size_t>(nbins), 0.5);
  r.ndata = 100;
  r.nrandom = 300;
  return r;
}

double cell(const ConfigurationModel& m, int row, Column c) {
  return m.data(m.index(row, m.section(c)), Qt::UserRole).toDouble();
}

}  // namespace

class TestNpcfExplorer : public QObject {
  Q_OBJECT

private slots:
  void rowsEqualTheResultFile() {
    QTemporaryDir tmp(tmpRoot() + QStringLiteral("/npcf_explorer_XXXXXX"));
    QVERIFY(tmp.isValid());
    const npcf::NpcfResult r = tetraResult(4, 5);
    const std::string h5 = tmp.filePath(QStringLiteral("r.h5")).toStdString();
    const std::string exact = tmp.filePath(QStringLiteral("r_exact.txt")).toStdString();
    const std::string txt = tmp.filePath(QStringLiteral("r.txt")).toStdString();
    npcf::write_hdf5(r, h5);
    npcf::write_text_exact(r, exact);
    npcf::write_gramsci(r, txt);  // Fortran e14.7: 7 significant digits
    const std::vector<std::pair<npcf::NpcfResult, double>> files{
        {npcf::read_hdf5(h5), 0.0}, {npcf::read_gramsci(exact), 0.0}, {npcf::read_gramsci(txt), 1e-6}};
    for (const auto& [back, tol] : files) {
      ConfigurationModel m;
      m.setResult(back);
      QCOMPARE(m.rowCount(), static_cast<int>(r.rows()));
      QCOMPARE(m.rowCount(), 276);  // (4^6 + 9 4^4 + 14 4^2)/24
      auto same = [tol = tol](double a, double b) { return tol == 0 ? a == b : std::abs(a - b) <= tol * std::abs(b) + 1e-300; };
      for (int i = 0; i < m.rowCount(); ++i) {
        QVERIFY(same(cell(m, i, Column::Estimator), r.estimator[i]));
        QVERIFY(same(cell(m, i, Column::N), r.n[i]));
        QVERIFY(same(cell(m, i, Column::R), r.r[i]));
        QVERIFY(same(cell(m, i, Column::ZetaDisc), r.zeta_disc[i]));
        QVERIFY(same(cell(m, i, Column::ZetaConn), r.zeta_conn[i]));
        QVERIFY(same(cell(m, i, Column::ZetaOdd), r.zeta_odd[i]));
        QCOMPARE(m.data(m.index(i, m.section(Column::Realisable)), Qt::UserRole).toBool(), r.realisable[i] != 0);
        QString bins;
        for (int e = 0; e < 6; ++e) bins += (e ? QStringLiteral(" ") : QString()) + QString::number(r.bins[i * 6 + e]);
        QCOMPARE(m.data(m.index(i, m.section(Column::Bins))).toString(), bins);
      }
      // Text files carry no tuple counts: no columns of zeros.
      QCOMPARE(m.section(Column::Tuples) >= 0, tol == 0 && &back == &files[0].first);
    }
  }

  void sortAndFilter10Bins() {
    const npcf::NpcfResult r = tetraResult(10, 9);
    QCOMPARE(r.rows(), std::size_t(45475));
    ConfigurationExplorer ex;
    ex.setResult(r);
    ConfigurationModel* m = ex.model();
    QCOMPARE(m->rowCount(), 45475);
    QAbstractItemModel* view = ex.table()->model();

    // Sort by zeta (descending): < 100 ms, and in order.
    const int est = m->section(Column::Estimator);
    QElapsedTimer t;
    t.start();
    ex.table()->sortByColumn(est, Qt::DescendingOrder);
    const qint64 sortMs = t.elapsed();
    for (int i = 1; i < view->rowCount(); ++i)
      QVERIFY(view->index(i - 1, est).data(Qt::UserRole).toDouble() >= view->index(i, est).data(Qt::UserRole).toDouble());

    // Filter: realisable, isosceles, sides within [14, 40] Mpc/h.
    t.restart();
    ex.sideMinBox()->setValue(14);
    ex.sideMaxBox()->setValue(40);
    ex.shapeBox()->setCurrentIndex(ex.shapeBox()->findData(int(ConfigurationModel::Isosceles)));
    ex.realisableBox()->setChecked(true);
    const qint64 filterMs = t.elapsed();
    qInfo("45,475 configurations: sort %lld ms, three filters %lld ms", static_cast<long long>(sortMs),
          static_cast<long long>(filterMs));
    QVERIFY2(sortMs < 100, qPrintable(QString::number(sortMs)));
    QVERIFY2(filterMs < 100, qPrintable(QString::number(filterMs)));

    // Independent count of the filtered rows.
    int expected = 0;
    for (std::size_t i = 0; i < r.rows(); ++i) {
      std::array<double, 6> s;
      std::array<int, 6> b;
      for (int e = 0; e < 6; ++e) {
        b[e] = r.bins[i * 6 + e];
        s[e] = r.config.bins.centre(b[e]);
      }
      std::sort(b.begin(), b.end());
      const bool allEqual = b[0] == b[5];
      bool repeated = false;
      for (int e = 1; e < 6; ++e) repeated = repeated || b[e] == b[e - 1];
      const double lo = *std::min_element(s.begin(), s.end()), hi = *std::max_element(s.begin(), s.end());
      if (r.realisable[i] && repeated && !allEqual && lo >= 14 && hi <= 40) ++expected;
    }
    QVERIFY(expected > 100);
    QCOMPARE(view->rowCount(), expected);
    for (int i = 1; i < view->rowCount(); ++i)  // still sorted
      QVERIFY(view->index(i - 1, est).data(Qt::UserRole).toDouble() >= view->index(i, est).data(Qt::UserRole).toDouble());
  }

  void shapesOf3pcf() {
    npcf::NpcfResult r;
    r.statistic = npcf::Statistic::ThreePoint;
    r.order = 3;
    r.edges_per_row = 3;
    r.config.bins = {};
    r.config.bins.nbins = 6;
    r.config.bins.rmin = 0;
    r.config.bins.rmax = 60;
    npcf::TriangleTable tt(6);
    for (std::uint32_t k = 0; k < tt.rows(); ++k) {
      const auto b = tt.bins(k);
      r.bins.insert(r.bins.end(), b.begin(), b.end());
      r.tuples.push_back(k);
      r.random_tuples.push_back(k);
      r.n.push_back(k);
      r.r.push_back(k + 1);
      r.estimator.push_back(double(k) / (k + 1));
    }
    ConfigurationModel m;
    m.setResult(r);
    int eq = 0, iso = 0, sq = 0;
    for (std::uint32_t k = 0; k < tt.rows(); ++k) {
      const auto b = tt.bins(k);  // centres 5, 15, ..., 55
      const double c0 = 10.0 * b[0] + 5, c1 = 10.0 * b[1] + 5;
      const bool e = b[0] == b[2], i = !e && (b[0] == b[1] || b[1] == b[2]), s = c0 <= 0.5 * c1;
      eq += e; iso += i; sq += s;
      QCOMPARE(bool(m.shape(int(k)) & ConfigurationModel::Equilateral), e);
      QCOMPARE(bool(m.shape(int(k)) & ConfigurationModel::Isosceles), i);
      QCOMPARE(bool(m.shape(int(k)) & ConfigurationModel::Squeezed), s);
    }
    QCOMPARE(eq, 6);
    QCOMPARE(iso, 30);  // 6 * 5 pairs (a, a, b) and (a, b, b)
    QVERIFY(sq > 0);
    QCOMPARE(m.section(Column::Realisable), -1);  // no flag for triangles
    QCOMPARE(m.section(Column::ZetaOdd), -1);
  }

  void selectionReachesTheChartAndBack() {
    const npcf::NpcfResult r = tetraResult(4, 21);
    ConfigurationExplorer ex;
    almagest::ui::CorrelationChart chart;
    ex.setResult(r);
    chart.setResult(r);
    QObject::connect(&ex, &ConfigurationExplorer::rowsSelected, &chart, &almagest::ui::CorrelationChart::setSelectedRows);
    QObject::connect(&chart, &almagest::ui::CorrelationChart::rowClicked, &ex, [&](int row) { ex.selectRows({row}); });
    QSignalSpy spy(&ex, &ConfigurationExplorer::rowsSelected);
    ex.table()->sortByColumn(ex.model()->section(Column::Estimator), Qt::AscendingOrder);
    // Select the first two rows of the sorted view.
    QItemSelection sel(ex.table()->model()->index(0, 0), ex.table()->model()->index(1, 0));
    ex.table()->selectionModel()->select(sel, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    QVERIFY(spy.count() >= 1);
    QList<int> expected;
    int lo = 0;
    for (std::size_t i = 1; i < r.rows(); ++i) if (r.estimator[i] < r.estimator[lo]) lo = int(i);
    int lo2 = lo == 0 ? 1 : 0;
    for (std::size_t i = 0; i < r.rows(); ++i) if (int(i) != lo && r.estimator[i] < r.estimator[lo2]) lo2 = int(i);
    expected << lo << lo2;
    std::sort(expected.begin(), expected.end());
    QCOMPARE(ex.selectedRows(), expected);
    QCOMPARE(chart.selectedRows(), expected);
    // A click in the chart selects in the table (no echo signal).
    spy.clear();
    emit chart.rowClicked(42);
    QCOMPARE(ex.selectedRows(), (QList<int>{42}));
    QCOMPARE(spy.count(), 0);
    // State round trip.
    const QJsonObject st = ex.save_state();
    ConfigurationExplorer other;
    other.setResult(r);
    other.restore_state(st);
    QCOMPARE(other.selectedRows(), (QList<int>{42}));
  }
};

QTEST_MAIN(TestNpcfExplorer)
#include "test_npcf_explorer.moc"
