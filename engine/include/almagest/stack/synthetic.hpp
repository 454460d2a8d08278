#pragma once
// Synthetic exposure stacks for tests, benchmarks and the demo (docs/stack.md, "reference
// workload"): Gaussian noise whose variance varies smoothly across the field and between
// exposures, random masked holes, a bad column that moves across the detector, variable seeing,
// irregular observation times, a common quadratic-plus-periodic track and injected movers.
#include <cstdint>
#include <vector>

#include "almagest/stack/bank.hpp"
#include "almagest/stack/exposure_stack.hpp"

namespace almagest::stack {

struct Mover {
  double x0 = 0, y0 = 0;  ///< position at the reference time (exposure 0), pixels
  double vx = 0, vy = 0;  ///< pixels/day (before the common curve)
  double snr = 8;         ///< stack SNR along the nearest-pixel track (used when flux <= 0)
  double flux = 0;        ///< total flux per exposure; filled in by the generator
};

/// A static source (star, galaxy): the same PSF-shaped flux in every exposure.
struct StaticSource {
  double x = 0, y = 0;   ///< pixels
  double flux = 0;       ///< total flux per exposure
};

/// A single-exposure artefact (cosmic ray, satellite glint): PSF-shaped flux in one exposure.
struct Spot {
  int exposure = 0;
  double x = 0, y = 0, flux = 0;
};

/// Limits of make_synthetic(): exposures, image side, and exposures x width x height (2^30
/// pixels: 9 GiB of science, variance and mask planes).
inline constexpr int kMaxSyntheticExposures = 100000;
inline constexpr int kMaxSyntheticSide = 65536;
inline constexpr std::uint64_t kMaxSyntheticSamples = std::uint64_t{1} << 30;

struct SyntheticConfig {
  int n_exp = 64, width = 64, height = 64;
  std::uint64_t seed = 1;
  double mjd0 = 60000.0;
  double baseline_days = 4.0;     ///< times in [0, baseline], irregular (sorted uniform draws)
  double noise_sigma = 10.0;      ///< typical per-pixel noise
  double noise_variation = 0.4;   ///< +-fraction of spatial/temporal variance variation
  int holes = 2;                  ///< masked holes per exposure
  double hole_radius = 2.5;       ///< pixels
  bool bad_column = true;         ///< one masked column, moving one pixel every few exposures
  double seeing_min = 1.0, seeing_max = 1.65;  ///< Gaussian PSF sigma range (pixels)
  double curve_quadratic = 6.0;   ///< common track: c * (t / baseline)^2 pixels in x (-2/3 c in y)
  double curve_amplitude = 1.5;   ///< plus amplitude * sin/cos(2 pi t / period) pixels
  double curve_period_days = 0.9;
  bool common_curve = true;
  std::vector<Mover> movers;
  std::vector<StaticSource> stars;  ///< added after the movers (no random draws: movers unchanged)
  std::vector<Spot> spots;
};

struct SyntheticStack {
  ExposureStack stack;
  std::vector<double> curve_dx, curve_dy;  ///< [n] the common track (pass to SearchConfig)
  std::vector<Mover> movers;               ///< with flux filled in
  double reference_mjd = 0;                ///< = mjd of exposure 0
};

/// Deterministic for a given config (seeded). Throws ConfigError on bad sizes.
SyntheticStack make_synthetic(const SyntheticConfig& cfg);

/// The note's reference workload: 1,024 exposures of 256 x 256, one SNR 8 mover.
SyntheticConfig reference_workload();
/// Velocity grid for a config: n x n velocities whose extreme shifts reach +-`reach_px` at the
/// end of the baseline (reference: 65 x 65, reach 32 px, i.e. one pixel per grid step).
TrajectoryBank reference_bank(const SyntheticConfig& cfg, int n = 65, double reach_px = 32.0);

}  // namespace almagest::stack
