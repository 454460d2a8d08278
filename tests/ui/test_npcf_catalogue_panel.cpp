// The catalogue view's panel (issue 21, neighbour graph): a point's index typed in the Point box
// draws its neighbour edges, and the edges drawn (read back from the scene's geometry) are a
// brute-force neighbour list of that point computed here, each in its radial bin's colour; a
// configuration row then draws the triangles (3pCF) or tetrahedra (4pCF) through it, each counted
// here by brute force; a double-click picks a point near the cursor; colour by weight and the
// clipping box reach the scene; the state round-trips; the N-point window has the panel in its
// Catalogue dock, fed with the loaded catalogues and the job form's binning.
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QDockWidget>
#include <QGroupBox>
#include <QSignalSpy>
#include <QSpinBox>
#include <QtTest>

#include <array>
#include <cmath>
#include <map>

#include "MainWindow.hpp"
#include "almagest/npcf/configurations.hpp"
#include "almagest/npcf/synthetic.hpp"
#include "npcf/CataloguePanel.hpp"
#include "npcf/ConfigurationGeometry.hpp"
#include "panels/JobPanel.hpp"
#include "views/PointCloudScene.hpp"
#include "views/VtkView.hpp"

#include <vtkCamera.h>
#include <vtkRenderer.h>

using namespace almagest;
using namespace almagest::ui;

namespace {

using P3 = std::array<double, 3>;

P3 at(const io::Catalogue& d, const io::Catalogue& r, std::size_t i) {
  return i < d.size() ? P3{d.x[i], d.y[i], d.z[i]} : P3{r.x[i - d.size()], r.y[i - d.size()], r.z[i - d.size()]};
}
double dist(const P3& a, const P3& b) {
  return std::sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]));
}
// Bin of a separation, from the edges (not Binning::bin_of): -1 outside (rmin, rmax).
int binOf(double d, double rmin, double rmax, int nbins) {
  if (!(d > rmin && d < rmax)) return -1;
  return std::min(nbins - 1, static_cast<int>(std::floor((d - rmin) / (rmax - rmin) * nbins)));
}

npcf::NpcfResult triangles(const npcf::Binning& b) {
  npcf::NpcfResult r;
  r.statistic = npcf::Statistic::ThreePoint;
  r.order = 3;
  r.edges_per_row = 3;
  r.config.bins = b;
  for (int i = 0; i < b.nbins; ++i)
    for (int j = i; j < b.nbins; ++j)
      for (int k = j; k < b.nbins; ++k) {
        r.bins.insert(r.bins.end(), {std::uint8_t(i), std::uint8_t(j), std::uint8_t(k)});
        for (auto* v : {&r.n, &r.r, &r.estimator}) v->push_back(0.1);
        r.tuples.push_back(1);
        r.random_tuples.push_back(1);
      }
  return r;
}

}  // namespace

class TestNpcfCataloguePanel : public QObject {
  Q_OBJECT

private slots:
  void typedIndexDrawsTheBruteForceNeighbours() {
    const io::Catalogue data = npcf::synthetic::neyman_scott(500, 5, 3.0, 80.0, 11);
    const io::Catalogue randoms = npcf::synthetic::uniform(700, 80.0, 12);
    const auto dp = std::make_shared<const io::Catalogue>(data);
    const auto rp = std::make_shared<const io::Catalogue>(randoms);
    npcf::Binning b;
    b.rmin = 3;
    b.rmax = 18;
    b.nbins = 5;
    VtkView view;
    view.resize(600, 500);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    PointCloudScene scene(&view);
    scene.setCatalogues(dp.get(), rp.get());
    CataloguePanel panel(&scene, &view);
    panel.setCatalogues(dp, rp);
    panel.setBinningSource([&](QString*) { return std::optional<npcf::Binning>(b); });
    panel.show();
    const std::size_t total = data.size() + randoms.size();
    QCOMPARE(panel.pointBox()->maximum(), int(total) - 1);

    for (std::size_t hub : {std::size_t(7), std::size_t(333), data.size() + 41}) {
      // Typed, as a user types it: digits, then Enter.
      panel.pointBox()->setFocus();
      panel.pointBox()->clear();
      QTest::keyClicks(panel.pointBox(), QString::number(hub));
      QTest::keyClick(panel.pointBox(), Qt::Key_Return);
      QCOMPARE(scene.neighbourHub(), static_cast<long long>(hub));
      // Brute force: every other point within (rmin, rmax) of the hub, with its bin.
      const P3 c = at(data, randoms, hub);
      std::map<std::size_t, int> brute;
      for (std::size_t j = 0; j < total; ++j) {
        if (j == hub) continue;
        const int bin = binOf(dist(c, at(data, randoms, j)), b.rmin, b.rmax, b.nbins);
        if (bin >= 0) brute[j] = bin;
      }
      QVERIFY(!brute.empty());
      const std::vector<PointCloudScene::Spoke> drawn = scene.drawnSpokes();
      QCOMPARE(drawn.size(), brute.size());
      QCOMPARE(scene.neighbourEdges(), brute.size());
      // Each drawn edge ends on a brute-force neighbour (matched by position), in its bin's colour.
      std::map<std::size_t, int> seen;
      for (const auto& s : drawn) {
        std::size_t match = total;
        for (const auto& [j, bin] : brute)
          if (dist(s.end, at(data, randoms, j)) < 1e-4) match = j;  // drawn as float
        QVERIFY2(match < total, "a drawn edge ends on a point that is not a neighbour");
        const auto want = bin_colour(brute[match], b.nbins);
        for (int k = 0; k < 3; ++k) QVERIFY(std::abs(s.rgb[k] - 255.0 * want[k]) <= 1.0);
        seen[match] = brute[match];
      }
      QCOMPARE(seen, brute);
      QVERIFY(panel.statusText().contains(QStringLiteral("%1 neighbours").arg(brute.size())));
    }

    // Out of range: a message, nothing drawn.
    QVERIFY(!panel.showNeighbours(static_cast<long long>(total)));
    QVERIFY(panel.statusText().contains(QString::number(total)));
    QCOMPARE(scene.neighbourEdges(), std::size_t(0));

    // A 3pCF result: the triangles through the hub of one configuration (brute force here).
    const npcf::NpcfResult tri = triangles(b);
    panel.setResult(&tri);
    const std::size_t hub = 333;
    QVERIFY(panel.showNeighbours(hub));
    std::map<std::array<int, 3>, int> count;
    const P3 c = at(data, randoms, hub);
    for (std::size_t j = 0; j < total; ++j)
      for (std::size_t k = j + 1; k < total; ++k) {
        if (j == hub || k == hub) continue;
        std::array<int, 3> t{binOf(dist(c, at(data, randoms, j)), b.rmin, b.rmax, b.nbins),
                             binOf(dist(c, at(data, randoms, k)), b.rmin, b.rmax, b.nbins),
                             binOf(dist(at(data, randoms, j), at(data, randoms, k)), b.rmin, b.rmax, b.nbins)};
        if (t[0] < 0 || t[1] < 0 || t[2] < 0) continue;
        std::sort(t.begin(), t.end());
        ++count[t];
      }
    QVERIFY(!count.empty());
    const auto best = std::max_element(count.begin(), count.end(), [](auto& x, auto& y) { return x.second < y.second; });
    int row = -1;
    for (std::size_t i = 0; i < tri.rows(); ++i)
      if (int(tri.bins[3 * i]) == best->first[0] && int(tri.bins[3 * i + 1]) == best->first[1] && int(tri.bins[3 * i + 2]) == best->first[2])
        row = int(i);
    QVERIFY(row >= 0);
    panel.configurationBox()->setValue(row);
    QCOMPARE(panel.configuration(), row);
    QVERIFY(panel.graph());
    QCOMPARE(int(panel.graph()->tuplesFound), best->second);
    QCOMPARE(scene.tupleEdges(), std::size_t(best->second));  // one edge (a, b) per triangle
    QVERIFY(panel.statusText().contains(QStringLiteral("%1 triangles").arg(best->second)));

    // A 4pCF result: the tetrahedra through the hub of one configuration (brute force over the
    // hub's neighbours, canonical edge bins 12 13 14 23 24 34 with the hub as vertex 1).
    npcf::TetraTable tt(b.nbins);
    npcf::NpcfResult tet;
    tet.statistic = npcf::Statistic::FourPoint;
    tet.order = 4;
    tet.edges_per_row = 6;
    tet.config.bins = b;
    for (std::uint32_t k = 0; k < tt.rows(); ++k) {
      const auto& cb = tt.canonical(k);
      tet.bins.insert(tet.bins.end(), cb.begin(), cb.end());
      tet.tuples.push_back(1);
    }
    std::vector<std::size_t> nb;
    for (std::size_t j = 0; j < total; ++j)
      if (j != hub && binOf(dist(c, at(data, randoms, j)), b.rmin, b.rmax, b.nbins) >= 0) nb.push_back(j);
    std::map<std::array<int, 6>, int> tcount;
    auto pb = [&](std::size_t x, std::size_t y) { return binOf(dist(at(data, randoms, x), at(data, randoms, y)), b.rmin, b.rmax, b.nbins); };
    for (std::size_t x = 0; x < nb.size(); ++x)
      for (std::size_t y = x + 1; y < nb.size(); ++y)
        for (std::size_t z = y + 1; z < nb.size(); ++z) {
          const std::array<int, 6> raw{pb(hub, nb[x]), pb(hub, nb[y]), pb(hub, nb[z]), pb(nb[x], nb[y]), pb(nb[x], nb[z]), pb(nb[y], nb[z])};
          if (*std::min_element(raw.begin(), raw.end()) < 0) continue;
          int sign = 0;
          ++tcount[npcf::TetraTable::canonicalise(raw, sign)];
        }
    QVERIFY(!tcount.empty());
    const auto tbest = std::max_element(tcount.begin(), tcount.end(), [](auto& x, auto& y) { return x.second < y.second; });
    int trow = -1;
    for (std::uint32_t k = 0; k < tt.rows(); ++k) {
      bool same = true;
      for (int e = 0; e < 6; ++e) same = same && int(tt.canonical(k)[e]) == tbest->first[e];
      if (same) trow = int(k);
    }
    QVERIFY(trow >= 0);
    panel.setResult(&tet);
    QVERIFY(panel.showNeighbours(hub));
    panel.configurationBox()->setValue(trow);
    QCOMPARE(int(panel.graph()->tuplesFound), tbest->second);
    QCOMPARE(scene.tupleEdges(), std::size_t(3 * std::min<int>(tbest->second, 5000)));  // ab, ac, bc of each
    QVERIFY(panel.statusText().contains(QStringLiteral("%1 tetrahedra").arg(tbest->second)));
    panel.setResult(&tri);
    QVERIFY(panel.showNeighbours(hub));
    panel.configurationBox()->setValue(row);

    // Colour by weight and the clip box reach the scene.
    panel.colourBox()->setCurrentIndex(1);
    QCOMPARE(scene.colourBy(), PointCloudScene::ColourBy::Weight);
    const auto bounds = scene.pointBounds();
    for (int k = 0; k < 6; ++k) QCOMPARE(panel.clipEdit(k)->value(), std::round(bounds[k] * 100) / 100);
    QVERIFY(!scene.hasClipBox());
    panel.clipGroup()->setChecked(true);
    QVERIFY(scene.hasClipBox());
    panel.clipEdit(1)->setValue(40);
    QCOMPARE(scene.save_state().value(QStringLiteral("clip_box")).toArray().at(1).toDouble(), 40.0);

    // State round trip (a second panel on the same scene).
    const QJsonObject st = panel.save_state();
    CataloguePanel other(&scene, &view);
    other.setCatalogues(dp, rp);
    other.setBinningSource([&](QString*) { return std::optional<npcf::Binning>(b); });
    other.restore_state(st);
    other.setResult(&tri);
    QCOMPARE(other.point(), static_cast<long long>(hub));
    QCOMPARE(other.configuration(), row);
    QCOMPARE(other.colourBox()->currentIndex(), 1);
    QVERIFY(other.clipGroup()->isChecked());
    QCOMPARE(other.clipEdit(1)->value(), 40.0);
  }

  void doubleClickPicksAPoint() {
    const io::Catalogue data = npcf::synthetic::uniform(300, 50.0, 21);
    const auto dp = std::make_shared<const io::Catalogue>(data);
    VtkView view;
    view.resize(500, 400);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    PointCloudScene scene(&view);
    scene.setCatalogues(dp.get(), nullptr);
    CataloguePanel panel(&scene, &view);
    panel.setCatalogues(dp, nullptr);
    npcf::Binning b;
    b.rmin = 1;
    b.rmax = 12;
    b.nbins = 4;
    panel.setBinningSource([&](QString*) { return std::optional<npcf::Binning>(b); });
    (void)view.grabFramebuffer();
    // The screen position of point 123, then a double-click there.
    vtkRenderer* ren = view.renderer();
    ren->SetWorldPoint(data.x[123], data.y[123], data.z[123], 1.0);
    ren->WorldToDisplay();
    double d[3];
    ren->GetDisplayPoint(d);
    const double dpr = view.devicePixelRatioF();
    const QPoint click(int(std::lround(d[0] / dpr)), int(std::lround((view.height() * dpr - 1 - d[1]) / dpr)));
    QTest::mouseDClick(&view, Qt::LeftButton, Qt::NoModifier, click);
    const long long picked = panel.point();
    QVERIFY2(picked >= 0, "nothing picked");
    // The picked point lies under the cursor (within a few pixels); it need not be 123 itself
    // when another point is in front along the ray.
    ren->SetWorldPoint(data.x[picked], data.y[picked], data.z[picked], 1.0);
    ren->WorldToDisplay();
    double e[3];
    ren->GetDisplayPoint(e);
    QVERIFY2(std::hypot(e[0] - d[0], e[1] - d[1]) < 8.0 * dpr, qPrintable(QStringLiteral("%1 %2 vs %3 %4").arg(e[0]).arg(e[1]).arg(d[0]).arg(d[1])));
    QCOMPARE(panel.pointBox()->value(), int(picked));
    QCOMPARE(scene.neighbourHub(), picked);
  }

  void windowHasTheCatalogueDock() {
    MainWindow w;
    w.setInteractiveErrors(false);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.cataloguePanel());
    auto* dock = w.findChild<QDockWidget*>(QStringLiteral("CatalogueDock"));
    QVERIFY(dock);
    QSignalSpy loaded(&w, &MainWindow::cataloguesLoaded);
    QVERIFY(w.openDemoData(false));
    QVERIFY(loaded.wait(20000));
    CataloguePanel* p = w.cataloguePanel();
    const std::size_t total = w.data()->size() + w.randoms()->size();
    QCOMPARE(p->pointBox()->maximum(), int(total) - 1);
    // The form's binning: the neighbours of point 0 within its (rmin, rmax).
    const schema::Values v = w.jobPanel()->values();
    auto num = [&v](const char* k) {
      const schema::Value& x = v.at(k);
      if (auto d = std::get_if<double>(&x)) return *d;
      if (auto i = std::get_if<std::int64_t>(&x)) return double(*i);
      return QString::fromStdString(std::get<std::string>(x)).toDouble();
    };
    const double rmin = num("rmin"), rmax = num("rmax");
    QVERIFY(p->showNeighbours(0));
    std::size_t brute = 0;
    const P3 c = at(*w.data(), *w.randoms(), 0);
    for (std::size_t j = 1; j < total; ++j) {
      const double dd = dist(c, at(*w.data(), *w.randoms(), j));
      brute += dd > rmin && dd < rmax;
    }
    QCOMPARE(w.scene()->neighbourEdges(), brute);
    // A form binning the engine refuses is a message, not a graph.
    schema::Values bad = v;
    bad["rmin"] = rmax + 1.0;
    w.jobPanel()->setValues(bad);
    QVERIFY(!p->showNeighbours(0));
    QVERIFY2(p->statusText().contains(QStringLiteral("rmin")) || p->statusText().contains(QStringLiteral("rmax")), qPrintable(p->statusText()));
  }
};

int main(int argc, char** argv) {
  almagest::ui::VtkView::prepareApplication();
  QApplication app(argc, argv);
  if (QGuiApplication::platformName() != QLatin1String("xcb")) {
    qWarning("test_npcf_catalogue_panel needs the xcb platform (Xvfb): skipped");
    return 0;
  }
  TestNpcfCataloguePanel t;
  return QTest::qExec(&t, argc, argv);
}
#include "test_npcf_catalogue_panel.moc"
