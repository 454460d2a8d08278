// The N-point job schema (almagest/npcf/job.hpp) shared by the CLI flags, job files and the GUI:
// values -> job, every problem reported with its key, relative paths, output naming, and the
// round trip job -> values -> job.
#include <QtTest>

#include "almagest/core/error.hpp"
#include "almagest/npcf/job.hpp"

using namespace almagest;
using namespace almagest::npcf;

namespace {

JobValues minimal() {
  return {{"stat", std::string("2pcf")}, {"data", std::string("d.txt")},
          {"randoms", std::string("r.txt")}, {"rmin", 1.0}, {"rmax", std::string("40")},
          {"nbins", std::int64_t{8}}, {"output", std::string("out/xi.h5")}};
}

QString error_of(const JobValues& v, const std::string& prefix = "--") {
  try {
    make_npcf_job(v, "", prefix);
  } catch (const ConfigError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace

class TestNpcfJob : public QObject {
  Q_OBJECT

private slots:
  void schemaIsComplete() {
    const auto& s = npcf_job_options();
    QVERIFY(s.size() >= 20);
    for (const auto& o : s) {
      QVERIFY2(!o.help.empty() && !o.group.empty(), o.key.c_str());
      QVERIFY(find_job_option(o.key) == &o);
      if (o.kind == OptionKind::Choice || o.kind == OptionKind::ChoiceList) QVERIFY(!o.choices.empty());
    }
    QVERIFY(find_job_option("nope") == nullptr);
    for (const char* k : {"stat", "data", "rmin", "rmax", "nbins", "output"})
      QVERIFY2(find_job_option(k)->required, k);
  }

  void minimalJob() {
    NpcfJob j = make_npcf_job(minimal(), "/base/dir", "--");
    QCOMPARE(j.statistics.size(), std::size_t(1));
    QCOMPARE(int(j.statistics[0]), int(Statistic::TwoPoint));
    QCOMPARE(j.data.path, std::string("/base/dir/d.txt"));
    QVERIFY(j.randoms.has_value());
    QCOMPARE(j.randoms->path, std::string("/base/dir/r.txt"));
    QCOMPARE(j.output, std::string("/base/dir/out/xi.h5"));
    QCOMPARE(j.config.bins.rmin, 1.0);
    QCOMPARE(j.config.bins.rmax, 40.0);
    QCOMPARE(j.config.bins.nbins, 8);
    QCOMPARE(int(j.config.backend), int(Backend::Cpu));
    QCOMPARE(int(j.format), int(OutputFormat::Hdf5));
    QCOMPARE(j.output_paths(), std::vector<std::string>{"/base/dir/out/xi.h5"});
    // Absolute paths are kept.
    auto v = minimal();
    v["data"] = std::string("/abs/d.txt");
    QCOMPARE(make_npcf_job(v, "/base", "").data.path, std::string("/abs/d.txt"));
  }

  void severalStatisticsNameOutputs() {
    auto v = minimal();
    v["stat"] = std::vector<std::string>{"3pcf", "4pcf-parity"};
    v["nbins"] = std::string("5");
    v["output"] = std::string("res/npcf.txt");
    v["format"] = std::string("gramsci");
    NpcfJob j = make_npcf_job(v, "", "--");
    QCOMPARE(j.output_paths(), (std::vector<std::string>{"res/npcf_3pcf.txt", "res/npcf_4pcf-parity.txt"}));
    QVERIFY(j.config.store_pixels);  // pixel directions are the default for parity
    QCOMPARE(int(j.config.statistic), int(Statistic::ThreePoint));
    QCOMPARE(int(j.config_for(Statistic::FourPointParity).statistic), int(Statistic::FourPointParity));
    v["directions"] = std::string("exact");
    QVERIFY(!make_npcf_job(v, "", "--").config.store_pixels);
  }

  void everyProblemIsReportedWithItsKey() {
    auto v = minimal();
    v["rmin"] = 50.0;                           // rmax <= rmin
    v["nbins"] = std::int64_t{300};             // out of range
    v["stat"] = std::string("2pcf,5pcf");       // unknown statistic
    v["pixel-grid"] = std::string("8by32");     // malformed
    v["colour"] = std::string("red");           // unknown key
    v.erase("output");                          // missing required key
    const QString e = error_of(v, "jobs.toml: job 3: ");
    for (const char* s : {"jobs.toml: job 3: rmax: must be greater than rmin",
                          "jobs.toml: job 3: nbins: must be in 1..255",
                          "jobs.toml: job 3: stat: unknown statistic '5pcf'",
                          "jobs.toml: job 3: pixel-grid: '8by32' is not of the form",
                          "jobs.toml: job 3: colour: unknown option",
                          "jobs.toml: job 3: output: is required"})
      QVERIFY2(e.contains(s), qPrintable(e + "  <- missing: " + s));
    QVERIFY(!e.contains('\n'));
  }

  void periodicRules() {
    auto v = minimal();
    v.erase("randoms");
    QVERIFY(error_of(v).contains("randoms: a random catalogue is required"));
    v["periodic"] = true;
    QVERIFY(error_of(v).contains("--box:"));  // a periodic job needs its box
    v["box"] = 60.0;
    QVERIFY(error_of(v).contains("--rmax: must be less than box/2"));
    v["box"] = 100.0;
    NpcfJob j = make_npcf_job(v, "", "--");
    QVERIFY(j.config.periodic && !j.randoms);
    QCOMPARE(j.config.box, 100.0);
    v["stat"] = std::string("3pcf");  // 3/4pCF: rmax <= L/4
    QVERIFY(error_of(v).contains("--rmax: must be at most box/4"));
    v["periodic"] = false;
    QVERIFY(error_of(v).contains("--box: is only used with periodic"));
  }

  void valueTypes() {
    auto v = minimal();
    v["nbins"] = std::string("7.5");
    QVERIFY(error_of(v).contains("--nbins: '7.5' is not an integer"));
    v["nbins"] = 6.0;  // an integral JSON/TOML float is accepted
    QCOMPARE(make_npcf_job(v, "", "").config.bins.nbins, 6);
    v["rmax"] = std::string("inf");
    QVERIFY(error_of(v).contains("--rmax: must be finite"));
    v["rmax"] = true;
    QVERIFY(error_of(v).contains("--rmax: expected a number"));
    v = minimal();
    v["log-bins"] = std::string("maybe");
    QVERIFY(error_of(v).contains("--log-bins: expected true or false"));
    v = minimal();
    v["data-columns"] = std::vector<std::string>{"1", "2"};
    QVERIFY(error_of(v).contains("--data-columns: expected 3 coordinate columns"));
    v["data-columns"] = std::string("RA, DEC ,Z");
    v["sky"] = true;
    v["omega-m"] = 0.3;
    NpcfJob j = make_npcf_job(v, "", "");
    QCOMPARE(j.data.columns, (std::vector<std::string>{"RA", "DEC", "Z"}));
    QCOMPARE(j.randoms->columns, j.data.columns);  // randoms default to the data's columns
    QVERIFY(j.data.sky && j.randoms->sky);
    QCOMPARE(j.data.cosmology.omega_m, 0.3);
    v["omega-m"] = 1.5;
    QVERIFY(error_of(v).contains("--omega-m: must be in (0, 1]"));
  }

  void roundTrip() {
    auto v = minimal();
    v["stat"] = std::string("2pcf,4pcf");
    v["nbins"] = std::int64_t{4};
    v["log-bins"] = true;
    v["weights"] = std::string("W1,W2");
    v["randoms-weights"] = std::string("W3");
    v["format-in"] = std::string("fits");
    v["fits-hdu"] = std::int64_t{2};
    v["pixel-grid"] = std::string("6x16");
    v["threads"] = std::int64_t{3};
    v["backend"] = std::string("auto");
    v["format"] = std::string("gramsci");
    NpcfJob a = make_npcf_job(v, "/base", "");
    NpcfJob b = make_npcf_job(to_job_values(a), "/elsewhere", "");  // paths are absolute now
    QCOMPARE(b.data.path, a.data.path);
    QCOMPARE(b.randoms->path, a.randoms->path);
    QCOMPARE(b.randoms->weight_columns, std::vector<std::string>{"W3"});
    QCOMPARE(b.data.weight_columns, (std::vector<std::string>{"W1", "W2"}));
    QCOMPARE(int(b.data.format), int(io::CatalogueFormat::Fits));
    QCOMPARE(b.data.fits_hdu, 2);
    QCOMPARE(b.output, a.output);
    QCOMPARE(b.output_paths(), a.output_paths());
    QCOMPARE(QString::fromStdString(b.config.to_json()), QString::fromStdString(a.config.to_json()));
    QCOMPARE(b.statistics, a.statistics);
    QCOMPARE(int(b.format), int(OutputFormat::Gramsci));
  }
};

QTEST_GUILESS_MAIN(TestNpcfJob)
#include "test_npcf_job.moc"
