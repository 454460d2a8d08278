#!/usr/bin/env bash
# Creates the project-local Python environment .venv at the repository root (if missing) with
# what the `almagest` Python module needs to build and test: nanobind (the binding library, whose
# ndarray type speaks DLPack), numpy and pytest, from PyPI. Idempotent: a second run installs
# nothing. Prints the venv's python path on stdout (everything else goes to stderr).
#
# Exit status 0 with the path printed: ready. Non-zero: no usable environment (no python3 with
# venv, or PyPI unreachable); build.sh then configures without the module and says so.
# Environment: ALMAGEST_PYTHON (interpreter to base the venv on, default python3),
# ALMAGEST_VENV (default <repo>/.venv).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${ALMAGEST_VENV:-$here/.venv}"
base="${ALMAGEST_PYTHON:-python3}"
py="$venv/bin/python"
log() { echo "python-env: $*" >&2; }

if [ ! -x "$py" ]; then
  if ! command -v "$base" >/dev/null; then log "no $base in PATH"; exit 1; fi
  log "creating $venv from $(command -v "$base")"
  "$base" -m venv "$venv" >&2 || { log "$base -m venv failed (Debian: apt-get install python3-venv)"; rm -rf "$venv"; exit 1; }
fi
inc="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
if [ ! -f "$inc/Python.h" ]; then
  log "no Python.h in $inc (Debian: apt-get install python3-dev)"; exit 1
fi

need=()
"$py" -c 'import nanobind' 2>/dev/null || need+=("nanobind>=2.0")
"$py" -c 'import numpy' 2>/dev/null || need+=(numpy)
"$py" -c 'import pytest' 2>/dev/null || need+=(pytest)
if [ "${#need[@]}" -gt 0 ]; then
  log "installing ${need[*]} from PyPI"
  "$py" -m pip install --disable-pip-version-check -q "${need[@]}" >&2 \
    || { log "pip install failed (PyPI unreachable?): the Python module will be skipped"; exit 1; }
fi
echo "$py"
