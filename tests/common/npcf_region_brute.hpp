#pragma once
// Brute-force oracle of normalised 2pCF / 3pCF counts over one data + randoms catalogue, shared by
// the delete-one jackknife test (tests/oracle/test_npcf_jackknife.cpp: leave out one region's
// points) and the several-sky-regions test (tests/oracle/test_npcf_regions.cpp: each region on its
// own). Independent of the engine's graph: every pair / triangle i < j < k is tested with directly
// computed distances (not periodic). Only for small inputs. Header-only: used by those two tests.
#include <array>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "almagest/io/catalogue.hpp"
#include "almagest/npcf/config.hpp"
#include "almagest/npcf/configurations.hpp"

namespace almagest::test {

struct NormalisedCounts {
  std::vector<double> n, r;  ///< per row (2pCF: bins; 3pCF: TriangleTable rows)
};

/// Pairs (order 2) or triangles (order 3) with every side in (rmin, rmax) of data d then randoms rn,
/// signed normalised weights of the whole catalogues: data w/sum(w_d), randoms -w/sum(w_r) (no
/// renormalisation when points are left out). n sums every tuple's product; r the all-random ones
/// (made positive for triangles: (-1)^3). labels: empty, or one per point (data then randoms); a
/// tuple with a member labelled `skip` is left out (labels empty: nothing is).
inline NormalisedCounts normalised_brute(const io::Catalogue& d, const io::Catalogue& rn, const npcf::Binning& b,
                                         int order, const std::vector<int>& labels = {}, int skip = 0) {
  std::vector<std::array<double, 3>> x;
  std::vector<double> w;
  double sd = 0, sr = 0;
  for (double v : d.w) sd += v;
  for (double v : rn.w) sr += v;
  for (std::size_t i = 0; i < d.x.size(); ++i) {
    x.push_back({d.x[i], d.y[i], d.z[i]});
    w.push_back(d.w[i] / sd);
  }
  for (std::size_t i = 0; i < rn.x.size(); ++i) {
    x.push_back({rn.x[i], rn.y[i], rn.z[i]});
    w.push_back(-rn.w[i] / sr);
  }
  const std::size_t N = x.size(), nd = d.x.size();
  const auto left_out = [&](std::size_t i) { return !labels.empty() && labels[i] == skip; };
  auto bin = [&](std::size_t i, std::size_t j) {
    double s = 0;
    for (int a = 0; a < 3; ++a) s += (x[i][a] - x[j][a]) * (x[i][a] - x[j][a]);
    if (!(s > b.rmin * b.rmin && s < b.rmax * b.rmax)) return -1;
    return b.bin_of(std::sqrt(s));
  };
  NormalisedCounts out;
  const npcf::TriangleTable tt(b.nbins);
  const std::size_t rows = order == 2 ? static_cast<std::size_t>(b.nbins) : tt.rows();
  out.n.assign(rows, 0.0);
  out.r.assign(rows, 0.0);
  for (std::size_t i = 0; i < N; ++i) {
    if (left_out(i)) continue;
    for (std::size_t j = i + 1; j < N; ++j) {
      if (left_out(j)) continue;
      const int bij = bin(i, j);
      if (bij < 0) continue;
      if (order == 2) {
        out.n[bij] += w[i] * w[j];
        if (i >= nd) out.r[bij] += w[i] * w[j];
        continue;
      }
      for (std::size_t k = j + 1; k < N; ++k) {
        if (left_out(k)) continue;
        const int bik = bin(i, k), bjk = bin(j, k);
        if (bik < 0 || bjk < 0) continue;
        const std::uint32_t row = tt.row(bij, bik, bjk);
        const double p = w[i] * w[j] * w[k];
        out.n[row] += p;
        if (i >= nd) out.r[row] -= p;  // all-random sums made positive: (-1)^3
      }
    }
  }
  return out;
}

/// |a - b| <= 1e-11 (scale + |b|): an engine sum against the oracle's, scale the largest |n|.
inline bool close_to_brute(double a, double b, double scale) {
  return std::fabs(a - b) <= 1e-11 * (scale + std::fabs(b));
}

/// The catalogue as text "x y z w" per line at full precision (the job's default columns).
inline void write_xyzw(const std::string& path, const io::Catalogue& c) {
  std::ofstream out(path);
  out.precision(17);
  for (std::size_t i = 0; i < c.x.size(); ++i)
    out << c.x[i] << ' ' << c.y[i] << ' ' << c.z[i] << ' ' << c.w[i] << '\n';
}

}  // namespace almagest::test
