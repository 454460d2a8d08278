// HDF5 result files through the HDF5 C API (serial 1.10+). See almagest/io/hdf5_file.hpp.
//
// This file is the one place Almagest touches libhdf5 (the stack, candidate, map, alm and
// catalogue readers and writers all come through Hdf5Reader / Hdf5Writer), so every rule below
// holds once:
// - libhdf5's automatic error printing is off (HDF5-DIAG dumps never reach stderr): every entry
//   point turns it off for the calling thread on first use (the error stack is per thread in a
//   thread-safe build), and every failure becomes one IoError naming the file and the object,
//   with the innermost message of HDF5's error stack appended briefly.
// - Nothing from a file is trusted: attribute messages of version-1 object headers are checked
//   on the raw bytes before libhdf5 decodes them (hdf5_guard.hpp); attribute type class, string
//   size and element count are checked before a read; a dataset's element count is
//   overflow-checked and bounded by what the file can hold before anything is allocated.
// - The writer builds the file in memory (core driver, no backing store) and writes the image
//   itself: libhdf5 never sees a failed write, so a full disk cannot leave it with a half-closed
//   file (libhdf5 1.10.8 then frees the file but keeps its ID and crashes at exit).
#include "almagest/io/hdf5_file.hpp"

#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <utility>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "io/hdf5_guard.hpp"

namespace almagest::io {

void silence_hdf5_errors() noexcept {
  // H5open before the first H5Eset_auto2 so the library's own initialisation cannot print.
  static std::once_flag init;
  std::call_once(init, [] { H5open(); });
  thread_local bool done = false;
  if (!done) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    done = true;
  }
}

namespace {

/// Turns libhdf5's automatic error printing off for the calling thread, once (cheap after the
/// first call). Constructed at the top of every public entry point.
class ErrorSilencer {
public:
  ErrorSilencer() { silence_hdf5_errors(); }
  ErrorSilencer(const ErrorSilencer&) = delete;
  ErrorSilencer& operator=(const ErrorSilencer&) = delete;
};

/// Largest string attribute read or written (attributes live in the object header, which holds
/// at most 64 KiB per message in the formats we read; 1 MiB leaves room for dense storage).
constexpr std::size_t kMaxStringAttr = std::size_t{1} << 20;
/// Most values a numeric attribute may hold.
constexpr std::uint64_t kMaxAttrValues = std::uint64_t{1} << 20;
/// Bounds for a dataset's raw bytes (element count x stored element size) before it is read:
/// contiguous or compact, unfiltered storage must lie inside the file; chunked or filtered
/// storage may expand (deflate reaches about 1032:1) up to kMaxExpansion times the file size,
/// and never past kMaxDatasetBytes.
constexpr std::uint64_t kMaxExpansion = 1100;
constexpr std::uint64_t kMaxDatasetBytes = std::uint64_t{16} << 30;

/// Longest HDF5 description kept in a message (libhdf5's write errors run to 300 characters).
constexpr std::size_t kMaxDetail = 160;

/// The innermost entry of the current HDF5 error stack, "description (major: minor)", then clears
/// the stack. Empty when the stack is empty.
std::string hdf5_error_text() {
  struct Innermost {
    std::string desc;
    hid_t maj = H5I_INVALID_HID, min = H5I_INVALID_HID;
    bool found = false;
  } inner;
  // Copy the stack first: H5Eget_msg is an API call and would clear the default stack mid-walk.
  const hid_t stack = H5Eget_current_stack();
  if (stack < 0) return {};
  auto walker = [](unsigned n, const H5E_error2_t* err, void* client) -> herr_t {
    auto* in = static_cast<Innermost*>(client);
    if (n == 0 && err) {
      in->desc = err->desc ? err->desc : "";
      in->maj = err->maj_num;
      in->min = err->min_num;
      in->found = true;
    }
    return 0;
  };
  H5Ewalk2(stack, H5E_WALK_UPWARD, walker, &inner);
  std::string text;
  if (inner.found) {
    auto msg = [](hid_t id) {
      char buf[128] = {0};
      if (id < 0 || H5Eget_msg(id, nullptr, buf, sizeof buf) < 0) return std::string();
      return std::string(buf);
    };
    text = inner.desc;
    if (text.size() > kMaxDetail) text = text.substr(0, kMaxDetail) + "...";
    const std::string maj = msg(inner.maj), min = msg(inner.min);
    if (!maj.empty() || !min.empty()) text += (text.empty() ? "" : "; ") + maj + ": " + min;
  }
  H5Eclose_stack(stack);
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

/// A numeric type read from a file must be self-consistent: its bits inside its bytes (a flipped
/// bit offset turns 8 into 0 or 1e18 on conversion), at most 16 bytes, float fields inside the
/// precision. `cls` is H5T_INTEGER or H5T_FLOAT.
void check_numeric_type(hid_t type, H5T_class_t cls, const std::string& file, const std::string& field) {
  const std::size_t size = H5Tget_size(type), precision = H5Tget_precision(type);
  const int offset = H5Tget_offset(type);
  if (size == 0 || size > 16 || precision == 0 || offset < 0 ||
      precision + static_cast<std::size_t>(offset) > 8 * size)
    throw IoError(file, field,
                  "numeric type of " + std::to_string(size) + " bytes with bit offset " +
                      std::to_string(offset) + " and precision " + std::to_string(precision) +
                      " is inconsistent (corrupt file?)");
  if (cls == H5T_FLOAT) {
    std::size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
    if (H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize) < 0 || esize == 0 || msize == 0 ||
        spos >= precision || epos + esize > precision || mpos + msize > precision)
      throw IoError(file, field, "floating-point type fields are inconsistent (corrupt file?)");
  }
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
template <> struct TypeOf<float> {
  static hid_t mem() { return H5T_NATIVE_FLOAT; }
  static hid_t file() { return H5T_IEEE_F32LE; }
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
    // Contiguous layout, no filters, and no object time stamps: the same data give the same
    // bytes (batch aggregates are compared bit for bit; the provenance carries the time).
    Handle dcpl = checked(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, dest(), field, "cannot create dataset properties");
    if (H5Pset_obj_track_times(dcpl.get(), 0) < 0) fail(dest(), field, "cannot set dataset properties");
    Handle dset = checked(H5Dcreate2(file.get(), p.c_str(), TypeOf<T>::file(), space.get(),
                                     lcpl.get(), dcpl.get(), H5P_DEFAULT),
                          H5Dclose, dest(), field, "cannot create dataset");
    if (n > 0 &&
        H5Dwrite(dset.get(), TypeOf<T>::mem(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) < 0)
      fail(dest(), field, "cannot write dataset");
    if (!dset.close()) fail(dest(), field, "cannot close dataset");
  }
};

namespace {

/// Growth step of the in-memory file image.
constexpr std::size_t kCoreIncrement = std::size_t{4} << 20;

/// Writes `image` to `path` (truncating it); throws IoError naming `dest` on any failure.
void write_image(const std::string& path, const std::string& dest, const std::vector<char>& image) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError(dest, "", std::string("cannot write HDF5 file: ") + std::strerror(errno));
  std::size_t done = 0;
  int err = 0;
  while (done < image.size()) {
    const ssize_t n = ::write(fd, image.data() + done, image.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : ENOSPC;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 && err == 0 && errno != EINTR) err = errno;
  if (err != 0) {
    const bool full = err == ENOSPC || err == EDQUOT || err == EFBIG;
    throw IoError(dest, "",
                  "cannot write HDF5 file (" + std::to_string(image.size()) + " bytes): " +
                      std::strerror(err) + (full ? " (disk full?)" : ""));
  }
}

}  // namespace

Hdf5Writer::Hdf5Writer(const std::string& destination) {
  ErrorSilencer quiet;
  impl_ = std::make_unique<Impl>(destination);
  const std::string& dest = impl_->dest();
  Handle fapl = checked(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, dest, "", "cannot create file properties");
  // STRONG: closing the file closes every object still open in it, so nothing is left behind.
  if (H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG) < 0)
    fail(dest, "", "cannot set file close degree");
  // In memory, no backing store: libhdf5 does no disk I/O at all (see the file comment); commit()
  // writes the image. Costs memory of about twice the file's size while committing.
  if (H5Pset_fapl_core(fapl.get(), kCoreIncrement, 0) < 0)
    fail(dest, "", "cannot set the in-memory file driver");
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
  Handle gcpl = checked(H5Pcreate(H5P_GROUP_CREATE), H5Pclose, impl_->dest(), field, "cannot create group properties");
  if (H5Pset_obj_track_times(gcpl.get(), 0) < 0) fail(impl_->dest(), field, "cannot set group properties");
  Handle g = checked(H5Gcreate2(impl_->file.get(), p.c_str(), impl_->lcpl.get(), gcpl.get(),
                                H5P_DEFAULT),
                     H5Gclose, impl_->dest(), field, "cannot create group");
  if (!g.close()) fail(impl_->dest(), field, "cannot close group");
}

void Hdf5Writer::write(const std::string& path, const std::vector<double>& data, Shape shape) {
  ErrorSilencer quiet;
  impl_->write_dataset(path, data, std::move(shape));
}
void Hdf5Writer::write(const std::string& path, const std::vector<float>& data, Shape shape) {
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

void Hdf5Writer::attr_fixed(const std::string& object, const std::string& name,
                            const std::string& value) {
  ErrorSilencer quiet;
  const std::string field = "attribute '" + name + "' of '" + normalise(object) + "'";
  if (value.size() > kMaxStringAttr)
    throw IoError(impl_->dest(), field,
                  "string of " + std::to_string(value.size()) + " bytes is longer than the " +
                      std::to_string(kMaxStringAttr) + " an attribute may hold");
  Handle type = checked(H5Tcopy(H5T_C_S1), H5Tclose, impl_->dest(), field, "cannot create string type");
  std::string buf = value.empty() ? std::string(1, '\0') : value;
  if (H5Tset_size(type.get(), buf.size()) < 0) fail(impl_->dest(), field, "cannot create string type");
  Handle space = checked(H5Screate(H5S_SCALAR), H5Sclose, impl_->dest(), field,
                         "cannot create dataspace");
  impl_->write_attr(object, name, type.get(), type.get(), space.get(), buf.data());
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
  const std::string& dest = impl_->dest();
  impl_->lcpl.reset();
  if (H5Fflush(impl_->file.get(), H5F_SCOPE_GLOBAL) < 0) fail(dest, "", "cannot finish HDF5 file");
  const ssize_t size = H5Fget_file_image(impl_->file.get(), nullptr, 0);
  if (size < 0) fail(dest, "", "cannot get the HDF5 file image");
  std::vector<char> image(static_cast<std::size_t>(size));
  if (size > 0 && H5Fget_file_image(impl_->file.get(), image.data(), image.size()) != size)
    fail(dest, "", "cannot get the HDF5 file image");
  // In memory: closing cannot fail on I/O. After this nothing of libhdf5 refers to the output.
  if (!impl_->file.close()) fail(dest, "", "cannot close HDF5 file");
  impl_->committed = true;
  write_image(impl_->atomic.temp_path(), dest, image);
  image = {};
  impl_->atomic.commit();
}

// ------------------------------------------------------------------------------------------------
// Reader

struct Hdf5Reader::Impl {
  std::string path;
  Handle file;
  detail::RawHdf5File raw;
  /// Object header address -> the detail::HeaderParts of it already checked (hdf5_guard.hpp).
  mutable std::map<std::uint64_t, unsigned> checked_headers;

  Handle open_dataset(const std::string& dataset, std::string& field) const {
    const std::string p = normalise(dataset);
    field = "dataset '" + p + "'";
    if (!resolve(p, field)) throw IoError(path, field, "no such dataset");
    Handle d = checked(H5Dopen2(file.get(), p.c_str(), H5P_DEFAULT), H5Dclose, path, field,
                       "cannot open dataset (a group, or a corrupt header?)");
    return d;
  }

  /// Dimensions of a dataset's dataspace (rank checked; scalar = {}, null = {0}).
  Shape dims_of(hid_t d, const std::string& field) const {
    Handle space = checked(H5Dget_space(d), H5Sclose, path, field, "cannot get dataspace");
    const H5S_class_t cls = H5Sget_simple_extent_type(space.get());
    if (cls == H5S_NULL) return Shape{0};
    if (cls != H5S_SCALAR && cls != H5S_SIMPLE) fail(path, field, "cannot get dataspace");
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank < 0 || rank > H5S_MAX_RANK) fail(path, field, "cannot get rank");
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    if (rank > 0 && H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0)
      fail(path, field, "cannot get dimensions");
    return Shape(dims.begin(), dims.end());
  }

  /// Number of elements of dataset `d`, after checking that its raw bytes fit in what the file
  /// can hold (see kMaxExpansion): a corrupt dimension is refused before anything is allocated.
  std::size_t checked_count(hid_t d, hid_t type, const Shape& shape, std::size_t mem_size,
                            const std::string& field) const {
    std::uint64_t n = 1;
    for (std::uint64_t e : shape) {
      if (e != 0 && n > UINT64_MAX / e)
        throw IoError(path, field, "shape " + shape_text(shape) + " overflows 64 bits");
      n *= e;
    }
    const std::size_t elem = H5Tget_size(type);
    if (elem == 0) fail(path, field, "cannot get element size");
    Handle dcpl = checked(H5Dget_create_plist(d), H5Pclose, path, field, "cannot get dataset properties");
    const H5D_layout_t layout = H5Pget_layout(dcpl.get());
    const int filters = H5Pget_nfilters(dcpl.get());
    if (layout < 0 || filters < 0) fail(path, field, "cannot get dataset layout");
    const bool plain = (layout == H5D_CONTIGUOUS || layout == H5D_COMPACT) && filters == 0;
    const std::uint64_t limit =
        plain ? raw.file_size
              : std::min(kMaxDatasetBytes, raw.file_size > kMaxDatasetBytes / kMaxExpansion
                                               ? kMaxDatasetBytes
                                               : raw.file_size * kMaxExpansion);
    const std::uint64_t max_bytes = std::max<std::uint64_t>(elem, mem_size);
    if (n > limit / max_bytes)
      throw IoError(path, field,
                    "shape " + shape_text(shape) + " of " + std::to_string(elem) +
                        "-byte values needs more than the " + std::to_string(limit) + " bytes " +
                        (plain ? "the file holds" : "allowed for compressed data") +
                        " (corrupt dimensions?)");
    return static_cast<std::size_t>(n);
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
    check_numeric_type(type.get(), cls, path, field);
    const Shape shape = dims_of(d.get(), field);
    const std::size_t n = checked_count(d.get(), type.get(), shape, sizeof(T), field);
    std::vector<T> out(n);
    if (n > 0 && H5Dread(d.get(), TypeOf<T>::mem(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0)
      fail(path, field, "cannot read dataset (truncated or corrupt file?)");
    return out;
  }

  /// Checks the `parts` (detail::HeaderParts) of the header at `addr` (of object `p`) not yet
  /// checked (hdf5_guard.hpp).
  void check_header(std::uint64_t addr, const std::string& p, const std::string& field,
                    unsigned parts = detail::kHeaderLinks) const {
    unsigned& done = checked_headers[addr];
    const unsigned todo = parts & ~done;
    if (todo == 0) return;
    const std::string problem = detail::check_object_header(raw, addr, todo);
    if (!problem.empty())
      throw IoError(path, field, "corrupt object header of '" + p + "': " + problem);
    done |= todo;
  }

  /// Header address of the object `name` resolves to from `loc`; nullopt when it does not
  /// resolve. Loads only the header's message list (no message of it is decoded).
  std::optional<std::uint64_t> header_addr(hid_t loc, const char* name) const {
#if H5_VERSION_GE(1, 12, 0)
    H5O_info2_t info;
    if (H5Oget_info_by_name3(loc, name, &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) return std::nullopt;
    // The native VOL's token is the header address, little-endian, sizeof_addr bytes.
    std::uint64_t addr = 0;
    for (unsigned i = raw.sizeof_addr; i-- > 0;) addr = (addr << 8) | info.token.__data[i];
    return addr;
#else
    H5O_info_t info;
    if (H5Oget_info_by_name2(loc, name, &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) return std::nullopt;
    return static_cast<std::uint64_t>(info.addr);
#endif
  }

  /// True when every link along `p` exists and the final object resolves. The header of the root
  /// group and of every object on the way is checked before libhdf5 decodes its links (a group's
  /// link messages, link info or symbol table, on H5Lexists) or its attributes.
  bool resolve(const std::string& p, const std::string& field) const {
    auto root = header_addr(file.get(), "/");
    if (!root) {
      H5Eclear2(H5E_DEFAULT);
      throw IoError(path, field, "cannot open the root group (corrupt file?)");
    }
    check_header(*root, "/", field);
    std::string prefix;
    for (const auto& part : split_path(p)) {
      prefix += "/" + part;
      const htri_t e = H5Lexists(file.get(), prefix.c_str(), H5P_DEFAULT);
      auto addr = e > 0 ? header_addr(file.get(), prefix.c_str()) : std::nullopt;
      if (!addr) {
        H5Eclear2(H5E_DEFAULT);
        return false;
      }
      check_header(*addr, prefix, field);
    }
    return true;
  }

  /// Opens `object` after resolve() has checked the headers on its path, and checks its
  /// attribute messages before libhdf5 decodes any of them.
  Handle open_object(const std::string& p, const std::string& field) const {
    if (!resolve(p, field)) throw IoError(path, field, "object '" + p + "' does not exist");
    auto addr = header_addr(file.get(), p.c_str());
    if (!addr) fail(path, field, "cannot query object '" + p + "'");
    check_header(*addr, p, field, detail::kHeaderAttributes);
    return checked(H5Oopen(file.get(), p.c_str(), H5P_DEFAULT), H5Oclose, path, field,
                   "cannot open object '" + p + "'");
  }

  Handle open_attr(const std::string& object, const std::string& name, std::string& field) const {
    const std::string p = normalise(object);
    field = "attribute '" + name + "' of '" + p + "'";
    if (name.empty()) throw IoError(path, field, "attribute name is empty");
    Handle obj = open_object(p, field);
    htri_t ex = H5Aexists(obj.get(), name.c_str());
    if (ex < 0) fail(path, field, "cannot query attribute");
    if (ex == 0) throw IoError(path, field, "no such attribute");
    return checked(H5Aopen(obj.get(), name.c_str(), H5P_DEFAULT), H5Aclose, path, field,
                   "cannot open attribute");
  }

  /// Number of values of attribute `a` (null dataspace: 0), bounded by kMaxAttrValues.
  std::uint64_t attr_count(hid_t a, hid_t& space_out, Handle& space, const std::string& field) const {
    space = checked(H5Aget_space(a), H5Sclose, path, field, "cannot get dataspace");
    space_out = space.get();
    const H5S_class_t cls = H5Sget_simple_extent_type(space.get());
    if (cls == H5S_NULL) return 0;
    if (cls != H5S_SCALAR && cls != H5S_SIMPLE) fail(path, field, "cannot get dataspace");
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank < 0 || rank > H5S_MAX_RANK) fail(path, field, "cannot get rank");
    const hssize_t n = H5Sget_simple_extent_npoints(space.get());
    if (n < 0) fail(path, field, "cannot get attribute size");
    if (static_cast<std::uint64_t>(n) > kMaxAttrValues)
      throw IoError(path, field,
                    "attribute holds " + std::to_string(n) + " values, more than the " +
                        std::to_string(kMaxAttrValues) + " allowed (corrupt file?)");
    return static_cast<std::uint64_t>(n);
  }

  template <class T>
  std::vector<T> read_attr_numbers(const std::string& object, const std::string& name,
                                   std::string& field) const {
    Handle a = open_attr(object, name, field);
    Handle type = checked(H5Aget_type(a.get()), H5Tclose, path, field, "cannot get type");
    H5T_class_t cls = H5Tget_class(type.get());
    if (cls != H5T_INTEGER && cls != H5T_FLOAT)
      throw IoError(path, field,
                    std::string("attribute is not numeric (found ") +
                        (cls == H5T_STRING ? "a string" : "HDF5 type class " + std::to_string(cls)) +
                        ")");
    check_numeric_type(type.get(), cls, path, field);
    Handle space;
    hid_t sp = H5I_INVALID_HID;
    const std::uint64_t n = attr_count(a.get(), sp, space, field);
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
  if (!std::filesystem::is_regular_file(path, ec)) throw IoError(path, "", "is not a regular file");
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) throw IoError(path, "", "cannot get the file size: " + ec.message());
  htri_t is = H5Fis_hdf5(path.c_str());
  if (is == 0) throw IoError(path, "", "not an HDF5 file");
  if (is < 0) fail(path, "", "cannot read HDF5 file (truncated or unreadable?)");
  impl_->file = checked(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose, path, "",
                        "cannot open HDF5 file (truncated or corrupt?)");
  detail::RawHdf5File& raw = impl_->raw;
  raw.path = path;
  raw.file_size = size;
  Handle fcpl = checked(H5Fget_create_plist(impl_->file.get()), H5Pclose, path, "",
                        "cannot get file properties");
  size_t sizeof_addr = 0, sizeof_size = 0;
  hsize_t userblock = 0;
  if (H5Pget_sizes(fcpl.get(), &sizeof_addr, &sizeof_size) < 0 ||
      H5Pget_userblock(fcpl.get(), &userblock) < 0)
    fail(path, "", "cannot get file properties");
  raw.sizeof_addr = static_cast<unsigned>(sizeof_addr);
  raw.sizeof_size = static_cast<unsigned>(sizeof_size);
  raw.base = userblock;
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
  const std::string p = normalise(path);
  return impl_->resolve(p, "object '" + p + "'");
}

Shape Hdf5Reader::shape(const std::string& dataset) const {
  ErrorSilencer quiet;
  std::string field;
  Handle d = impl_->open_dataset(dataset, field);
  return impl_->dims_of(d.get(), field);
}

Shape Hdf5Reader::shape(const std::string& dataset, std::size_t rank) const {
  Shape s = shape(dataset);
  if (s.size() != rank)
    throw IoError(impl_->path, "dataset '" + normalise(dataset) + "'",
                  "expected " + std::to_string(rank) + " dimension" + (rank == 1 ? "" : "s") +
                      ", found shape " + shape_text(s));
  return s;
}

std::vector<float> Hdf5Reader::read_float(const std::string& dataset) const {
  return impl_->read<float>(dataset);
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
  if (!impl_->resolve(p, field)) throw IoError(impl_->path, field, "no such group");
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
  const std::string field = "attribute '" + name + "' of '" + p + "'";
  if (name.empty() || !impl_->resolve(p, field)) return false;
  Handle obj = impl_->open_object(p, field);  // throws on a corrupt header
  htri_t ex = H5Aexists(obj.get(), name.c_str());
  if (ex < 0) fail(impl_->path, field, "cannot query attribute");
  return ex > 0;
}

std::string Hdf5Reader::read_attr_string(const std::string& object, const std::string& name) const {
  ErrorSilencer quiet;
  const std::string& file = impl_->path;
  std::string field;
  Handle a = impl_->open_attr(object, name, field);
  Handle type = checked(H5Aget_type(a.get()), H5Tclose, file, field, "cannot get type");
  const H5T_class_t cls = H5Tget_class(type.get());
  if (cls != H5T_STRING)
    throw IoError(file, field,
                  std::string("attribute is not a string (found ") +
                      (cls == H5T_INTEGER || cls == H5T_FLOAT ? "a number"
                                                              : "HDF5 type class " + std::to_string(cls)) +
                      ")");
  Handle space;
  hid_t sp = H5I_INVALID_HID;
  const std::uint64_t n = impl_->attr_count(a.get(), sp, space, field);
  if (n != 1)
    throw IoError(file, field,
                  "attribute is not a single string (holds " + std::to_string(n) + " values)");
  const H5T_cset_t cset = H5Tget_cset(type.get());
  if (cset != H5T_CSET_ASCII && cset != H5T_CSET_UTF8)
    throw IoError(file, field, "string attribute has an unknown character set");
  htri_t vlen = H5Tis_variable_str(type.get());
  if (vlen < 0) fail(file, field, "cannot inspect string type");
  Handle mem = checked(H5Tcopy(H5T_C_S1), H5Tclose, file, field, "cannot create string type");
  if (H5Tset_cset(mem.get(), cset) < 0) fail(file, field, "cannot create string type");
  if (vlen > 0) {
    // The heap object behind it was checked with the header (hdf5_guard.hpp).
    if (H5Tset_size(mem.get(), H5T_VARIABLE) < 0) fail(file, field, "cannot create string type");
    char* buf = nullptr;
    if (H5Aread(a.get(), mem.get(), &buf) < 0) fail(file, field, "cannot read attribute");
    std::string out = buf ? std::string(buf, strnlen(buf, kMaxStringAttr)) : std::string();
    H5Dvlen_reclaim(mem.get(), sp, H5P_DEFAULT, &buf);  // H5Treclaim is 1.12+
    return out;
  }
  const std::size_t size = H5Tget_size(type.get());
  if (size == 0) fail(file, field, "cannot get string size");
  if (size > kMaxStringAttr)
    throw IoError(file, field,
                  "fixed-length string of " + std::to_string(size) + " bytes is longer than the " +
                      std::to_string(kMaxStringAttr) + " allowed (corrupt file?)");
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
