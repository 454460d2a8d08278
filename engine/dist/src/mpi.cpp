// The MPI session (almagest/dist/mpi.hpp).
#include "almagest/dist/mpi.hpp"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace almagest::dist {

namespace {
bool g_active = false;
// The session's own stages for the trace (trace_enabled), in seconds since the epoch: benchmarks
// line them up with the shell's `date +%s.%N` around mpirun (launch, MPI_Init, MPI_Finalize).
double g_entered = 0, g_initialised = 0;
bool g_serialized = false;
int g_rank = 0, g_size = 1;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

/// GPUs visible to this process without loading CUDA: CUDA_VISIBLE_DEVICES's entries when set,
/// else the NVIDIA driver's device nodes.
std::vector<std::string> visible_gpus() {
  std::vector<std::string> ids;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) {
    std::string s = v, cur;
    for (char c : s + ",") {
      if (c == ',') {
        if (!cur.empty()) ids.push_back(cur);
        cur.clear();
      } else if (c != ' ') {
        cur += c;
      }
    }
    return ids;
  }
  std::error_code ec;
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    (void)e;
    ++n;
  }
  for (int i = 0; i < n; ++i) ids.push_back(std::to_string(i));
  return ids;
}
}  // namespace

bool launched_by_mpirun() {
  return !env("OMPI_COMM_WORLD_SIZE").empty() || !env("PMIX_RANK").empty() || !env("PMI_RANK").empty() ||
         !env("PMI_SIZE").empty();
}

Session::Session(int* argc, char*** argv) {
  if (!launched_by_mpirun()) return;
  g_entered = epoch_seconds();
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
  g_serialized = provided >= MPI_THREAD_SERIALIZED;
  // Errors come back as codes (checked where it matters) instead of aborting inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  g_active = true;
  g_initialised = epoch_seconds();
}

Session::~Session() {
  if (!g_active) return;
  const double finalising = epoch_seconds();
  MPI_Finalize();
  g_active = false;
  if (trace_enabled())
    std::fprintf(stderr, "mpi rank %d/%d: session entered at %.6f, MPI_Init %.3f s, MPI_Finalize from %.6f, %.3f s\n", g_rank,
                 g_size, g_entered, g_initialised - g_entered, finalising, epoch_seconds() - finalising);
}

bool trace_enabled() {
  const char* v = std::getenv("ALMAGEST_SPLIT_TRACE");
  return v && *v && std::string(v) != "0";
}

double epoch_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool active() { return g_active; }
bool threads_serialized() { return g_serialized; }
int rank() { return g_rank; }
int size() { return g_size; }

int local_rank() {
  const std::string v = env("OMPI_COMM_WORLD_LOCAL_RANK");
  if (!v.empty()) return std::atoi(v.c_str());
  const std::string m = env("MPI_LOCALRANKID");
  return m.empty() ? g_rank : std::atoi(m.c_str());
}

std::string select_device(const std::vector<std::string>& devices) {
  const std::vector<std::string> gpus = visible_gpus();
  std::string pick;
  if (!devices.empty()) {
    pick = devices[static_cast<std::size_t>(g_rank) % devices.size()];
  } else {
    if (gpus.empty()) return "";
    pick = std::to_string(static_cast<std::size_t>(local_rank()) % gpus.size());
  }
  if (pick == "cpu") {
    ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
    return "cpu";
  }
  // An index into what is visible (CUDA_VISIBLE_DEVICES may already hold a list or UUIDs).
  const std::size_t k = static_cast<std::size_t>(std::atoi(pick.c_str()));
  const std::string id = k < gpus.size() ? gpus[k] : pick;
  ::setenv("CUDA_VISIBLE_DEVICES", id.c_str(), 1);
  return "cuda " + pick;
}

int agree_exit_code(int code) {
  if (!g_active || g_size == 1) return code;
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return code;
}

void abort_all(int code) {
  if (g_active) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace almagest::dist
