// SHT benchmark. GPU (default): device-resident median of warm calls through the CUDA module's
// plans (CUDA events), lmax = 3 nside - 1, nside 128 (B = 64 and B = 1), 512, 1024, 2048, spin 0
// and 2, synthesis and adjoint; the Legendre kernel alone; its FP64 operation count against the
// card's 26.9 TFLOP/s; host-inclusive synthesis; the CGLS inverse at nside 128, lmax 191, B = 4.
// CPU (--cpu [threads]): the healpix_cxx backend, min and median of runs.
// Usage: bench_sht [--cpu [threads]] [--max-nside N] [--only NSIDE (GPU, B = 1)]
//                  [--adjoint-only (GPU: adjoint cells alone, for tuning runs)]
//                  [--sweep (GPU: nside 64, 128, 256 at B = 1 .. 64, for the batched paths)]
//                  [--out file]
#include <algorithm>
#include <cstdarg>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "almagest/core/gpu.hpp"
#include "almagest/kernels/sht_cuda.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/sht/plan.hpp"

using namespace almagest;
using namespace almagest::sht;

namespace {
std::ostringstream rep;
void out(const char* f, ...) __attribute__((format(printf, 1, 2)));
void out(const char* f, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  std::printf("%s\n", buf);
  std::fflush(stdout);
  rep << buf << "\n";
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : (v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]));
}
std::vector<double> randv(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g;
  std::vector<double> v(n);
  for (auto& x : v) x = g(rng);
  return v;
}
constexpr double kFp64Rate = 26.9e12;  // measured FP64 vector FMA rate of the H200 (notes/h200.md)

int run_gpu(int max_nside, int only, bool adjoint_only, bool sweep) {
  const auto& st = gpu_status();
  if (!st.available) {
    std::printf("SKIP: no usable GPU: %s\n", st.reason.c_str());
    return 77;
  }
  auto* k = cuda_module().sht();
  if (!k) {
    std::printf("the CUDA module has no SHT kernels\n");
    return 1;
  }
  out("## GPU: %s, device-resident, median of 10 warm calls (ms), lmax = 3 nside - 1", st.summary().c_str());
  out("| nside | B | spin | op | total ms | per column ms | Legendre ms | Legendre GFLOP | FP64 fraction |");
  out("|---:|---:|---:|---|---:|---:|---:|---:|---:|");
  struct Case { int nside, batch; };
  std::vector<Case> cases = {{128, 64}, {128, 1}, {512, 1}, {1024, 1}, {2048, 1}};
  if (only > 0) cases = {{only, 1}};
  if (sweep) {
    cases.clear();
    for (int ns : {64, 128, 256})
      for (int b : {1, 2, 4, 8, 16, 64}) cases.push_back({ns, b});
  }
  for (auto c : cases) {
    if (c.nside > max_nside) continue;
    for (int spin : {0, 2}) {
      kernels::ShtDeviceDesc d;
      d.nside = c.nside;
      d.lmax = 3 * c.nside - 1;
      d.spin = spin;
      d.max_cols = c.batch;
      auto plan = with_cuda_errors([&] { return k->make_plan(d); });
      const int nc = spin ? 2 : 1;
      const std::size_t nalm = alm_size(d.lmax), npix = npix_of(c.nside);
      auto alm = randv(2 * nalm * nc * c.batch, 1);
      for (std::size_t cc = 0; cc < std::size_t(nc * c.batch); ++cc)
        for (int l = 0; l <= d.lmax; ++l) alm[2 * (cc * nalm + l) + 1] = 0.0;
      auto map = randv(npix * nc * c.batch, 2);
      plan->upload_alm(alm.data(), c.batch);
      plan->upload_map(map.data(), c.batch);
      const auto cnt = plan->counts();
      if (cnt.adjoint_skipped_share > 0)
        std::fprintf(stderr, "adjoint skip table nside %d: %.2f%% of the tile chunks skipped\n",
                     c.nside, 100.0 * cnt.adjoint_skipped_share);
      for (auto op : {kernels::ShtOp::Synthesis, kernels::ShtOp::Adjoint}) {
        if (adjoint_only && op == kernels::ShtOp::Synthesis) continue;
        plan->time(op, c.batch, 3);  // warm-up
        const double t = median(plan->time(op, c.batch, 10));
        const double tl = median(plan->time_legendre(op, c.batch, 10));
        const double fl = (op == kernels::ShtOp::Synthesis ? cnt.legendre_flops_synthesis : cnt.legendre_flops_adjoint) * c.batch;
        out("| %d | %d | %d | %s | %.3f | %.4f | %.3f | %.1f | %.2f |", c.nside, c.batch, spin,
            op == kernels::ShtOp::Synthesis ? "synthesis" : "adjoint", t, t / c.batch, tl, fl * 1e-9,
            fl / (tl * 1e-3) / kFp64Rate);
      }
      if (c.batch == 1 && c.nside >= 512 && !adjoint_only) {
        // Host-inclusive synthesis (host arrays in and out).
        std::vector<double> mo(npix * nc);
        plan->synthesis(alm.data(), mo.data(), 1);
        std::vector<double> ts;
        for (int i = 0; i < 5; ++i) {
          auto t0 = std::chrono::steady_clock::now();
          plan->synthesis(alm.data(), mo.data(), 1);
          ts.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        out("| %d | 1 | %d | synthesis, host arrays | %.3f | | | | |", c.nside, spin, median(ts));
      }
    }
  }
  // CGLS inverse through the engine (host-side iteration, device transforms).
  for (int spin : {0, 2}) {
    if (only > 0 || adjoint_only || sweep) break;
    ShtConfig c;
    c.nside = 128;
    c.lmax = 191;
    c.spin = spin;
    c.batch = 4;
    c.backend = Backend::Cuda;
    auto plan = make_plan(c);
    const int nc = plan.ncomp();
    std::vector<Complex> a(plan.nalm() * nc * 4);
    auto r = randv(2 * a.size(), 3);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = {r[2 * i], r[2 * i + 1]};
    std::vector<double> m(plan.map_size() * nc * 4);
    plan.synthesis(a, m);
    std::vector<Complex> x(a.size());
    InverseOptions o;
    o.epsilon = 1e-8;
    o.max_iterations = 500;
    auto t0 = std::chrono::steady_clock::now();
    const auto res = plan.inverse(m, x, o);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    out("inverse nside 128 lmax 191 B=4 spin %d: %.1f ms host-inclusive, %d iterations, residual %.2e", spin, ms,
        res.iterations, res.residual);
  }
  return 0;
}

int run_cpu(int threads, int max_nside) {
  out("## CPU backend (healpix_cxx / libsharp), %d threads, lmax = 3 nside - 1, ms (min / median of 3)", threads);
  out("| nside | spin | synthesis min | synthesis median | adjoint min | adjoint median |");
  out("|---:|---:|---:|---:|---:|---:|");
  for (int nside : {128, 512, 1024}) {
    if (nside > max_nside) continue;
    for (int spin : {0, 2}) {
      ShtConfig c;
      c.nside = nside;
      c.spin = spin;
      c.threads = threads;
      auto plan = make_plan(c);
      const int nc = plan.ncomp();
      std::vector<Complex> a(plan.nalm() * nc);
      auto r = randv(2 * a.size(), 4);
      for (std::size_t i = 0; i < a.size(); ++i) a[i] = {r[2 * i], r[2 * i + 1]};
      auto m = randv(plan.map_size() * nc, 5);
      std::vector<double> mo(m.size());
      std::vector<double> ts, ta;
      for (int i = 0; i < 3; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        plan.synthesis(a, mo);
        auto t1 = std::chrono::steady_clock::now();
        plan.adjoint(m, a);
        auto t2 = std::chrono::steady_clock::now();
        ts.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        ta.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
      }
      out("| %d | %d | %.0f | %.0f | %.0f | %.0f |", nside, spin, *std::min_element(ts.begin(), ts.end()),
          median(ts), *std::min_element(ta.begin(), ta.end()), median(ta));
    }
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  bool cpu = false;
  int threads = 2, max_nside = 2048, only = 0;
  bool adjoint_only = false, sweep = false;
  std::string file;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--cpu") {
      cpu = true;
      if (i + 1 < argc && argv[i + 1][0] != '-') threads = std::atoi(argv[++i]);
    } else if (a == "--max-nside" && i + 1 < argc) {
      max_nside = std::atoi(argv[++i]);
    } else if (a == "--only" && i + 1 < argc) {
      only = std::atoi(argv[++i]);
    } else if (a == "--adjoint-only") {
      adjoint_only = true;
    } else if (a == "--sweep") {
      sweep = true;
    } else if (a == "--out" && i + 1 < argc) {
      file = argv[++i];
    }
  }
  int rc = 0;
  try {
    rc = cpu ? run_cpu(threads, max_nside) : run_gpu(max_nside, only, adjoint_only, sweep);
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    rc = 1;
  }
  if (!file.empty()) std::ofstream(file) << rep.str();
  return rc;
}
