// The N-point job schema (almagest/npcf/job.hpp, on core/schema.hpp) shared by the CLI flags,
// job files, the GUI and Python: values -> job, every problem reported with its key, relative
// paths, output naming, the round trip job -> values -> job, the canonical config and the job
// layer's entry (make_job, dry run).
#include <QtTest>

#include "almagest/core/error.hpp"
#include "almagest/jobs/job.hpp"
#include "almagest/npcf/job.hpp"

using namespace almagest;
using namespace almagest::npcf;

namespace {

schema::Values minimal() {
  return {{"stat", std::string("2pcf")}, {"data", std::string("d.txt")},
          {"randoms", std::string("r.txt")}, {"rmin", 1.0}, {"rmax", std::string("40")},
          {"nbins", std::int64_t{8}}, {"output", std::string("out/xi.h5")}};
}

QString error_of(const schema::Values& v, const std::string& prefix = "--") {
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
  // 4pCF bins up to 20: the table and row-sum memory is exact from the configuration, reported
  // by job_memory (the dry run) and checked against host-memory before any catalogue is read.
  void fourPointMemoryAndRefusal() {
    auto v = minimal();
    v["stat"] = std::vector<std::string>{"4pcf-parity"};
    v["nbins"] = std::int64_t{20};
    v["rmax"] = std::string("40");
    v["data"] = std::string("/nonexistent/d.txt");
    v["randoms"] = std::string("/nonexistent/r.txt");
    NpcfJob j = make_npcf_job(v, "", "--");
    QCOMPARE(j.config.bins.nbins, 20);
    const JobMemory m = job_memory(j, 2, false);
    QCOMPARE(m.lines.size(), std::size_t(1));
    QVERIFY2(m.lines[0].find("2726900 rows") != std::string::npos, m.lines[0].c_str());
    // Table 4 x 20^6 + 6 x 2,726,900 bytes; 3 accumulators of 56 bytes a row and 2 banked row
    // sums of 32; the result 95 bytes a row.
    const double rows = 2726900;
    const double expected = 4.0 * 64e6 + 6 * rows + 3 * rows * 56 + 2 * rows * 32 + rows * 95;
    QCOMPARE(m.host_bytes, expected);
    QVERIFY(m.host_bytes > 256e6 && m.host_bytes < 1.2e9);
    const JobMemory m16 = job_memory(make_npcf_job([&] { auto w = v; w["nbins"] = std::int64_t{16}; return w; }(), "", "--"), 2, false);
    QVERIFY(m16.host_bytes < m.host_bytes / 3);  // the table grows as n^6
    // A limit below it: refused naming host-memory, before the (missing) catalogues are opened.
    v["host-memory"] = std::int64_t{100};
    j = make_npcf_job(v, "", "--");
    QCOMPARE(j.host_memory_mib, std::uint64_t{100});
    QVERIFY(memory_refusal(j, m, false).rfind("host-memory: ", 0) == 0);
    bool refused = false;
    try {
      run_npcf_job(j, JobContext{}, jobs::RunOptions{});
    } catch (const ConfigError& e) {
      refused = true;
      QVERIFY2(std::string(e.what()).find("host-memory") != std::string::npos, e.what());
      QVERIFY2(std::string(e.what()).find("100.0 MiB") != std::string::npos ||
                   std::string(e.what()).find("100 MiB") != std::string::npos, e.what());
    } catch (const IoError& e) {
      QFAIL(e.what());  // the catalogues were opened: the check came too late
    }
    QVERIFY(refused);
    // A limit above it: no refusal.
    v["host-memory"] = std::int64_t{4096};
    QVERIFY(memory_refusal(make_npcf_job(v, "", "--"), m, false).empty());
    QVERIFY(error_of([&] { auto w = v; w["nbins"] = std::int64_t{21}; return w; }()).contains("1..20"));
  }

  void schemaIsComplete() {
    const auto& s = npcf_schema();
    QCOMPARE(s.engine, std::string("npcf"));
    QVERIFY(s.fields.size() >= 20);
    for (const auto& f : s.fields) {
      QVERIFY2(!f.help.empty() && !f.group.empty(), f.key.c_str());
      QVERIFY(s.find(f.key) == &f);
      if (f.kind == schema::Kind::Choice || f.kind == schema::Kind::ChoiceList) QVERIFY(!f.choices.empty());
      // Every field has a default or is required, except the ones whose absence means something
      // (no randoms: periodic analytic randoms; no columns: the format's defaults; no box; no
      // data: the job's regions name their own; no region: one catalogue pair).
      const bool optional_by_design = f.key == "randoms" || f.key == "data" || f.key == "region" || f.key == "box" || f.key.find("columns") != std::string::npos ||
                                      f.key.find("weights") != std::string::npos ||
                                      f.key.find("jackknife-labels") != std::string::npos;  // absent: internal regions
      QVERIFY2(f.required || f.default_value || optional_by_design, f.key.c_str());
      QVERIFY2(!(f.required && f.default_value), f.key.c_str());
    }
    QVERIFY(s.find("nope") == nullptr);
    for (const char* k : {"stat", "rmin", "rmax", "nbins", "output"}) QVERIFY2(s.find(k)->required, k);
    // data is required unless regions are given: the job's validation says so in the schema's words.
    QVERIFY(!s.find("data")->required);
    QCOMPARE(s.find("nbins")->max.value_or(0), 255.0);
    QCOMPARE(s.find("rmin")->unit, std::string("Mpc/h"));
    QCOMPARE(int(s.find("data")->role), int(schema::Role::InputFile));
    QCOMPARE(int(s.find("output")->role), int(schema::Role::OutputFile));
    QVERIFY(schema::full_help(*s.find("omega-m")).find("Default: 0.31") != std::string::npos);
    // The schema's defaults are the engine's: a job without the optional keys equals the
    // defaults of NpcfConfig and CatalogueSpec.
    NpcfJob j = make_npcf_job(minimal(), "", "--");
    QCOMPARE(j.data.cosmology.omega_m, std::get<double>(*s.find("omega-m")->default_value));
    QCOMPARE(std::to_string(j.config.pixel_ntheta) + "x" + std::to_string(j.config.pixel_nphi),
             std::get<std::string>(*s.find("pixel-grid")->default_value));
    QCOMPARE(j.data.hdf5_group, std::get<std::string>(*s.find("hdf5-group")->default_value));
    QCOMPARE(std::int64_t{j.config.threads}, std::get<std::int64_t>(*s.find("threads")->default_value));
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
    QCOMPARE(int(j.config.backend.kind), int(BackendKind::Cpu));
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
                          "jobs.toml: job 3: nbins: must be in [1, 255], got 300",
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
    QVERIFY(error_of(v).contains("--nbins: must be an integer, got '7.5'"));
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
  void backendsAndBadValues() {
    auto v = minimal();
    v["backend"] = std::string("cuda:3");
    NpcfJob j = make_npcf_job(v, "", "--");
    QCOMPARE(int(j.config.backend.kind), int(BackendKind::Cuda));
    QCOMPARE(j.config.backend.device, 3);
    v["backend"] = std::string("gpu");
    QVERIFY(error_of(v).contains("--backend: unknown backend 'gpu'"));
    v = minimal();
    v["omega-m"] = 0.0;
    QVERIFY(error_of(v).contains("--omega-m: must be in (0, 1], got 0"));
    v = minimal();
    v["fits-hdu"] = std::string("-1");
    QVERIFY(error_of(v).contains("--fits-hdu: must be in [0, 100000], got -1"));
  }

  void canonicalConfig() {
    auto v = minimal();
    v["threads"] = std::int64_t{3};
    const std::string a = make_npcf_job(v, "/base", "").config_json();
    v["threads"] = std::int64_t{1};  // results do not depend on it: the same configuration
    QCOMPARE(QString::fromStdString(make_npcf_job(v, "/base", "").config_json()), QString::fromStdString(a));
    v["nbins"] = std::int64_t{9};
    QVERIFY(make_npcf_job(v, "/base", "").config_json() != a);
    QVERIFY(a.find("\"data\":\"/base/d.txt\"") != std::string::npos);
    QVERIFY(a.find("\"omega-m\":0.31") != std::string::npos);  // defaults applied
    QVERIFY(a.find("threads") == std::string::npos);
  }

  void jobLayerEntry() {
    const jobs::EngineEntry* e = jobs::find_engine("npcf");
    QVERIFY(e != nullptr);
    QVERIFY(&e->schema() == &npcf_schema());
    jobs::JobRequest req{"npcf", minimal(), "/base", ""};
    auto job = jobs::make_job(req);
    QCOMPARE(job->engine(), std::string("npcf"));
    QCOMPARE(job->operation(), std::string("2pcf"));
    QCOMPARE(job->input_paths(), (std::vector<std::string>{"/base/d.txt", "/base/r.txt"}));
    QCOMPARE(job->output_paths(), std::vector<std::string>{"/base/out/xi.h5"});
    QCOMPARE(QString::fromStdString(job->config_json()),
             QString::fromStdString(make_npcf_job(minimal(), "/base", "").config_json()));
    // The CLI's messages ("--" for flags) and a job file's label come from the same code.
    auto bad = minimal();
    bad["nbins"] = std::int64_t{0};
    req.values = bad;
    try {
      jobs::make_job(req);
      QFAIL("nbins 0 accepted");
    } catch (const ConfigError& x) {
      QCOMPARE(QString(x.what()), error_of(bad, "--"));
    }
    req.label = "jobs.toml: job 2: ";
    try {
      jobs::make_job(req);
      QFAIL("nbins 0 accepted");
    } catch (const ConfigError& x) {
      QVERIFY(QString(x.what()).startsWith("jobs.toml: job 2: nbins: must be in [1, 255], got 0"));
    }
  }
};

QTEST_GUILESS_MAIN(TestNpcfJob)
#include "test_npcf_job.moc"
