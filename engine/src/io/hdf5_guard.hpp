#pragma once
// Checks on raw HDF5 bytes that libhdf5 1.10 does not make before it trusts them (internal to
// hdf5_file.cpp).
//
// A version-1 object header carries no checksum, and libhdf5 1.10.8 decodes its attribute
// messages without checking them against the message size: a flipped dataspace size makes the
// decoder copy the attribute's data from past the end of the header chunk (heap-buffer-overflow
// inside H5Aexists_by_name / H5Aopen, fixture asan_hbo_maph5_246.h5), and a flipped global-heap
// index in a variable-length string makes H5Aread index past the heap's object table (SIGSEGV in
// H5HG_read, crash_maph5_168.h5). Every attribute lookup walks (and decodes) the messages in
// order, so no choice of API call avoids them. Instead, before the first attribute access on an
// object, check_attribute_messages() reads the object's header from the file itself and checks
// every attribute message: name terminated inside its field, datatype and dataspace inside the
// message, the data (points x element size, overflow-checked) inside the message, and every
// variable-length element's heap object present in its collection with the recorded length, in a
// collection whose object walk stays inside it (a zero-sized free-space object made libhdf5's
// collection decoder loop forever, H5HG_read under H5Aread). The group messages that H5Lexists,
// H5Literate and H5Gopen decode are checked the same way (check_object_header) for the root group
// and every object on the path to what is read.
// Version-2 object headers (libver "latest", h5py's default for some files) are checksummed by
// libhdf5 and are not re-parsed here.
#include <cstdint>
#include <string>

namespace almagest::io::detail {

/// Where an HDF5 file's objects lie and how wide its addresses are (superblock values).
struct RawHdf5File {
  std::string path;
  std::uint64_t file_size = 0;
  std::uint64_t base = 0;     // base address (the user block size)
  unsigned sizeof_addr = 8;   // bytes per file address
  unsigned sizeof_size = 8;   // bytes per length
};

/// Which messages check_object_header() checks: the group messages libhdf5 decodes to look up or
/// list links, and the attribute messages it decodes on any attribute access.
enum HeaderParts : unsigned { kHeaderLinks = 1, kHeaderAttributes = 2 };

/// Checks the messages (of the kinds in `parts`) libhdf5 decodes unchecked in the version-1 object header at
/// `header_addr` (relative to the base address): attributes (above); Link Info (fractal heap and
/// name-index B-tree addresses undefined or inside the file at an "FRHP" / "BTHD" signature);
/// Link messages (name, type and value inside the message, hard link addresses inside the file);
/// Symbol Table (a "TREE" node and a "HEAP" local heap whose data lies inside the file). A bit
/// flip in a message type turns any message into one of these, so every one present is checked,
/// whatever the object is. Returns an empty string when they are sound, otherwise a short
/// description of the first inconsistency (naming the attribute where its name could be read).
std::string check_object_header(const RawHdf5File& file, std::uint64_t header_addr, unsigned parts);

}  // namespace almagest::io::detail
