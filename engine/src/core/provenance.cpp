#include "almagest/core/provenance.hpp"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>

#include "almagest/core/version_info.hpp"

namespace almagest {

std::string version() { return ALMAGEST_VERSION_STRING; }

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto pos = line.find(':');
      if (pos != std::string::npos) {
        auto s = line.substr(pos + 1);
        auto b = s.find_first_not_of(" \t");
        return b == std::string::npos ? s : s.substr(b);
      }
    }
  }
  return "unknown CPU";
}

Provenance Provenance::current(std::string backend) {
  Provenance p;
  p.version = almagest::version();
  p.build = std::string(ALMAGEST_BUILD_TYPE) + ", " + ALMAGEST_COMPILER;
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  p.created_utc = buf;
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) == 0) p.host = host;
  p.backend = std::move(backend);
  if (p.backend == "cpu") p.device = cpu_model_name();
  return p;
}

std::string Provenance::to_json() const {
  nlohmann::json j;
  j["software"] = software;
  j["version"] = version;
  j["build"] = build;
  j["created_utc"] = created_utc;
  j["host"] = host;
  j["backend"] = backend;
  j["device"] = device;
  j["threads"] = threads;
  if (!config_json.empty()) {
    auto parsed = nlohmann::json::parse(config_json, nullptr, false);
    j["config"] = parsed.is_discarded() ? nlohmann::json(config_json) : parsed;
  }
  j["inputs"] = inputs;
  j["seeds"] = seeds;
  j["timings_s"] = timings_s;
  return j.dump();
}

}  // namespace almagest
