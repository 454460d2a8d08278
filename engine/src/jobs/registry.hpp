#pragma once
// The engines the job layer knows (engine/src/jobs/registry.cpp): each engine's schema and job
// factory, declared by the engine itself (npcf/job.hpp, sht/job.hpp, stack/job.hpp).
#include <vector>

#include "almagest/jobs/job.hpp"

namespace almagest::jobs {

std::vector<EngineEntry> registered_engines();

}  // namespace almagest::jobs
