#!/usr/bin/env bash
# Configures and builds Almagest into build/ (or $ALMAGEST_BUILD_DIR). Extra args go to cmake.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ALMAGEST_BUILD_DIR:-$here/build}"
jobs="${ALMAGEST_JOBS:-$(nproc)}"
# ccache where installed (C++ and CUDA; a fresh CI machine starts with an empty cache, so it helps
# rebuilds only). Precompiled headers (ALMAGEST_PCH) are cached only with this sloppiness.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros}"
fi
# The Python module: the project-local venv with nanobind (PyPI); without it (PyPI unreachable,
# no python3 venv) everything else builds and the module is skipped with a message.
python=(-DALMAGEST_WITH_PYTHON=OFF)
if py="$("$here/packaging/python-env.sh")"; then
  python=(-DALMAGEST_WITH_PYTHON=ON -DALMAGEST_PYTHON="$py")
else
  echo "build.sh: the Python module is skipped (packaging/python-env.sh failed, see above)" >&2
fi
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${ALMAGEST_BUILD_TYPE:-Release}" \
  "${launcher[@]}" "${python[@]}" "$@"
cmake --build "$build" -j "$jobs"
