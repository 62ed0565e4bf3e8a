# Two kernels of an example user project: a vector add and a row softmax, with their launchers.
# SPDX-License-Identifier: Apache-2.0
import math

import numpy as np

import tl

# Elements per program of `add`. The performance test pins add's simulated cycles: change this
# and tests/test_perf.py fails with the old and new figures (then update the baseline if meant).
BLOCK = 1024


@tl.kernel
def vector_add(x: tl.tensor, y: tl.tensor, z: tl.tensor, BLOCK: tl.constexpr):
    # Loads past the end read 0 and stores past the end are dropped: no mask needed.
    i = tl.program_id(0) * BLOCK
    tl.store(z + (i,), tl.load(x + (i,), (BLOCK,)) + tl.load(y + (i,), (BLOCK,)))


@tl.kernel
def softmax_rows(x: tl.tensor, y: tl.tensor, COLS: tl.constexpr):
    row = tl.program_id(0)
    v = tl.load(x + (row, 0), (1, COLS), other=-math.inf)
    e = tl.exp(v - tl.max(v, axis=1)[:, None])
    tl.store(y + (row, 0), e / tl.sum(e, axis=1)[:, None])


def add(x, y, device="cpu"):
    """x + y elementwise (1-D float32 arrays)."""
    z = np.empty_like(x)
    vector_add[(tl.cdiv(x.size, BLOCK),)](x, y, z, BLOCK=BLOCK, device=device)
    return z


def softmax(x, device="cpu"):
    """Softmax of each row of a 2-D float32 array."""
    y = np.empty_like(x)
    cols = 1 << max(x.shape[1] - 1, 0).bit_length()  # a power of two covering a row
    softmax_rows[(x.shape[0],)](x, y, COLS=cols, device=device)
    return y
