#!/bin/bash
# Issue 23 device call: the N-point GPU self-test, the standard N = 10^6 benchmark (nothing may get
# slower) and the BAO-scale 3pCF (bench_npcf_bao with BAO_ARGS), optionally the self-test's 3pCF
# group under compute-sanitizer (MEMCHECK_S > 0). Binaries are built here and carried in
# .device-libs/all (carry [".device-libs"]):
#   mkdir -p .device-libs/all && cp BUILD/bin/{libalmagest_cuda.so,npcf_gpu_selftest,bench_npcf_gpu,bench_npcf_bao} \
#     .device-libs/all/ && strip --strip-unneeded .device-libs/all/*
# Results go to $OUT. Usage: BAO_ARGS="--scale 0.5 --cap-gb 4" tests/bench/npcf_bao_device.sh
# BAO2_ARGS (and BAO2_ENV, e.g. ALMAGEST_NPCF3_DENSE_Q=1) add a second BAO run.
set -u
B=.device-libs/all
OUT=${OUT:-/tmp/npcf-bao-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=.device-libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ALMAGEST_CUDA_MODULE=$B/libalmagest_cuda.so
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
echo "cores: $(nproc); $(grep -m1 'model name' /proc/cpuinfo); THP $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>&1)" |
  tee -a "$OUT/gpu.txt"
timeout ${SELFTEST_S:-120} $B/npcf_gpu_selftest --quick > "$OUT/npcf_gpu_selftest.txt" 2>&1
echo "npcf_gpu_selftest rc=$?"
grep -v -E '^\s*(PASS|ok)' "$OUT/npcf_gpu_selftest.txt" | tail -n 12
grep -E 'dense' "$OUT/npcf_gpu_selftest.txt" | cut -c1-200
if [ "${MEMCHECK_S:-0}" != 0 ] && command -v compute-sanitizer > /dev/null; then
  timeout ${MEMCHECK_S} compute-sanitizer --tool memcheck --print-limit 5 \
    $B/npcf_gpu_selftest --points 1500 --quick --only 3pcf > "$OUT/memcheck.txt" 2>&1
  echo "memcheck rc=$?"
  grep -E "ERROR SUMMARY|Invalid|FAIL" "$OUT/memcheck.txt" | head -n 8
fi
timeout ${NPCF_S:-150} $B/bench_npcf_gpu --n 1000000 --case uniform --cpu none --reps 3 > "$OUT/bench_npcf_gpu.md" 2>&1
echo "bench_npcf_gpu rc=$?"
cat "$OUT/bench_npcf_gpu.md"
if [ -n "${BAO_ARGS:-}" ]; then
  T=""; [ -x /usr/bin/time ] && T="/usr/bin/time -v"
  $T timeout ${BAO_S:-300} $B/bench_npcf_bao $BAO_ARGS > "$OUT/bao.txt" 2> "$OUT/bao.err"
  echo "bench_npcf_bao rc=$?"
  cat "$OUT/bao.txt"
  grep -E "Maximum resident|Elapsed|error|what" "$OUT/bao.err" | head -n 8
fi
if [ -n "${BAO2_ARGS:-}" ]; then
  env ${BAO2_ENV:-} timeout ${BAO_S:-300} $B/bench_npcf_bao $BAO2_ARGS > "$OUT/bao2.txt" 2>&1
  echo "bench_npcf_bao (2: ${BAO2_ENV:-}) rc=$?"
  cat "$OUT/bao2.txt"
fi
