// almagest-cli on every hostile file of tests/fixtures/corrupt/ (README.md there lists the
// command that broke each one), run as the README gives it in a fresh folder holding a copy of
// the inputs: the documented exit code (3: input I/O error), exactly one error line on stderr
// naming the file, no crash (no signal, no sanitizer report), a few seconds at most, and no
// output file (the folder holds only the inputs afterwards). A full disk (a 1 MB tmpfs with
// about 8 KB free; skipped where mounting is not permitted) gives exit 5 and no file for every
// output format.
#include <QRegularExpression>
#include <QtTest>
#include <sys/mount.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_test_support.hpp"

namespace fs = std::filesystem;
using namespace almagest::cli_test;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr int kLimitMs = 30000;   // the sanitizer build runs 2-3x slower
#else
constexpr int kLimitMs = 10000;
#endif

const fs::path kFixtures = ALMAGEST_SOURCE_DIR "/tests/fixtures/corrupt";

struct Outcome {
  bool finished = false;
  bool crashed = false;   ///< killed by a signal
  int code = -1;
  qint64 ms = 0;
  QString err;
};

Outcome run_in(const fs::path& dir, const QStringList& args) {
  QProcess p;
  p.setWorkingDirectory(q(dir));
  QElapsedTimer t;
  t.start();
  p.start(QStringLiteral(ALMAGEST_CLI), args);
  Outcome o;
  if (!p.waitForStarted(10000)) return o;
  o.finished = p.waitForFinished(kLimitMs);
  if (!o.finished) {
    p.kill();
    p.waitForFinished(5000);
  }
  o.ms = t.elapsed();
  o.crashed = o.finished && p.exitStatus() == QProcess::CrashExit;
  o.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  o.err = QString::fromUtf8(p.readAllStandardError());
  return o;
}

QStringList nonempty_lines(const QString& s) {
  QStringList out;
  for (const QString& l : s.split('\n'))
    if (!l.trimmed().isEmpty()) out << l;
  return out;
}

/// The checks common to every case; `named` must appear in the error line.
void check_failure(const Outcome& o, const QStringList& args, int expected_code, const QString& named,
                   const fs::path& dir, const std::vector<std::string>& expected_listing) {
  const QString cmd = "almagest-cli " + args.join(' ');
  const QString tail = o.err.left(4000);
  QVERIFY2(o.finished, qPrintable(cmd + QString(": still running after %1 ms (killed)").arg(kLimitMs)));
  QVERIFY2(!o.crashed, qPrintable(cmd + ": crashed (signal); stderr:\n" + tail));
  QVERIFY2(!o.err.contains("Sanitizer") && !o.err.contains("runtime error:"),
           qPrintable(cmd + ": sanitizer report:\n" + tail));
  QVERIFY2(o.code == expected_code,
           qPrintable(cmd + QString(": exit code %1, expected %2; stderr:\n").arg(o.code).arg(expected_code) + tail));
  const QStringList lines = nonempty_lines(o.err);
  QVERIFY2(lines.size() == 1, qPrintable(cmd + QString(": %1 lines on stderr, expected one:\n").arg(lines.size()) + tail));
  QVERIFY2(lines[0].startsWith("almagest-cli: error:"), qPrintable(cmd + ": not an error line: " + lines[0]));
  QVERIFY2(lines[0].contains(named), qPrintable(cmd + ": the error does not name " + named + ": " + lines[0]));
  const std::vector<std::string> now = listing(dir);
  std::string got;
  for (const auto& n : now) got += " " + n;
  QVERIFY2(now == expected_listing, qPrintable(cmd + ": files left behind; the folder holds:" + QString::fromStdString(got)));
}

/// Copies `inputs` from the fixtures into `dir`; returns the sorted listing expected afterwards.
std::vector<std::string> stage(const fs::path& dir, const QStringList& inputs) {
  for (const QString& in : inputs)
    fs::copy_file(kFixtures / in.toStdString(), dir / in.toStdString(), fs::copy_options::overwrite_existing);
  return listing(dir);
}

const QStringList kMap2alm = {"sht", "map2alm", "@", "-o", "x.fits"};
const QStringList kSearch = {"stack", "search", "@", "--vx-range", "-3,3", "--vy-range", "-3,3",
                             "--grid", "7", "-o", "c.ecsv"};

QStringList with_input(QStringList args, const QString& input) {
  args.replaceInStrings(QRegularExpression("^@$"), input);
  return args;
}

QStringList npcf2(const QString& nbins) {
  return {"npcf", "--stat", "2pcf", "--data", "data.txt", "--randoms", "ran.txt",
          "--rmin", "1", "--rmax", "20", "--nbins", nbins};
}

}  // namespace

class TestCliCorrupt : public QObject {
  Q_OBJECT

private slots:
  void fixture_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QStringList>("inputs");
    QTest::addColumn<QString>("named");
    QTest::addColumn<int>("code");
    for (const char* f : {"crash_maph5_168.h5", "asan_hbo_maph5_246.h5", "ubsan_maph5_235.h5"})
      QTest::newRow(f) << with_input(kMap2alm, f) << QStringList{f} << QString(f) << 3;
    QTest::newRow("ubsan_candh5_139.h5")
        << QStringList{"stack", "stamps", "ubsan_candh5_139.h5", "--stack", "stack_for_stamps.fits",
                       "--stamp-radius", "3", "-o", "s.h5"}
        << QStringList{"ubsan_candh5_139.h5", "stack_for_stamps.fits"} << QString("ubsan_candh5_139.h5") << 3;
    for (const char* f : {"hang_stackh5_094.h5", "oom_stackh5_014.h5"})
      QTest::newRow(f) << with_input(kSearch, f) << QStringList{f} << QString(f) << 3;
    QTest::newRow("oom_cath5_286.h5")
        << QStringList{"npcf", "--stat", "2pcf", "--data", "oom_cath5_286.h5", "--randoms", "ran.txt",
                       "--rmin", "1", "--rmax", "20", "--nbins", "5", "-o", "o.h5"}
        << QStringList{"oom_cath5_286.h5", "ran.txt"} << QString("oom_cath5_286.h5") << 3;
    QTest::newRow("oom_almfits_105.fits")
        << QStringList{"sht", "synth", "oom_almfits_105.fits", "--nside", "8", "-o", "m.fits"}
        << QStringList{"oom_almfits_105.fits"} << QString("oom_almfits_105.fits") << 3;
    QTest::newRow("map_cks_bad.fits")
        << QStringList{"sht", "adjoint", "map_cks_bad.fits", "-o", "x.fits"}
        << QStringList{"map_cks_bad.fits"} << QString("map_cks_bad.fits") << 3;
  }

  void fixture() {
    QFETCH(QStringList, args);
    QFETCH(QStringList, inputs);
    QFETCH(QString, named);
    QFETCH(int, code);
    QTemporaryDir tmp(temp_dir_template("cli-corrupt"));
    QVERIFY(tmp.isValid());
    const fs::path dir = tmp.path().toStdString();
    const std::vector<std::string> expected = stage(dir, inputs);
    const Outcome o = run_in(dir, args);
    check_failure(o, args, code, named, dir, expected);
  }

  /// The control of map_cks_bad.fits: the intact file with its valid CHECKSUM is read and the
  /// output written (the checksum verification must not reject good files).
  void intact_checksum_file() {
    QTemporaryDir tmp(temp_dir_template("cli-corrupt"));
    QVERIFY(tmp.isValid());
    const fs::path dir = tmp.path().toStdString();
    stage(dir, {"map_cks.fits"});
    const QStringList args{"sht", "adjoint", "map_cks.fits", "-o", "x.fits", "--quiet"};
    const Outcome o = run_in(dir, args);
    QVERIFY2(o.finished && !o.crashed && o.code == 0,
             qPrintable(QString("exit %1; stderr:\n").arg(o.code) + o.err.left(4000)));
    QVERIFY(fs::is_regular_file(dir / "x.fits"));
    QVERIFY(fs::file_size(dir / "x.fits") > 2880);
  }

  /// Every output format onto a nearly full disk: exit 5, one line naming the output, no file.
  void full_disk_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QStringList>("inputs");
    QTest::addColumn<QString>("named");
    QTest::addColumn<QString>("output");
    // Outputs of 11-16 KB each against 4-8 KB free.
    QTest::newRow("npcf hdf5") << (npcf2("5") + QStringList{"-o", "FULL/out.h5"})
                               << QStringList{"data.txt", "ran.txt"} << QString("out.h5") << QString("out.h5");
    // 200 bins: 16 KB of text (5 bins would fit in the space left).
    QTest::newRow("npcf gramsci") << (npcf2("200") + QStringList{"--format", "gramsci", "-o", "FULL/out.txt"})
                                  << QStringList{"data.txt", "ran.txt"} << QString("out.txt") << QString("out.txt");
    QTest::newRow("sht fits") << QStringList{"sht", "adjoint", "map_cks.fits", "-o", "FULL/alm.fits"}
                              << QStringList{"map_cks.fits"} << QString("alm.fits") << QString("alm.fits");
    QTest::newRow("sht hdf5") << QStringList{"sht", "adjoint", "map_cks.fits", "-o", "FULL/alm.h5"}
                              << QStringList{"map_cks.fits"} << QString("alm.h5") << QString("alm.h5");
  }

  void full_disk() {
    QFETCH(QStringList, args);
    QFETCH(QStringList, inputs);
    QFETCH(QString, named);
    QFETCH(QString, output);
    QTemporaryDir tmp(temp_dir_template("cli-corrupt-full"));
    QVERIFY(tmp.isValid());
    const fs::path dir = tmp.path().toStdString();
    const std::vector<std::string> expected_inputs = stage(dir, inputs);
    const fs::path full = dir / "FULL";
    fs::create_directories(full);
    if (::mount("tmpfs", full.c_str(), "tmpfs", 0, "size=1M") != 0)
      QSKIP(qPrintable(QString("cannot mount a 1 MB tmpfs on %1 (%2): needs root or CAP_SYS_ADMIN")
                           .arg(q(full), QString::fromLocal8Bit(std::strerror(errno)))));
    struct Unmount {
      fs::path p;
      ~Unmount() { ::umount2(p.c_str(), MNT_DETACH); }
    } unmount{full};
    // Fill it, leaving 4-8 KB: less than every output above needs.
    struct statvfs sv {};
    QVERIFY(::statvfs(full.c_str(), &sv) == 0);
    const std::uint64_t free_bytes = std::uint64_t(sv.f_bavail) * sv.f_frsize;
    QVERIFY(free_bytes > 16384);
    {
      std::ofstream fill(full / "filler", std::ios::binary);
      const std::string block(4096, 'x');
      for (std::uint64_t n = 0; n + 4096 + 4096 <= free_bytes; n += 4096) fill.write(block.data(), 4096);
    }
    QVERIFY(::statvfs(full.c_str(), &sv) == 0);
    const std::uint64_t left = std::uint64_t(sv.f_bavail) * sv.f_frsize;
    QVERIFY2(left <= 8192, qPrintable(QString("%1 bytes free after filling").arg(left)));

    const Outcome o = run_in(dir, args);
    std::vector<std::string> expected = expected_inputs;
    expected.push_back("FULL");
    std::sort(expected.begin(), expected.end());
    check_failure(o, args, 5, named, dir, expected);
    if (QTest::currentTestFailed()) return;
    const std::vector<std::string> in_full = listing(full);
    std::string got;
    for (const auto& n : in_full) got += " " + n;
    QVERIFY2(in_full == std::vector<std::string>{"filler"},
             qPrintable("the full disk holds more than the filler:" + QString::fromStdString(got)));
    QVERIFY(!fs::exists(full / output.toStdString()));
  }
};

QTEST_GUILESS_MAIN(TestCliCorrupt)
#include "test_cli_corrupt.moc"
