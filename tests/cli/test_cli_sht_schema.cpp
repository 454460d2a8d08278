// The sht job schema against `almagest-cli sht` (issue 20): every schema field is an option of
// exactly the `sht <op>` subcommands it applies to, with the schema's full_help() as its help;
// the CLI's results equal run_sht_job's through the C++ API bit for bit (maps, alm, spectra;
// FITS and HDF5; --pol, --spin 2, cut sky, nest-out, weights, inverse); bad values give the
// schema's message, the same text from the CLI (after "almagest-cli: error: ") as from
// jobs::make_job, with exit code 2.
#include <QtTest>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "almagest/core/error.hpp"
#include "almagest/io/hdf5_file.hpp"
#include "almagest/jobs/job.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/sht/healpix_io.hpp"
#include "almagest/sht/job.hpp"
#include "almagest/sht/plan.hpp"
#include "sht_testdata.hpp"

namespace fs = std::filesystem;
using namespace almagest;
using namespace almagest::sht;

#include "cli_test_support.hpp"

using namespace almagest::cli_test;

namespace {

constexpr int kNside = 16, kLmax = 40;

using test::random_alm;

/// Whitespace collapsed to single spaces (help texts are word-wrapped and indented).
QString squeeze(const QString& s) { return s.simplified(); }

}  // namespace

class TestCliShtSchema : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_{temp_dir_template("cli-sht-schema")};
  fs::path dir_, alm_, map_, map_h5_, mask_;

private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    dir_ = tmp_.path().toStdString();
    alm_ = dir_ / "teb.fits";
    map_ = dir_ / "tqu.fits";
    map_h5_ = dir_ / "tqu.h5";
    mask_ = dir_ / "cut.txt";
    const auto t = random_alm(kLmax, false, 11), e = random_alm(kLmax, true, 12), b = random_alm(kLmax, true, 13);
    write_alm(alm_.string(), {t, e, b}, kLmax);
    // A band-limited (T, Q, U) map from the same alm, FITS and HDF5.
    ShtConfig c;
    c.nside = kNside;
    c.lmax = kLmax;
    c.threads = 2;
    HealpixMap m;
    m.nside = kNside;
    m.names = {"TEMPERATURE", "Q_POLARISATION", "U_POLARISATION"};
    m.units = {"", "", ""};
    std::vector<double> tm(npix_of(kNside));
    make_plan(c).synthesis(t, tm);
    c.spin = 2;
    std::vector<double> qu(2 * npix_of(kNside));
    std::vector<Complex> eb(e);
    eb.insert(eb.end(), b.begin(), b.end());
    make_plan(c).synthesis(eb, qu);
    m.columns = {tm, std::vector<double>(qu.begin(), qu.begin() + npix_of(kNside)),
                 std::vector<double>(qu.begin() + npix_of(kNside), qu.end())};
    write_healpix_map(map_.string(), m);
    write_map_hdf5(map_h5_.string(), m);
    std::string text;
    for (std::int64_t p = 200; p < npix_of(kNside); p += 2) text += std::to_string(p) + "\n";
    write_text(mask_, text);
  }

  // Every field is an option of exactly the subcommands of its operations, with full_help().
  void schemaParity() {
    const schema::Schema& s = sht_schema();
    QCOMPARE(s.operation_key, std::string("op"));
    const jobs::EngineEntry* e = jobs::find_engine("sht");
    QVERIFY(e);
    QCOMPARE(&e->schema(), &s);
    const schema::Field* op = s.find("op");
    QVERIFY(op);
    QCOMPARE(op->choices, (std::vector<std::string>{"synth", "adjoint", "inverse", "map2alm", "cl", "smooth"}));
    // The sht command lists exactly these operations.
    CliRun top = run_cli({"sht", "--help"});
    QCOMPARE(top.code, 0);
    for (const auto& name : op->choices) QVERIFY2(top.out.contains(QString::fromStdString(name)), name.c_str());
    for (const auto& name : op->choices) {
      CliRun r = run_cli({"sht", QString::fromStdString(name), "--help"});
      QCOMPARE(r.code, 0);
      const QString help = squeeze(r.out);
      for (const auto& f : s.fields) {
        if (f.key == "op") continue;
        const bool applies = f.operations.empty() ||
                             std::find(f.operations.begin(), f.operations.end(), name) != f.operations.end();
        const QString flag = QString::fromStdString("--" + f.key);
        // An option line of the help: "  -o,--output FILE   ...".
        const QRegularExpression line("^\\s+(-\\w,)?" + QRegularExpression::escape(flag) + "(\\s|$)",
                                      QRegularExpression::MultilineOption);
        QVERIFY2(r.out.contains(line) == applies,
                 qPrintable(QString("sht %1: %2 %3").arg(QString::fromStdString(name), flag,
                                                        applies ? "missing" : "should not be an option")));
        if (applies)
          QVERIFY2(help.contains(squeeze(QString::fromStdString(schema::full_help(f)))),
                   qPrintable(QString("sht %1 %2: help is not full_help(): %3")
                                  .arg(QString::fromStdString(name), flag, QString::fromStdString(schema::full_help(f)))));
        if (!f.short_flag.empty() && applies)
          QVERIFY(help.contains(QString::fromStdString(f.short_flag + ",--" + f.key)));
      }
    }
  }

  // The CLI and run_sht_job through the C++ API write the same results, bit for bit.
  void cliEqualsApi_data() {
    QTest::addColumn<QStringList>("args");  // after "sht"; the output is appended
    QTest::addColumn<QString>("ext");
    const QString alm = q(alm_), map = q(map_), h5 = q(map_h5_), mask = q(mask_);
    QTest::newRow("synth T") << QStringList{"synth", alm, "--nside", "16"} << "fits";
    QTest::newRow("synth pol nest-out") << QStringList{"synth", alm, "--nside", "16", "--pol", "--nest-out"} << "fits";
    QTest::newRow("synth spin 2 cut partial hdf5")
        << QStringList{"synth", alm, "--nside", "16", "--spin", "2", "--field", "1,2", "--mask", mask, "--partial-out",
                       "--lmax", "30"} << "h5";
    QTest::newRow("adjoint pol") << QStringList{"adjoint", map, "--pol", "--lmax", "32"} << "fits";
    QTest::newRow("inverse T") << QStringList{"inverse", h5, "--lmax", "32", "--epsilon", "1e-9"} << "fits";
    QTest::newRow("map2alm spin 2 cut") << QStringList{"map2alm", map, "--spin", "2", "--mask", mask, "--iter", "1"} << "h5";
    QTest::newRow("cl pol") << QStringList{"cl", map, "--pol"} << "h5";
    QTest::newRow("cl of alm cross") << QStringList{"cl", alm, "--cross", alm, "--pol"} << "h5";
    QTest::newRow("smooth pol") << QStringList{"smooth", map, "--pol", "--fwhm-arcmin", "60"} << "fits";
  }

  void cliEqualsApi() {
    QFETCH(QStringList, args);
    QFETCH(QString, ext);
    const fs::path cli_out = dir_ / ("cli-" + std::string(QTest::currentDataTag()) + "." + ext.toStdString());
    const fs::path api_out = dir_ / ("api-" + std::string(QTest::currentDataTag()) + "." + ext.toStdString());
    fs::remove(cli_out);
    fs::remove(api_out);
    CliRun r = run_cli(QStringList{"sht"} + args + QStringList{"--threads", "2", "-q", "-o", q(cli_out)});
    QVERIFY2(r.code == 0, qPrintable(r.err));

    // The same job as schema values, the way a job file or Python states it.
    schema::Values v;
    v["op"] = args[0].toStdString();
    v["input"] = args[1].toStdString();
    for (int i = 2; i < args.size(); ++i) {
      const std::string key = args[i].mid(2).toStdString();
      const schema::Field* f = sht_schema().find(key);
      QVERIFY2(f, key.c_str());
      if (f->kind == schema::Kind::Flag) v[key] = true;
      else v[key] = args[++i].toStdString();
    }
    v["threads"] = std::int64_t{2};
    v["output"] = api_out.string();
    ShtJob job = parse_sht_job({"sht", v, "", ""});
    ShtOutcome o = run_sht_job(job, {}, {});
    QCOMPARE(o.outputs, std::vector<std::string>{api_out.string()});

    if (o.what == "map") {
      HealpixMap a = ext == "h5" ? read_map_hdf5(cli_out.string()) : read_healpix_map(cli_out.string(), false);
      HealpixMap b = ext == "h5" ? read_map_hdf5(api_out.string()) : read_healpix_map(api_out.string(), false);
      QCOMPARE(a.columns, b.columns);
      QCOMPARE(a.pixels, b.pixels);
      QCOMPARE(a.columns, o.map->columns);
      QVERIFY(!a.columns.empty());
    } else if (o.what == "alm") {
      const int sets = static_cast<int>(o.alm.size());
      for (int k = 0; k < sets; ++k) {
        std::vector<Complex> a, b;
        if (ext == "h5") {
          a = read_alm_hdf5(cli_out.string())[k];
          b = read_alm_hdf5(api_out.string())[k];
        } else {
          a = read_alm(cli_out.string(), k + 1);
          b = read_alm(api_out.string(), k + 1);
        }
        QCOMPARE(a, b);
        QCOMPARE(a, o.alm[k]);
      }
    } else {
      io::Hdf5Reader a(cli_out.string()), b(api_out.string());
      QCOMPARE(a.read_double("/cl"), b.read_double("/cl"));
      std::vector<double> flat;
      for (const auto& c : o.cl) flat.insert(flat.end(), c.begin(), c.end());
      QCOMPARE(a.read_double("/cl"), flat);
    }
  }

  // Bad values: the schema's (or make_sht_job's) one message, identical on the command line.
  void badValues_data() {
    QTest::addColumn<QStringList>("args");
    const QString map = q(map_), alm = q(alm_);
    const QString out = q(dir_ / "bad" / "out.fits");
    QTest::newRow("nside 0") << QStringList{"synth", alm, "--nside", "0", "-o", out};
    QTest::newRow("nside text") << QStringList{"synth", alm, "--nside", "x16", "-o", out};
    QTest::newRow("huge lmax") << QStringList{"adjoint", map, "--lmax", "99999999999999999999", "-o", out};
    QTest::newRow("spin 1") << QStringList{"adjoint", map, "--spin", "1", "-o", out};
    QTest::newRow("pol and spin 2") << QStringList{"adjoint", map, "--pol", "--spin", "2", "-o", out};
    QTest::newRow("field count") << QStringList{"adjoint", map, "--pol", "--field", "0,1", "-o", out};
    QTest::newRow("field negative") << QStringList{"adjoint", map, "--field", "-1", "-o", out};
    QTest::newRow("iter with pixel weights") << QStringList{"map2alm", map, "--pixel-weights", map, "--iter", "2", "-o", out};
    QTest::newRow("both weights") << QStringList{"map2alm", map, "--pixel-weights", map, "--ring-weights", map, "-o", out};
    QTest::newRow("epsilon 0") << QStringList{"inverse", map, "--epsilon", "0", "-o", out};
    QTest::newRow("max-iter 0") << QStringList{"inverse", map, "--max-iter", "0", "-o", out};
    QTest::newRow("negative fwhm") << QStringList{"smooth", map, "--fwhm-arcmin", "-1", "-o", out};
    QTest::newRow("fwhm missing") << QStringList{"smooth", map, "-o", out};
    QTest::newRow("format text for a map") << QStringList{"smooth", map, "--fwhm-arcmin", "1", "--format", "text", "-o", out};
    QTest::newRow("format unknown") << QStringList{"cl", map, "--format", "xls", "-o", out};
    QTest::newRow("backend") << QStringList{"adjoint", map, "--backend", "cuda:99", "-o", out};
    QTest::newRow("threads") << QStringList{"adjoint", map, "--threads", "-1", "-o", out};
    QTest::newRow("nest-out nside 12") << QStringList{"synth", alm, "--nside", "12", "--nest-out", "-o", out};
    QTest::newRow("synth without nside") << QStringList{"synth", alm, "-o", out};
    QTest::newRow("lmax above 4 nside given") << QStringList{"synth", alm, "--nside", "4", "--lmax", "17", "-o", out};
    QTest::newRow("two problems") << QStringList{"adjoint", map, "--spin", "7", "--threads", "x", "-o", out};
  }

  void badValues() {
    QFETCH(QStringList, args);
    fs::create_directories(dir_ / "bad");
    CliRun r = run_cli(QStringList{"sht"} + args);
    QCOMPARE(r.code, 2);
    schema::Values v;
    v["op"] = args[0].toStdString();
    v["input"] = args[1].toStdString();
    for (int i = 2; i < args.size(); ++i) {
      std::string key = args[i].toStdString();
      key = key == "-o" ? "output" : key.substr(2);
      const schema::Field* f = sht_schema().find(key);
      QVERIFY2(f, key.c_str());
      if (f->kind == schema::Kind::Flag) v[key] = true;
      else v[key] = args[++i].toStdString();
    }
    std::string message;
    try {
      jobs::make_job({"sht", v, "", ""});
    } catch (const ConfigError& e) {
      message = e.what();
    }
    QVERIFY2(!message.empty(), "make_job accepted it");
    QCOMPARE(r.err.trimmed(), QString::fromStdString("almagest-cli: error: " + message));
    QCOMPARE(listing(dir_ / "bad"), std::vector<std::string>{});
    // The same job from a job file: the label prefixes the key instead of "--".
    try {
      jobs::make_job({"sht", v, "", "jobs.toml: job 1: "});
      QFAIL("accepted");
    } catch (const ConfigError& e) {
      QVERIFY2(std::string(e.what()).starts_with("jobs.toml: job 1: "), e.what());
    }
  }

  // A dry run reads headers only and writes nothing; the CLI prints the plan.
  void dryRun() {
    const fs::path out = dir_ / "dry" / "a.fits";
    fs::create_directories(out.parent_path());
    CliRun r = run_cli({"sht", "map2alm", q(map_), "--pol", "--dry-run", "-o", q(out)});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("dry run") && r.out.contains("NSIDE 16") && r.out.contains("lmax 47") &&
                 r.out.contains("estimated time"),
             qPrintable(r.out));
    QCOMPARE(listing(out.parent_path()), std::vector<std::string>{});
  }
};

QTEST_GUILESS_MAIN(TestCliShtSchema)
#include "test_cli_sht_schema.moc"
