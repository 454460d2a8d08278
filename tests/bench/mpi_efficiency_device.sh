#!/usr/bin/env bash
# Issue 22's efficiency measurement on the device machine's 16 cores, in rounds (the hosts lent
# are noisy): the CPU 4pCF (5 bins, rmin 1, rmax 33, spatial hub order) of the N = 10^6 benchmark
# catalogue as 1 rank x 16 threads (a plain process, then one rank under `mpirun -n 1`) and as
# 16 ranks x 1 thread (each bound to one logical CPU, with ALMAGEST_SPLIT_TRACE), outputs
# compared bit for bit (BIND=none|core|hwthread: the 16 ranks' binding, default hwthread); first the launch cost of mpirun alone (`almagest-cli --version`). Needs
# .device-libs/mpi22 from tests/bench/mpi_device_libs.sh (carried, or unpacked from
# .device-pack/mpi22.tgz). Usage: bash tests/bench/mpi_efficiency_device.sh [rounds (default 3)]
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [ ! -d "$root/.device-libs/mpi22" ] && [ -f "$root/.device-pack/mpi22.tgz" ]; then
  mkdir -p "$root/.device-libs" && tar -xzf "$root/.device-pack/mpi22.tgz" -C "$root/.device-libs"
fi
D="$root/.device-libs/mpi22"
export OPAL_PREFIX="$D/ompi" PMIX_INSTALL_PREFIX="$D/pmix" PMIX_MCA_mca_base_component_path="$D/pmix/lib/pmix"
export PMIX_MCA_pcompress_base_silence_warning=1
export LD_LIBRARY_PATH="$D/lib:$D/ompi/lib/x86_64-linux-gnu/openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$D/ompi/bin:$D/bin:$PATH"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_show_load_errors=0 OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_mtl=^ofi,psm,psm2
rounds=${1:-3}
w=/tmp/mpi22
mkdir -p "$w"
cd "$w" || exit 1
bench_npcf_loadbalance --catalogue bench --n 1000000 --write-catalogues "$w" --write-only
for t in 16 1; do
  printf 'data = "gal.txt"\nrandoms = "ran.txt"\nrmin = 1\nrmax = 33\nnbins = 5\nstat = "4pcf"\nthreads = %d\nhub-order = "spatial"\noutput = "out%d.h5"\n' "$t" "$t" > "job$t.toml"
done
TIMEFORMAT="%R"
date -u
grep -m1 'model name' /proc/cpuinfo
plain=$( { time almagest-cli --version > /dev/null; } 2>&1 )
launch=$( { time mpirun -n 16 --use-hwthread-cpus --bind-to hwthread almagest-cli --version > /dev/null; } 2>&1 )
echo "launch: plain $plain s; mpirun -n 16 $launch s"
for round in $(seq 1 "$rounds"); do
  a=$( { time almagest-cli run job16.toml --force > o16.txt 2>&1; } 2>&1 )
  b=$( { time mpirun -n 1 --bind-to none almagest-cli run job16.toml --force > o16m.txt 2>&1; } 2>&1 )
  c=$( { time mpirun -n 16 --use-hwthread-cpus --bind-to "${BIND:-hwthread}" -x ALMAGEST_SPLIT_TRACE=1 almagest-cli run job1.toml --force > o1.txt 2>&1; } 2>&1 )
  echo "round $round: 1x16 plain $a s; 1x16 under mpirun -n 1 $b s; 16x1 (--bind-to ${BIND:-hwthread}) $c s; efficiency $(awk -v x="$a" -v y="$c" 'BEGIN{printf "%.3f", x/y}') (plain), $(awk -v x="$b" -v y="$c" 'BEGIN{printf "%.3f", x/y}') (mpirun -n 1)"
  grep -h "graph edges" o16.txt o1.txt
  grep -h "split over" o1.txt
  grep -h "split rank 0/" o1.txt
done
bench_npcf_loadbalance --compare out16.h5 out1.h5
