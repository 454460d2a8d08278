#pragma once
// Internal: the parts of run_stack_job() in their own files (job_simulate.cpp, job_plan.cpp).
#include "almagest/stack/job.hpp"

namespace almagest::stack::detail {

/// `simulate`: the synthetic stack, its truth table and common curve in one OutputSet.
StackOutcome run_simulate(const StackJob& job, const JobContext& ctx, const jobs::RunOptions& options);
/// A dry run: sizes from the headers only, memory, tiling and estimated time; writes nothing.
StackOutcome plan_stack_job(const StackJob& job);

}  // namespace almagest::stack::detail
