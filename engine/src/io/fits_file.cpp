// The one cfitsio handle (see fits_file.hpp): literal file names, RAII, checked sizes, checksums.
#include "almagest/io/fits_file.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "almagest/core/error.hpp"

namespace almagest::io {
namespace {

/// cfitsio skips leading blanks of a name even for disk files: keep them by a "./" prefix.
std::string literal_name(const std::string& path) {
  if (!path.empty() && path.front() == ' ') return "./" + path;
  return path;
}

std::string trim_right(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

bool is_floating(int typecode) {
  const int t = typecode < 0 ? -typecode : typecode;
  return t == TFLOAT || t == TDOUBLE || t == TCOMPLEX || t == TDBLCOMPLEX;
}

/// a x b for non-negative values, or -1 when it exceeds `limit` (no overflow either way).
long long bounded_product(long long a, long long b, long long limit) {
  if (a < 0 || b < 0) return -1;
  if (a != 0 && b > limit / a) return -1;
  return a * b;
}

}  // namespace

std::string fits_status_text(int status) {
  char text[FLEN_STATUS] = {};
  fits_get_errstatus(status, text);
  std::string detail;
  char msg[FLEN_ERRMSG] = {};
  while (fits_read_errmsg(msg)) {
    if (detail.empty() && msg[0]) detail = trim_right(msg);
  }
  fits_clear_errmsg();
  std::string s = text;
  if (!detail.empty() && detail != s) s += " (" + detail + ")";
  return s;
}

long long FitsImageShape::pixels() const noexcept {
  if (dims.empty()) return 0;
  long long n = 1;
  for (long long d : dims) n *= d;  // checked against the file by image_shape()
  return n;
}

FitsFile FitsFile::open(const std::string& path, bool writable, const std::string& shown) {
  const std::string name = shown.empty() ? path : shown;
  fitsfile* f = nullptr;
  int st = 0;
  if (fits_open_diskfile(&f, literal_name(path).c_str(), writable ? READWRITE : READONLY, &st)) {
    if (f) {
      int ignored = 0;
      fits_close_file(f, &ignored);
    }
    throw IoError(name, "", "cannot open FITS file (missing, truncated or not FITS?): " +
                                fits_status_text(st));
  }
  FitsFile file(f, name);
  file.verify_checksums("primary HDU");
  return file;
}

FitsFile FitsFile::create(const std::string& path, const std::string& shown) {
  const std::string name = shown.empty() ? path : shown;
  const std::string literal = literal_name(path);
  // fits_create_diskfile refuses an existing file; replace it as cfitsio's '!' prefix did (the
  // writers give it their own temporary, which AtomicFile created empty).
  if (::unlink(literal.c_str()) != 0 && errno != ENOENT)
    throw IoError(name, "", std::string("cannot replace the file: ") + std::strerror(errno));
  fitsfile* f = nullptr;
  int st = 0;
  if (fits_create_diskfile(&f, literal.c_str(), &st))
    throw IoError(name, "", "cannot create FITS file: " + fits_status_text(st));
  return FitsFile(f, name);
}

FitsFile::FitsFile(FitsFile&& other) noexcept
    : f_(other.f_), shown_(std::move(other.shown_)), verified_(std::move(other.verified_)) {
  other.f_ = nullptr;
}

FitsFile::~FitsFile() {
  if (f_) {
    int st = 0;
    fits_close_file(f_, &st);
    if (st) fits_clear_errmsg();
  }
}

void FitsFile::check(int status, const std::string& field, const std::string& what) const {
  if (status) fail(status, field, what);
}

void FitsFile::fail(int status, const std::string& field, const std::string& what) const {
  throw IoError(shown_, field, what + ": " + fits_status_text(status));
}

void FitsFile::close() {
  if (!f_) return;
  fitsfile* f = f_;
  f_ = nullptr;
  int st = 0;
  if (fits_close_file(f, &st)) fail(st, "", "cannot write and close the file");
}

int FitsFile::hdu_count() const {
  int st = 0, n = 0;
  if (fits_get_num_hdus(f_, &n, &st)) fail(st, "", "cannot count the HDUs");
  return n;
}

bool FitsFile::try_move(int number, int* type, const std::string& label) {
  int st = 0, t = 0;
  if (number < 1) throw IoError(shown_, label, "HDU numbers start at 1 (the primary HDU)");
  if (fits_movabs_hdu(f_, number, &t, &st)) {
    if (st == END_OF_FILE || st == BAD_HDU_NUM) {
      fits_clear_errmsg();
      return false;
    }
    fail(st, label, "cannot read the HDU header (truncated or corrupt file?)");
  }
  if (type) *type = t;
  verify_checksums(label);
  return true;
}

int FitsFile::move(int number, const std::string& label) {
  int type = 0;
  if (!try_move(number, &type, label))
    throw IoError(shown_, label, "no such HDU (the file ends before it)");
  return type;
}

bool FitsFile::try_move_named(const std::string& extname, const std::string& label) {
  int st = 0;
  std::string name = extname;
  if (fits_movnam_hdu(f_, ANY_HDU, name.data(), 0, &st)) {
    if (st == BAD_HDU_NUM) {
      fits_clear_errmsg();
      return false;
    }
    fail(st, label, "cannot read the HDUs while looking for EXTNAME '" + extname +
                        "' (truncated or corrupt file?)");
  }
  verify_checksums(label);
  return true;
}

void FitsFile::verify_checksums(const std::string& label) {
  int hdu = 0;
  fits_get_hdu_num(f_, &hdu);
  if (!verified_.insert(hdu).second) return;
  int st = 0, dataok = 0, hduok = 0;
  if (fits_verify_chksum(f_, &dataok, &hduok, &st))
    fail(st, label, "cannot verify CHECKSUM / DATASUM (truncated file?)");
  if (dataok < 0 && hduok < 0)
    throw IoError(shown_, label,
                  "DATASUM and CHECKSUM do not match the HDU's content (the data are damaged)");
  if (dataok < 0)
    throw IoError(shown_, label, "DATASUM does not match the HDU's data (the data are damaged)");
  if (hduok < 0)
    throw IoError(shown_, label,
                  "CHECKSUM does not match the HDU (its header or data are damaged)");
}

bool FitsFile::read_key(const std::string& key, std::string& out) const {
  char v[FLEN_VALUE] = {};
  int st = 0;
  if (fits_read_key(f_, TSTRING, key.c_str(), v, nullptr, &st)) {
    if (st == KEY_NO_EXIST) {
      fits_clear_errmsg();
      return false;
    }
    fail(st, key, "cannot read the keyword");
  }
  out = trim_right(v);
  return true;
}

bool FitsFile::read_key(const std::string& key, long long& out) const {
  int st = 0;
  LONGLONG v = 0;
  if (fits_read_key(f_, TLONGLONG, key.c_str(), &v, nullptr, &st)) {
    if (st == KEY_NO_EXIST) {
      fits_clear_errmsg();
      return false;
    }
    fail(st, key, "cannot read the keyword as an integer");
  }
  out = v;
  return true;
}

bool FitsFile::read_key(const std::string& key, double& out) const {
  int st = 0;
  if (fits_read_key(f_, TDOUBLE, key.c_str(), &out, nullptr, &st)) {
    if (st == KEY_NO_EXIST) {
      fits_clear_errmsg();
      return false;
    }
    fail(st, key, "cannot read the keyword as a number");
  }
  return true;
}

long long FitsFile::file_size() const noexcept { return f_ ? f_->Fptr->logfilesize : 0; }

long long FitsFile::bytes_after_header(const std::string& label) const {
  LONGLONG head = 0, data = 0, end = 0;
  int st = 0;
  if (fits_get_hduaddrll(f_, &head, &data, &end, &st)) fail(st, label, "cannot locate the HDU's data");
  const long long size = f_->Fptr->logfilesize;
  return size > data ? size - data : 0;
}

int FitsFile::table_columns(const std::string& label) const {
  int st = 0, n = 0;
  if (fits_get_num_cols(f_, &n, &st)) fail(st, label, "cannot read the column count (TFIELDS)");
  return n;
}

long long FitsFile::table_rows(const std::string& label) const {
  int st = 0;
  LONGLONG rows = 0;
  if (fits_get_num_rowsll(f_, &rows, &st)) fail(st, label, "cannot read the row count (NAXIS2)");
  long long width = 0;
  if (!read_key("NAXIS1", width) || width < 0)
    throw IoError(shown_, label, "the table has no valid NAXIS1 (row width)");
  const long long have = bytes_after_header(label);
  if (rows < 0 || bounded_product(rows, width, have) < 0)
    throw IoError(shown_, label,
                  "NAXIS2 = " + std::to_string(rows) + " rows of NAXIS1 = " + std::to_string(width) +
                      " bytes do not fit in the " + std::to_string(have) +
                      " bytes the file holds after the header (truncated file or corrupt header)");
  return rows;
}

FitsColumnInfo FitsFile::column(int number, const std::string& field) const {
  FitsColumnInfo c;
  c.number = number;
  int st = 0;
  LONGLONG repeat = 0, width = 0;
  if (fits_get_coltypell(f_, number, &c.typecode, &repeat, &width, &st))
    fail(st, field, "cannot read the column type");
  c.repeat = repeat;
  c.width = width;
  char key[FLEN_KEYWORD] = {};
  fits_make_keyn("TTYPE", number, key, &st);
  if (!read_key(key, c.name)) c.name.clear();
  // A column holds at most 8 values (bits) per byte of the row: bounds every allocation of
  // rows x repeat by the table's bytes, which table_rows() checks against the file.
  long long row_width = 0;
  read_key("NAXIS1", row_width);
  if (c.repeat < 0 || c.repeat > 8 * std::max(row_width, 0LL))
    throw IoError(shown_, field,
                  "TFORM gives " + std::to_string(c.repeat) + " values per row, more than a row of " +
                      std::to_string(row_width) + " bytes holds");
  return c;
}

std::vector<double> FitsFile::read_doubles(int number, long long first_row, long long nrows,
                                           const std::string& field) const {
  const FitsColumnInfo c = column(number, field);
  const long long rows = table_rows(field);
  if (first_row < 1 || nrows < 0 || first_row - 1 > rows - nrows)
    throw IoError(shown_, field, "rows " + std::to_string(first_row) + ".." +
                                     std::to_string(first_row + nrows - 1) + " are outside the table's " +
                                     std::to_string(rows) + " rows");
  std::vector<double> v(static_cast<std::size_t>(nrows) * static_cast<std::size_t>(c.repeat));
  if (v.empty()) return v;
  int st = 0, anynul = 0;
  // Floating columns: no null substitution (NaN and inf stay, for the caller to judge);
  // integer columns: TNULL cells become NaN, never a silent number.
  double nan = std::numeric_limits<double>::quiet_NaN();
  if (fits_read_col(f_, TDOUBLE, number, first_row, 1, static_cast<LONGLONG>(v.size()),
                    is_floating(c.typecode) ? nullptr : &nan, v.data(), &anynul, &st))
    fail(st, field, "cannot read the column data (truncated file?)");
  return v;
}

std::vector<double> FitsFile::read_doubles(int number, const std::string& field) const {
  return read_doubles(number, 1, table_rows(field), field);
}

std::vector<std::int64_t> FitsFile::read_int64s(int number, const std::string& field) const {
  const FitsColumnInfo c = column(number, field);
  const long long rows = table_rows(field);
  std::vector<LONGLONG> v(static_cast<std::size_t>(rows) * static_cast<std::size_t>(c.repeat));
  if (v.empty()) return {};
  int st = 0, anynul = 0;
  if (fits_read_col(f_, TLONGLONG, number, 1, 1, static_cast<LONGLONG>(v.size()), nullptr,
                    v.data(), &anynul, &st))
    fail(st, field, "cannot read the column data (truncated file?)");
  return {v.begin(), v.end()};
}

FitsImageShape FitsFile::image_shape(const std::string& label) const {
  FitsImageShape s;
  int st = 0, naxis = 0, compressed = 0;
  if (fits_get_img_type(f_, &s.bitpix, &st) || fits_get_img_dim(f_, &naxis, &st))
    fail(st, label, "cannot read the image header (BITPIX, NAXIS)");
  if (naxis < 0 || naxis > 999) throw IoError(shown_, label, "NAXIS = " + std::to_string(naxis) + " is invalid");
  std::vector<LONGLONG> dims(static_cast<std::size_t>(std::max(naxis, 1)), 0);
  if (naxis > 0 && fits_get_img_sizell(f_, naxis, dims.data(), &st))
    fail(st, label, "cannot read the image size (NAXISn)");
  compressed = fits_is_compressed_image(f_, &st);
  st = 0;
  const long long elem = s.bitpix < 0 ? -s.bitpix / 8 : s.bitpix / 8;
  long long budget = bytes_after_header(label);
  if (compressed) budget = bounded_product(f_->Fptr->logfilesize, kMaxCompressionRatio,
                                           std::numeric_limits<long long>::max() / 2);
  if (budget < 0) budget = std::numeric_limits<long long>::max() / 2;
  long long bytes = naxis > 0 ? std::max(elem, 1LL) : 0;
  std::string shape;
  for (int i = 0; i < naxis; ++i) {
    shape += (i ? " x " : "") + std::to_string(dims[static_cast<std::size_t>(i)]);
    if (bytes >= 0) bytes = bounded_product(bytes, dims[static_cast<std::size_t>(i)], budget);
  }
  if (bytes < 0)
    throw IoError(shown_, label,
                  "an image of " + shape + " pixels (BITPIX " + std::to_string(s.bitpix) + ") needs more than the " +
                      std::to_string(budget) + " bytes the file holds" +
                      (compressed ? " (at " + std::to_string(kMaxCompressionRatio) + "x compression)" : " after the header") +
                      " (truncated file or corrupt header)");
  for (int i = 0; i < naxis; ++i) s.dims.push_back(dims[static_cast<std::size_t>(i)]);
  return s;
}

std::vector<float> FitsFile::read_image_float(const FitsImageShape& shape, float null_value,
                                              const std::string& label) const {
  std::vector<float> out(static_cast<std::size_t>(shape.pixels()));
  if (out.empty()) return out;
  std::vector<LONGLONG> first(shape.dims.size(), 1);
  int st = 0, anynul = 0;
  if (fits_read_pixll(f_, TFLOAT, first.data(), static_cast<LONGLONG>(out.size()), &null_value,
                      out.data(), &anynul, &st))
    fail(st, label, "cannot read the image (truncated file?)");
  return out;
}

}  // namespace almagest::io
