#pragma once
// Every engine's GPU self-test, registered in one place (engine/src/jobs/registry.cpp, next to
// the job registry): core/selftest.hpp runs them without knowing the engines.
#include "almagest/core/selftest.hpp"

namespace almagest::jobs {

/// The registry of the engines' self-tests, in run order ("npcf", "sht"); the stack engine has
/// no GPU self-test in the engine (its device checks are tests/bench/bench_stack_check).
const SelftestRegistry& engine_selftests();

}  // namespace almagest::jobs
