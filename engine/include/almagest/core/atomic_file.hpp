#pragma once
// The output layer: every file Almagest writes goes through here (docs/design.md, "Outputs").
//
// - AtomicFile: one output written to a temporary file in the destination's directory and
//   renamed over the destination on commit(); destroyed uncommitted (error, cancel) it removes
//   the temporary and the destination is untouched. commit() fsyncs the file, renames it and
//   fsyncs the directory, so a power loss cannot leave a renamed but empty result.
// - OutputSet: the outputs of one job, committed together. While an OutputSet::Scope is active
//   on a thread, every AtomicFile created on that thread (by any writer, engine or front end)
//   joins the set: its destination is checked against the set's inputs and the other outputs,
//   and its rename waits for OutputSet::commit(), which checks the cancel token, takes an
//   exclusive lock (flock) on every destination directory in path order, renames every file and
//   fsyncs the directories. Two concurrent writers of one set thus leave one complete set.
// - Destinations are checked before anything is written: the directory exists and is writable,
//   an existing target is a regular file (never a device node, FIFO, socket or directory), and
//   it is not one of the job's inputs (compared by device and inode, through links).
// - Temporary files are registered in a process-wide table that remove_temp_files_now() empties
//   from a signal handler (async-signal-safe), so no temporary outlives the process. A writer
//   given a live temporary path as its destination (a front end handing a temporary to an engine
//   writer) writes it in place: temporary names are never nested.
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include "almagest/core/job_context.hpp"

namespace almagest {

/// Device and inode of a file (following links); nullopt when it does not exist.
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  bool operator==(const FileIdentity&) const = default;
};
std::optional<FileIdentity> file_identity(const std::string& path);

/// Checks that `destination` may be written (see above): throws IoError naming it, with the
/// reason (directory missing or not writable, not a regular file, same file as input X).
/// `folder`: the destination is a folder of files (an existing one must be an empty folder).
void check_output_target(const std::string& destination, const std::vector<std::string>& inputs = {},
                         bool folder = false);

class OutputSet;

class AtomicFile {
public:
  /// Checks the destination and creates its temporary file. Throws IoError.
  explicit AtomicFile(std::string destination);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  AtomicFile(AtomicFile&&) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;

  /// Path of the temporary file to write to.
  const std::string& temp_path() const noexcept { return temp_; }
  const std::string& destination() const noexcept { return dest_; }
  /// Standalone: fsync, rename over the destination, fsync the directory. In a set: marks the
  /// file complete; the set renames it. In place (destination was a live temporary): nothing.
  void commit();

private:
  enum class Mode { Standalone, InSet, InPlace };
  std::string dest_, temp_;
  Mode mode_ = Mode::Standalone;
  bool done_ = false;
  int slot_ = -1;              ///< entry in the table of live temporaries (standalone)
  OutputSet* set_ = nullptr;   ///< the set joined (InSet)
};

/// Writes `text` to `path` atomically (joins the thread's active OutputSet, if any).
void write_text_atomic(const std::string& path, const std::string& text);

/// The outputs of one job (see above). Not thread-safe: one thread adds and commits.
class OutputSet {
public:
  /// `inputs`: files the job reads (none may be written); `cancel`: honoured until the renames.
  explicit OutputSet(std::vector<std::string> inputs = {}, CancelToken cancel = {});
  /// Removes every temporary not committed.
  ~OutputSet();
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;

  /// Checks `destination` (against the inputs and the outputs already added) without adding it:
  /// front ends call it before any work so a bad -o fails at once.
  void check(const std::string& destination, bool folder = false) const;
  /// Adds an output and creates its temporary (an empty file, or an empty folder for `folder`);
  /// returns the temporary's path. Writers may also join through an AtomicFile in a Scope.
  std::string add(const std::string& destination, bool folder = false);
  /// Commits every output: throws Cancelled if the token is set, IoError if a temporary is
  /// missing, cannot be synced or renamed (then no output of the set is left in place... except
  /// those renamed before a rename failure, which are removed again).
  void commit();
  bool committed() const noexcept;
  const std::vector<std::string>& inputs() const noexcept;
  std::vector<std::string> destinations() const;

  /// Makes `set` the active set of the calling thread for the Scope's lifetime (nests).
  class Scope {
  public:
    explicit Scope(OutputSet& set);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

  private:
    OutputSet* previous_;
  };

  /// The calling thread's active set, or nullptr.
  static OutputSet* active() noexcept;

private:
  friend class AtomicFile;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Removes every registered temporary file and folder (folders: one level of files) with
/// async-signal-safe calls only. For signal handlers and terminate handlers.
void remove_temp_files_now() noexcept;
/// Number of temporaries registered now (tests).
int live_temp_file_count() noexcept;

}  // namespace almagest
