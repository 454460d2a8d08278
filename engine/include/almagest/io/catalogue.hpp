#pragma once
// Point catalogues for the N-point engine: text (whitespace or CSV), FITS binary tables (cfitsio)
// and HDF5 datasets. Sky catalogues (RA, Dec, redshift) are converted to comoving Cartesian
// coordinates in Mpc/h with a flat LCDM fiducial cosmology.
#include <cstddef>
#include <string>
#include <vector>

namespace almagest::io {

/// Flat LCDM, distances in Mpc/h (H0 = 100 h km/s/Mpc). Radiation is neglected.
struct Cosmology {
  double omega_m = 0.31;
  /// E(z) = H(z)/H0 = sqrt(Om (1+z)^3 + 1 - Om).
  double efunc(double z) const;
  /// Line-of-sight comoving distance to redshift z in Mpc/h: (c/H0) int_0^z dz'/E(z'),
  /// c/H0 = 2997.92458 Mpc/h; adaptive Gauss-Kronrod quadrature, relative error < 1e-10.
  double comoving_distance(double z) const;
};

/// Converts (RA, Dec in degrees, comoving distance in Mpc/h) to Cartesian Mpc/h:
/// x = D cos(dec) cos(ra), y = D cos(dec) sin(ra), z = D sin(dec).
void sky_to_cartesian(double ra_deg, double dec_deg, double dist, double& x, double& y, double& z);

enum class CatalogueFormat { Auto, Text, Fits, Hdf5 };

/// How to read one catalogue file.
struct CatalogueSpec {
  std::string path;
  CatalogueFormat format = CatalogueFormat::Auto;  ///< Auto: by extension (.fits/.fit/.fits.gz, .h5/.hdf5)
  /// Coordinate columns: {x, y, z} (Cartesian) or {ra, dec, redshift} when `sky` is true.
  /// Text files: 1-based column numbers as strings ("1","2","3"), or names from a '#' header line.
  /// The header is the last '#' line before the first data row whose fields are all non-numeric
  /// and as many as that row's fields ("# x y z w", "# RA,DEC,Z,WEIGHT"), or a first data line
  /// with no numeric field (bare CSV header). Names match exactly, else case-insensitively.
  /// Fields are split on commas when a line holds one, else on whitespace.
  /// Empty: defaults (text: columns 1 2 3; FITS/HDF5: "x","y","z" or "RA","DEC","Z" for sky).
  std::vector<std::string> columns;
  /// Weight columns, multiplied together (e.g. {"WEIGHT", "WEIGHT_FKP"}). Text default: column 4
  /// if present, else unit weights. Empty for FITS/HDF5: unit weights.
  std::vector<std::string> weight_columns;
  bool sky = false;           ///< columns are RA [deg], Dec [deg], redshift
  Cosmology cosmology;        ///< used when sky is true
  int fits_hdu = 0;           ///< 0: first binary table HDU; otherwise 1-based HDU number
  std::string hdf5_group = "/";  ///< HDF5: group holding one 1-D dataset per column
};

/// Owning catalogue. Cartesian Mpc/h; weights as read (not normalised).
struct Catalogue {
  std::vector<double> x, y, z, w;
  std::string source;  ///< file it was read from (for messages and provenance)
  std::size_t size() const noexcept { return x.size(); }
};

/// Reads a catalogue. Throws IoError naming the file and the column on: missing file, missing
/// column, unreadable or truncated data, non-finite coordinates or weights (naming the row),
/// empty catalogue. Weights are not normalised here.
Catalogue load_catalogue(const CatalogueSpec& spec);

/// Writes a Cartesian catalogue as whitespace text "x y z w" with a '#' header (atomic).
void save_catalogue_text(const Catalogue& cat, const std::string& path);

}  // namespace almagest::io
