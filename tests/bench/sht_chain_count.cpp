// Host count of how the single-column spin-0 Legendre adjoint's chunks run at one nside
// (docs/benchmarks.md): for every mode m, tile and warp of k_adjoint_spin0 (128 threads, eight
// ring pairs per thread, chunks of eight odd-chain steps, rescale checks every four steps; the
// chains run by the kernels' own odd_start / odd_step / odd_rescale of sht_math.cuh), the warp
// chunks before the first one in which a chain of the warp is scaled in (no chain counts: only
// the recursion is needed), those after it that still have an underflowed chain (the general
// copy), the chunks before the first counting chunk of the whole block, and the chunks of zero
// steps that the padded step layout (koff, whole chunks of kObasisChunk) adds to the mode's own
// ceil(steps / 8). Warp chunks are weighted by the chains per thread of their tile. No device
// needed.
// Usage: sht_chain_count [nside ...] (default 512 1024 2048)
#include "sht_math.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace sht = almagest::kernels::sht;

namespace {

constexpr int kThreads = 128;  // k_adjoint_spin0's block
constexpr int kPairs = 8;      // ring pairs per thread (launch_legendre_adjoint, one column)
constexpr int kChunk = 8;      // steps per reduction chunk (KA, one column)

struct Counts {
  double total = 0, idle = 0, general = 0, block_idle = 0, padded = 0, exact = 0;
};

/// The first chunk in which the odd chain of pair p for mode m counts (scale 0 at some step),
/// and the first chunk from whose start it stays scaled in; nchunk where it never does.
void chain_onset(int m, double nu, const sht::RingPair& g, const std::vector<double>& ab,
                 int nsteps, int nchunk, int& first_counting, int& all_in_from) {
  double v0 = 0.0, v1 = 0.0;
  int e = 0;
  sht::odd_start(m, nu, g, v0, v1, e);
  const double x2 = g.z * g.z;
  first_counting = e == 0 ? 0 : -1;
  all_in_from = e == 0 ? 0 : -1;
  for (int c = 0; c < nchunk && all_in_from < 0; ++c) {
    for (int s = 0; s < kChunk; ++s) {
      const int st = c * kChunk + s;
      const double a = st < nsteps ? ab[2 * st] : 0.0, b = st < nsteps ? ab[2 * st + 1] : 0.0;
      sht::odd_step(a, b, x2, v0, v1);
      if (e == 0 && first_counting < 0) first_counting = c;
      if ((s & 3) == 3) sht::odd_rescale(e, v0, v1);
    }
    if (e == 0) all_in_from = c + 1;
  }
  if (first_counting < 0) first_counting = nchunk;
  if (all_in_from < 0) all_in_from = nchunk;
}

Counts count(int nside) {
  const int lmax = 3 * nside - 1, npairs = 2 * nside, cap = kThreads * kPairs;
  std::vector<int> mlim(npairs);
  std::vector<sht::RingPair> geo(npairs);
  for (int p = 0; p < npairs; ++p) {
    const sht::RingInfo r = sht::ring_info(nside, p);
    mlim[p] = sht::mlim_of(lmax, 0, r.sth, r.z);
    geo[p] = {r.z, r.omz, 1.0 + r.z, r.sth};
  }
  Counts n;
  double nu = 1.0;
  std::vector<double> ab;
  std::vector<sht::ObasisNorm> norm;
  for (int m = 0; m <= lmax; ++m) {
    if (m > 0) nu *= std::sqrt((2.0 * m - 1.0) / (2.0 * m));
    int fa = npairs;  // the full sky's active list is every pair, pole -> equator
    for (int p = 0; p < npairs; ++p)
      if (mlim[p] >= m) {
        fa = p;
        break;
      }
    if (fa >= npairs) continue;
    const int nsteps = sht::obasis_steps(lmax, m);
    const int nchunk = (nsteps + kChunk - 1) / kChunk;
    const int npadded = (nsteps + 31) / 32 * 32;  // kObasisChunk
    ab.assign(2 * static_cast<std::size_t>(nsteps + 1), 0.0);
    norm.assign(static_cast<std::size_t>(nsteps + 1), sht::ObasisNorm{0.0, 0.0, 0.0});
    sht::fill_obasis(lmax, m, ab.data(), norm.data());
    for (int tile = fa; tile < npairs; tile += cap) {
      const int tile_end = std::min(tile + cap, npairs);
      const int kc = (tile_end - tile + kThreads - 1) / kThreads;
      int block_first = nchunk;
      for (int w = 0; w < kThreads / 32; ++w) {
        int warp_first = nchunk, warp_all_in = 0;
        for (int lane = 0; lane < 32; ++lane)
          for (int k = 0; k < kc; ++k) {
            const int p = tile + (w * kc + k) * 32 + lane;  // chain_index
            if (p >= tile_end || m > mlim[p]) continue;
            int first = 0, all_in = 0;
            chain_onset(m, nu, geo[p], ab, nsteps, nchunk, first, all_in);
            warp_first = std::min(warp_first, first);
            warp_all_in = std::max(warp_all_in, all_in);
          }
        block_first = std::min(block_first, warp_first);
        n.total += static_cast<double>(nchunk) * kc;
        n.idle += static_cast<double>(warp_first) * kc;
        n.general += static_cast<double>(std::max(0, warp_all_in - warp_first)) * kc;
        n.padded += static_cast<double>(npadded) / kChunk * kc;
        n.exact += static_cast<double>(nchunk) * kc;
      }
      n.block_idle += static_cast<double>(block_first) * kc * (kThreads / 32);
    }
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {512, 1024, 2048};
  std::printf("| nside | warp chunks with no counting chain | general copy after it | "
              "block chunks before the block's first counting one | chunks of padding |\n"
              "|---:|---:|---:|---:|---:|\n");
  for (int nside : sizes) {
    if (nside < 1) {
      std::fprintf(stderr, "sht_chain_count: invalid nside %d\n", nside);
      return 2;
    }
    const Counts n = count(nside);
    std::printf("| %d | %.2f%% | %.2f%% | %.2f%% | %.2f%% |\n", nside, 100.0 * n.idle / n.total,
                100.0 * n.general / n.total, 100.0 * n.block_idle / n.total,
                100.0 * (1.0 - n.exact / n.padded));
    std::fflush(stdout);
  }
  return 0;
}
