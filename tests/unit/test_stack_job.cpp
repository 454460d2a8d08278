// make_stack_job()'s rules (issue 20): the schema's defaults and ranges, the cross-field rules
// the CLI used to check (bank kind, grid size, ranges, thresholds, method and backend, top-k,
// stamp size, simulate sizes and outputs), every problem in one ConfigError prefixed by the
// request's label, canonical keys ('_' = '-'), config_json with defaults and absolute paths.
#include <QtTest>

#include <nlohmann/json.hpp>
#include <string>

#include "almagest/core/error.hpp"
#include "almagest/jobs/job.hpp"
#include "almagest/stack/job.hpp"

using namespace almagest;
using stack::make_stack_job;

namespace {

schema::Values search(schema::Values extra = {}) {
  schema::Values v{{"op", "search"}, {"stack", "s.fits"}, {"vx-range", "-2,2"}, {"vy-range", "-2,2"}, {"output", "c.ecsv"}};
  for (auto& [k, x] : extra) v[k] = x;
  return v;
}

/// The ConfigError message of `v` ("" when it is accepted).
std::string problem(const schema::Values& v, const std::string& label = "") {
  try {
    (void)make_stack_job({"stack", v, "/jobs", label});
  } catch (const ConfigError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

class TestStackJob : public QObject {
  Q_OBJECT
private slots:
  void defaultsAndBank() {
    const stack::StackJob j = make_stack_job({"stack", search(), "", ""});
    QCOMPARE(j.search.bank.size(), std::size_t(21 * 21));  // grid default 21
    QCOMPARE(j.search.false_alarms, 1.0);
    QCOMPARE(j.search.min_obs, 1);
    QVERIFY(j.search.cluster.enabled);
    QCOMPARE(j.search.cluster.radius_px, 3.0);
    // The schema's filter defaults are FilterConfig's (the engine's documented defaults).
    QCOMPARE(j.filters.to_json(), stack::FilterConfig{}.to_json());
    QVERIFY(!j.search.fractional);
    QVERIFY(j.method == stack::Method::Tiled);
    QVERIFY(j.backend.kind == BackendKind::Cpu);
    QCOMPARE(j.output_ext, std::string(".ecsv"));
    const auto sa = make_stack_job({"stack", {{"op", "search"}, {"stack", "s.fits"}, {"speed_range", "0,4"},
                                              {"angle_range", "-90,90"}, {"grid", "5x7"}, {"output", "c.h5"}}, "", ""});
    QCOMPARE(sa.search.bank.size(), std::size_t(35));
    QCOMPARE(sa.output_ext, std::string(".h5"));
  }

  void rules_data() {
    QTest::addColumn<schema::Values>("values");
    QTest::addColumn<QString>("message");
    QTest::newRow("no bank") << schema::Values{{"op", "search"}, {"stack", "s"}, {"output", "c.ecsv"}} << "--bank: no trajectory bank";
    QTest::newRow("two banks") << search({{"velocities", "v.txt"}}) << "--bank: give only one of";
    QTest::newRow("grid with a list") << schema::Values{{"op", "search"}, {"stack", "s"}, {"velocities", "v.txt"}, {"grid", "3"}, {"output", "c.ecsv"}}
                                      << "--grid: does not apply to an explicit velocities list";
    QTest::newRow("grid 0") << search({{"grid", "0"}}) << "--grid: expected N or NXxNY";
    QTest::newRow("grid too big") << search({{"grid", "100000x100000"}}) << "10000000000 velocities";
    QTest::newRow("half a bank") << schema::Values{{"op", "search"}, {"stack", "s"}, {"vx-range", "0,1"}, {"output", "c.ecsv"}}
                                 << "--vy-range: a Cartesian bank needs both";
    QTest::newRow("range order") << search({{"vx-range", "3,1"}}) << "--vx-range: maximum 1 is below minimum 3";
    QTest::newRow("range text") << search({{"vy-range", "a,b"}}) << "--vy-range: expected the vy range";
    QTest::newRow("negative speed") << schema::Values{{"op", "search"}, {"stack", "s"}, {"speed-range", "-1,1"}, {"angle-range", "0,1"}, {"output", "c.ecsv"}}
                                    << "--speed-range: speeds must be >= 0";
    QTest::newRow("fourier on cpu") << search({{"method", "fourier"}}) << "--method: fourier runs on the GPU only";
    QTest::newRow("fourier top-k") << search({{"method", "fourier"}, {"backend", "auto"}, {"top-k", "2"}}) << "--top-k: is not available with method fourier";
    QTest::newRow("fourier polar") << schema::Values{{"op", "search"}, {"stack", "s"}, {"speed-range", "0,1"}, {"angle-range", "0,1"}, {"method", "fourier"}, {"backend", "auto"}, {"output", "c.ecsv"}}
                                   << "--method: fourier needs a Cartesian bank";
    QTest::newRow("two thresholds") << search({{"threshold-sigma", "5"}, {"false-alarms", "2"}}) << "--threshold-sigma: excludes false-alarms";
    QTest::newRow("threshold 0") << search({{"threshold-sigma", "0"}}) << "--threshold-sigma: must be > 0";
    QTest::newRow("top-k 17") << search({{"top-k", "17"}}) << "--top-k: must be in [0, 16], got 17";
    QTest::newRow("storage") << search({{"storage", "fp8"}}) << "--storage: unknown value 'fp8'";
    QTest::newRow("psf sigma") << search({{"psf-sigma", "50.5"}}) << "--psf-sigma: must be in [0, 50] pixels, got 50.5";
    QTest::newRow("backend") << search({{"backend", "gpu"}}) << "--backend: unknown backend 'gpu'";
    QTest::newRow("device clash") << search({{"backend", "cuda:2"}, {"device", "3"}}) << "--device: 3 differs from the device of backend cuda:2";
    QTest::newRow("extension") << search({{"output", "c.txt"}}) << "c.txt: unknown extension '.txt'";
    QTest::newRow("psiphi ecsv") << schema::Values{{"op", "psiphi"}, {"stack", "s"}, {"output", "p.ecsv"}} << "(use .h5, .hdf5)";
    QTest::newRow("no stack") << schema::Values{{"op", "psiphi"}, {"output", "p.h5"}} << "--stack: is required";
    QTest::newRow("no table") << schema::Values{{"op", "stamps"}, {"output", "p.h5"}} << "--candidates: is required";
    QTest::newRow("stamp radius") << schema::Values{{"op", "stamps"}, {"candidates", "c.ecsv"}, {"stamp-radius", "1001"}, {"output", "p.h5"}}
                                  << "--stamp-radius: must be in [0, 1000] pixels, got 1001";
    QTest::newRow("not for this op") << search({{"stamp-radius", "3"}}) << "--stamp-radius: does not apply to stack search";
    QTest::newRow("unknown key") << search({{"colour", "red"}}) << "--colour: unknown option";
    QTest::newRow("no op") << schema::Values{{"stack", "s"}} << "--op: is required";
    QTest::newRow("simulate size") << schema::Values{{"op", "simulate"}, {"exposures", "100000"}, {"width", "60000"}, {"height", "60000"}, {"output", "s.fits"}}
                                   << "more than the 1073741824 a synthetic stack may hold";
    QTest::newRow("simulate width") << schema::Values{{"op", "simulate"}, {"width", "7"}, {"output", "s.fits"}} << "--width: must be in [8, 65536] pixels, got 7";
    QTest::newRow("simulate seeing") << schema::Values{{"op", "simulate"}, {"seeing", "1,1e6"}, {"output", "s.fits"}} << "--seeing: expected MIN,MAX";
    QTest::newRow("simulate mover") << schema::Values{{"op", "simulate"}, {"mover", std::vector<std::string>{"1,2,3"}}, {"output", "s.fits"}}
                                    << "--mover: expected X0,Y0,VX,VY[,SNR], got '1,2,3'";
    QTest::newRow("simulate format") << schema::Values{{"op", "simulate"}, {"output", "s.txt"}} << "s.txt: cannot tell the format";
    QTest::newRow("simulate clash") << schema::Values{{"op", "simulate"}, {"output", "s.fits"}, {"truth", "s.fits"}} << "--truth: the stack, truth and curve outputs must be different";
  }
  void rules() {
    QFETCH(schema::Values, values);
    QFETCH(QString, message);
    const std::string m = problem(values);
    QVERIFY2(QString::fromStdString(m).contains(message), m.c_str());
  }

  void everyProblemAtOnceWithTheLabel() {
    const std::string m = problem(search({{"top-k", "99"}, {"min-obs", "-1"}, {"psf-sigma", "-1"}}), "jobs.toml: job 2: ");
    QVERIFY2(m.find("jobs.toml: job 2: top-k") != std::string::npos && m.find("jobs.toml: job 2: min-obs") != std::string::npos &&
                 m.find("jobs.toml: job 2: psf-sigma") != std::string::npos,
             m.c_str());
  }

  void configJsonAndPaths() {
    const stack::StackJob j = make_stack_job({"stack", search({{"storage", "int8"}}), "/data/run", ""});
    QCOMPARE(j.stack, std::string("/data/run/s.fits"));
    QCOMPARE(j.output_paths(), std::vector<std::string>{"/data/run/c.ecsv"});
    const auto c = nlohmann::json::parse(j.config_json());
    QCOMPARE(c["op"].get<std::string>(), std::string("search"));
    QCOMPARE(c["stack"].get<std::string>(), std::string("/data/run/s.fits"));
    QCOMPARE(c["grid"].get<std::string>(), std::string("21"));       // a default, applied
    QCOMPARE(c["storage"].get<std::string>(), std::string("int8"));
    QVERIFY(!c.contains("stamp-radius"));                             // another operation's field
    // The same job through the registry: same configuration.
    auto job = jobs::make_job({"stack", search({{"storage", "int8"}}), "/data/run", ""});
    QCOMPARE(job->config_json(), j.config_json());
    QCOMPARE(job->operation(), std::string("search"));
  }

  void simulateDefaults() {
    const stack::StackJob j = make_stack_job({"stack", {{"op", "simulate"}, {"output", "d/s.h5"}}, "", ""});
    QCOMPARE(j.simulate.format, std::string("hdf5"));
    QCOMPARE(j.simulate.truth, std::string("d/s_truth.ecsv"));
    QCOMPARE(j.simulate.curve, std::string("d/s_curve.txt"));
    QCOMPARE(j.simulate.random_movers, 1);
    const stack::StackJob k = make_stack_job({"stack", {{"op", "simulate"}, {"mover", std::vector<std::string>{"3,4,0.5,0.5,9"}},
                                                        {"no-common-curve", true}, {"output", "s.fits"}}, "", ""});
    QCOMPARE(k.simulate.random_movers, 0);  // explicit movers only
    QCOMPARE(k.simulate.config.movers.size(), std::size_t(1));
    QVERIFY(k.simulate.curve.empty());
    QCOMPARE(k.output_paths().size(), std::size_t(2));
  }
};

QTEST_GUILESS_MAIN(TestStackJob)
#include "test_stack_job.moc"
