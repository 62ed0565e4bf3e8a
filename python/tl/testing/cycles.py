# Deterministic performance tests: a kernel's simulated cycles against a stored baseline.
# SPDX-License-Identifier: Apache-2.0
"""On a simulated device (npusim) time is simulated: a launch takes the same number of cycles
every run, on every machine. So a performance test can pin a kernel's cycles exactly
(``tolerance=0``) and a change that makes it slower — or faster — fails with both figures.

The cycles come from the HAL's events, which stamp the device's simulated timeline
(``TL_DEVICE_SIMULATED_TIME``): the launch's interval times the chip's clock. Host-side work
(tracing, compiling, copies) is outside the interval.

Baselines are JSON files, ``{"kernels": {name: {device: {"cycles": ..., "chip": ...}}}}``,
written by ``python -m pytest --tl-update-baselines`` (or ``TL_UPDATE_BASELINES=1``).
"""
import inspect
import json
import os
import pathlib

from .. import core, runtime
from . import tolerances

# Set by --tl-update-baselines (plugin.py) or TL_UPDATE_BASELINES=1: record instead of compare.
UPDATE = os.environ.get("TL_UPDATE_BASELINES", "") not in ("", "0")
# What expect_cycles measured in this process, for the run's report (plugin.py).
RECORDS = []
UPDATE_HINT = "python -m pytest --tl-update-baselines"


class BaselineError(AssertionError):
    """A performance test's failure: cycles off their baseline, or no baseline to compare with."""


def simulated_cycles(kernel, grid, *args, device="npusim", **constexprs):
    """Launches ``kernel[grid](*args, **constexprs)`` once on `device` and returns the launch's
    simulated cycles. A device whose time is not simulated is an error (its times vary).

    >>> import numpy as np, tl
    >>> from tl.testing import simulated_cycles
    >>> @tl.kernel
    ... def twice(x: tl.tensor, y: tl.tensor, BLOCK: tl.constexpr):
    ...     i = tl.program_id(0) * BLOCK
    ...     tl.store(y + (i,), tl.load(x + (i,), (BLOCK,)) * 2)
    >>> x = np.ones(512, np.float32); y = np.empty_like(x)
    >>> "npusim" not in tl.devices() or (simulated_cycles(twice, (2,), x, y, BLOCK=256)
    ...                                  == simulated_cycles(twice, (2,), x, y, BLOCK=256))
    True
    """
    dev = runtime.device(device)
    if not dev.info["simulated_time"]:
        raise ValueError(f"tl.testing: device '{device}' ({dev.info['name']}) measures wall time, "
                         "which varies run to run; simulated cycles come from a simulated device "
                         "such as npusim")
    ms = kernel.run(grid, *args, device=device, _timed=True, **constexprs)
    return round(ms * 1e3 * dev.info["clock_mhz"])  # ms * 1e-3 s * clock_mhz * 1e6 Hz


def roofline_fraction(cycles, device, flops=None, bytes=None, dtype="f32"):
    """The launch's fraction of the roofline: the time the device's peaks allow for `flops` on
    `dtype` inputs and `bytes` of memory traffic, over the simulated time."""
    info = runtime.device(device).info
    seconds = cycles / (info["clock_mhz"] * 1e6)
    codes = {tolerances.dtype_name(d): d.code for d in core.DTYPES}
    bound = 0.0
    if flops:
        peak = info["peak_flops"][codes[tolerances.dtype_name(dtype)]]
        if peak <= 0:
            raise ValueError(f"tl.testing: device '{device}' declares no peak for {dtype}")
        bound = flops / peak
    if bytes:
        bound = max(bound, bytes / info["peak_bandwidth"])
    return bound / seconds if seconds > 0 else 0.0


def _resolve(baseline_file, depth=2):
    """A relative path is relative to the folder of the file that called expect_cycles."""
    path = pathlib.Path(baseline_file)
    if path.is_absolute():
        return path
    caller = inspect.stack(0)[depth].filename
    return pathlib.Path(caller).resolve().parent / path


def _load(path):
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise BaselineError(f"tl.testing: baseline file {path} is not valid JSON ({e}); "
                            f"rewrite it with `{UPDATE_HINT}`") from None
    if not isinstance(doc.get("kernels"), dict):
        raise BaselineError(f"tl.testing: baseline file {path} has no \"kernels\" object; "
                            f"rewrite it with `{UPDATE_HINT}`")
    return doc


def _store(path, name, device, entry):
    doc = _load(path) if path.exists() else {
        "schema": "tl.testing cycles 1",
        "about": "simulated cycles per kernel and device (tl.testing.expect_cycles); "
                 f"rewritten by `{UPDATE_HINT}`",
        "kernels": {}}
    doc["kernels"].setdefault(name, {})[device] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def expect_cycles(kernel, grid, *args, baseline_file, name=None, tolerance=0.0, device="npusim",
                  flops=None, bytes=None, flops_dtype="f32", metric="cycles", **constexprs):
    """Launches the kernel on a simulated device and checks its cycles against the baseline
    stored under `name` (default: the kernel's name) and `device` in `baseline_file` (JSON; a
    relative path is relative to the calling test file's folder). Passes when
    ``|cycles - baseline| <= tolerance * baseline``: 0 pins them exactly, which simulated time
    allows. With `flops` and/or `bytes` the fraction of the roofline is recorded too, and
    ``metric="roofline"`` checks that instead, one-sided: it fails only when the fraction drops
    below ``baseline * (1 - tolerance)`` (a faster kernel passes).

    Under ``--tl-update-baselines`` (or TL_UPDATE_BASELINES=1) it records the cycles instead.
    Returns the record (cycles, baseline, roofline fraction); raises BaselineError with both
    figures when they differ, or saying how to create a missing baseline.
    """
    __tracebackhide__ = True  # pytest: the failure is the caller's line, not this function's
    if metric not in ("cycles", "roofline"):
        raise ValueError(f"tl.testing.expect_cycles: metric={metric!r}: 'cycles' or 'roofline'")
    if metric == "roofline" and not (flops or bytes):
        raise ValueError("tl.testing.expect_cycles: metric='roofline' needs flops= and/or bytes= "
                         "(the work the roofline is computed for)")
    name = name or kernel.__name__
    path = _resolve(baseline_file)
    cycles = simulated_cycles(kernel, grid, *args, device=device, **constexprs)
    info = runtime.device(device).info
    entry = {"cycles": cycles, "chip": info["name"]}
    if flops or bytes:
        entry["roofline_fraction"] = round(
            roofline_fraction(cycles, device, flops, bytes, flops_dtype), 4)
    record = {"test": os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0], "name": name,
              "device": device, "cycles": cycles, "baseline": None, "file": str(path),
              "roofline_fraction": entry.get("roofline_fraction")}
    RECORDS.append(record)
    if UPDATE:
        _store(path, name, device, entry)
        record["status"] = "recorded"
        return record
    record["status"] = "failed"
    where = f"{name} on {device} ({info['name']})"
    if not path.exists():
        raise BaselineError(f"tl.testing.expect_cycles: {where}: no baseline file {path}; "
                            f"create it with `{UPDATE_HINT}` (it records {cycles} cycles)")
    base = _load(path)["kernels"].get(name, {}).get(device)
    if base is None:
        raise BaselineError(f"tl.testing.expect_cycles: {where}: {path} has no baseline for it; "
                            f"add it with `{UPDATE_HINT}` (it records {cycles} cycles)")
    record["baseline"] = base["cycles"]
    if base.get("chip", info["name"]) != info["name"]:
        raise BaselineError(f"tl.testing.expect_cycles: {where}: the baseline in {path} is for "
                            f"chip {base['chip']!r}, this device simulates {info['name']!r} "
                            "(TL_NPUSIM_CONFIG selects the chip)")
    if metric == "roofline":
        frac, base_frac = entry["roofline_fraction"], base.get("roofline_fraction")
        if base_frac is None:
            raise BaselineError(f"tl.testing.expect_cycles: {where}: the baseline in {path} has "
                                f"no roofline fraction; record it with `{UPDATE_HINT}`")
        if frac < base_frac * (1 - tolerance):
            raise BaselineError(
                f"tl.testing.expect_cycles: {where}: {frac:.4f} of the roofline ({cycles} "
                f"simulated cycles), baseline {base_frac:.4f} ({base['cycles']} cycles; "
                f"tolerance {100 * tolerance:g}%) in {path}; if the change is intended, update "
                f"the baseline: `{UPDATE_HINT}`")
        record["status"] = "passed"
        return record
    delta = cycles - base["cycles"]
    if abs(delta) > tolerance * base["cycles"]:
        pct = 100.0 * delta / base["cycles"] if base["cycles"] else float("inf")
        raise BaselineError(
            f"tl.testing.expect_cycles: {where}: {cycles} simulated cycles, baseline "
            f"{base['cycles']} ({pct:+.1f}%, tolerance {100 * tolerance:g}%) in {path}; if the "
            f"change is intended, update the baseline: `{UPDATE_HINT}`")
    record["status"] = "passed"
    return record
