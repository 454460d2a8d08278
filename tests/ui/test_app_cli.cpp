// `almagest --help`, `--version` and a bad option work without a display: the command line is
// parsed before QApplication needs a platform (run here with DISPLAY, WAYLAND_DISPLAY and
// QT_QPA_PLATFORM removed from the environment, so a QApplication would abort).
#include <QProcess>
#include <QProcessEnvironment>
#include <QtTest>

#include "almagest/core/provenance.hpp"

namespace {

struct Run {
  int code = -1;
  QString out, err;
};

Run runApp(const QStringList& args) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  for (const char* k : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM", "XAUTHORITY"}) env.remove(QLatin1String(k));
  p.setProcessEnvironment(env);
  p.start(QStringLiteral(ALMAGEST_BIN_DIR "/almagest"), args);
  Run r;
  if (!p.waitForFinished(30000)) return r;
  r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
  r.out = QString::fromLocal8Bit(p.readAllStandardOutput());
  r.err = QString::fromLocal8Bit(p.readAllStandardError());
  return r;
}

}  // namespace

class TestAppCli : public QObject {
  Q_OBJECT
private slots:
  void initTestCase() {
    QVERIFY2(QFileInfo::exists(QStringLiteral(ALMAGEST_BIN_DIR "/almagest")),
             "build the almagest target first (the GUI executable this test runs)");
  }
  void helpWithoutDisplay() {
    const Run r = runApp({QStringLiteral("--help")});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(r.out.contains(QStringLiteral("Usage:")));
    for (const char* opt : {"--demo", "--demo-report", "--workspace", "--version", "--settings"})
      QVERIFY2(r.out.contains(QLatin1String(opt)), opt);
    QVERIFY(r.err.isEmpty());
  }
  void versionWithoutDisplay() {
    const Run r = runApp({QStringLiteral("--version")});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.startsWith(QStringLiteral("almagest %1 ").arg(QString::fromStdString(almagest::version()))));
  }
  void badOptionIsOneLineAndExit2() {
    const Run r = runApp({QStringLiteral("--no-such-option")});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err.count(QLatin1Char('\n')), 1);
    QVERIFY(r.err.contains(QStringLiteral("no-such-option")));
  }
};

QTEST_GUILESS_MAIN(TestAppCli)
#include "test_app_cli.moc"
