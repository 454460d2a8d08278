# The Python stack search is the job layer's (stack/job.hpp): its keywords are the stack
# schema's search fields, as `almagest-cli schema stack --json` lists them, and it returns what
# `almagest-cli stack search` writes for the same seeded stack (candidates, filter counts),
# with the stack, the velocity list and the common curve in memory or in files.
import inspect
import json
import os

import numpy as np
import pytest

import almagest

MOVERS = [(12.0, 14.0, 1.5, -1.0, 14.0), (30.0, 30.0, -0.8, 0.6, 10.0)]  # x0, y0, vx, vy, SNR
BANK = ("--vx-range", "-2,2", "--vy-range", "-2,2", "--grid", "17x13")
KW = dict(vx_range=(-2, 2), vy_range="-2,2", grid=(17, 13))
COLUMNS = ("x", "y", "v", "vx", "vy", "a", "b", "obs", "z", "flux", "members")


def search_fields(cli):
    """Python names of the schema's search fields, from the CLI (not from the module)."""
    out = json.loads(cli("schema", "stack", "--json").stdout)
    s = next(e for e in (out if isinstance(out, list) else [out]) if e["engine"] == "stack")
    return {f["python_name"]: f for f in s["fields"]
            if f["key"] not in ("op", "stack") and (not f.get("operations") or "search" in f["operations"])}


def ecsv(path):
    """(meta, columns) of a candidate ECSV written by the CLI, parsed here."""
    meta, rows = {}, []
    for line in open(path):
        if line.startswith("# - {") and ": " in line and "name:" not in line:
            k, v = line[5:].rstrip().rstrip("}").split(": ", 1)
            meta[k] = v
        elif line.strip() and not line.startswith("#"):
            rows.append(line.strip().split(","))
    header, rows = rows[0], rows[1:]
    return meta, {n: [r[i] for r in rows] for i, n in enumerate(header)}


def test_every_schema_field_is_a_keyword(cli):
    fields = search_fields(cli)
    params = inspect.signature(almagest.stack_search).parameters
    missing = sorted(set(fields) - set(params))
    assert not missing, f"stack schema fields the Python search does not accept: {missing}"
    assert set(almagest.STACK_SEARCH_OPTIONS) == set(fields)
    # Fields of other operations are refused, like the CLI's `stack search`.
    with pytest.raises(almagest.ConfigError, match="unknown option"):
        almagest.stack_search("x.h5", seed=3, **KW)


def test_every_default_given_explicitly_changes_nothing(cli, tmp):
    st = os.path.join(tmp, "small.h5")  # a file: the PSF reading options apply to files only
    almagest.write_stack_hdf5(st, almagest.synthetic_stack(n_exp=10, width=24, height=24, seed=5,
                                                           movers=[MOVERS[0]]))
    given = {name: f["default"] for name, f in search_fields(cli).items()
             if "default" in f and name not in ("grid", "threads")}
    assert len(given) >= 20, sorted(given)  # the filters, outputs and run options are there
    ref, rmeta = almagest.stack_search(st, threads=2, **KW)
    got, gmeta = almagest.stack_search(st, threads=2, **KW, **given)
    for k in COLUMNS:
        assert np.array_equal(ref[k], got[k]), k
    assert rmeta["filters"] == gmeta["filters"] and len(ref["z"]) >= 1


@pytest.fixture
def seeded(tmp):
    st = almagest.synthetic_stack(n_exp=14, width=40, height=40, seed=21, movers=MOVERS, common_curve=True)
    path = os.path.join(tmp, "stack.h5")
    almagest.write_stack_hdf5(path, st)
    return st, path


def cli_search(cli, tmp, path, *extra, name="c"):
    h5, txt = os.path.join(tmp, name + ".h5"), os.path.join(tmp, name + ".ecsv")
    for out in (h5, txt):
        cli("stack", "search", path, *extra, "--threads", 2, "-q", "-o", out)
    cand, _ = almagest.read_stack_candidates(h5)
    return cand, ecsv(txt)


def assert_same(py, pmeta, ref, text):
    meta, cols = text
    for k in COLUMNS:
        assert np.array_equal(py[k], ref[k]), k
    assert len(cols["x"]) == len(py["x"])
    assert [int(v) for v in cols["members"]] == list(py["members"])
    f = pmeta["filters"]
    for k in ("input", "removed_observations", "removed_sigma_g", "merged_duplicates", "removed_stationary",
              "removed_stamps", "output"):
        assert int(meta["filter_" + k]) == f[k], k
    assert float(meta["threshold_z"]) == pytest.approx(pmeta["threshold_z"], rel=1e-5)
    assert int(meta["digest_count_above"]) == pmeta["count_above"]


def test_search_equals_cli_in_memory_and_file(cli, tmp, seeded):
    st, path = seeded
    curve = os.path.join(tmp, "curve.txt")
    with open(curve, "w") as fh:
        for dx, dy in zip(st["curve_dx"], st["curve_dy"]):
            fh.write("%.17g %.17g\n" % (dx, dy))
    extra = ("--max-masked-fraction", "0.4", "--cluster-overlap", "0.5", "--sigma-g-clip", "2.5")
    ref, text = cli_search(cli, tmp, path, *BANK, "--common-curve", curve, *extra)
    opts = dict(KW, max_masked_fraction=0.4, cluster_overlap=0.5, sigma_g_clip=2.5, threads=2)
    mem, mmeta = almagest.stack_search(st, common_curve=(st["curve_dx"], st["curve_dy"]), **opts)
    fil, fmeta = almagest.stack_search(path, common_curve=curve, **opts)
    assert_same(mem, mmeta, ref, text)
    assert_same(fil, fmeta, ref, text)
    # Not a vacuous comparison: both movers found, duplicates merged by the filters.
    assert len(ref["x"]) >= 2 and mmeta["filters"]["merged_duplicates"] > 0
    assert mmeta["filters"]["input"] > mmeta["filters"]["output"]
    # An option the old Python search ignored changes the result here as on the CLI.
    strict, smeta = almagest.stack_search(st, common_curve=(st["curve_dx"], st["curve_dy"]),
                                          **dict(opts, min_obs=14))
    ref2, text2 = cli_search(cli, tmp, path, *BANK, "--common-curve", curve, *extra, "--min-obs", 14, name="c2")
    assert_same(strict, smeta, ref2, text2)


def test_velocity_arrays_equal_a_velocities_file(cli, tmp, seeded):
    st, path = seeded
    rng = np.random.default_rng(4)
    vx = np.concatenate([[1.5, -0.8], rng.uniform(-2, 2, 40)])
    vy = np.concatenate([[-1.0, 0.6], rng.uniform(-2, 2, 40)])
    vfile = os.path.join(tmp, "vel.txt")
    np.savetxt(vfile, np.column_stack([vx, vy]), fmt="%.17g")
    dx, dy = st["curve_dx"], st["curve_dy"]
    curve = os.path.join(tmp, "curve.txt")
    np.savetxt(curve, np.column_stack([dx, dy]), fmt="%.17g")
    ref, text = cli_search(cli, tmp, path, "--velocities", vfile, "--common-curve", curve)
    got, meta = almagest.stack_search(st, velocities=(vx, vy), common_curve=(dx, dy), threads=2)
    assert meta["n_vel"] == 42
    assert_same(got, meta, ref, text)
    # A bank in memory excludes the other banks and the grid, as a file does.
    with pytest.raises(almagest.ConfigError) as e:
        almagest.stack_search(st, velocities=(vx, vy), vx_range=(-1, 1), vy_range=(-1, 1))
    assert e.value.field == "bank"
    with pytest.raises(almagest.ConfigError) as e:
        almagest.stack_search(st, velocities=(vx, vy[:-1]))
    assert e.value.field == "velocities"


def test_errors_name_the_field(seeded):
    st, path = seeded
    with pytest.raises(almagest.ConfigError) as e:
        almagest.stack_search(st, **KW, max_masked_fraction=1.5)
    assert e.value.field == "max-masked-fraction" and "1.5" in str(e.value)
    with pytest.raises(almagest.ConfigError) as e:
        almagest.stack_search(st, **KW, common_curve=(st["curve_dx"][:-1], st["curve_dy"][:-1]))
    assert e.value.field == "common-curve"
    with pytest.raises(almagest.ConfigError) as e:
        almagest.stack_search(st, **KW, psf_sigma=1.2)
    assert "psf-sigma" in str(e.value)
