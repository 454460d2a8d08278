#pragma once
// Reading and writing exposure stacks. Formats (docs/stack.md):
//  * KBMOD WorkUnit FITS: primary header NUMIMG (and a global WCS, if any); per exposure e (0- or
//    1-based) image HDUs SCI_e (header key MJD), VAR_e, MSK_e (> 0 = masked) and PSF_e (odd
//    square kernel). Compressed (e.g. RICE) image HDUs are read transparently by CFITSIO.
//  * One multi-extension FITS per exposure: HDUs named SCI/IMAGE (or the first image HDU),
//    VAR/VARIANCE, MSK/MASK, optional PSF; MJD (or MJD-OBS) in the primary or science header.
//  * Almagest HDF5 cube: /sci, /var float32 [n][H][W], /mask uint8 [n][H][W], /mjd float64 [n],
//    /psf float32 [n][K][K] (kernels zero-padded to the largest K), optional /weight float64 [n];
//    root attributes format = "almagest-stack-cube-1" and optional wcs_header (FITS cards).
// Errors are IoError naming the file and the HDU/key/dataset.
#include <string>
#include <vector>

#include "almagest/stack/exposure_stack.hpp"

namespace almagest::stack {

struct StackReadOptions {
  /// > 0: use a Gaussian PSF of this sigma (pixels) for every exposure, ignoring file PSFs.
  double psf_sigma = 0;
  /// Used only where a file has no PSF (0: missing PSF is an error).
  double fallback_psf_sigma = 0;
};

ExposureStack read_workunit(const std::string& path, const StackReadOptions& opt = {});
ExposureStack read_exposure_files(const std::vector<std::string>& paths, const StackReadOptions& opt = {});
/// Every *.fits, *.fit, *.fits.fz file of `folder`, sorted by name.
ExposureStack read_exposure_folder(const std::string& folder, const StackReadOptions& opt = {});
ExposureStack read_stack_hdf5(const std::string& path, const StackReadOptions& opt = {});
/// Dispatch: folder -> per-exposure files; .h5/.hdf5 -> cube; other FITS -> WorkUnit (NUMIMG).
ExposureStack read_stack(const std::string& path, const StackReadOptions& opt = {});

/// Atomic writers (nothing appears at `path` unless the whole file was written).
void write_stack_hdf5(const std::string& path, const ExposureStack& s);
void write_workunit(const std::string& path, const ExposureStack& s);
/// One MEF file per exposure, <folder>/exposure_0000.fits ...
void write_exposure_files(const std::string& folder, const ExposureStack& s);

}  // namespace almagest::stack
