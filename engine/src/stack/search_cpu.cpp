// The CPU twin of the search kernels: one task per origin row; for each velocity every exposure
// adds its shifted row into float accumulators in exposure order (the same order and precision as
// every GPU gather, hence bit-identical sums).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>

#include "almagest/core/error.hpp"
#include "almagest/stack/row_partition.hpp"
#include "core/parallel.hpp"
#include "search_internal.hpp"

namespace almagest::stack::detail {

TrajectorySums evaluate_one(const PsiPhi& p, const ShiftTable& s, int x, int y, int v) {
  TrajectorySums t;
  const int W = p.width, H = p.height;
  const std::size_t np = p.pixels();
  for (int e = 0; e < p.n; ++e) {
    const int xx = x + s.sx[std::size_t(v) * s.n_exp + e];
    const int yy = y + s.sy[std::size_t(v) * s.n_exp + e];
    if (xx < 0 || xx >= W || yy < 0 || yy >= H) continue;
    const std::size_t i = std::size_t(e) * np + std::size_t(yy) * W + xx;
    t.a += p.psi[i];
    t.b += p.phi[i];
    t.obs += p.phi[i] > 0.0f ? 1 : 0;
  }
  return t;
}

namespace {

/// The fractional sample of trajectory (x, y) at exposure e with offsets (fx, fy, wx, wy).
inline void fractional_at(const PsiPhi& p, const float* sq, int e, int x, int y, std::int32_t fx, std::int32_t fy, float wx,
                          float wy, const float* r, float& a, float& b) {
  const int W = p.width, H = p.height;
  const std::size_t base = std::size_t(e) * p.pixels();
  float v[4], h[4], q[4];
  for (int k = 0; k < 4; ++k) {
    const std::int64_t xx = std::int64_t(x) + fx + (k & 1), yy = std::int64_t(y) + fy + (k >> 1);
    if (xx < 0 || xx >= W || yy < 0 || yy >= H) {
      v[k] = h[k] = q[k] = 0.0f;
      continue;
    }
    const std::size_t i = base + std::size_t(yy) * W + std::size_t(xx);
    v[k] = p.psi[i];
    h[k] = p.phi[i];
    q[k] = sq ? sq[i] : std::sqrt(p.phi[i]);
  }
  fractional_sample(v, h, q, wx, wy, r, a, b);
}

}  // namespace

void trajectory_curve_impl(const PsiPhi& p, const ShiftTable& s, const std::vector<float>& rho, int x, int y, int v,
                           float* a, float* b) {
  const int W = p.width, H = p.height;
  const std::size_t np = p.pixels();
  for (int e = 0; e < p.n; ++e) {
    const std::size_t k = std::size_t(v) * s.n_exp + e;
    if (s.fractional()) {
      fractional_at(p, nullptr, e, x, y, s.fx[k], s.fy[k], s.wx[k], s.wy[k], rho.data() + 4 * std::size_t(e), a[e], b[e]);
      continue;
    }
    const std::int64_t xx = std::int64_t(x) + s.sx[k], yy = std::int64_t(y) + s.sy[k];
    a[e] = b[e] = 0.0f;
    if (xx < 0 || xx >= W || yy < 0 || yy >= H) continue;
    const std::size_t i = std::size_t(e) * np + std::size_t(yy) * W + std::size_t(xx);
    a[e] = p.psi[i];
    b[e] = p.phi[i];
  }
}

CpuScan scan_cpu(const PsiPhi& p, const ShiftTable& s, float threshold, bool top_k_mode, int top_k,
                 std::size_t max_hits, bool dense, int threads, const JobContext& ctx, const std::vector<float>& rho) {
  const int W = p.width, H = p.height, n = p.n, nv = s.n_vel;
  const std::size_t np = p.pixels();
  const bool frac = s.fractional();
  std::vector<float> sqrt_phi;
  if (frac) {
    sqrt_phi.resize(p.phi.size());
    for (std::size_t i = 0; i < p.phi.size(); ++i) sqrt_phi[i] = std::sqrt(p.phi[i]);
  }
  CpuScan out;
  if (dense) {
    out.dense_a.assign(std::size_t(nv) * np, 0.0f);
    out.dense_b.assign(std::size_t(nv) * np, 0.0f);
    out.dense_obs.assign(std::size_t(nv) * np, 0);
  }
  struct Row {
    Digest d;
    std::vector<RawHit> hits;
    std::uint64_t total = 0;
  };
  std::vector<Row> rows(H);
  // A search split by origin row bands (stack/row_partition.hpp): this process's rows only.
  RowPartition* part = active_row_partition();
  int band0 = 0, band1 = H;
  if (part) std::tie(band0, band1) = row_band(H, part->rank, part->ranks);
  parallel::parallel_for(std::size_t(band1 - band0), threads, ctx, "search (cpu)", [&](std::size_t k) {
    const std::size_t yi = std::size_t(band0) + k;
    const int y = static_cast<int>(yi);
    Row& row = rows[yi];
    row.d.max_z = 0;
    std::vector<float> A(W), B(W);
    std::vector<std::int32_t> C(W);
    // top-k state per origin in this row: k entries of (z, v, a, b, obs)
    std::vector<RawHit> best;
    std::vector<int> nbest;
    if (top_k_mode) {
      best.assign(std::size_t(W) * top_k, RawHit{});
      nbest.assign(W, 0);
    }
    for (int v = 0; v < nv; ++v) {
      std::fill(A.begin(), A.end(), 0.0f);
      std::fill(B.begin(), B.end(), 0.0f);
      std::fill(C.begin(), C.end(), 0);
      if (frac)
        for (int e = 0; e < n; ++e) {
          const std::size_t k = std::size_t(v) * s.n_exp + e;
          const float* r = rho.data() + 4 * std::size_t(e);
          for (int x = 0; x < W; ++x) {
            float a = 0, b = 0;
            fractional_at(p, sqrt_phi.data(), e, x, y, s.fx[k], s.fy[k], s.wx[k], s.wy[k], r, a, b);
            A[x] += a;
            B[x] += b;
            C[x] += b > 0.0f ? 1 : 0;
          }
        }
      else
        accumulate_row(p, s, y, v, 0, W, A.data(), B.data(), C.data());
      for (int x = 0; x < W; ++x) {
        const float z = score(A[x], B[x]);
        row.d.sum_a += A[x];
        row.d.sum_b += B[x];
        if (z > row.d.max_z) row.d.max_z = z;
        if (z >= threshold) ++row.d.count_above;
        if (dense) {
          const std::size_t o = std::size_t(v) * np + std::size_t(y) * W + x;
          out.dense_a[o] = A[x];
          out.dense_b[o] = B[x];
          out.dense_obs[o] = C[x];
        }
        const RawHit h{x, y, v, z, A[x], B[x], C[x]};
        if (top_k_mode) {
          RawHit* b = best.data() + std::size_t(x) * top_k;
          int& nb = nbest[x];
          if (nb < top_k || better(z, v, b[nb - 1].z, b[nb - 1].v)) {
            int pos = nb < top_k ? nb++ : top_k - 1;
            while (pos > 0 && better(z, v, b[pos - 1].z, b[pos - 1].v)) {
              b[pos] = b[pos - 1];
              --pos;
            }
            b[pos] = h;
          }
        } else if (z >= threshold) {
          row.hits.push_back(h);
          ++row.total;
        }
      }
    }
    if (top_k_mode)
      for (int x = 0; x < W; ++x)
        for (int k = 0; k < nbest[x]; ++k) row.hits.push_back(best[std::size_t(x) * top_k + k]);
  });
  if (part) {
    // The band's rows go to process 0, which merges every band's rows in row order below; the
    // other processes end with no rows (no hits).
    part->row0 = band0;
    part->row1 = band1;
    part->height = H;
    part->hits = 0;
    std::vector<std::uint8_t> bytes;
    auto put = [&bytes](const void* p, std::size_t n) {
      const auto* b = static_cast<const std::uint8_t*>(p);
      bytes.insert(bytes.end(), b, b + n);
    };
    for (int y = band0; y < band1; ++y) {
      const Row& r = rows[std::size_t(y)];
      const std::uint64_t nh = r.hits.size();
      part->hits += r.total;
      put(&r.d.sum_a, sizeof r.d.sum_a);
      put(&r.d.sum_b, sizeof r.d.sum_b);
      put(&r.d.max_z, sizeof r.d.max_z);
      put(&r.d.count_above, sizeof r.d.count_above);
      put(&r.total, sizeof r.total);
      put(&nh, sizeof nh);
      if (nh) put(r.hits.data(), nh * sizeof(RawHit));
    }
    std::vector<std::vector<std::uint8_t>> all =
        part->ranks > 1 && part->gather ? part->gather(bytes) : std::vector<std::vector<std::uint8_t>>{bytes};
    rows.assign(all.empty() ? 0 : std::size_t(H), Row{});
    for (std::size_t rk = 0; rk < all.size(); ++rk) {
      const auto [r0, r1] = row_band(H, static_cast<int>(rk), part->ranks);
      const std::vector<std::uint8_t>& in = all[rk];
      std::size_t at = 0;
      auto get = [&](void* p, std::size_t n) {
        if (in.size() - at < n) throw Error("stack row bands: the rows received from process " + std::to_string(rk) + " are truncated");
        std::memcpy(p, in.data() + at, n);
        at += n;
      };
      for (int y = r0; y < r1; ++y) {
        Row& r = rows[std::size_t(y)];
        std::uint64_t nh = 0;
        get(&r.d.sum_a, sizeof r.d.sum_a);
        get(&r.d.sum_b, sizeof r.d.sum_b);
        get(&r.d.max_z, sizeof r.d.max_z);
        get(&r.d.count_above, sizeof r.d.count_above);
        get(&r.total, sizeof r.total);
        get(&nh, sizeof nh);
        if (nh > (in.size() - at) / sizeof(RawHit)) throw Error("stack row bands: the rows received from process " + std::to_string(rk) + " are truncated");
        r.hits.resize(nh);
        if (nh) get(r.hits.data(), nh * sizeof(RawHit));
      }
      if (at != in.size()) throw Error("stack row bands: process " + std::to_string(rk) + " sent rows of the wrong size");
    }
  }
  // Merge rows in order: deterministic for any thread count.
  for (auto& r : rows) {
    out.digest.sum_a += r.d.sum_a;
    out.digest.sum_b += r.d.sum_b;
    out.digest.max_z = std::max(out.digest.max_z, r.d.max_z);
    out.digest.count_above += r.d.count_above;
    out.total_hits += top_k_mode ? r.hits.size() : r.total;
    for (auto& h : r.hits) {
      if (out.hits.size() >= max_hits) break;
      out.hits.push_back(h);
    }
  }
  // Threshold hits are sorted by (v, y, x) in the GPU results; keep one canonical order here too.
  return out;
}

}  // namespace almagest::stack::detail

namespace almagest::stack {
TrajectorySums evaluate_trajectory(const PsiPhi& p, const ShiftTable& s, int x, int y, int v, const std::vector<float>& rho) {
  if (!s.fractional()) return detail::evaluate_one(p, s, x, y, v);
  std::vector<float> a(std::size_t(p.n)), b(std::size_t(p.n));
  detail::trajectory_curve_impl(p, s, rho, x, y, v, a.data(), b.data());
  TrajectorySums t;
  for (int e = 0; e < p.n; ++e) {
    t.a += a[e];
    t.b += b[e];
    t.obs += b[e] > 0.0f ? 1 : 0;
  }
  return t;
}

void trajectory_curve(const PsiPhi& p, const ShiftTable& s, const std::vector<float>& rho, int x, int y, int v, float* a,
                      float* b) {
  detail::trajectory_curve_impl(p, s, rho, x, y, v, a, b);
}

std::vector<float> psf_correlations(const ExposureStack& st) {
  std::vector<float> out(4 * st.size(), 0.0f);
  for (std::size_t e = 0; e < st.psf.size() && e < st.size(); ++e) {
    const Psf& k = st.psf[e];
    const int n = k.size;
    double sum = 0;
    for (float v : k.kernel) sum += v;
    if (n <= 0 || !(sum != 0)) continue;
    auto K = [&](int x, int y) { return x < 0 || x >= n || y < 0 || y >= n ? 0.0 : double(k.kernel[std::size_t(y) * n + x]) / sum; };
    const int lag[4][2] = {{1, 0}, {0, 1}, {1, 1}, {1, -1}};
    double k2 = 0;
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) k2 += K(x, y) * K(x, y);
    for (int l = 0; l < 4; ++l) {
      double c = 0;
      for (int y = 0; y < n; ++y)
        for (int x = 0; x < n; ++x) c += K(x, y) * K(x + lag[l][0], y + lag[l][1]);
      out[4 * e + l] = k2 > 0 ? float(c / k2) : 0.0f;
    }
  }
  return out;
}
}  // namespace almagest::stack
