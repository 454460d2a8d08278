#pragma once
// The sht job of the job layer (almagest/jobs/job.hpp): one declared schema for every operation
// of `almagest-cli sht` (synth, adjoint, inverse, map2alm, cl, smooth), the rules every front end
// used to check on its own (lmax against NSIDE, spin/pol, pixel storage, mask and weights,
// epsilon/max-iter, formats, the backend) in make_sht_job / run_sht_job, and one run function
// that reads the inputs, plans (ShtPlan), executes and writes through one OutputSet with
// provenance. The CLI (app/cli/sht_command.cpp), the sky-map window (ui/sky) and job files all
// go through it, so a rule and its message live here only (docs/sht.md, "Jobs").
//
//   jobs::JobRequest req{"sht", {{"op", "map2alm"}, {"input", "cmb.fits"}, {"pol", true},
//                                {"output", "alm.fits"}}, "", ""};
//   sht::ShtJob job = sht::parse_sht_job(req);          // ConfigError: every problem, one line
//   sht::ShtOutcome out = sht::run_sht_job(job, ctx, {}); // IoError, NotConverged, Cancelled
#include <complex>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "almagest/core/backend.hpp"
#include "almagest/core/job_context.hpp"
#include "almagest/core/schema.hpp"
#include "almagest/jobs/job.hpp"
#include "almagest/sht/healpix_io.hpp"
#include "almagest/sht/plan.hpp"

namespace almagest::sht {

enum class ShtOp { Synth, Adjoint, Inverse, Map2alm, Cl, Smooth };
const char* to_string(ShtOp op);                   ///< "synth", ..., "smooth"
/// Components: T (spin 0), (Q, U) <-> (E, B) (spin 2), or T, Q, U <-> T, E, B (--pol).
enum class ShtLayout { Scalar, Spin2, Pol };
int ncomp(ShtLayout l) noexcept;                   ///< 1, 2, 3
const char* spin_text(ShtLayout l) noexcept;       ///< "0", "2", "0,2"

/// File formats of sht outputs (inputs: FITS or HDF5 by signature or extension).
enum class FileFormat { Fits, Hdf5, Text };
const char* to_string(FileFormat f);               ///< "FITS", "HDF5", "text"

/// The schema of the sht job: key "op" chooses the operation; every option of every
/// `almagest-cli sht <op>` subcommand is a field with the operations it applies to.
const schema::Schema& sht_schema();

/// A validated sht job (defaults applied; paths resolved against the request's base_dir).
struct ShtJob {
  ShtOp op = ShtOp::Synth;
  std::string input, output;
  std::string mask, cross, ring_weights, pixel_weights;   ///< "" when not given
  int nside = 0;            ///< 0: not given (maps: the file's; synth: required)
  int lmax = -1;            ///< -1: not given (maps: 3 NSIDE - 1; alm: the file's)
  int spin = 0;
  bool pol = false;
  std::vector<int> field;   ///< 0-based columns / alm sets; empty: the layout's default
  int iter = 3;             ///< map2alm iterations (0 with pixel weights)
  double epsilon = 1e-10;
  int max_iter = 1000;
  double fwhm_arcmin = 0;
  bool nest_out = false, partial_out = false;
  std::string format = "auto";
  FileFormat out_format = FileFormat::Fits;
  BackendChoice backend;
  int threads = 0;
  std::string label;        ///< message prefix ("--" on the command line, "jobs.toml: job 2: ")
  schema::Values given;     ///< the values as given (canonical keys)

  ShtLayout layout() const noexcept {
    return pol ? ShtLayout::Pol : spin == 2 ? ShtLayout::Spin2 : ShtLayout::Scalar;
  }
  /// Every file read (those given), in the order input, mask, ring weights, pixel weights, cross.
  std::vector<std::string> input_paths() const;
  /// Canonical configuration (sorted keys, defaults applied, absolute paths, "command").
  std::string config_json() const;
  /// The field name of `key` in messages: label + key.
  std::string name(const std::string& key) const { return label + key; }
};

/// One FITS header keyword / HDF5 root attribute of an sht output.
struct ShtKey {
  std::string name;
  std::variant<std::string, long long, double> value;
  std::string comment;
};

/// The results of an sht job (also written, unless RunOptions::write was false).
struct ShtOutcome : jobs::Outcome {
  std::string what;                          ///< "map", "alm", "spectra"
  FileFormat format = FileFormat::Fits;
  int nside = 0, lmax = 0;
  std::optional<HealpixMap> map;             ///< synth, smooth: the map as written
  std::vector<std::vector<std::complex<double>>> alm;  ///< adjoint, inverse, map2alm: per set
  std::vector<std::string> spectra;          ///< cl: labels (TT, EE, BB, TE, EB, TB)
  std::vector<std::vector<double>> cl;       ///< cl: per label, l = 0..lmax
  std::optional<InverseReport> inverse;      ///< inverse: the worst column's report
  std::vector<ShtKey> keys;                  ///< operation keywords (LMAX, ITER, CGEPS, ...)
  std::string spins;                         ///< "0", "2", "0,2"
  std::vector<std::string> input_hashes;     ///< io::content_hash per input, as inputs
  double read_s = 0, transform_s = 0, write_s = 0;
};

/// Validates a request into an sht job: the schema's ranges and choices, then the cross-field
/// rules (spin 0 or 2, --pol not with --spin 2, --field count, weights, --iter with pixel
/// weights, the output format, nest-out NSIDE). Throws one ConfigError listing every problem.
ShtJob parse_sht_job(const jobs::JobRequest& request);
/// The job layer's factory (jobs::EngineEntry::make): parse_sht_job wrapped as a jobs::Job.
std::unique_ptr<jobs::Job> make_sht_job(const jobs::JobRequest& request);
jobs::EngineEntry sht_job_entry();

/// Reads, plans, executes and (options.write) writes through one OutputSet with provenance.
/// options.dry_run: outcome.plan is filled from the headers (sizes, memory, time) and nothing
/// is transformed or written. Throws ConfigError (values that depend on the files: --lmax
/// against NSIDE, alm inputs with --mask), IoError (inputs; outputs: file() is the output),
/// BackendUnavailable, NotConverged (inverse; no output), Cancelled.
ShtOutcome run_sht_job(const ShtJob& job, const JobContext& ctx, const jobs::RunOptions& options);
/// Writes `outcome`'s results to `path` (job.output when empty) in the job's format, through
/// one OutputSet (inputs: job.input_paths()) with the provenance record: the GUI's Save.
void write_sht_outcome(const ShtJob& job, ShtOutcome& outcome, const JobContext& ctx,
                       const std::string& path = {});

/// The dry-run report of a job (reads only headers; the alm of synth without --lmax).
jobs::PlanReport plan_sht_job(const ShtJob& job);

}  // namespace almagest::sht
