#!/usr/bin/env bash
# Builds the Python module for the device machine's interpreter (CPython 3.12; this machine has
# 3.11) so the DLPack device tests (tests/python/test_device.py) can run there: CPython 3.12's
# headers come from Ubuntu noble's libpython3.12-dev (unpacked under /tmp, nothing installed),
# nanobind's sources from the project venv, the engine from a CUDA-on build dir. The module
# lands in .device-libs/all/python/almagest (carried with the other device binaries).
# Usage: tests/bench/python312_module.sh [build dir (default build-dev)]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build-dev}
apt_dir=/tmp/almagest-py312-apt py=/tmp/almagest-py312
mkdir -p "$apt_dir/lists" "$apt_dir/cache" "$py"
if [ ! -f "$py/usr/include/python3.12/Python.h" ]; then
  printf 'deb [trusted=yes] http://archive.ubuntu.com/ubuntu noble main\ndeb [trusted=yes] http://archive.ubuntu.com/ubuntu noble-updates main\n' > "$apt_dir/sources.list"
  o=(-o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
     -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir/cache")
  apt-get "${o[@]}" update > /dev/null
  (cd "$apt_dir" && apt-get "${o[@]}" download libpython3.12-dev > /dev/null 2>&1)
  dpkg -x "$apt_dir"/libpython3.12-dev_*.deb "$py"
fi
nb=$("$root/.venv/bin/python" -c 'import nanobind, os; print(os.path.dirname(nanobind.__file__))')
inc=(-I"$py/usr/include/python3.12" -I"$py/usr/include" -I"$nb/include"
     -isystem "$nb/ext/robin_map/include")
flags=(-O2 -DNDEBUG -fPIC -fvisibility=hidden -ffunction-sections -fdata-sections -std=c++20)
obj=/tmp/almagest-py312-obj
mkdir -p "$obj"
for f in "$nb"/src/nb_combined.cpp; do
  c++ "${flags[@]}" -fno-strict-aliasing -DNB_BUILD -DNB_COMPACT_ASSERTIONS "${inc[@]}" -c "$f" -o "$obj/nb.o"
done
objs=("$obj/nb.o")
for f in module engine_call npcf sht stack jobs; do
  c++ "${flags[@]}" -D_almagest_EXPORTS "${inc[@]}" -I"$root/python/src" -I"$root/kernels/include" \
    -I"$root/engine/include" -c "$root/python/src/$f.cpp" -o "$obj/$f.o" &
  objs+=("$obj/$f.o")
done
wait
out="$root/.device-libs/all/python/almagest"
mkdir -p "$out"
c++ -shared -Wl,--gc-sections -o "$out/_almagest.cpython-312-x86_64-linux-gnu.so" "${objs[@]}" \
  "$build/lib/libalmagest_engine.a" /usr/lib/x86_64-linux-gnu/hdf5/serial/libhdf5.so \
  -ltomlplusplus -lfmt -lcfitsio -lhealpix_cxx -lwcs -lpthread -lm -ldl
cp "$root"/python/almagest/*.py "$out/"
printf "BUILD_CUDA_MODULE = ''\nINSTALL_CUDA_MODULE = ''\n" > "$out/_paths.py"
strip --strip-unneeded "$out"/*.so
du -sh "$out"
