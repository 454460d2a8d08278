// almagest: the desktop application. Thin: command line, surface format, main window.
//
// The command line is parsed before anything needs a display: `almagest --help`, `--version`
// and a bad option work on a machine without one (a QCoreApplication parses, then goes away;
// QApplication, which needs a platform, is created only to open windows). `--demo-report DIR`
// renders the demo report with the application's own views and needs no display either (it runs
// on the offscreen platform when none is set).
#include <QApplication>
#include <QCommandLineParser>
#include <QTimer>

#include <cstdio>
#include <memory>

#include "MainWindow.hpp"
#include "almagest/core/provenance.hpp"
#include "app/AppSettings.hpp"
#include "app/DemoReport.hpp"
#include "views/VtkView.hpp"

namespace {

struct Options {
  bool demo = false;
  QString screenshot, workspace, report, settings, showDemo;
  QStringList files;
};

/// 0: go on; otherwise the exit code (help and version print and exit 0, errors exit 2).
int parseCommandLine(int argc, char** argv, Options& o) {
  QCoreApplication core(argc, argv);  // parsing only: no platform, no display
  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral(
      "Almagest: N-point correlation functions, HEALPix spherical harmonic transforms and "
      "shift-and-stack searches, in one desktop application. Files given are opened in the view "
      "they belong to (catalogues, results, maps, stacks, workspaces)."));
  const QCommandLineOption help(QStringList{QStringLiteral("h"), QStringLiteral("help")},
                                QStringLiteral("Show this help and exit."));
  const QCommandLineOption version(QStringList{QStringLiteral("v"), QStringLiteral("version")},
                                   QStringLiteral("Show the version and exit."));
  const QCommandLineOption demo(QStringLiteral("demo"),
                                QStringLiteral("Open the bundled demo catalogues and run a 2pCF job."));
  const QCommandLineOption screenshot(
      QStringLiteral("screenshot"),
      QStringLiteral("Save a picture of the window to <file> once the demo job finished (or after "
                     "loading), then quit."),
      QStringLiteral("file"));
  const QCommandLineOption workspace(QStringLiteral("workspace"),
                                     QStringLiteral("Open the workspace <file> (File > Save workspace)."),
                                     QStringLiteral("file"));
  const QCommandLineOption report(
      QStringLiteral("demo-report"),
      QStringLiteral("Write the demo report (HTML with figures of all three engines, drawn by the "
                     "application's views) into <dir> and exit. Needs no display."),
      QStringLiteral("dir"));
  const QCommandLineOption settings(QStringLiteral("settings"),
                                    QStringLiteral("Remember geometry, recent files and parameters in the "
                                                   "INI file <file> instead of the user's settings."),
                                    QStringLiteral("file"));
  const QCommandLineOption showDemo(
      QStringLiteral("show-demo"),
      QStringLiteral("Open one view of the demo report on screen (npcf, zeta, sky, sphere or stack), print "
                     "'ready' when it shows (scripted screenshots)."),
      QStringLiteral("view"));
  parser.addOptions({help, version, demo, screenshot, workspace, report, settings, showDemo});
  parser.addPositionalArgument(QStringLiteral("files"), QStringLiteral("Files to open."),
                               QStringLiteral("[files...]"));
  if (!parser.parse(QCoreApplication::arguments())) {
    std::fprintf(stderr, "almagest: %s (see almagest --help)\n", qPrintable(parser.errorText()));
    return 2;
  }
  if (parser.isSet(help)) {
    std::fputs(qPrintable(parser.helpText()), stdout);
    return -1;
  }
  if (parser.isSet(version)) {
    std::printf("almagest %s (Qt %s)\n", almagest::version().c_str(), qVersion());
    return -1;
  }
  o.demo = parser.isSet(demo);
  o.screenshot = parser.value(screenshot);
  o.workspace = parser.value(workspace);
  o.report = parser.value(report);
  o.settings = parser.value(settings);
  o.showDemo = parser.value(showDemo);
  o.files = parser.positionalArguments();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  QCoreApplication::setApplicationName(QStringLiteral("Almagest"));
  QCoreApplication::setOrganizationName(QStringLiteral("Almagest"));
  QCoreApplication::setApplicationVersion(QString::fromStdString(almagest::version()));
  Options opt;
  if (const int rc = parseCommandLine(argc, argv, opt)) return rc < 0 ? 0 : rc;

  // The report is drawn offscreen; where no platform was chosen and no display exists, pick the
  // offscreen one rather than fail to connect.
  if (!opt.report.isEmpty() && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") &&
      qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY"))
    qputenv("QT_QPA_PLATFORM", "offscreen");
  // VTK needs an OpenGL 3.2 core context: set the format before QApplication exists.
  almagest::ui::VtkView::prepareApplication();
  QApplication app(argc, argv);
  if (!opt.settings.isEmpty()) almagest::ui::app::setSettingsFile(opt.settings);

  if (!opt.report.isEmpty()) {
    QString error;
    const QString index = almagest::ui::app::writeDemoReport(opt.report, &error);
    if (index.isEmpty()) {
      std::fprintf(stderr, "almagest: %s\n", qPrintable(error));
      return 1;
    }
    std::printf("demo report: %s\n", qPrintable(index));
    return 0;
  }

  almagest::ui::MainWindow window;
  window.restoreSession();
  window.show();

  int status = 0;
  const QString shot = opt.screenshot;
  if (!shot.isEmpty()) {
    window.setInteractiveErrors(false);
    auto takeAndQuit = [&window, &status, shot] {
      // Let the last frame reach the screen first.
      QTimer::singleShot(500, &window, [&window, &status, shot] {
        if (!window.saveScreenshot(shot)) status = 1;
        QApplication::quit();
      });
    };
    if (opt.demo) {
      QObject::connect(&window, &almagest::ui::MainWindow::jobFinished, &window, takeAndQuit);
      QObject::connect(&window, &almagest::ui::MainWindow::loadFailed, &window, [&status] {
        status = 1;
        QApplication::quit();
      });
    } else {
      QTimer::singleShot(0, &window, takeAndQuit);
    }
  }
  if (opt.demo && !window.openDemoData(true)) {
    std::fprintf(stderr, "almagest: the demo data was not found (set ALMAGEST_DEMO_DIR)\n");
    if (!shot.isEmpty()) return 1;
  }
  if (!opt.showDemo.isEmpty()) {
    window.showMaximized();
    QString error;
    if (!almagest::ui::app::showDemoView(window, opt.showDemo, &error)) {
      std::fprintf(stderr, "almagest: %s\n", qPrintable(error));
      return 1;
    }
    std::printf("ready\n");
    std::fflush(stdout);
  }
  if (!opt.workspace.isEmpty()) window.openWorkspace(opt.workspace);
  for (const QString& f : opt.files) window.openPath(f);
  const int rc = app.exec();
  return rc != 0 ? rc : status;
}
