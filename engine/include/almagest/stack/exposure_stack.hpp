#pragma once
// The input of a shift-and-stack search: n exposures of one W x H pixel grid, each with science,
// variance and mask planes, an observation time (MJD) and a PSF. See docs/stack.md.
//
// Ownership: ExposureStack owns its planes (plain vectors). Planes are stored exposure-major,
// row-major: value (e, y, x) lives at index (e * height + y) * width + x. Units: sci and var in the
// same (arbitrary) flux units, var > 0 for valid pixels; mask != 0 marks a bad pixel.
#include <cstdint>
#include <string>
#include <vector>

namespace almagest::stack {

/// Largest Gaussian PSF sigma [pixels] accepted (options, synthetic seeing): the kernel's side is
/// 2 ceil(3 sigma) + 1 (50: 301 x 301), and psi/phi cost grows with its area.
inline constexpr double kMaxPsfSigma = 50.0;

/// Odd square PSF kernel, row-major, size x size. Normalised to sum 1 when psi/phi are computed.
struct Psf {
  int size = 0;
  std::vector<float> kernel;

  /// Sampled circular Gaussian of standard deviation `sigma_px`, radius ceil(3 sigma), sum 1.
  /// Throws ConfigError (field "psf.sigma") for sigma <= 0, non-finite or above kMaxPsfSigma.
  static Psf gaussian(double sigma_px);
};

struct ExposureStack {
  int width = 0, height = 0;
  std::vector<double> mjd;                ///< [n] observation times (MJD, days)
  std::vector<float> sci, var;            ///< [n][height][width]
  std::vector<std::uint8_t> mask;         ///< [n][height][width], 0 = good
  std::vector<Psf> psf;                   ///< [n] one kernel per exposure
  std::vector<double> weight;             ///< [n] per-exposure weight a_e, empty = all 1
  std::string wcs_header;                 ///< FITS header cards (80-char records) with a WCS, or empty
  std::vector<std::string> origin;        ///< [n] where each exposure came from (file[HDU]), may be empty
  std::string source;                     ///< file or folder the stack was read from ("" if synthetic)

  std::size_t size() const noexcept { return mjd.size(); }
  std::size_t pixels() const noexcept { return std::size_t(width) * std::size_t(height); }

  /// Checks shapes and values: equal plane sizes, finite MJDs, odd square PSFs with a positive
  /// sum, at least one pixel with var > 0 in every exposure. Throws IoError naming `source` (or
  /// the exposure's origin) and the field (e.g. "VAR_3", "PSF_2", "MJD").
  void validate() const;
};

}  // namespace almagest::stack
