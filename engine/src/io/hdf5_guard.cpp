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
constexpr std::uint16_t kMsgLinkInfo = 0x0002;
constexpr std::uint16_t kMsgLink = 0x0006;
constexpr std::uint16_t kMsgSymbolTable = 0x0011;
constexpr std::uint16_t kMsgAttribute = 0x000C;
constexpr std::uint16_t kMsgContinuation = 0x0010;
constexpr unsigned kMsgFlagShared = 0x02;
constexpr unsigned kMaxChunks = 4096;
constexpr unsigned kMaxRank = 32;  // H5S_MAX_RANK
constexpr unsigned kClassString = 3;
constexpr unsigned kClassVlen = 9;
constexpr std::uint64_t kGlobalHeapMinSize = 4096;  // H5HG_MINSIZE: collections are never smaller

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
  if (size < kGlobalHeapMinSize) return std::nullopt;
  auto body = rd.read(addr, size);  // bounded by the file size inside read()
  if (!body) return std::nullopt;
  // The same walk as libhdf5's collection decoder (H5HG__cache_heap_deserialize), which steps
  // from object to object by each object's size until the collection's end: an object whose
  // step is zero (a free-space object of size 0) or runs past the end would make it loop or
  // read outside the collection, so both are refused here.
  Collection objects;
  const std::uint64_t hdr = 8 + L;
  std::uint64_t pos = hdr;
  while (pos < size) {
    if (pos + hdr > size) break;  // a tail too small for an object header is free space
    const unsigned char* p = body->data() + pos;
    const std::uint64_t index = le(p, 2);
    const std::uint64_t n = le(p + 8, L);
    if (n > size - pos) return std::nullopt;
    const std::uint64_t step = index == 0 ? n : hdr + align8(n);
    if (step < hdr || step > size - pos) return std::nullopt;
    if (index != 0) objects[index] = n;
    pos += step;
  }
  return objects;
}

struct Checker {
  const RawHdf5File& f;
  Reader rd;
  std::map<std::uint64_t, std::optional<Collection>> heaps;

  unsigned parts;  // HeaderParts to check

  Checker(const RawHdf5File& file, unsigned what) : f(file), rd(file), parts(what) {}

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

  /// The relative end of the file: addresses at or past it hold nothing.
  std::uint64_t eof() const { return f.file_size > f.base ? f.file_size - f.base : 0; }
  bool undefined(std::uint64_t addr) const {
    return addr == (f.sizeof_addr >= 8 ? UINT64_MAX : (std::uint64_t(1) << (8 * f.sizeof_addr)) - 1);
  }

  /// True when `n` bytes starting with signature `sig` lie at `addr`, inside the file.
  bool signature_at(std::uint64_t addr, const char* sig, std::uint64_t n) {
    if (addr >= eof() || n > eof() - addr) return false;
    auto b = rd.read(addr, 4);
    return b && std::string(b->begin(), b->end()) == sig;
  }

  /// Link Info message (0x02): libhdf5 opens the fractal heap and the v2 B-tree of names at the
  /// addresses it holds (H5G__obj_get_linfo -> H5B2_open) without checking them.
  std::string link_info(const unsigned char* p, std::uint64_t size) {
    const unsigned A = f.sizeof_addr;
    if (size < 2) return "link info message too short";
    if (p[0] != 0) return "link info message version " + std::to_string(p[0]) + " unknown";
    const unsigned flags = p[1];
    if (flags & ~0x03u) return "link info message flags unknown";
    std::uint64_t pos = 2 + ((flags & 1) ? 8 : 0);
    const std::uint64_t need = pos + 2 * A + ((flags & 2) ? A : 0);
    if (need > size) return "link info message too short";
    const std::uint64_t heap = le(p + pos, A), names = le(p + pos + A, A);
    const std::uint64_t order = (flags & 2) ? le(p + pos + 2 * A, A) : 0;
    // FRHP header: signature, version, heap ID length, I/O filter length, flags, ... (at least
    // 22 bytes before its addresses); BTHD header: 16 bytes, root address, 2 + L + checksum.
    const std::uint64_t bthd = 16 + A + 2 + f.sizeof_size + 4;
    if (undefined(heap) != undefined(names))
      return "link info has a fractal heap without a name index (or the reverse)";
    if (!undefined(heap) && !signature_at(heap, "FRHP", 22 + A))
      return "link info fractal heap address does not point at a fractal heap";
    if (!undefined(names) && !signature_at(names, "BTHD", bthd))
      return "link info name index address does not point at a v2 B-tree";
    if ((flags & 2) && !undefined(order) && !signature_at(order, "BTHD", bthd))
      return "link info creation order index address does not point at a v2 B-tree";
    return "";
  }

  /// Link message (0x06), decoded by every lookup and iteration of a compact group.
  std::string link(const unsigned char* p, std::uint64_t size) {
    if (size < 2) return "link message too short";
    if (p[0] != 1) return "link message version " + std::to_string(p[0]) + " unknown";
    const unsigned flags = p[1];
    if (flags & ~0x1fu) return "link message flags unknown";
    std::uint64_t pos = 2;
    unsigned type = 0;
    if (flags & 0x08) {
      if (pos + 1 > size) return "link message too short";
      type = p[pos++];
    }
    if (flags & 0x04) pos += 8;  // creation order
    if (flags & 0x10) {
      if (pos + 1 > size) return "link message too short";
      if (p[pos] > 1) return "link name character set unknown";
      ++pos;
    }
    const unsigned width = 1u << (flags & 0x03);
    if (pos + width > size) return "link message too short";
    const std::uint64_t name_len = le(p + pos, width);
    pos += width;
    if (name_len == 0 || name_len > size - pos) return "link name runs past its message";
    pos += name_len;
    if (type == 0) {  // hard link: an object header address
      if (pos + f.sizeof_addr > size) return "link message too short";
      const std::uint64_t addr = le(p + pos, f.sizeof_addr);
      if (undefined(addr) || addr >= eof()) return "hard link address lies outside the file";
      return "";
    }
    if (type != 1 && type != 64) return "link type " + std::to_string(type) + " unknown";
    if (pos + 2 > size) return "link message too short";
    const std::uint64_t value_len = le(p + pos, 2);
    pos += 2;
    if (value_len > size - pos) return "link value runs past its message";
    if (type == 1 && value_len == 0) return "soft link value is empty";
    if (type == 64) {  // external: flags byte, then two terminated strings
      if (value_len < 3) return "external link value too short";
      const unsigned char* v = p + pos;
      std::uint64_t nul = 0;
      for (std::uint64_t i = 1; i < value_len; ++i) nul += v[i] == 0;
      if (nul < 2 || v[value_len - 1] != 0) return "external link value is not terminated";
    }
    return "";
  }

  /// Symbol Table message (0x11): the group's v1 B-tree and local heap.
  std::string symbol_table(const unsigned char* p, std::uint64_t size) {
    const unsigned A = f.sizeof_addr, L = f.sizeof_size;
    if (size < 2 * A) return "symbol table message too short";
    const std::uint64_t tree = le(p, A), heap = le(p + A, A);
    // TREE node: signature, type, level, entries (2), two sibling addresses.
    if (!signature_at(tree, "TREE", 8 + 2 * A))
      return "symbol table B-tree address does not point at a B-tree node";
    // HEAP: signature, version, 3 reserved, data size (L), free list offset (L), data address.
    if (!signature_at(heap, "HEAP", 8 + 2 * L + A))
      return "symbol table local heap address does not point at a local heap";
    auto h = rd.read(heap, 8 + 2 * L + A);
    if (!h) return "symbol table local heap lies past the end of the file";
    const std::uint64_t data_size = le(h->data() + 8, L), data = le(h->data() + 8 + 2 * L, A);
    if (data >= eof() || data_size > eof() - data)
      return "symbol table local heap data lies outside the file";
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
        } else if (type == kMsgAttribute && !(flags & kMsgFlagShared) && (parts & kHeaderAttributes)) {
          std::string problem = attribute(body, size);
          if (!problem.empty()) return problem;
        } else if ((type == kMsgLinkInfo || type == kMsgLink || type == kMsgSymbolTable) &&
                   (parts & kHeaderLinks)) {
          std::string problem = type == kMsgLinkInfo ? link_info(body, size)
                                : type == kMsgLink   ? link(body, size)
                                                     : symbol_table(body, size);
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

std::string check_object_header(const RawHdf5File& file, std::uint64_t header_addr, unsigned parts) {
  if (file.sizeof_addr < 2 || file.sizeof_addr > 8 || file.sizeof_size < 2 || file.sizeof_size > 8)
    return "unsupported address or length width";
  Checker c(file, parts);
  return c.header(header_addr);
}

}  // namespace almagest::io::detail
