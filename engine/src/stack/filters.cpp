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

#include "almagest/core/error.hpp"
#include "core/parallel.hpp"

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

/// Exposures read ahead (software prefetch) where a loop over exposures touches one pixel or
/// row per plane: every step is a new page, so the loops are bound by memory latency.
constexpr int kAhead = 8;

struct Work {
  Candidate c;
  std::vector<float> a, b;           ///< the curve
  std::vector<std::uint8_t> keep;    ///< sigma-G kept (observed) epochs
  std::vector<std::int32_t> px, py;  ///< the sampled pixel per exposure (duplicate test's shared samples)
  double z_unclipped = 0;
  std::int32_t clipped = 0;
  bool ok = true;
};

/// Mean normalised PSF of the stack on a (2R+1)^2 grid and the mean PSF sigma.
void mean_psf(const ExposureStack& st, int R, std::vector<double>& k, double& sigma) {
  const int side = 2 * R + 1;
  k.assign(std::size_t(side) * side, 0.0);
  double m2 = 0;
  std::size_t used = 0;
  for (const Psf& p : st.psf) {
    double sum = 0;
    for (float v : p.kernel) sum += v;
    if (p.size <= 0 || !(sum > 0)) continue;
    const int r = p.size / 2;
    double mm = 0;
    for (int y = 0; y < p.size; ++y)
      for (int x = 0; x < p.size; ++x) {
        const double v = p.kernel[std::size_t(y) * p.size + x] / sum;
        mm += v * double((x - r) * (x - r) + (y - r) * (y - r));
        const int u = x - r + R, w = y - r + R;
        if (u >= 0 && u < side && w >= 0 && w < side) k[std::size_t(w) * side + u] += v;
      }
    m2 += mm;
    ++used;
  }
  if (used) {
    for (double& v : k) v /= double(used);
    sigma = std::sqrt(m2 / double(used) / 2.0);
  } else {
    sigma = 1.0;
  }
}

/// Second moments about the stamp centre with a Gaussian weight of sigma w: size T = Mxx + Myy
/// and ellipticity |(Mxx - Myy, 2 Mxy)| / T. False when the weighted flux is not positive.
bool moments(const std::vector<double>& s, int R, double w, double& T, double& e) {
  const int side = 2 * R + 1;
  double m0 = 0, xx = 0, yy = 0, xy = 0;
  for (int y = -R; y <= R; ++y)
    for (int x = -R; x <= R; ++x) {
      const double g = std::exp(-0.5 * (x * x + y * y) / (w * w)) * s[std::size_t(y + R) * side + (x + R)];
      m0 += g;
      xx += g * x * x;
      yy += g * y * y;
      xy += g * x * y;
    }
  if (!(m0 > 0)) return false;
  xx /= m0;
  yy /= m0;
  xy /= m0;
  T = xx + yy;
  if (!(T > 0)) return false;
  e = std::hypot(xx - yy, 2 * xy) / T;
  return true;
}

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
  double t_sigma = 0, t_static = 0, t_gather = 0, t_reduce = 0, t_alloc = 0;
  std::size_t n_batches = 0, n_groups = 0, n_stamped = 0;
  auto now = [] { return std::chrono::steady_clock::now(); };
  auto since = [&](std::chrono::steady_clock::time_point a) { return std::chrono::duration<double>(now() - a).count(); };
  const auto t_sg0 = now();
  // 2. sigma-G (curves for every candidate: the duplicate and stamp stages use them too).
  const double coeff = sigma_g_coeff(cfg);
  const bool threshold_mode = sc.mode == ResultMode::Threshold;
  parallel::parallel_for(work.size(), sc.threads, ctx, "sigma-G", [&](std::size_t i) {
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
          __builtin_prefetch(p.psi.data() + i + kAhead * p.pixels());
          __builtin_prefetch(p.phi.data() + i + kAhead * p.pixels());
        }
        A += p.psi[i];
        B += p.phi[i];
      }
      static_flux[q] = B > 0 ? A / B : 0.0;
    };
    if (need.size() >= 16) parallel::parallel_for(need.size(), sc.threads, ctx, "static sources", coadd);
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
  // Stamps over the kept epochs.
  const bool stamps = cfg.stamp_filter && stack;
  if (stamps && (stack->width != p.width || stack->height != p.height || int(stack->size()) != n))
    throw IoError(stack->source, "psi/phi", "planes do not match the stack");
  const int Rs = cfg.stamp_radius, side = 2 * Rs + 1;
  std::vector<double> K;
  double sigma = 1, kk = 0, Tpsf = 0, epsf = 0;
  bool psf_ok = false;
  if (stamps) {
    mean_psf(*stack, Rs, K, sigma);
    for (double v : K) kk += v * v;
    psf_ok = moments(K, Rs, 2.0 * sigma, Tpsf, epsf);
  }
  // The stamp test of several candidates, in three steps whose results do not depend on how the
  // work is split: (1) gather: each kept exposure's (2R+1)^2 block of sci and var (0 where the
  // pixel is masked, not finite, outside the image or has no positive variance), exposure-major,
  // in parallel over (candidate, exposure range) tasks (the cost is memory
  // latency: every exposure is a new page); (2) per stamp row and candidate, each pixel's
  // sums in exposure order (the same additions as one pass over the exposures) and its median;
  // (3) per candidate, the PSF-matched fluxes and moments in pixel order. (A pixel-major gather
  // buffer was slower: with 1,024 kept epochs its 2 (2R+1)^2 write streams are 4 KB apart and
  // fall into the same cache sets.)
  const std::size_t spix = std::size_t(side) * side;
  struct Stamp {
    std::size_t nk = 0;                      ///< kept epochs
    std::vector<int> epochs;                 ///< the kept epochs, in order
    float* sv = nullptr;                     ///< [nk][spix]: value (in gather_buf; every element written)
    float* vv = nullptr;                     ///< [nk][spix]: variance, 0 = not valid
    std::vector<double> mean, med, weighted; ///< [spix]
    std::vector<std::uint8_t> any;           ///< [spix]: at least one valid value
  };
  // Gather order (ALMAGEST_STACK_STAMP_ORDER): row by row over a range's exposures with a
  // software prefetch kAhead exposures ahead (default; the order the stamp sums were formed in
  // before), or "exposure": all rows of one exposure before the next (fewer pages per step),
  // prefetching two exposures' blocks ahead.
  const bool exposure_order = [] {
    const char* e = std::getenv("ALMAGEST_STACK_STAMP_ORDER");
    return e && std::string(e) == "exposure";
  }();
  auto stamp_gather = [&](const Work& w, Stamp& st, std::size_t k0, std::size_t k1) {
    const int W = p.width, H = p.height;
    const std::size_t np = p.pixels();
    auto prefetch_row = [&](std::size_t k, int v) {
      const int ea = st.epochs[k];
      const std::size_t ka = std::size_t(w.c.v) * n + ea;
      const std::int64_t ya = std::int64_t(w.c.y) + s.sy[ka] + v, xa = std::int64_t(w.c.x) + s.sx[ka] - Rs;
      if (ya < 0 || ya >= H) return;
      const std::size_t r0 = std::size_t(ea) * np + std::size_t(ya) * W;
      const std::size_t ia = r0 + std::size_t(std::clamp<std::int64_t>(xa, 0, W - 1));
      const std::size_t ib = r0 + std::size_t(std::clamp<std::int64_t>(xa + 2 * Rs, 0, W - 1));
      __builtin_prefetch(stack->sci.data() + ia);
      __builtin_prefetch(stack->sci.data() + ib);
      __builtin_prefetch(stack->var.data() + ia);
      __builtin_prefetch(stack->var.data() + ib);
      __builtin_prefetch(stack->mask.data() + ia);
    };
    auto copy_row = [&](std::size_t k, int v) {
      const int e = st.epochs[k];
      const std::size_t ke = std::size_t(w.c.v) * n + e;
      const std::int64_t x = std::int64_t(w.c.x) + s.sx[ke], yy = std::int64_t(w.c.y) + s.sy[ke] + v;
      float* sd = st.sv + k * spix + std::size_t(v + Rs) * side;
      float* vd = st.vv + k * spix + std::size_t(v + Rs) * side;
      for (int u = -Rs; u <= Rs; ++u) {
        const std::int64_t xx = x + u;
        float sv = 0, vv = 0;
        if (yy >= 0 && yy < H && xx >= 0 && xx < W) {
          const std::size_t i = std::size_t(e) * np + std::size_t(yy) * W + std::size_t(xx);
          sv = stack->sci[i];
          vv = stack->var[i];
          if (stack->mask[i] || !std::isfinite(sv) || !(vv > 0)) sv = vv = 0;
        }
        sd[u + Rs] = sv;
        vd[u + Rs] = vv;
      }
    };
    if (exposure_order) {
      constexpr std::size_t kBlocksAhead = 2;
      for (std::size_t k = k0; k < std::min(k1, k0 + kBlocksAhead); ++k)
        for (int v = -Rs; v <= Rs; ++v) prefetch_row(k, v);
      for (std::size_t k = k0; k < k1; ++k) {
        if (k + kBlocksAhead < k1)
          for (int v = -Rs; v <= Rs; ++v) prefetch_row(k + kBlocksAhead, v);
        for (int v = -Rs; v <= Rs; ++v) copy_row(k, v);
      }
      return;
    }
    for (int v = -Rs; v <= Rs; ++v)
      for (std::size_t k = k0; k < k1; ++k) {
        if (k + kAhead < k1) prefetch_row(k + kAhead, v);
        copy_row(k, v);
      }
  };
  auto stamp_reduce_row = [&](Stamp& st, std::size_t row) {
    const std::size_t nk = st.nk, q0 = row * side;
    std::vector<float> val(std::size_t(side) * nk);  // [pixel of the row][valid values, in order]
    std::vector<std::size_t> cnt(static_cast<std::size_t>(side), 0);
    std::vector<double> sum(static_cast<std::size_t>(side), 0.0), wsum(sum), wval(sum);
    for (std::size_t k = 0; k < nk; ++k) {
      const float* sk = st.sv + k * spix + q0;
      const float* vk = st.vv + k * spix + q0;
      for (std::size_t c = 0; c < std::size_t(side); ++c) {
        const float sv = sk[c], vv = vk[c];
        if (!(vv > 0)) continue;
        val[c * nk + cnt[c]++] = sv;
        sum[c] += sv;
        wsum[c] += 1.0 / vv;
        wval[c] += sv / vv;
      }
    }
    for (std::size_t c = 0; c < std::size_t(side); ++c) {
      const std::size_t n_c = cnt[c], q = q0 + c;
      if (n_c == 0) continue;
      float* v = val.data() + c * nk;
      st.any[q] = 1;
      st.weighted[q] = wval[c] / wsum[c];
      st.mean[q] = sum[c] / double(n_c);
      const std::size_t m = n_c / 2;
      std::nth_element(v, v + m, v + n_c);
      double med = v[m];
      if (n_c % 2 == 0) med = 0.5 * (med + *std::max_element(v, v + m));
      st.med[q] = med;
    }
  };
  auto stamp_verdict = [&](const Stamp& st) {
    double fm = 0, fmed = 0;
    for (std::size_t q = 0; q < spix; ++q) {
      if (!st.any[q]) continue;
      fm += st.mean[q] * K[q];
      fmed += st.med[q] * K[q];
    }
    fm /= kk;
    fmed /= kk;
    double T = 0, e = 0;
    if (!(fm > 0) || fmed < cfg.stamp_median_ratio * fm) return false;
    if (!psf_ok) return true;
    return moments(st.weighted, Rs, 2.0 * sigma, T, e) && T <= cfg.stamp_max_size_ratio * Tpsf && T >= Tpsf / cfg.stamp_max_size_ratio &&
           e <= cfg.stamp_max_ellipticity;
  };
  // Verdicts (1 passes) of the stamp test for the candidates `list`, in groups whose gathered
  // blocks stay under kStampBytes (large radii); each step in parallel.
  // One candidate's stamp test in one task (the form before the split gather): used when a
  // batch has at least as many stamp candidates as threads, where the split's extra pass over
  // the gathered blocks and its two thread rounds cost more than they save (2-core machine:
  // bench_stack_post 1024 128 128 17 2). Same additions in the same order as the split form.
  auto stamp_ok_fused = [&](const Work& w) {
    const int W = p.width, H = p.height;
    const std::size_t np = p.pixels();
    std::vector<std::vector<float>> pix(std::size_t(side) * side);
    std::vector<double> sum(pix.size(), 0.0), wsum(pix.size(), 0.0), wval(pix.size(), 0.0);
    // Row by row (each stamp pixel's values and sums in exposure order); the reads are the cost,
    // one cache line per row and exposure. Candidates are tested in parallel batches (below).
    auto stamp_row = [&](std::size_t row) {
      const int v = int(row) - Rs;
      // The row's accumulators stay local to the task (neighbouring rows share cache lines).
      std::vector<std::vector<float>> rpix(static_cast<std::size_t>(side));
      for (auto& r : rpix) r.reserve(std::size_t(n));
      std::vector<double> rsum(static_cast<std::size_t>(side), 0.0), rwsum(rsum), rwval(rsum);
      for (int e = 0; e < n; ++e) {
        // Each exposure's row is a new page: prefetch a few exposures ahead (latency bound).
        if (e + kAhead < n) {
          const std::size_t ka = std::size_t(w.c.v) * n + e + kAhead;
          const std::int64_t ya = std::int64_t(w.c.y) + s.sy[ka] + v, xa = std::int64_t(w.c.x) + s.sx[ka] - Rs;
          if (ya >= 0 && ya < H) {
            const std::size_t ia = std::size_t(e + kAhead) * np + std::size_t(ya) * W + std::size_t(std::clamp<std::int64_t>(xa, 0, W - 1));
            const std::size_t ib = std::size_t(e + kAhead) * np + std::size_t(ya) * W + std::size_t(std::clamp<std::int64_t>(xa + 2 * Rs, 0, W - 1));
            __builtin_prefetch(stack->sci.data() + ia);
            __builtin_prefetch(stack->sci.data() + ib);
            __builtin_prefetch(stack->var.data() + ia);
            __builtin_prefetch(stack->var.data() + ib);
            __builtin_prefetch(stack->mask.data() + ia);
          }
        }
        if (!w.keep[e]) continue;
        const std::size_t ke = std::size_t(w.c.v) * n + e;
        const std::int64_t x = std::int64_t(w.c.x) + s.sx[ke], yy = std::int64_t(w.c.y) + s.sy[ke] + v;
        if (yy < 0 || yy >= H) continue;
        for (int u = -Rs; u <= Rs; ++u) {
          const std::int64_t xx = x + u;
          if (xx < 0 || xx >= W) continue;
          const std::size_t i = std::size_t(e) * np + std::size_t(yy) * W + std::size_t(xx);
          const float sv = stack->sci[i], vv = stack->var[i];
          if (stack->mask[i] || !std::isfinite(sv) || !(vv > 0)) continue;
          const std::size_t c = std::size_t(u + Rs);
          rpix[c].push_back(sv);
          rsum[c] += sv;
          rwsum[c] += 1.0 / vv;
          rwval[c] += sv / vv;
        }
      }
      for (std::size_t c = 0; c < std::size_t(side); ++c) {
        const std::size_t q = row * side + c;
        pix[q] = std::move(rpix[c]);
        sum[q] = rsum[c];
        wsum[q] = rwsum[c];
        wval[q] = rwval[c];
      }
    };
    for (std::size_t row = 0; row < std::size_t(side); ++row) stamp_row(row);
    std::vector<double> weighted(pix.size(), 0.0);
    double fm = 0, fmed = 0;
    for (std::size_t q = 0; q < pix.size(); ++q) {
      auto& v = pix[q];
      if (v.empty()) continue;
      weighted[q] = wval[q] / wsum[q];
      const std::size_t m = v.size() / 2;
      std::nth_element(v.begin(), v.begin() + m, v.end());
      double med = v[m];
      if (v.size() % 2 == 0) med = 0.5 * (med + *std::max_element(v.begin(), v.begin() + m));
      fm += sum[q] / double(v.size()) * K[q];
      fmed += med * K[q];
    }
    fm /= kk;
    fmed /= kk;
    double T = 0, e = 0;
    if (!(fm > 0) || fmed < cfg.stamp_median_ratio * fm) return false;
    if (!psf_ok) return true;
    return moments(weighted, Rs, 2.0 * sigma, T, e) && T <= cfg.stamp_max_size_ratio * Tpsf && T >= Tpsf / cfg.stamp_max_size_ratio &&
           e <= cfg.stamp_max_ellipticity;
  };
  std::unique_ptr<float[]> gather_buf;
  std::size_t gather_cap = 0;
  auto stamps_ok = [&](const std::vector<std::size_t>& list) {
    std::vector<std::int8_t> ok(list.size(), 0);
    const std::size_t nthreads = std::size_t(std::max(1, resolve_threads(sc.threads)));
    if (list.size() >= nthreads) {
      auto one = [&](std::size_t t) { ok[t] = stamp_ok_fused(work[list[t]]) ? 1 : 0; };
      if (list.size() > 1) parallel::parallel_for(list.size(), sc.threads, ctx, "stamps", one);
      else one(0);
      return ok;
    }
    constexpr std::size_t kStampBytes = std::size_t(512) << 20;
    const std::size_t per = std::max<std::size_t>(1, spix * std::size_t(std::max(n, 1)) * 2 * sizeof(float));
    const std::size_t group = std::max<std::size_t>(1, std::min(list.size(), kStampBytes / per));
    for (std::size_t g0 = 0; g0 < list.size(); g0 += group) {
      const std::size_t g1 = std::min(list.size(), g0 + group), ng = g1 - g0;
      const auto ta = now();
      ++n_groups;
      n_stamped += ng;
      std::vector<Stamp> st(ng);
      std::size_t need = 0;
      for (std::size_t t = 0; t < ng; ++t) {
        const Work& w = work[list[g0 + t]];
        for (int e = 0; e < n; ++e)
          if (w.keep[e]) st[t].epochs.push_back(e);
        st[t].nk = st[t].epochs.size();
        need += 2 * spix * st[t].nk;
      }
      // One uninitialised buffer for the call, grown when needed (no zero fill: the gather writes
      // every element; its pages are first touched by the gather tasks).
      if (need > gather_cap) {
        gather_buf.reset(new float[need]);
        gather_cap = need;
      }
      for (std::size_t t = 0, off = 0; t < ng; ++t) {
        st[t].sv = gather_buf.get() + off;
        st[t].vv = st[t].sv + spix * st[t].nk;
        off += 2 * spix * st[t].nk;
        st[t].mean.assign(spix, 0.0);
        st[t].med.assign(spix, 0.0);
        st[t].weighted.assign(spix, 0.0);
        st[t].any.assign(spix, 0);
      }
      // Exposure ranges of at least 64 epochs, about two tasks per thread over the group.
      const std::size_t parts = std::max<std::size_t>(1, (2 * nthreads + ng - 1) / ng);
      struct Range { std::size_t t, k0, k1; };
      std::vector<Range> ranges;
      for (std::size_t t = 0; t < ng; ++t) {
        const std::size_t nk = st[t].nk;
        const std::size_t chunk = std::max<std::size_t>(64, (nk + parts - 1) / parts);
        for (std::size_t k0 = 0; k0 < nk; k0 += chunk) ranges.push_back({t, k0, std::min(nk, k0 + chunk)});
      }
      auto gather = [&](std::size_t r) { stamp_gather(work[list[g0 + ranges[r].t]], st[ranges[r].t], ranges[r].k0, ranges[r].k1); };
      t_alloc += since(ta);
      const auto tg = now();
      if (ranges.size() > 1) parallel::parallel_for(ranges.size(), sc.threads, ctx, "stamps", gather);
      else if (!ranges.empty()) gather(0);
      t_gather += since(tg);
      const auto tr = now();
      auto reduce = [&](std::size_t r) { stamp_reduce_row(st[r / side], r % side); };
      const std::size_t rows = ng * std::size_t(side);
      if (rows > 1 && nthreads > 1) parallel::parallel_for(rows, sc.threads, ctx, "stamps", reduce);
      else for (std::size_t r = 0; r < rows; ++r) reduce(r);
      for (std::size_t t = 0; t < ng; ++t) ok[g0 + t] = stamp_verdict(st[t]) ? 1 : 0;
      t_reduce += since(tr);
    }
    return ok;
  };
  std::vector<std::size_t> survivors;
  std::vector<std::vector<std::size_t>> members;
  // Verdicts of the stationary and stamp tests (-1 unknown, 0 passes, 1 stationary, 2 stamps),
  // each a pure function of its candidate, evaluated in batches: the candidate that needs one now
  // and the next candidates that are no duplicate of the survivors or of it (the ones the loop
  // will most likely test next), their static-source pixels in one parallel pass and their stamps
  // in parallel, one candidate per task. The loop's decisions are those of testing one candidate
  // at a time; the batch only saves starting threads for every test.
  std::vector<std::int8_t> verdict(work.size(), -1);
  const std::size_t batch_max = std::size_t(std::max(1, resolve_threads(sc.threads)));
  auto evaluate_batch = [&](std::size_t i) {
    std::vector<std::size_t> batch{i};
    // The next candidates in order that are no duplicate of i or of a survivor. The duplicate
    // tests are pure: the first 128 candidates are tested one by one (most batches fill there;
    // starting threads for every batch cost 10x in a field with a bright star), the rest, when
    // the batch is still not full (many duplicates of one source: the scan runs over all of
    // them), in parallel over blocks of 1,024; the batch is the same as testing them in order.
    const std::size_t j_end = std::min(work.size(), i + 4096);
    auto is_dup = [&](std::size_t j) {
      if (!cfg.dedup) return false;
      bool dup = same_source(work[j], work[i]);
      for (std::size_t k = 0; !dup && k < survivors.size(); ++k) dup = same_source(work[j], work[survivors[k]]);
      return dup;
    };
    std::vector<std::uint8_t> dup;
    for (std::size_t j0 = i + 1; j0 < j_end && batch.size() < batch_max;) {
      const std::size_t j1 = std::min(j_end, j0 + (j0 < i + 1 + 128 ? std::size_t(128) : std::size_t(1024)));
      dup.assign(j1 - j0, 0);
      auto one = [&](std::size_t t) { dup[t] = verdict[j0 + t] >= 0 ? 1 : is_dup(j0 + t) ? 1 : 0; };
      if (j0 == i + 1 || !cfg.dedup || batch_max == 1 || j1 - j0 < 32) {
        // One by one, stopping when the batch is full.
        for (std::size_t j = j0; j < j1 && batch.size() < batch_max; ++j) {
          one(j - j0);
          if (!dup[j - j0]) batch.push_back(j);
        }
      } else {
        parallel::parallel_for(j1 - j0, sc.threads, ctx, "duplicates", one);
        for (std::size_t j = j0; j < j1 && batch.size() < batch_max; ++j)
          if (!dup[j - j0]) batch.push_back(j);
      }
      j0 = j1;
    }
    std::vector<std::size_t> tested;
    std::vector<std::size_t> need;
    for (std::size_t b : batch) {
      if (stationary(work[b].c)) {
        verdict[b] = 1;
        continue;
      }
      if (cfg.stationary_ratio > 0) static_need(work[b], need);
      tested.push_back(b);
    }
    ++n_batches;
    const auto ts0 = now();
    static_coadd(need);
    t_static += since(ts0);
    std::vector<std::size_t> stamp_list;
    for (std::size_t b : tested) {
      if (cfg.stationary_ratio > 0 && static_share(work[b]) >= cfg.stationary_ratio) verdict[b] = 1;
      else if (stamps) stamp_list.push_back(b);
      else verdict[b] = 0;
    }
    const std::vector<std::int8_t> ok = stamps_ok(stamp_list);
    for (std::size_t t = 0; t < stamp_list.size(); ++t) verdict[stamp_list[t]] = ok[t] ? 0 : 2;
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
  if (profile)
    std::fprintf(stderr,
                 "filter profile: total %.4f s; curves + sigma-G %.4f; static coadd %.4f (%zu batches); stamps: setup %.4f, "
                 "gather %.4f, sums + medians %.4f (%zu candidates in %zu groups; %d threads)\n",
                 std::chrono::duration<double>(now() - t_start).count(), t_sigma, t_static, n_batches, t_alloc, t_gather,
                 t_reduce, n_stamped, n_groups, resolve_threads(sc.threads));
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  r.candidates = std::move(out);
  r.groups = std::move(groups);
  r.filters = rep;
  r.filtered = true;  // the job layer logs r.filters.summary() with its other summary lines
}

}  // namespace almagest::stack
