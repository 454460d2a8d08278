#pragma once
// The work behind the sky-map window, as plain functions taking a JobContext so that they run
// inside a JobRunner (off the GUI thread) and can be tested without widgets.
//
//  - loadSkyMap: a HEALPix FITS map (RING or NESTED, full or partial sky) -> full-sky RING
//    columns plus the Mollweide lookup of the window's image.
//  - synthesiseSkyMap: a seeded Gaussian random map with a given C_l (alm synthesis on the CPU).
//  - computeSkySpectrum: map2alm (3 Jacobi iterations, as healpy anafast; healpy's ring or pixel
//    weights optional) + alm2cl, on the CPU or CUDA backend; optionally writes the spectrum file
//    (atomically) before returning.
//  - writeSpectrum: the text file (columns l, C_l, D_l) through an OutputSet.
//  - runShtJob: any sht operation of the job layer (synthesis from alm, adjoint, inverse,
//    map2alm, polarised spectra TT/EE/BB/TE/EB/TB, smoothing), as the CLI runs it.
// Errors: almagest::IoError naming the file, ConfigError naming the field; Cancelled.
#include <QString>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "almagest/core/job_context.hpp"
#include "almagest/core/schema.hpp"
#include "almagest/sht/config.hpp"
#include "almagest/sht/job.hpp"
#include "sky/SkyProjection.hpp"

namespace almagest::ui::sky {

/// Size of the Mollweide image the window renders (2:1, the ellipse's aspect ratio).
inline constexpr int kImageWidth = 1200;
inline constexpr int kImageHeight = 600;

/// A loaded or synthesised map: full sky, RING order, one vector of 12 nside^2 values per column
/// (blind pixels = sht::kUnseen), plus the image lookup (see SkyProjection.hpp).
struct SkyMapData {
  std::string source;                      ///< file path, or a description of the demo map
  int nside = 0;
  std::vector<std::string> names;          ///< column names (TTYPE), one per column
  std::vector<std::string> units;          ///< column units ("" when none)
  std::vector<std::vector<double>> columns;
  std::string coordsys;                    ///< 'G', 'E', 'C' or "" (unknown)
  bool wasNested = false;                  ///< the file was NESTED (converted to RING)
  bool wasPartial = false;                 ///< explicit-index file expanded to the full sky
  std::vector<double> inputCl;             ///< synthesised maps: the C_l used (else empty)
  std::uint64_t seed = 0;                  ///< synthesised maps: the seed
  std::vector<ValueRange> ranges;          ///< per column: range of the seen values
  int imageWidth = 0, imageHeight = 0;
  std::vector<std::int64_t> lookup;        ///< imageWidth * imageHeight RING pixels, -1 outside

  std::int64_t npix() const noexcept { return 12LL * nside * nside; }
};
using SkyMapPtr = std::shared_ptr<const SkyMapData>;

/// Reads `path` (first BINTABLE), converts to full-sky RING and builds the image lookup.
/// Throws IoError (unreadable, not FITS, no NSIDE, ...) or ConfigError("column") if the file has
/// no column `column`.
SkyMapData loadSkyMap(const std::string& path, int column, int imageWidth, int imageHeight,
                      const JobContext& ctx);

/// The demo spectrum: C_l = 2 pi / (l (l + 1)) for l >= 2 (so D_l = 1), C_0 = C_1 = 0.
std::vector<double> demoCl(int lmax);

/// A Gaussian random map with power spectrum `cl` (lmax = cl.size() - 1 <= 4 nside): a_l0 =
/// sqrt(C_l) g, a_lm = sqrt(C_l / 2) (g1 + i g2) for m > 0, with g from the portable seeded
/// generator of almagest::npcf::synthetic::Rng drawn in healpy alm order (same seed, same map);
/// then CPU synthesis. One column named "TEMPERATURE".
SkyMapData synthesiseSkyMap(int nside, const std::vector<double>& cl, std::uint64_t seed,
                            int imageWidth, int imageHeight, const JobContext& ctx);

/// Reads a C_l file for synthesis: text (rows "l C_l [more columns]", e.g. the window's own
/// spectrum file or `almagest-cli sht cl -o cl.txt`; '#' comments; multipoles without a row are
/// 0), or a FITS spectra table as healpy write_cl and `almagest-cli sht cl` write it (first
/// column, row i = multipole i). Returns C_l for l = 0..the largest l given. Throws IoError
/// naming the file and the line or column (not readable, not a number, l < 0 or repeated, C_l
/// negative or not finite, no rows).
std::vector<double> readClFile(const std::string& path);

/// Writes every column of `map` as a HEALPix FITS map (RING, healpy's layout) through one
/// OutputSet: nothing is left at `path` if the job fails or is cancelled before the commit.
void writeSkyMap(const std::string& path, const SkyMapData& map, const JobContext& ctx = {});

/// Quadrature weights of map2alm, as healpy's: none (4 pi / Npix; 3 Jacobi iterations), a HEALPix
/// ring weight file (use_weights=True; 3 iterations) or a full pixel weight file
/// (use_pixel_weights=True; no iterations, as healpy). The file is read inside the job.
struct SkyWeights {
  enum class Kind { Uniform, Ring, Pixel };
  Kind kind = Kind::Uniform;
  std::string path;  ///< the weight file (Ring, Pixel)

  /// "uniform", "ring weights <file name>" or "pixel weights <file name>".
  std::string describe() const;
};

/// The angular power spectrum of one column.
struct SkySpectrum {
  std::string source;
  std::string column;
  int nside = 0;
  int lmax = 0;
  int iterations = 3;
  std::string weights = "uniform";  ///< SkyWeights::describe() of the weights used
  std::string backend;   ///< "cpu" | "cuda"
  std::string device;
  std::int64_t unseen = 0;  ///< blind pixels, set to 0 before the transform (as healpy anafast)
  double seconds = 0.0;     ///< map2alm + alm2cl wall time
  std::vector<double> cl;   ///< C_l, l = 0..lmax

  /// D_l = l (l + 1) C_l / (2 pi).
  double dl(int l) const noexcept;
};

/// Backend choice of the window's spectrum; Auto follows core's one Auto policy
/// (almagest::resolve_backend: the GPU when one is usable, else the CPU). Cuda stays Cuda (the
/// plan reports BackendUnavailable when no GPU can be used).
enum class BackendChoice { Cpu, Cuda, Auto };
sht::Backend resolveBackend(BackendChoice choice);
/// The job layer's backend text of a choice ("cpu", "cuda", "auto").
std::string backendText(BackendChoice choice);

/// An sht job of the job layer (sht/job.hpp: any operation of `almagest-cli sht`, from the
/// window's SchemaForm): validated (ConfigError with the schema's message, label ""), run and
/// written atomically through one OutputSet with provenance, exactly as the CLI runs it.
std::shared_ptr<const sht::ShtOutcome> runShtJob(const schema::Values& values, const JobContext& ctx);

/// map2alm + alm2cl of map.columns[column] up to lmax (0 <= lmax <= 4 nside), with `weights`
/// (3 iterations, none with pixel weights). With a non-empty savePath the spectrum file is
/// written (atomically) at the end; a cancelled or failed job leaves no file. A weight file
/// that cannot be read, or is for another nside, throws IoError naming it.
SkySpectrum computeSkySpectrum(const SkyMapData& map, int column, int lmax, sht::Backend backend,
                               const std::string& savePath, const JobContext& ctx,
                               const SkyWeights& weights = {});

/// The spectrum file text: '#' header lines, then lmax + 1 rows "l C_l D_l".
std::string spectrumText(const SkySpectrum& s);
/// Writes spectrumText(s) to `path` through one OutputSet (nothing is left on error or cancel).
void writeSpectrum(const std::string& path, const SkySpectrum& s, const JobContext& ctx = {});

}  // namespace almagest::ui::sky
