// The JSON-lines run log (almagest/jobs/log.hpp).
#include "almagest/jobs/log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "almagest/core/error.hpp"

namespace almagest::jobs {

JsonLog::JsonLog(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0644);
  if (fd_ < 0) throw IoError(path, "", std::string("cannot open the JSON log: ") + std::strerror(errno));
}

JsonLog::~JsonLog() {
  if (fd_ >= 0) ::close(fd_);
}

double JsonLog::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void JsonLog::write(const nlohmann::json& record) {
  if (fd_ < 0) return;
  nlohmann::json j = record;
  j["t"] = std::round(elapsed() * 1000.0) / 1000.0;
  // Invalid UTF-8 in a message (a file name) is replaced rather than thrown on.
  const std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  // One write per line (O_APPEND): lines of concurrent writers never interleave mid-line.
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok_ = false;
      return;
    }
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace almagest::jobs
