# N-point from Python: schema parity, results equal the CLI's bit for bit, arrays equal files,
# errors of the right class naming file and field.
import os

import numpy as np
import pytest

import almagest
from conftest import SOURCE_DIR, seeded_catalogue, write_catalogue

ARRAYS = ("bins", "tuples", "random_tuples", "n", "r", "estimator", "zeta_disc", "zeta_conn",
          "realisable", "xi_internal", "n_odd", "r_odd", "zeta_odd", "degenerate")


def same(a, b):
    """Bit-for-bit equality of two results (every array, NaN-safe, plus counts)."""
    for name in ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            assert x.dtype == y.dtype and x.shape == y.shape, name
            assert np.array_equal(x.view(np.uint8), y.view(np.uint8)), f"{name} differs"
    assert (a.ndata, a.nrandom, a.graph_edges, a.statistic) == (b.ndata, b.nrandom, b.graph_edges, b.statistic)


@pytest.fixture
def catalogues(tmp):
    data = seeded_catalogue(400, 100.0, 11)
    rand = seeded_catalogue(800, 100.0, 12)
    return (data, rand, write_catalogue(os.path.join(tmp, "d.txt"), data),
            write_catalogue(os.path.join(tmp, "r.txt"), rand))


def test_keywords_are_the_schema(cli):
    keys = [o["key"] for o in almagest.npcf_options()]
    params = list(almagest.npcf.__signature__.parameters)
    assert params[:-1] == [k.replace("-", "_") for k in keys] and params[-1] == "progress"
    # ... and the schema is what the CLI offers: every key is a flag of `almagest-cli npcf`.
    help_text = cli("npcf", "--help").stdout
    for k in keys:
        assert f"--{k}" in help_text, k
    with pytest.raises(almagest.ConfigError, match="nbinz: unknown option"):
        almagest.npcf(stat="2pcf", nbinz=3)


@pytest.mark.parametrize("stat,nbins", [("2pcf", 12), ("3pcf", 6), ("4pcf-parity", 3)])
def test_equals_cli(cli, tmp, catalogues, stat, nbins):
    data, rand, dpath, rpath = catalogues
    out = os.path.join(tmp, f"cli_{stat}.h5")
    common = dict(rmin=2.0, rmax=24.0, nbins=nbins, threads=2, backend="cpu")
    cli("npcf", "--stat", stat, "--data", dpath, "--randoms", rpath, "--rmin", 2, "--rmax", 24,
        "--nbins", nbins, "--threads", 2, "--backend", "cpu", "-q", "-o", out)
    ref = almagest.read_npcf_hdf5(out)
    from_files = almagest.npcf(stat=stat, data=dpath, randoms=rpath, **common)
    from_arrays = almagest.npcf(stat=stat, data=data, randoms=rand, **common)
    same(from_files, ref)
    same(from_arrays, ref)
    # Python-written file equals the CLI's too (read back through the same reader).
    py_out = os.path.join(tmp, f"py_{stat}.h5")
    almagest.npcf(stat=stat, data=dpath, randoms=rpath, output=py_out, **common)
    same(almagest.read_npcf_hdf5(py_out), ref)
    assert from_files.rows() == ref.rows() > 0
    assert '"backend"' in from_files.provenance_json


def test_several_statistics_and_thread_independence(catalogues):
    data, rand, _, _ = catalogues
    r1 = almagest.npcf(stat=["2pcf", "3pcf"], data=data, randoms=rand, rmin=2, rmax=20, nbins=5,
                       threads=1)
    r4 = almagest.npcf(stat="2pcf,3pcf".split(","), data=data, randoms=rand, rmin=2, rmax=20,
                       nbins=5, threads=4)
    assert [r.statistic for r in r1] == ["2pcf", "3pcf"]
    for a, b in zip(r1, r4):
        same(a, b)
    xi = r1[0]
    assert xi.bins.shape == (5, 1) and r1[1].bins.shape[1] == 3
    assert len(xi.bin_edges) == 6 and xi.bin_edges[0] == 2.0
    assert not xi.estimator.flags.writeable  # a read-only view into the result


def test_periodic_analytic_randoms():
    data = seeded_catalogue(500, 50.0, 5, weights=False)
    r = almagest.npcf(stat="2pcf", data=data, periodic=True, box=50.0, rmin=1, rmax=10, nbins=4)
    assert r.analytic_randoms and r.nrandom == 0


def test_missing_file(tmp):
    missing = os.path.join(tmp, "nope.txt")
    with pytest.raises(almagest.IoError) as e:
        almagest.npcf(stat="2pcf", data=missing, randoms=missing, rmin=1, rmax=5, nbins=3)
    assert e.value.file == missing and missing in str(e.value)


def test_missing_column(tmp, catalogues):
    _, _, dpath, rpath = catalogues
    with pytest.raises(almagest.IoError) as e:
        almagest.npcf(stat="2pcf", data=dpath, randoms=rpath, data_columns=["x", "y", "zz"],
                      rmin=1, rmax=5, nbins=3)
    assert e.value.file == dpath and "zz" in e.value.field


def test_nan_coordinates(tmp):
    pts = seeded_catalogue(50, 10.0, 3)
    pts[17, 1] = np.nan
    path = write_catalogue(os.path.join(tmp, "nan.txt"), pts)
    rand = write_catalogue(os.path.join(tmp, "r.txt"), seeded_catalogue(60, 10.0, 4))
    with pytest.raises(almagest.IoError) as e:
        almagest.npcf(stat="2pcf", data=path, randoms=rand, rmin=1, rmax=5, nbins=3)
    assert e.value.file == path and e.value.field and "18" in str(e.value)
    # The same from arrays: named after the array role.
    with pytest.raises(almagest.IoError) as e:
        almagest.npcf(stat="2pcf", data=pts, randoms=seeded_catalogue(60, 10.0, 4), rmin=1, rmax=5, nbins=3)
    assert "data" in e.value.file and e.value.field == "y"


@pytest.mark.parametrize("stat,nbins", [("2pcf", 0), ("2pcf", 256), ("4pcf", 21)])
def test_nbins_out_of_range(catalogues, stat, nbins):
    data, rand, _, _ = catalogues
    with pytest.raises(almagest.ConfigError) as e:
        almagest.npcf(stat=stat, data=data, randoms=rand, rmin=1, rmax=5, nbins=nbins)
    assert e.value.field == "nbins" and str(nbins) in str(e.value)
    assert isinstance(e.value, ValueError) and isinstance(e.value, almagest.Error)


def test_other_config_errors(catalogues):
    data, rand, dpath, _ = catalogues
    with pytest.raises(almagest.ConfigError, match="randoms"):
        almagest.npcf(stat="2pcf", data=data, rmin=1, rmax=5, nbins=3)
    with pytest.raises(almagest.ConfigError, match="unknown statistic"):
        almagest.npcf(stat="5pcf", data=data, randoms=rand, rmin=1, rmax=5, nbins=3)
    with pytest.raises(almagest.ConfigError, match="data-columns: applies to catalogue files"):
        almagest.npcf(stat="2pcf", data=data, randoms=rand, data_columns=["a", "b", "c"], rmin=1,
                      rmax=5, nbins=3)


def test_corrupt_fixture_is_an_io_error():
    bad = os.path.join(SOURCE_DIR, "tests/fixtures/corrupt/oom_cath5_286.h5")
    ran = os.path.join(SOURCE_DIR, "tests/fixtures/corrupt/ran.txt")
    with pytest.raises(almagest.IoError) as e:
        almagest.npcf(stat="2pcf", data=bad, randoms=ran, rmin=1, rmax=20, nbins=5)
    assert e.value.file == bad
