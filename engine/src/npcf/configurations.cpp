// Configuration (row) tables of the 3pCF and 4pCF; see configurations.hpp and
// docs/npcf-fourpoint.md for the canonicalisation and relabelling-sign convention.
#include "almagest/npcf/configurations.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "almagest/core/error.hpp"

namespace almagest::npcf {

namespace {

/// The 24 vertex relabellings of the published relabelling-sign rule, in its fixed order
/// (npcf-conventions.md, "Relabelling sign"): P acts on a 6-tuple t as new(j) = t(P(j)) with edges
/// 1 = (1,2), 2 = (1,3), 3 = (1,4), 4 = (2,3), 5 = (2,4), 6 = (3,4) (here 0-based). The order
/// matters: for a tuple with repeated bins several relabellings reach it from its canonical tuple,
/// and the first one in this order gives the sign.
constexpr int kPublishedEdgePerm[24][6] = {
    {1, 2, 3, 4, 5, 6},  // ()
    {1, 4, 5, 2, 3, 6},  // (12)
    {4, 2, 6, 1, 5, 3},  // (13)
    {5, 6, 3, 4, 1, 2},  // (14)
    {2, 1, 3, 4, 6, 5},  // (23)
    {3, 2, 1, 6, 5, 4},  // (24)
    {1, 3, 2, 5, 4, 6},  // (34)
    {1, 5, 4, 3, 2, 6},  // (12)(34)
    {6, 2, 4, 3, 5, 1},  // (13)(24)
    {6, 5, 3, 4, 2, 1},  // (14)(23)
    {4, 1, 5, 2, 6, 3},  // (123)
    {5, 4, 1, 6, 3, 2},  // (124)
    {2, 4, 6, 1, 3, 5},  // (132)
    {4, 6, 2, 5, 1, 3},  // (134)
    {3, 6, 5, 2, 1, 4},  // (142)
    {5, 3, 6, 1, 4, 2},  // (143)
    {2, 3, 1, 6, 4, 5},  // (234)
    {3, 1, 2, 5, 6, 4},  // (243)
    {4, 5, 1, 6, 2, 3},  // (1234)
    {5, 1, 4, 3, 6, 2},  // (1243)
    {6, 4, 2, 5, 3, 1},  // (1324)
    {2, 6, 4, 3, 1, 5},  // (1342)
    {6, 3, 5, 2, 4, 1},  // (1423)
    {3, 5, 6, 1, 2, 4},  // (1432)
};
/// Permutation parity of each entry (identity, 6 transpositions, 3 double transpositions and 8
/// 3-cycles even; the 6 4-cycles odd).
constexpr int kPublishedParity[24] = {+1, -1, -1, -1, -1, -1, -1, +1, +1, +1, +1, +1,
                                      +1, +1, +1, +1, +1, +1, -1, -1, -1, -1, -1, -1};

/// 0-based edge maps of the relabellings: apply(k, t)[e] = t[edge_map[k][e]].
struct Relabellings {
  std::array<std::array<int, 6>, 24> edge_map{};
  std::array<int, 24> sign{};

  Relabellings() {
    for (int k = 0; k < 24; ++k) {
      for (int e = 0; e < 6; ++e) edge_map[k][e] = kPublishedEdgePerm[k][e] - 1;
      sign[k] = kPublishedParity[k];
    }
  }
};

const Relabellings& relabellings() {
  static const Relabellings r;  // immutable after construction (thread-safe static init)
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// 3pCF

std::uint64_t num_rows_3pcf(int nbins) {
  const auto n = static_cast<std::uint64_t>(nbins);
  return n * (n + 1) * (n + 2) / 6;
}

TriangleTable::TriangleTable(int nbins) : n_(nbins), rows_(0) {
  if (nbins < 1 || nbins > 255)
    throw ConfigError("nbins", "number of bins must be in 1..255 (got " + std::to_string(nbins) + ")");
  offset_.assign(static_cast<std::size_t>(n_) * n_, 0);
  std::uint32_t row = 0;
  for (int b1 = 0; b1 < n_; ++b1)
    for (int b2 = b1; b2 < n_; ++b2) {
      offset_[static_cast<std::size_t>(b1) * n_ + b2] = row;
      row += static_cast<std::uint32_t>(n_ - b2);
    }
  rows_ = row;
}

std::uint32_t TriangleTable::row(int a, int b, int c) const noexcept {
  if (a > b) std::swap(a, b);
  if (b > c) std::swap(b, c);
  if (a > b) std::swap(a, b);
  return row_sorted(a, b, c);
}

std::array<std::uint8_t, 3> TriangleTable::bins(std::uint32_t r) const {
  ALMAGEST_ASSERT(r < rows_, "triangle row out of range");
  for (int b1 = 0; b1 < n_; ++b1)
    for (int b2 = b1; b2 < n_; ++b2) {
      const std::uint32_t off = offset_[static_cast<std::size_t>(b1) * n_ + b2];
      if (r >= off && r < off + static_cast<std::uint32_t>(n_ - b2))
        return {static_cast<std::uint8_t>(b1), static_cast<std::uint8_t>(b2),
                static_cast<std::uint8_t>(b2 + static_cast<int>(r - off))};
    }
  ALMAGEST_ASSERT(false, "triangle row not found");
  return {};
}

// ---------------------------------------------------------------------------------------------
// 4pCF

std::uint64_t TetraTable::expected_rows(int nbins) {
  const auto n = static_cast<std::uint64_t>(nbins);
  const std::uint64_t n2 = n * n, n4 = n2 * n2, n6 = n4 * n2;
  return (n6 + 9 * n4 + 14 * n2) / 24;
}

TetraTable::TetraTable(int nbins) : n_(nbins) {
  if (nbins < 1 || nbins > kMaxFourPointBins)
    throw ConfigError("nbins", "4-point statistics support 1..20 bins (got " +
                                   std::to_string(nbins) + ")");
  const Relabellings& rel = relabellings();
  const auto n = static_cast<std::uint32_t>(n_);
  std::uint32_t total = 1;
  for (int e = 0; e < 6; ++e) total *= n;
  constexpr std::uint32_t kUnset = 0xFFFFFFFFu;
  table_.assign(total, kUnset);
  canonical_.clear();
  canonical_.reserve(static_cast<std::size_t>(expected_rows(n_)));

  // Raw codes are visited in increasing order, so the first unvisited member of an orbit is its
  // smallest code = the lexicographic minimum = the canonical tuple c. The whole orbit is then
  // labelled at once by the published rule: visiting the relabellings k in the table's order,
  // the image apply(k, c) gets the parity of k the first time it is reached and keeps it.
  std::array<int, 6> digits{};
  std::array<std::uint32_t, 24> image{};
  for (std::uint32_t t = 0; t < total; ++t) {
    if (table_[t] != kUnset) continue;
    std::uint32_t rest = t;
    for (int e = 5; e >= 0; --e) {
      digits[e] = static_cast<int>(rest % n);
      rest /= n;
    }
    const auto row = static_cast<std::uint32_t>(canonical_.size());
    std::array<std::uint8_t, 6> canon{};
    for (int e = 0; e < 6; ++e) canon[e] = static_cast<std::uint8_t>(digits[e]);
    canonical_.push_back(canon);
    for (int k = 0; k < 24; ++k) {
      std::uint32_t code = 0;
      for (int e = 0; e < 6; ++e) code = code * n + static_cast<std::uint32_t>(digits[rel.edge_map[k][e]]);
      image[k] = code;
      __builtin_prefetch(&table_[code], 1);  // the orbit is scattered over the table
    }
    for (int k = 0; k < 24; ++k)
      if (table_[image[k]] == kUnset) table_[image[k]] = (row << 1) | (rel.sign[k] < 0 ? 1u : 0u);
  }
  ALMAGEST_ASSERT(canonical_.size() == expected_rows(n_), "4pCF row count mismatch");
}

std::array<int, 6> TetraTable::canonicalise(const std::array<int, 6>& raw, int& sign) {
  const Relabellings& rel = relabellings();
  auto apply = [&](int k, const std::array<int, 6>& t) {
    std::array<int, 6> out{};
    for (int e = 0; e < 6; ++e) out[e] = t[rel.edge_map[k][e]];
    return out;
  };
  std::array<int, 6> best = raw;
  for (int k = 1; k < 24; ++k) best = std::min(best, apply(k, raw));
  // The published rule: the sign of raw is the parity of the first relabelling (in the table's
  // order) that maps the canonical tuple onto it.
  for (int k = 0; k < 24; ++k)
    if (apply(k, best) == raw) {
      sign = rel.sign[k];
      return best;
    }
  ALMAGEST_ASSERT(false, "tetrahedron orbit without a relabelling onto the raw tuple");
  sign = +1;
  return best;
}

bool cayley_menger_positive(const std::array<double, 6>& d) {
  // Bordered 5x5 matrix of squared distances; det = 288 V^2.
  long double m[5][5];
  long double dmax2 = 0;
  std::array<long double, 6> s{};
  for (int e = 0; e < 6; ++e) {
    s[e] = static_cast<long double>(d[e]) * static_cast<long double>(d[e]);
    dmax2 = std::max(dmax2, s[e]);
  }
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j) m[i][j] = (i == j) ? 0.0L : ((i == 0 || j == 0) ? 1.0L : 0.0L);
  for (int e = 0; e < 6; ++e) {
    const int a = kEdgeVertices[e][0] + 1, b = kEdgeVertices[e][1] + 1;
    m[a][b] = m[b][a] = s[e];
  }
  // Gaussian elimination with partial pivoting.
  long double det = 1.0L;
  for (int c = 0; c < 5; ++c) {
    int piv = c;
    for (int r = c + 1; r < 5; ++r)
      if (std::fabs(m[r][c]) > std::fabs(m[piv][c])) piv = r;
    if (m[piv][c] == 0.0L) return false;
    if (piv != c) {
      for (int k = 0; k < 5; ++k) std::swap(m[piv][k], m[c][k]);
      det = -det;
    }
    det *= m[c][c];
    for (int r = c + 1; r < 5; ++r) {
      const long double f = m[r][c] / m[c][c];
      for (int k = c; k < 5; ++k) m[r][k] -= f * m[c][k];
    }
  }
  // det scales as (length)^6; flat configurations give 0 up to rounding, so compare against a
  // relative tolerance.
  const long double tol = 1e-12L * dmax2 * dmax2 * dmax2;
  return det > tol;
}

bool tetrahedron_realisable(const std::array<double, 6>& d) {
  // A positive 4-point determinant alone is not sufficient: about 10% of random length sextuples
  // with det > 0 have a face that violates the triangle inequality. Every face must also be a
  // proper triangle (its own Cayley-Menger condition, 16 A^2 > 0, i.e. strict inequalities).
  constexpr int kFaces[4][3] = {{0, 1, 3}, {0, 2, 4}, {1, 2, 5}, {3, 4, 5}};
  for (const auto& f : kFaces) {
    const double a = d[f[0]], b = d[f[1]], c = d[f[2]];
    if (!(a < b + c && b < a + c && c < a + b)) return false;
  }
  return cayley_menger_positive(d);
}

}  // namespace almagest::npcf
