// The one cfitsio handle (see fits_file.hpp): literal file names, RAII, checked sizes, checksums.
#include "almagest/io/fits_file.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

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


constexpr long long kBlock = 2880;
constexpr int kCard = 80;

/// The integer value of a fixed- or free-format card "KEY     = value / comment"; false when the
/// card has no value indicator or its value is not a plain integer (or overflows long long).
bool card_integer(const char* card, long long& out) {
  if (card[8] != '=' || card[9] != ' ') return false;
  int i = 10;
  while (i < kCard && card[i] == ' ') ++i;
  bool negative = false;
  if (i < kCard && (card[i] == '+' || card[i] == '-')) negative = card[i++] == '-';
  if (i >= kCard || card[i] < '0' || card[i] > '9') return false;
  long long v = 0;
  for (; i < kCard && card[i] >= '0' && card[i] <= '9'; ++i) {
    const int d = card[i] - '0';
    if (v > (std::numeric_limits<long long>::max() - d) / 10) return false;
    v = v * 10 + d;
  }
  while (i < kCard && card[i] == ' ') ++i;
  if (i < kCard && card[i] != '/') return false;
  out = negative ? -v : v;
  return true;
}

/// The card's keyword for messages (bytes outside 0x20..0x7E shown as '?').
std::string card_keyword(const char* card) {
  std::string k(card, 8);
  for (char& c : k)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return trim_right(k);
}

/// Walks the HDUs of the file at `path` with plain reads before cfitsio parses any header:
/// cfitsio copies header text into fixed buffers with strcpy/strncat and trusts it to be
/// printable ASCII (corrupt bytes abort it under glibc's fortify checks, or worse). Every byte
/// of every card up to and including END must be 0x20..0x7E (FITS standard 4.1.1), the END card
/// must be inside the file, and each HDU's data (BITPIX, NAXISn, PCOUNT, GCOUNT, overflow
/// checked) rounded to 2880 bytes must fit before the next header is read. The walk stops at the
/// end of the file or at an HDU whose data run past it (a truncated last HDU is left to the size
/// checks of table_rows / image_shape), and at an HDU whose structural keywords are missing or
/// not integers (cfitsio reports those itself, and cannot reach a later HDU either).
/// Files that do not start with "SIMPLE  =" (gzip / compress / bzip2 inputs, which cfitsio
/// decompresses in memory, and non-FITS files, which cfitsio refuses) are not scanned: a
/// compressed file's header bytes are only visible after decompression.
void validate_headers(const std::string& path, const std::string& name) {
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, Closer> f(std::fopen(path.c_str(), "rb"));
  if (!f) return;  // cfitsio reports the missing / unreadable file
  if (::fseeko(f.get(), 0, SEEK_END) != 0) return;
  const long long size = ::ftello(f.get());
  if (size < 9 || ::fseeko(f.get(), 0, SEEK_SET) != 0) return;
  char block[kBlock];
  if (std::fread(block, 1, 9, f.get()) != 9 || std::memcmp(block, "SIMPLE  =", 9) != 0) return;
  long long offset = 0;  // start of the current HDU's header
  for (int hdu = 1; offset < size; ++hdu) {
    const std::string field = "HDU " + std::to_string(hdu);
    if (::fseeko(f.get(), offset, SEEK_SET) != 0)
      throw IoError(name, field, "cannot seek to the header at byte " + std::to_string(offset));
    long long bitpix = 0, naxis = -1, pcount = 0, gcount = 1;
    bool have_bitpix = false, structural_ok = true, groups = false;
    std::vector<long long> dims;
    bool ended = false;
    long long card_number = 0;
    long long header_bytes = 0;
    while (!ended) {
      if (offset + header_bytes + kBlock > size)
        throw IoError(name, field,
                      "the header runs past the end of the file (no END card in its " +
                          std::to_string(header_bytes / kBlock) + " complete 2880-byte blocks; the file is " +
                          std::to_string(size) + " bytes: truncated or not FITS)");
      if (std::fread(block, 1, kBlock, f.get()) != static_cast<size_t>(kBlock))
        throw IoError(name, field, "cannot read the header block at byte " +
                                       std::to_string(offset + header_bytes));
      header_bytes += kBlock;
      // Zero bytes where an extension would start: padding some writers leave after the last
      // HDU, which cfitsio does not take for an HDU either.
      if (hdu > 1 && header_bytes == kBlock && block[0] == '\0') return;
      for (int c = 0; c < kBlock / kCard && !ended; ++c) {
        const char* card = block + c * kCard;
        ++card_number;
        for (int col = 0; col < kCard; ++col) {
          const auto b = static_cast<unsigned char>(card[col]);
          if (b >= 0x20 && b <= 0x7e) continue;
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%02x", b);
          throw IoError(name, field,
                        "header card " + std::to_string(card_number) + " (keyword '" +
                            card_keyword(card) + "') has a " +
                            (b < 0x80 ? "non-printable" : "non-ASCII") + " byte " + hex +
                            " at column " + std::to_string(col + 1) +
                            " (FITS headers allow only printable ASCII 0x20..0x7E)");
        }
        const std::string key = trim_right(std::string(card, 8));
        if (key == "END") {
          ended = true;
          continue;
        }
        long long v = 0;
        if (key == "BITPIX") {
          have_bitpix = card_integer(card, bitpix);
          structural_ok = structural_ok && have_bitpix;
        } else if (key == "NAXIS") {
          if (!card_integer(card, naxis) || naxis < 0 || naxis > 999) structural_ok = false;
          else dims.assign(static_cast<size_t>(naxis), -1);
        } else if (key == "GROUPS") {
          groups = card[8] == '=' && trim_right(std::string(card + 10, 20)).find('T') != std::string::npos;
        } else if (key == "PCOUNT") {
          if (!card_integer(card, pcount) || pcount < 0) structural_ok = false;
        } else if (key == "GCOUNT") {
          if (!card_integer(card, gcount) || gcount < 0) structural_ok = false;
        } else if (key.size() > 5 && key.compare(0, 5, "NAXIS") == 0 &&
                   key.find_first_not_of("0123456789", 5) == std::string::npos) {
          const long long n = std::stoll(key.substr(5));
          if (n >= 1 && n <= static_cast<long long>(dims.size())) {
            if (!card_integer(card, v) || v < 0) structural_ok = false;
            else dims[static_cast<size_t>(n - 1)] = v;
          }
        }
      }
    }
    offset += header_bytes;
    // Sizes of a header cfitsio will itself refuse: stop here and let it say why.
    if (!structural_ok || !have_bitpix || naxis < 0) return;
    if (bitpix != 8 && bitpix != 16 && bitpix != 32 && bitpix != 64 && bitpix != -32 && bitpix != -64)
      return;
    if (std::any_of(dims.begin(), dims.end(), [](long long d) { return d < 0; })) return;
    // data bytes = |BITPIX| / 8 x GCOUNT x (PCOUNT + NAXIS1 x ... x NAXISn); a primary with
    // GROUPS = T, NAXIS1 = 0 and more axes is random groups (NAXIS1 left out of the product).
    long long data = 0;
    if (naxis > 0) {
      long long product = 1;
      const size_t first = (hdu == 1 && groups && naxis > 1 && dims[0] == 0) ? 1 : 0;
      for (size_t i = first; i < dims.size(); ++i) {
        product = bounded_product(product, dims[i], size);
        if (product < 0) return;  // more than the file holds: a truncated last HDU at most
      }
      if (pcount > size || product + pcount > size) return;
      data = bounded_product(bounded_product(product + pcount, gcount, size), std::llabs(bitpix) / 8, size);
      if (data < 0) return;
    }
    const long long padded = (data + kBlock - 1) / kBlock * kBlock;
    if (padded > size - offset) return;  // data past the end: left to the existing size checks
    offset += padded;
  }
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
  // Once per opened file, before cfitsio parses a header (writable opens read headers too).
  validate_headers(path, name);
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
