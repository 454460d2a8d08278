#pragma once
// Reader of `--format gramsci` text results, so that published results can be compared with
// Almagest's: Almagest's own files (a `# statistic:` header, the 2pCF in 5 columns) and the
// published code's layouts of notes/npcf-conventions.md ("Text layouts"): 2pCF 7 columns
// (r min, r max, mu min, mu max, NN, RR, xi) or 5 without the mu columns, equilateral 3pCF
// likewise (7 or 5), 3pCF 9 (11 with mu columns), 4pCF 17, parity 4pCF 21, numbers in any
// printf/Fortran e-notation (write_gramsci's e14.7, write_text_exact's %.17g).
//
// The statistic comes from the `# statistic:` header, else from the column count (5 or 7
// columns: the column-name line decides between 2pCF and equilateral 3pCF, 2pCF without one). The
// binning is rebuilt from the printed edges (linear or log; IoError otherwise). A text file
// carries no tuple counts: `tuples` and `random_tuples` are 0. 4pCF realisability is computed
// on bin centres (cayley_menger_positive), as the engine does. Mu-binned rows (more than one mu
// bin) are refused with an IoError naming the field. Errors name the file and the line.
#include <string>

#include "almagest/npcf/result.hpp"

namespace almagest::npcf {

NpcfResult read_gramsci(const std::string& path);

/// True when the file's first non-blank byte is '#' or a digit/sign and it is not HDF5 (the
/// GUI's choice of reader).
bool looks_like_gramsci(const std::string& path);

}  // namespace almagest::npcf
