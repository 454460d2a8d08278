#!/usr/bin/env bash
# README command 1: install what is missing, build, and run the main job on the bundled demo
# data: the desktop app when a display exists, otherwise the demo report drawn by its views.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$here/packaging/install-deps.sh"
"$here/packaging/build.sh" -DALMAGEST_BUILD_TESTS=OFF
bin="${ALMAGEST_BUILD_DIR:-$here/build}/bin"
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -x "$bin/almagest" ]; then
  exec "$bin/almagest" --demo
fi
out="${ALMAGEST_DEMO_OUT:-$PWD/almagest-demo}"
if [ -x "$bin/almagest" ]; then
  # The demo report drawn by the application's own views: on a virtual X screen when Xvfb is
  # there (OpenGL through Mesa, so the 3D view is drawn too), else on Qt's offscreen platform.
  echo "demo: no display found; writing the demo report ($out/index.html)"
  if command -v xvfb-run >/dev/null; then
    exec xvfb-run -a -s "-screen 0 1680x1050x24" "$bin/almagest" --demo-report "$out"
  fi
  exec env QT_QPA_PLATFORM=offscreen "$bin/almagest" --demo-report "$out"
fi
echo "demo: no display and no GUI build; running the headless demo (report in $out)"
exec "$bin/almagest-cli" demo --out "$out"
