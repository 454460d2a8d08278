#pragma once
// Where the bundled resources (demo catalogues) are: $ALMAGEST_RESOURCE_DIR, then
// <exe dir>/../share/almagest (installed), then the source tree's resources/ compiled in for the
// build tree (ALMAGEST_RESOURCE_DIR definition in app/CMakeLists.txt).
#include <string>
#include <vector>

namespace almagest::cli {

/// Candidate directories in search order (existing or not).
std::vector<std::string> resource_dir_candidates();
/// The first candidate holding `relative` (e.g. "demo/data.txt"); empty if none does.
std::string find_resource_dir(const std::string& relative);

}  // namespace almagest::cli
