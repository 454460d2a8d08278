// The score cube Z(x, y, v) of a velocity subset and an origin region (score_cube.hpp). The sums
// are the CPU scan's (search_cpu.cpp): per origin row and velocity, every exposure adds its
// shifted row into float accumulators in exposure order; fractional tables go through the same
// per-exposure bilinear samples as the scan. Z is detail::score, the scan's float expression.
#include "almagest/stack/score_cube.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "almagest/core/error.hpp"
#include "core/parallel.hpp"
#include "search_internal.hpp"

namespace almagest::stack {

int ScoreCube::plane_of(std::int32_t v) const noexcept {
  for (std::size_t i = 0; i < velocities.size(); ++i)
    if (velocities[i] == v) return static_cast<int>(i);
  return -1;
}

std::vector<std::string> validate(const ScoreCubeRequest& q, int width, int height, std::size_t n_vel) {
  std::vector<std::string> out;
  std::set<std::int32_t> seen;
  for (std::size_t i = 0; i < q.velocities.size(); ++i) {
    const std::int32_t v = q.velocities[i];
    if (v < 0 || std::size_t(v) >= n_vel) {
      out.push_back("velocities: index " + std::to_string(v) + " (entry " + std::to_string(i) +
                    ") is outside the bank of " + std::to_string(n_vel) + " velocities");
      break;
    }
    if (!seen.insert(v).second) {
      out.push_back("velocities: index " + std::to_string(v) + " is given twice");
      break;
    }
  }
  if (q.x0 < 0 || q.x0 >= width)
    out.push_back("x0: " + std::to_string(q.x0) + " is outside the image (0.." + std::to_string(width - 1) + ")");
  if (q.y0 < 0 || q.y0 >= height)
    out.push_back("y0: " + std::to_string(q.y0) + " is outside the image (0.." + std::to_string(height - 1) + ")");
  if (q.nx > 0 && q.x0 >= 0 && std::int64_t(q.x0) + q.nx > width)
    out.push_back("nx: the region x0 + nx = " + std::to_string(std::int64_t(q.x0) + q.nx) + " passes the image width " +
                  std::to_string(width));
  if (q.ny > 0 && q.y0 >= 0 && std::int64_t(q.y0) + q.ny > height)
    out.push_back("ny: the region y0 + ny = " + std::to_string(std::int64_t(q.y0) + q.ny) + " passes the image height " +
                  std::to_string(height));
  if (q.threads < 0) out.push_back("threads: must be >= 0 (0 = all)");
  if (out.empty()) {
    const std::uint64_t nx = q.nx > 0 ? q.nx : width - q.x0, ny = q.ny > 0 ? q.ny : height - q.y0;
    const std::uint64_t nv = q.velocities.empty() ? n_vel : q.velocities.size();
    if (nx * ny * nv > kMaxScoreCubeValues)
      out.push_back("velocities: a cube of " + std::to_string(nx) + " x " + std::to_string(ny) + " x " +
                    std::to_string(nv) + " values is larger than the limit of " + std::to_string(kMaxScoreCubeValues) +
                    " (choose fewer velocities or a smaller region)");
  }
  return out;
}

ScoreCube score_cube(const PsiPhi& p, const ShiftTable& s, const std::vector<float>& rho, const ScoreCubeRequest& q,
                     const JobContext& ctx) {
  if (s.n_exp != p.n)
    throw IoError("", "psi/phi", "the planes have " + std::to_string(p.n) + " exposures, the shift table " +
                                     std::to_string(s.n_exp));
  if (s.fractional() && rho.size() != 4 * std::size_t(p.n))
    throw ConfigError("psf_rho", "the fractional mode needs 4 PSF correlations per exposure (" +
                                     std::to_string(4 * p.n) + "), got " + std::to_string(rho.size()));
  const auto problems = validate(q, p.width, p.height, std::size_t(s.n_vel));
  if (!problems.empty()) {
    std::string msg;
    for (const auto& m : problems) msg += (msg.empty() ? "" : "; ") + m;
    throw ConfigError("score cube", msg);
  }
  ScoreCube c;
  c.x0 = q.x0;
  c.y0 = q.y0;
  c.nx = q.nx > 0 ? q.nx : p.width - q.x0;
  c.ny = q.ny > 0 ? q.ny : p.height - q.y0;
  c.velocities = q.velocities;
  if (c.velocities.empty()) {
    c.velocities.resize(std::size_t(s.n_vel));
    for (int v = 0; v < s.n_vel; ++v) c.velocities[std::size_t(v)] = v;
  }
  c.z.assign(std::size_t(c.nv()) * std::size_t(c.ny) * std::size_t(c.nx), 0.0f);
  const int n = p.n;
  const bool frac = s.fractional();
  // One task per (velocity plane, row): disjoint outputs, the scan's order inside each.
  const std::size_t tasks = std::size_t(c.nv()) * std::size_t(c.ny);
  parallel::parallel_for(tasks, q.threads, ctx, "score cube", [&](std::size_t t) {
    const int iv = static_cast<int>(t / std::size_t(c.ny)), iy = static_cast<int>(t % std::size_t(c.ny));
    const int v = c.velocities[std::size_t(iv)], y = c.y0 + iy;
    float* out = c.z.data() + c.index(0, iy, iv);
    if (frac) {
      std::vector<float> a(static_cast<std::size_t>(n)), b(static_cast<std::size_t>(n));
      for (int ix = 0; ix < c.nx; ++ix) {
        detail::trajectory_curve_impl(p, s, rho, c.x0 + ix, y, v, a.data(), b.data());
        float A = 0, B = 0;
        for (int e = 0; e < n; ++e) {
          A += a[std::size_t(e)];
          B += b[std::size_t(e)];
        }
        out[ix] = detail::score(A, B);
      }
      return;
    }
    std::vector<float> A(std::size_t(c.nx), 0.0f), B(std::size_t(c.nx), 0.0f);
    detail::accumulate_row(p, s, y, v, c.x0, c.x0 + c.nx, A.data(), B.data(), nullptr);
    for (int ix = 0; ix < c.nx; ++ix) out[ix] = detail::score(A[std::size_t(ix)], B[std::size_t(ix)]);
  });
  ctx.check_cancel();
  return c;
}

ScoreCube score_cube(const PsiPhi& p, const SearchPlan& plan, const ScoreCubeRequest& q, const JobContext& ctx) {
  ScoreCube c = score_cube(p, plan.shifts(), plan.config().psf_rho, q, ctx);
  const TrajectoryBank& bank = plan.config().bank;
  c.vx.resize(c.velocities.size());
  c.vy.resize(c.velocities.size());
  for (std::size_t i = 0; i < c.velocities.size(); ++i) {
    const auto v = std::size_t(c.velocities[i]);
    c.vx[i] = v < bank.vx.size() ? bank.vx[v] : 0.0;
    c.vy[i] = v < bank.vy.size() ? bank.vy[v] : 0.0;
  }
  c.threshold_z = plan.threshold();
  return c;
}

std::vector<std::int32_t> bank_row(const TrajectoryBank& bank, int j) {
  if (bank.kind != BankKind::Cartesian) throw ConfigError("velocities", "a bank row needs a Cartesian bank");
  if (j < 0 || j >= bank.nvy)
    throw ConfigError("velocities", "vy index " + std::to_string(j) + " is outside 0.." + std::to_string(bank.nvy - 1));
  std::vector<std::int32_t> out(std::size_t(bank.nvx));
  for (int i = 0; i < bank.nvx; ++i) out[std::size_t(i)] = j * bank.nvx + i;
  return out;
}

std::vector<std::int32_t> bank_column(const TrajectoryBank& bank, int i) {
  if (bank.kind != BankKind::Cartesian) throw ConfigError("velocities", "a bank column needs a Cartesian bank");
  if (i < 0 || i >= bank.nvx)
    throw ConfigError("velocities", "vx index " + std::to_string(i) + " is outside 0.." + std::to_string(bank.nvx - 1));
  std::vector<std::int32_t> out(std::size_t(bank.nvy));
  for (int j = 0; j < bank.nvy; ++j) out[std::size_t(j)] = j * bank.nvx + i;
  return out;
}

}  // namespace almagest::stack
