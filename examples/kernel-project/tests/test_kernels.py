# Correctness on every device: each kernel against its float64 reference, by TL's tolerance table.
# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

from tl.testing import assert_close, reference

import kernels

rng = np.random.default_rng(0)


@pytest.mark.parametrize("n", [1, 1000, 4096 + 3])
def test_add(tl_device, n):
    x, y = rng.standard_normal((2, n)).astype(np.float32)
    assert_close(kernels.add(x, y, device=tl_device), reference.add(x, y), op="add")


@pytest.mark.parametrize("shape", [(4, 100), (33, 256)])
def test_softmax(tl_device, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    # "contract": TL's fp32 contract for library-style kernels (1e-6 normwise)
    assert_close(kernels.softmax(x, device=tl_device), reference.softmax(x), op="contract")
