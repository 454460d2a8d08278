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

  // Anisotropic binning (config.nmu > 1, 2pCF and 3pCF): 0-based mu bin per row, empty otherwise.
  std::vector<std::uint8_t> mu;

  // 2pCF multipoles (config.wants_multipoles()), per radial bin: raw Legendre sums over all pairs
  // of L_l(mu) x the product of signed weights, and the estimators xi_l = (2l + 1) S_l / RR(r)
  // (xi_0 = NN(r)/RR(r), minus 1 with analytic randoms), RR(r) summed over the mu bins.
  std::vector<double> legendre2, legendre4;
  std::vector<double> xi0, xi2, xi4;

  // 3pCF with analytic randoms: the internal 2pCF per radial bin in xi_internal (below).

  // 4pCF only
  std::vector<double> zeta_disc;   ///< sum over the three pairings of xi(r_a) xi(r_b)
  std::vector<double> zeta_conn;   ///< zeta - zeta_disc (even channel)
  std::vector<std::uint8_t> realisable;  ///< Cayley-Menger determinant on bin centres > 0
  std::vector<double> xi_internal; ///< internal 2pCF (per bin) used for zeta_disc
  /// Internal quadrupole and hexadecapole per bin (nmu > 1 or a periodic box; else empty): the
  /// anisotropic terms xi2 xi2 L2(cos t)/5 + xi4 xi4 L4(cos t)/9 of zeta_disc.
  std::vector<double> xi2_internal, xi4_internal;

  // parity 4pCF only
  std::vector<double> n_odd;       ///< NNNN_odd: sum of relabelling sign x sign(V) x weights
  std::vector<double> r_odd;       ///< RRRR_odd: the same over all-random tetrahedra
  std::vector<double> zeta_odd;    ///< NNNN_odd / RRRR (0 where RRRR == 0); also zeta_conn_odd
  std::vector<std::uint64_t> degenerate;  ///< tetrahedra with |V| < 1e-9 (zero odd weight)

  /// Delete-one jackknife (npcf/jackknife.hpp), empty unless the job asked for it: realisation m
  /// omits every tuple touching region m; per realisation n, r and estimator (realisations x
  /// rows, realisation outer), the jackknife mean and sigma of the estimator per row, and its
  /// full covariance (rows x rows; empty above kMaxCovarianceRows rows).
  struct Jackknife {
    int realisations = 0;
    std::vector<double> n, r, estimator;
    std::vector<double> mean, sigma, covariance;
  } jackknife;

  bool analytic_randoms = false;   ///< periodic box without randoms: estimator = DD/RR - 1
  std::uint64_t ndata = 0, nrandom = 0;
  std::uint64_t graph_edges = 0;
  Provenance provenance;

  std::size_t rows() const noexcept { return tuples.size(); }
  /// Lower/upper radial edge of bin b.
  double bin_lo(int b) const { return config.bins.edge(b); }
  double bin_hi(int b) const { return config.bins.edge(b + 1); }
  /// mu range of a row: [-1, 1] without mu bins; 2pCF mu bins over [-1, 1], 3pCF over [0, 1].
  double mu_lo(std::size_t row) const {
    if (mu.empty()) return -1.0;
    const double m = mu[row], n = config.nmu;
    return order == 2 ? -1.0 + 2.0 * m / n : m / n;
  }
  double mu_hi(std::size_t row) const {
    if (mu.empty()) return 1.0;
    const double m = mu[row] + 1.0, n = config.nmu;
    return order == 2 ? -1.0 + 2.0 * m / n : m / n;
  }
};

/// Writes an HDF5 result file (atomic). Layout in docs/npcf.md: /npcf/<statistic>/{bins,
/// tuples, n, r, estimator, ...} with units and descriptions as attributes, bin edges, the JSON
/// configuration and provenance on the root.
void write_hdf5(const NpcfResult& result, const std::string& path);
/// Text in the published GRAMSCI v2 column layouts (docs/npcf.md), numbers as Fortran e14.7,
/// '#' header with provenance; files the published code's scripts read unchanged.
std::string format_gramsci(const NpcfResult& result);
/// Writes format_gramsci() atomically.
void write_gramsci(const NpcfResult& result, const std::string& path);
/// The same columns with bin edges as %.15g and values as %.17g (reads back exactly).
std::string format_text_exact(const NpcfResult& result);
/// Writes format_text_exact() atomically.
void write_text_exact(const NpcfResult& result, const std::string& path);
/// One number as Fortran e14.7: 14 characters, e.g. " 0.5000000E+01", "-0.1234567E-03".
std::string fortran_e14_7(double v);
/// Reads back a file written by write_hdf5 (all statistics it holds, first one returned).
NpcfResult read_hdf5(const std::string& path);

}  // namespace almagest::npcf
