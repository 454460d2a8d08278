#pragma once
// Launchers of the SHT device kernels (defined in sht_kernels.cu). All take an explicit stream.
// Layouts: alm [cc][nalm] cplx (cc = column * ncomp + component), F [cc][ring][mmax + 1] cplx,
// belt spectra BH [cc][nbelt][N/2 + 1], belt real rings BR [cc][nbelt][N], polar Bluestein rows
// PU (see PolarClass); maps [cc][map_size].
#include <cuda_runtime.h>

#include <cstdint>

#include "sht_math.cuh"

namespace almagest::kernels::sht {

struct LegendreArgs {
  int nside, lmax, spin;
  int ncols;                  ///< columns in this call
  int nactive;                ///< active ring pairs (sorted pole -> equator)
  const int* active;          ///< [nactive] pair index p (north ring p, south ring 4 nside - 2 - p)
  const int* first_active;    ///< [lmax + 1] first active index with mlim >= m
  const int* mlim;            ///< [npairs] per pair
  const double* nu;           ///< [lmax + 1]
  const double* tabA;         ///< [nalm] normalised recursion (fill_mu_table), alm layout
  const double* tabB;         ///< [nalm] (spin 2; may be null for spin 0)
  const double* tabN;         ///< [nalm] lambda_l = N_l mu_l
  cplx* alm;                  ///< [ncols * ncomp][nalm]
  cplx* F;                    ///< [ncols * ncomp][nrings][lmax + 1]
  // Padded step layout: per mode m the steps of its recursion at koff[m] + step, padded with
  // zeros to a multiple of kObasisChunk (spin 0) or kSpin2Chunk (spin 2). Spin 0 (odd-parity basis, sht_math.cuh): steps k =
  // 0..obasis_steps - 1. Spin 2: steps l - l0 for l = l0..lmax (the synthesis only).
  const long long* koff;      ///< [lmax + 2] padded step offsets (koff[lmax + 1] = total)
  const double2* ab;          ///< [total] (A_k, B_k) (spin 2: A_l, B_l of fill_mu_table)
  const ObasisNorm* norm;     ///< [total] (N_k, u_k, v_k) (spin 0)
  cplx* W;                    ///< [ncols][total][2]: spin 0 (w1, w2) of the synthesis, (S1, S2)
                              ///< of the adjoint; spin 2 (aE N_l, aB N_l) of the synthesis
};

/// The spin-0 kernels' arguments: the odd chains' start values of every mode and active pair
/// (launch_start_table), entry soff[m] + i - first_active[m] for active index i; start_v null
/// where the plan has none (the kernels then compute them). (A derived struct, as AdjointArgs:
/// members added to LegendreArgs change the spin-2 synthesis' register allocation.)
struct Spin0Args : LegendreArgs {
  const long long* soff;      ///< [lmax + 2]
  const double* start_v;      ///< mu_{-2} of start_odd_chain, scaled
  const short* start_e;       ///< its scale
  const double* pair_z;       ///< [2 nside] cos theta of each pair's north ring
};

/// The Legendre adjoints' arguments: where `spectra` is set they read F_m of the belt ring pairs
/// from the belt half spectra (the unalias kernel then writes the polar rings' F only), else all
/// from F. (A separate struct: these members in LegendreArgs cost the spin-2 synthesis two
/// registers and 0.8% at nside 2048.)
struct AdjointArgs : Spin0Args {
  bool spectra;               ///< belt F_m from BH and belt_phase
  const cplx* BH;             ///< belt half spectra [cc][nbelt][N/2 + 1]
  const cplx* belt_phase;     ///< [4 nside] e^{i pi j / (4 nside)}
  // Polar F_m straight from the Bluestein rows (polar_spectra; the unalias kernel is then not
  // run): PU, the rows' offsets and the polar chirp / phase tables (FftArgs).
  bool polar_spectra;
  int ncc;                    ///< columns * components of the call (PU layout)
  const cplx* PU;
  const long long* prow;      ///< [nside - 1][3]: class base, rows M, (q - qlo) M
  const cplx* pchirp;         ///< polar_table_index(q, j): e^{i pi j^2 / N}
  const cplx* pphase;         ///< polar_table_index(q, j): e^{i pi j / N}
  /// Spin 0: each block turns its mode's sums into alm at its end (no finish kernel).
  bool finish_in_block;
  /// Spin 0, single column, kAdjSkipPairs pairs per thread (launch_legendre_adjoint clears them
  /// for other shapes): the leading chunks of each tile in which every chain is dead are
  /// skipped (launch_adjoint_skip_table). skip_c0[m * skip_ntiles + tile] is the tile's first
  /// live chunk; skip_v0, skip_v1, skip_e (entry soff[m] + i - first_active[m], as the start
  /// table) are the chain's values and scale there. Null where the plan has no such table.
  const int* skip_c0;
  int skip_ntiles;
  const double* skip_v0;
  const double* skip_v1;
  const short* skip_e;
};

/// Ring pairs per thread of the adjoint shape whose tiles the skip table describes.
inline constexpr int kAdjSkipPairs = 8;
/// Odd-chain steps per reduction chunk of that shape (one column: KA of k_adjoint_spin0).
inline constexpr int kAdjSkipChunk = 8;
/// Most tiles per mode the skip table takes (nside up to 16384 full sky).
inline constexpr int kAdjSkipMaxTiles = 64;
/// Tiles per mode of that shape for nactive active pairs.
inline int adjoint_skip_tiles(int nactive) {
  constexpr int cap = 128 * kAdjSkipPairs;  // kThreads * kAdjSkipPairs
  return (nactive + cap - 1) / cap;
}

/// Steps per staged chunk of the spin-0 synthesis; the tables are padded to a multiple of it.
inline constexpr int kObasisChunk = 32;
/// The same for the spin-2 synthesis (degrees per chunk).
inline constexpr int kSpin2Chunk = 64;

void launch_legendre_synthesis(const Spin0Args& a, cudaStream_t s);
/// Fills the spin-0 start table (a.soff given) with the values the kernels would compute.
void launch_start_table(const LegendreArgs& a, const long long* soff, double* start_v,
                        short* start_e, double* pair_z, cudaStream_t s);
void launch_legendre_adjoint(const AdjointArgs& a, cudaStream_t s);
/// Fills the skip table of the spin-0 adjoint (AdjointArgs::skip_c0 ..., with a.soff and the
/// start table given): per mode and tile the first chunk in which a chain is live, and each
/// chain's values there, as the kernel's own recursion gives them.
void launch_adjoint_skip_table(const AdjointArgs& a, int* c0, double* v0, double* v1, short* e,
                               cudaStream_t s);
/// Zeroes the spin-2 alm entries that the recursion adjoint (launch_legendre_adjoint) does not
/// write: l < 2 and modes no active ring pair reaches. Independent of the glue, so it may run on
/// another stream before the adjoint.
void launch_adjoint2_zero(const LegendreArgs& a, cudaStream_t s);
/// Raises the dynamic shared-memory limit of the adjoint kernels on the current device (the same
/// value for every plan; call once per plan, outside stream capture).
void prepare_legendre_kernels();

struct FftArgs {
  int nside, lmax, ncc;       ///< ncc = columns * components in this call
  std::int64_t npix;
  int nclass;                 ///< polar classes (0 when nside == 1)
  PolarClass cls[kMaxPolarClasses];
  const unsigned char* cls_of;  ///< [nside - 1] class of each ring pair q
  const int* mlim;            ///< [2 nside] per ring pair: F_m = 0 above it (not read)
  cplx* F;
  cplx* BH;                   ///< belt half spectra
  double* BR;                 ///< belt real rings
  cplx* PU;                   ///< polar Bluestein rows
  /// Null, or the polar rows' input buffer (PolarInput): the load and alias kernels write a row's
  /// first N entries there, whose zero padding stays from the plan's start, and the forward FFT
  /// reads it into PU; class bases for ncc_in columns (the plan's), so one layout for every call.
  cplx* PUin;
  int ncc_in;
  const cplx* chirp_fft;      ///< FFT of the wrapped chirp / M per row ([class][row][M])
  const cplx* pchirp;         ///< null, or e^{i pi j^2 / N} at polar_table_index(q, j), j < N
  const cplx* pphase;         ///< null, or e^{i pi j / N} at polar_table_index(q, j)
};

/// Entry of bin j (< N = 4 (q + 1)) of polar ring pair q in the polar chirp and phase tables:
/// the pairs' rows of N entries one after another.
__host__ __device__ inline long long polar_table_index(int q, int j) {
  return 2LL * q * (q + 1) + j;
}
/// Entries of the polar tables: 2 nside (nside - 1).
inline long long polar_table_size(int nside) { return 2LL * nside * (nside - 1); }
/// Fills the polar chirp and phase tables (the values the glue kernels compute with sincospi).
void launch_polar_tables(int nside, cplx* pchirp, cplx* pphase, cudaStream_t s);

/// Which rows a glue kernel call covers: the belt rings and the polar ring pairs are
/// independent up to the Legendre stage, so a plan may run them on two streams.
enum class Rows { All, Belt, Polar };

/// Synthesis: F -> BH (belt) and PU (polar pairs, chirp-premultiplied, zero padded).
void launch_alias_synthesis(const FftArgs& a, Rows rows, cudaStream_t s);
/// Pointwise PU *= chirp spectrum (conjugated for the synthesis).
void launch_polar_multiply(const FftArgs& a, bool conjugate, cudaStream_t s);
/// Synthesis: BR / PU -> map (full sky, or gathered at `pixels` when npix_out < npix: then
/// `rows` must be All). With belt = false a full-sky map's belt rings are left alone (the belt
/// FFT wrote them).
void launch_assemble_map(const FftArgs& a, double* map, const std::int64_t* pixels,
                         std::int64_t map_size, bool belt, Rows rows, cudaStream_t s);
/// Adjoint: full-sky map -> BR (belt; skipped with belt = false, where the belt FFT reads the
/// map) and PU (polar pairs, conj-chirp premultiplied, padded).
void launch_load_map(const FftArgs& a, const double* full_map, bool belt, Rows rows,
                     cudaStream_t s);
/// Adjoint: BH / PU -> F (modes up to each ring's mlim), of every ring or (polar_only) of the
/// polar-cap rings alone.
void launch_unalias_adjoint(const FftArgs& a, bool polar_only, cudaStream_t s);
/// The adjoint's polar rows as one DFT per ring pair in a block's shared memory
/// (sht_polar_dft.cu): its tables, built once per plan.
struct PolarDftArgs {
  const cplx* tw;             ///< [pdft::kTwiddles] e^{-2 pi i k / kTwiddles}
  const cplx* chirps;         ///< [nside (nside - 1) / 2] b_t = e^{i pi t^2 / n} per n < nside
  const cplx* spec;           ///< per ring pair q: FFT of the wrapped chirp / L (L = its length)
  const long long* spec_off;  ///< [nside - 1] offset of pair q's chirp spectrum in spec
  const long long* prow;      ///< [nside - 1][3] each pair's row in PU (AdjointArgs::prow)
};
/// Largest nside the shared-memory polar DFT takes (its longest quarter fits one buffer).
int polar_dft_max_nside();
/// Entries of the chirp-spectrum table of nside, and each pair's offset in it.
long long polar_dft_spectrum_size(int nside, std::vector<long long>& spec_off);
/// Fills the tables (tw, chirps: sizes as in PolarDftArgs; spec, spec_off from
/// polar_dft_spectrum_size) and raises the kernels' shared-memory limit for nside (outside
/// stream capture).
void launch_polar_dft_tables(int nside, cplx* tw, cplx* chirps, cplx* spec,
                             const long long* spec_off, cudaStream_t s);
/// Adjoint: full-sky map -> the polar pairs' rows in PU (the first N entries of each, as the
/// load and the Bluestein chain leave them), every column of the call.
void launch_polar_dft_adjoint(const FftArgs& a, const PolarDftArgs& d, const double* full_map,
                              cudaStream_t s);
/// Cut sky: full[cc][pixels[i]] = map[cc][i] (full must be zeroed first).
void launch_scatter(const double* map, const std::int64_t* pixels, std::int64_t nobs,
                    std::int64_t npix, int ncc, double* full, cudaStream_t s);
/// Bluestein chirps c_t = e^{i pi t^2 / N} of every row, wrapped to its class length M (before
/// their FFT), into `table` ([class][row][M]).
void launch_chirp_rows(const FftArgs& a, cplx* table, cudaStream_t s);
void launch_scale(cplx* data, std::size_t n, double factor, cudaStream_t s);

}  // namespace almagest::kernels::sht
