#pragma once
// Internal: what ranks send each other (JSON text over MPI), and exceptions across ranks.
#include <mpi.h>

#include <exception>
#include <list>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "almagest/jobs/job.hpp"

namespace almagest::dist::wire {

constexpr int kTagEvent = 101;   // worker -> rank 0: member events (JSON)
constexpr int kTagChain = 102;   // split job: running totals along the ranks
constexpr int kTagDegrees = 103; // split job: degree slices
constexpr int kTagLists = 107;   // split job: neighbour lists between degree slices

/// Non-blocking sends whose buffers live until they complete.
class Outbox {
public:
  void send(int dest, int tag, std::string bytes);
  void send_bytes(int dest, int tag, const void* data, std::size_t n);
  void poll();        ///< frees completed sends
  void wait_all();
  ~Outbox();

private:
  std::list<std::pair<MPI_Request, std::string>> pending_;
};

/// A received message as text (blocking receive of one probed message).
std::string receive(int source, int tag, int* from = nullptr);
/// Like receive, only when one is waiting (false: none).
bool try_receive(int tag, std::string& out, int* from);

nlohmann::json outcome_to_json(const jobs::Outcome& o);
jobs::Outcome outcome_from_json(const nlohmann::json& j);

/// The exception as data: its kind, file, field and message.
nlohmann::json exception_to_json(std::exception_ptr e);
/// The same exception again (ConfigError, IoError, Cancelled, BackendUnavailable, CudaError,
/// Error; anything else as std::runtime_error).
std::exception_ptr exception_from_json(const nlohmann::json& j);

}  // namespace almagest::dist::wire
