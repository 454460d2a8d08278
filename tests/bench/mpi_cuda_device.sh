#!/usr/bin/env bash
# Issue 22, a CUDA N-point job split over ranks, on the device machine's one GPU: the 3pCF
# (10 bins) and 4pCF (5 bins) of the N = 10^6 benchmark catalogue (in /tmp/mpi22, written by
# tests/bench/mpi_scaling_device.sh first) with backend cuda, as one process and as 2 and 3 ranks
# sharing the GPU (--devices 0: every rank on device 0; each counts one hub partition of the whole
# graph, sums chained in partition order), against the CPU. Counts must be identical everywhere;
# sums agree to the CUDA backend's summation order. Needs .device-libs/mpi22 (with
# libalmagest_cuda.so in it, tests/bench/mpi_device_libs.sh). Appends to $OUT/cuda_split.txt.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/mpi_device_env.sh"
export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:/usr/local/cuda/lib64"
export ALMAGEST_CUDA_MODULE="$D/bin/libalmagest_cuda.so"
w=/tmp/mpi22
log="${OUT:-/tmp}/cuda_split.txt"
{
  [ -f "$w/gal.txt" ] || bench_npcf_loadbalance --catalogue bench --write-catalogues "$w" --write-only
  for be in cuda cpu; do
    printf 'data = "gal.txt"\nrandoms = "ran.txt"\nrmin = 1\nrmax = 33\nnbins = 10\nstat = ["3pcf", "4pcf"]\nbackend = "%s"\noutput = "c_%s.h5"\n' "$be" "$be" > "$w/c_$be.toml"
  done
  sed -i 's/nbins = 10/nbins = 5/' "$w/c_cuda.toml" "$w/c_cpu.toml"
  echo "== one process, cuda"
  time almagest-cli run "$w/c_cuda.toml" --force 2>&1 | tail -3
  mv "$w/c_cuda_3pcf.h5" "$w/one_3pcf.h5"; mv "$w/c_cuda_4pcf.h5" "$w/one_4pcf.h5"
  for k in 2 3; do
    echo "== $k ranks on one GPU"
    time mpirun -n "$k" --oversubscribe almagest-cli run "$w/c_cuda.toml" --force --devices 0 2>&1 | tail -4
    for s in 3pcf 4pcf; do
      echo "-- $s: $k ranks vs one process"
      bench_npcf_loadbalance --compare "$w/one_$s.h5" "$w/c_cuda_$s.h5"
    done
    mv "$w/c_cuda_3pcf.h5" "$w/k${k}_3pcf.h5"; mv "$w/c_cuda_4pcf.h5" "$w/k${k}_4pcf.h5"
  done
  echo "== one process, cpu (16 threads)"
  time almagest-cli run "$w/c_cpu.toml" --force 2>&1 | tail -3
  for s in 3pcf 4pcf; do
    echo "-- $s: 2 ranks (cuda) vs cpu"
    bench_npcf_loadbalance --compare "$w/c_cpu_$s.h5" "$w/k2_$s.h5"
  done
} >> "$log" 2>&1
cat "$log"
