#pragma once
// Helpers shared by the CLI tests (tests/cli/test_cli_*.cpp): running the built almagest-cli
// (path in the ALMAGEST_CLI macro) with QProcess, and small file utilities.
#include <QProcess>
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

inline QString q(const std::filesystem::path& p) { return QString::fromStdString(p.string()); }

/// Files in a directory, sorted (to check that nothing, not even a temporary, was left behind).
inline std::vector<std::string> listing(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
}

}  // namespace almagest::cli_test
