// almagest-cli against the library: the CLI's output equals the API's output for the same job
// (every number of the HDF5 datasets, every GRAMSCI text row), every bad input is rejected with
// a one-line message naming it, a non-zero exit code and no output file, job files (TOML and
// JSON) equal the flags, --dry-run writes nothing, Ctrl-C cancels with exit code 130, and the
// demo writes its report.
#include <QtTest>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "almagest/core/gpu.hpp"
#include "almagest/io/catalogue.hpp"
#include "almagest/io/hdf5_file.hpp"
#include "almagest/npcf/job.hpp"
#include "almagest/npcf/plan.hpp"
#include "almagest/npcf/points.hpp"
#include "almagest/npcf/result.hpp"
#include "npcf_testdata.hpp"

namespace fs = std::filesystem;
using namespace almagest;

#include "cli_test_support.hpp"

using namespace almagest::cli_test;

namespace {




std::vector<std::string> data_rows(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> rows;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') rows.push_back(line);
  return rows;
}

std::vector<std::string> data_rows_of_text(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> rows;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') rows.push_back(line);
  return rows;
}


/// The library's results for the same job, computed in this process.
std::vector<npcf::NpcfResult> library_results(npcf::NpcfConfig config, const std::string& data,
                                              const std::string& randoms,
                                              const std::vector<npcf::Statistic>& stats) {
  io::CatalogueSpec ds;
  ds.path = data;
  io::Catalogue d = io::load_catalogue(ds);
  std::optional<io::Catalogue> r;
  if (!randoms.empty()) {
    io::CatalogueSpec rs;
    rs.path = randoms;
    r = io::load_catalogue(rs);
  }
  npcf::PointSet points = npcf::make_point_set(d, r ? &*r : nullptr);
  if (config.periodic) npcf::wrap_periodic(points, config.box);
  config.statistic = stats.front();
  JobContext ctx;
  npcf::NpcfPlan plan(config, std::move(points), ctx);
  std::vector<npcf::NpcfResult> out;
  for (auto s : stats) out.push_back(plan.execute(s, ctx));
  return out;
}

void compare_results(const npcf::NpcfResult& cli, const npcf::NpcfResult& lib) {
  QCOMPARE(int(cli.statistic), int(lib.statistic));
  QCOMPARE(cli.order, lib.order);
  QCOMPARE(cli.ndata, lib.ndata);
  QCOMPARE(cli.nrandom, lib.nrandom);
  QCOMPARE(cli.graph_edges, lib.graph_edges);
  QCOMPARE(cli.analytic_randoms, lib.analytic_randoms);
  QVERIFY(lib.rows() > 0);
  QCOMPARE(cli.bins, lib.bins);
  QCOMPARE(cli.tuples, lib.tuples);
  QCOMPARE(cli.random_tuples, lib.random_tuples);
  // Exact equality of every double (same inputs, same deterministic reduction order).
  QCOMPARE(cli.n, lib.n);
  QCOMPARE(cli.r, lib.r);
  QCOMPARE(cli.estimator, lib.estimator);
  QCOMPARE(cli.zeta_disc, lib.zeta_disc);
  QCOMPARE(cli.zeta_conn, lib.zeta_conn);
  QCOMPARE(cli.realisable, lib.realisable);
  QCOMPARE(cli.xi_internal, lib.xi_internal);
  QCOMPARE(cli.n_odd, lib.n_odd);
  QCOMPARE(cli.r_odd, lib.r_odd);
  QCOMPARE(cli.zeta_odd, lib.zeta_odd);
  QCOMPARE(cli.degenerate, lib.degenerate);
  QCOMPARE(cli.config.bins.rmin, lib.config.bins.rmin);
  QCOMPARE(cli.config.bins.rmax, lib.config.bins.rmax);
  QCOMPARE(cli.config.bins.nbins, lib.config.bins.nbins);
  // The estimator is not all zeros: the comparison means something.
  QVERIFY(std::any_of(lib.estimator.begin(), lib.estimator.end(), [](double v) { return v != 0; }));
}


}  // namespace

class TestCliNpcf : public QObject {
  Q_OBJECT

  std::optional<QTemporaryDir> tmp_;
  fs::path dir_, data_, randoms_;

  fs::path fresh_dir(const std::string& name) {
    fs::path d = dir_ / name;
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
  }
  QStringList base_args() const {
    return {"npcf", "--data", q(data_), "--randoms", q(randoms_), "--rmin", "2", "--rmax", "20",
            "--nbins", "6", "--threads", "2", "--quiet"};
  }

private slots:
  void initTestCase() {
    QVERIFY2(fs::exists(ALMAGEST_CLI), ALMAGEST_CLI);
    tmp_.emplace(temp_dir_template("cli-npcf"));
    QVERIFY(tmp_->isValid());
    dir_ = tmp_->path().toStdString();
    data_ = dir_ / "data.txt";
    randoms_ = dir_ / "randoms.txt";
    // Clustered, weighted data and uniform weighted randoms in a 200 Mpc/h box (seeded).
    io::save_catalogue_text(test::clustered_catalogue(1500, 200.0, 8, 3.0, 1001, 0.5, 1.5), data_.string());
    io::save_catalogue_text(test::uniform_catalogue(3000, 200.0, 1002, 0.8, 1.2), randoms_.string());
  }

  // (a) HDF5: two statistics from one graph, compared number by number with the library.
  void cliEqualsLibraryHdf5() {
    fs::path out = fresh_dir("a-hdf5");
    QStringList args = base_args();
    args << "--stat" << "2pcf,3pcf" << "-o" << q(out / "res.h5");
    CliRun r = run_cli(args);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(r.out.isEmpty());  // --quiet
    QCOMPARE(listing(out), (std::vector<std::string>{"res_2pcf.h5", "res_3pcf.h5"}));

    npcf::NpcfConfig c;
    c.bins.rmin = 2;
    c.bins.rmax = 20;
    c.bins.nbins = 6;
    auto lib = library_results(c, data_.string(), randoms_.string(),
                               {npcf::Statistic::TwoPoint, npcf::Statistic::ThreePoint});
    compare_results(npcf::read_hdf5((out / "res_2pcf.h5").string()), lib[0]);
    if (QTest::currentTestFailed()) return;
    compare_results(npcf::read_hdf5((out / "res_3pcf.h5").string()), lib[1]);
    QCOMPARE(lib[1].rows(), std::size_t(6 * 7 * 8 / 6));
  }

  // (a) GRAMSCI text: parity 4pCF (pixel directions) row for row.
  void cliEqualsLibraryGramsciParity() {
    fs::path out = fresh_dir("a-gramsci");
    QStringList args = base_args();
    args.replace(args.indexOf("6"), "3");  // --nbins 3
    args << "--stat" << "4pcf-parity" << "--format" << "gramsci" << "-o" << q(out / "p.txt");
    CliRun r = run_cli(args);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    npcf::NpcfConfig c;
    c.bins = {2, 20, 3, npcf::BinScale::Linear};
    c.store_pixels = true;
    auto lib = library_results(c, data_.string(), randoms_.string(), {npcf::Statistic::FourPointParity});
    auto expected = data_rows_of_text(npcf::format_gramsci(lib[0]));
    auto got = data_rows((out / "p.txt").string());
    QCOMPARE(got.size(), std::size_t(66));  // (n^6 + 9n^4 + 14n^2)/24 for n = 3
    QCOMPARE(got, expected);
  }

  // (a) Periodic box without randoms (analytic randoms), log bins, exact equality of text rows.
  void cliEqualsLibraryPeriodicLog() {
    fs::path out = fresh_dir("a-periodic");
    CliRun r = run_cli({"npcf", "--stat", "2pcf", "--data", q(data_), "--periodic", "--box", "200",
                        "--rmin", "1", "--rmax", "40", "--nbins", "8", "--log-bins", "--format",
                        "gramsci", "-o", q(out / "xi.txt"), "--quiet"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    npcf::NpcfConfig c;
    c.bins = {1, 40, 8, npcf::BinScale::Log};
    c.periodic = true;
    c.box = 200;
    auto lib = library_results(c, data_.string(), "", {npcf::Statistic::TwoPoint});
    QVERIFY(lib[0].analytic_randoms);
    QCOMPARE(data_rows((out / "xi.txt").string()), data_rows_of_text(npcf::format_gramsci(lib[0])));
  }

  // (b) Every bad input: one-line message naming the problem, its exit code, no output at all.
  void badInputs_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<int>("code");
    QTest::addColumn<QString>("message");

    // Catalogues with defects.
    write_text(dir_ / "nan.txt", "1 2 3 1\n4 5 6 1\n7 nan 9 1\n10 11 12 1\n");
    write_text(dir_ / "inf.txt", "1 2 3 1\n4 5 inf 1\n7 8 9 1\n");
    write_text(dir_ / "empty.txt", "# x y z w\n");
    {
      std::ofstream z(dir_ / "zero_weights.txt");
      for (int i = 0; i < 200; ++i) z << (i * 0.7) << ' ' << (i * 0.3) << ' ' << (i * 0.5) << ' ' << (i % 2 ? 1 : -1) << '\n';
    }
    const QString d = q(data_), rn = q(randoms_);
    const QString out = q(dir_ / "b-out" / "out.h5");
    auto job = [&](QStringList extra) {
      QStringList a{"npcf", "--stat", "2pcf", "--randoms", rn, "--rmin", "2", "--rmax", "20",
                    "--nbins", "6", "-o", out};
      return a + extra;
    };
    QTest::newRow("missing data file") << job({"--data", q(dir_ / "nope.txt")}) << 3 << "nope.txt: file does not exist";
    QTest::newRow("missing randoms file") << (QStringList{"npcf", "--stat", "2pcf", "--data", d, "--randoms", q(dir_ / "nor.txt"), "--rmin", "2", "--rmax", "20", "--nbins", "6", "-o", out}) << 3 << "nor.txt";
    QTest::newRow("missing column") << job({"--data", d, "--data-columns", "1,2,9"}) << 3 << "column";
    QTest::newRow("missing named column") << job({"--data", d, "--data-columns", "x,y,zz"}) << 3 << "zz";
    QTest::newRow("NaN coordinate") << job({"--data", q(dir_ / "nan.txt")}) << 3 << "nan.txt";
    QTest::newRow("infinite coordinate") << job({"--data", q(dir_ / "inf.txt")}) << 3 << "inf.txt";
    QTest::newRow("empty catalogue") << job({"--data", q(dir_ / "empty.txt")}) << 3 << "empty";
    QTest::newRow("weights summing to zero") << job({"--data", q(dir_ / "zero_weights.txt")}) << 3 << "zero_weights.txt";
    QTest::newRow("rmax <= rmin") << (QStringList{"npcf", "--stat", "2pcf", "--data", d, "--randoms", rn, "--rmin", "20", "--rmax", "20", "--nbins", "6", "-o", out}) << 2 << "--rmax: must be greater than rmin";
    auto binned = [&](const QString& rmin, const QString& nbins) {
      return QStringList{"npcf", "--stat", "2pcf", "--data", d, "--randoms", rn, "--rmin", rmin,
                         "--rmax", "20", "--nbins", nbins, "-o", out};
    };
    QTest::newRow("nbins 0") << binned("2", "0") << 2 << "--nbins: must be in [1, 255]";
    QTest::newRow("nbins 256") << binned("2", "256") << 2 << "--nbins: must be in [1, 255]";
    QTest::newRow("nbins not an integer") << binned("2", "7.5") << 2 << "--nbins: must be an integer, got '7.5'";
    QTest::newRow("nbins > 20 for 4pcf") << (QStringList{"npcf", "--stat", "4pcf", "--data", d, "--randoms", rn, "--rmin", "2", "--rmax", "20", "--nbins", "21", "-o", out}) << 2 << "1..20";
    QTest::newRow("rmax too large for periodic box") << (QStringList{"npcf", "--stat", "2pcf", "--data", d, "--periodic", "--box", "200", "--rmin", "1", "--rmax", "100", "--nbins", "6", "-o", out}) << 2 << "box/2";
    QTest::newRow("rmax too large for periodic 3pcf") << (QStringList{"npcf", "--stat", "3pcf", "--data", d, "--periodic", "--box", "200", "--rmin", "1", "--rmax", "60", "--nbins", "6", "-o", out}) << 2 << "box/4";
    QTest::newRow("unknown statistic") << job({"--data", d, "--stat", "5pcf"}) << 2 << "unknown statistic '5pcf'";
    QTest::newRow("output directory missing") << (QStringList{"npcf", "--stat", "2pcf", "--data", d, "--randoms", rn, "--rmin", "2", "--rmax", "20", "--nbins", "6", "-o", q(dir_ / "b-out" / "no-such-dir" / "out.h5")}) << 5 << "does not exist";
    QTest::newRow("not a number") << binned("two", "6") << 2 << "--rmin: 'two' is not a number";
    QTest::newRow("option given twice") << job({"--data", d, "--nbins", "7"}) << 2 << "--nbins";
    QTest::newRow("missing required option") << (QStringList{"npcf", "--stat", "2pcf", "--randoms", rn, "--rmin", "2", "--rmax", "20", "--nbins", "6", "-o", out}) << 2 << "--data: is required";
    QTest::newRow("no randoms, not periodic") << (QStringList{"npcf", "--stat", "2pcf", "--data", d, "--rmin", "2", "--rmax", "20", "--nbins", "6", "-o", out}) << 2 << "random catalogue is required";
    QTest::newRow("unknown flag") << job({"--data", d, "--colour", "red"}) << 2 << "--colour";
    QTest::newRow("cuda backend without GPU")
        << job({"--data", d, "--backend", "cuda"}) << 4 << "backend unavailable";
  }

  void badInputs() {
    QFETCH(QStringList, args);
    QFETCH(int, code);
    QFETCH(QString, message);
    if (QString(QTest::currentDataTag()) == "cuda backend without GPU") {
      if (gpu_status().available) QSKIP("a GPU is available here: --backend cuda is valid");
    }
    fs::path out = fresh_dir("b-out");
    CliRun r = run_cli(args);
    QVERIFY(r.finished);
    QVERIFY2(r.code == code, qPrintable(QString("exit %1, stderr: %2").arg(r.code).arg(r.err)));
    QVERIFY2(r.err.contains(message), qPrintable(r.err));
    QVERIFY2(r.err.startsWith("almagest-cli: error: "), qPrintable(r.err));
    QCOMPARE(r.err.count('\n'), 1);  // exactly one line
    QVERIFY(r.err.endsWith('\n'));
    QCOMPARE(listing(out), std::vector<std::string>{});  // no output, no temporary left behind
  }

  // (c) A TOML job file and the equivalent JSON job file equal the flags; paths relative to the
  // job file; top-level keys shared by every [[job]].
  void jobFilesEqualFlags() {
    fs::path flags = fresh_dir("c-flags");
    QStringList args = base_args();
    args << "--stat" << "2pcf,3pcf-equilateral" << "-o" << q(flags / "r.h5");
    CliRun r = run_cli(args);
    QVERIFY2(r.code == 0, qPrintable(r.err));

    fs::path jobs = fresh_dir("c-jobs");
    fs::create_directories(jobs / "toml");
    fs::create_directories(jobs / "json");
    fs::copy_file(data_, jobs / "d.txt");
    fs::copy_file(randoms_, jobs / "r.txt");
    write_text(jobs / "jobs.toml",
               "# shared by every job\n"
               "data = \"d.txt\"\nrandoms = \"r.txt\"\nrmin = 2\nrmax = 20.0\nthreads = 2\n"
               "[[job]]\nstat = [\"2pcf\", \"3pcf-equilateral\"]\nnbins = 6\noutput = \"toml/r.h5\"\n"
               "[[job]]\nstat = \"2pcf\"\nnbins = 4\nlog_bins = true\noutput = \"toml/log.h5\"\n");
    write_text(jobs / "jobs.json",
               R"({"data": "d.txt", "randoms": "r.txt", "rmin": 2.0, "rmax": 20, "threads": 2,
                   "job": [{"stat": "2pcf,3pcf-equilateral", "nbins": 6, "output": "json/r.h5"},
                           {"stat": ["2pcf"], "nbins": 4, "log-bins": true, "output": "json/log.h5"}]})");
    for (const char* file : {"jobs.toml", "jobs.json"}) {
      CliRun j = run_cli({"run", q(jobs / file), "--quiet"});
      QVERIFY2(j.code == 0, qPrintable(QString(file) + ": " + j.err));
    }
    for (const char* sub : {"toml", "json"}) {
      QCOMPARE(listing(jobs / sub),
               (std::vector<std::string>{"log.h5", "r_2pcf.h5", "r_3pcf-equilateral.h5"}));
      for (const char* name : {"r_2pcf.h5", "r_3pcf-equilateral.h5"}) {
        compare_results(npcf::read_hdf5((jobs / sub / name).string()),
                        npcf::read_hdf5((flags / name).string()));
        if (QTest::currentTestFailed()) return;
      }
      npcf::NpcfResult log = npcf::read_hdf5((jobs / sub / "log.h5").string());
      QCOMPARE(int(log.config.bins.scale), int(npcf::BinScale::Log));
      QCOMPARE(log.rows(), std::size_t(4));
    }
    // The flags' equivalent of the second job gives the same numbers too.
    fs::path flags2 = fresh_dir("c-flags2");
    args = base_args();
    args.replace(args.indexOf("6"), "4");
    args << "--stat" << "2pcf" << "--log-bins" << "-o" << q(flags2 / "log.h5");
    r = run_cli(args);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    compare_results(npcf::read_hdf5((jobs / "toml" / "log.h5").string()),
                    npcf::read_hdf5((flags2 / "log.h5").string()));
  }

  // (c) A run stops at the first failing job with that job's exit code; earlier outputs stay.
  void jobFileStopsAtFirstFailure() {
    fs::path jobs = fresh_dir("c-fail");
    write_text(jobs / "jobs.toml",
               "randoms = \"" + randoms_.string() + "\"\nrmin = 2\nrmax = 20\nnbins = 4\nstat = \"2pcf\"\n"
               "[[job]]\ndata = \"" + data_.string() + "\"\noutput = \"one.h5\"\n"
               "[[job]]\ndata = \"missing.txt\"\noutput = \"two.h5\"\n"
               "[[job]]\ndata = \"" + data_.string() + "\"\noutput = \"three.h5\"\n");
    CliRun r = run_cli({"run", q(jobs / "jobs.toml"), "--quiet"});
    QCOMPARE(r.code, 3);
    QVERIFY2(r.err.contains("job 2") && r.err.contains("missing.txt"), qPrintable(r.err));
    QCOMPARE(r.err.count('\n'), 1);
    // Every job's inputs are checked before the first runs (issue 19): job 1 did not run either.
    QVERIFY(!fs::exists(jobs / "one.h5"));
    QVERIFY(!fs::exists(jobs / "two.h5"));
    QVERIFY(!fs::exists(jobs / "three.h5"));

    // Configuration errors in any job are found before anything runs; they name file, job, key.
    write_text(jobs / "bad.json",
               R"({"job": [{"stat": "2pcf", "data": "a.txt", "randoms": "b.txt", "rmin": 1, "rmax": 10, "nbins": 4, "output": "ok.h5"},
                           {"stat": "2pcf", "data": "a.txt", "randoms": "b.txt", "rmin": 1, "rmax": 10, "nbins": 4, "output": "x.h5", "bogus": 1}]})");
    r = run_cli({"run", q(jobs / "bad.json")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("bad.json: job 2: bogus: unknown option"), qPrintable(r.err));
    QVERIFY(!fs::exists(jobs / "ok.h5"));

    write_text(jobs / "syntax.toml", "rmin = = 3\n");
    r = run_cli({"run", q(jobs / "syntax.toml")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("syntax.toml:1:"), qPrintable(r.err));
    r = run_cli({"run", q(jobs / "none.toml")});
    QCOMPARE(r.code, 3);
  }

  // (d) --dry-run prints the graph estimate, writes nothing, and the estimate is close to the
  // real graph.
  void dryRun() {
    fs::path out = fresh_dir("d-dry");
    QStringList args = base_args();
    args.removeAll("--quiet");
    args << "--stat" << "3pcf" << "--dry-run" << "-o" << q(out / "x.h5");
    CliRun r = run_cli(args);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(listing(out), std::vector<std::string>{});
    QRegularExpression re("graph estimate: (\\d+) edges \\(half graph\\), mean neighbours ([0-9.]+), "
                          "memory (\\d+) bytes");
    auto m = re.match(r.out);
    QVERIFY2(m.hasMatch(), qPrintable(r.out));
    const double edges = m.captured(1).toDouble(), mean = m.captured(2).toDouble();
    const double bytes = m.captured(3).toDouble();

    npcf::NpcfConfig c;
    c.bins = {2, 20, 6, npcf::BinScale::Linear};
    c.statistic = npcf::Statistic::ThreePoint;
    io::CatalogueSpec ds, rs;
    ds.path = data_.string();
    rs.path = randoms_.string();
    auto d = io::load_catalogue(ds), rr = io::load_catalogue(rs);
    npcf::NpcfPlan plan(c, npcf::make_point_set(d, &rr), JobContext{});
    const double actual = double(plan.graph().num_edges());
    QVERIFY(actual > 1000);
    QVERIFY2(std::abs(edges - actual) < 0.15 * actual,
             qPrintable(QString("estimate %1 vs actual %2").arg(edges).arg(actual)));
    QVERIFY(std::abs(mean - 2.0 * actual / 4500.0) < 0.15 * mean);
    QVERIFY(bytes >= 5.0 * edges);  // 4-byte neighbour + 1-byte bin per stored edge at least
  }

  // Ctrl-C cancels promptly with exit code 130 and leaves no output.
  void interruptCancels() {
    fs::path out = fresh_dir("cancel");
    io::save_catalogue_text(test::clustered_catalogue(20000, 150.0, 10, 3.0, 77), (out / "big.txt").string());
    io::save_catalogue_text(test::uniform_catalogue(20000, 150.0, 78), (out / "bigr.txt").string());
    fs::path res = fresh_dir("cancel-out");
    const Interrupted r = interrupt_cli({"npcf", "--stat", "4pcf-parity", "--data", q(out / "big.txt"), "--randoms", q(out / "bigr.txt"),
             "--rmin", "1", "--rmax", "15", "--nbins", "5", "--threads", "2", "-o", q(res / "x.h5")}, 1500);
    const QString why = cancel_failure(r, res);
    QVERIFY2(why.isEmpty(), qPrintable(why));
  }

  // --help explains every option of the schema and lists the exit codes.
  void helpListsEveryOption() {
    CliRun r = run_cli({"npcf", "--help"});
    QCOMPARE(r.code, 0);
    for (const auto& o : npcf::npcf_schema().fields)
      QVERIFY2(r.out.contains(QString::fromStdString("--" + o.key)), o.key.c_str());
    for (const char* s : {"--dry-run", "--quiet", "Exit codes", "130", "Mpc/h", "[1, 255]"})
      QVERIFY2(r.out.contains(s), s);
    CliRun info = run_cli({"info"});
    QCOMPARE(info.code, 0);
    QVERIFY(info.out.contains("GPU:"));
    QVERIFY(info.out.contains("threads:"));
  }

  // (e) The demo on a small catalogue set (ALMAGEST_RESOURCE_DIR): report and HDF5 results.
  void demoWritesReport() {
    fs::path res = fresh_dir("e-resources");
    fs::create_directories(res / "demo");
    io::save_catalogue_text(test::clustered_catalogue(1200, 150.0, 8, 3.0, 501), (res / "demo" / "data.txt").string());
    io::save_catalogue_text(test::uniform_catalogue(2400, 150.0, 502), (res / "demo" / "randoms.txt").string());
    fs::path out = dir_ / "e-demo-out";  // created by the demo
    fs::remove_all(out);
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("ALMAGEST_RESOURCE_DIR", q(res));
    CliRun r = run_cli({"demo", "--out", q(out), "--threads", "2"}, env);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(listing(out), (std::vector<std::string>{"demo-report.md", "demo_2pcf.h5", "demo_3pcf.h5"}));
    std::ifstream in(out / "demo-report.md");
    std::stringstream ss;
    ss << in.rdbuf();
    const QString report = QString::fromStdString(ss.str());
    for (const char* s : {"# Almagest demo report", "data.txt", "randoms.txt", "r^2 xi", "backend: cpu",
                          "neighbour graph", "Three-point"})
      QVERIFY2(report.contains(s), s);
    // The xi table of the report is the HDF5 result (to the printed precision).
    npcf::NpcfResult xi = npcf::read_hdf5((out / "demo_2pcf.h5").string());
    QCOMPARE(xi.rows(), std::size_t(10));
    const QStringList lines = report.split('\n');
    const int header = lines.indexOf(QRegularExpression("^\\| r_min \\|.*"));
    QVERIFY(header >= 0);
    for (std::size_t i = 0; i < xi.rows(); ++i) {
      const QString line = lines.value(header + 2 + int(i));
      QStringList cells = line.split('|', Qt::SkipEmptyParts);
      QVERIFY2(cells.size() == 8, qPrintable(line));
      const double rc = xi.config.bins.centre(xi.bins[i]);
      const double expected[8] = {xi.bin_lo(xi.bins[i]), xi.bin_hi(xi.bins[i]), rc, double(xi.tuples[i]),
                                  xi.n[i], xi.r[i], xi.estimator[i], rc * rc * xi.estimator[i]};
      const double tolerance[8] = {6e-4, 6e-4, 6e-4, 0, 1e-6 * std::abs(xi.n[i]), 1e-6 * xi.r[i], 6e-7, 6e-5};
      for (int c = 0; c < 8; ++c) {
        bool ok = false;
        const double v = cells[c].trimmed().toDouble(&ok);
        QVERIFY2(ok && std::abs(v - expected[c]) <= tolerance[c],
                 qPrintable(QString("row %1 column %2: %3 vs %4").arg(i).arg(c).arg(cells[c]).arg(expected[c], 0, 'g', 17)));
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestCliNpcf)
#include "test_cli_npcf.moc"
