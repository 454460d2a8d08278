#pragma once
// Results of an N-point job. One row per configuration, in the configuration order of
// docs/npcf.md (identical to GRAMSCI v2). Raw signed sums and estimators are both reported.
#include <cstdint>
#include <string>
#include <vector>

#include "almagest/core/provenance.hpp"
#include "almagest/npcf/config.hpp"

namespace almagest::npcf {

struct NpcfResult {
  NpcfConfig config;
  Statistic statistic = Statistic::TwoPoint;
  int order = 2;                   ///< 2, 3 or 4 points
  int edges_per_row = 1;           ///< 1 (2pCF), 3 (3pCF), 6 (4pCF)

  std::vector<std::uint8_t> bins;  ///< rows x edges_per_row, 0-based bins
  std::vector<std::uint64_t> tuples;  ///< number of tuples (pairs/triangles/tetrahedra) per row
  std::vector<std::uint64_t> random_tuples;  ///< of which all-random
  std::vector<double> n;           ///< NN / NNN / NNNN: sum of products of signed weights
  std::vector<double> r;           ///< RR / RRR / RRRR: all-random sums, made positive
  std::vector<double> estimator;   ///< xi / zeta (even); 0 where r == 0

  // 4pCF only
  std::vector<double> zeta_disc;   ///< sum over the three pairings of xi(r_a) xi(r_b)
  std::vector<double> zeta_conn;   ///< zeta - zeta_disc (even channel)
  std::vector<std::uint8_t> realisable;  ///< Cayley-Menger determinant on bin centres > 0
  std::vector<double> xi_internal; ///< internal 2pCF (per bin) used for zeta_disc

  // parity 4pCF only
  std::vector<double> n_odd;       ///< NNNN_odd: sum of relabelling sign x sign(V) x weights
  std::vector<double> r_odd;       ///< RRRR_odd: the same over all-random tetrahedra
  std::vector<double> zeta_odd;    ///< NNNN_odd / RRRR (0 where RRRR == 0); also zeta_conn_odd
  std::vector<std::uint64_t> degenerate;  ///< tetrahedra with |V| < 1e-9 (zero odd weight)

  bool analytic_randoms = false;   ///< periodic box without randoms: estimator = DD/RR - 1
  std::uint64_t ndata = 0, nrandom = 0;
  std::uint64_t graph_edges = 0;
  Provenance provenance;

  std::size_t rows() const noexcept { return tuples.size(); }
  /// Lower/upper radial edge of bin b.
  double bin_lo(int b) const { return config.bins.edge(b); }
  double bin_hi(int b) const { return config.bins.edge(b + 1); }
};

/// Writes an HDF5 result file (atomic). Layout in docs/npcf.md: /npcf/<statistic>/{bins,
/// tuples, n, r, estimator, ...} with units and descriptions as attributes, bin edges, the JSON
/// configuration and provenance on the root.
void write_hdf5(const NpcfResult& result, const std::string& path);
/// Text in the GRAMSCI v2 column layout (see docs/npcf.md), '#' header with provenance.
std::string format_gramsci(const NpcfResult& result);
/// Writes format_gramsci() atomically.
void write_gramsci(const NpcfResult& result, const std::string& path);
/// Reads back a file written by write_hdf5 (all statistics it holds, first one returned).
NpcfResult read_hdf5(const std::string& path);

}  // namespace almagest::npcf
