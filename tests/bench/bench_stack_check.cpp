// GPU check of the shift-and-stack backends (no Qt, runs on the device machine): every GPU path
// against the CPU twin on stacks with masks, a moving bad column, variable seeing and a common
// curve. FP32 gathers must match the CPU bit for bit (dense A, B, obs) and in the digest; FP16 and
// INT8 gathers match the CPU twin run on the same encoding; the tensor-core Fourier path matches
// within its stated tolerance, and its effective SNR (paired injection and null sets) is reported.
// Also: device psi/phi vs CPU, top-k mode, 201 and 1,500 exposures, threshold hits.
// Exit code: 0 all passed, 1 a check failed, 77 no usable GPU.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "almagest/core/gpu.hpp"
#include "almagest/stack/psiphi.hpp"
#include "almagest/stack/search.hpp"
#include "almagest/stack/selftest.hpp"
#include "almagest/stack/synthetic.hpp"

using namespace almagest;
using namespace almagest::stack;

static int failures = 0;
static void check(bool ok, const std::string& what) {
  std::printf("%s  %s\n", ok ? "PASS" : "FAIL", what.c_str());
  if (!ok) ++failures;
}

static SearchResult run(const PsiPhi& p, const SyntheticStack& syn, const TrajectoryBank& bank, Backend b,
                        Encoding enc, bool dense, ResultMode mode = ResultMode::Threshold,
                        std::uint64_t device_memory_limit = 0) {
  SearchConfig cfg;
  cfg.device_memory_limit = device_memory_limit;
  cfg.bank = bank;
  cfg.curve_dx = syn.curve_dx;
  cfg.curve_dy = syn.curve_dy;
  cfg.backend = b;
  cfg.encoding = enc;
  cfg.dense = dense;
  cfg.mode = mode;
  cfg.top_k = 4;
  cfg.threshold_z = 4.5;
  cfg.cluster.enabled = false;
  cfg.min_obs = 0;
  auto plan = make_plan(cfg, p.mjd, p.width, p.height, JobContext{});
  return plan.execute(encode(p, enc), JobContext{});
}

struct Retention {
  double snr_ref, snr, ratio, lo, hi;
};

// Effective SNR = mean Z over the injection set / sd of Z over the null set; ratio vs reference
// with a 95% bootstrap interval (paired resampling of both sets).
static Retention retention(const std::vector<double>& inj_ref, const std::vector<double>& inj,
                           const std::vector<double>& nul_ref, const std::vector<double>& nul) {
  auto eff = [](const std::vector<double>& a, const std::vector<double>& b, const std::vector<std::size_t>* ia,
                const std::vector<std::size_t>* ib) {
    double m = 0, s1 = 0, s2 = 0;
    const std::size_t na = ia ? ia->size() : a.size(), nb = ib ? ib->size() : b.size();
    for (std::size_t k = 0; k < na; ++k) m += a[ia ? (*ia)[k] : k];
    for (std::size_t k = 0; k < nb; ++k) {
      const double v = b[ib ? (*ib)[k] : k];
      s1 += v;
      s2 += v * v;
    }
    m /= double(na);
    const double mean = s1 / double(nb);
    return m / std::sqrt(s2 / double(nb) - mean * mean);
  };
  Retention r;
  r.snr_ref = eff(inj_ref, nul_ref, nullptr, nullptr);
  r.snr = eff(inj, nul, nullptr, nullptr);
  r.ratio = r.snr / r.snr_ref;
  std::vector<double> rs;
  unsigned long long st = 12345;
  auto rnd = [&](std::size_t n) {
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    return std::size_t((st >> 33) % n);
  };
  for (int b = 0; b < 200; ++b) {
    std::vector<std::size_t> ia(inj.size()), ib(nul.size());
    for (auto& i : ia) i = rnd(inj.size());
    for (auto& i : ib) i = rnd(nul.size());
    rs.push_back(eff(inj, nul, &ia, &ib) / eff(inj_ref, nul_ref, &ia, &ib));
  }
  std::sort(rs.begin(), rs.end());
  r.lo = rs[5];
  r.hi = rs[194];
  return r;
}

int main() {
  const GpuStatus& st = gpu_status();
  if (!st.available) {
    std::printf("SKIP  no usable GPU: %s\n", st.reason.c_str());
    return 77;
  }
  std::printf("device: %s\n", st.summary().c_str());
  // --- 1. medium stack, all backends, all encodings, dense comparison
  SyntheticConfig c;
  c.n_exp = 96;
  c.width = 72;
  c.height = 56;
  c.seed = 9001;
  c.holes = 3;
  c.movers = {Mover{20.0, 30.0, 3.0, -2.25, 9.0, 0}, Mover{50.0, 14.0, -3.75, 1.5, 8.0, 0}};  // on the 0.75 px/day grid
  const SyntheticStack syn = make_synthetic(c);
  const PsiPhi p = compute_psiphi(syn.stack, JobContext{});
  {
    const PsiPhi pg = compute_psiphi_gpu(syn.stack, 0, JobContext{});
    double md = 0;
    for (std::size_t i = 0; i < p.psi.size(); ++i) {
      md = std::max(md, std::fabs(double(pg.psi[i]) - p.psi[i]) / (std::fabs(p.psi[i]) + std::sqrt(std::max(1e-30f, p.phi[i]))));
      md = std::max(md, std::fabs(double(pg.phi[i]) - p.phi[i]) / (p.phi[i] + 1e-30));
    }
    check(md < 1e-5, "device psi/phi vs CPU, max relative difference " + std::to_string(md));
  }
  const TrajectoryBank bank = reference_bank(c, 17, 24.0);
  // ALMAGEST_CHECK_FOURIER_ONLY=1: the Fourier checks of sections 2 and 3 only (another product
  // or inverse of stack_fourier.cu checked without repeating the exact backends' checks)
  const bool fourier_only = std::getenv("ALMAGEST_CHECK_FOURIER_ONLY") != nullptr;
  for (Encoding enc : {Encoding::Fp32, Encoding::Fp16, Encoding::Int8}) {
    if (fourier_only) break;
    const SearchResult cpu = run(p, syn, bank, Backend::Cpu, enc, true);
    for (Backend b : {Backend::GpuGather, Backend::GpuTiled}) {
      const SearchResult g = run(p, syn, bank, b, enc, true);
      std::size_t diff = 0;
      for (std::size_t i = 0; i < cpu.dense_a.size(); ++i)
        diff += cpu.dense_a[i] != g.dense_a[i] || cpu.dense_b[i] != g.dense_b[i] || cpu.dense_obs[i] != g.dense_obs[i];
      const std::string tag = to_string(b) + " " + to_string(enc);
      check(diff == 0, tag + ": dense A, B, obs identical to the CPU twin (" + std::to_string(diff) + " differ of " + std::to_string(cpu.dense_a.size()) + ")");
      check(std::fabs(g.digest.sum_a - cpu.digest.sum_a) <= 1e-6 * std::fabs(cpu.digest.sum_b) &&
                std::fabs(g.digest.sum_b - cpu.digest.sum_b) <= 1e-6 * cpu.digest.sum_b && g.digest.max_z == cpu.digest.max_z &&
                g.digest.count_above == cpu.digest.count_above,
            tag + ": digest sumA " + std::to_string(g.digest.sum_a) + " vs " + std::to_string(cpu.digest.sum_a) + ", sumB " +
                std::to_string(g.digest.sum_b) + ", maxZ " + std::to_string(g.digest.max_z) + " vs " + std::to_string(cpu.digest.max_z) +
                ", count " + std::to_string(g.digest.count_above) + " vs " + std::to_string(cpu.digest.count_above));
      check(g.candidates.size() == cpu.candidates.size(), tag + ": candidate count " + std::to_string(g.candidates.size()) + " vs " + std::to_string(cpu.candidates.size()));
    }
    {
      // threshold scans without dense output use the 16-velocity x 2-origin tiled kernel
      const SearchResult cn = run(p, syn, bank, Backend::Cpu, enc, false);
      const SearchResult gn = run(p, syn, bank, Backend::GpuTiled, enc, false);
      bool same = cn.candidates.size() == gn.candidates.size() && gn.digest.max_z == cn.digest.max_z &&
                  gn.digest.count_above == cn.digest.count_above &&
                  std::fabs(gn.digest.sum_b - cn.digest.sum_b) <= 1e-9 * cn.digest.sum_b &&
                  std::fabs(gn.digest.sum_a - cn.digest.sum_a) <= 1e-9 * cn.digest.sum_b;
      for (std::size_t i = 0; same && i < cn.candidates.size(); ++i)
        same = cn.candidates[i].x == gn.candidates[i].x && cn.candidates[i].y == gn.candidates[i].y &&
               cn.candidates[i].v == gn.candidates[i].v && cn.candidates[i].a == gn.candidates[i].a && cn.candidates[i].obs == gn.candidates[i].obs;
      check(same, "gpu-tiled (16-velocity kernel) " + to_string(enc) + ": digest and " + std::to_string(gn.candidates.size()) + " candidates identical to the CPU twin");
    }
    const SearchResult ck = run(p, syn, bank, Backend::Cpu, enc, false, ResultMode::TopK);
    const SearchResult gk = run(p, syn, bank, Backend::GpuTiled, enc, false, ResultMode::TopK);
    bool same = ck.candidates.size() == gk.candidates.size();
    for (std::size_t i = 0; same && i < ck.candidates.size(); ++i)
      same = ck.candidates[i].x == gk.candidates[i].x && ck.candidates[i].y == gk.candidates[i].y && ck.candidates[i].v == gk.candidates[i].v && ck.candidates[i].z == gk.candidates[i].z;
    check(same, "top-k (k=4) gpu-tiled " + to_string(enc) + " identical to the CPU twin");
  }
  // --- 1b. a stack above the session's memory limit: streamed row bands (scan) and exposure
  //         chunks (exact sums of the candidates) give the resident results bit for bit. A tall
  //         stack, so that bands with their shift halo fit a quarter of the limit.
  if (!fourier_only) {
    SyntheticConfig ct;
    ct.n_exp = 24;
    ct.width = 64;
    ct.height = 480;
    ct.seed = 9002;
    ct.movers = {Mover{20.0, 100.0, 1.5, -1.0, 20.0, 0}, Mover{40.0, 300.0, -1.5, 1.0, 20.0, 0}};  // on the 0.5 px/day grid
    const SyntheticStack st = make_synthetic(ct);
    const PsiPhi pt = compute_psiphi(st.stack, JobContext{});
    const TrajectoryBank bt = reference_bank(ct, 9, 8.0);
    for (Encoding enc : {Encoding::Fp32, Encoding::Int8}) {
      const std::size_t bytes = std::size_t(ct.n_exp) * ct.width * ct.height * (enc == Encoding::Fp32 ? 8 : 2);
      const std::uint64_t limit = bytes - 1;  // not resident; bands of about a quarter of the rows
      for (bool dense : {true, false}) {
        bool same = false;
        std::string what;
        try {
          const SearchResult res = run(pt, st, bt, Backend::GpuTiled, enc, dense);
          const SearchResult str = run(pt, st, bt, Backend::GpuTiled, enc, dense, ResultMode::Threshold, limit);
          same = res.dense_a == str.dense_a && res.dense_b == str.dense_b && res.dense_obs == str.dense_obs &&
                 res.digest.sum_a == str.digest.sum_a && res.digest.sum_b == str.digest.sum_b &&
                 res.digest.max_z == str.digest.max_z && res.digest.count_above == str.digest.count_above &&
                 res.candidates.size() == str.candidates.size() && !str.candidates.empty();
          for (std::size_t i = 0; same && i < res.candidates.size(); ++i)
            same = res.candidates[i].x == str.candidates[i].x && res.candidates[i].y == str.candidates[i].y &&
                   res.candidates[i].v == str.candidates[i].v && res.candidates[i].a == str.candidates[i].a &&
                   res.candidates[i].b == str.candidates[i].b && res.candidates[i].obs == str.candidates[i].obs;
          what = std::to_string(str.candidates.size()) + " candidates";
        } catch (const std::exception& e) {
          what = std::string("exception: ") + e.what();
        }
        check(same, "streamed stack (limit " + std::to_string(limit) + " of " + std::to_string(bytes) + " bytes) " +
                        to_string(enc) + (dense ? " dense" : "") + ": digest and " + what + " identical to the resident run");
      }
      if (enc == Encoding::Fp32) {
        // fractional shifts, streamed row bands (rows fy .. fy + 1) and exposure chunks
        auto frun = [&](std::uint64_t lim) {
          SearchConfig cfg;
          cfg.device_memory_limit = lim;
          cfg.bank = bt;
          cfg.curve_dx = st.curve_dx;
          cfg.curve_dy = st.curve_dy;
          cfg.backend = Backend::GpuTiled;
          cfg.dense = true;
          cfg.threshold_z = 4.5;
          cfg.cluster.enabled = false;
          cfg.min_obs = 0;
          cfg.fractional = true;
          cfg.psf_rho = psf_correlations(st.stack);
          return make_plan(cfg, pt.mjd, pt.width, pt.height, JobContext{}).execute(encode(pt, enc), JobContext{});
        };
        bool same = false;
        std::string what;
        try {
          const SearchResult res = frun(0), str = frun(limit);
          same = res.dense_a == str.dense_a && res.dense_b == str.dense_b && res.dense_obs == str.dense_obs &&
                 res.digest.max_z == str.digest.max_z && res.candidates.size() == str.candidates.size() && !str.candidates.empty();
          for (std::size_t i = 0; same && i < res.candidates.size(); ++i)
            same = res.candidates[i].x == str.candidates[i].x && res.candidates[i].y == str.candidates[i].y &&
                   res.candidates[i].v == str.candidates[i].v && res.candidates[i].a == str.candidates[i].a &&
                   res.candidates[i].b == str.candidates[i].b && res.candidates[i].obs == str.candidates[i].obs;
          what = std::to_string(str.candidates.size()) + " candidates";
        } catch (const std::exception& e) {
          what = std::string("exception: ") + e.what();
        }
        check(same, "streamed stack, fractional shifts fp32 dense: digest and " + what + " identical to the resident run");
      }
      bool refused = false;
      std::string why = "no error";
      try {
        run(pt, st, bt, Backend::GpuFourier, enc, false, ResultMode::Threshold, limit);
      } catch (const std::exception& e) {
        why = e.what();
        refused = why.find("needs the whole stack") != std::string::npos;
      }
      check(refused, "Fourier method on a stack above the limit is refused with a clear error: " + why);
    }
  }
  // --- 2. Fourier path vs exact, tolerance and SNR retention
  {
    const SearchResult ex = run(p, syn, bank, Backend::Cpu, Encoding::Fp32, true);
    const SearchResult fo = run(p, syn, bank, Backend::GpuFourier, Encoding::Fp32, true);
    double maxdz = 0, maxdb = 0;
    std::vector<double> inj_r, inj_f, nul_r, nul_f;
    const std::size_t np = std::size_t(c.width) * c.height;
    for (std::size_t i = 0; i < ex.dense_a.size(); ++i) {
      if (ex.dense_obs[i] < c.n_exp / 2) continue;
      const double ze = ex.dense_a[i] / std::sqrt(double(ex.dense_b[i]));
      const double zf = fo.dense_b[i] > 0 ? fo.dense_a[i] / std::sqrt(double(fo.dense_b[i])) : 0.0;
      maxdz = std::max(maxdz, std::fabs(ze - zf));
      maxdb = std::max(maxdb, std::fabs(double(fo.dense_b[i]) - ex.dense_b[i]) / ex.dense_b[i]);
      const std::size_t v = i / np, pix = i % np;
      const int x = int(pix % c.width), y = int(pix / c.width);
      bool near = false, on = false;
      for (const Mover& m : syn.movers) {
        const bool vnear = std::fabs(bank.vx[v] - m.vx) < 1.0 && std::fabs(bank.vy[v] - m.vy) < 1.0;
        near = near || (std::abs(x - m.x0) < 12 && std::abs(y - m.y0) < 12);
        on = on || (x == int(m.x0) && y == int(m.y0) && vnear && std::fabs(bank.vx[v] - m.vx) < 0.2 && std::fabs(bank.vy[v] - m.vy) < 0.2);
      }
      if (on) {
        inj_r.push_back(ze);
        inj_f.push_back(zf);
      } else if (!near) {
        nul_r.push_back(ze);
        nul_f.push_back(zf);
      }
    }
    check(maxdz < 0.02, "gpu-fourier: max |Z - Z_exact| = " + std::to_string(maxdz) + " (tolerance 0.02), max relative B error " + std::to_string(maxdb));
    check(std::fabs(fo.digest.sum_b - ex.digest.sum_b) <= 1e-3 * ex.digest.sum_b &&
              std::fabs(fo.digest.max_z - ex.digest.max_z) <= 0.02 &&
              std::llabs((long long)fo.digest.count_above - (long long)ex.digest.count_above) <= 2 + (long long)(0.01 * ex.digest.count_above),
          "gpu-fourier digest: sumB " + std::to_string(fo.digest.sum_b) + " vs " + std::to_string(ex.digest.sum_b) + ", maxZ " +
              std::to_string(fo.digest.max_z) + " vs " + std::to_string(ex.digest.max_z) + ", count " + std::to_string(fo.digest.count_above) +
              " vs " + std::to_string(ex.digest.count_above));
    bool cand_exact = true;
    for (const auto& cd : fo.candidates) cand_exact = cand_exact && cd.z >= fo.threshold_z;
    check(cand_exact && !fo.candidates.empty(), "gpu-fourier candidates re-scored exactly (" + std::to_string(fo.candidates.size()) + ")");
    if (!inj_r.empty()) {
      const Retention rt = retention(inj_r, inj_f, nul_r, nul_f);
      std::printf("INFO  gpu-fourier SNR retention %.5f (95%% interval %.5f-%.5f), effective SNR %.3f vs %.3f, %zu injected, %zu null\n",
                  rt.ratio, rt.lo, rt.hi, rt.snr, rt.snr_ref, inj_r.size(), nul_r.size());
      check(rt.ratio >= 0.999, "gpu-fourier SNR retention >= 0.999");
    }
    for (Encoding enc : {Encoding::Fp16, Encoding::Int8}) {
      if (fourier_only) break;
      const SearchResult q = run(p, syn, bank, Backend::GpuTiled, enc, true);
      std::vector<double> ir, iq, nr, nq;
      for (std::size_t i = 0; i < ex.dense_a.size(); ++i) {
        if (ex.dense_obs[i] < c.n_exp / 2) continue;
        const double ze = ex.dense_a[i] / std::sqrt(double(ex.dense_b[i]));
        const double zq = q.dense_a[i] / std::sqrt(double(q.dense_b[i]));
        const std::size_t v = i / np, pix = i % np;
        const int x = int(pix % c.width), y = int(pix / c.width);
        bool near = false, on = false;
        for (const Mover& m : syn.movers) {
          near = near || (std::abs(x - m.x0) < 12 && std::abs(y - m.y0) < 12);
          on = on || (x == int(m.x0) && y == int(m.y0) && std::fabs(bank.vx[v] - m.vx) < 0.2 && std::fabs(bank.vy[v] - m.vy) < 0.2);
        }
        if (on) { ir.push_back(ze); iq.push_back(zq); } else if (!near) { nr.push_back(ze); nq.push_back(zq); }
      }
      if (!ir.empty()) {
        const Retention rt = retention(ir, iq, nr, nq);
        std::printf("INFO  gpu-tiled %s SNR retention %.5f (95%% interval %.5f-%.5f)\n", to_string(enc).c_str(), rt.ratio, rt.lo, rt.hi);
        check(rt.ratio >= 0.999, "gpu-tiled " + to_string(enc) + " SNR retention >= 0.999");
      }
    }
  }
  // --- 3. many exposures
  for (int n : {201, 1500}) {
    SyntheticConfig cc;
    cc.n_exp = n;
    cc.width = 40;
    cc.height = 36;
    cc.seed = 77 + n;
    cc.movers = {Mover{15.0, 18.0, 1.0, 0.5, 10.0, 0}};
    const SyntheticStack s2 = make_synthetic(cc);
    const PsiPhi p2 = compute_psiphi(s2.stack, JobContext{});
    const TrajectoryBank b2 = reference_bank(cc, 9, 8.0);
    const SearchResult cpu = run(p2, s2, b2, Backend::Cpu, Encoding::Fp32, false);
    for (Backend b : {Backend::GpuGather, Backend::GpuTiled, Backend::GpuFourier}) {
      if (fourier_only && b != Backend::GpuFourier) continue;
      const SearchResult g = run(p2, s2, b2, b, Encoding::Fp32, false);
      const bool exact = b != Backend::GpuFourier;
      const bool ok = exact ? (g.digest.max_z == cpu.digest.max_z && g.digest.count_above == cpu.digest.count_above &&
                               std::fabs(g.digest.sum_b - cpu.digest.sum_b) <= 1e-6 * cpu.digest.sum_b)
                            : (std::fabs(g.digest.max_z - cpu.digest.max_z) < 0.02 && std::fabs(g.digest.sum_b - cpu.digest.sum_b) <= 1e-3 * cpu.digest.sum_b);
      check(ok, std::to_string(n) + " exposures, " + to_string(b) + ": maxZ " + std::to_string(g.digest.max_z) + " vs " + std::to_string(cpu.digest.max_z) +
                    ", count " + std::to_string(g.digest.count_above) + " vs " + std::to_string(cpu.digest.count_above));
    }
  }
  // --- 4. sub-pixel (fractional) shifts against the CPU twin and their SNR gain (stack/selftest.hpp)
  if (!fourier_only) {
    const SelftestReport r = run_stack_gpu_selftest(StackSelftestOptions{}, JobContext{});
    for (const SelftestCheck& c : r.checks) check(c.passed, c.name + ": " + c.detail);
  }
  std::printf("%s: %d failure(s)\n", failures ? "FAILED" : "ALL PASSED", failures);
  return failures ? 1 : 0;
}
