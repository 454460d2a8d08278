// Catalogue readers for FITS binary tables (cfitsio) and HDF5 column datasets.
#include <fitsio.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "almagest/core/error.hpp"
#include "almagest/io/catalogue.hpp"
#include "almagest/io/fits_file.hpp"
#include "almagest/io/hdf5_file.hpp"
#include "io/catalogue_internal.hpp"

namespace almagest::io::detail {
namespace {

// ---------------------------------------------------------------------------------------------
// FITS

// Files are opened through io::FitsFile (literal names, checksums verified, NAXIS2 checked
// against the file before the columns are sized).

void fits_check(int status, const std::string& file, const std::string& field,
                const std::string& what) {
  if (status != 0) throw IoError(file, field, what + ": cfitsio: " + fits_status_text(status));
}

bool numeric_fits_type(int typecode) {
  switch (typecode) {
    case TBYTE: case TSBYTE: case TSHORT: case TUSHORT: case TINT: case TUINT: case TLONG:
    case TULONG: case TLONGLONG: case TFLOAT: case TDOUBLE:
      return true;
    default:
      return false;
  }
}

std::string fits_type_name(int typecode) {
  switch (std::abs(typecode)) {
    case TSTRING: return "a string column";
    case TLOGICAL: return "a logical column";
    case TBIT: return "a bit column";
    case TCOMPLEX: case TDBLCOMPLEX: return "a complex column";
    default:
      return typecode < 0 ? "a variable-length array column"
                          : "FITS type code " + std::to_string(typecode);
  }
}

std::vector<std::string> fits_column_names(fitsfile* f) {
  int status = 0, ncols = 0;
  fits_get_num_cols(f, &ncols, &status);
  std::vector<std::string> names;
  for (int i = 1; i <= ncols && status == 0; ++i) {
    char key[FLEN_KEYWORD], value[FLEN_VALUE] = {};
    fits_make_keyn("TTYPE", i, key, &status);
    int st = 0;
    if (fits_read_key(f, TSTRING, key, value, nullptr, &st) == 0)
      names.emplace_back(value);
    else
      names.push_back("#" + std::to_string(i));
  }
  fits_clear_errmsg();
  return names;
}

struct FitsColumn {
  int number;
  std::string label;
  bool floating;  ///< stored as E or D: read without null substitution (NaN, inf as stored)
};

FitsColumn resolve_fits_column(fitsfile* f, const std::string& file, const std::string& name,
                               const std::string& hdu_text) {
  const std::string field = "column '" + name + "'";
  int status = 0, ncols = 0, colnum = 0;
  fits_get_num_cols(f, &ncols, &status);
  fits_check(status, file, hdu_text, "cannot read the table header");
  const bool digits = !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isdigit(c);
  });
  if (digits) {
    colnum = std::atoi(name.c_str());
    if (colnum < 1 || colnum > ncols)
      throw IoError(file, field,
                    "column number out of range: the table (" + hdu_text + ") has " +
                        std::to_string(ncols) + " columns");
  } else {
    std::string tmpl = name;
    fits_get_colnum(f, CASEINSEN, tmpl.data(), &colnum, &status);
    if (status == COL_NOT_FOUND || status == COL_NOT_UNIQUE) {
      const bool ambiguous = status == COL_NOT_UNIQUE;
      fits_clear_errmsg();
      throw IoError(file, field,
                    std::string(ambiguous ? "column name is ambiguous" : "no such column") + " in " +
                        hdu_text + "; available columns: " + join(fits_column_names(f)));
    }
    fits_check(status, file, field, "cannot look up column");
  }
  int typecode = 0;
  long repeat = 0, width = 0;
  fits_get_eqcoltype(f, colnum, &typecode, &repeat, &width, &status);
  fits_check(status, file, field, "cannot read column type");
  if (!numeric_fits_type(typecode))
    throw IoError(file, field, "column is not numeric (" + fits_type_name(typecode) + ")");
  if (repeat != 1)
    throw IoError(file, field,
                  "column holds " + std::to_string(repeat) + " values per row; expected one");
  int rawtype = 0;
  fits_get_coltype(f, colnum, &rawtype, &repeat, &width, &status);
  fits_check(status, file, field, "cannot read column type");
  char key[FLEN_KEYWORD], value[FLEN_VALUE] = {};
  int st = 0;
  fits_make_keyn("TTYPE", colnum, key, &st);
  std::string label = "column '" + name + "'";
  if (st == 0 && fits_read_key(f, TSTRING, key, value, nullptr, &st) == 0 && name != value)
    label = "column '" + std::string(value) + "'";
  fits_clear_errmsg();
  return {colnum, label, rawtype == TFLOAT || rawtype == TDOUBLE};
}

// ---------------------------------------------------------------------------------------------
// HDF5

std::string join_path(const std::string& group, const std::string& name) {
  std::string g = group.empty() ? "/" : group;
  if (g.back() != '/') g += '/';
  return g + name;
}

}  // namespace

RawColumns read_fits_columns(const CatalogueSpec& spec) {
  const std::string& file = spec.path;
  int status = 0;
  FitsFile f = FitsFile::open(file);
  int nhdus = 0, hdutype = 0;
  fits_get_num_hdus(f.get(), &nhdus, &status);
  fits_check(status, file, "", "cannot count HDUs");
  std::string hdu_text;
  if (spec.fits_hdu < 0) throw IoError(file, "HDU", "HDU numbers are 1-based (0: first binary table)");
  if (spec.fits_hdu == 0) {
    int found = 0;
    for (int i = 1; i <= nhdus; ++i) {
      if (!f.try_move(i, &hdutype, "HDU " + std::to_string(i)))
        throw IoError(file, "HDU " + std::to_string(i), "cannot read HDU (truncated file?)");
      if (hdutype == BINARY_TBL) {
        found = i;
        break;
      }
    }
    if (!found)
      throw IoError(file, "HDU", "no binary table found in " + std::to_string(nhdus) + " HDUs");
    hdu_text = "HDU " + std::to_string(found);
  } else {
    hdu_text = "HDU " + std::to_string(spec.fits_hdu);
    if (!f.try_move(spec.fits_hdu, &hdutype, hdu_text))
      throw IoError(file, hdu_text,
                    "no such HDU: the file holds " + std::to_string(nhdus) +
                        " complete HDU(s) (or it is truncated)");
    if (hdutype != BINARY_TBL && hdutype != ASCII_TBL)
      throw IoError(file, hdu_text, "HDU is an image, not a table");
  }

  std::vector<std::string> names = spec.columns.empty() ? default_named_columns(spec.sky) : spec.columns;
  if (names.size() != 3)
    throw IoError(file, "columns", "expected 3 coordinate columns, got " + std::to_string(names.size()));
  std::vector<FitsColumn> coord_cols, weight_cols;
  for (const auto& n : names) coord_cols.push_back(resolve_fits_column(f.get(), file, n, hdu_text));
  for (const auto& n : spec.weight_columns)
    weight_cols.push_back(resolve_fits_column(f.get(), file, n, hdu_text));

  const LONGLONG nrows = f.table_rows(hdu_text);  // NAXIS2 x NAXIS1 fit in the file
  RawColumns raw;
  raw.coord.assign(3, std::vector<double>(static_cast<std::size_t>(nrows)));
  raw.weight.assign(weight_cols.size(), std::vector<double>(static_cast<std::size_t>(nrows)));
  for (const auto& c : coord_cols) raw.coord_label.push_back(c.label);
  for (const auto& c : weight_cols) raw.weight_label.push_back(c.label);

  // Read in row blocks of cfitsio's preferred size (all columns of a block share its buffers).
  long chunk = 0;
  fits_get_rowsize(f.get(), &chunk, &status);
  fits_check(status, file, hdu_text, "cannot read the table layout");
  chunk = std::max(chunk, 1024L);
  // Null cells of integer columns become NaN; floating columns are read as stored (NaN, inf):
  // both are reported below as non-finite, with the value.
  double nulval = std::numeric_limits<double>::quiet_NaN();
  for (LONGLONG first = 0; first < nrows; first += chunk) {
    const LONGLONG count = std::min<LONGLONG>(chunk, nrows - first);
    auto read = [&](const FitsColumn& c, std::vector<double>& out) {
      int anynul = 0;
      fits_read_col(f.get(), TDOUBLE, c.number, first + 1, 1, count, c.floating ? nullptr : &nulval,
                    out.data() + first, &anynul, &status);
      fits_check(status, file, c.label,
                 "cannot read rows " + std::to_string(first + 1) + "-" +
                     std::to_string(first + count) + " (truncated file?)");
    };
    for (std::size_t k = 0; k < 3; ++k) read(coord_cols[k], raw.coord[k]);
    for (std::size_t k = 0; k < weight_cols.size(); ++k) read(weight_cols[k], raw.weight[k]);
  }
  return raw;
}

RawColumns read_hdf5_columns(const CatalogueSpec& spec) {
  const std::string& file = spec.path;
  Hdf5Reader reader(file);
  const std::string group = spec.hdf5_group.empty() ? "/" : spec.hdf5_group;
  if (!reader.exists(group)) throw IoError(file, "group '" + group + "'", "no such group");
  std::vector<std::string> available = reader.list(group);

  auto read_column = [&](const std::string& name, std::string& label) {
    std::string actual = name;
    if (std::find(available.begin(), available.end(), name) == available.end()) {
      std::vector<std::string> matches;
      for (const auto& a : available)
        if (iequals(a, name)) matches.push_back(a);
      if (matches.size() != 1)
        throw IoError(file, "column '" + name + "'",
                      std::string(matches.empty() ? "no such dataset" : "dataset name is ambiguous") +
                          " in group '" + group + "'; available: " + join(available));
      actual = matches.front();
    }
    const std::string path = join_path(group, actual);
    label = "column '" + actual + "'";
    Shape shape = reader.shape(path);
    const bool column = shape.size() == 1 || (shape.size() == 2 && shape[1] == 1);
    if (!column)
      throw IoError(file, label + " (dataset '" + path + "')", "expected a 1-D dataset");
    return reader.read_double(path);
  };

  std::vector<std::string> names = spec.columns.empty() ? default_named_columns(spec.sky) : spec.columns;
  if (names.size() != 3)
    throw IoError(file, "columns", "expected 3 coordinate columns, got " + std::to_string(names.size()));
  RawColumns raw;
  raw.coord.resize(3);
  raw.coord_label.resize(3);
  for (int c = 0; c < 3; ++c) raw.coord[c] = read_column(names[c], raw.coord_label[c]);
  raw.weight.resize(spec.weight_columns.size());
  raw.weight_label.resize(spec.weight_columns.size());
  for (std::size_t k = 0; k < spec.weight_columns.size(); ++k)
    raw.weight[k] = read_column(spec.weight_columns[k], raw.weight_label[k]);

  const std::size_t n = raw.coord[0].size();
  auto check_len = [&](const std::vector<double>& v, const std::string& label) {
    if (v.size() != n)
      throw IoError(file, label,
                    "has " + std::to_string(v.size()) + " rows but " + raw.coord_label[0] +
                        " has " + std::to_string(n));
  };
  for (int c = 1; c < 3; ++c) check_len(raw.coord[c], raw.coord_label[c]);
  for (std::size_t k = 0; k < raw.weight.size(); ++k) check_len(raw.weight[k], raw.weight_label[k]);
  return raw;
}

}  // namespace almagest::io::detail
