#pragma once
// HEALPix map and alm files as healpy writes and reads them, plus HDF5.
//
// Map FITS: empty primary HDU, then a BINTABLE with PIXTYPE = 'HEALPIX', NSIDE, ORDERING
// ('RING' | 'NESTED'), INDXSCHM ('IMPLICIT' | 'EXPLICIT'), FIRSTPIX, LASTPIX and one column per
// map (TTYPEn: TEMPERATURE, Q_POLARISATION, U_POLARISATION, ...; any repeat count per row).
// Explicit-index (partial-sky) files carry a first column PIXEL with the pixel indices.
// Blind pixels hold kUnseen (-1.6375e30). Alm FITS: one BINTABLE per alm set with columns
// INDEX = l^2 + l + m + 1, REAL, IMAG (healpy write_alm/read_alm), mmax = lmax.
// Invalid content throws IoError naming the file and the key or column.
//
// Hostile files (all FITS goes through io::FitsFile, see almagest/io/fits_file.hpp): names are
// literal (no cfitsio extended syntax); CHECKSUM / DATASUM are verified when present; NSIDE must
// be 1..2^29 (a power of two for NESTED); NAXIS2 x NAXIS1 must fit in the file and the columns
// must hold exactly the NSIDE's (or PIXEL's) number of values before anything is read; values are
// read without cfitsio's null substitution. Maps: NaN and values within 1e-5 of UNSEEN read as
// UNSEEN (blind), an infinite value is an IoError naming the column and the pixel. Alm: a NaN or
// infinite REAL / IMAG is an IoError naming the HDU, the column and the row; an INDEX < 1 or with
// m < 0 likewise; without a requested lmax, the largest l found must satisfy
// alm_size(l) <= max(kAlmRowsFactor x rows, alm_size(kAlmFreeLmax)) (a corrupt INDEX cannot size
// the result). Writers refuse NaN and infinite values (require_finite_map / require_finite_alm)
// before the output exists; UNSEEN is a valid map value.
#include <complex>
#include <cstdint>
#include <string>
#include <vector>

namespace almagest::sht {

/// Largest NSIDE accepted from a file (12 NSIDE^2 fits in 64 bits).
inline constexpr int kMaxFileNside = 1 << 29;
/// read_alm without a requested lmax: band limits up to this are always accepted ...
inline constexpr int kAlmFreeLmax = 4095;
/// ... larger ones only when alm_size(l) <= kAlmRowsFactor x the table's rows.
inline constexpr unsigned long long kAlmRowsFactor = 8;

enum class Ordering { Ring, Nested };

struct HealpixMap {
  int nside = 0;
  /// Ordering of `columns` data and `pixels` indices as held in memory.
  Ordering ordering = Ordering::Ring;
  std::vector<std::string> names;              ///< TTYPE of each column
  std::vector<std::string> units;              ///< TUNIT of each column ("" when absent)
  std::vector<std::vector<double>> columns;    ///< one vector per column
  /// Partial sky: the pixel index of each value (explicit-index files); empty = full sky, in
  /// which case every column has 12 nside^2 entries.
  std::vector<std::int64_t> pixels;
  std::string coordsys;                        ///< COORDSYS ('G', 'E', 'C') if present

  bool partial() const noexcept { return !pixels.empty(); }
};

/// Reads a HEALPix map FITS file (first BINTABLE extension, or extension `hdu` >= 1). With
/// to_ring, NESTED data are converted to RING (values and pixel indices; indices re-sorted).
HealpixMap read_healpix_map(const std::string& path, bool to_ring = true, int hdu = 1);

/// Writes `map` (atomically). Ordering on disk is map.ordering; a partial map is written with
/// INDXSCHM = 'EXPLICIT' and a PIXEL column. Column names default to healpy's standard names.
/// A NaN or infinite value is an IoError (require_finite_map) and no file is written.
void write_healpix_map(const std::string& path, const HealpixMap& map);

/// Results are never written non-finite: throws IoError(output, column or "alm set S", ...)
/// naming the first NaN or infinite value (pixel, or index with its l and m). UNSEEN is finite.
void require_finite_map(const std::string& output, const HealpixMap& map);
void require_finite_alm(const std::string& output,
                        const std::vector<std::vector<std::complex<double>>>& sets, int lmax);

/// A partial map expanded to full sky (blind pixels = kUnseen), keeping the ordering.
HealpixMap to_full_sky(const HealpixMap& map);

/// Ordering conversion of full-sky data (nside a power of two). out[ring2nest(i)] = in[i] etc.
std::vector<double> ring_to_nest(const std::vector<double>& ring, int nside);
std::vector<double> nest_to_ring(const std::vector<double>& nest, int nside);
std::int64_t ring2nest(int nside, std::int64_t pix);
std::int64_t nest2ring(int nside, std::int64_t pix);

/// Reads the alm set in extension `hdu` (>= 1) into healpy layout with lmax = the largest l
/// found (or `lmax` if >= 0; entries beyond it are dropped). Absent entries are zero. The
/// largest l found is bounded as described at the top (kAlmFreeLmax, kAlmRowsFactor).
std::vector<std::complex<double>> read_alm(const std::string& path, int hdu = 1, int lmax = -1,
                                           int* lmax_out = nullptr);
/// Writes one BINTABLE per alm set (e.g. T, E, B), each alm_size(lmax) long, healpy layout.
/// A NaN or infinite value is an IoError (require_finite_alm) and no file is written.
void write_alm(const std::string& path, const std::vector<std::vector<std::complex<double>>>& sets,
               int lmax);

/// Ring weights for healpy-style map2alm (use_weights=True) from a HEALPix ring weight file
/// (weight_ring_n<NSIDE 5 digits>.fits of the HEALPix / healpy data): the first BINTABLE
/// extension's first column (TEMPERATURE WEIGHTS) holds w - 1 for the 2 nside rings from the
/// north pole to the equator, read across rows and vector elements (values beyond 2 nside are
/// ignored). Returns the 2 nside weights w, for ShtPlan::map2alm (applied to every component,
/// as healpy does). Throws IoError naming the file and the key or column: no such file, no
/// BINTABLE, fewer than 2 nside values, a non-finite value, or an NSIDE keyword other than nside.
std::vector<double> read_ring_weights(const std::string& path, int nside);

/// Pixel weights for healpy-style map2alm (use_pixel_weights=True) from a HEALPix full-weight
/// file (full_weights/healpix_full_weights_nside_<NSIDE 4 digits>.fits of the healpy data): the
/// first BINTABLE extension's column COMPRESSED PIXEL WEIGHTS holds w - 1 for the
/// ((3 nside + 1)(nside + 1)) / 4 pixels of one symmetry class each, with an NSIDE keyword.
/// Returns the 12 nside^2 weights w of the RING-ordered map (expanded by healpix_cxx
/// apply_fullweights), for ShtPlan::map2alm_pixel_weights. Throws IoError naming the file and
/// the key or column: no such file, no BINTABLE, another column name, an NSIDE keyword missing or
/// other than nside, a number of values other than the one of nside, a non-finite value.
std::vector<double> read_pixel_weights(const std::string& path, int nside);

/// HDF5: a map as dataset "/map" [ncomp][npix] with attributes nside, ordering, names; alm as
/// "/alm" [ncomp][nalm][2] (re, im) with attributes lmax, mmax, layout.
void write_map_hdf5(const std::string& path, const HealpixMap& map);
HealpixMap read_map_hdf5(const std::string& path);
void write_alm_hdf5(const std::string& path,
                    const std::vector<std::vector<std::complex<double>>>& sets, int lmax);
std::vector<std::vector<std::complex<double>>> read_alm_hdf5(const std::string& path,
                                                              int* lmax_out = nullptr);

}  // namespace almagest::sht
