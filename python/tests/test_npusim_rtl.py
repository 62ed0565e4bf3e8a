# The simulated NPU with its matrix unit as verilated RTL (core.matrix.kind "rtl", sim/rtl): a
# Python kernel with tl.dot gives the same bits and the same simulated cycles as on the fast
# model, and the launch's stats say the RTL ran. Each run is its own process (npusim reads
# TL_NPUSIM_CONFIG when the device opens).
# SPDX-License-Identifier: Apache-2.0
import json
import os
import pathlib
import subprocess
import sys

import pytest

import tl
from util import DEVICES

CHIPS = pathlib.Path(__file__).resolve().parents[2] / "sim" / "configs"

SCRIPT = r"""
import hashlib, sys
import numpy as np
import tl

@tl.kernel
def gemm(a: tl.tensor, b: tl.tensor, c: tl.tensor, BM: tl.constexpr, BN: tl.constexpr,
         BK: tl.constexpr):
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), tl.float32)
    for k in tl.range(0, a.shape[1], BK):
        acc = tl.dot(tl.load(a + (m0, k), (BM, BK)), tl.load(b + (k, n0), (BK, BN)), acc=acc)
    tl.store(c + (m0, n0), acc)

rng = np.random.default_rng(7)
a = rng.uniform(-1, 1, (64, 96)).astype(np.float32)
b = rng.uniform(-1, 1, (96, 64)).astype(np.float32)
c = np.zeros((64, 64), np.float32)
gemm[(2, 2)](a, b, c, BM=32, BN=32, BK=32, device="npusim")
assert np.linalg.norm(c - a.astype(np.float64) @ b) / np.linalg.norm(a.astype(np.float64) @ b) < 1e-6
sys.stdout.write(hashlib.sha256(c.tobytes()).hexdigest())
"""


def run_on(chip, trace_dir):
    script = pathlib.Path(trace_dir).parent / "gemm_script.py"  # tl.kernel reads its source
    script.write_text(SCRIPT)
    path = os.pathsep.join([str(pathlib.Path(tl.__file__).resolve().parents[1]),
                            os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path, "TL_NPUSIM_CONFIG": str(CHIPS / chip),
           "TL_NPUSIM_TRACE": str(trace_dir)}
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    stats = [json.loads(p.read_text()) for p in sorted(pathlib.Path(trace_dir).glob("*.stats.json"))]
    assert stats, "no launch stats"
    return r.stdout, stats


@pytest.mark.skipif("npusim" not in DEVICES, reason="no npusim device")
def test_tl_dot_on_the_rtl_matrix_unit_matches_the_fast_model(tmp_path):
    # Fails if the RTL computes other bits than the fast model (sim/numerics), if the chip
    # config's kind does not reach the simulator (both runs would be the model), or if the
    # model's timing and the RTL's part (sim/model/src/matrix_timing.*).
    model_hash, model = run_on("edge.json", tmp_path / "model")
    rtl_hash, rtl = run_on("edge-rtl.json", tmp_path / "rtl")
    assert rtl_hash == model_hash
    assert [s["matrix_unit"] for s in model] == ["model"] * len(model)
    assert [s["matrix_unit"] for s in rtl] == ["rtl"] * len(rtl)
    assert sum(s["units"]["core0.mx"]["commands"] for s in rtl) > 0
    assert [s["total_cycles"] for s in rtl] == [s["total_cycles"] for s in model]
