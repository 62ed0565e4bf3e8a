# tl.ops transformer ops (RoPE, embedding, cross-entropy, attention) against fp64 references.
# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

import tl.ops as ops
from tl.ops import _common as c
from tl.ops import reference as ref
from tl.ops import transformer as tr
from ops_util import DEVICES, DTYPES, DTYPES_F16, as_bits, check, key_masks, make, random_bits

pytestmark = pytest.mark.parametrize("device", DEVICES)

rng = np.random.default_rng(22)


@pytest.mark.parametrize("dtype", DTYPES_F16)
@pytest.mark.parametrize("shape", [(2, 3, 11, 20), (1, 2, 5, 600)])
def test_rope(shape, dtype, device):
    # Catches: the halves rotated the wrong way (sin's sign), interleaved pairs instead of
    # halves, a half width (10) not a power of two spilling into the other half, half widths
    # past one block of columns (300 > 256: the loop over blocks; 10 takes the one-block form)
    # left unwritten.
    x = make(rng, shape, dtype, normal=True)
    cos, sin = ops.rope_tables(shape[-2], shape[-1], dtype=dtype)
    check(ops.rope(x, cos, sin, device=device), ref.rope(x, cos, sin), "rope", dtype)


@pytest.mark.parametrize("heads", [2, 4])
@pytest.mark.parametrize("shape", [(1, 5, 11, 20), (5, 1, 5, 600)])
def test_rope_heads_per_program(heads, shape, device):
    # rope_kernel's HEADS (the tnpu's rope_heads): a program rotates `heads` rows at the same
    # positions with one read of cos and sin; 5 rows leave the last program ragged. Catches: a
    # program's rows counted from the wrong start (a head rotated twice, another never), the
    # rows past the end written or read, cos / sin of another block reused.
    from tl.ops import _common
    x = make(rng, shape, "f32", normal=True)
    cos, sin = ops.rope_tables(shape[-2], shape[-1])
    with _common.tuning_override(rope_heads=heads):
        got = ops.rope(x, cos, sin, device=device)
    check(got, ref.rope(x, cos, sin), "rope", "f32")


@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding(dtype, device):
    # Catches: ids read past their count, columns past one block (300 > 256), the ids' shape
    # not kept.
    table = make(rng, (50, 300), dtype, normal=True)
    ids = rng.integers(0, 50, (4, 9))
    got = ops.embedding(table, ids, device=device)
    assert got.shape == (4, 9, 300)
    check(got, ref.embedding(table, ids), "gather", dtype)


@pytest.mark.parametrize("dtype", DTYPES_F16)
def test_embedding_moves_bits(dtype, device):
    # Every bit pattern of the table (NaNs with their signs and payloads, infinities,
    # subnormals), rows of 300 (a ragged block) and 1024 (whole blocks): the rows come back
    # unchanged. Catches: a row rounded through f32 (llvm-cpu stored every bf16 NaN as 0x7fc0).
    for width in (300, 1024):
        table = random_bits(rng, (40, width), dtype)
        ids = rng.integers(0, 40, 21).astype(np.int32)
        got = ops.embedding(table, ids, device=device)
        np.testing.assert_array_equal(as_bits(got), as_bits(table)[ids])


@pytest.mark.parametrize("u", [2, 4])
def test_embedding_unrolled(u, device):
    # embedding_kernel's U (the tnpu's choice, TUNING["embedding_unroll"]) run here through
    # the kernel itself: 70 ids in programs of 16 (the last one ragged), 300 columns in one
    # 512-wide copy. Catches: the j-th id of a group paired with another row (a lane
    # mis-selected), a group's last rows skipped, bits changed (exact).
    table = make(rng, (50, 300), "f32", normal=True)
    ids = rng.integers(0, 50, 70).astype(np.int32)
    out = np.full((70, 300), np.nan, np.float32)
    c.launch(tr.embedding_kernel, (5,), table, ids, out, device=device, BR=16, BD=512, U=u)
    np.testing.assert_array_equal(out, table[ids])


@pytest.mark.parametrize("bd", [128, 256])
@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding_row_gather(bd, dtype, device):
    # embedding_kernel's G (the tnpu's choice, TUNING["embedding_gather"]: one row gather of
    # (BR, BD) per column block, lowered by the tnpu as dma.gather of whole runs) run here
    # through the kernel itself: 70 ids in programs of 16 (the last ragged, its padding rows
    # gathering row 0 and not stored), 300 columns as blocks of BD whose last starts at
    # 300 - BD. Catches: a run start or row stride wrong, the last block's overlap written
    # from other columns, rows past the ids stored, bits changed (exact).
    table = make(rng, (50, 300), dtype, normal=True)
    ids = rng.integers(0, 50, 70).astype(np.int32)
    out = np.zeros((70, 300), table.dtype)
    c.launch(tr.embedding_kernel, (5,), table, ids, out, device=device, BR=16, BD=bd, G=True)
    np.testing.assert_array_equal(out.view(np.uint8), table[ids].view(np.uint8))


def test_embedding_row_gather_one(device):
    # G with ONE (BD the table's width, no column loop: the tnpu's persistent form), 70 ids
    # in programs of 16. Catches: the ragged last program's padding rows stored, a program's
    # rows taken from another program's ids (exact).
    table = make(rng, (50, 256), "f32", normal=True)
    ids = rng.integers(0, 50, 70).astype(np.int32)
    out = np.zeros((70, 256), np.float32)
    c.launch(tr.embedding_kernel, (5,), table, ids, out, device=device, BR=16, BD=256, G=True,
             ONE=True)
    np.testing.assert_array_equal(out, table[ids])


def test_embedding_row_gather_strided(device):
    # A table whose columns are not contiguous (every other column of a wider array), launched
    # in place on cpu (zero copy, strides kept). Catches: the G form's gather reading the run
    # as contiguous (columns of the wider array). npusim's launch copies the view contiguous
    # first, so the tnpu's strided fallback (one-element rows per column) is not reached here.
    wide = make(rng, (40, 200), "f32", normal=True)
    table = wide[:, ::2]
    ids = rng.integers(0, 40, 37).astype(np.int32)
    out = np.zeros((37, 100), np.float32)
    c.launch(tr.embedding_kernel, (3,), table, ids, out, device=device, BR=16, BD=64, G=True)
    np.testing.assert_array_equal(out, table[ids])


def test_embedding_row_gather_bad_id(device):
    # An id past the table's rows is an error (the gather's), never a row of garbage.
    table = make(rng, (10, 64), "f32", normal=True)
    ids = np.array([1, 2, 10, 3], np.int32)
    out = np.zeros((4, 64), np.float32)
    # each device's words for it: nvptx's gather check, the others' bounds error
    words = "index is outside the tensor" if device == "cuda" else "out of bounds"
    with pytest.raises(Exception, match=words):
        c.launch(tr.embedding_kernel, (1,), table, ids, out, device=device, BR=4, BD=64, G=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("classes", [100, 5000, 1000])
def test_cross_entropy(classes, dtype, device):
    # Catches: the target's logit not subtracted, ignore_index rows counted in the mean, the
    # log-sum-exp across chunks of classes (5000 > 4096); 1000: the chunk is the classes
    # themselves on llvm-cpu (row_block_multiple), its vector loops ending in a partial vector.
    logits = make(rng, (37, classes), dtype, -10, 10)
    target = rng.integers(0, classes, 37)
    target[[3, 20]] = -100
    per_row = ops.cross_entropy(logits, target, reduction="none", device=device)
    check(per_row, ref.cross_entropy(logits, target, "none"), "softmax", "f32", n=classes)
    mean = ops.cross_entropy(logits, target, device=device)
    check(np.float32([mean]), [ref.cross_entropy(logits, target)], "softmax", "f32", n=classes)


@pytest.mark.parametrize("dtype", DTYPES_F16)
@pytest.mark.parametrize("causal", [False, True])
def test_attention(causal, dtype, device):
    # Catches: a missing scale, the causal mask off by one or bottom-right aligned, keys past T
    # (45, not a multiple of the key block) attended, the wrong kv head for grouped queries
    # (4 query heads over 2 kv heads), an online rescale missing across key blocks.
    q = make(rng, (2, 4, 37, 24), dtype, normal=True)
    k = make(rng, (2, 2, 45, 24), dtype, normal=True)
    v = make(rng, (2, 2, 45, 24), dtype, normal=True)
    got = ops.attention(q, k, v, causal=causal, device=device)
    want = ref.attention(q, k, v, causal=causal)
    # cond of the P @ V sum: the same attention with |v|.
    ref_abs = ref.attention(q, k, np.abs(ref.f64(v)), causal=causal)
    check(got, want, "attention", dtype, n=45, ref_abs=ref_abs)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("keys", [256, 300])
def test_attention_key_blocks(keys, causal, device):
    # Several key blocks of 128 (head dim 64): catches an online rescale missing across blocks,
    # the unmasked (EVEN) path taken where it must not be (300 keys: a ragged last block; causal)
    # or a mask wrongly kept off, and the last query block (130 queries) misplaced.
    q = make(rng, (1, 2, 130, 64), "f32", normal=True)
    k = make(rng, (1, 2, keys, 64), "f32", normal=True)
    v = make(rng, (1, 2, keys, 64), "f32", normal=True)
    got = ops.attention(q, k, v, causal=causal, device=device)
    want = ref.attention(q, k, v, causal=causal)
    ref_abs = ref.attention(q, k, np.abs(ref.f64(v)), causal=causal)
    check(got, want, "attention", "f32", n=keys, ref_abs=ref_abs)


LENGTHS = [0, 1, 45, 23]  # per batch entry: no key, one key, all T = 45 keys, ragged


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
def test_attention_key_lengths(causal, dtype, device):
    # Catches: keys at or past a batch entry's length attended (23: mid key block), another
    # entry's length applied (b = bh // H mixed up with the kv head bh // group: 4 query heads
    # over 2 kv heads), the causal mask dropped where a length is given, and the no-key row
    # (length 0) giving NaN instead of zeros and lse = -inf.
    q = make(rng, (4, 4, 37, 24), dtype, normal=True)
    k = make(rng, (4, 2, 45, 24), dtype, normal=True)
    v = make(rng, (4, 2, 45, 24), dtype, normal=True)
    got, lse = ops.attention(q, k, v, causal=causal, key_lengths=LENGTHS, return_lse=True,
                             device=device)
    want = ref.attention(q, k, v, causal=causal, key_lengths=LENGTHS)
    ref_abs = ref.attention(q, k, np.abs(ref.f64(v)), causal=causal, key_lengths=LENGTHS)
    check(got, want, "attention", dtype, n=45, ref_abs=ref_abs)
    assert not np.any(ref.f64(got[0])), "length 0: the output must be zeros"
    assert np.all(lse[0] == -np.inf), "length 0: lse must be -inf"
    want_lse = ref.attention_lse(q, k, causal=causal, key_lengths=LENGTHS)
    check(lse[1:], want_lse[1:], "softmax", "f32", n=45)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
def test_attention_key_mask(causal, dtype, device):
    # Catches: masked keys attended (left padding: the first 25 of 45 keys masked, and a random
    # pattern), the mask read as a prefix length, another batch entry's mask row applied (b =
    # bh // H, 4 query heads over 2 kv heads), the causal mask dropped with a key mask (causal
    # with left padding leaves the first 25 queries no key: zeros and lse -inf), NaN from the
    # all-masked entry instead of zeros and lse = -inf.
    q = make(rng, (4, 4, 37, 24), dtype, normal=True)
    k = make(rng, (4, 2, 45, 24), dtype, normal=True)
    v = make(rng, (4, 2, 45, 24), dtype, normal=True)
    mask = key_masks(4, 45, rng)
    got, lse = ops.attention(q, k, v, causal=causal, key_mask=mask, return_lse=True,
                             device=device)
    want = ref.attention(q, k, v, causal=causal, key_mask=mask)
    ref_abs = ref.attention(q, k, np.abs(ref.f64(v)), causal=causal, key_mask=mask)
    check(got, want, "attention", dtype, n=45, ref_abs=ref_abs)
    assert not np.any(ref.f64(got[0])), "all keys masked: the output must be zeros"
    assert np.all(lse[0] == -np.inf), "all keys masked: lse must be -inf"
    want_lse = ref.attention_lse(q, k, causal=causal, key_mask=mask)
    assert np.array_equal(lse == -np.inf, want_lse == -np.inf), "-inf where no key is visible"
    fin = np.isfinite(want_lse)
    check(lse[fin], want_lse[fin], "softmax", "f32", n=45)
    if causal:  # left padding + causal: queries before the first unmasked key see none
        assert not np.any(ref.f64(got[1, :, :25])) and np.all(lse[1, :, :25] == -np.inf)


def test_attention_key_mask_several_blocks(device):
    # Several key blocks (300 keys, blocks of up to 128): left padding over a whole block and
    # into the next (the first 140 masked), a mask with only the last key, and a pattern whose
    # kept keys sit in different blocks; T = 256 (a multiple of the block): the unmasked EVEN
    # path must not be taken with a mask.
    q = make(rng, (3, 2, 70, 64), "f32", normal=True)
    for t in (300, 256):
        k = make(rng, (3, 2, t, 64), "f32", normal=True)
        v = make(rng, (3, 2, t, 64), "f32", normal=True)
        mask = np.zeros((3, t), bool)
        mask[0, 140:] = True
        mask[1, t - 1] = True
        mask[2, ::37] = True
        got = ops.attention(q, k, v, key_mask=mask, device=device)
        want = ref.attention(q, k, v, key_mask=mask)
        ref_abs = ref.attention(q, k, np.abs(ref.f64(v)), key_mask=mask)
        check(got, want, "attention", "f32", n=t, ref_abs=ref_abs)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_key_lengths_several_blocks(causal, device):
    # Several key blocks (300 keys, blocks of up to 128): a length at a block's edge (256), one
    # inside a later block (130) and T itself; the EVEN path (no masks) must not be taken when
    # lengths are given (T = 256 is a multiple of the block).
    q = make(rng, (3, 2, 130, 64), "f32", normal=True)
    for t, lengths in ((300, [256, 130, 300]), (256, [256, 1, 200])):
        k = make(rng, (3, 2, t, 64), "f32", normal=True)
        v = make(rng, (3, 2, t, 64), "f32", normal=True)
        got = ops.attention(q, k, v, causal=causal, key_lengths=lengths, device=device)
        want = ref.attention(q, k, v, causal=causal, key_lengths=lengths)
        ref_abs = ref.attention(q, k, np.abs(ref.f64(v)), causal=causal, key_lengths=lengths)
        check(got, want, "attention", "f32", n=t, ref_abs=ref_abs)
