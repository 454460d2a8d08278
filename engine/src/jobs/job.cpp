// The job layer's engine registry and the file checks every front end shares.
#include "almagest/jobs/job.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "registry.hpp"

namespace almagest::jobs {

namespace fs = std::filesystem;

const std::vector<EngineEntry>& engines() {
  static const std::vector<EngineEntry> all = registered_engines();
  return all;
}

const EngineEntry* find_engine(const std::string& name) {
  for (const auto& e : engines())
    if (e.name == name) return &e;
  return nullptr;
}

std::unique_ptr<Job> make_job(const JobRequest& request) {
  const EngineEntry* e = find_engine(request.engine);
  if (!e) {
    std::string names;
    for (const auto& x : engines()) names += (names.empty() ? "" : ", ") + x.name;
    throw ConfigError(request.label + "engine", "unknown engine '" + request.engine + "' (allowed: " + names + ")");
  }
  return e->make(request);
}

void check_job_files(const Job& job, const std::string& label) {
  const auto inputs = job.input_paths();
  for (const auto& in : inputs) {
    struct stat st {};
    if (::stat(in.c_str(), &st) != 0)
      throw IoError(in, "", label + (errno == ENOENT ? "input file does not exist" : std::string("cannot read: ") + std::strerror(errno)));
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
      throw IoError(in, "", label + "input is not a regular file (a device, FIFO or socket)");
    if (::access(in.c_str(), R_OK) != 0) throw IoError(in, "", label + "input is not readable");
  }
  OutputSet probe(inputs);
  std::vector<std::string> seen;
  for (const auto& out : job.output_paths()) {
    try {
      probe.check(out);
    } catch (const IoError& e) {
      throw IoError(out, "", label + e.what());
    }
    std::error_code ec;
    const std::string n = fs::weakly_canonical(fs::absolute(out), ec).string();
    for (const auto& s : seen)
      if (s == n) throw ConfigError(label + "output", "'" + out + "' is written twice by this job");
    seen.push_back(n);
  }
}

}  // namespace almagest::jobs
