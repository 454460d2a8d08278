#include "app/DemoReport.hpp"

#include <QApplication>
#include <QChart>
#include <QChartView>
#include <QDateTime>
#include <QDir>
#include <QDockWidget>
#include <QSplitter>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFileInfo>
#include <QOpenGLContext>
#include <QSaveFile>
#include <QTemporaryDir>
#include <QTimer>

#include <cmath>

#include "MainWindow.hpp"
#include "almagest/core/provenance.hpp"
#include "almagest/npcf/result.hpp"
#include "app/AppSettings.hpp"
#include "app/Export.hpp"
#include "panels/JobPanel.hpp"
#include "panels/LogPanel.hpp"
#include "sky/SkyMapView.hpp"
#include "sky/SkyMapWindow.hpp"
#include "sky/SkySphereView.hpp"
#include "sky/SpectrumChart.hpp"
#include "stackview/StackImageView.hpp"
#include "stackview/StackWindow.hpp"
#include "views/CorrelationChart.hpp"
#include "views/VtkView.hpp"

namespace almagest::ui::app {

namespace {

namespace npcf = almagest::npcf;
using State = JobRunner::State;

/// Runs the event loop until `sender` emits `signal` (true) or `ms` pass (false).
template <class Sender, class Signal>
bool waitFor(Sender* sender, Signal signal, int ms) {
  QEventLoop loop;
  bool fired = false;
  auto c = QObject::connect(sender, signal, &loop, [&] {
    fired = true;
    loop.quit();
  });
  QTimer::singleShot(ms, &loop, &QEventLoop::quit);
  loop.exec();
  QObject::disconnect(c);
  return fired;
}

/// Waits for a window's next finished job; true when it completed.
template <class Window>
bool waitForJob(Window* w, int ms, QString* why) {
  State state = State::Idle;
  QEventLoop loop;
  auto c = QObject::connect(w, &Window::jobFinished, &loop, [&](State s) {
    state = s;
    loop.quit();
  });
  QTimer::singleShot(ms, &loop, &QEventLoop::quit);
  loop.exec();
  QObject::disconnect(c);
  if (state == State::Completed) return true;
  if (why) *why = state == State::Idle ? QStringLiteral("timed out") : JobRunner::stateName(state);
  return false;
}

void settle(int ms = 150) {
  QElapsedTimer t;
  t.start();
  while (t.elapsed() < ms) QApplication::processEvents(QEventLoop::AllEvents, 20);
}

bool glUsable() {
  QOpenGLContext ctx;
  ctx.setFormat(VtkView::defaultFormat());
  return ctx.create() && ctx.format().version() >= qMakePair(3, 2);
}

struct Report {
  QString dir;
  QString html;
  QStringList problems;

  void figure(QWidget* view, const QString& file, const QString& caption, const QString& provenance) {
    QString error;
    settle();
    if (!exportView(view, dir + QLatin1Char('/') + file, ExportMeta{caption, provenance}, &error)) {
      problems << error;
      html += QStringLiteral("<p class=missing>%1: not drawn (%2)</p>\n").arg(caption.toHtmlEscaped(), error.toHtmlEscaped());
      return;
    }
    html += QStringLiteral("<figure><img src=\"%1\" alt=\"%2\"><figcaption>%2</figcaption></figure>\n")
                .arg(file, caption.toHtmlEscaped());
  }
  void image(const QImage& img, const QString& file, const QString& caption, const QString& provenance) {
    QString error;
    if (!exportImage(img, dir + QLatin1Char('/') + file, ExportMeta{caption, provenance}, &error)) {
      problems << error;
      html += QStringLiteral("<p class=missing>%1: not drawn (%2)</p>\n").arg(caption.toHtmlEscaped(), error.toHtmlEscaped());
      return;
    }
    html += QStringLiteral("<figure class=small><img src=\"%1\" alt=\"%2\"><figcaption>%2</figcaption></figure>\n")
                .arg(file, caption.toHtmlEscaped());
  }
};

QString num(double x, int prec = 4) { return QString::number(x, 'g', prec); }

bool npcfSection(Report& r, MainWindow& w, QString* error, bool withZeta = true) {
  r.html += QStringLiteral("<h2>N-point correlation functions</h2>\n");
  if (!w.openDemoData(true)) {
    *error = QStringLiteral("the demo catalogues were not found (set ALMAGEST_DEMO_DIR)");
    return false;
  }
  QString why;
  // Loading, then the 2pCF job the demo starts once loaded.
  if (!waitForJob(&w, 120000, &why) || !w.result()) {
    *error = QStringLiteral("the demo 2pCF job did not complete: ") + why;
    return false;
  }
  const npcf::NpcfResult xi = w.result()->result;
  const QString prov = QString::fromStdString(xi.provenance.to_json());
  r.html += QStringLiteral("<p>%1 data and %2 random points; %3 bins in %4 &lt; r &lt; %5 Mpc/h; "
                           "backend %6, %7 threads.</p>\n")
                .arg(xi.ndata).arg(xi.nrandom).arg(xi.config.bins.nbins)
                .arg(num(xi.config.bins.rmin)).arg(num(xi.config.bins.rmax))
                .arg(QString::fromStdString(xi.provenance.backend)).arg(xi.provenance.threads);
  // The figures at a readable size: the docks (job form, log, jobs, explorer...) out of the way.
  for (QDockWidget* d : w.findChildren<QDockWidget*>()) d->hide();
  if (auto* split = w.findChild<QSplitter*>()) split->setSizes({700, 700});
  settle(300);
  if (glUsable()) r.figure(w.vtkView(), QStringLiteral("catalogue.png"), QStringLiteral("The demo catalogues (data and randoms) in the 3D view"), prov);
  else r.html += QStringLiteral("<p class=missing>3D view not drawn: no OpenGL 3.2 context on this platform.</p>\n");
  w.chart()->setMode(CorrelationChart::Mode::Xi);
  r.figure(w.chart(), QStringLiteral("xi.png"), QStringLiteral("xi(r) of the demo catalogues"), prov);
  w.chart()->setMode(CorrelationChart::Mode::R2Xi);
  r.figure(w.chart(), QStringLiteral("r2xi.png"), QStringLiteral("r^2 xi(r)"), prov);
  r.html += QStringLiteral("<table><tr><th>bin</th><th>r range [Mpc/h]</th><th>xi</th></tr>\n");
  for (std::size_t i = 0; i < xi.rows(); ++i) {
    const int b = xi.bins[i];
    r.html += QStringLiteral("<tr><td>%1</td><td>%2 – %3</td><td>%4</td></tr>\n")
                  .arg(b).arg(num(xi.bin_lo(b))).arg(num(xi.bin_hi(b))).arg(num(xi.estimator[i], 6));
  }
  r.html += QStringLiteral("</table>\n");

  if (!withZeta) return true;
  // zeta of all triangles from the same catalogues, by configuration index with its key.
  npcf::NpcfConfig cfg = w.jobPanel()->config();
  cfg.statistic = npcf::Statistic::ThreePoint;
  cfg.bins.nbins = std::min(cfg.bins.nbins, 8);
  w.jobPanel()->setConfig(cfg);
  if (!w.runJob() || !waitForJob(&w, 300000, &why) || !w.result()) {
    *error = QStringLiteral("the demo 3pCF job did not complete: ") + why;
    return false;
  }
  const npcf::NpcfResult& zeta = w.result()->result;
  for (auto m : w.chart()->availableModes())
    if (m == CorrelationChart::Mode::ZetaIndex) w.chart()->setMode(m);
  r.html += QStringLiteral("<p>3pCF: %1 triangle configurations (b1 &le; b2 &le; b3) of %2 bins.</p>\n")
                .arg(zeta.rows()).arg(zeta.config.bins.nbins);
  r.figure(w.chart(), QStringLiteral("zeta.png"),
           QStringLiteral("zeta by configuration index, with the configuration key (r1 ≤ r2 ≤ r3) beneath"),
           QString::fromStdString(zeta.provenance.to_json()));
  return true;
}

bool skySection(Report& r, MainWindow& w, QString* error) {
  r.html += QStringLiteral("<h2>HEALPix spherical harmonic transforms</h2>\n");
  SkyMapWindow* sky = w.showSkyMap();
  sky->resize(1100, 700);
  QString why;
  if (!sky->openDemoMap(64) || !waitForJob(sky, 120000, &why)) {
    *error = QStringLiteral("the demo map was not synthesised: ") + why;
    return false;
  }
  if (!sky->computeSpectrum() || !waitForJob(sky, 120000, &why)) {
    *error = QStringLiteral("the demo map's spectrum did not complete: ") + why;
    return false;
  }
  const auto spec = sky->spectrumResult();
  // The spectrum's own record (the window's result type carries no Provenance object).
  QString prov;
  if (spec) {
    almagest::Provenance p = almagest::Provenance::current(spec->backend);
    p.device = spec->device.empty() ? p.device : spec->device;
    p.config_json = QStringLiteral("{\"op\":\"cl\",\"nside\":%1,\"lmax\":%2,\"iterations\":%3,\"weights\":\"%4\"}")
                        .arg(spec->nside).arg(spec->lmax).arg(spec->iterations)
                        .arg(QString::fromStdString(spec->weights)).toStdString();
    p.inputs = {spec->source};
    p.timings_s["map2alm+alm2cl"] = spec->seconds;
    prov = QString::fromStdString(p.to_json());
  }
  r.html += QStringLiteral("<p>A Gaussian random map, nside %1 (%2 pixels), C_l = 2&pi;/(l(l+1)); its spectrum "
                           "to lmax %3.</p>\n").arg(sky->nside()).arg(sky->npix()).arg(sky->spectrum().size() - 1);
  r.figure(sky->mapView(), QStringLiteral("skymap.png"), QStringLiteral("The demo map in the Mollweide view"), prov);
  r.figure(sky->spectrumChart(), QStringLiteral("spectrum.png"), QStringLiteral("Its angular power spectrum D_l"), prov);
  return true;
}

bool stackSection(Report& r, MainWindow& w, QString* error) {
  r.html += QStringLiteral("<h2>Shift-and-stack search</h2>\n");
  StackWindow* st = w.showMovingObjects();
  st->setConfirmCloseDuringJob(false);
  st->resize(1300, 850);
  QString why;
  // The window's search grid (+-4 px/day, 17 x 17), stated in its form: the movers are drawn on it.
  st->setSearchSettings(stackview::SearchSettings{});
  if (!st->newSyntheticStack(24, 96, 96, StackWindow::kDemoSeed, 3, 12.0) || !waitForJob(st, 120000, &why)) {
    *error = QStringLiteral("the synthetic stack was not made: ") + why;
    return false;
  }
  settle(100);  // the stack's own follow-ups (views, readouts) before the search starts
  if (!st->runSearch()) {
    const QStringList lines = st->logPanel()->text().trimmed().split(QLatin1Char('\n'));
    *error = QStringLiteral("the demo search did not start: ") + lines.last();
    return false;
  }
  if (!waitForJob(st, 300000, &why)) {
    *error = QStringLiteral("the demo search did not complete: ") + why;
    return false;
  }
  const auto& cands = st->candidates();
  r.html += QStringLiteral("<p>A seeded synthetic stack of %1 exposures of %2 x %3 pixels with 3 movers; %4 "
                           "candidates.</p>\n").arg(st->exposureCount()).arg(st->stackWidth()).arg(st->stackHeight())
                .arg(cands.size());
  r.figure(st->bestZView(), QStringLiteral("bestz.png"), QStringLiteral("The best-Z map of the search"), QString());
  r.html += QStringLiteral("<table><tr><th>#</th><th>x</th><th>y</th><th>vx [px/d]</th><th>vy [px/d]</th><th>Z</th></tr>\n");
  const int shown = std::min<int>(3, static_cast<int>(cands.size()));
  for (int i = 0; i < shown; ++i) {
    const auto& c = cands[i];
    r.html += QStringLiteral("<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td><td>%5</td><td>%6</td></tr>\n")
                  .arg(i + 1).arg(c.x).arg(c.y).arg(num(c.vx)).arg(num(c.vy)).arg(num(c.z));
  }
  r.html += QStringLiteral("</table>\n");
  for (int i = 0; i < shown; ++i) {
    st->selectCandidate(i);
    settle(50);
    r.image(st->stampImage().scaled(192, 192, Qt::KeepAspectRatio, Qt::FastTransformation),
            QStringLiteral("stamp%1.png").arg(i + 1), QStringLiteral("Stamp of candidate %1").arg(i + 1), QString());
  }
  return true;
}

}  // namespace

bool showDemoView(MainWindow& w, const QString& view, QString* error) {
  // The report's steps, leaving the windows on screen; the figures go to a throwaway folder.
  Report r;
  QTemporaryDir tmp;
  r.dir = tmp.path();
  setCloseAnswer(CloseChoice::CancelJobs);
  bool ok = false;
  if (view == QLatin1String("npcf") || view == QLatin1String("zeta")) {
    ok = npcfSection(r, w, error, view == QLatin1String("zeta"));
  } else if (view == QLatin1String("sky")) {
    ok = skySection(r, w, error);
  } else if (view == QLatin1String("sphere")) {
    // The sky map's sphere tab with a 20 degree plane cut as the mask and the graticule.
    ok = skySection(r, w, error);
    if (auto* sky = ok ? qobject_cast<SkyMapWindow*>(w.toolWindows().value(0)) : nullptr) {
      sky->setPlaneMask(20.0);
      sky->setGraticule(true);
      sky->showSphere()->lookAt(30.0, 25.0, 1.0);
    }
  } else if (view == QLatin1String("stack")) {
    ok = stackSection(r, w, error);
    if (ok) {
      auto* st = qobject_cast<StackWindow*>(w.toolWindows().value(0));
      if (st) st->selectCandidate(0);
    }
  } else if (view == QLatin1String("stackcube") || view == QLatin1String("stackcurves")) {
    // The Moving objects window with its Score cube dock (the row of velocities through the
    // strongest candidate: volume, isosurface at the threshold, candidates), or with the Curves
    // tab of that candidate (psi/phi, likelihood and running Z per exposure).
    ok = stackSection(r, w, error);
    auto* st = ok ? qobject_cast<StackWindow*>(w.toolWindows().value(0)) : nullptr;
    if (st) {
      st->selectCandidate(0);
      if (view == QLatin1String("stackcurves")) {
        st->showCandidateCurves();
      } else {
        st->showScoreCube();
        QString why;
        ok = st->computeScoreCube() && waitForJob(st, 120000, &why);
        if (!ok) *error = QStringLiteral("the score cube was not computed: ") + why;
      }
    }
  } else {
    *error = QStringLiteral("unknown view '%1' (npcf, zeta, sky, sphere, stack, stackcube, stackcurves)").arg(view);
    return false;
  }
  if (ok) {
    for (QDockWidget* d : w.findChildren<QDockWidget*>()) d->show();  // the window as a user has it
    // But not the N-point docks that have nothing to show for this result (a parity test needs
    // realisations, the 3D configuration a selected row; a 2pCF has no configurations): empty
    // panels would squeeze the chart until its title and key are cut. The Catalogue dock (the 3D
    // view's controls) has no figure of its own either.
    const bool zeta = view == QLatin1String("zeta");
    for (const char* name : {"ParityDock", "ConfigurationViewDock", "ConfigurationsDock", "CatalogueDock"})
      if (auto* d = w.findChild<QDockWidget*>(QLatin1String(name)))
        if (!(zeta && qstrcmp(name, "ConfigurationsDock") == 0)) d->hide();
    if (auto* d = w.findChild<QDockWidget*>(QStringLiteral("ConfigurationsDock")); d && zeta) {
      d->raise();
      w.resizeDocks({d}, {w.width() / 3}, Qt::Horizontal);  // the chart keeps room for its title
    }
    for (QMainWindow* t : w.toolWindows()) {
      t->showMaximized();
      t->raise();
      t->activateWindow();
    }
    settle(500);
  }
  return ok;
}

QString writeDemoReport(const QString& dir, QString* error) {
  if (!QDir().mkpath(dir)) {
    *error = QStringLiteral("%1: cannot create the report folder").arg(dir);
    return {};
  }
  QElapsedTimer timer;
  timer.start();
  setSettingsFile(QDir(dir).filePath(QStringLiteral(".settings.ini")));  // never the user's settings
  setCloseAnswer(CloseChoice::CancelJobs);
  Report r;
  r.dir = QDir(dir).absolutePath();
  MainWindow w;
  w.setInteractiveErrors(false);
  w.resize(1400, 900);
  // Without OpenGL (the offscreen platform here), a window holding a QOpenGLWidget must not reach
  // the screen (Qt 6.4 crashes flushing it): lay it out and paint it, but off the screen.
  if (!glUsable()) w.setAttribute(Qt::WA_DontShowOnScreen);
  w.show();
  settle(300);
  bool ok = npcfSection(r, w, error) && skySection(r, w, error) && stackSection(r, w, error);
  for (QMainWindow* t : w.toolWindows()) t->close();
  QFile::remove(QDir(dir).filePath(QStringLiteral(".settings.ini")));
  if (!ok) return {};
  const QString page = QStringLiteral(
      "<!doctype html>\n<html><head><meta charset=utf-8><title>Almagest demo report</title>\n"
      "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
      "figure{display:inline-block;margin:0.5em}figure img{max-width:1050px;border:1px solid #ccc}"
      "figure.small img{width:192px;image-rendering:pixelated}table{border-collapse:collapse}"
      "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}.missing{color:#b00020}</style>\n"
      "</head><body>\n<h1>Almagest demo report</h1>\n<p>Almagest %1 (Qt %2, VTK %3), %4; drawn by the "
      "application's views on the %5 platform in %6 s. Each PNG carries its result's provenance "
      "(text chunk <code>Provenance</code>).</p>\n%7</body></html>\n")
                           .arg(QString::fromStdString(almagest::version()), QString::fromLatin1(qVersion()),
                                VtkView::vtkVersionString(),
                                QDateTime::currentDateTimeUtc().toString(Qt::ISODate),
                                QApplication::platformName())
                           .arg(timer.elapsed() / 1000.0, 0, 'f', 1)
                           .arg(r.html);
  const QString index = r.dir + QStringLiteral("/index.html");
  QSaveFile f(index);
  if (!f.open(QIODevice::WriteOnly) || f.write(page.toUtf8()) < 0 || !f.commit()) {
    *error = QStringLiteral("%1: %2").arg(index, f.errorString());
    return {};
  }
  return index;
}

}  // namespace almagest::ui::app
