# Device arrays through DLPack (run on a machine with a GPU and CuPy or PyTorch; skipped cleanly
# elsewhere): ShtPlan.synthesis / adjoint take CUDA arrays and write the caller's out= buffer
# (pointer identity), results equal the CPU backend's.
import numpy as np
import pytest

import almagest

NSIDE, LMAX = 128, 255


def _cuda_backend():
    try:
        return almagest.ShtPlan(NSIDE, lmax=LMAX, backend="cuda")
    except almagest.BackendUnavailable as e:
        pytest.skip(f"no CUDA backend: {e}")


def _alm(rng):
    n = (LMAX + 1) * (LMAX + 2) // 2
    a = rng.normal(size=n) + 1j * rng.normal(size=n)
    a[: LMAX + 1] = a[: LMAX + 1].real
    return a


def _check(xp, to_host, ptr):
    plan = _cuda_backend()
    cpu = almagest.ShtPlan(NSIDE, lmax=LMAX, backend="cpu")
    alm = _alm(np.random.default_rng(1))
    d_alm = xp(alm)
    if not almagest.SHT_DEVICE_ARRAYS:
        with pytest.raises(almagest.Error, match="device array"):
            plan.synthesis(d_alm)
        return
    d_map = plan.synthesis(d_alm)                         # device in, device out
    assert np.max(np.abs(to_host(d_map) - cpu.synthesis(alm))) < 1e-9
    out = xp(np.empty(plan.map_size))
    r = plan.synthesis(d_alm, out=out)                    # zero copy: the caller's buffer
    assert r is out and ptr(r) == ptr(out)
    back = plan.adjoint(out)
    assert np.max(np.abs(to_host(back) - cpu.adjoint(cpu.synthesis(alm)))) < 1e-6


def test_cupy():
    cp = pytest.importorskip("cupy")
    _check(cp.asarray, cp.asnumpy, lambda a: a.data.ptr)


def test_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    _check(lambda a: torch.from_numpy(a).cuda(), lambda t: t.cpu().numpy(), lambda t: t.data_ptr())
