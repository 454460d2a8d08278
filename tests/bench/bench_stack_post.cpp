// Post-search filter cost on the CPU (no GPU needed): a reference-like stack (1,024 exposures by
// default, smaller images), the CPU twin's hits, then filter_candidates with each stage switched
// off in turn, so that the differences show what each stage costs. Host wall time and process
// CPU time, medians of 5.
// Usage:
//   bench_stack_post [n_exp width height n_vel threads [repeats]]
//   bench_stack_post --reference HITS [threads [repeats]]
//       the reference workload itself (1,024 x 256 x 256, 65 x 65 velocities: bench_stack's
//       post-processing, psi/phi from the CPU): the CPU scan's hits are written to the file HITS
//       once (minutes on a few cores) and read back from it later
//   bench_stack_post --digest [threads...]
//       exactness check of filter changes: a digest of every output field of filter_candidates
//       (candidates, groups, counts) on two synthetic stacks under 7 filter configurations with 1
//       and 2 threads (or the counts given); compare the lines of two builds (they must be
//       identical, and the same for every thread count)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "almagest/stack/filters.hpp"
#include "almagest/stack/psiphi.hpp"
#include "almagest/stack/search.hpp"
#include "almagest/stack/synthetic.hpp"

using namespace almagest;
using namespace almagest::stack;

namespace {

/// CPU time of the process (all threads; the wall time of a 1-thread run on a busy machine).
double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

double seconds_since(std::chrono::steady_clock::time_point a) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
}

/// FNV-1a over the bytes of every field, in a fixed order.
struct Hash {
  std::uint64_t h = 1469598103934665603ull;
  void bytes(const void* p, std::size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 1099511628211ull;
  }
  template <class T> void add(const T& v) { bytes(&v, sizeof v); }
  void add(const Candidate& c) {
    add(c.x), add(c.y), add(c.v), add(c.vx), add(c.vy), add(c.a), add(c.b), add(c.obs), add(c.z), add(c.flux), add(c.members);
  }
};

std::uint64_t digest(const SearchResult& r) {
  Hash h;
  const FilterReport& f = r.filters;
  for (std::size_t v : {f.input, f.observations, f.sigma_g, f.merged, f.stationary, f.stamps, f.output}) h.add(v);
  h.add(r.candidates.size());
  for (const Candidate& c : r.candidates) h.add(c);
  h.add(r.groups.size());
  for (const CandidateGroup& g : r.groups) {
    h.add(g.members.size());
    for (const Candidate& c : g.members) h.add(c);
    h.add(g.epochs_clipped), h.add(g.vx_spread), h.add(g.vy_spread), h.add(g.vx_fit), h.add(g.vy_fit), h.add(g.z_unclipped);
  }
  return h.h;
}

/// The filter configurations of the digest: defaults, no duplicates, no static share, both, no
/// sigma-G, tight stamp and sigma-G limits, stamp radius 3.
std::vector<std::pair<const char*, FilterConfig>> digest_configs() {
  // Each configuration is the defaults with these changes.
  const std::pair<const char*, void (*)(FilterConfig&)> changes[] = {
      {"defaults", [](FilterConfig&) {}},
      {"no-dedup", [](FilterConfig& f) { f.dedup = false; }},
      {"no-static-share", [](FilterConfig& f) { f.stationary_ratio = 0; }},
      {"no-dedup-no-static",
       [](FilterConfig& f) {
         f.dedup = false;
         f.stationary_ratio = 0;
       }},
      {"no-sigma-g", [](FilterConfig& f) { f.sigma_g = false; }},
      {"tight",
       [](FilterConfig& f) {
         f.stamp_median_ratio = 0.7;
         f.stamp_max_size_ratio = 1.3;
         f.stamp_max_ellipticity = 0.3;
         f.sigma_g_n = 2.0;
         f.sigma_g_min_kept = 40;
       }},
      {"stamp-radius-3", [](FilterConfig& f) { f.stamp_radius = 3; }},
  };
  std::vector<std::pair<const char*, FilterConfig>> out;
  for (const auto& [name, change] : changes) {
    FilterConfig f;
    change(f);
    out.push_back({name, f});
  }
  return out;
}

int run_digest(const std::vector<int>& thread_counts) {
  struct Scenario {
    const char* name;
    SyntheticConfig c;
    int nv;
    double vmax, threshold;
  };
  std::vector<Scenario> sc;
  {
    // The stack: 80 exposures of 128 x 128 over 2 days, three movers, a bright star, a
    // one-exposure spot; a low threshold for many hits.
    SyntheticConfig c;
    c.n_exp = 80;
    c.width = 128;
    c.height = 128;
    c.seed = 2401;
    c.baseline_days = 2.0;
    c.movers = {Mover{30.5, 40.2, 5.0, 2.0, 9.0, 0}, Mover{90.3, 30.7, -4.0, 3.0, 10.5, 0}, Mover{60.2, 100.4, 2.0, -5.0, 12.0, 0}};
    c.stars = {StaticSource{70.5, 64.5, 3000.0}};
    c.spots = {Spot{37, 40.0, 44.0, 2000.0}};
    sc.push_back({"issue80", c, 21, 6.0, 3.5});
  }
  {
    SyntheticConfig c = reference_workload();
    c.width = 128;
    c.height = 128;
    for (auto& m : c.movers) {
      m.x0 = std::min(m.x0, c.width * 0.5);
      m.y0 = std::min(m.y0, c.height * 0.5);
    }
    sc.push_back({"ref1024", c, 9, 8.0, 3.2});
  }
  std::uint64_t all = 1469598103934665603ull;
  for (const Scenario& s : sc) {
    const auto t0 = std::chrono::steady_clock::now();
    const SyntheticStack syn = make_synthetic(s.c);
    const PsiPhi p = compute_psiphi(syn.stack, JobContext{});
    SearchConfig cfg;
    cfg.bank = TrajectoryBank::cartesian(-s.vmax, s.vmax, s.nv, -s.vmax, s.vmax, s.nv);
    cfg.curve_dx = syn.curve_dx;
    cfg.curve_dy = syn.curve_dy;
    cfg.threshold_z = s.threshold;
    cfg.cluster.enabled = false;
    const auto plan = make_plan(cfg, p.mjd, p.width, p.height, JobContext{});
    const SearchResult base = plan.execute(encode(p, Encoding::Fp32), JobContext{});
    std::printf("%s: %d x %d x %d, %d x %d velocities, threshold %.2f: %zu hits (setup %.1f s)\n", s.name, s.c.n_exp, s.c.width,
                s.c.height, s.nv, s.nv, s.threshold, base.candidates.size(), seconds_since(t0));
    for (const auto& [name, fc0] : digest_configs())
      for (int threads : thread_counts) {
        SearchResult f = base;
        FilterConfig fc = fc0;
        SearchPlan tplan = [&] {
          SearchConfig tc = cfg;
          tc.threads = threads;
          return make_plan(tc, p.mjd, p.width, p.height, JobContext{});
        }();
        const auto ta = std::chrono::steady_clock::now();
        filter_candidates(f, tplan, p, &syn.stack, fc, JobContext{});
        const double dt = seconds_since(ta);
        const std::uint64_t d = digest(f);
        all = (all ^ d) * 1099511628211ull;
        std::printf("digest %-8s %-19s threads %d: %016llx  (in %zu: obs %zu, sigma-G %zu, merged %zu, stationary %zu, stamps %zu; out %zu)  %.3f s\n",
                    s.name, name, threads, (unsigned long long)d, f.filters.input, f.filters.observations, f.filters.sigma_g,
                    f.filters.merged, f.filters.stationary, f.filters.stamps, f.filters.output, dt);
        std::fflush(stdout);
      }
  }
  std::printf("digest of all runs: %016llx\n", (unsigned long long)all);
  return 0;
}

/// The reference workload's hits (bench_stack's post-processing input), cached in a file.
int run_reference(const char* hits_path, int threads, int repeats) {
  SyntheticConfig c = reference_workload();
  const auto t0 = std::chrono::steady_clock::now();
  const SyntheticStack syn = make_synthetic(c);
  const PsiPhi p = compute_psiphi(syn.stack, JobContext{});
  SearchConfig cfg;
  cfg.bank = reference_bank(c, 65, 32.0);
  cfg.curve_dx = syn.curve_dx;
  cfg.curve_dy = syn.curve_dy;
  cfg.false_alarms = 1.0;
  cfg.cluster.enabled = false;
  cfg.threads = threads;
  const auto plan = make_plan(cfg, p.mjd, p.width, p.height, JobContext{});
  SearchResult base;
  base.width = p.width;
  base.height = p.height;
  base.n_exp = p.n;
  base.n_vel = cfg.bank.size();
  base.threshold_z = plan.threshold();
  if (FILE* in = std::fopen(hits_path, "rb")) {
    std::uint64_t nh = 0;
    bool ok = std::fread(&nh, sizeof nh, 1, in) == 1;
    base.candidates.resize(ok ? nh : 0);
    ok = ok && std::fread(base.candidates.data(), sizeof(Candidate), nh, in) == nh;
    std::fclose(in);
    if (!ok) {
      std::fprintf(stderr, "%s: unreadable hits file\n", hits_path);
      return 1;
    }
  } else {
    std::printf("scanning the reference workload on the CPU (hits to %s)...\n", hits_path);
    std::fflush(stdout);
    base = plan.execute(encode(p, Encoding::Fp32), JobContext{});
    FILE* out = std::fopen(hits_path, "wb");
    const std::uint64_t nh = base.candidates.size();
    if (!out || std::fwrite(&nh, sizeof nh, 1, out) != 1 || std::fwrite(base.candidates.data(), sizeof(Candidate), nh, out) != nh) {
      std::fprintf(stderr, "%s: cannot write\n", hits_path);
      return 1;
    }
    std::fclose(out);
  }
  std::printf("reference workload: %zu hits, threshold %.4f (setup %.1f s), %d threads\n", base.candidates.size(), base.threshold_z,
              seconds_since(t0), threads);
  auto timed = [&](const char* name, const std::function<void(FilterConfig&)>& set) {
    FilterConfig fc;
    fc.min_obs = cfg.min_obs;
    fc.dedup_radius_px = cfg.cluster.radius_px;
    set(fc);
    std::vector<double> ts;
    SearchResult f;
    for (int k = 0; k < repeats + 1; ++k) {
      f = base;
      const auto a = std::chrono::steady_clock::now();
      filter_candidates(f, plan, p, &syn.stack, fc, JobContext{});
      if (k > 0) ts.push_back(seconds_since(a));
    }
    std::sort(ts.begin(), ts.end());
    std::printf("%-34s median %.4f s best %.4f s  digest %016llx  (%s)\n", name, ts[ts.size() / 2], ts.front(),
                (unsigned long long)digest(f), f.filters.summary().c_str());
    std::fflush(stdout);
  };
  timed("all stages (job defaults)", [](FilterConfig&) {});
  timed("no stamps", [](FilterConfig& f) { f.stamp_filter = false; });
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--digest") == 0) {
    std::vector<int> threads;
    for (int k = 2; k < argc; ++k) threads.push_back(std::max(1, std::atoi(argv[k])));
    if (threads.empty()) threads = {1, 2};
    return run_digest(threads);
  }
  if (argc > 2 && std::strcmp(argv[1], "--reference") == 0)
    return run_reference(argv[2], argc > 3 ? std::atoi(argv[3]) : 0, argc > 4 ? std::max(1, std::atoi(argv[4])) : 5);
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
    std::vector<double> ts, cpu;
    SearchResult f;
    for (int k = 0; k < repeats + 1; ++k) {
      f = base;
      const double c0 = process_cpu_seconds();
      const auto a = std::chrono::steady_clock::now();
      filter_candidates(f, plan, p, &syn.stack, fc, JobContext{});
      if (k > 0) {
        ts.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
        cpu.push_back(process_cpu_seconds() - c0);
      }
    }
    std::sort(ts.begin(), ts.end());
    std::sort(cpu.begin(), cpu.end());
    std::printf("%-34s median %.4f s, CPU %.4f s  (%s)\n", name, ts[ts.size() / 2], cpu[cpu.size() / 2], f.filters.summary().c_str());
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
