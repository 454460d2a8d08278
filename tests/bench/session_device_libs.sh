#!/usr/bin/env bash
# Builds what tests/bench/session_device.sh runs (CUDA module, CLI, gpu tests, benchmarks; no
# GUI) and gathers it with the non-system libraries it loads into .device-libs/all (git-ignored,
# under the 64 MiB carry limit). PYMOD=<build dir with python/almagest> also carries the Python
# module. Usage: tests/bench/session_device_libs.sh [build dir (default build-dev)]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build-dev}
bins=(almagest-cli npcf_gpu_selftest sht_gpu_check bench_stack_check bench_npcf_gpu bench_npcf bench_sht bench_stack
      bench_npcf_jobcost)
# The BAO-scale benchmark when it exists in this tree (issue 23).
if [ -f "$root/tests/bench/bench_npcf_bao.cpp" ]; then bins+=(bench_npcf_bao); fi
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DALMAGEST_WITH_GUI=OFF \
  -DALMAGEST_BUILD_TESTS=ON -DALMAGEST_BUILD_BENCH=ON -DALMAGEST_WITH_CUDA=ON -DCMAKE_CUDA_STANDARD=17 > /dev/null
ninja -C "$build" almagest_cuda "${bins[@]}"
out="$root/.device-libs"
rm -rf "$out/all"
mkdir -p "$out/all"
cp "$build/bin/libalmagest_cuda.so" "$out/all/"
for b in "${bins[@]}"; do cp "$build/bin/$b" "$out/all/"; done
if [ -n "${PYMOD:-}" ] && [ -d "$PYMOD/python/almagest" ]; then
  mkdir -p "$out/all/python"
  cp -r "$PYMOD/python/almagest" "$out/all/python/"
fi
for b in "${bins[@]}"; do ldd "$build/bin/$b"; done | awk '{print $3}' |
  grep '^/' | sort -u | grep -v -E '/(libc|libm|libgcc_s|libstdc\+\+|libresolv)\.so' |
  xargs -I{} cp -L {} "$out/"
strip --strip-unneeded "$out"/all/* "$out"/*.so* 2> /dev/null || true
if [ -d "$out/all/python" ]; then strip --strip-unneeded "$out"/all/python/almagest/*.so || true; fi
du -sh "$out"
