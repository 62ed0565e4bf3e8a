# Launching: DLPack inputs, strided arrays, specialization and caches, profile, autotune,
# print/assert, TL_DEBUG, and the docstring examples.
# SPDX-License-Identifier: Apache-2.0
import doctest
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tl
import tl.ir
import tl.jit
import tl.language
import tl.ops.generate
import tl.ops.reference
import tl.runtime


@tl.kernel
def scale(x: tl.tensor, y: tl.tensor, s: tl.float32, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK
    tl.store(y + (i,), tl.load(x + (i,), (BLOCK,)) * s)


class DLPackOnly:
    """A tensor that offers only the DLPack protocol (as a PyTorch CPU tensor does)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kw):
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_dlpack_tensors():
    x = np.arange(100, dtype=np.float32)
    y = np.zeros(100, np.float32)
    scale[(4,)](DLPackOnly(x), DLPackOnly(y), 3.0, BLOCK=32)
    np.testing.assert_array_equal(y, x * 3)  # written through the DLPack view, no copy


def test_strided_arrays():
    x = np.arange(200, dtype=np.float32)[::2]
    y = np.zeros(200, np.float32)[1::2]
    scale[(1,)](x, y, 2.0, BLOCK=128)
    np.testing.assert_array_equal(y, x * 2)


def test_dimensions_past_int32_are_refused():
    # Kernels index in int32 (pid * BLOCK): along 2**31 + 5 elements the offsets past 2**31
    # wrap, and a 1-D relu read the array's start for its end (every element from 2**31 on
    # wrong, measured on a 4 GB bf16 array). Catches: such an argument launched. A stride-0
    # view, so no memory: the full launch path, then the fast path (the plan cached by the
    # first, small launch), a numpy array and a torch tensor.
    k = tl.kernel(scale.fn)
    small = np.ones(64, np.float32)
    huge = np.broadcast_to(np.float32(1), (2**31 + 5,))
    out = np.zeros(64, np.float32)
    msg = (r"tl: argument 'x' of scale has 2147483653 elements along dimension 0: kernels "
           r"index in int32")
    with pytest.raises(ValueError, match=msg):
        k[(1,)](huge, out, 1.0, BLOCK=64)
    k[(1,)](small, out, 2.0, BLOCK=64)
    with pytest.raises(ValueError, match=msg):
        k[(1,)](huge, out, 1.0, BLOCK=64)
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match=msg):
        k[(1,)](torch.ones(1).expand(2**31 + 5), torch.zeros(64), 1.0, BLOCK=64)
    assert (out == 2).all()


def test_arrays_in_the_other_byte_order_are_refused():
    # Catches: a big-endian array's bytes read as little-endian (tl.ops.sum of '>f4' 0..7 gave
    # -1.0079 before, not 28).
    x = np.arange(64, dtype=">f4")
    with pytest.raises(TypeError, match=r"tl: numpy dtype >f4 is not in the machine's byte "
                                        r"order; pass x.astype"):
        scale[(1,)](x, np.zeros(64, np.float32), 1.0, BLOCK=64)
    assert float(tl.ops.sum(x)) == 2016  # tl.ops takes such inputs as a native copy
    assert float(tl.ops.relu(np.float32(-3))) == 0  # and numpy scalars as 0-d arrays


def test_specialization_and_caches():
    k = tl.kernel(scale.fn)
    x = np.ones(64, np.float32)
    k[(1,)](x, x.copy(), 1.0, BLOCK=64)
    k[(2,)](x, x.copy(), 2.0, BLOCK=32)
    k[(1,)](x.astype(np.float64), x.astype(np.float64), 1.0, BLOCK=64)
    k[(1,)](x, x.copy(), 5.0, BLOCK=64)  # same specialization: no new trace
    assert len(k.cache) == 3
    assert "<BLOCK: i32 = 32>" in k.ir(x, x, 1.0, BLOCK=32)
    # The compiler's cache holds one executable per specialization, on disk too.
    files = list(pathlib.Path(os.environ["TL_CACHE_DIR"], "executables").glob("[0-9a-f]" * 64))
    assert len(files) >= 3
    # A fresh kernel object finds the executables in the cache.
    k2 = tl.kernel(scale.fn)
    y = np.zeros(64, np.float32)
    k2[(1,)](x, y, 4.0, BLOCK=64)
    assert (y == 4).all()


def test_profile_times_each_launch():
    @tl.profile
    @tl.kernel
    def add1(x: tl.tensor, BLOCK: tl.constexpr):
        tl.store(x + (0,), tl.load(x + (0,), (BLOCK,)) + 1)
    x = np.zeros(16, np.int32)
    for _ in range(3):
        add1[(1,)](x, BLOCK=16)
    assert (x == 3).all()
    assert len(add1.timings["cpu"]) == 3 and all(t >= 0 for t in add1.timings["cpu"])
    assert "add1 on cpu: 3 launches" in tl.profile_report()


def test_timed_launches_from_threads():
    # Threads timing launches at once (autotune's first calls, tl.profile) shared one pair of
    # events: one thread's record between another's made tl_event_elapsed_ms fail ("start has
    # not completed yet"; 1 run in 2 of six threads calling tl.ops). Catches: that race, a
    # timing lost, a launch's result wrong.
    import threading

    @tl.profile
    @tl.kernel
    def add1(x: tl.tensor, BLOCK: tl.constexpr):
        tl.store(x + (0,), tl.load(x + (0,), (BLOCK,)) + 1)
    arrays, errors = [np.zeros(4096, np.int32) for _ in range(6)], []

    def work(x):
        try:
            for _ in range(150):
                add1[(1,)](x, BLOCK=4096)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))
    threads = [threading.Thread(target=work, args=(x,)) for x in arrays]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert all((x == 150).all() for x in arrays)
    assert len(add1.timings["cpu"]) == 900


def test_autotune_picks_and_caches():
    @tl.autotune(configs=[tl.Config({"BLOCK": 16}), tl.Config({"BLOCK": 128})], key=["n"])
    @tl.kernel
    def copy(x: tl.tensor, y: tl.tensor, n: tl.int32, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK
        tl.store(y + (i,), tl.load(x + (i,), (BLOCK,)))
    x = np.arange(1000, dtype=np.float32)
    y = np.zeros_like(x)
    grid = lambda m: (tl.cdiv(m["n"], m["BLOCK"]),)  # noqa: E731
    copy[grid](x, y, 1000)
    np.testing.assert_array_equal(y, x)
    assert len(copy.best) == 1
    (cfg,) = copy.best.values()
    assert cfg.kwargs["BLOCK"] in (16, 128)
    copy[grid](x, y, 1000)
    assert len(copy.best) == 1


def test_device_assert_fails_launch():
    @tl.kernel
    def check_positive(x: tl.tensor, BLOCK: tl.constexpr):
        tl.device_assert(tl.load(x + (0,), (BLOCK,)) > 0, "x must be positive")
    check_positive[(1,)](np.ones(8, np.float32), BLOCK=8)
    with pytest.raises(tl.TLRuntimeError, match="x must be positive"):
        check_positive[(1,)](np.array([1, -1] * 4, np.float32), BLOCK=8)


def test_print_and_debug_log(tmp_path):
    script = tmp_path / "k.py"
    script.write_text(
        "import numpy as np, tl\n"
        "@tl.kernel\n"
        "def show(x: tl.tensor):\n"
        "    tl.print('pid', tl.program_id(0), tl.load(x + (0,), (2,)))\n"
        "show[(2,)](np.array([7, 8], np.int32))\n")
    path = [str(pathlib.Path(tl.__file__).parents[1])] + sys.path  # tl and what it imports
    env = dict(os.environ, TL_DEBUG="1", PYTHONPATH=os.pathsep.join(path))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    out = r.stdout + r.stderr
    assert "pid" in out and "7" in out
    assert "tl: traced show" in r.stderr and "tl: launched show grid=(2,) on cpu" in r.stderr


def test_print_on_cuda(tmp_path):
    # The device's printf: one line per scalar and per tile element, flushed at synchronize.
    if "cuda" not in tl.devices():
        pytest.skip("no cuda device here")
    script = tmp_path / "k.py"
    script.write_text(
        "import numpy as np, tl\n"
        "@tl.kernel\n"
        "def show(x: tl.tensor):\n"
        "    tl.print('pid', tl.program_id(0), tl.load(x + (0,), (2,)) * 2.5)\n"
        "show[(2,)](np.array([7, 8], np.float32), device='cuda')\n")
    path = [str(pathlib.Path(tl.__file__).parents[1])] + sys.path  # tl and what it imports
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    lines = set(r.stdout.splitlines())
    for pid in (0, 1):
        assert f"program ({pid}, 0, 0): pid {pid}" in lines, r.stdout
        assert f"program ({pid}, 0, 0): pid [0] 17.5" in lines, r.stdout
        assert f"program ({pid}, 0, 0): pid [1] 20" in lines, r.stdout


@tl.kernel
def grid_ids(out: tl.tensor):
    """out[z * ny + y, :] = that row's index, from program ids and num_programs on axes 1, 2."""
    y = tl.program_id(1)
    z = tl.program_id(2)
    row = z * tl.num_programs(1) + y
    tl.store(out + (row, 0), tl.full((1, 16), 0, tl.int32) + row)


@pytest.mark.parametrize("grid", [(1, 70000, 1), (1, 3, 70001)])
@pytest.mark.parametrize("device", tl.devices())
def test_grid_axes_past_65535_programs(grid, device):
    # CUDA launches at most 65535 programs on axes y and z; the cuda device runs a larger grid in
    # parts, each told its first program, and cpu and npusim take it whole. Every row must hold
    # its own index: a part without its base rewrites the first 65535 rows and leaves the rest
    # at -1; num_programs read from one part's size (nctaid) misplaces the rows of axis 2; a
    # device refusing the grid raises.
    rows = grid[1] * grid[2]
    out = np.full((rows, 16), -1, np.int32)
    grid_ids[grid](out, device=device)
    np.testing.assert_array_equal(out, np.repeat(np.arange(rows, dtype=np.int32)[:, None], 16, 1))


def test_unknown_device():
    with pytest.raises(tl.TLRuntimeError, match="no-such-device"):
        scale[(1,)](np.ones(4, np.float32), np.ones(4, np.float32), 1.0, BLOCK=4,
                    device="no-such-device")


def test_empty_kernel_and_targets():
    @tl.kernel
    def empty():
        pass
    empty[(1,)]()
    assert "llvm-cpu" in tl.targets() and "tlir" in tl.targets()


def test_target_for_device_is_the_compilers_one_choice():
    # The preferred target wins over an earlier-listed one; else the first the compiler has.
    assert tl.ir.target_for_device("llvm-cpu", ["tlir", "llvm-cpu"]) == "llvm-cpu"
    assert tl.ir.target_for_device("gpu9000", ["gpu9000", "tnpu-x", "tlir"]) == "tlir"
    with pytest.raises(tl.CompileError, match="none of the device's targets \\(gpu9000\\)"):
        tl.ir.target_for_device("gpu9000", ["gpu9000"])
    # A device that reports no target gets an error naming that, not a guess.
    with pytest.raises(tl.CompileError, match="none reported"):
        tl.ir.target_for_device("", [])


@pytest.mark.parametrize("module", [tl, tl.ir, tl.jit, tl.language, tl.runtime, tl.math,
                                    tl.funcs, tl.tuning, tl.bf16, tl.fp8, tl.ops, tl.ops.generate,
                                    tl.ops.reference])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.skipif("tnpu" not in os.environ.get("TL_BUILT_TARGETS", "tnpu").split(","),
                    reason="built without the simulator (TL_BUILD_SIM=OFF)")
def test_compile_cache_key_holds_the_chip_config(monkeypatch):
    # The same module for the same target compiles differently for another chip: a cache keyed
    # on the text and target alone would hand the default chip's program to the edge chip.
    text = """kernel @mm(%a: tensor<?x?xbf16>, %b: tensor<?x?xbf16>, %c: tensor<?x?xf32>) {
  %z = constant {value = 0} : i32
  %x = load %a, %z, %z : tile<64x64xbf16>
  %y = load %b, %z, %z : tile<64x64xbf16>
  %p = dot %x, %y {acc_type = f32} : tile<64x64xf32>
  store %c, %z, %z, %p
  return
}
"""
    configs = pathlib.Path(__file__).resolve().parents[2] / "sim" / "configs"
    monkeypatch.setenv("TL_NPUSIM_CONFIG", str(configs / "default.json"))
    default = tl.jit.compile_ir(text, "tnpu")
    monkeypatch.setenv("TL_NPUSIM_CONFIG", str(configs / "edge.json"))
    edge = tl.jit.compile_ir(text, "tnpu")
    assert edge != default
    monkeypatch.setenv("TL_NPUSIM_CONFIG", str(configs / "default.json"))
    assert tl.jit.compile_ir(text, "tnpu") == default


def test_a_damaged_cache_file_is_recompiled_not_returned(tmp_path):
    # Each compile in its own process, so that the second one reads the disk, not memory.
    text = "kernel @k(%x: tensor<?xf32>) {\n  return\n}\n"
    code = ("import sys, tl.jit; sys.stdout.buffer.write(tl.jit.compile_ir(sys.argv[1], 'tlir'))")
    env = {**os.environ, "TL_CACHE_DIR": str(tmp_path)}

    def compile_in_new_process():
        return subprocess.run([sys.executable, "-c", code, text], env=env, check=True,
                              capture_output=True).stdout

    first = compile_in_new_process()
    files = list((tmp_path / "executables").iterdir())
    assert len(files) == 1
    damaged = bytearray(files[0].read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF  # the container's hash no longer matches
    files[0].write_bytes(bytes(damaged))
    assert compile_in_new_process() == first
    assert files[0].read_bytes() == first  # and the cache holds a good copy again


def test_bind_fast_path_agrees_with_inspect():
    """Kernel.bind's direct path gives what inspect.Signature.bind gives, in parameter order,
    and leaves every mistake to inspect's error."""
    import inspect

    def f(x, y, s=2.0, BLOCK=4):
        pass
    k = tl.kernel(f)
    sig = inspect.signature(f)
    for args, kwargs in [((1, 2), {}), ((1,), {"y": 2}), ((1, 2, 3.0), {"BLOCK": 8}),
                         ((), {"BLOCK": 8, "y": 2, "x": 1}), ((1, 2, 3.0, 16), {})]:
        b = sig.bind(*args, **kwargs)
        b.apply_defaults()
        got = k.bind(args, kwargs)
        assert list(got.items()) == list(b.arguments.items())
    for args, kwargs in [((1,), {}), ((1, 2), {"x": 1}), ((1, 2), {"z": 1}),
                         ((1, 2, 3, 4, 5), {})]:
        with pytest.raises(TypeError):
            k.bind(args, kwargs)
