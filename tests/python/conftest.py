# Shared fixtures of the Python tests (ctest label python; run by python/CMakeLists.txt with the
# venv's interpreter and PYTHONPATH=<build>/python). Skips (exit 77) when the module is missing.
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

try:
    import almagest  # noqa: F401
except ImportError as e:  # not built: reported as skipped by ctest (SKIP_RETURN_CODE 77)
    print(f"almagest module not importable: {e}", file=sys.stderr)
    sys.exit(77)

SOURCE_DIR = os.environ.get("ALMAGEST_SOURCE_DIR",
                            os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))


@pytest.fixture
def tmp(request):
    """A fresh folder under $ALMAGEST_TEST_TMP (the test tree's tmp/)."""
    base = os.environ.get("ALMAGEST_TEST_TMP") or tempfile.gettempdir()
    os.makedirs(base, exist_ok=True)
    d = tempfile.mkdtemp(prefix=f"py_{request.node.name[:40]}_", dir=base)
    return d


@pytest.fixture
def cli():
    """Runs almagest-cli; returns the CompletedProcess (skips if the CLI is unknown)."""
    exe = os.environ.get("ALMAGEST_CLI")
    if not exe or not os.path.exists(exe):
        pytest.skip("ALMAGEST_CLI not set (run through ctest)")

    def run(*args, check=True):
        p = subprocess.run([exe, *map(str, args)], capture_output=True, text=True)
        if check and p.returncode != 0:
            raise AssertionError(f"almagest-cli {' '.join(map(str, args))}: exit {p.returncode}\n"
                                 f"{p.stdout}\n{p.stderr}")
        return p
    return run


def write_catalogue(path, pts, header="# x y z w"):
    """Text catalogue with every double written exactly (%.17g), so that the file read back
    equals the array bit for bit."""
    with open(path, "w") as f:
        f.write(header + "\n")
        for row in pts:
            f.write(" ".join("%.17g" % v for v in row) + "\n")
    return path


def seeded_catalogue(n, box, seed, weights=True):
    rng = np.random.default_rng(seed)
    pts = rng.uniform(0.0, box, size=(n, 3))
    if weights:
        pts = np.column_stack([pts, rng.uniform(0.5, 1.5, size=n)])
    return pts
