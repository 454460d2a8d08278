// run_npcf_job with several sky regions (regions.hpp): each region is read, normalised and
// counted on its own plan; the statistics are combined at the level of counts and every region's
// own result is kept beside the combination.
#include "regions_run.hpp"

#include <chrono>
#include <cstdio>
#include <map>
#include <optional>

#include "almagest/io/catalogue.hpp"
#include "almagest/io/text_file.hpp"
#include "almagest/npcf/plan.hpp"
#include "almagest/npcf/points.hpp"
#include "almagest/npcf/regions.hpp"

namespace almagest::npcf::detail {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string number(double v, const char* fmt) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

}  // namespace

void run_region_job(const NpcfJob& job, const JobContext& ctx, bool dry_run, OutputSet* outputs,
                    NpcfOutcome& out) {
  const auto paths = job.output_paths();
  const auto rpaths = job.region_paths();
  const std::size_t ns = job.statistics.size(), ng = job.regions.size();
  std::map<std::string, std::string> hashes;
  if (outputs)
    for (const auto& in : out.inputs) hashes[in] = io::content_hash(in);
  const std::string config = job.config_json();

  // regions[s][g]: statistic s of region g.
  std::vector<std::vector<RegionResult>> regions(ns);
  out.statistic_seconds.assign(ns, 0.0);
  for (std::size_t gi = 0; gi < ng; ++gi) {
    const NpcfRegion& g = job.regions[gi];
    auto t0 = Clock::now();
    ctx.progress(static_cast<long>(gi), static_cast<long>(ng), "region " + g.name + ": reading catalogues");
    const io::Catalogue data = io::load_catalogue(g.data);
    ctx.check_cancel();
    const io::Catalogue randoms = io::load_catalogue(g.randoms);
    ctx.check_cancel();
    PointSet points = make_point_set(data, &randoms);
    const double s = points.data_weight_sum;
    out.ndata += points.ndata;
    out.nrandom += points.size() - points.ndata;
    out.load_seconds += seconds_since(t0);
    if (dry_run) {
      const GraphEstimate e = estimate_graph(points, job.config);
      out.estimate.edges += e.edges;
      out.estimate.bytes += e.bytes;
      out.estimate.sampled += e.sampled;
      out.summary.push_back("dry run: region " + g.name + ": " + std::to_string(points.ndata) +
                            " data + " + std::to_string(points.size() - points.ndata) +
                            " randoms, summed data weight " + number(s, "%.6g") +
                            ", graph estimate " + number(e.edges, "%.0f") + " edges");
      continue;
    }
    std::vector<std::string> inputs{g.data.path, g.randoms.path};
    NpcfPlan plan(job.config, std::move(points), ctx);
    out.graph_seconds += plan.graph_seconds();
    out.graph_edges += plan.graph().whole_edge_count();
    out.backend = plan.backend_name();
    std::optional<NpcfResult> internal;  // the region's 2pCF for the 4pCF's disconnected term
    for (std::size_t si = 0; si < ns; ++si) {
      auto ts = Clock::now();
      RegionResult rr;
      rr.name = g.name;
      rr.data_weight_sum = s;
      rr.result = plan.execute(job.statistics[si], ctx);
      if (is_four_point(job.statistics[si])) {
        if (!internal) internal = plan.execute(Statistic::TwoPoint, ctx);
        rr.internal_2pcf = *internal;
      }
      out.statistic_seconds[si] += seconds_since(ts);
      rr.result.provenance.inputs = inputs;
      for (const auto& in : inputs)
        if (auto h = hashes.find(in); h != hashes.end()) rr.result.provenance.input_hashes[in] = h->second;
      rr.result.provenance.config_json = config;
      rr.result.provenance.backend_note = plan.backend_note();
      regions[si].push_back(std::move(rr));
    }
    ctx.check_cancel();
  }
  out.timings_s["catalogues"] = out.load_seconds;
  if (dry_run) {
    out.summary.push_back("dry run: " + out.operation + " over " + std::to_string(ng) +
                          " regions, combined at the level of counts; graph estimate " +
                          number(out.estimate.edges, "%.0f") + " edges in all");
    for (const auto& o : paths) out.summary.push_back("not written: " + o);
    for (const auto& o : rpaths) out.summary.push_back("not written: " + o);
    return;
  }
  out.timings_s["graph"] = out.graph_seconds;

  out.region_results.assign(ng, {});
  for (std::size_t si = 0; si < ns; ++si) {
    NpcfResult c = combine_regions(regions[si]);
    c.provenance.inputs = out.inputs;
    c.provenance.input_hashes = hashes;
    c.provenance.config_json = config;
    out.timings_s[to_string(job.statistics[si])] = out.statistic_seconds[si];
    out.results.push_back(std::move(c));
    for (std::size_t gi = 0; gi < ng; ++gi) out.region_results[gi].push_back(regions[si][gi].result);
  }
  if (!out.results.empty()) out.device = out.results.front().provenance.device;

  if (outputs) {
    ctx.progress(0, 1, "writing results");
    auto tw = Clock::now();
    {
      OutputSet::Scope scope(*outputs);
      for (std::size_t si = 0; si < ns; ++si) {
        if (job.format == OutputFormat::Hdf5) {
          write_hdf5_regions(out.results[si], regions[si], paths[si]);
          continue;
        }
        write_result(out.results[si], paths[si], job.format);
        for (std::size_t gi = 0; gi < ng; ++gi)
          write_result(regions[si][gi].result, rpaths[gi * ns + si], job.format);
      }
      outputs->commit();
    }
    out.write_seconds = seconds_since(tw);
    out.timings_s["write"] = out.write_seconds;
    out.outputs = paths;
    out.outputs.insert(out.outputs.end(), rpaths.begin(), rpaths.end());
    for (std::size_t si = 0; si < ns; ++si)
      out.summary.push_back("wrote " + paths[si] + " (" + to_string(job.statistics[si]) + " of " +
                            std::to_string(ng) + " regions combined, " +
                            std::to_string(out.results[si].rows()) + " rows, " + to_string(job.format) +
                            (job.format == OutputFormat::Hdf5 ? "; regions in groups region/NAME)" : ")"));
    for (const auto& p : rpaths) out.summary.push_back("wrote " + p + " (one region's own result)");
  }
  std::string names;
  for (std::size_t gi = 0; gi < ng; ++gi) {
    names += (gi ? ", " : "") + job.regions[gi].name + " (S = " +
             number(regions.empty() || regions[0].empty() ? 0.0 : regions[0][gi].data_weight_sum, "%.6g") + ")";
  }
  std::string timing = "catalogues " + number(out.load_seconds, "%.2f") + " s, graphs " +
                       number(out.graph_seconds, "%.2f") + " s";
  for (std::size_t si = 0; si < ns; ++si)
    timing += ", " + std::string(to_string(job.statistics[si])) + " " + number(out.statistic_seconds[si], "%.2f") + " s";
  out.summary.push_back("regions " + names + ": " + std::to_string(out.ndata) + " data + " +
                        std::to_string(out.nrandom) + " random points, " + std::to_string(out.graph_edges) +
                        " graph edges, backend " + out.backend + ", " + std::to_string(out.threads) +
                        " threads; " + timing);
}

}  // namespace almagest::npcf::detail
