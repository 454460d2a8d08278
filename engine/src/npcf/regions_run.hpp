#pragma once
// The several-region path of run_npcf_job (run_job.cpp): not public API.
#include "almagest/core/atomic_file.hpp"
#include "almagest/core/job_context.hpp"
#include "almagest/npcf/job.hpp"

namespace almagest::npcf::detail {

/// Runs every region of job.regions as its own plan (its own point set, normalisation and graph),
/// combines each statistic at the level of counts (combine_regions) and, with `outputs`, writes
/// the combinations and each region's results inside one OutputSet scope. Fills `out`.
void run_region_job(const NpcfJob& job, const JobContext& ctx, bool dry_run, OutputSet* outputs,
                    NpcfOutcome& out);

}  // namespace almagest::npcf::detail
