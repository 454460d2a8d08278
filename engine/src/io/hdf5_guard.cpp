// Raw checks of version-1 object header attribute messages (see hdf5_guard.hpp). Layouts from
// the HDF5 File Format Specification (version 1 object headers, attribute message versions 1-3,
// datatype and dataspace messages, global heap collections).
#include "io/hdf5_guard.hpp"

#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace almagest::io::detail {
namespace {

constexpr std::uint16_t kMsgNull = 0x0000;
constexpr std::uint16_t kMsgAttribute = 0x000C;
constexpr std::uint16_t kMsgContinuation = 0x0010;
constexpr unsigned kMsgFlagShared = 0x02;
constexpr unsigned kMaxChunks = 4096;
constexpr unsigned kMaxRank = 32;  // H5S_MAX_RANK
constexpr unsigned kClassString = 3;
constexpr unsigned kClassVlen = 9;

using Bytes = std::vector<unsigned char>;

std::uint64_t align8(std::uint64_t n) { return (n + 7) / 8 * 8; }

/// Little-endian unsigned integer of `width` bytes at `p` (width <= 8).
std::uint64_t le(const unsigned char* p, unsigned width) {
  std::uint64_t v = 0;
  for (unsigned i = width; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

class Reader {
public:
  explicit Reader(const RawHdf5File& f) : f_(f), in_(f.path, std::ios::binary) {}
  bool ok() const { return static_cast<bool>(in_); }

  /// `n` bytes at address `addr` (relative to the base); nullopt if they lie past the end.
  std::optional<Bytes> read(std::uint64_t addr, std::uint64_t n) {
    if (addr > f_.file_size || f_.base > f_.file_size - addr) return std::nullopt;
    const std::uint64_t at = f_.base + addr;
    if (n > f_.file_size - at) return std::nullopt;
    Bytes b(static_cast<std::size_t>(n));
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(at));
    if (n > 0 && !in_.read(reinterpret_cast<char*>(b.data()), static_cast<std::streamsize>(n)))
      return std::nullopt;
    return b;
  }

private:
  const RawHdf5File& f_;
  std::ifstream in_;
};

/// A global heap collection's objects: index -> size.
using Collection = std::map<std::uint64_t, std::uint64_t>;

std::optional<Collection> read_collection(Reader& rd, const RawHdf5File& f, std::uint64_t addr) {
  const unsigned L = f.sizeof_size;
  auto head = rd.read(addr, 8 + L);
  if (!head || std::string(head->begin(), head->begin() + 4) != "GCOL" || (*head)[4] != 1)
    return std::nullopt;
  const std::uint64_t size = le(head->data() + 8, L);
  if (size < 8 + L) return std::nullopt;
  auto body = rd.read(addr, size);  // bounded by the file size inside read()
  if (!body) return std::nullopt;
  Collection objects;
  std::uint64_t pos = 8 + L;
  while (pos + 8 + L <= size) {
    const unsigned char* p = body->data() + pos;
    const std::uint64_t index = le(p, 2);
    if (index == 0) break;  // the free-space object ends the list
    const std::uint64_t n = le(p + 8, L);
    if (n > size) return std::nullopt;
    objects[index] = n;
    pos += 8 + L + align8(n);
  }
  if (pos > size) return std::nullopt;
  return objects;
}

struct Checker {
  const RawHdf5File& f;
  Reader rd;
  std::map<std::uint64_t, std::optional<Collection>> heaps;

  explicit Checker(const RawHdf5File& file) : f(file), rd(file) {}

  /// Checks one attribute message body; returns "" or the problem.
  std::string attribute(const unsigned char* p, std::uint64_t size) {
    if (size < 8) return "attribute message too short";
    const unsigned version = p[0];
    if (version < 1 || version > 3)
      return "attribute message version " + std::to_string(version) + " unknown";
    const unsigned flags = version >= 2 ? p[1] : 0;
    const std::uint64_t name_len = le(p + 2, 2), dt_len = le(p + 4, 2), ds_len = le(p + 6, 2);
    const bool pad = version == 1;
    std::uint64_t pos = version == 3 ? 9 : 8;
    if (name_len == 0 || pos + name_len > size) return "attribute name runs past its message";
    const unsigned char* name = p + pos;
    std::uint64_t end = 0;
    while (end < name_len && name[end] != 0) ++end;
    if (end == name_len) return "attribute name is not terminated";
    const std::string label = "attribute '" + std::string(name, name + end) + "': ";
    pos += pad ? align8(name_len) : name_len;
    if (pos + dt_len > size || dt_len < 8) return label + "datatype runs past its message";
    const unsigned char* dt = p + pos;
    pos += pad ? align8(dt_len) : dt_len;
    if (pos + ds_len > size || ds_len < 4) return label + "dataspace runs past its message";
    const unsigned char* ds = p + pos;
    pos += pad ? align8(ds_len) : ds_len;
    if (pos > size) return label + "dataspace runs past its message";
    if (flags & 0x03) return "";  // shared datatype/dataspace: stored elsewhere, libhdf5 checks

    // Datatype: class and version in byte 0, element size in bytes 4-7.
    const unsigned cls = dt[0] & 0x0f;
    const std::uint64_t elem = le(dt + 4, 4);
    if (elem == 0) return label + "datatype has size 0";

    // Dataspace: number of points.
    const unsigned ds_version = ds[0], rank = ds[1], ds_flags = ds[2];
    if (ds_version < 1 || ds_version > 2) return label + "dataspace version unknown";
    if (ds_version == 1 && ds_len < 8) return label + "dataspace runs past its message";
    if (rank > kMaxRank) return label + "dataspace rank " + std::to_string(rank) + " exceeds 32";
    const std::uint64_t dims_at = ds_version == 1 ? 8 : 4;
    const std::uint64_t nd = (ds_flags & 1) ? 2 * rank : rank;
    if (dims_at + nd * f.sizeof_size > ds_len) return label + "dataspace runs past its message";
    std::uint64_t points = 1;
    if (ds_version == 2 && ds[3] == 2) points = 0;  // null dataspace
    for (unsigned i = 0; i < rank && points > 0; ++i) {
      const std::uint64_t d = le(ds + dims_at + i * f.sizeof_size, f.sizeof_size);
      if (d != 0 && points > UINT64_MAX / d) return label + "dataspace size overflows";
      points *= d;
    }
    if (points > 0 && elem > (size - pos) / points)
      return label + "data (" + std::to_string(points) + " x " + std::to_string(elem) +
             " bytes) run past its message";

    if (cls == kClassVlen) return vlen_data(label, dt, dt_len, p + pos, points, elem);
    if (cls == kClassString && elem > (1u << 20)) return label + "string size too large";
    return "";
  }

  /// Every element of a variable-length attribute: {length (4), collection address, index (4)}.
  std::string vlen_data(const std::string& label, const unsigned char* dt, std::uint64_t dt_len,
                        const unsigned char* data, std::uint64_t points, std::uint64_t elem) {
    const unsigned A = f.sizeof_addr;
    if (elem != 4 + A + 4) return label + "variable-length element size is wrong";
    if (dt_len < 16) return label + "variable-length datatype has no base type";
    const std::uint64_t base_size = le(dt + 8 + 4, 4);  // the base type's size field
    if (base_size == 0) return label + "variable-length base type has size 0";
    for (std::uint64_t i = 0; i < points; ++i) {
      const unsigned char* e = data + i * elem;
      const std::uint64_t len = le(e, 4), addr = le(e + 4, A), index = le(e + 4 + A, 4);
      if (len == 0 || addr == 0) continue;  // empty or nil: libhdf5 reads no heap object
      auto it = heaps.find(addr);
      if (it == heaps.end()) it = heaps.emplace(addr, read_collection(rd, f, addr)).first;
      if (!it->second) return label + "global heap collection is missing or corrupt";
      auto obj = it->second->find(index);
      if (obj == it->second->end())
        return label + "global heap object " + std::to_string(index) + " does not exist";
      if (obj->second != len * base_size)
        return label + "global heap object size differs from the recorded length";
    }
    return "";
  }

  std::string header(std::uint64_t addr) {
    if (!rd.ok()) return "cannot read the file";
    auto prefix = rd.read(addr, 16);
    if (!prefix) return "object header lies past the end of the file";
    if ((*prefix)[0] != 1) return "";  // not a version-1 header (version 2 is checksummed)
    std::vector<std::pair<std::uint64_t, std::uint64_t>> chunks{{addr + 16, le(prefix->data() + 8, 4)}};
    std::set<std::uint64_t> seen{addr + 16};
    for (std::size_t c = 0; c < chunks.size(); ++c) {
      if (c >= kMaxChunks) return "object header has too many continuation chunks";
      auto chunk = rd.read(chunks[c].first, chunks[c].second);
      if (!chunk) return "object header chunk lies past the end of the file";
      const std::uint64_t n = chunk->size();
      std::uint64_t pos = 0;
      while (pos + 8 <= n) {
        const unsigned char* m = chunk->data() + pos;
        const std::uint16_t type = static_cast<std::uint16_t>(le(m, 2));
        const std::uint64_t size = le(m + 2, 2);
        const unsigned flags = m[4];
        if (pos + 8 + size > n) return "header message runs past its chunk";
        const unsigned char* body = m + 8;
        if (type == kMsgContinuation) {
          if (size < std::uint64_t(f.sizeof_addr) + f.sizeof_size)
            return "continuation message too short";
          const std::uint64_t at = le(body, f.sizeof_addr);
          if (!seen.insert(at).second) return "object header continuation chunks form a loop";
          chunks.emplace_back(at, le(body + f.sizeof_addr, f.sizeof_size));
        } else if (type == kMsgAttribute && !(flags & kMsgFlagShared)) {
          std::string problem = attribute(body, size);
          if (!problem.empty()) return problem;
        } else if (type == kMsgNull) {
          // gap
        }
        pos += 8 + size;
      }
    }
    return "";
  }
};

}  // namespace

std::string check_attribute_messages(const RawHdf5File& file, std::uint64_t header_addr) {
  if (file.sizeof_addr < 2 || file.sizeof_addr > 8 || file.sizeof_size < 2 || file.sizeof_size > 8)
    return "unsupported address or length width";
  Checker c(file);
  return c.header(header_addr);
}

}  // namespace almagest::io::detail
