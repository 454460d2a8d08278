#pragma once
// (c) of npcf/partition.hpp: the counting kernels' chunked reduction when the job is split over
// several processes. Included by npcf/parallel.hpp only.
//
// This process counts the chunks whose first hub lies in its hub range, each into its own
// accumulator (as one process does), keeps them, then takes the running total of every earlier
// chunk from the previous process, merges its chunks into it in chunk order and passes it on:
// the sequence of floating-point additions into the total is exactly the one-process sequence,
// so the result is bit-identical for any process count. The accumulators travel as bytes: they
// are aggregates of arithmetic values and vectors of them (every counting kernel's), written
// field by field in declaration order (structured bindings), so no kernel needs a serialiser.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "almagest/core/error.hpp"
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

template <class T>
void put(std::vector<std::uint8_t>& out, const T& v) {
  if constexpr (std::is_arithmetic_v<T>) {
    const auto* b = reinterpret_cast<const std::uint8_t*>(&v);
    out.insert(out.end(), b, b + sizeof(T));
  } else {
    static_assert(IsVector<T>::value, "partition_reduce: accumulator fields must be arithmetic or vectors of them");
    put(out, static_cast<std::uint64_t>(v.size()));
    if constexpr (std::is_arithmetic_v<typename T::value_type>) {
      const auto* b = reinterpret_cast<const std::uint8_t*>(v.data());
      out.insert(out.end(), b, b + v.size() * sizeof(typename T::value_type));
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
      need(n * sizeof(typename T::value_type));
      v.resize(n);
      std::memcpy(v.data(), in.data() + at, n * sizeof(typename T::value_type));
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

/// The chain of a split job: `total` starts as the identity; rank > 0 replaces it with the
/// running total of every process before it, `add_mine(total)` adds this process's part in its
/// order, and the total goes on to the next rank; rank 0 ends with the complete total (wait
/// seconds in part.wait_s). One process: add_mine alone.
template <class Acc, class AddMine>
void chain(HubPartition& part, Acc& total, AddMine add_mine) {
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  if (part.ranks > 1 && part.rank > 0) {
    std::vector<std::uint8_t> bytes;
    const auto t0 = Clock::now();
    part.receive_prefix(bytes);
    part.wait_s += since(t0);
    raw::decode(bytes, total);
  }
  add_mine(total);
  if (part.ranks > 1) {
    std::vector<std::uint8_t> bytes = raw::encode(total);
    const auto t0 = Clock::now();
    part.pass_total(bytes);
    part.wait_s += since(t0);
    if (part.rank == 0) raw::decode(bytes, total);
  }
}

template <class Acc, class Make, class Body, class Merge>
Acc partitioned_reduce(HubPartition& part, const std::vector<std::uint64_t>& bounds, int threads,
                       const JobContext& ctx, const std::string& stage, Make make, Body body, Merge merge) {
  if (part.probing) {
    part.probed.push_back(bounds);
    return make();
  }
  const auto r = static_cast<std::size_t>(part.rank);
  ALMAGEST_ASSERT(part.hub_bounds.size() == static_cast<std::size_t>(part.ranks) + 1, "partition has no hub ranges");
  const auto [c0, c1] = chunks_starting_in(bounds, part.hub_bounds[r], part.hub_bounds[r + 1]);
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  std::vector<Acc> parts(static_cast<std::size_t>(c1 - c0));
  std::vector<double>* seconds = nullptr;
  if (part.time_chunks) {
    part.chunk_seconds.emplace_back(parts.size(), 0.0);
    seconds = &part.chunk_seconds.back();
  }
  auto t0 = Clock::now();
  almagest::parallel::parallel_for(parts.size(), threads, ctx, stage, [&](std::size_t t) {
    const std::uint64_t c = c0 + t;
    const auto tc = seconds ? Clock::now() : Clock::time_point{};
    Acc a = make();
    body(c, bounds[c], bounds[c + 1], a);
    parts[t] = std::move(a);
    if (seconds) (*seconds)[t] = since(tc);
  });
  part.count_s += since(t0);
  Acc total = make();
  chain(part, total, [&](Acc& t) {
    for (const Acc& a : parts) merge(t, a);
  });
  parts.clear();
  ctx.check_cancel();
  return total;
}

}  // namespace almagest::npcf::detail
