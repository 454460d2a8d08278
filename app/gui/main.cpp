// almagest: the desktop application. Thin: surface format, command line, main window.
#include <QApplication>
#include <QCommandLineParser>
#include <QTimer>

#include <cstdio>

#include "MainWindow.hpp"
#include "almagest/core/provenance.hpp"
#include "views/VtkView.hpp"

int main(int argc, char** argv) {
  // VTK needs an OpenGL 3.2 core context: set the format before QApplication exists.
  almagest::ui::VtkView::prepareApplication();
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("Almagest"));
  QApplication::setOrganizationName(QStringLiteral("Almagest"));
  QApplication::setApplicationVersion(QString::fromStdString(almagest::version()));

  QCommandLineParser parser;
  parser.setApplicationDescription(
      QStringLiteral("Almagest: N-point correlation functions of galaxy catalogues."));
  parser.addHelpOption();
  parser.addVersionOption();
  const QCommandLineOption demo(QStringLiteral("demo"),
                                QStringLiteral("Open the bundled demo catalogues and run a 2pCF job."));
  const QCommandLineOption screenshot(
      QStringLiteral("screenshot"),
      QStringLiteral("Save a picture of the window to <file> once the demo job finished (or after "
                     "loading), then quit."),
      QStringLiteral("file"));
  parser.addOption(demo);
  parser.addOption(screenshot);
  parser.process(app);

  almagest::ui::MainWindow window;
  window.show();

  const QString shot = parser.value(screenshot);
  int status = 0;
  if (!shot.isEmpty()) {
    window.setInteractiveErrors(false);
    auto takeAndQuit = [&window, &status, shot] {
      // Let the last frame reach the screen first.
      QTimer::singleShot(500, &window, [&window, &status, shot] {
        if (!window.saveScreenshot(shot)) status = 1;
        QApplication::quit();
      });
    };
    if (parser.isSet(demo)) {
      QObject::connect(&window, &almagest::ui::MainWindow::jobFinished, &window, takeAndQuit);
      QObject::connect(&window, &almagest::ui::MainWindow::loadFailed, &window, [&status] {
        status = 1;
        QApplication::quit();
      });
    } else {
      QTimer::singleShot(0, &window, takeAndQuit);
    }
  }
  if (parser.isSet(demo) && !window.openDemoData(true)) {
    std::fprintf(stderr, "almagest: the demo data was not found (set ALMAGEST_DEMO_DIR)\n");
    if (!shot.isEmpty()) return 1;
  }
  const int rc = app.exec();
  return rc != 0 ? rc : status;
}
