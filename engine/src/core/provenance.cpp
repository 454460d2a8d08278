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
  if (!backend_note.empty()) j["backend_note"] = backend_note;
  j["threads"] = threads;
  if (!config_json.empty()) {
    auto parsed = nlohmann::json::parse(config_json, nullptr, false);
    j["config"] = parsed.is_discarded() ? nlohmann::json(config_json) : parsed;
  }
  j["inputs"] = inputs;
  if (!input_hashes.empty()) j["input_hashes"] = input_hashes;
  j["seeds"] = seeds;
  j["timings_s"] = timings_s;
  return j.dump();
}

Provenance Provenance::from_json(const std::string& text) {
  Provenance p;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return p;
  auto str = [&](const char* key, std::string& out) {
    if (auto it = j.find(key); it != j.end() && it->is_string()) out = it->get<std::string>();
  };
  str("software", p.software);
  str("version", p.version);
  str("build", p.build);
  str("created_utc", p.created_utc);
  str("host", p.host);
  str("backend", p.backend);
  str("device", p.device);
  str("backend_note", p.backend_note);
  if (auto it = j.find("threads"); it != j.end() && it->is_number_integer()) p.threads = it->get<int>();
  if (auto it = j.find("config"); it != j.end())
    p.config_json = it->is_string() ? it->get<std::string>() : it->dump();
  if (auto it = j.find("inputs"); it != j.end() && it->is_array())
    for (const auto& v : *it)
      if (v.is_string()) p.inputs.push_back(v.get<std::string>());
  if (auto it = j.find("input_hashes"); it != j.end() && it->is_object())
    for (const auto& [k, v] : it->items())
      if (v.is_string()) p.input_hashes[k] = v.get<std::string>();
  if (auto it = j.find("seeds"); it != j.end() && it->is_object())
    for (const auto& [k, v] : it->items())
      if (v.is_number_unsigned() || v.is_number_integer()) p.seeds[k] = v.get<std::uint64_t>();
  if (auto it = j.find("timings_s"); it != j.end() && it->is_object())
    for (const auto& [k, v] : it->items())
      if (v.is_number()) p.timings_s[k] = v.get<double>();
  return p;
}

}  // namespace almagest
