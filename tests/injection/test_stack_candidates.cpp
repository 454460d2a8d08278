// The candidate list a person reviews (issue 24), through the stack job layer with a stack held in
// memory and no output file (what the GUI does): one candidate per injected mover on a
// WorkUnit-style stack (80 exposures of 128 x 128, irregular times over 2 days, varying variance
// and seeing, masked holes, a masked moving bad column, a common curve, three movers at SNR
// 9-12), pure-noise stacks within the Poisson interval of the clumped (effective-trials)
// false-alarm expectation, crossing movers both kept, a mover next to a bright star kept and the
// star not reported, sigma-G
// removing a one-exposure spot, the fractional mode (null calibration, an independent bilinear
// oracle, its SNR gain) and ADES / MPC rows parsed back to the same times and positions.
#include <QtTest>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "almagest/core/error.hpp"
#include "almagest/stack/candidates.hpp"
#include "almagest/stack/filters.hpp"
#include "almagest/stack/job.hpp"
#include "almagest/stack/observations.hpp"
#include "almagest/stack/synthetic.hpp"
#include "almagest/stack/wcs.hpp"
#include "tan_cards.hpp"

using namespace almagest;
using namespace almagest::stack;
namespace fs = std::filesystem;

namespace {

SyntheticConfig issue_stack(std::uint64_t seed) {
  SyntheticConfig c;
  c.n_exp = 80;
  c.width = 128;
  c.height = 128;
  c.seed = seed;
  c.baseline_days = 2.0;
  c.holes = 2;
  c.noise_variation = 0.4;
  c.seeing_min = 1.0;
  c.seeing_max = 1.65;
  return c;
}

/// A search job on an in-memory stack with no output: the request's values plus op.
StackOutcome search(const SyntheticStack& syn, schema::Values v) {
  jobs::JobRequest req;
  req.engine = "stack";
  req.values = std::move(v);
  req.values["op"] = std::string("search");
  MakeStackOptions mo;
  mo.stack_in_memory = true;
  mo.output_optional = true;
  const StackJob job = make_stack_job(req, mo);
  StackInputs in;
  in.stack = std::make_shared<const ExposureStack>(syn.stack);
  in.curve_dx = syn.curve_dx;
  in.curve_dy = syn.curve_dy;
  return run_stack_job(job, JobContext{}, jobs::RunOptions{}, in);
}

/// Continuous track of a mover at exposure e (common curve included).
void mover_at(const SyntheticStack& s, const Mover& m, int e, double& x, double& y) {
  const double t = s.stack.mjd[e] - s.stack.mjd[0];
  x = m.x0 + m.vx * t + s.curve_dx[e];
  y = m.y0 + m.vy * t + s.curve_dy[e];
}

/// Share of exposures where candidate c's track is within r pixels (max norm) of the mover's.
double overlap(const SyntheticStack& s, const Candidate& c, const Mover& m, double r) {
  int close = 0;
  const int n = int(s.stack.size());
  for (int e = 0; e < n; ++e) {
    const double t = s.stack.mjd[e] - s.stack.mjd[0];
    double mx = 0, my = 0;
    mover_at(s, m, e, mx, my);
    const double cx = c.x + c.vx * t + s.curve_dx[e], cy = c.y + c.vy * t + s.curve_dy[e];
    close += std::fabs(cx - mx) <= r && std::fabs(cy - my) <= r;
  }
  return double(close) / n;
}

/// Candidates that are mover m (track within 2.5 px for half the exposures).
std::vector<const Candidate*> matches(const SyntheticStack& s, const std::vector<Candidate>& cands, const Mover& m) {
  std::vector<const Candidate*> out;
  for (const auto& c : cands)
    if (overlap(s, c, m, 2.5) >= 0.5) out.push_back(&c);
  if (std::getenv("STACK_DEBUG"))
    for (const auto& c : cands)
      if (overlap(s, c, m, 4) > 0.2)
        qInfo("  mover (%.1f, %.1f, %.2f, %.2f): cand (%d, %d) v (%.2f, %.2f) Z %.2f obs %d members %d overlap2.5 %.2f overlap2 %.2f",
              m.x0, m.y0, m.vx, m.vy, c.x, c.y, c.vx, c.vy, c.z, c.obs, c.members, overlap(s, c, m, 2.5), overlap(s, c, m, 2.0));
  return out;
}

/// Poisson upper limit: the smallest k with P(N > k | mu) < alpha.
int poisson_upper(double mu, double alpha) {
  double p = std::exp(-mu), cdf = p;
  int k = 0;
  while (1.0 - cdf >= alpha) {
    ++k;
    p *= mu / k;
    cdf += p;
  }
  return k;
}

/// Poisson lower limit: the largest k with P(N < k | mu) < alpha.
int poisson_lower(double mu, double alpha) {
  double p = std::exp(-mu), cdf = 0;
  int k = 0;
  while (cdf + p < alpha) {
    cdf += p;
    ++k;
    p *= mu / k;
  }
  return k;
}

std::string tmp_dir(const std::string& name) {
  const char* base = std::getenv("ALMAGEST_TEST_TMP");
  fs::path d = fs::path(base ? base : fs::temp_directory_path().string()) / ("stack_candidates_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}


/// MJD of a calendar date (independent of the engine: days from 1858-11-17).
double mjd_of(int y, int m, double d) {
  const int a = (14 - m) / 12, yy = y + 4800 - a, mm = m + 12 * a - 3;
  const long jdn = long(std::floor(d)) + (153 * mm + 2) / 5 + 365L * yy + yy / 4 - yy / 100 + yy / 400 - 32045;
  return double(jdn) - 2400001.0 + (d - std::floor(d));
}

}  // namespace

class TestStackCandidates : public QObject {
  Q_OBJECT
private slots:
  void one_candidate_per_mover() {
    SyntheticConfig c = issue_stack(2401);
    c.movers = {Mover{30.3, 40.6, 3.1, -2.2, 9.0, 0}, Mover{90.2, 80.8, -4.4, 1.3, 10.5, 0}, Mover{60.1, 92.4, 0.8, 4.2, 12.0, 0}};
    const SyntheticStack syn = make_synthetic(c);
    const double step = 0.5;
    const StackOutcome o = search(syn, {{"vx-range", std::string("-6,6")}, {"vy-range", std::string("-6,6")},
                                        {"grid", std::string("25")}, {"threads", std::int64_t(2)}});
    QVERIFY(o.outputs.empty());
    const SearchResult& r = o.result;
    QVERIFY(r.filtered);
    const FilterReport& f = r.filters;
    qInfo("threshold %.3f: %zu hits -> %zu candidates (observations %zu, sigma-G %zu, merged %zu, stationary %zu, stamps %zu), "
          "filters %.3f s of scan %.3f s",
          r.threshold_z, f.input, f.output, f.observations, f.sigma_g, f.merged, f.stationary, f.stamps, f.seconds, r.scan_seconds);
    QVERIFY(f.input > 3 * r.candidates.size());  // the raw list has many rows per mover
    QCOMPARE(f.output, r.candidates.size());
    QCOMPARE(f.input, f.observations + f.sigma_g + f.merged + f.stationary + f.stamps + f.output);
    std::size_t movers_found = 0;
    for (const Mover& m : syn.movers) {
      const auto mm = matches(syn, r.candidates, m);
      QVERIFY2(mm.size() == 1, qPrintable(QString("mover SNR %1: %2 candidates").arg(m.snr).arg(mm.size())));
      const Candidate& b = *mm[0];
      const std::size_t i = std::size_t(&b - r.candidates.data());
      qInfo("mover SNR %.1f: Z %.2f (unclipped %.2f, %d epochs clipped) at (%d, %d) v (%.2f, %.2f), %d members, spread (%.3f, %.3f)",
            m.snr, b.z, r.groups[i].z_unclipped, r.groups[i].epochs_clipped, b.x, b.y, b.vx, b.vy, b.members, r.groups[i].vx_spread,
            r.groups[i].vy_spread);
      if (std::getenv("STACK_DEBUG"))
        for (const auto& mem : r.groups[i].members)
          if (mem.z > 9.0) qInfo("    member (%d, %d) v (%.2f, %.2f) Z %.2f", mem.x, mem.y, mem.vx, mem.vy, mem.z);
      // The velocity estimate of the merged group within one grid step of the truth; the grid
      // node of the best trajectory within two (the likelihood's top is flat over several nodes).
      qInfo("    velocity estimate (%.2f, %.2f), truth (%.2f, %.2f)", r.groups[i].vx_fit, r.groups[i].vy_fit, m.vx, m.vy);
      QVERIFY(std::fabs(r.groups[i].vx_fit - m.vx) <= step && std::fabs(r.groups[i].vy_fit - m.vy) <= step);
      QVERIFY(std::fabs(b.vx - m.vx) <= 2 * step + 1e-9 && std::fabs(b.vy - m.vy) <= 2 * step + 1e-9);
      QVERIFY(std::fabs(b.x - m.x0) <= 1.5 && std::fabs(b.y - m.y0) <= 1.5);
      QVERIFY(b.members > 1 && r.groups[i].members.size() + 1 <= std::size_t(b.members));
      QVERIFY(r.groups[i].vx_spread > 0 && r.groups[i].vx_spread < 3.0);
      // sigma-G leaves a real mover's score within 5% of the unclipped one.
      QVERIFY(std::fabs(b.z - r.groups[i].z_unclipped) <= 0.05 * r.groups[i].z_unclipped);
      ++movers_found;
    }
    const std::size_t others = r.candidates.size() - movers_found;
    qInfo("%zu other candidates (false-alarm budget 1)", others);
    QVERIFY(others <= std::size_t(poisson_upper(1.0, 0.005)));
    // Every filter's count is in the summary line the CLI and the GUI log.
    bool logged = false;
    for (const auto& line : o.summary) logged |= line.find("by sigma-G") != std::string::npos;
    QVERIFY(logged);
  }

  void pure_noise_false_alarms() {
    // Bonferroni sets the threshold t so that the expected number of *trajectories* above it is
    // false_alarms per stack: N p(t) = fa with N = origins x velocities. But neighbouring
    // trajectories share most of their samples, so their Z are strongly correlated and exceed t
    // together, in clumps: the distinct false alarms (the candidates left after merging) are the
    // clumps, and their number is Poisson with mean lambda = N_eff p(t), N_eff < N the
    // effective number of independent trials (the Poisson clumping heuristic). N_eff is measured
    // here from the maxima of the same stacks: P(max Z <= z) = exp(-N_eff p(z)), so N_eff p(max Z)
    // is Exp(1) and N_eff = S / sum_s p(max Z_s) (maximum likelihood; its 99.8% interval from
    // sum_s p(max Z_s) ~ Gamma(S, 1 / N_eff)). The candidates of the S stacks (merging only: the
    // sigma-G and stamp filters remove noise clumps besides) must lie in the Poisson interval of
    // S N_eff p(t), with the interval of N_eff folded in; the Bonferroni count S fa is an upper
    // bound that correlated trials do not reach.
    const double fa = 2.0;
    const int stacks = 16;
    std::size_t cands = 0;
    std::uint64_t above = 0;
    double sum_u = 0, trials = 0, p_thr = 0;
    for (int k = 0; k < stacks; ++k) {
      SyntheticConfig c;
      c.n_exp = 40;
      c.width = 64;
      c.height = 64;
      c.seed = 9100 + k;
      c.baseline_days = 2.0;
      const SyntheticStack syn = make_synthetic(c);
      const StackOutcome o = search(syn, {{"vx-range", std::string("-5,5")}, {"vy-range", std::string("-5,5")},
                                          {"grid", std::string("11")}, {"false-alarms", fa}, {"threads", std::int64_t(2)},
                                          {"no-sigma-g", true}, {"no-stamp-filter", true}});
      cands += o.result.candidates.size();
      above += o.result.digest.count_above;
      sum_u += 0.5 * std::erfc(o.result.digest.max_z / std::sqrt(2.0));
      trials = double(o.result.width) * o.result.height * double(o.result.n_vel);
      p_thr = 0.5 * std::erfc(o.result.threshold_z / std::sqrt(2.0));
    }
    QVERIFY(std::fabs(trials * p_thr - fa) < 1e-3 * fa);  // the Bonferroni threshold
    // Gamma(S, 1) quantiles by the Wilson-Hilferty approximation (z = 3.09: 0.1% each side).
    auto gamma_q = [](double k, double z) { return k * std::pow(1.0 - 1.0 / (9 * k) + z * std::sqrt(1.0 / (9 * k)), 3.0); };
    const double neff = stacks / sum_u, neff_lo = gamma_q(stacks, -3.09) / sum_u, neff_hi = gamma_q(stacks, 3.09) / sum_u;
    const double mu = stacks * neff * p_thr, mu_lo = stacks * neff_lo * p_thr, mu_hi = stacks * neff_hi * p_thr;
    const int lo = poisson_lower(mu_lo, 0.001), hi = poisson_upper(mu_hi, 0.001);
    qInfo("pure noise, %d stacks: N = %.0f trials, N_eff = %.0f [%.0f, %.0f] (%.1f%% of N); %llu trajectories above "
          "threshold (Bonferroni %.0f), %zu candidates, expected %.2f [%.2f, %.2f] -> Poisson interval [%d, %d]",
          stacks, trials, neff, neff_lo, neff_hi, 100 * neff / trials, static_cast<unsigned long long>(above), stacks * fa, cands,
          mu, mu_lo, mu_hi, lo, hi);
    QVERIFY2(neff_hi < trials, "the trials are correlated: fewer effective trials than trajectories");
    QVERIFY(int(cands) >= lo && int(cands) <= hi);
    QVERIFY(cands <= above);
    QVERIFY(int(cands) <= poisson_upper(fa * stacks, 0.001));
  }

  void crossing_movers_both_kept() {
    SyntheticConfig c = issue_stack(2402);
    c.n_exp = 60;
    c.width = 96;
    c.height = 96;
    c.common_curve = false;
    // Both at (48, 48) at t = 1 d.
    c.movers = {Mover{36.0, 48.0, 12.0, 0.0, 11.0, 0}, Mover{48.0, 36.0, 0.0, 12.0, 11.0, 0}};
    const SyntheticStack syn = make_synthetic(c);
    const StackOutcome o = search(syn, {{"vx-range", std::string("-14,14")}, {"vy-range", std::string("-14,14")},
                                        {"grid", std::string("29")}, {"threads", std::int64_t(2)}});
    qInfo("crossing: %zu hits -> %zu candidates", o.result.filters.input, o.result.candidates.size());
    for (const Mover& m : syn.movers) {
      const auto mm = matches(syn, o.result.candidates, m);
      QVERIFY2(mm.size() == 1, qPrintable(QString("mover v (%1, %2): %3 candidates").arg(m.vx).arg(m.vy).arg(mm.size())));
      QVERIFY(std::fabs(mm[0]->vx - m.vx) <= 1.0 + 1e-9 && std::fabs(mm[0]->vy - m.vy) <= 1.0 + 1e-9);
    }
  }

  void mover_next_to_a_star() {
    SyntheticConfig c = issue_stack(2403);
    c.n_exp = 60;
    c.width = 96;
    c.height = 96;
    c.common_curve = false;
    // The mover starts 7 px from the star and moves away from it.
    c.movers = {Mover{54.5, 47.5, 6.0, 2.0, 11.0, 0}};
    c.stars = {StaticSource{47.5, 47.5, 1500.0}};  // ~ SNR 30 per exposure
    const SyntheticStack syn = make_synthetic(c);
    const StackOutcome o = search(syn, {{"vx-range", std::string("-8,8")}, {"vy-range", std::string("-8,8")},
                                        {"grid", std::string("17")}, {"threads", std::int64_t(2)}});
    const SearchResult& r = o.result;
    qInfo("star: %zu hits -> %zu candidates (merged %zu, stationary %zu, sigma-G %zu, stamps %zu)", r.filters.input,
          r.candidates.size(), r.filters.merged, r.filters.stationary, r.filters.sigma_g, r.filters.stamps);
    QVERIFY(r.filters.input > 20);  // the star lights up many trajectories
    QVERIFY(r.filters.stationary >= 1);
    const auto mm = matches(syn, r.candidates, syn.movers[0]);
    QCOMPARE(mm.size(), std::size_t(1));
    // No candidate is the star: none stays within 3 px of it for a fifth of the exposures.
    const Mover star{47.5, 47.5, 0, 0, 0, 0};
    for (const auto& cand : r.candidates) {
      if (&cand == mm[0]) continue;
      QVERIFY2(overlap(syn, cand, star, 3.0) < 0.2, qPrintable(QString("candidate at (%1, %2) v (%3, %4) Z %5 is the star")
                                                                   .arg(cand.x).arg(cand.y).arg(cand.vx).arg(cand.vy).arg(cand.z)));
    }
    QVERIFY(r.candidates.size() <= 1 + std::size_t(poisson_upper(1.0, 0.005)));
  }

  void sigma_g_removes_a_one_exposure_spot() {
    SyntheticConfig c = issue_stack(2404);
    c.width = 64;
    c.height = 64;
    c.common_curve = false;
    c.movers = {Mover{20.0, 30.0, 5.0, 2.0, 10.0, 0}};
    const SyntheticStack clean = make_synthetic(c);
    // One exposure with a bright spot (SNR ~ 40) on the track, and a lone cosmic ray elsewhere.
    const int e = 37;
    double sx = 0, sy = 0;
    mover_at(clean, clean.movers[0], e, sx, sy);
    c.spots = {Spot{e, sx, sy, 2000.0}, Spot{11, 48.0, 12.0, 3000.0}};
    const SyntheticStack spotted = make_synthetic(c);
    const schema::Values v = {{"vx-range", std::string("-6,6")}, {"vy-range", std::string("-6,6")}, {"grid", std::string("13")},
                              {"threads", std::int64_t(2)}};
    schema::Values off = v;
    off["no-sigma-g"] = true;
    off["no-stamp-filter"] = true;
    const StackOutcome ref = search(clean, off);
    const StackOutcome raw = search(spotted, off);
    const StackOutcome clip = search(spotted, v);
    auto best = [&](const StackOutcome& o) -> const Candidate* {
      const auto mm = matches(spotted, o.result.candidates, spotted.movers[0]);
      return mm.size() == 1 ? mm[0] : nullptr;
    };
    const Candidate *a = best(ref), *b = best(raw), *k = best(clip);
    qInfo("matches: clean %zu, spot unclipped %zu, spot clipped %zu", matches(spotted, ref.result.candidates, spotted.movers[0]).size(),
          matches(spotted, raw.result.candidates, spotted.movers[0]).size(), matches(spotted, clip.result.candidates, spotted.movers[0]).size());
    QVERIFY(a && b && k);
    qInfo("mover Z: clean %.3f, with the spot %.3f unclipped, %.3f clipped", a->z, b->z, k->z);
    QVERIFY(b->z > a->z + 2.0);                         // the spot inflates the unclipped score
    QVERIFY(std::fabs(k->z - a->z) <= 0.2 * a->z);     // the list's candidate is near the clean score again
    // On the true trajectory itself, clipping gives back the clean score to 5%.
    {
      const SearchPlan& plan = *clip.search_plan;
      std::size_t v = 0;
      for (std::size_t i = 0; i < plan.config().bank.size(); ++i)
        if (plan.config().bank.vx[i] == a->vx && plan.config().bank.vy[i] == a->vy) v = i;
      std::vector<float> ca(spotted.stack.size()), cb(spotted.stack.size());
      trajectory_curve(*clip.psiphi, plan.shifts(), {}, a->x, a->y, int(v), ca.data(), cb.data());
      const auto keep = sigma_g_keep(ca.data(), cb.data(), int(ca.size()), FilterConfig{});
      double A = 0, B = 0;
      for (std::size_t e2 = 0; e2 < ca.size(); ++e2)
        if (keep[e2]) A += ca[e2], B += cb[e2];
      qInfo("true trajectory: clipped Z %.3f (clean %.3f), spot exposure kept: %d", A / std::sqrt(B), a->z, int(keep[e]));
      QCOMPARE(int(keep[e]), 0);
      QVERIFY(std::fabs(A / std::sqrt(B) - a->z) <= 0.05 * a->z);
    }
    // The lone cosmic ray gives candidates without sigma-G and none with it.
    const Mover ray{48.0, 12.0, 0, 0, 0, 0};
    auto at_ray = [&](const StackOutcome& o) {
      int n = 0;
      for (const auto& cand : o.result.candidates) {
        const int ne = int(spotted.stack.size());
        const double t = spotted.stack.mjd[11] - spotted.stack.mjd[0];
        (void)ne;
        n += std::fabs(cand.x + cand.vx * t - ray.x0) <= 1.5 && std::fabs(cand.y + cand.vy * t - ray.y0) <= 1.5;
      }
      return n;
    };
    qInfo("cosmic ray: %d candidates without sigma-G, %d with (sigma-G removed %zu)", at_ray(raw), at_ray(clip), clip.result.filters.sigma_g);
    QVERIFY(at_ray(raw) >= 1);
    QCOMPARE(at_ray(clip), 0);
  }

  void stamp_filter_rejects_single_exposure_flux() {
    // Without sigma-G, the stamp filter alone removes the cosmic ray's trajectories: their
    // median stamp holds no source.
    SyntheticConfig c = issue_stack(2405);
    c.width = 64;
    c.height = 64;
    c.common_curve = false;
    c.movers = {Mover{20.0, 30.0, 5.0, 2.0, 11.0, 0}};
    c.spots = {Spot{11, 48.0, 12.0, 3000.0}};
    const SyntheticStack syn = make_synthetic(c);
    // Without sigma-G and without merging: every trajectory through the ray is a candidate.
    const schema::Values v = {{"vx-range", std::string("-6,6")}, {"vy-range", std::string("-6,6")}, {"grid", std::string("13")},
                              {"threads", std::int64_t(2)}, {"no-sigma-g", true}, {"no-cluster", true}};
    schema::Values none = v;
    none["no-stamp-filter"] = true;
    const StackOutcome o = search(syn, v), u = search(syn, none);
    auto at_ray = [&](const StackOutcome& x) {
      int k = 0;
      const double t = syn.stack.mjd[11] - syn.stack.mjd[0];
      for (const auto& cand : x.result.candidates)
        k += std::fabs(cand.x + cand.vx * t - 48.0) <= 1.5 && std::fabs(cand.y + cand.vy * t - 12.0) <= 1.5;
      return k;
    };
    qInfo("stamp filter removed %zu of %zu; cosmic-ray candidates %d without it, %d with it", o.result.filters.stamps,
          o.result.filters.input, at_ray(u), at_ray(o));
    QVERIFY(o.result.filters.stamps >= 1);
    QCOMPARE(u.result.filters.stamps, std::size_t(0));
    QVERIFY(at_ray(o) * 2 < at_ray(u));
    QVERIFY(!matches(syn, o.result.candidates, syn.movers[0]).empty());
  }

  void fractional_mode() {
    // Narrow seeing makes the nearest-pixel rounding cost signal.
    SyntheticConfig c;
    c.n_exp = 60;
    c.width = 48;
    c.height = 48;
    c.seed = 2406;
    c.baseline_days = 2.0;
    c.seeing_min = 0.7;
    c.seeing_max = 0.9;
    c.common_curve = false;
    c.bad_column = false;
    const double vx = 3.37, vy = -2.21;
    c.movers = {Mover{14.0, 30.0, vx, vy, 15.0, 0}};
    const SyntheticStack syn = make_synthetic(c);
    const ExposureStack& st = syn.stack;
    const PsiPhi p = compute_psiphi(st, JobContext{});
    SearchConfig cfg;
    cfg.bank = TrajectoryBank::list({vx}, {vy});
    cfg.threshold_z = 0.01;
    cfg.cluster.enabled = false;
    cfg.dense = true;
    const SearchResult ri = make_plan(cfg, p.mjd, p.width, p.height, JobContext{}).execute(encode(p, Encoding::Fp32), JobContext{});
    cfg.fractional = true;
    cfg.psf_rho = psf_correlations(st);
    const SearchPlan fplan = make_plan(cfg, p.mjd, p.width, p.height, JobContext{});
    const SearchResult rf = fplan.execute(encode(p, Encoding::Fp32), JobContext{});
    const std::size_t at = std::size_t(30) * 48 + 14;
    const double zi = ri.dense_a[at] / std::sqrt(ri.dense_b[at]), zf = rf.dense_a[at] / std::sqrt(rf.dense_b[at]);
    qInfo("true trajectory: integer Z %.3f, fractional Z %.3f (gain %.2f%%)", zi, zf, 100 * (zf / zi - 1));
    QVERIFY(zf > zi * 1.01);

    // Independent oracle of the fractional sums: bilinear weights, PSF autocorrelation from the
    // Gaussian kernels directly.
    double max_rel = 0;
    for (int y = 5; y < 48; y += 7)
      for (int x = 3; x < 48; x += 5) {
        double A = 0, B = 0;
        for (int e = 0; e < p.n; ++e) {
          const double t = p.mjd[e] - p.mjd[0];
          const double ox = vx * t, oy = vy * t, fx = std::floor(ox), fy = std::floor(oy);
          const double wx = ox - fx, wy = oy - fy;
          const Psf& k = st.psf[e];
          const int R = k.size / 2;
          auto K = [&](int u, int v) { return std::abs(u) > R || std::abs(v) > R ? 0.0 : double(k.kernel[(v + R) * k.size + (u + R)]); };
          auto rho = [&](int du, int dv) {
            double s = 0, s0 = 0;
            for (int v = -R; v <= R; ++v)
              for (int u = -R; u <= R; ++u) {
                s += K(u, v) * K(u + du, v + dv);
                s0 += K(u, v) * K(u, v);
              }
            return s / s0;
          };
          const int px[4] = {0, 1, 0, 1}, py[4] = {0, 0, 1, 1};
          double w[4] = {(1 - wx) * (1 - wy), wx * (1 - wy), (1 - wx) * wy, wx * wy}, ps[4], ph[4];
          for (int q = 0; q < 4; ++q) {
            const int xx = x + int(fx) + px[q], yy = y + int(fy) + py[q];
            const bool in = xx >= 0 && xx < 48 && yy >= 0 && yy < 48;
            ps[q] = in ? p.psi[std::size_t(e) * p.pixels() + std::size_t(yy) * 48 + xx] : 0.0;
            ph[q] = in ? p.phi[std::size_t(e) * p.pixels() + std::size_t(yy) * 48 + xx] : 0.0;
          }
          for (int q = 0; q < 4; ++q) {
            A += w[q] * ps[q];
            for (int l = 0; l < 4; ++l) B += w[q] * w[l] * rho(px[l] - px[q], py[l] - py[q]) * std::sqrt(ph[q] * ph[l]);
          }
        }
        const std::size_t i = std::size_t(y) * 48 + x;
        max_rel = std::max(max_rel, std::fabs(rf.dense_a[i] - A) / std::sqrt(B));
        max_rel = std::max(max_rel, std::fabs(rf.dense_b[i] - B) / B);
        const TrajectorySums ts = evaluate_trajectory(p, fplan.shifts(), x, y, 0, cfg.psf_rho);
        QCOMPARE(ts.a, rf.dense_a[i]);
        QCOMPARE(ts.b, rf.dense_b[i]);
      }
    qInfo("fractional sums vs the oracle: max relative difference %.2e", max_rel);
    QVERIFY(max_rel < 1e-5);

    // Null calibration: on noise, fractional Z has unit variance (B is the variance of A).
    SyntheticConfig nc = c;
    nc.movers.clear();
    nc.seed = 2407;
    const SyntheticStack noise = make_synthetic(nc);
    const PsiPhi pn = compute_psiphi(noise.stack, JobContext{});
    SearchConfig ncfg = cfg;
    ncfg.bank = TrajectoryBank::cartesian(-3, 3, 4, -3, 3, 4);
    ncfg.psf_rho = psf_correlations(noise.stack);
    const SearchResult rn = make_plan(ncfg, pn.mjd, pn.width, pn.height, JobContext{}).execute(encode(pn, Encoding::Fp32), JobContext{});
    double s1 = 0, s2 = 0;
    std::size_t cnt = 0;
    for (std::size_t i = 0; i < rn.dense_a.size(); ++i)
      if (rn.dense_obs[i] >= 40) {
        const double z = rn.dense_a[i] / std::sqrt(rn.dense_b[i]);
        s1 += z;
        s2 += z * z;
        ++cnt;
      }
    const double sd = std::sqrt(s2 / cnt - (s1 / cnt) * (s1 / cnt));
    qInfo("fractional null: %zu trajectories, Z SD %.4f", cnt, sd);
    QVERIFY(sd > 0.95 && sd < 1.05);

    // Through the job layer: shifts fractional finds the mover with a higher score.
    schema::Values v = {{"vx-range", std::string("-4,4")}, {"vy-range", std::string("-4,4")}, {"grid", std::string("17")},
                        {"threads", std::int64_t(2)}};
    const StackOutcome oi = search(syn, v);
    v["shifts"] = std::string("fractional");
    const StackOutcome of = search(syn, v);
    const auto mi = matches(syn, oi.result.candidates, syn.movers[0]), mf = matches(syn, of.result.candidates, syn.movers[0]);
    qInfo("integer: %s", oi.result.filters.summary().c_str());
    qInfo("fractional: %s", of.result.filters.summary().c_str());
    QCOMPARE(mi.size(), std::size_t(1));
    QCOMPARE(mf.size(), std::size_t(1));
    qInfo("job layer, 17 x 17 grid: integer Z %.3f, fractional Z %.3f", mi[0]->z, mf[0]->z);
    QVERIFY(mf[0]->z > mi[0]->z);
  }

  void ades_and_mpc_round_trip() {
    SyntheticConfig c = issue_stack(2408);
    c.n_exp = 30;
    c.width = 64;
    c.height = 64;
    c.movers = {Mover{20.0, 30.0, 5.0, 2.0, 12.0, 0}, Mover{40.0, 20.0, -3.0, 6.0, 12.0, 0}};
    SyntheticStack syn = make_synthetic(c);
    syn.stack.wcs_header = almagest::test::tan_cards(0.001, -0.002, 0.4, 64, 64);  // RA wraps and Dec changes sign nearby
    const std::string dir = tmp_dir("ades");
    const std::string ades = dir + "/obs.psv", mpc = dir + "/obs.mpc";
    const StackOutcome o = search(syn, {{"vx-range", std::string("-6,6")}, {"vy-range", std::string("-6,6")},
                                        {"grid", std::string("13")}, {"threads", std::int64_t(2)}, {"ades", ades},
                                        {"mpc", mpc}, {"station", std::string("I41")}});
    QCOMPARE(o.outputs.size(), std::size_t(2));
    const auto det = describe_candidates(o.result, *o.search_plan, syn.stack, *o.psiphi, 0, JobContext{});
    QVERIFY(det.size() >= 2);
    const double ref = o.search_plan->reference_mjd();
    ObservationOptions opt;
    // ADES PSV: header, columns, one row per valid epoch.
    std::ifstream in(ades);
    std::string line;
    std::getline(in, line);
    QCOMPARE(line, std::string("# version=2022"));
    std::vector<std::string> cols;
    std::size_t rows = 0;
    double worst_t = 0, worst_p = 0;
    std::map<std::string, std::size_t> seen;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#' || line[0] == '!') continue;
      std::vector<std::string> f;
      std::stringstream ss(line);
      std::string cell;
      while (std::getline(ss, cell, '|')) f.push_back(cell);
      if (line.back() == '|') f.push_back("");
      if (cols.empty()) {
        cols = f;
        QCOMPARE(cols[2], std::string("trkSub"));
        QCOMPARE(cols[5], std::string("obsTime"));
        continue;
      }
      QCOMPARE(f.size(), cols.size());
      QCOMPARE(f[3], std::string("CCD"));
      QCOMPARE(f[4], std::string("I41"));
      // Candidate by trkSub, exposure by time.
      std::size_t ci = det.size();
      for (std::size_t i = 0; i < det.size(); ++i)
        if (track_id(i, opt) == f[2]) ci = i;
      QVERIFY(ci < det.size());
      int Y, M, D, h, mi;
      double s;
      QCOMPARE(std::sscanf(f[5].c_str(), "%d-%d-%dT%d:%d:%lfZ", &Y, &M, &D, &h, &mi, &s), 6);
      const double mjd = mjd_of(Y, M, D) + (h * 3600 + mi * 60 + s) / 86400.0;
      std::size_t e = 0;
      for (std::size_t k = 1; k < det[ci].t.size(); ++k)
        if (std::fabs(ref + det[ci].t[k] - mjd) < std::fabs(ref + det[ci].t[e] - mjd)) e = k;
      QVERIFY(det[ci].valid[e]);
      worst_t = std::max(worst_t, std::fabs(ref + det[ci].t[e] - mjd));
      const double ra = std::stod(f[6]), dec = std::stod(f[7]);
      double dra = std::fabs(ra - det[ci].ra[e]);
      dra = std::min(dra, 360.0 - dra);
      worst_p = std::max({worst_p, dra, std::fabs(dec - det[ci].dec[e])});
      ++rows;
      ++seen[f[2]];
    }
    std::size_t valid = 0;
    for (const auto& d : det)
      for (auto v : d.valid) valid += v;
    QCOMPARE(rows, valid);
    QCOMPARE(seen.size(), det.size());
    qInfo("ADES: %zu rows; worst time %.2e d, worst position %.2e deg", rows, worst_t, worst_p);
    QVERIFY(worst_t <= 0.5e-3 / 86400 + 1e-9);
    QVERIFY(worst_p <= 1e-9);

    // MPC 80-column: the same rows.
    std::ifstream im(mpc);
    std::size_t mrows = 0;
    double mt = 0, mra = 0, mdec = 0;
    while (std::getline(im, line)) {
      QCOMPARE(line.size(), std::size_t(80));
      QCOMPARE(line[14], 'C');
      QCOMPARE(line.substr(77, 3), std::string("I41"));
      const std::string id = line.substr(5, 7);
      std::size_t ci = det.size();
      for (std::size_t i = 0; i < det.size(); ++i)
        if (track_id(i, opt).substr(0, 7) == id) ci = i;
      QVERIFY(ci < det.size());
      int Y = 0, M = 0, rh = 0, rm = 0, dd = 0, dm = 0;
      double D = 0, rs = 0, ds = 0;
      QCOMPARE(std::sscanf(line.substr(15, 17).c_str(), "%d %d %lf", &Y, &M, &D), 3);
      QCOMPARE(std::sscanf(line.substr(32, 12).c_str(), "%d %d %lf", &rh, &rm, &rs), 3);
      const std::string decs = line.substr(44, 12);
      QCOMPARE(std::sscanf(decs.c_str() + 1, "%d %d %lf", &dd, &dm, &ds), 3);
      const double mjd = mjd_of(Y, M, D);
      const double ra = 15.0 * (rh + rm / 60.0 + rs / 3600.0);
      const double dec = (decs[0] == '-' ? -1 : 1) * (dd + dm / 60.0 + ds / 3600.0);
      std::size_t e = 0;
      for (std::size_t k = 1; k < det[ci].t.size(); ++k)
        if (std::fabs(ref + det[ci].t[k] - mjd) < std::fabs(ref + det[ci].t[e] - mjd)) e = k;
      mt = std::max(mt, std::fabs(ref + det[ci].t[e] - mjd));
      double dra = std::fabs(ra - det[ci].ra[e]);
      dra = std::min(dra, 360.0 - dra);
      mra = std::max(mra, dra * std::cos(dec * 3.14159265358979 / 180) * 3600);
      mdec = std::max(mdec, std::fabs(dec - det[ci].dec[e]) * 3600);
      ++mrows;
    }
    qInfo("MPC: %zu lines; worst time %.2e d, RA %.4f arcsec, Dec %.4f arcsec", mrows, mt, mra, mdec);
    QCOMPARE(mrows, valid);
    QVERIFY(mt <= 0.5e-6 + 1e-9);
    QVERIFY(mra <= 0.0076 && mdec <= 0.0051);
  }

  void job_api_memory_stack_and_no_output() {
    // Without the options a search still needs a stack file and an output.
    jobs::JobRequest req;
    req.engine = "stack";
    req.values = {{"op", std::string("search")}, {"vx-range", std::string("-1,1")}, {"vy-range", std::string("-1,1")}};
    try {
      (void)make_stack_job(req);
      QFAIL("a search without stack and output was accepted");
    } catch (const ConfigError& e) {
      const std::string m = e.what();
      QVERIFY2(m.find("--stack: is required") != std::string::npos && m.find("--output: is required") != std::string::npos, e.what());
    }
    MakeStackOptions mo;
    mo.stack_in_memory = true;
    mo.output_optional = true;
    const StackJob job = make_stack_job(req, mo);
    QVERIFY(job.output_paths().empty());
    QVERIFY(job.input_paths().empty());
    // Run without StackInputs: the missing stack is named.
    try {
      (void)run_stack_job(job, JobContext{}, jobs::RunOptions{});
      QFAIL("ran without a stack");
    } catch (const ConfigError& e) {
      QVERIFY2(std::string(e.what()).find("stack") != std::string::npos, e.what());
    }
    // Stamps always write a file.
    jobs::JobRequest st = req;
    st.values = {{"op", std::string("stamps")}, {"candidates", std::string("c.ecsv")}};
    QVERIFY_THROWS_EXCEPTION(ConfigError, make_stack_job(st, mo));
    // Bad filter values get the schema's message.
    jobs::JobRequest bad = req;
    bad.values["sigma-g-percentiles"] = std::string("75,25");
    bad.values["cluster-overlap"] = 0.0;
    try {
      (void)make_stack_job(bad, mo);
      QFAIL("bad filter values accepted");
    } catch (const ConfigError& e) {
      const std::string m = e.what();
      QVERIFY2(m.find("sigma-g-percentiles") != std::string::npos && m.find("cluster-overlap") != std::string::npos, e.what());
    }
  }
};

QTEST_APPLESS_MAIN(TestStackCandidates)
#include "test_stack_candidates.moc"
