#include "resources.hpp"

#include <cstdlib>
#include <filesystem>

namespace almagest::cli {

namespace fs = std::filesystem;

std::vector<std::string> resource_dir_candidates() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("ALMAGEST_RESOURCE_DIR"); env && *env) dirs.emplace_back(env);
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) dirs.push_back((exe.parent_path().parent_path() / "share" / "almagest").string());
#ifdef ALMAGEST_RESOURCE_DIR
  dirs.emplace_back(ALMAGEST_RESOURCE_DIR);
#endif
  return dirs;
}

std::string find_resource_dir(const std::string& relative) {
  std::error_code ec;
  for (const auto& d : resource_dir_candidates())
    if (fs::exists(fs::path(d) / relative, ec)) return d;
  return {};
}

}  // namespace almagest::cli
