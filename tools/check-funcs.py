#!/usr/bin/env python3
"""Holds the product's functions short (make lint-ci).

A function of the product (util reconcile providers state workflow cmd) counts from the first
line of its signature to its closing brace. At most MAX_LONG of them may be over LIMIT lines,
and none of those in cmd/ or workflow/, where a long function is a step that belongs below.
The generated price table (data/prices_data.c) is outside these folders: not counted.

Our style writes a function's opening and closing braces at column 0, and its signature starts
at column 0 too (continuation lines are indented): that is what this reads, no C parser.

usage: tools/check-funcs.py [--root DIR] [--list]
--list prints every function over the limit, longest first. Exits 1 on a problem.
Standard library only.
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRS = ["util", "reconcile", "providers", "state", "workflow", "cmd"]
LIMIT = 80
MAX_LONG = 10
NONE_IN = ("cmd/", "workflow/")
NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def functions(text):
    """Yields (name, first line, lines) of each function of C source text."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i] == "{":
            j = i - 1
            while j > 0 and lines[j].startswith((" ", "\t")):
                j -= 1
            m = NAME.search(lines[j])
            k = i + 1
            while k < len(lines) and lines[k] != "}":
                k += 1
            yield (m.group(1) if m else "?"), j + 1, k - j + 1
            i = k
        i += 1


def long_functions(root):
    out = []
    for d in DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            for f in sorted(files):
                if not f.endswith(".c"):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/")
                with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
                    for name, line, n in functions(fh.read()):
                        if n > LIMIT:
                            out.append((n, rel, line, name))
    out.sort(key=lambda t: (-t[0], t[1], t[2]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=ROOT)
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    found = long_functions(args.root)
    if args.list:
        for n, rel, line, name in found:
            print("%s:%d: %s: %d lines" % (rel, line, name, n))
    problems = []
    for n, rel, line, name in found:
        if rel.startswith(NONE_IN):
            problems.append("%s:%d: %s is %d lines: none over %d in cmd/ or workflow/"
                            % (rel, line, name, n, LIMIT))
    if len(found) > MAX_LONG:
        problems.append("%d functions are over %d lines (at most %d may be): "
                        "tools/check-funcs.py --list names them" % (len(found), LIMIT, MAX_LONG))
    for p in problems:
        print(p)
    if problems:
        return 1
    print("check-funcs: %d functions over %d lines (at most %d), none in cmd/ or workflow/"
          % (len(found), LIMIT, MAX_LONG))
    return 0


if __name__ == "__main__":
    sys.exit(main())
