#pragma once
// A job file's plan on K ranks (docs/mpi.md): the same members, outputs and aggregates as one
// process (jobs/batch.hpp run_plan), in three kinds of step, in plan order:
//  - batch members are handed out dynamically: an MPI shared counter gives the next member to the
//    first rank that is free (rank 0 included); each member runs on one rank with the job layer's
//    own resume check and writes its outputs atomically there;
//  - a plain N-point job (CPU backend) is split over all ranks by hub ranges balanced by the cost
//    model, bit-identical to one process (npcf/partition.hpp); rank 0 writes it; a plain stack
//    search (CPU backend) likewise by origin row bands (stack/row_partition.hpp);
//  - the aggregates run on rank 0 after every member.
// Rank 0's observer sees every rank's events (from_rank says whose); the other ranks print
// nothing. The first failure stops the hand-out (members already running finish: their outputs
// are complete) and is rethrown on rank 0 as the exception the failing rank saw (same type, file
// and field), so the CLI's exit code is the one of one process; the other ranks return. A split
// job's failure is agreed by every rank at its next exchange and reported the same way.
#include <functional>
#include <string>

#include "almagest/jobs/batch.hpp"

namespace almagest::dist {

struct RankReport {
  int rank = 0;
  std::size_t computed = 0, skipped = 0;  ///< members this rank ran / found up to date
  double busy_s = 0, wall_s = 0;          ///< seconds in members / from start to its last one
  std::string device;                     ///< select_device's choice
};

struct DistHooks {
  /// Called on rank 0 before the observer calls that come from `rank`.
  std::function<void(int rank)> from_rank;
  /// Rank 0: every rank's report, at the end of the members.
  std::function<void(const RankReport&)> rank_done;
  std::string device;  ///< this rank's device choice (reported)
  /// The front end's exit code and one-line message of an exception (the CLI's exit_code_of),
  /// and its error printer: used when a split job fails inside its exchanges, where the rank
  /// that failed ends every rank (abort_all) with that code after printing its message.
  std::function<int(std::exception_ptr, std::string& message)> exit_code;
  std::function<void(const std::string& context, const std::string& message)> print_error;
};

/// Collective: every rank calls it with the same plan. Throws on rank 0 only (the first
/// failure, or Cancelled); returns the summary (rank 0: of every rank).
jobs::BatchSummary run_plan_distributed(const jobs::RunPlan& plan, const CancelToken& cancel,
                                        const jobs::BatchRunOptions& options, jobs::BatchObserver& observer,
                                        const DistHooks& hooks);

}  // namespace almagest::dist
