#pragma once
// Internal: what filter_candidates() (filters.cpp) keeps per candidate, and its stamp test
// (filter_stamps.cpp; stack/filters.hpp, stage 5; docs/stack.md, "Candidates").
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "almagest/stack/exposure_stack.hpp"
#include "almagest/stack/filters.hpp"
#include "almagest/stack/psiphi.hpp"
#include "almagest/stack/search.hpp"
#include "stack/task_pool.hpp"

namespace almagest::stack::detail {

/// A candidate between the filter stages.
struct FilterWork {
  Candidate c;
  std::vector<float> a, b;           ///< the curve
  std::vector<std::uint8_t> keep;    ///< sigma-G kept (observed) epochs
  std::vector<std::int32_t> px, py;  ///< the sampled pixel per exposure (duplicate test's shared samples)
  double z_unclipped = 0;
  std::int32_t clipped = 0;
  bool ok = true;
};

/// Exposures read ahead (software prefetch) where a loop over exposures touches one pixel or
/// row per plane: every step is a new page, so the loops are bound by memory latency.
inline constexpr int kAhead = 8;

/// Software prefetch that the compiler keeps: GCC 12's dead-code elimination dropped
/// __builtin_prefetch from the stamp gather (a conditional loop of prefetches in an inlined
/// lambda) without a trace; an asm statement is never removed.
inline void prefetch(const void* p) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#elif defined(__GNUC__) && defined(__aarch64__)
  asm volatile("prfm pldl1keep, %0" : : "Q"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

/// Wall times and counts of the stamp test (ALMAGEST_STACK_FILTER_PROFILE).
struct StampProfile {
  double setup = 0, gather = 0, reduce = 0;
  std::size_t gathered = 0, groups = 0, fused = 0, medians = 0, undecided = 0;
};

/// The stamp test of filter_candidates: coadded stamps over a candidate's sigma-G kept epochs must
/// look like the PSF. Its verdict is a conjunction of three parts, each a pure function of the
/// candidate's stamps: the mean stamp's PSF-matched flux fm > 0; the weighted-mean stamp's
/// moments near the PSF's (where the PSF's moments are defined); the median stamp's flux
/// fmed >= ratio fm. The medians (a selection per stamp pixel over the kept epochs) are the
/// costly part, so they are formed only for candidates that pass the other two parts, and only
/// when the verdict is needed: the verdict does not depend on the order its parts are evaluated
/// in. `stack`, `psiphi`, `shifts`, `cfg` and `pool` must outlive the test.
class StampTest {
public:
  StampTest(const ExposureStack& stack, const PsiPhi& psiphi, const ShiftTable& shifts, const FilterConfig& cfg,
            TaskPool& pool);

  /// Verdicts of `list`: 1 passes, 0 rejected, -1 not decided. list[0, spec_from) are needed:
  /// the head (list[0] when head_in_list; else the head was rejected before the stamps) and the
  /// candidates tested whatever its verdict. list[spec_from, ...) are speculative, in the order
  /// the caller would test them, each needed only if the head and every speculative one before
  /// it are rejected: they are tested as that chain of rejections reaches them, in chunks of 1,
  /// 2, 4, ... candidates, and the chain stops at the first that passes; the rest of its chunk
  /// is decided where fm or the moments reject them, else left undecided.
  std::vector<std::int8_t> verdicts(const std::vector<const FilterWork*>& list, std::size_t spec_from, bool head_in_list);

  StampProfile profile;

private:
  struct Stamp;
  void block_at(const FilterWork& w, int e, std::int64_t& x, std::int64_t& y) const;
  void prefetch_span(int e, std::int64_t y, std::int64_t xa, std::int64_t xb) const;
  void copy_row(Stamp& st, std::size_t k, int e, std::int64_t x, std::int64_t y, int v) const;
  void gather(const std::vector<const FilterWork*>& cand, std::vector<Stamp>& st, int e0, int e1) const;
  void sums_row(Stamp& st, std::size_t row) const;
  void median_row(Stamp& st, std::size_t row) const;
  bool first_parts(const std::vector<double>& mean, const std::vector<double>& weighted, const std::vector<std::uint8_t>& any,
                   double& fm) const;
  bool median_part(const std::vector<double>& med, const std::vector<std::uint8_t>& any, double fm) const;
  bool fused(const FilterWork& w) const;
  void prepare(const std::vector<const FilterWork*>& cand, std::vector<Stamp>& st, std::vector<std::uint8_t>& first);
  std::vector<std::uint8_t> medians(std::vector<Stamp>& st, const std::vector<std::size_t>& idx);

  const ExposureStack& stack_;
  const PsiPhi& p_;
  const ShiftTable& s_;
  const FilterConfig& cfg_;
  TaskPool& pool_;
  int n_, W_, H_, R_, side_;
  std::size_t np_, spix_;
  bool exposure_order_;
  std::vector<double> K_;  ///< mean PSF on the stamp grid
  double sigma_ = 1, kk_ = 0, Tpsf_ = 0;
  bool psf_ok_ = false;
  std::unique_ptr<float[]> buf_;  ///< gathered blocks and values, grown when needed (never zero-filled)
  std::size_t buf_cap_ = 0;
};

}  // namespace almagest::stack::detail
