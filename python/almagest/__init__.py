"""Almagest from Python: N-point correlation functions, HEALPix spherical harmonic transforms
and shift-and-stack searches on the same engine as almagest-cli (docs/python.md).

Every engine call runs with the GIL released; Ctrl-C cancels it (KeyboardInterrupt once the
engine has stopped); engine errors are almagest.Error subclasses with the engine's message.
"""
import inspect as _inspect
import os as _os

try:  # where the run-time CUDA module is: the engine looks beside the executable (python)
    from . import _paths
    if not _os.environ.get("ALMAGEST_CUDA_MODULE"):
        # Installed: <prefix>/lib/pythonX.Y/site-packages/almagest -> <prefix>/lib/almagest
        # (wherever --prefix put it); then the configured prefix; then the build tree.
        _here = _os.path.dirname(_os.path.abspath(__file__))
        _rel = _os.path.join(_here, "..", "..", "..", "almagest", "libalmagest_cuda.so")
        for _p in (_os.path.normpath(_rel), _paths.INSTALL_CUDA_MODULE, _paths.BUILD_CUDA_MODULE):
            if _os.path.exists(_p):
                _os.environ["ALMAGEST_CUDA_MODULE"] = _p
                break
except ImportError:
    pass

import numpy as _np

from ._almagest import (  # noqa: F401
    Error, ConfigError, IoError, BackendUnavailable, CudaError, NotConverged,
    version, gpu_summary, npcf_options, NpcfResult, read_npcf_hdf5,
    ShtPlan, alm2cl, gauss_beam, almxfl, read_healpix_map, read_alm, write_alm,
    SHT_DEVICE_ARRAYS, read_stack, synthetic_stack, write_stack_hdf5, psiphi,
    stack_options, read_stack_candidates,
)
from . import _almagest

__version__ = version()

# ---- N-point -------------------------------------------------------------------------------
# The keyword arguments of npcf() are the schema's keys (npcf/job.hpp: npcf_job_options(), the
# same keys as the CLI's flags and the job files) with '_' for '-'; generated here at import.
_NPCF_OPTIONS = npcf_options()
_NPCF_KEYS = {o["key"].replace("-", "_"): o for o in _NPCF_OPTIONS}
# Options that describe how a catalogue *file* is read; meaningless for arrays.
_FILE_ONLY = {"data-columns", "randoms-columns", "weights", "randoms-weights", "format-in",
              "fits-hdu", "hdf5-group", "sky", "omega-m"}


def _columns(name, cat):
    """(x, y, z, w) float64 arrays from an (N, 3|4) array, a sequence of 3 or 4 arrays or a dict
    with x, y, z [, w]; None for a path."""
    if isinstance(cat, (str, _os.PathLike)):
        return None
    if isinstance(cat, dict):
        cols = [cat[k] for k in ("x", "y", "z")] + [cat.get("w")]
    elif isinstance(cat, (list, tuple)):
        if len(cat) not in (3, 4):
            raise ConfigError(f"{name}: expected (x, y, z[, w]) arrays, got {len(cat)} items")
        cols = list(cat) + [None] * (4 - len(cat))
    else:
        a = _np.asarray(cat, dtype=_np.float64)
        if a.ndim != 2 or a.shape[1] not in (3, 4):
            raise ConfigError(f"{name}: expected an (N, 3) or (N, 4) array, got shape {a.shape}")
        cols = [a[:, i] for i in range(a.shape[1])] + [None] * (4 - a.shape[1])
    return tuple(None if c is None else _np.ascontiguousarray(c, dtype=_np.float64).ravel()
                 for c in cols)


def npcf(*, progress=None, **options):
    """N-point correlation functions of a catalogue (GRAMSCI v2 estimator).

    data / randoms: a catalogue file path (read with the column options) or arrays: an (N, 3|4)
    array, (x, y, z[, w]) arrays or a dict with x, y, z[, w] (Mpc/h; w: weights). output: a file
    to write (optional here; HDF5 or GRAMSCI text as `format`). progress: callable(done, total,
    stage), called from the calling thread about every 50 ms.
    Returns an NpcfResult, or a list of them (one per statistic) when `stat` names several.
    """
    values = {}
    for name, value in options.items():
        opt = _NPCF_KEYS.get(name)
        if opt is None:
            raise ConfigError(f"{name}: unknown option (allowed: {', '.join(_NPCF_KEYS)})")
        if value is None:
            continue
        key = opt["key"]
        if opt["kind"] in ("text", "choice") and isinstance(value, _os.PathLike):
            value = _os.fspath(value)
        if opt["kind"] in ("text-list", "choice-list") and isinstance(value, str):
            value = [value]
        if opt["kind"] == "number" and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if opt["kind"] == "flag" and isinstance(value, _np.bool_):
            value = bool(value)
        values[key] = value
    arrays = {}
    for role in ("data", "randoms"):
        if role in values:
            cols = _columns(role, values[role])
            if cols is not None:
                arrays[role] = cols
                values[role] = f"<{role} arrays>"
    if arrays:
        bad = sorted(k for k in _FILE_ONLY if k in values)
        if bad:
            raise ConfigError(f"{bad[0]}: applies to catalogue files, not to arrays")
    write = "output" in values
    if not write:
        values["output"] = "<not written>"  # the schema requires it; nothing is written
    results = _almagest._npcf(values, arrays.get("data"), arrays.get("randoms"), write, progress)
    return results[0] if len(results) == 1 else results


def _npcf_signature():
    params = []
    for name, o in _NPCF_KEYS.items():
        params.append(_inspect.Parameter(name, _inspect.Parameter.KEYWORD_ONLY, default=None))
    params.append(_inspect.Parameter("progress", _inspect.Parameter.KEYWORD_ONLY, default=None))
    return _inspect.Signature(params)


npcf.__signature__ = _npcf_signature()
npcf.__doc__ += "\n    Options (the schema of `almagest-cli npcf`, '-' written '_'):\n" + "".join(
    f"      {name}{' (required)' if o['required'] and name != 'output' else ''}: {o['help']}\n"
    for name, o in _NPCF_KEYS.items())


# ---- Shift-and-stack -----------------------------------------------------------------------
# The keyword arguments of stack_search() are the stack schema's fields of the search
# (stack/job.hpp: stack_schema(), the flags of `almagest-cli stack search`, the job-file keys and
# the GUI's form) with '_' for '-', generated here at import; the search is the job layer's
# (make_stack_job, run_stack_job), so every rule and message is the CLI's.
_STACK_OPTIONS = stack_options()
_STACK_SEARCH_KEYS = {o["key"].replace("-", "_"): o for o in _STACK_OPTIONS
                      if o["key"] not in ("op", "stack")
                      and (not o["operations"] or "search" in o["operations"])}
STACK_SEARCH_OPTIONS = tuple(_STACK_SEARCH_KEYS)
# Options that describe how a stack *file* is read; meaningless for arrays.
_STACK_FILE_ONLY = ("psf-sigma", "fallback-psf-sigma")


def _stack_value(opt, value):
    """A Python value as the schema's: (min, max) pairs as "MIN,MAX" (shortest round-trip
    decimals), grid N or (NX, NY) as "N" / "NXxNY", paths as str, NumPy scalars as Python's."""
    if isinstance(value, _os.PathLike):
        return _os.fspath(value)
    if isinstance(value, _np.generic):
        value = value.item()
    kind, key = opt["kind"], opt["key"]
    if key == "grid" and not isinstance(value, str):
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        g = list(value)
        if len(g) != 2:
            raise ConfigError(f"grid: expected N or (NX, NY), got {value!r}")
        return f"{int(g[0])}x{int(g[1])}"
    if kind == "text" and "," in opt["value_name"] and isinstance(value, (list, tuple, _np.ndarray)):
        return ",".join(repr(float(v)) for v in value)
    if kind == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind in ("text-list", "choice-list") and isinstance(value, str):
        return [value]
    return value


def _pair_of_arrays(name, value):
    try:
        a, b = value
    except (TypeError, ValueError):
        raise ConfigError(f"{name}: expected a file path or two arrays") from None
    return (_np.ascontiguousarray(a, dtype=_np.float64).ravel(),
            _np.ascontiguousarray(b, dtype=_np.float64).ravel())


def stack_search(stack, *, progress=None, **options):
    """Shift-and-stack search of an exposure stack: the job of `almagest-cli stack search`.

    stack: a file path (WorkUnit FITS, per-exposure folder, HDF5 cube) or a dict as read_stack()
    and synthetic_stack() return (sci, var, mask [n, H, W], mjd [n], psf: a sigma, an [n, K, K]
    cube or a list of kernels), used in memory. velocities: a file or (vx, vy) arrays
    [pixels/day]; common_curve: a file or (dx, dy) arrays [pixels, one per exposure]; ranges as
    (min, max) or "MIN,MAX"; grid as N, (NX, NY) or "NXxNY". output / ades / mpc: files to write
    (optional here). progress: callable(done, total, stage).
    Returns (candidates, meta): a dict of NumPy arrays x, y, v, vx, vy, a, b, obs, z, flux,
    members (+ vx_spread, vy_spread, clipped, vx_fit, vy_fit after the filters), sorted by z,
    descending, and a dict with the threshold, digest, filter counts, summary and provenance.
    """
    values = {}
    for name, value in options.items():
        opt = _STACK_SEARCH_KEYS.get(name.replace("-", "_"))
        if opt is None:
            raise ConfigError(f"{name}: unknown option (allowed: {', '.join(_STACK_SEARCH_KEYS)})")
        if value is not None:
            values[opt["key"]] = value
    if isinstance(stack, _os.PathLike):
        stack = _os.fspath(stack)
    in_memory = {}
    for key in ("velocities", "common-curve"):
        v = values.get(key)
        if v is not None and not isinstance(v, (str, _os.PathLike)):
            in_memory[key] = _pair_of_arrays(key, values.pop(key))
    if not isinstance(stack, str):
        bad = [k for k in _STACK_FILE_ONLY if k in values]
        if bad:
            raise ConfigError(f"{bad[0]}: applies to stack files, not to arrays")
    values = {k: _stack_value(_STACK_SEARCH_KEYS[k.replace("-", "_")], v) for k, v in values.items()}
    return _almagest._stack_search(stack, values, in_memory.get("velocities"),
                                   in_memory.get("common-curve"), progress)


def _stack_signature():
    params = [_inspect.Parameter("stack", _inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += [_inspect.Parameter(n, _inspect.Parameter.KEYWORD_ONLY, default=None) for n in _STACK_SEARCH_KEYS]
    params.append(_inspect.Parameter("progress", _inspect.Parameter.KEYWORD_ONLY, default=None))
    return _inspect.Signature(params)


stack_search.__signature__ = _stack_signature()
stack_search.__doc__ += "\n    Options (the schema of `almagest-cli stack search`, '-' written '_'):\n" + "".join(
    f"      {name}: {o['full_help']}\n" for name, o in _STACK_SEARCH_KEYS.items())


# ---- Jobs ------------------------------------------------------------------------------------
# The engine's job layer (almagest/jobs/job.hpp, batch.hpp): the same calls as `almagest-cli run`.


def run_job(job, *, dry_run=False, progress=None):
    """Runs one job of any engine: `job` is a dict with "engine" ("npcf" default, "sht",
    "stack") and the keys of `almagest-cli schema ENGINE` ('_' may be written for '-'); values
    are bool, int, float, str or a list of str. Inputs are checked first (IoError naming the
    file), values by the engine's schema (ConfigError). Returns a dict: engine, operation,
    inputs, outputs, summary (list of str), backend, device, threads, timings_s, skipped.
    dry_run=True writes nothing and returns the plan report (inputs with sizes, outputs,
    host_bytes, device_bytes, tiling, estimated_seconds, notes) with engine, operation, summary."""
    values = {k: (_os.fspath(v) if isinstance(v, _os.PathLike) else v) for k, v in dict(job).items()}
    return _almagest._run_job(values, dry_run, progress)


def run_batch(path, dry_run=False, force=False, *, threads=0, progress=None):
    """Runs a TOML or JSON job file like `almagest-cli run` (docs/jobs.md): every member is
    validated first, up-to-date members are skipped (force=True recomputes them), then the
    aggregation steps run. Returns one outcome dict (as run_job returns) per member and per
    aggregate, in order; with dry_run=True each carries its plan under "plan"."""
    return _almagest._run_batch(_os.fspath(path), dry_run, force, threads, progress)
