#pragma once
// The MPI session of almagest-cli (docs/mpi.md). MPI is initialised only when the process was
// started by mpirun/mpiexec (their environment variables), so a build with MPI still runs as
// one plain process without it.
#include <string>
#include <vector>

namespace almagest::dist {

/// True when mpirun/mpiexec (Open MPI, PMIx or PMI launchers) started this process.
bool launched_by_mpirun();

/// MPI_Init_thread (serialised: the engine's worker threads report progress one at a time) when
/// launched by mpirun; MPI_Finalize at the end. Without mpirun: rank 0 of 1, nothing initialised.
class Session {
public:
  Session(int* argc, char*** argv);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
};

bool active();        ///< MPI initialised (launched by mpirun)
/// The library gave MPI_THREAD_SERIALIZED (any thread may call MPI, one at a time): the split
/// N-point job's hand-out thread needs it.
bool threads_serialized();
int rank();           ///< 0 without MPI
int size();           ///< 1 without MPI
int local_rank();     ///< rank among the processes of this host (OMPI_COMM_WORLD_LOCAL_RANK)

/// Chooses this rank's GPU before anything loads CUDA: `devices` (from --devices: "0", "1",
/// "cpu", one per rank, used modulo their count) or else local rank modulo the visible device
/// count. Sets CUDA_VISIBLE_DEVICES to that one device ("" for "cpu": the rank runs on the CPU).
/// Returns what it chose ("cuda 1", "cpu", "" when nothing was changed: no GPU visible).
std::string select_device(const std::vector<std::string>& devices);

/// ALMAGEST_SPLIT_TRACE is set (and not "0"): the split's and the session's stages go to stderr
/// (docs/mpi.md).
bool trace_enabled();
/// Seconds since the epoch (the trace's times, comparable with `date +%s.%N`).
double epoch_seconds();

/// Rank 0's exit code, on every rank (collective).
int agree_exit_code(int code);

/// Ends every rank at once with `code` (after a failure inside a collective step that the other
/// ranks cannot leave on their own).
[[noreturn]] void abort_all(int code);

}  // namespace almagest::dist
