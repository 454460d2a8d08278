#!/bin/bash
# The Fourier-path device call of issue 24 (session 15). `collect BUILD DEST [BASE_BUILD]` (here)
# gathers bench_stack, bench_stack_check and the CUDA module of BUILD with the non-system
# libraries they load into DEST/all, the module of BASE_BUILD (the baseline) into DEST/base, and
# copies this script to DEST/run.sh (DEST in the main checkout, listed in .git/info/exclude, carried).
# `bash DEST/run.sh` on the device runs bench_stack_check (then its Fourier checks again with each
# setting of CHECK_ENVS='VAR=VAL;VAR=VAL ...'), and bench_stack with
# ALMAGEST_BENCH_FOURIER_VARIANTS=$VARIANTS (the tiled fp32 reference, then each Fourier product)
# ROUNDS times, alternating the baseline module (if collected) and the new one; output to $OUT.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bins=(bench_stack bench_stack_check)
if [ "${1:-}" = collect ]; then
  set -e
  build=${2:?build dir}
  out=${3:?destination}
  rm -rf "$out"
  mkdir -p "$out/all"
  cp "$build/bin/libalmagest_cuda.so" "$out/all/"
  if [ -n "${4:-}" ]; then mkdir -p "$out/base" && cp "$4/bin/libalmagest_cuda.so" "$out/base/"; fi
  for b in "${bins[@]}"; do cp "$build/bin/$b" "$out/all/"; done
  for b in "${bins[@]}"; do ldd "$build/bin/$b"; done | awk '{print $3}' | grep '^/' | sort -u |
    grep -v -E '/(libc|libm|libgcc_s|libstdc\+\+|libresolv|libcuda|libdl|libpthread|librt)\.so' | xargs -I{} cp -L {} "$out/"
  strip --strip-unneeded "$out"/all/* "$out"/*.so* 2> /dev/null || true
  cp "${BASH_SOURCE[0]}" "$out/run.sh"
  du -sh "$out"
  exit 0
fi
B=$here/all
OUT=${OUT:-/tmp/stack-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$here:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ALMAGEST_CUDA_MODULE=$B/libalmagest_cuda.so
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
echo "cores: $(nproc); $(grep -m1 'model name' /proc/cpuinfo); date $(date -u +%FT%TZ)" | tee -a "$OUT/gpu.txt"
if [ "${CHECK_S:-60}" != 0 ]; then
  timeout ${CHECK_S:-60} $B/bench_stack_check > "$OUT/stack_check.txt" 2>&1
  echo "bench_stack_check rc=$?"; grep -v '^PASS' "$OUT/stack_check.txt" | tail -n 12; grep -c '^PASS' "$OUT/stack_check.txt"; grep -i 'fourier' "$OUT/stack_check.txt"
fi
k=0
for spec in ${CHECK_ENVS:-}; do  # VAR=VAL[;VAR=VAL]: the Fourier checks again with those settings
  k=$((k + 1))
  env $(echo "$spec" | tr ';' ' ') ALMAGEST_CHECK_FOURIER_ONLY=1 timeout ${CHECK_S:-60} $B/bench_stack_check > "$OUT/stack_check_$k.txt" 2>&1
  echo "bench_stack_check ($spec, Fourier checks only) rc=$?"; grep -i -E "fourier|FAIL|PASSED" "$OUT/stack_check_$k.txt" | tail -n 12
done
date -u +%FT%TZ
for r in $(seq 1 ${ROUNDS:-1}); do
  for m in base all; do
    [ -f "$here/$m/libalmagest_cuda.so" ] || continue
    ALMAGEST_CUDA_MODULE=$here/$m/libalmagest_cuda.so ALMAGEST_BENCH_FOURIER_VARIANTS=${VARIANTS:-default} timeout ${BENCH_S:-100} \
      $B/bench_stack > "$OUT/bench_${m}_$r.txt" 2>&1
    echo "bench_stack (module $m, round $r) rc=$?"; grep -E "median|stage|agreement gpu-fourier|TFLOP" "$OUT/bench_${m}_$r.txt" | cut -c1-200
  done
done
date -u +%FT%TZ
