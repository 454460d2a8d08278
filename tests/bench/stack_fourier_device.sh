#!/bin/bash
# The Fourier-path device call of issue 24 (session 15): `collect [build dir] [dest]` (here) gathers
# bench_stack, bench_stack_check and the CUDA module with the non-system libraries they load into
# DEST/all (default .device-libs-fourier in the main checkout; list it in .git/info/exclude and
# carry it) and copies this script beside them; without arguments (on the device, from DEST)
# it runs bench_stack_check (CHECK_ENVS='VAR=VAL;VAR=VAL ...': its Fourier checks again with each setting) and bench_stack with
# ALMAGEST_BENCH_FOURIER_VARIANTS=$VARIANTS (the tiled fp32 reference, then each Fourier variant),
# and writes their output to $OUT.
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
ALMAGEST_BENCH_FOURIER_VARIANTS=${VARIANTS:-default} timeout ${BENCH_S:-100} $B/bench_stack > "$OUT/bench_stack.txt" 2>&1
echo "bench_stack rc=$?"; cut -c1-240 "$OUT/bench_stack.txt"
date -u +%FT%TZ
