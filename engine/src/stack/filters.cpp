// filter_candidates(): observation cuts, sigma-G clipping, source-level duplicate merging,
// stationary sources and the stamp filter (stack/filters.hpp; docs/stack.md, "Candidates").
#include "almagest/stack/filters.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "almagest/core/error.hpp"
#include "stack/filter_stamps.hpp"
#include "stack/task_pool.hpp"

namespace almagest::stack {

namespace {

/// Standard normal quantile by bisection (percentiles of the sigma-G width only).
double normal_quantile(double p) {
  double lo = -40, hi = 40;
  for (int it = 0; it < 200; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p) lo = mid; else hi = mid;
  }
  return 0.5 * (lo + hi);
}

/// Linear-interpolation percentile (numpy's default) of v without sorting it: the order statistics
/// i and i + 1 it interpolates by selection (nth_element, then the smallest of the part above i), the same
/// values as in the sorted vector. Reorders v.
double select_percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const double pos = p / 100.0 * double(v.size() - 1);
  const std::size_t i = std::size_t(std::floor(pos));
  if (i + 1 >= v.size()) return *std::max_element(v.begin(), v.end());
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(i), v.end());
  const double lo = v[i], hi = *std::min_element(v.begin() + std::ptrdiff_t(i) + 1, v.end());
  const double f = pos - double(i);
  return lo + f * (hi - lo);
}

bool stronger(const Candidate& a, const Candidate& b) {
  if (a.z != b.z) return a.z > b.z;
  if (a.y != b.y) return a.y < b.y;
  if (a.x != b.x) return a.x < b.x;
  return a.v < b.v;
}

using Work = detail::FilterWork;
using detail::kAhead;
using detail::prefetch;

}  // namespace

std::vector<std::string> FilterConfig::validate() const {
  std::vector<std::string> out;
  auto bad = [&](const std::string& f, const std::string& m) { out.push_back(f + ": " + m); };
  if (min_obs < 0) bad("min_obs", "must be >= 0");
  if (!(max_masked_fraction >= 0 && max_masked_fraction <= 1)) bad("max_masked_fraction", "must be in [0, 1]");
  if (!(sigma_g_low >= 0 && sigma_g_low < sigma_g_high && sigma_g_high <= 100))
    bad("sigma_g_percentiles", "need 0 <= low < high <= 100");
  if (!(sigma_g_n > 0)) bad("sigma_g_n", "must be > 0");
  if (sigma_g_min_kept < 0) bad("sigma_g_min_kept", "must be >= 0");
  if (!(dedup_radius_px >= 0)) bad("dedup_radius_px", "must be >= 0");
  if (!(dedup_overlap > 0 && dedup_overlap <= 1)) bad("dedup_overlap", "must be in (0, 1]");
  if (!(dedup_share >= 0 && dedup_share <= 1)) bad("dedup_share", "must be in [0, 1]");
  if (!(min_motion_px >= 0)) bad("min_motion_px", "must be >= 0");
  if (!(stationary_ratio >= 0)) bad("stationary_ratio", "must be >= 0");
  if (stamp_radius < 1 || stamp_radius > 100) bad("stamp_radius", "must be in 1..100");
  if (!(stamp_median_ratio >= 0 && stamp_median_ratio <= 1)) bad("stamp_median_ratio", "must be in [0, 1]");
  if (!(stamp_max_size_ratio >= 1)) bad("stamp_max_size_ratio", "must be >= 1");
  if (!(stamp_max_ellipticity > 0 && stamp_max_ellipticity <= 1)) bad("stamp_max_ellipticity", "must be in (0, 1]");
  return out;
}

std::string FilterConfig::to_json() const {
  nlohmann::json j = {{"min_obs", min_obs}, {"max_masked_fraction", max_masked_fraction},
                      {"sigma_g", sigma_g}, {"sigma_g_percentiles", {sigma_g_low, sigma_g_high}},
                      {"sigma_g_n", sigma_g_n}, {"sigma_g_min_kept", sigma_g_min_kept},
                      {"dedup", dedup}, {"dedup_radius_px", dedup_radius_px}, {"dedup_overlap", dedup_overlap},
                      {"dedup_share", dedup_share}, {"min_motion_px", min_motion_px}, {"stationary_ratio", stationary_ratio},
                      {"stamp_filter", stamp_filter}, {"stamp_radius", stamp_radius},
                      {"stamp_median_ratio", stamp_median_ratio}, {"stamp_max_size_ratio", stamp_max_size_ratio},
                      {"stamp_max_ellipticity", stamp_max_ellipticity}};
  return j.dump();
}

std::string FilterReport::to_json() const {
  nlohmann::json j = {{"input", input}, {"removed_observations", observations}, {"removed_sigma_g", sigma_g},
                      {"merged_duplicates", merged}, {"removed_stationary", stationary}, {"removed_stamps", stamps},
                      {"output", output}, {"seconds", seconds}};
  if (!config_json.empty()) j["config"] = nlohmann::json::parse(config_json, nullptr, false);
  return j.dump();
}

std::string FilterReport::summary() const {
  return fmt::format("filters: {} candidates in; removed {} by observations, {} by sigma-G, {} stationary, {} by stamps; "
                     "{} duplicates merged; {} out ({:.3f} s)",
                     input, observations, sigma_g, stationary, stamps, merged, output, seconds);
}

namespace {

/// 1 / (Phi^-1(high) - Phi^-1(low)): sigma_G of a unit normal's percentile width.
double sigma_g_coeff(const FilterConfig& cfg) {
  return 1.0 / (normal_quantile(cfg.sigma_g_high / 100.0) - normal_quantile(cfg.sigma_g_low / 100.0));
}

std::vector<std::uint8_t> sigma_g_keep_with(const float* a, const float* b, int n, const FilterConfig& cfg, double coeff) {
  std::vector<std::uint8_t> keep(std::size_t(std::max(n, 0)), 0);
  std::vector<double> flux;
  flux.reserve(std::size_t(std::max(n, 0)));
  for (int e = 0; e < n; ++e)
    if (b[e] > 0.0f) {
      keep[e] = 1;
      flux.push_back(double(a[e]) / double(b[e]));
    }
  if (!cfg.sigma_g || flux.size() < 3) return keep;
  const double f = select_percentile(flux, 50);
  std::vector<double> r;
  std::vector<int> at;
  r.reserve(flux.size());
  at.reserve(flux.size());
  for (int e = 0; e < n; ++e)
    if (keep[e]) {
      r.push_back((double(a[e]) - f * double(b[e])) / std::sqrt(double(b[e])));
      at.push_back(e);
    }
  std::vector<double> sel = r;
  const double med = select_percentile(sel, 50);
  const double width = select_percentile(sel, cfg.sigma_g_high) - select_percentile(sel, cfg.sigma_g_low);
  const double sg = coeff * width;
  if (!(sg > 0)) return keep;
  for (std::size_t i = 0; i < r.size(); ++i)
    if (std::fabs(r[i] - med) > cfg.sigma_g_n * sg) keep[at[i]] = 0;
  return keep;
}

}  // namespace

std::vector<std::uint8_t> sigma_g_keep(const float* a, const float* b, int n, const FilterConfig& cfg) {
  return sigma_g_keep_with(a, b, n, cfg, sigma_g_coeff(cfg));
}

void filter_candidates(SearchResult& r, const SearchPlan& plan, const PsiPhi& p, const ExposureStack* stack,
                       const FilterConfig& cfg, const JobContext& ctx) {
  const auto t_start = std::chrono::steady_clock::now();
  {
    const auto problems = cfg.validate();
    if (!problems.empty()) {
      const auto c = problems[0].find(": ");
      throw ConfigError("filters." + problems[0].substr(0, c), problems[0].substr(c + 2));
    }
  }
  const ShiftTable& s = plan.shifts();
  const SearchConfig& sc = plan.config();
  const int n = p.n;
  if (s.n_exp != n) throw ConfigError("plan", "the plan's shift table does not match the planes");
  detail::TaskPool pool(sc.threads, ctx);
  FilterReport rep;
  rep.input = r.candidates.size();
  rep.config_json = cfg.to_json();
  std::vector<double> t(static_cast<std::size_t>(n), 0.0);
  for (int e = 0; e < n; ++e) t[e] = p.mjd[e] - plan.reference_mjd();
  const auto curve = [&](const std::vector<double>& c, int e) { return c.empty() ? 0.0 : c[e]; };

  // 1. observations.
  std::vector<Work> work;
  work.reserve(r.candidates.size());
  for (const Candidate& c : r.candidates) {
    const double masked = n > 0 ? double(n - c.obs) / double(n) : 0.0;
    if (c.obs < cfg.min_obs || masked > cfg.max_masked_fraction) {
      ++rep.observations;
      continue;
    }
    work.push_back({c, {}, {}, {}, {}, {}, c.z, 0, true});
  }

  // ALMAGEST_STACK_FILTER_PROFILE=1: the wall time of each stage on stderr (benchmarks).
  const bool profile = std::getenv("ALMAGEST_STACK_FILTER_PROFILE") != nullptr;
  double t_sigma = 0, t_static = 0;
  std::size_t n_batches = 0;
  auto now = [] { return std::chrono::steady_clock::now(); };
  auto since = [&](std::chrono::steady_clock::time_point a) { return std::chrono::duration<double>(now() - a).count(); };
  const auto t_sg0 = now();
  // 2. sigma-G (curves for every candidate: the duplicate and stamp stages use them too).
  const double coeff = sigma_g_coeff(cfg);
  const bool threshold_mode = sc.mode == ResultMode::Threshold;
  pool.run(work.size(), "sigma-G", [&](std::size_t i) {
    Work& w = work[i];
    w.a.resize(std::size_t(n));
    w.b.resize(std::size_t(n));
    trajectory_curve(p, s, sc.psf_rho, w.c.x, w.c.y, w.c.v, w.a.data(), w.b.data());
    w.keep = sigma_g_keep_with(w.a.data(), w.b.data(), n, cfg, coeff);
    if (cfg.dedup && cfg.dedup_share > 0) {
      w.px.resize(std::size_t(n));
      w.py.resize(std::size_t(n));
      const std::int32_t* tx = s.fractional() ? s.fx.data() : s.sx.data();
      const std::int32_t* ty = s.fractional() ? s.fy.data() : s.sy.data();
      const std::size_t k0 = std::size_t(w.c.v) * n;
      for (int e = 0; e < n; ++e) {
        w.px[e] = w.c.x + tx[k0 + e];
        w.py[e] = w.c.y + ty[k0 + e];
      }
    }
    if (!cfg.sigma_g) return;
    float A = 0, B = 0;
    std::int32_t obs = 0, observed = 0;
    for (int e = 0; e < n; ++e) {
      observed += w.b[e] > 0.0f;
      if (!w.keep[e]) continue;
      A += w.a[e];
      B += w.b[e];
      ++obs;
    }
    w.clipped = observed - obs;
    w.c.a = A;
    w.c.b = B;
    w.c.obs = obs;
    w.c.z = B > 0.0f ? double(A / std::sqrt(B)) : 0.0;
    w.c.flux = B > 0.0f ? double(A) / double(B) : 0.0;
    w.ok = obs >= cfg.sigma_g_min_kept && (!threshold_mode || w.c.z >= r.threshold_z);
  });
  ctx.check_cancel();
  t_sigma = since(t_sg0);
  {
    std::vector<Work> kept;
    kept.reserve(work.size());
    for (auto& w : work) {
      if (w.ok) kept.push_back(std::move(w));
      else ++rep.sigma_g;
    }
    work = std::move(kept);
  }
  // Ranked by the clipped score: a track through a one-exposure spot must not lead the mover's.
  std::sort(work.begin(), work.end(), [](const Work& a, const Work& b) { return stronger(a.c, b.c); });

  // 3-5. Duplicates at the source level, in descending Z. A candidate that is no duplicate of a
  // kept one is tested (stationary, stamps) before it may absorb others: a rejected one (a star,
  // a track through a star and a mover) must not swallow a real mover that shares its samples.
  const double R = cfg.dedup_radius_px;
  const double tmin = n ? *std::min_element(t.begin(), t.end()) : 0.0, tmax = n ? *std::max_element(t.begin(), t.end()) : 0.0;
  auto same_source = [&](const Work& c, const Work& k) {
    // Quick reject: the (linear) separation stays beyond max(R, 1) on one side over the stack.
    const double reach = std::max(R, 1.0);
    const double dx0 = (c.c.x - k.c.x) + (c.c.vx - k.c.vx) * tmin, dx1 = (c.c.x - k.c.x) + (c.c.vx - k.c.vx) * tmax;
    const double dy0 = (c.c.y - k.c.y) + (c.c.vy - k.c.vy) * tmin, dy1 = (c.c.y - k.c.y) + (c.c.vy - k.c.vy) * tmax;
    if ((dx0 > reach && dx1 > reach) || (dx0 < -reach && dx1 < -reach) || (dy0 > reach && dy1 > reach) ||
        (dy0 < -reach && dy1 < -reach))
      return false;
    int close = 0;
    double shared = 0;
    // The overlap count only grows: once it reaches its threshold the answer is yes whatever
    // the shared samples sum to (a_e may be negative, so that sum cannot stop the loop early).
    const double close_needed = cfg.dedup_overlap * double(n);
    const bool share = cfg.dedup_share > 0;
    const std::int64_t Ri = std::int64_t(R);
    const int dxi = c.c.x - k.c.x, dyi = c.c.y - k.c.y;
    const double dvx = c.c.vx - k.c.vx, dvy = c.c.vy - k.c.vy;
    for (int e = 0; e < n; ++e) {
      const double dx = dxi + dvx * t[e], dy = dyi + dvy * t[e];
      close += std::fabs(dx) <= R && std::fabs(dy) <= R;
      if (double(close) >= close_needed) return true;
      // "The same samples": this exposure's pixel is within the radius of the stronger one's
      // (the PSF spreads one source over neighbouring pixels).
      if (share && c.keep[e] && std::llabs(std::int64_t(c.px[e]) - k.px[e]) <= Ri && std::llabs(std::int64_t(c.py[e]) - k.py[e]) <= Ri)
        shared += c.a[e];
    }
    return cfg.dedup_share > 0 && c.c.a > 0 && shared >= cfg.dedup_share * double(c.c.a);
  };
  // Stationary: the track's extent in the image, common curve included.
  auto stationary = [&](const Candidate& c) {
    if (!(cfg.min_motion_px > 0) || n == 0) return false;
    double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
    for (int e = 0; e < n; ++e) {
      const double x = c.vx * t[e] + curve(sc.curve_dx, e), y = c.vy * t[e] + curve(sc.curve_dy, e);
      x0 = std::min(x0, x);
      x1 = std::max(x1, x);
      y0 = std::min(y0, y);
      y1 = std::max(y1, y);
    }
    if (std::max(x1 - x0, y1 - y0) < cfg.min_motion_px) return true;
    return false;
  };
  // The share of a candidate's A that static sources explain: at each kept exposure, the flux
  // of a source fixed at the sampled pixel (static coadd sum psi / sum phi there) times b_e.
  // The coadd is computed only at the pixels the tested candidates' tracks visit (memoised; a
  // full pass over the planes would cost more than the rest of the filters on large stacks),
  // each pixel's sums over exposures in order, as a full pass would give them.
  std::vector<double> static_flux;
  std::vector<std::uint8_t> static_done;
  if (cfg.stationary_ratio > 0) {
    static_flux.assign(p.pixels(), 0.0);
    static_done.assign(p.pixels(), 0);
  }
  // Marks and lists the track pixels of w whose static flux is not computed yet.
  auto static_need = [&](const Work& w, std::vector<std::size_t>& need) {
    if (static_flux.empty() || !(w.c.a > 0)) return;
    for (int e = 0; e < n; ++e) {
      if (!w.keep[e]) continue;
      const std::size_t k = std::size_t(w.c.v) * n + e;
      const std::int64_t qx = std::int64_t(w.c.x) + s.sx[k], qy = std::int64_t(w.c.y) + s.sy[k];
      if (qx < 0 || qx >= p.width || qy < 0 || qy >= p.height) continue;
      const std::size_t q = std::size_t(qy) * p.width + std::size_t(qx);
      if (!static_done[q]) {
        static_done[q] = 1;
        need.push_back(q);
      }
    }
  };
  auto static_coadd = [&](const std::vector<std::size_t>& need) {
    auto coadd = [&](std::size_t t) {
      const std::size_t q = need[t];
      double A = 0, B = 0;
      for (int e = 0; e < n; ++e) {
        const std::size_t i = std::size_t(e) * p.pixels() + q;
        if (e + kAhead < n) {
          prefetch(p.psi.data() + i + kAhead * p.pixels());
          prefetch(p.phi.data() + i + kAhead * p.pixels());
        }
        A += p.psi[i];
        B += p.phi[i];
      }
      static_flux[q] = B > 0 ? A / B : 0.0;
    };
    if (need.size() >= 16) pool.run(need.size(), "static sources", coadd);
    else for (std::size_t t = 0; t < need.size(); ++t) coadd(t);
  };
  // The share; every pixel of w's track computed (static_need + static_coadd first).
  auto static_share = [&](const Work& w) {
    if (static_flux.empty() || !(w.c.a > 0)) return 0.0;
    double explained = 0;
    for (int e = 0; e < n; ++e) {
      if (!w.keep[e]) continue;
      const std::size_t k = std::size_t(w.c.v) * n + e;
      const std::int64_t qx = std::int64_t(w.c.x) + s.sx[k], qy = std::int64_t(w.c.y) + s.sy[k];
      if (qx < 0 || qx >= p.width || qy < 0 || qy >= p.height) continue;
      explained += static_flux[std::size_t(qy) * p.width + std::size_t(qx)] * double(w.b[e]);
    }
    return explained / double(w.c.a);
  };
  // Stamps over the kept epochs (filter_stamps.hpp).
  const bool stamps = cfg.stamp_filter && stack;
  if (stamps && (stack->width != p.width || stack->height != p.height || int(stack->size()) != n))
    throw IoError(stack->source, "psi/phi", "planes do not match the stack");
  std::optional<detail::StampTest> stamp_test;
  if (stamps) stamp_test.emplace(*stack, p, s, cfg, pool);
  std::vector<std::size_t> survivors;
  std::vector<std::vector<std::size_t>> members;
  // Verdicts of the stationary and stamp tests (-1 unknown, 0 passes, 1 stationary, 2 stamps),
  // each a pure function of its candidate, evaluated in batches, so the loop's decisions are those
  // of testing one candidate at a time; a batch only shares the thread rounds and memory passes.
  // The batch: the candidate that needs a verdict now (i), the next candidates that are no
  // duplicate of i or of a survivor (tested whatever i's verdict), and, while there is room (one
  // candidate per thread), the next ones that are a duplicate of i but of no survivor: those the
  // loop tests in turn if i and the ones before them are rejected (speculation). In the reference
  // workload the 6 best trajectories of the mover are rejected by the stamp moments one after the
  // other, each being the next one's only obstacle: 7 batches of one candidate without it.
  // ALMAGEST_STACK_FILTER_SPECULATE=N caps the speculative candidates per batch (0: none).
  std::vector<std::int8_t> verdict(work.size(), -1);
  const std::size_t batch_max = std::size_t(pool.threads());
  const std::size_t spec_max = [&] {
    const char* e = std::getenv("ALMAGEST_STACK_FILTER_SPECULATE");
    return e ? std::size_t(std::max(0, std::atoi(e))) : batch_max;
  }();
  std::size_t n_spec = 0;
  auto dup_of_survivor = [&](std::size_t j) {
    for (std::size_t k = 0; k < survivors.size(); ++k)
      if (same_source(work[j], work[survivors[k]])) return true;
    return false;
  };
  auto evaluate_batch = [&](std::size_t i) {
    std::vector<std::size_t> batch{i}, spec;
    // The duplicate tests are pure: the first 128 candidates are tested one by one (most batches
    // fill there; a parallel round for every batch cost 10x in a field with a bright star), the
    // rest, when the batch is still not full (many duplicates of one source: the scan runs over all
    // of them), in parallel over blocks of 1,024; the batch is the same as testing them in order.
    // Kind of candidate j: 0 no duplicate of i or of a survivor, 1 a duplicate of i only (looked
    // for while want_spec), 2 known verdict or a duplicate of a survivor.
    auto kind = [&](std::size_t j, bool want_spec) -> std::uint8_t {
      if (verdict[j] >= 0) return 2;
      if (!cfg.dedup) return 0;
      if (same_source(work[j], work[i])) return want_spec && !dup_of_survivor(j) ? 1 : 2;
      return dup_of_survivor(j) ? 2 : 0;
    };
    auto room_for_spec = [&] { return batch.size() + spec.size() < batch_max && spec.size() < spec_max; };
    const std::size_t j_end = std::min(work.size(), i + 4096);
    std::vector<std::uint8_t> kinds;
    for (std::size_t j0 = i + 1; j0 < j_end && batch.size() < batch_max;) {
      const std::size_t j1 = std::min(j_end, j0 + (j0 < i + 1 + 128 ? std::size_t(128) : std::size_t(1024)));
      if (j0 == i + 1 || !cfg.dedup || batch_max == 1 || j1 - j0 < 32) {
        // One by one, stopping when the batch is full.
        for (std::size_t j = j0; j < j1 && batch.size() < batch_max; ++j) {
          const std::uint8_t k = kind(j, room_for_spec());
          if (k == 0) batch.push_back(j);
          else if (k == 1) spec.push_back(j);
        }
      } else {
        const bool want_spec = room_for_spec();
        kinds.assign(j1 - j0, 2);
        pool.run(j1 - j0, "duplicates", [&](std::size_t t) { kinds[t] = kind(j0 + t, want_spec); });
        for (std::size_t j = j0; j < j1 && batch.size() < batch_max; ++j) {
          if (kinds[j - j0] == 0) batch.push_back(j);
          else if (kinds[j - j0] == 1 && room_for_spec()) spec.push_back(j);
        }
      }
      j0 = j1;
    }
    // The sure ones first, the speculative ones in the room left.
    spec.resize(std::min(spec.size(), batch_max - std::min(batch_max, batch.size())));
    n_spec += spec.size();
    const std::size_t n_sure = batch.size();
    batch.insert(batch.end(), spec.begin(), spec.end());
    std::vector<std::size_t> tested;  // positions in batch
    std::vector<std::size_t> need;
    for (std::size_t t = 0; t < batch.size(); ++t) {
      const std::size_t b = batch[t];
      if (stationary(work[b].c)) {
        verdict[b] = 1;
        continue;
      }
      if (cfg.stationary_ratio > 0) static_need(work[b], need);
      tested.push_back(t);
    }
    ++n_batches;
    const auto ts0 = now();
    static_coadd(need);
    t_static += since(ts0);
    std::vector<std::size_t> stamp_list;
    std::size_t spec_from = 0;  // stamp_list[0, spec_from): from the sure part of the batch
    for (std::size_t t : tested) {
      const std::size_t b = batch[t];
      if (cfg.stationary_ratio > 0 && static_share(work[b]) >= cfg.stationary_ratio) verdict[b] = 1;
      else if (stamps) stamp_list.push_back(b);
      else verdict[b] = 0;
      if (t < n_sure) spec_from = stamp_list.size();
    }
    if (stamp_list.empty()) return;
    std::vector<const Work*> list;
    for (std::size_t b : stamp_list) list.push_back(&work[b]);
    const std::vector<std::int8_t> ok = stamp_test->verdicts(list, spec_from, stamp_list[0] == i);
    // Undecided speculative candidates stay unknown: tested again if the loop needs them.
    for (std::size_t t = 0; t < stamp_list.size(); ++t) verdict[stamp_list[t]] = ok[t] > 0 ? 0 : ok[t] == 0 ? 2 : -1;
  };
  for (std::size_t i = 0; i < work.size(); ++i) {
    if (i % 256 == 0) ctx.check_cancel();
    std::size_t into = survivors.size();
    if (cfg.dedup)
      for (std::size_t k = 0; k < survivors.size(); ++k)
        if (same_source(work[i], work[survivors[k]])) {
          into = k;
          break;
        }
    if (into < survivors.size()) {
      members[into].push_back(i);
      ++rep.merged;
      continue;
    }
    if (verdict[i] < 0) evaluate_batch(i);
    if (verdict[i] == 1) {
      ++rep.stationary;
    } else if (verdict[i] == 2) {
      ++rep.stamps;
    } else {
      survivors.push_back(i);
      members.emplace_back();
    }
  }

  // Output, by the (clipped) score.
  std::vector<std::size_t> order(survivors.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return stronger(work[survivors[a]].c, work[survivors[b]].c); });
  std::vector<Candidate> out;
  std::vector<CandidateGroup> groups;
  for (const std::size_t k : order) {
    const Work& w = work[survivors[k]];
    Candidate c = w.c;
    CandidateGroup g;
    g.epochs_clipped = w.clipped;
    g.z_unclipped = w.z_unclipped;
    double mx = c.vx, my = c.vy, sx2 = 0, sy2 = 0;
    std::int32_t count = c.members;
    for (std::size_t m : members[k]) {
      g.members.push_back(work[m].c);
      mx += work[m].c.vx;
      my += work[m].c.vy;
      count += work[m].c.members;
    }
    const double nm = double(members[k].size() + 1);
    mx /= nm;
    my /= nm;
    sx2 = (c.vx - mx) * (c.vx - mx);
    sy2 = (c.vy - my) * (c.vy - my);
    for (std::size_t m : members[k]) {
      sx2 += (work[m].c.vx - mx) * (work[m].c.vx - mx);
      sy2 += (work[m].c.vy - my) * (work[m].c.vy - my);
    }
    // Velocity estimate: the mean over the trajectories within 1 of the best score (the flat top
    // of the source's likelihood, which a single grid node samples with noise).
    {
      double fx = c.vx, fy = c.vy, cnt = 1;
      for (std::size_t m : members[k])
        if (work[m].c.z >= c.z - 1.0) {
          fx += work[m].c.vx;
          fy += work[m].c.vy;
          cnt += 1;
        }
      g.vx_fit = fx / cnt;
      g.vy_fit = fy / cnt;
    }
    g.vx_spread = std::sqrt(sx2 / nm);
    g.vy_spread = std::sqrt(sy2 / nm);
    c.members = count;
    out.push_back(c);
    groups.push_back(std::move(g));
  }
  rep.output = out.size();
  if (profile) {
    const detail::StampProfile sp = stamp_test ? stamp_test->profile : detail::StampProfile{};
    std::fprintf(stderr,
                 "filter profile: total %.4f s; curves + sigma-G %.4f; static coadd %.4f (%zu batches, %zu speculative candidates); "
                 "stamps: setup %.4f, gather %.4f, sums + medians %.4f (%zu candidates gathered in %zu groups, %zu fused, %zu with "
                 "medians, %zu undecided; %d threads)\n",
                 std::chrono::duration<double>(now() - t_start).count(), t_sigma, t_static, n_batches, n_spec, sp.setup, sp.gather,
                 sp.reduce, sp.gathered, sp.groups, sp.fused, sp.medians, sp.undecided, pool.threads());
  }
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  r.candidates = std::move(out);
  r.groups = std::move(groups);
  r.filters = rep;
  r.filtered = true;  // the job layer logs r.filters.summary() with its other summary lines
}

}  // namespace almagest::stack
