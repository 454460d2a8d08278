#pragma once
// Files of `almagest-cli stack` besides the engine's own formats (docs/cli.md, section "stack"):
// velocity lists, common-curve tables, psi/phi HDF5 files, candidate tables read back for `stamps`
// and the truth tables `simulate` writes. Every reader throws IoError naming the file and the
// field (line, column, dataset); every writer is atomic.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "almagest/stack/bank.hpp"
#include "almagest/stack/psiphi.hpp"
#include "almagest/stack/search.hpp"
#include "almagest/stack/synthetic.hpp"

namespace almagest::cli::stackio {

/// The output's directory exists and is writable and the output is not a folder (CliFailure with
/// kExitOutputIo otherwise). `folder_output`: the output itself is a folder that must not exist
/// yet (or be empty).
/// The output may be written (almagest::check_output_target: directory writable, an existing
/// target regular (or an empty folder for `folder_output`), not one of `inputs`). CliFailure 5.
void check_output_path(const std::string& path, const std::vector<std::string>& inputs = {},
                       bool folder_output = false);

/// One output of a command: its destination and a writer that writes it to the path it is given.
struct Output {
  std::string path;
  std::function<void(const std::string& temp)> write;
  bool folder = false;  ///< the writer fills a folder (created empty before the call)
};
/// Writes every output into one almagest::OutputSet (temporaries beside the destinations, then
/// every rename under the directory locks): after a failure or a Ctrl-C (honoured until the
/// renames) none of them exists. No output may be one of `inputs`. Write errors become
/// CliFailure with kExitOutputIo.
void commit_outputs(const std::vector<Output>& outputs, const std::vector<std::string>& inputs = {});

/// Whitespace- or comma-separated numeric text table; '#' starts a comment. Every row must have
/// `min_cols`..`max_cols` columns (all rows the same count). Throws IoError(path, "line N, column
/// C", ...).
std::vector<std::vector<double>> read_numeric_table(const std::string& path, int min_cols,
                                                    int max_cols, const std::string& what);

/// Explicit velocity list: two columns vx vy [pixels/day]. An empty list is an IoError.
stack::TrajectoryBank read_velocities(const std::string& path);

/// Known common curve: rows "dx dy" or "mjd dx dy" [pixels], one per exposure in stack order
/// (with MJDs, each must match the exposure's MJD within 1e-6 days).
void read_common_curve(const std::string& path, const std::vector<double>& mjd,
                       std::vector<double>& dx, std::vector<double>& dy);
/// Writes "mjd dx dy" rows (17 significant digits) atomically.
void write_common_curve(const std::string& path, const std::vector<double>& mjd,
                        const std::vector<double>& dx, const std::vector<double>& dy);

/// psi/phi HDF5 file (format "almagest-psiphi-1"): /psi, /phi [n][H][W] (decoded values, what
/// every backend sums; float64 holding float32 values exactly), /mjd [n], and for FP16/INT8
/// storage /psi_scale, /phi_scale [n] and the stored codes /codes/psi, /codes/phi.
void write_psiphi_hdf5(const std::string& path, const stack::EncodedPsiPhi& enc,
                       const stack::PsiPhi& decoded, const std::string& provenance_json,
                       const std::string& source);

/// A candidate table read back (ECSV or HDF5 written by `stack search`, or any ECSV/HDF5 table
/// with at least x, y, vx, vy columns).
struct CandidateTable {
  std::vector<stack::Candidate> candidates;
  bool has_v = false;               ///< the table has bank indices
  double threshold_z = 0;
  stack::Digest digest;
  std::string backend;
  std::string provenance_json;      ///< "" when the table carries none
  std::string config_json;          ///< the search configuration (from the provenance), or ""
};
CandidateTable read_candidates(const std::string& path);

/// Truth table of `simulate` (ECSV): one row per injected mover.
void write_truth_ecsv(const std::string& path, const std::vector<stack::Mover>& movers,
                      const std::string& meta_json);

}  // namespace almagest::cli::stackio
