#pragma once
// (c) and (d) of npcf/partition.hpp: the counting kernels' chunked reduction when the job is
// split over several processes. Included by npcf/parallel.hpp only.
//
// This process counts the chunks the hand-out gives it, each into its own accumulator (as one
// process does), and keeps them; then the accumulators of every process are merged in chunk
// order: the running total goes from the holder of one run of consecutive chunks to the holder
// of the next, each adding its run, so the sequence of floating-point additions into the total
// is exactly the one-process sequence and the result is bit-identical for any process count and
// any hand-out. The accumulators travel as bytes: they are aggregates of arithmetic values and
// vectors of them (every counting kernel's), written field by field in declaration order
// (structured bindings), so no kernel needs a serialiser.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "almagest/core/error.hpp"
#include "almagest/npcf/graph.hpp"
#include "almagest/npcf/partition.hpp"
#include "core/parallel.hpp"

namespace almagest::npcf::detail {

namespace raw {

struct AnyField {
  template <class T>
  operator T() const;  // never defined: only counts aggregate fields
};
template <std::size_t>
using Any = AnyField;
template <class T, class... A>
concept BraceInit = requires { T{std::declval<A>()...}; };
template <class T, std::size_t... I>
constexpr bool brace_n(std::index_sequence<I...>) {
  return BraceInit<T, Any<I>...>;
}
template <class T, std::size_t N = 0>
constexpr std::size_t field_count() {
  if constexpr (N >= 10) return N;
  else if constexpr (brace_n<T>(std::make_index_sequence<N + 1>{})) return field_count<T, N + 1>();
  else return N;
}

template <class T>
struct IsVector : std::false_type {};
template <class T, class A>
struct IsVector<std::vector<T, A>> : std::true_type {};

inline void append(std::vector<std::uint8_t>& out, const void* data, std::size_t bytes) {
  if (bytes == 0) return;
  const std::size_t at = out.size();
  out.resize(at + bytes);
  std::memcpy(out.data() + at, data, bytes);
}

template <class T>
void put(std::vector<std::uint8_t>& out, const T& v) {
  if constexpr (std::is_arithmetic_v<T>) {
    append(out, &v, sizeof(T));
  } else {
    static_assert(IsVector<T>::value, "partition_reduce: accumulator fields must be arithmetic or vectors of them");
    put(out, static_cast<std::uint64_t>(v.size()));
    if constexpr (std::is_arithmetic_v<typename T::value_type>) {
      append(out, v.data(), v.size() * sizeof(typename T::value_type));
    } else {
      for (const auto& x : v) put(out, x);
    }
  }
}

template <class T>
void get(const std::vector<std::uint8_t>& in, std::size_t& at, T& v) {
  auto need = [&](std::size_t bytes) {
    if (in.size() - at < bytes) throw Error("partitioned reduction: the running total received is truncated");
  };
  if constexpr (std::is_arithmetic_v<T>) {
    need(sizeof(T));
    std::memcpy(&v, in.data() + at, sizeof(T));
    at += sizeof(T);
  } else {
    std::uint64_t n = 0;
    get(in, at, n);
    if constexpr (std::is_arithmetic_v<typename T::value_type>) {
      if (n > in.size()) throw Error("partitioned reduction: the running total received is truncated");
      need(n * sizeof(typename T::value_type));
      v.resize(n);
      if (n > 0) std::memcpy(v.data(), in.data() + at, n * sizeof(typename T::value_type));
      at += n * sizeof(typename T::value_type);
    } else {
      if (n > in.size()) throw Error("partitioned reduction: the running total received is truncated");
      v.resize(n);
      for (auto& x : v) get(in, at, x);
    }
  }
}

/// f(field) for every field of the aggregate, in declaration order.
template <class Acc, class F>
void for_each_field(Acc& a, F&& f) {
  constexpr std::size_t n = field_count<std::remove_const_t<Acc>>();
  static_assert(n >= 1 && n < 10, "partition_reduce: accumulators of 1 to 9 fields");
  if constexpr (n == 1) { auto& [a1] = a; f(a1); }
  else if constexpr (n == 2) { auto& [a1, a2] = a; f(a1); f(a2); }
  else if constexpr (n == 3) { auto& [a1, a2, a3] = a; f(a1); f(a2); f(a3); }
  else if constexpr (n == 4) { auto& [a1, a2, a3, a4] = a; f(a1); f(a2); f(a3); f(a4); }
  else if constexpr (n == 5) { auto& [a1, a2, a3, a4, a5] = a; f(a1); f(a2); f(a3); f(a4); f(a5); }
  else if constexpr (n == 6) { auto& [a1, a2, a3, a4, a5, a6] = a; f(a1); f(a2); f(a3); f(a4); f(a5); f(a6); }
  else if constexpr (n == 7) { auto& [a1, a2, a3, a4, a5, a6, a7] = a; f(a1); f(a2); f(a3); f(a4); f(a5); f(a6); f(a7); }
  else if constexpr (n == 8) { auto& [a1, a2, a3, a4, a5, a6, a7, a8] = a; f(a1); f(a2); f(a3); f(a4); f(a5); f(a6); f(a7); f(a8); }
  else { auto& [a1, a2, a3, a4, a5, a6, a7, a8, a9] = a; f(a1); f(a2); f(a3); f(a4); f(a5); f(a6); f(a7); f(a8); f(a9); }
}

template <class Acc>
std::vector<std::uint8_t> encode(Acc& a) {
  std::vector<std::uint8_t> out;
  for_each_field(a, [&](auto& f) { put(out, f); });
  return out;
}

template <class Acc>
void decode(const std::vector<std::uint8_t>& in, Acc& a) {
  std::size_t at = 0;
  for_each_field(a, [&](auto& f) { get(in, at, f); });
  if (at != in.size()) throw Error("partitioned reduction: the running total received has the wrong size");
}

}  // namespace raw

/// The chunk-ordered merge over processes. `holders` lists, in chunk order, the process that
/// holds each run of consecutive chunks' accumulators (consecutive runs have different
/// holders). The running total starts as the identity at the first run's holder; each holder
/// receives it from the previous run's holder, adds its run (add_run(total, k)) and sends it to
/// the next run's holder, the last one to rank 0: the sequence of floating-point additions into
/// the total is the one-process sequence. Rank 0 ends with the complete total (wait seconds in
/// part.wait_s). One process: add_run alone.
template <class Acc, class AddRun>
void chain_runs(HubPartition& part, Acc& total, const std::vector<int>& holders, AddRun add_run) {
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  const int me = part.rank;
  for (std::size_t k = 0; k < holders.size(); ++k) {
    if (holders[k] != me) continue;
    if (k > 0) {
      std::vector<std::uint8_t> bytes;
      const auto t0 = Clock::now();
      part.receive_total(bytes, holders[k - 1]);
      part.wait_s += since(t0);
      raw::decode(bytes, total);
    }
    add_run(total, k);
    const int next = k + 1 < holders.size() ? holders[k + 1] : 0;
    if (next != me) {
      std::vector<std::uint8_t> bytes = raw::encode(total);
      const auto t0 = Clock::now();
      part.send_total(bytes, next);
      part.wait_s += since(t0);
    }
  }
  if (me == 0 && !holders.empty() && holders.back() != 0) {
    std::vector<std::uint8_t> bytes = raw::encode(total);
    const auto t0 = Clock::now();
    part.receive_total(bytes, holders.back());
    part.wait_s += since(t0);
    raw::decode(bytes, total);
  }
  if (part.merged) part.merged();
}

/// (c) and (d) of npcf/partition.hpp for one counting pass: this process counts the chunks the
/// hand-out gives it (its own first; chunks of other ranges with lists built on demand), each
/// into its own accumulator, then the accumulators are merged in chunk order over the processes.
template <class Acc, class Make, class Body, class Merge>
Acc partitioned_reduce(HubPartition& part, const Graph& g, const std::vector<std::uint64_t>& bounds, int threads,
                       const JobContext& ctx, const std::string& stage, Make make, Body body, Merge merge) {
  if (part.probing) {
    part.probed.push_back(bounds);
    return make();
  }
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  const auto K = static_cast<std::size_t>(part.ranks);
  const auto me = static_cast<std::size_t>(part.rank);
  ALMAGEST_ASSERT(part.hub_bounds.size() == K + 1, "partition has no hub ranges");
  const std::uint64_t nchunks = bounds.size() - 1;
  // This pass among the probed ones (the kernels run them in the probed order).
  std::size_t pass = part.pass;
  while (pass < part.probed.size() && part.probed[pass] != bounds) ++pass;
  ALMAGEST_ASSERT(pass < part.probed.size(), "split job: a counting pass that was not probed");
  part.pass = pass + 1;
  ALMAGEST_ASSERT(part.pass_powers.size() == part.probed.size(), "partition: one cost power per probed pass");
  const int top = *std::max_element(part.pass_powers.begin(), part.pass_powers.end());
  const bool heaviest = part.pass_powers[pass] == top;

  // The share: each process owns the chunks starting in its range; each chunk's work.
  PassShare share;
  share.first.resize(K + 1);
  for (std::size_t r = 0; r < K; ++r) share.first[r] = chunks_starting_in(bounds, part.hub_bounds[r], part.hub_bounds[r + 1]).first;
  share.first[K] = nchunks;
  share.cost.assign(nchunks, 0.0);
  ALMAGEST_ASSERT(part.costs.size() + 1 == g.offsets.size(), "partition: one cost per hub");
  for (std::uint64_t c = 0; c < nchunks; ++c)
    for (std::uint64_t i = bounds[c]; i < bounds[c + 1]; ++i) share.cost[c] += part.costs[i];
  // Pair passes keep every chunk with its owner (their lists cost about what their pairs do).
  share.take_others = part.pass_powers[pass] > 1;
  const std::uint64_t own0 = share.first[me], own1 = share.first[me + 1];
  const bool handout = static_cast<bool>(part.claim);
  if (handout && part.begin_pass) part.begin_pass(share);
  std::atomic<std::uint64_t> next_own{own0};
  auto claim = [&]() -> std::int64_t {
    if (handout) return part.claim();
    const std::uint64_t c = next_own.fetch_add(1);
    return c < own1 ? static_cast<std::int64_t>(c) : -1;
  };
  std::vector<double>* seconds = nullptr;
  if (part.time_chunks) {
    if (part.chunk_seconds.size() <= pass) part.chunk_seconds.resize(pass + 1);
    part.chunk_seconds[pass].assign(nchunks, 0.0);
    seconds = &part.chunk_seconds[pass];
  }

  // Counting: every thread claims chunks until none is left.
  std::vector<std::pair<std::uint64_t, Acc>> got;
  std::mutex mu;
  std::atomic<bool> stop{false};
  std::exception_ptr error;
  std::uint64_t done = 0, taken = 0;
  double counted = 0, taken_s = 0;
  const double expect = static_cast<double>(std::max<std::uint64_t>(1, own1 - own0));
  auto worker = [&] {
    try {
      for (;;) {
        if (stop.load(std::memory_order_relaxed)) return;
        ctx.check_cancel();
        const std::int64_t claimed = claim();
        if (claimed < 0) return;
        const auto c = static_cast<std::uint64_t>(claimed);
        ALMAGEST_ASSERT(c < nchunks, "split job: a chunk outside the pass was handed out");
        const auto tc = Clock::now();
        const Graph* lists = &g;
        Graph own_lists;
        const bool other = c < own0 || c >= own1;
        double built = 0;
        if (other) {
          own_lists = build_taken_lists(part, bounds[c], bounds[c + 1], ctx);
          lists = &own_lists;
          built = since(tc);
        }
        Acc a = make();
        body(c, bounds[c], bounds[c + 1], a, *lists);
        const double secs = since(tc);
        std::lock_guard<std::mutex> lock(mu);
        got.emplace_back(c, std::move(a));
        if (seconds) (*seconds)[c] = secs;
        if (heaviest) counted += share.cost[c];
        taken += other;
        taken_s += built;
        ++done;
        ctx.progress(std::min<double>(static_cast<double>(done), expect), expect, stage);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!error) error = std::current_exception();
      stop = true;
    }
  };
  const auto t0 = Clock::now();
  almagest::parallel::run_workers(std::max(1, resolve_threads(threads)), worker);
  part.count_s += since(t0);
  part.counted_cost += counted;
  part.taken_chunks += taken;
  part.taken_graph_s += taken_s;
  if (error) {
    if (handout && part.leave_pass) part.leave_pass();
    std::rethrow_exception(error);
  }

  // Who counted which chunk; the runs of consecutive chunks of one holder.
  const auto tw = Clock::now();
  std::vector<std::int32_t> owners;
  if (handout && part.end_pass) {
    owners = part.end_pass();
  } else {
    owners.assign(nchunks, 0);
    for (std::size_t r = 0; r < K; ++r)
      for (std::uint64_t c = share.first[r]; c < share.first[r + 1]; ++c) owners[c] = static_cast<std::int32_t>(r);
  }
  part.wait_s += since(tw);
  ALMAGEST_ASSERT(owners.size() == nchunks, "split job: the hand-out's owners do not cover the pass");
  std::vector<int> holders;
  std::vector<std::uint64_t> run_end;
  for (std::uint64_t c = 0; c < nchunks; ++c) {
    ALMAGEST_ASSERT(owners[c] >= 0 && static_cast<std::size_t>(owners[c]) < K, "split job: a chunk was not counted");
    if (holders.empty() || holders.back() != owners[c]) {
      holders.push_back(owners[c]);
      run_end.push_back(c + 1);
    } else {
      run_end.back() = c + 1;
    }
  }
  std::sort(got.begin(), got.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::size_t at = 0;
  Acc total = make();
  chain_runs(part, total, holders, [&](Acc& t, std::size_t k) {
    for (; at < got.size() && got[at].first < run_end[k]; ++at) merge(t, got[at].second);
  });
  ALMAGEST_ASSERT(at == got.size(), "split job: a counted chunk was not merged");
  got.clear();
  ctx.check_cancel();
  return total;
}

}  // namespace almagest::npcf::detail
