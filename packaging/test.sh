#!/usr/bin/env bash
# README command 2: install what is missing, build, and run the whole test suite.
# GPU tests skip themselves (exit 77) where no device exists; GUI tests run under xvfb-run.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$here/packaging/install-deps.sh"
export ALMAGEST_BUILD_DIR="${ALMAGEST_BUILD_DIR:-$here/build-test}"
"$here/packaging/build.sh" -DALMAGEST_BUILD_TESTS=ON
cd "$ALMAGEST_BUILD_DIR"
ctest --output-on-failure -j "${ALMAGEST_TEST_JOBS:-2}" --timeout 900
