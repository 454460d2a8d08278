#pragma once
// The engine jobs the desktop window runs through JobRunner: loading catalogues (for the view) and
// computing an N-point correlation function through the job layer (npcf::run_npcf_job, the
// CLI's runner). Both run on a worker thread and only read their inputs.
#include <QString>

#include <memory>
#include <string_view>

#include "almagest/io/catalogue.hpp"
#include "almagest/npcf/config.hpp"
#include "almagest/npcf/job.hpp"
#include "almagest/npcf/result.hpp"
#include "jobs/JobRunner.hpp"

namespace almagest::ui {

using CataloguePtr = std::shared_ptr<const almagest::io::Catalogue>;

/// Result of makeLoadJob(): either pointer is null when its path was empty.
struct LoadedCatalogues {
  CataloguePtr data, randoms;
};

/// Result of makeNpcfJob().
struct NpcfJobOutput {
  almagest::npcf::NpcfResult result;
  double graphSeconds = 0;  ///< neighbour-graph build
  double countSeconds = 0;  ///< counting and estimators
  std::string backend;      ///< "cpu" or "cuda"
};
using NpcfOutputPtr = std::shared_ptr<const NpcfJobOutput>;

/// Reads the catalogues (format from the extension; text columns x y z [w]). The job's value is
/// a LoadedCatalogues. Throws IoError from the engine (reported as Failed by JobRunner).
JobRunner::Job makeLoadJob(const QString& dataPath, const QString& randomsPath);

/// Reads the catalogues as `data` and `randoms` say (format, columns, weights, sky); an empty
/// path skips that catalogue.
JobRunner::Job makeLoadJob(const almagest::io::CatalogueSpec& data, const almagest::io::CatalogueSpec& randoms);

/// Runs a validated N-point job through the job layer without writing (RunOptions::write =
/// false): the first statistic's result is the job's value (an NpcfOutputPtr); File > Save
/// writes it with the same writers. The result's provenance lists the input files with their
/// content hashes (io::content_hash), as the CLI writes them. Cancellable between graph chunks
/// and hub batches. Progress: npcfJobFraction().
JobRunner::Job makeNpcfJob(const almagest::npcf::NpcfJob& job);

/// Overall fraction (0..1) of an N-point job at engine progress (done, total) of `stage`: the
/// engine restarts at 0 for each stage (reading, graph, counting), and JobRunner never lets the
/// bar go down, so each stage gets its own range: reading [0, 0.03], the graph [0.03, share],
/// counting [share, 1] (share by statistic: tetrahedra dominate a 4pCF, pairs are cheap); the
/// pair count and jackknife passes of a 3/4-point job get [share, share + 0.02].
double npcfJobFraction(almagest::npcf::Statistic statistic, std::string_view stage, double done, double total);

/// In-memory catalogues (tests, scripting): computes `config.statistic` from data and randoms (randoms may be null only for a periodic
/// box). The job's value is an NpcfOutputPtr. Cancellable between graph chunks and hub batches.
JobRunner::Job makeNpcfJob(CataloguePtr data, CataloguePtr randoms,
                           const almagest::npcf::NpcfConfig& config);

}  // namespace almagest::ui
