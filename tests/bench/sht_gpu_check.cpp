// SHT GPU check without Qt (for the device machine): CUDA backend vs the CPU backend
// (healpix_cxx) for synthesis and adjoint, spin 0 and 2, nside 8..1024; adjointness on the GPU;
// batched == single; repeat-call determinism; inverse recovery; cut sky; coexisting plans.
// Exit codes: 0 all gates passed, 1 a gate failed, 77 no usable GPU.
// Usage: sht_gpu_check [max_nside=1024] [report file]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "almagest/core/error.hpp"
#include "almagest/core/gpu.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/sht/plan.hpp"

using namespace almagest;
using namespace almagest::sht;

namespace {
std::ostringstream report;
int failures = 0;

void line(const std::string& s) {
  std::printf("%s\n", s.c_str());
  std::fflush(stdout);
  report << s << "\n";
}
void gate(bool ok, const std::string& what) {
  if (!ok) ++failures;
  line(std::string(ok ? "PASS " : "FAIL ") + what);
}
std::string fmt(const char* f, double a, double b = 0, double c = 0, double d = 0) {
  char buf[512];
  std::snprintf(buf, sizeof buf, f, a, b, c, d);
  return buf;
}

std::vector<Complex> random_alm(int lmax, int ncomp, int ncols, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g;
  const std::size_t n = alm_size(lmax);
  std::vector<Complex> a(n * ncomp * ncols);
  for (auto& x : a) x = {g(rng), g(rng)};
  for (int c = 0; c < ncomp * ncols; ++c) {
    for (int l = 0; l <= lmax; ++l) a[c * n + l] = {a[c * n + l].real(), 0.0};
    if (ncomp == 2) {
      a[c * n + 0] = 0.0;
      a[c * n + 1] = 0.0;
      a[c * n + alm_index(lmax, 1, 1)] = 0.0;
    }
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
  return mx > 0 ? md / mx : md;
}
ShtConfig cfg(int nside, int lmax, int spin, int batch, Backend b) {
  ShtConfig c;
  c.nside = nside;
  c.lmax = lmax;
  c.spin = spin;
  c.batch = batch;
  c.backend = b;
  c.threads = 0;
  return c;
}
}  // namespace

int main(int argc, char** argv) {
  const int max_nside = argc > 1 ? std::atoi(argv[1]) : 1024;
  const std::string out = argc > 2 ? argv[2] : "";
  const auto& st = gpu_status();
  if (!st.available) {
    std::printf("SKIP: no usable GPU: %s\n", st.reason.c_str());
    return 77;
  }
  line("# SHT GPU check on " + st.summary());
  try {
    // 1. GPU vs CPU, synthesis and adjoint.
    for (int spin : {0, 2})
      for (int nside = 8; nside <= max_nside; nside *= 2) {
        auto cpu = make_plan(cfg(nside, -1, spin, 1, Backend::Cpu));
        auto gpu = make_plan(cfg(nside, -1, spin, 1, Backend::Cuda));
        const int nc = cpu.ncomp();
        auto a = random_alm(cpu.lmax(), nc, 1, 1000 + nside + spin);
        std::vector<double> mc(cpu.map_size() * nc), mg(mc.size());
        cpu.synthesis(a, mc);
        gpu.synthesis(a, mg);
        const double es = rel_err(mg, mc);
        auto m = random_map(mc.size(), 2000 + nside);
        std::vector<Complex> ac(a.size()), ag(a.size());
        cpu.adjoint(m, ac);
        gpu.adjoint(m, ag);
        const double ea = rel_err(ag, ac);
        gate(es < 1e-10 && ea < 1e-10,
             fmt("gpu-vs-cpu nside %4.0f spin %.0f: synthesis max rel err %.3e, adjoint %.3e", nside,
                 spin, es, ea));
        if (nside <= 64) {
          // Adjointness on the GPU.
          const double lhs = map_dot(mg, m);
          double rhs = 0;
          for (int k = 0; k < nc; ++k)
            rhs += alm_dot({a.data() + k * gpu.nalm(), gpu.nalm()}, {ag.data() + k * gpu.nalm(), gpu.nalm()},
                           gpu.lmax());
          gate(std::fabs(lhs - rhs) <= 1e-12 * std::fabs(lhs),
               fmt("gpu adjointness nside %.0f spin %.0f: rel %.3e", nside, spin,
                   std::fabs(lhs - rhs) / std::fabs(lhs)));
        }
      }
    // 2. Batched == single, determinism.
    for (int spin : {0, 2}) {
      const int nside = 32, B = 5;
      auto gb = make_plan(cfg(nside, -1, spin, B, Backend::Cuda));
      auto g1 = make_plan(cfg(nside, -1, spin, 1, Backend::Cuda));
      const int nc = gb.ncomp();
      auto a = random_alm(gb.lmax(), nc, B, 77 + spin);
      std::vector<double> mb(gb.map_size() * nc * B), m1(mb.size()), mb2(mb.size());
      gb.synthesis(a, mb);
      g1.synthesis(a, m1);  // chunks of one column
      gb.synthesis(a, mb2);
      auto m = random_map(mb.size(), 78);
      std::vector<Complex> ab(a.size()), a1(a.size());
      gb.adjoint(m, ab);
      g1.adjoint(m, a1);
      gate(rel_err(mb, m1) < 1e-12 && rel_err(ab, a1) < 1e-12,
           fmt("batched(B=5) vs single spin %.0f: synthesis %.3e, adjoint %.3e", spin, rel_err(mb, m1),
               rel_err(ab, a1)));
      gate(rel_err(mb2, mb) <= 1e-13, fmt("repeat-call determinism spin %.0f: %.3e", spin, rel_err(mb2, mb)));
    }
    // 3. Inverse recovery nside 16 lmax 32.
    for (int spin : {0, 2}) {
      auto g = make_plan(cfg(16, 32, spin, 2, Backend::Cuda));
      const int nc = g.ncomp();
      auto a = random_alm(32, nc, 2, 9 + spin);
      std::vector<double> m(g.map_size() * nc * 2);
      g.synthesis(a, m);
      std::vector<Complex> r(a.size());
      InverseOptions o;
      o.epsilon = 1e-13;
      o.max_iterations = 200;
      const auto rep = g.inverse(m, r, o);
      gate(rel_err(r, a) < 2e-9, fmt("gpu inverse spin %.0f: %.0f iterations, residual %.3e, err %.3e", spin,
                                     rep.iterations, rep.residual, rel_err(r, a)));
    }
    // 4. Cut sky vs CPU.
    for (int spin : {0, 2}) {
      const int nside = 64;
      ShtConfig cc = cfg(nside, -1, spin, 2, Backend::Cpu);
      std::mt19937_64 rng(5);
      for (std::int64_t p = 0; p < npix_of(nside); ++p)
        if ((p > 20000 && p < 30000) || rng() % 11 == 0) cc.observed_pixels.push_back(p);
      ShtConfig gc = cc;
      gc.backend = Backend::Cuda;
      auto cpu = make_plan(cc);
      auto gpu = make_plan(gc);
      const int nc = cpu.ncomp();
      auto a = random_alm(cpu.lmax(), nc, 2, 31);
      std::vector<double> mc(cpu.map_size() * nc * 2), mg(mc.size());
      cpu.synthesis(a, mc);
      gpu.synthesis(a, mg);
      auto m = random_map(mc.size(), 32);
      std::vector<Complex> ac(a.size()), ag(a.size());
      cpu.adjoint(m, ac);
      gpu.adjoint(m, ag);
      gate(rel_err(mg, mc) < 1e-10 && rel_err(ag, ac) < 1e-10,
           fmt("cut sky nside 64 spin %.0f (%.0f pixels): synthesis %.3e, adjoint %.3e", spin,
               double(cpu.map_size()), rel_err(mg, mc), rel_err(ag, ac)));
    }
    // 5. Plans of different nside coexist.
    {
      auto big = make_plan(cfg(256, -1, 2, 1, Backend::Cuda));
      auto a = random_alm(big.lmax(), 2, 1, 5);
      std::vector<double> m1(big.map_size() * 2), m2(m1.size());
      big.synthesis(a, m1);
      auto small = make_plan(cfg(8, -1, 2, 1, Backend::Cuda));
      auto as = random_alm(small.lmax(), 2, 1, 6);
      std::vector<double> ms(small.map_size() * 2);
      small.synthesis(as, ms);
      big.synthesis(a, m2);
      gate(rel_err(m2, m1) <= 1e-13, fmt("coexisting plans nside 256 / 8: %.3e", rel_err(m2, m1)));
    }
  } catch (const std::exception& e) {
    line(std::string("FAIL exception: ") + e.what());
    ++failures;
  }
  line(failures ? fmt("# %.0f gate(s) failed", failures) : "# all gates passed");
  if (!out.empty()) std::ofstream(out) << report.str();
  return failures ? 1 : 0;
}
