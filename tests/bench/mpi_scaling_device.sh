#!/usr/bin/env bash
# Issue 22's scaling benchmark on the device machine's 16 cores (no GPU used): the CPU 4pCF
# (5 bins, rmin 1, rmax 33) of the N = 10^6 benchmark catalogue, 1 rank x 16 threads against
# 16 ranks x 1 thread (mpirun, each bound to one of the 16 logical CPUs), outputs compared bit for bit. Needs
# .device-libs/mpi22 from tests/bench/mpi_device_libs.sh (carried). Writes $OUT/scaling.txt.
# Usage: bash tests/bench/mpi_scaling_device.sh [N (default 1000000)] [ranks (default 16)] [morton]
# (morton: the catalogues in Morton order of their positions, bench_npcf_loadbalance --morton)
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
D="$root/.device-libs/mpi22"
n=${1:-1000000}
k=${2:-16}
order=()
if [ "${3:-}" = morton ]; then order=(--morton); fi
export OPAL_PREFIX="$D/ompi" PMIX_INSTALL_PREFIX="$D/pmix" PMIX_MCA_mca_base_component_path="$D/pmix/lib/pmix"
export LD_LIBRARY_PATH="$D/lib:$D/ompi/lib/x86_64-linux-gnu/openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$D/ompi/bin:$D/bin:$PATH"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_show_load_errors=0 OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_mtl=^ofi,psm,psm2
w=/tmp/mpi22
mkdir -p "$w" "${OUT:-/tmp}"
log="${OUT:-/tmp}/scaling.txt"
{
  date -u
  nproc
  grep -m1 'model name' /proc/cpuinfo
  TIMEFORMAT="wall %R s, user %U s, sys %S s"
  time bench_npcf_loadbalance --catalogue bench --n "$n" --write-catalogues "$w" --write-only "${order[@]}"
  for t in 16 1; do
    printf 'data = "gal.txt"\nrandoms = "ran.txt"\nrmin = 1\nrmax = 33\nnbins = 5\nstat = "4pcf"\nthreads = %d\noutput = "out%d.h5"\n' "$t" "$t" > "$w/job$t.toml"
  done
  echo "== 1 rank x 16 threads"
  time almagest-cli run "$w/job16.toml" --force
  echo "== $k ranks x 1 thread"
  mpirun --version | head -1
  time mpirun -n "$k" --use-hwthread-cpus --bind-to hwthread almagest-cli run "$w/job1.toml" --force --log-json "$w/log.json"
  grep '"event":"rank"' "$w/log.json"
  echo "== compare"
  bench_npcf_loadbalance --compare "$w/out16.h5" "$w/out1.h5"
  echo "compare exit $?"
} > "$log" 2>&1
cat "$log"
