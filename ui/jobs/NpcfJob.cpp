#include "jobs/NpcfJob.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <string>

#include "almagest/io/text_file.hpp"
#include "almagest/npcf/plan.hpp"
#include "almagest/npcf/points.hpp"

namespace almagest::ui {

namespace {

/// Share of the job spent building the graph, by statistic (the rest is counting): pair counts
/// are cheap next to the tree queries, triangles and tetrahedra dominate their jobs.
double graphShare(almagest::npcf::Statistic s) {
  using almagest::npcf::Statistic;
  switch (s) {
    case Statistic::TwoPoint: return 0.6;
    case Statistic::ThreePoint:
    case Statistic::ThreePointEquilateral: return 0.25;
    case Statistic::FourPoint:
    case Statistic::FourPointParity: return 0.05;
  }
  return 0.5;
}

}  // namespace

double npcfJobFraction(almagest::npcf::Statistic statistic, std::string_view stage, double done, double total) {
  double f = total > 0 ? done / total : 0.0;
  if (!std::isfinite(f)) f = 0.0;
  f = std::clamp(f, 0.0, 1.0);
  constexpr double kRead = 0.03;
  const double share = std::max(kRead, graphShare(statistic));
  if (stage.starts_with("reading")) return kRead * f;
  if (stage.find("graph") != std::string_view::npos || stage.find("kd-tree") != std::string_view::npos)
    return kRead + (share - kRead) * f;
  // Auxiliary passes of the 3- and 4-point statistics (the internal 2pCF of zeta_disc, the
  // jackknife) get a sliver after the graph; the tuple count gets the rest.
  constexpr double kAux = 0.02;
  const bool pairsOnly = statistic == almagest::npcf::Statistic::TwoPoint;
  if (!pairsOnly && (stage.find("pairs") != std::string_view::npos || stage.find("jackknife") != std::string_view::npos))
    return share + kAux * f;
  return share + (pairsOnly ? 0.0 : kAux) + (1.0 - share - (pairsOnly ? 0.0 : kAux)) * f;  // counting (hubs)
}

JobRunner::Job makeLoadJob(const QString& dataPath, const QString& randomsPath) {
  almagest::io::CatalogueSpec d, r;
  d.path = dataPath.toStdString();
  r.path = randomsPath.toStdString();
  return makeLoadJob(d, r);
}

JobRunner::Job makeLoadJob(const almagest::io::CatalogueSpec& dataSpec, const almagest::io::CatalogueSpec& randomsSpec) {
  return [dataSpec, randomsSpec](const almagest::JobContext& ctx) -> std::any {
    const QString dataPath = QString::fromStdString(dataSpec.path);
    const QString randomsPath = QString::fromStdString(randomsSpec.path);
    LoadedCatalogues out;
    const bool both = !dataPath.isEmpty() && !randomsPath.isEmpty();
    if (!dataPath.isEmpty()) {
      ctx.progress(0, 1, "reading data");
      ctx.info("Reading data catalogue " + dataPath.toStdString());
      out.data = std::make_shared<const almagest::io::Catalogue>(almagest::io::load_catalogue(dataSpec));
      ctx.info("Data: " + std::to_string(out.data->size()) + " points");
    }
    ctx.check_cancel();
    if (!randomsPath.isEmpty()) {
      ctx.progress(both ? 0.5 : 0.0, 1, "reading randoms");
      ctx.info("Reading random catalogue " + randomsPath.toStdString());
      out.randoms = std::make_shared<const almagest::io::Catalogue>(almagest::io::load_catalogue(randomsSpec));
      ctx.info("Randoms: " + std::to_string(out.randoms->size()) + " points");
    }
    ctx.check_cancel();
    return out;
  };
}

JobRunner::Job makeNpcfJob(const almagest::npcf::NpcfJob& job) {
  return [job](const almagest::JobContext& ctx) -> std::any {
    namespace npcf = almagest::npcf;
    almagest::jobs::RunOptions options;
    options.write = false;
    // Each engine stage in its own range of the bar (the engine restarts at 0 per stage and
    // the bar never goes down: a parity 4pCF sat at 99% for its whole count).
    const npcf::Statistic stat = job.statistics.empty() ? job.config.statistic : job.statistics.front();
    auto last = std::make_shared<double>(0.0);  // stages the map does not know never move it back
    almagest::ProgressFn progress = [&ctx, stat, last](double done, double total, std::string_view stage) {
      *last = std::max(*last, npcfJobFraction(stat, stage, done, total));
      ctx.progress(*last, 1.0, stage);
    };
    almagest::LogFn log = [&ctx](almagest::LogLevel level, std::string_view message) { ctx.log(level, message); };
    almagest::JobContext c(ctx.token(), std::move(progress), std::move(log));
    c.threads = ctx.threads;
    // Content hashes of the inputs, as the CLI records them (the job layer hashes only when it
    // writes; File > Save writes this result later).
    std::map<std::string, std::string> hashes;
    for (const std::string& in : job.input_paths()) hashes[in] = almagest::io::content_hash(in);
    npcf::NpcfOutcome o = npcf::run_npcf_job(job, c, options);
    auto out = std::make_shared<NpcfJobOutput>();
    ALMAGEST_ASSERT(!o.results.empty(), "npcf job without a result");
    out->result = std::move(o.results.front());
    if (out->result.provenance.inputs.empty()) out->result.provenance.inputs = job.input_paths();
    out->result.provenance.input_hashes = hashes;
    out->graphSeconds = o.graph_seconds;
    out->countSeconds = o.statistic_seconds.empty() ? 0.0 : o.statistic_seconds.front();
    out->backend = o.backend;
    ctx.info("Graph: " + std::to_string(o.graph_edges) + " edges; " + (o.summary.empty() ? std::string() : o.summary.back()));
    ctx.check_cancel();
    return NpcfOutputPtr(std::move(out));
  };
}

JobRunner::Job makeNpcfJob(CataloguePtr data, CataloguePtr randoms,
                           const almagest::npcf::NpcfConfig& config) {
  return [data = std::move(data), randoms = std::move(randoms),
          config](const almagest::JobContext& ctx) -> std::any {
    using Clock = std::chrono::steady_clock;
    namespace npcf = almagest::npcf;
    ALMAGEST_ASSERT(data != nullptr, "npcf job without a data catalogue");
    npcf::NpcfConfig cfg = config;
    if (cfg.threads == 0) cfg.threads = ctx.threads;

    ctx.progress(0, 1, "preparing points");
    npcf::PointSet points = npcf::make_point_set(*data, randoms.get());
    if (cfg.periodic) npcf::wrap_periodic(points, cfg.box);
    ctx.check_cancel();

    const double share = graphShare(cfg.statistic);
    auto out = std::make_shared<NpcfJobOutput>();
    const auto t0 = Clock::now();
    const almagest::JobContext graphCtx = JobRunner::stageContext(ctx, 0.01, share);
    npcf::NpcfPlan plan(cfg, std::move(points), graphCtx);
    const auto t1 = Clock::now();
    ctx.info(QStringLiteral("Graph: %1 edges in %2 s")
                 .arg(plan.graph().num_edges())
                 .arg(std::chrono::duration<double>(t1 - t0).count(), 0, 'f', 2)
                 .toStdString());
    ctx.check_cancel();

    const almagest::JobContext countCtx = JobRunner::stageContext(ctx, share, 1.0);
    out->result = plan.execute(countCtx);
    const auto t2 = Clock::now();
    out->graphSeconds = std::chrono::duration<double>(t1 - t0).count();
    out->countSeconds = std::chrono::duration<double>(t2 - t1).count();
    out->backend = plan.backend_name();
    ctx.check_cancel();
    return NpcfOutputPtr(std::move(out));
  };
}

}  // namespace almagest::ui
