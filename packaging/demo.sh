#!/usr/bin/env bash
# README command 1: install what is missing, build, and run the main job on the bundled demo
# data: the desktop app when a display exists, otherwise a headless demo report.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$here/packaging/install-deps.sh"
"$here/packaging/build.sh" -DALMAGEST_BUILD_TESTS=OFF
bin="${ALMAGEST_BUILD_DIR:-$here/build}/bin"
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -x "$bin/almagest" ]; then
  exec "$bin/almagest" --demo
fi
echo "demo: no display found; running the headless demo (report in ./almagest-demo)"
exec "$bin/almagest-cli" demo --out "${ALMAGEST_DEMO_OUT:-$PWD/almagest-demo}"
