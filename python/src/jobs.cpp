// almagest.run_job(dict) and almagest.run_batch(path): thin bindings over the engine's job layer
// (almagest/jobs/job.hpp, batch.hpp), the same calls `almagest-cli run` makes
// (app/cli/run_command.cpp); outcomes come back as dicts.
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <vector>

#include "almagest/core/error.hpp"
#include "almagest/jobs/batch.hpp"
#include "almagest/jobs/job.hpp"
#include "almagest/jobs/job_file.hpp"
#include "engine_call.hpp"

namespace almagest::py {

schema::Value schema_value(const std::string& key, nb::handle v) {
  if (nb::isinstance<nb::bool_>(v)) return nb::cast<bool>(v);
  if (nb::isinstance<nb::int_>(v)) {
    try {
      return nb::cast<std::int64_t>(v);
    } catch (const std::exception&) {
      throw ConfigError(key, nb::cast<std::string>(nb::repr(v)) + " is out of range (a 64-bit integer)");
    }
  }
  if (nb::isinstance<nb::float_>(v)) return nb::cast<double>(v);
  if (nb::isinstance<nb::str>(v)) return nb::cast<std::string>(v);
  if (nb::isinstance<nb::list>(v) || nb::isinstance<nb::tuple>(v)) {
    std::vector<std::string> items;
    for (nb::handle item : v) {
      if (!nb::isinstance<nb::str>(item))
        throw ConfigError(key, "expected a list of strings, got " + nb::cast<std::string>(nb::repr(v)));
      items.push_back(nb::cast<std::string>(item));
    }
    return items;
  }
  throw ConfigError(key, "unsupported value " + nb::cast<std::string>(nb::repr(v)));
}

namespace {

nb::dict plan_dict(const jobs::PlanReport& p) {
  nb::list inputs;
  for (const auto& in : p.inputs) {
    nb::dict d;
    d["path"] = in.path;
    d["bytes"] = in.bytes;
    d["what"] = in.what;
    inputs.append(d);
  }
  nb::dict d;
  d["inputs"] = inputs;
  d["outputs"] = p.outputs;
  d["host_bytes"] = p.host_bytes;
  d["device_bytes"] = p.device_bytes;
  d["tiling"] = p.tiling;
  d["estimated_seconds"] = p.estimated_seconds;
  d["notes"] = p.notes;
  return d;
}

nb::dict outcome_dict(const jobs::Outcome& o) {
  nb::dict d;
  d["engine"] = o.engine;
  d["operation"] = o.operation;
  d["inputs"] = o.inputs;
  d["outputs"] = o.outputs;
  d["summary"] = o.summary;
  d["backend"] = o.backend;
  d["device"] = o.device;
  d["threads"] = o.threads;
  d["timings_s"] = o.timings_s;
  d["skipped"] = o.skipped;
  if (o.plan) d["plan"] = plan_dict(*o.plan);
  return d;
}

/// Collects every member's and aggregate's outcome (copies of the engine-agnostic part: the
/// observer runs on the worker thread, where no Python object may be touched).
class CollectingObserver : public jobs::BatchObserver {
public:
  explicit CollectingObserver(const JobContext& ctx) : ctx_(ctx) {}
  std::vector<jobs::Outcome> outcomes;

  void progress(const jobs::Batch&, const jobs::Member&, double done, double total, std::string_view stage) override {
    ctx_.progress(done, total, stage);
  }
  void log(const jobs::Batch&, const jobs::Member&, LogLevel level, std::string_view text) override {
    ctx_.log(level, text);
  }
  void member_finished(const jobs::Batch&, const jobs::Member&, const jobs::Outcome& o, double) override {
    outcomes.push_back(o);
  }
  void aggregate_finished(const jobs::AggregateStep&, const jobs::Outcome& o, double) override {
    outcomes.push_back(o);
  }

private:
  const JobContext& ctx_;
};

}  // namespace

void bind_jobs(nb::module_& m) {
  m.def("_run_job", [](nb::dict py_values, bool dry_run, nb::handle progress) {
    jobs::JobRequest req;
    req.engine = "npcf";
    if (py_values.contains("engine")) req.engine = nb::cast<std::string>(py_values["engine"]);
    const jobs::EngineEntry* entry = jobs::find_engine(req.engine);
    if (!entry) jobs::make_job(req);  // the job layer's ConfigError naming the engines
    for (auto [k, v] : py_values) {
      const std::string key = nb::cast<std::string>(k);
      if (key == "engine") continue;
      const std::string canon = schema::canonical_key(entry->schema(), key);
      if (canon.empty()) throw ConfigError(key, "unknown option of engine " + req.engine);
      req.values[canon] = schema_value(canon, v);
    }
    std::unique_ptr<jobs::Job> job = jobs::make_job(req);
    jobs::check_job_files(*job, req.label);
    std::unique_ptr<jobs::Outcome> outcome;
    jobs::RunOptions ro;
    ro.dry_run = dry_run;
    run_engine([&](const JobContext& ctx) { outcome = job->run(ctx, ro); }, 0, progress);
    if (dry_run && outcome->plan) {
      nb::dict d = plan_dict(*outcome->plan);
      d["engine"] = outcome->engine;
      d["operation"] = outcome->operation;
      d["summary"] = outcome->summary;
      return d;
    }
    return outcome_dict(*outcome);
  }, nb::arg("values"), nb::arg("dry_run") = false, nb::arg("progress").none() = nb::none());

  m.def("_run_batch", [](const std::string& path, bool dry_run, bool force, int threads, nb::handle progress) {
    jobs::JobFile jf = jobs::read_job_file(path);
    jobs::RunPlan plan = jobs::plan_job_file(jf);
    jobs::BatchRunOptions ro;
    ro.dry_run = dry_run;
    ro.resume = !force;
    ro.threads = threads;
    std::vector<jobs::Outcome> outcomes;
    run_engine([&](const JobContext& ctx) {
      CollectingObserver obs(ctx);
      jobs::run_plan(plan, ctx.token(), ro, obs);
      outcomes = std::move(obs.outcomes);
    }, threads, progress);
    nb::list out;
    for (const auto& o : outcomes) out.append(outcome_dict(o));
    return out;
  }, nb::arg("path"), nb::arg("dry_run") = false, nb::arg("force") = false, nb::arg("threads") = 0,
     nb::arg("progress").none() = nb::none());
}

}  // namespace almagest::py
