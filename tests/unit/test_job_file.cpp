// The job layer's job files, batches and aggregates (almagest/jobs/*.hpp): key spellings and JSON
// duplicate keys, shared keys per engine, batch axes (glob, list, member tables), output
// templates and distinct outputs, provenance read back from text and ECSV headers, mean and
// covariance with the Hartlap factor, parity pulls, and candidates merged across fields.
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "almagest/core/error.hpp"
#include "almagest/jobs/aggregate.hpp"
#include "almagest/jobs/batch.hpp"
#include "almagest/jobs/job_file.hpp"

using namespace almagest;
using namespace almagest::jobs;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& p, const std::string& text) {
  std::ofstream o(p);
  o << text;
}

template <class E, class F>
QString error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

std::string catalogue() { return "1 2 3 1\n4 5 6 1\n7 8 9 1\n"; }

}  // namespace

class TestJobFile : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  fs::path dir_;

  fs::path file(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    write(p, text);
    return p;
  }

private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    dir_ = tmp_.path().toStdString();
    fs::create_directories(dir_ / "mocks");
    for (const char* n : {"b.txt", "a.txt", "c.txt"}) write(dir_ / "mocks" / n, catalogue());
    write(dir_ / "ran.txt", catalogue());
  }

  void twoSpellingsAndDuplicateKeysAreErrors() {
    auto p = file("s.toml", "log-bins = true\nlog_bins = true\n");
    QString e = error_of<ConfigError>([&] { read_job_file(p.string()); });
    QVERIFY2(e.contains("'log-bins'") && e.contains("'log_bins'"), qPrintable(e));
    p = file("d.json", R"({"nbins": 5, "nbins": 6})");
    e = error_of<ConfigError>([&] { read_job_file(p.string()); });
    QVERIFY2(e.contains("'nbins' is given twice"), qPrintable(e));
    p = file("x.yaml", "a: 1\n");
    QVERIFY(error_of<ConfigError>([&] { read_job_file(p.string()); }).contains("use .toml or .json"));
  }

  void batchAxes() {
    auto p = file("g.toml", "stat = \"2pcf\"\n[[job]]\nname = \"m\"\n[job.batch]\ndata = \"mocks/*.txt\"\n");
    JobFile jf = read_job_file(p.string());
    QCOMPARE(jf.jobs.size(), std::size_t(1));
    QCOMPARE(jf.jobs[0].name, std::string("m"));
    QCOMPARE(jf.jobs[0].engine, std::string("npcf"));
    QVERIFY(jf.jobs[0].batch);
    const auto& v = jf.jobs[0].batch->values;
    QCOMPARE(v.size(), std::size_t(3));
    QCOMPARE(fs::path(std::get<std::string>(v[0])).filename().string(), std::string("a.txt"));  // sorted
    QCOMPARE(fs::path(std::get<std::string>(v[2])).filename().string(), std::string("c.txt"));

    p = file("l.json", R"({"job": [{"batch": {"nbins": [8, 16]}}, {"batch": {"member": [{"name": "x", "rmax": 10}, {"rmax": 20}]}}]})");
    jf = read_job_file(p.string());
    QCOMPARE(std::get<std::int64_t>(jf.jobs[0].batch->values[1]), std::int64_t(16));
    QCOMPARE(jf.jobs[1].batch->members.size(), std::size_t(2));
    QCOMPARE(jf.jobs[1].batch->member_names[0], std::string("x"));

    p = file("two.toml", "[[job]]\n[job.batch]\nnbins = [1, 2]\nrmax = [3, 4]\n");
    QVERIFY(error_of<ConfigError>([&] { read_job_file(p.string()); }).contains("a batch varies one key"));
    p = file("none.toml", "[[job]]\n[job.batch]\ndata = \"mocks/*.fits\"\n");
    QVERIFY(error_of<ConfigError>([&] { read_job_file(p.string()); }).contains("matches no file"));
    p = file("dup.toml", "[[job]]\nname = \"a\"\n[[job]]\nname = \"a\"\n");
    QVERIFY(error_of<ConfigError>([&] { read_job_file(p.string()); }).contains("also the name of"));
  }

  // The ranks' device map (docs/mpi.md, "Devices"): top level only, GPU indices or "cpu".
  void deviceMapAtTheTopLevel() {
    auto p = file("dev.toml", "devices = [0, 1, \"cpu\"]\nstat = \"2pcf\"\n[[job]]\ndata = \"mocks/a.txt\"\n");
    JobFile jf = read_job_file(p.string());
    QCOMPARE(jf.devices, (std::vector<std::string>{"0", "1", "cpu"}));
    QVERIFY(!jf.jobs[0].values.count("devices"));  // not an engine key
    p = file("dev1.json", R"({"devices": 2, "stat": "2pcf", "data": "mocks/a.txt"})");
    QCOMPARE(read_job_file(p.string()).devices, (std::vector<std::string>{"2"}));
    p = file("devbad.toml", "devices = [0, \"gpu1\"]\n[[job]]\nstat = \"2pcf\"\n");
    QString e = error_of<ConfigError>([&] { read_job_file(p.string()); });
    QVERIFY2(e.contains("devices") && e.contains("'gpu1'"), qPrintable(e));
    p = file("devjob.toml", "[[job]]\nstat = \"2pcf\"\ndevices = [0]\n");
    e = error_of<ConfigError>([&] { read_job_file(p.string()); });
    QVERIFY2(e.contains("job 1: devices") && e.contains("top level"), qPrintable(e));
  }

  void sharedKeysGoToTheEnginesThatKnowThem() {
    if (!find_engine("sht")) QSKIP("no sht engine in the registry");
    auto p = file("mix.toml", "randoms = \"ran.txt\"\n[[job]]\ndata = \"mocks/a.txt\"\n[[job]]\nengine = \"sht\"\nop = \"cl\"\n");
    JobFile jf = read_job_file(p.string());
    QVERIFY(jf.jobs[0].values.count("randoms"));
    QVERIFY(!jf.jobs[1].values.count("randoms"));
  }

  void outputsOfMembersMustDiffer() {
    auto p = file("same.toml", "randoms = \"ran.txt\"\nrmin = 1\nrmax = 5\nnbins = 2\nstat = \"2pcf\"\n"
                               "[[job]]\noutput = \"xi.h5\"\n[job.batch]\ndata = \"mocks/*.txt\"\n");
    QString e = error_of<ConfigError>([&] { plan_job_file(read_job_file(p.string())); });
    QVERIFY2(e.contains("member 2 (b)") && e.contains("also written by"), qPrintable(e));
    p = file("ph.toml", "randoms = \"ran.txt\"\nrmin = 1\nrmax = 5\nnbins = 2\nstat = \"2pcf\"\n"
                        "[[job]]\noutput = \"{stem}_{foo}.h5\"\n[job.batch]\ndata = \"mocks/*.txt\"\n");
    e = error_of<ConfigError>([&] { plan_job_file(read_job_file(p.string())); });
    QVERIFY2(e.contains("{foo}"), qPrintable(e));
    p = file("ok.toml", "randoms = \"ran.txt\"\nrmin = 1\nrmax = 5\nnbins = 2\nstat = \"2pcf\"\n"
                        "[[job]]\nname = \"m\"\noutput = \"{index}-{stem}.h5\"\n[job.batch]\ndata = \"mocks/*.txt\"\n"
                        "[[aggregate]]\nkind = \"npcf-mean-cov\"\nbatch = \"m\"\noutput = \"cov.h5\"\n");
    RunPlan plan = plan_job_file(read_job_file(p.string()));
    QCOMPARE(plan.member_count(), std::size_t(3));
    QCOMPARE(fs::path(plan.batches[0].members[2].job->output_paths()[0]).filename().string(), std::string("3-c.h5"));
    QCOMPARE(plan.aggregates[0].inputs.size(), std::size_t(3));
    // The log file is protected.
    e = error_of<ConfigError>([&] { plan_job_file(read_job_file(p.string()), {{(dir_ / "ran.txt").string()}}); });
    QVERIFY2(e.contains("log"), qPrintable(e));
    // An aggregate naming no job.
    p = file("agg.toml", "[[job]]\nname = \"m\"\n[[aggregate]]\nkind = \"npcf-mean-cov\"\nbatch = \"z\"\noutput = \"c.h5\"\n");
    e = error_of<ConfigError>([&] { plan_job_file(read_job_file(p.string())); });
    QVERIFY2(e.contains("no job is named 'z'"), qPrintable(e));
  }

  void provenanceFromTextHeaders() {
    auto p = file("xi.txt", "# Almagest\n# provenance: {\"software\":\"Almagest\",\"config\":{\"a\":1},\"input_hashes\":{\"d\":\"00ff\"}}\n1 2\n");
    Provenance pr = read_provenance(p.string());
    QCOMPARE(pr.input_hashes.at("d"), std::string("00ff"));
    QVERIFY(pr.config_json.find("\"a\"") != std::string::npos);
    p = file("c.ecsv", "# %ECSV 1.0\n# - {provenance: '{\"software\":\"Almagest\",\"device\":\"it''s\"}'}\nx,y\n1,2\n");
    QCOMPARE(read_provenance(p.string()).device, std::string("it's"));
    p = file("none.txt", "1 2\n");
    QVERIFY(!error_of<IoError>([&] { read_provenance(p.string()); }).isEmpty());
  }

  void meanCovarianceAndHartlap() {
    const std::vector<std::vector<double>> x{{1, 2}, {3, 6}, {5, 4}, {7, 8}, {9, 10}};
    MeanCovariance m = mean_covariance(x);
    QCOMPARE(m.mean[0], 5.0);
    QCOMPARE(m.mean[1], 6.0);
    QCOMPARE(m.covariance[0], 10.0);  // sum of (x-5)^2 = 40, / 4
    QCOMPARE(m.covariance[1], 9.0);   // (-4*-4 + -2*0 + 0*-2 + 2*2 + 4*4) / 4 = 36 / 4
    QCOMPARE(m.covariance[2], 9.0);
    QCOMPARE(m.covariance[3], 10.0);
    QCOMPARE(m.hartlap_factor(), (5.0 - 2 - 2) / 4.0);
    ParityPulls pp = parity_pulls({{1, 0}, {2, 0}, {3, 0}});
    QCOMPARE(pp.z[0], 2.0 / std::sqrt(1.0 / 3.0));  // s = 1, sigma_mean = 1/sqrt(3)
    QCOMPARE(pp.dof, std::size_t(1));
    QCOMPARE(pp.degenerate, std::size_t(1));
  }

  void candidatesMergedAcrossFields() {
    const std::string head = "# %ECSV 1.0\n# ---\n# datatype:\n# - {name: z, datatype: float64}\n# - {name: ra, datatype: float64}\n"
                             "# - {name: dec, datatype: float64}\nz,ra,dec\n";
    write(dir_ / "f1.ecsv", head + "9,10.0,20.0\n5,11.0,20.0\n");
    write(dir_ / "f2.ecsv", head + "12,10.0002,20.0002\n6,12.0,21.0\n");  // 0.85 arcsec from f1's first
    RunPlan plan;
    plan.base_dir = dir_.string();
    Batch b;
    b.name = "fields";
    for (const char* n : {"f1", "f2"}) {
      Member m;
      m.name = n;
      b.members.push_back(std::move(m));
    }
    plan.batches.push_back(std::move(b));
    AggregateStep step;
    step.kind = "merge-candidates";
    step.output = (dir_ / "merged.ecsv").string();
    step.inputs = {(dir_ / "f1.ecsv").string(), (dir_ / "f2.ecsv").string()};
    step.values = {{"kind", std::string("merge-candidates")}, {"match-radius", 2.0}};
    run_aggregate(step, plan, JobContext{}, false);
    std::ifstream in(dir_ / "merged.ecsv");
    std::vector<std::string> rows;
    for (std::string l; std::getline(in, l);)
      if (!l.empty() && l[0] != '#') rows.push_back(l);
    QCOMPARE(rows.size(), std::size_t(4));  // header + 3 kept
    QCOMPARE(rows[0], std::string("z,ra,dec,field,n_fields"));
    QCOMPARE(rows[1], std::string("5,11.0,20.0,f1,1"));     // f1's 9 is f2's 12 seen again
    QCOMPARE(rows[2], std::string("12,10.0002,20.0002,f2,2"));
    QCOMPARE(rows[3], std::string("6,12.0,21.0,f2,1"));
  }
};

QTEST_GUILESS_MAIN(TestJobFile)
#include "test_job_file.moc"
