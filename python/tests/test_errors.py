# Bad kernels raise tl.CompileError naming the Python file and line of the mistake.
# SPDX-License-Identifier: Apache-2.0
import inspect

import numpy as np
import pytest

import tl


def line_of(k, marker="# ERR"):
    lines, start = inspect.getsourcelines(k.fn)
    return start + next(i for i, l in enumerate(lines) if marker in l)


@tl.kernel
def wrong_dot_types(a: tl.tensor, b: tl.tensor):
    x = tl.load(a + (0, 0), (4, 4))
    y = tl.load(b + (0, 0), (4, 4))
    tl.store(a + (0, 0), tl.dot(x, y))  # ERR


@tl.kernel
def shape_mismatch(a: tl.tensor):
    x = tl.load(a + (0,), (4,))
    y = tl.load(a + (0,), (8,))
    tl.store(a + (0,), x + y)  # ERR


@tl.kernel
def dot_shape_mismatch(a: tl.tensor):
    x = tl.load(a + (0, 0), (4, 8))
    tl.store(a + (0, 0), tl.dot(x, x))  # ERR


@tl.kernel
def unsupported_while(a: tl.tensor):
    i = 0
    while i < 3:  # ERR
        i += 1


@tl.kernel
def wrong_rank(a: tl.tensor):
    x = tl.load(a + (0,), (4, 4))  # ERR


@tl.kernel
def carried_type_change(a: tl.tensor, n: tl.int32):
    acc = tl.zeros((4,), tl.float32)
    for i in tl.range(n):
        acc = acc.to(tl.float64)  # noqa
    tl.store(a + (0,), acc)


@tl.kernel
def undefined_name(a: tl.tensor):
    tl.store(a + (0,), tl.load(a + (0,), (4,)) * scale)  # ERR  # noqa: F821


@tl.kernel
def math_on_ints(a: tl.tensor):
    tl.store(a + (0,), tl.exp(tl.load(a + (0,), (4,))))  # ERR


@tl.kernel
def store_wrong_rank(a: tl.tensor):
    tl.store(a + (0, 0), tl.zeros((4,)))  # ERR


@tl.kernel
def runtime_shape(a: tl.tensor, n: tl.int32):
    tl.load(a + (0,), (n,))  # ERR


CASES = [
    (wrong_dot_types, [np.zeros((4, 4), np.float32), np.zeros((4, 4), np.int32)],
     "tl.dot operand types differ"),
    (shape_mismatch, [np.zeros(8, np.float32)], "shape mismatch"),
    (dot_shape_mismatch, [np.zeros((8, 8), np.float32)], "tl.dot shape mismatch"),
    (unsupported_while, [np.zeros(4, np.float32)], "unsupported Python in a kernel: while"),
    (wrong_rank, [np.zeros(4, np.float32)], "has rank 2, tensor 'a' has rank 1"),
    (undefined_name, [np.zeros(4, np.float32)], "name 'scale' is not defined"),
    (math_on_ints, [np.zeros(4, np.int32)], "needs a floating-point operand"),
    (store_wrong_rank, [np.zeros((4, 4), np.float32)], "cannot store tile<4xf32>"),
    (runtime_shape, [np.zeros(4, np.float32), 4], "compile-time integers"),
]


@pytest.mark.parametrize("k,args,message", CASES, ids=[c[0].__name__ for c in CASES])
def test_error_names_python_line(k, args, message):
    with pytest.raises(tl.CompileError) as e:
        k[(1,)](*args)
    assert message in str(e.value)
    assert e.value.filename == __file__
    assert e.value.lineno == line_of(k), str(e.value)
    assert str(e.value).startswith(f"{__file__}:{line_of(k)}:")


def test_carried_type_change_names_loop():
    with pytest.raises(tl.CompileError, match="'acc' changes type from tile<4xf32> to tile<4xf64>") as e:
        carried_type_change[(1,)](np.zeros(4, np.float32), 3)
    assert e.value.lineno == line_of(carried_type_change, "for i in")


def test_verifier_error_from_cpp_names_python_line():
    # An error found by the C++ builder (not the Python layer) also names the Python line.
    @tl.kernel
    def bad_and(a: tl.tensor):
        x = tl.load(a + (0,), (4,))
        tl.store(a + (0,), x & x)  # ERR
    with pytest.raises(tl.CompileError, match=r"'and' requires integer or i1 operands") as e:
        bad_and[(1,)](np.zeros(4, np.float32))
    assert e.value.lineno == line_of(bad_and)


def test_bad_argument_type():
    with pytest.raises(TypeError, match="argument 'a'"):
        shape_mismatch[(1,)]("not an array")


def test_target_options_are_checked_and_name_the_option():
    # Wrong: a JSON that is not an object, or an option the target does not know, compiled
    # anyway (silently ignored) instead of an error naming it.
    from tl import ir
    text = "kernel @k() {\n  return\n}\n"
    with pytest.raises(tl.CompileError, match="not a JSON object"):
        ir.compile_text(text, "tlir", options="[1]")
    with pytest.raises(tl.CompileError, match="bogus"):
        ir.compile_text(text, "tlir", options={"bogus": "1"})
    if "nvptx" in ir.targets():
        with pytest.raises(tl.CompileError, match="'sm_75' is not one"):
            ir.compile_text(text, "nvptx", options={"arch": "sm_75"})
        one = ir.compile_text(text, "nvptx", options={"arch": "sm_90a", "cubin": "off"})
        both = ir.compile_text(text, "nvptx", options={"cubin": "off"})
        assert b".target sm_90a" in one and b".target sm_80" not in one
        assert b".target sm_90a" in both and b".target sm_80" in both


def test_cpu_device_has_no_target_options():
    # The cpu device builds for this host with its target's defaults: no options to pass.
    dev = tl.runtime.Device("cpu")
    assert dev.info["target_options"] == ""
