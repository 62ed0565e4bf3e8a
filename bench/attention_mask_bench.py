# Attention with a boolean key mask (tl.ops.attention's key_mask) against the same attention
# with key lengths and with no mask: the cost of reading the mask per key block. Same run.
# SPDX-License-Identifier: Apache-2.0
"""``python bench/attention_mask_bench.py [--device cpu|npusim] [--reps N]``: device time of
attention forward (q (B, H, S, D), k, v (B, Hkv, S, D), f32, not causal) with no mask (the
anchor), with key_lengths (every key kept: the same work) and with key_mask (every key kept),
medians of runs alternating the three, and the GFLOP/s of the unmasked one (4 B H S^2 D FLOPs).
Prints one line per shape and the load before and after."""
import argparse
import statistics

import numpy as np

import tl.ops as ops

from ops_bench import device_ms  # every launch of a call, summed (HAL events)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--device", default="cpu")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--shapes", default="1x8x2x1024x64,2x4x4x512x64")  # B x H x Hkv x S x D
    a = p.parse_args()
    rng = np.random.default_rng(0)
    print(f"attention_mask_bench: device {a.device}, f32, load "
          f"{open('/proc/loadavg').read().split()[:3]}")
    print("B x H x Hkv x S x D | none ms | key_lengths ms | key_mask ms | mask / none | "
          "lengths / none | none GFLOP/s | max |mask - none|")
    for shape in a.shapes.split(","):
        b, h, hk, s, d = (int(v) for v in shape.split("x"))
        q = rng.standard_normal((b, h, s, d)).astype(np.float32)
        k = rng.standard_normal((b, hk, s, d)).astype(np.float32)
        v = rng.standard_normal((b, hk, s, d)).astype(np.float32)
        lens = np.full(b, s, np.int32)
        mask = np.ones((b, s), bool)
        runs = {"none": lambda: ops.attention(q, k, v, device=a.device),
                "lengths": lambda: ops.attention(q, k, v, key_lengths=lens, device=a.device),
                "mask": lambda: ops.attention(q, k, v, key_mask=mask, device=a.device)}
        diff = float(np.abs(runs["mask"]() - runs["none"]()).max())  # also compiles them
        runs["lengths"]()
        t = {n: [] for n in runs}
        for _ in range(a.reps):
            for n, f in runs.items():
                t[n].append(device_ms(f))
        m = {n: statistics.median(x) for n, x in t.items()}
        gf = 4 * b * h * s * s * d / (m["none"] * 1e-3) / 1e9
        print(f"{shape} | {m['none']:.4g} | {m['lengths']:.4g} | {m['mask']:.4g} | "
              f"{m['mask'] / m['none']:.2f} | {m['lengths'] / m['none']:.2f} | {gf:.1f} | "
              f"{diff:.1e}")
    print(f"attention_mask_bench: load after {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
