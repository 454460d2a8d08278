#pragma once
// Shift-and-stack search: configuration, plan, result.
//
//   SearchConfig cfg;  cfg.bank = TrajectoryBank::cartesian(...);  cfg.backend = Backend::GpuTiled;
//   cfg.check();                                        // ConfigError listing every problem
//   SearchPlan plan = make_plan(cfg, psiphi.mjd, psiphi.width, psiphi.height, ctx);
//   SearchResult r = plan.execute(encoded_psiphi, ctx); // again and again
//
// For every origin pixel (x0, y0) and velocity v of the bank (shifts from bank.hpp):
//   A = sum_e psi_e(x0 + sx[v][e], y0 + sy[v][e]),  B = sum_e phi_e(...),  obs = #valid samples,
// samples outside the image or invalid add nothing. Z = A / sqrt(B) where B > 0, else 0;
// flux = A / B. Each per-trajectory sum runs over exposures in index order in float32 on every
// gather backend, so CPU and GPU gathers give bit-identical A, B, obs.
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "almagest/core/job_context.hpp"
#include "almagest/core/provenance.hpp"
#include "almagest/stack/bank.hpp"
#include "almagest/stack/exposure_stack.hpp"
#include "almagest/stack/psiphi.hpp"

namespace almagest::stack {

enum class Backend {
  Cpu,         ///< multithreaded CPU twin, the oracle
  GpuGather,   ///< one origin per thread, global-memory gathers
  GpuTiled,    ///< origin tile x velocity packet, staged in shared memory
  GpuFourier,  ///< tensor-core separable-phase Fourier path (Cartesian banks, threshold mode)
};
std::string to_string(Backend b);
Backend parse_backend(const std::string& s, const std::string& field = "backend");

enum class ResultMode { Threshold, TopK };

/// Near-duplicate clustering: in descending Z order, a candidate whose predicted positions at
/// the first and the last exposure time both lie within radius_px (max norm) of a kept
/// candidate's is merged into it (members + 1).
struct ClusterConfig {
  bool enabled = true;
  double radius_px = 3.0;  ///< the job's cluster-radius default (stack/filters.hpp's duplicates)
};

/// Largest trajectory bank a search accepts (validate()): 2^22 = 4,194,304 velocities. The shift
/// tables hold n_vel x n_exp entries of each axis besides.
inline constexpr std::size_t kMaxBankVelocities = std::size_t{1} << 22;
/// Largest n_vel x n_exp of the shift tables (2^30 entries per axis: 4 GiB each).
inline constexpr std::uint64_t kMaxShiftEntries = std::uint64_t{1} << 30;

struct SearchConfig {
  TrajectoryBank bank;
  double reference_mjd = std::numeric_limits<double>::quiet_NaN();  ///< NaN: MJD of exposure 0
  std::vector<double> curve_dx, curve_dy;  ///< known common curve, pixels, [n_exp] or empty
  Encoding encoding = Encoding::Fp32;
  Backend backend = Backend::Cpu;
  ResultMode mode = ResultMode::Threshold;
  /// Bonferroni: the threshold is the one-sided Gaussian Z whose tail probability times the number
  /// of trials (origins x velocities) equals `false_alarms`. threshold_z > 0 overrides it.
  double false_alarms = 1.0;
  double threshold_z = 0.0;
  int top_k = 8;                      ///< TopK mode: best k velocities per origin (1..16)
  int min_obs = 1;                    ///< candidates need at least this many valid samples
  std::size_t max_candidates = 1000000;  ///< above-threshold hits kept (more: result.truncated)
  ClusterConfig cluster;
  bool dense = false;   ///< keep A, B, obs for every trajectory (small problems, tests)
  int threads = 0;      ///< CPU worker threads (0 = all)
  int device = 0;       ///< CUDA device index
  /// GPU backends: device bytes the stack planes may occupy (0 = the free memory). A larger stack
  /// is streamed (row bands for the scan, exposure chunks for the exact sums of candidates) with
  /// identical results; the Fourier backend needs the whole stack and reports that it does not fit.
  std::uint64_t device_memory_limit = 0;
  /// Sub-pixel motion: sample psi/phi bilinearly at the exact track position instead of the
  /// nearest pixel (cpu, gpu-gather and gpu-tiled, which runs the fractional gather then, with the
  /// CPU twin's float operations; not gpu-fourier; the integer mode stays the exact, fast
  /// default). With
  /// weights w_k on the four neighbours, A_e = sum_k w_k psi_k and B_e = sum_kl w_k w_l
  /// rho_e(k - l) sqrt(phi_k phi_l), the variance of A_e when psi is locally stationary
  /// (rho_e: the PSF's normalised autocorrelation, psf_rho), so Z stays calibrated.
  bool fractional = false;
  /// Fractional mode: per exposure [n_exp][4] the PSF autocorrelations rho(1,0), rho(0,1),
  /// rho(1,1), rho(1,-1) of K_e (psf_correlations() of the stack; the job fills them).
  std::vector<float> psf_rho;

  std::vector<std::string> validate() const;  ///< every problem, "field: message"
  void check() const;                         ///< throws ConfigError listing every problem
  std::string to_json() const;
};

/// Bonferroni threshold: Z with P(N(0,1) > Z) = false_alarms / trials.
double bonferroni_threshold(double false_alarms, double trials);

/// Digest of one scan (every origin x velocity).
struct Digest {
  double sum_a = 0, sum_b = 0;
  double max_z = 0;
  std::uint64_t count_above = 0;  ///< trajectories with Z >= threshold
};

struct Candidate {
  std::int32_t x = 0, y = 0, v = 0;  ///< origin pixel and bank index
  double vx = 0, vy = 0;             ///< pixels/day
  float a = 0, b = 0;                ///< exact sums (gather), also for the Fourier path
  std::int32_t obs = 0;
  double z = 0, flux = 0;
  std::int32_t members = 1;          ///< near-duplicates merged into this one by clustering
};

/// Candidates each post-search stage removed (stack/filters.hpp), in the log and the outputs' metadata.
struct FilterReport {
  std::size_t input = 0;               ///< candidates in (hits after the search's own cuts)
  std::size_t observations = 0, sigma_g = 0, merged = 0, stationary = 0, stamps = 0;
  std::size_t output = 0;
  double seconds = 0;
  std::string config_json;             ///< the FilterConfig applied
  std::string to_json() const;
  std::string summary() const;         ///< one log line
};

/// What filter_candidates() merged into a surviving candidate.
struct CandidateGroup {
  std::vector<Candidate> members;      ///< the merged candidates (after sigma-G), strongest first
  std::int32_t epochs_clipped = 0;     ///< epochs sigma-G removed from the survivor
  double vx_spread = 0, vy_spread = 0; ///< standard deviation of the velocities of survivor + members
  double vx_fit = 0, vy_fit = 0;       ///< mean velocity of survivor + members within 1 of its Z
  double z_unclipped = 0;              ///< the survivor's score before sigma-G
};

struct SearchResult {
  int width = 0, height = 0, n_exp = 0;
  std::size_t n_vel = 0;
  double threshold_z = 0;
  Digest digest;
  std::vector<Candidate> candidates;  ///< sorted by Z, descending (after clustering)
  std::size_t raw_hits = 0;           ///< hits before min_obs filtering and clustering
  bool truncated = false;             ///< more hits than max_candidates
  bool exact = true;                  ///< false for the FP16 tensor-core scores (candidates are re-scored exactly)
  std::string backend, device;
  /// dense mode: [n_vel][height][width]
  std::vector<float> dense_a, dense_b;
  std::vector<std::int32_t> dense_obs;  ///< -1 where the backend does not count (Fourier)
  double scan_seconds = 0;  ///< time of the search itself (device time for GPU backends)
  Provenance provenance;
  /// Set by filter_candidates(): the counts and, per candidate, what was merged into it.
  bool filtered = false;
  FilterReport filters;
  std::vector<CandidateGroup> groups;
};

class SearchPlan {
public:
  SearchPlan(SearchPlan&&) noexcept;
  SearchPlan& operator=(SearchPlan&&) noexcept;
  ~SearchPlan();

  /// Runs the search. Throws IoError if `input` does not match the plan's shape or MJDs,
  /// BackendUnavailable/CudaError for device problems, Cancelled when cancelled.
  SearchResult execute(const EncodedPsiPhi& input, const JobContext& ctx) const;

  const SearchConfig& config() const noexcept;
  const ShiftTable& shifts() const noexcept;
  double threshold() const noexcept;
  double reference_mjd() const noexcept;

private:
  friend SearchPlan make_plan(SearchConfig, const std::vector<double>&, int, int, const JobContext&);
  struct Impl;
  explicit SearchPlan(std::unique_ptr<Impl>);
  std::unique_ptr<Impl> impl_;
};

/// Validates the config against the stack shape, computes the shift tables and, for GPU
/// backends, checks the device (BackendUnavailable naming why).
SearchPlan make_plan(SearchConfig config, const std::vector<double>& mjd, int width, int height,
                     const JobContext& ctx);

// ---- CPU twin, exposed for tests and for re-scoring ------------------------------------------
struct TrajectorySums {
  float a = 0, b = 0;
  std::int32_t obs = 0;
};
/// Exact sums for one trajectory (origin x, y; bank index v) from decoded planes (fractional
/// when the table has fractional entries, with `rho` = SearchConfig::psf_rho).
TrajectorySums evaluate_trajectory(const PsiPhi& p, const ShiftTable& s, int x, int y, int v,
                                   const std::vector<float>& rho = {});
/// Per-exposure samples of one trajectory: a[e], b[e] (what A and B sum) and whether the epoch
/// was observed (b > 0). Integer or fractional as the table.
void trajectory_curve(const PsiPhi& p, const ShiftTable& s, const std::vector<float>& rho, int x, int y, int v,
                      float* a, float* b);

/// PSF autocorrelations of every exposure for the fractional mode: [n][4] = rho(1,0), rho(0,1),
/// rho(1,1), rho(1,-1) of the normalised kernel, rho(d) = sum K(p) K(p + d) / sum K^2.
std::vector<float> psf_correlations(const ExposureStack& stack);

}  // namespace almagest::stack
