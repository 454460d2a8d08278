#!/bin/bash
# SHT CUDA backend on the device machine: the engine's GPU self-test against the CPU backend
# (healpix_cxx), `almagest-cli selftest`, and the benchmark with per-stage times, optionally
# against a second (baseline) CUDA module. Binaries are built on the development machine and
# carried in .device-libs/sht (git-ignored), their non-system libraries in .device-libs
# (tests/bench/device_libs.sh makes both); results go to $OUT.
# Usage: tests/bench/sht_gpu_device.sh [check nside (default 1024)]
# Environment: BASELINE=<module file in .device-libs/sht> also benchmarks that module;
#              MODULES="<module file> ..." benchmarks the adjoint cells of each (tuning variants);
#              SWEEP=0 skips the batched sweep (bench_sht --sweep: nside 64-256, B = 1-64)
#              run with ALMAGEST_SHT_LEGENDRE=recursion and =tables, which sets where the
#              table path takes over (kTableMinCols, kTableMaxNside in sht_module.cu);
#              ADJ_P="4 ...", ADJ2_P="2 ...", SYN_P="2 ..." also benchmark those kernel shapes
#              (ALMAGEST_SHT_ADJ_P, ALMAGEST_SHT_ADJ2_P, ALMAGEST_SHT_SYN_P);
#              MEMCHECK_NSIDE=<n> runs sht_gpu_check n under compute-sanitizer memcheck;
#              NCU_NSIDE=<n> profiles the Legendre kernels named in NCU_KERNELS (default the
#              spin-0 and spin-2 adjoints) of one nside-n transform with ncu (pipe use, stall
#              reasons, stalls per instruction).
#              BENCH_ONLY=<nside> restricts the benchmarks to single transforms of that nside.
#              ENVS="VAR=value ..." runs, for each assignment, sht_gpu_check at ENV_CHECK_NSIDE
#              (default 256) and the benchmark in that environment (A/B of kernel switches).
#              SASS=1 writes the module's SASS to $OUT/sass.txt.gz (spills: STL/LDL).
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
if [ "${SWEEP:-1}" = 1 ]; then
  for mode in recursion tables; do
    echo "## batched sweep, ALMAGEST_SHT_LEGENDRE=$mode"
    ALMAGEST_SHT_LEGENDRE=$mode timeout ${SWEEP_S:-200} $B/bench_sht --sweep > "$OUT/sweep_$mode.md" 2>&1
    echo "sweep ($mode) rc=$?"
    grep -E "^\|.*(synthesis|adjoint)|error" "$OUT/sweep_$mode.md"
  done
fi
if [ -n "${NCU_NSIDE:-}" ] && command -v ncu > /dev/null; then
  for k in ${NCU_KERNELS:-k_adjoint_spin0 k_adjoint_spin2}; do
    echo "## ncu, kernel $k, nside $NCU_NSIDE"
    adj=--adjoint-only
    case $k in k_synthesis*) adj= ;; esac
    timeout ${NCU_S:-120} ncu --clock-control none --kernel-name "regex:$k" \
      --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SourceCounters \
      --section Occupancy -o "/tmp/ncu_$k" $B/bench_sht $adj --only "$NCU_NSIDE" > /dev/null 2>&1
    echo "ncu rc=$?"
    ncu -i "/tmp/ncu_$k.ncu-rep" --page details --print-details all > "$OUT/ncu_$k.txt" 2>&1
    ncu -i "/tmp/ncu_$k.ncu-rep" --page source --csv --print-source sass 2>&1 | gzip > "$OUT/ncu_src_$k.csv.gz"
    grep -E "Duration|Throughput|Stall (Wait|Long|Short|Barrier|Math)|Warp Cycles Per Issued" "$OUT/ncu_$k.txt" | head -n 12
  done
fi
for kv in ${ENVS:-}; do
  echo "## environment $kv"
  check "${kv%%=*}_${kv#*=}" "${ENV_CHECK_NSIDE:-256}" "$kv"
  env "$kv" timeout ${BENCH_S:-200} $B/bench_sht "${only[@]}" 2>&1 | grep -E "^\|.*(synthesis|adjoint)|error"
done
if [ "${SASS:-0}" = 1 ] && command -v cuobjdump > /dev/null; then
  cuobjdump -sass $B/libalmagest_cuda.so 2>&1 | gzip > "$OUT/sass.txt.gz"
  echo "sass rc=$?"
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
