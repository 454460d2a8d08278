// run_npcf_job: the one way an N-point job runs (CLI, job files, GUI, Python): catalogues -> point
// set -> NpcfPlan -> statistics -> outputs in one OutputSet with provenance. It never prints and
// never exits; what a user sees goes through the JobContext and the returned NpcfOutcome.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/io/catalogue.hpp"
#include "almagest/io/text_file.hpp"
#include "almagest/core/gpu.hpp"
#include "almagest/npcf/configurations.hpp"
#include "almagest/npcf/jackknife.hpp"
#include "almagest/npcf/job.hpp"
#include "almagest/npcf/plan.hpp"
#include "almagest/npcf/points.hpp"
#include "regions_run.hpp"

namespace almagest::npcf {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double elapsed_seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string statistics_text(const NpcfJob& job) {
  std::string s;
  for (std::size_t i = 0; i < job.statistics.size(); ++i)
    s += (i ? "," : "") + std::string(to_string(job.statistics[i]));
  return s;
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (b >= 1024.0 && u < 5) {
    b /= 1024.0;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f %s", b, units[u]);
  return buf;
}

std::string fixed(double v, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

/// Every output may be written (directory exists and is writable, an existing target is a
/// regular file, no output is an input or written twice): checked before any work. The IoError
/// names the output, so front ends know it is about an output (CLI exit 5).
void check_outputs(const OutputSet& set, const std::vector<std::string>& paths) {
  for (std::size_t i = 0; i < paths.size(); ++i) {
    set.check(paths[i]);
    for (std::size_t j = 0; j < i; ++j)
      if (fs::weakly_canonical(fs::absolute(paths[j])) == fs::weakly_canonical(fs::absolute(paths[i])))
        throw IoError(paths[i], "", "is written twice by this job");
  }
}

std::uint64_t file_bytes(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

// CPU cost model from the measured rows of docs/benchmarks.md ("N-point correlations (CPU)":
// N = 100,000, 2 threads, m = 141 and 359): core-seconds per unit of work, where the work of a
// statistic grows with E (stored edges) times a power of m (mean full neighbour count).
constexpr double kGraphPerEdge = 1.84e-7;      // graph build 0.65 s x 2 threads / 7.05e6 edges
constexpr double kTwoPointPerEdge = 1.0e-8;    // 2pCF: one pass over the edges (not measured)
constexpr double kThreePointPerEm = 1.51e-9;   // 3pCF: 0.75 s x 2 / (7.05e6 x 141)
constexpr double kFourPointPerEm2 = 1.07e-10;  // 4pCF: 7.52 s x 2 / (7.05e6 x 141^2)
constexpr double kParityPerEm2 = 1.80e-10;     // parity 4pCF: 12.6 s x 2 / (7.05e6 x 141^2)

double core_seconds(Statistic s, double edges, double m) {
  switch (s) {
    case Statistic::TwoPoint: return kTwoPointPerEdge * edges;
    case Statistic::ThreePoint: return kThreePointPerEm * edges * m;
    case Statistic::ThreePointEquilateral: return kThreePointPerEm * edges * m / 10.0;
    case Statistic::FourPoint: return kFourPointPerEm2 * edges * m * m + kTwoPointPerEdge * edges;
    case Statistic::FourPointParity: break;
  }
  return kParityPerEm2 * edges * m * m + kTwoPointPerEdge * edges;
}

/// The job layer's face of an N-point job.
class NpcfEngineJob final : public jobs::Job {
public:
  explicit NpcfEngineJob(NpcfJob job) : job_(std::move(job)) {}
  const std::string& engine() const noexcept override { return engine_; }
  std::string operation() const override { return statistics_text(job_); }
  std::vector<std::string> input_paths() const override { return job_.input_paths(); }
  std::vector<std::string> output_paths() const override {
    auto p = job_.output_paths();
    for (auto& j : job_.jackknife_paths()) p.push_back(std::move(j));
    for (auto& j : job_.region_paths()) p.push_back(std::move(j));
    return p;
  }
  std::string config_json() const override { return job_.config_json(); }
  schema::Values values() const override { return to_job_values(job_); }
  std::unique_ptr<jobs::Outcome> run(const JobContext& ctx, const jobs::RunOptions& options) const override {
    return std::make_unique<NpcfOutcome>(run_npcf_job(job_, ctx, options));
  }
  const NpcfJob& job() const noexcept { return job_; }

private:
  std::string engine_ = "npcf";
  NpcfJob job_;
};

}  // namespace

jobs::PlanReport plan_report(const NpcfJob& job, const PointSet& points, const GraphEstimate& e) {
  jobs::PlanReport p;
  p.inputs.push_back({job.data.path, file_bytes(job.data.path), "data catalogue"});
  if (job.randoms) p.inputs.push_back({job.randoms->path, file_bytes(job.randoms->path), "random catalogue"});
  p.outputs = job.output_paths();
  const double n = static_cast<double>(points.size());
  // Point set (x, y, z, w: 32 bytes a point), the graph, and the counting tables: the process
  // peaks measured in docs/benchmarks.md are 10.8-16.1 bytes per edge against the graph's 5-7.
  const bool pixels = job.config.store_pixels;
  p.host_bytes = 32.0 * n + e.bytes * (pixels ? 16.1 / 7.11 : 12.1 / 5.11);
  const ResolvedBackend rb = [&] {
    try {
      return resolve_backend(job.config.backend);
    } catch (const BackendUnavailable& ex) {
      p.notes.push_back(ex.what());
      return ResolvedBackend{};
    }
  }();
  const double m = e.mean_neighbours;
  if (rb.cuda()) {
    // Device: points and the graph resident (edges, bins, pixels), plus per-window scratch; a
    // 3pCF also keeps a packed (x, y, z, w) copy of every point for the dense-neighbourhood kernel
    // (kernels/src/npcf_count.cu, 32 more bytes a point).
    const bool dense3 = std::find(job.statistics.begin(), job.statistics.end(),
                                  Statistic::ThreePoint) != job.statistics.end();
    p.device_bytes = (dense3 ? 64.0 : 32.0) * n + e.bytes;
    p.tiling = "graph resident on the device when it fits 85% of its free memory, else edge "
               "windows (docs/npcf-cuda.md)";
    p.notes.push_back("estimated time: CPU model only (device rates are in docs/benchmarks.md)");
  } else {
    const int threads = resolve_threads(job.config.threads);
    p.tiling = "one graph, hubs in fixed chunks over " + std::to_string(threads) + " thread" +
               (threads == 1 ? "" : "s");
    double t = kGraphPerEdge * e.edges;
    for (Statistic s : job.statistics) t += core_seconds(s, e.edges, m);
    p.estimated_seconds = t / threads;
  }
  if (!rb.note.empty()) p.notes.push_back(rb.note);
  p.notes.push_back(std::to_string(points.size()) + " points (" + std::to_string(points.ndata) +
                    " data, " + std::to_string(points.size() - points.ndata) + " randoms); graph estimate " +
                    fixed(e.edges, 0) + " edges (half graph), mean neighbours " + fixed(m, 2) +
                    ", " + human_bytes(e.bytes) + ", from " + std::to_string(e.sampled) + " sampled hubs");
  return p;
}

namespace {

std::uint64_t mem_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;  // unknown: no host limit
}

}  // namespace

JobMemory job_memory(const NpcfJob& job, int threads, bool cuda) {
  JobMemory m;
  const int n = job.config.bins.nbins;
  const int nmu = std::max(1, job.config.nmu);
  double results = 0, peak_work = 0;
  for (Statistic s : job.statistics) {
    double rows = 0, table = 0, work = 0, device = 0, per_row = 0;
    switch (s) {
      case Statistic::TwoPoint:
        rows = static_cast<double>(n) * nmu;
        per_row = 1 + 1 + 40;  // bin, mu, tuples random_tuples n r estimator
        work = (threads + 1.0) * rows * 32;
        device = rows * 64;
        break;
      case Statistic::ThreePoint:
      case Statistic::ThreePointEquilateral:
        rows = static_cast<double>(s == Statistic::ThreePoint ? num_rows_3pcf(n) : n) * nmu;
        per_row = 3 + 1 + 40;
        table = 4.0 * n * n;
        work = (threads + 1.0) * rows * 32;
        device = table + rows * 64;
        break;
      case Statistic::FourPoint:
      case Statistic::FourPointParity: {
        const bool parity = s == Statistic::FourPointParity;
        rows = static_cast<double>(TetraTable::expected_rows(n));
        // The packed table (4 n^6 bytes; a 2 n^6 16-bit copy too when the rows fit 16 bits) and
        // the canonical tuples; per thread a chunk accumulator and the banked row sums (fourpoint.cpp),
        // one more accumulator for the total.
        const double packed = static_cast<double>(tetra_table_bytes(n));
        const bool compact = 2 * rows + 1 < 65536;
        table = packed * (compact ? 1.5 : 1.0) + 6 * rows;
        const double banks = rows <= 16384 ? 8 : 1;
        work = table + (threads + 1.0) * rows * (parity ? 56 : 32) +
               threads * banks * rows * (parity ? 4 : 2) * 8;
        per_row = 6 + 40 + 16 + 1 + (parity ? 32 : 0);
        device = (compact ? packed / 2 : packed) + rows * (parity ? 128 : 64);
        break;
      }
    }
    // With a jackknife every realisation's result is kept until the statistics are formed, plus
    // the per-realisation arrays and the covariance of the attached jackknife.
    const double nj = job.jackknife;
    const double result = rows * per_row * (1 + nj) +
                          (nj > 0 ? rows * 8 * (3 * nj + 2) +
                                        (rows <= kMaxCovarianceRows ? rows * rows * 8 : 0.0)
                                  : 0.0);
    results += result;
    peak_work = std::max(peak_work, cuda ? table + rows * 64 : work);
    m.device_bytes = std::max(m.device_bytes, device);
    m.lines.push_back(std::string(to_string(s)) + ": " + fixed(rows, 0) + " rows; tables " +
                      human_bytes(table) + ", row sums " +
                      human_bytes((cuda ? rows * 64 : work - table)) + (cuda ? " (host)" : "") +
                      ", result " + human_bytes(result) +
                      (cuda ? "; device " + human_bytes(device) : std::string()));
  }
  m.host_bytes = peak_work + results;
  return m;
}

std::string memory_refusal(const NpcfJob& job, const JobMemory& m, bool cuda) {
  const double limit = job.host_memory_mib > 0 ? static_cast<double>(job.host_memory_mib) * 1048576.0
                                               : static_cast<double>(mem_available_bytes());
  if (limit > 0 && m.host_bytes > limit)
    return "host-memory: the job's tables, row sums and results need " + human_bytes(m.host_bytes) +
           " of host memory but " + human_bytes(limit) +
           (job.host_memory_mib > 0 ? " is allowed (host-memory)" : " is available") +
           "; use fewer bins (the 4pCF table grows as nbins^6) or fewer threads";
  if (cuda && gpu_status().available) {
    double smallest = 0;
    const auto& devs = gpu_status().query.devices;
    const int only = job.config.backend.device;  // cuda:N (N > 0) alone, else every device
    for (const auto& d : devs) {
      if (only > 0 && d.index != only) continue;
      const double cap = 0.85 * static_cast<double>(d.total_memory);
      if (smallest == 0 || cap < smallest) smallest = cap;
    }
    if (smallest > 0 && m.device_bytes > smallest)
      return "nbins: the job's tables and row sums need " + human_bytes(m.device_bytes) +
             " of device memory but 85% of the device's memory is " + human_bytes(smallest) +
             "; use fewer bins or the cpu backend";
  }
  return {};
}

void write_result(const NpcfResult& r, const std::string& path, OutputFormat format) {
  switch (format) {
    case OutputFormat::Gramsci: write_gramsci(r, path); return;
    case OutputFormat::Text: write_text_exact(r, path); return;
    case OutputFormat::Hdf5: write_hdf5(r, path); return;
  }
}

NpcfOutcome run_npcf_job(const NpcfJob& job, const JobContext& ctx, const jobs::RunOptions& options) {
  NpcfOutcome out;
  out.engine = "npcf";
  out.operation = statistics_text(job);
  out.inputs = job.input_paths();
  out.threads = resolve_threads(job.config.threads > 0 ? job.config.threads : ctx.threads);
  const auto paths = job.output_paths();
  const bool writing = options.write && !options.dry_run;
  // Tables, row sums and results are exact from the configuration: a job that cannot fit is
  // refused before any catalogue is read (a dry run reports it instead).
  const bool on_cuda = [&] {
    try {
      return resolve_backend(job.config.backend).cuda();
    } catch (const BackendUnavailable&) {
      return job.config.backend.kind == BackendKind::Cuda;
    }
  }();
  const JobMemory memory = job_memory(job, out.threads, on_cuda);
  const std::string refusal = memory_refusal(job, memory, on_cuda);
  if (!refusal.empty() && !options.dry_run) {
    const auto colon = refusal.find(": ");
    throw ConfigError(refusal.substr(0, colon), refusal.substr(colon + 2));
  }
  std::optional<OutputSet> outputs;
  const std::vector<std::string> jk_paths = job.jackknife_paths();
  if (writing) {
    outputs.emplace(out.inputs, ctx.token());
    std::vector<std::string> all = paths;
    all.insert(all.end(), jk_paths.begin(), jk_paths.end());
    const auto region_paths = job.region_paths();
    all.insert(all.end(), region_paths.begin(), region_paths.end());
    check_outputs(*outputs, all);
  }
  if (!job.regions.empty()) {
    // Several sky regions: one plan per region, combined at the level of counts (regions.hpp).
    detail::run_region_job(job, ctx, options.dry_run, writing ? &*outputs : nullptr, out);
    return out;
  }

  // Catalogues -> point set (data first, then randoms; weights normalised).
  auto t0 = Clock::now();
  std::optional<PointSet> points;
  {
    ctx.progress(0, job.randoms ? 2 : 1, "reading catalogues");
    io::Catalogue data = io::load_catalogue(job.data);
    ctx.check_cancel();
    std::optional<io::Catalogue> randoms;
    if (job.randoms) {
      ctx.progress(1, 2, "reading catalogues");
      randoms = io::load_catalogue(*job.randoms);
      ctx.check_cancel();
    }
    points = make_point_set(data, randoms ? &*randoms : nullptr);
    if (job.config.periodic) wrap_periodic(*points, job.config.box);
  }
  out.ndata = points->ndata;
  out.nrandom = points->size() - points->ndata;
  out.load_seconds = elapsed_seconds(t0);
  out.timings_s["catalogues"] = out.load_seconds;

  if (options.dry_run) {
    ctx.progress(0, 1, "estimating graph");
    out.estimate = estimate_graph(*points, job.config);
    out.plan = plan_report(job, *points, out.estimate);
    // Tables, row sums and results, exact (plan_report's host figure scales the graph only).
    out.plan->host_bytes += memory.host_bytes;
    out.plan->device_bytes += on_cuda ? memory.device_bytes : 0.0;
    for (const auto& l : memory.lines) out.plan->notes.push_back("memory " + l);
    if (!refusal.empty()) out.plan->notes.push_back("would be refused: " + refusal);
    out.backend = job.config.backend.kind == BackendKind::Cpu ? "cpu" : almagest::to_string(job.config.backend);
    out.summary.push_back("dry run: " + out.operation + " on " + std::to_string(points->size()) +
                          " points (" + std::to_string(out.ndata) + " data, " +
                          std::to_string(out.nrandom) + " randoms)");
    const auto& e = out.estimate;
    out.summary.push_back("graph estimate: " + fixed(e.edges, 0) + " edges (half graph), mean neighbours " +
                          fixed(e.mean_neighbours, 2) + ", memory " + fixed(e.bytes, 0) + " bytes (" +
                          human_bytes(e.bytes) + "), from " + std::to_string(e.sampled) + " sampled hubs");
    for (const auto& l : memory.lines) out.summary.push_back("memory " + l);
    if (!refusal.empty()) out.summary.push_back("would be refused: " + refusal);
    const auto& p = *out.plan;
    out.summary.push_back("host memory ~" + human_bytes(p.host_bytes) +
                          (p.device_bytes > 0 ? ", device memory ~" + human_bytes(p.device_bytes) : std::string()) +
                          "; tiling: " + p.tiling +
                          (p.estimated_seconds > 0 ? "; estimated time ~" + fixed(p.estimated_seconds, 1) + " s"
                                                   : std::string()));
    for (const auto& in : p.inputs)
      out.summary.push_back("input " + in.path + " (" + in.what + ", " + human_bytes(static_cast<double>(in.bytes)) + ")");
    for (const auto& o : paths) out.summary.push_back("not written: " + o);
    return out;
  }

  // Content hashes of the inputs, for the provenance (a batch compares them to skip members).
  std::map<std::string, std::string> hashes;
  if (writing)
    for (const auto& in : out.inputs) hashes[in] = io::content_hash(in);

  NpcfPlan plan(job.config, std::move(*points), ctx);
  points.reset();
  out.graph_seconds = plan.graph_seconds();
  out.timings_s["graph"] = out.graph_seconds;
  out.graph_edges = plan.graph().whole_edge_count();
  out.backend = plan.backend_name();

  const std::string config = job.config_json();
  for (Statistic s : job.statistics) {
    auto ts = Clock::now();
    NpcfResult r = plan.execute(s, ctx);
    out.statistic_seconds.push_back(elapsed_seconds(ts));
    out.timings_s[to_string(s)] = out.statistic_seconds.back();
    r.provenance.inputs = out.inputs;
    r.provenance.input_hashes = hashes;
    // The job's canonical configuration (what a resumed batch compares); the statistic's own
    // configuration is stored beside it by the writers.
    r.provenance.config_json = config;
    r.provenance.backend_note = plan.backend_note();
    out.results.push_back(std::move(r));
  }
  if (!out.results.empty()) out.device = out.results.front().provenance.device;
  ctx.check_cancel();

  if (job.jackknife > 0) {
    // Realisation m: the same statistics on the points outside region m (jackknife.hpp).
    auto tj = Clock::now();
    const PointSet& all = plan.points();
    std::vector<int> labels;
    if (!job.jackknife_labels.empty()) {
      labels = read_region_labels(job.jackknife_labels, all.ndata, job.jackknife);
      const auto rl = read_region_labels(job.randoms_jackknife_labels, all.size() - all.ndata, job.jackknife);
      labels.insert(labels.end(), rl.begin(), rl.end());
      // The label files follow the catalogues' rows; the plan's points may be sorted.
      if (const auto& index = plan.input_index(); !index.empty()) {
        std::vector<int> sorted(labels.size());
        for (std::size_t i = 0; i < index.size(); ++i) sorted[i] = labels[index[i]];
        labels.swap(sorted);
      }
    } else {
      labels = angular_regions(all, job.jackknife);
    }
    std::vector<std::vector<NpcfResult>> reals(job.statistics.size());
    for (int m = 1; m <= job.jackknife; ++m) {
      ctx.progress(m - 1, job.jackknife, "jackknife realisations");
      NpcfPlan sub(job.config, without_region(all, labels, m), ctx);
      for (std::size_t i = 0; i < job.statistics.size(); ++i)
        reals[i].push_back(sub.execute(job.statistics[i], ctx));
    }
    for (std::size_t i = 0; i < out.results.size(); ++i) attach_jackknife(out.results[i], reals[i]);
    out.timings_s["jackknife"] = elapsed_seconds(tj);
  }

  if (writing) {
    ctx.progress(0, 1, "writing results");
    auto tw = Clock::now();
    {
      OutputSet::Scope scope(*outputs);
      for (std::size_t i = 0; i < out.results.size(); ++i) {
        write_result(out.results[i], paths[i], job.format);
        if (!jk_paths.empty()) {
          const bool fortran = job.format == OutputFormat::Gramsci;
          write_text_atomic(jk_paths[2 * i], format_jackknife_rows(out.results[i], fortran));
          write_text_atomic(jk_paths[2 * i + 1], format_jackknife_errors(out.results[i], fortran));
        }
      }
      outputs->commit();
    }
    out.write_seconds = elapsed_seconds(tw);
    out.timings_s["write"] = out.write_seconds;
    out.outputs = paths;
    out.outputs.insert(out.outputs.end(), jk_paths.begin(), jk_paths.end());
    for (std::size_t i = 0; i < out.results.size(); ++i)
      out.summary.push_back("wrote " + paths[i] + " (" + to_string(job.statistics[i]) + ", " +
                            std::to_string(out.results[i].rows()) + " rows, " + to_string(job.format) + ")");
  }
  std::string timing = "catalogues " + fixed(out.load_seconds, 2) + " s, graph " + fixed(out.graph_seconds, 2) + " s";
  for (std::size_t i = 0; i < job.statistics.size(); ++i)
    timing += ", " + std::string(to_string(job.statistics[i])) + " " + fixed(out.statistic_seconds[i], 2) + " s";
  out.summary.push_back(std::to_string(out.ndata) + " data + " + std::to_string(out.nrandom) +
                        " random points, " + std::to_string(out.graph_edges) + " graph edges, backend " +
                        out.backend + ", " + std::to_string(out.threads) + " threads; " + timing);
  return out;
}

std::unique_ptr<jobs::Job> make_npcf_job(const jobs::JobRequest& request) {
  const std::string prefix = request.label.empty() ? "--" : request.label;
  return std::make_unique<NpcfEngineJob>(make_npcf_job(request.values, request.base_dir, prefix));
}

jobs::EngineEntry npcf_job_entry() {
  jobs::EngineEntry e;
  e.name = "npcf";
  e.schema = &npcf_schema;
  e.make = static_cast<std::unique_ptr<jobs::Job> (*)(const jobs::JobRequest&)>(&make_npcf_job);
  return e;
}

}  // namespace almagest::npcf
