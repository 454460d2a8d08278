// `almagest-cli selftest` without a usable GPU (CUDA_VISIBLE_DEVICES=-1 hides any): its options
// come from the engines' declared self-test options (the same set as before the registry), a bad
// value is a usage error (exit 2) before the GPU is looked at, and no GPU is exit 4 with the
// reason and nothing on stdout. The checks themselves run on the device (label gpu, and
// `almagest-cli selftest` there).
#include <QtTest>

#include "cli_test_support.hpp"

using namespace almagest::cli_test;

namespace {

QProcessEnvironment no_gpu() {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("CUDA_VISIBLE_DEVICES", "-1");
  return env;
}

}  // namespace

class TestCliSelftest : public QObject {
  Q_OBJECT

private slots:
  void help_lists_every_engine_option() {
    const CliRun r = run_cli({"selftest", "--help"});
    QCOMPARE(r.code, 0);
    for (const char* opt : {"--points", "--seed", "--quick", "--only", "--tolerance", "--sht-nside", "--quiet"})
      QVERIFY2(r.out.contains(opt), opt);
    QVERIFY(r.out.contains("healpix_cxx"));  // the SHT self-test's summary
    QVERIFY(r.out.contains("N-point statistic"));
  }

  void no_gpu_is_exit_4() {
    const CliRun r = run_cli({"selftest", "--quick", "--only", "2pcf,mirror", "--sht-nside", "0"}, no_gpu());
    QCOMPARE(r.code, 4);
    QVERIFY2(r.err.contains("selftest needs a GPU"), qPrintable(r.err));
    QCOMPARE(r.err.count('\n'), 1);
    QVERIFY(r.out.isEmpty());
  }

  void bad_values_are_usage_errors() {
    struct Case {
      QStringList args;
      const char* message;
    };
    const Case cases[] = {
        {{"selftest", "--points", "5"}, "--points: must be in [300, 2000000], got 5"},
        {{"selftest", "--tolerance=-1"}, "--tolerance: must be > 0, got -1"},
        {{"selftest", "--sht-nside", "100"}, "--sht-nside: unknown value '100'"},
        {{"selftest", "--seed", "x"}, "--seed: must be an integer"},
    };
    for (const Case& c : cases) {
      const CliRun r = run_cli(c.args, no_gpu());
      QVERIFY2(r.code == 2, qPrintable(c.args.join(' ') + ": exit " + QString::number(r.code) + " " + r.err));
      QVERIFY2(r.err.contains(c.message), qPrintable(r.err));
      QVERIFY(r.out.isEmpty());
    }
  }
};

QTEST_GUILESS_MAIN(TestCliSelftest)
#include "test_cli_selftest.moc"
