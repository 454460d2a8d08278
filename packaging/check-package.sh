#!/usr/bin/env bash
# The package check (issue 25; docs/packaging.md): builds the Debian packages with CPack, installs
# the application and the CLI with apt on this machine WITHOUT the CUDA module (apt pulls in the
# Debian dependencies the packages declare), then checks that
#   - each package declares its dependencies (a Depends field naming libc6, and for the app Qt 6),
#   - the installed CLI runs `info` and its demo (exit 0, a report written),
#   - `info` says why no GPU is used when the CUDA module is not installed,
#   - the installed application starts (`almagest --version`) and the desktop entry, the icons
#     and the demo data are where the desktop and the programs look for them,
# and removes the packages again (ALMAGEST_PACKAGE_KEEP=1 keeps them installed).
#
# Needs root (apt). Environment: ALMAGEST_PACKAGE_BUILD_DIR (default build-package), passed to
# packaging/build.sh with tests off (with ALMAGEST_PACKAGE_REUSE=1 an already configured GUI build
# there is packaged as it is: what CI does with the suite's build); ALMAGEST_PACKAGE_CUDA=ON builds the CUDA module package too
# (it is built and its metadata checked, but never installed here).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ALMAGEST_PACKAGE_BUILD_DIR:-$here/build-package}"
cuda="${ALMAGEST_PACKAGE_CUDA:-OFF}"
start=$SECONDS
fail() { echo "check-package: FAILED: $*" >&2; exit 1; }

if [ -f "$build/CMakeCache.txt" ] && [ "${ALMAGEST_PACKAGE_REUSE:-0}" = 1 ]; then
  # CI (packaging/test.sh): package the suite's own build instead of building a second time; the
  # packages hold only the cli/app/cuda components, so a tests-on build packages the same files.
  grep -q '^ALMAGEST_WITH_GUI:BOOL=ON' "$build/CMakeCache.txt" || fail "$build was configured without the GUI"
  if grep -q '^ALMAGEST_WITH_CUDA:BOOL=ON' "$build/CMakeCache.txt"; then cuda=ON; else cuda=OFF; fi
  cmake --build "$build" -j "${ALMAGEST_JOBS:-$(nproc)}" --target almagest almagest-cli
  if [ "$cuda" = ON ]; then cmake --build "$build" -j "${ALMAGEST_JOBS:-$(nproc)}" --target almagest_cuda; fi
else
  ALMAGEST_BUILD_DIR="$build" ALMAGEST_BUILD_TYPE=Release "$here/packaging/build.sh" \
    -DALMAGEST_BUILD_TESTS=OFF -DALMAGEST_WITH_GUI=ON -DALMAGEST_WITH_CUDA="$cuda"
fi
rm -f "$build"/*.deb
(cd "$build" && cpack -G DEB)
echo "check-package: packages built in $((SECONDS - start)) s"

shopt -s nullglob
cli=("$build"/almagest-cli_*.deb)
app=("$build"/almagest_*.deb)
cudadeb=("$build"/almagest-cuda_*.deb)
[ ${#cli[@]} = 1 ] || fail "expected one almagest-cli package in $build"
[ ${#app[@]} = 1 ] || fail "expected one almagest package in $build"
if [ "$cuda" = ON ]; then [ ${#cudadeb[@]} = 1 ] || fail "expected one almagest-cuda package"; fi

for deb in "${cli[0]}" "${app[0]}" "${cudadeb[@]}"; do
  depends="$(dpkg-deb -f "$deb" Depends || true)"
  echo "check-package: $(basename "$deb"): Depends: $depends"
  [ -n "$depends" ] || fail "$(basename "$deb") declares no dependencies"
done
# Listings are read whole before they are searched: `dpkg-deb -c x | grep -q` under pipefail fails
# when grep stops at the first match and dpkg-deb dies of SIGPIPE (it did in CI).
cli_depends="$(dpkg-deb -f "${cli[0]}" Depends)"
app_depends="$(dpkg-deb -f "${app[0]}" Depends)"
app_files="$(dpkg-deb -c "${app[0]}")"
grep -q 'libc6' <<< "$cli_depends" || fail "almagest-cli does not depend on libc6"
grep -q 'libqt6' <<< "$app_depends" || fail "almagest does not depend on Qt 6"
grep -q 'almagest-cli' <<< "$app_depends" || fail "almagest does not depend on almagest-cli"
grep -q 'usr/share/applications/almagest.desktop' <<< "$app_files" || fail "no desktop entry in the app package"
grep -q 'usr/share/icons/hicolor/scalable/apps/almagest.svg' <<< "$app_files" || fail "no SVG icon"
grep -q 'usr/share/icons/hicolor/48x48/apps/almagest.png' <<< "$app_files" || fail "no 48x48 icon"

# Install the app and the CLI only (never the CUDA module): apt resolves their Depends.
cleanup() {
  if [ "${ALMAGEST_PACKAGE_KEEP:-0}" != 1 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get remove -y almagest almagest-cli >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${cli[0]}" "${app[0]}"
[ ! -e /usr/lib/almagest/libalmagest_cuda.so ] || fail "the CUDA module is installed; this check needs a machine without it"

out="$(mktemp -d)"
info="$(cd "$out" && /usr/bin/almagest-cli info 2>&1)" || fail "almagest-cli info exited $?: $info"
echo "$info" | sed 's/^/  info: /'
grep -qi 'gpu\|cuda' <<< "$info" || fail "info does not report the GPU status"
(cd "$out" && /usr/bin/almagest-cli demo --out "$out/demo") || fail "almagest-cli demo exited $?"
[ -n "$(ls -A "$out/demo" 2>/dev/null)" ] || fail "the demo wrote nothing in $out/demo"
[ -d /usr/share/almagest/demo ] || fail "no demo data in /usr/share/almagest/demo"
version="$(QT_QPA_PLATFORM=offscreen /usr/bin/almagest --version 2>&1)" || fail "almagest --version exited $?: $version"
echo "check-package: almagest --version: $version"
command -v desktop-file-validate >/dev/null && desktop-file-validate /usr/share/applications/almagest.desktop
rm -rf "$out"
echo "check-package: OK in $((SECONDS - start)) s"
