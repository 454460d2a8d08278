#pragma once
// An N-point job as a user states it: inputs, statistics, binning, backend and output. The option
// schema is declared once (npcf_job_options()) and drives the command-line flags of
// `almagest-cli npcf` (flag "--" + key), the keys of TOML/JSON job files (the same key) and
// their documentation, so the CLI, job files and the GUI cannot drift apart.
//
//   JobValues v{{"stat", "3pcf"}, {"data", "gal.txt"}, {"randoms", "ran.txt"}, {"rmin", 1.0},
//               {"rmax", 30.0}, {"nbins", std::int64_t{10}}, {"output", "out.h5"}};
//   NpcfJob job = make_npcf_job(v, "/dir/of/the/job/file", "");   // throws ConfigError
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "almagest/io/catalogue.hpp"
#include "almagest/npcf/config.hpp"

namespace almagest::npcf {

enum class OutputFormat { Hdf5, Gramsci };
const char* to_string(OutputFormat f);  ///< "hdf5" | "gramsci"

/// A validated job. Paths are as they will be opened (already resolved against the job file's
/// directory where they were relative).
struct NpcfJob {
  std::vector<Statistic> statistics;        ///< at least one, no duplicates, in the order given
  io::CatalogueSpec data;
  std::optional<io::CatalogueSpec> randoms; ///< absent: periodic box with analytic randoms
  NpcfConfig config;                        ///< config.statistic == statistics.front()
  std::string output;                       ///< as given (after path resolution)
  OutputFormat format = OutputFormat::Hdf5;

  /// The file each statistic is written to, in the order of `statistics`. One statistic: `output`
  /// itself. Several: "<stem>_<statistic><ext>" beside `output`, e.g. out.h5 with 3pcf and 4pcf
  /// gives out_3pcf.h5 and out_4pcf.h5 (out.txt gives out_3pcf.txt, out_4pcf.txt).
  std::vector<std::string> output_paths() const;
  /// The config used for one statistic (config with .statistic replaced).
  NpcfConfig config_for(Statistic s) const;
};

/// How an option's value is written.
enum class OptionKind {
  Text,        ///< one string (paths, "8x32")
  TextList,    ///< strings; on the command line comma-separated ("x,y,z"), in files an array
  Number,      ///< real number
  Integer,     ///< integer
  Flag,        ///< boolean; a bare flag on the command line
  Choice,      ///< one of `choices`
  ChoiceList,  ///< one or more of `choices` (comma-separated on the command line)
};

/// One option of the schema. The command-line flag is "--" + key (plus `short_flag` if set),
/// the job-file key is `key`.
struct JobOption {
  std::string key;
  std::string short_flag;   ///< e.g. "-o"; empty if none
  OptionKind kind = OptionKind::Text;
  std::string value_name;   ///< placeholder in help, e.g. "FILE", "R"
  std::string group;        ///< help section: "Statistic", "Input", "Binning", "Geometry", ...
  std::string help;         ///< what it does, units, default and allowed range
  std::vector<std::string> choices;  ///< Choice / ChoiceList
  bool required = false;
};

/// The schema, in help order.
const std::vector<JobOption>& npcf_job_options();
/// nullptr if `key` is not in the schema.
const JobOption* find_job_option(std::string_view key);

/// A value from the command line (always text or a text list or a flag) or from a job file
/// (TOML/JSON scalars; arrays as text lists).
using JobValue = std::variant<bool, std::int64_t, double, std::string, std::vector<std::string>>;
using JobValues = std::map<std::string, JobValue>;

/// Builds and validates a job. Keys must be schema keys. Relative paths (data, randoms, output)
/// are resolved against `base_dir` (empty: kept as given). `field_prefix` is put before a key in
/// error messages ("--" for flags, "jobs.toml: job 2: " for job files).
/// Throws ConfigError listing every problem found (joined with "; "): unknown key, value of the
/// wrong type, missing required key, unknown statistic, values out of range (binning, periodic
/// box, pixel grid; NpcfConfig::validate() for every requested statistic), inconsistent options
/// (--box without --periodic, no randoms without --periodic, --omega-m outside (0, 1]).
/// Does not touch the file system.
NpcfJob make_npcf_job(const JobValues& values, const std::string& base_dir,
                      const std::string& field_prefix);

/// The job as job-file values (inverse of make_npcf_job up to path resolution): lets the GUI
/// save a job file that the CLI runs.
JobValues to_job_values(const NpcfJob& job);

}  // namespace almagest::npcf
