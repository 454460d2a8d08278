#!/bin/bash
# NpCF CUDA backend on the device machine: GPU self-test (CPU oracle), benchmark, memcheck.
# Binaries are built on the development machine and carried in .device-libs/npcf (see
# docs/benchmarks.md); results go to $OUT. Usage: tests/bench/npcf_gpu_device.sh [bench args]
set -u
B=.device-libs/npcf
OUT=${OUT:-/tmp/npcf-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=.device-libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
echo "cores: $(nproc); $(grep -m1 'model name' /proc/cpuinfo)" | tee -a "$OUT/gpu.txt"
timeout ${SELFTEST_S:-60} $B/npcf_gpu_selftest > "$OUT/selftest.txt" 2>&1
echo "selftest rc=$?"
grep -v '^PASS' "$OUT/selftest.txt" | tail -n 25
timeout ${BENCH_S:-190} $B/bench_npcf_gpu "$@" > "$OUT/bench.md" 2> "$OUT/bench.err"
echo "bench rc=$?"
cat "$OUT/bench.md"
tail -n 5 "$OUT/bench.err"
if [ "${MEMCHECK_S:-30}" != 0 ] && command -v compute-sanitizer > /dev/null; then
  timeout ${MEMCHECK_S:-30} compute-sanitizer --tool memcheck --print-limit 5 \
    $B/npcf_gpu_selftest --points 1200 --quick --only 3pcf --only 4pcf-parity > "$OUT/memcheck.txt" 2>&1
  echo "memcheck rc=$?"
  grep -E "ERROR SUMMARY|Invalid|FAIL" "$OUT/memcheck.txt" | head -n 8
fi
