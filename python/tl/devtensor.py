# Tensors that live in GPU memory (PyTorch CUDA tensors, CuPy arrays): read through DLPack or
# __cuda_array_interface__ without a copy, so that a launch can import their memory.
# SPDX-License-Identifier: Apache-2.0
"""Device tensors: what a CUDA tensor argument is to a launch.

>>> from tl.devtensor import device_tensor
>>> import numpy as np
>>> device_tensor(np.zeros(3)) is None  # host arrays are not device tensors
True
"""
import ctypes
from dataclasses import dataclass

import numpy as np

from . import core

KDL_CUDA, KDL_CUDA_MANAGED = 2, 13
# DLPack type codes (kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLBool) and bits -> tl dtype.
_DL_DTYPES = {(0, 8): core.int8, (0, 16): core.int16, (0, 32): core.int32, (0, 64): core.int64,
              (1, 8): core.uint8, (1, 16): core.uint16, (1, 32): core.uint32,
              (2, 16): core.float16, (2, 32): core.float32, (2, 64): core.float64,
              (4, 16): core.bfloat16, (6, 8): core.int1, (1, 1): core.int1,
              # DLPack 1.0's kDLFloat8_e4m3fn (torch.float8_e4m3fn: no infinities, the IR's
              # f8e4m3) and kDLFloat8_e5m2 (torch.float8_e5m2)
              (10, 8): core.float8e4m3, (12, 8): core.float8e5m2}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


@dataclass
class DeviceTensor:
    """A GPU tensor as a launch sees it: the address of element 0, shape and strides in elements,
    the span of bytes it covers, the CUDA device ordinal, and what keeps the memory alive."""
    ptr: int
    shape: tuple
    strides: tuple
    dtype: object  # tl dtype
    nbytes: int
    device_id: int
    owner: object
    stream: object = None  # PyTorch's current CUstream (int; 0 = default) for torch tensors

    @property
    def ndim(self):
        return len(self.shape)


def _span(shape, strides, itemsize):
    if any(s == 0 for s in shape):
        return 0
    if any(st < 0 for st in strides):
        raise TypeError("tl: device tensors with negative strides are not supported")
    return (sum((n - 1) * st for n, st in zip(shape, strides)) + 1) * itemsize


def _contiguous_strides(shape):
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


def torch_stream(x):
    """PyTorch's current CUDA stream (a CUstream as an int) when `x` is a torch tensor, else
    None: TL work on torch tensors is ordered with torch's own."""
    mod = type(x).__module__
    if not mod.startswith("torch"):
        return None
    import torch  # only when given a torch tensor
    return torch.cuda.current_stream(x.device).cuda_stream


def _from_dlpack(x):
    dev_type, dev_id = x.__dlpack_device__()
    if dev_type not in (KDL_CUDA, KDL_CUDA_MANAGED):
        return None
    stream = torch_stream(x)
    # The producer makes the data ready on the stream we will use (DLPack's stream argument;
    # 1 is CUDA's legacy default stream, which a raw 0 must not be confused with).
    cap = x.__dlpack__(stream=stream if stream else 1)
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    t = _DLTensor.from_address(get(cap, b"dltensor"))
    key = (t.dtype.code, t.dtype.bits)
    if t.dtype.lanes != 1 or key not in _DL_DTYPES:
        raise TypeError(f"tl: DLPack dtype code {key[0]} bits {key[1]} lanes {t.dtype.lanes} has "
                        "no Tile IR element type")
    dt = _DL_DTYPES[key]
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = (tuple(t.strides[i] for i in range(t.ndim)) if t.strides
               else _contiguous_strides(shape))
    itemsize = max(1, t.dtype.bits // 8)
    # The capsule stays unconsumed and owned by `owner`: its destructor releases the producer's
    # reference when the launch is done with it.
    return DeviceTensor((t.data or 0) + t.byte_offset, shape, strides, dt,
                        _span(shape, strides, itemsize), t.device.device_id, (x, cap), stream)


def _from_cuda_array_interface(x):
    cai = x.__cuda_array_interface__
    np_dtype = np.dtype(cai["typestr"])
    dt = core.dtype_of_numpy(np_dtype)
    shape = tuple(cai["shape"])
    if cai.get("strides") is None:
        strides = _contiguous_strides(shape)
    else:
        if any(s % np_dtype.itemsize for s in cai["strides"]):
            raise TypeError("tl: device tensor strides must be whole elements")
        strides = tuple(s // np_dtype.itemsize for s in cai["strides"])
    ptr = cai["data"][0] or 0
    # The interface names no device; the memory's own device is checked at import.
    return DeviceTensor(ptr, shape, strides, dt, _span(shape, strides, np_dtype.itemsize), -1, x,
                        torch_stream(x))


_TORCH_DTYPES = None  # torch dtype -> tl dtype, filled at the first torch tensor


def _current_raw_stream(torch, index):
    """Torch's current CUstream on device `index` as an int: the raw query Triton uses (no
    Stream object), else the public API."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return raw(index) if raw else torch.cuda.current_stream(index).cuda_stream


def _from_torch(x):
    """A torch CUDA tensor read from its own attributes: what DLPack gives, without a capsule or
    a stream handshake per launch (the launch runs on torch's current stream anyway)."""
    global _TORCH_DTYPES
    import torch  # only when given a torch tensor
    if _TORCH_DTYPES is None:
        _TORCH_DTYPES = {torch.float32: core.float32, torch.float16: core.float16,
                         torch.bfloat16: core.bfloat16, torch.float64: core.float64,
                         torch.int8: core.int8, torch.int16: core.int16, torch.int32: core.int32,
                         torch.int64: core.int64, torch.uint8: core.uint8, torch.bool: core.int1}
    dt = _TORCH_DTYPES.get(x.dtype)
    if dt is None:
        return _from_dlpack(x)  # its error names the type
    shape, strides = tuple(x.shape), x.stride()
    index = x.get_device()  # the ordinal, without a torch.device object
    return DeviceTensor(x.data_ptr(), shape, strides, dt, _span(shape, strides, x.element_size()),
                        index, x, _current_raw_stream(torch, index))


def device_tensor(x):
    """A DeviceTensor for a GPU tensor (DLPack with a CUDA device, else
    __cuda_array_interface__), or None for anything else (numpy arrays, CPU tensors)."""
    if isinstance(x, np.ndarray):
        return None
    if type(x).__module__.startswith("torch") and getattr(x, "is_cuda", False):
        return _from_torch(x)
    if hasattr(x, "__dlpack_device__") and hasattr(x, "__dlpack__"):
        return _from_dlpack(x)
    if hasattr(x, "__cuda_array_interface__"):
        return _from_cuda_array_interface(x)
    return None
