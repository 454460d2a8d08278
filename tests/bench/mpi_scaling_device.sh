#!/usr/bin/env bash
# Issue 22's scaling benchmark on the device machine's 16 cores (no GPU used): the CPU 4pCF
# (5 bins, rmin 1, rmax 33) of the N = 10^6 benchmark catalogue (written in its generated order;
# the engine sorts the hubs spatially, NpcfConfig::hub_order), 1 rank x 16 threads against
# 16 ranks x 1 thread (mpirun, each bound to one of the 16 logical CPUs), outputs compared bit for
# bit. First `bench_npcf_loadbalance --fit-costs` times every chunk on 16 threads and fits the
# hub ranges' cost model there (data and random hubs apart); the 16-rank run is made with the
# engine's default model and with the model fitted in this call (ALMAGEST_NPCF_COST_MODEL). Needs .device-libs/mpi22 from
# tests/bench/mpi_device_libs.sh (carried). Writes $OUT/scaling.txt.
# Usage: bash tests/bench/mpi_scaling_device.sh [N (default 1000000)] [ranks (default 16)] [input]
# (input: hub-order input, the catalogue order, for comparison)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/mpi_device_env.sh"
n=${1:-1000000}
k=${2:-16}
order=spatial
if [ "${3:-}" = input ]; then order=input; fi
w=/tmp/mpi22
mkdir -p "$w" "${OUT:-/tmp}"
log="${OUT:-/tmp}/scaling.txt"
{
  date -u
  nproc
  grep -m1 'model name' /proc/cpuinfo
  TIMEFORMAT="wall %R s, user %U s, sys %S s"
  time bench_npcf_loadbalance --catalogue bench --n "$n" --write-catalogues "$w" --write-only
  for t in 16 1; do
    printf 'data = "gal.txt"\nrandoms = "ran.txt"\nrmin = 1\nrmax = 33\nnbins = 5\nstat = "4pcf"\nthreads = %d\nhub-order = "%s"\noutput = "out%d.h5"\n' "$t" "$order" "$t" > "$w/job$t.toml"
  done
  echo "== 1 rank x 16 threads"
  time almagest-cli run "$w/job16.toml" --force
  echo "== $k ranks x 1 thread, the engine's cost model"
  mpirun --version | head -1
  time mpirun -n "$k" --use-hwthread-cpus --bind-to hwthread -x ALMAGEST_SPLIT_TRACE=1 almagest-cli run "$w/job1.toml" --force --log-json "$w/log.json"
  grep '"event":"rank"' "$w/log.json" | head -3
  grep -o '"summary":\[[^]]*split[^]]*' "$w/log.json" | head -2
  echo "== compare"
  bench_npcf_loadbalance --compare "$w/out16.h5" "$w/out1.h5"
  echo "compare exit $?"
  if [ "$order" = spatial ] && [ -z "${SKIP_FIT:-}" ]; then
    echo "== fit of the cost model on 16 threads"
    time bench_npcf_loadbalance --catalogue bench --n "$n" --threads 16 --fit-costs --ranks 2,4,8,16,32,64,128 | tee "$w/fit.txt"
    m4=$(grep 'as a CostModel (data, randoms)' "$w/fit.txt" | tail -1 | sed -e 's/.*{//' -e 's/}.*//' -e 's/ //g')
    m3=$(grep 'as a CostModel (data, randoms)' "$w/fit.txt" | head -1 | sed -e 's/.*{//' -e 's/}.*//' -e 's/ //g')
    echo "== $k ranks x 1 thread, the model fitted here: ALMAGEST_NPCF_COST_MODEL='$m3;$m4'"
    time mpirun -n "$k" --use-hwthread-cpus --bind-to hwthread -x ALMAGEST_NPCF_COST_MODEL="$m3;$m4" almagest-cli run "$w/job1.toml" --force --log-json "$w/logfit.json"
    grep -o '"summary":\[[^]]*split[^]]*' "$w/logfit.json" | head -2
    bench_npcf_loadbalance --compare "$w/out16.h5" "$w/out1.h5"
    echo "compare exit $?"
  fi
} > "$log" 2>&1
cat "$log"
