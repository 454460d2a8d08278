#pragma once
// The JSON-lines run log (`almagest-cli run --log-json FILE`, docs/jobs.md): one JSON object per
// line, appended and written with one write(2) per line as the run goes, so a tail -f, a
// scheduler or a crashed run's post-mortem sees every line already emitted. A log is a stream:
// it is appended to (a resumed run continues the same file) and never replaced.
//
//   {"event":"member","job":"mocks","member":3,"of":5,"name":"mock_3","outcome":"written",...}
#include <chrono>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace almagest::jobs {

class JsonLog {
public:
  JsonLog() = default;
  /// Opens (creating, appending to) `path`. Throws IoError naming it.
  explicit JsonLog(const std::string& path);
  ~JsonLog();
  JsonLog(const JsonLog&) = delete;
  JsonLog& operator=(const JsonLog&) = delete;

  bool enabled() const noexcept { return fd_ >= 0; }
  const std::string& path() const noexcept { return path_; }
  /// Seconds since the log was opened.
  double elapsed() const;
  /// Writes `record` (an object) with "t" (elapsed seconds) added, as one line. A failed write
  /// (disk full) is remembered and reported by ok(); the run goes on.
  void write(const nlohmann::json& record);
  bool ok() const noexcept { return ok_; }

private:
  int fd_ = -1;
  bool ok_ = true;
  std::string path_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace almagest::jobs
