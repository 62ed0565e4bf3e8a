#!/usr/bin/env python3
"""Prints a tl-conform run's fp32 error table: per precision test of an f32 op (the fp32 contract
cases precision.contract.* included), the normwise error against the fp64 reference, the largest
error in ULPs, the bound applied with the rule that gave it, and the status.

Usage: ci/fp32_table.py OUT_DIR   (the run's --out; reads OUT_DIR/results.json)
"""
# SPDX-License-Identifier: Apache-2.0
import json
import pathlib
import sys


def bound(m):
    """The bound applied: its value, and which rule gave it (the table's wording, or the
    classical n u cond bound when that was the tighter or looser one that applied)."""
    t = m.get("tolerance", {})
    if t.get("exact"):
        return "exact"
    if "ulp" in t:
        return f"{t['ulp']:g} ulp"
    if "bound_normwise" in m:
        rule = "n u cond" if m.get("bound_used") == "gamma" else t.get("bound", "normwise")
        return f"{m['bound_normwise']:.1e} ({rule})"
    if "normwise" in t:
        return f"{t['normwise']:.1e} normwise"
    return t.get("source", "-")


def main():
    doc = json.loads((pathlib.Path(sys.argv[1]) / "results.json").read_text())
    rows = [r for r in doc["results"]
            if r["suite"] == "precision" and r.get("metrics", {}).get("dtype") == "f32"]
    print(f"{'test':44} {'normwise vs fp64':>16} {'max ulp':>9}  {'bound':38} status")
    for r in sorted(rows, key=lambda r: r["id"]):
        m = r["metrics"]
        nw, ulp = m.get("normwise"), m.get("max_ulp")
        print(f"{r['id']:44} {nw if nw is None else format(nw, '.3e'):>16} "
              f"{ulp if ulp is None else format(ulp, '.3f'):>9}  {bound(m):38} {r['status']}")
    if not rows:
        print("(no f32 precision results in this run)")


if __name__ == "__main__":
    main()
