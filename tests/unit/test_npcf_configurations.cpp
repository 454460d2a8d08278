// Configuration tables of the 3pCF and 4pCF: row counts, canonicalisation (fixed points, orbits,
// the published relabelling-sign rule, checked against an enumeration written here from the vertex
// cycles of npcf-conventions.md's table, not from the library's edge table) and the Cayley-Menger
// realisability flag.
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

/// The published rule's relabellings in the note's fixed order, written as the vertex cycles of
/// its table (1-based, "(13)(24)" maps 1->3->1 and 2->4->2). The vertex map sigma acts on a tuple
/// as new[e(a,b)] = t[e(sigma(a), sigma(b))]; the parity is (-1)^(sum of cycle lengths - 1).
std::vector<Perm> published_order() {
  const char* cycles[24] = {"()",     "(12)",   "(13)",   "(14)",   "(23)",     "(24)",
                            "(34)",   "(12)(34)", "(13)(24)", "(14)(23)", "(123)", "(124)",
                            "(132)",  "(134)",  "(142)",  "(143)",  "(234)",    "(243)",
                            "(1234)", "(1243)", "(1324)", "(1342)", "(1423)",   "(1432)"};
  std::vector<Perm> out;
  for (const char* c : cycles) {
    std::array<int, 4> sigma{0, 1, 2, 3};
    int transpositions = 0;
    for (const char* q = c; *q;) {
      if (*q != '(') {
        ++q;
        continue;
      }
      std::vector<int> cyc;
      for (++q; *q && *q != ')'; ++q) cyc.push_back(*q - '1');
      for (std::size_t i = 0; i < cyc.size(); ++i) sigma[cyc[i]] = cyc[(i + 1) % cyc.size()];
      if (!cyc.empty()) transpositions += static_cast<int>(cyc.size()) - 1;
    }
    out.push_back({sigma, transpositions % 2 == 0 ? +1 : -1});
  }
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

  // Every raw tuple: its canonical tuple is the lexicographic minimum of its orbit, and its sign
  // is the parity of the first relabelling, in the published order, that maps the canonical tuple
  // onto it (the note's first-match rule). Checked for the table and for canonicalise().
  void everyRawTupleAgainstOwnEnumeration() {
    const auto perms = published_order();
    QCOMPARE(perms.size(), std::size_t{24});
    std::set<std::array<int, 4>> distinct;
    for (const auto& p : perms) distinct.insert(p.p);
    QCOMPARE(distinct.size(), std::size_t{24});
    // The note's edge permutations of three rows, from the cycles: k = 2 (12) is 1 4 5 2 3 6,
    // k = 11 (123) is 4 1 5 2 6 3, k = 24 (1432) is 3 5 6 1 2 4 (applied to the tuple 1..6).
    const Tuple id{1, 2, 3, 4, 5, 6};
    QCOMPARE(relabel(id, perms[1].p), (Tuple{1, 4, 5, 2, 3, 6}));
    QCOMPARE(relabel(id, perms[10].p), (Tuple{4, 1, 5, 2, 6, 3}));
    QCOMPARE(relabel(id, perms[23].p), (Tuple{3, 5, 6, 1, 2, 4}));
    QCOMPARE(perms[7].parity, +1);
    QCOMPARE(perms[18].parity, -1);
    for (int n : {2, 3, 4}) {
      TetraTable t(n);
      std::uint32_t total = 1;
      for (int e = 0; e < 6; ++e) total *= static_cast<std::uint32_t>(n);
      std::set<Tuple> canon_seen;
      int differs_from_first_minimiser = 0;
      for (std::uint32_t code = 0; code < total; ++code) {
        const Tuple raw = decode(code, n);
        QCOMPARE(t.raw_index(raw), code);
        Tuple best = raw;
        for (const auto& p : perms) best = std::min(best, relabel(raw, p.p));
        int sign = 0;
        for (const auto& p : perms)
          if (relabel(best, p.p) == raw) {
            sign = p.parity;
            break;
          }
        QVERIFY(sign != 0);
        // The earlier rule (parity of the first minimising permutation of the raw tuple in
        // lexicographic order) disagrees on many tuples with repeated bins.
        int old_sign = 0;
        Tuple old_best{};
        for (const auto& p : permutations()) {
          const Tuple img = relabel(raw, p.p);
          if (old_sign == 0 || img < old_best) {
            old_best = img;
            old_sign = p.parity;
          }
        }
        differs_from_first_minimiser += old_sign != sign;
        Tuple table_canon{};
        for (int e = 0; e < 6; ++e) table_canon[e] = t.canonical(t.row(code))[e];
        QCOMPARE(table_canon, best);
        QCOMPARE(t.sign(code), sign);
        int s = 0;
        QCOMPARE(TetraTable::canonicalise(raw, s), best);
        QCOMPARE(s, sign);
        canon_seen.insert(best);
      }
      QCOMPARE(canon_seen.size(), static_cast<std::size_t>(t.rows()));
      qInfo("n = %d: %d of %u raw tuples get another sign than under the first-minimiser rule", n,
            differs_from_first_minimiser, total);
      QVERIFY(differs_from_first_minimiser > 0);
    }
  }

  // Hand-enumerated with the note's table: raw (0,0,0,1,1,0) (edges 23 and 24 in the upper bin)
  // has canonical (0,0,0,0,1,1); k = 1..5 give (0,0,0,0,1,1), (0,0,1,0,0,1), (0,0,1,0,1,0),
  // (1,1,0,0,0,0), (0,0,0,0,1,1); k = 6, (24), P = 3 2 1 6 5 4, gives (0,0,0,1,1,0): sign -1
  // (the earlier rule, parity of the raw tuple's first minimising permutation, gave +1).
  void handEnumeratedRepeatedBins() {
    TetraTable t(2);
    int s = 0;
    QCOMPARE(TetraTable::canonicalise({0, 0, 0, 1, 1, 0}, s), (Tuple{0, 0, 0, 0, 1, 1}));
    QCOMPARE(s, -1);
    QCOMPARE(t.sign(t.raw_index({0, 0, 0, 1, 1, 0})), -1);
    // (0,1,1,0,0,1): canonical (0,0,0,1,1,1), first reached by k = 2 (12): -1.
    QCOMPARE(TetraTable::canonicalise({0, 1, 1, 0, 0, 1}, s), (Tuple{0, 0, 0, 1, 1, 1}));
    QCOMPARE(s, -1);
    // (1,0,0,1,0,0): canonical (0,0,0,0,1,1), first reached by k = 12 (124): +1.
    QCOMPARE(TetraTable::canonicalise({1, 0, 0, 1, 0, 0}, s), (Tuple{0, 0, 0, 0, 1, 1}));
    QCOMPARE(s, +1);
    QCOMPARE(t.sign(t.raw_index({1, 0, 0, 1, 0, 0})), +1);
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
    TetraTable t(20);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    qInfo("TetraTable(20): %llu rows, %.2f s", static_cast<unsigned long long>(t.rows()), s);
    QCOMPARE(t.rows(), TetraTable::expected_rows(20));
    QCOMPARE(t.rows(), std::uint64_t{2726900});
    QCOMPARE(t.packed_table().size(), std::size_t{64000000});
    QCOMPARE(almagest::npcf::tetra_table_bytes(20), std::uint64_t{256000000});
    QCOMPARE(TetraTable::expected_rows(16), std::uint64_t{723776});
    // 7.6 to 28 s measured on 2 cores under load averages of 24 (eight builds at once): the bound
    // only catches a pathological regression (a per-tuple orbit search would take hours).
#if !defined(__SANITIZE_ADDRESS__)  // instrumented builds (the CI sanitizer job) run it many times slower
    QVERIFY2(s < 120.0, "building the n = 20 table took far too long");
#endif
    // Spot check against the reference.
    for (std::uint32_t code = 0; code < t.packed_table().size(); code += 9973) {
      const Tuple raw = decode(code, 20);
      int s_ref = 0;
      const Tuple c = TetraTable::canonicalise(raw, s_ref);
      Tuple tc{};
      for (int e = 0; e < 6; ++e) tc[e] = t.canonical(t.row(code))[e];
      QCOMPARE(tc, c);
      QCOMPARE(t.sign(code), s_ref);
    }
    QVERIFY_THROWS_EXCEPTION(almagest::ConfigError, TetraTable(21));
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
