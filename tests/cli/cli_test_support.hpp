#pragma once
// Helpers shared by the CLI tests (tests/cli/test_cli_*.cpp): running the built almagest-cli
// (path in the ALMAGEST_CLI macro) with QProcess, and small file utilities.
#include <QByteArray>
#include <QDir>
#include <QElapsedTimer>
#include <QProcess>
#include <QTest>
#include <csignal>
#include <QString>
#include <QStringList>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace almagest::cli_test {

struct CliRun {
  int code = -1;        ///< exit code; -1 if it did not start, crashed or timed out
  QString out, err;     ///< standard output and error
  bool finished = false;
};

/// Runs almagest-cli with `args` in environment `env`; kills it after `timeout_ms`.
inline CliRun run_cli(const QStringList& args,
                      const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment(),
                      int timeout_ms = 120000) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(QStringLiteral(ALMAGEST_CLI), args);
  CliRun r;
  if (!p.waitForStarted(10000)) return r;
  r.finished = p.waitForFinished(timeout_ms);
  if (!r.finished) {
    p.kill();
    p.waitForFinished(5000);
  }
  r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

/// Starts almagest-cli with `args`, sends SIGINT after `after_ms` and waits up to 15 s.
struct Interrupted {
  bool started = false;
  bool running = false;    ///< still running when SIGINT was sent
  bool finished = false;   ///< exited within 15 s of SIGINT
  qint64 latency_ms = 0;   ///< SIGINT to exit
  bool normal_exit = false;
  int code = -1;
  QString err;
};

inline Interrupted interrupt_cli(const QStringList& args, int after_ms) {
  Interrupted r;
  QProcess p;
  p.start(QStringLiteral(ALMAGEST_CLI), args);
  r.started = p.waitForStarted(10000);
  if (!r.started) return r;
  QTest::qWait(after_ms);
  r.running = p.state() == QProcess::Running;
  if (!r.running) return r;
  QElapsedTimer t;
  t.start();
  ::kill(static_cast<pid_t>(p.processId()), SIGINT);
  r.finished = p.waitForFinished(15000);
  r.latency_ms = t.elapsed();
  if (!r.finished) {
    p.kill();
    p.waitForFinished(5000);
    return r;
  }
  r.normal_exit = p.exitStatus() == QProcess::NormalExit;
  r.code = p.exitCode();
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

/// QTemporaryDir template "<$ALMAGEST_TEST_TMP or the system temp>/<name>-XXXXXX" (the ctest
/// folder is created if needed).
inline QString temp_dir_template(const char* name) {
  const QByteArray root = qgetenv("ALMAGEST_TEST_TMP");
  QString base = QDir::tempPath();
  if (!root.isEmpty()) {
    std::filesystem::create_directories(root.toStdString());
    base = QString::fromUtf8(root);
  }
  return base + "/" + QString::fromUtf8(name) + "-XXXXXX";
}

inline QString q(const std::filesystem::path& p) { return QString::fromStdString(p.string()); }

/// Files in a directory, sorted (to check that nothing, not even a temporary, was left behind).
inline std::vector<std::string> listing(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// Why an interrupted run did not cancel cleanly, or an empty string: it must have been running
/// when SIGINT came, exit normally with code 130 within 3 s saying "cancelled", and leave nothing
/// in `out_dir`. Logs the latency (qInfo). Use: QVERIFY2(why.isEmpty(), qPrintable(why)).
inline QString cancel_failure(const Interrupted& r, const std::filesystem::path& out_dir) {
  if (!r.started) return "almagest-cli did not start";
  if (!r.running) return "the job finished before it could be interrupted";
  if (!r.finished) return "not cancelled within 15 s";
  qInfo("cancel latency: %lld ms", static_cast<long long>(r.latency_ms));
  if (!r.normal_exit) return "almagest-cli did not exit normally after SIGINT";
  if (r.code != 130) return QString("exit code %1 after SIGINT, expected 130").arg(r.code);
  if (!r.err.contains("cancelled")) return "stderr does not say 'cancelled': " + r.err;
  if (r.latency_ms >= 3000) return QString("cancel latency %1 ms, expected < 3000").arg(r.latency_ms);
  const std::vector<std::string> left = listing(out_dir);
  if (!left.empty()) return "left behind in " + QString::fromStdString(out_dir.string()) + ": " +
                            QString::fromStdString(left.front());
  return {};
}

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
}

}  // namespace almagest::cli_test
