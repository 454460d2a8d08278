#pragma once
// Minimal HDF5 result-file writer and reader (HDF5 C API, serial). Files are readable with h5py:
// datasets are plain contiguous arrays with attributes (units, descriptions, bin edges, config,
// provenance). The writer goes through AtomicFile: nothing appears at the destination until
// commit(); a writer destroyed without commit leaves no file.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace almagest::io {

using Shape = std::vector<std::uint64_t>;

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
  void write(const std::string& path, const std::vector<std::uint64_t>& data, Shape shape = {});
  void write(const std::string& path, const std::vector<std::int64_t>& data, Shape shape = {});
  void write(const std::string& path, const std::vector<std::int32_t>& data, Shape shape = {});
  void write(const std::string& path, const std::vector<std::uint8_t>& data, Shape shape = {});
  /// Attributes on a group or dataset ("/" for the root).
  void attr(const std::string& object, const std::string& name, const std::string& value);
  void attr(const std::string& object, const std::string& name, double value);
  void attr(const std::string& object, const std::string& name, std::int64_t value);
  void attr(const std::string& object, const std::string& name, const std::vector<double>& value);

  /// Closes the file and renames it over the destination.
  void commit();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Read-side helpers (tests, GUI, CLI comparisons). Throw IoError naming file and dataset.
/// Typed reads convert from any integer or floating dataset type (HDF5 conversion rules: values
/// out of the target range are clipped); non-numeric datasets are an IoError. Data come back
/// flattened in C (row-major) order; shape() gives the dimensions.
class Hdf5Reader {
public:
  explicit Hdf5Reader(const std::string& path);
  ~Hdf5Reader();
  Hdf5Reader(const Hdf5Reader&) = delete;
  Hdf5Reader& operator=(const Hdf5Reader&) = delete;

  bool exists(const std::string& path) const;
  Shape shape(const std::string& dataset) const;
  std::vector<double> read_double(const std::string& dataset) const;
  std::vector<std::uint64_t> read_uint64(const std::string& dataset) const;
  std::vector<std::int64_t> read_int64(const std::string& dataset) const;
  std::vector<std::int32_t> read_int32(const std::string& dataset) const;
  std::vector<std::uint8_t> read_uint8(const std::string& dataset) const;
  /// Names of the links directly inside `group`, sorted by name.
  std::vector<std::string> list(const std::string& group) const;
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
