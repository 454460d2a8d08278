#!/usr/bin/env bash
# Installs the Debian 12 packages Almagest needs to build and test, only those missing.
# Idempotent: a second run installs nothing. Usage: packaging/install-deps.sh [--no-gui]
set -euo pipefail

gui=1
for arg in "$@"; do
  case "$arg" in
    --no-gui) gui=0 ;;
    -h|--help) echo "usage: $0 [--no-gui]"; exit 0 ;;
    *) echo "install-deps: unknown option '$arg'" >&2; exit 2 ;;
  esac
done

pkgs=(
  cmake ninja-build g++ pkg-config ccache
  libhdf5-dev libnanoflann-dev libcfitsio-dev libhealpix-cxx-dev
  libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libfmt-dev wcslib-dev
  qt6-base-dev   # Qt Core/Test are used by the test suite even without the GUI
  python3-dev python3-venv   # the Python module's venv and headers (packaging/python-env.sh)
  openmpi-bin libopenmpi-dev # mpirun -n K almagest-cli run (docs/mpi.md)
)
if [ "$gui" = 1 ]; then
  # libqt6opengl6-dev must be named: Qt6OpenGLWidgets' CMake config needs it (docs/design.md).
  # qt6-svg-dev: SVG export of charts and views; imagemagick (import) and openbox: the scripted
  # screenshots (tests/screenshots/take.sh) under Xvfb with a window manager.
  pkgs+=(libqt6opengl6-dev qt6-charts-dev qt6-svg-dev libvtk9-dev xvfb xauth libgl1-mesa-dri
         imagemagick openbox)
fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO=sudo; else
    echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1
  fi
fi
echo "install-deps: installing ${#missing[@]} package(s): ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
