# tl.ops: the op library, one @tl.kernel per op generic over dtypes and shapes, each with a host
# function that takes arrays, allocates the output, computes the grid and launches on a device.
# SPDX-License-Identifier: Apache-2.0
"""``tl.ops``: ready-made ops over numpy arrays (f32, f16, and bf16 through ``tl.bf16``) on any
TL device (``device="cpu"`` by default, ``"npusim"``). Each op is one TL kernel (README.md lists
them with their references and tolerance entries).

>>> import numpy as np, tl, tl.ops
>>> x = np.float32([[1, 2, 3], [0, 0, 0]])
>>> np.round(tl.ops.softmax(x).astype(np.float64), 4).tolist()
[[0.09, 0.2447, 0.6652], [0.3333, 0.3333, 0.3333]]
>>> tl.ops.add(x, np.float32([10, 20, 30])).tolist()
[[11.0, 22.0, 33.0], [10.0, 20.0, 30.0]]
"""
from ._common import OpError
from .activations import ACTIVATIONS
from .elementwise import (add, sub, mul, div, binary, activation, relu, gelu, silu, sigmoid,
                          tanh, leaky_relu, swiglu, geglu)
from .rows import softmax, log_softmax, layernorm, rmsnorm
from .reduce import reduce, sum, mean, max, min, argmax, var, cumsum, topk  # noqa: A004
from .linear import gemm, gemv, transpose, conv2d
from .transformer import rope, rope_tables, embedding, cross_entropy, attention
from .data import concat, max_pool2d, avg_pool2d
from .quant import (quantize_int8, dequantize_int8, quantize_fp8, dequantize_fp8, gemm_int8,
                    gemm_fp8)
from .backward import (activation_backward, softmax_backward, layernorm_backward,
                       rmsnorm_backward, cross_entropy_backward, embedding_backward,
                       attention_backward)

__all__ = ["OpError", "ACTIVATIONS", "add", "sub", "mul", "div", "binary", "activation", "relu",
           "gelu", "silu", "sigmoid", "tanh", "leaky_relu", "swiglu", "geglu", "softmax",
           "log_softmax", "layernorm", "rmsnorm", "reduce", "sum", "mean", "max", "min",
           "argmax", "var", "cumsum", "gemm", "gemv", "transpose", "rope", "rope_tables",
           "embedding", "cross_entropy", "attention", "activation_backward",
           "softmax_backward", "layernorm_backward", "rmsnorm_backward", "cross_entropy_backward",
           "embedding_backward", "attention_backward", "concat", "quantize_int8",
           "dequantize_int8", "max_pool2d", "avg_pool2d", "conv2d", "topk", "quantize_fp8",
           "dequantize_fp8", "gemm_int8", "gemm_fp8"]
