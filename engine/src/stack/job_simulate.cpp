// `simulate` of stack jobs: a synthetic exposure stack from the reference-workload recipe of the
// stack engine (almagest/stack/synthetic.hpp) scaled by the job, with injected movers, written as
// a KBMOD WorkUnit FITS file, an HDF5 cube or one FITS file per exposure, plus the truth table of
// the movers and the common curve: one OutputSet, so all appear together or not at all.
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <random>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/core/provenance.hpp"
#include "job_internal.hpp"

namespace almagest::stack::detail {

namespace {
constexpr double kPi = 3.14159265358979323846;
}

StackOutcome run_simulate(const StackJob& job, const JobContext& ctx, const jobs::RunOptions& options) {
  const SimulateJob& s = job.simulate;
  SyntheticConfig cfg = s.config;
  const std::string flag = job.label.empty() ? "--" : job.label;

  // Random movers: placed so that the whole track (with the common curve) stays inside the image.
  // The observation times and the curve come first in the generator's seeded sequence, so a 1 x 1
  // probe with the same seed gives them cheaply (checked against the real stack below).
  SyntheticConfig probe = cfg;
  probe.width = probe.height = 1;
  probe.holes = 0;
  probe.bad_column = false;
  probe.movers.clear();
  const SyntheticStack times = make_synthetic(probe);
  std::mt19937_64 rng(cfg.seed ^ 0x9E3779B97F4A7C15ull);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  const double margin = 3.0;
  for (int k = 0; k < s.random_movers; ++k) {
    const double dir = std::isnan(s.direction) ? 360.0 * U(rng) : s.direction;
    const double vx = s.speed * std::cos(dir * kPi / 180.0), vy = s.speed * std::sin(dir * kPi / 180.0);
    double xlo = 1e300, xhi = -1e300, ylo = 1e300, yhi = -1e300;
    for (std::size_t e = 0; e < times.stack.size(); ++e) {
      const double t = times.stack.mjd[e] - times.reference_mjd;
      xlo = std::min(xlo, vx * t + times.curve_dx[e]);
      xhi = std::max(xhi, vx * t + times.curve_dx[e]);
      ylo = std::min(ylo, vy * t + times.curve_dy[e]);
      yhi = std::max(yhi, vy * t + times.curve_dy[e]);
    }
    const double x0lo = margin - xlo, x0hi = cfg.width - 1 - margin - xhi, y0lo = margin - ylo, y0hi = cfg.height - 1 - margin - yhi;
    if (x0hi < x0lo || y0hi < y0lo)
      throw ConfigError(flag + "speed", fmt::format("a mover at {} pixels/day (direction {:.1f} deg) leaves the {} x {} image within the "
                                                    "{}-day baseline; lower --speed or --baseline, or enlarge the image",
                                                    s.speed, dir, cfg.width, cfg.height, cfg.baseline_days));
    cfg.movers.push_back(Mover{x0lo + U(rng) * (x0hi - x0lo), y0lo + U(rng) * (y0hi - y0lo), vx, vy, s.snr, 0.0});
  }

  auto syn = std::make_shared<SyntheticStack>(make_synthetic(cfg));
  ALMAGEST_ASSERT(syn->stack.mjd == times.stack.mjd && syn->curve_dx == times.curve_dx,
                  "synthetic probe times differ from the generated stack's");
  ctx.check_cancel();
  ExposureStack st = syn->stack;
  st.wcs_header = s.wcs_header;
  st.origin.clear();
  syn->stack.wcs_header = s.wcs_header;

  nlohmann::json meta = {{"command", "stack simulate"}, {"version", version()}, {"seed", cfg.seed}, {"exposures", cfg.n_exp},
                         {"width", cfg.width}, {"height", cfg.height}, {"baseline_days", cfg.baseline_days},
                         {"noise_sigma", cfg.noise_sigma}, {"noise_variation", cfg.noise_variation}, {"holes", cfg.holes},
                         {"bad_column", cfg.bad_column}, {"seeing", {cfg.seeing_min, cfg.seeing_max}},
                         {"common_curve", cfg.common_curve}, {"reference_mjd", syn->reference_mjd}, {"stack", job.output},
                         {"format", s.format}, {"curve_file", s.curve}, {"wcs", s.wcs_text},
                         {"job", nlohmann::json::parse(job.config_json())}};
  StackOutcome o;
  o.engine = "stack";
  o.operation = "simulate";
  o.backend = "cpu";
  o.threads = 1;
  if (options.write) {
    OutputSet set({}, ctx.token());
    OutputSet::Scope scope(set);
    if (s.format == "hdf5") write_stack_hdf5(job.output, st);
    else if (s.format == "workunit") write_workunit(job.output, st);
    else write_exposure_files(set.add(job.output, true), st);
    files::write_truth_ecsv(s.truth, syn->movers, meta.dump());
    if (!s.curve.empty()) files::write_common_curve(s.curve, syn->stack.mjd, syn->curve_dx, syn->curve_dy);
    set.commit();
    o.outputs = job.output_paths();
  }
  o.summary.push_back(fmt::format("wrote {} ({}: {} exposures of {} x {}, seed {}{})", job.output, s.format, cfg.n_exp, cfg.width,
                                  cfg.height, cfg.seed, s.wcs_header.empty() ? "" : ", TAN WCS"));
  o.summary.push_back(fmt::format("wrote {} ({} movers){}{}", s.truth, syn->movers.size(), s.curve.empty() ? "" : ", ", s.curve));
  for (std::size_t i = 0; i < syn->movers.size(); ++i) {
    const auto& m = syn->movers[i];
    o.summary.push_back(fmt::format("mover {}: x0 {:.3f}, y0 {:.3f}, vx {:.4f}, vy {:.4f} px/d, SNR {:.2f}, flux {:.4g}", i, m.x0, m.y0,
                                    m.vx, m.vy, m.snr, m.flux));
  }
  if (!options.write) o.summary.erase(o.summary.begin(), o.summary.begin() + 2);
  o.synthetic = syn;
  o.exposures = std::make_shared<const ExposureStack>(st);
  return o;
}

}  // namespace almagest::stack::detail
