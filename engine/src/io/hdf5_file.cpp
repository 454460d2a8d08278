// HDF5 result files through the HDF5 C API (serial 1.10+). See almagest/io/hdf5_file.hpp.
//
// Every public entry point silences HDF5's automatic error printing for its own duration
// (ErrorSilencer saves and restores the calling thread's handler, so no library state changes
// behind the caller's back) and turns a failure into IoError naming the file and the object,
// with the most specific message from HDF5's error stack appended.
#include "almagest/io/hdf5_file.hpp"

#include <hdf5.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <optional>
#include <utility>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"

namespace almagest::io {
namespace {

/// Suppresses HDF5's automatic error printing while alive; restores the previous handler.
class ErrorSilencer {
public:
  ErrorSilencer() {
    if (H5Eget_auto2(H5E_DEFAULT, &func_, &data_) < 0) {
      func_ = nullptr;
      data_ = nullptr;
    }
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~ErrorSilencer() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  ErrorSilencer(const ErrorSilencer&) = delete;
  ErrorSilencer& operator=(const ErrorSilencer&) = delete;

private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

/// The most specific description on the current HDF5 error stack (then clears the stack).
std::string hdf5_error_text() {
  std::string text;
  auto walker = [](unsigned n, const H5E_error2_t* err, void* client) -> herr_t {
    auto* out = static_cast<std::string*>(client);
    if (n == 0 && err && err->desc && *err->desc) *out = err->desc;
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walker, &text);
  H5Eclear2(H5E_DEFAULT);
  return text;
}

[[noreturn]] void fail(const std::string& file, const std::string& field, const std::string& what) {
  std::string detail = hdf5_error_text();
  throw IoError(file, field, detail.empty() ? what : what + " (HDF5: " + detail + ")");
}

/// Owning HDF5 identifier; closes with the matching H5xclose.
class Handle {
public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  ~Handle() { reset(); }
  Handle(Handle&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), closer_(o.closer_) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
      closer_ = o.closer_;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  hid_t get() const noexcept { return id_; }
  bool valid() const noexcept { return id_ >= 0; }
  /// Closes now and reports whether the close succeeded.
  bool close() {
    if (id_ < 0) return true;
    herr_t st = closer_(id_);
    id_ = H5I_INVALID_HID;
    return st >= 0;
  }
  void reset() noexcept {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = H5I_INVALID_HID;
  }

private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

Handle checked(hid_t id, Handle::Closer closer, const std::string& file, const std::string& field,
               const std::string& what) {
  if (id < 0) fail(file, field, what);
  return Handle(id, closer);
}

/// "/a/b/c" -> {"a", "b", "c"}; empty components are dropped.
std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t i = 0;
  while (i < path.size()) {
    std::size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) parts.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return parts;
}

std::string normalise(const std::string& path) {
  std::string out;
  for (const auto& p : split_path(path)) out += "/" + p;
  return out.empty() ? "/" : out;
}

/// True when every link along `path` exists and the final object resolves.
bool path_exists(hid_t file, const std::string& path) {
  std::string prefix;
  for (const auto& part : split_path(path)) {
    prefix += "/" + part;
    htri_t e = H5Lexists(file, prefix.c_str(), H5P_DEFAULT);
    if (e <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
  }
  if (prefix.empty()) return true;  // the root group
  htri_t e = H5Oexists_by_name(file, prefix.c_str(), H5P_DEFAULT);
  if (e <= 0) H5Eclear2(H5E_DEFAULT);
  return e > 0;
}

std::string shape_text(const Shape& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
}

template <class T> struct TypeOf;
template <> struct TypeOf<double> {
  static hid_t mem() { return H5T_NATIVE_DOUBLE; }
  static hid_t file() { return H5T_IEEE_F64LE; }
};
template <> struct TypeOf<std::uint64_t> {
  static hid_t mem() { return H5T_NATIVE_UINT64; }
  static hid_t file() { return H5T_STD_U64LE; }
};
template <> struct TypeOf<std::int64_t> {
  static hid_t mem() { return H5T_NATIVE_INT64; }
  static hid_t file() { return H5T_STD_I64LE; }
};
template <> struct TypeOf<std::int32_t> {
  static hid_t mem() { return H5T_NATIVE_INT32; }
  static hid_t file() { return H5T_STD_I32LE; }
};
template <> struct TypeOf<std::uint8_t> {
  static hid_t mem() { return H5T_NATIVE_UINT8; }
  static hid_t file() { return H5T_STD_U8LE; }
};

/// A variable-length UTF-8 string type (what h5py writes for str attributes).
Handle vlen_utf8_type(const std::string& file, const std::string& field) {
  Handle t = checked(H5Tcopy(H5T_C_S1), H5Tclose, file, field, "cannot create string type");
  if (H5Tset_size(t.get(), H5T_VARIABLE) < 0 || H5Tset_cset(t.get(), H5T_CSET_UTF8) < 0 ||
      H5Tset_strpad(t.get(), H5T_STR_NULLTERM) < 0)
    fail(file, field, "cannot create string type");
  return t;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Writer

struct Hdf5Writer::Impl {
  AtomicFile atomic;
  Handle file;
  Handle lcpl;  // link creation: create intermediate groups
  bool committed = false;

  explicit Impl(const std::string& destination) : atomic(destination) {}

  const std::string& dest() const { return atomic.destination(); }

  void require_open(const std::string& field) const {
    if (committed || !file.valid())
      throw IoError(dest(), field, "the HDF5 writer was already committed");
  }

  Handle open_object(const std::string& object, const std::string& field) const {
    std::string p = normalise(object);
    if (!path_exists(file.get(), p))
      throw IoError(dest(), field, "object '" + p + "' does not exist");
    return checked(H5Oopen(file.get(), p.c_str(), H5P_DEFAULT), H5Oclose, dest(), field,
                   "cannot open object '" + p + "'");
  }

  /// Writes attribute `name` of type `file_type` and dataspace `space` on `object`, replacing an
  /// existing one.
  void write_attr(const std::string& object, const std::string& name, hid_t file_type,
                  hid_t mem_type, hid_t space, const void* buf) {
    const std::string field = "attribute '" + name + "' of '" + normalise(object) + "'";
    require_open(field);
    if (name.empty()) throw IoError(dest(), field, "attribute name is empty");
    Handle obj = open_object(object, field);
    htri_t ex = H5Aexists(obj.get(), name.c_str());
    if (ex < 0) fail(dest(), field, "cannot query attribute");
    if (ex > 0 && H5Adelete(obj.get(), name.c_str()) < 0)
      fail(dest(), field, "cannot replace existing attribute");
    Handle attr = checked(H5Acreate2(obj.get(), name.c_str(), file_type, space, H5P_DEFAULT,
                                     H5P_DEFAULT),
                          H5Aclose, dest(), field, "cannot create attribute");
    if (buf && H5Awrite(attr.get(), mem_type, buf) < 0) fail(dest(), field, "cannot write attribute");
    if (!attr.close()) fail(dest(), field, "cannot close attribute");
  }

  template <class T>
  void write_dataset(const std::string& path, const std::vector<T>& data, Shape shape) {
    const std::string p = normalise(path);
    const std::string field = "dataset '" + p + "'";
    require_open(field);
    if (p == "/") throw IoError(dest(), field, "a dataset needs a name");
    if (shape.empty()) shape = {static_cast<std::uint64_t>(data.size())};
    const std::uint64_t n = std::accumulate(shape.begin(), shape.end(), std::uint64_t{1},
                                            std::multiplies<std::uint64_t>());
    if (n != data.size())
      throw IoError(dest(), field,
                    "shape " + shape_text(shape) + " holds " + std::to_string(n) +
                        " values but " + std::to_string(data.size()) + " were given");
    if (path_exists(file.get(), p)) throw IoError(dest(), field, "dataset already exists");
    std::vector<hsize_t> dims(shape.begin(), shape.end());
    Handle space = checked(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                           H5Sclose, dest(), field, "cannot create dataspace");
    // Default dataset creation properties: contiguous layout, no filters.
    Handle dset = checked(H5Dcreate2(file.get(), p.c_str(), TypeOf<T>::file(), space.get(),
                                     lcpl.get(), H5P_DEFAULT, H5P_DEFAULT),
                          H5Dclose, dest(), field, "cannot create dataset");
    if (n > 0 &&
        H5Dwrite(dset.get(), TypeOf<T>::mem(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) < 0)
      fail(dest(), field, "cannot write dataset (disk full?)");
    if (!dset.close()) fail(dest(), field, "cannot close dataset");
  }
};

Hdf5Writer::Hdf5Writer(const std::string& destination) {
  ErrorSilencer quiet;
  impl_ = std::make_unique<Impl>(destination);
  const std::string& dest = impl_->dest();
  Handle fapl = checked(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, dest, "", "cannot create file properties");
  // STRONG: closing the file closes every object still open in it, so nothing is left behind.
  if (H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG) < 0)
    fail(dest, "", "cannot set file close degree");
  impl_->file = checked(H5Fcreate(impl_->atomic.temp_path().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT,
                                  fapl.get()),
                        H5Fclose, dest, "", "cannot create HDF5 file");
  impl_->lcpl = checked(H5Pcreate(H5P_LINK_CREATE), H5Pclose, dest, "",
                        "cannot create link properties");
  if (H5Pset_create_intermediate_group(impl_->lcpl.get(), 1) < 0 ||
      H5Pset_char_encoding(impl_->lcpl.get(), H5T_CSET_UTF8) < 0)
    fail(dest, "", "cannot set link properties");
}

Hdf5Writer::~Hdf5Writer() {
  if (!impl_) return;
  ErrorSilencer quiet;
  // Close the file before AtomicFile's destructor removes the temporary.
  impl_->lcpl.reset();
  impl_->file.reset();
  H5Eclear2(H5E_DEFAULT);
}

void Hdf5Writer::create_group(const std::string& path) {
  ErrorSilencer quiet;
  const std::string p = normalise(path);
  const std::string field = "group '" + p + "'";
  impl_->require_open(field);
  if (p == "/") return;
  if (path_exists(impl_->file.get(), p)) {
    Handle obj = impl_->open_object(p, field);
    if (H5Iget_type(obj.get()) != H5I_GROUP)
      throw IoError(impl_->dest(), field, "an object that is not a group already has this name");
    return;
  }
  Handle g = checked(H5Gcreate2(impl_->file.get(), p.c_str(), impl_->lcpl.get(), H5P_DEFAULT,
                                H5P_DEFAULT),
                     H5Gclose, impl_->dest(), field, "cannot create group");
  if (!g.close()) fail(impl_->dest(), field, "cannot close group");
}

void Hdf5Writer::write(const std::string& path, const std::vector<double>& data, Shape shape) {
  ErrorSilencer quiet;
  impl_->write_dataset(path, data, std::move(shape));
}
void Hdf5Writer::write(const std::string& path, const std::vector<std::uint64_t>& data,
                       Shape shape) {
  ErrorSilencer quiet;
  impl_->write_dataset(path, data, std::move(shape));
}
void Hdf5Writer::write(const std::string& path, const std::vector<std::int64_t>& data,
                       Shape shape) {
  ErrorSilencer quiet;
  impl_->write_dataset(path, data, std::move(shape));
}
void Hdf5Writer::write(const std::string& path, const std::vector<std::int32_t>& data,
                       Shape shape) {
  ErrorSilencer quiet;
  impl_->write_dataset(path, data, std::move(shape));
}
void Hdf5Writer::write(const std::string& path, const std::vector<std::uint8_t>& data,
                       Shape shape) {
  ErrorSilencer quiet;
  impl_->write_dataset(path, data, std::move(shape));
}

void Hdf5Writer::attr(const std::string& object, const std::string& name,
                      const std::string& value) {
  ErrorSilencer quiet;
  const std::string field = "attribute '" + name + "' of '" + normalise(object) + "'";
  Handle type = vlen_utf8_type(impl_->dest(), field);
  Handle space = checked(H5Screate(H5S_SCALAR), H5Sclose, impl_->dest(), field,
                         "cannot create dataspace");
  const char* ptr = value.c_str();
  impl_->write_attr(object, name, type.get(), type.get(), space.get(), &ptr);
}

void Hdf5Writer::attr(const std::string& object, const std::string& name, double value) {
  ErrorSilencer quiet;
  Handle space = checked(H5Screate(H5S_SCALAR), H5Sclose, impl_->dest(), name,
                         "cannot create dataspace");
  impl_->write_attr(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, space.get(), &value);
}

void Hdf5Writer::attr(const std::string& object, const std::string& name, std::int64_t value) {
  ErrorSilencer quiet;
  Handle space = checked(H5Screate(H5S_SCALAR), H5Sclose, impl_->dest(), name,
                         "cannot create dataspace");
  impl_->write_attr(object, name, H5T_STD_I64LE, H5T_NATIVE_INT64, space.get(), &value);
}

void Hdf5Writer::attr(const std::string& object, const std::string& name,
                      const std::vector<double>& value) {
  ErrorSilencer quiet;
  hsize_t n = value.size();
  Handle space = checked(n > 0 ? H5Screate_simple(1, &n, nullptr) : H5Screate(H5S_NULL),
                         H5Sclose, impl_->dest(), name, "cannot create dataspace");
  impl_->write_attr(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, space.get(),
                    n > 0 ? static_cast<const void*>(value.data()) : nullptr);
}

void Hdf5Writer::commit() {
  ErrorSilencer quiet;
  impl_->require_open("");
  impl_->lcpl.reset();
  if (H5Fflush(impl_->file.get(), H5F_SCOPE_GLOBAL) < 0)
    fail(impl_->dest(), "", "cannot flush HDF5 file (disk full?)");
  if (!impl_->file.close()) fail(impl_->dest(), "", "cannot close HDF5 file (disk full?)");
  impl_->committed = true;
  impl_->atomic.commit();
}

// ------------------------------------------------------------------------------------------------
// Reader

struct Hdf5Reader::Impl {
  std::string path;
  Handle file;

  Handle open_dataset(const std::string& dataset, std::string& field) const {
    const std::string p = normalise(dataset);
    field = "dataset '" + p + "'";
    if (!path_exists(file.get(), p)) throw IoError(path, field, "no such dataset");
    Handle d = checked(H5Dopen2(file.get(), p.c_str(), H5P_DEFAULT), H5Dclose, path, field,
                       "cannot open dataset (is it a group?)");
    return d;
  }

  template <class T>
  std::vector<T> read(const std::string& dataset) const {
    ErrorSilencer quiet;
    std::string field;
    Handle d = open_dataset(dataset, field);
    Handle type = checked(H5Dget_type(d.get()), H5Tclose, path, field, "cannot get type");
    H5T_class_t cls = H5Tget_class(type.get());
    if (cls != H5T_INTEGER && cls != H5T_FLOAT)
      throw IoError(path, field, "dataset is not numeric");
    Handle space = checked(H5Dget_space(d.get()), H5Sclose, path, field, "cannot get dataspace");
    hssize_t n = H5Sget_simple_extent_npoints(space.get());
    if (n < 0) fail(path, field, "cannot get dataset size");
    std::vector<T> out(static_cast<std::size_t>(n));
    if (n > 0 && H5Dread(d.get(), TypeOf<T>::mem(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0)
      fail(path, field, "cannot read dataset (truncated or corrupt file?)");
    return out;
  }

  Handle open_attr(const std::string& object, const std::string& name, std::string& field) const {
    const std::string p = normalise(object);
    field = "attribute '" + name + "' of '" + p + "'";
    if (!path_exists(file.get(), p)) throw IoError(path, field, "object '" + p + "' does not exist");
    htri_t ex = H5Aexists_by_name(file.get(), p.c_str(), name.c_str(), H5P_DEFAULT);
    if (ex < 0) fail(path, field, "cannot query attribute");
    if (ex == 0) throw IoError(path, field, "no such attribute");
    return checked(H5Aopen_by_name(file.get(), p.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
                   H5Aclose, path, field, "cannot open attribute");
  }

  template <class T>
  std::vector<T> read_attr_numbers(const std::string& object, const std::string& name,
                                   std::string& field) const {
    Handle a = open_attr(object, name, field);
    Handle type = checked(H5Aget_type(a.get()), H5Tclose, path, field, "cannot get type");
    H5T_class_t cls = H5Tget_class(type.get());
    if (cls != H5T_INTEGER && cls != H5T_FLOAT)
      throw IoError(path, field, "attribute is not numeric");
    Handle space = checked(H5Aget_space(a.get()), H5Sclose, path, field, "cannot get dataspace");
    hssize_t n = H5Sget_simple_extent_npoints(space.get());
    if (n < 0) fail(path, field, "cannot get attribute size");
    std::vector<T> out(static_cast<std::size_t>(n));
    if (n > 0 && H5Aread(a.get(), TypeOf<T>::mem(), out.data()) < 0)
      fail(path, field, "cannot read attribute");
    return out;
  }

  template <class T>
  T read_attr_scalar(const std::string& object, const std::string& name) const {
    ErrorSilencer quiet;
    std::string field;
    std::vector<T> v = read_attr_numbers<T>(object, name, field);
    if (v.size() != 1)
      throw IoError(path, field,
                    "attribute holds " + std::to_string(v.size()) + " values, expected one");
    return v[0];
  }
};

Hdf5Reader::Hdf5Reader(const std::string& path) : impl_(std::make_unique<Impl>()) {
  ErrorSilencer quiet;
  impl_->path = path;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw IoError(path, "", "file does not exist");
  if (std::filesystem::is_directory(path, ec)) throw IoError(path, "", "is a directory, not a file");
  htri_t is = H5Fis_hdf5(path.c_str());
  if (is == 0) throw IoError(path, "", "not an HDF5 file");
  if (is < 0) fail(path, "", "cannot read HDF5 file (truncated or unreadable?)");
  impl_->file = checked(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose, path, "",
                        "cannot open HDF5 file (truncated or corrupt?)");
}

Hdf5Reader::~Hdf5Reader() {
  if (!impl_) return;
  ErrorSilencer quiet;
  impl_->file.reset();
  H5Eclear2(H5E_DEFAULT);
}

const std::string& Hdf5Reader::path() const noexcept { return impl_->path; }

bool Hdf5Reader::exists(const std::string& path) const {
  ErrorSilencer quiet;
  return path_exists(impl_->file.get(), normalise(path));
}

Shape Hdf5Reader::shape(const std::string& dataset) const {
  ErrorSilencer quiet;
  std::string field;
  Handle d = impl_->open_dataset(dataset, field);
  Handle space =
      checked(H5Dget_space(d.get()), H5Sclose, impl_->path, field, "cannot get dataspace");
  int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) fail(impl_->path, field, "cannot get rank");
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0 && H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0)
    fail(impl_->path, field, "cannot get dimensions");
  return Shape(dims.begin(), dims.end());
}

std::vector<double> Hdf5Reader::read_double(const std::string& dataset) const {
  return impl_->read<double>(dataset);
}
std::vector<std::uint64_t> Hdf5Reader::read_uint64(const std::string& dataset) const {
  return impl_->read<std::uint64_t>(dataset);
}
std::vector<std::int64_t> Hdf5Reader::read_int64(const std::string& dataset) const {
  return impl_->read<std::int64_t>(dataset);
}
std::vector<std::int32_t> Hdf5Reader::read_int32(const std::string& dataset) const {
  return impl_->read<std::int32_t>(dataset);
}
std::vector<std::uint8_t> Hdf5Reader::read_uint8(const std::string& dataset) const {
  return impl_->read<std::uint8_t>(dataset);
}

std::vector<std::string> Hdf5Reader::list(const std::string& group) const {
  ErrorSilencer quiet;
  const std::string p = normalise(group);
  const std::string field = "group '" + p + "'";
  if (!path_exists(impl_->file.get(), p)) throw IoError(impl_->path, field, "no such group");
  Handle g = checked(H5Gopen2(impl_->file.get(), p.c_str(), H5P_DEFAULT), H5Gclose, impl_->path,
                     field, "cannot open group (is it a dataset?)");
  std::vector<std::string> names;
  auto cb = [](hid_t, const char* name, const H5L_info_t*, void* client) -> herr_t {
    static_cast<std::vector<std::string>*>(client)->emplace_back(name);
    return 0;
  };
  if (H5Literate(g.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr, cb, &names) < 0)
    fail(impl_->path, field, "cannot list group");
  std::sort(names.begin(), names.end());
  return names;
}

bool Hdf5Reader::has_attr(const std::string& object, const std::string& name) const {
  ErrorSilencer quiet;
  const std::string p = normalise(object);
  if (!path_exists(impl_->file.get(), p)) return false;
  htri_t ex = H5Aexists_by_name(impl_->file.get(), p.c_str(), name.c_str(), H5P_DEFAULT);
  if (ex < 0) H5Eclear2(H5E_DEFAULT);
  return ex > 0;
}

std::string Hdf5Reader::read_attr_string(const std::string& object, const std::string& name) const {
  ErrorSilencer quiet;
  const std::string& file = impl_->path;
  std::string field;
  Handle a = impl_->open_attr(object, name, field);
  Handle type = checked(H5Aget_type(a.get()), H5Tclose, file, field, "cannot get type");
  if (H5Tget_class(type.get()) != H5T_STRING)
    throw IoError(file, field, "attribute is not a string");
  Handle space = checked(H5Aget_space(a.get()), H5Sclose, file, field, "cannot get dataspace");
  if (H5Sget_simple_extent_npoints(space.get()) != 1)
    throw IoError(file, field, "attribute is not a single string");
  H5T_cset_t cset = H5Tget_cset(type.get());
  htri_t vlen = H5Tis_variable_str(type.get());
  if (vlen < 0) fail(file, field, "cannot inspect string type");
  Handle mem = checked(H5Tcopy(H5T_C_S1), H5Tclose, file, field, "cannot create string type");
  if (H5Tset_cset(mem.get(), cset) < 0) fail(file, field, "cannot create string type");
  if (vlen > 0) {
    if (H5Tset_size(mem.get(), H5T_VARIABLE) < 0) fail(file, field, "cannot create string type");
    char* buf = nullptr;
    if (H5Aread(a.get(), mem.get(), &buf) < 0) fail(file, field, "cannot read attribute");
    std::string out = buf ? std::string(buf) : std::string();
    H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, &buf);  // H5Treclaim is 1.12+
    return out;
  }
  std::size_t size = H5Tget_size(type.get());
  if (size == 0) fail(file, field, "cannot get string size");
  // Read into a buffer one byte larger, null-terminated, whatever the stored padding.
  if (H5Tset_size(mem.get(), size + 1) < 0 || H5Tset_strpad(mem.get(), H5T_STR_NULLTERM) < 0)
    fail(file, field, "cannot create string type");
  std::string buf(size + 1, '\0');
  if (H5Aread(a.get(), mem.get(), buf.data()) < 0) fail(file, field, "cannot read attribute");
  buf.resize(std::min(buf.find('\0'), size));
  if (H5Tget_strpad(type.get()) == H5T_STR_SPACEPAD) {
    while (!buf.empty() && buf.back() == ' ') buf.pop_back();
  }
  return buf;
}

double Hdf5Reader::read_attr_double(const std::string& object, const std::string& name) const {
  return impl_->read_attr_scalar<double>(object, name);
}

std::int64_t Hdf5Reader::read_attr_int64(const std::string& object, const std::string& name) const {
  return impl_->read_attr_scalar<std::int64_t>(object, name);
}

std::vector<double> Hdf5Reader::read_attr_doubles(const std::string& object,
                                                  const std::string& name) const {
  ErrorSilencer quiet;
  std::string field;
  return impl_->read_attr_numbers<double>(object, name, field);
}

}  // namespace almagest::io
