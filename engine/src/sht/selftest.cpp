// SHT GPU self-test (see selftest.hpp).
#include "almagest/sht/selftest.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "almagest/core/error.hpp"
#include "almagest/core/gpu.hpp"
#include "almagest/core/schema.hpp"
#include "almagest/kernels/sht_cuda.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/sht/plan.hpp"

namespace almagest::sht {
namespace {

using Clock = std::chrono::steady_clock;

std::string fmt(const char* f, double a, double b = 0, double c = 0, double d = 0) {
  char buf[512];
  std::snprintf(buf, sizeof buf, f, a, b, c, d);
  return buf;
}

/// Gaussian alm with the layout's constraints (Im a_l0 = 0; spin 2: l < 2 zero), ncols x ncomp sets.
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

class Checks {
public:
  Checks(SelftestReport& r, const JobContext& ctx) : r_(r), ctx_(ctx) {}
  /// Runs one check; body returns (passed, detail). Backend exceptions fail the check.
  template <class F>
  void run(const std::string& name, F&& body) {
    ctx_.check_cancel();
    SelftestCheck c;
    c.name = name;
    try {
      auto [ok, detail] = body();
      c.passed = ok;
      c.detail = std::move(detail);
    } catch (const Cancelled&) {
      throw;
    } catch (const std::exception& e) {
      c.passed = false;
      c.detail = std::string("exception: ") + e.what();
    }
    r_.checks.push_back(std::move(c));
  }

private:
  SelftestReport& r_;
  const JobContext& ctx_;
};

}  // namespace

SelftestReport run_sht_gpu_selftest(const ShtSelftestOptions& o, const JobContext& ctx) {
  const auto t0 = Clock::now();
  SelftestReport report = SelftestReport::for_current_gpu();
  if (!report.gpu_available) return report;
  Checks checks(report, ctx);
  using Result = std::pair<bool, std::string>;

  // 1. GPU vs CPU, synthesis and adjoint; adjointness on the GPU for the small ones.
  for (int spin : {0, 2})
    for (int nside = 8; nside <= o.max_nside; nside *= 2) {
      checks.run(fmt("sht gpu-vs-cpu nside %.0f spin %.0f", nside, spin), [&]() -> Result {
        auto cpu = make_plan(cfg(nside, -1, spin, 1, Backend::Cpu));
        auto gpu = make_plan(cfg(nside, -1, spin, 1, Backend::Cuda));
        const int nc = cpu.ncomp();
        auto a = random_alm(cpu.lmax(), nc, 1, o.seed + nside + spin);
        std::vector<double> mc(cpu.map_size() * nc), mg(mc.size());
        cpu.synthesis(a, mc);
        gpu.synthesis(a, mg);
        const double es = rel_err(mg, mc);
        auto m = random_map(mc.size(), o.seed + 1000 + nside);
        std::vector<Complex> ac(a.size()), ag(a.size());
        cpu.adjoint(m, ac);
        gpu.adjoint(m, ag);
        const double ea = rel_err(ag, ac);
        bool ok = es < o.tolerance && ea < o.tolerance;
        std::string detail = fmt("synthesis max rel err %.3e, adjoint %.3e", es, ea);
        if (nside <= 64) {
          const double lhs = map_dot(mg, m);
          double rhs = 0;
          for (int k = 0; k < nc; ++k)
            rhs += alm_dot({a.data() + k * gpu.nalm(), gpu.nalm()},
                           {ag.data() + k * gpu.nalm(), gpu.nalm()}, gpu.lmax());
          const double adj = std::fabs(lhs - rhs) / std::fabs(lhs);
          ok = ok && adj <= 1e-12;
          detail += fmt("; adjointness <Ya,m> vs <a,Y^T m> rel %.3e", adj);
        }
        return {ok, detail};
      });
    }
  // 2. Batched == single, repeated calls identical. Eight columns: the batched adjoint takes the
  // table path (from 8 columns by default), the synthesis the batched recursion kernels.
  for (int spin : {0, 2}) {
    checks.run(fmt("sht batched(B=8) vs single, repeat call, spin %.0f", spin), [&]() -> Result {
      const int nside = 32, B = 8;
      auto gb = make_plan(cfg(nside, -1, spin, B, Backend::Cuda));
      auto g1 = make_plan(cfg(nside, -1, spin, 1, Backend::Cuda));
      const int nc = gb.ncomp();
      auto a = random_alm(gb.lmax(), nc, B, o.seed + 77 + spin);
      std::vector<double> mb(gb.map_size() * nc * B), m1(mb.size()), mb2(mb.size());
      gb.synthesis(a, mb);
      g1.synthesis(a, m1);  // chunks of one column
      gb.synthesis(a, mb2);
      auto m = random_map(mb.size(), o.seed + 78);
      std::vector<Complex> ab(a.size()), a1(a.size());
      gb.adjoint(m, ab);
      g1.adjoint(m, a1);
      const double s = rel_err(mb, m1), ad = rel_err(ab, a1), rep = rel_err(mb2, mb);
      return {s < 1e-12 && ad < 1e-12 && rep <= 1e-13,
              fmt("synthesis %.3e, adjoint %.3e, repeated synthesis %.3e", s, ad, rep)};
    });
  }
  // 3. Inverse recovery, nside 16, lmax 32.
  for (int spin : {0, 2}) {
    checks.run(fmt("sht inverse nside 16 lmax 32 spin %.0f", spin), [&]() -> Result {
      auto g = make_plan(cfg(16, 32, spin, 2, Backend::Cuda));
      const int nc = g.ncomp();
      auto a = random_alm(32, nc, 2, o.seed + 9 + spin);
      std::vector<double> m(g.map_size() * nc * 2);
      g.synthesis(a, m);
      std::vector<Complex> r(a.size());
      InverseOptions io;
      io.epsilon = 1e-13;
      io.max_iterations = 200;
      const auto rep = g.inverse(m, r, io);
      const double e = rel_err(r, a);
      return {e < 2e-9, fmt("%.0f iterations, residual %.3e, alm error %.3e", rep.iterations, rep.residual, e)};
    });
  }
  // 4. Cut sky vs CPU: a band plus random pixels (every ring observed), and the north polar cap
  // alone (its rings' mlim is below lmax, so no ring pair reaches the highest modes and the
  // adjoint must write their zeros itself; the plan's alm buffer holds the synthesis input).
  for (int cap : {0, 1})
  for (int spin : {0, 2}) {
    checks.run(std::string("sht cut sky") + (cap ? " (north cap)" : "") +
                   fmt(" nside 64 spin %.0f", spin),
               [&]() -> Result {
      const int nside = 64;
      ShtConfig cc = cfg(nside, -1, spin, 2, Backend::Cpu);
      std::mt19937_64 rng(o.seed + 5);
      for (std::int64_t p = 0; p < npix_of(nside); ++p)
        if (cap ? p < 2000 : (p > 20000 && p < 30000) || rng() % 11 == 0)
          cc.observed_pixels.push_back(p);
      ShtConfig gc = cc;
      gc.backend = Backend::Cuda;
      auto cpu = make_plan(cc);
      auto gpu = make_plan(gc);
      const int nc = cpu.ncomp();
      auto a = random_alm(cpu.lmax(), nc, 2, o.seed + 31);
      std::vector<double> mc(cpu.map_size() * nc * 2), mg(mc.size());
      cpu.synthesis(a, mc);
      gpu.synthesis(a, mg);
      auto m = random_map(mc.size(), o.seed + 32);
      std::vector<Complex> ac(a.size()), ag(a.size());
      cpu.adjoint(m, ac);
      gpu.adjoint(m, ag);
      const double s = rel_err(mg, mc), ad = rel_err(ag, ac);
      return {s < o.tolerance && ad < o.tolerance,
              fmt("%.0f pixels: synthesis %.3e, adjoint %.3e", double(cpu.map_size()), s, ad)};
    });
  }
  // 5. Plans of different nside coexist.
  checks.run("sht coexisting plans nside 256 / 8", [&]() -> Result {
    auto big = make_plan(cfg(256, -1, 2, 1, Backend::Cuda));
    auto a = random_alm(big.lmax(), 2, 1, o.seed + 5);
    std::vector<double> m1(big.map_size() * 2), m2(m1.size());
    big.synthesis(a, m1);
    auto small = make_plan(cfg(8, -1, 2, 1, Backend::Cuda));
    auto as = random_alm(small.lmax(), 2, 1, o.seed + 6);
    std::vector<double> ms(small.map_size() * 2);
    small.synthesis(as, ms);
    big.synthesis(a, m2);
    const double e = rel_err(m2, m1);
    return {e <= 1e-13, fmt("nside 256 before and after an nside-8 plan: %.3e", e)};
  });
  // 6. The adjoint's polar-cap rows through the shared-memory DFT against the Bluestein chain:
  // two device plans of the CUDA module, one forced each way (the default takes the DFT from
  // nside 1024 only); nside 64 (the short-ring launch alone) and 520 (both launches), two
  // columns.
  for (int nside : {64, 520})
    for (int spin : {0, 2}) {
      checks.run(fmt("sht adjoint polar DFT vs Bluestein chain nside %.0f spin %.0f", nside, spin),
                 [&]() -> Result {
        kernels::ShtKernels* k = cuda_module().sht();
        if (!k) return {false, "the CUDA module has no SHT kernels"};
        kernels::ShtDeviceDesc d;
        d.nside = nside;
        d.lmax = 3 * nside - 1;
        d.spin = spin;
        d.max_cols = 2;
        d.polar_dft = 1;
        auto dft = k->make_plan(d);
        d.polar_dft = 0;
        auto chain = k->make_plan(d);
        const int nc = spin == 0 ? 1 : 2;
        const auto m = random_map(static_cast<std::size_t>(npix_of(nside)) * nc * 2,
                                  o.seed + 600 + nside + spin);
        std::vector<Complex> ad(alm_size(d.lmax) * nc * 2), ac(ad.size());
        dft->adjoint(m.data(), reinterpret_cast<double*>(ad.data()), 2);
        chain->adjoint(m.data(), reinterpret_cast<double*>(ac.data()), 2);
        const double e = rel_err(ad, ac);
        return {e < 1e-12, fmt("two columns: max |diff| / max |alm| %.3e", e)};
      });
    }
  // 7. The spin-0 adjoint's skip table against every chunk run: two single-column device plans,
  // one forced each way, on a north cap (the pixels of rings 1-300 of nside 520, where the table
  // skips 19% of the chunks: the tiles hold only polar chains, dead for many chunks at high m).
  checks.run("sht adjoint skip table vs every chunk nside 520 north cap", [&]() -> Result {
    kernels::ShtKernels* k = cuda_module().sht();
    if (!k) return {false, "the CUDA module has no SHT kernels"};
    kernels::ShtDeviceDesc d;
    d.nside = 520;
    d.lmax = 3 * d.nside - 1;
    d.spin = 0;
    d.max_cols = 1;
    const std::int64_t ncap = 2LL * 300 * 301;  // rings 1..300 have 4 i pixels each
    for (std::int64_t p = 0; p < ncap; ++p) d.observed_pixels.push_back(p);
    d.adjoint_skip = 1;
    auto skip = k->make_plan(d);
    d.adjoint_skip = 0;
    auto all = k->make_plan(d);
    const double share = skip->counts().adjoint_skipped_share;
    const auto m = random_map(static_cast<std::size_t>(ncap), o.seed + 700);
    std::vector<Complex> as(alm_size(d.lmax)), aa(as.size());
    skip->adjoint(m.data(), reinterpret_cast<double*>(as.data()), 1);
    all->adjoint(m.data(), reinterpret_cast<double*>(aa.data()), 1);
    const double e = rel_err(as, aa);
    return {share > 0.05 && e < 1e-12,
            fmt("%.1f%% of the tile chunks skipped; max |diff| / max |alm| %.3e", 100.0 * share,
                e)};
  });
  report.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return report;
}

void register_selftest(SelftestRegistry& registry) {
  EngineSelftest t;
  t.engine = "sht";
  t.summary = "the spherical harmonic transforms (synthesis, adjoint, adjointness, batches, "
              "inverse, cut sky) against healpix_cxx";
  schema::Field f;
  f.key = "sht-nside";
  f.kind = schema::Kind::Choice;
  f.value_name = "NSIDE";
  f.group = "SHT";
  f.help = "Largest nside of the SHT GPU-vs-CPU comparison (8..2048, power of two; 0 skips the "
           "SHT checks)";
  f.choices = {"0", "8", "16", "32", "64", "128", "256", "512", "1024", "2048"};
  f.default_value = std::string("128");
  t.options.fields.push_back(f);
  t.run = [options = t.options](const schema::Values& values, const JobContext& ctx) {
    schema::Reader r(options, values, "--");
    const std::optional<std::string> given = r.choice("sht-nside");
    r.throw_if_problems();
    ShtSelftestOptions o;
    o.max_nside = std::stoi(given ? *given : r.text_or_default("sht-nside"));
    if (o.max_nside == 0) {
      SelftestReport skipped = SelftestReport::for_current_gpu();
      return skipped;  // no checks: the N-point ones alone decide
    }
    return run_sht_gpu_selftest(o, ctx);
  };
  registry.add(std::move(t));
}

}  // namespace almagest::sht
