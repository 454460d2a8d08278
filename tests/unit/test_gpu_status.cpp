// GPU status and the unavailable-backend path. On a machine without a usable GPU (CI, this
// development machine) the status must say so with a reason, and asking for the CUDA backend must
// raise BackendUnavailable naming that reason. With a GPU the status must describe the device.
#include <QtTest>

#include <string>

#include "almagest/core/error.hpp"
#include "almagest/core/gpu.hpp"
#include "almagest/npcf/cuda.hpp"
#include "almagest/npcf/plan.hpp"
#include "almagest/npcf/synthetic.hpp"

using namespace almagest;

class TestGpuStatus : public QObject {
  Q_OBJECT

private:
  static npcf::PointSet small_points() {
    const auto cats = npcf::synthetic::benchmark_catalogues(600, 7, 100.0);
    return npcf::make_point_set(cats.data, &cats.randoms);
  }

private slots:
  void status_is_consistent() {
    const GpuStatus& s = gpu_status();
    if (s.available) {
      QVERIFY(!s.query.devices.empty());
      QVERIFY(!s.module_path.empty());
      QVERIFY(s.summary().find(s.query.devices.front().name) != std::string::npos);
      QVERIFY2(s.query.devices.front().total_memory > 0, "device without memory");
    } else {
      QVERIFY2(!s.reason.empty(), "an unavailable GPU must come with a reason");
      QVERIFY(s.summary().find(s.reason) != std::string::npos);
      // The reason is specific: a missing module, a loader error, the driver or the device.
      const bool specific = s.reason.find("not found") != std::string::npos ||
                            s.reason.find("dlopen") != std::string::npos ||
                            s.reason.find("driver") != std::string::npos ||
                            s.reason.find("device") != std::string::npos;
      QVERIFY2(specific, s.reason.c_str());
    }
  }

  void status_is_cached_and_refreshable() {
    const GpuStatus& a = gpu_status();
    const GpuStatus& b = gpu_status();
    QCOMPARE(&a, &b);  // cached
    const GpuStatus& c = gpu_status(true);
    QCOMPARE(c.available, a.available);
    QCOMPARE(c.reason, a.reason);
    QCOMPARE(a.reason, b.reason);  // the first reference stays valid after a refresh
  }

  void module_accessor_matches_status() {
    const GpuStatus& s = gpu_status();
    if (s.available) {
      QCOMPARE(cuda_module().abi_version(), kernels::kAbiVersion);
      QVERIFY(cuda_module().npcf() != nullptr);
      return;
    }
    try {
      cuda_module();
      QFAIL("cuda_module() must throw without a usable GPU");
    } catch (const BackendUnavailable& e) {
      QVERIFY2(std::string(e.what()).find(s.reason) != std::string::npos, e.what());
    }
  }

  void cuda_plan_is_unavailable_with_reason() {
    const GpuStatus& s = gpu_status();
    if (s.available) QSKIP("a usable GPU is present: the unavailable path cannot be exercised here");
    npcf::NpcfConfig c;
    c.statistic = npcf::Statistic::TwoPoint;
    c.bins = npcf::Binning{1.0, 20.0, 4, npcf::BinScale::Linear};
    c.backend = parse_backend("cuda");
    JobContext ctx;
    try {
      npcf::NpcfPlan plan(c, small_points(), ctx);
      QFAIL("a CUDA plan must not be created without a usable GPU");
    } catch (const BackendUnavailable& e) {
      QVERIFY2(std::string(e.what()).find(s.reason) != std::string::npos, e.what());
    }
  }

  void cuda_functions_are_unavailable_with_reason() {
    const GpuStatus& s = gpu_status();
    if (s.available) QSKIP("a usable GPU is present");
    const npcf::PointSet p = small_points();
    npcf::NpcfConfig c;
    c.bins = npcf::Binning{1.0, 20.0, 4, npcf::BinScale::Linear};
    JobContext ctx;
    QVERIFY_THROWS_EXCEPTION(BackendUnavailable, npcf::build_graph_cuda(p, c, ctx));
    const npcf::Graph g = npcf::build_graph(p, c, ctx);
    try {
      npcf::count_3pcf_cuda(g, p, c, false, ctx);
      QFAIL("count_3pcf_cuda must throw without a usable GPU");
    } catch (const BackendUnavailable& e) {
      QVERIFY2(std::string(e.what()).find(s.reason) != std::string::npos, e.what());
    }
    QVERIFY(!npcf::cuda_worthwhile(npcf::Statistic::FourPoint, 1'000'000'000ull));
  }

  void bin_thresholds_reproduce_bin_of() {
    // The GPU graph bins by thresholds on d^2; they must reproduce Binning::bin_of exactly,
    // also right at and next to every threshold.
    for (auto scale : {npcf::BinScale::Linear, npcf::BinScale::Log}) {
      const npcf::Binning b{1.0, 33.0, 10, scale};
      const std::vector<double> t = npcf::squared_bin_thresholds(b);
      QCOMPARE(static_cast<int>(t.size()), b.nbins - 1);
      auto gpu_bin = [&](double d2) {
        return static_cast<int>(std::upper_bound(t.begin(), t.end(), d2) - t.begin());
      };
      for (double th : t) {
        for (double d2 : {std::nextafter(th, 0.0), th, std::nextafter(th, 1e300)})
          QCOMPARE(gpu_bin(d2), b.bin_of(std::sqrt(d2)));
      }
      npcf::synthetic::Rng rng(99);
      for (int k = 0; k < 20000; ++k) {
        const double d = 1.0 + 32.0 * rng.uniform();
        const double d2 = d * d;
        if (!(d2 > 1.0 && d2 < 33.0 * 33.0)) continue;
        QCOMPARE(gpu_bin(d2), b.bin_of(std::sqrt(d2)));
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestGpuStatus)
#include "test_gpu_status.moc"
