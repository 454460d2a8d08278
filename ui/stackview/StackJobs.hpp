#pragma once
// The engine jobs of the "Moving objects" window (StackWindow), run off the GUI thread through
// JobRunner, and the plain data they hand back. Everything here only reads its inputs; results
// are immutable and shared (shared_ptr<const ...>) with the GUI thread.
//
// Pipeline (the same engine calls as `almagest-cli stack search`, app/cli/stack_command.cpp):
//   read_stack | make_synthetic -> compute_psiphi -> encode -> make_plan -> execute
//   -> describe_candidates (on selection / when saving) -> write_candidates_ecsv | write_result_hdf5
#include <QString>
#include <QStringList>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "almagest/stack/candidates.hpp"
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

/// What the search panel edits. Velocities in pixels/day; the grid is Cartesian and inclusive.
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
  double clusterRadius = 2.0;   ///< pixels (max norm at the first and last exposure)
  bool bestZMap = true;         ///< second, top-1 scan giving the best Z of every origin pixel
  int stampRadius = 10;         ///< pixels, for stamps and the HDF5 result

  /// Every problem, "field: message" (empty when fine).
  QStringList validate() const;
};

/// The engine configuration for `s` on stack `st` (common curve included). Throws ConfigError.
almagest::stack::SearchConfig makeSearchConfig(const SearchSettings& s, const LoadedStack& st);

/// psi/phi of one stack, computed once and reused by later searches of the same stack.
struct PsiPhiCache {
  StackPtr stack;  ///< the stack they were computed from
  bool gpu = false;
  std::shared_ptr<const almagest::stack::PsiPhi> planes;
};

/// Result of makeSearchJob().
struct SearchOutput {
  StackPtr stack;
  almagest::stack::SearchConfig config;
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

/// psi/phi (reused from `cache` when it matches), encode, plan, execute; with settings.bestZMap a
/// second scan in top-1 mode for the best-Z image. With a non-empty `savePath` the job also writes
/// the candidates (ECSV by .ecsv, otherwise HDF5) atomically. Value: SearchOutputPtr.
JobRunner::Job makeSearchJob(StackPtr stack, PsiPhiCache cache, const SearchSettings& settings,
                             const QString& savePath);

/// Writes the candidates of `out` as ECSV (with RA/Dec when the stack has a WCS) or the full result
/// as HDF5 (candidates, curves, tracks, stamps of radius settings.stampRadius). Value: QString path.
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
