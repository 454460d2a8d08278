#pragma once
// Configuration of an N-point correlation job (GRAMSCI v2 conventions, see docs/npcf.md).
#include <cstdint>
#include <string>
#include <vector>

#include "almagest/core/backend.hpp"

namespace almagest::npcf {

enum class Statistic {
  TwoPoint,        ///< 2pCF: xi(r)
  ThreePoint,      ///< 3pCF, all triangle configurations b1 <= b2 <= b3
  ThreePointEquilateral,  ///< 3pCF, only b1 = b2 = b3
  FourPoint,       ///< 4pCF (even), with connected part
  FourPointParity  ///< 4pCF split into parity-even and parity-odd channels, with connected part
};
const char* to_string(Statistic s);   ///< "2pcf", "3pcf", "3pcf-equilateral", "4pcf", "4pcf-parity"
Statistic statistic_from_string(const std::string& s);  ///< throws ConfigError
/// The 4pCF, even or with the parity-odd channel.
bool is_four_point(Statistic s);

enum class BinScale { Linear, Log };
enum class DirectionMode { Pixel, Exact };  ///< parity: spoke directions from pixels or coordinates
/// Order of the hubs on the CPU backend (the half graph keeps the neighbours j > i of hub i, and
/// the counting cuts the hubs into chunks in this order). Spatial: data and randoms each sorted
/// along a Morton (Z-order) curve of their positions before the graph is built, so that a chunk
/// of hubs, and one process's range of a split job, is a compact region whose neighbourhoods
/// overlap (faster, and a split job builds only its region's part of the graph). Input: the
/// catalogue order (npcf-conventions.md: indices follow the input order). Counts and sums of
/// statistics that do not depend on which point of a tuple is its hub (the lowest index) are the
/// same in both (sums to the last bits: another summation order); some depend on it: the signed
/// mu of a pair's separation (mu bins, nmu > 1), and the parity 4pCF's odd channel (spokes from
/// the hub's direction pixels, and the first-match relabelling sign of configurations with
/// repeated bins). Auto (the default): Spatial unless the plan has mu bins, direction pixels or
/// the parity statistic, then Input, so results follow the published convention. The CUDA
/// backend keeps the input order.
enum class HubOrder { Auto, Spatial, Input };

/// Radial binning. A pair is an edge iff rmin < d < rmax (strict, on squared distance).
/// Linear: bin = floor((d - rmin)/dr) + 1, dr = (rmax - rmin)/nbins, clamped to 1..nbins.
/// Log: the same in log10(d) (rmin > 0). Bins are 1-based in formulas, 0-based in arrays.
struct Binning {
  double rmin = 1.0;
  double rmax = 50.0;
  int nbins = 10;         ///< 1..255 (4pCF: 1..20)
  BinScale scale = BinScale::Linear;

  /// 0-based bin of a separation d with rmin < d < rmax.
  int bin_of(double d) const;
  /// Lower edge of 0-based bin i (i = nbins gives rmax).
  double edge(int i) const;
  /// Centre of 0-based bin i (arithmetic mean of edges for linear, geometric for log).
  double centre(int i) const;
};

struct NpcfConfig {
  Statistic statistic = Statistic::TwoPoint;
  Binning bins;
  bool periodic = false;     ///< minimum-image distances in a cubic box [0, box)^3
  double box = 0.0;          ///< box side in Mpc/h (periodic only)
  bool store_pixels = false; ///< store a direction pixel per edge (needed for pixel-mode parity)
  DirectionMode directions = DirectionMode::Pixel;
  int pixel_ntheta = 8;      ///< direction pixel grid: ntheta x nphi <= 65536, nphi even
  int pixel_nphi = 32;
  /// Anisotropic binning: nmu mu bins (1..100). 2pCF: mu of the pair separation against the line
  /// of sight to the pair midpoint (the z axis in a periodic box) over [-1, 1], rows (r, mu) with
  /// r outer; 3pCF: |mu| of the triangle's normal against the line of sight to its centroid (z in
  /// a box) over [0, 1], rows (b1, b2, b3, mu) with mu inner. 4pCF rows are not mu-binned:
  /// nmu > 1 adds the anisotropic multipole terms to zeta_disc. 1 = isotropic (default).
  int nmu = 1;
  /// 2pCF: also accumulate the Legendre sums of xi_2 and xi_4 (always done when nmu > 1).
  bool multipoles = false;
  int threads = 0;           ///< 0 = all hardware threads
  HubOrder hub_order = HubOrder::Auto;  ///< CPU backend: order of the hubs (see HubOrder)
  /// cpu, cuda, cuda:N or auto: the one backend type and Auto policy of every engine
  /// (almagest/core/backend.hpp); the plan resolves it.
  BackendChoice backend{};

  /// Every problem with this configuration, one message each naming the field; empty if valid.
  std::vector<std::string> validate() const;
  /// Throws ConfigError listing every problem (joined with "; ").
  void check() const;
  /// JSON object text of the configuration (for provenance and job files).
  std::string to_json() const;
  /// True when the 2pCF accumulates the multipole (Legendre) sums: nmu > 1 or multipoles.
  bool wants_multipoles() const noexcept { return nmu > 1 || multipoles; }
  /// Whether a CPU plan sorts the hubs spatially (hub_order, resolving Auto).
  bool spatial_hubs() const noexcept {
    return hub_order == HubOrder::Spatial ||
           (hub_order == HubOrder::Auto && nmu == 1 && !store_pixels && statistic != Statistic::FourPointParity);
  }
};

/// 0-based mu bin of mu in [-1, 1] with nmu bins: floor((mu + 1) nmu / 2), clamped. The
/// arithmetic is fixed ((mu + 1) * (0.5 nmu)) so that the CUDA kernels reproduce it bit for bit.
int mu_bin_signed(double mu, int nmu);
/// 0-based bin of |mu| in [0, 1] with nmu bins: floor(|mu| nmu), clamped (3pCF normals).
int mu_bin_unsigned(double mu, int nmu);
/// mu of a pair: separation (dx, dy, dz) = x_j - x_i from the hub at (xi, yi, zi); the line of
/// sight is the pair midpoint, or the z axis when `zaxis` (periodic box). 0 for a zero midpoint.
double pair_mu(double xi, double yi, double zi, double dx, double dy, double dz, bool zaxis);
/// |mu| of a triangle's normal (a x b, a = x_j - x_i, b = x_k - x_i) against the line of sight to
/// its centroid (or the z axis when `zaxis`); 0 for a degenerate (collinear) triangle.
double triangle_mu(double xi, double yi, double zi, double ax, double ay, double az, double bx,
                   double by, double bz, bool zaxis);

}  // namespace almagest::npcf
