# Devices through the HAL C API: the runtime, device lookup, buffers, launches and event timing.
# SPDX-License-Identifier: Apache-2.0
"""The HAL from Python.

>>> import tl
>>> "cpu" in tl.devices()
True
"""
import collections
import os
import threading

import numpy as np

from ._ffi import ffi, hal
from .devtensor import DeviceTensor, device_tensor  # noqa: F401 (re-exported)
from .errors import TLRuntimeError

_lock = threading.Lock()
_runtime = None
_devices = {}
TENSOR, SCALAR = 0, 1
BUFFER_HOST_VISIBLE = 2
SIMULATED_TIME = 1  # tl_device_flags
# TL_ZERO_COPY=0 makes every launch copy its numpy arrays (to compare, or to rule imports out).
ZERO_COPY = os.environ.get("TL_ZERO_COPY", "1") != "0"
_ARG_SIZE, _LAUNCH_SIZE = ffi.sizeof("tl_arg"), ffi.sizeof("tl_launch_desc")  # per launch
# Kernels from the Python front end index in int32 (tl.program_id, x.shape, block offsets such as
# pid * BLOCK): along a dimension of 2**31 elements or more those wrap, and a launch would read
# and write the wrong elements. The jit refuses such an argument (check_extents).
INDEX_LIMIT = 2**31


def check_extents(shape, where):
    """Raises ValueError if `shape` (of `where`, e.g. "argument 'x' of k") has a dimension of
    INDEX_LIMIT or more."""
    for d, n in enumerate(shape):
        if n >= INDEX_LIMIT:
            raise ValueError(f"tl: {where} has {n} elements along dimension {d}: kernels index "
                             "in int32 (tl.program_id, x.shape), so every dimension must be "
                             "below 2**31; split the array or view it with more dimensions")


IMPORT_CACHE_SIZE = 64  # imported device-tensor wrappers kept per device (Device.imports)


def check(status, what=""):
    if status != ffi.NULL:
        lib = hal()
        code = lib.tl_status_get_code(status)
        msg = ffi.string(lib.tl_status_get_message(status)).decode()
        lib.tl_status_free(status)
        raise TLRuntimeError(f"{what}: {msg}" if what else msg, code)


def runtime():
    """The process's HAL runtime (created on first use)."""
    global _runtime
    with _lock:
        if _runtime is None:
            lib = hal()
            opts = ffi.new("tl_runtime_options *")
            opts.struct_size = ffi.sizeof("tl_runtime_options")
            opts.validation = -1
            out = ffi.new("tl_runtime *")
            check(lib.tl_runtime_create(opts, out), "tl_runtime_create")
            _runtime = out[0]
        return _runtime


def devices():
    """The names of the devices the HAL sees (``["cpu", ...]``)."""
    lib, rt = hal(), runtime()
    n = ffi.new("uint32_t *")
    check(lib.tl_runtime_device_count(rt, n))
    names = []
    for i in range(n[0]):
        d = ffi.new("tl_device *")
        check(lib.tl_runtime_device_get(rt, i, d))
        names.append(_info(d[0])["plugin"])
    return names


def _info(handle):
    info = ffi.new("tl_device_info *")
    info.struct_size = ffi.sizeof("tl_device_info")
    check(hal().tl_device_query(handle, info), "tl_device_query")
    s = lambda f: ffi.string(f).decode()  # noqa: E731
    return {"name": s(info.name), "plugin": s(info.plugin), "target": s(info.target),
            "targets": [t for t in s(info.targets).split(",") if t], "vendor": s(info.vendor),
            # the options of `target` that build for exactly this device ("" when none)
            "target_options": s(info.target_options),
            "driver_version": s(info.driver_version), "memory_bytes": info.memory_bytes,
            "compute_units": info.compute_units,
            "clock_mhz": info.clock_mhz, "peak_bandwidth": info.peak_bandwidth_bytes_per_s,
            "peak_flops": list(info.peak_flops),
            # bit i set: the device stores and computes Tile IR element type i (tl.dtype.code)
            "supported_dtypes": int(info.supported_dtypes),
            # event times are the device's simulated time (npusim), exactly reproducible
            "simulated_time": bool(info.flags & SIMULATED_TIME)}


class Device:
    """One HAL device with its stream (launches on it are ordered)."""

    def __init__(self, name):
        lib = hal()
        out = ffi.new("tl_device *")
        check(lib.tl_runtime_device_find(runtime(), name.encode(), out), f"device '{name}'")
        self.handle = out[0]
        self.info = _info(self.handle)
        self.name = name
        s = ffi.new("tl_stream *")
        check(lib.tl_stream_create(self.handle, s), "tl_stream_create")
        self.stream = s[0]
        self.native_streams = {}  # CUstream (int) -> imported tl_stream, kept for the process
        # (pointer, bytes) -> imported tl_buffer of device tensors, most recent last. Importing
        # is cheap, but releasing a buffer waits for the device: cached wrappers let launches on
        # torch tensors return without waiting. A wrapper holds only the address: it is used
        # again only for a live tensor at that address and span, and is released on eviction.
        self.imports = collections.OrderedDict()
        self.copied_bytes = 0  # host<->device bytes the last launch copied (0: all zero-copy)
        self.events = []  # one pair for timed launches: timing_lock holds it for one at a time
        self.timing_lock = threading.Lock()
        for _ in range(2):
            e = ffi.new("tl_event *")
            check(lib.tl_event_create(self.handle, e), "tl_event_create")
            self.events.append(e[0])

    def load(self, blob):
        """Loads an executable; returns (handle, kernel index 0)."""
        out = ffi.new("tl_executable *")
        check(hal().tl_executable_load(self.handle, blob, len(blob), out), "tl_executable_load")
        return out[0]

    def zero_copy(self, arr):
        """Whether numpy array `arr` is launched in place (imported, no copy): on the cpu device,
        whose memory is host memory, for arrays with element-aligned data and strides."""
        return (ZERO_COPY and self.info["plugin"] == "cpu" and arr.nbytes > 0
                and all(st >= 0 and st % arr.itemsize == 0 for st in arr.strides)
                and arr.ctypes.data % arr.itemsize == 0)

    def _import(self, ptr, nbytes, what):
        buf = ffi.new("tl_buffer *")
        desc = ffi.new("tl_buffer_import_desc *",
                       {"struct_size": ffi.sizeof("tl_buffer_import_desc"),
                        "pointer": ffi.cast("void *", ptr), "size_bytes": nbytes, "flags": 0})
        check(hal().tl_buffer_import(self.handle, desc, buf), f"tl_buffer_import of {what}")
        return buf[0]

    def _import_device_tensor(self, t, what):
        key = (t.ptr, max(t.nbytes, 1))
        buf = self.imports.get(key)
        if buf is not None:
            self.imports.move_to_end(key)
            return buf
        buf = self._import(t.ptr, key[1], what)
        self.imports[key] = buf
        if len(self.imports) > IMPORT_CACHE_SIZE:
            _, old = self.imports.popitem(last=False)
            hal().tl_buffer_release(old)
        return buf

    def synchronize(self):
        """Waits for the launches on this device's streams (its own and torch's it launched on)
        and reports a failed device assert of any of them."""
        check(hal().tl_stream_synchronize(self.stream), "synchronize")
        for s in self.native_streams.values():
            check(hal().tl_stream_synchronize(s), "synchronize")

    def native_stream(self, cu_stream):
        """The tl_stream wrapping CUDA stream `cu_stream` (e.g. PyTorch's current stream)."""
        s = self.native_streams.get(cu_stream)
        if s is None:
            out = ffi.new("tl_stream *")
            check(hal().tl_stream_import(self.handle, ffi.cast("void *", cu_stream), out),
                  "tl_stream_import")
            s = self.native_streams.setdefault(cu_stream, out[0])
        return s

    def _stream_for(self, args):
        """PyTorch's current stream when a torch tensor is among `args`, else the device's own."""
        for a in args:
            if a[0] == "devtensor" and a[1].stream is not None:
                return self.native_stream(a[1].stream)
        return self.stream

    def launch(self, exe, grid, args, written, timed=False):
        """Runs kernel 0 of `exe` on `grid` with `args`: ('tensor', ndarray, dtype code),
        ('devtensor', DeviceTensor, dtype code) or ('scalar', dtype code, value). Device tensors
        and, on the cpu device, numpy arrays are imported in place; other arrays are copied in,
        and those whose indices are in `written` copied back. With torch tensors the launch runs
        on torch's current stream. Returns the launch's device time in ms when `timed`."""
        lib = hal()
        n = len(args)
        c_args = ffi.new("tl_arg[]", max(n, 1))
        buffers, keep, copied = [], [], []  # copied: args whose buffer is a copy
        timing = False  # timing_lock held
        stream = self._stream_for(args)
        self.copied_bytes = 0
        try:
            for i, a in enumerate(args):
                c = c_args[i]
                c.struct_size = _ARG_SIZE
                if a[0] == "devtensor":
                    t = a[1]
                    if self.info["plugin"] != "cuda":
                        raise TypeError(f"tl: argument {i} is a CUDA tensor but the device is "
                                        f"'{self.name}': launch with device='cuda'")
                    c.kind, c.dtype, c.rank = TENSOR, a[2], t.ndim
                    for d in range(t.ndim):
                        c.shape[d], c.strides[d] = t.shape[d], t.strides[d]
                    c.buffer = self._import_device_tensor(t, f"argument {i}")
                    continue
                if a[0] == "tensor" and self.zero_copy(a[1]):
                    arr = a[1]
                    c.kind, c.dtype, c.rank = TENSOR, a[2], arr.ndim
                    for d in range(arr.ndim):
                        c.shape[d], c.strides[d] = arr.shape[d], arr.strides[d] // arr.itemsize
                    span = (sum((m - 1) * st for m, st in zip(arr.shape, arr.strides))
                            + arr.itemsize)
                    buffers.append(self._import(arr.ctypes.data, span, f"argument {i}"))
                    c.buffer = buffers[-1]
                    continue
                if a[0] == "tensor":
                    arr = a[1]
                    copied.append(i)
                    c.kind, c.dtype, c.rank = TENSOR, a[2], arr.ndim
                    buf = ffi.new("tl_buffer *")
                    desc = ffi.new("tl_buffer_desc *", {"struct_size": ffi.sizeof("tl_buffer_desc"),
                                                        "size_bytes": max(arr.nbytes, 1),
                                                        "flags": 1})
                    check(lib.tl_buffer_create(self.handle, desc, buf), "tl_buffer_create")
                    buffers.append(buf[0])
                    c.buffer = buf[0]
                    for d in range(arr.ndim):
                        c.shape[d] = arr.shape[d]
                        c.strides[d] = arr.strides[d] // arr.itemsize
                    if arr.nbytes:
                        ptr = ffi.from_buffer(arr)
                        keep.append(ptr)
                        check(lib.tl_stream_copy_to_device(stream, ptr, buf[0], 0, arr.nbytes),
                              "tl_stream_copy_to_device")
                        self.copied_bytes += arr.nbytes
                else:
                    c.kind, c.dtype = SCALAR, a[1]
                    if isinstance(a[2], float):
                        c.f = a[2]
                    else:
                        c.i = int(a[2])
            launch = ffi.new("tl_launch_desc *")
            launch.struct_size = _LAUNCH_SIZE
            launch.kernel = 0
            for d in range(3):
                launch.grid[d] = grid[d] if d < len(grid) else 1
            launch.args, launch.arg_count = c_args, n
            if timed:  # threads timing at once (autotune) would record into the same events
                self.timing_lock.acquire()
                timing = True
                check(lib.tl_stream_record_event(stream, self.events[0]))
            check(lib.tl_stream_launch(stream, exe, launch), "tl_stream_launch")
            if timed:
                check(lib.tl_stream_record_event(stream, self.events[1]))
            for i in copied:
                arr = args[i][1]
                if i in written and arr.nbytes:
                    ptr = ffi.from_buffer(arr)
                    keep.append(ptr)
                    check(lib.tl_stream_copy_to_host(stream, c_args[i].buffer, 0, ptr, arr.nbytes),
                          "tl_stream_copy_to_host")
                    self.copied_bytes += arr.nbytes
            # Launches on device tensors alone are asynchronous on torch's stream, as torch's own
            # ops: the next op there sees the results; a failed device assert is reported by the
            # next synchronize (tl.synchronize()). Host arrays need the results now.
            if buffers or copied or timed or stream == self.stream:
                check(lib.tl_stream_synchronize(stream), "kernel launch")
            if timed:
                ms = ffi.new("double *")
                check(lib.tl_event_elapsed_ms(self.events[0], self.events[1], ms))
                return ms[0]
            return None
        finally:
            if timing:
                self.timing_lock.release()
            for b in buffers:
                lib.tl_buffer_release(b)


def default_device(values):
    """The device a launch on `values` runs on without device=: the GPU of the first CUDA tensor
    among them (a DeviceTensor or a GPU tensor), else "cpu"."""
    for v in values:
        dv = v if isinstance(v, DeviceTensor) else device_tensor(v)
        if dv is not None:
            return "cuda" if dv.device_id < 0 else f"cuda:{dv.device_id}"
    return "cpu"


def device(name):
    """The Device named `name` ("cpu", "npusim", "cuda", "cuda:1", ...), opened once per
    process."""
    with _lock:
        d = _devices.get(name)
    if d is None:
        d = Device(name)
        with _lock:
            d = _devices.setdefault(name, d)
    return d


def synchronize(name=None):
    """Waits for TL's launches on device `name` (every opened device when None), including the
    asynchronous ones on torch tensors, and raises for a failed device assert among them.

    >>> import tl
    >>> tl.synchronize()
    """
    with _lock:
        devs = [d for n, d in _devices.items() if name is None or n == name]
    for d in devs:
        d.synchronize()


def as_array(x):
    """A numpy array for a numpy array or any object with __dlpack__ (no copy for CPU tensors)."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__dlpack__"):
        return np.from_dlpack(x)
    raise TypeError(f"tl: expected a numpy array or a DLPack tensor, got {type(x).__name__}")
