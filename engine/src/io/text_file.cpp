// Bounded reading of text inputs and content hashes of input files (see text_file.hpp).
#include "almagest/io/text_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "almagest/core/error.hpp"

namespace almagest::io {

namespace {

namespace fs = std::filesystem;

/// Owns a POSIX file descriptor.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::string human_size(std::uint64_t b) {
  char buf[64];
  if (b >= (std::uint64_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.1f GiB", double(b) / double(1 << 30));
  else if (b >= (std::uint64_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", double(b) / double(1 << 20));
  else std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(b));
  return buf;
}

/// Opens `path` for reading and checks that it is a regular file. O_NONBLOCK keeps the open of
/// a FIFO from waiting for a writer; it does not affect reads of regular files.
Fd open_regular(const std::string& path, const std::string& what, struct stat& st) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (f.fd < 0) {
    const int err = errno;
    if (err == ENOENT) throw IoError(path, "", what + " file not found");
    throw IoError(path, "", "cannot open the " + what + " file: " + std::strerror(err));
  }
  if (::fstat(f.fd, &st) != 0)
    throw IoError(path, "", "cannot stat the " + what + " file: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw IoError(path, "", "is a directory, expected a " + what + " file");
  if (!S_ISREG(st.st_mode))
    throw IoError(path, "",
                  "is not a regular file (a device, FIFO or socket); the " + what +
                      " must be a regular file");
  return f;
}

/// Reads exactly `n` bytes (or throws): a file that shrinks while read is an error.
void read_exactly(int fd, char* out, std::uint64_t n, const std::string& path) {
  std::uint64_t done = 0;
  while (done < n) {
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(n - done, 1 << 24));
    const ssize_t r = ::read(fd, out + done, chunk);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw IoError(path, "", std::string("read error: ") + std::strerror(errno));
    }
    if (r == 0)
      throw IoError(path, "", "the file ended after " + std::to_string(done) + " of its " +
                                  std::to_string(n) + " bytes (changed while being read)");
    done += static_cast<std::uint64_t>(r);
  }
}

constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr std::uint64_t kFnvPrime = 0x100000001b3ull;

struct Fnv64w {
  std::uint64_t h = kFnvOffset;
  void word(std::uint64_t w) { h = (h ^ w) * kFnvPrime; }
  /// Whole words little-endian, then the tail bytes one by one.
  void bytes(const unsigned char* p, std::size_t n) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      std::uint64_t w = 0;
      for (int k = 7; k >= 0; --k) w = (w << 8) | p[i + std::size_t(k)];
      word(w);
    }
    for (; i < n; ++i) word(p[i]);
  }
};

/// Hashes one regular file's bytes and length into `h` (chunks of a multiple of 8 bytes, so the
/// result does not depend on the chunk size).
void hash_file(Fnv64w& h, const std::string& path) {
  struct stat st {};
  Fd f = open_regular(path, "input", st);
  std::vector<unsigned char> buf(std::size_t{1} << 22);
  std::uint64_t total = 0;
  for (;;) {
    std::size_t have = 0;
    while (have < buf.size()) {
      const ssize_t r = ::read(f.fd, buf.data() + have, buf.size() - have);
      if (r < 0) {
        if (errno == EINTR) continue;
        throw IoError(path, "", std::string("read error while hashing: ") + std::strerror(errno));
      }
      if (r == 0) break;
      have += static_cast<std::size_t>(r);
    }
    h.bytes(buf.data(), have);
    total += have;
    if (have < buf.size()) break;
  }
  h.word(total);
}

}  // namespace

std::string read_text_file(const std::string& path, const std::string& what,
                           std::uint64_t max_bytes) {
  if (path.empty()) throw IoError("", what, "no file given");
  struct stat st {};
  Fd f = open_regular(path, what, st);
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > max_bytes)
    throw IoError(path, "", "the " + what + " file holds " + human_size(size) +
                                ", more than the " + human_size(max_bytes) +
                                " a text file may hold (use FITS or HDF5 for larger inputs)");
  std::string data(static_cast<std::size_t>(size), '\0');
  read_exactly(f.fd, data.data(), size, path);
  return data;
}

bool TextLines::next(std::string_view& line) {
  if (pos_ >= text_.size()) return false;
  std::size_t end = text_.find('\n', pos_);
  terminated_ = end != std::string_view::npos;
  if (!terminated_) end = text_.size();
  line = text_.substr(pos_, end - pos_);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  line_ = line;
  pos_ = end + 1;
  ++number_;
  return true;
}

void TextLines::require_terminated(const std::string& path) const {
  // Complete without its newline: a row that ends in a separator cannot have lost a value.
  if (terminated_ || (!line_.empty() && (line_.back() == ' ' || line_.back() == '\t' || line_.back() == ','))) return;
  throw IoError(path, "line " + std::to_string(number_),
                "the last line does not end with a newline: the file looks truncated in the "
                "middle of a row (if the row is complete, end the file with a newline)");
}

std::string content_hash(const std::string& path) {
  Fnv64w h;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.is_regular_file(ec)) files.push_back(e.path());
    if (ec) throw IoError(path, "", "cannot list the folder: " + ec.message());
    std::sort(files.begin(), files.end());
    for (const auto& p : files) {
      const std::string name = p.filename().string();
      h.bytes(reinterpret_cast<const unsigned char*>(name.data()), name.size());
      h.word(name.size());
      hash_file(h, p.string());
    }
  } else {
    hash_file(h, path);
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv1a64w:%016llx", static_cast<unsigned long long>(h.h));
  return buf;
}

}  // namespace almagest::io
