// Configuration tables of the 3pCF and 4pCF: row counts, canonicalisation (fixed points, orbits,
// first-minimising-permutation sign convention, checked against an enumeration written here) and
// the Cayley-Menger realisability flag.
#include <QtTest>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <set>

#include "almagest/core/error.hpp"
#include "almagest/npcf/config.hpp"
#include "almagest/npcf/configurations.hpp"

using almagest::npcf::cayley_menger_positive;
using almagest::npcf::tetrahedron_realisable;
using almagest::npcf::kEdgeVertices;
using almagest::npcf::TetraTable;
using almagest::npcf::TriangleTable;
using Tuple = std::array<int, 6>;

namespace {

struct Perm {
  std::array<int, 4> p;
  int parity;
};

/// The 24 vertex permutations in lexicographic order with their parity (cycle count method, so
/// that it differs from the inversion count used by the library).
std::vector<Perm> permutations() {
  std::vector<Perm> out;
  std::array<int, 4> p{0, 1, 2, 3};
  do {
    std::array<bool, 4> seen{};
    int cycles = 0;
    for (int s = 0; s < 4; ++s) {
      if (seen[s]) continue;
      ++cycles;
      for (int v = s; !seen[v]; v = p[v]) seen[v] = true;
    }
    out.push_back({p, ((4 - cycles) % 2 == 0) ? +1 : -1});
  } while (std::next_permutation(p.begin(), p.end()));
  return out;
}

int edge_index(int a, int b) {
  for (int e = 0; e < 6; ++e)
    if ((kEdgeVertices[e][0] == a && kEdgeVertices[e][1] == b) ||
        (kEdgeVertices[e][0] == b && kEdgeVertices[e][1] == a))
      return e;
  return -1;
}

/// new[e(a,b)] = raw[e(p[a], p[b])]
Tuple relabel(const Tuple& raw, const std::array<int, 4>& p) {
  Tuple t{};
  for (int e = 0; e < 6; ++e) t[e] = raw[edge_index(p[kEdgeVertices[e][0]], p[kEdgeVertices[e][1]])];
  return t;
}

Tuple decode(std::uint32_t code, int n) {
  Tuple t{};
  for (int e = 5; e >= 0; --e) {
    t[e] = static_cast<int>(code % static_cast<std::uint32_t>(n));
    code /= static_cast<std::uint32_t>(n);
  }
  return t;
}

}  // namespace

class TestNpcfConfigurations : public QObject {
  Q_OBJECT
private slots:
  void triangleRows() {
    for (int n : {1, 3, 10, 40}) {
      TriangleTable t(n);
      QCOMPARE(t.rows(), static_cast<std::uint64_t>(n) * (n + 1) * (n + 2) / 6);
      QCOMPARE(t.rows(), almagest::npcf::num_rows_3pcf(n));
      std::uint32_t row = 0;
      for (int b1 = 0; b1 < n; ++b1)
        for (int b2 = b1; b2 < n; ++b2)
          for (int b3 = b2; b3 < n; ++b3, ++row) {
            QCOMPARE(t.row_sorted(b1, b2, b3), row);
            QCOMPARE(t.row(b3, b1, b2), row);
            QCOMPARE(t.row(b2, b3, b1), row);
            const auto b = t.bins(row);
            QVERIFY(b[0] == b1 && b[1] == b2 && b[2] == b3);
          }
    }
  }

  void tetraRowCounts() {
    const std::uint64_t expected[] = {0, 1, 11, 66, 276, 900};
    for (int n = 1; n <= 5; ++n) {
      TetraTable t(n);
      QCOMPARE(t.rows(), expected[n]);
      QCOMPARE(TetraTable::expected_rows(n), expected[n]);
    }
    QCOMPARE(TetraTable(3).rows(), std::uint64_t{66});
    QCOMPARE(TetraTable(5).rows(), std::uint64_t{900});
  }

  void canonicalRowsAreSortedFixedPoints() {
    for (int n : {3, 4, 5}) {
      TetraTable t(n);
      Tuple prev{-1, -1, -1, -1, -1, -1};
      for (std::uint32_t row = 0; row < t.rows(); ++row) {
        Tuple c{};
        for (int e = 0; e < 6; ++e) c[e] = t.canonical(row)[e];
        QVERIFY2(prev < c, "rows not in increasing lexicographic order");
        prev = c;
        int sign = 0;
        QCOMPARE(TetraTable::canonicalise(c, sign), c);
        QCOMPARE(sign, +1);  // the identity is the first permutation and reaches the minimum
        const std::uint32_t raw = t.raw_index(c);
        QCOMPARE(t.row(raw), row);
        QCOMPARE(t.sign(raw), +1);
      }
    }
  }

  // Every raw tuple: its canonical tuple is the lexicographic minimum of its orbit, reached by a
  // relabelling, and the sign is the parity of the first minimising permutation in lexicographic
  // order. Checked for the table and for canonicalise().
  void everyRawTupleAgainstOwnEnumeration() {
    const auto perms = permutations();
    QCOMPARE(perms.size(), std::size_t{24});
    QCOMPARE(perms[0].parity, +1);
    QCOMPARE(perms[1].parity, -1);  // 0132: one transposition
    for (int n : {3, 4}) {
      TetraTable t(n);
      std::uint32_t total = 1;
      for (int e = 0; e < 6; ++e) total *= static_cast<std::uint32_t>(n);
      std::set<Tuple> canon_seen;
      for (std::uint32_t code = 0; code < total; ++code) {
        const Tuple raw = decode(code, n);
        QCOMPARE(t.raw_index(raw), code);
        Tuple best{};
        int best_parity = 0;
        bool first = true;
        for (const auto& p : perms) {
          const Tuple img = relabel(raw, p.p);
          if (first || img < best) {
            best = img;
            best_parity = p.parity;
            first = false;
          }
        }
        Tuple table_canon{};
        for (int e = 0; e < 6; ++e) table_canon[e] = t.canonical(t.row(code))[e];
        QCOMPARE(table_canon, best);
        QCOMPARE(t.sign(code), best_parity);
        int s = 0;
        QCOMPARE(TetraTable::canonicalise(raw, s), best);
        QCOMPARE(s, best_parity);
        canon_seen.insert(best);
      }
      QCOMPARE(canon_seen.size(), static_cast<std::size_t>(t.rows()));
    }
  }

  // For tuples without symmetry (six distinct bins) the relabelling sign is a homomorphism:
  // relabelling a raw tuple by q multiplies its sign by parity(q).
  void signIsPermutationParity() {
    const auto perms = permutations();
    TetraTable t(6);
    const Tuple base{0, 1, 2, 3, 4, 5};
    for (const auto& q : perms) {
      const Tuple raw = relabel(base, q.p);
      const int s_raw = t.sign(t.raw_index(raw));
      const int s_base = t.sign(t.raw_index(base));
      QCOMPARE(s_raw * s_base, q.parity);
      QCOMPARE(t.row(t.raw_index(raw)), t.row(t.raw_index(base)));
    }
  }

  void largeTableIsFast() {
    const auto t0 = std::chrono::steady_clock::now();
    TetraTable t(16);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    qInfo("TetraTable(16): %llu rows, %.2f s", static_cast<unsigned long long>(t.rows()), s);
    QCOMPARE(t.rows(), TetraTable::expected_rows(16));
    QCOMPARE(t.rows(), std::uint64_t{723776});
    QVERIFY2(s < 10.0, "building the n = 16 table took far too long");
    // Spot check against the reference.
    for (std::uint32_t code = 0; code < t.packed_table().size(); code += 9973) {
      const Tuple raw = decode(code, 16);
      int s_ref = 0;
      const Tuple c = TetraTable::canonicalise(raw, s_ref);
      Tuple tc{};
      for (int e = 0; e < 6; ++e) tc[e] = t.canonical(t.row(code))[e];
      QCOMPARE(tc, c);
      QCOMPARE(t.sign(code), s_ref);
    }
    QVERIFY_THROWS_EXCEPTION(almagest::ConfigError, TetraTable(17));
    QVERIFY_THROWS_EXCEPTION(almagest::ConfigError, TetraTable(0));
  }

  void cayleyMenger() {
    const double r2 = std::sqrt(2.0);
    QVERIFY(cayley_menger_positive({1, 1, 1, 1, 1, 1}));            // regular tetrahedron
    QVERIFY(cayley_menger_positive({1, 1, 1, r2, r2, r2}));         // corner of a cube
    QVERIFY(!cayley_menger_positive({1, 1, r2, r2, 1, 1}));         // unit square: flat
    QVERIFY(!cayley_menger_positive({1, 2, 3, 1, 2, 1}));           // collinear points
    QVERIFY(!tetrahedron_realisable({1, 1, 1, 3, 1, 1}));           // triangle 0-1-2 violates inequality
    QVERIFY(!tetrahedron_realisable({10, 10, 10, 10, 10, 30}));     // 2-3 longer than 2-0-3
    QVERIFY(tetrahedron_realisable({1, 1, 1, 1, 1, 1}));
    QVERIFY(!tetrahedron_realisable({1, 1, r2, r2, 1, 1}));
    // Nearly flat but genuinely 3D: apex 0.05 above the centre of a unit equilateral triangle.
    const double h = 0.05, rc = 1.0 / std::sqrt(3.0), s = std::sqrt(rc * rc + h * h);
    QVERIFY(cayley_menger_positive({s, s, s, 1, 1, 1}));
    QVERIFY(!cayley_menger_positive({rc, rc, rc, 1, 1, 1}));  // apex in the plane
    // Scale invariance of the decision.
    QVERIFY(cayley_menger_positive({1e3, 1e3, 1e3, 1e3, 1e3, 1e3}));
    QVERIFY(cayley_menger_positive({1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3}));
  }

  // The realisability flag per configuration on bin centres: 4 linear bins of width 10 from
  // 17.5 give 178 of 276 (the count of the published example); from 0, 68 by the determinant
  // alone and 63 when impossible faces are also excluded.
  void realisableCounts() {
    auto count = [](double rmin, double rmax, bool strict) {
      almagest::npcf::Binning b;
      b.rmin = rmin;
      b.rmax = rmax;
      b.nbins = 4;
      TetraTable t(4);
      int n = 0;
      for (std::uint32_t row = 0; row < t.rows(); ++row) {
        std::array<double, 6> c{};
        for (int e = 0; e < 6; ++e) c[e] = b.centre(t.canonical(row)[e]);
        n += strict ? tetrahedron_realisable(c) : cayley_menger_positive(c);
      }
      return n;
    };
    QCOMPARE(count(17.5, 57.5, false), 178);
    QCOMPARE(count(17.5, 57.5, true), 178);
    QCOMPARE(count(0.0, 20.0, false), 68);
    QCOMPARE(count(0.0, 20.0, true), 63);
  }
};

QTEST_GUILESS_MAIN(TestNpcfConfigurations)
#include "test_npcf_configurations.moc"
