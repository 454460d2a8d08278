#pragma once
// One shift-and-stack search split over several processes by origin row bands (docs/mpi.md),
// without MPI: the engine states what a process scans and what it hands on; the distribution
// layer (engine/dist) moves the bytes. Process r of K scans the origin rows [H r / K, H (r+1) / K)
// (every velocity, every exposure: rows cost the same); the rows' digests and hits go to process
// 0, which merges them in row order exactly as one process merges its rows, so the digest, the
// raw hits (and their max_candidates cut) and everything after them -- clustering, the filters'
// de-duplication, the outputs -- are those of one process. The other processes end the search
// with no hits. CPU backend only (the GPU scans are not split).
//
//   RowPartition part;  part.rank = r;  part.ranks = K;  part.gather = ...;
//   RowPartitionScope scope(part);         // on the thread that runs the job
//   run the stack search job (write on process 0 only)
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace almagest::stack {

struct RowPartition {
  int rank = 0, ranks = 1;
  /// Collective. Every process passes its band's bytes; process 0 gets every process's bytes in
  /// process order (its own first), the others an empty list.
  std::function<std::vector<std::vector<std::uint8_t>>(const std::vector<std::uint8_t>& mine)> gather;

  // ---- filled by the engine ----------------------------------------------------------------
  int row0 = 0, row1 = 0;    ///< this process's band of origin rows
  std::uint64_t hits = 0;    ///< hits of this band (before the max_candidates cut)
  int height = 0;            ///< rows of the whole image
};

/// Rows [first, second) of process `rank` of `ranks` for an image of `height` rows.
std::pair<int, int> row_band(int height, int rank, int ranks);

/// Installs a partition for the calling thread (the CPU scan run on it then scans its band and
/// hands the rows on); restores the previous one when it ends.
class RowPartitionScope {
public:
  explicit RowPartitionScope(RowPartition& p);
  ~RowPartitionScope();
  RowPartitionScope(const RowPartitionScope&) = delete;
  RowPartitionScope& operator=(const RowPartitionScope&) = delete;

private:
  RowPartition* previous_;
};

/// The calling thread's partition (nullptr: a whole search).
RowPartition* active_row_partition() noexcept;

}  // namespace almagest::stack
