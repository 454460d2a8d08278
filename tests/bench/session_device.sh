#!/bin/bash
# One device call that checks every engine's CUDA backend after a change of the host layers (job
# layer, output layer, SHT device entry points): almagest-cli selftest (every engine's GPU
# self-test against its CPU backend), the gpu-labelled tests, the headline benchmark cells of
# docs/benchmarks.md (N-point 1e6 points, SHT single nside 128-1024, stack reference), the job
# layer's cost on the CPU (the same 3pCF/4pCF through bench_npcf and through almagest-cli, side by
# side), and the Python module's device arrays when the device's python matches the module.
# Binaries: tests/bench/session_device_libs.sh builds them into .device-libs/all (carry
# [".device-libs"]); results go to $OUT. Usage: tests/bench/session_device.sh
set -u
B=.device-libs/all
OUT=${OUT:-/tmp/session-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=.device-libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ALMAGEST_CUDA_MODULE=$B/libalmagest_cuda.so
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
echo "cores: $(nproc); $(grep -m1 'model name' /proc/cpuinfo); $(python3 --version 2>&1)" | tee -a "$OUT/gpu.txt"
$B/almagest-cli info | tee -a "$OUT/gpu.txt"
timeout ${SELFTEST_S:-150} $B/almagest-cli selftest > "$OUT/selftest.txt" 2>&1
echo "selftest rc=$?"; grep -v -E '^\s*(PASS|ok)' "$OUT/selftest.txt" | tail -n 12
# The gpu-labelled checks without Qt Test (its libraries would not fit the carry limit): the
# same GPU-against-CPU programs the gpu tests wrap.
timeout ${TEST_S:-240} $B/npcf_gpu_selftest --quick > "$OUT/npcf_gpu_selftest.txt" 2>&1
echo "npcf_gpu_selftest rc=$?"; grep -v -E '^\s*(PASS|ok)' "$OUT/npcf_gpu_selftest.txt" | tail -n 6
timeout ${TEST_S:-240} $B/sht_gpu_check 256 > "$OUT/sht_gpu_check.txt" 2>&1
echo "sht_gpu_check 256 rc=$?"; grep -v -E '^(PASS|ok)' "$OUT/sht_gpu_check.txt" | tail -n 6
timeout ${TEST_S:-240} $B/bench_stack_check > "$OUT/stack_check.txt" 2>&1
echo "bench_stack_check rc=$?"; tail -n 6 "$OUT/stack_check.txt"
{
  echo "## N-point, 1e6 points"
  timeout ${NPCF_S:-200} $B/bench_npcf_gpu --n 1000000 --case uniform --cpu none --reps 3 2>&1
  echo "## SHT single transforms"
  for n in 128 512 1024; do timeout 120 $B/bench_sht --only $n 2>&1 | grep -v '^#' ; done
  echo "## stack reference workload"
  timeout 120 $B/bench_stack 2>&1
} > "$OUT/bench.md"
cat "$OUT/bench.md" | tail -n 60
# The job layer's cost: the same catalogues through the engine benchmark and through the CLI.
W=/tmp/jobcost; mkdir -p $W
$B/bench_npcf --n 100000 --write-catalogues $W
{
  for rep in 1 2; do
    $B/bench_npcf --n 100000 --rmax 71.0 --nbins 10 --stat 3pcf --threads 16 | grep -E "query|3pcf"
    /usr/bin/time -f "cli wall %e s" $B/almagest-cli npcf --stat 3pcf --data $W/data.txt --randoms $W/randoms.txt \
      --rmin 1 --rmax 71.0 --nbins 10 --threads 16 -o $W/z3_$rep.h5 --quiet 2>&1
    $B/almagest-cli npcf --stat 3pcf --data $W/data.txt --randoms $W/randoms.txt --rmin 1 --rmax 71.0 --nbins 10 \
      --threads 16 -o $W/z3b_$rep.h5 2>&1 | tail -n 1
    $B/bench_npcf --n 100000 --rmax 71.0 --nbins 5 --stat 4pcf --threads 16 | grep -E "query|4pcf"
    $B/almagest-cli npcf --stat 4pcf --data $W/data.txt --randoms $W/randoms.txt --rmin 1 --rmax 71.0 --nbins 5 \
      --threads 16 -o $W/z4_$rep.h5 2>&1 | tail -n 1
  done
  echo "## one plan, bare context against the CLI's (bench_npcf_jobcost)"
  $B/bench_npcf_jobcost --files $W --n 100000 --rmax 71.0 --nbins 5 --stat 4pcf --threads 16 --reps 5 2>&1
} > "$OUT/jobcost.txt" 2>&1
cat "$OUT/jobcost.txt"
if [ -d $B/python ]; then
  PYTHONPATH=$B/python timeout 120 python3 -m pytest -q tests/python/test_device.py > "$OUT/python_device.txt" 2>&1 \
    || PYTHONPATH=$B/python timeout 120 python3 tests/python/device_smoke.py > "$OUT/python_device.txt" 2>&1
  echo "python device rc=$?"; tail -n 15 "$OUT/python_device.txt"
fi
# The BAO-scale 3pCF (issue 23) when the benchmark was built: BAO_ARGS holds its command line.
if [ -x $B/bench_npcf_bao ] && [ -n "${BAO_ARGS:-}" ]; then
  timeout ${BAO_S:-300} $B/bench_npcf_bao $BAO_ARGS > "$OUT/bao.txt" 2>&1
  echo "bench_npcf_bao rc=$?"; tail -n 40 "$OUT/bao.txt"
fi
