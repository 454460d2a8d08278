// make_sht_job's rules (sht/job.hpp): the schema's defaults, ranges and choices, and the
// cross-field rules the CLI used to check itself, with their messages; job-file spellings and
// labels; the canonical configuration; the dry-run report.
#include <QtTest>

#include <filesystem>
#include <fstream>

#include "almagest/core/error.hpp"
#include "almagest/jobs/job.hpp"
#include "almagest/sht/healpix_io.hpp"
#include "almagest/sht/job.hpp"

namespace fs = std::filesystem;
using namespace almagest;
using namespace almagest::sht;

namespace {

ShtJob parse(schema::Values v, const std::string& label = "", const std::string& base = "") {
  return parse_sht_job({"sht", std::move(v), base, label});
}

/// The ConfigError message of a request ("" when it is accepted).
std::string problem(schema::Values v, const std::string& label = "") {
  try {
    parse(std::move(v), label);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return {};
}

schema::Values base(const std::string& op) {
  return {{"op", op}, {"input", std::string("in.fits")}, {"output", std::string("out.fits")}};
}
schema::Values with(schema::Values v, const std::string& key, schema::Value value) {
  v[key] = std::move(value);
  return v;
}

}  // namespace

class TestShtJob : public QObject {
  Q_OBJECT
private slots:
  void defaults() {
    ShtJob j = parse(base("map2alm"));
    QCOMPARE(j.op, ShtOp::Map2alm);
    QCOMPARE(j.iter, 3);
    QCOMPARE(j.spin, 0);
    QCOMPARE(j.nside, 0);
    QCOMPARE(j.lmax, -1);
    QCOMPARE(j.backend, (BackendChoice{BackendKind::Cpu, 0}));
    QCOMPARE(j.out_format, FileFormat::Fits);
    QCOMPARE(j.layout(), ShtLayout::Scalar);
    QCOMPARE(parse(base("inverse")).epsilon, 1e-10);
    QCOMPARE(parse(base("inverse")).max_iter, 1000);
    QCOMPARE(parse(with(base("cl"), "output", std::string("cl.txt"))).out_format, FileFormat::Text);
    QCOMPARE(parse(with(base("adjoint"), "output", std::string("a.h5"))).out_format, FileFormat::Hdf5);
    QCOMPARE(parse(with(base("adjoint"), "backend", std::string("cuda:3"))).backend, (BackendChoice{BackendKind::Cuda, 3}));
    QCOMPARE(parse(with(base("adjoint"), "pol", true)).layout(), ShtLayout::Pol);
    QCOMPARE(parse(with(base("adjoint"), "spin", std::int64_t{2})).layout(), ShtLayout::Spin2);
  }

  void jobFileSpellings() {
    // Job files and Python write '_' for '-'; integers and booleans as such; relative paths
    // resolve against the job file's folder.
    schema::Values v = base("map2alm");
    v["ring_weights"] = std::string("w.fits");
    v["iter"] = std::int64_t{1};
    v["pol"] = true;
    ShtJob j = parse(v, "jobs.toml: job 1: ", "/data/run");
    QCOMPARE(j.ring_weights, std::string("/data/run/w.fits"));
    QCOMPARE(j.input, std::string("/data/run/in.fits"));
    QCOMPARE(j.iter, 1);
    QCOMPARE(j.input_paths(), (std::vector<std::string>{"/data/run/in.fits", "/data/run/w.fits"}));
    QCOMPARE(j.given.count("ring-weights"), std::size_t(1));
  }

  void rules() {
    struct Case {
      schema::Values v;
      std::string message;
    };
    const std::vector<Case> cases = {
        {with(base("adjoint"), "spin", std::int64_t{1}), "--spin: must be 0 or 2, got 1"},
        {with(base("adjoint"), "spin", std::string("3")), "--spin: must be 0 or 2, got 3"},
        {with(with(base("adjoint"), "spin", std::int64_t{2}), "pol", true),
         "--pol: cannot be combined with --spin 2 (--pol transforms T with spin 0 and (Q, U) with spin 2)"},
        {with(with(base("adjoint"), "pol", true), "field", std::string("0,1")), "--field: needs 3 index(es) for spin 0,2, got 2"},
        {with(base("adjoint"), "field", std::string("a")), "--field: indices are 0-based integers >= 0, got 'a'"},
        {with(base("adjoint"), "nside", std::int64_t{0}), "--nside: must be in [1, 8192], got 0"},
        {with(base("adjoint"), "lmax", std::int64_t{-3}), "--lmax: must be in [0, 32768], got -3"},
        {with(with(base("synth"), "nside", std::int64_t{4}), "lmax", std::int64_t{17}),
         "--lmax: must be in 0..4 NSIDE = 16 for NSIDE 4, got 17"},
        {with(with(with(base("synth"), "nside", std::int64_t{8}), "lmax", std::int64_t{1}), "spin", std::int64_t{2}),
         "--lmax: spin 2 needs lmax >= 2, got 1"},
        {base("synth"), "--nside: is required for sht synth"},
        {with(with(base("synth"), "nside", std::int64_t{12}), "nest-out", true),
         "--nest-out: NESTED ordering needs a power-of-two NSIDE, got 12"},
        {with(with(base("map2alm"), "pixel-weights", std::string("p.fits")), "iter", std::int64_t{2}),
         "--iter: must be 0 with --pixel-weights (healpy ignores iter with use_pixel_weights; HEALPix refuses the combination)"},
        {with(with(base("map2alm"), "pixel-weights", std::string("p.fits")), "ring-weights", std::string("r.fits")),
         "--pixel-weights: cannot be combined with --ring-weights"},
        {with(base("inverse"), "epsilon", 0.0), "--epsilon: must be > 0, got 0"},
        {with(base("inverse"), "max-iter", std::int64_t{0}), "--max-iter: must be in [1, 2147483647], got 0"},
        {base("smooth"), "--fwhm-arcmin: is required"},
        {with(base("smooth"), "fwhm-arcmin", -1.0), "--fwhm-arcmin: must be >= 0 arcmin, got -1"},
        {with(with(base("smooth"), "fwhm-arcmin", 1.0), "format", std::string("text")),
         "--format: text output is only available for spectra (sht cl)"},
        {with(base("adjoint"), "format", std::string("xls")), "--format: unknown value 'xls' (allowed: auto, fits, hdf5, text)"},
        {with(base("adjoint"), "backend", std::string("tpu")),
         "--backend: unknown backend 'tpu' (allowed: cpu, cuda, cuda:N with N in 0..63, auto)"},
        {with(base("synth"), "epsilon", 1e-3), "--epsilon: does not apply to sht synth (it applies to inverse); --nside: is required for sht synth"},
        {with(base("adjoint"), "colour", std::string("red")), "--colour: unknown option"},
        {with(base("fft"), "op", std::string("fft")), "--op: unknown value 'fft' (allowed: synth, adjoint, inverse, map2alm, cl, smooth)"},
    };
    for (const auto& c : cases) QCOMPARE(problem(c.v), c.message);
    // A job file's label replaces "--" on every key, the cross-field rules' included.
    QCOMPARE(problem(with(with(base("adjoint"), "spin", std::int64_t{2}), "pol", true), "jobs.toml: job 3: "),
             std::string("jobs.toml: job 3: pol: cannot be combined with jobs.toml: job 3: spin 2 (--pol transforms T "
                         "with spin 0 and (Q, U) with spin 2)"));
    // The registry gives the same job and message.
    try {
      jobs::make_job({"sht", with(base("adjoint"), "spin", std::int64_t{1}), "", ""});
      QFAIL("accepted");
    } catch (const ConfigError& e) {
      QCOMPARE(std::string(e.what()), std::string("--spin: must be 0 or 2, got 1"));
    }
  }

  void configJson() {
    ShtJob j = parse(with(base("inverse"), "lmax", std::int64_t{20}));
    const std::string c = j.config_json();
    QVERIFY2(c.find("\"command\":\"sht inverse\"") != std::string::npos, c.c_str());
    QVERIFY2(c.find("\"epsilon\":1e-10") != std::string::npos, c.c_str());
    QVERIFY2(c.find("\"input\":\"" + fs::absolute("in.fits").lexically_normal().string() + "\"") != std::string::npos, c.c_str());
    QVERIFY(c.find("fwhm") == std::string::npos);
    // Same values, same configuration; another value, another one.
    QCOMPARE(parse(with(base("inverse"), "lmax", std::string("20"))).config_json(), c);
    QVERIFY(parse(with(base("inverse"), "lmax", std::int64_t{21})).config_json() != c);
    auto job = make_sht_job({"sht", with(base("inverse"), "lmax", std::int64_t{20}), "", ""});
    QCOMPARE(job->config_json(), c);
    QCOMPARE(job->operation(), std::string("inverse"));
    QCOMPARE(job->output_paths(), std::vector<std::string>{"out.fits"});
  }

  void dryRunReport() {
    const QByteArray root = qgetenv("ALMAGEST_TEST_TMP");
    const fs::path dir = fs::path(root.isEmpty() ? fs::temp_directory_path().string() : root.toStdString()) / "sht-job-dry";
    fs::create_directories(dir);
    HealpixMap m;
    m.nside = 32;
    m.names = {"TEMPERATURE"};
    m.units = {""};
    m.columns = {std::vector<double>(12 * 32 * 32, 1.0)};
    write_healpix_map((dir / "m.fits").string(), m);
    schema::Values v = {{"op", std::string("cl")}, {"input", (dir / "m.fits").string()}, {"output", (dir / "cl.fits").string()}};
    ShtJob j = parse(v);
    ShtOutcome o = run_sht_job(j, {}, {true, true});
    QVERIFY(o.plan);
    QVERIFY(!fs::exists(dir / "cl.fits"));
    QCOMPARE(o.plan->inputs.size(), std::size_t(1));
    QVERIFY(o.plan->inputs[0].bytes > 12 * 32 * 32 * 8);
    QVERIFY(o.plan->host_bytes >= 3 * 12 * 32 * 32 * 8.0);
    QCOMPARE(o.plan->device_bytes, 0.0);
    QVERIFY(o.plan->estimated_seconds > 0);
    bool lmax = false;
    for (const auto& n : o.plan->notes) lmax = lmax || n.find("lmax 95") != std::string::npos;
    QVERIFY(lmax);
  }
};

QTEST_GUILESS_MAIN(TestShtJob)
#include "test_sht_job.moc"
