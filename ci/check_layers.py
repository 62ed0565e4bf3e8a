#!/usr/bin/env python3
"""Checks that include and link edges follow TL's one-way layering (DESIGN.md).

Every source folder belongs to a layer; a layer may depend only on the layers listed for it.
An include edge is a `#include "tl/..."` resolved to the folder whose include/ tree holds the
header; a link edge is a `target_link_libraries` entry resolved to the folder whose CMakeLists
defines the target. Prints each forbidden edge as `file:line: <from> -> <to>` and exits 1.

Usage: ci/check_layers.py [source-root]
"""
# SPDX-License-Identifier: Apache-2.0
import pathlib
import re
import sys

# Layers, each a list of path prefixes (the longest prefix wins) and the layers it may use.
# The order front end -> IR -> passes -> backend -> format <- HAL <- plugins, tools above both.
LAYERS = {
    "support": (["support"], []),
    "reference": (["reference"], ["support"]),
    "sim-leaf": (["sim/isa", "sim/config", "sim/numerics"], ["support", "reference"]),
    "sim": (["sim"], ["sim-leaf", "support", "reference"]),
    "format": (["format"], ["support", "reference", "sim-leaf"]),
    "ir": (["compiler/ir"], ["format", "support"]),
    "interpreter": (["compiler/interpreter"], ["ir", "format", "reference", "support"]),
    "passes": (["compiler/passes"], ["ir", "interpreter", "format", "reference", "support"]),
    "backends": (["compiler/backends"],
                 ["passes", "ir", "interpreter", "format", "reference", "support", "sim-leaf"]),
    "compiler": (["compiler"], ["backends", "passes", "ir", "interpreter", "format", "reference",
                                "support", "sim-leaf"]),
    "hal": (["hal"], ["format", "support"]),
    "plugins": (["vendors"], ["hal", "format", "support", "reference", "sim-leaf", "sim"]),
    # Tools that both compile and run, and every test of the runtime side: above both.
    "above": (["tools", "conformance", "python", "bench", "kernels", "hal/tests", "hal/tools",
               "vendors/cpu/tests", "vendors/npusim/tests", "vendors/sdk/template",
               "vendors/sdk/tests"],
              ["compiler", "backends", "passes", "ir", "interpreter", "format", "reference",
               "support", "sim-leaf", "sim", "hal", "plugins"]),
}
SOURCE_SUFFIXES = {".c", ".cc", ".cpp", ".h", ".hpp", ".inc"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"(tl/[^"]+)"', re.M)
LINK = re.compile(r"target_link_libraries\s*\(\s*([\w$:{}-]+)([^)]*)\)", re.S)
DEFINE = re.compile(r"add_(?:library|executable)\s*\(\s*([\w$:{}-]+)([^)]*)\)", re.S)
KEYWORDS = {"STATIC", "SHARED", "MODULE", "INTERFACE", "OBJECT", "IMPORTED", "ALIAS"}


def layer_of(rel):
    best, best_len = None, -1
    for name, (prefixes, _) in LAYERS.items():
        for p in prefixes:
            if (rel == p or rel.startswith(p + "/")) and len(p) > best_len:
                best, best_len = name, len(p)
    return best


def header_index(root):
    """tl/... header path -> the folder (relative to root) whose include/ tree holds it."""
    index = {}
    for inc in root.rglob("include/tl"):
        if any(part in ("build", ".venv", ".git") for part in inc.relative_to(root).parts):
            continue
        for h in inc.rglob("*"):
            if h.is_file():
                key = "tl/" + h.relative_to(inc).as_posix()
                index[key] = inc.parent.parent.relative_to(root).as_posix()
    return index


def sources(root):
    for f in root.rglob("*"):
        rel = f.relative_to(root)
        if rel.parts[0] in ("build", ".venv", ".git") or rel.parts[0].startswith("build"):
            continue
        if f.is_file() and (f.suffix in SOURCE_SUFFIXES or f.name == "CMakeLists.txt"):
            yield f, rel.as_posix()


def check(root):
    headers = header_index(root)
    # CMake target -> where it lives: its first source file (a test executable defined in a
    # plugin's CMakeLists lives in tests/), else the defining folder.
    targets = {}
    for f, rel in sources(root):
        if f.name == "CMakeLists.txt":
            folder = pathlib.PurePosixPath(rel).parent
            for m in DEFINE.finditer(f.read_text()):
                srcs = [a for a in m.group(2).split() if a not in KEYWORDS and "$" not in a]
                targets[m.group(1)] = str(folder / srcs[0]) if srcs else str(folder)
    problems = []

    def edge(where, line, to, what, file=None):
        src, dst = layer_of(where), layer_of(to)
        if src is None or dst is None or src == dst:
            return
        if dst not in LAYERS[src][1]:
            problems.append(f"{file or where}:{line}: {src} -> {dst} ({what})")

    for f, rel in sources(root):
        text = f.read_text(errors="replace")
        if f.name == "CMakeLists.txt":
            for m in LINK.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                where = targets.get(m.group(1), rel)
                for dep in m.group(2).split():
                    if dep in targets:
                        edge(where, line, targets[dep], f"{m.group(1)} links {dep}", rel)
            continue
        for m in INCLUDE.finditer(text):
            owner = headers.get(m.group(1))
            if owner is not None:
                edge(rel, text.count("\n", 0, m.start()) + 1, owner, f"includes {m.group(1)}")
    return problems


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                        pathlib.Path(__file__).resolve().parent.parent)
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} edge(s) against the layering (ci/check_layers.py)")
        return 1
    print("check_layers: every include and link edge follows the layering")
    return 0


if __name__ == "__main__":
    sys.exit(main())
