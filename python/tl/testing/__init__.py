# tl.testing: test kernels on every device, against fp64 references and simulated-cycle baselines.
# SPDX-License-Identifier: Apache-2.0
"""Testing kernels, for kernel authors (README.md in this folder).

- ``assert_close(actual, reference, op=..., dtype=...)``: tl-conform's tolerance table, errors
  in ULPs and normwise, the first bad element named.
- ``reference``: fp64 references (matmul, softmax, layernorm, ...).
- ``expect_cycles(kernel, grid, *args, baseline_file=...)``: simulated cycles on npusim against
  a stored baseline, exactly; ``simulated_cycles`` and ``roofline_fraction`` underneath.
- The pytest plugin (``tl.testing.plugin``, registered when tl is installed): the ``tl_device``
  argument runs a test once per device present; ``--tl-device``, ``--tl-update-baselines``,
  ``--tl-report``.
"""
from . import reference, tolerances
from .compare import Comparison, assert_close, ulp_errors
from .cycles import BaselineError, expect_cycles, roofline_fraction, simulated_cycles

__all__ = ["assert_close", "Comparison", "ulp_errors", "reference", "tolerances",
           "expect_cycles", "simulated_cycles", "roofline_fraction", "BaselineError"]
