// Run-time loading of the CUDA module (dlopen) and the cached device status.
#include "almagest/core/gpu.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <list>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "almagest/core/error.hpp"

#ifndef ALMAGEST_CUDA_MODULE_NAME
#define ALMAGEST_CUDA_MODULE_NAME "libalmagest_cuda.so"
#endif

namespace almagest {
namespace {

namespace fs = std::filesystem;

struct Loaded {
  void* handle = nullptr;
  kernels::CudaModule* module = nullptr;
  std::string path;
};

/// Directory of the running executable (from /proc/self/exe), empty if unknown.
std::string exe_dir() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  return p.parent_path().string();
}

/// Tries to dlopen one candidate. Returns the handle or null and appends what went wrong.
void* try_open(const std::string& candidate, bool is_path, std::vector<std::string>& notes) {
  if (is_path) {
    std::error_code ec;
    if (!fs::exists(candidate, ec)) {
      notes.push_back("not found at " + candidate);
      return nullptr;
    }
  }
  dlerror();
  void* h = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    notes.push_back("dlopen(" + candidate + ") failed: " + (e ? e : "unknown error"));
  }
  return h;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

/// Loads the module once per process (it is never unloaded: CudaModule lives with the library).
/// Returns the module or null with `reason` set.
Loaded load_module(std::string& reason) {
  const std::string name = ALMAGEST_CUDA_MODULE_NAME;
  std::vector<std::pair<std::string, bool>> candidates;  // (candidate, is a path)
  if (const char* env = std::getenv("ALMAGEST_CUDA_MODULE"); env && *env)
    candidates.emplace_back(env, true);
  const std::string dir = exe_dir();
  if (!dir.empty()) {
    candidates.emplace_back((fs::path(dir) / name).string(), true);
    candidates.emplace_back((fs::path(dir) / ".." / "lib" / "almagest" / name).lexically_normal().string(), true);
  }
  candidates.emplace_back(name, false);  // the dynamic loader's default search

  std::vector<std::string> notes;
  Loaded out;
  for (const auto& [cand, is_path] : candidates) {
    void* h = try_open(cand, is_path, notes);
    if (!h) continue;
    dlerror();
    void* sym = dlsym(h, "almagest_cuda_module_v1");
    if (!sym) {
      const char* e = dlerror();
      notes.push_back(cand + " does not export almagest_cuda_module_v1 (" + (e ? e : "?") + ")");
      dlclose(h);
      continue;
    }
    auto fn = reinterpret_cast<almagest_cuda_module_fn>(sym);
    kernels::CudaModule* m = nullptr;
    try {
      m = fn();
    } catch (...) {
      m = nullptr;
    }
    if (!m) {
      notes.push_back(cand + ": almagest_cuda_module_v1() returned no module");
      continue;  // keep it loaded: it may hold state
    }
    if (m->abi_version() != kernels::kAbiVersion) {
      notes.push_back(cand + " has ABI version " + std::to_string(m->abi_version()) +
                      ", this program needs " + std::to_string(kernels::kAbiVersion) +
                      " (module and program are from different builds)");
      continue;
    }
    out.handle = h;
    out.module = m;
    if (is_path) {
      out.path = cand;
    } else {
      // Where the loader found it.
      Dl_info info{};
      out.path = (dladdr(sym, &info) && info.dli_fname) ? info.dli_fname : cand;
    }
    return out;
  }
  reason = "CUDA module " + name + " could not be loaded: " + join(notes, "; ");
  return out;
}

struct State {
  std::mutex mu;
  bool tried = false;
  Loaded loaded;
  std::string load_reason;
  std::list<GpuStatus> history;  // references handed out stay valid after a refresh
};

State& state() {
  static State s;
  return s;
}

std::string gib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

}  // namespace

std::string GpuStatus::summary() const {
  if (!available || query.devices.empty())
    return "no GPU: " + (reason.empty() ? std::string("unknown reason") : reason);
  std::string s;
  for (std::size_t i = 0; i < query.devices.size(); ++i) {
    const auto& d = query.devices[i];
    if (i) s += ", ";
    s += d.name + " (sm_" + std::to_string(d.cc_major) + std::to_string(d.cc_minor) + ", " +
         gib(d.total_memory) + ")";
  }
  return s;
}

const GpuStatus& gpu_status(bool refresh) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (!st.history.empty() && !refresh) return st.history.back();
  GpuStatus s;
  try {
    if (!st.loaded.module && (!st.tried || refresh)) {  // retry a failed load on refresh
      st.tried = true;
      st.loaded = load_module(st.load_reason);
    }
    if (!st.loaded.module) {
      s.reason = st.load_reason;
    } else {
      s.module_path = st.loaded.path;
      s.query = st.loaded.module->query();
      s.available = s.query.ok && !s.query.devices.empty();
      if (!s.available)
        s.reason = s.query.reason.empty() ? std::string("no usable CUDA device") : s.query.reason;
    }
  } catch (const std::exception& e) {
    s.available = false;
    s.reason = std::string("GPU status query failed: ") + e.what();
  } catch (...) {
    s.available = false;
    s.reason = "GPU status query failed with an unknown exception";
  }
  st.history.push_back(std::move(s));
  return st.history.back();
}

kernels::CudaModule& cuda_module() {
  const GpuStatus& s = gpu_status();
  if (!s.available) throw BackendUnavailable("CUDA backend unavailable: " + s.reason);
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  return *st.loaded.module;
}

}  // namespace almagest
