// Result files: HDF5 round trip, the published GRAMSCI text layouts (golden text of hand-made
// results: e14.7 numbers, mu columns of the 2pCF and the 7-column equilateral 3pCF), the exact
// text variant, and a cancelled job that throws Cancelled and leaves no output file.
#include <QtTest>

#include <QTemporaryDir>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "almagest/core/error.hpp"
#include "almagest/core/gpu.hpp"
#include "almagest/io/hdf5_file.hpp"
#include "almagest/npcf/plan.hpp"
#include "almagest/npcf/read_gramsci.hpp"
#include "almagest/npcf/synthetic.hpp"
#include "test_tmp.hpp"

using namespace almagest;
using namespace almagest::npcf;

namespace {

using test::tmp_root;

PointSet catalogue(std::size_t n, std::uint64_t seed) {
  const auto cats = synthetic::benchmark_catalogues(n, seed, 200.0);
  return make_point_set(cats.data, &cats.randoms);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) out.push_back(l);
  return out;
}

/// Last '#' line (the column names) and the data lines.
void split(const std::string& text, std::string& columns, std::vector<std::string>& rows) {
  for (const auto& l : lines_of(text)) {
    if (l.rfind("#", 0) == 0)
      columns = l;
    else if (!l.empty())
      rows.push_back(l);
  }
}

std::vector<double> numbers(const std::string& line) {
  std::istringstream in(line);
  std::vector<double> v;
  double x;
  while (in >> x) v.push_back(x);
  return v;
}

}  // namespace

class TestNpcfOutput : public QObject {
  Q_OBJECT
private slots:
  void hdf5_round_trip() {
    QTemporaryDir dir(QString::fromStdString(tmp_root() + "/npcf_output_XXXXXX"));
    QVERIFY(dir.isValid());
    NpcfConfig c;
    c.statistic = Statistic::ThreePoint;
    c.bins = {2.0, 20.0, 5, BinScale::Linear};
    c.threads = 2;
    NpcfPlan plan(c, catalogue(6000, 1), JobContext{});
    for (Statistic s : {Statistic::TwoPoint, Statistic::ThreePoint, Statistic::ThreePointEquilateral}) {
      const NpcfResult r = plan.execute(s, JobContext{});
      const std::string path = dir.filePath(QString(to_string(s)) + ".h5").toStdString();
      write_hdf5(r, path);
      const NpcfResult b = read_hdf5(path);
      QCOMPARE(b.statistic, s);
      QCOMPARE(b.order, r.order);
      QCOMPARE(b.edges_per_row, r.edges_per_row);
      QVERIFY(b.bins == r.bins);
      QVERIFY(b.tuples == r.tuples);
      QVERIFY(b.random_tuples == r.random_tuples);
      QVERIFY(b.n == r.n);
      QVERIFY(b.r == r.r);
      QVERIFY(b.estimator == r.estimator);
      QCOMPARE(b.ndata, r.ndata);
      QCOMPARE(b.nrandom, r.nrandom);
      QCOMPARE(b.graph_edges, r.graph_edges);
      QCOMPARE(b.config.to_json(), r.config.to_json());
      QCOMPARE(b.provenance.backend, std::string("cpu"));
      QCOMPARE(b.provenance.timings_s.at("query"), r.provenance.timings_s.at("query"));
      // Layout details readable by any HDF5 client.
      io::Hdf5Reader in(path);
      const std::string g = std::string("/npcf/") + to_string(s);
      QCOMPARE(in.shape(g + "/bins"), (io::Shape{r.rows(), static_cast<std::uint64_t>(r.edges_per_row)}));
      QCOMPARE(in.read_attr_string(g + "/bin_edges", "units"), std::string("Mpc/h"));
      const std::vector<double> edges = in.read_double(g + "/bin_edges");
      QCOMPARE(edges.size(), std::size_t(6));
      for (int e = 0; e <= 5; ++e) QVERIFY(std::fabs(edges[e] - (2 + 3.6 * e)) < 1e-12);
      QVERIFY(in.read_attr_string("/", "provenance").find("\"timings_s\"") != std::string::npos);
      QCOMPARE(in.read_attr_string("/", "backend"), std::string("cpu"));
    }
  }

  void gramsci_layout_3pcf() {
    NpcfConfig c;
    c.statistic = Statistic::ThreePoint;
    c.bins = {1.0, 16.0, 5, BinScale::Linear};
    NpcfPlan plan(c, catalogue(6000, 2), JobContext{});
    const NpcfResult r = plan.execute(JobContext{});
    const std::string text = format_text_exact(r);
    std::string columns;
    std::vector<std::string> rows;
    split(text, columns, rows);
    QCOMPARE(columns, std::string("# r1min r1max r2min r2max r3min r3max NNN RRR zeta"));
    std::string gcolumns;
    std::vector<std::string> grows;
    split(format_gramsci(r), gcolumns, grows);
    QCOMPARE(gcolumns, columns);  // same layout, numbers as e14.7
    QCOMPARE(grows.size(), rows.size());
    QCOMPARE(rows.size(), std::size_t(5 * 6 * 7 / 6));
    QVERIFY(text.find("# config: {") != std::string::npos);
    QVERIFY(text.find("# provenance: {") != std::string::npos);
    // Loop order b1 outer, then b2, then b3, with b1 <= b2 <= b3; values at full precision.
    std::size_t k = 0;
    for (int b1 = 0; b1 < 5; ++b1)
      for (int b2 = b1; b2 < 5; ++b2)
        for (int b3 = b2; b3 < 5; ++b3, ++k) {
          const auto v = numbers(rows[k]);
          QCOMPARE(v.size(), std::size_t(9));
          QCOMPARE(v[0], 1.0 + 3 * b1);
          QCOMPARE(v[1], 4.0 + 3 * b1);
          QCOMPARE(v[2], 1.0 + 3 * b2);
          QCOMPARE(v[4], 1.0 + 3 * b3);
          QCOMPARE(v[5], 4.0 + 3 * b3);
          QCOMPARE(v[6], r.n[k]);  // %.17g round-trips exactly
          QCOMPARE(v[7], r.r[k]);
          QCOMPARE(v[8], r.estimator[k]);
          const auto g = numbers(grows[k]);
          QCOMPARE(g.size(), std::size_t(9));
          for (int c = 0; c < 9; ++c)  // 7 significant digits: relative 5e-7 at worst
            QVERIFY(std::fabs(g[c] - v[c]) <= 5.1e-7 * std::fabs(v[c]));
        }
    // Impossible configurations (b3 > b1 + b2 + 1) have no triangles: their sums print as 0,
    // never -0 (the sign flip that makes RRR positive must not leak a negative zero).
    bool empty_row = false;
    for (std::size_t row = 0; row < r.rows(); ++row)
      if (r.tuples[row] == 0) {
        empty_row = true;
        QVERIFY(!std::signbit(r.r[row]));
        QVERIFY(!std::signbit(r.n[row]));
      }
    QVERIFY(empty_row);
    QVERIFY(text.find(" -0 ") == std::string::npos && text.find(" -0\n") == std::string::npos);
  }

  void gramsci_layout_2pcf_and_4pcf() {
    NpcfConfig c;
    c.statistic = Statistic::TwoPoint;
    c.bins = {1.0, 13.0, 3, BinScale::Linear};
    c.store_pixels = true;
    NpcfPlan plan(c, catalogue(1500, 3), JobContext{});
    std::string columns;
    std::vector<std::string> rows;
    split(format_gramsci(plan.execute(JobContext{})), columns, rows);
    QCOMPARE(columns, std::string("# rmin rmax mumin mumax NN RR xi"));
    QCOMPARE(rows.size(), std::size_t(3));
    QCOMPARE(numbers(rows[0]).size(), std::size_t(7));

    rows.clear();
    split(format_gramsci(plan.execute(Statistic::FourPoint, JobContext{})), columns, rows);
    QCOMPARE(columns, std::string("# r12min r12max r13min r13max r14min r14max r23min r23max r24min "
                                  "r24max r34min r34max NNNN RRRR zeta zeta_disc zeta_conn"));
    QCOMPARE(rows.size(), std::size_t(66));
    QCOMPARE(numbers(rows[0]).size(), std::size_t(17));

    rows.clear();
    split(format_gramsci(plan.execute(Statistic::FourPointParity, JobContext{})), columns, rows);
    QCOMPARE(columns, std::string("# r12min r12max r13min r13max r14min r14max r23min r23max r24min "
                                  "r24max r34min r34max NNNN RRRR zeta_even NNNN_odd RRRR_odd "
                                  "zeta_odd zeta_disc zeta_conn_even zeta_conn_odd"));
    QCOMPARE(rows.size(), std::size_t(66));
    QCOMPARE(numbers(rows[5]).size(), std::size_t(21));
  }

  // Fortran e14.7, as the published code prints: 14 characters, 0.ddddddd mantissa, exponent
  // E+dd (no E beyond +-99), seven significant digits rounded half away.
  void fortran_e14_7_numbers() {
    QCOMPARE(fortran_e14_7(5.0), std::string(" 0.5000000E+01"));
    QCOMPARE(fortran_e14_7(-5.0), std::string("-0.5000000E+01"));
    QCOMPARE(fortran_e14_7(0.0), std::string(" 0.0000000E+00"));
    QCOMPARE(fortran_e14_7(-0.0), std::string(" 0.0000000E+00"));
    QCOMPARE(fortran_e14_7(0.1), std::string(" 0.1000000E+00"));
    QCOMPARE(fortran_e14_7(1.23456789), std::string(" 0.1234568E+01"));
    QCOMPARE(fortran_e14_7(-1.234567e-4), std::string("-0.1234567E-03"));
    QCOMPARE(fortran_e14_7(9.99999996), std::string(" 0.1000000E+02"));  // carry into the exponent
    QCOMPARE(fortran_e14_7(123456.7), std::string(" 0.1234567E+06"));
    QCOMPARE(fortran_e14_7(1e-120), std::string(" 0.1000000-119"));
    QCOMPARE(fortran_e14_7(-2.5e150), std::string("-0.2500000+151"));
    QCOMPARE(fortran_e14_7(1e-99), std::string(" 0.1000000E-98"));
    QCOMPARE(fortran_e14_7(1e99), std::string(" 0.1000000+100"));
  }

  // Golden text of hand-made results (values chosen here, not computed by the engine).
  void gramsci_golden_2pcf_and_equilateral() {
    NpcfResult r;
    r.config.statistic = r.statistic = Statistic::TwoPoint;
    r.config.bins = {1.0, 21.0, 2, BinScale::Linear};
    r.order = 2;
    r.edges_per_row = 1;
    r.bins = {0, 1};
    r.tuples = {10, 20};
    r.random_tuples = {5, 6};
    r.n = {2.5e-3, -1.25e-4};
    r.r = {1.0e-3, 4.0e-3};
    r.estimator = {2.5, -0.03125};
    auto body = [](const std::string& text) {
      std::string columns;
      std::vector<std::string> rows;
      split(text, columns, rows);
      rows.insert(rows.begin(), columns);
      return rows;
    };
    QCOMPARE(body(format_gramsci(r)),
             (std::vector<std::string>{
                 "# rmin rmax mumin mumax NN RR xi",
                 " 0.1000000E+01  0.1100000E+02 -0.1000000E+01  0.1000000E+01  0.2500000E-02  0.1000000E-02  0.2500000E+01",
                 " 0.1100000E+02  0.2100000E+02 -0.1000000E+01  0.1000000E+01 -0.1250000E-03  0.4000000E-02 -0.3125000E-01"}));
    // Two mu bins over [-1, 1]: r outer, mu inner.
    r.config.nmu = 2;
    r.bins = {0, 0, 1, 1};
    r.mu = {0, 1, 0, 1};
    r.tuples = {1, 2, 3, 4};
    r.random_tuples = {1, 1, 1, 1};
    r.n = {1.0, 2.0, 3.0, 4.0};
    r.r = {2.0, 2.0, 2.0, 2.0};
    r.estimator = {0.5, 1.0, 1.5, 2.0};
    const auto mu = body(format_gramsci(r));
    QCOMPARE(mu.size(), std::size_t(5));
    QCOMPARE(mu[2], std::string(" 0.1000000E+01  0.1100000E+02  0.0000000E+00  0.1000000E+01  0.2000000E+01  0.2000000E+01  0.1000000E+01"));
    QCOMPARE(mu[3], std::string(" 0.1100000E+02  0.2100000E+02 -0.1000000E+01  0.0000000E+00  0.3000000E+01  0.2000000E+01  0.1500000E+01"));

    // Equilateral 3pCF: the published 7-column form (one side's bin, mu -1..1, NNN RRR zeta).
    NpcfResult e;
    e.config.statistic = e.statistic = Statistic::ThreePointEquilateral;
    e.config.bins = {0.0, 30.0, 3, BinScale::Linear};
    e.order = 3;
    e.edges_per_row = 3;
    e.bins = {0, 0, 0, 1, 1, 1, 2, 2, 2};
    e.tuples = {1, 1, 1};
    e.random_tuples = {1, 1, 1};
    e.n = {-3.0e-6, 0.0, 7.5e-7};
    e.r = {1.0e-6, 0.0, 2.5e-7};
    e.estimator = {-3.0, 0.0, 3.0};
    QCOMPARE(body(format_gramsci(e)),
             (std::vector<std::string>{
                 "# rmin rmax mumin mumax NNN RRR zeta",
                 " 0.0000000E+00  0.1000000E+02 -0.1000000E+01  0.1000000E+01 -0.3000000E-05  0.1000000E-05 -0.3000000E+01",
                 " 0.1000000E+02  0.2000000E+02 -0.1000000E+01  0.1000000E+01  0.0000000E+00  0.0000000E+00  0.0000000E+00",
                 " 0.2000000E+02  0.3000000E+02 -0.1000000E+01  0.1000000E+01  0.7500000E-06  0.2500000E-06  0.3000000E+01"}));
    // The full 3pCF with mu bins: 11 columns, mu of the normal over [0, 1] before NNN.
    NpcfResult t = e;
    t.statistic = t.config.statistic = Statistic::ThreePoint;
    t.config.nmu = 2;
    t.bins = {0, 1, 2, 0, 1, 2};
    t.mu = {0, 1};
    t.tuples = {1, 1};
    t.random_tuples = {1, 1};
    t.n = {1.0, 1.0};
    t.r = {1.0, 1.0};
    t.estimator = {1.0, 1.0};
    const auto tr = body(format_gramsci(t));
    QCOMPARE(tr[0], std::string("# r1min r1max r2min r2max r3min r3max mumin mumax NNN RRR zeta"));
    QCOMPARE(tr[2], std::string(" 0.0000000E+00  0.1000000E+02  0.1000000E+02  0.2000000E+02  0.2000000E+02  0.3000000E+02  0.5000000E+00  0.1000000E+01  0.1000000E+01  0.1000000E+01  0.1000000E+01"));
  }

  // Files written for the published layout read back with the GRAMSCI reader (the 7-column 2pCF
  // and equilateral forms), values to e14.7 precision.
  void gramsci_files_read_back() {
    QTemporaryDir dir(QString::fromStdString(tmp_root() + "/npcf_gramsci_XXXXXX"));
    QVERIFY(dir.isValid());
    NpcfConfig c;
    c.statistic = Statistic::TwoPoint;
    c.bins = {2.0, 12.0, 4, BinScale::Linear};
    NpcfPlan plan(c, catalogue(3000, 5), JobContext{});
    for (Statistic s : {Statistic::TwoPoint, Statistic::ThreePointEquilateral}) {
      const NpcfResult r = plan.execute(s, JobContext{});
      const std::string path = dir.filePath(QString(to_string(s)) + ".txt").toStdString();
      write_gramsci(r, path);
      const NpcfResult b = read_gramsci(path);
      QCOMPARE(int(b.statistic), int(s));
      QCOMPARE(b.rows(), r.rows());
      QCOMPARE(b.config.bins.nbins, 4);
      for (std::size_t k = 0; k < r.rows(); ++k) {
        QVERIFY(std::fabs(b.n[k] - r.n[k]) <= 5.1e-7 * std::fabs(r.n[k]));
        QVERIFY(std::fabs(b.estimator[k] - r.estimator[k]) <= 5.1e-7 * std::fabs(r.estimator[k]));
      }
    }
  }

  void cancelled_job_leaves_no_file() {
    QTemporaryDir dir(QString::fromStdString(tmp_root() + "/npcf_cancel_XXXXXX"));
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath("cancelled.h5").toStdString();
    const std::string text_path = dir.filePath("cancelled.txt").toStdString();
    const PointSet p = catalogue(20000, 4);
    NpcfConfig c;
    c.statistic = Statistic::ThreePoint;
    c.bins = {1.0, 30.0, 10, BinScale::Linear};
    c.threads = 2;

    // Cancel from the progress callback once the triangle stage has started.
    CancelToken token;
    int calls_after_cancel = 0;
    bool cancelled = false;
    JobContext ctx(token, [&](double done, double total, std::string_view stage) {
      if (cancelled) ++calls_after_cancel;
      if (stage.find("triangles") != std::string_view::npos && done > 0 && done < total) {
        token.cancel();
        cancelled = true;
      }
    });
    NpcfPlan plan(c, p, JobContext{});
    bool threw = false;
    try {
      const NpcfResult r = plan.execute(ctx);
      write_hdf5(r, path);
      write_gramsci(r, text_path);
    } catch (const Cancelled&) {
      threw = true;
    }
    QVERIFY(threw);
    QVERIFY(!std::filesystem::exists(path));
    QVERIFY(!std::filesystem::exists(text_path));
    QVERIFY(calls_after_cancel < 20);  // prompt: workers stop after their current chunk
    // Nothing else was left in the directory (no temporary files either).
    QVERIFY(std::filesystem::is_empty(dir.path().toStdString()));

    // Cancelling while the graph is built also throws Cancelled.
    CancelToken t2;
    JobContext ctx2(t2, [&](double, double, std::string_view stage) {
      if (stage.find("graph") != std::string_view::npos) t2.cancel();
    });
    QVERIFY_THROWS_EXCEPTION(Cancelled, NpcfPlan(c, p, ctx2));

    // The same plan still runs to completion afterwards.
    const NpcfResult ok = plan.execute(JobContext{});
    write_hdf5(ok, path);
    QVERIFY(std::filesystem::exists(path));
  }

  void backend_selection() {
    NpcfConfig c;
    c.bins = {1.0, 15.0, 4, BinScale::Linear};
    c.backend = parse_backend("cuda");
    // Without a usable GPU: an error naming why, never a silent fallback.
    if (!gpu_status().available) {
      try {
        NpcfPlan plan(c, catalogue(3000, 6), JobContext{});
        QFAIL("cuda backend accepted without a GPU");
      } catch (const BackendUnavailable& e) {
        QVERIFY(std::string(e.what()).find("cuda") != std::string::npos);
        QVERIFY(std::string(e.what()).find(gpu_status().reason) != std::string::npos);
      }
    }
    // Auto falls back to the CPU and records why.
    c.backend = parse_backend("auto");
    std::string logged;
    JobContext ctx(CancelToken{}, {}, [&](LogLevel, std::string_view m) { logged += std::string(m); });
    NpcfPlan plan(c, catalogue(3000, 6), ctx);
    const NpcfResult r = plan.execute(JobContext{});
    QCOMPARE(plan.backend_name(), std::string("cpu"));
    QCOMPARE(r.provenance.backend, std::string("cpu"));
    QVERIFY(r.provenance.config_json.find("backend_note") != std::string::npos);
    QVERIFY(logged.find("auto chose the CPU") != std::string::npos);
  }

  void progress_reaches_total() {
    NpcfConfig c;
    c.statistic = Statistic::ThreePoint;
    c.bins = {1.0, 15.0, 4, BinScale::Linear};
    c.threads = 2;
    double max_done = -1, last_total = 0;
    int calls = 0;
    JobContext ctx(CancelToken{}, [&](double done, double total, std::string_view stage) {
      if (stage.find("triangles") == std::string_view::npos) return;
      ++calls;
      max_done = std::max(max_done, done);
      last_total = total;
      QVERIFY(done >= 0 && done <= total);
    });
    NpcfPlan plan(c, catalogue(8000, 5), JobContext{});
    plan.execute(ctx);
    QVERIFY(calls > 10);
    QCOMPARE(max_done, last_total);
  }
};

QTEST_GUILESS_MAIN(TestNpcfOutput)
#include "test_npcf_output.moc"
