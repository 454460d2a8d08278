// One plain N-point job over every rank (split.hpp): MPI exchanges for npcf::HubPartition.
#include "split.hpp"

#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdio>
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
  auto agree = [&](int mine) {
    int first = K;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return first;
  };
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
  // One agreement per counting pass on every rank: rank > 0 before it receives the running
  // total, rank 0 before it passes its own on; from the receive to the send a rank is inside
  // the exchange (the next rank waits for it).
  part.receive_prefix = [me, &check, &in_exchange](std::vector<std::uint8_t>& bytes) {
    check();
    bytes = receive_bytes(me - 1, wire::kTagChain);
    in_exchange = true;
  };
  part.pass_total = [me, K, &check, &in_exchange](std::vector<std::uint8_t>& bytes) {
    if (me == 0) {
      check();
      in_exchange = true;
    }
    send_bytes(bytes, me == K - 1 ? 0 : me + 1, wire::kTagChain);
    if (me == 0) bytes = receive_bytes(K - 1, wire::kTagChain);
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
  constexpr std::size_t F = 6;
  double mine[F] = {static_cast<double>(part.built_hubs), static_cast<double>(part.built_edges), part.counted_cost, secs,
                    part.count_s, part.wait_s};
  std::vector<double> all(F * static_cast<std::size_t>(K));
  MPI_Gather(mine, F, MPI_DOUBLE, all.data(), F, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (me != 0) return;
  double maxc = 0, sumc = 0, cmin = 1e300, cmax = 0, wmax = 0;
  for (int r = 0; r < K; ++r) {
    const double* a = all.data() + F * static_cast<std::size_t>(r);
    maxc = std::max(maxc, a[2]);
    sumc += a[2];
    cmin = std::min(cmin, a[4]);
    cmax = std::max(cmax, a[4]);
    wmax = std::max(wmax, a[5]);
    outcome->timings_s["rank" + std::to_string(r)] = a[3];
    outcome->timings_s["rank" + std::to_string(r) + "_count"] = a[4];
    outcome->timings_s["rank" + std::to_string(r) + "_wait"] = a[5];
  }
  char line[256];
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
                  "split over %d ranks by hub ranges: cost-model work max/mean %.3f; graph part per rank %.0f-%.0f%% "
                  "of the edges; counting %.2f-%.2f s per rank, chain waits up to %.2f s",
                  K, sumc > 0 ? maxc / (sumc / K) : 1.0, 100.0 * lo / edges, 100.0 * hi / edges, cmin, cmax, wmax);
  }
  outcome->summary.push_back(line);
  ++s.written;
  observer.member_finished(b, m, *outcome, secs);
}

}  // namespace almagest::dist
