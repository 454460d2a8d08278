#!/usr/bin/env bash
# Gathers what tests/bench/mpi_scaling_device.sh runs on the device machine (which has no Open MPI):
# almagest-cli and bench_npcf_loadbalance of an MPI build (CPU only is enough), the non-system
# libraries they load, and Debian's Open MPI runtime relocated under one prefix (orterun, libmpi,
# libopen-rte/pal, the openmpi3 plugins, the help files; PMIx and its plugins): used there with
# OPAL_PREFIX / PMIX_INSTALL_PREFIX; the CUDA module when the build has one. Into .device-libs/mpi22 (git-ignored, under the 64 MiB
# carry limit). Usage: tests/bench/mpi_device_libs.sh [build dir (default build-h22)]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build-h22}
out="$root/.device-libs/mpi22"
multi=x86_64-linux-gnu
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/ompi/bin" "$out/ompi/lib/$multi/openmpi/lib" "$out/ompi/share" "$out/pmix/lib"
cp "$build/bin/almagest-cli" "$build/bin/bench_npcf_loadbalance" "$out/bin/"
# MPI_Init and MPI_Finalize alone (tests/bench/mpi_launch_device.sh).
mpicc -O2 "$root/tests/bench/mpi_hello.c" -o "$out/bin/mpi_hello"
# The CUDA module when the build has one (tests/bench/mpi_cuda_device.sh: ALMAGEST_CUDA_MODULE).
if [ -f "$build/bin/libalmagest_cuda.so" ]; then cp "$build/bin/libalmagest_cuda.so" "$out/bin/"; fi
cp /usr/bin/orterun /usr/bin/orted "$out/ompi/bin/"
ln -sf orterun "$out/ompi/bin/mpirun"
cp -r "/usr/lib/$multi/openmpi/lib/openmpi3" "$out/ompi/lib/$multi/openmpi/lib/"
cp -r /usr/share/openmpi "$out/ompi/share/"
cp -r "/usr/lib/$multi/pmix2/lib/pmix" "$out/pmix/lib/"
[ -d "/usr/lib/$multi/pmix2/share" ] && cp -r "/usr/lib/$multi/pmix2/share" "$out/pmix/"
# Libraries: of the programs, of orterun, of every plugin (those of fabrics absent there are
# left out: their plugins then do not load, which the run's MCA settings expect).
{
  for f in "$out"/bin/* "$out"/ompi/bin/orterun "$out"/ompi/bin/orted "$out"/ompi/lib/$multi/openmpi/lib/openmpi3/*.so \
           "$out"/pmix/lib/pmix/*.so; do
    ldd "$f" 2> /dev/null || true
  done
} | awk '{print $3}' | grep '^/' | sort -u |
  grep -v -E '/(libc|libm|libgcc_s|libstdc\+\+|libresolv|libpthread|libdl|librt)\.so' |
  grep -v '^/usr/local/cuda' |
  grep -v -E '/lib(ucp|uct|ucs|ucm|fabric|ibverbs|rdmacm|psm|psm2|cuda|nvidia|ze_loader|ofi)' |
  xargs -I{} cp -L {} "$out/lib/"
strip --strip-unneeded "$out"/bin/* "$out"/lib/*.so* "$out"/ompi/lib/$multi/openmpi/lib/openmpi3/*.so 2> /dev/null || true
du -sh "$out"
