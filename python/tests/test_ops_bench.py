# bench/ops_bench.py's roofline column: the bound drawn from the kit's datasheet with the kit's
# counts (tl.ops.cases.work), the resource it names, and the rows of an npusim run; the tuning
# override the benchmarks compare an op's forms with.
# SPDX-License-Identifier: Apache-2.0
import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tl.ops as ops
from tl.ops import _common as c, linear

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHEET = ROOT / "conformance/data/datasheets/npusim.json"


def child_env():
    """The environment of a bench script run as a child: it imports tl from python/ (ctest runs
    these tests from there; the child's own path starts at bench/)."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT / "python")] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                  if p]))


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("ops_bench", ROOT / "bench/ops_bench.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def npusim(bench):
    sheet, why = bench.datasheet("npusim", json.loads(SHEET.read_text())["device"])
    assert sheet is not None, why
    return sheet


def test_median_round(bench):
    """A memory row's figures come from the round of its median fraction, all from that round,
    with every round's fraction listed: fails if the best or the first round is taken, if the
    op time of one round is paired with another's anchor time, or if a round is dropped."""
    # 100 bytes against an anchor of 300: fractions 2 / 3 * (anchor ms / op ms)
    pairs = [(1.0, 3.0), (2.0, 3.6), (4.0, 3.0), (1.5, 3.0)]
    ms, t, fracs = bench.median_round(pairs, 100, 300)
    assert fracs == pytest.approx([0.25, 0.6, 2 / 3, 1.0])
    assert (ms, t) == (2.0, 3.6)  # 0.6: the lower median of four
    assert bench.median_round(pairs[:3], 100, 300)[:2] == (2.0, 3.6)
    assert bench.median_round([(2.0, 1.0)], 100, 300) == (2.0, 1.0, [pytest.approx(1 / 6)])


def test_vector_bound_ops(bench, npusim):
    """softmax and GELU on npusim: vector passes plus an exponential or a special function per
    element bound them, not their 8 bytes. softmax: 4 passes and one exponential (4 passes'
    time); GELU: 1 pass and an ndtr (x ndtr(x)), SiLU: 1 and a sigmoid, each special function 8
    passes' time (the datasheet's special_ops_per_s, the chip's transcendental_passes). Fails
    with a memory-only bound, with the exponentials' time taken as the max instead of added to
    the passes', or with ndtr and sigmoid priced as exponentials (or dropped)."""
    from tl.ops.cases import work
    n = 4096 * 1024
    assert npusim["special_ops_per_s"] == 32e9
    for op, want in (("softmax", 4 / 256e9 + 1 / 64e9), ("gelu", 1 / 256e9 + 1 / 32e9),
                     ("silu", 1 / 256e9 + 1 / 32e9)):
        s, resource = bench.roofline(npusim, 8 * n, 0, work(op, n))
        assert resource == "vector", op
        assert s == pytest.approx(n * want), op
        assert s > 8 * n / 819.2e9 * 3  # more than 3x the HBM time
    # a datasheet without special_ops_per_s prices them as exponentials
    plain = {k: v for k, v in npusim.items() if k != "special_ops_per_s"}
    assert bench.roofline(plain, 8 * n, 0, work("gelu", n))[0] == \
        pytest.approx(n * (1 / 256e9 + 1 / 64e9))


def test_memory_and_compute_bound_ops(bench, npusim):
    """add (one pass per 12 bytes) is memory-bound; a 2048^3 GEMM compute-bound; attention at
    D = 64 and 128 vector-bound (4 passes and an exponential per query-key pair against 4 D
    FLOPs at the matrix unit's 32.8 TFLOP/s)."""
    from tl.ops.cases import work
    n = 4096 * 1024
    assert bench.roofline(npusim, 12 * n, 0, work("add", n)) == \
        (pytest.approx(12 * n / 819.2e9), "memory")
    assert bench.roofline(npusim, 12 * 2048 ** 2, 2.0 * 2048 ** 3)[1] == "compute"
    for d in (64, 128):
        pairs = 2 * 2048 ** 2
        s, resource = bench.roofline(npusim, 16 * 2 * 2048 * d, 4.0 * pairs * d,
                                     work("attention", pairs))
        assert resource == "vector", d
        assert s == pytest.approx(pairs * 8 / 256e9)


def test_datasheet_match(bench, tmp_path):
    """The kit's file for the device, only when it names the device (a GPU's instance suffix
    aside); none for cpu (the kit has no cpu datasheet: its anchors are measured)."""
    assert bench.datasheet("cpu", "x86")[0] is None
    assert bench.datasheet("npusim", "TNPU tnpu-edge (SystemC)")[0] is None
    cuda = json.loads((ROOT / "conformance/data/datasheets/cuda.json").read_text())["device"]
    assert bench.datasheet("cuda", f"{cuda} (cuda:1)")[0] is not None
    assert bench.datasheet("cuda", f"{cuda} (rocm:1)")[0] is None
    # the model's own file where the plugin drives several (as tl-conform picks it): an H100
    # on cuda-h100.json, not refused by the H200's cuda.json
    h100 = json.loads((ROOT / "conformance/data/datasheets/cuda-h100.json").read_text())["device"]
    sheet, why = bench.datasheet("cuda", f"{h100} (cuda:0)")
    assert sheet is not None and sheet["path"].endswith("cuda-h100.json"), why
    assert bench.datasheet("npusim", "TNPU tnpu-default (SystemC)")[0]["path"].endswith(
        "/npusim.json")


def test_npusim_rows(tmp_path):
    """The npusim table: softmax's row names the vector bound, add's memory, and each fraction
    of the bound is the bound's time over the row's device time (fails if a row's bound is
    drawn from the wrong counts or resource, or its fraction from another time)."""
    out = tmp_path / "t.txt"
    env = child_env()
    subprocess.run([sys.executable, str(ROOT / "bench/ops_bench.py"), "--device", "npusim",
                    "--scale", "0.004", "--reps", "1", "--only", "add,softmax", "--gemm", "",
                    "--head-dims", "", "--out", str(out)], check=True, timeout=600, env=env)
    rows = {}
    for line in out.read_text().splitlines():
        cells = [c.strip() for c in line.split("|")[1:-1]]
        if len(cells) == 12 and cells[0] in ("add", "softmax"):
            rows[cells[0]] = cells
    assert set(rows) == {"add", "softmax"}, out.read_text()
    n = 65 * 1024  # --scale 0.004: 65 rows of 1024 f32
    expect = {"softmax": ("vector", n * (4 / 256e9 + 1 / 64e9), 8 * n),
              "add": ("memory", 12 * n / 819.2e9, 12 * n)}
    for name, cells in rows.items():
        resource, bound_ms = cells[7].split()
        want, bound_s, nbytes = expect[name]
        assert (resource, float(bound_ms)) == (want, pytest.approx(bound_s * 1e3, rel=1e-3))
        # the op's time from its GB/s (device ms has 3 decimals: ~1 digit at this size)
        assert float(cells[8]) == pytest.approx(bound_s * float(cells[3]) * 1e9 / nbytes,
                                                abs=0.006), name
    text = out.read_text()
    assert "softmax_vs_roofline: " in text and "roofline: conformance/data/datasheets/" in text


def test_tuning_override_switches_the_form_and_names_unknown_entries(monkeypatch):
    # bench/conv_bench.py times conv2d's forms side by side through tuning_override, on cpu
    # (where the shift form is the table's choice). Catches: an override that tuned() ignores
    # (the shift kernel launched inside the block), one that outlives its block (the gathered
    # kernel after it), a misspelt entry taken silently.
    launched = []
    real = c.launch
    monkeypatch.setattr(c, "launch", lambda k, *a, **kw: (launched.append(k), real(k, *a, **kw))[1])
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 8, 9, 9)).astype(np.float32)
    w = rng.standard_normal((8, 8, 3, 3)).astype(np.float32)
    want = ops.conv2d(x, w, padding=1)
    assert linear.conv2d_shift_kernel in launched and linear.conv2d_kernel not in launched
    launched.clear()
    with c.tuning_override(conv2d_shift=False):
        got = ops.conv2d(x, w, padding=1)
    assert launched[-1] is linear.conv2d_kernel and linear.conv2d_shift_kernel not in launched
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    launched.clear()
    ops.conv2d(x, w, padding=1)
    assert linear.conv2d_shift_kernel in launched
    with pytest.raises(KeyError, match="no tuning entry conv2d_shfit"):
        with c.tuning_override(conv2d_shfit=False):
            pass


def test_tune_sweep_combinations(bench):
    """--tune's grid: every combination of the entries' values, in order, each row named with
    them. Catches: a value or an entry dropped (2 x 3 rows expected), an unknown entry or a
    value that is not a list accepted (the row would run with the device's own choice under a
    name that says otherwise), two rows with the same line key."""
    combos = bench.tune_sweep(["axis_split=[2, 4]", "transpose_block=[(32, 64), (64, 64), (8, 8)]"],
                              pytest.fail)
    assert combos == [{"axis_split": a, "transpose_block": t} for a in (2, 4)
                      for t in ((32, 64), (64, 64), (8, 8))]
    assert bench.tune_sweep([], pytest.fail) == [{}]
    keys = {bench.line_key("gemv [" + " ".join(f"{k}={v!r}" for k, v in cb.items()) + "]")
            for cb in combos}
    assert len(keys) == 6 and "gemv_axis_split2_transpose_block32x64" in keys

    def error(msg):
        raise ValueError(msg)
    for bad in ("nope=[1]", "axis_split=3", "axis_split=[]", "axis_split=[1"):
        with pytest.raises(ValueError, match="--tune"):
            bench.tune_sweep([bad], error)


def test_shapes_bench_runs_and_checks_its_results(tmp_path):
    """bench/ops_shapes_bench.py at 65536 elements a row, one repetition, the f32 softmax rows
    (768 to 50257 columns), the transposed-view add and cross-entropy: fails if a row raises, a
    result is wrong (the run exits nonzero naming it), or a row's line is missing; its checker
    fails a result 1 % off (f32) and one of the wrong shape."""
    out = tmp_path / "shapes.txt"
    r = subprocess.run([sys.executable, str(ROOT / "bench/ops_shapes_bench.py"), "--elements",
                        "65536", "--reps", "1", "--only",
                        "softmax f32,add f32 transposed,cross_entropy", "--out", str(out)],
                       capture_output=True, text=True, timeout=600, env=child_env())
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    lines = [line for line in out.read_text().splitlines() if not line.startswith("#")]
    names = [line.split(":")[0] for line in lines]
    assert len(names) == 10 and names[0] == "softmax_f32_85x768_vs_triad", names
    # each a number (0.00 where a 65536-element op is swamped by launch time on a busy host)
    assert all(float(line.split(":")[1].split()[0]) >= 0 for line in lines), lines
    spec = importlib.util.spec_from_file_location("shapes", ROOT / "bench/ops_shapes_bench.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    want = np.linspace(-1.0, 1.0, 64).reshape(8, 8)
    assert mod.wrong(want.astype(np.float32), want, "softmax f32") is None
    assert "normwise error" in mod.wrong((want * 1.01).astype(np.float32), want, "softmax f32")
    assert "shape" in mod.wrong(want.T[:4].astype(np.float32), want, "softmax f32")
