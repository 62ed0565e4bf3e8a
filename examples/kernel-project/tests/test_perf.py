# Performance on the simulated NPU: simulated cycles are exact, so the baseline is pinned exactly.
# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

import tl
from tl.testing import expect_cycles

import kernels

N = 1 << 16


@pytest.mark.tl_devices("npusim")
def test_add_cycles(tl_device):
    x = np.ones(N, np.float32)
    z = np.empty_like(x)
    expect_cycles(kernels.vector_add, (tl.cdiv(N, kernels.BLOCK),), x, x, z,
                  BLOCK=kernels.BLOCK, device=tl_device, baseline_file="baselines/cycles.json",
                  bytes=3 * x.nbytes)


@pytest.mark.tl_devices("npusim")
def test_softmax_cycles(tl_device):
    x = np.random.default_rng(1).standard_normal((64, 512)).astype(np.float32)
    y = np.empty_like(x)
    expect_cycles(kernels.softmax_rows, (64,), x, y, COLS=512, device=tl_device,
                  baseline_file="baselines/cycles.json", bytes=2 * x.nbytes)
