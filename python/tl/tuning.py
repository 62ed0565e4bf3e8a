# tl.autotune: times a kernel's configs (constexpr values) once per key, device and compiler, and
# keeps the choice in memory and on disk ($TL_CACHE_DIR/autotune) for later processes.
# SPDX-License-Identifier: Apache-2.0
"""``@tl.autotune`` above a ``@tl.kernel``: the first launch for a key times every config and
keeps the fastest; later launches (in this process or, through the disk cache, in another one)
reuse it without timing.

A choice applies to a *where* — the kernel, the key arguments bucketed (`bucket`, by default
integers and array dimensions to the power of two at or above them, so n = 1000 and n = 1024
share a choice), the device's identity (name, vendor, plugin, driver version, compute units,
memory) and the target — and holds only while its *what* matches: the compiler build
(``tl.ir.compiler_version()``), the tl package version, the kernel's source and the list of
configs. One JSON file per where, in ``$TL_CACHE_DIR/autotune`` (default
``~/.cache/tl/autotune``; ``TL_CACHE_DIR=`` keeps choices in memory only). A file that does not
parse, or whose what differs (stale), is ignored with a warning, tuned again and replaced.
"""
import hashlib
import inspect
import json
import logging
import os
import pathlib
import tempfile
import warnings

import numpy as np

from . import ir, runtime
from .errors import CompileError

log = logging.getLogger("tl")
FORMAT = "tl-autotune 1"


class Config:
    """Constexpr values to try: ``tl.Config({"BLOCK": 64})``. ``targets=("tnpu",)`` makes it a
    config of those compile targets only: where a target has configs of its own, only those are
    tried there; elsewhere only the configs without ``targets`` are (per-device tuning of one
    kernel, issue 18: a matrix unit's tile sizes are not a CPU's)."""

    def __init__(self, kwargs, targets=None):
        self.kwargs = dict(kwargs)
        if isinstance(targets, str):
            targets = (targets,)
        self.targets = None if targets is None else tuple(targets)
        if self.targets is not None and (not self.targets or not all(
                isinstance(t, str) and t for t in self.targets)):
            raise TypeError(f"tl.Config: targets must be non-empty target names, got {targets!r}")

    def __repr__(self):
        t = "" if self.targets is None else f", targets={self.targets}"
        return f"Config({self.kwargs}{t})"


def pow2_bucket(n):
    """The power of two at or above |n|, sign kept (1000 and 1024 give 1024; 0 stays 0)."""
    if n == 0:
        return 0
    m = 1 << (abs(n) - 1).bit_length()
    return m if n > 0 else -m


def cache_dir():
    """$TL_CACHE_DIR/autotune, default ~/.cache/tl/autotune; None when TL_CACHE_DIR is "" (as
    the compile cache, support/blob_cache.h)."""
    d = os.environ.get("TL_CACHE_DIR")
    if d is not None:
        return pathlib.Path(d, "autotune") if d else None
    home = os.environ.get("HOME")
    return pathlib.Path(home, ".cache", "tl", "autotune") if home else None


def _jsonable(v):
    """`v` as JSON data: numbers, strings, None and lists as they are, anything else (a dtype)
    by its repr, so that a stored config compares with the current ones."""
    if isinstance(v, np.generic):  # a numpy scalar as the Python number
        v = v.item()
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (tuple, list)):
        return [_jsonable(e) for e in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(e) for k, e in v.items()}
    return {"repr": repr(v)}


def _sha(data):
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


class Autotuner:
    """A kernel with configs to choose from (``tl.autotune``); launched like the kernel."""
    __tl_kernel__ = True  # a kernel calling it gets a located error, not a launch

    def __init__(self, k, configs, key, warmup, rep, bucket):
        self.kernel = k
        self.configs = [c if isinstance(c, Config) else Config(c) for c in configs]
        self.key, self.warmup, self.rep, self.bucket = list(key), warmup, rep, bucket
        params = k.signature.parameters
        for n in self.key:
            if n not in params:
                raise TypeError(f"tl.autotune: key '{n}' is not a parameter of {k.__name__}")
        for c in self.configs:
            for n in c.kwargs:
                if n not in k.constexprs:
                    raise TypeError(f"tl.autotune: config {c} sets '{n}', which is not a "
                                    f"tl.constexpr parameter of {k.__name__}")
        self.best = {}  # (bucketed key values, device, target) -> Config
        self.tunings = 0  # keys timed in this process (not read from memory or disk)
        self.__name__ = k.__name__
        self._what_base = None

    def configs_for(self, target):
        """The configs tried on `target`: its own (``Config(targets=...)``) if it has any, else
        those without targets."""
        own = [c for c in self.configs if c.targets is not None and target in c.targets]
        return own or [c for c in self.configs if c.targets is None]

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(grid, *args, **kwargs)

    def _bucketed(self, v):
        if isinstance(v, np.generic):  # a numpy scalar (it has a shape and a dtype too)
            v = v.item()
        if hasattr(v, "shape") and hasattr(v, "dtype"):
            return [self._bucketed(int(d)) for d in v.shape] + [str(v.dtype)]
        if isinstance(v, int) and not isinstance(v, bool):
            return int(v) if self.bucket is None else self.bucket(int(v))
        return _jsonable(v)

    def _key(self, values):
        return tuple(json.dumps(self._bucketed(values.get(n))) for n in self.key)

    def run(self, grid, *args, device=None, target=None, **kwargs):
        values = dict(zip(self.kernel._names, args), **kwargs)  # cheaper than inspect's bind
        for n in self.key:
            if n not in values and n in self.kernel._defaults:
                values[n] = self.kernel._defaults[n]
        k = (self._key(values), device, target)
        cfg = self.best.get(k)
        if cfg is None:
            cfg = self.best[k] = self._choose(grid, args, kwargs, values, device, target, k[0])
        return self.kernel.run(grid, *args, device=device, target=target, **kwargs, **cfg.kwargs)

    # ---- the disk cache ------------------------------------------------------------------------

    def _where_what(self, values, device, target, key):
        """The parts a choice applies to (the file name) and those it holds under (checked)."""
        if device is None:
            device = runtime.default_device(values.values())
        info = runtime.device(device).info
        if target is None:
            target = ir.target_for_device(info["target"], info["targets"])
        fn = self.kernel.fn
        bucket = getattr(self.bucket, "__qualname__", repr(self.bucket))
        where = {"kernel": f"{fn.__module__}.{fn.__qualname__}", "key": list(key),
                 "bucket": bucket,
                 # What stays put: not the clock or bandwidth, which a host may report as
                 # measured or current values.
                 "device": {f: info[f] for f in ("name", "vendor", "plugin", "driver_version",
                                                 "compute_units", "memory_bytes")},
                 "target": target}
        if self._what_base is None:
            try:
                src = inspect.getsource(fn)
            except (OSError, TypeError):
                src = fn.__qualname__
            from . import __version__
            self._what_base = {"compiler": ir.compiler_version(), "tl": __version__,
                               "source": hashlib.sha256(src.encode()).hexdigest(),
                               "configs": [_jsonable(c.kwargs) if c.targets is None else
                                           {"kwargs": _jsonable(c.kwargs),
                                            "targets": list(c.targets)}
                                           for c in self.configs]}
        return where, self._what_base

    def _load(self, path, where, what):
        """The stored choice at `path`, or None (absent; unreadable or stale: with a warning)."""
        try:
            text = path.read_text()
        except (FileNotFoundError, NotADirectoryError):  # none yet (or no directory: _save warns)
            return None
        except OSError as e:
            return self._ignore(path, f"cannot be read ({e})")
        try:
            entry = json.loads(text)
            ok = (isinstance(entry, dict) and entry.get("format") == FORMAT
                  and isinstance(entry.get("where"), dict) and isinstance(entry.get("what"), dict))
        except ValueError as e:
            return self._ignore(path, f"is corrupt ({e})")
        if not ok:
            return self._ignore(path, "is corrupt (not a tl.autotune entry)")
        if entry["where"] != where:
            return self._ignore(path, "is for another kernel, key or device")
        stale = [f for f in what if entry["what"].get(f) != what[f]]
        if stale:
            return self._ignore(path, f"is stale (its {', '.join(stale)} changed)")
        for c in self.configs:
            if _jsonable(c.kwargs) == entry.get("config"):
                return c
        return self._ignore(path, f"is corrupt (its config {entry.get('config')!r} is not one "
                                  "of the configs)")

    def _ignore(self, path, why):
        warnings.warn(f"tl.autotune: ignoring {path}: it {why}; tuning {self.__name__} again",
                      stacklevel=4)
        return None

    def _save(self, path, entry):
        """Writes `entry` whole or not at all (a temporary file renamed into place); a directory
        that cannot be written only means the choice is not kept."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w") as f:
                json.dump(entry, f, indent=1, sort_keys=True)
            os.replace(tmp, path)
        except OSError as e:
            warnings.warn(f"tl.autotune: cannot keep the choice for {self.__name__} in {path}: "
                          f"{e}", stacklevel=4)

    # ---- choosing ----------------------------------------------------------------------------

    def _choose(self, grid, args, kwargs, values, device, target, key):
        directory = cache_dir()
        where, what = self._where_what(values, device, target, key)
        path = directory / f"{_sha(where)}.json" if directory is not None else None
        if path is not None:
            cfg = self._load(path, where, what)
            if cfg is not None:
                log.debug("autotune %s %s: %s from %s", self.__name__, key, cfg, path)
                return cfg
        configs = self.configs_for(where["target"])
        if not configs:
            raise ValueError(f"tl.autotune: {self.__name__} has no config for target "
                             f"'{where['target']}' (each config names other targets)")
        times, failed = [], []
        for c in configs:
            try:
                for _ in range(self.warmup):
                    self.kernel.run(grid, *args, device=device, target=target, **kwargs,
                                    **c.kwargs)
                t = min(self.kernel.run(grid, *args, device=device, target=target, _timed=True,
                                        **kwargs, **c.kwargs) for _ in range(self.rep))
            except CompileError as e:
                # A config this target cannot compile (a tile larger than a chip's scratchpad:
                # configs are per target, chips of one target differ) is left out, said aloud;
                # if every config fails, the first error is the kernel's.
                failed.append(e)
                warnings.warn(f"tl.autotune: {self.__name__} {c} does not compile for "
                              f"{where['target']}, left out: {e}", stacklevel=3)
                times.append(None)
                continue
            times.append(t)
            log.debug("autotune %s %s: %s -> %.4f ms", self.__name__, key, c, t)
        if len(failed) == len(configs):
            raise failed[0]
        self.tunings += 1
        cfg = configs[times.index(min(t for t in times if t is not None))]
        log.debug("autotune %s %s: chose %s", self.__name__, key, cfg)
        if path is not None:
            self._save(path, {"format": FORMAT, "where": where, "what": what,
                              "config": _jsonable(cfg.kwargs), "times_ms": times})
        return cfg


def autotune(configs, key, warmup=1, rep=3, bucket=pow2_bucket):
    """Tries each of `configs` (constexpr values) on the first launch for each value of the
    arguments named in `key` (integers and array dimensions bucketed by `bucket`, None: exact;
    arrays also by dtype) and device, keeps the fastest, and reuses it — also in later processes,
    through $TL_CACHE_DIR/autotune (the module's docstring says when a stored choice holds).

    >>> import numpy as np, tl
    >>> @tl.autotune(configs=[tl.Config({"BLOCK": 16}), tl.Config({"BLOCK": 64})], key=["n"])
    ... @tl.kernel
    ... def scale(x: tl.tensor, n: tl.int32, BLOCK: tl.constexpr):
    ...     i = tl.program_id(0) * BLOCK
    ...     tl.store(x + (i,), tl.load(x + (i,), (BLOCK,)) * 2.0)
    >>> x = np.ones(64, np.float32)
    >>> scale[lambda m: (tl.cdiv(m["n"], m["BLOCK"]),)](x, 64)
    >>> sorted(set(x.tolist()))[0] >= 2.0
    True
    """
    from .jit import Kernel

    def deco(k):
        if not isinstance(k, Kernel):
            raise TypeError("tl.autotune applies to a @tl.kernel (put it above @tl.kernel)")
        return Autotuner(k, configs, key, warmup, rep, bucket)
    return deco
