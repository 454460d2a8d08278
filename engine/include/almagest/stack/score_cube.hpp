#pragma once
// The score cube Z(x, y, v) of a search, kept for a chosen velocity subset and a pixel region
// (docs/stack.md, "Score cube"): what the Moving objects window shows as a volume, as slices and
// as an isosurface at the detection threshold.
//
//   ScoreCubeRequest q;  q.velocities = {...};  q.x0 = 10; q.nx = 32; ...
//   ScoreCube cube = score_cube(psiphi, plan, q, ctx);   // cube.at(ix, iy, iv)
//
// Every value is the search's own score: A and B are summed over exposures in index order in
// float32 from the same decoded planes and the same shift tables (integer or fractional, with
// the plan's PSF correlations), and Z = A / sqrt(B) in float (0 where B <= 0), so the cube at a
// candidate's (x, y, v) equals the CPU scan's score of that trajectory bit for bit (before any
// sigma-G clipping, i.e. CandidateGroup::z_unclipped when the candidates were filtered).
#include <cstdint>
#include <string>
#include <vector>

#include "almagest/core/job_context.hpp"
#include "almagest/stack/bank.hpp"
#include "almagest/stack/psiphi.hpp"
#include "almagest/stack/search.hpp"

namespace almagest::stack {

/// Largest cube score_cube() makes: 2^27 values (512 MiB of float).
inline constexpr std::uint64_t kMaxScoreCubeValues = std::uint64_t{1} << 27;

struct ScoreCubeRequest {
  /// Bank indices to keep, in this order along the cube's v axis (empty: the whole bank). Each
  /// index at most once.
  std::vector<std::int32_t> velocities;
  /// Origin region [x0, x0 + nx) x [y0, y0 + ny) in pixels; nx or ny <= 0 means to the edge.
  int x0 = 0, y0 = 0, nx = 0, ny = 0;
  int threads = 0;  ///< CPU worker threads (0 = all)
};

struct ScoreCube {
  int x0 = 0, y0 = 0, nx = 0, ny = 0;
  std::vector<std::int32_t> velocities;  ///< [nv] bank index of each v plane
  std::vector<double> vx, vy;            ///< [nv] pixels/day
  std::vector<float> z;                  ///< [nv][ny][nx]
  double threshold_z = 0;                ///< the plan's detection threshold
  int nv() const noexcept { return static_cast<int>(velocities.size()); }
  std::size_t index(int ix, int iy, int iv) const noexcept {
    return (std::size_t(iv) * std::size_t(ny) + std::size_t(iy)) * std::size_t(nx) + std::size_t(ix);
  }
  float at(int ix, int iy, int iv) const { return z[index(ix, iy, iv)]; }
  /// Position of bank index v in `velocities`, or -1.
  int plane_of(std::int32_t v) const noexcept;
};

/// The requested problems, "field: message" (velocities out of the bank or repeated, a region
/// outside the image, a cube above kMaxScoreCubeValues).
std::vector<std::string> validate(const ScoreCubeRequest& q, int width, int height, std::size_t n_vel);

/// Scores of the request from decoded planes `p` and the shift tables `s` (rho: the fractional
/// mode's PSF correlations, SearchConfig::psf_rho). Throws ConfigError listing every problem of
/// the request, IoError when `p` and `s` disagree on the number of exposures; cancellable.
ScoreCube score_cube(const PsiPhi& p, const ShiftTable& s, const std::vector<float>& rho, const ScoreCubeRequest& q,
                     const JobContext& ctx);
/// The same with the plan's shift tables, PSF correlations, bank velocities and threshold.
ScoreCube score_cube(const PsiPhi& p, const SearchPlan& plan, const ScoreCubeRequest& q, const JobContext& ctx);

/// Bank indices of a Cartesian bank's row (fixed vy index j: v = j * nvx + i, i = 0..nvx-1) and
/// column (fixed vx index i). Throws ConfigError for another bank kind or an index out of range.
std::vector<std::int32_t> bank_row(const TrajectoryBank& bank, int j);
std::vector<std::int32_t> bank_column(const TrajectoryBank& bank, int i);

}  // namespace almagest::stack
