#pragma once
// The one cfitsio handle of Almagest: every FITS reader and writer (engine, CLI, tests' helpers)
// opens its files through FitsFile, so the rules below hold everywhere.
//
// - Literal names: files are opened with fits_open_diskfile and created with
//   fits_create_diskfile, so cfitsio's extended filename syntax (`out.fits[1]`, `map (copy).fits`
//   read as a template, `!` clobbering, `mem://`) never applies to a user's path. A relative name
//   starting with a blank gets "./" in front (cfitsio skips leading blanks). gzip-compressed
//   inputs are still read (cfitsio decompresses them in memory by their content).
// - The handle closes the file on every path (RAII); close() reports a failed flush or write.
//   create() replaces an existing file at the path (as cfitsio's '!' prefix did), so it can
//   write into the empty temporary an AtomicFile made.
// - Every cfitsio failure is an IoError(file, field, what + ": " + cfitsio's text), with the
//   field the HDU, keyword or column.
// - Checksums: every HDU the handle visits (the primary on open, each HDU moved to) has its
//   CHECKSUM and DATASUM keywords verified when present (fits_verify_chksum); a mismatch is an
//   IoError naming the HDU and the sum. Absent keywords are fine.
// - Header bytes are checked before cfitsio sees them: open() walks the HDUs with plain reads
//   (2880-byte blocks of 80-byte cards up to END, each HDU's data size from BITPIX, NAXISn,
//   PCOUNT, GCOUNT) and refuses a card byte outside printable ASCII 0x20..0x7E or a header that
//   runs past the end of the file: IoError(file, "HDU n", "header card k (keyword 'X') has a
//   non-ASCII byte 0xc3 at column 9 ..."). cfitsio copies header text with strcpy / strncat and
//   aborts (glibc fortify) on such bytes. Compressed inputs are not scanned (see fits_file.cpp).
// - Header sizes are never trusted: table_rows() checks NAXIS2 x NAXIS1 against the bytes the
//   file holds after the header, image_shape() the image's bytes likewise (tile-compressed
//   images: at most kMaxCompressionRatio times the file's size), before anything is allocated.
// - Reads of floating values apply no null substitution: NaN and infinities come back as they
//   are, for the caller to reject or interpret (maps: NaN is a blind pixel, see healpix_io.hpp).
//
// <fitsio.h> is part of this interface: callers use get() for the cfitsio calls not wrapped here.
#include <fitsio.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace almagest::io {

/// cfitsio's text for `status` plus the oldest message of its error stack (the stack is cleared).
std::string fits_status_text(int status);

/// Largest ratio of a tile-compressed image's uncompressed bytes to the file's size accepted.
inline constexpr long long kMaxCompressionRatio = 256;

struct FitsColumnInfo {
  int number = 0;           ///< 1-based
  int typecode = 0;         ///< cfitsio type code (TDOUBLE, TLONGLONG, ..., negative: variable length)
  long long repeat = 0;     ///< values per row
  long long width = 0;      ///< bytes per value
  std::string name;         ///< TTYPEn, trailing blanks removed ("" when absent)
};

struct FitsImageShape {
  int bitpix = 0;
  std::vector<long long> dims;  ///< NAXIS1, NAXIS2, ... (empty: no data)
  /// Product of dims (checked against the file, so it does not overflow); 0 without data.
  long long pixels() const noexcept;
};

class FitsFile {
public:
  /// Opens an existing file by its literal name (read-only unless `writable`). `shown` is the
  /// name used in messages (default: `path`; a writer gives the destination for its temporary).
  /// Verifies the primary HDU's checksums.
  static FitsFile open(const std::string& path, bool writable = false, const std::string& shown = {});
  /// Creates a new file at `path`, replacing a file already there.
  static FitsFile create(const std::string& path, const std::string& shown = {});

  FitsFile(FitsFile&& other) noexcept;
  FitsFile& operator=(FitsFile&&) = delete;
  FitsFile(const FitsFile&) = delete;
  FitsFile& operator=(const FitsFile&) = delete;
  /// Closes without reporting (error paths); call close() to learn whether the close worked.
  ~FitsFile();

  fitsfile* get() const noexcept { return f_; }
  const std::string& name() const noexcept { return shown_; }
  /// Throws IoError(name(), field, what + ": " + cfitsio's text) when status != 0.
  void check(int status, const std::string& field, const std::string& what) const;
  [[noreturn]] void fail(int status, const std::string& field, const std::string& what) const;
  /// Flushes and closes; throws IoError when that fails. The handle is empty afterwards.
  void close();

  // --- HDUs (numbers are cfitsio's: 1 = primary, 2 = first extension) ----------------------
  int hdu_count() const;
  /// Moves to HDU `number`, verifying its checksums. False when the file has no such HDU (or
  /// ends before it); other failures throw IoError naming `label`. `type` gets IMAGE_HDU,
  /// ASCII_TBL or BINARY_TBL.
  bool try_move(int number, int* type, const std::string& label);
  /// As try_move, but a missing HDU is an IoError naming `label`. Returns the HDU type.
  int move(int number, const std::string& label);
  /// Moves to the HDU with EXTNAME `extname` (any type), verifying its checksums; false if none.
  bool try_move_named(const std::string& extname, const std::string& label);
  /// Verifies CHECKSUM / DATASUM of the current HDU when present (done by open and the moves;
  /// each HDU once per handle). Throws IoError(name(), label, "... mismatch ...").
  void verify_checksums(const std::string& label);

  // --- keywords of the current HDU: false when absent, IoError when unreadable --------------
  bool read_key(const std::string& key, std::string& out) const;  ///< trailing blanks removed
  bool read_key(const std::string& key, long long& out) const;
  bool read_key(const std::string& key, double& out) const;

  // --- tables --------------------------------------------------------------------------------
  /// Number of columns of the current table.
  int table_columns(const std::string& label) const;
  /// NAXIS2 of the current table after checking NAXIS2 x NAXIS1 against the bytes the file holds
  /// after the header: a larger table is an IoError naming `label` (nothing is allocated).
  long long table_rows(const std::string& label) const;
  /// Type, repeat and name of column `number` (1-based); checks that repeat x rows is bounded by
  /// the table's bytes. `field` names the column in messages.
  FitsColumnInfo column(int number, const std::string& field) const;
  /// Values [first_row, first_row + nrows) (1-based rows) of column `number` as doubles, every
  /// element of each row in order, without null substitution. Rows must be within table_rows().
  std::vector<double> read_doubles(int number, long long first_row, long long nrows,
                                   const std::string& field) const;
  /// All rows of column `number` (checked sizes) as doubles / 64-bit integers.
  std::vector<double> read_doubles(int number, const std::string& field) const;
  std::vector<std::int64_t> read_int64s(int number, const std::string& field) const;

  // --- images --------------------------------------------------------------------------------
  /// Shape of the current image HDU after checking its bytes against the file.
  FitsImageShape image_shape(const std::string& label) const;
  /// The current image's pixels as floats. Null pixels become `null_value`: BLANK of integer
  /// images and, by cfitsio's IEEE test, NaN and infinite pixels of floating images.
  std::vector<float> read_image_float(const FitsImageShape& shape, float null_value,
                                      const std::string& label) const;

  /// Bytes of the (logical, decompressed) file.
  long long file_size() const noexcept;
  /// Bytes of the (logical, decompressed) file after the current HDU's header.
  long long bytes_after_header(const std::string& label) const;

private:
  FitsFile(fitsfile* f, std::string shown) : f_(f), shown_(std::move(shown)) {}
  fitsfile* f_ = nullptr;
  std::string shown_;
  std::set<int> verified_;  ///< HDU numbers whose checksums were verified
};

}  // namespace almagest::io
