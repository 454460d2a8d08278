// The stamp test of filter_candidates() (filter_stamps.hpp; stack/filters.hpp, stage 5).
//
// Steps, whose results do not depend on how the work is split: (1) gather: each kept exposure's
// (2R+1)^2 block of sci and var (0 where the pixel is masked, not finite, outside the image or
// has no positive variance), [candidate][kept epoch][pixel], in parallel over exposure ranges,
// each range for every candidate of the group (candidates tested together are mostly
// neighbouring trajectories of one source, whose blocks share cache lines and pages; the cost is
// memory latency: every exposure is a new page); (2) per candidate and stamp row, each pixel's
// sums in exposure order (the same additions as one pass over the exposures) and its valid values
// in order; (3) per candidate, fm and the moments in pixel order; (4) for those that pass and are
// needed, per stamp row the medians, then fmed. (A pixel-major gather buffer was slower: with
// 1,024 kept epochs its 2 (2R+1)^2 write streams are 4 KB apart and fall into the same cache sets.)
// Large batches of candidates that are not neighbours use the fused form instead: one task per
// candidate, reading the stack row by row, no gather buffer.
#include "stack/filter_stamps.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>

namespace almagest::stack::detail {

namespace {

/// Mean normalised PSF of the stack on a (2R+1)^2 grid and the mean PSF sigma.
void mean_psf(const ExposureStack& st, int R, std::vector<double>& k, double& sigma) {
  const int side = 2 * R + 1;
  k.assign(std::size_t(side) * side, 0.0);
  double m2 = 0;
  std::size_t used = 0;
  for (const Psf& p : st.psf) {
    double sum = 0;
    for (float v : p.kernel) sum += v;
    if (p.size <= 0 || !(sum > 0)) continue;
    const int r = p.size / 2;
    double mm = 0;
    for (int y = 0; y < p.size; ++y)
      for (int x = 0; x < p.size; ++x) {
        const double v = p.kernel[std::size_t(y) * p.size + x] / sum;
        mm += v * double((x - r) * (x - r) + (y - r) * (y - r));
        const int u = x - r + R, w = y - r + R;
        if (u >= 0 && u < side && w >= 0 && w < side) k[std::size_t(w) * side + u] += v;
      }
    m2 += mm;
    ++used;
  }
  if (used) {
    for (double& v : k) v /= double(used);
    sigma = std::sqrt(m2 / double(used) / 2.0);
  } else {
    sigma = 1.0;
  }
}

/// Second moments about the stamp centre with a Gaussian weight of sigma w: size T = Mxx + Myy
/// and ellipticity |(Mxx - Myy, 2 Mxy)| / T. False when the weighted flux is not positive.
bool moments(const std::vector<double>& s, int R, double w, double& T, double& e) {
  const int side = 2 * R + 1;
  double m0 = 0, xx = 0, yy = 0, xy = 0;
  for (int y = -R; y <= R; ++y)
    for (int x = -R; x <= R; ++x) {
      const double g = std::exp(-0.5 * (x * x + y * y) / (w * w)) * s[std::size_t(y + R) * side + (x + R)];
      m0 += g;
      xx += g * x * x;
      yy += g * y * y;
      xy += g * x * y;
    }
  if (!(m0 > 0)) return false;
  xx /= m0;
  yy /= m0;
  xy /= m0;
  T = xx + yy;
  if (!(T > 0)) return false;
  e = std::hypot(xx - yy, 2 * xy) / T;
  return true;
}

double since(std::chrono::steady_clock::time_point a) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
}

}  // namespace

struct StampTest::Stamp {
  std::size_t nk = 0;                      ///< kept epochs
  std::vector<int> epochs;                 ///< the kept epochs, in order
  float* sv = nullptr;                     ///< [nk][spix]: value (in buf_; every element written)
  float* vv = nullptr;                     ///< [nk][spix]: variance, 0 = not valid
  float* vals = nullptr;                   ///< [spix][nk]: each pixel's valid values in exposure order
  std::vector<std::uint32_t> count;        ///< [spix]: valid values
  std::vector<double> mean, med, weighted; ///< [spix]
  std::vector<std::uint8_t> any;           ///< [spix]: at least one valid value
  double fm = 0;
};

StampTest::StampTest(const ExposureStack& stack, const PsiPhi& psiphi, const ShiftTable& shifts, const FilterConfig& cfg,
                     TaskPool& pool)
    : stack_(stack), p_(psiphi), s_(shifts), cfg_(cfg), pool_(pool), n_(psiphi.n), W_(psiphi.width), H_(psiphi.height),
      R_(cfg.stamp_radius), side_(2 * cfg.stamp_radius + 1), np_(psiphi.pixels()), spix_(std::size_t(side_) * side_) {
  // Gather order (ALMAGEST_STACK_STAMP_ORDER): row by row over a range's exposures with a
  // software prefetch kAhead exposures ahead (default), or "exposure": all rows of one exposure
  // before the next, prefetching two exposures ahead.
  const char* order = std::getenv("ALMAGEST_STACK_STAMP_ORDER");
  exposure_order_ = order && std::string(order) == "exposure";
  mean_psf(stack_, R_, K_, sigma_);
  for (double v : K_) kk_ += v * v;
  double epsf = 0;
  psf_ok_ = moments(K_, R_, 2.0 * sigma_, Tpsf_, epsf);
}

// Block origin (centre pixel) of candidate w in exposure e.
void StampTest::block_at(const FilterWork& w, int e, std::int64_t& x, std::int64_t& y) const {
  const std::size_t ke = std::size_t(w.c.v) * n_ + e;
  x = std::int64_t(w.c.x) + s_.sx[ke];
  y = std::int64_t(w.c.y) + s_.sy[ke];
}

// Prefetch of the image row y, columns [xa, xb] (clamped), of exposure e.
void StampTest::prefetch_span(int e, std::int64_t y, std::int64_t xa, std::int64_t xb) const {
  if (y < 0 || y >= H_) return;
  xa = xa < 0 ? 0 : xa >= W_ ? W_ - 1 : xa;
  xb = xb < 0 ? 0 : xb >= W_ ? W_ - 1 : xb;
  const std::size_t r0 = std::size_t(e) * np_ + std::size_t(y) * W_;
  const float* sci = stack_.sci.data() + r0;
  const float* var = stack_.var.data() + r0;
  const std::uint8_t* msk = stack_.mask.data() + r0;
  for (std::int64_t x = xa; x < xb; x += 16) {
    prefetch(sci + x);
    prefetch(var + x);
  }
  prefetch(sci + xb);
  prefetch(var + xb);
  for (std::int64_t x = xa; x < xb; x += 64) prefetch(msk + x);
  prefetch(msk + xb);
}

void StampTest::copy_row(Stamp& st, std::size_t k, int e, std::int64_t x, std::int64_t y, int v) const {
  const std::int64_t yy = y + v;
  float* sd = st.sv + k * spix_ + std::size_t(v + R_) * side_;
  float* vd = st.vv + k * spix_ + std::size_t(v + R_) * side_;
  for (int u = -R_; u <= R_; ++u) {
    const std::int64_t xx = x + u;
    float sv = 0, vv = 0;
    if (yy >= 0 && yy < H_ && xx >= 0 && xx < W_) {
      const std::size_t i = std::size_t(e) * np_ + std::size_t(yy) * W_ + std::size_t(xx);
      sv = stack_.sci[i];
      vv = stack_.var[i];
      if (stack_.mask[i] || !std::isfinite(sv) || !(vv > 0)) sv = vv = 0;
    }
    sd[u + R_] = sv;
    vd[u + R_] = vv;
  }
}

// Step 1 for exposures [e0, e1) of the candidates cand[t] (into st[t]).
void StampTest::gather(const std::vector<const FilterWork*>& cand, std::vector<Stamp>& st, int e0, int e1) const {
  const std::size_t ng = cand.size();
  std::vector<std::size_t> k0(ng);
  for (std::size_t t = 0; t < ng; ++t)
    k0[t] = std::size_t(std::lower_bound(st[t].epochs.begin(), st[t].epochs.end(), e0) - st[t].epochs.begin());
  // Rows v0..v1 of exposure e of every candidate: one span per image row when the blocks are
  // neighbours, else each block's.
  auto prefetch_blocks = [&](int e, int v0, int v1) {
    std::int64_t x0 = 0, x1 = 0, y0 = 0, y1 = 0;
    for (std::size_t t = 0; t < ng; ++t) {
      std::int64_t x, y;
      block_at(*cand[t], e, x, y);
      if (t == 0 || x < x0) x0 = x;
      if (t == 0 || x > x1) x1 = x;
      if (t == 0 || y < y0) y0 = y;
      if (t == 0 || y > y1) y1 = y;
    }
    if (x1 - x0 <= 2 * side_ && y1 - y0 <= 2) {
      for (std::int64_t y = y0 + v0; y <= y1 + v1; ++y) prefetch_span(e, y, x0 - R_, x1 + R_);
      return;
    }
    for (std::size_t t = 0; t < ng; ++t) {
      std::int64_t x, y;
      block_at(*cand[t], e, x, y);
      for (int v = v0; v <= v1; ++v) prefetch_span(e, y + v, x - R_, x + R_);
    }
  };
  if (exposure_order_) {
    constexpr int kBlocksAhead = 2;
    for (int e = e0; e < std::min(e1, e0 + kBlocksAhead); ++e) prefetch_blocks(e, -R_, R_);
    for (int e = e0; e < e1; ++e) {
      if (e + kBlocksAhead < e1) prefetch_blocks(e + kBlocksAhead, -R_, R_);
      for (std::size_t t = 0; t < ng; ++t) {
        if (k0[t] >= st[t].nk || st[t].epochs[k0[t]] != e) continue;
        std::int64_t x, y;
        block_at(*cand[t], e, x, y);
        for (int v = -R_; v <= R_; ++v) copy_row(st[t], k0[t], e, x, y, v);
        ++k0[t];
      }
    }
    return;
  }
  std::vector<std::size_t> k(ng);
  for (int v = -R_; v <= R_; ++v) {
    k = k0;
    for (int e = e0; e < e1; ++e) {
      if (e + kAhead < e1) prefetch_blocks(e + kAhead, v, v);
      for (std::size_t t = 0; t < ng; ++t) {
        if (k[t] >= st[t].nk || st[t].epochs[k[t]] != e) continue;
        std::int64_t x, y;
        block_at(*cand[t], e, x, y);
        copy_row(st[t], k[t], e, x, y, v);
        ++k[t];
      }
    }
  }
}

// Step 2 for one stamp row: sums in exposure order, the mean and weighted mean, and each pixel's
// valid values in order (for step 4).
void StampTest::sums_row(Stamp& st, std::size_t row) const {
  const std::size_t nk = st.nk, q0 = row * side_, side = std::size_t(side_);
  std::vector<std::uint32_t> cnt(side, 0);
  std::vector<double> sum(side, 0.0), wsum(sum), wval(sum);
  float* val = st.vals + q0 * nk;
  for (std::size_t k = 0; k < nk; ++k) {
    const float* sk = st.sv + k * spix_ + q0;
    const float* vk = st.vv + k * spix_ + q0;
    for (std::size_t c = 0; c < side; ++c) {
      const float sv = sk[c], vv = vk[c];
      if (!(vv > 0)) continue;
      val[c * nk + cnt[c]++] = sv;
      sum[c] += sv;
      wsum[c] += 1.0 / vv;
      wval[c] += sv / vv;
    }
  }
  for (std::size_t c = 0; c < side; ++c) {
    const std::size_t q = q0 + c;
    st.count[q] = cnt[c];
    if (cnt[c] == 0) continue;
    st.any[q] = 1;
    st.weighted[q] = wval[c] / wsum[c];
    st.mean[q] = sum[c] / double(cnt[c]);
  }
}

// Step 4 for one stamp row: each pixel's median.
void StampTest::median_row(Stamp& st, std::size_t row) const {
  for (std::size_t q = row * side_; q < (row + 1) * side_; ++q) {
    const std::size_t n_c = st.count[q];
    if (n_c == 0) continue;
    float* v = st.vals + q * st.nk;
    const std::size_t m = n_c / 2;
    std::nth_element(v, v + m, v + n_c);
    double med = v[m];
    if (n_c % 2 == 0) med = 0.5 * (med + *std::max_element(v, v + m));
    st.med[q] = med;
  }
}

// Step 3: false when fm or the moments reject the candidate; else fm kept for step 4.
bool StampTest::first_parts(const std::vector<double>& mean, const std::vector<double>& weighted,
                            const std::vector<std::uint8_t>& any, double& fm) const {
  fm = 0;
  for (std::size_t q = 0; q < spix_; ++q)
    if (any[q]) fm += mean[q] * K_[q];
  fm /= kk_;
  if (!(fm > 0)) return false;
  if (!psf_ok_) return true;
  double T = 0, e = 0;
  return moments(weighted, R_, 2.0 * sigma_, T, e) && T <= cfg_.stamp_max_size_ratio * Tpsf_ &&
         T >= Tpsf_ / cfg_.stamp_max_size_ratio && e <= cfg_.stamp_max_ellipticity;
}

bool StampTest::median_part(const std::vector<double>& med, const std::vector<std::uint8_t>& any, double fm) const {
  double fmed = 0;
  for (std::size_t q = 0; q < spix_; ++q)
    if (any[q]) fmed += med[q] * K_[q];
  fmed /= kk_;
  return !(fmed < cfg_.stamp_median_ratio * fm);
}

// One candidate's whole test in one task (no gather buffer), row by row: each stamp pixel's
// values and sums in exposure order (the same additions as the split form); the reads are the
// cost, one cache line per row and exposure.
bool StampTest::fused(const FilterWork& w) const {
  const std::size_t side = std::size_t(side_);
  std::vector<std::vector<float>> pix(spix_);
  std::vector<double> sum(spix_, 0.0), wsum(spix_, 0.0), wval(spix_, 0.0);
  for (std::size_t row = 0; row < side; ++row) {
    const int v = int(row) - R_;
    // The row's accumulators stay local to the task (neighbouring rows share cache lines).
    std::vector<std::vector<float>> rpix(side);
    for (auto& r : rpix) r.reserve(std::size_t(n_));
    std::vector<double> rsum(side, 0.0), rwsum(rsum), rwval(rsum);
    for (int e = 0; e < n_; ++e) {
      // Each exposure's row is a new page: prefetch a few exposures ahead (latency bound).
      if (e + kAhead < n_) {
        std::int64_t xa, ya;
        block_at(w, e + kAhead, xa, ya);
        prefetch_span(e + kAhead, ya + v, xa - R_, xa + R_);
      }
      if (!w.keep[e]) continue;
      std::int64_t x, y;
      block_at(w, e, x, y);
      const std::int64_t yy = y + v;
      if (yy < 0 || yy >= H_) continue;
      for (int u = -R_; u <= R_; ++u) {
        const std::int64_t xx = x + u;
        if (xx < 0 || xx >= W_) continue;
        const std::size_t i = std::size_t(e) * np_ + std::size_t(yy) * W_ + std::size_t(xx);
        const float sv = stack_.sci[i], vv = stack_.var[i];
        if (stack_.mask[i] || !std::isfinite(sv) || !(vv > 0)) continue;
        const std::size_t c = std::size_t(u + R_);
        rpix[c].push_back(sv);
        rsum[c] += sv;
        rwsum[c] += 1.0 / vv;
        rwval[c] += sv / vv;
      }
    }
    for (std::size_t c = 0; c < side; ++c) {
      const std::size_t q = row * side + c;
      pix[q] = std::move(rpix[c]);
      sum[q] = rsum[c];
      wsum[q] = rwsum[c];
      wval[q] = rwval[c];
    }
  }
  std::vector<double> mean(spix_, 0.0), weighted(spix_, 0.0), med(spix_, 0.0);
  std::vector<std::uint8_t> any(spix_, 0);
  for (std::size_t q = 0; q < spix_; ++q) {
    if (pix[q].empty()) continue;
    any[q] = 1;
    weighted[q] = wval[q] / wsum[q];
    mean[q] = sum[q] / double(pix[q].size());
  }
  double fm = 0;
  if (!first_parts(mean, weighted, any, fm)) return false;
  for (std::size_t q = 0; q < spix_; ++q) {
    auto& v = pix[q];
    if (v.empty()) continue;
    const std::size_t m = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + m, v.end());
    double md = v[m];
    if (v.size() % 2 == 0) md = 0.5 * (md + *std::max_element(v.begin(), v.begin() + m));
    med[q] = md;
  }
  return median_part(med, any, fm);
}

// Steps 1-3 of the split form for the candidates `cand`: first[t] when fm and the moments pass
// (the medians decide); the data stay in buf_ for medians().
void StampTest::prepare(const std::vector<const FilterWork*>& cand, std::vector<Stamp>& st, std::vector<std::uint8_t>& first) {
  const std::size_t ng = cand.size(), nthreads = std::size_t(pool_.threads());
  const auto ta = std::chrono::steady_clock::now();
  ++profile.groups;
  profile.gathered += ng;
  st.assign(ng, Stamp{});
  std::size_t need = 0;
  for (std::size_t t = 0; t < ng; ++t) {
    for (int e = 0; e < n_; ++e)
      if (cand[t]->keep[e]) st[t].epochs.push_back(e);
    st[t].nk = st[t].epochs.size();
    need += 3 * spix_ * st[t].nk;
  }
  // One uninitialised buffer, grown when needed (no zero fill: the gather and the sums write every
  // element read; its pages are first touched by those tasks).
  if (need > buf_cap_) {
    buf_.reset(new float[need]);
    buf_cap_ = need;
  }
  for (std::size_t t = 0, off = 0; t < ng; ++t) {
    st[t].sv = buf_.get() + off;
    st[t].vv = st[t].sv + spix_ * st[t].nk;
    st[t].vals = st[t].vv + spix_ * st[t].nk;
    off += 3 * spix_ * st[t].nk;
    st[t].count.assign(spix_, 0);
    st[t].mean.assign(spix_, 0.0);
    st[t].med.assign(spix_, 0.0);
    st[t].weighted.assign(spix_, 0.0);
    st[t].any.assign(spix_, 0);
  }
  // Exposure ranges of at least 32 exposures, about two per thread.
  const std::size_t chunk = std::max<std::size_t>(32, (std::size_t(n_) + 2 * nthreads - 1) / (2 * nthreads));
  const std::size_t nranges = (std::size_t(n_) + chunk - 1) / chunk;
  profile.setup += since(ta);
  const auto tg = std::chrono::steady_clock::now();
  pool_.run(nranges, "stamps", [&](std::size_t r) {
    gather(cand, st, int(r * chunk), int(std::min<std::size_t>(std::size_t(n_), (r + 1) * chunk)));
  });
  profile.gather += since(tg);
  const auto tr = std::chrono::steady_clock::now();
  pool_.run(ng * std::size_t(side_), "stamps", [&](std::size_t r) { sums_row(st[r / side_], r % side_); });
  first.assign(ng, 0);
  for (std::size_t t = 0; t < ng; ++t) first[t] = first_parts(st[t].mean, st[t].weighted, st[t].any, st[t].fm) ? 1 : 0;
  profile.reduce += since(tr);
}

// Step 4 for st[idx...]: their verdicts.
std::vector<std::uint8_t> StampTest::medians(std::vector<Stamp>& st, const std::vector<std::size_t>& idx) {
  const auto tr = std::chrono::steady_clock::now();
  profile.medians += idx.size();
  pool_.run(idx.size() * std::size_t(side_), "stamps", [&](std::size_t r) { median_row(st[idx[r / side_]], r % side_); });
  std::vector<std::uint8_t> pass(idx.size());
  for (std::size_t k = 0; k < idx.size(); ++k) pass[k] = median_part(st[idx[k]].med, st[idx[k]].any, st[idx[k]].fm) ? 1 : 0;
  profile.reduce += since(tr);
  return pass;
}

std::vector<std::int8_t> StampTest::verdicts(const std::vector<const FilterWork*>& list, std::size_t spec_from, bool head_in_list) {
  std::vector<std::int8_t> ok(list.size(), -1);
  const std::size_t nthreads = std::size_t(pool_.threads());
  // Groups whose buffers stay under kStampBytes (large radii).
  constexpr std::size_t kStampBytes = std::size_t(512) << 20;
  const std::size_t per = std::max<std::size_t>(1, spix_ * std::size_t(std::max(n_, 1)) * 3 * sizeof(float));
  const std::size_t group = std::max<std::size_t>(1, kStampBytes / per);
  std::vector<Stamp> st;
  std::vector<const FilterWork*> cand;
  std::vector<std::uint8_t> first;
  // The needed ones: the fused form, one candidate per task, when there are at least as many as
  // threads and they are not neighbours (every block in the first and last exposure within 2 px
  // of the first candidate's) or there is one thread (the split form's extra pass over the
  // gathered blocks costs more than it saves then; 2-core machine: bench_stack_post 1024 128 128
  // 17 2); else the split form.
  bool neighbours = true;
  for (std::size_t t = 1; t < spec_from && neighbours; ++t)
    for (int e : {0, n_ - 1}) {
      std::int64_t x0, y0, x1, y1;
      block_at(*list[0], e, x0, y0);
      block_at(*list[t], e, x1, y1);
      if (std::llabs(x1 - x0) > 2 || std::llabs(y1 - y0) > 2) neighbours = false;
    }
  if (spec_from >= nthreads && (spec_from == 1 || !neighbours)) {
    profile.fused += spec_from;
    pool_.run(spec_from, "stamps", [&](std::size_t t) { ok[t] = fused(*list[t]) ? 1 : 0; });
  } else {
    for (std::size_t g0 = 0; g0 < spec_from; g0 += group) {
      const std::size_t g1 = std::min(spec_from, g0 + group);
      cand.assign(list.begin() + std::ptrdiff_t(g0), list.begin() + std::ptrdiff_t(g1));
      prepare(cand, st, first);
      std::vector<std::size_t> idx;
      for (std::size_t t = g0; t < g1; ++t) {
        if (first[t - g0]) idx.push_back(t - g0);
        else ok[t] = 0;
      }
      const std::vector<std::uint8_t> pass = medians(st, idx);
      for (std::size_t k = 0; k < idx.size(); ++k) ok[g0 + idx[k]] = std::int8_t(pass[k]);
    }
  }
  // The speculative ones, while the chain of rejections is open.
  bool open = !head_in_list || ok[0] == 0;
  for (std::size_t g0 = spec_from, size = 1; open && g0 < list.size(); size *= 2) {
    const std::size_t g1 = std::min(list.size(), g0 + std::min(size, group));
    cand.assign(list.begin() + std::ptrdiff_t(g0), list.begin() + std::ptrdiff_t(g1));
    prepare(cand, st, first);
    for (std::size_t t = g0; t < g1; ++t) {
      if (!first[t - g0]) {
        ok[t] = 0;
      } else if (open) {
        ok[t] = std::int8_t(medians(st, {t - g0})[0]);
        open = ok[t] == 0;
      }
    }
    g0 = g1;
  }
  for (std::int8_t v : ok) profile.undecided += v < 0;
  return ok;
}

}  // namespace almagest::stack::detail
