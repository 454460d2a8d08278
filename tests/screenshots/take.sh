#!/usr/bin/env bash
# Screenshots of every view from the demo data, by script (never by hand): starts Xvfb at
# 1680x1050 with the openbox window manager, opens each view with `almagest --show-demo VIEW`
# (the demo report's steps, left on screen), waits for its "ready", and takes the whole screen
# with ImageMagick's `import -window root` into docs/screenshots/VIEW.png.
# Installs nothing: packaging/install-deps.sh's GUI set has xvfb, openbox and imagemagick.
# Usage: tests/screenshots/take.sh [BUILD_DIR] [OUT_DIR]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-${ALMAGEST_BUILD_DIR:-$here/build}}"
out="${2:-$here/docs/screenshots}"
app="$build/bin/almagest"
for tool in Xvfb openbox import; do
  command -v "$tool" >/dev/null || { echo "take.sh: '$tool' not found (run packaging/install-deps.sh)" >&2; exit 1; }
done
[ -x "$app" ] || { echo "take.sh: $app not found (build the almagest target)" >&2; exit 1; }
mkdir -p "$out"
work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

# A free display number.
n=90
while [ -e "/tmp/.X11-unix/X$n" ] || [ -e "/tmp/.X$n-lock" ]; do n=$((n + 1)); done
export DISPLAY=":$n"
unset QT_QPA_PLATFORM WAYLAND_DISPLAY
Xvfb "$DISPLAY" -screen 0 1680x1050x24 -nolisten tcp >"$work/xvfb.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -e "/tmp/.X11-unix/X$n" ] && break; sleep 0.1; done
openbox >"$work/openbox.log" 2>&1 &
pids+=($!)
sleep 1

for view in npcf zeta sky sphere stack stackcube stackcurves; do
  log="$work/$view.log"
  "$app" --settings "$work/settings.ini" --show-demo "$view" >"$log" 2>&1 &
  app_pid=$!
  ok=0
  for _ in $(seq 600); do  # up to 5 minutes for the demo jobs of one view
    if grep -q '^ready$' "$log"; then ok=1; break; fi
    kill -0 "$app_pid" 2>/dev/null || break
    sleep 0.5
  done
  if [ "$ok" != 1 ]; then
    echo "take.sh: the $view view did not become ready:" >&2; cat "$log" >&2
    kill "$app_pid" 2>/dev/null || true
    exit 1
  fi
  sleep 1.5  # the last frames (charts animate nothing, VTK renders on the next paint)
  import -window root "$out/$view.png"
  echo "take.sh: $out/$view.png"
  kill "$app_pid" 2>/dev/null || true
  wait "$app_pid" 2>/dev/null || true
done
