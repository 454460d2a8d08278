#pragma once
// FITS binary tables written from the format description with cfitsio, for the tests of the
// readers of HEALPix data files (weight files and the like).
#include <string>
#include <vector>

namespace almagest::testing {

/// Writes `path` (overwriting it): an empty primary HDU, then one BINTABLE with one column per
/// name in `columns`, each holding `values` as doubles ('D') or floats ('E'), `per_row` values per
/// row, and an NSIDE keyword when nside_key > 0. Returns cfitsio's status (0: written).
int write_fits_table(const std::string& path, const std::vector<std::string>& columns,
                     const std::vector<double>& values, char type = 'D', int per_row = 1,
                     long long nside_key = -1);

}  // namespace almagest::testing
