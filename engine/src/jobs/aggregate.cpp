// Aggregation steps over a batch's member outputs (almagest/jobs/aggregate.hpp).
#include "almagest/jobs/aggregate.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/core/provenance.hpp"
#include "almagest/io/hdf5_file.hpp"
#include "aggregate_readers.hpp"

namespace almagest::jobs {

namespace fs = std::filesystem;

const schema::Schema& aggregate_schema() {
  static const schema::Schema s = [] {
    using schema::Field;
    using schema::Kind;
    schema::Schema x;
    x.engine = "aggregate";
    x.operation_key = "kind";
    x.help = "An aggregation step over the outputs of one batch's members, in batch order.";
    const std::vector<std::string> npcf_ops{"npcf-mean-cov", "npcf-parity"};
    auto add = [&](Field f) { x.fields.push_back(std::move(f)); };
    Field kind;
    kind.key = "kind";
    kind.kind = Kind::Choice;
    kind.choices = {"npcf-mean-cov", "npcf-parity", "cl-mean-cov", "merge-candidates"};
    kind.required = true;
    kind.help = "What to compute: npcf-mean-cov (mean and covariance of an N-point dataset over realisations, "
                "Hartlap factor stated), npcf-parity (parity pulls of the odd channel and chi^2), cl-mean-cov "
                "(mean and covariance of C_l over maps), merge-candidates (stack candidates of many fields, "
                "duplicates across fields removed by RA/Dec).";
    add(kind);
    Field batch;
    batch.key = "batch";
    batch.required = true;
    batch.value_name = "NAME";
    batch.help = "The job whose members are aggregated: its name, or \"job N\".";
    add(batch);
    Field out;
    out.key = "output";
    out.required = true;
    out.role = schema::Role::OutputFile;
    out.value_name = "FILE";
    out.help = "Output file: HDF5 (.h5) for the statistics, ECSV (.ecsv) for merged candidates.";
    add(out);
    Field which;
    which.key = "member-output";
    which.kind = Kind::Integer;
    which.default_value = std::int64_t{1};
    which.min = 1;
    which.max = 64;
    which.help = "Which output of each member is read, when a member writes several (1 = the first).";
    add(which);
    Field ds;
    ds.key = "dataset";
    ds.operations = npcf_ops;
    ds.help = "N-point dataset aggregated: estimator, zeta_conn, n, ... (default: estimator; npcf-parity: zeta_odd).";
    add(ds);
    Field spectra;
    spectra.key = "spectra";
    spectra.kind = Kind::TextList;
    spectra.operations = {"cl-mean-cov"};
    spectra.help = "Spectra in the data vector, in this order (default: every spectrum of the first member).";
    add(spectra);
    Field radius;
    radius.key = "match-radius";
    radius.kind = Kind::Number;
    radius.operations = {"merge-candidates"};
    radius.unit = "arcsec";
    radius.default_value = 2.0;
    radius.min = 0.0;
    radius.min_exclusive = true;
    radius.max = 3600.0;
    radius.help = "Candidates of different fields closer than this on the sky are one object (the higher score is kept).";
    add(radius);
    Field score;
    score.key = "score";
    score.operations = {"merge-candidates"};
    score.default_value = std::string("z");
    score.help = "Column ranking duplicates: the candidate with the highest value is kept.";
    add(score);
    return x;
  }();
  return s;
}

double MeanCovariance::hartlap_factor() const noexcept {
  return n > 1 ? (double(n) - double(p) - 2.0) / (double(n) - 1.0) : 0.0;
}

MeanCovariance mean_covariance(const std::vector<std::vector<double>>& samples) {
  MeanCovariance m;
  m.n = samples.size();
  m.p = m.n ? samples[0].size() : 0;
  m.mean.assign(m.p, 0.0);
  m.covariance.assign(m.p * m.p, 0.0);
  if (m.n == 0) return m;
  // Two passes in sample order: the same members give the same bits.
  for (const auto& s : samples)
    for (std::size_t i = 0; i < m.p; ++i) m.mean[i] += s[i];
  for (double& v : m.mean) v /= double(m.n);
  if (m.n < 2) return m;
  std::vector<double> d(m.p);
  for (const auto& s : samples) {
    for (std::size_t i = 0; i < m.p; ++i) d[i] = s[i] - m.mean[i];
    for (std::size_t i = 0; i < m.p; ++i)
      for (std::size_t j = 0; j < m.p; ++j) m.covariance[i * m.p + j] += d[i] * d[j];
  }
  for (double& v : m.covariance) v /= double(m.n - 1);
  return m;
}

namespace {

/// Cholesky solve of C x = b; false when C is not positive definite.
bool cholesky_solve(std::vector<double> c, std::size_t p, std::vector<double>& x) {
  for (std::size_t j = 0; j < p; ++j) {
    double s = c[j * p + j];
    for (std::size_t k = 0; k < j; ++k) s -= c[j * p + k] * c[j * p + k];
    if (!(s > 0)) return false;
    c[j * p + j] = std::sqrt(s);
    for (std::size_t i = j + 1; i < p; ++i) {
      double t = c[i * p + j];
      for (std::size_t k = 0; k < j; ++k) t -= c[i * p + k] * c[j * p + k];
      c[i * p + j] = t / c[j * p + j];
    }
  }
  for (std::size_t i = 0; i < p; ++i) {
    double t = x[i];
    for (std::size_t k = 0; k < i; ++k) t -= c[i * p + k] * x[k];
    x[i] = t / c[i * p + i];
  }
  for (std::size_t i = p; i-- > 0;) {
    double t = x[i];
    for (std::size_t k = i + 1; k < p; ++k) t -= c[k * p + i] * x[k];
    x[i] = t / c[i * p + i];
  }
  return true;
}

}  // namespace

ParityNullTest parity_null_test(const std::vector<std::vector<double>>& samples) {
  ParityNullTest t;
  t.n = samples.size();
  t.p = t.n ? samples[0].size() : 0;
  for (const auto& s : samples)
    if (s.size() != t.p)
      throw ConfigError("samples", "realisations of different lengths (" + std::to_string(s.size()) + " and " +
                                       std::to_string(t.p) + " configurations)");
  const std::size_t n = t.n, p = t.p;
  t.mean.assign(p, 0.0);
  t.sigma.assign(p, 0.0);
  t.sigma_mean.assign(p, 0.0);
  t.z.assign(p, 0.0);
  // Two passes in sample order, as mean_covariance: its diagonal has the same bits.
  for (const auto& s : samples)
    for (std::size_t i = 0; i < p; ++i) t.mean[i] += s[i];
  if (n > 0)
    for (double& v : t.mean) v /= double(n);
  std::vector<double> var(p, 0.0);
  if (n >= 2) {
    for (const auto& s : samples)
      for (std::size_t i = 0; i < p; ++i) {
        const double d = s[i] - t.mean[i];
        var[i] += d * d;
      }
    for (double& v : var) v /= double(n - 1);
  }
  for (std::size_t i = 0; i < p; ++i) {
    t.sigma[i] = std::sqrt(var[i]);
    t.sigma_mean[i] = n > 0 ? std::sqrt(var[i] / double(n)) : 0.0;
    if (t.sigma_mean[i] > 0) {
      t.z[i] = t.mean[i] / t.sigma_mean[i];
      t.chi2 += t.z[i] * t.z[i];
      ++t.dof;
      if (std::abs(t.z[i]) > 2.0) ++t.beyond_2sigma;
    } else {
      ++t.degenerate;  // no scatter (e.g. an unrealisable configuration): no pull
    }
  }
  t.chi2_per_dof = t.dof ? t.chi2 / double(t.dof) : 0.0;
  t.fraction_beyond_2sigma = t.dof ? double(t.beyond_2sigma) / double(t.dof) : 0.0;
  // z is Student-t with nu = N - 1: E[t^2] = nu/(nu - 2), Var[t^2] = 2 nu^2 (nu - 1)/((nu - 2)^2 (nu - 4)).
  const double nu = double(n) - 1.0;
  t.expected_chi2_per_dof = nu > 2 ? nu / (nu - 2) : std::nan("");
  t.expected_spread = nu > 4 && t.dof > 0
                          ? std::sqrt(2 * nu * nu * (nu - 1) / ((nu - 2) * (nu - 2) * (nu - 4)) / double(t.dof))
                          : std::nan("");
  return t;
}

ParityPulls parity_pulls(const std::vector<std::vector<double>>& samples) {
  ParityPulls r;
  r.test = parity_null_test(samples);
  r.stats = mean_covariance(samples);
  const std::size_t n = r.stats.n, p = r.stats.p;
  r.sigma_mean = r.test.sigma_mean;
  r.z = r.test.z;
  r.chi2 = r.test.chi2;
  r.dof = r.test.dof;
  r.degenerate = r.test.degenerate;
  r.chi2_full = std::nan("");
  if (r.stats.hartlap_factor() > 0) {
    std::vector<double> x = r.stats.mean;
    if (cholesky_solve(r.stats.covariance, p, x)) {
      double q = 0;
      for (std::size_t i = 0; i < p; ++i) q += r.stats.mean[i] * x[i];
      r.chi2_full = double(n) * r.stats.hartlap_factor() * q;
    }
  }
  return r;
}

AggregateStep make_aggregate_step(const AggregateEntry& entry, const RunPlan& plan) {
  AggregateStep step;
  step.label = entry.label;
  step.values = entry.values;
  schema::Reader r(aggregate_schema(), step.values, entry.label);
  const auto kind = r.choice("kind");
  r.check_keys(kind ? *kind : std::string_view{});
  const auto batch = r.text("batch");
  const auto output = r.text("output");
  const auto which = r.integer_or_default("member-output");
  if (kind) step.kind = *kind;
  if (output) step.output = schema::resolve_path(*output, plan.base_dir);
  if (batch) {
    bool found = false;
    for (std::size_t i = 0; i < plan.batches.size(); ++i)
      if (plan.batches[i].name == *batch) {
        step.batch = i;
        found = true;
      }
    if (!found) {
      std::string names;
      for (const auto& b : plan.batches) names += (names.empty() ? "" : ", ") + ("'" + b.name + "'");
      r.problem("batch", "no job is named '" + *batch + "' (jobs: " + names + ")");
    } else {
      for (const auto& m : plan.batches[step.batch].members) {
        if (!m.job) continue;
        const auto outs = m.job->output_paths();
        if (which > static_cast<std::int64_t>(outs.size())) {
          r.problem("member-output", std::to_string(which) + ": " + strip_suffix(m.label) + " writes " +
                                         std::to_string(outs.size()) + " output(s)");
          break;
        }
        step.inputs.push_back(outs[static_cast<std::size_t>(which - 1)]);
      }
      if (step.inputs.size() < 2 && kind && *kind != "merge-candidates")
        r.problem("batch", "'" + *batch + "' has " + std::to_string(step.inputs.size()) +
                               " member(s): a mean and covariance need at least 2");
    }
  }
  r.throw_if_problems();
  return step;
}

namespace {

std::string relative_to(const std::string& path, const std::string& base) {
  std::error_code ec;
  fs::path rel = fs::relative(fs::path(path), fs::path(base), ec);
  return ec || rel.empty() ? path : rel.generic_string();
}

/// The provenance of an aggregate: deterministic (no time, host or absolute path).
std::string aggregate_provenance(const AggregateStep& step, const RunPlan& plan, const std::vector<std::string>& hashes) {
  nlohmann::json j;
  j["software"] = "Almagest";
  j["version"] = almagest::version();
  j["kind"] = step.kind;
  nlohmann::json cfg = nlohmann::json::object();
  for (const auto& [k, v] : step.values) cfg[k] = schema::describe(v);
  j["config"] = cfg;
  const Batch& b = plan.batches[step.batch];
  nlohmann::json members = nlohmann::json::array();
  for (std::size_t i = 0; i < step.inputs.size(); ++i)
    members.push_back({{"member", i + 1},
                       {"name", i < b.members.size() ? b.members[i].name : std::string()},
                       {"file", relative_to(step.inputs[i], plan.base_dir)},
                       {"values_hash", hashes[i]}});
  j["members"] = members;
  j["note"] = "files relative to the job file's folder; values_hash: FNV-1a 64 of the values read from each member";
  return j.dump();
}

void write_stats(io::Hdf5Writer& w, const MeanCovariance& mc, const std::string& group) {
  w.write(group + "/mean", mc.mean);
  w.write(group + "/covariance", mc.covariance, {mc.p, mc.p});
  w.attr(group + "/covariance", "description",
         std::string("unbiased sample covariance sum_k (x_k - mean)(x_k - mean)^T / (n - 1)"));
  std::vector<double> sigma(mc.p);
  for (std::size_t i = 0; i < mc.p; ++i) sigma[i] = std::sqrt(mc.covariance[i * mc.p + i]);
  w.write(group + "/sigma", sigma);
  w.attr("/", "n_realisations", static_cast<std::int64_t>(mc.n));
  w.attr("/", "n_values", static_cast<std::int64_t>(mc.p));
  w.attr("/", "hartlap_factor", mc.hartlap_factor());
  w.attr("/", "hartlap",
         std::string(mc.hartlap_factor() > 0
                         ? "unbiased inverse covariance = hartlap_factor * inverse(covariance), hartlap_factor = (n - p - 2) / (n - 1) "
                           "(Hartlap, Simon & Schneider 2007)"
                         : "n <= p + 2: the sample covariance is not invertible; hartlap_factor = (n - p - 2) / (n - 1) <= 0 "
                           "(use more realisations or fewer values)"));
}

}  // namespace

std::string strip_suffix(const std::string& label) {
  return label.size() >= 2 && label.compare(label.size() - 2, 2, ": ") == 0 ? label.substr(0, label.size() - 2) : label;
}

std::unique_ptr<Outcome> run_aggregate(const AggregateStep& step, const RunPlan& plan, const JobContext& ctx, bool dry_run) {
  auto out = std::make_unique<Outcome>();
  out->engine = "aggregate";
  out->operation = step.kind;
  out->inputs = step.inputs;
  if (dry_run) {
    PlanReport pr;
    for (const auto& in : step.inputs) {
      std::error_code ec;
      const auto size = fs::file_size(in, ec);
      pr.inputs.push_back({in, ec ? 0 : size, fs::exists(in, ec) ? "member output" : "member output (not yet written)"});
    }
    pr.outputs.push_back(step.output);
    pr.tiling = "one pass over " + std::to_string(step.inputs.size()) + " member outputs";
    out->plan = pr;
    out->summary.push_back("would write " + step.output + " (" + step.kind + " over " + std::to_string(step.inputs.size()) +
                           " members)");
    return out;
  }
  OutputSet set(step.inputs, ctx.token());
  const schema::Values& v = step.values;
  auto text_or = [&](const char* key, std::string def) {
    auto it = v.find(key);
    return it != v.end() && std::holds_alternative<std::string>(it->second) ? std::get<std::string>(it->second) : def;
  };
  if (step.kind == "npcf-mean-cov" || step.kind == "npcf-parity") {
    const bool parity = step.kind == "npcf-parity";
    const std::string dataset = text_or("dataset", parity ? "zeta_odd" : "estimator");
    NpcfSamples s = read_npcf_samples(step.inputs, dataset, ctx);
    OutputSet::Scope scope(set);
    io::Hdf5Writer w(step.output);
    w.attr("/", "kind", step.kind);
    w.attr("/", "statistic", s.statistic);
    w.attr("/", "dataset", dataset);
    w.write("/bins", s.bins, {static_cast<std::uint64_t>(s.rows), static_cast<std::uint64_t>(s.bins.size() / std::max<std::size_t>(1, s.rows))});
    w.write("/samples", flatten(s.values), {s.values.size(), s.rows});
    if (parity) {
      ParityPulls pp = parity_pulls(s.values);
      write_stats(w, pp.stats, "");
      w.write("/sigma_mean", pp.sigma_mean);
      w.write("/z", pp.z);
      w.attr("/z", "description", std::string("parity pull z = mean / (s / sqrt(n)) per configuration (0 where s = 0)"));
      w.attr("/", "chi2", pp.chi2);
      w.attr("/", "dof", static_cast<std::int64_t>(pp.dof));
      w.attr("/", "chi2_per_dof", pp.dof ? pp.chi2 / double(pp.dof) : 0.0);
      w.attr("/", "degenerate_configurations", static_cast<std::int64_t>(pp.degenerate));
      w.attr("/", "fraction_beyond_2sigma", pp.test.fraction_beyond_2sigma);
      if (std::isfinite(pp.test.expected_chi2_per_dof)) w.attr("/", "expected_chi2_per_dof", pp.test.expected_chi2_per_dof);
      if (std::isfinite(pp.chi2_full)) w.attr("/", "chi2_full", pp.chi2_full);
      out->summary.push_back("parity pulls of " + dataset + " over " + std::to_string(s.values.size()) + " realisations: chi2 " +
                             std::to_string(pp.chi2) + " for " + std::to_string(pp.dof) + " dof");
    } else {
      MeanCovariance mc = mean_covariance(s.values);
      write_stats(w, mc, "");
      out->summary.push_back("mean and covariance of " + dataset + " over " + std::to_string(mc.n) + " realisations (" +
                             std::to_string(mc.p) + " values, Hartlap factor " + std::to_string(mc.hartlap_factor()) + ")");
    }
    w.attr("/", "provenance", aggregate_provenance(step, plan, s.hashes));
    w.commit();
    set.commit();
  } else if (step.kind == "cl-mean-cov") {
    std::vector<std::string> spectra;
    if (auto it = v.find("spectra"); it != v.end()) {
      if (auto l = std::get_if<std::vector<std::string>>(&it->second)) spectra = *l;
      else if (auto t = std::get_if<std::string>(&it->second)) spectra = {*t};
    }
    ClSamples s = read_cl_samples(step.inputs, spectra, ctx);
    MeanCovariance mc = mean_covariance(s.values);
    OutputSet::Scope scope(set);
    io::Hdf5Writer w(step.output);
    w.attr("/", "kind", step.kind);
    std::string joined;
    for (const auto& x : s.spectra) joined += (joined.empty() ? "" : ",") + x;
    w.attr("/", "spectra", joined);
    w.write("/ell", s.ell);
    w.write("/samples", flatten(s.values), {s.values.size(), mc.p});
    write_stats(w, mc, "");
    w.attr("/mean", "layout", std::string("spectra in the order of the 'spectra' attribute, each over ell"));
    w.attr("/", "provenance", aggregate_provenance(step, plan, s.hashes));
    w.commit();
    set.commit();
    out->summary.push_back("mean and covariance of C_l (" + joined + ") over " + std::to_string(mc.n) + " maps");
  } else if (step.kind == "merge-candidates") {
    const double radius = [&] {
      auto it = v.find("match-radius");
      if (it == v.end()) return 2.0;
      if (auto d = std::get_if<double>(&it->second)) return *d;
      if (auto i = std::get_if<std::int64_t>(&it->second)) return double(*i);
      return std::stod(std::get<std::string>(it->second));
    }();
    const Batch& b = plan.batches[step.batch];
    std::vector<std::string> names;
    for (const auto& m : b.members) names.push_back(m.name);
    MergedCandidates mc = merge_candidates(step.inputs, names, radius, text_or("score", "z"), ctx);
    OutputSet::Scope scope(set);
    write_text_atomic(step.output, format_merged(mc, radius, aggregate_provenance(step, plan, mc.hashes)));
    set.commit();
    out->summary.push_back("merged " + std::to_string(mc.total) + " candidates of " + std::to_string(step.inputs.size()) +
                           " fields into " + std::to_string(mc.rows.size()) + " (" + std::to_string(mc.total - mc.rows.size()) +
                           " duplicates within " + std::to_string(radius) + " arcsec removed)");
  }
  out->outputs.push_back(step.output);
  return out;
}

}  // namespace almagest::jobs
