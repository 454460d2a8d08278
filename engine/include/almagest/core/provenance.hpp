#pragma once
// Provenance carried by every result: what produced it, from what, where and how long it took.
#include <cstdint>
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
  std::string backend_note;                  ///< why the Auto policy chose the CPU ("" otherwise)
  int threads = 0;                           ///< worker threads used
  std::string config_json;                   ///< the full job configuration, as JSON
  std::vector<std::string> inputs;           ///< input files (paths as given)
  /// Content hash of each input (path as in `inputs` -> io::content_hash(path)): what a batch
  /// compares, with config_json, to decide whether an existing output is up to date.
  std::map<std::string, std::string> input_hashes;
  std::map<std::string, std::uint64_t> seeds;  ///< random seeds used, by name
  std::map<std::string, double> timings_s;   ///< wall-clock seconds by stage name

  /// Fills version, build, created_utc, host and (for backend "cpu") device.
  static Provenance current(std::string backend);
  /// The whole record as a JSON object (a string).
  std::string to_json() const;
  /// The record back from to_json()'s text; fields that are missing or of another type stay
  /// empty (a file written by an older version reads with what it has). Never throws.
  static Provenance from_json(const std::string& text);
};

/// The CPU model name from /proc/cpuinfo, or "unknown CPU".
std::string cpu_model_name();

}  // namespace almagest
