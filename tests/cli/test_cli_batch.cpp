// almagest-cli run with batches (docs/jobs.md): a 5-member N-point batch interrupted by SIGINT
// after its second member resumes and ends with the same aggregate, bit for bit, as an
// uninterrupted run in another folder; no partial file exists at any time (only the hidden
// temporaries of the running member); editing the configuration recomputes every member and a
// changed input recomputes its member only; the aggregate's mean and covariance equal NumPy's
// over the same member values; a dry run writes nothing; a failing member stops the batch with
// its exit code and names the member, and the members written before it stay.
#include <hdf5.h>

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTest>
#include <cmath>
#include <random>
#include <set>
#include <sstream>

#include "cli_test_support.hpp"

using namespace almagest::cli_test;
namespace fs = std::filesystem;

namespace {

void write_catalogue(const fs::path& p, std::uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 100.0), w(0.5, 1.0);
  std::ostringstream o;
  o.precision(9);
  for (int i = 0; i < n; ++i) o << u(rng) << ' ' << u(rng) << ' ' << u(rng) << ' ' << w(rng) << '\n';
  write_text(p, o.str());
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

/// A dataset read with libhdf5 itself (not the engine's reader).
std::vector<double> h5_doubles(const fs::path& file, const std::string& name) {
  std::vector<double> v;
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return v;
  hid_t d = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
  if (d >= 0) {
    hid_t s = H5Dget_space(d);
    v.resize(static_cast<std::size_t>(H5Sget_simple_extent_npoints(s)));
    H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    H5Sclose(s);
    H5Dclose(d);
  }
  H5Fclose(f);
  return v;
}

double h5_attr(const fs::path& file, const char* name) {
  double x = std::nan("");
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return x;
  hid_t a = H5Aopen(f, name, H5P_DEFAULT);
  if (a >= 0) {
    H5Aread(a, H5T_NATIVE_DOUBLE, &x);
    H5Aclose(a);
  }
  H5Fclose(f);
  return x;
}

/// Events of a JSON-lines log with the given "event" value.
std::vector<QJsonObject> log_events(const fs::path& log, const QString& event) {
  std::vector<QJsonObject> out;
  std::istringstream in(slurp(log));
  for (std::string line; std::getline(in, line);) {
    const QJsonObject o = QJsonDocument::fromJson(QByteArray::fromStdString(line)).object();
    if (o.value("event").toString() == event) out.push_back(o);
  }
  return out;
}

const char* kMembers[] = {"m0.h5", "m1.h5", "m2.h5", "m3.h5", "m4.h5"};

}  // namespace

class TestCliBatch : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_{temp_dir_template("cli-batch")};

  /// A folder with 5 mock catalogues, one random catalogue and the job file.
  fs::path make_batch(const char* name, const std::string& extra = "") {
    const fs::path d = fs::path(tmp_.path().toStdString()) / name;
    fs::create_directories(d / "mocks");
    fs::create_directories(d / "out");
    for (int i = 0; i < 5; ++i) write_catalogue(d / "mocks" / ("m" + std::to_string(i) + ".txt"), 100 + i, 1500);
    write_catalogue(d / "ran.txt", 7, 3000);
    write_jobs(d, extra);
    return d;
  }
  static void write_jobs(const fs::path& d, const std::string& extra, const std::string& rmax = "20") {
    write_text(d / "jobs.toml", "randoms = \"ran.txt\"\nrmin = 2\nrmax = " + rmax +
                                    "\nnbins = 4\nstat = \"4pcf-parity\"\nthreads = 1\n" + extra +
                                    "[[job]]\nname = \"mocks\"\noutput = \"out/{stem}.h5\"\n"
                                    "[job.batch]\ndata = \"mocks/m*.txt\"\n"
                                    "[[aggregate]]\nkind = \"npcf-mean-cov\"\nbatch = \"mocks\"\noutput = \"cov.h5\"\n"
                                    "[[aggregate]]\nkind = \"npcf-parity\"\nbatch = \"mocks\"\noutput = \"parity.h5\"\n");
  }

private slots:
  void initTestCase() { QVERIFY(tmp_.isValid()); }

  void interruptedBatchResumesToTheSameAggregate() {
    const fs::path a = make_batch("a");
    const fs::path log = a / "run.log";
    QProcess p;
    p.start(QStringLiteral(ALMAGEST_CLI), {"run", q(a / "jobs.toml"), "--quiet", "--log-json", q(log)});
    QVERIFY(p.waitForStarted(10000));
    // Poll the output folder: a file there is a finished member or a hidden temporary of the
    // running member, never anything else; SIGINT once the second member's output is there.
    const std::set<std::string> finals(std::begin(kMembers), std::end(kMembers));
    bool sent = false;
    std::string bad;
    QElapsedTimer t;
    t.start();
    while (p.state() != QProcess::NotRunning && t.elapsed() < 60000) {
      std::size_t done = 0;
      std::set<std::string> temp_targets;
      for (const auto& name : listing(a / "out")) {
        if (finals.count(name)) ++done;
        else if (name.front() == '.' && name.find(".tmp.") != std::string::npos) temp_targets.insert(name.substr(1, name.find(".tmp.") - 1));
        else bad = name;
      }
      if (temp_targets.size() > 1) bad = "temporaries of two members at once";
      if (!sent && done >= 2) {
        ::kill(static_cast<pid_t>(p.processId()), SIGINT);
        sent = true;
      }
      p.waitForFinished(5);
    }
    QVERIFY2(p.state() == QProcess::NotRunning || p.waitForFinished(30000), "the run did not end");
    QVERIFY2(bad.empty(), bad.c_str());
    QVERIFY(sent);
    QCOMPARE(p.exitCode(), 130);
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(err.contains("member") && err.contains("cancelled"), qPrintable(err));
    std::size_t written = 0;
    for (const char* m : kMembers) written += fs::exists(a / "out" / m);
    QVERIFY2(written >= 2 && written < 5, qPrintable(QString("%1 members written before the cancel").arg(written)));
    for (const auto& name : listing(a / "out")) QVERIFY2(finals.count(name), name.c_str());  // no temporary left
    QVERIFY(!fs::exists(a / "cov.h5"));

    // Resume: the written members are skipped, the others computed, then the aggregates.
    CliRun r = run_cli({"run", q(a / "jobs.toml"), "--quiet", "--log-json", q(log)});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const auto summaries = log_events(log, "summary");
    QCOMPARE(summaries.size(), std::size_t(2));  // the log is a stream: both runs are in it
    QCOMPARE(summaries.back().value("skipped").toInt(), int(written));
    QCOMPARE(summaries.back().value("written").toInt(), int(5 - written));
    QVERIFY(!log_events(log, "progress").empty());

    // An uninterrupted run in another folder gives the same aggregates, bit for bit.
    const fs::path b = make_batch("b");
    r = run_cli({"run", q(b / "jobs.toml"), "--quiet"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(fs::file_size(a / "cov.h5") > 0);
    QVERIFY(slurp(a / "cov.h5") == slurp(b / "cov.h5"));
    QVERIFY(slurp(a / "parity.h5") == slurp(b / "parity.h5"));
    // A re-run skips every member and rewrites the same bytes.
    const std::string before = slurp(a / "cov.h5");
    r = run_cli({"run", q(a / "jobs.toml"), "--log-json", q(log)});
    QVERIFY2(r.code == 0 && r.out.contains("5 skipped"), qPrintable(r.out + r.err));
    QVERIFY(slurp(a / "cov.h5") == before);

    // A changed input recomputes its member only; a changed configuration recomputes all.
    write_catalogue(a / "mocks" / "m3.txt", 999, 1500);
    r = run_cli({"run", q(a / "jobs.toml"), "--quiet", "--log-json", q(log)});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(log_events(log, "summary").back().value("written").toInt(), 1);
    QVERIFY(slurp(a / "cov.h5") != before);
    write_jobs(a, "", "18");
    r = run_cli({"run", q(a / "jobs.toml"), "--quiet", "--log-json", q(log)});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(log_events(log, "summary").back().value("written").toInt(), 5);
    QCOMPARE(log_events(log, "summary").back().value("skipped").toInt(), 0);
  }

  void meanAndCovarianceEqualNumpy() {
    const fs::path d = make_batch("np");
    CliRun r = run_cli({"run", q(d / "jobs.toml"), "--quiet"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    // h5py is not installed here: the member values are read with libhdf5 and handed to NumPy as
    // text (17 significant digits, exact), which computes mean and covariance on its own.
    std::ostringstream samples;
    samples.precision(17);
    std::size_t p = 0;
    for (const char* m : kMembers) {
      const auto v = h5_doubles(d / "out" / m, "/npcf/4pcf-parity/estimator");
      QVERIFY(!v.empty());
      p = v.size();
      for (std::size_t i = 0; i < v.size(); ++i) samples << (i ? " " : "") << v[i];
      samples << "\n";
    }
    write_text(d / "samples.txt", samples.str());
    QString python = QStringLiteral(ALMAGEST_SOURCE_DIR "/.venv/bin/python");
    if (!fs::exists(python.toStdString())) python = "python3";
    QProcess check;
    check.start(python, {QStringLiteral(ALMAGEST_SOURCE_DIR "/tests/python/check_aggregate.py"), q(d / "samples.txt"),
                         q(d / "numpy.txt")});
    QVERIFY(check.waitForFinished(60000));
    if (check.exitCode() == 77) QSKIP("numpy is not installed: the NumPy comparison is skipped");
    QVERIFY2(check.exitCode() == 0, check.readAllStandardError().constData());
    std::istringstream in(slurp(d / "numpy.txt"));
    std::vector<double> ref;
    for (double x; in >> x;) ref.push_back(x);
    QCOMPARE(ref.size(), p + p * p + 1);
    const auto mean = h5_doubles(d / "cov.h5", "/mean");
    const auto cov = h5_doubles(d / "cov.h5", "/covariance");
    QCOMPARE(mean.size(), p);
    QCOMPARE(cov.size(), p * p);
    double scale = 0;
    for (double c : cov) scale = std::max(scale, std::fabs(c));
    QVERIFY(scale > 0);
    for (std::size_t i = 0; i < p; ++i) QVERIFY2(std::fabs(mean[i] - ref[i]) <= 1e-12 * (1 + std::fabs(ref[i])), qPrintable(QString::number(i)));
    for (std::size_t i = 0; i < p * p; ++i) QVERIFY2(std::fabs(cov[i] - ref[p + i]) <= 1e-12 * scale, qPrintable(QString::number(i)));
    QCOMPARE(h5_attr(d / "cov.h5", "hartlap_factor"), ref.back());
  }

  void dryRunWritesNothing() {
    const fs::path d = make_batch("dry");
    const auto before = listing(d);
    CliRun r = run_cli({"run", q(d / "jobs.toml"), "--dry-run"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    for (const char* s : {"member 5 (m4)", "dry run", "input:", "memory:", "estimated time", "not written", "aggregate 1"})
      QVERIFY2(r.out.contains(s), qPrintable(QString(s) + " missing in: " + r.out));
    QCOMPARE(listing(d), before);
    QCOMPARE(listing(d / "out"), std::vector<std::string>{});
  }

  void failingMemberStopsTheBatch() {
    const fs::path d = make_batch("fail");
    write_text(d / "mocks" / "m2.txt", "1 2 3 1\nnot a number\n");
    CliRun r = run_cli({"run", q(d / "jobs.toml"), "--quiet"});
    QCOMPARE(r.code, 3);
    QVERIFY2(r.err.contains("member 3 (m2)") && r.err.contains("m2.txt"), qPrintable(r.err));
    QCOMPARE(r.err.count('\n'), 1);
    QCOMPARE(listing(d / "out"), (std::vector<std::string>{"m0.h5", "m1.h5"}));
    QVERIFY(!fs::exists(d / "cov.h5"));
  }

  void batchOutputsMustDiffer() {
    const fs::path d = make_batch("same");
    write_text(d / "jobs.toml", "randoms = \"ran.txt\"\nrmin = 2\nrmax = 20\nnbins = 4\nstat = \"2pcf\"\n"
                                "[[job]]\noutput = \"out/xi.h5\"\n[job.batch]\ndata = \"mocks/m*.txt\"\n");
    CliRun r = run_cli({"run", q(d / "jobs.toml"), "--quiet"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("member 2 (m1)") && r.err.contains("also written by") && r.err.contains("{stem}"), qPrintable(r.err));
    QCOMPARE(listing(d / "out"), std::vector<std::string>{});
    // The log may be neither an input nor an output.
    write_jobs(d, "");
    r = run_cli({"run", q(d / "jobs.toml"), "--quiet", "--log-json", q(d / "mocks" / "m1.txt")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("log"), qPrintable(r.err));
    // A parameter batch: nbins = [3, 5] with {name} in the output.
    write_text(d / "p.toml", "data = \"mocks/m0.txt\"\nrandoms = \"ran.txt\"\nrmin = 2\nrmax = 20\nstat = \"2pcf\"\n"
                             "[[job]]\noutput = \"out/xi_{name}_{index}.h5\"\n[job.batch]\nnbins = [3, 5]\n");
    r = run_cli({"run", q(d / "p.toml"), "--quiet"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(listing(d / "out"), (std::vector<std::string>{"xi_nbins-3_1.h5", "xi_nbins-5_2.h5"}));
  }
};

QTEST_GUILESS_MAIN(TestCliBatch)
#include "test_cli_batch.moc"
