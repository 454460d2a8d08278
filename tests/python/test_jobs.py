# run_job / run_batch over the engine's job layer: same bytes as the CLI, errors of the right
# class naming field and file, batches with resume.
import os

import numpy as np
import pytest

import almagest
from conftest import seeded_catalogue, write_catalogue

ARRAYS = ("bins", "tuples", "random_tuples", "n", "r", "estimator", "zeta_disc", "zeta_conn",
          "realisable", "xi_internal", "n_odd", "r_odd", "zeta_odd", "degenerate")
KEYS = ("engine", "operation", "inputs", "outputs", "summary", "backend", "device", "threads",
        "timings_s", "skipped")


@pytest.fixture
def cats(tmp):
    return (write_catalogue(os.path.join(tmp, "d.txt"), seeded_catalogue(300, 100.0, 21)),
            write_catalogue(os.path.join(tmp, "r.txt"), seeded_catalogue(600, 100.0, 22)))


def same_datasets(a, b):
    for name in ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            assert x.dtype == y.dtype and x.shape == y.shape, name
            assert np.array_equal(x.view(np.uint8), y.view(np.uint8)), f"{name} differs"
    assert (a.ndata, a.nrandom, a.statistic) == (b.ndata, b.nrandom, b.statistic)


def test_run_job_equals_cli(cli, tmp, cats):
    d, r = cats
    ref = os.path.join(tmp, "cli.h5")
    cli("npcf", "--stat", "2pcf", "--data", d, "--randoms", r, "--rmin", 2, "--rmax", 30,
        "--nbins", 10, "--threads", 2, "--backend", "cpu", "-q", "-o", ref)
    out = os.path.join(tmp, "py.h5")
    o = almagest.run_job({"stat": "2pcf", "data": d, "randoms": r, "rmin": 2.0, "rmax": 30.0,
                          "nbins": 10, "threads": 2, "backend": "cpu", "output": out})
    assert set(KEYS) <= set(o)
    assert o["engine"] == "npcf" and not o["skipped"] and o["outputs"] == [out]
    assert all(isinstance(s, str) for s in o["summary"]) and o["summary"]
    same_datasets(almagest.read_npcf_hdf5(out), almagest.read_npcf_hdf5(ref))


def test_dry_run_writes_nothing(tmp, cats):
    d, r = cats
    out = os.path.join(tmp, "dry.h5")
    p = almagest.run_job({"engine": "npcf", "stat": "2pcf", "data": d, "randoms": r, "rmin": 2.0,
                          "rmax": 30.0, "nbins": 10, "output": out}, dry_run=True)
    assert not os.path.exists(out)
    assert [i["path"] for i in p["inputs"]] and p["outputs"]


def test_bad_value_is_config_error(tmp, cats):
    d, r = cats
    job = {"stat": "2pcf", "data": d, "randoms": r, "rmin": 2.0, "rmax": 30.0, "nbins": -3,
           "output": os.path.join(tmp, "x.h5")}
    with pytest.raises(almagest.ConfigError, match="nbins") as e:
        almagest.run_job(job)
    assert "-3" in str(e.value)
    with pytest.raises(almagest.ConfigError, match="nbinz"):
        almagest.run_job({**job, "nbins": 4, "nbinz": 4})


def test_missing_input_is_io_error(tmp, cats):
    d, r = cats
    missing = os.path.join(tmp, "nope.txt")
    with pytest.raises(almagest.IoError, match="nope.txt"):
        almagest.run_job({"stat": "2pcf", "data": missing, "randoms": r, "rmin": 2.0, "rmax": 30.0,
                          "nbins": 4, "output": os.path.join(tmp, "x.h5")})


def test_run_batch_resumes(tmp, cats):
    d, r = cats
    d2 = write_catalogue(os.path.join(tmp, "d2.txt"), seeded_catalogue(300, 100.0, 23))
    jf = os.path.join(tmp, "jobs.toml")
    with open(jf, "w") as f:
        f.write(f'randoms = "{r}"\nrmin = 2.0\nrmax = 30.0\nnbins = 6\nstat = "2pcf"\n'
                f'backend = "cpu"\nthreads = 2\n[[job]]\nname = "pair"\n'
                f'output = "out_{{stem}}.h5"\n[job.batch]\ndata = ["{d}", "{d2}"]\n')
    first = almagest.run_batch(jf)
    assert len(first) == 2 and not any(o["skipped"] for o in first)
    assert all(os.path.exists(o["outputs"][0]) for o in first)
    second = almagest.run_batch(jf)
    assert len(second) == 2 and all(o["skipped"] for o in second)
    forced = almagest.run_batch(jf, force=True)
    assert not any(o["skipped"] for o in forced)
