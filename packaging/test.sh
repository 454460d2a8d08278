#!/usr/bin/env bash
# README command 2: install what is missing, build, and run the whole test suite; then the
# sanitizer job: the `sanitize` preset (AddressSanitizer + UBSan, no GUI, no CUDA; CMakePresets.json)
# built into build-asan and the labels unit, cli and fuzz run under it (docs/design.md, "Tests
# under sanitizers and fuzzing").
# GPU tests skip themselves (exit 77) where no device exists; GUI tests run under xvfb-run.
# The Python tests (label python) run when build.sh could make the venv (packaging/python-env.sh).
#
# Environment: ALMAGEST_TEST_SANITIZE=0 skips the sanitizer job (quick local runs; CI runs it);
# ALMAGEST_TEST_SANITIZE_LABELS is the ctest label regex under the sanitizers (default unit|cli|fuzz,
# "all" for the whole suite); ALMAGEST_TEST_JOBS (default 2) tests in parallel.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$here/packaging/install-deps.sh"
export ALMAGEST_BUILD_DIR="${ALMAGEST_BUILD_DIR:-$here/build-test}"
jobs="${ALMAGEST_TEST_JOBS:-2}"
start=$SECONDS

"$here/packaging/build.sh" -DALMAGEST_BUILD_TESTS=ON
suite_rc=0
(cd "$ALMAGEST_BUILD_DIR" && ctest --output-on-failure -j "$jobs" --timeout 900) || suite_rc=$?
echo "test.sh: build and suite: $((SECONDS - start)) s (ctest exit $suite_rc)"

# The package check (docs/packaging.md): the suite's build packaged with cpack -G DEB, the app and
# the CLI installed with apt (never the CUDA module), the installed CLI's info and demo run, the
# packages removed. Needs root (CI runs as root); ALMAGEST_TEST_PACKAGE=0 skips it.
pkg_rc=0
if [ "${ALMAGEST_TEST_PACKAGE:-1}" != 0 ]; then
  pkg_start=$SECONDS
  if [ "$(id -u)" = 0 ] && grep -q '^ALMAGEST_WITH_GUI:BOOL=ON' "$ALMAGEST_BUILD_DIR/CMakeCache.txt"; then
    ALMAGEST_PACKAGE_REUSE=1 ALMAGEST_PACKAGE_BUILD_DIR="$ALMAGEST_BUILD_DIR" \
      bash "$here/packaging/check-package.sh" || pkg_rc=$?
    echo "test.sh: package check: $((SECONDS - pkg_start)) s (exit $pkg_rc)"
  else
    echo "test.sh: package check skipped (needs root and a GUI build)"
  fi
fi

asan_rc=0
if [ "${ALMAGEST_TEST_SANITIZE:-1}" != 0 ]; then
  asan_start=$SECONDS
  launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    # Precompiled headers (ALMAGEST_PCH) are cached only with this sloppiness (ccache manual).
    export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros}"
  fi
  labels="${ALMAGEST_TEST_SANITIZE_LABELS:-unit|cli|fuzz}"
  label_args=(-L "$labels")
  if [ "$labels" = all ]; then label_args=(); fi
  # Only the tests of these labels are built (ALMAGEST_TEST_LABELS); a label regex that is not a
  # plain a|b|c list builds them all.
  build_labels=all
  if [[ "$labels" =~ ^[a-z]+(\|[a-z]+)*$ ]]; then build_labels="${labels//|/;}"; fi
  (
    cd "$here"
    cmake --preset sanitize "${launcher[@]}" -DALMAGEST_TEST_LABELS="$build_labels"
    cmake --build --preset sanitize -j "${ALMAGEST_JOBS:-$(nproc)}"
    echo "test.sh: sanitizer build: $((SECONDS - asan_start)) s"
    # ASAN_OPTIONS / UBSAN_OPTIONS come from the test preset.
    ctest --preset sanitize -j "$jobs" "${label_args[@]}"
  ) || asan_rc=$?
  echo "test.sh: sanitizer job (labels: $labels): $((SECONDS - asan_start)) s (exit $asan_rc)"
fi

echo "test.sh: total $((SECONDS - start)) s"
if [ "$suite_rc" != 0 ] || [ "$pkg_rc" != 0 ] || [ "$asan_rc" != 0 ]; then exit 1; fi
