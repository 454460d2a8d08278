#pragma once
// Provenance carried by every result: what produced it, from what, where and how long it took.
#include <map>
#include <string>
#include <vector>

namespace almagest {

/// Version string of the library ("0.1.0").
std::string version();

struct Provenance {
  std::string software = "Almagest";
  std::string version;                       ///< library version
  std::string build;                         ///< build type and compiler
  std::string created_utc;                   ///< ISO 8601 time the result was produced
  std::string host;                          ///< host name
  std::string backend;                       ///< "cpu" or "cuda"
  std::string device;                        ///< CPU model / GPU name
  int threads = 0;                           ///< worker threads used
  std::string config_json;                   ///< the full job configuration, as JSON
  std::vector<std::string> inputs;           ///< input files (paths as given)
  std::map<std::string, std::uint64_t> seeds;  ///< random seeds used, by name
  std::map<std::string, double> timings_s;   ///< wall-clock seconds by stage name

  /// Fills version, build, created_utc, host and (for backend "cpu") device.
  static Provenance current(std::string backend);
  /// The whole record as a JSON object (a string).
  std::string to_json() const;
};

/// The CPU model name from /proc/cpuinfo, or "unknown CPU".
std::string cpu_model_name();

}  // namespace almagest
