#pragma once
// Internal: the format readers of load_catalogue hand their columns to finish_catalogue, which
// validates them, multiplies the weights and converts sky coordinates.
#include <cstddef>
#include <string>
#include <vector>

#include "almagest/io/catalogue.hpp"

namespace almagest::io::detail {

struct RawColumns {
  std::vector<std::vector<double>> coord;     ///< 3 columns: x y z, or RA Dec redshift
  std::vector<std::string> coord_label;       ///< "column 3 (z)", "column 'DEC'", for messages
  std::vector<std::vector<double>> weight;    ///< 0 or more weight columns, multiplied
  std::vector<std::string> weight_label;
  std::vector<std::size_t> line;              ///< text files: 1-based line of each row
};

/// Validates (non-empty, finite, Dec in [-90, 90], redshift >= 0) and builds the catalogue.
Catalogue finish_catalogue(const CatalogueSpec& spec, RawColumns&& raw);

RawColumns read_text_columns(const CatalogueSpec& spec);
RawColumns read_fits_columns(const CatalogueSpec& spec);
RawColumns read_hdf5_columns(const CatalogueSpec& spec);

/// Coordinate column names for FITS/HDF5 when the spec gives none.
std::vector<std::string> default_named_columns(bool sky);

/// Case-insensitive ASCII comparison.
bool iequals(const std::string& a, const std::string& b);

/// "a, b, c"
std::string join(const std::vector<std::string>& names);

}  // namespace almagest::io::detail
