#pragma once
// Internal: the CPU twin's raw scan output, shared by search_cpu.cpp and search_plan.cpp.
#include <cstdint>
#include <vector>

#include "almagest/stack/search.hpp"

namespace almagest::stack::detail {

struct RawHit {
  std::int32_t x = 0, y = 0, v = 0;
  float z = 0, a = 0, b = 0;
  std::int32_t obs = 0;
};

struct CpuScan {
  Digest digest;
  std::vector<RawHit> hits;  ///< row-major origin order, then v (threshold); best first per origin (top-k)
  std::uint64_t total_hits = 0;
  std::vector<float> dense_a, dense_b;
  std::vector<std::int32_t> dense_obs;
};

/// The CPU twin. Z = a / sqrt(b) in float, exactly as the GPU kernels compute it.
CpuScan scan_cpu(const PsiPhi& p, const ShiftTable& s, float threshold, bool top_k_mode, int top_k,
                 std::size_t max_hits, bool dense, int threads, const JobContext& ctx);

inline float score(float a, float b) { return b > 0.0f ? a / std::sqrt(b) : 0.0f; }

/// Top-k order: higher z first, ties to the lower velocity index.
inline bool better(float z1, std::int32_t v1, float z2, std::int32_t v2) {
  return z1 > z2 || (z1 == z2 && v1 < v2);
}

}  // namespace almagest::stack::detail
