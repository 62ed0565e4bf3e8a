# Shared by the tl.torch tests: the devices (cpu, npusim where built, cuda where torch and TL
# both have it, else skipped with the reason), moving inputs there, and running under each.
# SPDX-License-Identifier: Apache-2.0
import contextlib

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed "
                            "(pip install -r ci/requirements-torch.txt)")

import tl  # noqa: E402
import tl.torch  # noqa: E402,F401


def _cuda_reason():
    if not torch.cuda.is_available():
        return "torch.cuda is not available on this machine"
    if "cuda" not in tl.devices():
        return "TL's cuda device is not available (no libtl_plugin_cuda or no GPU)"
    return None


CUDA_SKIP = _cuda_reason()


def devices(*names):
    """pytest params for `names` (default cpu, npusim, cuda), each skipped with its reason
    where this machine lacks it ('emulated-cuda' runs everywhere)."""
    out = []
    for d in names or ("cpu", "npusim", "cuda"):
        marks = []
        if d == "npusim" and "npusim" not in tl.devices():
            marks = [pytest.mark.skip(reason="TL's npusim device is not in this build")]
        if d == "cuda" and CUDA_SKIP:
            marks = [pytest.mark.skip(reason=CUDA_SKIP)]
        out.append(pytest.param(d, marks=marks, id=d))
    return out


def to(device, x):
    """x (a tensor, or nested lists/tuples of them) on the torch device TL `device` uses."""
    if isinstance(x, (list, tuple)):
        return type(x)(to(device, v) for v in x)
    if isinstance(x, torch.Tensor) and device == "cuda":
        return x.cuda()
    return x


@contextlib.contextmanager
def on(device):
    """CPU tensors run on TL device `device` inside the block (cuda: by the tensors;
    'emulated-cuda': the cuda path's stand-ins on CPU tensors, tl.torch.emulate_cuda)."""
    if device == "emulated-cuda":
        with tl.torch.emulate_cuda():
            yield
        return
    with tl.torch.device("cpu" if device == "cuda" else device):
        yield


def host(x):
    """x as CPU tensors (for comparing)."""
    if isinstance(x, (list, tuple)):
        return type(x)(host(v) for v in x)
    return x.detach().cpu() if isinstance(x, torch.Tensor) else x
