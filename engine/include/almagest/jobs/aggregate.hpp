#pragma once
// Aggregation steps of a job file ([[aggregate]] tables, docs/jobs.md): statistics over the
// outputs of one batch's members, in batch order, written through one OutputSet with a
// provenance that lists every member file (relative to the job file) and a hash of the values
// taken from it. The output depends only on those values and the step's configuration -- no
// time stamp, no host, no absolute path -- so a re-run (after a resume, or in another folder)
// writes the same bytes.
//
//   kind = "npcf-mean-cov"     mean, unbiased sample covariance and the Hartlap factor of an
//                              N-point dataset (default "estimator") over realisations
//   kind = "npcf-parity"       parity pulls z = mean / sigma_mean of the odd channel (zeta_odd)
//                              per configuration, chi^2 and dof
//   kind = "cl-mean-cov"       mean and covariance of C_l over maps (sht cl outputs)
//   kind = "merge-candidates"  stack search candidates of many fields merged, duplicates across
//                              fields within match-radius (arcsec) removed
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "almagest/core/job_context.hpp"
#include "almagest/core/schema.hpp"
#include "almagest/jobs/batch.hpp"
#include "almagest/jobs/job.hpp"

namespace almagest::jobs {

/// The schema of an [[aggregate]] table (operation key "kind").
const schema::Schema& aggregate_schema();

/// Mean and unbiased sample covariance of n samples of p values (rows = samples, in order).
struct MeanCovariance {
  std::size_t n = 0, p = 0;
  std::vector<double> mean;        ///< p
  std::vector<double> covariance;  ///< p x p, row-major: sum (x - mean)(x - mean)^T / (n - 1)
  /// (n - p - 2) / (n - 1): multiplies the inverse of `covariance` for an unbiased inverse
  /// covariance (Hartlap, Simon & Schneider 2007); <= 0 when n <= p + 2 (not invertible).
  double hartlap_factor() const noexcept;
};
MeanCovariance mean_covariance(const std::vector<std::vector<double>>& samples);

/// The parity null test of the odd channel over N realisations, per configuration and overall,
/// without a covariance (O(N p)): the one computation behind the batch aggregation
/// `npcf-parity` (parity_pulls) and the GUI's null-test panel.
///  - mean_i, sigma_i (sample standard deviation, n - 1), sigma_mean_i = sigma_i / sqrt(N),
///    z_i = mean_i / sigma_mean_i (0 and counted `degenerate` where sigma_i = 0);
///  - chi2 = sum z_i^2 over the dof = p - degenerate configurations;
///  - for pure noise each z_i is Student-t with N - 1 degrees of freedom, so E[chi2/dof] =
///    (N - 1)/(N - 3) (N > 3, else NaN), with spread sqrt(Var(t^2)/dof) (N > 5, else NaN);
///  - beyond_2sigma: configurations with |z| > 2, and their fraction of dof.
struct ParityNullTest {
  std::size_t n = 0, p = 0;
  std::vector<double> mean, sigma, sigma_mean, z;
  double chi2 = 0, chi2_per_dof = 0;
  double expected_chi2_per_dof = 0, expected_spread = 0;
  std::size_t dof = 0, degenerate = 0, beyond_2sigma = 0;
  double fraction_beyond_2sigma = 0;
};
/// Samples: one vector per realisation, all of the same length (ConfigError otherwise).
ParityNullTest parity_null_test(const std::vector<std::vector<double>>& samples);

/// Parity pulls of the odd channel: z_i = mean_i / (s_i / sqrt(n)), s_i the sample standard
/// deviation; chi2 = sum z_i^2 over configurations with s_i > 0 (dof = their number); chi2_full
/// = n mean^T (hartlap C^-1) mean when n > p + 2 and C is positive definite (else NaN).
struct ParityPulls {
  ParityNullTest test;  ///< z, sigma_mean, chi2, dof, degenerate below are its values
  MeanCovariance stats;
  std::vector<double> sigma_mean, z;
  double chi2 = 0, chi2_full = 0;
  std::size_t dof = 0, degenerate = 0;
};
ParityPulls parity_pulls(const std::vector<std::vector<double>>& samples);

/// Validates an [[aggregate]] entry against the plan's batches (ConfigError naming the label).
AggregateStep make_aggregate_step(const AggregateEntry& entry, const RunPlan& plan);

/// Runs one step: reads the members' outputs (IoError naming the member file and dataset),
/// computes and writes (unless dry_run: then the Outcome's plan lists the inputs).
std::unique_ptr<Outcome> run_aggregate(const AggregateStep& step, const RunPlan& plan,
                                       const JobContext& ctx, bool dry_run);

}  // namespace almagest::jobs
