# The device checks of test_device.py without pytest (the device machine may lack it), plus the
# Python overhead of a device-resident SHT call at nside 128 (issue 20: under 1 ms against the C++
# benchmark's time of the same transform). Prints one line per check; exits 1 on a failure.
import sys
import time

import numpy as np

import almagest

NSIDE, LMAX = 128, 255


def main():
    print("almagest", almagest.__version__, "SHT_DEVICE_ARRAYS", almagest.SHT_DEVICE_ARRAYS)
    try:
        import cupy as cp
    except ImportError:
        cp = None
    try:
        import torch
    except ImportError:
        torch = None
    plan = almagest.ShtPlan(NSIDE, lmax=LMAX, backend="cuda")
    cpu = almagest.ShtPlan(NSIDE, lmax=LMAX, backend="cpu")
    rng = np.random.default_rng(1)
    n = (LMAX + 1) * (LMAX + 2) // 2
    alm = rng.normal(size=n) + 1j * rng.normal(size=n)
    alm[: LMAX + 1] = alm[: LMAX + 1].real
    ref_map = cpu.synthesis(alm)
    ref_adj = cpu.adjoint(ref_map)
    ok = True
    libs = []
    if cp is not None:
        libs.append(("cupy", cp.asarray, cp.asnumpy, lambda a: a.data.ptr, cp.cuda.Device().synchronize))
    if torch is not None and torch.cuda.is_available():
        libs.append(("torch", lambda a: torch.from_numpy(a).cuda(), lambda t: t.cpu().numpy(), lambda t: t.data_ptr(),
                     torch.cuda.synchronize))
    for name, to_dev, to_host, ptr, sync in libs:
        d_alm = to_dev(alm)
        d_map = plan.synthesis(d_alm)
        e1 = float(np.max(np.abs(to_host(d_map) - ref_map)))
        out = to_dev(np.empty(plan.map_size))
        r = plan.synthesis(d_alm, out=out)
        same = r is out and ptr(r) == ptr(out)
        back = plan.adjoint(out)
        e2 = float(np.max(np.abs(to_host(back) - ref_adj)) / np.max(np.abs(ref_adj)))
        good = e1 < 1e-9 and e2 < 1e-9 and same
        ok &= good
        print(f"{name}: synthesis max|gpu-cpu| {e1:.2e}, adjoint rel {e2:.2e}, out= zero copy {same}: {'PASS' if good else 'FAIL'}")
        # Overhead: device-resident synthesis into out=, timed per call after a warm-up.
        for _ in range(20):
            plan.synthesis(d_alm, out=out)
        sync()
        reps = 200
        t0 = time.perf_counter()
        for _ in range(reps):
            plan.synthesis(d_alm, out=out)
        sync()
        per = (time.perf_counter() - t0) / reps * 1e3
        print(f"{name}: device-resident synthesis nside {NSIDE} lmax {LMAX}: {per:.4f} ms per Python call")
    if not libs:
        print("no CuPy or CUDA PyTorch here: device arrays not checked")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
