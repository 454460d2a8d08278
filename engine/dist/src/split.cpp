// One plain N-point job over every rank (split.hpp): MPI exchanges for npcf::HubPartition.
#include "split.hpp"

#include <mpi.h>

#include <chrono>
#include <atomic>
#include <functional>
#include <mutex>
#include <thread>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <type_traits>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/backend.hpp"
#include "almagest/core/error.hpp"
#include "almagest/dist/mpi.hpp"
#include "almagest/npcf/partition.hpp"
#include "almagest/stack/row_partition.hpp"
#include "wire.hpp"

namespace almagest::dist {

namespace {

using Clock = std::chrono::steady_clock;

std::string text_value(const schema::Values& v, const std::string& key) {
  auto it = v.find(key);
  if (it == v.end()) return {};
  if (auto s = std::get_if<std::string>(&it->second)) return *s;
  return {};
}

std::vector<npcf::Statistic> statistics_of(const jobs::Job& job) {
  std::vector<npcf::Statistic> out;
  std::string op = job.operation() + ",", cur;
  for (char c : op) {
    if (c == ',') {
      if (!cur.empty()) out.push_back(npcf::statistic_from_string(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

std::vector<std::uint8_t> receive_bytes(int source, int tag) {
  MPI_Status st;
  MPI_Probe(source, tag, MPI_COMM_WORLD, &st);
  int n = 0;
  MPI_Get_count(&st, MPI_BYTE, &n);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(n));
  MPI_Recv(out.data(), n, MPI_BYTE, source, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return out;
}

/// A failing rank's exception, to rank 0 (run_split's agreements).
constexpr int kTagSplitError = 104;

std::vector<std::uint8_t> to_bytes(const std::string& s) { return {s.begin(), s.end()}; }

void send_bytes(const std::vector<std::uint8_t>& b, int dest, int tag) {
  // A running total is far below 2 GiB (the counting tables of one statistic).
  if (b.size() > static_cast<std::size_t>(INT32_MAX)) throw Error("running total too large for one MPI message");
  MPI_Send(b.data(), static_cast<int>(b.size()), MPI_BYTE, dest, tag, MPI_COMM_WORLD);
}

/// Whether the job's backend resolves to CUDA on this rank (default cpu); nullopt when it does
/// not resolve (the job's own run reports the backend problem).
std::optional<bool> runs_on_gpu(const jobs::Job& job) {
  const schema::Values v = job.values();
  try {
    return resolve_backend(parse_backend(text_value(v, "backend").empty() ? "cpu" : text_value(v, "backend"))).cuda();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}


/// Claims of chunks, rank > 0 to rank 0, and the grants back (the chunk, -1 when none is
/// left): tags by pass (consecutive passes apart), kTagClaim + 2 (pass mod 32), grant + 1.
constexpr int kTagClaim = 200;
int claim_tag(int pass) { return kTagClaim + 2 * (pass % 32); }

/// The hand-out of a split N-point job's chunks (npcf::ChunkLedger, npcf/partition.hpp (c)) over
/// MPI, and the ranks' agreements. Rank 0 keeps the ledger; its counting threads claim from it
/// directly and a thread of its own answers the other ranks' claims while rank 0 counts
/// (polling, so that it takes next to nothing from rank 0's counting; rank 0's other threads
/// make no MPI call meanwhile: MPI_THREAD_SERIALIZED). A rank's counting threads claim one at a
/// time. An agreement (MIN over ranks of "the rank that failed, else K") is non-blocking on
/// rank 0, which answers every claim that comes meanwhile -- from the ledger (the others may
/// still have chunks when rank 0 has none), with -1 once it is closed or for the next pass --:
/// a rank that fails, in a pass or between passes, never leaves another waiting for a chunk.
class HandOut {
public:
  HandOut(int me, int ranks) : me_(me), ranks_(ranks) {}
  ~HandOut() { stop_server(); }
  HandOut(const HandOut&) = delete;
  HandOut& operator=(const HandOut&) = delete;

  void begin(const npcf::PassShare& share) {
    ++pass_;
    exhausted_ = false;
    nchunks_ = share.first.back();
    if (me_ != 0) return;
    ledger_.emplace(share);
    stop_ = false;
    if (ranks_ > 1) server_ = std::thread([this] { serve(); });
  }

  std::int64_t claim() {
    if (me_ == 0) {
      std::lock_guard<std::mutex> lock(ledger_mu_);
      return ledger_->claim(0);
    }
    std::lock_guard<std::mutex> lock(claim_mu_);
    if (exhausted_) return -1;
    std::int64_t chunk = -1;
    const int tag = claim_tag(pass_);
    MPI_Send(&chunk, 1, MPI_INT64_T, 0, tag, MPI_COMM_WORLD);
    MPI_Recv(&chunk, 1, MPI_INT64_T, 0, tag + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (chunk < 0) exhausted_ = true;
    return chunk;
  }

  /// This rank stops counting with an error: rank 0 hands nothing out any more (its agreement
  /// answers the claims that come); another rank claims nothing more.
  void leave() {
    if (me_ == 0) {
      {
        std::lock_guard<std::mutex> lock(ledger_mu_);
        if (ledger_) ledger_->close();
      }
      stop_server();
      return;
    }
    std::lock_guard<std::mutex> lock(claim_mu_);
    exhausted_ = true;
  }

  /// The agreement: the lowest `mine` over the ranks. `failed`: this rank failed (rank 0 then
  /// also answers claims of the next pass, which the others may have begun).
  int agree(int mine, bool failed) {
    stop_server();
    int first = ranks_;
    MPI_Request req;
    MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req);
    if (me_ != 0 || ranks_ == 1) {
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      return first;
    }
    for (;;) {
      int done = 0;
      MPI_Test(&req, &done, MPI_STATUS_IGNORE);
      if (done) return first;
      bool any = answer(claim_tag(pass_), true);
      if (failed) any = answer(claim_tag(pass_ + 1), false) || any;
      if (!any) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  /// Who counted each chunk, on every rank (after the agreement `check`).
  std::vector<std::int32_t> end(const std::function<void()>& check) {
    check();
    std::vector<std::int32_t> owners(nchunks_, -1);
    if (me_ == 0) owners = ledger_->owners();
    ALMAGEST_ASSERT(owners.size() == nchunks_, "hand-out: owners of another pass");
    if (nchunks_ > static_cast<std::uint64_t>(INT32_MAX)) throw Error("hand-out: more chunks than one MPI message holds");
    MPI_Bcast(owners.data(), static_cast<int>(owners.size()), MPI_INT32_T, 0, MPI_COMM_WORLD);
    if (me_ == 0) ledger_.reset();
    return owners;
  }

private:
  /// Rank 0: answers one waiting claim of `tag` from the ledger (`ledger`, while it is kept: a
  /// rank may still have chunks of its own when rank 0 has none), else with -1; false: none
  /// waiting.
  bool answer(int tag, bool ledger) {
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, &st);
    if (!flag) return false;
    std::int64_t chunk = -1;
    MPI_Recv(&chunk, 1, MPI_INT64_T, st.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    chunk = -1;
    if (ledger) {
      std::lock_guard<std::mutex> lock(ledger_mu_);
      if (ledger_) chunk = ledger_->claim(st.MPI_SOURCE);
    }
    MPI_Send(&chunk, 1, MPI_INT64_T, st.MPI_SOURCE, tag + 1, MPI_COMM_WORLD);
    return true;
  }
  /// The server thread: rank 0 answers the claims of this pass from the ledger until stopped.
  void serve() {
    const int tag = claim_tag(pass_);
    while (!stop_.load())
      if (!answer(tag, true)) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  void stop_server() {
    stop_ = true;
    if (server_.joinable()) server_.join();
  }

  int me_, ranks_;
  int pass_ = -1;
  std::uint64_t nchunks_ = 0;
  std::optional<npcf::ChunkLedger> ledger_;
  std::mutex ledger_mu_, claim_mu_;
  bool exhausted_ = false;
  std::atomic<bool> stop_{true};
  std::thread server_;
};

}  // namespace

bool split_possible(const jobs::Job& job) {
  // N-point jobs by hub ranges (CPU) or hub partitions (CUDA: each rank's GPU); stack searches
  // by origin row bands on the CPU (not in dense mode).
  if (job.engine() == "stack" && job.operation() != "search") return false;
  if (job.engine() == "npcf") return true;
  if (job.engine() != "stack") return false;
  return runs_on_gpu(job) == false;
}

void run_split(const jobs::RunPlan& plan, std::size_t batch, const CancelToken& cancel,
               const jobs::BatchRunOptions& options, jobs::BatchObserver& observer, const DistHooks& hooks,
               jobs::HashCache& hashes, RankReport& report, jobs::BatchSummary& s, bool failed_before) {
  (void)failed_before;
  const int me = rank(), K = size();
  const jobs::Batch& b = plan.batches[batch];
  const jobs::Member& m = b.members[0];
  const auto t0 = Clock::now();
  const double began = epoch_seconds();

  // A failure inside an exchange (another rank waits for this rank's bytes) ends every rank:
  // this rank prints its message and aborts all with the front end's exit code.
  auto abort_with = [&](std::exception_ptr e) {
    std::string message;
    const int code = hooks.exit_code ? hooks.exit_code(e, message) : 1;
    if (hooks.print_error) hooks.print_error("rank " + std::to_string(me) + ": " + m.label, message);
    remove_temp_files_now();
    abort_all(code);
  };
  // Rank 0 reports a failure as one process does (the member failed: its exception, rethrown by
  // run_plan_distributed, gives the message and the exit code); the other ranks return.
  auto report_failure = [&](int who, std::exception_ptr e) {
    if (me != 0) return;
    if (hooks.from_rank) hooks.from_rank(who);
    observer.member_failed(b, m, e);
    if (hooks.from_rank) hooks.from_rank(0);
  };

  // Resume: rank 0 decides with the one-process rule; every rank follows.
  int skip = 0;
  std::exception_ptr resume_error;
  if (me == 0) {
    observer.member_started(b, m);
    try {
      skip = options.resume && jobs::stale_reason(*m.job, hashes).empty() ? 1 : 0;
    } catch (...) {
      resume_error = std::current_exception();
      skip = -1;
    }
  }
  MPI_Bcast(&skip, 1, MPI_INT, 0, MPI_COMM_WORLD);
  ++s.members;
  if (skip < 0) {
    report_failure(0, resume_error);
    return;
  }
  if (skip) {
    ++report.skipped;
    if (me == 0) {
      jobs::Outcome o;
      o.engine = m.job->engine();
      o.operation = m.job->operation();
      o.inputs = m.job->input_paths();
      o.outputs = m.job->output_paths();
      o.skipped = true;
      o.summary.push_back("up to date (configuration and input hashes match): skipped");
      ++s.skipped;
      observer.member_finished(b, m, o, 0.0);
    }
    return;
  }

  const bool stack = m.job->engine() == "stack";
  npcf::HubPartition part;
  part.rank = me;
  part.ranks = K;
  stack::RowPartition rows;
  rows.rank = me;
  rows.ranks = K;
  if (!stack) {
    try {
      part.statistics = statistics_of(*m.job);
    } catch (...) {
      report_failure(0, std::current_exception());  // the same on every rank
      return;
    }
    // Every rank must count on the same kind of backend (hub ranges on CPUs, partitions on
    // GPUs): an `auto` job on a mix of GPU and CPU ranks is refused, on every rank alike.
    int gpu = runs_on_gpu(*m.job) == true ? 1 : 0;
    int lo = gpu, hi = gpu;
    MPI_Allreduce(&gpu, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&gpu, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (lo != hi) {
      report_failure(0, std::make_exception_ptr(ConfigError(
                            "backend", "the ranks of a split N-point job resolve it differently (some have a usable GPU, "
                                       "some not; --devices): give backend = \"cpu\", or a GPU to every rank")));
      return;
    }
  }

  // Failures outside the exchanges end the job cleanly: every exchange, and the end of the run,
  // starts with an agreement (MPI_Allreduce, MIN of "the rank that failed, else K"); a rank that
  // failed joins the next agreement with its rank, so every rank learns who failed at the same
  // step; the first failing rank sends its exception to rank 0, which reports it as one process.
  struct OtherRankFailed {};
  int first_failed = K;
  bool in_exchange = false;
  // The agreements go through the hand-out: rank 0 answers the claims of ranks still in a
  // pass meanwhile (HandOut::agree).
  HandOut handout(me, K);
  auto agree = [&](int mine) { return handout.agree(mine, mine < K); };
  auto check = [&] {
    first_failed = agree(K);
    if (first_failed < K) throw OtherRankFailed{};
  };
  // Slices in rank order are hubs in order: one Allgatherv joins them.
  auto join = [K, &check](const auto& mine, MPI_Datatype type) {
    check();
    std::vector<int> counts(static_cast<std::size_t>(K)), displs(static_cast<std::size_t>(K));
    int n = static_cast<int>(mine.size());
    MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
    std::size_t total = 0;
    for (int r = 0; r < K; ++r) {
      displs[static_cast<std::size_t>(r)] = static_cast<int>(total);
      total += static_cast<std::size_t>(counts[static_cast<std::size_t>(r)]);
    }
    std::remove_cvref_t<decltype(mine)> all(total);
    MPI_Allgatherv(mine.data(), n, type, all.data(), counts.data(), displs.data(), type, MPI_COMM_WORLD);
    return all;
  };
  part.all_degrees = [join](const std::vector<std::uint32_t>& mine, std::uint64_t) { return join(mine, MPI_UINT32_T); };
  part.all_walks = [join](const std::vector<double>& mine, std::uint64_t) { return join(mine, MPI_DOUBLE); };
  // Bytes to and from every rank: the sizes by MPI_Alltoall, then every message at once
  // (non-blocking, in pieces of at most 1 GiB; pieces between two ranks arrive in order).
  part.exchange = [me, K, &check](std::vector<std::vector<std::uint8_t>>& to) {
    check();
    const auto k = static_cast<std::size_t>(K);
    std::vector<std::vector<std::uint8_t>> from(k);
    from[static_cast<std::size_t>(me)] = std::move(to[static_cast<std::size_t>(me)]);
    std::vector<std::uint64_t> ns(k, 0), nr(k, 0);
    for (std::size_t q = 0; q < k; ++q)
      if (q != static_cast<std::size_t>(me)) ns[q] = to[q].size();
    MPI_Alltoall(ns.data(), 1, MPI_UINT64_T, nr.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
    constexpr std::uint64_t piece = std::uint64_t{1} << 30;
    std::vector<MPI_Request> reqs;
    for (std::size_t q = 0; q < k; ++q) {
      if (q == static_cast<std::size_t>(me)) continue;
      from[q].resize(nr[q]);
      for (std::uint64_t at = 0; at < nr[q]; at += piece) {
        reqs.emplace_back();
        MPI_Irecv(from[q].data() + at, static_cast<int>(std::min(piece, nr[q] - at)), MPI_BYTE, static_cast<int>(q),
                  wire::kTagLists, MPI_COMM_WORLD, &reqs.back());
      }
    }
    for (std::size_t q = 0; q < k; ++q) {
      if (q == static_cast<std::size_t>(me)) continue;
      for (std::uint64_t at = 0; at < ns[q]; at += piece) {
        reqs.emplace_back();
        MPI_Isend(to[q].data() + at, static_cast<int>(std::min(piece, ns[q] - at)), MPI_BYTE, static_cast<int>(q),
                  wire::kTagLists, MPI_COMM_WORLD, &reqs.back());
      }
    }
    MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
    return from;
  };
  // The chunk hand-out and the chunk-ordered merge (npcf/partition.hpp (c), (d)). One
  // agreement per counting pass on every rank: in end_pass (CPU ranks), or before a rank's
  // first exchange of the pass (GPU ranks: each holds one partition); from there to the end of
  // its part of the merge a rank is inside the exchange (other ranks wait for its bytes).
  bool agreed = false;
  // Fault injection for the tests (docs/mpi.md): ALMAGEST_SPLIT_FAIL="rank,pass" fails that rank
  // as hand-out `pass` begins (0-based: 0 the graph's degree query in blocks, then the counting
  // passes), "rank,pass,claims" after it claimed that many blocks or chunks of it.
  int fail_rank = -1, fail_pass = -1, fail_claims = -1, pass_now = -1;
  std::atomic<int> claims_now{0};
  if (const char* f = std::getenv("ALMAGEST_SPLIT_FAIL"); f && *f)
    if (std::sscanf(f, "%d,%d,%d", &fail_rank, &fail_pass, &fail_claims) < 2) fail_rank = -1;
  auto injected = [me] {
    return Error("rank " + std::to_string(me) + ": failure injected by ALMAGEST_SPLIT_FAIL");
  };
  if (threads_serialized() && K > 1) {
    part.begin_pass = [&](const npcf::PassShare& share) {
      ++pass_now;
      claims_now = 0;
      if (me == fail_rank && pass_now == fail_pass && fail_claims < 0) throw injected();
      handout.begin(share);
    };
    part.claim = [&] {
      if (me == fail_rank && pass_now == fail_pass && fail_claims >= 0 && claims_now++ >= fail_claims) throw injected();
      return handout.claim();
    };
    part.leave_pass = [&handout] { handout.leave(); };
    part.end_pass = [&handout, &check, &agreed, &in_exchange] {
      auto owners = handout.end(check);
      agreed = true;
      in_exchange = true;
      return owners;
    };
  }
  auto enter = [&check, &agreed, &in_exchange] {
    if (!agreed) check();
    agreed = true;
    in_exchange = true;
  };
  part.receive_total = [enter](std::vector<std::uint8_t>& bytes, int from) {
    enter();
    bytes = receive_bytes(from, wire::kTagChain);
  };
  part.send_total = [enter](std::vector<std::uint8_t>& bytes, int to) {
    enter();
    send_bytes(bytes, to, wire::kTagChain);
  };
  part.merged = [&agreed, &in_exchange] {
    agreed = false;
    in_exchange = false;
  };
  // Stack: every band's rows to rank 0, in rank order (point to point: a band's hits may pass
  // 2 GiB in total over the ranks, not in one message).
  rows.gather = [me, K, &check](const std::vector<std::uint8_t>& mine) {
    check();
    std::vector<std::vector<std::uint8_t>> all;
    if (me != 0) {
      send_bytes(mine, 0, wire::kTagChain);
      return all;
    }
    all.push_back(mine);
    for (int r = 1; r < K; ++r) all.push_back(receive_bytes(r, wire::kTagChain));
    return all;
  };

  std::unique_ptr<jobs::Outcome> outcome;
  std::exception_ptr own_error;
  try {
    npcf::PartitionScope scope(part);
    stack::RowPartitionScope row_scope(rows);
    JobContext ctx = me == 0 ? JobContext(
                                   cancel, [&](double d, double t, std::string_view st) { observer.progress(b, m, d, t, st); },
                                   [&](LogLevel l, std::string_view x) { observer.log(b, m, l, x); })
                             : JobContext(cancel);
    ctx.threads = options.threads;
    jobs::RunOptions ro;
    ro.write = me == 0;
    outcome = m.job->run(ctx, ro);
  } catch (const OtherRankFailed&) {
    // first_failed is known: below.
  } catch (...) {
    // (An agreement this rank took part in already named the failing rank when engine code
    // turned OtherRankFailed into another exception: no second agreement then.)
    if (first_failed == K) {
      if (in_exchange) abort_with(std::current_exception());
      own_error = std::current_exception();
      first_failed = agree(me);
    }
  }
  if (!own_error && first_failed == K) first_failed = agree(K);  // the end of the run
  if (first_failed < K) {
    // Nothing is left half-written: rank 0 writes only at the end of a run that succeeded here,
    // and a member's OutputSet removes its temporaries when the run throws.
    std::exception_ptr e = own_error;
    if (me == first_failed && me != 0) send_bytes(to_bytes(wire::exception_to_json(own_error).dump()), 0, kTagSplitError);
    if (me == 0 && first_failed != 0) {
      const std::vector<std::uint8_t> bytes = receive_bytes(first_failed, kTagSplitError);
      e = wire::exception_from_json(nlohmann::json::parse(std::string(bytes.begin(), bytes.end())));
    }
    report_failure(first_failed, e);
    return;
  }
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  report.busy_s += secs;
  ++report.computed;

  if (stack) {
    // Per-rank rows, hits and seconds for the summary and the log.
    double mine[4] = {static_cast<double>(rows.row0), static_cast<double>(rows.row1), static_cast<double>(rows.hits), secs};
    std::vector<double> all(4 * static_cast<std::size_t>(K));
    MPI_Gather(mine, 4, MPI_DOUBLE, all.data(), 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (me != 0) return;
    double hits = 0;
    std::string bands;
    for (int r = 0; r < K; ++r) {
      const double* a = all.data() + 4 * static_cast<std::size_t>(r);
      hits += a[2];
      outcome->timings_s["rank" + std::to_string(r)] = a[3];
      bands += (r ? ", " : "") + std::to_string(static_cast<long long>(a[0])) + "-" + std::to_string(static_cast<long long>(a[1]));
    }
    char line[160];
    std::snprintf(line, sizeof line, "; %.0f hits merged on rank 0", hits);
    outcome->summary.push_back("split over " + std::to_string(K) + " ranks by origin row bands (rows " + bands + ")" + line);
    ++s.written;
    observer.member_finished(b, m, *outcome, secs);
    return;
  }
  // Per-rank work for the summary and the log: graph part, cost-model share, seconds (all, in
  // the counting of its chunks, waiting in the chain).
  // ALMAGEST_SPLIT_TRACE: every rank's stages on its stderr (benchmarks, docs/mpi.md).
  if (trace_enabled()) {
    std::string stages;
    auto add = [&stages](const std::vector<double>& seconds) {
      for (double x : seconds) {
        char v[32];
        std::snprintf(v, sizeof v, " %.3f", x);
        stages += v;
      }
    };
    add(part.graph_stages_s);
    if (!stages.empty()) stages.erase(0, 1);
    if (!part.exchange_stages_s.empty()) {
      stages += "; fetches [requests, exchange, answers, exchange, unpacking]:";
      add(part.exchange_stages_s);
    }
    std::fprintf(stderr, "split rank %d/%d: wall %.3f s; graph %.3f s [kd-tree, degree query, joins, probing, range, neighbours, "
                         "assembly: %s]; counting %.3f s (%llu chunks taken, their lists %.3f s); waits %.3f s; from %.6f to %.6f\n",
                 me, K, secs, part.graph_s, stages.c_str(), part.count_s, static_cast<unsigned long long>(part.taken_chunks),
                 part.taken_graph_s, part.wait_s, began, epoch_seconds());
  }
  constexpr std::size_t F = 9;
  double mine[F] = {static_cast<double>(part.built_hubs), static_cast<double>(part.built_edges), part.counted_cost, secs,
                    part.count_s, part.wait_s, part.graph_s, static_cast<double>(part.taken_chunks), part.taken_graph_s};
  std::vector<double> all(F * static_cast<std::size_t>(K));
  MPI_Gather(mine, F, MPI_DOUBLE, all.data(), F, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (me != 0) return;
  double maxc = 0, sumc = 0, cmin = 1e300, cmax = 0, wmax = 0, taken = 0, taken_s = 0, gmax = 0;
  for (int r = 0; r < K; ++r) {
    const double* a = all.data() + F * static_cast<std::size_t>(r);
    maxc = std::max(maxc, a[2]);
    sumc += a[2];
    cmin = std::min(cmin, a[4]);
    cmax = std::max(cmax, a[4]);
    wmax = std::max(wmax, a[5]);
    gmax = std::max(gmax, a[6]);
    taken += a[7];
    taken_s += a[8];
    outcome->timings_s["rank" + std::to_string(r) + "_graph"] = a[6];
    outcome->timings_s["rank" + std::to_string(r)] = a[3];
    outcome->timings_s["rank" + std::to_string(r) + "_count"] = a[4];
    outcome->timings_s["rank" + std::to_string(r) + "_wait"] = a[5];
  }
  char line[400];
  if (part.gpu) {
    std::snprintf(line, sizeof line,
                  "split over %d ranks by GPU hub partitions (each rank's GPU: the whole graph, one partition); "
                  "counting %.2f-%.2f s per rank, chain waits up to %.2f s",
                  K, cmin, cmax, wmax);
  } else {
    double edges = 0, lo = 1e300, hi = 0;
    for (auto d : part.degrees) edges += d;
    for (int r = 0; r < K; ++r) {
      lo = std::min(lo, all[F * static_cast<std::size_t>(r) + 1]);
      hi = std::max(hi, all[F * static_cast<std::size_t>(r) + 1]);
    }
    edges = std::max(1.0, edges);
    std::snprintf(line, sizeof line,
                  "split over %d ranks by hub ranges: graph part per rank %.0f-%.0f%% of the edges (up to %.2f s); "
                  "chunks handed out: %.0f taken from other ranges (lists built in %.2f s), cost-model work counted "
                  "max/mean %.3f; counting %.2f-%.2f s per rank, waits up to %.2f s",
                  K, 100.0 * lo / edges, 100.0 * hi / edges, gmax, taken, taken_s, sumc > 0 ? maxc / (sumc / K) : 1.0,
                  cmin, cmax, wmax);
  }
  outcome->summary.push_back(line);
  ++s.written;
  observer.member_finished(b, m, *outcome, secs);
}

}  // namespace almagest::dist
