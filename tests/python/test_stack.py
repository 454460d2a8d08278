# Shift-and-stack from Python: arrays and files give the same candidates as the CLI.
import os

import numpy as np
import pytest

import almagest

MOVER = (10.0, 12.0, 1.5, -1.0, 12.0)  # x0, y0, vx, vy [px/day], SNR


@pytest.fixture
def stack():
    return almagest.synthetic_stack(n_exp=12, width=32, height=32, seed=7, movers=[MOVER])


def search(st, **kw):
    return almagest.stack_search(st, vx_range=(-3, 3), vy_range=(-3, 3), grid=13, threads=2, **kw)


def test_psiphi_shapes(stack):
    psi, phi = almagest.psiphi(stack, threads=2)
    assert psi.shape == (12, 32, 32) and psi.dtype == np.float32
    assert np.all(phi >= 0) and np.any(phi > 0)


def test_search_finds_the_mover_and_equals_cli(stack, tmp, cli):
    cand, meta = search(stack)
    assert len(cand["z"]) >= 1 and np.all(np.diff(cand["z"]) <= 0)
    best = {k: v[0] for k, v in cand.items()}
    assert abs(best["x"] - MOVER[0]) <= 1 and abs(best["y"] - MOVER[1]) <= 1
    assert abs(best["vx"] - MOVER[2]) <= 0.5 and abs(best["vy"] - MOVER[3]) <= 0.5
    assert meta["backend"] == "cpu" and meta["threshold_z"] > 0
    # The same stack as a file: identical candidates; and the CLI on that file agrees.
    path = os.path.join(tmp, "stack.h5")
    almagest.write_stack_hdf5(path, stack)
    cf, _ = search(path)
    for k in cand:
        assert np.array_equal(cand[k], cf[k]), k
    out = os.path.join(tmp, "cand.h5")
    cli("stack", "search", path, "--vx-range", "-3,3", "--vy-range", "-3,3", "--grid", 13,
        "--threads", 2, "-q", "-o", out)
    ref, rmeta = almagest.read_stack_candidates(out)
    for k in cand:
        if k in ref:
            assert np.array_equal(cand[k], ref[k]), k
    assert rmeta["threshold_z"] == meta["threshold_z"]


def test_top_k_and_options(stack):
    cand, meta = search(stack, top_k=2, no_cluster=True, threshold_sigma=50.0)
    assert meta["threshold_z"] == 50.0 or len(cand["z"]) >= 0
    with pytest.raises(almagest.ConfigError) as e:
        search(stack, top_k=17)
    assert e.value.field == "top-k"  # the schema key, as the CLI names it
    with pytest.raises(almagest.ConfigError, match="unknown option"):
        search(stack, gird=3)
    with pytest.raises(almagest.ConfigError) as e:
        almagest.stack_search(stack, threads=2)
    assert e.value.field == "bank"


def test_stack_errors(tmp, stack):
    missing = os.path.join(tmp, "none.h5")
    with pytest.raises(almagest.IoError) as e:
        search(missing)
    assert e.value.file == missing
    bad = dict(stack)
    bad["mjd"] = np.full(12, np.nan)
    with pytest.raises(almagest.IoError) as e:
        search(bad)
    assert e.value.field.startswith("MJD")
