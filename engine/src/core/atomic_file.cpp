#include "almagest/core/atomic_file.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "almagest/core/error.hpp"

namespace almagest {

namespace fs = std::filesystem;

AtomicFile::AtomicFile(std::string destination) : dest_(std::move(destination)) {
  if (dest_.empty()) throw IoError("", "output path", "no output path given");
  fs::path dest(dest_);
  fs::path dir = dest.has_parent_path() ? dest.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw IoError(dest_, "", "output directory '" + dir.string() + "' does not exist");
  if (fs::is_directory(dest, ec)) throw IoError(dest_, "", "output path is a directory");
  static std::atomic<unsigned> counter{0};
  temp_ = (dir / ("." + dest.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                  std::to_string(counter.fetch_add(1))))
              .string();
  // Probe writability now so errors surface before any work is done.
  std::FILE* f = std::fopen(temp_.c_str(), "wb");
  if (!f) throw IoError(dest_, "", std::string("cannot create output file: ") + std::strerror(errno));
  std::fclose(f);
}

AtomicFile::AtomicFile(AtomicFile&& o) noexcept
    : dest_(std::move(o.dest_)), temp_(std::move(o.temp_)), done_(o.done_) {
  o.done_ = true;
}

AtomicFile::~AtomicFile() {
  if (!done_) {
    std::error_code ec;
    fs::remove(temp_, ec);
  }
}

void AtomicFile::commit() {
  if (done_) return;
  if (std::rename(temp_.c_str(), dest_.c_str()) != 0) {
    int err = errno;
    std::error_code ec;
    fs::remove(temp_, ec);
    done_ = true;
    throw IoError(dest_, "", std::string("cannot move result into place: ") + std::strerror(err));
  }
  done_ = true;
}

void write_text_atomic(const std::string& path, const std::string& text) {
  AtomicFile file(path);
  {
    std::ofstream out(file.temp_path(), std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw IoError(path, "", "write failed (disk full?)");
  }
  file.commit();
}

}  // namespace almagest
