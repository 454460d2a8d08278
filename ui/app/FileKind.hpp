#pragma once
// What a dropped or opened file is, so that it opens in the right view: by content first (FITS
// HDU kinds and keywords, HDF5 dataset names, a text file's provenance or column header), the
// extension only where the content does not say (compressed FITS). Reads at most a few header
// blocks and never allocates by what the file claims.
//
//   FITS  HDU with PIXTYPE = 'HEALPIX' (or NSIDE + ORDERING)   -> HealpixMap
//         a data cube (NAXIS = 3) or >= 2 image HDUs            -> Stack
//         a binary table with RA/DEC or X/Y/Z columns          -> Catalogue
//   HDF5  estimator (at the root or one group down)            -> NpcfResult
//         sci / psi, or exposures                              -> Stack
//         map or pixels                                        -> HealpixMap
//         candidates                                           -> Candidates
//         x, y, z (or ra, dec) datasets                        -> Catalogue
//   text  '#' header naming a statistic's columns or GRAMSCI  -> NpcfResult, otherwise Catalogue
//   .ecsv -> Candidates; JSON with "almagest_workspace"        -> Workspace
#include <QString>

namespace almagest::ui::app {

enum class FileKind { Unknown, Catalogue, NpcfResult, HealpixMap, Stack, Candidates, Workspace };

struct FileSniff {
  FileKind kind = FileKind::Unknown;
  QString why;  ///< what decided it ("FITS: HDU 1 PIXTYPE = HEALPIX"), or why it is unknown
};

FileSniff sniffFile(const QString& path);
QString fileKindName(FileKind kind);

}  // namespace almagest::ui::app
