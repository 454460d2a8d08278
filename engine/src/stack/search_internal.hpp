#pragma once
// Internal: the CPU twin's raw scan output, shared by search_cpu.cpp and search_plan.cpp.
#include <algorithm>
#include <cmath>
#include <cstddef>
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

/// The CPU twin. Z = a / sqrt(b) in float, exactly as the GPU kernels compute it. A table with
/// fractional entries scans in the sub-pixel mode with `rho` ([n][4], SearchConfig::psf_rho).
CpuScan scan_cpu(const PsiPhi& p, const ShiftTable& s, float threshold, bool top_k_mode, int top_k,
                 std::size_t max_hits, bool dense, int threads, const JobContext& ctx,
                 const std::vector<float>& rho = {});

/// Per-exposure samples of one trajectory (integer or fractional, as the table).
void trajectory_curve_impl(const PsiPhi& p, const ShiftTable& s, const std::vector<float>& rho, int x, int y, int v,
                           float* a, float* b);

/// One exposure's bilinear sample (fractional mode). v[k], q[k] = psi, sqrt(phi) of the
/// neighbours 00, 10, 01, 11 (0 off the image or invalid), h[k] = phi; r = rho(1,0), rho(0,1),
/// rho(1,1), rho(1,-1). A fixed order of float operations (a GPU twin must keep it).
inline void fractional_sample(const float* v, const float* h, const float* q, float wx, float wy, const float* r,
                              float& a, float& b) {
  const float ux = 1.0f - wx, uy = 1.0f - wy;
  const float w00 = ux * uy, w10 = wx * uy, w01 = ux * wy, w11 = wx * wy;
  a = ((w00 * v[0] + w10 * v[1]) + w01 * v[2]) + w11 * v[3];
  const float d = (((w00 * w00) * h[0] + (w10 * w10) * h[1]) + (w01 * w01) * h[2]) + (w11 * w11) * h[3];
  const float cx = ((w00 * w10) * (q[0] * q[1])) + ((w01 * w11) * (q[2] * q[3]));
  const float cy = ((w00 * w01) * (q[0] * q[2])) + ((w10 * w11) * (q[1] * q[3]));
  const float cd = (w00 * w11) * (q[0] * q[3]);
  const float ca = (w10 * w01) * (q[1] * q[2]);
  b = d + 2.0f * (((r[0] * cx + r[1] * cy) + r[2] * cd) + r[3] * ca);
}

inline float score(float a, float b) { return b > 0.0f ? a / std::sqrt(b) : 0.0f; }

/// The integer-shift sums of origin row y at velocity v for the origins x in [xa, xb): each
/// exposure's shifted row is added, in exposure order, to A[x - xa], B[x - xa] (and C[x - xa],
/// the count of samples with phi > 0, when C is given). The CPU scan's accumulation, shared by
/// the scan (search_cpu.cpp) and the score cube (score_cube.cpp) so that their floats agree.
inline void accumulate_row(const PsiPhi& p, const ShiftTable& s, int y, int v, int xa, int xb, float* A,
                           float* B, std::int32_t* C) {
  const int W = p.width, H = p.height;
  const std::size_t np = p.pixels();
  const std::int32_t* sxv = s.sx.data() + std::size_t(v) * s.n_exp;
  const std::int32_t* syv = s.sy.data() + std::size_t(v) * s.n_exp;
  for (int e = 0; e < p.n; ++e) {
    const int yy = y + syv[e];
    if (yy < 0 || yy >= H) continue;
    const int sx = sxv[e];
    // Origins whose sample x + sx lies on the image.
    const int x0 = std::max(xa, -sx), x1 = std::min(xb, W - sx);
    const float* ps = p.psi.data() + std::size_t(e) * np + std::size_t(yy) * W + sx + xa;
    const float* ph = p.phi.data() + std::size_t(e) * np + std::size_t(yy) * W + sx + xa;
    if (C)
      for (int x = x0 - xa; x < x1 - xa; ++x) {
        A[x] += ps[x];
        B[x] += ph[x];
        C[x] += ph[x] > 0.0f ? 1 : 0;
      }
    else
      for (int x = x0 - xa; x < x1 - xa; ++x) {
        A[x] += ps[x];
        B[x] += ph[x];
      }
  }
}

/// Top-k order: higher z first, ties to the lower velocity index.
inline bool better(float z1, std::int32_t v1, float z2, std::int32_t v2) {
  return z1 > z2 || (z1 == z2 && v1 < v2);
}

}  // namespace almagest::stack::detail
