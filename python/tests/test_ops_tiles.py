# tl.ops at the largest blocks each device's tuning picks (tl/ops/_common.py TUNING; on npusim
# 32K-element elementwise tiles, 64K-element row tiles, 64 whole rows per reduction program,
# 128 x 128 attention blocks, 256 x 128 where the grid fills the cores): they must fit the
# device (a tnpu scratchpad overflow is a compile error) and compute the same results as the
# small blocks the other tests reach.
# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

import tl.ops as ops
from tl.ops import reference as ref
from ops_util import DEVICES, DTYPES, check, make

pytestmark = pytest.mark.parametrize("device", DEVICES)

rng = np.random.default_rng(18)


@pytest.mark.parametrize("dtype", DTYPES)
def test_elementwise_full_tiles(dtype, device):
    # Catches: a tile past the last full one (40 rows: one 32 x 1024 tile and a ragged one)
    # skipped or stored unmasked, gelu's temporaries not fitting beside 32K-element tiles.
    x, y = make(rng, (40, 1024), dtype), make(rng, (40, 1024), dtype)
    check(ops.add(x, y, device=device), ref.binary("add", x, y), "add", dtype)
    check(ops.gelu(x, device=device), ref.activation("gelu", x), "gelu", dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(130, 1024), (20, 4096)])
def test_row_ops_full_tiles(shape, dtype, device):
    # Catches: 64-row (130 rows: two full programs and 2 rows) or 16 x 4096 tiles overflowing
    # the scratchpad, rows of a program mixed up (each row's own max, sum, mean).
    x = make(rng, shape, dtype, -5, 5)
    w, b = make(rng, shape[-1:], dtype, 0.5, 1.5), make(rng, shape[-1:], dtype)
    n = shape[-1]
    check(ops.softmax(x, device=device), ref.softmax(x), "softmax", dtype, n=n)
    check(ops.layernorm(x, w, b, device=device), ref.layernorm(x, w, b), "norm", dtype, n=n)
    y = ops.softmax(x)
    dy = make(rng, shape, dtype)
    gd = np.abs(ref.f64(dy))
    check(ops.softmax_backward(y, dy, device=device), ref.softmax_backward(y, dy), "backward",
          dtype, n=n, ref_abs=np.abs(ref.f64(y)) * gd.sum(-1, keepdims=True) + gd)
    _, stats = ops.layernorm(x, w, b, return_stats=True, device=device)
    dx, _, _ = ops.layernorm_backward(dy, x, w, stats, device=device)
    check(dx, ref.norm_backward(dy, x, w, 1e-5)[0], "backward", dtype, n=n)


@pytest.mark.parametrize("op", ["sum", "max", "argmax", "var"])
@pytest.mark.parametrize("shape", [(130, 1024), (70, 3000)])
def test_row_reductions_whole_rows(op, shape, device):
    # Catches (npusim: 64 whole rows per program, the row in chunks of 1024): the last program's
    # ragged rows, a chunk past the first (3000 columns: a ragged third chunk) dropped or padded
    # into the result, argmax's index off by the chunk's start, var's mask on ragged chunks.
    x = make(rng, shape, "f32", -3.0, 2.0)
    got = ops.reduce(op, x, -1, device=device)
    if op == "argmax":
        np.testing.assert_array_equal(got, np.argmax(x, axis=-1))
    else:
        check(got, ref.reduce(op, x, -1), {"sum": "reduce_sum", "max": "reduce_max",
                                           "var": "reduce_var"}[op], "f32", n=shape[-1])


@pytest.mark.parametrize("op", ["sum", "mean", "max", "argmax", "var"])
@pytest.mark.parametrize("shape", [(37, 1000), (9, 4096)])
def test_row_reductions_one_row_a_program(op, shape, device):
    # The nvptx choice on every device (reduce_row_elements: rows up to 4096 elements whole, one
    # a program). Catches a program reducing another's row, the padding lanes of a ragged row
    # (1000 in a block of 1024: var's squares of -mean, argmax's index or sum's values of the
    # padding), a row at the bound (4096) sent down another path wrongly.
    from tl.ops import _common
    x = make(rng, shape, "f32", 10.0, 12.0)
    x[1, [7, 900]] = 13.0  # argmax: the first of a tie
    with _common.tuning_override(reduce_rows=0, reduce_row_elements=4096):
        got = ops.reduce(op, x, -1, device=device)
    if op == "argmax":
        np.testing.assert_array_equal(got, np.argmax(x, axis=-1))
        assert got[1] == 7
    else:
        check(got, ref.reduce(op, x, -1), f"reduce_{op}", "f32", n=shape[-1])


def test_row_reductions_more_rows_than_a_grid_axis_of_65535(device):
    # 70000 short rows with the device's choice (cuda: one row a program, 70000 programs).
    # Catches the programs laid along the grid's second axis, which a GPU stops at 65535 (the
    # H100 refused the launch of 131072 rows).
    x = make(rng, (70000, 8), "f32", 1.0, 2.0)
    np.testing.assert_array_equal(ops.argmax(x, device=device), np.argmax(x, axis=-1))
    check(ops.sum(x, device=device), ref.reduce("sum", x, -1), "reduce_sum", "f32", n=8)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_several_key_blocks(causal, device):
    # Catches (npusim: 128 x 128 blocks): the online rescale across key blocks (300 keys: three
    # blocks, the last ragged), query blocks past the first (200 queries), the causal bound
    # per query block.
    q = make(rng, (1, 2, 200, 64), "f32", normal=True)
    k = make(rng, (1, 2, 300, 64), "f32", normal=True)
    v = make(rng, (1, 2, 300, 64), "f32", normal=True)
    ref_abs = ref.attention(q, k, np.abs(ref.f64(v)), causal=causal)
    check(ops.attention(q, k, v, causal=causal, device=device),
          ref.attention(q, k, v, causal=causal), "attention", "f32", n=300, ref_abs=ref_abs)


@pytest.mark.parametrize("dtype,d,s,t,causal,lens", [
    ("f32", 128, 300, 600, False, False), ("bf16", 128, 300, 600, True, False),
    ("f32", 64, 300, 600, False, True), ("f32", 64, 300, 384, False, False),
    ("f32", 128, 600, 512, False, False), ("bf16", 64, 600, 256, False, False)])
def test_attention_many_blocks(dtype, d, s, t, causal, lens, device):
    # Catches (npusim: 256 x 128 blocks once the grid fills the cores, TUNING
    # "attention_blocks_many", 512 x 128 where no key block is masked, "attention_blocks_whole";
    # two key blocks a step): a scratchpad overflow at D = 128 (a compile error: 512 queries
    # with a mask's tiles), the second block of a step past the keys left unmasked (600 keys:
    # five blocks, the last ragged; 384: three whole blocks, so no mask unless EVEN counts
    # pairs), masks by causality or by key lengths, and a ragged second query block (300
    # queries in 256s, 600 in 512s).
    q = make(rng, (2, 2, s, d), dtype, normal=True)
    k = make(rng, (2, 2, t, d), dtype, normal=True)
    v = make(rng, (2, 2, t, d), dtype, normal=True)
    kl = np.array([t, 77], np.int32) if lens else None
    got = ops.attention(q, k, v, causal=causal, key_lengths=kl, device=device)
    want = ref.attention(q, k, v, causal=causal, key_lengths=kl)
    ref_abs = ref.attention(q, k, np.abs(ref.f64(v)), causal=causal, key_lengths=kl)
    check(got, want, "attention", dtype, n=t, ref_abs=ref_abs)


def test_attention_blocks_choice(device):
    # Catches: 512-query blocks where a mask's tiles are live (over the tnpu's scratchpad: at
    # D = 128 with any mask, at D = 64 with key lengths), where T is not a multiple of a loop
    # step's keys (the last step masked), or where the grid leaves a core idle; the npusim
    # figures behind each choice are in _common.TUNING.
    if device != "npusim":
        pytest.skip("the tnpu's blocks")
    from tl.ops.transformer import attention_blocks
    assert attention_blocks("npusim", 128, 2048, 2048, 2, False, 2) == (512, 128)
    assert attention_blocks("npusim", 64, 1024, 256, 2, False, 2) == (512, 128)
    assert attention_blocks("npusim", 128, 2048, 2048, 2, True, 2) == (256, 128)
    assert attention_blocks("npusim", 128, 2048, 2048 - 128, 2, False, 2) == (256, 128)
    assert attention_blocks("npusim", 128, 1024, 2048, 1, False, 2) == (256, 128)
    assert attention_blocks("npusim", 128, 512, 2048, 1, False, 2) == (128, 128)
    assert attention_blocks("npusim", 256, 2048, 2048, 2, False, 2) == (32, 32)
