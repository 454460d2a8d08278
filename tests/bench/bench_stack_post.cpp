// Post-search filter cost on the CPU (no GPU needed): a reference-like stack (1,024 exposures by
// default, smaller images), the CPU twin's hits, then filter_candidates with each stage switched
// off in turn, so that the differences show what each stage costs. Host wall time, median of 5.
// Usage: bench_stack_post [n_exp width height n_vel threads [repeats]]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "almagest/stack/filters.hpp"
#include "almagest/stack/psiphi.hpp"
#include "almagest/stack/search.hpp"
#include "almagest/stack/synthetic.hpp"

using namespace almagest;
using namespace almagest::stack;

int main(int argc, char** argv) {
  SyntheticConfig c = reference_workload();
  c.width = 128;
  c.height = 128;
  int nv = 17, threads = 0, repeats = 5;
  if (argc > 5) {
    c.n_exp = std::atoi(argv[1]);
    c.width = std::atoi(argv[2]);
    c.height = std::atoi(argv[3]);
    nv = std::atoi(argv[4]);
    threads = std::atoi(argv[5]);
    if (argc > 6) repeats = std::max(1, std::atoi(argv[6]));
  }
  for (auto& m : c.movers) {
    m.x0 = std::min(m.x0, c.width * 0.5);
    m.y0 = std::min(m.y0, c.height * 0.5);
  }
  auto t0 = std::chrono::steady_clock::now();
  const SyntheticStack syn = make_synthetic(c);
  const PsiPhi p = compute_psiphi(syn.stack, JobContext{});
  SearchConfig cfg;
  cfg.bank = reference_bank(c, nv, 32.0);
  cfg.curve_dx = syn.curve_dx;
  cfg.curve_dy = syn.curve_dy;
  cfg.false_alarms = 1.0;
  cfg.cluster.enabled = false;
  cfg.threads = threads;
  const auto plan = make_plan(cfg, p.mjd, p.width, p.height, JobContext{});
  const SearchResult base = plan.execute(encode(p, Encoding::Fp32), JobContext{});
  auto t1 = std::chrono::steady_clock::now();
  std::printf("stack %d x %d x %d, %d x %d velocities: %zu hits, scan %.3f s (setup %.1f s)\n", c.n_exp, c.width, c.height, nv, nv,
              base.candidates.size(), base.scan_seconds, std::chrono::duration<double>(t1 - t0).count());
  auto timed = [&](const char* name, const std::function<void(FilterConfig&)>& set) {
    FilterConfig fc;
    fc.min_obs = cfg.min_obs;
    set(fc);
    std::vector<double> ts;
    SearchResult f;
    for (int k = 0; k < repeats + 1; ++k) {
      f = base;
      const auto a = std::chrono::steady_clock::now();
      filter_candidates(f, plan, p, &syn.stack, fc, JobContext{});
      if (k > 0) ts.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
    }
    std::sort(ts.begin(), ts.end());
    std::printf("%-34s median %.4f s  (%s)\n", name, ts[ts.size() / 2], f.filters.summary().c_str());
  };
  timed("all stages (job defaults)", [](FilterConfig&) {});
  timed("no static-source share", [](FilterConfig& f) { f.stationary_ratio = 0; });
  timed("no stamps", [](FilterConfig& f) { f.stamp_filter = false; });
  timed("no static share, no stamps", [](FilterConfig& f) { f.stationary_ratio = 0; f.stamp_filter = false; });
  timed("curves only (no sigma-G/dedup/...)", [](FilterConfig& f) {
    f.sigma_g = false;
    f.dedup = false;
    f.stationary_ratio = 0;
    f.min_motion_px = 0;
    f.stamp_filter = false;
  });
  return 0;
}
