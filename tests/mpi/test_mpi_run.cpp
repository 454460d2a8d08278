// mpirun -n K almagest-cli run (docs/mpi.md), oversubscribed on the CI machine: a plain 3pCF +
// parity 4pCF job split by hub ranges over 2 and 3 ranks writes datasets byte-identical to one
// process (every dataset and attribute but the provenance's timings); a batch stopped after some
// members resumes under another rank count with the one-process aggregate, bit for bit; a bad
// input in one member fails the run with the one-process exit code (3), the member and its rank
// named, the other members' complete outputs kept and no temporary left.
#include <hdf5.h>
#include <signal.h>

#include <QElapsedTimer>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTest>
#include <functional>
#include <map>
#include <random>
#include <sstream>

#include "../cli/cli_test_support.hpp"
#include "almagest/sht/healpix_io.hpp"

using namespace almagest::cli_test;
namespace fs = std::filesystem;

namespace {

void write_catalogue(const fs::path& p, std::uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 100.0), w(0.5, 1.0);
  std::ostringstream o;
  o.precision(9);
  for (int i = 0; i < n; ++i) o << u(rng) << ' ' << u(rng) << ' ' << u(rng) << ' ' << w(rng) << '\n';
  write_text(p, o.str());
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

CliRun mpirun(int ranks, const QStringList& args, int timeout_ms = 120000,
              const std::map<QString, QString>& extra_env = {}) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  for (const auto& [k, v] : extra_env) env.insert(k, v);
  env.insert("OMPI_ALLOW_RUN_AS_ROOT", "1");
  env.insert("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
  env.insert("OMPI_MCA_rmaps_base_oversubscribe", "1");
  p.setProcessEnvironment(env);
  QStringList all{"-n", QString::number(ranks), "--oversubscribe", QStringLiteral(ALMAGEST_CLI)};
  all += args;
  p.start(QStringLiteral(ALMAGEST_MPIRUN), all);
  CliRun r;
  if (!p.waitForStarted(10000)) return r;
  r.finished = p.waitForFinished(timeout_ms);
  if (!r.finished) {
    p.kill();
    p.waitForFinished(5000);
  }
  r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

/// Every dataset of an HDF5 file as raw bytes (its native type), by path, read with libhdf5.
std::map<std::string, std::string> datasets(const fs::path& file) {
  std::map<std::string, std::string> out;
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return out;
  struct Ctx {
    hid_t f;
    std::map<std::string, std::string>* out;
  } c{f, &out};
  H5Ovisit(
      f, H5_INDEX_NAME, H5_ITER_NATIVE,
      [](hid_t, const char* name, const H5O_info_t* info, void* data) -> herr_t {
        auto* c = static_cast<Ctx*>(data);
        if (info->type != H5O_TYPE_DATASET) return 0;
        hid_t d = H5Dopen2(c->f, name, H5P_DEFAULT);
        hid_t t = H5Dget_type(d);
        hid_t nt = H5Tget_native_type(t, H5T_DIR_ASCEND);
        hid_t s = H5Dget_space(d);
        const auto n = static_cast<std::size_t>(H5Sget_simple_extent_npoints(s));
        std::string bytes(n * H5Tget_size(nt), '\0');
        if (H5Tget_class(nt) != H5T_STRING || !H5Tis_variable_str(nt))
          H5Dread(d, nt, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data());
        (*c->out)[name] = bytes;
        H5Sclose(s);
        H5Tclose(nt);
        H5Tclose(t);
        H5Dclose(d);
        return 0;
      },
      &c);
  H5Fclose(f);
  return out;
}

/// Every attribute of every object ("object@name"), as raw bytes in its native type (strings as
/// text). JSON text attributes lose the keys that differ between any two runs (the creation time
/// and the timings of the provenance) and the output paths (each run writes its own files);
/// an attribute `date` (SHT outputs) is not compared.
std::map<std::string, std::string> attributes(const fs::path& file) {
  std::map<std::string, std::string> out;
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return out;
  struct Ctx {
    hid_t f;
    std::map<std::string, std::string>* out;
    std::string object;
  } c{f, &out, {}};
  H5Ovisit(
      f, H5_INDEX_NAME, H5_ITER_NATIVE,
      [](hid_t, const char* name, const H5O_info_t*, void* data) -> herr_t {
        auto* c = static_cast<Ctx*>(data);
        hid_t o = H5Oopen(c->f, name, H5P_DEFAULT);
        c->object = std::string(name) == "." ? "/" : "/" + std::string(name);
        H5Aiterate2(
            o, H5_INDEX_NAME, H5_ITER_NATIVE, nullptr,
            [](hid_t loc, const char* an, const H5A_info_t*, void* d) -> herr_t {
              auto* c = static_cast<Ctx*>(d);
              hid_t a = H5Aopen(loc, an, H5P_DEFAULT);
              hid_t t = H5Aget_type(a);
              hid_t s = H5Aget_space(a);
              std::string v;
              if (H5Tget_class(t) == H5T_STRING) {
                if (H5Tis_variable_str(t)) {
                  char* text = nullptr;
                  hid_t mt = H5Tcopy(H5T_C_S1);
                  H5Tset_size(mt, H5T_VARIABLE);
                  H5Tset_cset(mt, H5Tget_cset(t));
                  if (H5Aread(a, mt, &text) < 0) v = "(unreadable)";
                  if (text) v = text;
                  H5free_memory(text);
                  H5Tclose(mt);
                } else {
                  v.assign(H5Tget_size(t), '\0');
                  H5Aread(a, t, v.data());
                }
                const QJsonDocument j = QJsonDocument::fromJson(QByteArray::fromStdString(v));
                if (j.isObject()) {
                  QJsonObject o = j.object();
                  o.remove("created_utc");
                  o.remove("timings_s");
                  o.remove("output");
                  if (o.contains("config") && o["config"].isObject()) {
                    QJsonObject cfg = o["config"].toObject();
                    cfg.remove("output");
                    o["config"] = cfg;
                  }
                  v = QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString();
                }
              } else {
                hid_t nt = H5Tget_native_type(t, H5T_DIR_ASCEND);
                v.assign(static_cast<std::size_t>(H5Sget_simple_extent_npoints(s)) * H5Tget_size(nt), '\0');
                H5Aread(a, nt, v.data());
                H5Tclose(nt);
              }
              // The SHT outputs' DATE key: when it was written.
              if (std::string(an) == "date") v = "(time stamp)";
              (*c->out)[(c->object == "/" ? "" : c->object) + "/@" + an] = v;
              H5Sclose(s);
              H5Tclose(t);
              H5Aclose(a);
              return 0;
            },
            c);
        H5Oclose(o);
        return 0;
      },
      &c);
  H5Fclose(f);
  return out;
}

/// The processes whose parent is `pid` (from /proc).
std::vector<int> children_of(int pid) {
  std::vector<int> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream st(e.path() / "stat");
    std::string line;
    std::getline(st, line);
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid == pid) out.push_back(std::stoi(name));
  }
  return out;
}

long long graph_edges(const fs::path& file, const std::string& group) {
  long long v = -1;
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return v;
  hid_t a = H5Aopen_by_name(f, group.c_str(), "graph_edges", H5P_DEFAULT, H5P_DEFAULT);
  if (a >= 0) {
    H5Aread(a, H5T_NATIVE_LLONG, &v);
    H5Aclose(a);
  }
  H5Fclose(f);
  return v;
}

}  // namespace

class TestMpiRun : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_{temp_dir_template("mpi-run")};
  fs::path root() const { return fs::path(tmp_.path().toStdString()); }

  /// A fresh folder under the test's root with gal.txt (seed, n points) and, when nran > 0,
  /// ran.txt (seed + 1, nran points).
  fs::path catalogue_dir(const char* name, std::uint64_t seed, int ngal, int nran) {
    const fs::path d = root() / name;
    fs::create_directories(d);
    write_catalogue(d / "gal.txt", seed, ngal);
    if (nran > 0) write_catalogue(d / "ran.txt", seed + 1, nran);
    return d;
  }

  /// Runs `job` (output = "out<K>.h5") under 1, 2 and 3 ranks in `d`; every dataset of every
  /// statistic's output (`stats`, file suffixes) must be byte-identical to one process's, and so
  /// must the graph_edges attribute (the whole graph's, not a rank's part of it).
  void compare_split(const fs::path& d, const std::string& job, const std::vector<std::string>& stats) {
    std::map<std::string, std::map<int, std::map<std::string, std::string>>> got;
    for (int k : {1, 2, 3}) {
      const std::string tag = std::to_string(k);
      write_text(d / ("job" + tag + ".toml"), job + "output = \"out" + tag + ".h5\"\n");
      QStringList args{"run", q(d / ("job" + tag + ".toml"))};
      if (k > 1) args << "--log-json" << q(d / ("log" + tag + ".json"));
      const CliRun r = k == 1 ? run_cli(args) : mpirun(k, args);
      QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
      if (k > 1) {
        QVERIFY2(r.out.contains(QString("split over %1 ranks").arg(k)), qPrintable(r.out));
        // One "rank" line per rank at the end (also when the plan has split steps only).
        const std::string log = slurp(d / ("log" + tag + ".json"));
        std::size_t lines = 0;
        for (std::size_t at = 0; (at = log.find("\"event\":\"rank\"", at)) != std::string::npos; ++at) ++lines;
        QCOMPARE(lines, static_cast<std::size_t>(k));
      }
      for (const auto& st : stats) {
        // One statistic writes out<K>.h5, several out<K>_<stat>.h5.
        auto file = [&](const std::string& t) { return d / ("out" + t + (stats.size() > 1 ? "_" + st : "") + ".h5"); };
        const fs::path out = file(tag);
        got[st][k] = datasets(out);
        QVERIFY2(!got[st][k].empty(), out.c_str());
        const auto attrs = attributes(out);
        QVERIFY2(attrs.size() > 10, out.c_str());
        QVERIFY2(attrs.count("/@provenance") && attrs.at("/@provenance").find("\"inputs\"") != std::string::npos, out.c_str());
        for (const auto& [name, bytes] : attrs) QVERIFY2(bytes != "(unreadable)", name.c_str());
        for (const auto& [name, bytes] : attrs) got[st][k]["attribute " + name] = bytes;
        const long long e = graph_edges(out, "/npcf/" + st), e1 = graph_edges(file("1"), "/npcf/" + st);
        QVERIFY2(e == e1 && e > 1000, qPrintable(QString("%1 ranks: graph_edges %2, one process %3").arg(k).arg(e).arg(e1)));
      }
      // The summary line of the whole graph, too (not rank 0's part of it).
      if (k == 1) one_summary_ = r.out;
      else {
        const QRegularExpression edges("(\\d+) graph edges");
        const auto a = edges.match(r.out), b = edges.match(one_summary_);
        QVERIFY2(a.hasMatch() && b.hasMatch() && a.captured(1) == b.captured(1), qPrintable(r.out + one_summary_));
      }
    }
    for (const auto& st : stats)
      for (int k : {2, 3}) {
        QCOMPARE(got[st][k].size(), got[st][1].size());
        for (const auto& [name, bytes] : got[st][1]) QVERIFY2(got[st][k][name] == bytes, (st + ": " + name).c_str());
      }
  }
  QString one_summary_;
  /// Datasets and attributes (as compare_split reads them) of a file.
  static std::map<std::string, std::string> contents(const fs::path& f) {
    auto all = datasets(f);
    for (const auto& [name, bytes] : attributes(f)) all["attribute " + name] = bytes;
    return all;
  }

  /// Runs the job file `job` in a fresh copy of `dir` per rank count (1, 2, 3): every file under
  /// out/ and every `extra` file must have the one-process datasets and attributes, byte for byte.
  /// The runs' stdout (by rank count) in `outs`.
  void compare_runs(const std::function<void(const fs::path&)>& make, const std::string& job,
                    std::map<int, QString>* outs_out = nullptr, const std::vector<std::string>& extra = {}) {
    std::map<int, QString> local;
    std::map<int, QString>& outs = outs_out ? *outs_out : local;
    std::map<int, std::map<std::string, std::map<std::string, std::string>>> got;
    // One folder (the inputs' paths are in the provenance); each run's out/ is kept as out-K.
    const fs::path d = root() / QTest::currentTestFunction();
    fs::create_directories(d);
    make(d);
    write_text(d / "jobs.toml", job);
    for (int k : {1, 2, 3}) {
      fs::create_directories(d / "out");
      const QStringList args{"run", q(d / "jobs.toml"), "--force"};
      const CliRun r = k == 1 ? run_cli(args) : mpirun(k, args);
      if (r.code != 0) {
        QTest::qFail(qPrintable(QString("%1 ranks: exit %2: %3%4").arg(k).arg(r.code).arg(r.err, r.out)), __FILE__, __LINE__);
        return;
      }
      outs[k] = r.out;
      std::vector<std::string> files = extra;
      for (const auto& name : listing(d / "out")) files.push_back("out/" + name);
      for (const auto& f : files) got[k][f] = contents(d / f);
      fs::rename(d / "out", d / ("out-" + std::to_string(k)));
    }
    QVERIFY2(!got[1].empty(), "no outputs");
    for (int k : {2, 3}) {
      QCOMPARE(got[k].size(), got[1].size());
      for (const auto& [file, want] : got[1]) {
        QVERIFY2(want.size() > 3, file.c_str());
        const auto& have = got[k][file];
        QVERIFY2(have.size() == want.size(), file.c_str());
        for (const auto& [name, bytes] : want)
          QVERIFY2(have.count(name) && have.at(name) == bytes, qPrintable(QString("%1 ranks: %2: %3").arg(k).arg(file.c_str(), name.c_str())));
      }
    }
  }

  static void simulate(const fs::path& out, int seed, int exposures, int width, int height) {
    const CliRun r = run_cli({"stack", "simulate", "--exposures", QString::number(exposures), "--width", QString::number(width),
                              "--height", QString::number(height), "--seed", QString::number(seed), "-o", q(out), "--quiet"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
  }


private slots:
  void initTestCase() { QVERIFY(tmp_.isValid()); }

  void splitJobIsBitIdenticalForOneTwoThreeRanks() {
    const fs::path d = catalogue_dir("split", 11, 1200, 2400);
    compare_split(d,
                  "data = \"gal.txt\"\nrandoms = \"ran.txt\"\nrmin = 2\nrmax = 16\nnbins = 4\n"
                  "stat = \"3pcf,4pcf-parity\"\nthreads = 2\n",
                  {"3pcf", "4pcf-parity"});
  }

  void splitSpatialHubOrderJobs() {
    // hub-order auto without mu bins or parity: the points are sorted spatially (docs/npcf.md),
    // every rank alike; each rank builds a compact region's part of the graph.
    const fs::path d = catalogue_dir("split-spatial", 17, 1500, 3000);
    compare_split(d,
                  "data = \"gal.txt\"\nrandoms = \"ran.txt\"\nrmin = 2\nrmax = 14\nnbins = 4\n"
                  "stat = \"3pcf,4pcf\"\nthreads = 2\n",
                  {"3pcf", "4pcf"});
    const auto attrs = attributes(d / "out1_4pcf.h5");
    bool spatial = false;
    for (const auto& [name, bytes] : attrs) spatial |= bytes.find("\"hub_order\":\"spatial\"") != std::string::npos;
    QVERIFY2(spatial, "the result's configuration does not record the spatial hub order");
    // A periodic box with analytic randoms (the 3pCF's internal 2pCF pass has its own chunks) in
    // the spatial order (the Morton grid over [0, box)).
    const fs::path p = catalogue_dir("split-spatial-periodic", 19, 6000, 0);
    compare_split(p,
                  "data = \"gal.txt\"\nperiodic = true\nbox = 100\nrmin = 1\nrmax = 6\nnbins = 3\n"
                  "stat = \"2pcf,3pcf\"\nthreads = 2\n",
                  {"2pcf", "3pcf"});
    // Compact regions: under 3 ranks no rank builds nearly the whole graph.
    const QRegularExpression part("graph part per rank (\\d+)-(\\d+)%");
    const auto m = part.match(QString::fromStdString(slurp(p / "log3.json")));
    QVERIFY2(m.hasMatch() && m.captured(2).toInt() < 90, qPrintable(m.captured(0)));
  }

  void deviceMapFromTheJobFile() {
    // The job file's top-level `devices` (no --devices): every rank takes "cpu" here, which its
    // rank line in the JSON log reports.
    const fs::path d = catalogue_dir("devices", 31, 600, 1200);
    write_text(d / "job.toml",
               "devices = [\"cpu\"]\ndata = \"gal.txt\"\nrandoms = \"ran.txt\"\nrmin = 2\nrmax = 12\nnbins = 3\n"
               "stat = \"2pcf\"\nthreads = 1\noutput = \"out.h5\"\n");
    const CliRun r = mpirun(2, {"run", q(d / "job.toml"), "--log-json", q(d / "log.json")});
    QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
    const std::string log = slurp(d / "log.json");
    std::size_t cpu_ranks = 0;
    for (std::size_t at = 0; (at = log.find("\"device\":\"cpu\"", at)) != std::string::npos; ++at) ++cpu_ranks;
    QVERIFY2(cpu_ranks == 2, log.c_str());
  }

  void splitPeriodicJobWithAnalyticRandoms() {
    // No randoms: the 3pCF runs an internal 2pCF pass first, with its own chunks; every rank
    // must build the lists of that pass's chunks too (partition.cpp probes every pass).
    const fs::path d = catalogue_dir("split-periodic", 13, 8000, 0);
    compare_split(d,
                  "data = \"gal.txt\"\nperiodic = true\nbox = 100\nrmin = 1\nrmax = 6\nnbins = 4\nnmu = 2\n"
                  "stat = \"3pcf\"\nthreads = 2\n",
                  {"3pcf"});
  }

  void stackSearchSplitByOriginRowBands() {
    // One stack, split by origin row bands: every band's hits merged on rank 0 in row order,
    // then the filters' de-duplication there (the mover's near-duplicates span the bands).
    std::map<int, QString> outs;
    compare_runs([](const fs::path& d) { simulate(d / "st.fits", 7, 24, 64, 60); },
                                   "engine = \"stack\"\nop = \"search\"\nstack = \"st.fits\"\nvx-range = \"-3,3\"\n"
                                   "vy-range = \"-3,3\"\ngrid = \"9\"\nthreshold-sigma = 3\nthreads = 2\noutput = \"out/c.h5\"\n",
                 &outs);
    if (QTest::currentTestFailed()) return;
    for (int k : {2, 3}) QVERIFY2(outs.at(k).contains(QString("split over %1 ranks by origin row bands").arg(k)), qPrintable(outs.at(k)));
    const QRegularExpression merged("(\\d+) duplicates merged; (\\d+) out");
    const auto m = merged.match(outs.at(1));
    QVERIFY2(m.hasMatch() && m.captured(1).toInt() > 0 && m.captured(2).toInt() > 0, qPrintable(outs.at(1)));
    for (int k : {2, 3}) QVERIFY2(outs.at(k).contains(m.captured(0)), qPrintable(outs.at(k)));
  }

  void stackFieldsBatchOverRanks() {
    // Fields distributed: one member per field, handed out to the first free rank.
    compare_runs(
        [](const fs::path& d) {
          fs::create_directories(d / "fields");
          for (int i = 0; i < 4; ++i) simulate(d / "fields" / ("f" + std::to_string(i) + ".fits"), 20 + i, 12, 32, 32);
        },
        "engine = \"stack\"\nop = \"search\"\nvx-range = \"-2,2\"\nvy-range = \"-2,2\"\ngrid = \"5\"\n"
        "threshold-sigma = 3\nthreads = 1\n[[job]]\nname = \"fields\"\noutput = \"out/{stem}.h5\"\n[job.batch]\nstack = \"fields/f*.fits\"\n");
  }

  void shtBatchOverRanks() {
    // Maps distributed: map2alm and cl of five seeded maps (NSIDE 16), one member per map.
    compare_runs(
        [](const fs::path& d) {
          fs::create_directories(d / "maps");
          for (int i = 0; i < 5; ++i) {
            std::mt19937_64 rng(100 + i);
            std::normal_distribution<double> g;
            almagest::sht::HealpixMap m;
            m.nside = 16;
            m.names = {"TEMPERATURE"};
            m.columns.assign(1, std::vector<double>(12 * 16 * 16));
            for (double& v : m.columns[0]) v = g(rng);
            almagest::sht::write_healpix_map((d / "maps" / ("m" + std::to_string(i) + ".fits")).string(), m);
          }
        },
        "engine = \"sht\"\nthreads = 1\n[[job]]\nname = \"alm\"\nop = \"map2alm\"\noutput = \"out/{stem}_alm.h5\"\n"
        "[job.batch]\ninput = \"maps/m*.fits\"\n[[job]]\nname = \"cl\"\nop = \"cl\"\noutput = \"out/{stem}_cl.h5\"\n"
        "[job.batch]\ninput = \"maps/m*.fits\"\n");
  }

  void badInputInSplitJobFailsCleanly() {
    // Every rank reads the catalogue of a split job: the ranks agree on the failure (no abort),
    // rank 0 reports it once with the one-process message and exit code, nothing is written.
    const fs::path d = root() / "bad-split";
    fs::create_directories(d);
    write_catalogue(d / "gal.txt", 31, 400);
    write_catalogue(d / "ran.txt", 32, 800);
    std::string bad = slurp(d / "gal.txt");
    std::size_t at = 0;
    for (int l = 0; l < 8; ++l) at = bad.find('\n', at) + 1;
    bad.insert(at, "1.0 2.0 nan?x 1.0\n");
    write_text(d / "gal.txt", bad);
    write_text(d / "job.toml", "data = \"gal.txt\"\nrandoms = \"ran.txt\"\nrmin = 2\nrmax = 12\nnbins = 3\nstat = \"3pcf\"\n"
                               "output = \"out.h5\"\n");
    const CliRun one = run_cli({"run", q(d / "job.toml")});
    QCOMPARE(one.code, 3);
    QVERIFY2(one.err.contains("gal.txt: line 9, column 3"), qPrintable(one.err));
    for (int k : {2, 3}) {
      const CliRun r = mpirun(k, {"run", q(d / "job.toml")});
      QVERIFY2(r.code == one.code, qPrintable(r.err));
      QCOMPARE(r.err.count("almagest-cli: error:"), 1);
      QVERIFY2(r.err.contains("rank 0: ") && r.err.contains("gal.txt: line 9, column 3"), qPrintable(r.err));
      QVERIFY2(!r.err.contains("MPI_ABORT"), qPrintable(r.err));
      for (const auto& name : listing(d)) QVERIFY2(name != "out.h5" && name[0] != '.', name.c_str());
    }
  }

  void failingRankDuringTheHandOutEndsTheJobCleanly() {
    // A rank that fails while the others count (chunks handed out by rank 0, docs/mpi.md): as a
    // pass begins (between passes: the others may already claim chunks of it) or after some
    // chunks of it, on rank 0 or another. Every case ends promptly (no rank left waiting for a
    // chunk or a total) with one error naming the failing rank, no MPI abort and nothing written.
    const fs::path d = root() / "fail-split";
    fs::create_directories(d);
    write_catalogue(d / "gal.txt", 41, 1500);
    write_catalogue(d / "ran.txt", 42, 3000);
    write_text(d / "job.toml", "data = \"gal.txt\"\nrandoms = \"ran.txt\"\nrmin = 2\nrmax = 14\nnbins = 4\n"
                               "stat = \"3pcf,4pcf\"\noutput = \"out.h5\"\nthreads = 1\n");
    for (const char* f : {"1,1", "0,2", "2,0,1", "0,2,2", "1,2,0"}) {
      QElapsedTimer t;
      t.start();
      const CliRun r = mpirun(3, {"run", q(d / "job.toml")}, 90000, {{"ALMAGEST_SPLIT_FAIL", f}});
      QVERIFY2(r.finished, f);
      QVERIFY2(r.code != 0, f);
      const QString who = QString("rank %1: failure injected").arg(QString(f).left(1));
      QVERIFY2(r.err.contains(who), qPrintable(QString(f) + ": " + r.err));
      QVERIFY2(r.err.count("almagest-cli: error:") == 1, qPrintable(QString(f) + ": " + r.err));
      QVERIFY2(!r.err.contains("MPI_ABORT"), qPrintable(QString(f) + ": " + r.err));
      for (const auto& name : listing(d)) QVERIFY2(name.rfind("out", 0) != 0 && name[0] != '.', name.c_str());
      qInfo("ALMAGEST_SPLIT_FAIL=%s: exit %d after %.1f s", f, r.code, t.elapsed() / 1000.0);
    }
  }

  void killedBatchResumesUnderAnotherRankCount() {
    // A real kill: SIGTERM to mpirun (forwarded to every rank) once a member is written;
    // the members running then are cancelled and leave nothing; the resume under 3 ranks skips
    // exactly the members written, computes the rest and ends with the one-process aggregate.
    auto make = [&](const char* name) {
      const fs::path d = root() / name;
      fs::create_directories(d / "mocks");
      fs::create_directories(d / "out");
      for (int i = 0; i < 4; ++i) write_catalogue(d / "mocks" / ("m" + std::to_string(i) + ".txt"), 400 + i, 2000);
      write_catalogue(d / "ran.txt", 41, 4000);
      write_text(d / "jobs.toml", "randoms = \"ran.txt\"\nrmin = 2\nrmax = 24\nnbins = 6\nstat = \"3pcf\"\nthreads = 1\n"
                                  "[[job]]\nname = \"mocks\"\noutput = \"out/{stem}.h5\"\n[job.batch]\ndata = \"mocks/m*.txt\"\n"
                                  "[[aggregate]]\nkind = \"npcf-mean-cov\"\nbatch = \"mocks\"\noutput = \"cov.h5\"\n");
      return d;
    };
    const fs::path ref = make("kill-ref"), a = make("kill");
    const CliRun one = run_cli({"run", q(ref / "jobs.toml"), "--quiet"});
    QVERIFY2(one.code == 0, qPrintable(one.err));
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("OMPI_ALLOW_RUN_AS_ROOT", "1");
    env.insert("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(ALMAGEST_MPIRUN), {"-n", "2", "--oversubscribe", QStringLiteral(ALMAGEST_CLI), "run", q(a / "jobs.toml"), "--quiet"});
    QVERIFY(p.waitForStarted(10000));
    auto written = [&] {
      std::size_t n = 0;
      for (const auto& name : listing(a / "out")) n += name[0] != '.';
      return n;
    };
    QElapsedTimer t;
    t.start();
    while (written() < 1 && t.elapsed() < 60000 && p.state() != QProcess::NotRunning) QTest::qWait(20);
    QVERIFY2(p.state() != QProcess::NotRunning, "the batch ended before it could be killed");
    // SIGTERM to every rank at once, as a batch scheduler's cancel does (mpirun itself forwards
    // a SIGTERM given to it only after a delay of seconds, when this batch may be done).
    const auto ranks = children_of(static_cast<int>(p.processId()));
    QCOMPARE(ranks.size(), std::size_t{2});
    for (int pid : ranks) ::kill(pid, SIGTERM);
    QVERIFY(p.waitForFinished(30000));
    QVERIFY2(p.exitCode() != 0, qPrintable(QString::fromUtf8(p.readAllStandardError())));
    const std::size_t before = written();
    std::map<std::string, std::string> kept;  // the members written before the kill: not rewritten
    for (const auto& name : listing(a / "out")) kept[name] = slurp(a / "out" / name);
    QVERIFY2(before >= 1 && before < 4, qPrintable(QString::number(before)));
    for (const auto& name : listing(a / "out")) QVERIFY2(name[0] != '.', name.c_str());  // no temporary left
    QVERIFY(!fs::exists(a / "cov.h5"));
    const fs::path log = a / "run.log";
    const CliRun three = mpirun(3, {"run", q(a / "jobs.toml"), "--quiet", "--log-json", q(log)});
    QVERIFY2(three.code == 0, qPrintable(three.err));
    const std::string text = slurp(log);
    std::size_t skipped = 0, computed = 0, rank_lines = 0;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (line.find("\"event\":\"member\"") != std::string::npos) {
        skipped += line.find("\"outcome\":\"skipped\"") != std::string::npos;
        computed += line.find("\"outcome\":\"written\"") != std::string::npos;
        QVERIFY2(line.find("\"rank\":") != std::string::npos, line.c_str());
      }
      rank_lines += line.find("\"event\":\"rank\"") != std::string::npos;
    }
    QCOMPARE(skipped, before);
    QCOMPARE(computed, 4 - before);
    QCOMPARE(rank_lines, std::size_t{3});  // one line per rank
    for (const auto& [name, bytes] : kept) QVERIFY2(slurp(a / "out" / name) == bytes, name.c_str());
    const auto want = contents(ref / "cov.h5"), got = contents(a / "cov.h5");
    QVERIFY(want.size() > 3);
    for (const auto& [name, bytes] : want)
      if (name.find("@provenance") == std::string::npos && name.find("@inputs") == std::string::npos)
        QVERIFY2(got.count(name) && got.at(name) == bytes, name.c_str());
    for (int i = 0; i < 4; ++i) {
      const std::string m = "m" + std::to_string(i) + ".h5";
      const auto w = datasets(ref / "out" / m), g = datasets(a / "out" / m);
      QVERIFY(!w.empty());
      for (const auto& [name, bytes] : w) QVERIFY2(g.count(name) && g.at(name) == bytes, (m + ": " + name).c_str());
    }
  }

  void badInputInOneMemberFailsCleanly() {
    const fs::path d = root() / "bad";
    fs::create_directories(d / "mocks");
    fs::create_directories(d / "out");
    for (int i = 0; i < 4; ++i) write_catalogue(d / "mocks" / ("m" + std::to_string(i) + ".txt"), 300 + i, 600);
    write_catalogue(d / "ran.txt", 5, 1200);
    // Member 3's catalogue has a non-numeric value in its 5th row.
    std::string bad = slurp(d / "mocks" / "m2.txt");
    std::size_t at = 0;
    for (int l = 0; l < 4; ++l) at = bad.find('\n', at) + 1;
    bad.insert(at, "1.0 oops 3.0 1.0\n");
    write_text(d / "mocks" / "m2.txt", bad);
    write_text(d / "jobs.toml", "randoms = \"ran.txt\"\nrmin = 2\nrmax = 15\nnbins = 3\nstat = \"3pcf\"\nthreads = 1\n"
                                "[[job]]\nname = \"mocks\"\noutput = \"out/{stem}.h5\"\n[job.batch]\ndata = \"mocks/m*.txt\"\n");
    const CliRun one = run_cli({"run", q(d / "jobs.toml"), "--quiet", "--force"});
    const CliRun r = mpirun(3, {"run", q(d / "jobs.toml"), "--quiet", "--force"});
    QCOMPARE(one.code, 3);
    QVERIFY2(r.code == one.code, qPrintable(r.err));
    QVERIFY2(r.err.contains("member 3 (m2)"), qPrintable(r.err));
    QVERIFY2(r.err.contains("m2.txt: line 5, column 2"), qPrintable(r.err));  // file and field
    QVERIFY2(one.err.contains("m2.txt: line 5, column 2"), qPrintable(one.err));
    QVERIFY2(r.err.contains(QRegularExpression("rank [0-2]: ")), qPrintable(r.err));
    QCOMPARE(r.err.count("almagest-cli: error:"), 1);
    for (const auto& name : listing(d / "out")) {
      QVERIFY2(name[0] != '.', name.c_str());  // no temporary left
      QVERIFY2(name != "m2.h5", name.c_str());
    }
  }
};

QTEST_GUILESS_MAIN(TestMpiRun)
#include "test_mpi_run.moc"
