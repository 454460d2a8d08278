// Shift-and-stack benchmark on the note's reference workload: 1,024 exposures of 256 x 256,
// 65 x 65 velocities, every origin pixel (2.83e11 paired samples per scan). Times every GPU
// backend and encoding (median of repeats, device time of the scan, uploads excluded and shown
// separately), checks that the exact paths agree bit for bit and that the Fourier path's digest is
// within tolerance, and reports paired samples/s, bytes/s and FLOP/s against the H200 ceilings
// (4.18 TB/s copy, 768 TFLOP/s FP16 GEMM; ../shared/notes/h200.md). Then the post-processing
// of the job layer (filter_candidates with the job's default filters on the unclustered hits:
// curves, sigma-G, duplicates, static sources, stamps) against the scan time, and the
// fractional-shift scan (gather and tiled) of the same workload.
// Usage: bench_stack [n_exp width height n_vel repeats]   (no Qt; exit 77 without a GPU)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "almagest/core/gpu.hpp"
#include "almagest/stack/filters.hpp"
#include "almagest/stack/psiphi.hpp"
#include "almagest/stack/search.hpp"
#include "almagest/stack/synthetic.hpp"

using namespace almagest;
using namespace almagest::stack;

int main(int argc, char** argv) {
  SyntheticConfig c = reference_workload();
  int nv = 65, repeats = 5;
  if (argc > 5) {
    c.n_exp = std::atoi(argv[1]);
    c.width = std::atoi(argv[2]);
    c.height = std::atoi(argv[3]);
    nv = std::atoi(argv[4]);
    repeats = std::atoi(argv[5]);
  }
  const GpuStatus& st = gpu_status();
  if (!st.available) {
    std::printf("no usable GPU: %s\n", st.reason.c_str());
    return 77;
  }
  std::printf("device: %s\nworkload: %d exposures of %d x %d, %d x %d velocities\n", st.summary().c_str(), c.n_exp,
              c.width, c.height, nv, nv);
  auto t0 = std::chrono::steady_clock::now();
  const SyntheticStack syn = make_synthetic(c);
  auto t1 = std::chrono::steady_clock::now();
  const PsiPhi p = compute_psiphi_gpu(syn.stack, 0, JobContext{});
  auto t2 = std::chrono::steady_clock::now();
  std::printf("synthetic stack %.2f s, psi/phi on the GPU %.2f s (incl. transfers)\n",
              std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count());
  const TrajectoryBank bank = reference_bank(c, nv, 32.0);
  const double samples = double(c.n_exp) * c.width * c.height * bank.size();
  std::printf("paired samples per scan: %.3e\n", samples);
  struct Row {
    std::string name;
    double med, best, upload;
    Digest d;
    std::size_t cands;
    std::map<std::string, double> stages;
  };
  std::vector<Row> rows;
  auto bench = [&](Backend b, Encoding enc, const char* label = "") {
    SearchConfig cfg;
    cfg.bank = bank;
    cfg.curve_dx = syn.curve_dx;
    cfg.curve_dy = syn.curve_dy;
    cfg.backend = b;
    cfg.encoding = enc;
    cfg.false_alarms = 1.0;
    auto plan = make_plan(cfg, p.mjd, p.width, p.height, JobContext{});
    const EncodedPsiPhi in = encode(p, enc);
    std::vector<double> ts;
    Row r;
    r.name = to_string(b) + " " + to_string(enc) + label;
    for (int k = 0; k < repeats + 1; ++k) {
      const SearchResult res = plan.execute(in, JobContext{});
      if (k == 0) continue;  // warm-up (module load, cuFFT plans)
      ts.push_back(res.scan_seconds);
      r.d = res.digest;
      r.cands = res.candidates.size();
      r.upload = res.provenance.timings_s.count("upload") ? res.provenance.timings_s.at("upload") : 0;
      r.stages.clear();
      for (auto& [key, v] : res.provenance.timings_s)
        if (key.rfind("device_", 0) == 0) r.stages[key.substr(7)] = v;
    }
    std::sort(ts.begin(), ts.end());
    r.med = ts[ts.size() / 2];
    r.best = ts.front();
    std::printf("%-22s median %.4f s  best %.4f s  %.3e samples/s  upload %.3f s  maxZ %.4f  count %llu  sumA %.6e  sumB %.6e  candidates %zu\n",
                r.name.c_str(), r.med, r.best, samples / r.med, r.upload, r.d.max_z, (unsigned long long)r.d.count_above, r.d.sum_a,
                r.d.sum_b, r.cands);
    for (auto& [k, v] : r.stages) std::printf("    stage %-14s %.4f s\n", k.c_str(), v);
    std::fflush(stdout);
    rows.push_back(r);
  };
  // ALMAGEST_BENCH_POST_ONLY=1: the tiled fp32 scan and the post-processing sections only (host
  // filter timings, e.g. one filters build against another on the same host).
  const bool post_only = std::getenv("ALMAGEST_BENCH_POST_ONLY") != nullptr;
  // ALMAGEST_BENCH_FOURIER_VARIANTS=G,G,...: the tiled fp32 scan (the reference digest), then the
  // Fourier path once per G (the value of ALMAGEST_STACK_FOURIER_GEMM; "default" leaves it unset)
  // and nothing else: products or modules (ALMAGEST_CUDA_MODULE) compared in one device call.
  const char* fvariants = std::getenv("ALMAGEST_BENCH_FOURIER_VARIANTS");
  bench(Backend::GpuTiled, Encoding::Fp32);
  if (fvariants) {
    const std::string all(fvariants);
    for (std::size_t pos = 0; pos <= all.size();) {
      std::size_t end = all.find(',', pos);
      if (end == std::string::npos) end = all.size();
      const std::string g = all.substr(pos, end - pos);
      pos = end + 1;
      if (g.empty()) continue;
      if (g != "default") setenv("ALMAGEST_STACK_FOURIER_GEMM", g.c_str(), 1);
      bench(Backend::GpuFourier, Encoding::Fp32, (" [" + g + "]").c_str());
      unsetenv("ALMAGEST_STACK_FOURIER_GEMM");
    }
  }
  if (!post_only && !fvariants) {
    bench(Backend::GpuTiled, Encoding::Fp16);
    bench(Backend::GpuTiled, Encoding::Int8);
    bench(Backend::GpuFourier, Encoding::Fp32);
    bench(Backend::GpuGather, Encoding::Fp32);
    // The WMMA product that generates the phases per frequency (stack_fourier.cu: the fallback
    // when the phase tables do not fit) for comparison.
    for (const char* g : {"v1"}) {
      setenv("ALMAGEST_STACK_FOURIER_GEMM", g, 1);
      bench(Backend::GpuFourier, Encoding::Fp32, (std::string(" (") + g + " gemm)").c_str());
    }
    unsetenv("ALMAGEST_STACK_FOURIER_GEMM");
  }
  // Agreement
  const Row* tiled = &rows[0];
  for (const Row& r : rows) {
    if (r.name.find("fp32") == std::string::npos) continue;
    const bool exact = r.name.find("fourier") == std::string::npos;
    const double da = std::fabs(r.d.sum_a - tiled->d.sum_a) / tiled->d.sum_b, db = std::fabs(r.d.sum_b - tiled->d.sum_b) / tiled->d.sum_b;
    std::printf("agreement %-22s vs gpu-tiled fp32: |dsumA|/sumB %.2e, dsumB/sumB %.2e, dmaxZ %.2e, dcount %lld  -> %s\n", r.name.c_str(), da, db,
                r.d.max_z - tiled->d.max_z, (long long)r.d.count_above - (long long)tiled->d.count_above,
                exact ? (r.d.max_z == tiled->d.max_z && r.d.count_above == tiled->d.count_above && db < 1e-6 ? "exact" : "MISMATCH")
                      : (std::fabs(r.d.max_z - tiled->d.max_z) < 0.02 && db < 1e-3 ? "within tolerance" : "OUT OF TOLERANCE"));
  }
  // Roofline-style figures
  const double W = c.width, H = c.height, n = c.n_exp;
  for (const Row& r : rows) {
    const double bpp = r.name.find("fp32") != std::string::npos ? 8 : r.name.find("fp16") != std::string::npos ? 4 : 2;
    if (r.name.find("fourier") != std::string::npos) {
      // padded FFT size as in stack_fourier.cu: smallest 2,3,5,7-smooth N >= W + max|shift|
      int ax = 0, ay = 0;
      {
        SearchConfig cfg;
        cfg.bank = bank;
        cfg.curve_dx = syn.curve_dx;
        cfg.curve_dy = syn.curve_dy;
        const auto plan = make_plan(cfg, p.mjd, p.width, p.height, JobContext{});
        ax = std::max(std::abs(plan.shifts().min_sx), std::abs(plan.shifts().max_sx));
        ay = std::max(std::abs(plan.shifts().min_sy), std::abs(plan.shifts().max_sy));
      }
      auto good = [](int m) {
        for (;; ++m) {
          int q = m;
          for (int f : {2, 3, 5, 7})
            while (q % f == 0) q /= f;
          if (q == 1) return m;
        }
      };
      const double nx = good(int(W) + ax), ny = good(int(H) + ay);
      const double nf = ny * (std::floor(nx / 2) + 1);
      // issued products: the mma product pads each velocity axis to 72s, the WMMA one (v1) to 16s
      const bool wmma = r.name.find("v1") != std::string::npos;
      const double padded = wmma ? std::ceil(nv / 16.0) * 16 : std::ceil(nv / 72.0) * 72;
      const double flop = 2 /*psi,phi*/ * nf * padded * padded * n * 8 /*complex MAC*/;
      const double useful = 2 * nf * double(nv) * nv * n * 8;
      const double g = r.stages.at("phase_gemm");
      std::printf("%-22s padded %g x %g, %g frequencies; tensor FLOP %.3e (useful %.3e) in %.4f s -> %.1f TFLOP/s issued, %.1f%% of the 768 TFLOP/s FP16 GEMM ceiling\n",
                  r.name.c_str(), nx, ny, nf, flop, useful, g, flop / g / 1e12, 100 * flop / g / 768e12);
    } else {
      // Logical traffic: every paired sample's stored bytes (what an unstaged gather reads);
      // the DRAM floor is one pass over the stack.
      const double stack_bytes = n * W * H * bpp;
      std::printf("%-22s %.3e paired samples/s = %.2f TB/s of logical sample traffic (%.0f%% of the 4.18 TB/s copy ceiling); one DRAM pass over the %.0f MB stack takes %.4f s\n",
                  r.name.c_str(), samples / r.med, samples * bpp / r.med / 1e12, 100 * samples * bpp / r.med / 4.18e12, stack_bytes / 1e6,
                  stack_bytes / 4.18e12);
    }
  }
  // Post-processing: the job layer's filters on the hits of one scan (clustering off, as the job
  // runs it), median of 5 after one warm-up, host wall time (this machine's cores).
  if (fvariants) return 0;
  for (Backend b : {Backend::GpuTiled, Backend::GpuFourier}) {
    if (post_only && b != Backend::GpuTiled) continue;
    SearchConfig cfg;
    cfg.bank = bank;
    cfg.curve_dx = syn.curve_dx;
    cfg.curve_dy = syn.curve_dy;
    cfg.backend = b;
    cfg.false_alarms = 1.0;
    cfg.cluster.enabled = false;
    const auto plan = make_plan(cfg, p.mjd, p.width, p.height, JobContext{});
    const EncodedPsiPhi in = encode(p, Encoding::Fp32);
    SearchResult res = plan.execute(in, JobContext{});
    res = plan.execute(in, JobContext{});
    const double scan = (b == Backend::GpuTiled ? rows[0] : rows[3]).med;
    const auto texec0 = std::chrono::steady_clock::now();
    const SearchResult base = plan.execute(in, JobContext{});
    const double exec_wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - texec0).count();
    FilterConfig fc;
    fc.min_obs = cfg.min_obs;
    fc.dedup_radius_px = cfg.cluster.radius_px;
    std::vector<double> ts;
    SearchResult f;
    for (int k = 0; k < 6; ++k) {
      f = base;
      const auto ta = std::chrono::steady_clock::now();
      filter_candidates(f, plan, p, &syn.stack, fc, JobContext{});
      if (k > 0) ts.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - ta).count());
    }
    std::sort(ts.begin(), ts.end());
    const double med = ts[ts.size() / 2];
    std::printf("post-processing %-12s %zu hits -> %zu candidates (%s): median %.4f s (best %.4f), %.1f%% of the %.4f s scan; "
                "execute() wall %.4f s (scan, exact re-scoring of the hits, transfers)\n",
                to_string(b).c_str(), base.candidates.size(), f.candidates.size(), f.filters.summary().c_str(), med, ts.front(),
                100 * med / scan, scan, exec_wall);
  }
  // Fractional (sub-pixel) shifts on the same workload: gather kernel for both methods.
  if (!post_only) {
    SearchConfig cfg;
    cfg.bank = bank;
    cfg.curve_dx = syn.curve_dx;
    cfg.curve_dy = syn.curve_dy;
    cfg.backend = Backend::GpuTiled;
    cfg.false_alarms = 1.0;
    cfg.fractional = true;
    cfg.psf_rho = psf_correlations(syn.stack);
    const auto plan = make_plan(cfg, p.mjd, p.width, p.height, JobContext{});
    const EncodedPsiPhi in = encode(p, Encoding::Fp32);
    std::vector<double> ts;
    Digest d;
    for (int k = 0; k < 2; ++k) {
      const SearchResult res = plan.execute(in, JobContext{});
      ts.push_back(res.scan_seconds);
      d = res.digest;
    }
    std::sort(ts.begin(), ts.end());
    std::printf("fractional gpu-tiled fp32 best of 2 %.4f s  %.3e samples/s  maxZ %.4f  count %llu (integer: maxZ %.4f count %llu)\n", ts.front(),
                samples / ts.front(), d.max_z, (unsigned long long)d.count_above, rows[0].d.max_z,
                (unsigned long long)rows[0].d.count_above);
  }
  // Post-processing stages on the tiled scan's hits: what the static-source share and the
  // stamps cost (each switched off in turn).
  {
    SearchConfig cfg;
    cfg.bank = bank;
    cfg.curve_dx = syn.curve_dx;
    cfg.curve_dy = syn.curve_dy;
    cfg.backend = Backend::GpuTiled;
    cfg.false_alarms = 1.0;
    cfg.cluster.enabled = false;
    const auto plan = make_plan(cfg, p.mjd, p.width, p.height, JobContext{});
    const SearchResult base = plan.execute(encode(p, Encoding::Fp32), JobContext{});
    for (int variant = 0; variant < 3; ++variant) {
      FilterConfig fc;
      fc.min_obs = cfg.min_obs;
      if (variant == 1) fc.stationary_ratio = 0;
      if (variant == 2) fc.stamp_filter = false;
      std::vector<double> ts;
      for (int k = 0; k < 6; ++k) {
        SearchResult f = base;
        const auto ta = std::chrono::steady_clock::now();
        filter_candidates(f, plan, p, &syn.stack, fc, JobContext{});
        if (k > 0) ts.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - ta).count());
      }
      std::sort(ts.begin(), ts.end());
      std::printf("post-processing stages: %-28s median %.4f s\n", variant == 0 ? "all (job defaults)" : variant == 1 ? "without the static-source share" : "without stamps",
                  ts[ts.size() / 2]);
    }
  }
  if (post_only) return 0;
  std::printf("targets: exact tiled <= 0.45 s per scan (%s: %.4f s); tensor-core <= 0.03 s (issue 24; %s: %.4f s)\n",
              rows[0].med <= 0.45 ? "met" : "missed", rows[0].med, rows[3].med <= 0.03 ? "met" : "missed", rows[3].med);
  return 0;
}
