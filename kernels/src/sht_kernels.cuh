#pragma once
// Launchers of the SHT device kernels (defined in sht_kernels.cu). All take an explicit stream.
// Layouts: alm [cc][nalm] cplx (cc = column * ncomp + component), F [cc][ring][mmax + 1] cplx,
// belt spectra BH [cc][nbelt][N/2 + 1], belt real rings BR [cc][nbelt][N], polar Bluestein rows
// PU [cc][npolar][M], chirp FFTs [nside - 1][M]; maps [cc][map_size].
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
};

void launch_legendre_synthesis(const LegendreArgs& a, cudaStream_t s);
void launch_legendre_adjoint(const LegendreArgs& a, cudaStream_t s);

struct FftArgs {
  int nside, lmax, ncc;       ///< ncc = columns * components in this call
  int M;                      ///< Bluestein length of the polar rings
  std::int64_t npix;
  cplx* F;
  cplx* BH;                   ///< belt half spectra
  double* BR;                 ///< belt real rings
  cplx* PU;                   ///< polar Bluestein rows
  const cplx* chirp_fft_syn;  ///< FFT of conj chirp / M, per polar ring size
  const cplx* chirp_fft_adj;  ///< FFT of chirp / M
};

/// Synthesis: F -> BH (belt) and PU (polar, chirp-premultiplied, zero padded).
void launch_alias_synthesis(const FftArgs& a, cudaStream_t s);
/// Pointwise PU[q] *= table[ring size of q].
void launch_polar_multiply(const FftArgs& a, const cplx* table, cudaStream_t s);
/// Synthesis: BR / PU -> map (full sky, or gathered at `pixels` when npix_out < npix).
void launch_assemble_map(const FftArgs& a, double* map, const std::int64_t* pixels,
                         std::int64_t map_size, cudaStream_t s);
/// Adjoint: full-sky map -> BR (belt) and PU (polar, conj-chirp premultiplied, padded).
void launch_load_map(const FftArgs& a, const double* full_map, cudaStream_t s);
/// Adjoint: BH / PU -> F.
void launch_unalias_adjoint(const FftArgs& a, cudaStream_t s);
/// Cut sky: full[cc][pixels[i]] = map[cc][i] (full must be zeroed first).
void launch_scatter(const double* map, const std::int64_t* pixels, std::int64_t nobs,
                    std::int64_t npix, int ncc, double* full, cudaStream_t s);
/// Bluestein chirp tables: fills rows i = 0..nside-2 (ring size N = 4(i+1)) of `conj_rows`
/// with conj(c_t) and `rows` with c_t, wrapped to length M (before their FFT).
void launch_chirp_rows(int nside, int M, cplx* rows, cplx* conj_rows, cudaStream_t s);
void launch_scale(cplx* data, std::size_t n, double factor, cudaStream_t s);

}  // namespace almagest::kernels::sht
