// The engines of the job layer, in the order "npcf", "sht", "stack". Each engine declares its
// entry (schema and job factory) in its own job header; this list is the only place that names
// them all.
#include "registry.hpp"

// ENGINE ENTRIES: each engine's job header is included here and its entry added below.
#include "almagest/npcf/job.hpp"
#include "almagest/sht/job.hpp"
#include "almagest/stack/job.hpp"

// ENGINE SELF-TESTS: each engine exports register_selftest (explicit: a static library drops
// self-registering static initialisers).
#include "almagest/jobs/selftests.hpp"
#include "almagest/npcf/selftest.hpp"
#include "almagest/sht/selftest.hpp"
#include "almagest/stack/selftest.hpp"

namespace almagest::jobs {

std::vector<EngineEntry> registered_engines() {
  std::vector<EngineEntry> e;
  // e.push_back(npcf::npcf_job_entry()); etc., added by each engine's job layer.
  e.push_back(npcf::npcf_job_entry());
  e.push_back(sht::sht_job_entry());
  e.push_back(stack::stack_job_entry());
  return e;
}

const SelftestRegistry& engine_selftests() {
  static const SelftestRegistry registry = [] {
    SelftestRegistry r;
    npcf::register_selftest(r);
    sht::register_selftest(r);
    stack::register_selftest(r);
    return r;
  }();
  return registry;
}

}  // namespace almagest::jobs
