// The score cube Z(x, y, v) (engine score_cube and the Moving objects window's VTK view):
//  - engine: the cube equals the CPU scan's dense scores bit for bit, integer and fractional
//    mode, for the whole bank and image and for a velocity subset inside a region; bad requests
//    are refused naming the field;
//  - the demo stack (24 x 96 x 96, 3 movers at SNR 12, the window's default grid): the cube peaks
//    at each injected trajectory (origin within 1 px, velocity within one grid step), and its
//    global maximum is one of them;
//  - the cube at every candidate equals the search's score of that trajectory (before sigma-G);
//  - the isosurface at the threshold encloses every candidate (the connected piece nearest it has
//    bounds that contain its cube position, and is a local blob, not the whole cube);
//  - the volume and slice frames are not blank, and slices at different planes differ.
// VTK: needs an OpenGL context (Xvfb under ctest).
#include <QApplication>
#include <QElapsedTimer>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QOpenGLContext>
#include <QSignalSpy>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <set>

#include "almagest/core/error.hpp"
#include "app/Export.hpp"
#include "almagest/stack/psiphi.hpp"
#include "almagest/stack/score_cube.hpp"
#include "almagest/stack/search.hpp"
#include "almagest/stack/synthetic.hpp"
#include "stackview/ScoreCubeView.hpp"
#include "stackview/StackJobs.hpp"
#include "stackview/StackWindow.hpp"
#include "views/VtkView.hpp"

using almagest::ui::StackWindow;
using almagest::ui::stackview::ScoreCubeView;
using State = almagest::ui::JobRunner::State;
namespace stk = almagest::stack;

namespace {

State waitJob(StackWindow& w, QSignalSpy& finished, int timeoutMs = 180000) {
  if (finished.isEmpty() && !finished.wait(timeoutMs)) return State::Idle;
  return finished.takeFirst().at(0).value<State>();
}

int distinctColours(const QImage& img) {
  std::set<QRgb> s;
  for (int y = 0; y < img.height(); y += 2)
    for (int x = 0; x < img.width(); x += 2) s.insert(img.pixel(x, y));
  return static_cast<int>(s.size());
}

float scanScore(float a, float b) { return b > 0.0f ? a / std::sqrt(b) : 0.0f; }

/// The demo's stack (DemoReport: 24 exposures of 96 x 96, 3 movers at SNR 12) searched with the
/// window's default settings, then the whole cube computed. False with `why` on failure.
bool demoCube(StackWindow& w, QString* why) {
  QSignalSpy finished(&w, &StackWindow::jobFinished);
  w.setSearchSettings(almagest::ui::stackview::SearchSettings{});
  if (!w.newSyntheticStack(24, 96, 96, StackWindow::kDemoSeed, 3, 12.0) || waitJob(w, finished) != State::Completed) {
    *why = QStringLiteral("stack not made");
    return false;
  }
  if (!w.runSearch() || waitJob(w, finished) != State::Completed) {
    *why = w.currentJob() ? w.currentJob()->errorMessage() : QStringLiteral("search did not finish");
    return false;
  }
  QElapsedTimer clock;
  clock.start();
  if (!w.computeScoreCube(w.cubeRequest(StackWindow::CubeVelocities::All, 0)) ||
      waitJob(w, finished) != State::Completed) {
    *why = QStringLiteral("score cube not computed");
    return false;
  }
  if (w.scoreCube())
    qInfo("score cube %d x %d x %d of %d exposures: %lld ms (job, wall)", w.scoreCube()->nx, w.scoreCube()->ny,
          w.scoreCube()->nv(), w.exposureCount(), clock.elapsed());
  return w.scoreCube() != nullptr;
}

}  // namespace

class TestStackCube : public QObject {
  Q_OBJECT

private slots:
  void engineCubeEqualsDenseScan();
  void badRequestsNameTheField();
  void demoCubePeaksAtInjectedMovers();
  void isosurfaceEnclosesCandidatesAndFramesDraw();

private:
  bool haveGl() const {
    QOpenGLContext ctx;
    return QGuiApplication::platformName() == QLatin1String("xcb") && ctx.create();
  }
};

void TestStackCube::engineCubeEqualsDenseScan() {
  stk::SyntheticConfig c;
  c.n_exp = 12;
  c.width = 40;
  c.height = 32;
  c.seed = 77;
  c.movers = {stk::Mover{12.0, 14.0, 1.5, -1.0, 12.0, 0}};
  const stk::SyntheticStack syn = stk::make_synthetic(c);
  const stk::PsiPhi p = stk::compute_psiphi(syn.stack, almagest::JobContext{});
  for (const bool frac : {false, true}) {
    stk::SearchConfig cfg;
    cfg.bank = stk::TrajectoryBank::cartesian(-2, 2, 7, -2, 2, 5);
    cfg.curve_dx = syn.curve_dx;
    cfg.curve_dy = syn.curve_dy;
    cfg.dense = true;
    cfg.threads = 2;
    cfg.threshold_z = 5;
    cfg.fractional = frac;
    if (frac) cfg.psf_rho = stk::psf_correlations(syn.stack);
    const stk::SearchPlan plan = stk::make_plan(cfg, p.mjd, p.width, p.height, almagest::JobContext{});
    const stk::SearchResult r = plan.execute(stk::encode(p, stk::Encoding::Fp32), almagest::JobContext{});
    QCOMPARE(r.dense_a.size(), std::size_t(35) * p.pixels());
    stk::ScoreCubeRequest all;
    all.threads = 3;
    const stk::ScoreCube cube = stk::score_cube(p, plan, all, almagest::JobContext{});
    QCOMPARE(cube.nx, 40);
    QCOMPARE(cube.ny, 32);
    QCOMPARE(cube.nv(), 35);
    QCOMPARE(cube.threshold_z, plan.threshold());
    std::size_t differ = 0;
    for (int v = 0; v < 35; ++v)
      for (int y = 0; y < 32; ++y)
        for (int x = 0; x < 40; ++x) {
          const std::size_t o = (std::size_t(v) * 32 + std::size_t(y)) * 40 + std::size_t(x);
          differ += cube.at(x, y, v) != scanScore(r.dense_a[o], r.dense_b[o]);
        }
    QCOMPARE(differ, std::size_t(0));
    // A subset of velocities (out of order) inside a region: the same values, re-indexed.
    stk::ScoreCubeRequest q;
    q.velocities = {17, 3, 34, 0};
    q.x0 = 5;
    q.y0 = 9;
    q.nx = 20;
    q.ny = 11;
    const stk::ScoreCube sub = stk::score_cube(p, plan, q, almagest::JobContext{});
    QCOMPARE(sub.nv(), 4);
    QCOMPARE(sub.vx[0], cfg.bank.vx[17]);
    QCOMPARE(sub.vy[2], cfg.bank.vy[34]);
    for (int iv = 0; iv < 4; ++iv)
      for (int iy = 0; iy < q.ny; ++iy)
        for (int ix = 0; ix < q.nx; ++ix) differ += sub.at(ix, iy, iv) != cube.at(q.x0 + ix, q.y0 + iy, q.velocities[iv]);
    QCOMPARE(differ, std::size_t(0));
    QCOMPARE(sub.plane_of(34), 2);
    QCOMPARE(sub.plane_of(5), -1);
    // The Cartesian row and column helpers.
    const auto row = stk::bank_row(cfg.bank, 2), col = stk::bank_column(cfg.bank, 6);
    QCOMPARE(row.size(), std::size_t(7));
    QCOMPARE(col.size(), std::size_t(5));
    for (auto v : row) QCOMPARE(cfg.bank.vy[std::size_t(v)], cfg.bank.vy[14]);
    for (auto v : col) QCOMPARE(cfg.bank.vx[std::size_t(v)], 2.0);
    qInfo("%s mode: %d x %d x %d cube equals the dense scan", frac ? "fractional" : "integer", cube.nx, cube.ny, cube.nv());
  }
}

void TestStackCube::badRequestsNameTheField() {
  stk::ScoreCubeRequest q;
  q.velocities = {0, 40};
  auto has = [](const std::vector<std::string>& m, const char* s) {
    for (const auto& x : m)
      if (x.find(s) != std::string::npos) return true;
    return false;
  };
  QVERIFY(has(stk::validate(q, 40, 32, 35), "velocities: index 40"));
  q.velocities = {3, 3};
  QVERIFY(has(stk::validate(q, 40, 32, 35), "given twice"));
  q.velocities = {};
  q.x0 = 30;
  q.nx = 20;
  QVERIFY(has(stk::validate(q, 40, 32, 35), "nx: the region"));
  q = {};
  q.y0 = -1;
  QVERIFY(has(stk::validate(q, 40, 32, 35), "y0:"));
  q = {};
  QVERIFY(stk::validate(q, 40, 32, 35).empty());
  QVERIFY(has(stk::validate(q, 8192, 8192, 4096), "larger than the limit"));
  stk::TrajectoryBank list = stk::TrajectoryBank::list({1.0}, {2.0});
  QVERIFY_THROWS_EXCEPTION(almagest::ConfigError, stk::bank_row(list, 0));
}

void TestStackCube::demoCubePeaksAtInjectedMovers() {
  StackWindow w;
  w.setInteractiveErrors(false);
  w.setConfirmCloseDuringJob(false);
  QString why;
  QVERIFY2(demoCube(w, &why), qPrintable(why));
  const stk::ScoreCube& cube = *w.scoreCube();
  const stk::SearchConfig& cfg = w.searchOutput()->config;
  QCOMPARE(cube.nx, 96);
  QCOMPARE(cube.ny, 96);
  QCOMPARE(std::size_t(cube.nv()), cfg.bank.size());
  const double stepX = (cfg.bank.grid_vx.back() - cfg.bank.grid_vx.front()) / (cfg.bank.nvx - 1);
  const double stepY = (cfg.bank.grid_vy.back() - cfg.bank.grid_vy.front()) / (cfg.bank.nvy - 1);
  QCOMPARE(w.stack()->movers.size(), std::size_t(3));
  // Global maximum: at one of the movers.
  const auto gmax = std::max_element(cube.z.begin(), cube.z.end()) - cube.z.begin();
  const int gx = int(gmax % 96), gy = int((gmax / 96) % 96), gv = int(gmax / (96 * 96));
  bool globalAtMover = false;
  for (const stk::Mover& m : w.stack()->movers) {
    // The peak of the cube over origins within 6 px of the mover (every velocity).
    float best = -1e30f;
    int bx = 0, by = 0, bv = 0;
    for (int v = 0; v < cube.nv(); ++v)
      for (int y = std::max(0, int(m.y0) - 6); y <= std::min(95, int(m.y0) + 6); ++y)
        for (int x = std::max(0, int(m.x0) - 6); x <= std::min(95, int(m.x0) + 6); ++x)
          if (cube.at(x, y, v) > best) best = cube.at(x, y, v), bx = x, by = y, bv = v;
    const double vx = cube.vx[std::size_t(bv)], vy = cube.vy[std::size_t(bv)];
    qInfo("mover (%.2f, %.2f) v (%.3f, %.3f): cube peak Z %.2f at (%d, %d) v (%.3f, %.3f)", m.x0, m.y0, m.vx, m.vy, best, bx,
          by, vx, vy);
    QVERIFY(std::fabs(bx - m.x0) <= 1.0 && std::fabs(by - m.y0) <= 1.0);
    QVERIFY(std::fabs(vx - m.vx) <= stepX + 1e-9 && std::fabs(vy - m.vy) <= stepY + 1e-9);
    QVERIFY(best >= cube.threshold_z);
    globalAtMover = globalAtMover || (std::abs(gx - bx) <= 1 && std::abs(gy - by) <= 1 && gv == bv);
  }
  qInfo("global maximum Z %.2f at (%d, %d) plane %d", cube.z[std::size_t(gmax)], gx, gy, gv);
  QVERIFY(globalAtMover);

  // The cube at each candidate is the search's score of that trajectory (before sigma-G).
  const stk::SearchResult& r = *w.result();
  QVERIFY(!r.candidates.empty());
  std::vector<int> idx;
  const auto pos = w.candidatesInCube(cube, &idx);
  QCOMPARE(pos.size(), r.candidates.size());
  for (std::size_t k = 0; k < pos.size(); ++k) {
    const stk::Candidate& c = r.candidates[std::size_t(idx[k])];
    const double searchZ = r.filtered ? r.groups[std::size_t(idx[k])].z_unclipped : c.z;
    QCOMPARE(cube.at(pos[k][0], pos[k][1], pos[k][2]), static_cast<float>(searchZ));
  }
  qInfo("%zu candidates: cube value == search score", pos.size());

  // The dock's subsets: the grid row (fixed vy) and column (fixed vx) through the selected
  // candidate in a +-8 px region are the full cube's values at the same trajectories.
  const auto full = std::make_shared<stk::ScoreCube>(cube);
  QVERIFY(w.selectCandidate(0));
  const stk::Candidate& c0 = r.candidates.front();
  for (const auto which : {StackWindow::CubeVelocities::SelectedRow, StackWindow::CubeVelocities::SelectedColumn}) {
    const stk::ScoreCubeRequest q = w.cubeRequest(which, 8);
    QCOMPARE(q.velocities.size(), std::size_t(which == StackWindow::CubeVelocities::SelectedRow ? cfg.bank.nvx : cfg.bank.nvy));
    QSignalSpy finished(&w, &StackWindow::jobFinished);
    QVERIFY(w.computeScoreCube(q));
    QCOMPARE(waitJob(w, finished), State::Completed);
    const stk::ScoreCube& sub = *w.scoreCube();
    QCOMPARE(sub.x0, std::max(0, c0.x - 8));
    QCOMPARE(sub.y0, std::max(0, c0.y - 8));
    QCOMPARE(sub.nx, std::min(96, c0.x + 9) - sub.x0);
    for (int iv = 0; iv < sub.nv(); ++iv) {
      const double fixed = which == StackWindow::CubeVelocities::SelectedRow ? sub.vy[std::size_t(iv)] : sub.vx[std::size_t(iv)];
      QCOMPARE(fixed, which == StackWindow::CubeVelocities::SelectedRow ? c0.vy : c0.vx);
      for (int iy = 0; iy < sub.ny; ++iy)
        for (int ix = 0; ix < sub.nx; ++ix)
          QCOMPARE(sub.at(ix, iy, iv), full->at(sub.x0 + ix, sub.y0 + iy, sub.velocities[std::size_t(iv)]));
    }
    std::vector<int> in;
    const auto p = w.candidatesInCube(sub, &in);
    QVERIFY(!in.empty() && in.front() == 0);
    QCOMPARE(p.front()[0], c0.x - sub.x0);
    QCOMPARE(p.front()[1], c0.y - sub.y0);
    QCOMPARE(sub.velocities[std::size_t(p.front()[2])], c0.v);
  }
  // Without a selection a subset is refused, naming why.
  QVERIFY(w.selectCandidate(-1));
  QVERIFY_THROWS_EXCEPTION(almagest::ConfigError, w.cubeRequest(StackWindow::CubeVelocities::SelectedRow, 0));
}

void TestStackCube::isosurfaceEnclosesCandidatesAndFramesDraw() {
  if (!haveGl()) QSKIP("needs an OpenGL context (xcb under Xvfb)");
  StackWindow w;
  w.setInteractiveErrors(false);
  w.setConfirmCloseDuringJob(false);
  w.resize(1280, 780);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QString why;
  QVERIFY2(demoCube(w, &why), qPrintable(why));
  ScoreCubeView* view = w.showScoreCube();
  QVERIFY(view);
  QVERIFY(view->cube() == w.scoreCube());
  QTRY_VERIFY_WITH_TIMEOUT(view->vtkView()->isGlReady(), 10000);
  view->setMode(ScoreCubeView::Mode::Volume);
  view->setIsosurfaceVisible(true);
  QVERIFY(view->isosurfacePoints() > 0);
  QCOMPARE(view->markersShown(), int(view->candidates().size()));
  const stk::ScoreCube& cube = *w.scoreCube();
  QCOMPARE(view->candidates().size(), w.candidates().size());
  for (const auto& c : view->candidates()) {
    QVERIFY(cube.at(c[0], c[1], c[2]) >= cube.threshold_z);
    const auto p = view->world(c[0], c[1], c[2]);
    const auto b = view->isosurfacePieceBounds(p);
    for (int a = 0; a < 3; ++a)
      QVERIFY2(b[2 * a] <= p[a] && p[a] <= b[2 * a + 1],
               qPrintable(QStringLiteral("candidate (%1, %2, plane %3) outside its isosurface piece [%4, %5] on axis %6")
                              .arg(c[0]).arg(c[1]).arg(c[2]).arg(b[2 * a]).arg(b[2 * a + 1]).arg(a)));
    // A blob around the candidate, not a surface around the whole cube.
    QVERIFY(b[1] - b[0] < 0.5 * cube.nx && b[3] - b[2] < 0.5 * cube.ny);
  }
  // Frames: the volume, then two x-y slices at different planes.
  QTest::qWait(200);
  const QImage volume = view->vtkView()->grabFramebuffer();
  const int cv = distinctColours(volume);
  const auto& c0 = view->candidates().front();
  view->setSlice(ScoreCubeView::SliceAxis::XY, c0[2]);
  QTest::qWait(100);
  const QImage s1 = view->vtkView()->grabFramebuffer();
  view->setSlice(ScoreCubeView::SliceAxis::XY, (c0[2] + cube.nv() / 2) % cube.nv());
  QTest::qWait(100);
  const QImage s2 = view->vtkView()->grabFramebuffer();
  view->setSlice(ScoreCubeView::SliceAxis::XV, c0[1]);
  QTest::qWait(100);
  const QImage s3 = view->vtkView()->grabFramebuffer();
  qInfo("frames %dx%d: volume %d colours, x-y slices %d and %d, x-v slice %d", volume.width(), volume.height(), cv,
        distinctColours(s1), distinctColours(s2), distinctColours(s3));
  QVERIFY2(cv > 20, "the volume frame is blank");
  {  // File > Export score cube view writes the rendered frame (app::exportView of the VtkView)
    const QString png = QDir(qEnvironmentVariable("ALMAGEST_TEST_TMP", QDir::tempPath())).filePath(QStringLiteral("score_cube.png"));
    QString err;
    view->setMode(ScoreCubeView::Mode::Volume);
    QTest::qWait(100);
    QVERIFY2(almagest::ui::app::exportView(view->vtkView(), png, {QStringLiteral("score cube"), QString()}, &err), qPrintable(err));
    QVERIFY2(distinctColours(QImage(png)) > 20, qPrintable(png));
    QFile::remove(png);
    view->setSlice(ScoreCubeView::SliceAxis::XV, c0[1]);
  }
  QVERIFY2(distinctColours(s1) > 20 && distinctColours(s3) > 20, "a slice frame is blank");
  QVERIFY(s1 != s2 && s1 != volume && s3 != s1);
  // Markers: all candidates over the volume; on a slice only those it contains.
  auto count = [&](int axis, int index) {
    int n = 0;
    for (const auto& c : view->candidates()) n += c[std::size_t(axis)] == index;
    return n;
  };
  QCOMPARE(view->markersShown(), count(1, c0[1]));  // the x-v slice at the candidate's row
  view->setSlice(ScoreCubeView::SliceAxis::XY, c0[2]);
  QCOMPARE(view->markersShown(), count(2, c0[2]));
  QVERIFY(view->markersShown() >= 1);
  view->setSlice(ScoreCubeView::SliceAxis::XV, c0[1]);
  int cols = 0, rows = 0;
  const auto xv = view->sliceValues(&cols, &rows);
  QCOMPARE(cols, cube.nx);
  QCOMPARE(rows, cube.nv());
  QCOMPARE(xv[std::size_t(c0[2]) * std::size_t(cols) + std::size_t(c0[0])], cube.at(c0[0], c0[1], c0[2]));
}

int main(int argc, char** argv) {
  almagest::ui::VtkView::prepareApplication();
  QApplication app(argc, argv);
  TestStackCube t;
  return QTest::qExec(&t, argc, argv);
}

#include "test_stack_cube.moc"
