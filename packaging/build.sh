#!/usr/bin/env bash
# Configures and builds Almagest into build/ (or $ALMAGEST_BUILD_DIR). Extra args go to cmake.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ALMAGEST_BUILD_DIR:-$here/build}"
jobs="${ALMAGEST_JOBS:-$(nproc)}"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${ALMAGEST_BUILD_TYPE:-Release}" \
  "${launcher[@]}" "$@"
cmake --build "$build" -j "$jobs"
