# Sourced by the tests/bench/mpi_*_device.sh scripts: the Open MPI runtime that
# tests/bench/mpi_device_libs.sh relocated into .device-libs/mpi22 (unpacked from
# .device-pack/mpi22.tgz when only that was carried), on PATH and LD_LIBRARY_PATH, with the MCA
# settings of one node (shared memory only, as root). Sets D to the relocated tree.
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
