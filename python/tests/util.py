# Shared helpers of the Python tests: devices to run on, fp64 comparison.
# SPDX-License-Identifier: Apache-2.0
import numpy as np

import tl

DEVICES = tl.devices()
# Every device with the target the compiler chooses for it (tl_compiler_target_for_device). The
# reference interpreter runs .tlir through `tlc run`; no device runs Tile IR text.
TARGETS = [(d, None) for d in DEVICES]


def close(got, ref, rtol=1e-5, atol=1e-6):
    """Normwise relative error against an fp64 reference."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    err = np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30)
    assert err <= rtol or np.abs(got - ref).max() <= atol, f"relative error {err:.3e}"
