// Shift-and-stack GPU self-test (see selftest.hpp).
#include "almagest/stack/selftest.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "almagest/core/error.hpp"
#include "almagest/core/schema.hpp"
#include "almagest/stack/psiphi.hpp"
#include "almagest/stack/search.hpp"
#include "almagest/stack/synthetic.hpp"

namespace almagest::stack {
namespace {

using Clock = std::chrono::steady_clock;

std::string fmt(const char* f, double a, double b = 0, double c = 0, double d = 0) {
  char buf[512];
  std::snprintf(buf, sizeof buf, f, a, b, c, d);
  return buf;
}

/// The seeded stack: narrow seeing (0.7-0.9 px) so that nearest-pixel rounding costs signal, one
/// mover at a non-integer velocity, masks, a moving bad column, a common curve.
struct Fixture {
  SyntheticConfig c;
  SyntheticStack syn;
  PsiPhi p;
  std::vector<float> rho;
  TrajectoryBank bank;
  static constexpr double vx = 3.37, vy = -2.21;
  static constexpr int x0 = 14, y0 = 30;
  explicit Fixture(const StackSelftestOptions& o) {
    c.n_exp = o.n_exp;
    c.width = 48;
    c.height = 48;
    c.seed = o.seed;
    c.baseline_days = 2.0;
    c.seeing_min = 0.7;
    c.seeing_max = 0.9;
    c.movers = {Mover{double(x0), double(y0), vx, vy, 12.0, 0}};
    syn = make_synthetic(c);
    p = compute_psiphi(syn.stack, JobContext{});
    rho = psf_correlations(syn.stack);
    // 9 x 9 grid of 0.25 px/d through the true velocity (steps of 0.5 px over the baseline)
    bank = TrajectoryBank::cartesian(vx - 1.0, vx + 1.0, 9, vy - 1.0, vy + 1.0, 9);
  }
  SearchResult run(Backend b, Encoding enc, bool fractional, bool dense, const JobContext& ctx) const {
    SearchConfig cfg;
    cfg.bank = bank;
    cfg.curve_dx = syn.curve_dx;
    cfg.curve_dy = syn.curve_dy;
    cfg.backend = b;
    cfg.encoding = enc;
    cfg.dense = dense;
    cfg.threshold_z = 5.0;
    cfg.cluster.enabled = false;
    cfg.min_obs = 0;
    cfg.fractional = fractional;
    if (fractional) cfg.psf_rho = rho;
    return make_plan(cfg, p.mjd, p.width, p.height, ctx).execute(encode(p, enc), ctx);
  }
  std::size_t true_index() const {
    std::size_t best = 0;
    double d = 1e300;
    for (std::size_t v = 0; v < bank.size(); ++v) {
      const double dd = std::hypot(bank.vx[v] - vx, bank.vy[v] - vy);
      if (dd < d) {
        d = dd;
        best = v;
      }
    }
    return best;
  }
};

class Checks {
public:
  Checks(SelftestReport& r, const JobContext& ctx) : r_(r), ctx_(ctx) {}
  template <class F>
  void run(const std::string& name, F&& f) {
    ctx_.check_cancel();
    const auto t0 = Clock::now();
    SelftestCheck c;
    c.name = name;
    try {
      auto [ok, detail] = f();
      c.passed = ok;
      c.detail = std::move(detail);
    } catch (const Cancelled&) {
      throw;
    } catch (const std::exception& e) {
      c.passed = false;
      c.detail = std::string("exception: ") + e.what();
    }
    c.detail += fmt(" (%.2f s)", std::chrono::duration<double>(Clock::now() - t0).count());
    r_.checks.push_back(std::move(c));
  }

private:
  SelftestReport& r_;
  const JobContext& ctx_;
};

}  // namespace

SelftestReport run_stack_gpu_selftest(const StackSelftestOptions& o, const JobContext& ctx) {
  const auto t0 = Clock::now();
  SelftestReport report = SelftestReport::for_current_gpu();
  if (!report.gpu_available || o.n_exp <= 0) return report;
  Checks checks(report, ctx);
  using Result = std::pair<bool, std::string>;
  const Fixture fx(o);
  const double tol = o.tolerance;

  // 1. dense sums of every trajectory, each method and storage, against the CPU twin
  for (Encoding enc : {Encoding::Fp32, Encoding::Fp16, Encoding::Int8}) {
    std::optional<SearchResult> cpu;
    for (Backend b : {Backend::GpuGather, Backend::GpuTiled}) {
      checks.run("stack fractional " + to_string(b) + " " + to_string(enc) + " dense vs cpu", [&]() -> Result {
        if (!cpu) cpu = fx.run(Backend::Cpu, enc, true, true, ctx);
        const SearchResult g = fx.run(b, enc, true, true, ctx);
        if (g.dense_a.size() != cpu->dense_a.size()) return {false, "dense sizes differ"};
        double da = 0, db = 0;
        std::size_t same = 0, obs_diff = 0;
        for (std::size_t i = 0; i < g.dense_a.size(); ++i) {
          const double a = cpu->dense_a[i], bb = cpu->dense_b[i];
          da = std::max(da, std::fabs(double(g.dense_a[i]) - a) / (std::fabs(a) + std::sqrt(std::max(0.0, bb)) + 1e-30));
          db = std::max(db, std::fabs(double(g.dense_b[i]) - bb) / (bb + 1e-30));
          same += g.dense_a[i] == cpu->dense_a[i] && g.dense_b[i] == cpu->dense_b[i];
          obs_diff += g.dense_obs[i] != cpu->dense_obs[i];
        }
        const bool digest = std::fabs(g.digest.max_z - cpu->digest.max_z) <= tol * cpu->digest.max_z &&
                            std::fabs(g.digest.sum_b - cpu->digest.sum_b) <= tol * cpu->digest.sum_b;
        return {da <= tol && db <= tol && obs_diff == 0 && digest,
                fmt("%.0f trajectories, %.0f bit-identical, max rel dA %.2e, dB %.2e", double(g.dense_a.size()), double(same), da, db) +
                    fmt(", obs differ %.0f, maxZ %.6f vs %.6f", double(obs_diff), g.digest.max_z, cpu->digest.max_z)};
      });
    }
  }

  // 2. threshold scans (no dense output): the candidates and their exact re-scored sums
  for (Backend b : {Backend::GpuGather, Backend::GpuTiled}) {
    checks.run("stack fractional " + to_string(b) + " candidates vs cpu", [&]() -> Result {
      const SearchResult c = fx.run(Backend::Cpu, Encoding::Fp32, true, false, ctx);
      const SearchResult g = fx.run(b, Encoding::Fp32, true, false, ctx);
      bool same = c.candidates.size() == g.candidates.size() && !c.candidates.empty();
      double dz = 0;
      for (std::size_t i = 0; same && i < c.candidates.size(); ++i) {
        const Candidate &x = c.candidates[i], &y = g.candidates[i];
        same = x.x == y.x && x.y == y.y && x.v == y.v && x.obs == y.obs;
        dz = std::max(dz, std::fabs(x.z - y.z) / std::max(1e-30, std::fabs(x.z)));
      }
      return {same && dz <= tol && c.digest.count_above == g.digest.count_above,
              fmt("%.0f candidates vs %.0f on the cpu, max rel dZ %.2e, count above %.0f", double(g.candidates.size()),
                  double(c.candidates.size()), dz, double(g.digest.count_above))};
    });
  }

  // 3. the gain: Z of the true trajectory and best Z near the mover, fractional vs integer (GPU)
  checks.run("stack fractional snr gain over integer shifts", [&]() -> Result {
    const SearchResult ri = fx.run(Backend::GpuTiled, Encoding::Fp32, false, true, ctx);
    const SearchResult rf = fx.run(Backend::GpuTiled, Encoding::Fp32, true, true, ctx);
    const std::size_t np = std::size_t(fx.c.width) * fx.c.height, vt = fx.true_index();
    const std::size_t at = vt * np + std::size_t(Fixture::y0) * fx.c.width + Fixture::x0;
    auto z = [](const SearchResult& r, std::size_t i) { return r.dense_b[i] > 0 ? r.dense_a[i] / std::sqrt(double(r.dense_b[i])) : 0.0; };
    const double zi = z(ri, at), zf = z(rf, at);
    double bi = 0, bf = 0;
    for (std::size_t v = 0; v < fx.bank.size(); ++v)
      for (int y = Fixture::y0 - 2; y <= Fixture::y0 + 2; ++y)
        for (int x = Fixture::x0 - 2; x <= Fixture::x0 + 2; ++x) {
          const std::size_t i = v * np + std::size_t(y) * fx.c.width + x;
          bi = std::max(bi, z(ri, i));
          bf = std::max(bf, z(rf, i));
        }
    return {zf > zi * 1.01 && bf > bi,
            fmt("true trajectory Z %.3f (integer) -> %.3f (fractional), gain %+.2f%%", zi, zf, 100 * (zf / zi - 1)) +
                fmt("; best near the mover %.3f -> %.3f, %+.2f%%", bi, bf, 100 * (bf / bi - 1))};
  });

  // 4. the Fourier method says it cannot
  checks.run("stack fractional refused by gpu-fourier", [&]() -> Result {
    try {
      fx.run(Backend::GpuFourier, Encoding::Fp32, true, false, ctx);
    } catch (const ConfigError& e) {
      const std::string w = e.what();
      return {w.find("whole pixels") != std::string::npos, "ConfigError: " + w};
    }
    return {false, "no error"};
  });
  report.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return report;
}

void register_selftest(SelftestRegistry& registry) {
  EngineSelftest t;
  t.engine = "stack";
  t.summary = "the shift-and-stack sub-pixel mode (gather and tiled methods, FP32/FP16/INT8) against the CPU twin, "
              "and its SNR gain over integer shifts";
  schema::Field f;
  f.key = "stack-exposures";
  f.kind = schema::Kind::Integer;
  f.value_name = "N";
  f.group = "Shift-and-stack";
  f.help = "Exposures of the seeded stack of the shift-and-stack check (0 skips it)";
  f.default_value = static_cast<std::int64_t>(StackSelftestOptions{}.n_exp);
  f.min = 0;
  f.max = 2000;
  t.options.fields.push_back(f);
  t.run = [options = t.options](const schema::Values& values, const JobContext& ctx) {
    schema::Reader r(options, values, "--");
    StackSelftestOptions o;
    o.n_exp = static_cast<int>(r.integer_or_default("stack-exposures"));
    r.throw_if_problems();
    return run_stack_gpu_selftest(o, ctx);
  };
  registry.add(std::move(t));
}

}  // namespace almagest::stack
