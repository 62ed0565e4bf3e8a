# tl.ops bad arguments: each error names the op and the argument.
# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

import tl
import tl.ops as ops

f = np.zeros((4, 8), np.float32)


@pytest.mark.parametrize("call,match", [
    (lambda: ops.add(f, np.zeros(3, np.float32)),
     r"tl.ops.add: argument 'y': shape \(3,\) does not broadcast"),
    (lambda: ops.add(f, f.astype(np.float16)), r"tl.ops.add: argument 'y': dtype f16 differs"),
    (lambda: ops.relu(f.astype(np.int32)), r"tl.ops.relu: argument 'x': dtype int32"),
    (lambda: ops.activation("swish", f), r"argument 'act': unknown activation 'swish'"),
    (lambda: ops.gemm(f, f), r"tl.ops.gemm: argument 'b': inner dimensions differ"),
    (lambda: ops.gemm(f, f.T, activation="leaky_relu"),
     r"tl.ops.gemm: argument 'activation': leaky_relu is not fused into the epilogue .* "
     r"apply tl.ops.leaky_relu to the result"),
    (lambda: ops.gemm(f, f.T, activation="swish"),
     r"tl.ops.gemm: argument 'activation': unknown activation 'swish' \(one of none, relu"),
    (lambda: ops.conv2d(np.zeros((1, 4, 5, 5), np.float32), np.zeros((6, 4, 3, 3), np.float32),
                        activation="leaky_relu"),
     r"tl.ops.conv2d: argument 'activation': leaky_relu is not fused"),
    (lambda: ops.gemm(f, f.T, bias=np.zeros(3, np.float32)),
     r"tl.ops.gemm: argument 'bias': expected shape \(4,\)"),
    (lambda: ops.gemm(f, f.T, residual=f), r"argument 'residual': expected the output's shape"),
    (lambda: ops.conv2d(np.zeros((1, 4, 5, 5), np.float32), np.zeros((6, 2, 3, 3), np.float32),
                        groups=3), r"tl.ops.conv2d: argument 'groups': 3 does not divide x's 4"),
    (lambda: ops.conv2d(np.zeros((1, 4, 5, 5), np.float32), np.zeros((6, 2, 3, 3), np.float32),
                        groups=4), r"tl.ops.conv2d: argument 'groups': 4 does not divide weight's"),
    (lambda: ops.conv2d(np.zeros((1, 4, 5, 5), np.float32), np.zeros((6, 4, 3, 3), np.float32),
                        groups=2), r"tl.ops.conv2d: argument 'weight': has 4 input channels, "
                                   r"expected C/groups = 2"),
    (lambda: ops.conv2d(np.zeros((1, 4, 5, 5), np.float32), np.zeros((6, 4, 3, 3), np.float32),
                        groups=0), r"tl.ops.conv2d: argument 'groups': expected an int >= 1"),
    (lambda: ops.conv2d(np.zeros((1, 4, 5, 5), np.float32), np.zeros((6, 4, 3, 3), np.float32),
                        dilation=0), r"tl.ops.conv2d: argument 'dilation': must be >= 1"),
    (lambda: ops.conv2d(np.zeros((1, 4, 5, 5), np.float32), np.zeros((6, 4, 3, 3), np.float32),
                        dilation=3), r"tl.ops.conv2d: argument 'weight': window \(3, 3\) "
                                     r"\(dilation \(3, 3\)\) does not fit"),
    (lambda: ops.attention(*[np.zeros((2, 2, 4, 8), np.float32)] * 3, key_lengths=[1]),
     r"tl.ops.attention: argument 'key_lengths': expected shape \(2,\)"),
    (lambda: ops.attention(*[np.zeros((2, 2, 4, 8), np.float32)] * 3, key_lengths=[1, 5]),
     r"tl.ops.attention: argument 'key_lengths': length 5 out of range \[0, 4\]"),
    (lambda: ops.attention(*[np.zeros((2, 2, 4, 8), np.float32)] * 3, key_lengths=[1.0, 2.0]),
     r"tl.ops.attention: argument 'key_lengths': expected integers"),
    (lambda: ops.attention_backward(*[np.zeros((2, 2, 4, 8), np.float32)] * 5,
                                    np.zeros((2, 2, 4), np.float32), key_lengths=[-1, 2]),
     r"tl.ops.attention_backward: argument 'key_lengths': length -1 out of range"),
    (lambda: ops.attention(*[np.zeros((2, 2, 4, 8), np.float32)] * 3,
                           key_mask=np.ones((2, 5), bool)),
     r"tl.ops.attention: argument 'key_mask': expected shape \(2, 4\) \(batch, keys\), got "
     r"\(2, 5\)"),
    (lambda: ops.attention(*[np.zeros((2, 2, 4, 8), np.float32)] * 3,
                           key_mask=np.ones((2, 4), np.float32)),
     r"tl.ops.attention: argument 'key_mask': expected booleans \(True: attend\), got dtype "
     r"float32"),
    (lambda: ops.attention(*[np.zeros((2, 2, 4, 8), np.float32)] * 3, key_lengths=[1, 2],
                           key_mask=np.ones((2, 4), bool)),
     r"tl.ops.attention: argument 'key_mask': give key_lengths or key_mask, not both"),
    (lambda: ops.attention_backward(*[np.zeros((2, 2, 4, 8), np.float32)] * 5,
                                    np.zeros((2, 2, 4), np.float32),
                                    key_mask=np.ones((4,), bool)),
     r"tl.ops.attention_backward: argument 'key_mask': expected shape \(2, 4\)"),
    (lambda: ops.gemm(f, f.T, split_k=0), r"tl.ops.gemm: argument 'split_k': expected an int >= 1"),
    (lambda: ops.gemm(f, f.T, split_k=2.0), r"tl.ops.gemm: argument 'split_k': expected an int"),
    (lambda: ops.layernorm(f, np.zeros(7, np.float32)),
     r"tl.ops.layernorm: argument 'weight': expected shape \(8,\)"),
    (lambda: ops.rmsnorm(f, eps=-1.0), r"tl.ops.rmsnorm: argument 'eps'"),
    (lambda: ops.sum(f, axis=2), r"tl.ops.sum: argument 'axis': 2 is out of range"),
    (lambda: ops.embedding(f, [0, 4]),
     r"tl.ops.embedding: argument 'ids': index 4 out of range"),
    (lambda: ops.embedding(f, [0.5]), r"argument 'ids': expected integers"),
    (lambda: ops.cross_entropy(f, [0, 1, 2, 8]),
     r"tl.ops.cross_entropy: argument 'target': class 8 out of range"),
    (lambda: ops.rope(np.zeros((2, 5), np.float32), np.zeros((2, 2), np.float32),
                      np.zeros((2, 2), np.float32)), r"tl.ops.rope: argument 'x': .* must be even"),
    (lambda: ops.attention(np.zeros((1, 3, 4, 8), np.float32), np.zeros((1, 2, 4, 8), np.float32),
                           np.zeros((1, 2, 4, 8), np.float32)),
     r"tl.ops.attention: argument 'k': 2 heads do not divide q's 3"),
    (lambda: ops.attention(*[np.zeros((1, 1, 2, 300), np.float32)] * 3),
     r"tl.ops.attention: argument 'q': head dimension 300 is above 256"),
    (lambda: ops.concat([f, np.zeros((4, 3), np.float32)], axis=0),
     r"tl.ops.concat: argument 'arrays\[1\]': shape \(4, 3\) does not match"),
    (lambda: ops.dequantize_int8(np.zeros((4, 8), np.int8), np.zeros(3, np.float32)),
     r"tl.ops.dequantize_int8: argument 'scale': expected float32 \(4,\)"),
    (lambda: ops.topk(f, 9), r"tl.ops.topk: argument 'k': expected an integer in \[0, 8\]"),
    (lambda: ops.topk(f, True), r"tl.ops.topk: argument 'k': expected an integer in \[0, 8\]"),
    (lambda: ops.sum(f, axis=True), r"tl.ops.sum: argument 'axis': expected an integer, got True"),
    (lambda: ops.max(f, axis=1.0), r"tl.ops.max: argument 'axis': expected an integer, got 1.0"),
    (lambda: ops.softmax(f, axis=2), r"tl.ops.softmax: argument 'axis': 2 is out of range"),
    (lambda: ops.concat([f, f], axis=None), r"tl.ops.concat: argument 'axis': expected an integer"),
    (lambda: ops.gemv(f, np.zeros(4, np.float32)),
     r"tl.ops.gemv: argument 'x': expected shape \(8,\)"),
    # k = 4096 never shortened a row of 4097: the rounds ran forever (a hang)
    (lambda: ops.topk(np.zeros((1, 4097), np.float32), 4096),
     r"tl.ops.topk: argument 'k': expected an integer in \[0, 2048\] for rows longer than 4096"),
    # floats and bools as sizes: a TypeError ('float' object is not iterable) before
    (lambda: ops.max_pool2d(np.zeros((1, 1, 4, 4), np.float32), 2.0),
     r"tl.ops.max_pool2d: argument 'kernel_size': expected an int >= 1 or a pair of them"),
    (lambda: ops.avg_pool2d(np.zeros((1, 1, 4, 4), np.float32), (2, True)),
     r"tl.ops.avg_pool2d: argument 'kernel_size': expected an int >= 1 or a pair of them"),
    (lambda: ops.conv2d(np.zeros((1, 1, 4, 4), np.float32), np.zeros((1, 1, 2, 2), np.float32),
                        stride=1.5), r"tl.ops.conv2d: argument 'stride': expected an int or a pair"),
    (lambda: ops.cross_entropy(f, [1, 2, 3, 4], ignore_index="a"),
     r"tl.ops.cross_entropy: argument 'ignore_index': expected an int, got 'a'"),
    # strings as numbers: float("0.1") had taken them
    (lambda: ops.leaky_relu(f, "0.1"), r"tl.ops.leaky_relu: argument 'alpha': expected a number"),
    (lambda: ops.gemm(f, f.T, alpha="2"), r"tl.ops.gemm: argument 'alpha': expected a number"),
    (lambda: ops.gemv(f, np.zeros(8, np.float32), alpha=None),
     r"tl.ops.gemv: argument 'alpha': expected a number"),
    (lambda: ops.var(f, correction="1"), r"tl.ops.var: argument 'correction': expected a number"),
])
def test_bad_arguments_name_the_argument(call, match):
    # Catches: a bad argument reaching the kernel (a wrong result or a crash) instead of an
    # error naming it.
    with pytest.raises(ops.OpError, match=match):
        call()


def test_parameters_as_lists_or_the_other_byte_order():
    # Catches: a parameter checked as converted but passed on as given (layernorm's weight as a
    # list: AttributeError; rmsnorm's as big-endian f32: a TypeError from the launch; rope's
    # tables as lists), and an ignore_index past int32 (a launch error; it matches no target).
    x = np.float32([[1, 2, 3, 4], [0, -1, 5, 2]])
    w, b = np.float32([0.5, 1, 2, -1]), np.float32([0, 1, 0, 1])
    np.testing.assert_array_equal(ops.layernorm(x, w.tolist(), b.tolist()),
                                  ops.layernorm(x, w, b))
    np.testing.assert_array_equal(ops.rmsnorm(x, w.astype(">f4")), ops.rmsnorm(x, w))
    np.testing.assert_array_equal(ops.layernorm(x, w, b, eps=np.float32(1e-5)),
                                  ops.layernorm(x, w, b, eps=1e-5))  # was refused
    np.testing.assert_array_equal(ops.leaky_relu(x, np.float32(0.5)), ops.leaky_relu(x, 0.5))
    cos, sin = ops.rope_tables(2, 4)
    np.testing.assert_array_equal(ops.rope(x[None], cos.tolist(), sin.tolist()),
                                  ops.rope(x[None], cos, sin))
    t = np.int32([3, 0])
    np.testing.assert_array_equal(
        ops.cross_entropy(x, t, reduction="none", ignore_index=2**40),
        ops.cross_entropy(x, t, reduction="none", ignore_index=-100))
    np.testing.assert_array_equal(ops.cross_entropy_backward(x, t, ignore_index=2**40),
                                  ops.cross_entropy_backward(x, t, ignore_index=-100))


def test_empty_inputs_give_empty_outputs():
    # Catches: a zero-size grid launched (an error) instead of an empty result.
    z = np.zeros((0, 5), np.float32)
    assert ops.relu(z).shape == (0, 5)
    assert ops.softmax(z).shape == (0, 5)
    assert ops.gemm(z, np.zeros((5, 3), np.float32)).shape == (0, 3)


def test_bf16_tag_reaches_the_kernel():
    # Catches: a tl.bf16 array taken as uint16 (the kernel would add bit patterns).
    x = tl.bf16.array(np.float32([1.5, -2.0]))
    assert tl.bf16.to_float32(ops.add(x, x)).tolist() == [3.0, -4.0]


def test_bf16_host_arrays_round_to_nearest_even():
    # Catches: truncation instead of rounding, ties not to even, NaN turned into infinity.
    x = np.float32([1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20, -np.inf, np.nan])
    y = tl.bf16.to_float32(tl.bf16.array(x))
    assert y[:4].tolist() == [1.0, 1 + 2**-6, 1 + 2**-7, -np.inf] and np.isnan(y[4])
