# Torch tensors through tl.ops' host functions without copies: CPU tensors as numpy views of
# their memory, CUDA tensors as host stand-ins mapped back to the tensors at each launch.
# SPDX-License-Identifier: Apache-2.0
"""How a ``tl.torch`` op hands torch tensors to a ``tl.ops`` host function.

The host functions work on numpy arrays: they check shapes, take views (reshape, broadcast,
slices, transposes), allocate outputs with ``tl.ops._common.empty`` and launch kernels through
``_common.launch``. A ``Bridge`` is set as ``_common.HOOK`` while one op runs:

- ``cpu`` / ``npusim``: a CPU tensor is a numpy view of its own memory (no copy); outputs are
  ``torch.empty`` tensors whose numpy views the kernels write (npusim copies arrays into its
  simulated memory and back: inherent to a simulator).
- ``cuda``: a CUDA tensor becomes a *stand-in*, a numpy array of the same shape and strides
  over untouched host memory (never read: only its address, shape and strides are used).
  Outputs are ``torch.empty`` CUDA tensors with stand-ins. At each launch an argument that
  lies in a stand-in is replaced by the same view (``as_strided``) of the CUDA tensor, which
  the launch imports in place on torch's current stream. Host arrays the host function makes
  itself (per-row stats, lse, small scales) are copied by the launch as before.
- ``emulate`` (tests): the cuda path on CPU tensors with stand-ins filled with NaN, so an op
  whose host function read a stand-in's values (instead of passing views to a launch) would
  produce NaN and fail its test. This is how the cuda path is tested without a GPU.
"""
import numpy as np
import torch

from .. import bf16, fp8
from ..ops import _common

_TO_NP = {torch.float32: np.dtype(np.float32), torch.float16: np.dtype(np.float16),
          torch.bfloat16: bf16.DTYPE, torch.float64: np.dtype(np.float64),
          torch.int32: np.dtype(np.int32), torch.int64: np.dtype(np.int64),
          torch.int8: np.dtype(np.int8), torch.uint8: np.dtype(np.uint8),
          torch.int16: np.dtype(np.int16), torch.bool: np.dtype(np.bool_),
          torch.float8_e4m3fn: fp8.E4M3, torch.float8_e5m2: fp8.E5M2}
_FP8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}


def np_dtype(dt):
    """The numpy dtype of arrays holding torch dtype `dt` (bf16: tl.bf16's tagged uint16)."""
    if dt not in _TO_NP:
        raise TypeError(f"tl.torch: dtype {dt} has no numpy form")
    return _TO_NP[dt]


def torch_dtype(npdt):
    """The torch dtype of numpy dtype `npdt` (tl.bf16 arrays: bfloat16; tl.fp8 arrays:
    float8_e4m3fn / float8_e5m2)."""
    probe = np.empty(0, npdt)
    if bf16.is_bf16(probe):
        return torch.bfloat16
    if fp8.is_fp8(probe):
        return _FP8[fp8.format_of(probe)]
    for t, n in _TO_NP.items():
        if n == npdt and not n.metadata:
            return t
    raise TypeError(f"tl.torch: numpy dtype {npdt} has no torch form")


def numpy_view(t):
    """CPU tensor `t` as a numpy array over the same memory (bf16 as a tl.bf16 array)."""
    t = t.detach()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(bf16.DTYPE)
    if t.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return t.view(torch.uint8).numpy().view(_TO_NP[t.dtype])
    return t.numpy()


def tensor_view(a):
    """Numpy array `a` as a CPU tensor over the same memory (tl.bf16 arrays as bfloat16)."""
    a = np.asarray(a)
    if bf16.is_bf16(a):
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    if fp8.is_fp8(a):
        return torch.from_numpy(a.view(np.uint8)).view(_FP8[fp8.format_of(a)])
    if not a.flags.writeable:  # a broadcast view: torch wants writable memory
        a = a.copy()
    return torch.from_numpy(a)


def _span(shape, strides, itemsize):
    if any(n == 0 for n in shape):
        return 0
    return (sum((n - 1) * s for n, s in zip(shape, strides)) + 1) * itemsize


class Bridge:
    """The torch side of one op's run (see the module docstring); `mode` is 'cpu' (also for
    npusim), 'cuda' or 'emulate'; `device` the torch device outputs are made on."""

    def __init__(self, mode, device):
        self.mode = mode
        self.device = device
        self.spans = []  # (host address, bytes, tensor) of each stand-in or output view

    def array(self, t):
        """The array the host function gets for tensor `t`."""
        if self.mode == "cpu":
            if t.device.type != "cpu":
                raise TypeError(f"tl.torch: a {t.device} tensor among CPU tensors")
            return numpy_view(t)
        return self._stand_in(t)

    def host(self, t):
        """`t`'s values on the host, for arguments the host function reads (class ids): a
        view on CPU, a copy of a CUDA tensor."""
        return numpy_view(t.detach().cpu())

    def zeros(self, shape, npdt):
        return self.empty(shape, npdt, torch.zeros)

    def full(self, shape, value, npdt):
        return self.empty(shape, npdt, lambda s, **kw: torch.full(s, value, **kw))

    def empty(self, shape, npdt, make=torch.empty):
        shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(n) for n in shape)
        t = make(shape, dtype=torch_dtype(npdt), device=self.device)
        if self.mode == "cpu":
            a = numpy_view(t)
            self.spans.append((a.ctypes.data, max(a.nbytes, 1), t))
            return a
        return self._stand_in(t)

    def _stand_in(self, t):
        it = t.element_size()
        span = _span(t.shape, t.stride(), it)
        buf = np.empty(max(span, it), np.uint8)  # untouched pages: no memory until read
        if self.mode == "emulate":
            buf.fill(0xFF)  # NaN in every float format: a value read here shows
        a = np.ndarray(tuple(t.shape), np_dtype(t.dtype), buffer=buf,
                       strides=tuple(s * it for s in t.stride()))
        self.spans.append((buf.ctypes.data, buf.nbytes, t))
        return a

    def _find(self, a):
        if not isinstance(a, np.ndarray) or not self.spans:
            return None
        addr = a.ctypes.data
        for base, n, t in reversed(self.spans):
            if base <= addr < base + n:
                return base, t
        return None

    def _view(self, a, base, t):
        """The view of `t` that stand-in view `a` describes."""
        it = t.element_size()
        off, rem = divmod(a.ctypes.data - base, it)
        if rem or a.itemsize != it or any(s < 0 or s % it for s in a.strides):
            raise TypeError(f"tl.torch: a view of shape {a.shape}, strides {a.strides} does not "
                            f"map onto a {t.dtype} tensor (internal error)")
        return t.as_strided(a.shape, tuple(s // it for s in a.strides),
                            t.storage_offset() + off)

    def arg(self, a):
        """A launch argument: stand-ins as the tensors' views (numpy views of them when
        emulating); everything else as it is."""
        if self.mode == "cpu":
            return a
        hit = self._find(a)
        if hit is None:
            return a
        v = self._view(a, *hit)
        return numpy_view(v) if self.mode == "emulate" else v

    def cast(self, a, npdt):
        """Stand-in `a` rounded to `npdt` by torch on the device (to nearest even, as the host
        functions' numpy and tl.bf16 casts), as a new output's stand-in."""
        hit = self._find(a)
        if hit is None:
            raise TypeError("tl.torch: a cast of an array that is not a stand-in (internal error)")
        return self._stand_in(self._view(a, *hit).to(torch_dtype(npdt)))

    def result(self, out):
        """The host function's result as tensors on the op's device: the outputs it allocated
        through `empty` are torch's own tensors (a view of one where the host function returned
        a view); its own host arrays and numbers are copied to the device."""
        if isinstance(out, tuple):
            return tuple(self.result(o) for o in out)
        if isinstance(out, torch.Tensor):
            return out
        hit = self._find(out) if isinstance(out, np.ndarray) else None
        if hit is not None:
            base, t = hit
            if self.mode == "cpu":
                if out.ctypes.data == base and out.shape == tuple(t.shape):
                    return t
                return tensor_view(out).contiguous()
            v = self._view(out, base, t)
            return t if v.shape == t.shape and v.stride() == t.stride() else v.contiguous()
        return tensor_view(np.asarray(out)).contiguous().to(self.device)
