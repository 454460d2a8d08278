// CUDA SHT backend vs the CPU backend (healpix_cxx): synthesis and adjoint, spin 0 and 2,
// max relative error < 1e-10 for nside 8..256 (8..1024 with ALMAGEST_SLOW_TESTS=1); adjointness
// on the GPU; batched == single to 1e-12; inverse recovery. Exits 77 (skipped) without a GPU.
#include <QtTest>

#include <random>

#include "almagest/core/gpu.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/sht/plan.hpp"

using namespace almagest;
using namespace almagest::sht;

namespace {
std::vector<Complex> random_alm(int lmax, int ncomp, int ncols, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g;
  const std::size_t n = alm_size(lmax);
  std::vector<Complex> a(n * ncomp * ncols);
  for (auto& x : a) x = {g(rng), g(rng)};
  for (int c = 0; c < ncomp * ncols; ++c) {
    for (int l = 0; l <= lmax; ++l) a[c * n + l] = {a[c * n + l].real(), 0.0};
    if (ncomp == 2) a[c * n] = a[c * n + 1] = a[c * n + alm_index(lmax, 1, 1)] = 0.0;
  }
  return a;
}
std::vector<double> random_map(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g;
  std::vector<double> m(n);
  for (auto& x : m) x = g(rng);
  return m;
}
template <class T>
double rel_err(const std::vector<T>& a, const std::vector<T>& ref) {
  double md = 0, mx = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    md = std::max(md, std::abs(a[i] - ref[i]));
    mx = std::max(mx, std::abs(ref[i]));
  }
  return md / mx;
}
ShtConfig cfg(int nside, int lmax, int spin, int batch, Backend b) {
  ShtConfig c;
  c.nside = nside;
  c.lmax = lmax;
  c.spin = spin;
  c.batch = batch;
  c.backend = b;
  return c;
}
}  // namespace

class TestShtGpu : public QObject {
  Q_OBJECT
private slots:
  void gpu_vs_cpu_data() {
    QTest::addColumn<int>("nside");
    QTest::addColumn<int>("spin");
    const int top = qEnvironmentVariableIsSet("ALMAGEST_SLOW_TESTS") ? 1024 : 256;
    for (int spin : {0, 2})
      for (int n = 8; n <= top; n *= 2)
        QTest::newRow(qPrintable(QString("nside%1 spin%2").arg(n).arg(spin))) << n << spin;
  }
  void gpu_vs_cpu() {
    QFETCH(int, nside);
    QFETCH(int, spin);
    auto cpu = make_plan(cfg(nside, -1, spin, 1, Backend::Cpu));
    auto gpu = make_plan(cfg(nside, -1, spin, 1, Backend::Cuda));
    const int nc = cpu.ncomp();
    auto a = random_alm(cpu.lmax(), nc, 1, 100 + nside);
    std::vector<double> mc(cpu.map_size() * nc), mg(mc.size());
    cpu.synthesis(a, mc);
    gpu.synthesis(a, mg);
    QVERIFY2(rel_err(mg, mc) < 1e-10, qPrintable(QString::number(rel_err(mg, mc))));
    auto m = random_map(mc.size(), 200 + nside);
    std::vector<Complex> ac(a.size()), ag(a.size());
    cpu.adjoint(m, ac);
    gpu.adjoint(m, ag);
    QVERIFY2(rel_err(ag, ac) < 1e-10, qPrintable(QString::number(rel_err(ag, ac))));
    if (nside <= 64) {
      double rhs = 0;
      for (int k = 0; k < nc; ++k)
        rhs += alm_dot({a.data() + k * gpu.nalm(), gpu.nalm()}, {ag.data() + k * gpu.nalm(), gpu.nalm()}, gpu.lmax());
      const double lhs = map_dot(mg, m);
      QVERIFY(std::fabs(lhs - rhs) <= 1e-12 * std::fabs(lhs));
    }
  }
  void batched_equals_single() {
    for (int spin : {0, 2}) {
      auto gb = make_plan(cfg(32, -1, spin, 6, Backend::Cuda));
      auto g1 = make_plan(cfg(32, -1, spin, 1, Backend::Cuda));
      const int nc = gb.ncomp();
      auto a = random_alm(gb.lmax(), nc, 6, 7);
      std::vector<double> mb(gb.map_size() * nc * 6), m1(mb.size());
      gb.synthesis(a, mb);
      g1.synthesis(a, m1);
      QVERIFY(rel_err(mb, m1) < 1e-12);
      auto m = random_map(mb.size(), 8);
      std::vector<Complex> ab(a.size()), a1(a.size());
      gb.adjoint(m, ab);
      g1.adjoint(m, a1);
      QVERIFY(rel_err(ab, a1) < 1e-12);
    }
  }
  void inverse_recovers() {
    for (int spin : {0, 2}) {
      auto g = make_plan(cfg(16, 32, spin, 1, Backend::Cuda));
      auto a = random_alm(32, g.ncomp(), 1, 9);
      std::vector<double> m(g.map_size() * g.ncomp());
      g.synthesis(a, m);
      std::vector<Complex> r(a.size());
      InverseOptions o;
      o.epsilon = 1e-13;
      g.inverse(m, r, o);
      QVERIFY(rel_err(r, a) < 2e-9);
    }
  }
};

int main(int argc, char** argv) {
  if (!almagest::gpu_status().available) {
    std::printf("SKIP: no usable GPU: %s\n", almagest::gpu_status().reason.c_str());
    return 77;
  }
  QCoreApplication app(argc, argv);
  TestShtGpu t;
  return QTest::qExec(&t, argc, argv);
}
#include "test_sht_gpu.moc"
