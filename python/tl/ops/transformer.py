# The transformer's own ops: RoPE, embedding lookup, cross-entropy forward and attention forward
# (flash-style: online softmax over key blocks, causal or not, grouped-query heads).
# SPDX-License-Identifier: Apache-2.0
import math

import numpy as np

import tl

from . import _common as c

MAX_HEAD_DIM = 256  # attention keeps a query block's whole head in one tile


@tl.func
def rope_block(x1, x2, cos, sin, o1, o2, r0, s0, c0, BS: tl.constexpr, BH: tl.constexpr,
               RELOAD: tl.constexpr, HEADS: tl.constexpr):
    """rope_kernel's (BS, BH) block of each half at position s0, column c0, of rows r0 ..
    r0 + HEADS - 1, cos and sin loaded once for them all."""
    co = tl.load(cos + (s0, c0), (BS, BH)).to(tl.float32)
    si = tl.load(sin + (s0, c0), (BS, BH)).to(tl.float32)
    for j in tl.static_range(HEADS):
        r = r0 + j
        a = tl.reshape(tl.load(x1 + (r, s0, c0), (1, BS, BH)), (BS, BH)).to(tl.float32)
        b = tl.reshape(tl.load(x2 + (r, s0, c0), (1, BS, BH)), (BS, BH)).to(tl.float32)
        tl.store(o1 + (r, s0, c0), tl.reshape(a * co - b * si, (1, BS, BH)))
        if RELOAD:
            a = tl.reshape(tl.load(x1 + (r, s0, c0), (1, BS, BH)), (BS, BH)).to(tl.float32)
            b = tl.reshape(tl.load(x2 + (r, s0, c0), (1, BS, BH)), (BS, BH)).to(tl.float32)
            co = tl.load(cos + (s0, c0), (BS, BH)).to(tl.float32)
            si = tl.load(sin + (s0, c0), (BS, BH)).to(tl.float32)
        tl.store(o2 + (r, s0, c0), tl.reshape(b * co + a * si, (1, BS, BH)))


@tl.kernel
def rope_kernel(x1: tl.tensor, x2: tl.tensor, cos: tl.tensor, sin: tl.tensor, o1: tl.tensor,
                o2: tl.tensor, BS: tl.constexpr, BH: tl.constexpr, RELOAD: tl.constexpr = False,
                ONE: tl.constexpr = False, HEADS: tl.constexpr = 1):
    """Rotate-half RoPE on (rows, S, D/2) views of each half of x and out (views of one array:
    each half's bounds mask its edge): o1 = x1 cos - x2 sin, o2 = x2 cos + x1 sin, with cos and
    sin of shape (S, D/2); BH columns of each half at a time. RELOAD: each output's inputs are
    loaded for it alone (a second read, from the caches), so that each store is one fused loop
    from the tensors (llvm-cpu; inputs used twice are copied into stack tiles first). ONE: a
    half fits one block of columns (D/2 <= BH), no loop: the tnpu runs a kernel without loops
    persistent, the next program's loads overlapping this one's products and stores. HEADS: a
    program takes that many rows (heads) of the same positions, cos and sin read once for them
    (the tnpu: read again for every head, they were a third of the HBM traffic)."""
    s0 = tl.program_id(0) * BS
    r0 = tl.program_id(1) * HEADS
    if ONE:
        rope_block(x1, x2, cos, sin, o1, o2, r0, s0, 0, BS, BH, RELOAD, HEADS)
    else:
        for c0 in tl.range(0, x1.shape[2], BH):
            rope_block(x1, x2, cos, sin, o1, o2, r0, s0, c0, BS, BH, RELOAD, HEADS)


@tl.kernel
def embedding_kernel(table: tl.tensor, ids: tl.tensor, out: tl.tensor, BR: tl.constexpr,
                     BD: tl.constexpr, U: tl.constexpr = 1, G: tl.constexpr = False,
                     ONE: tl.constexpr = False):
    """out[i, :] = table[ids[i], :] for BR ids per program, BD columns at a time: each id read
    as a scalar, its row copied as contiguous (1, BD) blocks (a per-lane gather was a bounds
    check and a scalar load per element). Rows past the end read id 0 (the load's padding)
    and are not stored (the store's bounds). U > 1 (whole rows, BD >= the table's width; BR a
    multiple of U): U ids loaded together and their rows copied unrolled, so that U row
    copies are in flight on the DMA engines where one row's copy waited for the next id's
    read-back (the tnpu: _common.TUNING's embedding_unroll). G (BD <= the table's width): BR
    rows at once as one gather of (BR, BD) whose column indices are a run of BD, unmasked, so
    that the tnpu lowers it as a row gather (one dma.gather of BD-element rows, the ids its
    index tile) where each row was a DMA command of its own; the last block starts at d - BD
    (an overlap written twice with the same values) so no column lane is out of bounds. Rows
    past the end gather row 0 (the ids' padding) and are not stored. ONE (with G): BD is the
    table's width, no column loop, so the tnpu runs the kernel persistent (the next ids' load
    ahead of this gather)."""
    r0 = tl.program_id(0) * BR
    d = table.shape[1]
    if G and ONE:
        idv = tl.load(ids + (r0,), (BR,))
        tl.store(out + (r0, 0), tl.gather(table, (idv[:, None], tl.arange(0, BD)[None, :])))
    elif G:
        idv = tl.load(ids + (r0,), (BR,))
        for k in tl.range(0, d, BD):
            k0 = tl.minimum(k, d - BD)
            v = tl.gather(table, (idv[:, None], (k0 + tl.arange(0, BD))[None, :]))
            tl.store(out + (r0, k0), v)
    elif U > 1:
        lane = tl.arange(0, U)
        for i in tl.range(0, BR, U):
            r = r0 + i
            idv = tl.load(ids + (r,), (U,))
            for j in tl.static_range(U):
                idx = tl.sum(tl.where(lane == j, idv, 0))
                tl.store(out + (r + j, 0), tl.load(table + (idx, 0), (1, BD)))
    else:
        for i in tl.range(0, BR):
            r = r0 + i
            idx = tl.sum(tl.load(ids + (r,), (1,)))
            for k in tl.range(0, d, BD):
                tl.store(out + (r, k), tl.load(table + (idx, k), (1, BD)))


def cross_entropy_tiles(shape, device):
    """(BM, BLOCK) of cross_entropy_kernel and its backward's for (rows, classes) logits: chunks
    of up to 4096 classes (the classes themselves where the device's row_block_multiple divides
    them, as the row ops' tiles), TUNING["cross_entropy_elements"] elements a program (a row at
    least)."""
    block = c.tile_width(shape[1], 16, 4096, c.tuned("row_block_multiple", device))
    return c.pow2(shape[0], 1, max(1, c.tuned("cross_entropy_elements", device) // block)), block


@tl.kernel
def cross_entropy_kernel(logits: tl.tensor, target: tl.tensor, loss: tl.tensor,
                         ignore_index: tl.int32, BM: tl.constexpr, BLOCK: tl.constexpr):
    """loss[i] = logsumexp(logits[i]) - logits[i, target[i]] (0 where target is ignore_index),
    online over chunks of classes, in f32."""
    r0 = tl.program_id(0) * BM
    n = logits.shape[0]
    nc = logits.shape[1]
    rows = r0 + tl.arange(0, BM)
    m = tl.full((BM,), -float("inf"), tl.float32)
    s = tl.zeros((BM,), tl.float32)
    for k in tl.range(0, nc, BLOCK):
        v = tl.load(logits + (r0, k), (BM, BLOCK), other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(v, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(v - m_new[:, None]), axis=1)
        m = m_new
    t = tl.gather(target, (rows,), mask=rows < n)
    keep = (rows < n) & (t != ignore_index)
    picked = tl.gather(logits, (rows, t), mask=keep).to(tl.float32)
    # (m - picked) + log(s), not m + log(s) - picked: with logits far from 0 (1e5) m + log(s)
    # rounds log(s) to m's ulp (loss 0.40625 for 0.407606)
    tl.store(loss + (r0,), tl.where(keep, (m - picked) + tl.log(s), 0.0))


@tl.func
def attention_step(sc, tv, m, s, acct, n0, t_len, rows, kl, CAUSAL: tl.constexpr,
                   BN: tl.constexpr, MASK: tl.constexpr, HAS_LEN: tl.constexpr):
    """One key block of attention_ahead: sc its scaled scores transposed (keys x queries),
    tv its values, s the sums as a (1, queries) tile; returns the new (m, s, acc^T). The sums
    come from the matrix unit, a ones row times p (a column sum in key order, as tl.sum's), so
    the vector unit, the tnpu's bound here, runs one pass a score fewer."""
    if MASK:
        cols = n0 + tl.arange(0, BN)
        ok = (cols < t_len)[:, None]
        if CAUSAL:
            ok = ok & (cols[:, None] <= rows[None, :])
        if HAS_LEN:
            ok = ok & (cols[:, None] < kl[None, :])
        sc = tl.where(ok, sc, -float("inf"))
    m_new = tl.maximum(m, tl.max(sc, axis=0))
    m_use = m_new
    if HAS_LEN:
        m_use = tl.where(m_new == -float("inf"), 0.0, m_new)
    p = tl.exp(sc - m_use[None, :])
    corr = tl.exp(m - m_use)
    s = tl.dot(tl.full((1, BN), 1.0, tl.float32), p, acc=s * corr[None, :])
    acct = tl.dot(tl.trans(tv), p, acc=acct * corr[None, :])
    return m_new, s, acct


@tl.func
def attention_ahead(k, v, tq, m, hk, t_len, hi, rows, kl, scale, CAUSAL: tl.constexpr,
                    BM: tl.constexpr, BN: tl.constexpr, BD: tl.constexpr, EVEN: tl.constexpr,
                    HAS_LEN: tl.constexpr):
    """attention_kernel's key loop for a device whose matrix and vector units run side by side
    (the tnpu: _common.TUNING["attention_ahead"]); returns (m, s, acc^T). The scores are
    computed transposed, s^T = k q^T (keys x queries, so each query's max and sum fold columns:
    no transposes of the scores; the broadcasts of m and of the correction are rows, which the
    vector unit reads with a row stride of 0), and ahead: two key blocks an iteration, each
    block's scores in its own carried tile, the block after next computed into a tile as soon
    as its softmax has read it, so the matrix unit works while the vector unit exponentiates.
    q is scaled once (the scores leave the matrix unit scaled: no pass over them for it; with
    one carried tile that pass was also the copy that let the next dot run early). acc^T (D x
    queries) += v^T p^T and the sums (1 x queries) += ones p^T, both on the matrix unit.
    Blocks past the keys (the last iteration's second block when the blocks are odd, the next
    blocks' scores) are loaded as padding and masked (EVEN: T a multiple of 2 BN, none
    past)."""
    acct = tl.zeros((BD, BM), tl.float32)
    s = tl.zeros((1, BM), tl.float32)
    mask = CAUSAL or not EVEN or HAS_LEN
    if CAUSAL and HAS_LEN:
        # both masks in two blocks a step need more than the tnpu's 17 scalar registers: one
        # block a step, its scores scaled into the carried tile
        qt = tl.trans(tq)
        k0 = tl.reshape(tl.load(k + (hk, 0, 0), (1, BN, BD)), (BN, BD)).to(tl.float32)
        ahead = tl.dot(k0, qt) * scale
        for n0 in tl.range(0, hi, BN):
            tv = tl.reshape(tl.load(v + (hk, n0, 0), (1, BN, BD)), (BN, BD)).to(tl.float32)
            tk = tl.reshape(tl.load(k + (hk, n0 + BN, 0), (1, BN, BD)), (BN, BD)).to(tl.float32)
            nxt = tl.dot(tk, qt)
            m, s, acct = attention_step(ahead, tv, m, s, acct, n0, t_len, rows, kl, CAUSAL, BN,
                                        mask, HAS_LEN)
            ahead = nxt * scale
        return m, tl.max(s, axis=0), acct
    qt = tl.trans(tq) * scale
    a0 = tl.dot(tl.reshape(tl.load(k + (hk, 0, 0), (1, BN, BD)), (BN, BD)).to(tl.float32), qt)
    a1 = tl.dot(tl.reshape(tl.load(k + (hk, BN, 0), (1, BN, BD)), (BN, BD)).to(tl.float32), qt)
    for n0 in tl.range(0, hi, 2 * BN):
        tv = tl.reshape(tl.load(v + (hk, n0, 0), (1, BN, BD)), (BN, BD)).to(tl.float32)
        m, s, acct = attention_step(a0, tv, m, s, acct, n0, t_len, rows, kl, CAUSAL, BN, mask,
                                    HAS_LEN)
        tk = tl.reshape(tl.load(k + (hk, n0 + 2 * BN, 0), (1, BN, BD)), (BN, BD)).to(tl.float32)
        a0 = tl.dot(tk, qt)
        tv = tl.reshape(tl.load(v + (hk, n0 + BN, 0), (1, BN, BD)), (BN, BD)).to(tl.float32)
        m, s, acct = attention_step(a1, tv, m, s, acct, n0 + BN, t_len, rows, kl, CAUSAL, BN,
                                    mask, HAS_LEN)
        tk = tl.reshape(tl.load(k + (hk, n0 + 3 * BN, 0), (1, BN, BD)), (BN, BD)).to(tl.float32)
        a1 = tl.dot(tk, qt)
    return m, tl.max(s, axis=0), acct


@tl.kernel
def attention_kernel(q: tl.tensor, k: tl.tensor, v: tl.tensor, out: tl.tensor, lse: tl.tensor,
                     scale: tl.float32, group: tl.int32, klen: tl.tensor, heads: tl.int32,
                     CAUSAL: tl.constexpr, STORE_LSE: tl.constexpr, BM: tl.constexpr,
                     BN: tl.constexpr, BD: tl.constexpr, EVEN: tl.constexpr = False,
                     HAS_LEN: tl.constexpr = False, HAS_MASK: tl.constexpr = False,
                     AHEAD: tl.constexpr = False):
    """out = softmax(q k^T * scale [causal: key j <= query i]) v for one (batch, head) and BM
    queries per program; keys in blocks of BN with an online max and sum (f32). q, out: (B H,
    S, D) views; k, v: (B H / group, T, D). STORE_LSE: lse (B H, S) f32 gets each query's
    log-sum-exp of its scores, for the backward. EVEN (T a multiple of BN, not causal): every
    key block is whole, so the scores are not masked (on cpu the mask was a third of the time).
    HAS_LEN: klen (B,) int32 holds each batch entry's number of keys (heads: H, so b = bh //
    heads); keys at or past it are masked, and a query with no key left (length 0) gets zeros
    and lse = -inf (as FlashAttention), not NaN. HAS_MASK: klen is instead the key mask (B, T)
    int32, nonzero where key j may be attended (any pattern: left padding too), read one key
    block at a time; a query with no key left gets zeros and lse = -inf as with HAS_LEN. AHEAD:
    the key loop of attention_ahead (the tnpu's: scores transposed and one key block ahead; not
    with HAS_MASK)."""
    m0 = tl.program_id(0) * BM
    bh = tl.program_id(1)
    hk = bh // group  # k and v's (batch, head): b H + h over group is b Hkv + h / group
    t_len = k.shape[1]
    tq = tl.reshape(tl.load(q + (bh, m0, 0), (1, BM, BD)), (BM, BD)).to(tl.float32)
    rows = m0 + tl.arange(0, BM)
    m = tl.full((BM,), -float("inf"), tl.float32)
    s = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, BD), tl.float32)
    kl = tl.zeros((1,), tl.int32)
    if HAS_LEN:
        kl = tl.load(klen + (bh // heads,), (1,))
    hi = t_len
    if CAUSAL:
        hi = tl.minimum(t_len, m0 + BM)
    if AHEAD:
        m, s, acct = attention_ahead(k, v, tq, m, hk, t_len, hi, rows, kl, scale, CAUSAL,
                                     BM, BN, BD, EVEN, HAS_LEN)
        # by 1 / s along acc^T's rows (read in place: a row broadcast), one pass, not a
        # column broadcast and a v.div (4 passes) after the transpose
        o = tl.trans(acct * (1.0 / s)[None, :])
    else:
        for n0 in tl.range(0, hi, BN):
            tk = tl.reshape(tl.load(k + (hk, n0, 0), (1, BN, BD)), (BN, BD)).to(tl.float32)
            tv = tl.reshape(tl.load(v + (hk, n0, 0), (1, BN, BD)), (BN, BD)).to(tl.float32)
            cols = n0 + tl.arange(0, BN)
            sc = tl.dot(tq, tl.trans(tk)) * scale
            if CAUSAL or not EVEN or HAS_LEN or HAS_MASK:
                ok = (cols < t_len)[None, :]
                if CAUSAL:
                    ok = ok & (cols[None, :] <= rows[:, None])
                if HAS_LEN:
                    ok = ok & (cols[None, :] < kl[:, None])
                if HAS_MASK:
                    km = tl.load(klen + (bh // heads, n0), (1, BN))
                    ok = ok & (km != 0)
                sc = tl.where(ok, sc, -float("inf"))
            m_new = tl.maximum(m, tl.max(sc, axis=1))
            m_use = m_new
            if HAS_LEN or HAS_MASK:
                # no key seen yet: exponentiate against 0, not -inf (exp(-inf - -inf) is NaN)
                m_use = tl.where(m_new == -float("inf"), 0.0, m_new)
            p = tl.exp(sc - m_use[:, None])
            corr = tl.exp(m - m_use)
            s = s * corr + tl.sum(p, axis=1)
            acc = tl.dot(p, tv, acc=acc * corr[:, None])
            m = m_new
        o = acc / s[:, None]
    if HAS_LEN or HAS_MASK:
        o = tl.where((s > 0.0)[:, None], o, 0.0)
    tl.store(out + (bh, m0, 0), tl.reshape(o, (1, BM, BD)))
    if STORE_LSE:
        tl.store(lse + (bh, m0), tl.reshape(m + tl.log(s), (1, BM)))


def attention_blocks(device, bd, s, t, programs, masked, step):
    """attention_kernel's (BM, BN) for S queries over T keys (step key blocks a loop step),
    head tiles of bd and `programs` (batch, head) pairs. The default: square, 128 for heads
    up to 64 and fewer for wider ones (a q block of at most 8192 elements), the largest that
    compiles on every device (TNPU memory); on cpu 2.5x the GFLOP/s of 32 x 32 at S = 2048,
    D = 64 (larger dots for the micro-kernel), on npusim 4x at S = 256. A device's own blocks
    where _common.TUNING has them (tnpu: 128 x 128, its matrix unit's size), larger ones where
    the grid still gives every compute unit a program, largest where no key block is masked
    (not `masked`, T a multiple of the step's keys: the masks' tiles are not live, so more
    queries fit)."""
    bm = bn = min(128, 8192 // bd)
    if not c.tuned("attention_blocks", device) or bd > 128:
        return bm, bn
    bm, bn = c.tuned("attention_blocks", device)
    choices = [c.tuned("attention_blocks_many", device)]
    whole = c.tuned("attention_blocks_whole", device)
    if whole and not masked and t % (whole[1] * step) == 0:
        choices.insert(0, whole)
    for blocks in choices:
        if blocks and tl.cdiv(s, blocks[0]) * programs >= c.compute_units(device):
            return blocks
    return bm, bn


def key_lengths_array(op, key_lengths, batch, t):
    """`key_lengths` (B,) as int32, each in [0, T]."""
    kl = c.index_array(op, "key_lengths", key_lengths)
    if kl.shape != (batch,):
        c.fail(op, "key_lengths", f"expected shape ({batch},) (one length per batch entry), "
               f"got {kl.shape}")
    if kl.size and (kl.min() < 0 or kl.max() > t):
        bad = kl[(kl < 0) | (kl > t)][0]
        c.fail(op, "key_lengths", f"length {int(bad)} out of range [0, {t}] (T = {t} keys)")
    return np.ascontiguousarray(kl)


def key_mask_array(op, key_mask, batch, t):
    """`key_mask` (B, T) of booleans (or integers: nonzero) as int32 0 / 1, True = attend."""
    a = np.asarray(key_mask) if isinstance(key_mask, (list, tuple)) else c.as_array(
        op, "key_mask", key_mask)
    if a.dtype.kind not in "biu":
        c.fail(op, "key_mask", f"expected booleans (True: attend), got dtype {a.dtype}")
    if a.shape != (batch, t):
        c.fail(op, "key_mask", f"expected shape ({batch}, {t}) (batch, keys), got {a.shape}")
    return np.ascontiguousarray(a != 0, dtype=np.int32)


def padding_masks(op, key_lengths, key_mask, batch, t):
    """(the klen argument, HAS_LEN, HAS_MASK) of attention's kernels for key_lengths or
    key_mask (not both); a one-element placeholder without either."""
    if key_lengths is not None and key_mask is not None:
        c.fail(op, "key_mask", "give key_lengths or key_mask, not both")
    if key_lengths is not None:
        return key_lengths_array(op, key_lengths, batch, t), True, False
    if key_mask is not None:
        return key_mask_array(op, key_mask, batch, t), False, True
    return np.zeros(1, np.int32), False, False


def rope(x, cos, sin, *, device=None):
    """Rotary position embedding, rotate-half form (GPT-NeoX, Llama): x (..., S, D) with D even;
    cos, sin (S, D/2) (the angles' cosines and sines, position by frequency)."""
    op = "rope"
    x = c.float_array(op, "x", x, min_ndim=2)
    s, d = x.shape[-2], x.shape[-1]
    if d % 2:
        c.fail(op, "x", f"the last dimension ({d}) must be even")
    def table(name, t):  # as an array (a list, the other byte order: converted), checked
        t = c.float_array(op, name, t, ndim=2)
        if t.shape != (s, d // 2):
            c.fail(op, name, f"expected shape ({s}, {d // 2}), got {t.shape}")
        return t
    cos, sin = table("cos", cos), table("sin", sin)
    c.same_dtype(op, "x", x, cos=cos, sin=sin)
    out = c.empty(x.shape, x)
    if out.size:
        h = d // 2
        x3, o3 = x.reshape(-1, s, d), out.reshape(-1, s, d)
        bh = c.pow2(h, 16, 256)
        bs = c.pow2(s, 1, max(1, c.tuned("rope_elements", device) // bh))
        heads = c.pow2(x3.shape[0], 1, c.tuned("rope_heads", device))
        c.launch(rope_kernel, (tl.cdiv(s, bs), tl.cdiv(x3.shape[0], heads)), x3[..., :h],
                 x3[..., h:], cos, sin, o3[..., :h], o3[..., h:], device=device, BS=bs, BH=bh,
                 RELOAD=c.tuned("rope_reload", device), ONE=h <= bh, HEADS=heads)
    return out


def rope_tables(seq_len, dim, base=10000.0, dtype="f32"):
    """cos and sin (seq_len, dim/2) of positions times base^(-2i/dim), in `dtype`."""
    inv = base ** (-np.arange(0, dim // 2, dtype=np.float64) * 2 / dim)
    ang = np.arange(seq_len, dtype=np.float64)[:, None] * inv[None, :]
    return tuple(_as_dtype(t, dtype) for t in (np.cos(ang), np.sin(ang)))


def _as_dtype(a, name):
    from .. import bf16
    return bf16.array(a) if name == "bf16" else a.astype(c.np_dtype(name))


def embedding(table, ids, *, device=None):
    """table[ids]: rows of table (V, D) for integer ids of any shape; the result is
    ids.shape + (D,). Every id must be in [0, V)."""
    op = "embedding"
    table = c.float_array(op, "table", table, ndim=2)
    ids = c.index_array(op, "ids", ids, bound=table.shape[0])
    out = c.empty(ids.shape + (table.shape[1],), table)
    if out.size:
        flat = np.ascontiguousarray(ids.reshape(-1))
        elements, cols = c.tuned("embedding_block", device)
        g = c.tuned("embedding_gather", device)
        # the row gather's column run must fit in a row: the largest power of two <= D
        bd = min(1 << (table.shape[1].bit_length() - 1), cols) if g else \
            c.pow2(table.shape[1], 16, cols)
        br = c.pow2(flat.size, 1, max(1, elements // bd))
        u = min(c.tuned("embedding_unroll", device), br) if bd >= table.shape[1] and not g else 1
        c.launch(embedding_kernel, (tl.cdiv(flat.size, br),), table, flat,
                 out.reshape(flat.size, table.shape[1]), device=device, BR=br, BD=bd, U=u,
                 G=bool(g), ONE=bool(g) and bd == table.shape[1])
    return out


def cross_entropy(logits, target, *, reduction="mean", ignore_index=-100, device=None):
    """Softmax cross-entropy of logits (N, C) against class ids target (N,): per row
    logsumexp(logits) - logits[target]; rows whose target is ignore_index count 0 and are left
    out of the mean (NaN when no row is left, as torch's). reduction: 'mean', 'sum' or 'none'
    (f32 per row)."""
    op = "cross_entropy"
    logits = c.float_array(op, "logits", logits, ndim=2)
    target = c.index_array(op, "target", target)
    if target.shape != logits.shape[:1]:
        c.fail(op, "target", f"expected shape ({logits.shape[0]},), got {target.shape}")
    ignore = c.ignore_index(op, ignore_index)
    valid = target != ignore_index
    if valid.any() and (target[valid].min() < 0 or target[valid].max() >= logits.shape[1]):
        bad = target[valid & ((target < 0) | (target >= logits.shape[1]))][0]
        c.fail(op, "target", f"class {int(bad)} out of range [0, {logits.shape[1]})")
    if reduction not in ("mean", "sum", "none"):
        c.fail(op, "reduction", f"expected 'mean', 'sum' or 'none', got {reduction!r}")
    loss = c.zeros(logits.shape[0], np.float32)
    if logits.size:
        target = np.ascontiguousarray(target)
        bm, block = cross_entropy_tiles(logits.shape, device)
        c.launch(cross_entropy_kernel, (tl.cdiv(logits.shape[0], bm),), logits, target, loss,
                 ignore, device=device, BM=bm, BLOCK=block)
    if reduction == "none":
        return loss
    from .reduce import sum as _sum
    total = _sum(loss, device=device) if loss.size else np.float32(0)
    if reduction == "sum":
        return total
    count = int(valid.sum())  # none counted (no row, or all ignored): NaN, as torch's mean
    return total / count if count else np.float32(np.nan)


def attention(q, k, v, *, causal=False, scale=None, device=None, return_lse=False,
              key_lengths=None, key_mask=None):
    """Scaled dot-product attention forward, flash-style. q: (B, H, S, D); k, v: (B, Hkv, T, D)
    with H a multiple of Hkv (grouped-query and multi-query attention). causal: key j attends
    to query i when j <= i (top-left aligned, as torch's is_causal). scale: default 1/sqrt(D).
    Returns (B, H, S, D) in q's dtype; return_lse: also the (B, H, S) float32 log-sum-exp of
    each query's scores, which attention_backward takes. key_lengths: (B,) integers in [0, T],
    each batch entry's number of keys (padding masks: keys at or past it are ignored); a query
    left with no key (length 0) gets zeros and lse = -inf (as FlashAttention), not NaN.
    key_mask: (B, T) booleans, True where key j may be attended (any pattern, e.g. left
    padding; the inverse of torch's nn.MultiheadAttention key_padding_mask, whose True means
    ignore, and the same as SDPA's boolean attn_mask broadcast over heads and queries); a query
    left with no key gets zeros and lse = -inf. At most one of key_lengths and key_mask."""
    op = "attention"
    q = c.float_array(op, "q", q, ndim=4)
    k = c.float_array(op, "k", k, ndim=4)
    v = c.float_array(op, "v", v, ndim=4)
    c.same_dtype(op, "q", q, k=k, v=v)
    bq, h, s, d = q.shape
    if k.shape[0] != bq or k.shape[3] != d:
        c.fail(op, "k", f"expected shape ({bq}, Hkv, T, {d}), got {k.shape}")
    if v.shape != k.shape:
        c.fail(op, "v", f"expected k's shape {k.shape}, got {v.shape}")
    if k.shape[1] == 0 or h % k.shape[1]:
        c.fail(op, "k", f"{k.shape[1]} heads do not divide q's {h}")
    out = c.empty(q.shape, q)
    if out.size == 0:
        return (out, c.zeros(q.shape[:3], np.float32)) if return_lse else out
    if k.shape[2] == 0:
        c.fail(op, "k", "no keys (T = 0)")
    if d > MAX_HEAD_DIM:
        c.fail(op, "q", f"head dimension {d} is above {MAX_HEAD_DIM} (one tile holds a head)")
    kl, has_len, has_mask = padding_masks(op, key_lengths, key_mask, bq, k.shape[2])
    scale = 1.0 / math.sqrt(d) if scale is None else c.number(op, "scale", scale)
    bd = c.pow2(d, 16)
    hk = k.shape[1]
    ahead = bool(c.tuned("attention_ahead", device)) and not has_mask  # two key blocks a step
    bm, bn = attention_blocks(device, bd, s, k.shape[2], bq * h, causal or has_len or has_mask,
                              2 if ahead else 1)
    lse = c.zeros((bq, h, s) if return_lse else (1, 1), np.float32)
    c.launch(attention_kernel, (tl.cdiv(s, bm), bq * h), q.reshape(bq * h, s, d),
             k.reshape(bq * hk, -1, d), v.reshape(bq * hk, -1, d), out.reshape(bq * h, s, d),
             lse.reshape(-1, lse.shape[-1]), scale, h // hk, kl, h, device=device,
             CAUSAL=bool(causal), STORE_LSE=bool(return_lse), BM=bm, BN=bn, BD=bd,
             EVEN=not causal and k.shape[2] % (bn * (2 if ahead else 1)) == 0, HAS_LEN=has_len,
             HAS_MASK=has_mask, AHEAD=ahead)
    return (out, lse) if return_lse else out
