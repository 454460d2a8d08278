#!/bin/bash
# SHT CUDA backend on the device machine: the engine's GPU self-test against the CPU backend
# (healpix_cxx), `almagest-cli selftest`, and the benchmark with per-stage times, optionally
# against a second (baseline) CUDA module. Binaries are built on the development machine and
# carried in .device-libs/sht (git-ignored), their non-system libraries in .device-libs
# (tests/bench/device_libs.sh makes both); results go to $OUT.
# Usage: tests/bench/sht_gpu_device.sh [check nside (default 1024)]
# Environment: BASELINE=<module file in .device-libs/sht> also benchmarks that module;
#              MODULES="<module file> ..." benchmarks the adjoint cells of each (tuning variants);
#              TENSOR=0 skips the check and adjoint timings of ALMAGEST_SHT_ADJ_REDUCE=tensor
#              (the tensor-core warp sums of the adjoints, run by default until measured);
#              TABLES=0 skips those of ALMAGEST_SHT_LEGENDRE=tables (the batched table path:
#              checked by the self-test's batched (B = 5, tables) == single (recursion)
#              and batched inverse, timed at nside 128);
#              ADJ_P="4 ...", ADJ2_P="2 ...", SYN_P="2 ..." also benchmark those kernel shapes
#              (ALMAGEST_SHT_ADJ_P, ALMAGEST_SHT_ADJ2_P, ALMAGEST_SHT_SYN_P);
#              MEMCHECK_NSIDE=<n> runs sht_gpu_check n under compute-sanitizer memcheck;
#              NCU_NSIDE=<n> profiles the Legendre adjoint kernels of one nside-n spin-0 and
#              spin-2 adjoint per reduction path with ncu (pipe use, shared memory, stalls).
#              BENCH_ONLY=<nside> restricts the benchmarks to single transforms of that nside.
set -u
B=.device-libs/sht
OUT=${OUT:-/tmp/sht-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=.device-libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ALMAGEST_CUDA_MODULE=$B/libalmagest_cuda.so
only=()
[ -n "${BENCH_ONLY:-}" ] && only=(--only "$BENCH_ONLY")
# check NAME NSIDE [VAR=value ...]: sht_gpu_check NSIDE in that environment, into
# $OUT/check[_NAME].txt; failures and the summary printed.
check() {
  local name=$1 nside=$2 file
  shift 2
  file="$OUT/check${name:+_$name}.txt"
  env "$@" timeout ${CHECK_S:-240} $B/sht_gpu_check "$nside" > "$file" 2>&1
  echo "sht_gpu_check${name:+ ($name)} rc=$?"
  grep -v -E '^(PASS|ok)' "$file" | tail -n 30
}
# shapes LABEL [VAR=value ...]: the adjoint cells of each ADJ_P / ADJ2_P shape in that environment.
shapes() {
  local label=$1 p
  shift
  for p in ${ADJ_P:-}; do
    echo "## ${label}spin-0 adjoint, ALMAGEST_SHT_ADJ_P=$p"
    env "$@" ALMAGEST_SHT_ADJ_P=$p timeout 120 $B/bench_sht --adjoint-only "${only[@]}" 2>/dev/null | grep -E "\| 0 \| adjoint \|"
  done
  for p in ${ADJ2_P:-}; do
    echo "## ${label}spin-2 adjoint, ALMAGEST_SHT_ADJ2_P=$p"
    env "$@" ALMAGEST_SHT_ADJ2_P=$p timeout 120 $B/bench_sht --adjoint-only "${only[@]}" 2>/dev/null | grep -E "\| 2 \| adjoint \|"
  done
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
check "" "${1:-1024}"
if [ -n "${MEMCHECK_NSIDE:-}" ] && command -v compute-sanitizer > /dev/null; then
  timeout ${MEMCHECK_S:-240} compute-sanitizer --tool memcheck --print-limit 5 \
    $B/sht_gpu_check "$MEMCHECK_NSIDE" > "$OUT/memcheck.txt" 2>&1
  echo "memcheck rc=$?"
  grep -E "ERROR SUMMARY|Invalid|checks passed" "$OUT/memcheck.txt" | head -n 8
fi
if [ "${SELFTEST:-1}" = 1 ]; then
  timeout ${SELFTEST_S:-120} $B/almagest-cli selftest > "$OUT/selftest.txt" 2>&1
  echo "cli selftest rc=$?"
  tail -n 4 "$OUT/selftest.txt"
fi
ALMAGEST_SHT_STAGES=1 timeout ${BENCH_S:-200} $B/bench_sht "${only[@]}" > "$OUT/bench.md" 2> "$OUT/stages.txt"
echo "bench rc=$?"
cat "$OUT/bench.md"
grep -E "^stages" "$OUT/stages.txt" | sort -u -t: -k1,1 | sed 's/^stages //'
shapes ""
if [ "${TENSOR:-1}" = 1 ]; then
  echo "## ALMAGEST_SHT_ADJ_REDUCE=tensor: check (nside ${TENSOR_CHECK_NSIDE:-1024}) and adjoint cells"
  check tensor "${TENSOR_CHECK_NSIDE:-1024}" ALMAGEST_SHT_ADJ_REDUCE=tensor
  ALMAGEST_SHT_ADJ_REDUCE=tensor timeout 150 $B/bench_sht --adjoint-only "${only[@]}" 2>&1 | grep -E "^\|.*adjoint|error"
  shapes "tensor, " ALMAGEST_SHT_ADJ_REDUCE=tensor
fi
if [ "${TABLES:-1}" = 1 ]; then
  echo "## ALMAGEST_SHT_LEGENDRE=tables: check (nside ${TABLES_CHECK_NSIDE:-64}) and nside-128 timings"
  check tables "${TABLES_CHECK_NSIDE:-64}" ALMAGEST_SHT_LEGENDRE=tables
  ALMAGEST_SHT_LEGENDRE=tables ALMAGEST_SHT_STAGES=1 timeout 150 $B/bench_sht --max-nside 128 \
    > "$OUT/bench_tables.md" 2> "$OUT/stages_tables.txt"
  echo "bench (tables) rc=$?"
  grep -E "^\|" "$OUT/bench_tables.md"
  grep -E "^stages" "$OUT/stages_tables.txt" | sort -u -t: -k1,1 | sed 's/^stages //'
fi
if [ -n "${NCU_NSIDE:-}" ] && command -v ncu > /dev/null; then
  sections="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section Occupancy --section MemoryWorkloadAnalysis_Tables"
  for red in shared tensor; do
    for spin in 0 2; do
      echo "## ncu, spin-$spin adjoint kernel, nside $NCU_NSIDE, reduction $red"
      ALMAGEST_SHT_ADJ_REDUCE=$red timeout ${NCU_S:-120} ncu --kernel-name "regex:k_adjoint_spin$spin" \
        --launch-count 1 $sections $B/bench_sht --adjoint-only --only "$NCU_NSIDE" \
        > "$OUT/ncu_${red}_$spin.txt" 2>&1
      echo "ncu rc=$?"
      grep -E "k_adjoint|Throughput|Pipe|Shared|Stall|Occupancy|Warp Cycles|Registers" "$OUT/ncu_${red}_$spin.txt" | head -n 30
    done
  done
fi
for mod in ${MODULES:-}; do
  echo "## module $mod, adjoint cells"
  ALMAGEST_CUDA_MODULE=$B/$mod timeout 150 $B/bench_sht --adjoint-only "${only[@]}" 2>&1 | grep -E "^\|.*adjoint|error"
done
for p in ${SYN_P:-}; do
  echo "## spin-0 synthesis, ALMAGEST_SHT_SYN_P=$p"
  ALMAGEST_SHT_SYN_P=$p timeout 120 $B/bench_sht "${only[@]}" 2>/dev/null | grep -E "\| 0 \| synthesis \|"
done
if [ -n "${BASELINE:-}" ]; then
  echo "## baseline module $BASELINE"
  ALMAGEST_CUDA_MODULE=$B/$BASELINE timeout ${BENCH_S:-200} $B/bench_sht "${only[@]}" > "$OUT/bench_baseline.md" 2>&1
  echo "baseline rc=$?"
  grep -E "^\|" "$OUT/bench_baseline.md"
fi
