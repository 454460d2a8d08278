// Schema parity of the N-point job (issue 20): every field of npcf_schema() is an `almagest-cli
// npcf` option whose help is the field's full_help(); the keys a job file may hold are the schema
// keys; a bad value gives the schema's message on the CLI and from the job layer; and the results
// of `almagest-cli npcf` and of run_npcf_job through the C++ API are identical bit for bit.
#include <QtTest>
#include <filesystem>
#include <optional>
#include <set>
#include <string>

#include "almagest/core/error.hpp"
#include "almagest/io/catalogue.hpp"
#include "almagest/jobs/job.hpp"
#include "almagest/jobs/job_file.hpp"
#include "almagest/npcf/job.hpp"
#include "almagest/npcf/result.hpp"
#include "npcf_testdata.hpp"

namespace fs = std::filesystem;
using namespace almagest;

#include "cli_test_support.hpp"

using namespace almagest::cli_test;

namespace {

QString squeezed(QString s) { return s.simplified(); }

/// A TOML literal of a field's default (or of a value of its kind when it has none).
std::string toml_value(const schema::Field& f) {
  if (f.default_value) {
    const schema::Value& v = *f.default_value;
    if (auto b = std::get_if<bool>(&v)) return *b ? "true" : "false";
    if (auto i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
    if (auto d = std::get_if<double>(&v)) return schema::describe(*d);
    if (auto s = std::get_if<std::string>(&v)) return "\"" + *s + "\"";
  }
  switch (f.kind) {
    case schema::Kind::TextList: return "[\"1\", \"2\", \"3\"]";
    case schema::Kind::ChoiceList: return "[\"" + f.choices.front() + "\"]";
    case schema::Kind::Number: return "30.0";
    case schema::Kind::Integer: return "4";
    case schema::Kind::Flag: return "false";
    default: break;
  }
  return "\"x.txt\"";
}

}  // namespace

class TestCliNpcfSchema : public QObject {
  Q_OBJECT

  std::optional<QTemporaryDir> tmp_;
  fs::path dir_, data_, randoms_;

private slots:
  void initTestCase() {
    QVERIFY2(fs::exists(ALMAGEST_CLI), ALMAGEST_CLI);
    tmp_.emplace(temp_dir_template("cli-npcf-schema"));
    QVERIFY(tmp_->isValid());
    dir_ = tmp_->path().toStdString();
    data_ = dir_ / "data.txt";
    randoms_ = dir_ / "randoms.txt";
    io::save_catalogue_text(test::clustered_catalogue(1200, 200.0, 8, 3.0, 2001, 0.5, 1.5), data_.string());
    io::save_catalogue_text(test::uniform_catalogue(2400, 200.0, 2002, 0.8, 1.2), randoms_.string());
  }

  void everyFieldIsAnOptionWithItsFullHelp() {
    CliRun r = run_cli({"npcf", "--help"});
    QCOMPARE(r.code, 0);
    const QString help = squeezed(r.out);
    const auto& s = npcf::npcf_schema();
    for (const auto& f : s.fields) {
      QVERIFY2(help.contains(QString::fromStdString("--" + f.key + " ")), f.key.c_str());
      if (!f.short_flag.empty())
        QVERIFY2(help.contains(QString::fromStdString(f.short_flag + ",--" + f.key)), f.key.c_str());
      const QString text = squeezed(QString::fromStdString(schema::full_help(f)));
      QVERIFY2(help.contains(text), qPrintable(QString::fromStdString(f.key) + ": " + text));
    }
    // No option of the subcommand beyond the schema's and the run flags.
    const std::set<QString> run_flags{"--help", "--dry-run", "--quiet", "--verbose"};
    QRegularExpression opt(QStringLiteral("(?:^|[ ,])(--[a-z0-9-]+)"));
    for (const QString& line : r.out.split('\n')) {
      if (!line.startsWith(QStringLiteral("  -"))) continue;  // option lines only
      auto m = opt.match(line);
      QVERIFY(m.hasMatch());
      const QString name = m.captured(1);
      QVERIFY2(run_flags.count(name) || s.find(name.mid(2).toStdString()), qPrintable(name));
    }
  }

  /// Keys that cannot stand beside the others' defaults: box (only with periodic), region (each
  /// region names its own data and randoms, so it excludes them) and the jackknife label files
  /// (only with jackknife N > 0).
  static bool skipped_with_defaults(const std::string& key) {
    return key == "box" || key == "region" || key.find("jackknife-labels") != std::string::npos;
  }

  void jobFileKeysAreSchemaKeys() {
    // A job file with every key of the schema (as its default, or a value of its kind) reads
    // into exactly those keys, and the job layer takes them.
    const auto& s = npcf::npcf_schema();
    std::string toml = "engine = \"npcf\"\n";
    for (const auto& f : s.fields) {
      std::string value = toml_value(f);
      if (f.key == "data") value = "\"" + data_.string() + "\"";
      if (f.key == "randoms") value = "\"" + randoms_.string() + "\"";
      if (f.key == "output") value = "\"all.h5\"";
      if (f.key == "rmin") value = "2.0";
      if (f.key == "rmax") value = "20.0";
      if (skipped_with_defaults(f.key)) continue;
      toml += f.key + " = " + value + "\n";
    }
    const fs::path file = dir_ / "all-keys.toml";
    write_text(file, toml);
    const jobs::JobFile jf = jobs::read_job_file(file.string());
    QCOMPARE(jf.jobs.size(), std::size_t(1));
    std::set<std::string> keys;
    for (const auto& [k, v] : jf.jobs[0].values) keys.insert(k);
    keys.erase("engine");
    std::set<std::string> expected;
    for (const auto& f : s.fields)
      if (!skipped_with_defaults(f.key)) expected.insert(f.key);
    QCOMPARE(keys, expected);
    jobs::JobRequest req{"npcf", jf.jobs[0].values, jf.base_dir, jf.jobs[0].label};
    req.values.erase("engine");
    auto job = jobs::make_job(req);
    // The job back as values: every schema key but box (not periodic) and the columns left empty.
    std::set<std::string> back;
    for (const auto& [k, v] : job->values()) back.insert(k);
    for (const auto& k : back) QVERIFY2(s.find(k), k.c_str());
    for (const char* k : {"stat", "data", "randoms", "rmin", "rmax", "nbins", "output", "backend", "omega-m", "sky"})
      QVERIFY2(back.count(k), k);
  }

  void badValuesGiveTheSchemaMessage() {
    schema::Values v{{"stat", std::string("2pcf")}, {"data", data_.string()}, {"randoms", randoms_.string()},
                     {"rmin", std::string("2")}, {"rmax", std::string("20")}, {"nbins", std::string("300")},
                     {"omega-m", std::string("1.5")}, {"output", (dir_ / "never.h5").string()}};
    std::string message;
    try {
      jobs::make_job({"npcf", v, "", ""});
    } catch (const ConfigError& e) {
      message = e.what();
    }
    QVERIFY(message.find("--nbins: must be in [1, 255], got 300") != std::string::npos);
    CliRun r = run_cli({"npcf", "--stat", "2pcf", "--data", q(data_), "--randoms", q(randoms_), "--rmin", "2",
                        "--rmax", "20", "--nbins", "300", "--omega-m", "1.5", "-o", q(dir_ / "never.h5")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(QString::fromStdString(message)), qPrintable(r.err + " <- " + QString::fromStdString(message)));
    QVERIFY(!fs::exists(dir_ / "never.h5"));
  }

  void cliEqualsJobLayerBitForBit() {
    const fs::path out = dir_ / "bits";
    fs::create_directories(out);
    CliRun r = run_cli({"npcf", "--stat", "2pcf,3pcf,4pcf-parity", "--data", q(data_), "--randoms", q(randoms_),
                        "--rmin", "2", "--rmax", "20", "--nbins", "4", "--threads", "2", "--quiet",
                        "-o", q(out / "cli.h5")});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    schema::Values v{{"stat", std::string("2pcf,3pcf,4pcf-parity")}, {"data", data_.string()},
                     {"randoms", randoms_.string()}, {"rmin", 2.0}, {"rmax", 20.0}, {"nbins", std::int64_t{4}},
                     {"threads", std::int64_t{2}}, {"output", (out / "api.h5").string()}};
    npcf::NpcfJob job = npcf::make_npcf_job(v, "", "");
    jobs::RunOptions opt;
    opt.write = false;
    npcf::NpcfOutcome o = npcf::run_npcf_job(job, JobContext{}, opt);
    QCOMPARE(o.results.size(), std::size_t(3));
    QVERIFY(!fs::exists(out / "api_2pcf.h5"));  // write = false wrote nothing
    schema::Values vc = v;
    vc["output"] = (out / "cli.h5").string();
    const std::string cli_config = npcf::make_npcf_job(vc, "", "").config_json();
    const char* names[] = {"cli_2pcf.h5", "cli_3pcf.h5", "cli_4pcf-parity.h5"};
    for (int i = 0; i < 3; ++i) {
      const npcf::NpcfResult c = npcf::read_hdf5((out / names[i]).string());
      const npcf::NpcfResult& a = o.results[i];
      QCOMPARE(int(c.statistic), int(a.statistic));
      QCOMPARE(c.bins, a.bins);
      QCOMPARE(c.tuples, a.tuples);
      QCOMPARE(c.random_tuples, a.random_tuples);
      QCOMPARE(c.n, a.n);  // exact: the same code path, the same reduction order
      QCOMPARE(c.r, a.r);
      QCOMPARE(c.estimator, a.estimator);
      QCOMPARE(c.zeta_conn, a.zeta_conn);
      QCOMPARE(c.n_odd, a.n_odd);
      QCOMPARE(c.zeta_odd, a.zeta_odd);
      QVERIFY(std::any_of(a.estimator.begin(), a.estimator.end(), [](double x) { return x != 0; }));
      // Provenance: the job's canonical config and the inputs' content hashes.
      QCOMPARE(QString::fromStdString(c.provenance.config_json), QString::fromStdString(cli_config));
      QCOMPARE(c.provenance.input_hashes.size(), std::size_t(2));
      QCOMPARE(c.provenance.input_hashes.count(data_.string()), std::size_t(1));
    }
  }

  void dryRunReportsThePlan() {
    CliRun r = run_cli({"npcf", "--stat", "3pcf", "--data", q(data_), "--randoms", q(randoms_), "--rmin", "2",
                        "--rmax", "20", "--nbins", "4", "--dry-run", "-o", q(dir_ / "dry.h5")});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    for (const char* s : {"dry run: 3pcf on 3600 points", "graph estimate:", "host memory", "tiling:",
                          "estimated time", "data catalogue", "not written:"})
      QVERIFY2(r.out.contains(s), qPrintable(QString(s) + " in " + r.out));
    QVERIFY(!fs::exists(dir_ / "dry.h5"));
  }
};

QTEST_GUILESS_MAIN(TestCliNpcfSchema)
#include "test_cli_npcf_schema.moc"
