#include "almagest/core/backend.hpp"

#include <charconv>

#include "almagest/core/error.hpp"
#include "almagest/core/gpu.hpp"

namespace almagest {

BackendChoice parse_backend(std::string_view text, const std::string& field) {
  if (text == "cpu") return {BackendKind::Cpu, 0};
  if (text == "auto") return {BackendKind::Auto, 0};
  if (text == "cuda") return {BackendKind::Cuda, 0};
  if (text.rfind("cuda:", 0) == 0) {
    const std::string_view n = text.substr(5);
    int d = -1;
    auto r = std::from_chars(n.data(), n.data() + n.size(), d);
    if (!n.empty() && r.ec == std::errc() && r.ptr == n.data() + n.size() && d >= 0 && d < 64)
      return {BackendKind::Cuda, d};
  }
  throw ConfigError(field, "unknown backend '" + std::string(text) + "' (allowed: cpu, cuda, cuda:N with N in 0..63, auto)");
}

std::string to_string(const BackendChoice& b) {
  switch (b.kind) {
    case BackendKind::Cpu: return "cpu";
    case BackendKind::Auto: return "auto";
    case BackendKind::Cuda: break;
  }
  return b.device == 0 ? "cuda" : "cuda:" + std::to_string(b.device);
}

ResolvedBackend resolve_backend(const BackendChoice& choice) {
  if (choice.kind == BackendKind::Cpu) return {BackendKind::Cpu, 0, ""};
  const GpuStatus& g = gpu_status();
  const int found = g.available ? static_cast<int>(g.query.devices.size()) : 0;
  if (choice.kind == BackendKind::Auto) {
    if (!g.available) return {BackendKind::Cpu, 0, "auto chose the CPU: " + (g.reason.empty() ? std::string("no usable GPU") : g.reason)};
    if (choice.device >= found)
      return {BackendKind::Cpu, 0, "auto chose the CPU: device " + std::to_string(choice.device) + " not present (" + std::to_string(found) + " found)"};
    return {BackendKind::Cuda, choice.device, ""};
  }
  if (!g.available) throw BackendUnavailable("backend cuda: " + (g.reason.empty() ? std::string("no usable GPU") : g.reason));
  if (choice.device >= found)
    throw BackendUnavailable("backend cuda:" + std::to_string(choice.device) + ": device not present (" + std::to_string(found) + " found)");
  return {BackendKind::Cuda, choice.device, ""};
}

}  // namespace almagest
