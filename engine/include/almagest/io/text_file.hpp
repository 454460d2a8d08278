#pragma once
// Reading the text inputs of the engine and the CLI (catalogues, candidate tables, velocity and
// curve lists, job files) safely: only regular files, never more than a documented size, and
// every row terminated, so that a file cut in the middle of a line is an error naming the line
// rather than a damaged last value. Also a content hash that identifies an input file (or a
// folder of them) in provenance records.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace almagest::io {

/// Largest text input read whole: 4 GiB (a catalogue of ~60 million rows). Larger text inputs
/// belong in FITS or HDF5.
inline constexpr std::uint64_t kMaxTextFileBytes = std::uint64_t{4} << 30;

/// Reads a whole text file. Throws IoError(path, "", ...) for a missing path, a directory,
/// anything that is not a regular file (a device such as /dev/zero or a FIFO would never end),
/// a file larger than `max_bytes`, or a read that returns fewer bytes than the file holds. The
/// buffer is sized by the file's size (never by anything inside the file). `what` names the
/// file's role in messages ("catalogue", "candidate table").
std::string read_text_file(const std::string& path, const std::string& what,
                           std::uint64_t max_bytes = kMaxTextFileBytes);

/// Iterates over the lines of a text buffer ('\n' separated; a trailing '\r' is removed).
///
///   TextLines lines(text);
///   std::string_view line;
///   while (lines.next(line)) { ... lines.number() ... lines.terminated() ... }
class TextLines {
public:
  explicit TextLines(std::string_view text) : text_(text) {}
  /// The next line; false at the end.
  bool next(std::string_view& line);
  /// 1-based number of the line last returned.
  std::size_t number() const noexcept { return number_; }
  /// False when the line last returned is the file's last and has no final newline.
  bool terminated() const noexcept { return terminated_; }
  /// Throws IoError(path, "line N", ...) when the line last returned is unterminated and does
  /// not end in a separator (' ', tab, ','), so that its last value may have been cut: what a
  /// reader calls on a row that holds data (a comment or a blank last line is harmless).
  void require_terminated(const std::string& path) const;

private:
  std::string_view text_, line_;
  std::size_t pos_ = 0, number_ = 0;
  bool terminated_ = true;
};

/// 64-bit content hash of a file, or of a folder's regular files (names and contents, in name
/// order, not recursive): FNV-1a over little-endian 64-bit words, then the tail bytes and the
/// length. Written as "fnv1a64w:<16 hex digits>". Throws IoError when the file cannot be read.
std::string content_hash(const std::string& path);

}  // namespace almagest::io
