# The engine runs with the GIL released, and Ctrl-C (SIGINT) or an exception from the progress
# callback cancels the running job.
import os
import signal
import threading
import time

import numpy as np
import pytest

import almagest
from conftest import seeded_catalogue


def count_while(fn):
    """Runs fn() in this thread while another Python thread counts; returns (count, seconds)."""
    n = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            n[0] += 1
            time.sleep(0.001)
    t = threading.Thread(target=spin)
    t.start()
    t0 = time.perf_counter()
    try:
        fn()
    finally:
        dt = time.perf_counter() - t0
        stop.set()
        t.join()
    return n[0], dt


def big_job(**kw):
    data = seeded_catalogue(6000, 200.0, 1)
    rand = seeded_catalogue(12000, 200.0, 2)
    return almagest.npcf(stat="4pcf", data=data, randoms=rand, rmin=1, rmax=30, nbins=8,
                         threads=2, **kw)


def test_gil_released_during_engine_calls():
    count, dt = count_while(lambda: almagest._almagest._sleep_cancellable(0.5))
    assert dt >= 0.5 and count > 100, (count, dt)
    plan = almagest.ShtPlan(128, threads=1)
    alm = np.zeros(plan.nalm, dtype=np.complex128)
    alm[1] = 1.0
    count, dt = count_while(lambda: [plan.synthesis(alm) for _ in range(20)])
    assert count > 0.2 * dt * 1000 * 0.5, (count, dt)  # the other thread ran throughout


def interrupt_after(seconds):
    main = threading.main_thread().ident
    t = threading.Timer(seconds, lambda: signal.pthread_kill(main, signal.SIGINT))
    t.start()
    return t


def test_sigint_cancels_a_running_job():
    t = interrupt_after(0.3)
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        almagest._almagest._sleep_cancellable(30.0, 3000)
    assert time.perf_counter() - t0 < 2.0
    t.join()


def test_sigint_cancels_the_engine():
    # A 4pCF that runs for many seconds here; Ctrl-C after 1 s stops it within about a second
    # (the engines check their token between hub chunks).
    t = interrupt_after(1.0)
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        big_job()
    elapsed = time.perf_counter() - t0
    t.join()
    assert elapsed < 4.0, elapsed


def test_progress_callback_and_its_exception():
    seen = []
    almagest._almagest._sleep_cancellable(0.3, 30, progress=lambda d, t, s: seen.append((d, t, s)))
    assert seen and all(s == "sleeping" for _, _, s in seen)
    assert [d for d, _, _ in seen] == sorted(d for d, _, _ in seen)

    class Stop(Exception):
        pass

    def stop(done, total, stage):
        raise Stop(stage)
    t0 = time.perf_counter()
    with pytest.raises(Stop):
        big_job(progress=stop)
    assert time.perf_counter() - t0 < 4.0
