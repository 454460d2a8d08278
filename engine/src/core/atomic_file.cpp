// The output layer (atomic_file.hpp): atomic single files, job output sets committed together,
// destination checks, and the process-wide table of live temporaries for signal-safe cleanup.
#include "almagest/core/atomic_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "almagest/core/error.hpp"

namespace almagest {

namespace fs = std::filesystem;

namespace {

// ---- the table of live temporaries --------------------------------------------------------
// Fixed storage (no allocation) so that a signal handler can walk it. A slot is claimed with a
// compare-exchange (0 -> 1), filled, then published (-> 2); only published slots are removed by
// remove_temp_files_now(). 512 slots: far more than one process keeps open at once; a process
// that runs out still writes atomically, it only loses the signal-time cleanup of the extras.
constexpr int kSlots = 512;
constexpr std::size_t kPathMax = 4096;
struct Slot {
  std::atomic<int> state{0};
  bool folder = false;
  char path[kPathMax];
};
Slot g_slots[kSlots];

int register_temp(const std::string& path, bool folder) {
  if (path.size() + 1 > kPathMax) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (g_slots[i].state.compare_exchange_strong(expected, 1)) {
      std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
      g_slots[i].folder = folder;
      g_slots[i].state.store(2);
      return i;
    }
  }
  return -1;
}

void unregister_temp(int slot) {
  if (slot >= 0) g_slots[slot].state.store(0);
}

bool is_live_temp(const std::string& path, bool folders_only) {
  for (auto& s : g_slots)
    if (s.state.load() == 2 && (!folders_only || s.folder) && path == s.path) return true;
  return false;
}

// Removes the regular entries of a folder and the folder, with system calls only.
void remove_folder_raw(const char* path) noexcept {
  int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    alignas(8) char buf[8192];
    for (;;) {
      long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
      if (n <= 0) break;
      for (long off = 0; off < n;) {
        struct Dirent64 {
          ino64_t d_ino;
          off64_t d_off;
          unsigned short d_reclen;
          unsigned char d_type;
          char d_name[1];
        };
        auto* d = reinterpret_cast<Dirent64*>(buf + off);
        const char* name = d->d_name;
        if (!(name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))))
          ::unlinkat(fd, name, 0);
        off += d->d_reclen;
      }
    }
    ::close(fd);
  }
  ::rmdir(path);
}

void remove_temp(const std::string& path, bool folder) {
  std::error_code ec;
  if (folder) fs::remove_all(path, ec);
  else fs::remove(path, ec);
}

std::string errno_text(int err) { return std::strerror(err); }

fs::path parent_of(const std::string& p) {
  fs::path path(p);
  return path.has_parent_path() ? path.parent_path() : fs::path(".");
}

// "<dir>/.<name>.tmp.<pid>.<n>": hidden, beside the destination (same file system), unique.
std::string temp_name_for(const std::string& destination) {
  static std::atomic<unsigned> counter{0};
  fs::path dest(destination);
  return (parent_of(destination) / ("." + dest.filename().string() + ".tmp." +
                                    std::to_string(::getpid()) + "." +
                                    std::to_string(counter.fetch_add(1))))
      .string();
}

// Temporaries of `destination` left by a process that no longer exists (killed with SIGKILL, a
// power loss): "<dir>/.<name>.tmp.<pid>.<n>" with no process <pid>. Removed before a new write.
void sweep_stale_temps(const std::string& destination) {
  const fs::path dir = parent_of(destination);
  const std::string prefix = "." + fs::path(destination).filename().string() + ".tmp.";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    const auto dot = rest.find('.');
    if (dot == std::string::npos || dot == 0) continue;
    long pid = 0;
    bool digits = true;
    for (std::size_t i = 0; i < dot; ++i) {
      if (rest[i] < '0' || rest[i] > '9') digits = false;
      else pid = pid * 10 + (rest[i] - '0');
      if (pid > (1L << 30)) digits = false;
    }
    if (!digits || pid <= 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code rm;
    fs::remove_all(e.path(), rm);
  }
}

void fsync_path(const std::string& path, const std::string& destination, bool directory) {
  int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0)
    throw IoError(destination, "", "cannot open the written file to sync it: " + errno_text(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  // Directories on some file systems refuse fsync (EINVAL): the rename is still atomic there.
  if (rc != 0 && !(directory && (err == EINVAL || err == EROFS)))
    throw IoError(destination, "", "cannot sync the written data to disk (disk full?): " + errno_text(err));
}

void fsync_folder_tree(const std::string& folder, const std::string& destination) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec))
    if (e.is_regular_file(ec)) fsync_path(e.path().string(), destination, false);
  fsync_path(folder, destination, true);
}

std::string normal_path(const std::string& p) {
  std::error_code ec;
  fs::path abs = fs::absolute(p, ec);
  fs::path n = fs::weakly_canonical(abs, ec);
  return (ec ? abs.lexically_normal() : n).string();
}

thread_local OutputSet* t_active = nullptr;

}  // namespace

std::optional<FileIdentity> file_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileIdentity{st.st_dev, st.st_ino};
}

void check_output_target(const std::string& destination, const std::vector<std::string>& inputs,
                         bool folder) {
  if (destination.empty()) throw IoError("", "output path", "no output path given");
  const fs::path dir = parent_of(destination);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw IoError(destination, "", "output directory '" + dir.string() + "' does not exist");
  if (::access(dir.c_str(), W_OK) != 0)
    throw IoError(destination, "", "output directory '" + dir.string() + "' is not writable");
  struct stat st {};
  if (::stat(destination.c_str(), &st) == 0) {
    if (folder) {
      if (!S_ISDIR(st.st_mode))
        throw IoError(destination, "", "exists and is not a folder (an output folder is expected)");
      if (!fs::is_empty(destination, ec))
        throw IoError(destination, "", "output folder exists and is not empty");
    } else if (S_ISDIR(st.st_mode)) {
      throw IoError(destination, "", "output path is a directory");
    } else if (!S_ISREG(st.st_mode)) {
      throw IoError(destination, "",
                    "output path exists and is not a regular file (a device, FIFO or socket): "
                    "only regular files are written");
    }
    for (const auto& in : inputs) {
      auto id = file_identity(in);
      if (id && id->device == st.st_dev && id->inode == st.st_ino)
        throw IoError(destination, "",
                      "output is the same file as the input '" + in + "': refusing to overwrite an input");
    }
  }
}

// ---- AtomicFile ------------------------------------------------------------------------------

struct OutputSet::Impl {
  struct Entry {
    std::string destination, temp, normal;
    bool folder = false;
    int slot = -1;
    bool abandoned = false;
  };
  std::vector<std::string> inputs;
  CancelToken cancel;
  std::vector<Entry> entries;
  bool committed = false;
};

AtomicFile::AtomicFile(std::string destination) : dest_(std::move(destination)) {
  if (dest_.empty()) throw IoError("", "output path", "no output path given");
  // A front end handed a live temporary (or a file inside a temporary folder) to a writer: the
  // temporary's owner commits it, so write it in place (no nested temporary names).
  if (is_live_temp(dest_, false) || is_live_temp(parent_of(dest_).string(), true)) {
    temp_ = dest_;
    mode_ = Mode::InPlace;
    return;
  }
  if (OutputSet* set = OutputSet::active()) {
    temp_ = set->add(dest_);
    mode_ = Mode::InSet;
    set_ = set;
    return;
  }
  check_output_target(dest_);
  sweep_stale_temps(dest_);
  temp_ = temp_name_for(dest_);
  int fd = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) throw IoError(dest_, "", "cannot create output file: " + errno_text(errno));
  ::close(fd);
  slot_ = register_temp(temp_, false);
}

AtomicFile::AtomicFile(AtomicFile&& o) noexcept
    : dest_(std::move(o.dest_)), temp_(std::move(o.temp_)), mode_(o.mode_), done_(o.done_),
      slot_(o.slot_), set_(o.set_) {
  o.done_ = true;
  o.slot_ = -1;
}

AtomicFile::~AtomicFile() {
  if (done_) return;
  if (mode_ == Mode::Standalone) {
    remove_temp(temp_, false);
    unregister_temp(slot_);
  } else if (mode_ == Mode::InSet) {
    // The set removes the temporary; it must not commit a file its writer gave up on.
    if (set_)
      for (auto& e : set_->impl_->entries)
        if (e.temp == temp_) e.abandoned = true;
  }
}

void AtomicFile::commit() {
  if (done_) return;
  if (mode_ != Mode::Standalone) {
    done_ = true;
    return;
  }
  done_ = true;
  try {
    fsync_path(temp_, dest_, false);
    if (std::rename(temp_.c_str(), dest_.c_str()) != 0)
      throw IoError(dest_, "", "cannot move result into place: " + errno_text(errno));
  } catch (...) {
    remove_temp(temp_, false);
    unregister_temp(slot_);
    throw;
  }
  unregister_temp(slot_);
  slot_ = -1;
  fsync_path(parent_of(dest_).string(), dest_, true);
}

void write_text_atomic(const std::string& path, const std::string& text) {
  AtomicFile file(path);
  {
    int fd = ::open(file.temp_path().c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) throw IoError(path, "", "cannot open output file: " + errno_text(errno));
    const char* p = text.data();
    std::size_t left = text.size();
    while (left > 0) {
      ssize_t n = ::write(fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int err = errno;
        ::close(fd);
        throw IoError(path, "", "write failed (disk full?): " + errno_text(err));
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0) throw IoError(path, "", "write failed (disk full?): " + errno_text(errno));
  }
  file.commit();
}

// ---- OutputSet -------------------------------------------------------------------------------

OutputSet::OutputSet(std::vector<std::string> inputs, CancelToken cancel)
    : impl_(std::make_unique<Impl>()) {
  for (auto& in : inputs)
    if (!in.empty()) impl_->inputs.push_back(std::move(in));
  impl_->cancel = std::move(cancel);
}

OutputSet::~OutputSet() {
  if (t_active == this) t_active = nullptr;
  if (impl_->committed) return;
  for (auto& e : impl_->entries) {
    remove_temp(e.temp, e.folder);
    unregister_temp(e.slot);
  }
}

void OutputSet::check(const std::string& destination, bool folder) const {
  check_output_target(destination, impl_->inputs, folder);
  const std::string n = normal_path(destination);
  auto id = file_identity(destination);
  for (const auto& e : impl_->entries)
    if (e.normal == n || (id && id == file_identity(e.destination)))
      throw IoError(destination, "", "is written twice by this job (also as '" + e.destination + "')");
}

std::string OutputSet::add(const std::string& destination, bool folder) {
  if (impl_->committed) throw IoError(destination, "", "internal: output set already committed");
  check(destination, folder);
  Impl::Entry e;
  e.destination = destination;
  e.normal = normal_path(destination);
  e.folder = folder;
  sweep_stale_temps(destination);
  e.temp = temp_name_for(destination);
  if (folder) {
    if (::mkdir(e.temp.c_str(), 0777) != 0)
      throw IoError(destination, "", "cannot create a temporary folder: " + errno_text(errno));
  } else {
    int fd = ::open(e.temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) throw IoError(destination, "", "cannot create output file: " + errno_text(errno));
    ::close(fd);
  }
  e.slot = register_temp(e.temp, folder);
  impl_->entries.push_back(e);
  return e.temp;
}

bool OutputSet::committed() const noexcept { return impl_->committed; }
const std::vector<std::string>& OutputSet::inputs() const noexcept { return impl_->inputs; }
std::vector<std::string> OutputSet::destinations() const {
  std::vector<std::string> out;
  for (const auto& e : impl_->entries) out.push_back(e.destination);
  return out;
}

void OutputSet::commit() {
  if (impl_->committed) return;
  auto& entries = impl_->entries;
  for (const auto& e : entries)
    if (e.abandoned) throw IoError(e.destination, "", "its writer stopped before finishing; nothing was written");
  for (const auto& e : entries) {
    if (e.folder) fsync_folder_tree(e.temp, e.destination);
    else fsync_path(e.temp, e.destination, false);
  }
  // Test hook (tests/cli/test_cli_outputs.cpp): hold the complete temporaries for a while so a
  // signal can be delivered at this point of the write phase deterministically.
  if (const char* d = std::getenv("ALMAGEST_TEST_COMMIT_DELAY_MS"))
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(d)));
  if (impl_->cancel.cancelled()) throw Cancelled();

  // Lock every destination directory (sorted: two sets lock in the same order, no deadlock).
  std::vector<std::string> dirs;
  for (const auto& e : entries) dirs.push_back(normal_path(parent_of(e.destination).string()));
  std::sort(dirs.begin(), dirs.end());
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
  std::vector<int> locks;
  auto unlock = [&] {
    for (int fd : locks) ::close(fd);  // closing releases the flock
    locks.clear();
  };
  for (const auto& d : dirs) {
    int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      unlock();
      throw IoError(d, "", "cannot open the output directory to lock it: " + errno_text(errno));
    }
    while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
    }
    locks.push_back(fd);
  }
  std::vector<std::size_t> renamed;
  try {
    if (impl_->cancel.cancelled()) throw Cancelled();
    for (const auto& e : entries) check_output_target(e.destination, impl_->inputs, e.folder);
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const auto& e = entries[i];
      if (e.folder) ::rmdir(e.destination.c_str());  // an existing empty folder (checked)
      if (std::rename(e.temp.c_str(), e.destination.c_str()) != 0)
        throw IoError(e.destination, "", "cannot move the result into place: " + errno_text(errno));
      renamed.push_back(i);
    }
    for (const auto& d : dirs) fsync_path(d, d, true);
  } catch (...) {
    // Leave none of the set: remove what was already renamed (the temporaries go in ~OutputSet).
    for (std::size_t i : renamed) remove_temp(entries[i].destination, entries[i].folder);
    unlock();
    throw;
  }
  unlock();
  for (auto& e : entries) {
    unregister_temp(e.slot);
    e.slot = -1;
  }
  impl_->committed = true;
}

OutputSet::Scope::Scope(OutputSet& set) : previous_(t_active) { t_active = &set; }
OutputSet::Scope::~Scope() { t_active = previous_; }
OutputSet* OutputSet::active() noexcept { return t_active; }

// ---- signal-time cleanup -----------------------------------------------------------------------

void remove_temp_files_now() noexcept {
  for (auto& s : g_slots) {
    if (s.state.load() != 2) continue;
    if (s.folder) remove_folder_raw(s.path);
    else ::unlink(s.path);
    s.state.store(0);
  }
}

int live_temp_file_count() noexcept {
  int n = 0;
  for (auto& s : g_slots) n += s.state.load() == 2 ? 1 : 0;
  return n;
}

}  // namespace almagest
