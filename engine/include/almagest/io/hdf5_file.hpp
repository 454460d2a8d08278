#pragma once
// HDF5 result-file writer and reader (HDF5 C API, serial): the one place Almagest uses libhdf5.
// Files are readable with h5py: datasets are plain contiguous arrays with attributes (units,
// descriptions, bin edges, config, provenance). The writer goes through AtomicFile: nothing
// appears at the destination until commit(); a writer destroyed without commit leaves no file.
// The file is built in memory and written by commit() in one go, so a full disk is one IoError
// ("disk full?") and leaves no file. The reader trusts nothing in the file: every libhdf5 failure
// and every inconsistent header, attribute or dataset size is an IoError naming file and object,
// and no allocation exceeds what the file can hold (see hdf5_file.cpp). libhdf5 never prints.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace almagest::io {

using Shape = std::vector<std::uint64_t>;

/// Turns libhdf5's automatic error printing (HDF5-DIAG dumps) off for the calling thread. Every
/// Hdf5Reader / Hdf5Writer call does this itself; code that calls libhdf5 directly (tests
/// building hostile files) may call it first.
void silence_hdf5_errors() noexcept;

class Hdf5Writer {
public:
  /// Opens a temporary file beside `destination`. Throws IoError.
  explicit Hdf5Writer(const std::string& destination);
  ~Hdf5Writer();
  Hdf5Writer(const Hdf5Writer&) = delete;
  Hdf5Writer& operator=(const Hdf5Writer&) = delete;

  /// Creates group `path` (and parents), e.g. "/npcf/3pcf".
  void create_group(const std::string& path);
  /// Writes a dataset; data.size() must equal the product of `shape` (1-D when shape is empty).
  void write(const std::string& path, const std::vector<double>& data, Shape shape = {});
  void write(const std::string& path, const std::vector<float>& data, Shape shape = {});
  void write(const std::string& path, const std::vector<std::uint64_t>& data, Shape shape = {});
  void write(const std::string& path, const std::vector<std::int64_t>& data, Shape shape = {});
  void write(const std::string& path, const std::vector<std::int32_t>& data, Shape shape = {});
  void write(const std::string& path, const std::vector<std::uint8_t>& data, Shape shape = {});
  /// Attributes on a group or dataset ("/" for the root).
  void attr(const std::string& object, const std::string& name, const std::string& value);
  void attr(const std::string& object, const std::string& name, double value);
  void attr(const std::string& object, const std::string& name, std::int64_t value);
  void attr(const std::string& object, const std::string& name, const std::vector<double>& value);
  /// A fixed-length ASCII string attribute (as the stack and candidate formats store them;
  /// attr(string) writes variable-length UTF-8, as h5py does for str).
  void attr_fixed(const std::string& object, const std::string& name, const std::string& value);

  /// Closes the file and renames it over the destination.
  void commit();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Reader. Throws IoError naming file and dataset or attribute.
/// Typed reads convert from any integer or floating dataset type (HDF5 conversion rules: values
/// out of the target range are clipped); non-numeric datasets are an IoError. Data come back
/// flattened in C (row-major) order; shape() gives the dimensions. Before a read allocates, the
/// element count (overflow-checked) times the element size must fit in the file (contiguous,
/// unfiltered data) or in 1100 times the file size and 16 GiB (chunked or compressed data).
/// Attributes: the type class, string size (at most 1 MiB) and value count are checked first.
class Hdf5Reader {
public:
  explicit Hdf5Reader(const std::string& path);
  ~Hdf5Reader();
  Hdf5Reader(const Hdf5Reader&) = delete;
  Hdf5Reader& operator=(const Hdf5Reader&) = delete;

  bool exists(const std::string& path) const;
  Shape shape(const std::string& dataset) const;
  /// shape(), which must have `rank` dimensions (IoError otherwise).
  Shape shape(const std::string& dataset, std::size_t rank) const;
  std::vector<double> read_double(const std::string& dataset) const;
  std::vector<float> read_float(const std::string& dataset) const;
  std::vector<std::uint64_t> read_uint64(const std::string& dataset) const;
  std::vector<std::int64_t> read_int64(const std::string& dataset) const;
  std::vector<std::int32_t> read_int32(const std::string& dataset) const;
  std::vector<std::uint8_t> read_uint8(const std::string& dataset) const;
  /// Names of the links directly inside `group`, sorted by name.
  std::vector<std::string> list(const std::string& group) const;
  /// False when the object or the attribute is absent; IoError when the object's header is
  /// corrupt.
  bool has_attr(const std::string& object, const std::string& name) const;
  /// String attributes may be variable- or fixed-length (ASCII or UTF-8).
  std::string read_attr_string(const std::string& object, const std::string& name) const;
  /// Numeric attributes are converted to the requested type; scalar reads need exactly one value.
  double read_attr_double(const std::string& object, const std::string& name) const;
  std::int64_t read_attr_int64(const std::string& object, const std::string& name) const;
  std::vector<double> read_attr_doubles(const std::string& object, const std::string& name) const;
  const std::string& path() const noexcept;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace almagest::io
