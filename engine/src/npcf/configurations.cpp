// Configuration (row) tables of the 3pCF and 4pCF; see configurations.hpp and
// docs/npcf-fourpoint.md for the canonicalisation and relabelling-sign convention.
#include "almagest/npcf/configurations.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "almagest/core/error.hpp"

namespace almagest::npcf {

namespace {

/// Edge index of the unordered vertex pair (a, b), a != b, in the order 01 02 03 12 13 23.
constexpr int edge_of(int a, int b) {
  if (a > b) std::swap(a, b);
  // (0,1)->0 (0,2)->1 (0,3)->2 (1,2)->3 (1,3)->4 (2,3)->5
  return a == 0 ? b - 1 : (a == 1 ? b + 1 : 5);
}

/// The 24 permutations of {0,1,2,3} in std::next_permutation order from 0123, with the induced
/// permutation of the six edges (new[e] = raw[edge_map[e]]) and the permutation parity.
struct Relabellings {
  std::array<std::array<int, 4>, 24> perm{};
  std::array<std::array<int, 6>, 24> edge_map{};
  std::array<int, 24> sign{};
  std::array<std::array<int, 24>, 24> compose{};  // compose[q][p] = index of (q o p), (q o p)[a] = q[p[a]]

  Relabellings() {
    std::array<int, 4> p{0, 1, 2, 3};
    int k = 0;
    do {
      perm[k] = p;
      for (int e = 0; e < 6; ++e)
        edge_map[k][e] = edge_of(p[kEdgeVertices[e][0]], p[kEdgeVertices[e][1]]);
      int inversions = 0;
      for (int a = 0; a < 4; ++a)
        for (int b = a + 1; b < 4; ++b)
          if (p[a] > p[b]) ++inversions;
      sign[k] = (inversions % 2 == 0) ? +1 : -1;
      ++k;
    } while (std::next_permutation(p.begin(), p.end()));
    for (int q = 0; q < 24; ++q)
      for (int p2 = 0; p2 < 24; ++p2) {
        std::array<int, 4> c{};
        for (int a = 0; a < 4; ++a) c[a] = perm[q][perm[p2][a]];
        for (int r = 0; r < 24; ++r)
          if (perm[r] == c) compose[q][p2] = r;
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
  if (nbins < 1 || nbins > 16)
    throw ConfigError("nbins", "4-point statistics support 1..16 bins (got " +
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
  // smallest code = the lexicographic minimum = the canonical tuple. The whole orbit is then
  // labelled at once: for an image s = apply(q, t), apply(p, s) = apply(q o p, t), so the first p
  // (enumeration order) with apply(q o p, t) == t gives the relabelling sign of s.
  std::array<int, 6> digits{};
  std::array<std::uint32_t, 24> image{};
  for (std::uint32_t t = 0; t < total; ++t) {
    if (table_[t] != kUnset) continue;
    std::uint32_t rest = t;
    for (int e = 5; e >= 0; --e) {
      digits[e] = static_cast<int>(rest % n);
      rest /= n;
    }
    std::uint32_t stab = 0;  // bit r set iff apply(r, t) == t
    for (int r = 0; r < 24; ++r) {
      std::uint32_t code = 0;
      for (int e = 0; e < 6; ++e) code = code * n + static_cast<std::uint32_t>(digits[rel.edge_map[r][e]]);
      image[r] = code;
      if (code == t) stab |= 1u << r;
    }
    // The orbit's entries are scattered over the table: fetch them together.
    for (int r = 0; r < 24; ++r) __builtin_prefetch(&table_[image[r]], 1);
    const auto row = static_cast<std::uint32_t>(canonical_.size());
    std::array<std::uint8_t, 6> canon{};
    for (int e = 0; e < 6; ++e) canon[e] = static_cast<std::uint8_t>(digits[e]);
    canonical_.push_back(canon);
    for (int q = 0; q < 24; ++q) {
      const std::uint32_t s = image[q];
      if (table_[s] != kUnset) continue;
      int first = -1;
      for (int p = 0; p < 24; ++p)
        if (stab & (1u << rel.compose[q][p])) {
          first = p;
          break;
        }
      ALMAGEST_ASSERT(first >= 0, "tetrahedron orbit without a minimising relabelling");
      table_[s] = (row << 1) | (rel.sign[first] < 0 ? 1u : 0u);
    }
  }
  ALMAGEST_ASSERT(canonical_.size() == expected_rows(n_), "4pCF row count mismatch");
}

std::array<int, 6> TetraTable::canonicalise(const std::array<int, 6>& raw, int& sign) {
  const Relabellings& rel = relabellings();
  std::array<int, 6> best{};
  int best_k = -1;
  for (int k = 0; k < 24; ++k) {
    std::array<int, 6> cand{};
    for (int e = 0; e < 6; ++e) cand[e] = raw[rel.edge_map[k][e]];
    if (best_k < 0 || cand < best) {  // strict: the first minimising permutation is kept
      best = cand;
      best_k = k;
    }
  }
  sign = rel.sign[best_k];
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
