// Standalone GPU self-test driver (no Qt): runs almagest::npcf::run_npcf_gpu_selftest and prints the report.
// Usage: npcf_gpu_selftest [--points N] [--seed S] [--quick] [--only GROUP]...
// Exit code: 0 all checks passed, 1 a check failed, 77 no usable GPU.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "almagest/core/gpu.hpp"
#include "almagest/npcf/selftest.hpp"

int main(int argc, char** argv) {
  almagest::npcf::NpcfSelftestOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--points" && i + 1 < argc) {
      o.points = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--seed" && i + 1 < argc) {
      o.seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--only" && i + 1 < argc) {
      o.only.push_back(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--points N] [--seed S] [--quick] [--only GROUP]...\n", argv[0]);
      return 2;
    }
  }
  const almagest::GpuStatus& s = almagest::gpu_status();
  if (!s.available) {
    std::fprintf(stderr, "SKIP: no usable GPU: %s\n", s.reason.c_str());
    return 77;
  }
  almagest::JobContext ctx;
  const almagest::SelftestReport r = almagest::npcf::run_npcf_gpu_selftest(o, ctx);
  std::fputs(r.text().c_str(), stdout);
  return r.passed() ? 0 : 1;
}
