"""One launch each of the bench's 8192-wide row softmax and layernorm, for ncu to profile:
  ncu --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats \
      -k regex:'softmax|layernorm' python3 bench/cuda/ncu_rows.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import torch  # noqa: E402
import bench_rows as b  # noqa: E402

n = 8192
x = torch.randn(n, n, device="cuda")
y = torch.empty_like(x)
w, bias = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
b.softmax[(n,)](x, y, BLOCK=n)
b.layernorm[(n,)](x, w, bias, y, 1e-5, BLOCK=n)
torch.cuda.synchronize()
