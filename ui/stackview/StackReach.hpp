#pragma once
// The velocity grid a stack needs. A synthetic stack knows its movers: the window widens the
// search grid when it does not cover them (a 384 x 384 stack's movers at 4.75 px/day are outside
// the schema's default +-4 grid), keeping about one pixel of drift per grid step over the
// baseline, so that the movers the generator made are found with the defaults.
#include <vector>

#include "almagest/stack/synthetic.hpp"
#include "stackview/StackJobs.hpp"

namespace almagest::ui::stackview {

/// True when every mover's (vx, vy) lies inside the grid of `s` (inclusive).
bool gridCovers(const SearchSettings& s, const std::vector<almagest::stack::Mover>& movers);

/// A symmetric Cartesian grid covering every mover with 10% margin (half-width rounded up to a
/// multiple of 0.25 px/day, at least the grid of `base`) and a step of at most one pixel of drift
/// over `baselineDays` (odd counts, so v = 0 stays on the grid). The other settings of `base` are
/// kept. Returns `base` unchanged when it already covers the movers.
SearchSettings coveringGrid(const SearchSettings& base, const std::vector<almagest::stack::Mover>& movers,
                            double baselineDays);

}  // namespace almagest::ui::stackview
