// Batches: job-file entries expanded into members, validated as a whole, run with resume
// (almagest/jobs/batch.hpp).
#include "almagest/jobs/batch.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "almagest/core/atomic_file.hpp"
#include "almagest/io/text_file.hpp"
#include "almagest/jobs/aggregate.hpp"

namespace almagest::jobs {

namespace fs = std::filesystem;
using schema::Value;
using schema::Values;

std::size_t RunPlan::member_count() const noexcept {
  std::size_t n = 0;
  for (const auto& b : batches) n += b.members.size();
  return n;
}

namespace {

std::string file_name_safe(std::string s) {
  for (char& c : s)
    if (c == '/' || c == ' ' || c == '\\' || c == ',' || c == ':' || static_cast<unsigned char>(c) < 32) c = '-';
  return s;
}

std::string stem_of(const std::string& path) { return fs::path(path).stem().string(); }

/// Replaces {stem}, {index} and {name}; any other {...} is an error naming the field.
std::string apply_template(const std::string& text, const std::string& stem, const std::string& index,
                           const std::string& name, const std::string& where) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] != '{') {
      out += text[i++];
      continue;
    }
    const std::size_t close = text.find('}', i);
    if (close == std::string::npos) throw ConfigError(where, "'" + text + "' has a '{' without its '}'");
    const std::string key = text.substr(i + 1, close - i - 1);
    if (key == "stem") out += stem;
    else if (key == "index") out += index;
    else if (key == "name") out += name;
    else throw ConfigError(where, "unknown placeholder {" + key + "} in '" + text + "' (use {stem}, {index} or {name})");
    i = close + 1;
  }
  return out;
}

/// An output path in a form two spellings of one file share: absolute, normalised, with the
/// symbolic links of its existing part resolved.
std::string path_key(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec).lexically_normal();
  fs::path c = fs::weakly_canonical(p, ec);
  return (ec ? p : c).string();
}

std::string input_problem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return errno == ENOENT ? "file does not exist" : std::string("cannot access: ") + std::strerror(errno);
  if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) return "is not a regular file (a device, FIFO or socket)";
  if (::access(path.c_str(), R_OK) != 0) return std::string("is not readable: ") + std::strerror(errno);
  return {};
}

std::string strip_label(const std::string& label) {
  return label.size() >= 2 && label.compare(label.size() - 2, 2, ": ") == 0 ? label.substr(0, label.size() - 2) : label;
}

struct Problems {
  std::vector<std::string> config, input, output;
  std::string first_output_file;
  bool empty() const { return config.empty() && input.empty() && output.empty(); }
  static std::string join(const std::vector<std::string>& v) {
    std::string all;
    const std::size_t shown = std::min<std::size_t>(v.size(), 20);
    for (std::size_t i = 0; i < shown; ++i) all += (i ? "; " : "") + v[i];
    if (v.size() > shown) all += "; and " + std::to_string(v.size() - shown) + " more";
    return all;
  }
};

/// Expands one job-file entry into its members (jobs not yet made).
struct MemberSpec {
  std::string name, stem, label, varied;
  Values values;
};

std::vector<MemberSpec> expand(const JobEntry& e, const schema::Schema* sch) {
  auto canon = [&](const std::string& k) {
    std::string c = sch ? schema::canonical_key(*sch, k) : std::string();
    return c.empty() ? k : c;
  };
  Values base;
  for (const auto& [k, v] : e.values) base[canon(k)] = v;
  const std::size_t n = e.batch ? e.batch->size() : 1;
  const std::size_t width = std::to_string(n).size();
  std::vector<MemberSpec> out;
  for (std::size_t i = 0; i < n; ++i) {
    MemberSpec m;
    m.values = base;
    std::string varied_input;
    if (!e.batch) {
      m.name = file_name_safe(e.name);
      m.label = e.label;
    } else if (!e.batch->key.empty()) {
      const std::string key = canon(e.batch->key);
      const Value& v = e.batch->values[i];
      m.values[key] = v;
      const schema::Field* f = sch ? sch->find(key) : nullptr;
      if (f && f->role == schema::Role::InputFile && std::holds_alternative<std::string>(v)) {
        varied_input = std::get<std::string>(v);
        m.name = stem_of(varied_input);
      } else {
        m.name = file_name_safe(key + "-" + schema::describe(v));
      }
      m.varied = key + " = " + schema::describe(v);
    } else {
      for (const auto& [k, v] : e.batch->members[i]) m.values[canon(k)] = v;
      m.name = e.batch->member_names[i].empty() ? "member-" + std::to_string(i + 1) : file_name_safe(e.batch->member_names[i]);
      m.varied = "member " + std::to_string(i + 1);
    }
    if (e.batch) m.label = e.label + "member " + std::to_string(i + 1) + " (" + m.name + "): ";
    // {stem}: the varied input's, else the job's first input file in schema order.
    if (!varied_input.empty()) m.stem = stem_of(varied_input);
    else if (sch)
      for (const auto& f : sch->fields)
        if (f.role == schema::Role::InputFile)
          if (auto it = m.values.find(f.key); it != m.values.end() && std::holds_alternative<std::string>(it->second)) {
            m.stem = stem_of(std::get<std::string>(it->second));
            break;
          }
    if (m.stem.empty()) m.stem = m.name;
    std::string index = std::to_string(i + 1);
    index.insert(0, width - index.size(), '0');
    // Templates in output fields (and in the key "output" of an engine that declares no roles).
    for (auto& [k, v] : m.values) {
      const schema::Field* f = sch ? sch->find(k) : nullptr;
      const bool output = f ? f->role == schema::Role::OutputFile : k == "output";
      if (!output) continue;
      if (auto s = std::get_if<std::string>(&v)) *s = apply_template(*s, m.stem, index, m.name, m.label + k);
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

RunPlan plan_job_file(const JobFile& jf, const PlanOptions& options) {
  RunPlan plan;
  plan.path = jf.path;
  plan.base_dir = jf.base_dir;
  Problems problems;
  for (const auto& e : jf.jobs) {
    Batch b;
    b.name = e.name;
    b.engine = e.engine;
    b.label = e.label;
    b.is_batch = e.batch.has_value();
    const EngineEntry* en = find_engine(e.engine);
    std::vector<MemberSpec> specs;
    try {
      specs = expand(e, en ? &en->schema() : nullptr);
    } catch (const ConfigError& err) {
      problems.config.push_back(err.what());
    }
    for (std::size_t i = 0; i < specs.size(); ++i) {
      Member m;
      m.index = i;
      m.name = specs[i].name;
      m.stem = specs[i].stem;
      m.label = specs[i].label;
      m.varied = specs[i].varied;
      try {
        m.job = make_job(JobRequest{e.engine, specs[i].values, jf.base_dir, m.label});
      } catch (const ConfigError& err) {
        problems.config.push_back(err.what());  // the engine's messages carry the label already
      } catch (const std::exception& err) {
        problems.config.push_back(m.label + err.what());
      }
      b.members.push_back(std::move(m));
      if (!en) break;  // one message for an unknown engine, not one per member
    }
    plan.batches.push_back(std::move(b));
  }
  for (const auto& a : jf.aggregates) {
    try {
      plan.aggregates.push_back(make_aggregate_step(a, plan));
    } catch (const ConfigError& err) {
      problems.config.push_back(err.what());
    }
  }

  // Files: inputs readable, outputs writable and distinct, protected paths untouched.
  struct Written {
    std::string key, path, label;
    std::optional<FileIdentity> id;
  };
  std::vector<Written> written;
  std::vector<std::pair<std::string, std::optional<FileIdentity>>> guarded;
  for (const auto& p : options.protected_paths) guarded.emplace_back(path_key(p), file_identity(p));
  auto is_guarded = [&](const std::string& path) -> const std::string* {
    const std::string k = path_key(path);
    const auto id = file_identity(path);
    for (std::size_t i = 0; i < guarded.size(); ++i)
      if (guarded[i].first == k || (id && guarded[i].second && *id == *guarded[i].second)) return &options.protected_paths[i];
    return nullptr;
  };
  auto add_output = [&](const std::string& out, const std::string& label, const std::vector<std::string>& inputs) {
    const std::string lab = strip_label(label);
    if (const std::string* g = is_guarded(out)) {
      problems.config.push_back(label + "output: " + out + " is the log file (" + *g + "); choose another --log-json");
      return;
    }
    Written w{path_key(out), out, label, file_identity(out)};
    for (const auto& o : written)
      if (o.key == w.key || (o.id && w.id && *o.id == *w.id)) {
        problems.config.push_back(label + "output: " + out + " is also written by " + strip_label(o.label) + " (" + o.path +
                                  "); each job and batch member needs its own output file (batch outputs: use {stem}, "
                                  "{index} or {name})");
        return;
      }
    written.push_back(std::move(w));
    try {
      OutputSet probe(inputs);
      probe.check(out);
    } catch (const IoError& err) {
      if (problems.first_output_file.empty()) problems.first_output_file = out;
      problems.output.push_back(lab + ": " + err.what());
    }
  };
  std::map<std::string, std::string> input_checked;  // path -> problem ("" when fine)
  for (const auto& b : plan.batches)
    for (const auto& m : b.members) {
      if (!m.job) continue;
      const auto inputs = m.job->input_paths();
      for (const auto& in : inputs) {
        if (const std::string* g = is_guarded(in)) {
          problems.config.push_back(m.label + "input: " + in + " is the log file (" + *g + "); a log is never an input");
          continue;
        }
        auto it = input_checked.find(in);
        if (it == input_checked.end()) it = input_checked.emplace(in, input_problem(in)).first;
        if (!it->second.empty()) problems.input.push_back(m.label + "input: " + in + ": " + it->second);
      }
      for (const auto& out : m.job->output_paths()) add_output(out, m.label, inputs);
    }
  for (const auto& a : plan.aggregates) add_output(a.output, a.label, a.inputs);

  if (!problems.config.empty()) {
    std::vector<std::string> all = problems.config;
    all.insert(all.end(), problems.input.begin(), problems.input.end());
    throw ConfigError("", Problems::join(all));
  }
  if (!problems.input.empty()) throw IoError("", "", Problems::join(problems.input));
  if (!problems.output.empty()) throw OutputProblem(problems.first_output_file, "", Problems::join(problems.output));
  return plan;
}

// ---- resume ------------------------------------------------------------------------------------

const std::string& HashCache::hash(const std::string& path) {
  auto it = cache_.find(path);
  if (it == cache_.end()) it = cache_.emplace(path, io::content_hash(path)).first;
  return it->second;
}

std::string stale_reason(const Job& job, HashCache& hashes) {
  nlohmann::json want = nlohmann::json::parse(job.config_json(), nullptr, false);
  for (const auto& out : job.output_paths()) {
    std::error_code ec;
    if (!fs::exists(out, ec)) return "output " + out + " does not exist";
    Provenance p;
    try {
      p = read_provenance(out);
    } catch (const IoError& e) {
      return std::string("output ") + out + " has no readable provenance (" + e.what() + ")";
    }
    nlohmann::json have = nlohmann::json::parse(p.config_json, nullptr, false);
    if (p.config_json.empty() || have.is_discarded() || want.is_discarded() || have != want)
      return "the configuration recorded in " + out + " differs";
    for (const auto& in : job.input_paths()) {
      auto it = p.input_hashes.find(in);
      if (it == p.input_hashes.end()) {  // recorded under another spelling of the same path
        const std::string k = path_key(in);
        for (auto jt = p.input_hashes.begin(); jt != p.input_hashes.end(); ++jt)
          if (path_key(jt->first) == k) it = jt;
      }
      if (it == p.input_hashes.end()) return "no content hash of " + in + " is recorded in " + out;
      if (it->second != hashes.hash(in)) return "input " + in + " changed since " + out + " was written";
    }
  }
  return {};
}

// ---- running -----------------------------------------------------------------------------------

std::unique_ptr<Outcome> run_member(const Batch& b, const Member& m, const CancelToken& cancel,
                                    const BatchRunOptions& options, BatchObserver& observer, HashCache& hashes) {
  std::unique_ptr<Outcome> outcome;
  const std::string why = options.resume ? stale_reason(*m.job, hashes) : std::string("resume off");
  if (why.empty() && !options.dry_run) {
    outcome = std::make_unique<Outcome>();
    outcome->engine = m.job->engine();
    outcome->operation = m.job->operation();
    outcome->inputs = m.job->input_paths();
    outcome->outputs = m.job->output_paths();
    outcome->skipped = true;
    outcome->summary.push_back("up to date (configuration and input hashes match): skipped");
  } else {
    JobContext ctx(
        cancel, [&](double done, double total, std::string_view stage) { observer.progress(b, m, done, total, stage); },
        [&](LogLevel level, std::string_view text) { observer.log(b, m, level, text); });
    ctx.threads = options.threads;
    RunOptions ro;
    ro.dry_run = options.dry_run;
    outcome = m.job->run(ctx, ro);
    if (options.dry_run && outcome) {
      outcome->skipped = why.empty();
      if (why.empty()) outcome->summary.push_back("up to date: a run would skip it");
    }
  }
  return outcome;
}

BatchSummary run_plan(const RunPlan& plan, const CancelToken& cancel, const BatchRunOptions& options,
                      BatchObserver& observer) {
  using Clock = std::chrono::steady_clock;
  BatchSummary s;
  HashCache hashes;
  for (const auto& b : plan.batches)
    for (const auto& m : b.members) {
      ++s.members;
      observer.member_started(b, m);
      const auto t0 = Clock::now();
      try {
        // A cancel that arrives between two members is reported against the next one (the
        // observer names it), exactly like one that arrives while a member runs.
        if (cancel.cancelled()) throw Cancelled();
        const std::unique_ptr<Outcome> outcome = run_member(b, m, cancel, options, observer, hashes);
        const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
        if (options.dry_run) ++s.planned;
        else if (outcome->skipped) ++s.skipped;
        else ++s.written;
        observer.member_finished(b, m, *outcome, secs);
      } catch (...) {
        observer.member_failed(b, m, std::current_exception());
        throw;
      }
    }
  for (const auto& a : plan.aggregates) {
    if (cancel.cancelled()) throw Cancelled();
    observer.aggregate_started(a);
    const auto t0 = Clock::now();
    try {
      JobContext ctx(cancel);
      ctx.threads = options.threads;
      auto outcome = run_aggregate(a, plan, ctx, options.dry_run);
      ++s.aggregates;
      observer.aggregate_finished(a, *outcome, std::chrono::duration<double>(Clock::now() - t0).count());
    } catch (...) {
      observer.aggregate_failed(a, std::current_exception());
      throw;
    }
  }
  return s;
}

}  // namespace almagest::jobs
