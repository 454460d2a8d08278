// Messages between ranks (wire.hpp).
#include "wire.hpp"

#include <stdexcept>

#include "almagest/core/error.hpp"

namespace almagest::dist::wire {

void Outbox::send(int dest, int tag, std::string bytes) {
  pending_.emplace_back(MPI_REQUEST_NULL, std::move(bytes));
  auto& [req, buf] = pending_.back();
  MPI_Isend(buf.data(), static_cast<int>(buf.size()), MPI_BYTE, dest, tag, MPI_COMM_WORLD, &req);
  poll();
}

void Outbox::send_bytes(int dest, int tag, const void* data, std::size_t n) {
  send(dest, tag, std::string(static_cast<const char*>(data), n));
}

void Outbox::poll() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    int done = 0;
    MPI_Test(&it->first, &done, MPI_STATUS_IGNORE);
    it = done ? pending_.erase(it) : std::next(it);
  }
}

void Outbox::wait_all() {
  for (auto& [req, buf] : pending_) MPI_Wait(&req, MPI_STATUS_IGNORE);
  pending_.clear();
}

Outbox::~Outbox() { wait_all(); }

std::string receive(int source, int tag, int* from) {
  MPI_Status st;
  MPI_Probe(source, tag, MPI_COMM_WORLD, &st);
  int n = 0;
  MPI_Get_count(&st, MPI_BYTE, &n);
  std::string out(static_cast<std::size_t>(n), '\0');
  MPI_Recv(out.data(), n, MPI_BYTE, st.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (from) *from = st.MPI_SOURCE;
  return out;
}

bool try_receive(int tag, std::string& out, int* from) {
  int flag = 0;
  MPI_Status st;
  MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, &st);
  if (!flag) return false;
  out = receive(st.MPI_SOURCE, tag, from);
  return true;
}

nlohmann::json outcome_to_json(const jobs::Outcome& o) {
  nlohmann::json j{{"engine", o.engine}, {"operation", o.operation}, {"inputs", o.inputs}, {"outputs", o.outputs},
                   {"summary", o.summary}, {"backend", o.backend}, {"device", o.device}, {"threads", o.threads},
                   {"timings_s", o.timings_s}, {"skipped", o.skipped}};
  if (o.plan) {
    const auto& p = *o.plan;
    nlohmann::json in = nlohmann::json::array();
    for (const auto& i : p.inputs) in.push_back({{"path", i.path}, {"bytes", i.bytes}, {"what", i.what}});
    j["plan"] = {{"inputs", in}, {"outputs", p.outputs}, {"host_bytes", p.host_bytes}, {"device_bytes", p.device_bytes},
                 {"tiling", p.tiling}, {"estimated_seconds", p.estimated_seconds}, {"notes", p.notes}};
  }
  return j;
}

jobs::Outcome outcome_from_json(const nlohmann::json& j) {
  jobs::Outcome o;
  o.engine = j.value("engine", "");
  o.operation = j.value("operation", "");
  o.inputs = j.value("inputs", std::vector<std::string>{});
  o.outputs = j.value("outputs", std::vector<std::string>{});
  o.summary = j.value("summary", std::vector<std::string>{});
  o.backend = j.value("backend", "");
  o.device = j.value("device", "");
  o.threads = j.value("threads", 0);
  o.timings_s = j.value("timings_s", std::map<std::string, double>{});
  o.skipped = j.value("skipped", false);
  if (j.contains("plan")) {
    const auto& p = j["plan"];
    jobs::PlanReport r;
    for (const auto& i : p["inputs"]) r.inputs.push_back({i.value("path", ""), i.value("bytes", std::uint64_t{0}), i.value("what", "")});
    r.outputs = p.value("outputs", std::vector<std::string>{});
    r.host_bytes = p.value("host_bytes", 0.0);
    r.device_bytes = p.value("device_bytes", 0.0);
    r.tiling = p.value("tiling", "");
    r.estimated_seconds = p.value("estimated_seconds", 0.0);
    r.notes = p.value("notes", std::vector<std::string>{});
    o.plan = std::move(r);
  }
  return o;
}

namespace {
/// The part of what() after the "file: field: " (or "field: ") prefix the exception adds.
std::string inner(const std::string& what, const std::string& prefix) {
  return !prefix.empty() && what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what;
}
std::string prefix_of(const std::string& a, const std::string& b) {
  std::string s = a;
  if (!b.empty()) s += (s.empty() ? "" : ": ") + b;
  return s.empty() ? s : s + ": ";
}
}  // namespace

nlohmann::json exception_to_json(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const Cancelled&) {
    return {{"kind", "cancelled"}};
  } catch (const ConfigError& x) {
    return {{"kind", "config"}, {"field", x.field()}, {"what", inner(x.what(), prefix_of("", x.field()))}};
  } catch (const IoError& x) {
    return {{"kind", "io"}, {"file", x.file()}, {"field", x.field()}, {"what", inner(x.what(), prefix_of(x.file(), x.field()))}};
  } catch (const BackendUnavailable& x) {
    return {{"kind", "backend"}, {"what", x.what()}};
  } catch (const CudaError& x) {
    return {{"kind", "cuda"}, {"what", x.what()}};
  } catch (const Error& x) {
    return {{"kind", "error"}, {"what", x.what()}};
  } catch (const std::bad_alloc&) {
    return {{"kind", "bad_alloc"}};
  } catch (const std::exception& x) {
    return {{"kind", "other"}, {"what", x.what()}};
  } catch (...) {
    return {{"kind", "other"}, {"what", "unknown exception"}};
  }
}

std::exception_ptr exception_from_json(const nlohmann::json& j) {
  const std::string kind = j.value("kind", "other"), what = j.value("what", "");
  if (kind == "cancelled") return std::make_exception_ptr(Cancelled());
  if (kind == "config") return std::make_exception_ptr(ConfigError(j.value("field", ""), what));
  if (kind == "io") return std::make_exception_ptr(IoError(j.value("file", ""), j.value("field", ""), what));
  if (kind == "backend") return std::make_exception_ptr(BackendUnavailable(what));
  if (kind == "cuda") return std::make_exception_ptr(CudaError(what));
  if (kind == "error") return std::make_exception_ptr(Error(what));
  if (kind == "bad_alloc") return std::make_exception_ptr(std::bad_alloc());
  return std::make_exception_ptr(std::runtime_error(what));
}

}  // namespace almagest::dist::wire
