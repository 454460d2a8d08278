#pragma once
// Internal: one plain N-point job split over every rank by hub ranges (npcf/partition.hpp), or
// one stack search by origin row bands (stack/row_partition.hpp).
#include "almagest/dist/batch.hpp"

namespace almagest::dist {

/// The job can be split: an N-point job or a stack search, CPU backend (explicit, or Auto
/// without a usable GPU).
bool split_possible(const jobs::Job& job);

/// Collective. Rank 0 decides resume (the one-process rule), reports to `observer` and writes;
/// every rank counts its hub range. A failure on any rank ends every rank (abort_all) with the
/// front end's exit code after that rank printed its message.
void run_split(const jobs::RunPlan& plan, std::size_t batch, const CancelToken& cancel,
               const jobs::BatchRunOptions& options, jobs::BatchObserver& observer, const DistHooks& hooks,
               jobs::HashCache& hashes, RankReport& report, jobs::BatchSummary& s, bool failed_before);

}  // namespace almagest::dist
