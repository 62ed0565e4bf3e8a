# The fast launch path (tl/fastlaunch.py): taken for a repeated signature, same results and errors
# as the full path, and the full path for every call that differs from the plans.
# SPDX-License-Identifier: Apache-2.0
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tl
import tl.fastlaunch
import tl.runtime
from util import DEVICES


def _kernel():
    # A fresh kernel per test: its plans and launch counts start empty.
    @tl.kernel
    def axpy(x: tl.tensor, y: tl.tensor, a: tl.float32, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK
        m = tl.arange(0, BLOCK) + i < n
        tl.store(y + (i,), tl.load(x + (i,), (BLOCK,)) * a + n + tl.load(y + (i,), (BLOCK,)))
        tl.device_assert(m | (n >= 0), "n must not be negative")
    return axpy


def _launches(k, dt=np.float32, device="cpu"):
    """A sequence of launches of `k` and their outputs (fresh arrays each time)."""
    outs = []
    big = 2**31 + 5 if device == "cpu" else 9  # an i64 scalar (tnpu has no i64 tiles)
    for step, (a, n, block) in enumerate([(2.0, 3, 32), (0.5, 7, 32), (-1.0, big, 32),
                                          (3.0, 1, 64), (3.0, 1, 64)]):
        x = np.arange(128, dtype=dt) + step
        y = np.full(128, step, dt)
        k[(128 // block,)](x, y, a, n, BLOCK=block, device=device)
        outs.append(y)
    return outs


def test_repeated_launch_takes_the_fast_path():
    k = _kernel()
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    k[(2,)](x, y, 2.0, 1, BLOCK=32)
    assert k.launch_counts == {"full": 1, "fast": 0}
    k[(2,)](x, y, 3.0, 2, BLOCK=32)  # new values, same signature
    assert k.launch_counts == {"full": 1, "fast": 1}
    np.testing.assert_array_equal(y, (x * 2 + 1) + x * 3 + 2)
    assert tl.runtime.device("cpu").copied_bytes == 0


@pytest.mark.parametrize("device", [d for d in ("cpu", "npusim") if d in DEVICES])
def test_fast_and_full_paths_agree(monkeypatch, device):
    fast = _kernel()
    got = _launches(fast, device=device)
    monkeypatch.setattr(tl.fastlaunch, "ENABLED", False)
    full = _kernel()
    ref = _launches(full, device=device)
    assert full.launch_counts["fast"] == 0
    for g, r in zip(got, ref):
        np.testing.assert_array_equal(g, r)
    # The i64 n and the BLOCK change each take the full path once; the cpu device launches its
    # arrays in place, so the repeats are fast there. npusim copies arrays: no plans.
    expected_fast = 2 if device == "cpu" else 0
    assert fast.launch_counts == {"full": 5 - expected_fast, "fast": expected_fast}


def test_signature_changes_fall_back_and_compile():
    k = _kernel()
    for dt in (np.float32, np.float16, np.float32, np.float16):
        x, y = np.arange(64, dtype=dt), np.zeros(64, dt)
        k[(2,)](x, y, 2.0, 1, BLOCK=32)
        np.testing.assert_array_equal(y, (x * 2 + 1).astype(dt))
    # f32 then f16 compile; their plans are both kept, so the repeats are fast
    assert k.launch_counts == {"full": 2, "fast": 2} and len(k.cache) == 2
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    calls = [
        lambda: k[(2,)](x, y, 2.0, 1.5, BLOCK=32),  # n: float instead of int
        lambda: k[(2,)](x, y, 2, 1, BLOCK=32),  # a: int given to a float annotation
        lambda: k[(1,)](x, y, 2.0, 1, BLOCK=64),  # constexpr value
        lambda: k[(2,)](x, y, 2.0, True, BLOCK=32),  # bool is not int
        lambda: k[(2,)](x, y, 2.0, np.int32(1), BLOCK=32),  # numpy scalar type
        lambda: k[(2,)](x[::2].copy(), y[:32], 2.0, 1, BLOCK=32),  # same: fast (new arrays)
        lambda: k[(2,)](x.reshape(8, 8)[0], y, 2.0, 1, BLOCK=32),  # a view: fast too
        lambda: k[(2,)](x, y, a=2.0, n=1, BLOCK=32),  # keywords instead of positions
        lambda: k[(2,)](x, y, 2.0, 1, BLOCK=32, device="cpu"),  # device= given
        lambda: k[lambda m: (2,)](x, y, 2.0, 1, BLOCK=32),  # a callable grid
    ]
    paths = []
    for call in calls:
        k[(2,)](x, y, 2.0, 1, BLOCK=32)  # the base signature's plan first (fast or new)
        before = dict(k.launch_counts)
        call()
        paths.append("fast" if k.launch_counts["fast"] > before["fast"] else "full")
    assert paths == ["full", "full", "full", "full", "full", "fast", "fast", "full", "full",
                     "full"]


def test_arrays_that_must_be_copied_take_the_full_path(monkeypatch):
    k = _kernel()
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    k[(2,)](x, y, 1.0, 0, BLOCK=32)
    raw = np.zeros(64 * 4 + 1, np.uint8)
    xm = np.frombuffer(raw.data, np.float32, 64, offset=1)  # misaligned: copied
    k[(2,)](xm, y, 1.0, 0, BLOCK=32)
    assert k.launch_counts == {"full": 2, "fast": 0}
    assert tl.runtime.device("cpu").copied_bytes == 64 * 4
    monkeypatch.setattr(tl.runtime, "ZERO_COPY", False)  # TL_ZERO_COPY=0 copies every array
    k[(2,)](x, y, 1.0, 0, BLOCK=32)
    assert k.launch_counts == {"full": 3, "fast": 0}
    assert tl.runtime.device("cpu").copied_bytes == 3 * 64 * 4


def test_errors_are_the_full_paths():
    k = _kernel()
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    k[(2,)](x, y, 1.0, 0, BLOCK=32)
    messages = []
    for fast in (True, False):
        tl.fastlaunch.ENABLED = fast
        try:
            for bad in [lambda: k[(2,)](x, y, 1.0, BLOCK=32),  # missing n
                        lambda: k[(2,)](x, y, 1.0, 0, 5, BLOCK=32),  # one too many
                        lambda: k[(2,)](x, "y", 1.0, 0, BLOCK=32),  # not a tensor
                        lambda: k[(2,)](x, y, 1.0, 0, BLOCK=32, device="nodev"),
                        lambda: k[(2,)](x, y, 1.0, -1, BLOCK=32)]:  # device assert fails
                with pytest.raises(Exception) as e:
                    bad()
                messages.append((type(e.value), str(e.value)))
        finally:
            tl.fastlaunch.ENABLED = True
    half = len(messages) // 2
    assert messages[:half] == messages[half:]
    assert "n must not be negative" in messages[half - 1][1]


def test_device_assert_on_the_fast_path_raises():
    k = _kernel()
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    k[(2,)](x, y, 1.0, 0, BLOCK=32)
    with pytest.raises(tl.TLRuntimeError, match="n must not be negative"):
        k[(2,)](x, y, 1.0, -3, BLOCK=32)
    assert k.launch_counts == {"full": 1, "fast": 1}  # the failing launch was a fast one
    k[(2,)](x, y, 1.0, 0, BLOCK=32)  # and the device recovers
    assert k.launch_counts == {"full": 1, "fast": 2}


def test_a_busy_plan_leaves_the_call_to_the_full_path():
    k = _kernel()
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    k[(2,)](x, y, 1.0, 0, BLOCK=32)
    (plan,) = k._plans
    with plan.lock:  # another thread is launching with it
        k[(2,)](x, y, 1.0, 0, BLOCK=32)
    assert k.launch_counts == {"full": 2, "fast": 0}


def test_profiling_and_timed_launches_take_the_full_path():
    k = tl.profile(_kernel())
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    for _ in range(3):
        k[(2,)](x, y, 1.0, 0, BLOCK=32)
    assert k.launch_counts == {"full": 3, "fast": 0} and len(k.timings["cpu"]) == 3


def test_debug_log_names_fast_launches(tmp_path):
    script = tmp_path / "k.py"
    script.write_text(
        "import numpy as np, tl\n"
        "@tl.kernel\n"
        "def nop(x: tl.tensor): pass\n"
        "for _ in range(3): nop[(2,)](np.zeros(2, np.int32))\n"
        "assert nop.launch_counts == {'full': 1, 'fast': 2}, nop.launch_counts\n")
    path = [str(pathlib.Path(tl.__file__).parents[1])] + sys.path
    env = dict(os.environ, TL_DEBUG="1", PYTHONPATH=os.pathsep.join(path))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("tl: launched nop grid=(2,) on cpu") == 3


def _torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or "cuda" not in tl.devices():
        pytest.skip("no CUDA device")
    return torch


def test_cuda_torch_launches_take_the_fast_path():
    torch = _torch_cuda()
    k = _kernel()
    x = torch.arange(128, dtype=torch.float32, device="cuda")
    ys = [torch.full((128,), float(i), device="cuda") for i in range(3)]
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # plans follow torch's current stream too
        for i, y in enumerate(ys):
            k[(4,)](x, y, 2.0, i, BLOCK=32)
    side.synchronize()
    assert k.launch_counts == {"full": 1, "fast": 2}
    for i, y in enumerate(ys):
        assert torch.equal(y, x * 2 + i + i)
    # f16 falls back and compiles, then f32 is fast again; 2-D views are another rank
    xh, yh = x.half(), torch.zeros(128, dtype=torch.float16, device="cuda")
    k[(4,)](xh, yh, 2.0, 1, BLOCK=32)
    k[(4,)](x, ys[0], 2.0, 0, BLOCK=32)
    torch.cuda.synchronize()
    assert k.launch_counts == {"full": 2, "fast": 3}
    assert torch.equal(yh, (xh * 2 + 1))
    assert tl.runtime.device("cuda:0").copied_bytes == 0


def test_cuda_fast_path_errors_match():
    torch = _torch_cuda()
    k = _kernel()
    x, y = torch.ones(64, device="cuda"), torch.zeros(64, device="cuda")
    k[(2,)](x, y, 1.0, 0, BLOCK=32)
    messages = []
    for fast in (True, False):
        tl.fastlaunch.ENABLED = fast
        try:
            for bad in [lambda: k[(2,)](x, y, 1.0, 0, BLOCK=32, device="cpu"),  # wrong device
                        lambda: k[(2,)](x, y.tolist(), 1.0, 0, BLOCK=32),  # not a tensor
                        lambda: k[(2,)](x, y, 1.0, BLOCK=32)]:  # n missing
                with pytest.raises(Exception) as e:
                    bad()
                messages.append((type(e.value), str(e.value)))
        finally:
            tl.fastlaunch.ENABLED = True
    assert messages[:3] == messages[3:]
    assert "argument 'y'" in messages[1][1]
    k[(2,)](x, y, 1.0, 0, BLOCK=32)
    torch.cuda.synchronize()
    assert k.launch_counts["fast"] == 1


def test_docstring_example():
    import doctest
    r = doctest.testmod(tl.fastlaunch)
    assert r.attempted > 0 and r.failed == 0


class _FakeTorchTensor:
    """Stands in for a torch CUDA tensor (the methods a plan reads), to test the torch branch of
    a plan where no GPU is."""
    __module__ = "torch"

    def __init__(self, ptr, shape, strides, gpu=0, dtype="f32"):
        self.ptr, self.shape, self.strides, self.gpu, self.dtype = ptr, shape, strides, gpu, dtype

    def get_device(self):
        return self.gpu

    def stride(self):
        return self.strides

    def data_ptr(self):
        return self.ptr

    def element_size(self):
        return 4


class _FakeCudaDevice:
    """The Device attributes a plan uses, recording imports."""

    def __init__(self):
        from tl._ffi import ffi
        self.ffi = ffi
        self.imports, self.imported = tl.runtime.collections.OrderedDict(), []
        self.stream, self.native_streams = ffi.cast("tl_stream", 1), {}
        self.copied_bytes = None

    def native_stream(self, s):
        return self.native_streams.setdefault(s, self.ffi.cast("tl_stream", 100 + s))

    def _import_device_tensor(self, t, what):
        self.imported.append((t.ptr, t.nbytes, what))
        buf = self.ffi.cast("tl_buffer", 1000 + len(self.imported))
        self.imports[(t.ptr, max(t.nbytes, 1))] = buf
        return buf


def test_torch_branch_of_a_plan(monkeypatch):
    import types
    from tl._ffi import ffi
    torch = types.ModuleType("torch")
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda i: 7 + i)
    monkeypatch.setitem(sys.modules, "torch", torch)
    dev, launched = _FakeCudaDevice(), []

    class Lib:
        @staticmethod
        def tl_stream_launch(stream, exe, desc):
            a = desc.args[0]
            launched.append((int(ffi.cast("intptr_t", stream)), tuple(desc.grid),
                             list(a.shape[0:a.rank]), list(a.strides[0:a.rank]),
                             int(ffi.cast("intptr_t", a.buffer))))
            return ffi.NULL

        @staticmethod
        def tl_stream_synchronize(stream):
            raise AssertionError("a launch on torch tensors must not synchronize")

    x = _FakeTorchTensor(4096, (4, 8), (8, 1))
    launch = [["devtensor", types.SimpleNamespace(ndim=2, device_id=0), tl.float32.code, x]]
    slots = [(tl.fastlaunch._TORCH, 0, _FakeTorchTensor, "f32", (2, 0), 0)]
    plan = tl.fastlaunch.Plan(1, frozenset(), (), None, None, slots, launch, dev, ffi.NULL)
    plan.lib = Lib
    assert plan.launch((3, 2), (x,), {}, None, None)
    assert dev.imported == [(4096, 4 * 8 * 4, "argument 0")]
    assert launched[-1] == (107, (3, 2, 1), [4, 8], [8, 1], 1001)  # torch's stream, not dev's
    assert plan.launch((3, 2), (x,), {}, None, None)  # the cached import, same fields
    assert len(dev.imported) == 1 and launched[-1] == launched[-2]
    y = _FakeTorchTensor(8192, (4, 3), (16, 2))  # another shape and strides, same rank
    assert plan.launch((1,), (y,), {}, None, None)
    assert dev.imported[-1] == (8192, ((4 - 1) * 16 + (3 - 1) * 2 + 1) * 4, "argument 0")
    assert launched[-1] == (107, (1, 1, 1), [4, 3], [16, 2], 1002)
    assert plan.launch((3, 2), (x,), {}, None, None)  # back to x: its fields are written again
    assert launched[-1] == launched[0] and len(dev.imported) == 2
    z = _FakeTorchTensor(4096, (0, 8), (8, 1))  # empty: span 0, imported as 1 byte
    assert plan.launch((1,), (z,), {}, None, None)
    assert dev.imported[-1] == (4096, 0, "argument 0")
    n = len(launched)
    for other in (_FakeTorchTensor(4096, (4, 8), (8, 1), dtype="f16"),
                  _FakeTorchTensor(4096, (4, 8), (8, 1), gpu=1),
                  _FakeTorchTensor(4096, (32,), (1,))):
        assert not plan.launch((1,), (other,), {}, None, None)  # the full path's call
    assert len(launched) == n


def _need_c_launcher():
    """Skips only where the build could not make _tl_launch (no Python 3.11+ headers for this
    interpreter); with the headers there, a missing or unloadable extension fails."""
    import os
    import sys
    import sysconfig
    headers = os.path.join(sysconfig.get_paths()["include"], "Python.h")
    if tl.fastlaunch.C is None:
        if sys.version_info >= (3, 11) and os.path.exists(headers):
            pytest.fail(f"_tl_launch is not built or does not load, though {headers} is there")
        pytest.skip("_tl_launch is not built (no Python 3.11+ headers)")


def test_c_launcher_hot_case(monkeypatch):
    """The C launcher (python/ext/tl_launch.c) launches only what the Python plan launched last
    (same grid, shapes, strides, cached imports and stream) and leaves every other call to it."""
    import types
    from tl._ffi import ffi
    _need_c_launcher()
    torch = types.ModuleType("torch")
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda i: 7 + i)
    monkeypatch.setitem(sys.modules, "torch", torch)
    real = tl.runtime.hal()
    launched, fail, busy_at_launch = [], [], []

    def on_launch(stream, exe, desc):
        busy_at_launch.append(plan.busy)
        a, s, c = desc.args[0], desc.args[1], desc.args[2]
        launched.append((int(ffi.cast("intptr_t", stream)), tuple(desc.grid),
                         list(a.shape[0:a.rank]), int(ffi.cast("intptr_t", a.buffer)), s.f, c.i))
        # an error status, made by the real HAL, when the test asks for one
        return real.tl_stream_synchronize(ffi.NULL) if fail else ffi.NULL

    callback = ffi.callback("tl_status(tl_stream, tl_executable, const tl_launch_desc *)",
                            on_launch)
    monkeypatch.setattr(tl.fastlaunch, "hal", lambda: types.SimpleNamespace(
        tl_stream_launch=callback))
    monkeypatch.setattr(tl.fastlaunch, "USE_C", True)
    dev = _FakeCudaDevice()
    x = _FakeTorchTensor(4096, (4, 8), (8, 1))
    launch = [["devtensor", types.SimpleNamespace(ndim=2, device_id=0), tl.float32.code, x],
              ["scalar", tl.float32.code, 0.0], ["scalar", tl.int32.code, 0]]
    slots = [(tl.fastlaunch._TORCH, 0, _FakeTorchTensor, "f32", (2, 0), 0),
             (tl.fastlaunch._SCALAR, 1, float, None, True, 1),
             (tl.fastlaunch._SCALAR, 2, int, True, False, 2),
             (tl.fastlaunch._CONST, 3, int, 16, None, None)]
    plan = tl.fastlaunch.Plan(4, frozenset(), (), None, None, slots, launch, dev, ffi.NULL)
    assert plan.c_state is not None
    C = tl.fastlaunch.C

    def c_launch(*args, grid=(3, 2)):
        return C.launch(plan.c_state, grid, args, {}, None, None)

    assert c_launch(x, 1.5, 7, 16) is None  # no grid kept yet: the Python plan's call
    assert plan.launch((3, 2), (x, 1.5, 7, 16), {}, None, None) and len(launched) == 1
    assert c_launch(x, 2.5, 9, 16) is True
    assert launched[-1] == (107, (3, 2, 1), [4, 8], 1001, 2.5, 9)
    assert not plan.lock.locked() and not plan.busy
    # The Python plan is marked busy while it launches (what keeps the C launcher off its
    # arrays while its cffi calls release the GIL); the C launcher needs no mark.
    assert busy_at_launch == [True, False]
    y = _FakeTorchTensor(8192, (2, 8), (8, 1))
    nothing = [c_launch(y, 1.0, 1, 16),  # new shape and address
               c_launch(_FakeTorchTensor(4096, (8, 4), (4, 1)), 1.0, 1, 16),  # same bytes,
               c_launch(_FakeTorchTensor(4096, (3, 16), (8, 1)), 1.0, 1, 16),  # same span
               c_launch(x, 1.0, 1, 16, grid=(1,)),  # another grid
               c_launch(x, 1.0, 2**31, 16),  # n in another integer class
               c_launch(x, 1.0, 1, 32),  # another constexpr
               c_launch(x, 1, 1, 16),  # an int for the float
               c_launch(_FakeTorchTensor(4096, (4, 8), (8, 1), dtype="f16"), 1.0, 1, 16),
               c_launch(_FakeTorchTensor(4096, (4, 8), (8, 1), gpu=1), 1.0, 1, 16),
               C.launch(plan.c_state, (3, 2), (x, 1.0, 1), {"BLOCK": 16}, None, None),
               C.launch(plan.c_state, (3, 2), (x, 1.0, 1, 16), {}, "cuda:0", None)]
    assert nothing == [None] * len(nothing) and len(launched) == 2
    assert plan.launch((3, 2), (y, 1.0, 1, 16), {}, None, None)  # the Python plan imports y
    assert c_launch(y, 3.0, 4, 16) is True
    assert launched[-1] == (107, (3, 2, 1), [2, 8], 1002, 3.0, 4)
    del dev.imports[(8192, 2 * 8 * 4)]  # evicted (and released) by the device: never used again
    assert c_launch(y, 3.0, 4, 16) is None
    plan.busy = True  # a Python plan launching in another thread
    assert c_launch(x, 1.0, 1, 16) is None
    plan.busy = False
    assert plan.launch((3, 2), (y, 3.0, 4, 16), {}, None, None)  # imported again
    assert launched[-1][3] == 1003 and c_launch(y, 3.0, 4, 16) is True
    fail.append(1)  # a failed launch raises the HAL's error, as the Python plan does
    with pytest.raises(tl.TLRuntimeError, match="tl_stream_launch: ") as e:
        c_launch(y, 3.0, 4, 16)
    with pytest.raises(tl.TLRuntimeError) as e2:
        plan.launch((3, 2), (y, 3.0, 4, 16), {}, None, None)
    assert str(e.value) == str(e2.value) and not plan.lock.locked() and not plan.busy


def _one_tensor_plan(monkeypatch, on_launch):
    """A plan of one 1-D fake torch tensor whose tl_stream_launch is `on_launch` (a C callback),
    the C launcher on; torch must be faked first. Returns (tensor, plan)."""
    import types
    from tl._ffi import ffi
    callback = ffi.callback("tl_status(tl_stream, tl_executable, const tl_launch_desc *)",
                            on_launch)
    monkeypatch.setattr(tl.fastlaunch, "hal", lambda: types.SimpleNamespace(
        tl_stream_launch=callback))
    monkeypatch.setattr(tl.fastlaunch, "USE_C", True)
    x = _FakeTorchTensor(4096, (4,), (1,))
    launch = [["devtensor", types.SimpleNamespace(ndim=1, device_id=0), tl.float32.code, x]]
    slots = [(tl.fastlaunch._TORCH, 0, _FakeTorchTensor, "f32", (1, 0), 0)]
    return x, tl.fastlaunch.Plan(1, frozenset(), (), None, None, slots, launch,
                                 _FakeCudaDevice(), ffi.NULL)


def test_c_launcher_needs_torchs_own_stream_query(monkeypatch):
    """Without torch._C._cuda_getCurrentRawStream the stream comes from Python code, which
    could let another thread run inside the C launcher: such a plan stays in Python."""
    import types
    from tl._ffi import ffi
    _need_c_launcher()
    plans = []
    for raw in ({"_cuda_getCurrentRawStream": lambda i: 0}, {}):
        torch = types.ModuleType("torch")
        torch._C = types.SimpleNamespace(**raw)
        monkeypatch.setitem(sys.modules, "torch", torch)
        plans.append(_one_tensor_plan(monkeypatch, lambda s, e, d: ffi.NULL)[1])
    assert plans[0].c_state is not None and plans[1].c_state is None


def test_c_launcher_through_kernel_launches(monkeypatch):
    """kernel[grid](...) with the C launcher on (the default) takes it for the hot case and the
    Python plan for the rest, counting both as fast launches."""
    import types
    from tl._ffi import ffi
    _need_c_launcher()
    torch = types.ModuleType("torch")
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda i: 0)
    monkeypatch.setitem(sys.modules, "torch", torch)
    grids = []
    x, plan = _one_tensor_plan(monkeypatch,
                               lambda s, e, d: grids.append(tuple(d.grid)) or ffi.NULL)
    k = _kernel()
    k._plans = [plan]
    calls = []
    monkeypatch.setattr(plan, "launch", lambda *a: calls.append(a) or tl.fastlaunch.Plan.launch(
        plan, *a))
    for g in [(2,), (2,), (2,), (3,)]:
        k[g](x)
    assert grids == [(2, 1, 1)] * 3 + [(3, 1, 1)]
    assert k.launch_counts == {"full": 0, "fast": 4}
    assert len(calls) == 2  # the first launch and the new grid: the Python plan; else C


def test_kernel_grid_is_the_c_launcher(monkeypatch):
    """kernel[grid] is the C launcher object while it is on: the most recent plan's hot case
    launches with no Python frame, a failed launch raises the HAL's error and is counted, and
    device= (or the C launcher off) takes Kernel.run. Fails if any of them goes another way."""
    import functools
    import types
    from tl._ffi import ffi, hal
    _need_c_launcher()
    torch = types.ModuleType("torch")
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda i: 0)
    monkeypatch.setitem(sys.modules, "torch", torch)
    real, fail, grids = hal(), [], []

    def on_launch(s, e, d):
        grids.append(tuple(d.grid))
        return real.tl_stream_synchronize(ffi.NULL) if fail else ffi.NULL

    x, plan = _one_tensor_plan(monkeypatch, on_launch)
    k = _kernel()
    k._plans = [plan]
    assert type(k[(2,)]).__name__ == "Launcher"
    runs = []
    run = k.run
    monkeypatch.setattr(k, "run", lambda *a, **kw: runs.append(a[0]) or run(*a, **kw))
    k[(2,)](x)  # plan.grid is unset: Kernel.run, whose Python plan writes it
    k[(2,)](x)  # the hot case, in C
    assert grids == [(2, 1, 1)] * 2 and runs == [(2,)]
    fail.append(1)
    with pytest.raises(tl.TLRuntimeError, match="tl_stream_launch: "):
        k[(2,)](x)
    assert runs == [(2,)] and k.launch_counts == {"full": 0, "fast": 3}
    fail.clear()
    with pytest.raises(TypeError, match="'y'"):  # device= is Kernel.run's: its binding error
        k[(2,)](x, device="nonesuch")
    assert runs == [(2,), (2,)]
    monkeypatch.setattr(tl.fastlaunch, "USE_C", False)
    assert isinstance(k[(2,)], functools.partial)
