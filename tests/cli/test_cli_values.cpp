// almagest-cli against hostile text inputs and user values (issue 19): a catalogue, candidate
// table or curve cut in the middle of a row is refused naming the line; /dev/zero is refused as
// an input; values that size allocations (--grid, --psf-sigma, --seeing, simulate sizes, a sky
// redshift) are refused before any allocation; integer options report what the user wrote;
// job files refuse two spellings of one key and two jobs writing one output, and validate every
// job (inputs included) before the first runs; `stack stamps` refuses a candidate outside the
// stack (ubsan_candh5_139.h5) and a stack that is not the one the table was made from.
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_test_support.hpp"

namespace fs = std::filesystem;
using namespace almagest::cli_test;

namespace {

const fs::path kCorrupt = fs::path(ALMAGEST_SOURCE_DIR) / "tests/fixtures/corrupt";

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

QString describe(const CliRun& r) { return QString("exit %1, stderr: %2").arg(r.code).arg(r.err); }

}  // namespace

class TestCliValues : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_{temp_dir_template("cli-values")};
  fs::path dir_;

  fs::path fresh_dir(const std::string& name) {
    fs::path d = dir_ / name;
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
  }
  QStringList npcf_args(const fs::path& data, const fs::path& out) const {
    return {"npcf", "--stat", "2pcf", "--data", q(data), "--randoms", q(kCorrupt / "ran.txt"), "--rmin", "1",
            "--rmax", "20", "--nbins", "5", "-o", q(out), "-q"};
  }

  /// A small simulated stack (WorkUnit FITS) and a search of it (ECSV candidate table).
  void simulate_and_search(const fs::path& d, const char* seed, const fs::path& stack, const fs::path* table) {
    CliRun r = run_cli({"stack", "simulate", "--exposures", "6", "--width", "24", "--height", "24", "--seed", seed,
                        "--snr", "30", "--speed", "1", "--no-common-curve", "-o", q(stack), "--truth", q(d / (std::string(seed) + "_t.ecsv")), "-q"});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    if (!table) return;
    r = run_cli({"stack", "search", q(stack), "--vx-range=-2,2", "--vy-range=-2,2", "--grid", "5", "--threshold-sigma", "3",
                 "-o", q(*table), "-q"});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
  }

private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    dir_ = tmp_.path().toStdString();
    QVERIFY(fs::exists(kCorrupt / "data.txt"));
  }

  // ---- text inputs ---------------------------------------------------------------------------

  void truncatedCatalogueNamesTheLine() {
    const fs::path d = fresh_dir("trunc-cat");
    std::string text = read_all(kCorrupt / "data.txt");
    text.resize(text.size() - 5);  // inside the last value of the last row
    write_text(d / "data.txt", text);
    CliRun r = run_cli(npcf_args(d / "data.txt", d / "out.h5"));
    QVERIFY2(r.code == 3, qPrintable(describe(r)));
    QVERIFY2(r.err.contains("line 400") && r.err.contains("newline"), qPrintable(r.err));
    QVERIFY(!fs::exists(d / "out.h5"));
  }

  void deviceAsDataIsRefused() {
    const fs::path d = fresh_dir("devzero");
    CliRun r = run_cli(npcf_args("/dev/zero", d / "out.h5"), QProcessEnvironment::systemEnvironment(), 20000);
    QVERIFY2(r.finished && r.code == 3, qPrintable(describe(r)));
    QVERIFY2(r.err.contains("/dev/zero") && r.err.contains("regular file"), qPrintable(r.err));
  }

  void skyRedshiftBeyondTheTableIsRefused() {
    const fs::path d = fresh_dir("sky");
    write_text(d / "sky.txt", "10 20 0.5 1\n30 -10 0.7 1\n50 5 1000000 1\n");
    QStringList a{"npcf", "--stat", "2pcf", "--sky", "--data", q(d / "sky.txt"), "--randoms", q(d / "sky.txt"),
                  "--rmin", "1", "--rmax", "20", "--nbins", "5", "-o", q(d / "o.h5"), "-q"};
    CliRun r = run_cli(a, QProcessEnvironment::systemEnvironment(), 20000);
    QVERIFY2(r.finished && r.code == 3, qPrintable(describe(r)));
    QVERIFY2(r.err.contains("row 3") && r.err.contains("1e+06") && r.err.contains("maximum 100"), qPrintable(r.err));
  }

  // ---- values echoed as written --------------------------------------------------------------

  void integerOptionsEchoWhatWasWritten_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("expect");
    const QString data = q(kCorrupt / "data.txt"), ran = q(kCorrupt / "ran.txt"), stack = q(kCorrupt / "stack_for_stamps.fits");
    const QStringList npcf{"npcf", "--stat", "2pcf", "--data", data, "--randoms", ran, "--rmin", "1", "--rmax", "20", "-o", "/tmp/never.h5"};
    QTest::newRow("nbins 2^32") << (npcf + QStringList{"--nbins", "4294967296"}) << "got 4294967296";
    QTest::newRow("nbins -5") << (npcf + QStringList{"--nbins", "-5"}) << "got -5";
    QTest::newRow("threads -7") << (npcf + QStringList{"--nbins", "5", "--threads", "-7"}) << "got -7";
    const QStringList search{"stack", "search", stack, "--vx-range=-1,1", "--vy-range=-1,1", "-o", "/tmp/never.ecsv"};
    QTest::newRow("max-candidates -1") << (search + QStringList{"--max-candidates", "-1"}) << "got -1";
    QTest::newRow("threads 2^32") << (search + QStringList{"--threads", "4294967296"}) << "got 4294967296";
    QTest::newRow("top-k 2^64") << (search + QStringList{"--top-k", "18446744073709551616"}) << "got 18446744073709551616";
    QTest::newRow("min-obs octal") << (search + QStringList{"--min-obs", "0x10"}) << "--min-obs: must be an integer, got '0x10'";  // the schema's message
    QTest::newRow("grid 1e5 squared") << (search + QStringList{"--grid", "100000x100000"}) << "10000000000 velocities";
    QTest::newRow("psf sigma 1e6") << (search + QStringList{"--psf-sigma", "1e6"}) << "--psf-sigma";
    QTest::newRow("stamp radius") << QStringList{"stack", "stamps", q(kCorrupt / "ubsan_candh5_139.h5"), "--stamp-radius", "4294967299", "-o", "/tmp/never.h5"}
                                  << "got 4294967299";
    QTest::newRow("simulate seeing") << QStringList{"stack", "simulate", "--seeing", "1,1e6", "-o", "/tmp/never.fits"} << "--seeing";
    QTest::newRow("simulate size") << QStringList{"stack", "simulate", "--exposures", "100000", "--width", "60000", "--height", "60000", "-o", "/tmp/never.fits"}
                                   << "more than the 1073741824";
  }
  void integerOptionsEchoWhatWasWritten() {
    QFETCH(QStringList, args);
    QFETCH(QString, expect);
    CliRun r = run_cli(args, QProcessEnvironment::systemEnvironment(), 20000);
    QVERIFY2(r.finished && r.code == 2, qPrintable(describe(r)));
    QVERIFY2(r.err.contains(expect), qPrintable(r.err));
  }

  // ---- job files -----------------------------------------------------------------------------

  void jsonNegativeNbinsIsEchoed() {
    const fs::path d = fresh_dir("json-nbins");
    write_text(d / "job.json", "{\"stat\": \"2pcf\", \"data\": \"" + (kCorrupt / "data.txt").string() + "\", \"randoms\": \"" +
                                   (kCorrupt / "ran.txt").string() + "\", \"rmin\": 1, \"rmax\": 20, \"nbins\": -5, \"output\": \"o.h5\"}\n");
    CliRun r = run_cli({"run", q(d / "job.json"), "-q"});
    QVERIFY2(r.code == 2, qPrintable(describe(r)));
    QVERIFY2(r.err.contains("got -5") && !r.err.contains("got -1"), qPrintable(r.err));
  }

  void twoSpellingsOfOneKeyAreAnError() {
    const fs::path d = fresh_dir("spellings");
    const std::string common = "stat = \"2pcf\"\ndata = \"" + (kCorrupt / "data.txt").string() + "\"\nrandoms = \"" +
                               (kCorrupt / "ran.txt").string() + "\"\nrmin = 1.0\nrmax = 20.0\nnbins = 5\noutput = \"o.h5\"\n";
    write_text(d / "job.toml", common + "log-bins = true\nlog_bins = true\n");  // equal values: still an error
    CliRun r = run_cli({"run", q(d / "job.toml"), "-q"});
    QVERIFY2(r.code == 2, qPrintable(describe(r)));
    QVERIFY2(r.err.contains("'log-bins'") && r.err.contains("'log_bins'"), qPrintable(r.err));
    write_text(d / "job.json", "{\"stat\": \"2pcf\", \"nbins\": 5, \"nbins\": 6}\n");
    r = run_cli({"run", q(d / "job.json"), "-q"});
    QVERIFY2(r.code == 2 && r.err.contains("'nbins' is given twice"), qPrintable(describe(r)));
    QVERIFY(!fs::exists(d / "o.h5"));
  }

  void twoJobsWritingOneOutputAreAnError() {
    const fs::path d = fresh_dir("same-out");
    fs::create_directories(d / "sub");
    const std::string common = "data = \"" + (kCorrupt / "data.txt").string() + "\"\nrandoms = \"" +
                               (kCorrupt / "ran.txt").string() + "\"\nrmin = 1.0\nrmax = 20.0\nnbins = 5\nstat = \"2pcf\"\n";
    write_text(d / "job.toml", common + "[[job]]\noutput = \"xi.h5\"\n[[job]]\noutput = \"sub/../xi.h5\"\n");
    CliRun r = run_cli({"run", q(d / "job.toml"), "-q"});
    QVERIFY2(r.code == 2, qPrintable(describe(r)));
    QVERIFY2(r.err.contains("job 2") && r.err.contains("also written by") && r.err.contains("job 1"), qPrintable(r.err));
    QVERIFY(!fs::exists(d / "xi.h5"));
  }

  void everyJobIsCheckedBeforeTheFirstRuns() {
    const fs::path d = fresh_dir("all-jobs");
    const std::string common = "randoms = \"" + (kCorrupt / "ran.txt").string() + "\"\nrmin = 1.0\nrmax = 20.0\nstat = \"2pcf\"\n";
    write_text(d / "job.toml", common + "[[job]]\ndata = \"" + (kCorrupt / "data.txt").string() +
                                   "\"\nnbins = 5\noutput = \"a.h5\"\n[[job]]\ndata = \"missing.txt\"\nnbins = 5\noutput = \"b.h5\"\n");
    CliRun r = run_cli({"run", q(d / "job.toml"), "-q"});
    QVERIFY2(r.code == 3, qPrintable(describe(r)));
    QVERIFY2(r.err.contains("job 2") && r.err.contains("missing.txt") && r.err.contains("does not exist"), qPrintable(r.err));
    QVERIFY(!fs::exists(d / "a.h5"));  // job 1 did not run
    // A bad value in job 3 and a missing input in job 2: both reported, config first (exit 2).
    write_text(d / "job.toml", common + "[[job]]\ndata = \"" + (kCorrupt / "data.txt").string() +
                                   "\"\nnbins = 5\noutput = \"a.h5\"\n[[job]]\ndata = \"missing.txt\"\nnbins = 5\noutput = \"b.h5\"\n"
                                   "[[job]]\ndata = \"" + (kCorrupt / "data.txt").string() + "\"\nnbins = 0\noutput = \"c.h5\"\n");
    r = run_cli({"run", q(d / "job.toml"), "-q"});
    QVERIFY2(r.code == 2 && r.err.contains("job 2") && r.err.contains("job 3") && r.err.contains("got 0"), qPrintable(describe(r)));
    QVERIFY(!fs::exists(d / "a.h5"));
  }

  // ---- stack stamps --------------------------------------------------------------------------

  void candidateNearIntMinIsRefused() {
    const fs::path d = fresh_dir("ubsan-cand");
    const QString stack = q(kCorrupt / "stack_for_stamps.fits");
    // The fuzzed HDF5 table: refused (by the HDF5 reader's type checks or the range check), exit 3.
    CliRun r = run_cli({"stack", "stamps", q(kCorrupt / "ubsan_candh5_139.h5"), "--stack", stack, "--stamp-radius", "3",
                        "-o", q(d / "s.h5"), "-q"});
    QVERIFY2(r.code == 3 && r.err.contains("ubsan_candh5_139.h5"), qPrintable(describe(r)));
    QVERIFY(!fs::exists(d / "s.h5"));
    // The same values in an ECSV table reach the range check: table, row and column named.
    const std::string head = "# %ECSV 1.0\n# ---\n# delimiter: ','\nx,y,vx,vy\n";
    write_text(d / "x.ecsv", head + "3,4,0.5,0.5\n-2147483000,4,0.5,0.5\n");
    r = run_cli({"stack", "stamps", q(d / "x.ecsv"), "--stack", stack, "--stamp-radius", "3", "-o", q(d / "s.h5"), "-q"});
    QVERIFY2(r.code == 3 && r.err.contains("x.ecsv: row 2, column x") && r.err.contains("-2147483000"), qPrintable(describe(r)));
    write_text(d / "v.ecsv", head + "3,4,1e300,0.5\n");
    r = run_cli({"stack", "stamps", q(d / "v.ecsv"), "--stack", stack, "--stamp-radius", "3", "-o", q(d / "s.h5"), "-q"});
    QVERIFY2(r.code == 3 && r.err.contains("v.ecsv: row 1, column vx"), qPrintable(describe(r)));
    write_text(d / "ok.ecsv", head + "3,4,0.5,0.5\n");
    r = run_cli({"stack", "stamps", q(d / "ok.ecsv"), "--stack", stack, "--stamp-radius", "3", "-o", q(d / "s.h5"), "-q"});
    QVERIFY2(r.code == 0 && fs::exists(d / "s.h5"), qPrintable(describe(r)));
  }

  void stampsRefuseAnotherStack() {
    const fs::path d = fresh_dir("identity");
    const fs::path a = d / "a.fits", b = d / "b.fits", table = d / "c.ecsv";
    simulate_and_search(d, "1", a, &table);
    simulate_and_search(d, "2", b, nullptr);
    CliRun r = run_cli({"stack", "stamps", q(table), "--stamp-radius", "2", "-o", q(d / "ok.h5"), "-q"});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    r = run_cli({"stack", "stamps", q(table), "--stack", q(b), "--stamp-radius", "2", "-o", q(d / "s.h5"), "-q"});
    QVERIFY2(r.code == 3, qPrintable(describe(r)));
    QVERIFY2(r.err.contains("is not the stack") && (r.err.contains("MJD") || r.err.contains("content differs")), qPrintable(r.err));
    QVERIFY(!fs::exists(d / "s.h5"));
    // The recorded stack itself, changed after the search (same shape and MJDs, other pixels).
    fs::copy_file(b, a, fs::copy_options::overwrite_existing);
    r = run_cli({"stack", "stamps", q(table), "--stamp-radius", "2", "-o", q(d / "s.h5"), "-q"});
    QVERIFY2(r.code == 3 && r.err.contains("is not the stack"), qPrintable(describe(r)));
    // A truncated candidate table names its last line.
    std::string text = read_all(table);
    QVERIFY(text.size() > 10);
    write_text(d / "cut.ecsv", text.substr(0, text.size() - 3));
    r = run_cli({"stack", "stamps", q(d / "cut.ecsv"), "--stack", q(b), "--stamp-radius", "2", "-o", q(d / "s.h5"), "-q"});
    QVERIFY2(r.code == 3 && r.err.contains("line ") && r.err.contains("newline"), qPrintable(describe(r)));
  }

  void truncatedCurveAndVelocityFilesNameTheLine() {
    const fs::path d = fresh_dir("curve");
    write_text(d / "v.txt", "0 0\n1 1\n0.5 0.2");
    CliRun r = run_cli({"stack", "search", q(kCorrupt / "stack_for_stamps.fits"), "--velocities", q(d / "v.txt"),
                        "-o", q(d / "c.ecsv"), "-q"});
    QVERIFY2(r.code == 3 && r.err.contains("v.txt: line 3"), qPrintable(describe(r)));
  }
};

QTEST_GUILESS_MAIN(TestCliValues)
#include "test_cli_values.moc"
