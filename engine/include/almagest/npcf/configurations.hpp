#pragma once
// Configuration (row) tables shared by every backend.
//  - 3pCF: rows are sorted bin triples b1 <= b2 <= b3, b1 outer, then b2, then b3.
//  - 4pCF: the six edge bins in edge order (12, 13, 14, 23, 24, 34); the canonical tuple is the
//    lexicographic minimum over the 24 vertex relabellings; rows are all canonical tuples in
//    increasing lexicographic order, (n^6 + 9 n^4 + 14 n^2)/24 of them.
//  Relabelling sign (parity): the published rule of npcf-conventions.md, on every backend (the
//  CUDA kernels read this table). The 24 relabellings P act as new(j) = t(P(j)) and are visited
//  in the note's fixed order; a raw tuple t gets the parity of the first P with P(c) = t, c its
//  canonical tuple (so c itself gets +1). See docs/npcf-fourpoint.md.
#include <array>
#include <cstdint>
#include <vector>

namespace almagest::npcf {

/// Number of 3pCF rows: n(n+1)(n+2)/6.
std::uint64_t num_rows_3pcf(int nbins);

/// Row index lookup for sorted 0-based bins b1 <= b2 <= b3.
class TriangleTable {
public:
  explicit TriangleTable(int nbins);
  int nbins() const noexcept { return n_; }
  std::uint64_t rows() const noexcept { return rows_; }
  /// Row of sorted (b1 <= b2 <= b3).
  std::uint32_t row_sorted(int b1, int b2, int b3) const noexcept {
    return offset_[static_cast<std::size_t>(b1) * n_ + b2] + static_cast<std::uint32_t>(b3 - b2);
  }
  /// Row of any (a, b, c): sorts first.
  std::uint32_t row(int a, int b, int c) const noexcept;
  /// Bins of row r.
  std::array<std::uint8_t, 3> bins(std::uint32_t r) const;

private:
  int n_;
  std::uint64_t rows_;
  std::vector<std::uint32_t> offset_;  // n*n
};

/// Edge order of a tetrahedron (vertex 0 = hub): 01 02 03 12 13 23.
inline constexpr int kEdgeVertices[6][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};

/// Largest number of radial bins of the 4-point statistics: the table has n^6 entries (20 bins:
/// 64 M entries, 256 MB, 2,726,900 rows).
inline constexpr int kMaxFourPointBins = 20;

/// Bytes of the canonicalisation table for n bins (4 n^6).
inline std::uint64_t tetra_table_bytes(int nbins) {
  std::uint64_t t = 4;
  for (int e = 0; e < 6; ++e) t *= static_cast<std::uint64_t>(nbins);
  return t;
}

/// Canonicalisation table of the 4pCF: for every raw 6-tuple of 0-based bins (encoded base n,
/// edge 12 most significant) the canonical row and the relabelling sign (+1/-1).
class TetraTable {
public:
  /// nbins in 1..kMaxFourPointBins (n^6 entries; 16 -> 67 MB, 20 -> 256 MB).
  explicit TetraTable(int nbins);
  int nbins() const noexcept { return n_; }
  std::uint64_t rows() const noexcept { return canonical_.size(); }
  static std::uint64_t expected_rows(int nbins);  ///< (n^6 + 9n^4 + 14n^2)/24

  /// Raw index of six 0-based bins in edge order.
  std::uint32_t raw_index(const std::array<int, 6>& b) const noexcept {
    std::uint32_t r = 0;
    for (int e = 0; e < 6; ++e) r = r * static_cast<std::uint32_t>(n_) + static_cast<std::uint32_t>(b[e]);
    return r;
  }
  /// Packed entry: (row << 1) | (sign < 0 ? 1 : 0).
  std::uint32_t packed(std::uint32_t raw) const noexcept { return table_[raw]; }
  std::uint32_t row(std::uint32_t raw) const noexcept { return table_[raw] >> 1; }
  int sign(std::uint32_t raw) const noexcept { return (table_[raw] & 1u) ? -1 : +1; }
  const std::array<std::uint8_t, 6>& canonical(std::uint32_t row) const { return canonical_[row]; }
  const std::vector<std::uint32_t>& packed_table() const noexcept { return table_; }

  /// Reference canonicalisation (slow): canonical tuple and relabelling sign of a raw tuple.
  static std::array<int, 6> canonicalise(const std::array<int, 6>& raw, int& sign);

private:
  int n_;
  std::vector<std::uint32_t> table_;
  std::vector<std::array<std::uint8_t, 6>> canonical_;
};

/// Cayley-Menger determinant of a tetrahedron with the given six edge lengths (edge order
/// 12 13 14 23 24 34) is positive (det = 288 V^2 > 1e-12 max(d)^6). This is the realisability
/// flag of npcf-conventions.md, reported per 4pCF configuration on bin centres.
bool cayley_menger_positive(const std::array<double, 6>& d);
/// Stricter: the determinant is positive AND every face satisfies the strict triangle
/// inequality, i.e. the six lengths are those of a real non-degenerate tetrahedron.
bool tetrahedron_realisable(const std::array<double, 6>& d);

}  // namespace almagest::npcf
