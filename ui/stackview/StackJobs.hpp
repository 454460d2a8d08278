#pragma once
// The engine jobs of the "Moving objects" window (StackWindow), run off the GUI thread through
// JobRunner, and the plain data they hand back. Everything here only reads its inputs; results
// are immutable and shared (shared_ptr<const ...>) with the GUI thread.
//
// A search is the stack job layer's (almagest/stack/job.hpp), exactly as `almagest-cli stack search`:
// the window's form gives schema::Values, makeSearchStackJob() adds op, stack and output and
// validates them with make_stack_job() (its ConfigError text is what the form shows), and the
// job runs run_stack_job() with the stack and psi/phi planes the window already holds
// (StackInputs). Saving writes through the engine writers inside one OutputSet.
#include <QString>
#include <QStringList>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "almagest/core/schema.hpp"
#include "almagest/stack/candidates.hpp"
#include "almagest/stack/job.hpp"
#include "almagest/stack/exposure_stack.hpp"
#include "almagest/stack/psiphi.hpp"
#include "almagest/stack/search.hpp"
#include "almagest/stack/synthetic.hpp"
#include "jobs/JobRunner.hpp"

namespace almagest::ui::stackview {

/// A stack as the window holds it: the exposures plus, for synthetic stacks, the common curve the
/// generator applied (passed to every search) and the injected movers (shown in the log).
struct LoadedStack {
  almagest::stack::ExposureStack stack;
  std::vector<double> curveDx, curveDy;        ///< [n] pixels, empty for stacks read from files
  std::vector<almagest::stack::Mover> movers;  ///< injected movers (synthetic only)
  bool synthetic = false;
  std::uint64_t seed = 0;                      ///< synthetic only
  QString label;                               ///< file name or "synthetic (seed N)"

  int n() const noexcept { return static_cast<int>(stack.size()); }
};
using StackPtr = std::shared_ptr<const LoadedStack>;

/// A convenience description of a Cartesian search (tests, the synthetic dialog's movers). The
/// window's form is the source of truth: toValues() gives the schema values of these settings,
/// fromValues() reads back what it can. Only bestZMap and stampRadius are the window's own.
struct SearchSettings {
  double vxMin = -4.0, vxMax = 4.0;
  int nvx = 17;
  double vyMin = -4.0, vyMax = 4.0;
  int nvy = 17;
  bool fixedThreshold = false;  ///< false: Bonferroni with `falseAlarms`; true: Z >= thresholdZ
  double falseAlarms = 1.0;
  double thresholdZ = 6.0;
  int minObs = 1;
  almagest::stack::Encoding encoding = almagest::stack::Encoding::Fp32;
  almagest::stack::Backend backend = almagest::stack::Backend::Cpu;
  bool cluster = true;
  double clusterRadius = 3.0;   ///< pixels: duplicates merge when their tracks stay this close (stack/filters.hpp)
  bool bestZMap = true;         ///< second, top-1 scan giving the best Z of every origin pixel (GUI only)
  int stampRadius = 10;         ///< pixels, for stamps and the HDF5 result (GUI only)
};

/// The stack schema's values of `s` (keys of stack_schema(), texts as the CLI would pass them).
almagest::schema::Values toValues(const SearchSettings& s);
/// `base` with the grid, threshold, min obs, storage and clustering read from `v` where given.
SearchSettings fromValues(const almagest::schema::Values& v, SearchSettings base = {});

/// The search job of the form's values on `st` (nullptr: no stack yet; validation only): op
/// "search", the stack's file (none for an in-memory stack: the job gets it as StackInputs) and
/// `savePath` as output (none: nothing is written) are added.
/// Throws make_stack_job()'s ConfigError (every problem, the CLI's message without "--").
almagest::stack::StackJob makeSearchStackJob(const almagest::schema::Values& form, const LoadedStack* st,
                                             const QString& savePath = {});
/// The engine configuration `job` runs on `st` (the common curve of its file or of `st`).
almagest::stack::SearchConfig searchConfigOf(const almagest::stack::StackJob& job, const LoadedStack& st);

/// psi/phi of one stack, computed once and reused by later searches of the same stack.
struct PsiPhiCache {
  StackPtr stack;  ///< the stack they were computed from
  bool gpu = false;
  std::shared_ptr<const almagest::stack::PsiPhi> planes;
};

/// Result of makeSearchJob().
struct SearchOutput {
  StackPtr stack;
  almagest::stack::StackJob job;                          ///< the validated job it ran
  almagest::stack::SearchConfig config;                   ///< what the engine ran (curve, bank)
  std::shared_ptr<const almagest::stack::SearchPlan> plan;
  std::shared_ptr<const almagest::stack::PsiPhi> psiphi;  ///< decoded float planes (fp32)
  bool psiphiOnGpu = false;
  almagest::stack::SearchResult result;
  std::vector<float> bestZ;  ///< [height][width] best Z over the bank per origin, empty if off
  double psiphiSeconds = 0, bestZSeconds = 0;
  QString savedPath;         ///< file written by the job, if any
};
using SearchOutputPtr = std::shared_ptr<const SearchOutput>;

/// Reads a KBMOD WorkUnit FITS file, an HDF5 cube or a folder of per-exposure FITS files and
/// validates it. Value: StackPtr. Errors are IoErrors naming the file and field.
JobRunner::Job makeOpenStackJob(const QString& path, double fallbackPsfSigma);

/// Generates a seeded synthetic stack. Value: StackPtr.
JobRunner::Job makeSyntheticJob(const almagest::stack::SyntheticConfig& config);

/// psi/phi (reused from `cache` when it matches), then run_stack_job(job) with the stack and the
/// planes; with bestZMap a second scan in top-1 mode for the best-Z image. With job.output set the
/// job layer writes it (OutputSet, provenance). Value: SearchOutputPtr.
JobRunner::Job makeSearchJob(StackPtr stack, PsiPhiCache cache, almagest::stack::StackJob job, bool bestZMap);

/// Writes the candidates of `out` as ECSV (with RA/Dec when the stack has a WCS) or the full result
/// as HDF5 (candidates, curves, tracks, stamps of radius stampRadius) with the engine writers in one
/// OutputSet of the job's inputs (the result carries the job layer's provenance). Value: QString.
enum class SaveKind { CandidatesEcsv, ResultHdf5 };
JobRunner::Job makeSaveJob(SearchOutputPtr out, SaveKind kind, const QString& path, int stampRadius);

/// Details (curves, track, stamps) of one candidate of `out` (synchronous: one candidate is cheap).
almagest::stack::CandidateDetail describeOne(const SearchOutput& out, int index, int stampRadius);

/// Deterministic movers for the "New synthetic stack" dialog: `count` movers at `snr`, origins
/// whose tracks stay inside the image over `baselineDays`, velocities on grid nodes of `s` within
/// the central 70% of its range, drawn from `seed`.
std::vector<almagest::stack::Mover> makeMovers(int count, double snr, int width, int height,
                                               const SearchSettings& s, double baselineDays,
                                               std::uint64_t seed);

}  // namespace almagest::ui::stackview
