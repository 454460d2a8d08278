// SHT GPU check without Qt (for the device machine): runs sht::run_sht_gpu_selftest (CUDA backend
// vs the CPU backend, adjointness, batched == single, determinism, inverse, cut sky, coexisting
// plans) and prints its report. Exit codes: 0 all gates passed, 1 a gate failed, 77 no usable GPU.
// Usage: sht_gpu_check [max_nside=1024] [report file]
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "almagest/core/gpu.hpp"
#include "almagest/sht/selftest.hpp"

int main(int argc, char** argv) {
  almagest::sht::ShtSelftestOptions o;
  o.max_nside = argc > 1 ? std::atoi(argv[1]) : 1024;
  const std::string out = argc > 2 ? argv[2] : "";
  const auto& st = almagest::gpu_status();
  if (!st.available) {
    std::printf("SKIP: no usable GPU: %s\n", st.reason.c_str());
    return 77;
  }
  const almagest::SelftestReport r = almagest::sht::run_sht_gpu_selftest(o, almagest::JobContext{});
  const std::string text = r.text();
  std::fputs(text.c_str(), stdout);
  if (!out.empty()) std::ofstream(out) << text;
  return r.passed() ? 0 : 1;
}
