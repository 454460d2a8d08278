#!/bin/bash
# The shift-and-stack device call of issue 24: `collect [build dir]` (here) gathers almagest-cli,
# bench_stack, bench_stack_check and the CUDA module with the non-system libraries they load into
# .device-libs-h24/all (list it in .git/info/exclude; carry [".device-libs-h24"]); without arguments (on the device) it
# runs the stack self-test, bench_stack_check and bench_stack and writes their output to $OUT.
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bins=(almagest-cli bench_stack bench_stack_check)
if [ "${1:-}" = collect ]; then
  set -e
  build=${2:-$root/build-h24}
  out="$root/.device-libs-h24"
  rm -rf "$out"
  mkdir -p "$out/all"
  cp "$build/bin/libalmagest_cuda.so" "$out/all/"
  for b in "${bins[@]}"; do cp "$build/bin/$b" "$out/all/"; done
  for b in "${bins[@]}"; do ldd "$build/bin/$b"; done | awk '{print $3}' | grep '^/' | sort -u |
    grep -v -E '/(libc|libm|libgcc_s|libstdc\+\+|libresolv|libcuda|libdl|libpthread|librt)\.so' | xargs -I{} cp -L {} "$out/"
  strip --strip-unneeded "$out"/all/* "$out"/*.so* 2> /dev/null || true
  du -sh "$out"
  exit 0
fi
B=.device-libs-h24/all
OUT=${OUT:-/tmp/stack-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=.device-libs-h24:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ALMAGEST_CUDA_MODULE=$B/libalmagest_cuda.so
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
echo "cores: $(nproc); $(grep -m1 'model name' /proc/cpuinfo); date $(date -u +%FT%TZ)" | tee -a "$OUT/gpu.txt"
timeout ${SELFTEST_S:-60} $B/almagest-cli selftest --quick --only 2pcf --sht-nside 0 > "$OUT/selftest.txt" 2>&1
echo "selftest rc=$?"; grep -i -E "stack|FAIL|passed|summary" "$OUT/selftest.txt" | tail -n 14
timeout ${CHECK_S:-100} $B/bench_stack_check > "$OUT/stack_check.txt" 2>&1
echo "bench_stack_check rc=$?"; grep -v '^PASS' "$OUT/stack_check.txt" | tail -n 20; grep -c '^PASS' "$OUT/stack_check.txt"; grep -i 'PASS  gpu-fourier' "$OUT/stack_check.txt"
if [ -n "${CHECK2_GEMM:-}" ]; then
  # the Fourier checks again with another tensor-core product
  ALMAGEST_STACK_FOURIER_GEMM=$CHECK2_GEMM timeout ${CHECK_S:-100} $B/bench_stack_check > "$OUT/stack_check_$CHECK2_GEMM.txt" 2>&1
  echo "bench_stack_check ($CHECK2_GEMM) rc=$?"; grep -i -E "fourier|FAILED|PASSED" "$OUT/stack_check_$CHECK2_GEMM.txt" | tail -n 12
fi
timeout ${BENCH_S:-120} $B/bench_stack > "$OUT/bench_stack.txt" 2>&1
echo "bench_stack rc=$?"; cat "$OUT/bench_stack.txt"
