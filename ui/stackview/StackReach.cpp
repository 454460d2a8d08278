#include "stackview/StackReach.hpp"

#include <algorithm>
#include <cmath>

namespace almagest::ui::stackview {

bool gridCovers(const SearchSettings& s, const std::vector<almagest::stack::Mover>& movers) {
  return std::all_of(movers.begin(), movers.end(), [&](const almagest::stack::Mover& m) {
    return m.vx >= s.vxMin && m.vx <= s.vxMax && m.vy >= s.vyMin && m.vy <= s.vyMax;
  });
}

SearchSettings coveringGrid(const SearchSettings& base, const std::vector<almagest::stack::Mover>& movers,
                            double baselineDays) {
  if (movers.empty() || gridCovers(base, movers)) return base;
  double vmax = 0;
  for (const auto& m : movers) vmax = std::max({vmax, std::abs(m.vx), std::abs(m.vy)});
  double half = std::ceil(1.1 * vmax / 0.25) * 0.25;
  half = std::max({half, std::abs(base.vxMin), std::abs(base.vxMax), std::abs(base.vyMin), std::abs(base.vyMax)});
  // One pixel of drift per step over the baseline: step = 1 / baseline px/day.
  const double days = baselineDays > 0 ? baselineDays : 1.0;
  int n = int(std::ceil(2.0 * half * days)) + 1;
  if (n % 2 == 0) ++n;
  n = std::max(n, std::max(base.nvx, base.nvy) | 1);
  SearchSettings s = base;
  s.vxMin = s.vyMin = -half;
  s.vxMax = s.vyMax = half;
  s.nvx = s.nvy = n;
  return s;
}

}  // namespace almagest::ui::stackview
