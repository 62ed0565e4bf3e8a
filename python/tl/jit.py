# @tl.kernel: tracing on first launch per specialization, compile caches, launching, profiling,
# autotuning.
# SPDX-License-Identifier: Apache-2.0
import functools
import inspect
import logging
import os
import sys
import time

import numpy as np

from . import core, fastlaunch, ir, runtime
from .core import dtype
from .frontend import CodeGen
from .funcs import function_globals, function_source
from .language import constexpr

log = logging.getLogger("tl")
if os.environ.get("TL_DEBUG", "0") not in ("", "0"):
    _h = logging.StreamHandler(sys.stderr)
    _h.setFormatter(logging.Formatter("tl: %(message)s"))
    log.addHandler(_h)
    log.setLevel(logging.DEBUG)

PRODUCER = "tl-python 0.1.0"


def compile_ir(text, target, options=""):
    """The executable for `text` on `target` with target `options`. The compiler's one compile
    cache (memory, then $TL_CACHE_DIR/executables, default ~/.cache/tl; TL_CACHE_DIR="" turns the
    disk part off) is keyed by the module, the target, its options, the compiler's sources and
    the host or chip it compiles for."""
    t0 = time.perf_counter()
    blob = ir.compile_text(text, target, producer=PRODUCER, options=options)
    log.debug("compile %s: %.1f ms, %d bytes", target, (time.perf_counter() - t0) * 1e3, len(blob))
    return blob


def _scalar_dtype(v):
    if isinstance(v, (bool, np.bool_)):
        return core.int1
    if isinstance(v, (np.float64, np.int64)):  # numpy's defaults: as the Python number would
        v = v.item()
    elif isinstance(v, np.generic):
        return core.dtype_of_numpy(v.dtype)
    if isinstance(v, int):
        return core.int32 if -2**31 <= v < 2**31 else core.int64
    if isinstance(v, float):
        return core.float32
    return None


class Compiled:
    """One specialization of a kernel: IR text, and per device its loaded executable."""

    def __init__(self, text, written):
        self.text, self.written = text, written
        self.executables = {}  # (device, target) -> handle


def grid_dims(kernel, grid):
    """`grid` (an int or a tuple / list of up to 3) as a tuple of program counts, each an int
    in [0, 2^31); else a TypeError or ValueError naming the kernel's grid (a float had been
    truncated, a fourth dimension dropped, a negative count an OverflowError)."""
    dims = grid if isinstance(grid, (tuple, list)) else (grid,)
    bad = [g for g in dims if isinstance(g, (bool, np.bool_))
           or not isinstance(g, (int, np.integer))]
    if bad:
        raise TypeError(f"{kernel}[grid]: program counts must be integers, got {grid!r}")
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"{kernel}[grid]: a grid has 1 to 3 dimensions, got {grid!r}")
    if any(not 0 <= g < 2**31 for g in dims):
        raise ValueError(f"{kernel}[grid]: program counts must be in [0, 2^31), got {grid!r}")
    return tuple(int(g) for g in dims)


class Kernel:
    """A TL kernel: ``kernel[grid](*args, device=None, target=None, **constexprs)``.

    `grid` is a tuple of up to 3 program counts, or a callable taking the dict of bound
    arguments (constexprs included) and returning one. Arguments: numpy arrays or DLPack tensors
    for tensor parameters (written tensors are updated in place), Python or numpy numbers for
    scalars, Python values for ``tl.constexpr`` parameters. `device`: "cpu", "npusim", "cuda",
    "cuda:N"; None picks the GPU of the first CUDA tensor argument, else "cpu". CUDA tensors
    (``__dlpack__`` / ``__cuda_array_interface__``, e.g. PyTorch's) are used in place, on
    PyTorch's current stream; so are numpy arrays on the cpu device (TL_ZERO_COPY=0: copies).
    """

    __tl_kernel__ = True  # a kernel calling it gets a located error, not a launch

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.signature = inspect.signature(fn)
        self.constexprs = {n for n, p in self.signature.parameters.items() if p.annotation is constexpr}
        params = self.signature.parameters.values()
        # For bind's fast path: plain parameters (no *args/**kwargs) in order, their defaults.
        self._names = tuple(p.name for p in params)
        self._defaults = {p.name: p.default for p in params if p.default is not p.empty}
        self._plain = all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params)
        self.cache = {}
        self.profiling = False
        self.timings = {}  # device -> [ms per launch]
        self._ast = None
        self._plans = []  # fastlaunch.Plan of recent launches, most recent first
        self.launch_counts = {"full": 0, "fast": 0}  # launches made by each path (tests, bench)

    def __repr__(self):
        return f"<tl.kernel {self.__name__}>"

    def __call__(self, *args, **kwargs):
        raise TypeError(f"launch a kernel with a grid: {self.__name__}[grid](...)")

    def __getitem__(self, grid):
        c = fastlaunch.C
        if (c is not None and fastlaunch.USE_C and fastlaunch.ENABLED
                and not log.isEnabledFor(logging.DEBUG)):  # run logs each launch
            return c.launcher(self, grid)  # the most recent plan's hot case without run's frame
        return functools.partial(self.run, grid)  # a C-level call, cheaper than a lambda

    # ---- tracing ------------------------------------------------------------------------------

    def _source(self):
        if self._ast is None:
            self._ast = function_source(self.fn, "kernel")
        return self._ast

    def trace(self, params):
        """Builds the kernel's Tile IR for one specialization; returns (text, written args)."""
        fn_ast, filename, offset = self._source()
        b = ir.Builder(self.__name__)
        gen = CodeGen(fn_ast, filename, offset, self._globals(), b)
        prev = getattr(core._state, "builder", None)
        core._state.builder = b
        try:
            t0 = time.perf_counter()
            gen.build(params)
            text = b.text()
        finally:
            core._state.builder = prev
        log.debug("traced %s (%s:%d) in %.1f ms:\n%s", self.__name__, filename, offset + 1,
                  (time.perf_counter() - t0) * 1e3, text)
        return text, gen.written

    def _globals(self):
        return function_globals(self.fn)

    # ---- launching ----------------------------------------------------------------------------

    def bind(self, args, kwargs):
        """The argument values by parameter, in order: directly for plain parameters (a few
        microseconds less per launch than inspect's bind), else, and for every error, by
        inspect."""
        names = self._names
        if self._plain and len(args) <= len(names) and all(k in names for k in kwargs):
            values = dict(zip(names, args))
            for n in names[len(args):]:
                if n in kwargs:
                    values[n] = kwargs[n]
                elif n in self._defaults:
                    values[n] = self._defaults[n]
                else:
                    break  # missing: inspect says which
            else:
                if not any(k in values and names.index(k) < len(args) for k in kwargs):
                    return values
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return bound.arguments

    def specialize(self, values):
        """(key, IR params, launch args) for bound argument values."""
        params, launch, key = [], [], []
        for name, v in values.items():
            if name in self.constexprs:
                if isinstance(v, np.generic) and v.dtype.kind in "biuf":
                    v = v.item()  # a numpy number (np.int64(8)) as the Python one
                params.append((name, "constexpr", v))
                # The type too: 2, 2.0 and True are equal keys but trace differently.
                key.append((name, type(v).__name__,
                            v if isinstance(v, (int, float, bool, str)) else repr(v)))
                continue
            dt = _scalar_dtype(v)
            if dt is not None:
                dt, weak = self._scalar_type(name, v, dt)
                params.append((name, "scalar", (dt, weak)))
                # The HAL reads the value by the dtype, not by the Python type.
                launch.append(["scalar", dt.code, float(v) if dt.is_float else int(v)])
                key.append((name, dt.name, weak))
                continue
            dv = runtime.device_tensor(v)
            if dv is not None:  # GPU memory: imported by the launch, never copied
                runtime.check_extents(dv.shape, f"argument '{name}' of {self.__name__}")
                params.append((name, "tensor", (dv.dtype, dv.ndim)))
                launch.append(["devtensor", dv, dv.dtype.code, v])
                key.append((name, dv.dtype.name, dv.ndim))
                continue
            try:
                arr = runtime.as_array(v)
            except TypeError:
                raise TypeError(f"tl: argument '{name}' of {self.__name__}: expected an array, a "
                                f"DLPack tensor or a number, got {type(v).__name__}") from None
            dt = core.dtype_of_numpy(arr.dtype)
            runtime.check_extents(arr.shape, f"argument '{name}' of {self.__name__}")
            params.append((name, "tensor", (dt, arr.ndim)))
            launch.append(["tensor", arr, dt.code, v])
            key.append((name, dt.name, arr.ndim))
        return tuple(key), params, launch

    def _scalar_type(self, name, v, dt):
        """(dtype, weak) of scalar argument `name` = `v` whose value alone gives `dt`. A tl dtype
        annotation decides and is strong (it promotes like a tile: the user asked for it). Else
        the argument is weak, like a Python number: `float` means f32 as no annotation does,
        `int` i32 (i64 if large), `bool` i1; np.float64 and np.int64 are taken as the Python
        number, other numpy scalars keep their dtype. An integer annotation rejects a float."""
        ann = self.signature.parameters[name].annotation
        if isinstance(ann, dtype) or ann in (int, bool):
            if (ann.is_int if isinstance(ann, dtype) else True) and dt.is_float:
                raise TypeError(f"tl: argument '{name}' of {self.__name__} is annotated "
                                f"{getattr(ann, '__name__', ann)}, got {type(v).__name__} {v!r}")
        if isinstance(ann, dtype):
            return ann, False
        if ann in (float, int, bool):
            if ann is bool and dt is not core.int1:
                raise TypeError(f"tl: argument '{name}' of {self.__name__} is annotated bool, "
                                f"got {type(v).__name__} {v!r}")
            if ann is float:
                return core.float32, True
            if ann is int and dt is core.int1:
                return core.int32, True
        return dt, True

    def compiled(self, key, params):
        c = self.cache.get(key)
        if c is None:
            text, written = self.trace(params)
            names = [p[0] for p in params if p[1] != "constexpr"]
            c = Compiled(text, {i for i, n in enumerate(names) if n in written})
            self.cache[key] = c
        return c

    def executable(self, c, dev, target):
        exe = c.executables.get((dev.name, target))
        if exe is None:
            if target is None:  # the device's preferred target the compiler has; no silent fallback
                target_name = ir.target_for_device(dev.info["target"], dev.info["targets"])
            else:
                target_name = target
            # The device's options for its own target build its image alone (cuda: this GPU's
            # architecture, one ptxas run instead of one per architecture the target knows).
            options = dev.info["target_options"] if target_name == dev.info["target"] else ""
            exe = dev.load(compile_ir(c.text, target_name, options))
            c.executables[(dev.name, target)] = exe
        return exe

    def run(self, grid, *args, device=None, target=None, _timed=False, **kwargs):
        if fastlaunch.ENABLED and not (_timed or self.profiling):  # see fastlaunch.py
            c = fastlaunch.C if fastlaunch.USE_C else None
            for plan in self._plans:
                try:
                    done = ((c is not None and plan.c_state is not None
                             and c.launch(plan.c_state, grid, args, kwargs, device, target))
                            or plan.launch(grid, args, kwargs, device, target))
                except BaseException:  # a matched launch that failed (e.g. a device assert)
                    self.launch_counts["fast"] += 1
                    raise
                if done:
                    self.launch_counts["fast"] += 1
                    if log.isEnabledFor(logging.DEBUG):
                        log.debug("launched %s grid=%s on %s", self.__name__,
                                  plan.grid_of(grid), plan.dev.name)
                    return None
        return self._run_full(grid, args, kwargs, device, target, _timed)

    def _run_full(self, grid, args, kwargs, device, target, _timed):
        """The reference launch path: bind, specialize, compile cache, Device.launch; then a
        launch plan for the next call with the same signature."""
        device_arg = device
        values = self.bind(args, kwargs)
        key, params, launch = self.specialize(values)
        c = self.compiled(key, params)
        if device is None:  # the GPU of the first CUDA tensor argument, else the host
            device = runtime.default_device(a[1] for a in launch if a[0] == "devtensor")
        dev = runtime.device(device)
        exe = self.executable(c, dev, target)
        if callable(grid):
            grid = grid(values)
        grid = grid_dims(self.__name__, grid)
        # Tensors travel as C-contiguous arrays; written ones are copied back into the caller's.
        originals = {}
        for i, a in enumerate(launch):
            if a[0] == "tensor" and not a[1].flags.c_contiguous and not dev.zero_copy(a[1]):
                originals[i] = a[1]
                a[1] = np.ascontiguousarray(a[1])
        timed = _timed or self.profiling
        self.launch_counts["full"] += 1
        ms = dev.launch(exe, grid, [tuple(a[:3]) for a in launch], c.written, timed)
        for i, orig in originals.items():
            if i in c.written:
                orig[...] = launch[i][1]
        if fastlaunch.ENABLED:
            plan = fastlaunch.make(self, args, kwargs, device_arg, target, values, launch, dev, exe)
            if plan is not None:
                self._plans = [plan] + [p for p in self._plans if not plan.same_checks(p)]
                del self._plans[fastlaunch.MAX_PLANS:]
        if ms is not None and self.profiling:
            self.timings.setdefault(device, []).append(ms)
        if log.isEnabledFor(logging.DEBUG):  # not formatted on every launch
            log.debug("launched %s grid=%s on %s%s", self.__name__, grid, device,
                      f" in {ms:.3f} ms" if ms is not None else "")
        return ms if _timed else None

    def ir(self, *args, **kwargs):
        """The Tile IR text of the specialization for these arguments (no launch)."""
        key, params, _ = self.specialize(self.bind(args, kwargs))
        return self.compiled(key, params).text


def kernel(fn):
    """Makes a TL kernel of a Python function (traced to Tile IR at its first launch).

    >>> import numpy as np, tl
    >>> @tl.kernel
    ... def fill(out: tl.tensor, value: tl.float32, BLOCK: tl.constexpr):
    ...     tl.store(out + (tl.program_id(0) * BLOCK,), tl.full((BLOCK,), value))
    >>> y = np.zeros(10, np.float32)
    >>> fill[(3,)](y, 2.5, BLOCK=4)
    >>> y.tolist() == [2.5] * 10
    True
    """
    return Kernel(fn)


# ---- profiling ------------------------------------------------------------------------------------

_profiled = []


def profile(k):
    """Times every launch of kernel `k` per device with HAL events (``k.timings``; a summary with
    tl.profile_report(), also printed at exit).

    >>> import tl
    >>> @tl.profile
    ... @tl.kernel
    ... def nop(): pass
    >>> nop[(1,)]()
    >>> len(nop.timings["cpu"])
    1
    """
    if not isinstance(k, Kernel):
        raise TypeError("tl.profile applies to a @tl.kernel (put it above @tl.kernel)")
    k.profiling = True
    _profiled.append(k)
    return k


def profile_report():
    """One line per profiled kernel and device: launches, mean/min/max ms."""
    lines = []
    for k in _profiled:
        for dev, t in k.timings.items():
            lines.append(f"{k.__name__} on {dev}: {len(t)} launches, mean {sum(t) / len(t):.4f} ms, "
                         f"min {min(t):.4f} ms, max {max(t):.4f} ms")
    return "\n".join(lines)


def _report_at_exit():
    text = profile_report()
    if text and os.environ.get("TL_PROFILE_REPORT", "1") != "0":
        print("tl.profile:\n" + text, file=sys.stderr)


import atexit  # noqa: E402

atexit.register(_report_at_exit)
