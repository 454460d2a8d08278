#!/bin/bash
# Builds the SHT device binaries here (no GUI; the CUDA module for sm_90 + PTX) and gathers them,
# with the non-system libraries they load, into the git-ignored .device-libs that the device
# scripts read (tests/bench/sht_gpu_device.sh): carry [".device-libs"] in the device `run`. The
# whole folder must stay under the 64 MiB carry limit (about 35 MiB).
# Usage: tests/bench/device_libs.sh [build dir (default build-dev)]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build-dev}
bash "$root/packaging/install-deps.sh" --no-gui
# CMake 3.25 with nvcc 13 needs the CUDA standard named (docs/sht.md, build note).
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DALMAGEST_WITH_GUI=OFF \
  -DALMAGEST_BUILD_TESTS=ON -DALMAGEST_BUILD_BENCH=ON -DALMAGEST_WITH_CUDA=ON -DCMAKE_CUDA_STANDARD=17 > /dev/null
ninja -C "$build" almagest_cuda sht_gpu_check bench_sht almagest-cli
out="$root/.device-libs"
mkdir -p "$out/sht"
cp "$build"/bin/{libalmagest_cuda.so,sht_gpu_check,bench_sht,almagest-cli} "$out/sht/"
for b in sht_gpu_check bench_sht almagest-cli; do ldd "$build/bin/$b"; done | awk '{print $3}' |
  grep '^/' | sort -u | grep -v -E '/(libc|libm|libgcc_s|libstdc\+\+|libresolv)\.so' |
  xargs -I{} cp -L {} "$out/"
strip --strip-unneeded "$out"/sht/* "$out"/*.so* 2> /dev/null || true
du -sh "$out"
