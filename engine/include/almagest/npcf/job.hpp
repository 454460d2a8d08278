#pragma once
// The N-point engine's job (docs/jobs.md, "npcf jobs"): its schema, declared once here
// (npcf_schema(): every field with kind, default, range, unit and help), the typed job it
// validates into, and the one function that runs it. The CLI's `almagest-cli npcf` options, the
// keys of job files, the GUI's N-point form and Python's keyword arguments are generated from
// the schema, so the rules and their messages are the same in every front end.
//
//   schema::Values v{{"stat", "3pcf"}, {"data", "gal.txt"}, {"randoms", "ran.txt"},
//                    {"rmin", 1.0}, {"rmax", 30.0}, {"nbins", std::int64_t{10}},
//                    {"output", "out.h5"}};
//   NpcfJob job = make_npcf_job(v, "/dir/of/the/job/file", "");   // throws ConfigError
//   NpcfOutcome out = run_npcf_job(job, ctx, {});                 // reads, plans, runs, writes
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "almagest/core/job_context.hpp"
#include "almagest/core/schema.hpp"
#include "almagest/io/catalogue.hpp"
#include "almagest/jobs/job.hpp"
#include "almagest/npcf/config.hpp"
#include "almagest/npcf/graph.hpp"
#include "almagest/npcf/points.hpp"
#include "almagest/npcf/result.hpp"

namespace almagest::npcf {

/// hdf5: datasets with units and provenance; gramsci: the published text layouts, numbers as
/// Fortran e14.7; text: the same columns at full precision (%.17g, reads back exactly).
enum class OutputFormat { Hdf5, Gramsci, Text };
const char* to_string(OutputFormat f);  ///< "hdf5" | "gramsci" | "text"
/// Writes one result in the format (atomically; inside an OutputSet scope when one is open).
void write_result(const NpcfResult& result, const std::string& path, OutputFormat format);

/// The N-point job schema, in help order (groups Statistic, Input, Binning, Geometry, Execution,
/// Output). Field keys are the job-file keys; "--" + key is the command-line option.
const schema::Schema& npcf_schema();

/// One sky region of a several-region job (npcf/regions.hpp): its own data and randoms, read with
/// the job's columns, weights and format options.
struct NpcfRegion {
  std::string name;
  io::CatalogueSpec data, randoms;
};

/// A validated job. Paths are as they will be opened (already resolved against the job file's
/// directory where they were relative).
struct NpcfJob {
  std::vector<Statistic> statistics;        ///< at least one, no duplicates, in the order given
  io::CatalogueSpec data;
  std::optional<io::CatalogueSpec> randoms; ///< absent: periodic box with analytic randoms
  NpcfConfig config;                        ///< config.statistic == statistics.front()
  std::string output;                       ///< as given (after path resolution)
  OutputFormat format = OutputFormat::Hdf5;
  /// Host memory the job may use (MiB); 0 = MemAvailable of the machine. Checked against the
  /// exact table and row-sum memory (job_memory) before any work.
  std::uint64_t host_memory_mib = 0;
  /// Delete-one jackknife over this many regions (0 = off; npcf/jackknife.hpp). Regions from the
  /// label files (both given) or internal angular regions.
  int jackknife = 0;
  std::string jackknife_labels, randoms_jackknife_labels;
  /// Several sky regions (the `region` field), measured independently and combined at the level
  /// of counts (npcf/regions.hpp); empty: one catalogue pair. With regions, `data` and `randoms`
  /// are the first region's.
  std::vector<NpcfRegion> regions;

  /// The file each statistic is written to, in the order of `statistics`. One statistic: `output`
  /// itself. Several: "<stem>_<statistic><ext>" beside `output`, e.g. out.h5 with 3pcf and 4pcf
  /// gives out_3pcf.h5 and out_4pcf.h5 (out.txt gives out_3pcf.txt, out_4pcf.txt).
  std::vector<std::string> output_paths() const;
  /// Text jobs with a jackknife: "<out>.jk" and "<out>.jkerr" per output, in output order (the
  /// HDF5 format keeps the jackknife in the result file). Empty otherwise.
  std::vector<std::string> jackknife_paths() const;
  /// Text jobs with regions: each region's own result beside the combined one, region outer in
  /// statistic order: "<stem>_<region><ext>" of every output path (out.txt -> out_NGC.txt). HDF5
  /// keeps the regions in groups of the result file. Empty otherwise.
  std::vector<std::string> region_paths() const;
  /// The catalogue files read: data, then randoms if any.
  std::vector<std::string> input_paths() const;
  /// The config used for one statistic (config with .statistic replaced).
  NpcfConfig config_for(Statistic s) const;
  /// Canonical configuration as JSON: every schema key with defaults applied, keys sorted, paths
  /// absolute; `threads` is left out (results do not depend on it), so a batch resumed with
  /// another thread count does not recompute. Recorded as the provenance's config of every output.
  std::string config_json() const;
};

/// Builds and validates a job. Keys must be schema keys. Relative paths (data, randoms, output)
/// are resolved against `base_dir` (empty: kept as given). `field_prefix` is put before a key in
/// error messages ("--" for flags, "jobs.toml: job 2: " for job files).
/// Throws ConfigError listing every problem found (joined with "; "): unknown key, value of the
/// wrong type, missing required key, values outside the schema's ranges and choices, unknown or
/// repeated statistics, and the cross-field rules (box only with periodic, randoms required
/// unless periodic, NpcfConfig::validate() for every requested statistic).
/// Does not touch the file system.
NpcfJob make_npcf_job(const schema::Values& values, const std::string& base_dir,
                      const std::string& field_prefix);

/// The job as schema values (inverse of make_npcf_job up to path resolution): lets the GUI
/// save a job file that the CLI runs.
schema::Values to_job_values(const NpcfJob& job);

/// What an N-point job produced.
struct NpcfOutcome : jobs::Outcome {
  std::vector<NpcfResult> results;         ///< one per statistic, in job order (empty: dry run)
  GraphEstimate estimate;                  ///< dry run only
  std::size_t ndata = 0, nrandom = 0;
  std::uint64_t graph_edges = 0;
  double load_seconds = 0, graph_seconds = 0, write_seconds = 0;
  std::vector<double> statistic_seconds;   ///< per statistic
  /// Jobs with regions: `results` are the combinations; each region's own results here, region
  /// outer, one per statistic in job order.
  std::vector<std::vector<NpcfResult>> region_results;
};

/// Runs one job: reads the catalogues, builds the plan (validation, Auto policy, graph), evaluates
/// every statistic and, unless options.write is false, writes the outputs through one OutputSet
/// (all or nothing) with provenance (config_json(), backend, device, input paths and their
/// content hashes). options.dry_run reads the catalogues, estimates the graph and fills
/// outcome.plan (inputs and sizes, host and device memory, tiling, estimated time) without
/// building or writing anything. Progress and log go through ctx; it never prints. Throws
/// ConfigError, IoError (inputs, and outputs naming the output file), BackendUnavailable,
/// Cancelled.
NpcfOutcome run_npcf_job(const NpcfJob& job, const JobContext& ctx, const jobs::RunOptions& options);

/// Memory of a job's configuration tables, row sums and results, exact from its statistics, bins
/// and thread count (the points and the graph come on top: the dry run estimates those).
/// Statistics run one after another and every result is kept, so the host peak is the largest
/// statistic's working memory plus all results.
struct JobMemory {
  double host_bytes = 0;           ///< peak host bytes of tables, row sums and results
  double device_bytes = 0;         ///< CUDA: the largest statistic's table and row sums on a device
  std::vector<std::string> lines;  ///< one line per statistic (rows, table, row sums, results)
};
JobMemory job_memory(const NpcfJob& job, int threads, bool cuda);
/// The limits job_memory() is checked against: host-memory (or MemAvailable of /proc/meminfo)
/// and 85% of the smallest selected device's total memory. Empty when the job fits, else the
/// reason (one line naming the field to change).
std::string memory_refusal(const NpcfJob& job, const JobMemory& m, bool cuda);

/// The dry-run report of a job whose catalogues are read into `points` (run_npcf_job uses it).
jobs::PlanReport plan_report(const NpcfJob& job, const PointSet& points, const GraphEstimate& e);

/// The job layer's entry points (registered in engine/src/jobs/registry.cpp).
std::unique_ptr<jobs::Job> make_npcf_job(const jobs::JobRequest& request);
jobs::EngineEntry npcf_job_entry();

}  // namespace almagest::npcf
