// The generic self-test runner (core/selftest.hpp) and the engines' registrations
// (jobs::engine_selftests()): names and options as declared by the engines, values checked against
// the declarations before anything runs, duplicates refused, engines run in order with only their
// own values, reports merged. Runs without a GPU (the engines' runs are stand-ins here, except
// the registered ones, which report no checks when no GPU is usable).
#include <QtTest>

#include <functional>

#include "almagest/core/error.hpp"
#include "almagest/core/gpu.hpp"
#include "almagest/core/selftest.hpp"
#include "almagest/jobs/selftests.hpp"

using namespace almagest;

namespace {

QString config_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

EngineSelftest fake(const std::string& engine, const std::string& key, std::vector<schema::Values>* seen) {
  EngineSelftest t;
  t.engine = engine;
  t.summary = engine + " checks";
  schema::Field f;
  f.key = key;
  f.kind = schema::Kind::Integer;
  f.min = 1;
  f.max = 9;
  f.default_value = std::int64_t{3};
  t.options.fields.push_back(f);
  t.run = [engine, seen](const schema::Values& v, const JobContext&) {
    seen->push_back(v);
    SelftestReport r;
    r.checks.push_back({engine + " check", engine != "bad", "detail"});
    r.seconds = 0.5;
    return r;
  };
  return t;
}

}  // namespace

class TestSelftestRegistry : public QObject {
  Q_OBJECT

private slots:
  void engines_register_their_options() {
    const SelftestRegistry& r = jobs::engine_selftests();
    QCOMPARE(r.entries().size(), std::size_t{3});
    QCOMPARE(r.entries()[0].engine, std::string("npcf"));
    QCOMPARE(r.entries()[1].engine, std::string("sht"));
    QCOMPARE(r.entries()[2].engine, std::string("stack"));
    QVERIFY(r.entries()[2].options.find("stack-exposures"));
    for (const char* key : {"points", "seed", "quick", "only", "tolerance"})
      QVERIFY2(r.entries()[0].options.find(key), key);
    QVERIFY(r.entries()[1].options.find("sht-nside"));
    QVERIFY(!r.entries()[0].options.find("sht-nside"));
    // The defaults of the old command line, now declared once.
    QCOMPARE(std::get<std::int64_t>(*r.entries()[0].options.find("points")->default_value), std::int64_t{6000});
    QCOMPARE(std::get<std::string>(*r.entries()[1].options.find("sht-nside")->default_value), std::string("128"));
  }

  void values_checked_against_declarations() {
    const SelftestRegistry& r = jobs::engine_selftests();
    r.check({});
    r.check({{"points", std::string("300")}, {"only", std::vector<std::string>{"2pcf", "mirror"}},
             {"sht-nside", std::string("0")}, {"quick", true}});
    QCOMPARE(config_error([&] { r.check({{"points", std::string("299")}}); }),
             QString("--points: must be in [300, 2000000], got 299"));
    QCOMPARE(config_error([&] { r.check({{"tolerance", std::string("0")}}); }),
             QString("--tolerance: must be > 0, got 0"));
    const QString both = config_error([&] {
      r.check({{"sht-nside", std::string("100")}, {"pointz", std::string("1")}});
    });
    QVERIFY2(both.contains("--pointz: unknown option"), qPrintable(both));
    QVERIFY2(both.contains("--sht-nside: unknown value '100'"), qPrintable(both));
  }

  void no_gpu_means_no_checks() {
    if (gpu_status().available) QSKIP("a GPU is usable here: the registered self-tests would run");
    const SelftestReport rep = jobs::engine_selftests().run({{"quick", true}}, JobContext{});
    QVERIFY(!rep.gpu_available);
    QVERIFY(rep.checks.empty());
    QVERIFY(!rep.passed());
    QVERIFY(rep.text().find("SKIPPED: no usable GPU") != std::string::npos);
    // A bad value is refused before anything runs, GPU or not.
    QVERIFY(!config_error([] { jobs::engine_selftests().run({{"points", std::string("7")}}, JobContext{}); }).isEmpty());
  }

  void runs_in_order_with_own_values() {
    std::vector<schema::Values> seen;
    SelftestRegistry r;
    r.add(fake("one", "alpha", &seen));
    r.add(fake("two", "beta", &seen));
    QVERIFY(config_error([&] { r.add(fake("one", "gamma", &seen)); }).contains("registered twice"));
    QVERIFY(config_error([&] { r.add(fake("three", "alpha", &seen)); }).contains("declared by both one and three"));
    QCOMPARE(r.entries().size(), std::size_t{2});
    const SelftestReport rep = r.run({{"beta", std::string("7")}}, JobContext{});
    QCOMPARE(seen.size(), std::size_t{2});
    QVERIFY(seen[0].empty());  // "one" gets none of "two"'s values
    QCOMPARE(seen[1].size(), std::size_t{1});
    QCOMPARE(std::get<std::string>(seen[1].at("beta")), std::string("7"));
    QCOMPARE(rep.checks.size(), std::size_t{2});
    QCOMPARE(rep.checks[0].name, std::string("one check"));
    QCOMPARE(rep.checks[1].name, std::string("two check"));
    QCOMPARE(rep.seconds, 1.0);
    QVERIFY(config_error([&] { r.run({{"beta", std::string("10")}}, JobContext{}); }).contains("--beta: must be in [1, 9], got 10"));
    QCOMPARE(seen.size(), std::size_t{2});  // nothing ran
  }
};

QTEST_APPLESS_MAIN(TestSelftestRegistry)
#include "test_selftest_registry.moc"
