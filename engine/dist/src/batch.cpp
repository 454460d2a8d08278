// A job file's plan on K ranks (almagest/dist/batch.hpp).
#include "almagest/dist/batch.hpp"

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <thread>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/dist/mpi.hpp"
#include "almagest/jobs/aggregate.hpp"
#include "split.hpp"
#include "wire.hpp"

namespace almagest::dist {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Ref {
  std::size_t batch, member;
};

/// One step of the plan: a pool of members handed out dynamically, or one split job.
struct Step {
  bool split = false;
  std::vector<Ref> members;
};

/// The first failure seen (rank 0 keeps it until the end).
struct Failure {
  bool set = false;
  int rank = 0;
  json error;
};

/// Rank 0: replays the events other ranks send into the observer.
class Replayer {
public:
  Replayer(const jobs::RunPlan& plan, jobs::BatchObserver& obs, const DistHooks& hooks, jobs::BatchSummary& s,
           Failure& failure)
      : plan_(plan), obs_(obs), hooks_(hooks), s_(s), failure_(failure) {}

  /// Handles every waiting event. The "done" messages among them are counted for wait_done
  /// (a rank with nothing left may say so while rank 0 still runs a member and drains).
  void drain() {
    std::string msg;
    int from = 0;
    while (wire::try_receive(wire::kTagEvent, msg, &from)) done_ += handle(from, json::parse(msg));
  }
  /// Blocks until `n` ranks said they are done with this step (handling every event meanwhile).
  void wait_done(int n) {
    for (drain(); done_ < n; drain()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    done_ -= n;
  }
  void own() {
    if (hooks_.from_rank) hooks_.from_rank(0);
  }

private:
  int handle(int from, const json& j) {
    if (hooks_.from_rank) hooks_.from_rank(from);
    const std::string t = j.value("t", "");
    if (t == "done") {  // the end of a pool step on that rank (its report comes at the end)
      if (hooks_.from_rank) hooks_.from_rank(0);
      return 1;
    }
    const auto& b = plan_.batches.at(j.at("b").get<std::size_t>());
    const auto& m = b.members.at(j.at("m").get<std::size_t>());
    if (t == "start") {
      ++s_.members;
      obs_.member_started(b, m);
    } else if (t == "progress") {
      obs_.progress(b, m, j.value("done", 0.0), j.value("total", 1.0), j.value("stage", ""));
    } else if (t == "log") {
      const int lv = j.value("level", 1);
      obs_.log(b, m, lv == 0 ? LogLevel::Debug : lv == 1 ? LogLevel::Info : lv == 2 ? LogLevel::Warning : LogLevel::Error,
               j.value("text", ""));
    } else if (t == "finished") {
      const jobs::Outcome o = wire::outcome_from_json(j.at("outcome"));
      if (o.plan) ++s_.planned;
      else if (o.skipped) ++s_.skipped;
      else ++s_.written;
      obs_.member_finished(b, m, o, j.value("secs", 0.0));
    } else if (t == "failed") {
      if (!failure_.set) failure_ = {true, from, j.at("error")};
      obs_.member_failed(b, m, wire::exception_from_json(j.at("error")));
    }
    if (hooks_.from_rank) hooks_.from_rank(0);
    return 0;
  }

  const jobs::RunPlan& plan_;
  jobs::BatchObserver& obs_;
  const DistHooks& hooks_;
  jobs::BatchSummary& s_;
  Failure& failure_;
  int done_ = 0;
};

/// Ranks > 0: sends the events of its members to rank 0.
class Forwarder final : public jobs::BatchObserver {
public:
  explicit Forwarder(wire::Outbox& out) : out_(out) {}
  Ref ref{0, 0};

  void member_started(const jobs::Batch&, const jobs::Member&) override { send({{"t", "start"}}); }
  void progress(const jobs::Batch&, const jobs::Member&, double done, double total, std::string_view stage) override {
    // At most four a second, plus every change of stage and the end of one.
    const auto now = Clock::now();
    if (stage == last_stage_ && done < total && now - last_ < std::chrono::milliseconds(250)) return;
    last_ = now;
    last_stage_ = std::string(stage);
    send({{"t", "progress"}, {"done", done}, {"total", total}, {"stage", stage}});
  }
  void log(const jobs::Batch&, const jobs::Member&, LogLevel level, std::string_view text) override {
    send({{"t", "log"}, {"level", static_cast<int>(level)}, {"text", text}});
  }
  void member_finished(const jobs::Batch&, const jobs::Member&, const jobs::Outcome& o, double secs) override {
    send({{"t", "finished"}, {"outcome", wire::outcome_to_json(o)}, {"secs", secs}});
  }
  void member_failed(const jobs::Batch&, const jobs::Member&, std::exception_ptr e) override {
    send({{"t", "failed"}, {"error", wire::exception_to_json(e)}});
  }

private:
  void send(json j) {
    j["b"] = ref.batch;
    j["m"] = ref.member;
    out_.send(0, wire::kTagEvent, j.dump());
  }
  wire::Outbox& out_;
  std::string last_stage_;
  Clock::time_point last_{};
};

/// Wraps rank 0's observer so that its own progress callbacks also replay waiting events.
class Draining final : public jobs::BatchObserver {
public:
  Draining(jobs::BatchObserver& inner, Replayer& rep) : inner_(inner), rep_(rep) {}
  void member_started(const jobs::Batch& b, const jobs::Member& m) override { inner_.member_started(b, m); }
  void progress(const jobs::Batch& b, const jobs::Member& m, double d, double t, std::string_view s) override {
    rep_.own();
    inner_.progress(b, m, d, t, s);
    rep_.drain();
  }
  void log(const jobs::Batch& b, const jobs::Member& m, LogLevel l, std::string_view s) override {
    rep_.own();
    inner_.log(b, m, l, s);
  }
  void member_finished(const jobs::Batch& b, const jobs::Member& m, const jobs::Outcome& o, double s) override {
    rep_.own();
    inner_.member_finished(b, m, o, s);
  }
  void member_failed(const jobs::Batch& b, const jobs::Member& m, std::exception_ptr e) override {
    rep_.own();
    inner_.member_failed(b, m, e);
  }

private:
  jobs::BatchObserver& inner_;
  Replayer& rep_;
};

/// One member on this rank, with the one-process resume rule (jobs::stale_reason).
/// Returns false when it failed (reported to `obs`).
bool run_member(const jobs::Batch& b, const jobs::Member& m, const CancelToken& cancel,
                const jobs::BatchRunOptions& options, jobs::BatchObserver& obs, jobs::HashCache& hashes,
                RankReport& report, jobs::BatchSummary* local) {
  obs.member_started(b, m);
  const auto t0 = Clock::now();
  try {
    if (cancel.cancelled()) throw Cancelled();
    const std::unique_ptr<jobs::Outcome> outcome = jobs::run_member(b, m, cancel, options, obs, hashes);
    const double secs = since(t0);
    report.busy_s += secs;
    if (outcome->skipped && !options.dry_run) ++report.skipped;
    else ++report.computed;
    if (local) {
      ++local->members;
      if (options.dry_run) ++local->planned;
      else if (outcome->skipped) ++local->skipped;
      else ++local->written;
    }
    obs.member_finished(b, m, *outcome, secs);
    return true;
  } catch (...) {
    report.busy_s += since(t0);
    if (local) ++local->members;
    obs.member_failed(b, m, std::current_exception());
    return false;
  }
}

/// Members handed out by a shared counter on rank 0: the next one to the first free rank.
void run_pool(const jobs::RunPlan& plan, const Step& step, const CancelToken& cancel,
              const jobs::BatchRunOptions& options, jobs::BatchObserver& obs, Replayer* rep, wire::Outbox& out,
              jobs::HashCache& hashes, RankReport& report, jobs::BatchSummary& s, Failure& failure) {
  const int me = rank(), n = size();
  std::int64_t* base = nullptr;
  MPI_Win win;
  MPI_Win_allocate(me == 0 ? static_cast<MPI_Aint>(sizeof(std::int64_t)) : 0, sizeof(std::int64_t), MPI_INFO_NULL,
                   MPI_COMM_WORLD, &base, &win);
  if (me == 0) *base = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  const auto count = static_cast<std::int64_t>(step.members.size());
  auto fetch_add = [&](std::int64_t add) {
    std::int64_t got = 0;
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Fetch_and_op(&add, &got, MPI_INT64_T, 0, 0, MPI_SUM, win);
    MPI_Win_unlock(0, win);
    return got;
  };
  Forwarder fwd(out);
  std::unique_ptr<Draining> draining;
  if (me == 0) draining = std::make_unique<Draining>(obs, *rep);
  for (;;) {
    if (me == 0) rep->drain();
    if (cancel.cancelled()) {
      // Every rank gets the signal mpirun forwards: stop taking members.
      if (me == 0 && !failure.set) failure = {true, 0, wire::exception_to_json(std::make_exception_ptr(Cancelled()))};
      break;
    }
    if (me == 0 && failure.set) break;
    const std::int64_t k = fetch_add(1);
    if (k >= count) break;
    const Ref ref = step.members[static_cast<std::size_t>(k)];
    const auto& b = plan.batches[ref.batch];
    const auto& m = b.members[ref.member];
    bool ok = false;
    if (me == 0) {
      rep->own();
      jobs::BatchSummary mine;
      ok = run_member(b, m, cancel, options, *draining, hashes, report, &mine);
      s.members += mine.members;
      s.written += mine.written;
      s.skipped += mine.skipped;
      s.planned += mine.planned;
      if (!ok && !failure.set) {
        // Rank 0's own failure: kept as the exception itself (rethrown at the end).
        failure.set = true;
        failure.rank = 0;
      }
    } else {
      fwd.ref = ref;
      ok = run_member(b, m, cancel, options, fwd, hashes, report, nullptr);
    }
    if (!ok) {
      fetch_add(count + n);  // nobody takes another member
      break;
    }
  }
  report.wall_s = 0;
  if (me != 0) {
    out.send(0, wire::kTagEvent, json{{"t", "done"}, {"computed", report.computed}, {"skipped", report.skipped},
                                      {"busy_s", report.busy_s}, {"device", report.device}}.dump());
    out.wait_all();
  } else {
    rep->wait_done(n - 1);
  }
  MPI_Win_free(&win);
}

bool is_split(const jobs::Batch& b) {
  if (b.is_batch || b.members.size() != 1 || !b.members[0].job) return false;
  return split_possible(*b.members[0].job);
}

}  // namespace

jobs::BatchSummary run_plan_distributed(const jobs::RunPlan& plan, const CancelToken& cancel,
                                        const jobs::BatchRunOptions& options, jobs::BatchObserver& observer,
                                        const DistHooks& hooks) {
  const int me = rank();
  jobs::BatchSummary s;
  Failure failure;
  std::exception_ptr own_failure;
  // Rank 0 keeps its own member failure as the exception itself: catch it through an observer.
  struct Keep final : jobs::BatchObserver {
    jobs::BatchObserver& inner;
    std::exception_ptr& kept;
    Keep(jobs::BatchObserver& i, std::exception_ptr& k) : inner(i), kept(k) {}
    void member_started(const jobs::Batch& b, const jobs::Member& m) override { inner.member_started(b, m); }
    void progress(const jobs::Batch& b, const jobs::Member& m, double d, double t, std::string_view st) override {
      inner.progress(b, m, d, t, st);
    }
    void log(const jobs::Batch& b, const jobs::Member& m, LogLevel l, std::string_view x) override { inner.log(b, m, l, x); }
    void member_finished(const jobs::Batch& b, const jobs::Member& m, const jobs::Outcome& o, double x) override {
      inner.member_finished(b, m, o, x);
    }
    void member_failed(const jobs::Batch& b, const jobs::Member& m, std::exception_ptr e) override {
      if (!kept) kept = e;
      inner.member_failed(b, m, e);
    }
  } keep(observer, own_failure);

  std::vector<Step> steps;
  for (std::size_t bi = 0; bi < plan.batches.size(); ++bi) {
    const auto& b = plan.batches[bi];
    if (is_split(b) && !options.dry_run && size() > 1) {
      steps.push_back({true, {{bi, 0}}});
      continue;
    }
    if (steps.empty() || steps.back().split) steps.push_back({});
    for (std::size_t mi = 0; mi < b.members.size(); ++mi) steps.back().members.push_back({bi, mi});
  }

  wire::Outbox out;
  Replayer rep(plan, keep, hooks, s, failure);
  jobs::HashCache hashes;
  RankReport report;
  report.rank = me;
  report.device = hooks.device;
  const auto t0 = Clock::now();
  for (const Step& step : steps) {
    if (step.split) {
      run_split(plan, step.members[0].batch, cancel, options, me == 0 ? static_cast<jobs::BatchObserver&>(keep) : observer,
                hooks, hashes, report, s, failure.set || own_failure);
    } else {
      run_pool(plan, step, cancel, options, keep, me == 0 ? &rep : nullptr, out, hashes, report, s, failure);
    }
    // Everyone learns whether to go on (rank 0 has seen every failure).
    int stop = me == 0 && (failure.set || own_failure) ? 1 : 0;
    MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (stop) break;
  }
  report.wall_s = since(t0);
  // One report per rank at the end, in rank order (also where the plan had only split steps).
  {
    const std::string mine = json{{"computed", report.computed}, {"skipped", report.skipped}, {"busy_s", report.busy_s},
                                  {"wall_s", report.wall_s}, {"device", report.device}}.dump();
    const int n = size();
    int len = static_cast<int>(mine.size());
    std::vector<int> lens(static_cast<std::size_t>(n)), offs(static_cast<std::size_t>(n));
    MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    int total = 0;
    for (int r = 0; r < n; ++r) {
      offs[static_cast<std::size_t>(r)] = total;
      total += lens[static_cast<std::size_t>(r)];
    }
    std::string all(static_cast<std::size_t>(me == 0 ? total : 0), '\0');
    MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offs.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
    if (me == 0 && hooks.rank_done)
      for (int r = 0; r < n; ++r) {
        const json j = json::parse(all.substr(static_cast<std::size_t>(offs[static_cast<std::size_t>(r)]),
                                              static_cast<std::size_t>(lens[static_cast<std::size_t>(r)])));
        RankReport rr;
        rr.rank = r;
        rr.computed = j.value("computed", std::size_t{0});
        rr.skipped = j.value("skipped", std::size_t{0});
        rr.busy_s = j.value("busy_s", 0.0);
        rr.wall_s = j.value("wall_s", 0.0);
        rr.device = j.value("device", "");
        if (hooks.from_rank) hooks.from_rank(r);
        hooks.rank_done(rr);
      }
    if (me == 0 && hooks.from_rank) hooks.from_rank(0);
  }
  if (me != 0) return s;
  if (own_failure) std::rethrow_exception(own_failure);
  if (failure.set) std::rethrow_exception(wire::exception_from_json(failure.error));

  // Aggregates on rank 0, after every member (their outputs are on the shared file system).
  for (const auto& a : plan.aggregates) {
    if (cancel.cancelled()) throw Cancelled();
    observer.aggregate_started(a);
    const auto ta = Clock::now();
    try {
      JobContext ctx(cancel);
      ctx.threads = options.threads;
      auto outcome = jobs::run_aggregate(a, plan, ctx, options.dry_run);
      ++s.aggregates;
      observer.aggregate_finished(a, *outcome, since(ta));
    } catch (...) {
      observer.aggregate_failed(a, std::current_exception());
      throw;
    }
  }
  return s;
}

}  // namespace almagest::dist
