# Zero-copy arguments: numpy arrays launched in place on the cpu device (no HAL copies), the
# fallbacks that must copy, and how GPU tensors (DLPack / __cuda_array_interface__) are read.
# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

import tl
import tl.runtime
from tl.devtensor import device_tensor
from tl.errors import TLRuntimeError


@tl.kernel
def scale(x: tl.tensor, y: tl.tensor, s: tl.float32, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK
    tl.store(y + (i,), tl.load(x + (i,), (BLOCK,)) * s)


def cpu():
    return tl.runtime.device("cpu")


def test_numpy_arrays_run_in_place_on_cpu():
    x = np.arange(128, dtype=np.float32)
    y = np.zeros(128, np.float32)
    scale[(4,)](x, y, 3.0, BLOCK=32, device="cpu")
    np.testing.assert_array_equal(y, x * 3)
    assert cpu().copied_bytes == 0  # imported, not copied in or back


def test_strided_views_run_in_place():
    x = np.arange(256, dtype=np.float32)[::2]
    y = np.zeros(256, np.float32)[1::2]
    scale[(1,)](x, y, 2.0, BLOCK=128, device="cpu")
    np.testing.assert_array_equal(y, x * 2)
    assert cpu().copied_bytes == 0


def test_zero_copy_off_copies_in_and_back(monkeypatch):
    monkeypatch.setattr(tl.runtime, "ZERO_COPY", False)
    x = np.arange(128, dtype=np.float32)
    y = np.zeros(128, np.float32)
    scale[(4,)](x, y, 3.0, BLOCK=32, device="cpu")
    np.testing.assert_array_equal(y, x * 3)
    assert cpu().copied_bytes == 3 * 128 * 4  # x in, y in, y back


def test_misaligned_arrays_are_copied():
    raw = np.arange(129 * 4, dtype=np.uint8)
    x = np.frombuffer(raw.tobytes(), dtype=np.float32, count=128, offset=1)  # 1-byte aligned
    assert x.ctypes.data % 4 != 0
    y = np.zeros(128, np.float32)
    scale[(4,)](x, y, 1.0, BLOCK=32, device="cpu")
    np.testing.assert_array_equal(y, x)
    assert cpu().copied_bytes == 128 * 4  # x in only: y ran in place


class FakeCudaDLPack:
    """A host array that claims to live on CUDA device 0 (to read its DLPack capsule)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kw):
        return self._a.__dlpack__()

    def __dlpack_device__(self):
        return (2, 0)


def test_dlpack_cuda_tensors_are_read_without_copy():
    base = np.zeros((8, 10), np.float32)
    view = base[1:7:2, 2:8]  # shape (3, 6), strides (20, 1) elements
    t = device_tensor(FakeCudaDLPack(view))
    assert t.ptr == view.ctypes.data
    assert t.shape == (3, 6) and t.strides == (20, 1)
    assert t.dtype is tl.float32 and t.device_id == 0
    assert t.nbytes == ((3 - 1) * 20 + (6 - 1) + 1) * 4
    assert device_tensor(np.zeros(3)) is None


class FakeCai:
    __cuda_array_interface__ = {"shape": (4, 3), "typestr": "<i2", "data": (4096, False),
                                "strides": (12, 2), "version": 3}


def test_cuda_array_interface_is_read():
    t = device_tensor(FakeCai())
    assert (t.ptr, t.shape, t.strides, t.dtype) == (4096, (4, 3), (6, 1), tl.int16)
    assert t.nbytes == (3 * 6 + 2 + 1) * 2


class FakeCai1D:
    __cuda_array_interface__ = {"shape": (16,), "typestr": "<i2", "data": (4096, False),
                                "strides": None, "version": 3}


def test_cuda_tensors_need_a_cuda_device():
    y = np.zeros(16, np.int16)
    with pytest.raises(TypeError, match="is a CUDA tensor but the device is 'cpu'"):
        scale_i16[(1,)](FakeCai1D(), y, BLOCK=4, device="cpu")
    # Without a device, a CUDA tensor picks cuda, which this build's machine may lack.
    if "cuda" not in tl.devices():
        with pytest.raises(TLRuntimeError, match="device 'cuda'"):
            scale_i16[(1,)](FakeCai1D(), y, BLOCK=4)


@tl.kernel
def scale_i16(x: tl.tensor, y: tl.tensor, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK
    tl.store(y + (i,), tl.load(x + (i,), (BLOCK,)))


def test_torch_cuda_tensors_in_place():
    """On a GPU machine: torch tensors in and out, no copies, on torch's current stream."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or "cuda" not in tl.devices():
        pytest.skip("no CUDA device")
    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    y = torch.zeros(1000, dtype=torch.float32, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # TL must follow torch's current stream, not the default
        scale[(32,)](x, y, 3.0, BLOCK=32)
        z = y * 1  # queued after TL's kernel on the same stream
    torch.cuda.synchronize()
    assert torch.equal(z, x * 3)
    assert tl.runtime.device("cuda:0").copied_bytes == 0


def _torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or "cuda" not in tl.devices():
        pytest.skip("no CUDA device")
    return torch


def test_torch_launch_is_ordered_without_a_sync():
    """A chain of TL launches on torch tensors, then torch ops on the result, no explicit sync:
    correct only if TL runs on torch's current stream (a launch on another stream races)."""
    torch = _torch_cuda()
    n = 1 << 24
    x = torch.rand(n, device="cuda") + 1.0
    y = torch.empty_like(x)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        for _ in range(3):
            y.fill_(-1.0)  # poison: a TL kernel not ordered after it leaves -1s or a mix
            scale[(n // 1024,)](x, y, 2.0, BLOCK=1024)
            scale[(n // 1024,)](y, y, 1.5, BLOCK=1024)
        total = (y - x * 3.0).abs().max().item()  # .item() waits for `side` only
    assert total == 0.0


def test_torch_launch_does_not_wait_for_the_gpu():
    """The launch returns while the GPU is still busy with earlier torch work (it used to
    synchronize: ~140 us per launch)."""
    torch = _torch_cuda()
    x = torch.ones(1024, device="cuda")
    y = torch.zeros_like(x)
    scale[(1,)](x, y, 2.0, BLOCK=1024)  # compiled and loaded
    torch.cuda.synchronize()
    torch.cuda._sleep(200_000_000)  # ~0.1 s of spinning on the current stream
    scale[(1,)](x, y, 2.0, BLOCK=1024)
    done = torch.cuda.Event()
    done.record()
    assert not done.query(), "the TL launch waited for the stream"
    torch.cuda.synchronize()
    assert torch.equal(y, x * 2)


@tl.kernel
def check_positive(x: tl.tensor, BLOCK: tl.constexpr):
    tl.device_assert(tl.load(x + (0,), (BLOCK,)) > 0, "x must be positive")


def test_torch_launch_assert_reported_at_synchronize():
    torch = _torch_cuda()
    x = -torch.ones(64, device="cuda")
    check_positive[(1,)](x, BLOCK=64)
    with pytest.raises(TLRuntimeError, match="x must be positive"):
        tl.synchronize()
    tl.synchronize()  # reported once; the stream goes on
    check_positive[(1,)](x.abs(), BLOCK=64)
    tl.synchronize()
