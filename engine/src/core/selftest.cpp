// GPU self-tests: reports and the generic runner (the engines' checks live in the engines).
#include "almagest/core/selftest.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>

#include "almagest/core/error.hpp"
#include "almagest/core/gpu.hpp"

namespace almagest {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

/// Reads every given field once by its declared kind, so the Reader records each problem.
void read_all(schema::Reader& r, const schema::Schema& s, const schema::Values& values) {
  r.check_keys();
  for (const auto& [key, value] : values) {
    const schema::Field* f = s.find(key);
    if (!f) continue;  // reported by check_keys
    switch (f->kind) {
      case schema::Kind::Text: r.text(key); break;
      case schema::Kind::TextList: r.list(key); break;
      case schema::Kind::Number: r.number(key); break;
      case schema::Kind::Integer: r.integer(key); break;
      case schema::Kind::Flag: r.flag(key); break;
      case schema::Kind::Choice: r.choice(key); break;
      case schema::Kind::ChoiceList: r.choices(key); break;
    }
  }
}

/// The values that belong to `s` (keys as the registry sees them: canonical spellings).
schema::Values own_values(const schema::Schema& s, const schema::Values& values) {
  schema::Values v;
  for (const auto& [key, value] : values) {
    const std::string k = schema::canonical_key(s, key);
    if (!k.empty()) v[k] = value;
  }
  return v;
}

}  // namespace

SelftestReport SelftestReport::for_current_gpu() {
  SelftestReport r;
  const GpuStatus& st = gpu_status();
  r.gpu_available = st.available;
  r.device = st.summary();
  return r;
}

bool SelftestReport::passed() const {
  if (!gpu_available || checks.empty()) return false;
  return std::all_of(checks.begin(), checks.end(), [](const SelftestCheck& c) { return c.passed; });
}

void SelftestReport::append(const SelftestReport& other) {
  checks.insert(checks.end(), other.checks.begin(), other.checks.end());
  seconds += other.seconds;
}

std::string SelftestReport::text() const {
  std::string s = "GPU self-test on " + device + "\n";
  std::size_t ok = 0;
  for (const auto& c : checks) {
    s += (c.passed ? "PASS " : "FAIL ") + c.name + ": " + c.detail + "\n";
    ok += c.passed;
  }
  if (!gpu_available) s += "SKIPPED: no usable GPU\n";
  s += std::to_string(ok) + "/" + std::to_string(checks.size()) + " checks passed in " +
       fmt("%.1f", seconds) + " s: " + (passed() ? "PASS" : "FAIL") + "\n";
  return s;
}

void SelftestRegistry::add(EngineSelftest test) {
  if (test.engine.empty() || !test.run)
    throw ConfigError("selftest", "a self-test needs an engine name and a run function");
  if (find(test.engine))
    throw ConfigError("selftest", "the " + test.engine + " self-test is registered twice");
  for (const schema::Field& f : test.options.fields)
    for (const EngineSelftest& e : entries_)
      if (!schema::canonical_key(e.options, f.key).empty())
        throw ConfigError(f.key, "self-test option declared by both " + e.engine + " and " + test.engine);
  test.options.engine = test.engine;
  entries_.push_back(std::move(test));
}

const EngineSelftest* SelftestRegistry::find(std::string_view engine) const noexcept {
  for (const EngineSelftest& e : entries_)
    if (e.engine == engine) return &e;
  return nullptr;
}

void SelftestRegistry::check(const schema::Values& values, const std::string& prefix) const {
  std::vector<std::string> problems;
  for (const auto& [key, value] : values) {
    const bool known = std::any_of(entries_.begin(), entries_.end(), [&](const EngineSelftest& e) {
      return !schema::canonical_key(e.options, key).empty();
    });
    if (!known) problems.push_back(prefix + key + ": unknown option");
  }
  for (const EngineSelftest& e : entries_) {
    const schema::Values own = own_values(e.options, values);
    schema::Reader r(e.options, own, prefix);
    read_all(r, e.options, own);
    problems.insert(problems.end(), r.problems().begin(), r.problems().end());
  }
  if (problems.empty()) return;
  std::string all;
  for (const std::string& p : problems) all += (all.empty() ? "" : "; ") + p;
  throw ConfigError("", all);
}

SelftestReport SelftestRegistry::run(const schema::Values& values, const JobContext& ctx) const {
  check(values);
  SelftestReport report = SelftestReport::for_current_gpu();
  for (const EngineSelftest& e : entries_) {
    ctx.check_cancel();
    report.append(e.run(own_values(e.options, values), ctx));
  }
  return report;
}

}  // namespace almagest
