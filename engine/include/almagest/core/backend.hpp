#pragma once
// The one backend type of every engine (docs/design.md, "Backends"): what a user asks for
// (cpu, cuda, cuda:N, auto) and what it resolves to, with the one Auto policy.
//
// Auto policy: the CUDA backend on device `device` (default 0) when the CUDA module loads and
// that device is usable (almagest::gpu_status()), otherwise the CPU backend; the reason for the
// CPU is kept (`note`) and goes into the log and the provenance. Cuda without a usable device is
// BackendUnavailable naming why; there is never a silent fallback for an explicit request.
#include <string>
#include <string_view>

namespace almagest {

enum class BackendKind { Cpu, Cuda, Auto };

struct BackendChoice {
  BackendKind kind = BackendKind::Cpu;
  int device = 0;          ///< CUDA device index (cuda:N; auto uses it when the GPU is taken)
  bool operator==(const BackendChoice&) const = default;
};

/// "cpu", "cuda", "cuda:N" (N in 0..63) or "auto". Throws ConfigError(field, ...) otherwise.
BackendChoice parse_backend(std::string_view text, const std::string& field = "backend");
/// "cpu", "cuda", "cuda:1", "auto" (cuda:0 prints as "cuda").
std::string to_string(const BackendChoice& b);

/// A choice after the Auto policy: kind is Cpu or Cuda.
struct ResolvedBackend {
  BackendKind kind = BackendKind::Cpu;
  int device = 0;
  std::string note;        ///< why Auto chose the CPU ("" otherwise)
  bool cuda() const noexcept { return kind == BackendKind::Cuda; }
};

/// Applies the Auto policy; Cuda is checked (BackendUnavailable with gpu_status()'s reason, or
/// "device N not present" when the index is beyond the devices found).
ResolvedBackend resolve_backend(const BackendChoice& choice);

}  // namespace almagest
