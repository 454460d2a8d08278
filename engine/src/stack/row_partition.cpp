// One shift-and-stack search split by origin row bands (almagest/stack/row_partition.hpp).
#include "almagest/stack/row_partition.hpp"

#include <algorithm>

namespace almagest::stack {

namespace {
thread_local RowPartition* t_rows = nullptr;
}  // namespace

std::pair<int, int> row_band(int height, int rank, int ranks) {
  ranks = std::max(1, ranks);
  const auto h = static_cast<long long>(std::max(0, height));
  return {static_cast<int>(h * rank / ranks), static_cast<int>(h * (rank + 1) / ranks)};
}

RowPartitionScope::RowPartitionScope(RowPartition& p) : previous_(t_rows) { t_rows = &p; }
RowPartitionScope::~RowPartitionScope() { t_rows = previous_; }
RowPartition* active_row_partition() noexcept { return t_rows; }

}  // namespace almagest::stack
