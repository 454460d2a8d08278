#pragma once
// The shift-and-stack engine's job (docs/jobs.md, "stack jobs"; docs/stack.md): one schema for
// the four operations `simulate`, `psiphi`, `search` and `stamps`, validated into a StackJob by
// make_stack_job() and run by run_stack_job(), which reads the stack, computes psi/phi, plans,
// searches, describes candidates and writes every output through one OutputSet with provenance.
// The CLI (`almagest-cli stack <op>`), the GUI's "Moving objects" window, job files and Python
// are adapters over these functions: every rule and its message lives here.
//
//   jobs::JobRequest req{"stack", {{"op", "search"}, {"stack", "s.fits"}, {"vx-range", "-4,4"},
//                                  {"vy-range", "-4,4"}, {"output", "c.ecsv"}}, "", ""};
//   StackJob job = make_stack_job(req);                // ConfigError listing every problem
//   StackOutcome out = run_stack_job(job, ctx, {});     // IoError, BackendUnavailable, Cancelled
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "almagest/core/backend.hpp"
#include "almagest/core/schema.hpp"
#include "almagest/jobs/job.hpp"
#include "almagest/stack/bank.hpp"
#include "almagest/stack/candidates.hpp"
#include "almagest/stack/exposure_stack.hpp"
#include "almagest/stack/filters.hpp"
#include "almagest/stack/psiphi.hpp"
#include "almagest/stack/search.hpp"
#include "almagest/stack/stack_io.hpp"
#include "almagest/stack/synthetic.hpp"

namespace almagest::stack {

enum class StackOp { Simulate, Psiphi, Search, Stamps };
const char* to_string(StackOp op);  ///< "simulate", "psiphi", "search", "stamps"

/// The search method on the GPU (the CPU twin computes the same exact statistic for each).
enum class Method { Gather, Tiled, Fourier };
const char* to_string(Method m);

/// Largest candidates x stamp pixels `stamps` makes (2^28: 4 GiB of the four stamp kinds).
inline constexpr std::uint64_t kMaxStampPixels = std::uint64_t{1} << 28;

/// `simulate`: the engine's synthetic recipe scaled by the job, the movers and the file layout.
struct SimulateJob {
  SyntheticConfig config;               ///< movers: the explicit ones (random ones are placed at run time)
  std::string format;                   ///< "workunit", "hdf5" or "files" (auto resolved)
  std::string truth, curve;             ///< resolved paths (curve empty without a common curve)
  std::string wcs_text;                 ///< "RA,DEC,SCALE" as given, "" for none
  std::string wcs_header;               ///< FITS cards of the TAN WCS, "" for none
  int random_movers = 0;
  double speed = 0, snr = 8;
  double direction = std::numeric_limits<double>::quiet_NaN();  ///< NaN: random per mover
};

/// A validated stack job. Paths are resolved against the request's base_dir.
struct StackJob {
  StackOp op = StackOp::Search;
  std::string label;                    ///< message prefix of the request ("" for the CLI)
  std::string base_dir;                 ///< relative paths of the request resolve against it
  // Inputs.
  std::string stack;                    ///< stamps: "" until the table's recorded stack is known
  std::string candidates;               ///< stamps
  std::string common_curve;             ///< search, stamps ("" for none)
  std::string velocities;               ///< search: explicit bank file ("" for a grid)
  StackReadOptions read;                ///< PSF options
  // Output.
  std::string output;
  std::string output_ext;               ///< ".ecsv" or ".h5" (search), ".h5" (psiphi, stamps)
  // Run.
  BackendChoice backend;                ///< as asked (Auto resolved when the job runs)
  Method method = Method::Tiled;
  int threads = 0;
  // Search (bank built at make time for grids; a velocity file is read at run time).
  SearchConfig search;
  bool bank_from_file = false;
  FilterConfig filters;                 ///< search: after the scan (stack/filters.hpp)
  std::string ades, mpc;                ///< search: observation files ("" for none; need a WCS)
  std::string station = "500";          ///< search: observatory code of the ADES/MPC rows
  // psiphi, stamps.
  Encoding encoding = Encoding::Fp32;
  bool storage_given = false;           ///< stamps: false = the search's storage
  double reference_mjd = std::numeric_limits<double>::quiet_NaN();
  int stamp_radius = 10;
  std::size_t top = 0;
  // simulate.
  SimulateJob simulate;
  /// The values the job was made from (canonical keys), for values() and config_json().
  schema::Values values;

  std::vector<std::string> input_paths() const;
  std::vector<std::string> output_paths() const;
  /// Canonical configuration: op and every field of the op with defaults applied, paths absolute.
  std::string config_json() const;
};

/// What a stack job produced (the CLI prints its summary; the GUI shows the results).
struct StackOutcome : jobs::Outcome {
  StackOp op = StackOp::Search;
  std::shared_ptr<const ExposureStack> exposures;      ///< psiphi, search, stamps
  std::shared_ptr<const PsiPhi> psiphi;                ///< decoded planes (what the search summed)
  std::shared_ptr<const SearchPlan> search_plan;       ///< search, stamps
  SearchResult result;                                 ///< search, stamps
  std::vector<CandidateDetail> details;                ///< stamps; search: RA/Dec rows of an ECSV
  std::shared_ptr<const SyntheticStack> synthetic;     ///< simulate
  Encoding encoding = Encoding::Fp32;
  bool resolved_gpu = false;
  double valid_fraction = 0;                           ///< psiphi: share of valid samples
};

/// Work a front end already holds (the GUI): a stack in memory and the psi/phi planes of it, so
/// a search does not read or recompute them. Null members are read / computed as usual.
struct StackInputs {
  std::shared_ptr<const ExposureStack> stack;
  std::shared_ptr<const PsiPhi> psiphi;   ///< must be the planes of `stack`
  bool psiphi_gpu = false;                ///< computed on the GPU (recorded in the provenance)
  std::vector<double> curve_dx, curve_dy; ///< a known curve of an in-memory stack (no file)
  /// search: the explicit bank of a job made with MakeStackOptions::velocities_in_memory
  /// (Python's velocity arrays); replaces a velocities file.
  std::shared_ptr<const TrajectoryBank> bank;
};

const schema::Schema& stack_schema();

/// What a front end that holds work in memory may leave out of a request (the GUI): without
/// `stack_in_memory` a psiphi or search job needs a stack file; without `output_optional` it needs
/// an output. A job made with them runs only with the stack passed as StackInputs::stack (else
/// ConfigError "stack: is required") and, without an output, writes nothing (outcome.outputs empty).
struct MakeStackOptions {
  bool stack_in_memory = false;
  bool output_optional = false;
  /// A search may name no bank: its explicit velocity list comes as StackInputs::bank.
  bool velocities_in_memory = false;
};

/// Validates a request ("op" chooses the operation). Throws ConfigError listing every problem,
/// each prefixed by the request's label ("--" on the command line).
StackJob make_stack_job(const jobs::JobRequest& request, const MakeStackOptions& options = {});
/// The job-layer wrapper of make_stack_job (for jobs::make_job and the registry).
std::unique_ptr<jobs::Job> make_stack_job_ptr(const jobs::JobRequest& request);
jobs::EngineEntry stack_job_entry();

/// Runs the job: reads, computes, writes every output through one OutputSet (unless
/// options.write is false) and fills the outcome; a dry run fills outcome.plan from the headers
/// only and writes nothing.
StackOutcome run_stack_job(const StackJob& job, const JobContext& ctx, const jobs::RunOptions& options,
                           const StackInputs& preloaded = {});

/// The backend a job runs on: the one Auto policy (core/backend.hpp) and the method.
struct StackBackend {
  ResolvedBackend resolved;
  Backend search = Backend::Cpu;         ///< the engine's search backend
};
StackBackend resolve_stack_backend(const StackJob& job);

// ---- files of stack jobs besides the engine's formats (job_files.cpp) -------------------------
namespace files {

/// Whitespace- or comma-separated numeric text table; '#' starts a comment; every row
/// `min_cols`..`max_cols` columns (all rows the same). IoError(path, "line N, column C", ...).
std::vector<std::vector<double>> read_numeric_table(const std::string& path, int min_cols, int max_cols,
                                                    const std::string& what);
/// Explicit velocity list: two columns vx vy [pixels/day]. An empty list is an IoError.
TrajectoryBank read_velocities(const std::string& path);
/// Known common curve: rows "dx dy" or "mjd dx dy" [pixels], one per exposure in stack order.
void read_common_curve(const std::string& path, const std::vector<double>& mjd, std::vector<double>& dx,
                       std::vector<double>& dy);
/// Writes "mjd dx dy" rows (17 significant digits) atomically.
void write_common_curve(const std::string& path, const std::vector<double>& mjd, const std::vector<double>& dx,
                        const std::vector<double>& dy);
/// psi/phi HDF5 file (format "almagest-psiphi-1").
void write_psiphi_hdf5(const std::string& path, const EncodedPsiPhi& enc, const PsiPhi& decoded,
                       const std::string& provenance_json, const std::string& source);

/// A candidate table read back (ECSV or HDF5 written by `stack search`, or any table with x, y,
/// vx, vy columns).
struct CandidateTable {
  std::vector<Candidate> candidates;
  bool has_v = false;
  double threshold_z = 0;
  Digest digest;
  std::string backend;
  std::string provenance_json;
  std::string config_json;
};
CandidateTable read_candidates(const std::string& path);

/// Truth table of `simulate` (ECSV): one row per injected mover.
void write_truth_ecsv(const std::string& path, const std::vector<Mover>& movers, const std::string& meta_json);

}  // namespace files

}  // namespace almagest::stack
