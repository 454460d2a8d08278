// The Moving objects window's candidate panel and vetting exports (issue 25):
//  - the Curves tab plots psi_e and phi_e sampled along the selected candidate's predicted track,
//    L_e = psi_e / sqrt(phi_e) and the running Z, equal to the planes sampled along the track
//    computed here (x0 + floor(vx t + dx + 0.5), independent of the engine's shift tables); the
//    running Z ends at the search's unclipped score;
//  - a stack with a TAN WCS (written as an HDF5 cube and opened): the pointer readout shows the
//    RA/Dec of the pixel, equal to the gnomonic inverse computed here;
//  - candidates marked real are exported as ADES PSV and MPC 80-column rows; the ADES rows parse
//    back to the exposure times and the RA/Dec of the continuous tracks (computed here), one row
//    per observed epoch of each real candidate and none of the others; vetting marks survive a
//    save and a reload after a new search;
//  - without a WCS or without real marks the export is refused with a message.
// No VTK here: runs under Xvfb (ctest) or QT_QPA_PLATFORM=offscreen.
#include <QAction>
#include <QChartView>
#include <QApplication>
#include <QImage>
#include <QLabel>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "almagest/stack/observations.hpp"
#include "almagest/stack/psiphi.hpp"
#include "almagest/stack/search.hpp"
#include "almagest/stack/stack_io.hpp"
#include "almagest/stack/synthetic.hpp"
#include "app/Export.hpp"
#include "stackview/CandidateCurves.hpp"
#include "stackview/StackImageView.hpp"
#include "stackview/StackJobs.hpp"
#include "stackview/StackWindow.hpp"
#include "tan_cards.hpp"

using almagest::ui::StackWindow;
using almagest::ui::stackview::Verdict;
using State = almagest::ui::JobRunner::State;
namespace stk = almagest::stack;

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kRa0 = 150.25, kDec0 = 2.2, kArcsec = 0.4;

QString testTmpRoot() {
  const QString env = qEnvironmentVariable("ALMAGEST_TEST_TMP");
  return env.isEmpty() ? QDir::tempPath() : env;
}

State waitJob(StackWindow& w, QSignalSpy& finished, int timeoutMs = 120000) {
  if (finished.isEmpty() && !finished.wait(timeoutMs)) return State::Idle;
  return finished.takeFirst().at(0).value<State>();
}

/// 24 exposures of 64 x 64 over 10 days, two movers on the 9 x 9 grid of settings() (as
/// test_ui_stack); no common curve, so a stack written to a file and read back (which carries no
/// curve) is searched exactly as generated.
stk::SyntheticConfig config() {
  stk::SyntheticConfig c;
  c.n_exp = 24;
  c.width = 64;
  c.height = 64;
  c.seed = 4343;
  c.baseline_days = 10.0;
  c.common_curve = false;
  c.movers = {stk::Mover{20.0, 30.0, 1.5, -1.0, 16.0, 0}, stk::Mover{44.0, 30.0, -2.0, 1.0, 14.0, 0}};
  return c;
}

almagest::ui::stackview::SearchSettings settings() {
  almagest::ui::stackview::SearchSettings s;
  s.vxMin = -2, s.vxMax = 2, s.nvx = 9;
  s.vyMin = -2, s.vyMax = 2, s.nvy = 9;
  s.minObs = 12;
  s.clusterRadius = 2.0;
  s.stampRadius = 6;
  return s;
}

bool search(StackWindow& w, QString* why) {
  w.setSearchSettings(settings());
  QSignalSpy finished(&w, &StackWindow::jobFinished);
  if (!w.runSearch() || waitJob(w, finished) != State::Completed) {
    *why = w.currentJob() ? w.currentJob()->errorMessage() : QStringLiteral("search did not finish");
    return false;
  }
  return true;
}

/// FITS TAN header cards of the test's WCS (tests/common/tan_cards.hpp).
std::string tanCards(int w, int h) { return almagest::test::tan_cards(kRa0, kDec0, kArcsec, w, h); }

/// The gnomonic inverse of tanCards for 0-based pixel (x, y): standard coordinates (xi, eta)
/// from the CD matrix, then alpha = alpha0 + atan2(xi, cos d0 - eta sin d0).
void tanSky(double x, double y, int w, int h, double& ra, double& dec) {
  const double xi = (-kArcsec / 3600) * (x + 1 - 0.5 * (w + 1)) * kPi / 180;
  const double eta = (kArcsec / 3600) * (y + 1 - 0.5 * (h + 1)) * kPi / 180;
  const double d0 = kDec0 * kPi / 180;
  const double den = std::cos(d0) - eta * std::sin(d0);
  ra = kRa0 + std::atan2(xi, den) * 180 / kPi;
  if (ra < 0) ra += 360;
  if (ra >= 360) ra -= 360;
  dec = std::atan2(std::sin(d0) + eta * std::cos(d0), std::hypot(xi, den)) * 180 / kPi;
}

/// MJD of a calendar date (days from 1858-11-17), independent of the engine.
double mjdOf(int y, int m, double d) {
  const int a = (14 - m) / 12, yy = y + 4800 - a, mm = m + 12 * a - 3;
  const long jdn = long(std::floor(d)) + (153 * mm + 2) / 5 + 365L * yy + yy / 4 - yy / 100 + yy / 400 - 32045;
  return double(jdn) - 2400001.0 + (d - std::floor(d));
}

/// Opens `path` in `w`.
bool open(StackWindow& w, const QString& path, QString* why) {
  QSignalSpy finished(&w, &StackWindow::jobFinished);
  if (!w.openStack(path) || waitJob(w, finished) != State::Completed) {
    *why = w.currentJob() ? w.currentJob()->errorMessage() : QStringLiteral("open did not finish");
    return false;
  }
  return true;
}

}  // namespace

class TestStackCandidatePanel : public QObject {
  Q_OBJECT

private slots:
  void curvesEqualPlanesAlongTrack();
  void wcsReadoutAndObservationExport();
};

void TestStackCandidatePanel::curvesEqualPlanesAlongTrack() {
  StackWindow w;
  w.setInteractiveErrors(false);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  {
    QSignalSpy finished(&w, &StackWindow::jobFinished);
    stk::SyntheticConfig c = config();
    c.common_curve = true;  // in memory the curve travels with the stack: the track must add it
    QVERIFY(w.newSyntheticStack(c));
    QCOMPARE(waitJob(w, finished), State::Completed);
  }
  QString why;
  QVERIFY2(search(w, &why), qPrintable(why));
  QVERIFY(w.candidates().size() >= 2);
  QVERIFY(w.detailTabs());
  w.detailTabs()->setCurrentWidget(w.candidateCurves());
  const auto& out = *w.searchOutput();
  const stk::PsiPhi& p = *out.psiphi;
  const auto& st = w.stack()->stack;
  QCOMPARE(w.stack()->curveDx.size(), st.size());
  for (int k = 0; k < 2; ++k) {
    QVERIFY(w.selectCandidate(k));
    const stk::Candidate& c = w.candidates()[std::size_t(k)];
    QVector<QPointF> psi, phi, lik;
    double A = 0, B = 0;
    const double ref = st.mjd.front();  // the reference time is exposure 0's
    for (std::size_t e = 0; e < st.size(); ++e) {
      const double t = st.mjd[e] - ref;
      const long X = c.x + long(std::floor(c.vx * t + w.stack()->curveDx[e] + 0.5));
      const long Y = c.y + long(std::floor(c.vy * t + w.stack()->curveDy[e] + 0.5));
      if (X < 0 || Y < 0 || X >= p.width || Y >= p.height) continue;
      const std::size_t i = e * p.pixels() + std::size_t(Y) * std::size_t(p.width) + std::size_t(X);
      if (!(p.phi[i] > 0)) continue;
      psi << QPointF(t, p.psi[i]);
      phi << QPointF(t, p.phi[i]);
      lik << QPointF(t, p.psi[i] / std::sqrt(double(p.phi[i])));
      A += p.psi[i];
      B += p.phi[i];
    }
    const auto* curves = w.candidateCurves();
    QCOMPARE(curves->psiPoints().size(), psi.size());
    QVERIFY(psi.size() >= 12);
    for (int i = 0; i < psi.size(); ++i) {
      QCOMPARE(curves->psiPoints()[i].x(), psi[i].x());
      QCOMPARE(curves->psiPoints()[i].y(), psi[i].y());
      QCOMPARE(curves->phiPoints()[i].y(), phi[i].y());
      QVERIFY(std::fabs(curves->likelihoodPoints()[i].y() - lik[i].y()) <= 1e-12 * (1 + std::fabs(lik[i].y())));
    }
    const double zUnclipped = out.result.filtered ? out.result.groups[std::size_t(k)].z_unclipped : c.z;
    const double zRun = curves->runningZPoints().back().y();
    qInfo("candidate %d: %d epochs on the curves, running Z %.5f, search Z (unclipped) %.5f, here %.5f", k,
          int(psi.size()), zRun, zUnclipped, A / std::sqrt(B));
    QVERIFY(std::fabs(zRun - A / std::sqrt(B)) <= 1e-9 * std::fabs(zRun));
    QVERIFY(std::fabs(zRun - zUnclipped) <= 1e-4 * std::fabs(zUnclipped));
  }
  // Each chart has the export entry in its context menu, and exports as drawn.
  QTemporaryDir dir(testTmpRoot() + QStringLiteral("/stack_curves_XXXXXX"));
  QVERIFY(dir.isValid());
  for (QWidget* v : {static_cast<QWidget*>(w.candidateCurves()->samplesView()),
                     static_cast<QWidget*>(w.candidateCurves()->likelihoodView())}) {
    QVERIFY(v->findChild<QAction*>(QStringLiteral("exportAction")));
    const QString png = dir.filePath(v->objectName() + QStringLiteral(".png"));
    QString err;
    QVERIFY2(almagest::ui::app::exportView(v, png, {QStringLiteral("curves"), QString()}, &err), qPrintable(err));
    const QImage img(png);
    std::set<QRgb> colours;
    for (int y = 0; y < img.height(); y += 2)
      for (int x = 0; x < img.width(); x += 2) colours.insert(img.pixel(x, y));
    QVERIFY2(colours.size() > 10, qPrintable(png));
  }
  QVERIFY(w.selectCandidate(-1));
  QVERIFY(w.candidateCurves()->psiPoints().isEmpty());
}

void TestStackCandidatePanel::wcsReadoutAndObservationExport() {
  QTemporaryDir dir(testTmpRoot() + QStringLiteral("/stack_panel_XXXXXX"));
  QVERIFY(dir.isValid());
  stk::SyntheticStack syn = stk::make_synthetic(config());
  syn.stack.wcs_header = tanCards(64, 64);
  const QString cube = dir.filePath(QStringLiteral("wcs_stack.h5"));
  stk::write_stack_hdf5(cube.toStdString(), syn.stack);

  StackWindow w;
  w.setInteractiveErrors(false);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QString why;
  QVERIFY2(open(w, cube, &why), qPrintable(why));
  QVERIFY(!w.stack()->stack.wcs_header.empty());

  // Pointer readout: RA/Dec of the pixel under the pointer.
  auto* readout = w.findChild<QLabel*>(QStringLiteral("readout"));
  QVERIFY(readout);
  for (const auto& [x, y] : std::vector<std::pair<int, int>>{{0, 0}, {10, 50}, {63, 63}, {31, 32}}) {
    emit w.exposureView()->hovered(x, y);
    double ra = 0, dec = 0;
    const QString text = readout->text();
    const QRegularExpression re(QStringLiteral("RA ([0-9.]+)° +Dec (-?[0-9.]+)°"));
    const auto m = re.match(text);
    QVERIFY2(m.hasMatch(), qPrintable(text));
    tanSky(x, y, 64, 64, ra, dec);
    qInfo("pixel (%d, %d): readout %s, TAN here %.7f %.7f", x, y, qPrintable(m.captured(0)), ra, dec);
    QVERIFY(std::fabs(m.captured(1).toDouble() - ra) <= 6e-7);
    QVERIFY(std::fabs(m.captured(2).toDouble() - dec) <= 6e-7);
  }

  QVERIFY2(search(w, &why), qPrintable(why));
  {  // the best-Z view's readout: the origin's RA/Dec too
    emit w.bestZView()->hovered(10, 50);
    const auto m = QRegularExpression(QStringLiteral("origin \\(10, 50\\)  RA ([0-9.]+)° +Dec (-?[0-9.]+)°")).match(readout->text());
    QVERIFY2(m.hasMatch(), qPrintable(readout->text()));
    double ra = 0, dec = 0;
    tanSky(10, 50, 64, 64, ra, dec);
    QVERIFY(std::fabs(m.captured(1).toDouble() - ra) <= 6e-7 && std::fabs(m.captured(2).toDouble() - dec) <= 6e-7);
  }
  const auto cands = w.candidates();
  QVERIFY(cands.size() >= 2);
  // Nothing marked real yet: refused.
  const QString psv = dir.filePath(QStringLiteral("real.psv")), mpc = dir.filePath(QStringLiteral("real.mpc"));
  QVERIFY(!w.exportRealObservations(psv));
  QVERIFY(!QFile::exists(psv));
  // The candidates at the two movers are real, every other one bogus.
  std::vector<int> real;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    bool atMover = false;
    for (const auto& m : syn.movers)
      atMover = atMover || (std::fabs(cands[i].x - m.x0) <= 1.5 && std::fabs(cands[i].y - m.y0) <= 1.5 &&
                            std::fabs(cands[i].vx - m.vx) <= 0.1 && std::fabs(cands[i].vy - m.vy) <= 0.1);
    QVERIFY(w.markCandidate(int(i), atMover ? Verdict::Real : Verdict::Bogus));
    if (atMover) real.push_back(int(i));
  }
  QCOMPARE(real.size(), std::size_t(2));
  QVERIFY(w.setCandidateNote(real[0], QStringLiteral("clean \"track\", both halves")));
  QVERIFY(w.exportRealObservations(psv));
  QVERIFY(w.exportRealObservations(mpc));

  // ADES back: per trkSub (track_id 0, 1 in candidate order), times and positions of the continuous track.
  const double ref = syn.stack.mjd.front();
  std::ifstream in(psv.toStdString());
  std::string line;
  std::getline(in, line);
  QCOMPARE(line, std::string("# version=2022"));
  std::vector<std::string> cols;
  std::map<std::string, int> rowsOf;
  double worstT = 0, worstP = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line[0] == '!') continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, '|')) f.push_back(cell);
    if (line.back() == '|') f.push_back("");
    if (cols.empty()) {
      cols = f;
      continue;
    }
    QCOMPARE(f.size(), cols.size());
    int k = -1;
    for (std::size_t q = 0; q < real.size(); ++q)
      if (f[2] == stk::track_id(q, stk::ObservationOptions{})) k = int(q);
    QVERIFY2(k >= 0, f[2].c_str());
    const stk::Candidate& c = cands[std::size_t(real[std::size_t(k)])];
    int Y, M, D, h, mi;
    double s;
    QCOMPARE(std::sscanf(f[5].c_str(), "%d-%d-%dT%d:%d:%lfZ", &Y, &M, &D, &h, &mi, &s), 6);
    const double mjd = mjdOf(Y, M, D) + (h * 3600 + mi * 60 + s) / 86400.0;
    std::size_t e = 0;
    for (std::size_t q = 1; q < syn.stack.size(); ++q)
      if (std::fabs(syn.stack.mjd[q] - mjd) < std::fabs(syn.stack.mjd[e] - mjd)) e = q;
    worstT = std::max(worstT, std::fabs(syn.stack.mjd[e] - mjd));
    const double t = syn.stack.mjd[e] - ref;
    double ra = 0, dec = 0;
    tanSky(c.x + c.vx * t, c.y + c.vy * t, 64, 64, ra, dec);
    worstP = std::max({worstP, std::fabs(std::stod(f[6]) - ra), std::fabs(std::stod(f[7]) - dec)});
    ++rowsOf[f[2]];
  }
  // One row per observed epoch (phi > 0 at the nearest pixel of the track), for the real ones only.
  const stk::PsiPhi& p = *w.searchOutput()->psiphi;
  QCOMPARE(rowsOf.size(), real.size());
  for (std::size_t k = 0; k < real.size(); ++k) {
    const stk::Candidate& c = cands[std::size_t(real[k])];
    int observed = 0;
    for (std::size_t e = 0; e < syn.stack.size(); ++e) {
      const double t = syn.stack.mjd[e] - ref;
      const long X = c.x + long(std::floor(c.vx * t + 0.5)), Y = c.y + long(std::floor(c.vy * t + 0.5));
      if (X >= 0 && Y >= 0 && X < 64 && Y < 64) observed += p.phi[e * p.pixels() + std::size_t(Y) * 64 + std::size_t(X)] > 0;
    }
    QCOMPARE(rowsOf[stk::track_id(k, stk::ObservationOptions{})], observed);
  }
  const int rows1 = rowsOf[stk::track_id(0, {})], rows2 = rowsOf[stk::track_id(1, {})];
  qInfo("ADES: %d + %d rows; worst time %.2e d, worst position %.2e deg", rows1, rows2, worstT, worstP);
  QVERIFY(worstT <= 0.5e-3 / 86400 + 1e-9);
  QVERIFY(worstP <= 2e-9);
  // MPC: 80 columns, as many lines.
  std::ifstream im(mpc.toStdString());
  int lines = 0;
  while (std::getline(im, line)) {
    QCOMPARE(line.size(), std::size_t(80));
    ++lines;
  }
  QCOMPARE(lines, rows1 + rows2);

  // The vetting survives a save, a new search (which clears the marks) and a reload.
  const QString vet = dir.filePath(QStringLiteral("vetting.ecsv"));
  QVERIFY(w.saveVetting(vet));
  const auto before = w.vetting();
  QVERIFY2(search(w, &why), qPrintable(why));
  for (const auto& v : w.vetting()) QVERIFY(v.verdict == Verdict::None);
  QVERIFY(w.loadVetting(vet));
  QCOMPARE(w.vetting().size(), before.size());
  for (std::size_t i = 0; i < before.size(); ++i) QVERIFY(w.vetting()[i] == before[i]);
  QCOMPARE(w.vetting()[std::size_t(real[0])].note, QStringLiteral("clean \"track\", both halves"));

  // Without a WCS: refused, naming why.
  {
    QSignalSpy finished(&w, &StackWindow::jobFinished);
    QVERIFY(w.newSyntheticStack(config()));
    QCOMPARE(waitJob(w, finished), State::Completed);
  }
  QVERIFY2(search(w, &why), qPrintable(why));
  QVERIFY(w.markCandidate(0, Verdict::Real));
  QVERIFY(!w.exportRealObservations(dir.filePath(QStringLiteral("none.psv"))));
  QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("none.psv"))));
  emit w.exposureView()->hovered(5, 5);
  QVERIFY(!readout->text().contains(QStringLiteral("RA")));
}

QTEST_MAIN(TestStackCandidatePanel)
#include "test_stack_candidate_panel.moc"
