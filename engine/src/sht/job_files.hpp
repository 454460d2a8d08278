#pragma once
// The file side of the sht job layer (run_sht_job; moved from the CLI for issue 20): maps, alm and masks read through the engine's HEALPix I/O
// (FITS as healpy writes it, HDF5), and maps, alm and spectra written atomically with provenance
// (FITS header keywords and HISTORY cards, HDF5 root attributes). Every IoError names the file
// and the key, column or dataset.
#include <complex>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "almagest/sht/healpix_io.hpp"
#include "almagest/sht/job.hpp"

namespace almagest::sht::files {

using Complex = std::complex<double>;

using Format = FileFormat;  // sht/job.hpp (to_string there)

/// Throws IoError(path, "", "file does not exist") when `path` is not a readable file.
void require_file(const std::string& path);
/// Format of an existing input file: HDF5 by its signature or extension, FITS otherwise.
Format input_format(const std::string& path);
/// `requested` is auto | fits | hdf5 | text; auto picks by extension (.h5/.hdf5: HDF5,
/// .txt/.dat/.csv: text where allowed, anything else FITS). Throws ConfigError(field).
Format output_format(const std::string& path, const std::string& requested, bool text_allowed,
                     const std::string& field);

/// True if the file holds alm (FITS: the first table's first column is INDEX; HDF5: /alm).
bool holds_alm(const std::string& path);

/// A map in RING order (NESTED data converted): nside in 1..8192, values finite (NaN and null
/// values read as UNSEEN). Full-sky or partial (explicit-index) as stored.
sht::HealpixMap read_map(const std::string& path);

/// NSIDE from the header alone (dry runs): -1 when the header does not say (the run reads the
/// whole file and reports the problem then).
int probe_map_nside(const std::string& path);

/// Number of alm sets (FITS: table extensions; HDF5: rows of /alm).
int count_alm_sets(const std::string& path);
/// The alm sets `which` (0-based) in healpy layout at band limit `lmax` (entries above it are
/// dropped, missing ones are zero); lmax < 0: the largest l found in those sets. Values must be
/// finite. `lmax_out` receives the band limit used.
std::vector<std::vector<Complex>> read_alm_sets(const std::string& path,
                                                const std::vector<int>& which, int lmax,
                                                int& lmax_out);

/// Observed RING pixels given by a mask (strictly increasing): a map file (FITS or HDF5; a pixel
/// is observed where its first column is finite, non-zero and not UNSEEN; its NSIDE must equal
/// `nside`) or a text file of RING pixel indices (whitespace separated, '#' comments).
std::vector<std::int64_t> read_mask(const std::string& path, int nside);

/// One FITS keyword (on every table HDU) / HDF5 root attribute of an output. Names are FITS
/// keywords (<= 8 characters); HDF5 uses them lower-cased.
using Key = ShtKey;  // sht/job.hpp
struct OutputMeta {
  std::vector<Key> keys;
  std::string provenance;  ///< JSON; HDF5 attribute "provenance", FITS HISTORY cards
};

/// Atomic writers (a temporary beside the destination, renamed into place when complete).
void write_map(const std::string& path, Format format, const sht::HealpixMap& map,
               const OutputMeta& meta);
void write_alm(const std::string& path, Format format,
               const std::vector<std::vector<Complex>>& sets, int lmax, const OutputMeta& meta);
/// Spectra `cl[i]` (l = 0..lmax) labelled `labels[i]` (TT, EE, BB, TE, EB, TB, ...). FITS: one
/// BINTABLE in healpy write_cl's layout (column names TEMPERATURE, GRADIENT, CURL, G-T, C-T, C-G
/// by position for the (T, E, B) set, as healpy writes them); text: "l TT ..." columns; HDF5:
/// "/cl" [nspec][lmax + 1] and "/ell".
void write_cl(const std::string& path, Format format, const std::vector<std::string>& labels,
              const std::vector<std::vector<double>>& cl, const OutputMeta& meta);

}  // namespace almagest::sht::files
