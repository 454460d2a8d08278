// The stack job's schema against `almagest-cli stack` (issue 20): every schema field of an
// operation is an option of that subcommand whose help is the field's full_help() (and no field
// of another operation is); the CLI's results equal run_stack_job() through the C++ API bit for
// bit (psi/phi planes, candidate rows, stamps); bad values give exactly make_stack_job()'s
// message on the command line.
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "almagest/core/error.hpp"
#include "almagest/io/hdf5_file.hpp"
#include "almagest/stack/job.hpp"

#include "cli_test_support.hpp"

namespace fs = std::filesystem;
using namespace almagest;
using namespace almagest::cli_test;

namespace {

QString collapse(const QString& s) { return s.simplified(); }

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The data rows (not comments) of a text table.
std::vector<std::string> data_lines(const fs::path& p) {
  std::vector<std::string> out;
  std::istringstream in(read_all(p));
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') out.push_back(line);
  return out;
}

stack::StackOutcome api(const schema::Values& v) {
  const stack::StackJob job = stack::make_stack_job({"stack", v, "", ""});
  return stack::run_stack_job(job, JobContext{}, {});
}

}  // namespace

class TestCliStackSchema : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_{temp_dir_template("cli-stack-schema")};
  fs::path dir_, stack_, curve_;

private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    dir_ = tmp_.path().toStdString();
    stack_ = dir_ / "s.fits";
    curve_ = dir_ / "s_curve.txt";
    CliRun r = run_cli({"stack", "simulate", "--exposures", "12", "--width", "32", "--height", "32", "--seed", "5", "--movers",
                        "1", "--speed", "2", "--snr", "12", "-o", q(stack_), "--quiet"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
  }

  void everyFieldIsAnOptionWithItsHelp_data() {
    QTest::addColumn<QString>("op");
    for (const char* op : {"simulate", "psiphi", "search", "stamps"}) QTest::newRow(op) << op;
  }
  void everyFieldIsAnOptionWithItsHelp() {
    QFETCH(QString, op);
    CliRun r = run_cli({"stack", op, "--help"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QString help = collapse(r.out);
    const schema::Schema& s = stack::stack_schema();
    int n = 0;
    for (const schema::Field& f : s.fields) {
      if (f.key == "op") continue;
      const bool applies = f.operations.empty() ||
                           std::find(f.operations.begin(), f.operations.end(), op.toStdString()) != f.operations.end();
      const QString flag = "--" + QString::fromStdString(f.key);
      // An option line starts with its names ("  -o,--output OUT ...", "  STACK,--stack ...").
      const QRegularExpression line("^\\s+(\\S+,)?" + QRegularExpression::escape(flag) + "\\b(?!-)",
                                    QRegularExpression::MultilineOption);
      const bool listed = line.match(r.out).hasMatch();
      QVERIFY2(listed == applies, qPrintable(QString("%1: %2 %3").arg(op, flag, applies ? "missing" : "listed but does not apply")));
      if (!applies) continue;
      QVERIFY2(help.contains(collapse(QString::fromStdString(schema::full_help(f)))),
               qPrintable(QString("%1 %2: help is not full_help(): %3").arg(op, flag, QString::fromStdString(schema::full_help(f)))));
      ++n;
    }
    QVERIFY(n >= 8);
  }

  void psiphiEqualsTheApi() {
    const fs::path a = dir_ / "pp_cli.h5", b = dir_ / "pp_api.h5";
    CliRun r = run_cli({"stack", "psiphi", q(stack_), "--storage", "int8", "--threads", "2", "-o", q(a), "--quiet"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    api({{"op", "psiphi"}, {"stack", stack_.string()}, {"storage", "int8"}, {"threads", "2"}, {"output", b.string()}});
    io::Hdf5Reader ha(a.string()), hb(b.string());
    for (const char* ds : {"/psi", "/phi", "/mjd", "/psi_scale", "/phi_scale"}) QVERIFY2(ha.read_double(ds) == hb.read_double(ds), ds);
    QVERIFY(ha.read_int32("/codes/psi") == hb.read_int32("/codes/psi"));
  }

  void searchAndStampsEqualTheApi() {
    const fs::path a = dir_ / "c_cli.ecsv", b = dir_ / "c_api.ecsv";
    CliRun r = run_cli({"stack", "search", q(stack_), "--vx-range=-3,3", "--vy-range=-3,3", "--grid", "13", "--common-curve",
                        q(curve_), "--storage", "fp16", "--min-obs", "6", "-o", q(a), "--quiet"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const stack::StackOutcome o = api({{"op", "search"}, {"stack", stack_.string()}, {"vx-range", "-3,3"}, {"vy-range", "-3,3"},
                                       {"grid", "13"}, {"common-curve", curve_.string()}, {"storage", "fp16"},
                                       {"min-obs", std::int64_t{6}}, {"output", b.string()}});
    QVERIFY(!o.result.candidates.empty());
    const auto la = data_lines(a), lb = data_lines(b);
    QCOMPARE(la.size(), o.result.candidates.size() + 1);  // header row + candidates
    QVERIFY(la == lb);
    // Stamps of both tables: identical curves, stamps and tracks.
    const fs::path sa = dir_ / "st_cli.h5", sb = dir_ / "st_api.h5";
    r = run_cli({"stack", "stamps", q(a), "--stamp-radius", "3", "-o", q(sa), "--quiet"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    api({{"op", "stamps"}, {"candidates", b.string()}, {"stamp-radius", "3"}, {"output", sb.string()}});
    io::Hdf5Reader ha(sa.string()), hb(sb.string());
    for (const char* ds : {"/candidates/z", "/candidates/vx"}) QVERIFY2(ha.read_double(ds) == hb.read_double(ds), ds);
  }

  void badValuesGiveTheSchemasMessage_data() {
    QTest::addColumn<QStringList>("args");
    const QString st = q(stack_);
    QTest::newRow("psf sigma") << QStringList{"stack", "search", st, "--vx-range=-1,1", "--vy-range=-1,1", "--psf-sigma", "51", "-o", "x.ecsv"};
    QTest::newRow("grid") << QStringList{"stack", "search", st, "--vx-range=-1,1", "--vy-range=-1,1", "--grid", "3x0", "-o", "x.ecsv"};
    QTest::newRow("two banks") << QStringList{"stack", "search", st, "--vx-range=-1,1", "--vy-range=-1,1", "--speed-range", "0,1", "-o", "x.ecsv"};
    QTest::newRow("fourier on cpu") << QStringList{"stack", "search", st, "--vx-range=-1,1", "--vy-range=-1,1", "--method", "fourier", "-o", "x.ecsv"};
    QTest::newRow("top-k") << QStringList{"stack", "search", st, "--vx-range=-1,1", "--vy-range=-1,1", "--top-k", "17", "-o", "x.ecsv"};
    QTest::newRow("backend") << QStringList{"stack", "psiphi", st, "--backend", "cuda:64", "-o", "x.h5"};
    QTest::newRow("stamp radius") << QStringList{"stack", "stamps", "c.ecsv", "--stamp-radius", "1001", "-o", "x.h5"};
    QTest::newRow("simulate size") << QStringList{"stack", "simulate", "--exposures", "100000", "--width", "60000", "--height", "60000", "-o", "x.fits"};
    QTest::newRow("simulate noise") << QStringList{"stack", "simulate", "--noise", "0", "--noise-variation", "0.9", "-o", "x.fits"};
  }
  void badValuesGiveTheSchemasMessage() {
    QFETCH(QStringList, args);
    // The same request through the API: the values the CLI adapter passes (text, as written).
    schema::Values v{{"op", args[1].toStdString()}};
    int i = 2;
    if (args[1] != "simulate") {
      v[args[1] == "stamps" ? "candidates" : "stack"] = args[2].toStdString();
      i = 3;
    }
    for (; i < args.size(); ++i) {
      QString a = args[i];
      QString val;
      if (a.contains('=')) {
        val = a.section('=', 1);
        a = a.section('=', 0, 0);
      } else {
        val = args[++i];
      }
      const std::string key = a == "-o" ? "output" : a.mid(2).toStdString();
      v[key] = val.toStdString();
    }
    std::string expected;
    try {
      (void)stack::make_stack_job({"stack", v, "", ""});
    } catch (const ConfigError& e) {
      expected = e.what();
    }
    QVERIFY2(!expected.empty(), "make_stack_job accepted the values");
    CliRun r = run_cli(args);
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err, QString::fromStdString("almagest-cli: error: " + expected + "\n"));
  }
};

QTEST_GUILESS_MAIN(TestCliStackSchema)
#include "test_cli_stack_schema.moc"
