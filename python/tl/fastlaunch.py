# The fast launch path: a launch whose arguments match one of a kernel's recent signatures skips
# binding, specializing and the cache lookups, and fills a tl_arg array kept from the last time.
# SPDX-License-Identifier: Apache-2.0
"""Launch plans: what a repeated ``kernel[grid](...)`` does instead of the full path.

The full path (``Kernel.run``: bind, specialize, compile cache, ``Device.launch``) stays the
reference. After it launches, it makes a plan of that launch when every argument is of a kind the
plan can check cheaply: PyTorch CUDA tensors, numpy arrays launched in place on the cpu device,
Python and numpy scalars, and constexprs of plain types. A later launch matches the plan when it
passes the same number of positional arguments, the same keyword names, the same device= and
target=, and per argument the same type, dtype and rank (a torch tensor also on the same GPU,
an integer in the same i32/i64 class, a constexpr equal in type and value). Anything else,
and every error, takes the full path, which compiles and caches as always and makes a new plan.
TL_FAST_LAUNCH=0 (or ``tl.fastlaunch.ENABLED = False``) turns plans off.

>>> import numpy as np, tl
>>> @tl.kernel
... def fill(out: tl.tensor, value: tl.float32, BLOCK: tl.constexpr):
...     tl.store(out + (tl.program_id(0) * BLOCK,), tl.full((BLOCK,), value))
>>> y = np.zeros(8, np.float32)
>>> for v in (1.0, 2.0):
...     fill[(2,)](y, v, BLOCK=4)
>>> y.tolist() == [2.0] * 8, fill.launch_counts
(True, {'full': 1, 'fast': 1})
"""
import os
import threading

import numpy as np

from . import runtime
from ._ffi import ffi, hal
from .runtime import SCALAR, TENSOR, check

ENABLED = os.environ.get("TL_FAST_LAUNCH", "1") != "0"
# The plans' hot case in C (python/ext/tl_launch.c), for plans of torch tensors, scalars and
# constexprs, where the extension is built; TL_FAST_LAUNCH_C=0 turns it off. On the H200 it
# takes ~2 us off a launch (7.4 against 9.4 us: bench/cuda/README.md).
USE_C = os.environ.get("TL_FAST_LAUNCH_C", "1") != "0"
MAX_PLANS = 4  # plans kept per kernel, most recent first: a few signatures alternating stay fast
_CONSTEXPR_TYPES = (int, float, bool, str, type(None))
_I32 = (-2**31, 2**31)
_INDEX_LIMIT = runtime.INDEX_LIMIT
_CONST, _SCALAR, _TORCH, _NUMPY = range(4)
_ARG_SIZE, _LAUNCH_SIZE = ffi.sizeof("tl_arg"), ffi.sizeof("tl_launch_desc")


def _load_c():
    """The _tl_launch extension from the directories the libraries come from, or None."""
    import importlib.util
    from ._ffi import lib_dirs
    for d in lib_dirs():
        path = d / "_tl_launch.abi3.so"
        if path.exists():
            try:
                spec = importlib.util.spec_from_file_location("tl._tl_launch", path)
                mod = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(mod)
                return mod
            except ImportError:
                return None
    return None


C = _load_c()


def _address(cdata):
    return int(ffi.cast("uintptr_t", cdata))


def _scalar_range_class(v):
    """Whether a Python or numpy integer is i32-sized (it decides i32 or i64), else None."""
    if type(v) in (int, np.int64):
        return _I32[0] <= v < _I32[1]
    return None


def make(kernel, args, kwargs, device, target, values, launch, dev, exe):
    """A plan of the full-path launch just made, or None when some argument is of a kind plans
    do not check (DLPack or __cuda_array_interface__ tensors, copied arrays, other constexprs)."""
    if not ENABLED or not kernel._plain:
        return None
    names = kernel._names
    slots = []  # (kind, index into the launch values, expected..., launch position or None)
    kwnames = tuple(kwargs)
    li = 0  # position among launch arguments (non-constexpr parameters)
    for name, v in values.items():
        if names.index(name) < len(args):
            src = names.index(name)
        elif name in kwargs:
            src = len(args) + kwnames.index(name)
        else:
            src = None  # a default: fixed, checked once by the full path
        if name in kernel.constexprs:
            if src is not None:
                if type(v) not in _CONSTEXPR_TYPES:
                    return None
                slots.append((_CONST, src, type(v), v, None, None))
            continue
        a = launch[li]
        if a[0] == "scalar":
            if src is None:
                slots.append((_SCALAR, None, None, None, None, li))
            else:  # the HAL reads the value by the dtype: as a double for floats
                slots.append((_SCALAR, src, type(v), _scalar_range_class(v),
                              isinstance(a[2], float), li))
        elif (a[0] == "devtensor" and src is not None and a[3] is a[1].owner
              and type(v).__module__.startswith("torch")):
            # a torch tensor read from its attributes (devtensor._from_torch; its DLPack
            # fallback keeps a capsule as owner, and __cuda_array_interface__ is never torch's)
            slots.append((_TORCH, src, type(v), v.dtype, (a[1].ndim, a[1].device_id), li))
        elif (a[0] == "tensor" and src is not None and type(v) is np.ndarray
              and dev.info["plugin"] == "cpu" and dev.zero_copy(v)):
            slots.append((_NUMPY, src, np.ndarray, v.dtype, v.ndim, li))
        else:
            return None
        li += 1
    return Plan(len(args), frozenset(kwnames), kwnames, device, target, slots, launch, dev, exe)


class Plan:
    """One specialization's launch: the checks a call must pass, and its reused C arguments."""

    def __init__(self, nargs, kwset, kwnames, device, target, slots, launch, dev, exe):
        self.nargs, self.kwset, self.kwnames = nargs, kwset, kwnames
        self.device, self.target = device, target
        self.dev, self.exe, self.lib = dev, exe, hal()
        self.lock = threading.Lock()  # the C arrays are shared: a concurrent launch goes full
        # Set while the lock is held: what the C launcher reads (an attribute, not a call). It
        # runs whole under the GIL, so it takes no lock of its own.
        self.busy = False
        n = len(launch)
        self.c_args = ffi.new("tl_arg[]", max(n, 1))
        self.desc = ffi.new("tl_launch_desc *")
        self.desc.struct_size, self.desc.kernel = _LAUNCH_SIZE, 0
        self.desc.args, self.desc.arg_count = self.c_args, n
        self.import_desc = ffi.new("tl_buffer_import_desc *")  # numpy arrays, imported per launch
        self.import_desc.struct_size = ffi.sizeof("tl_buffer_import_desc")
        self.import_out = ffi.new("tl_buffer *")
        for i, a in enumerate(launch):  # what never changes: kind, dtype, rank, default scalars
            c = self.c_args[i]
            c.struct_size = _ARG_SIZE
            if a[0] == "scalar":
                c.kind, c.dtype = SCALAR, a[1]
                if isinstance(a[2], float):
                    c.f = a[2]
                else:
                    c.i = int(a[2])
            else:
                c.kind, c.dtype, c.rank = TENSOR, a[2], a[1].ndim
        self.slots = [s for s in slots if s[1] is not None]
        self.cs = [self.c_args[i] for i in range(n)]  # the elements, indexed once
        self.last = [None] * n  # torch tensors: (span, shape, strides) last written to c_args
        self.scalars = [(s[1], s[4], s[5]) for s in self.slots if s[0] == _SCALAR]
        self.grid = None  # the grid tuple desc.grid holds
        self.checks = (nargs, kwset, device, target, tuple(s[:5] for s in self.slots))
        # torch tensors launch on torch's current stream of the first one's GPU
        torch_slots = [s for s in self.slots if s[0] == _TORCH]
        self.torch_index = torch_slots[0][4][1] if torch_slots else None
        self.raw_stream = raw = None
        if self.torch_index is not None:
            import torch  # a torch tensor was launched, so torch is there
            from .devtensor import _current_raw_stream
            raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
            self.raw_stream = raw or (lambda i: _current_raw_stream(torch, i))
        self.c_state = None  # the C launcher's view of this plan (_tl_launch.launch)
        self.addrs, self.stream_addrs = {}, {}  # what the C launcher reads of cdata handles
        # Only with torch's own stream query: the C launcher relies on running no Python code
        # (which could switch threads) before its launch, and the fallback is Python.
        if (USE_C and C is not None and raw is not None
                and isinstance(self.lib.tl_stream_launch, ffi.CData)  # not a stand-in
                and all(s[0] in (_CONST, _SCALAR, _TORCH) for s in self.slots)):
            self.c_state = (
                tuple(self.slots), nargs, kwnames, device, target, self.last,
                self.addrs, dev.imports, self.stream_addrs, self.raw_stream, self.torch_index,
                _address(self.c_args), _address(self.desc), _address(exe),
                _address(self.lib.tl_stream_launch), self, dev)

    def _remember(self, key, buf):
        """Keeps the address of torch import `buf` for the C launcher, which uses it only while
        Device.imports still holds `buf` under `key`."""
        if len(self.addrs) >= 4 * runtime.IMPORT_CACHE_SIZE:  # stale keys: dropped together
            self.addrs.clear()
        self.addrs[key] = (buf, _address(buf))

    def _raise_status(self, addr):
        """The error of a tl_stream_launch the C launcher made, as the Python path raises it."""
        check(ffi.cast("tl_status", addr), "tl_stream_launch")

    def same_checks(self, other):
        """Whether `other` matches exactly the calls this plan matches (it is then replaced)."""
        return self.checks == other.checks

    def grid_of(self, grid):
        """The grid as the launch read it (for the debug log)."""
        return tuple(int(g) for g in (grid if isinstance(grid, (tuple, list)) else (grid,)))

    def launch(self, grid, args, kwargs, device, target):
        """Launches and returns True when the call matches this plan; else returns False having
        done nothing the full path could tell (it then takes the call). One function: a Python
        call costs as much as several tl_arg fields."""
        if len(args) != self.nargs or device != self.device or target != self.target:
            return False
        if kwargs:
            if kwargs.keys() != self.kwset:
                return False
            vals = args + tuple(map(kwargs.__getitem__, self.kwnames))
        elif self.kwset:
            return False
        else:
            vals = args
        if callable(grid) or not self.lock.acquire(False):  # busy: shared C arrays
            return False
        self.busy = True
        dev, cs, last = self.dev, self.cs, self.last
        imports = dev.imports
        try:
            # Checks; torch tensors' fields and cached imports (no effect the full path sees)
            pending = []  # (launch position, tensor, address or None): imported once all match
            for kind, src, t, e1, e2, li in self.slots:
                v = vals[src]
                if type(v) is not t:
                    return False
                if kind == _TORCH:  # e1: torch dtype, e2: (rank, GPU)
                    shape = v.shape  # each torch method call costs ~0.2-0.4 us: the fewest
                    if v.dtype is not e1 or (len(shape), v.get_device()) != e2:
                        return False
                    strides, prev = v.stride(), last[li]
                    if prev is None or shape != prev[1] or strides != prev[2]:
                        if max(shape, default=0) >= _INDEX_LIMIT:
                            return False  # the full path refuses it, naming the argument
                        n, c = 0, cs[li]
                        cshape, cstrides = c.shape, c.strides
                        for d in range(len(shape)):
                            cshape[d], cstrides[d] = shape[d], strides[d]
                            n += (shape[d] - 1) * strides[d]
                        span = 0 if 0 in shape else (n + 1) * v.element_size()
                        last[li] = prev = (span, shape, strides)
                    key = (v.data_ptr(), prev[0] or 1)
                    buf = imports.get(key)
                    if buf is None:
                        pending.append((li, key[0], prev[0]))
                    else:
                        imports.move_to_end(key)
                        cs[li].buffer = buf
                        if self.c_state is not None and key not in self.addrs:
                            self._remember(key, buf)
                elif kind == _SCALAR:
                    if e1 is not None and (_I32[0] <= v < _I32[1]) != e1:
                        return False
                elif kind == _NUMPY:
                    if v.dtype is not e1 or v.ndim != e2:
                        return False
                    addr = _in_place_address(v)
                    if addr is None:
                        return False
                    if v.size >= _INDEX_LIMIT and max(v.shape) >= _INDEX_LIMIT:
                        return False  # the full path refuses it, naming the argument
                    pending.append((li, v, addr))
                elif v != e1:  # a constexpr
                    return False
            if type(grid) is not tuple or grid != self.grid:  # converted as the full path does
                g = grid if isinstance(grid, (tuple, list)) else (grid,)
                if not 1 <= len(g) <= 3 or any(
                        isinstance(d, bool) or not isinstance(d, (int, np.integer))
                        or not 0 <= d < 2**31 for d in g):
                    return False  # the full path checks it (jit.grid_dims)
                self.grid, dims = None, self.desc.grid
                for d in range(3):
                    dims[d] = int(g[d]) if d < len(g) else 1
                self.grid = grid if type(grid) is tuple else None
            for src, is_float, li in self.scalars:  # the values (full path: specialize)
                if is_float:
                    cs[li].f = float(vals[src])
                else:
                    cs[li].i = int(vals[src])
            return self._launch(pending)
        finally:
            self.busy = False
            self.lock.release()

    def _launch(self, pending):
        lib, dev, cs = self.lib, self.dev, self.cs
        buffers = []  # numpy arrays' imports, released after the launch as the full path does
        dev.copied_bytes = 0
        try:
            for li, v, addr in pending:
                c = cs[li]
                if type(v) is int:  # a torch tensor's first launch at this address and span
                    key = (v, max(addr, 1))
                    c.buffer = buf = dev._import_device_tensor(_Span(v, addr), f"argument {li}")
                    if self.c_state is not None:
                        self._remember(key, buf)
                    continue
                shape, strides, item = v.shape, v.strides, v.itemsize
                span = item
                cshape, cstrides = c.shape, c.strides
                for d in range(len(shape)):
                    cshape[d], cstrides[d] = shape[d], strides[d] // item
                    span += (shape[d] - 1) * strides[d]
                imp, out = self.import_desc, self.import_out
                imp.pointer, imp.size_bytes = ffi.cast("void *", addr), span
                st = lib.tl_buffer_import(dev.handle, imp, out)
                if st:  # the full path's message (Device._import)
                    check(st, f"tl_buffer_import of argument {li}")
                buffers.append(out[0])
                c.buffer = out[0]
            stream = dev.stream
            if self.raw_stream is not None:  # torch's current stream
                s = self.raw_stream(self.torch_index)
                stream = dev.native_streams.get(s) or dev.native_stream(s)
                if self.c_state is not None and s not in self.stream_addrs:
                    self.stream_addrs[s] = _address(stream)
            st = lib.tl_stream_launch(stream, self.exe, self.desc)
            if st:
                check(st, "tl_stream_launch")
            if buffers or stream == dev.stream:
                check(lib.tl_stream_synchronize(stream), "kernel launch")
            return True
        finally:
            for b in buffers:
                lib.tl_buffer_release(b)


def _in_place_address(arr):
    """The address of numpy array `arr` when Device.zero_copy launches it in place (same test),
    else None. ffi.from_buffer reads a C-contiguous array's address faster than arr.ctypes."""
    item = arr.itemsize
    if not runtime.ZERO_COPY or arr.nbytes == 0:
        return None
    for st in arr.strides:
        if st < 0 or st % item:
            return None
    try:
        addr = int(ffi.cast("intptr_t", ffi.from_buffer(arr)))
    except (ValueError, TypeError, BufferError):  # not C-contiguous, or no buffer interface
        addr = arr.ctypes.data
    return addr if addr % item == 0 else None


class _Span:
    """What Device._import_device_tensor reads of a device tensor: address and byte span."""
    __slots__ = ("ptr", "nbytes")

    def __init__(self, ptr, nbytes):
        self.ptr, self.nbytes = ptr, nbytes
