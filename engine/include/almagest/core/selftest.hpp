#pragma once
// GPU self-tests: the generic runner. Each engine owns its self-test (npcf/selftest.hpp,
// sht/selftest.hpp): seeded inputs, the CUDA backend against the engine's CPU backend, one
// SelftestCheck per comparison. Core only collects them: an engine registers an EngineSelftest
// (name, summary, its options declared as a schema, a run function) with a SelftestRegistry, and
// front ends run the registry. Registration is explicit: each engine exports a register function,
// called from one place outside core (jobs::engine_selftests() in engine/src/jobs/registry.cpp),
// so no static initialiser can be dropped by the static library. Usable without Qt:
// `almagest-cli selftest` prints SelftestReport::text().
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "almagest/core/job_context.hpp"
#include "almagest/core/schema.hpp"

namespace almagest {

struct SelftestCheck {
  std::string name;       ///< e.g. "4pcf-parity exact W=3 P=2"
  bool passed = false;
  std::string detail;     ///< numbers: rows, tuples, worst relative difference, times
};

struct SelftestReport {
  bool gpu_available = false;
  std::string device;     ///< gpu_status().summary()
  std::vector<SelftestCheck> checks;
  double seconds = 0;
  /// True when the GPU was available, at least one check ran and every check passed.
  bool passed() const;
  /// Multi-line report: one line per check ("PASS name: detail"), then a summary line.
  std::string text() const;
  /// Appends another report's checks and seconds (the GPU fields stay this report's).
  void append(const SelftestReport& other);
  /// An empty report for the current process's GPU (gpu_available, device filled in).
  static SelftestReport for_current_gpu();
};

/// One engine's GPU self-test as the runner sees it.
struct EngineSelftest {
  std::string engine;     ///< "npcf", "sht", ...: registration order is run order
  std::string summary;    ///< what it checks, one sentence (help text)
  /// Its options, declared once (key, kind, default, range, help): the CLI's `selftest` options
  /// are generated from them; keys are unique across the registry.
  schema::Schema options;
  /// Runs with the values given for its options (absent ones take the declared defaults).
  /// Failed checks are reported, not thrown; ConfigError for bad values; Cancelled when ctx is
  /// cancelled. Without a GPU: gpu_available = false and no checks.
  std::function<SelftestReport(const schema::Values& values, const JobContext& ctx)> run;
};

class SelftestRegistry {
public:
  /// Adds an engine's self-test. ConfigError when its engine name or one of its option keys is
  /// already registered, or it has no run function.
  void add(EngineSelftest test);
  const std::vector<EngineSelftest>& entries() const noexcept { return entries_; }
  const EngineSelftest* find(std::string_view engine) const noexcept;
  /// Checks every value against its engine's declarations (unknown keys, kinds, ranges, choices):
  /// ConfigError listing every problem, prefixed by `prefix` ("--").
  void check(const schema::Values& values, const std::string& prefix = "--") const;
  /// check(), then every engine's self-test in registration order with its own values, in one
  /// report (checks in order, seconds summed).
  SelftestReport run(const schema::Values& values, const JobContext& ctx) const;

private:
  std::vector<EngineSelftest> entries_;
};

}  // namespace almagest
