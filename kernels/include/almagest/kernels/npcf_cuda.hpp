#pragma once
// Plain C++ facade of the N-point correlation kernels in the CUDA module (no CUDA types here).
// Reached through CudaModule::npcf(). All views are non-owning host arrays that must stay valid
// for the duration of the call; nothing is kept after a call returns, except in an
// NpcfDeviceGraph the caller owns and passes in NpcfOptions::device_graph.
//
// Conventions (docs/npcf.md): points are data first, then randoms ([0, ndata) data); the graph is
// the half graph (hub i stores neighbours j > i sorted ascending, 0-based bins, 64-bit offsets).
// Raw sums are per configuration row:
//   tuples        number of tuples of the row (exact integer)
//   random_tuples number of all-random tuples (exact integer)
//   n             sum over tuples of the product of signed weights
//   r             the same over all-random tuples, RAW SIGN (the engine makes it positive)
//   n_odd, r_odd  parity: sum of relabelling sign x sign(V) x weights (all / all-random)
//   degenerate    parity: tuples with |V| < 1e-9 (zero odd weight, full even weight)
// Counts are exact and identical to the CPU backend. Weighted sums are accumulated in double per
// block (shared-memory atomics), written as per-block partials and merged in block order, then in
// partition order: they differ from the CPU's sums only by rounding order (relative difference
// ~1e-15 on clustered catalogues, well inside the 1e-12 the tests demand; the order of atomics
// inside a block is not fixed, so repeated GPU runs can differ in the last bits).
//
// Errors: DeviceError (file, line, CUDA text) and DeviceOutOfMemory. `progress` may throw (the
// engine throws Cancelled from it); the exception propagates after device memory is released.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace almagest::kernels {

/// Points, data first. x, y, z in Mpc/h; w signed normalised weights. Shape: size each.
struct NpcfPointsView {
  const double* x = nullptr;
  const double* y = nullptr;
  const double* z = nullptr;
  const double* w = nullptr;
  std::uint64_t size = 0;
  std::uint64_t ndata = 0;
};

/// CSR half graph. offsets: num_vertices + 1; neighbour, bin: num_edges; pixel: num_edges or null.
struct NpcfGraphView {
  const std::uint64_t* offsets = nullptr;
  const std::uint32_t* neighbour = nullptr;
  const std::uint8_t* bin = nullptr;
  const std::uint16_t* pixel = nullptr;
  std::uint64_t num_vertices = 0;
  std::uint64_t num_edges = 0;
};

/// Device copy of one graph and point set, kept between counting calls by the caller that owns it
/// (the engine's NpcfPlan holds one per plan). On each device a call runs on, when the whole graph
/// fits one edge window, the first call with the object uploads offsets, neighbours, bins and
/// weights (coordinates and pixels when a parity mode first needs them) and later calls reuse them;
/// a graph that needs several windows is tiled with per-call buffers as without the object. Calls
/// sharing an object are serialised per device. The caller guarantees that an object always sees
/// the same graph and points, does not destroy it during a call, and destroys it before the module
/// is unloaded; its destructor frees its device memory. Objects are independent of each other.
class NpcfDeviceGraph {
public:
  virtual ~NpcfDeviceGraph() = default;
  /// The CUDA devices it was made for (empty: every visible device).
  virtual const std::vector<int>& devices() const noexcept = 0;
  /// Device memory it holds now, summed over devices (bytes).
  virtual std::uint64_t device_bytes() const = 0;
};

/// Execution options shared by every call.
struct NpcfOptions {
  /// Row-aligned edge windows for out-of-core tiling: 0 = automatic (1 when everything fits in
  /// memory_limit), >= 1 forces that many (tests use 2, 3, 5 on small data).
  int windows = 0;
  /// Hub partitions: 0 = one per device used; >= 1 forces that many. Partitions are spread over
  /// devices round robin and their sums merged in partition order.
  int partitions = 0;
  /// >= 0: compute only this partition (of `partitions`, which must then be >= 1) and return its
  /// sums alone, as the merge in partition order would add them: one process of a job split over
  /// several (each counts one partition; the sums are merged in partition order elsewhere).
  int only_partition = -1;
  /// Devices: empty = all visible devices; otherwise these CUDA device indices.
  std::vector<int> devices;
  /// Device memory the job may use per device in bytes; 0 = 85% of the free memory.
  std::uint64_t memory_limit = 0;
  /// 4pCF: largest hub degree whose neighbourhood table stays in shared memory; larger hubs use
  /// per-block tables in global memory. 0 = automatic (384 or what shared memory allows);
  /// tests set a small value to exercise the global-memory path on small catalogues.
  std::uint32_t shared_degree_cap = 0;
  /// Called between kernel launches and tiles (stage text, done/total); may throw to cancel.
  std::function<void(double done, double total, const char* stage)> progress;
  /// 4pCF block histograms: 0 = automatic (fixed point), 1 = double-precision shared-memory
  /// reductions, 2 = fixed point (96-bit integers of the products scaled by 2^k; see
  /// docs/npcf-cuda.md). Both agree with the CPU to the documented tolerance.
  int accumulate = 0;
  /// Non-null: the graph and points stay on the devices in this object between calls (see
  /// NpcfDeviceGraph); with `devices` empty the call runs on the object's devices. Null: upload
  /// per call.
  NpcfDeviceGraph* device_graph = nullptr;
  /// Anisotropic binning (count_2pcf, count_3pcf; docs/npcf.md): nmu > 1 mu bins multiply the
  /// rows (mu inner): the 2pCF's mu of the pair against the line of sight to its midpoint over
  /// [-1, 1], the 3pCF's |mu| of the triangle normal against the line of sight to its centroid
  /// over [0, 1]; with mu_periodic the z axis and minimum-image separations in a box of side
  /// mu_box. mu bins equal the engine's (same arithmetic, each operation rounded to nearest).
  /// legendre (2pCF): also NpcfSums::legendre2/legendre4.
  int nmu = 1;
  bool legendre = false;
  bool mu_periodic = false;
  double mu_box = 0;
  /// 3pCF: hubs with at least this many neighbours use the dense-neighbourhood kernel (pairs of
  /// neighbours from coordinates; needs NpcfTriangleRows::bin_threshold). 0 = automatic (1024),
  /// 0xFFFFFFFF = never; tests set 2 to send every hub through it.
  std::uint32_t dense_min_degree = 0;
};

/// Timings and sizes of one call, for provenance and the benchmark.
struct NpcfRunInfo {
  int windows = 1;          ///< edge windows used
  int partitions = 1;       ///< hub partitions used
  int devices = 1;          ///< devices used
  std::uint64_t tiles = 0;  ///< tile launches (hub window x search windows)
  double upload_s = 0;      ///< host -> device transfers (wall)
  double kernel_s = 0;      ///< counting kernels (device events, summed over tiles)
  double total_s = 0;       ///< whole call (wall)
  std::uint64_t device_bytes = 0;  ///< peak device memory of the call on one device
  std::string device_name;  ///< first device used
};

/// Raw sums per row (see the header comment). Parity fields are empty unless requested.
struct NpcfSums {
  std::vector<std::uint64_t> tuples, random_tuples;
  std::vector<double> n, r;
  std::vector<double> n_odd, r_odd;
  std::vector<std::uint64_t> degenerate;
  /// 2pCF with NpcfOptions::legendre: per radial bin, sum over all pairs of L_2(mu) (L_4(mu))
  /// times the product of signed weights.
  std::vector<double> legendre2, legendre4;
  NpcfRunInfo info;
};

/// 3pCF rows: row_sorted(b1 <= b2 <= b3) = offset[b1 * nbins + b2] + (b3 - b2), as the engine's
/// TriangleTable. Shape of offset: nbins * nbins. Equilateral mode uses rows b (b1 = b2 = b3 = b).
/// With bin_threshold set (nbins - 1 ascending exact squared-distance thresholds, as
/// NpcfGraphSpec's, and the graph's rmin2/rmax2), hubs with many neighbours may be counted by the
/// dense-neighbourhood kernel: every pair of the hub's neighbours is tested from coordinates with
/// the graph's own edge test and bins (the graph must have been built with this binning; the
/// kernel checks the hub's own edges and throws DeviceError on a mismatch). Null: graph walks only.
struct NpcfTriangleRows {
  int nbins = 0;
  const std::uint32_t* offset = nullptr;
  std::uint64_t rows = 0;
  const double* bin_threshold = nullptr;
  double rmin2 = 0, rmax2 = 0;
};

/// 4pCF rows: packed[raw] = (row << 1) | (sign < 0), raw = six 0-based bins in edge order
/// (12 13 14 23 24 34, vertex 1 the hub) read as a base-nbins number. Shape: nbins^6.
struct NpcfTetraRows {
  int nbins = 0;
  const std::uint32_t* packed = nullptr;
  std::uint64_t rows = 0;
};

/// Parity directions for the 4pCF. Exact: unit spokes from coordinates. Pixel: unit vector of
/// the centre of each edge's direction pixel, pixel_unit[3 * p + {0,1,2}] for p < npixels.
struct NpcfParity {
  bool exact = true;
  const double* pixel_unit = nullptr;
  int npixels = 0;
  bool periodic = false;  ///< exact mode: minimum-image spokes in a box of side `box`
  double box = 0;
};

/// Graph construction on the device (cell lists + sort), equal to the CPU graph: the engine
/// passes the exact decision thresholds of its own predicates, and re-decides the edges listed in
/// `recheck` (pairs the device found within rounding of a threshold) with its own code.
struct NpcfGraphSpec {
  double rmin2 = 0;          ///< edge iff rmin2 < d2 < rmax2 (d2 = dx*dx + dy*dy + dz*dz)
  double rmax2 = 0;
  int nbins = 1;
  /// bin(d2) = number of thresholds <= d2; shape nbins - 1, ascending (exact, from Binning).
  const double* bin_threshold = nullptr;
  bool periodic = false;     ///< minimum image as Geometry::delta (|dx| > box/2 -> dx -+ box)
  double box = 0;
  bool pixels = false;       ///< store direction pixels (theta = acos(dz/d), phi = atan2(dy, dx))
  int ntheta = 0, nphi = 0;
};

/// A graph built on the device, copied back to the host.
struct NpcfGraphHost {
  std::vector<std::uint64_t> offsets;
  std::vector<std::uint32_t> neighbour;
  std::vector<std::uint8_t> bin;
  std::vector<std::uint16_t> pixel;
  /// Edge indices whose direction pixel lies within 1e-7 (in pixel units) of a pixel boundary:
  /// the device's acos/atan2 may round differently from the host's libm there, so the engine
  /// recomputes these pixels with direction_pixel(). Empty when pixels are not stored.
  /// Existence and bins need no recheck: they use the CPU's exact arithmetic and thresholds.
  std::vector<std::uint64_t> recheck;
  bool recheck_all = false;  ///< too many near-boundary pixels to list: recompute every pixel
  double build_s = 0;        ///< device time (events) of the build, excluding transfers
  double total_s = 0;        ///< whole call (wall), transfers included
};

class NpcfKernels {
public:
  virtual ~NpcfKernels() = default;

  /// 2pCF: rows = nbins.
  virtual NpcfSums count_2pcf(const NpcfGraphView& g, const NpcfPointsView& p, int nbins,
                              const NpcfOptions& opt) = 0;
  /// 3pCF (all triangle rows, or equilateral rows b = 0..nbins-1).
  virtual NpcfSums count_3pcf(const NpcfGraphView& g, const NpcfPointsView& p,
                              const NpcfTriangleRows& rows, bool equilateral,
                              const NpcfOptions& opt) = 0;
  /// 4pCF; parity != nullptr also fills n_odd, r_odd and degenerate (pixel mode needs g.pixel).
  virtual NpcfSums count_4pcf(const NpcfGraphView& g, const NpcfPointsView& p,
                              const NpcfTetraRows& rows, const NpcfParity* parity,
                              const NpcfOptions& opt) = 0;
  /// Builds the half graph of `p` on the first device of opt.devices (or device 0).
  virtual NpcfGraphHost build_graph(const NpcfPointsView& p, const NpcfGraphSpec& spec,
                                    const NpcfOptions& opt) = 0;
  /// A new, empty device graph for calls on `devices` (empty: every visible device). Allocates
  /// nothing until a counting call uses it.
  virtual std::unique_ptr<NpcfDeviceGraph> make_device_graph(const std::vector<int>& devices) = 0;
};

}  // namespace almagest::kernels
