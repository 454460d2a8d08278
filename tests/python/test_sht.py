# SHT from Python: synthesis equals the CLI's map, identities, out= without copies (pointer
# identity), DLPack host round trip, spectra, errors.
import os

import numpy as np
import pytest

import almagest

NSIDE, LMAX = 16, 40


def seeded_alm(lmax, seed, ncols=()):
    rng = np.random.default_rng(seed)
    n = (lmax + 1) * (lmax + 2) // 2
    a = rng.normal(size=ncols + (n,)) + 1j * rng.normal(size=ncols + (n,))
    a[..., : lmax + 1] = a[..., : lmax + 1].real  # m = 0: real
    return np.ascontiguousarray(a)


def ptr(a):
    return a.__array_interface__["data"][0]


def test_synthesis_equals_cli(cli, tmp):
    alm = seeded_alm(LMAX, 1)
    path = os.path.join(tmp, "alm.fits")
    almagest.write_alm(path, alm)
    back = np.asarray(almagest.read_alm(path))
    assert np.array_equal(back, alm)
    out = os.path.join(tmp, "map.fits")
    cli("sht", "synth", path, "--nside", NSIDE, "--threads", 2, "--backend", "cpu", "-q", "-o", out)
    ref = np.asarray(almagest.read_healpix_map(out)["columns"][0])
    plan = almagest.ShtPlan(NSIDE, lmax=LMAX, threads=2)
    m = plan.synthesis(alm)
    assert m.shape == (12 * NSIDE * NSIDE,) and m.dtype == np.float64
    assert np.array_equal(m, ref)


def test_adjointness_and_round_trip():
    plan = almagest.ShtPlan(NSIDE, lmax=LMAX, threads=2)
    a = seeded_alm(LMAX, 2)
    rng = np.random.default_rng(3)
    mp = rng.normal(size=plan.map_size)
    ya, ytm = plan.synthesis(a), plan.adjoint(mp)
    def alm_dot(x, y):
        w = np.full(x.shape, 2.0); w[: LMAX + 1] = 1.0
        return np.sum(w * (x * np.conj(y)).real)
    assert abs(np.dot(ya, mp) - alm_dot(a, ytm)) <= 1e-10 * abs(np.dot(ya, mp))
    back = plan.inverse(ya, epsilon=1e-12)
    assert np.max(np.abs(back - a)) < 1e-8
    alm2, rep = plan.inverse(ya, epsilon=1e-10, return_report=True)
    assert rep["iterations"] > 0 and rep["residual"] < 1e-8
    with pytest.raises(almagest.NotConverged) as e:
        plan.inverse(ya, epsilon=1e-15, max_iterations=1)
    assert e.value.iterations >= 1 and e.value.residual > 0


def test_columns_and_spin2():
    plan = almagest.ShtPlan(NSIDE, lmax=LMAX, batch=2, threads=2)
    a = seeded_alm(LMAX, 4, (3,))
    m = plan.synthesis(a)
    assert m.shape == (3, plan.map_size)
    for i in range(3):
        assert np.array_equal(m[i], plan.synthesis(a[i]))
    p2 = almagest.ShtPlan(NSIDE, lmax=LMAX, spin=2, threads=2)
    eb = seeded_alm(LMAX, 5, (2,))
    qu = p2.synthesis(eb)
    assert qu.shape == (2, p2.map_size)
    with pytest.raises(almagest.ConfigError) as e:
        p2.synthesis(eb[0])
    assert e.value.field == "alm"


def test_out_writes_in_place_without_copy():
    plan = almagest.ShtPlan(NSIDE, lmax=LMAX, threads=2)
    a = seeded_alm(LMAX, 6)
    out = np.empty(plan.map_size)
    p0 = ptr(out)
    r = plan.synthesis(a, out=out)
    assert r is out and ptr(r) == p0
    assert np.array_equal(out, plan.synthesis(a))
    alm_out = np.zeros(plan.nalm, dtype=np.complex128)
    r2 = plan.adjoint(out, out=alm_out)
    assert r2 is alm_out and ptr(r2) == ptr(alm_out) and np.any(alm_out != 0)
    with pytest.raises(almagest.ConfigError) as e:
        plan.synthesis(a, out=np.empty(plan.map_size, dtype=np.float32))
    assert e.value.field == "out"
    with pytest.raises(almagest.ConfigError):
        plan.synthesis(a, out=np.empty((2, plan.map_size))[:, ::2])  # wrong shape / not contiguous


class DLPackOnly:
    """A host array that speaks only DLPack (no buffer protocol, no __array__)."""
    def __init__(self, a):
        self._a = a
    def __dlpack__(self, *args, **kwargs):
        return self._a.__dlpack__(*args, **kwargs)
    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_dlpack_host_round_trip():
    plan = almagest.ShtPlan(NSIDE, lmax=LMAX, threads=2)
    a = seeded_alm(LMAX, 7)
    ref = plan.synthesis(a)
    m = plan.synthesis(DLPackOnly(a))          # DLPack in
    assert np.array_equal(m, ref)
    out = np.empty_like(ref)
    r = plan.synthesis(DLPackOnly(a), out=out)
    assert r is out and np.array_equal(out, ref)
    back = np.from_dlpack(plan.adjoint(DLPackOnly(m)))  # DLPack out (a NumPy array exports it)
    assert np.array_equal(back, plan.adjoint(ref))
    # A non-contiguous or other-dtype input is converted once, with the same result.
    assert np.array_equal(plan.synthesis(np.asfortranarray(a)), ref)
    assert not almagest.SHT_DEVICE_ARRAYS or True


def test_spectra_smoothing_map2alm():
    plan = almagest.ShtPlan(NSIDE, lmax=LMAX, threads=2)
    a = seeded_alm(LMAX, 8)
    cl = np.asarray(almagest.alm2cl(a))
    l_of = np.concatenate([np.arange(m, LMAX + 1) for m in range(LMAX + 1)])
    w = np.where(np.concatenate([np.full(LMAX + 1 - m, m) for m in range(LMAX + 1)]) == 0, 1.0, 2.0)
    ref = np.bincount(l_of, weights=w * np.abs(a) ** 2) / (2 * np.arange(LMAX + 1) + 1)
    assert np.allclose(cl, ref, rtol=1e-13, atol=0)
    m = plan.synthesis(a)
    alm = plan.map2alm(m, iterations=3)
    assert alm.shape == a.shape and np.max(np.abs(alm - a)) < 0.2 * np.max(np.abs(a))
    s = plan.smooth(m, np.radians(5.0))
    assert s.shape == m.shape and np.std(s) < np.std(m)
    beam = np.asarray(almagest.gauss_beam(np.radians(5.0), LMAX))
    assert beam[0] == 1.0 and np.all(np.diff(beam) < 0)
    assert np.allclose(np.asarray(almagest.almxfl(a, beam)), a * beam[l_of])


def test_plan_errors():
    with pytest.raises(almagest.ConfigError) as e:
        almagest.ShtPlan(0)
    assert "nside" in str(e.value)
    with pytest.raises(almagest.ConfigError):
        almagest.ShtPlan(NSIDE, backend="tpu")
    plan = almagest.ShtPlan(NSIDE, lmax=LMAX)
    with pytest.raises(almagest.ConfigError) as e:
        plan.adjoint(np.zeros(100))
    assert e.value.field == "map"


def test_backend_unavailable_or_cuda():
    # Without a usable GPU the CUDA backend is BackendUnavailable naming why (never a fallback).
    try:
        plan = almagest.ShtPlan(NSIDE, lmax=LMAX, backend="cuda")
    except almagest.BackendUnavailable as e:
        assert str(e)
    else:
        assert plan.backend == "cuda"
