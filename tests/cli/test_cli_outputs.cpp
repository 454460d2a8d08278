// What every command does with its outputs (issue 19, docs/cli.md "Outputs"): `-o` onto an input
// (by name, hard link or symlink), a FIFO or a device node is refused with exit 5 and the target
// is untouched; SIGINT, SIGTERM and a double SIGINT during the write phase leave no file (exit
// 130, 143, killed by SIGINT); a full file system gives exit 5 and no file for every format.
#include <QtTest>

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmath>
#include <complex>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "almagest/sht/healpix_io.hpp"
#include "cli_test_support.hpp"

namespace fs = std::filesystem;
using namespace almagest::cli_test;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const fs::path kFixtures = fs::path(ALMAGEST_SOURCE_DIR) / "tests" / "fixtures" / "corrupt";

/// Entries of `dir` other than `keep`.
std::vector<std::string> extra_entries(const fs::path& dir, const std::vector<std::string>& keep) {
  std::vector<std::string> out;
  for (const auto& n : listing(dir))
    if (std::find(keep.begin(), keep.end(), n) == keep.end()) out.push_back(n);
  return out;
}

QString joined(const std::vector<std::string>& v) {
  QStringList l;
  for (const auto& s : v) l << QString::fromStdString(s);
  return l.join(", ");
}

struct Signalled {
  bool saw_temp = false;
  bool finished = false;
  bool crashed = false;  ///< ended by a signal
  int code = -1;
  QString err;
};

/// Starts almagest-cli in `dir` with the commit delay hook, waits until a temporary appears in
/// `out_dir` (the write phase has begun), sends `sig` (twice with `twice`) and waits for the end.
Signalled signal_during_write(const QStringList& args, const fs::path& out_dir, int sig, bool twice) {
  Signalled r;
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("ALMAGEST_TEST_COMMIT_DELAY_MS", "4000");
  p.setProcessEnvironment(env);
  p.start(QStringLiteral(ALMAGEST_CLI), args);
  if (!p.waitForStarted(10000)) return r;
  QElapsedTimer t;
  t.start();
  while (t.elapsed() < 60000 && p.state() == QProcess::Running) {
    for (const auto& n : listing(out_dir))
      if (n.find(".tmp.") != std::string::npos) r.saw_temp = true;
    if (r.saw_temp) break;
    QTest::qWait(2);
  }
  if (r.saw_temp) {
    ::kill(static_cast<pid_t>(p.processId()), sig);
    if (twice) {
      QTest::qWait(50);
      ::kill(static_cast<pid_t>(p.processId()), sig);
    }
  }
  r.finished = p.waitForFinished(30000);
  if (!r.finished) {
    p.kill();
    p.waitForFinished(5000);
  }
  r.crashed = p.exitStatus() == QProcess::CrashExit;
  r.code = p.exitCode();
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

}  // namespace

class TestCliOutputs : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_{temp_dir_template("cli-outputs")};
  fs::path dir_;
  fs::path data_, randoms_, alm_, map_, stack_;

  QStringList npcf_args(const fs::path& out) const {
    return {"npcf", "--stat", "2pcf", "--data", q(data_), "--randoms", q(randoms_), "--rmin", "1", "--rmax", "20",
            "--nbins", "5", "-o", q(out), "--quiet"};
  }

private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    dir_ = tmp_.path().toStdString();
    fs::create_directories(dir_ / "in");
    data_ = dir_ / "in" / "data.txt";
    randoms_ = dir_ / "in" / "ran.txt";
    fs::copy_file(kFixtures / "data.txt", data_);
    fs::copy_file(kFixtures / "ran.txt", randoms_);
    fs::permissions(data_, fs::perms::owner_write, fs::perm_options::add);
    fs::permissions(randoms_, fs::perms::owner_write, fs::perm_options::add);
    // A seeded alm set (T only), lmax 16, and the map synthesised from it.
    const int lmax = 16;
    std::mt19937_64 rng(20261203);
    std::normal_distribution<double> g;
    std::vector<std::complex<double>> a(static_cast<std::size_t>((lmax + 1) * (lmax + 2) / 2));
    for (int m = 0, i = 0; m <= lmax; ++m)
      for (int l = m; l <= lmax; ++l, ++i) a[i] = {g(rng), m == 0 ? 0.0 : g(rng)};
    alm_ = dir_ / "in" / "alm.fits";
    almagest::sht::write_alm(alm_.string(), {a}, lmax);
    map_ = dir_ / "in" / "map.fits";
    CliRun synth = run_cli({"sht", "synth", q(alm_), "--nside", "16", "-o", q(map_), "--quiet"});
    QVERIFY2(synth.code == 0, qPrintable(synth.err));
    stack_ = dir_ / "in" / "stack.h5";
    CliRun sim = run_cli({"stack", "simulate", "--exposures", "8", "--width", "32", "--height", "32", "--movers", "1",
                          "--seed", "7", "-o", q(stack_), "--quiet"});
    QVERIFY2(sim.code == 0, qPrintable(sim.err));
  }

  void output_onto_an_input_is_refused_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("input");
    const fs::path hard = dir_ / "in" / "data_hard.h5";
    const fs::path soft = dir_ / "in" / "map_link.fits";
    fs::create_hard_link(data_, hard);
    fs::create_symlink(map_, soft);
    QTest::newRow("npcf text onto --data") << npcf_args(data_) << q(data_);
    QTest::newRow("npcf text onto --randoms") << npcf_args(randoms_) << q(randoms_);
    QTest::newRow("npcf HDF5 onto a hard link of --data") << npcf_args(hard) << q(data_);
    QTest::newRow("sht smooth onto its map") << QStringList{"sht", "smooth", q(map_), "--fwhm-arcmin", "60", "-o", q(map_)} << q(map_);
    QTest::newRow("sht smooth onto a symlink of its map") << QStringList{"sht", "smooth", q(map_), "--fwhm-arcmin", "60", "-o", q(soft)} << q(map_);
    QTest::newRow("sht synth onto its alm") << QStringList{"sht", "synth", q(alm_), "--nside", "8", "-o", q(alm_)} << q(alm_);
    QTest::newRow("sht map2alm onto its map") << QStringList{"sht", "map2alm", q(map_), "-o", q(map_)} << q(map_);
    QTest::newRow("stack search onto its stack")
        << QStringList{"stack", "search", q(stack_), "--vx-range", "-2,2", "--vy-range", "-2,2", "--grid", "5", "-o", q(stack_)} << q(stack_);
  }
  void output_onto_an_input_is_refused() {
    QFETCH(QStringList, args);
    QFETCH(QString, input);
    const std::string before = slurp(input.toStdString());
    const auto entries = listing(dir_ / "in");
    CliRun r = run_cli(args);
    QVERIFY2(r.finished, "did not finish");
    QCOMPARE(r.code, 5);
    QVERIFY2(r.err.contains("same file as the input"), qPrintable(r.err));
    QCOMPARE(r.err.count('\n'), 1);
    QVERIFY(slurp(input.toStdString()) == before);
    QCOMPARE(listing(dir_ / "in"), entries);
  }

  void run_job_file_onto_an_input_is_refused() {
    const fs::path job = dir_ / "in" / "job.toml";
    write_text(job, "stat = \"2pcf\"\ndata = \"data.txt\"\nrandoms = \"ran.txt\"\nrmin = 1\nrmax = 20\nnbins = 5\n"
                    "output = \"data.txt\"\n");
    const std::string before = slurp(data_);
    CliRun r = run_cli({"run", q(job), "--quiet"});
    QCOMPARE(r.code, 5);
    QVERIFY2(r.err.contains("same file as the input"), qPrintable(r.err));
    QVERIFY(slurp(data_) == before);
    fs::remove(job);
  }

  void special_files_are_refused() {
    const fs::path fifo = dir_ / "pipe.txt";
    QVERIFY(::mkfifo(fifo.c_str(), 0600) == 0);
    CliRun r = run_cli(npcf_args(fifo), QProcessEnvironment::systemEnvironment(), 30000);
    QVERIFY2(r.finished, "blocked on the FIFO");
    QCOMPARE(r.code, 5);
    QVERIFY2(r.err.contains("not a regular file"), qPrintable(r.err));
    struct stat st {};
    QVERIFY(::stat(fifo.c_str(), &st) == 0 && S_ISFIFO(st.st_mode));
    fs::remove(fifo);
    // A device node of our own (a copy of /dev/null's numbers) where mknod is allowed (root).
    const fs::path dev = dir_ / "null.h5";
    if (::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) QSKIP("mknod not permitted here (not root)");
    CliRun d = run_cli(npcf_args(dev));
    QCOMPARE(d.code, 5);
    QVERIFY2(d.err.contains("not a regular file"), qPrintable(d.err));
    QVERIFY(::stat(dev.c_str(), &st) == 0 && S_ISCHR(st.st_mode));
    CliRun d2 = run_cli({"sht", "synth", q(alm_), "--nside", "8", "-o", q(dev)});
    QCOMPARE(d2.code, 5);
    QVERIFY(::stat(dev.c_str(), &st) == 0 && S_ISCHR(st.st_mode));
    fs::remove(dev);
  }

  void signals_during_the_write_phase_leave_nothing_data() {
    QTest::addColumn<QString>("command");
    QTest::addColumn<int>("sig");
    QTest::addColumn<bool>("twice");
    QTest::addColumn<int>("expected");  // exit code, or -SIG for "ended by that signal"
    for (const char* c : {"npcf", "npcf-h5", "sht-synth", "sht-smooth", "sht-cl", "stack-search", "stack-simulate", "run"}) {
      QTest::newRow(qPrintable(QString("%1 SIGINT").arg(c))) << QString(c) << int(SIGINT) << false << 130;
      QTest::newRow(qPrintable(QString("%1 SIGTERM").arg(c))) << QString(c) << int(SIGTERM) << false << 143;
      QTest::newRow(qPrintable(QString("%1 SIGHUP").arg(c))) << QString(c) << int(SIGHUP) << false << 129;
      QTest::newRow(qPrintable(QString("%1 double SIGINT").arg(c))) << QString(c) << int(SIGINT) << true << -SIGINT;
    }
  }
  void signals_during_the_write_phase_leave_nothing() {
    QFETCH(QString, command);
    QFETCH(int, sig);
    QFETCH(bool, twice);
    QFETCH(int, expected);
    const fs::path out = dir_ / "sig-out";
    fs::remove_all(out);
    fs::create_directories(out);
    QStringList args;
    if (command == "npcf") args = npcf_args(out / "xi.txt");
    else if (command == "npcf-h5") args = npcf_args(out / "xi.h5");
    else if (command == "sht-synth") args = {"sht", "synth", q(alm_), "--nside", "64", "-o", q(out / "m.fits"), "--quiet"};
    else if (command == "sht-smooth") args = {"sht", "smooth", q(map_), "--fwhm-arcmin", "30", "-o", q(out / "s.h5"), "--quiet"};
    else if (command == "sht-cl") args = {"sht", "cl", q(map_), "-o", q(out / "cl.txt"), "--quiet"};
    else if (command == "stack-search")
      args = {"stack", "search", q(stack_), "--vx-range", "-2,2", "--vy-range", "-2,2", "--grid", "5", "-o", q(out / "c.ecsv"), "--quiet"};
    else if (command == "stack-simulate")
      args = {"stack", "simulate", "--exposures", "6", "--width", "24", "--height", "24", "--movers", "1", "-o", q(out / "st.h5"), "--quiet"};
    else {
      const fs::path job = out / "jobs.toml";
      write_text(job, "stat = \"2pcf\"\nrmin = 1\nrmax = 20\nnbins = 5\n[[job]]\ndata = \"" + data_.string() +
                          "\"\nrandoms = \"" + randoms_.string() + "\"\noutput = \"a.txt\"\n[[job]]\ndata = \"" +
                          data_.string() + "\"\nrandoms = \"" + randoms_.string() + "\"\noutput = \"b.h5\"\n");
      args = {"run", q(job), "--quiet"};
    }
    const std::vector<std::string> keep{"jobs.toml"};
    Signalled r = signal_during_write(args, out, sig, twice);
    QVERIFY2(r.saw_temp, "the write phase was never seen");
    QVERIFY2(r.finished, "did not end after the signal");
    if (expected < 0) {
      // The second signal ends the process by that signal if it is still running; a job that
      // had already finished cancelling on the first one exits 130. Either way nothing is left.
      QVERIFY2(r.crashed || r.code == 130,
               qPrintable(QString("exit code %1, expected death by signal or 130; %2").arg(r.code).arg(r.err)));
    } else {
      QVERIFY2(!r.crashed, qPrintable(r.err));
      QCOMPARE(r.code, expected);
      QVERIFY2(r.err.contains("cancelled"), qPrintable(r.err));
    }
    const auto left = extra_entries(out, keep);
    QVERIFY2(left.empty(), qPrintable("left behind: " + joined(left)));
  }

  void full_file_system_gives_exit_5_and_no_file_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("format");
    const QString full = q(dir_ / "full");
    QTest::newRow("npcf gramsci text") << npcf_args(dir_ / "full" / "xi.txt") << "text";
    QTest::newRow("npcf HDF5") << npcf_args(dir_ / "full" / "xi.h5") << "hdf5";
    QTest::newRow("sht map FITS") << QStringList{"sht", "synth", q(alm_), "--nside", "32", "-o", full + "/m.fits", "--quiet"} << "fits";
    QTest::newRow("sht map HDF5") << QStringList{"sht", "synth", q(alm_), "--nside", "32", "-o", full + "/m.h5", "--quiet"} << "hdf5";
    QTest::newRow("sht alm FITS") << QStringList{"sht", "map2alm", q(map_), "-o", full + "/a.fits", "--quiet"} << "fits";
    QTest::newRow("sht alm HDF5") << QStringList{"sht", "map2alm", q(map_), "-o", full + "/a.h5", "--quiet"} << "hdf5";
    QTest::newRow("sht cl text") << QStringList{"sht", "cl", q(map_), "-o", full + "/cl.txt", "--quiet"} << "text";
    QTest::newRow("sht cl FITS") << QStringList{"sht", "cl", q(map_), "-o", full + "/cl.fits", "--quiet"} << "fits";
    QTest::newRow("stack search ECSV")
        << QStringList{"stack", "search", q(stack_), "--vx-range", "-2,2", "--vy-range", "-2,2", "--grid", "5", "-o", full + "/c.ecsv", "--quiet"} << "ecsv";
    QTest::newRow("stack search HDF5")
        << QStringList{"stack", "search", q(stack_), "--vx-range", "-2,2", "--vy-range", "-2,2", "--grid", "5", "-o", full + "/c.h5", "--quiet"} << "hdf5";
    QTest::newRow("stack simulate WorkUnit")
        << QStringList{"stack", "simulate", "--exposures", "6", "--width", "24", "--height", "24", "-o", full + "/s.fits", "--quiet"} << "fits";
    QTest::newRow("stack simulate HDF5")
        << QStringList{"stack", "simulate", "--exposures", "6", "--width", "24", "--height", "24", "-o", full + "/s.h5", "--quiet"} << "hdf5";
  }
  void full_file_system_gives_exit_5_and_no_file() {
    QFETCH(QStringList, args);
    const fs::path full = dir_ / "full";
    fs::create_directories(full);
    if (::mount("tmpfs", full.c_str(), "tmpfs", 0, "size=256k") != 0)
      QSKIP("cannot mount a tmpfs here (needs root): full-disk behaviour not tested");
    struct Unmount {
      fs::path p;
      ~Unmount() { ::umount2(p.c_str(), MNT_DETACH); }
    } unmount{full};
    {  // Fill it up completely.
      std::ofstream fill(full / "fill", std::ios::binary);
      std::string block(4096, 'x');
      while (fill.write(block.data(), block.size())) {
      }
    }
    CliRun r = run_cli(args);
    QVERIFY2(r.finished, "did not finish");
    QVERIFY2(r.code == 5, qPrintable(QString("exit %1: %2").arg(r.code).arg(r.err)));
    QCOMPARE(r.err.count('\n'), 1);
    const auto left = extra_entries(full, {"fill"});
    QVERIFY2(left.empty(), qPrintable("left behind: " + joined(left)));
  }
};

QTEST_GUILESS_MAIN(TestCliOutputs)
#include "test_cli_outputs.moc"
