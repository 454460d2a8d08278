#pragma once
// Atomic result writing: write to a temporary file in the destination's directory, then rename it
// over the destination on commit(). If the object is destroyed without commit() (error, cancel),
// the temporary file is removed and the destination is untouched.
#include <string>

namespace almagest {

class AtomicFile {
public:
  /// Throws IoError if the destination directory does not exist or is not writable.
  explicit AtomicFile(std::string destination);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  AtomicFile(AtomicFile&&) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;

  /// Path of the temporary file to write to.
  const std::string& temp_path() const noexcept { return temp_; }
  const std::string& destination() const noexcept { return dest_; }
  /// Renames the temporary file over the destination (atomic on one file system).
  void commit();

private:
  std::string dest_, temp_;
  bool done_ = false;
};

/// Writes `text` to `path` atomically.
void write_text_atomic(const std::string& path, const std::string& text);

}  // namespace almagest
