# The kit's tolerance table (tl-conform's conformance/data/tolerances.json), read from its one file.
# SPDX-License-Identifier: Apache-2.0
"""Per-op, per-dtype error bounds: the same table ``tl-conform`` certifies devices with.

>>> from tl.testing import tolerances
>>> tolerances.lookup("add", "f32").ulp
0.5
>>> tolerances.lookup(None, "f32").normwise
1e-06
"""
import functools
import json
import pathlib

import numpy as np

_HERE = pathlib.Path(__file__).resolve().parent
# The installed package carries a copy (python/setup.py); a source checkout reads the kit's own.
_CANDIDATES = (_HERE.parent / "_data" / "tolerances.json",
               _HERE.parents[2] / "conformance" / "data" / "tolerances.json")

# Short dtype names as the table spells them.
_ALIASES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64",
            "float8e4m3": "f8e4m3", "float8e5m2": "f8e5m2", "int1": "i1", "bool": "i1",
            "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
            "uint16": "u16", "uint32": "u32"}


class Tolerance:
    """One table entry: `exact`, or `ulp` and/or `normwise` and/or `gamma` (with `combine` and
    `accumulate`);
    `source` says where it came from and why."""

    def __init__(self, entry, source):
        self.exact = bool(entry.get("exact")) or not any(k in entry for k in
                                                         ("ulp", "normwise", "gamma"))
        self.ulp = entry.get("ulp")
        self.normwise = entry.get("normwise")
        self.gamma = entry.get("gamma")
        self.combine_min = entry.get("combine") == "min"
        self.combine_sum = entry.get("combine") == "sum"
        # The format whose u the gamma bound takes (default: the result's): "f32" for an op
        # that sums in f32 and rounds once to a 16-bit result.
        self.accumulate = entry.get("accumulate")
        self.rule = entry.get("bound", "")
        self.source = source + (f": {entry['why']}" if entry.get("why") else "")

    def describe(self):
        if self.exact:
            return "exact"
        parts = []
        if self.ulp is not None:
            parts.append(f"{self.ulp:g} ulp")
        if self.rule:
            parts.append(self.rule)
        elif self.normwise is not None:
            parts.append(f"normwise {self.normwise:g}")
        elif self.gamma is not None:
            parts.append("n u cond")
        return ", ".join(parts)


@functools.lru_cache(maxsize=None)
def table():
    """The parsed tolerances.json."""
    for path in _CANDIDATES:
        if path.is_file():
            return json.loads(path.read_text())
    raise FileNotFoundError("tl.testing: the tolerance table is missing (looked in "
                            + ", ".join(str(p) for p in _CANDIDATES)
                            + "): reinstall tl, or run from a TL checkout")


def dtype_name(dtype):
    """'f32', 'bf16', ... for a table key, a tl dtype (tl.float32), a numpy dtype or its name."""
    if isinstance(dtype, str):
        name = dtype
    elif hasattr(dtype, "code") and hasattr(dtype, "np_name"):  # a tl dtype (bf16 has no numpy)
        name = dtype.name
    else:
        name = np.dtype(dtype).name
    return _ALIASES.get(name, name)


def ops():
    """The ops the table has entries for."""
    return sorted(table()["entries"])


def lookup(op, dtype):
    """The bound for `op` (None: the dtype's default) on results of `dtype`, by tl-conform's rule:
    entries[op][dtype], entries[op]['*'], default[dtype]; a dtype without an entry is exact."""
    t, dt = table(), dtype_name(dtype)
    if op is not None:
        if op not in t["entries"]:
            raise ValueError(f"tl.testing: op '{op}' is not in the tolerance table; known ops: "
                             f"{', '.join(ops())} (or op=None for the dtype's default)")
        per = t["entries"][op]
        for key in (dt, "*"):
            if key in per:
                return Tolerance(per[key], f"tolerances.json entries['{op}']['{key}']")
    if dt in t["default"]:
        return Tolerance(t["default"][dt], f"tolerances.json default['{dt}']")
    return Tolerance({"exact": True}, f"exact (no entry for {dt})")
