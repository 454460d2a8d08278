#!/usr/bin/env bash
# Where a 16-rank job's time outside the job goes, on the device machine (issue 22): mpirun
# starting 16 copies of /bin/true, of MPI_Init + MPI_Finalize alone (mpi_hello) and of
# `almagest-cli --version`, under the MCA settings of tests/bench/mpi_efficiency_device.sh and a
# few variants (each 3 times). Needs .device-libs/mpi22 (tests/bench/mpi_device_libs.sh), carried
# or unpacked from .device-pack/mpi22.tgz. Usage: bash tests/bench/mpi_launch_device.sh [ranks]
set -u
source "$(dirname "${BASH_SOURCE[0]}")/mpi_device_env.sh"
k=${1:-16}
TIMEFORMAT="%R"
t() {  # label, command...: three wall times
  local label=$1 out="" x
  shift
  for _ in 1 2 3; do
    x=$( { time "$@" > /dev/null 2>&1; } 2>&1 )
    out="$out $x"
  done
  echo "$label:$out s"
}
t "plain almagest-cli --version" almagest-cli --version
t "mpirun -n $k /bin/true" mpirun -n "$k" --use-hwthread-cpus --bind-to hwthread /bin/true
t "mpirun -n $k mpi_hello" mpirun -n "$k" --use-hwthread-cpus --bind-to hwthread mpi_hello
t "mpirun -n $k almagest-cli --version" mpirun -n "$k" --use-hwthread-cpus --bind-to hwthread almagest-cli --version
t "  --bind-to none: mpi_hello" mpirun -n "$k" --bind-to none mpi_hello
t "  async modex, add_procs cutoff 0: mpi_hello" mpirun -n "$k" --use-hwthread-cpus --bind-to hwthread \
  --mca pmix_base_async_modex 1 --mca mpi_add_procs_cutoff 0 mpi_hello
t "  vader without single copy: mpi_hello" mpirun -n "$k" --use-hwthread-cpus --bind-to hwthread \
  --mca btl_vader_single_copy_mechanism none mpi_hello
t "  coll basic,libnbc,self,tuned; osc pt2pt: mpi_hello" mpirun -n "$k" --use-hwthread-cpus --bind-to hwthread \
  --mca coll basic,libnbc,self,tuned --mca osc pt2pt mpi_hello
t "  all of the above: mpi_hello" mpirun -n "$k" --bind-to none --mca pmix_base_async_modex 1 --mca mpi_add_procs_cutoff 0 \
  --mca btl_vader_single_copy_mechanism none --mca coll basic,libnbc,self,tuned --mca osc pt2pt mpi_hello
t "  all of the above: almagest-cli --version" mpirun -n "$k" --bind-to none --mca pmix_base_async_modex 1 \
  --mca mpi_add_procs_cutoff 0 --mca btl_vader_single_copy_mechanism none --mca coll basic,libnbc,self,tuned \
  --mca osc pt2pt almagest-cli --version
# mpirun's own start: one process, the open-file limit, hwloc's I/O discovery (PCI devices).
echo "open files: soft $(ulimit -n), hard $(ulimit -Hn)"
t "mpirun -n 1 /bin/true" mpirun -n 1 /bin/true
t "  ulimit -n 1024: mpirun -n $k /bin/true" bash -c "ulimit -n 1024; mpirun -n $k --use-hwthread-cpus --bind-to hwthread /bin/true"
t "  HWLOC_COMPONENTS=-pci,-linuxio,-cuda,-nvml,-opencl,-gl: mpirun -n $k /bin/true" \
  env HWLOC_COMPONENTS=-pci,-linuxio,-cuda,-nvml,-opencl,-gl mpirun -n "$k" --use-hwthread-cpus --bind-to hwthread /bin/true
t "  HWLOC_COMPONENTS=-opencl,-cuda,-nvml,-gl: mpirun -n $k /bin/true" \
  env HWLOC_COMPONENTS=-opencl,-cuda,-nvml,-gl mpirun -n "$k" --use-hwthread-cpus --bind-to hwthread /bin/true
t "  HWLOC_COMPONENTS=-opencl,-cuda,-nvml,-gl: almagest-cli --version" \
  env HWLOC_COMPONENTS=-opencl,-cuda,-nvml,-gl mpirun -n "$k" --use-hwthread-cpus --bind-to hwthread almagest-cli --version
t "  HWLOC_COMPONENTS=...: mpi_hello" \
  env HWLOC_COMPONENTS=-pci,-linuxio,-cuda,-nvml,-opencl,-gl mpirun -n "$k" --use-hwthread-cpus --bind-to hwthread mpi_hello
