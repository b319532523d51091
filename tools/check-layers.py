#!/usr/bin/env python3
"""Holds the layers of the product (make lint-ci): no include runs back up.

From the bottom: util, state, reconcile/load (YAML, spec checks, the machine table), then
reconcile (the kinds, the planner, the apply executor) with providers beside it, then
reconcile/out (plan rendering, vx status's table, vx report), workflow, cmd. A file may include
its own module's headers and those of a module below it, and:

  * reconcile/ never includes a header of providers/ (the planner depends on the interface it
    declares, reconcile/provider.h, not on a cloud);
  * providers/ includes of reconcile/ only reconcile/provider.h, the interface it implements,
    and the kinds' parts of it, reconcile/provider_KIND.h (provider_job.h, ...).

An include is how a C file reaches another file's functions (the build is -Werror, so a call
without its declaration does not compile): holding the includes holds the calls, and with
every module ranked, no circle of files spans two modules.

usage: tools/check-layers.py [--root DIR]
Prints one line per include that runs back up, "FILE:LINE: ...", and exits 1 if any.
Standard library only.
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (module, rank): the longest prefix of a path names its module.
MODULES = [
    ("util/", 0),
    ("state/", 1),
    ("reconcile/load/", 2),
    ("reconcile/out/", 4),
    ("reconcile/", 3),
    ("providers/", 3),
    ("workflow/", 5),
    ("cmd/", 6),
]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def module_of(path):
    for prefix, rank in MODULES:
        if path.startswith(prefix):
            return prefix, rank
    return None, None


def problem(src, dst):
    """Why src may not include dst, or None."""
    sm, sr = module_of(src)
    dm, dr = module_of(dst)
    if sm is None or dm is None:
        return None
    if dr > sr:
        return "%s (%s) is above %s" % (dm, dst, sm)
    if sm.startswith("reconcile/") and dm == "providers/":
        return "reconcile/ includes no header of providers/ (%s)" % dst
    if sm == "providers/" and dm.startswith("reconcile/") and dst != "reconcile/provider.h" \
            and not re.match(r"reconcile/provider_[a-z0-9_]+\.h$", dst):
        return "providers/ includes of reconcile/ only reconcile/provider.h, not %s" % dst
    return None


def check(root):
    out = []
    for top in ("util", "state", "reconcile", "providers", "workflow", "cmd"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/")
                with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                for m in INCLUDE.finditer(text):
                    why = problem(rel, m.group(1))
                    if why:
                        out.append("%s:%d: %s" % (rel, text.count("\n", 0, m.start()) + 1, why))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=ROOT)
    args = ap.parse_args()
    problems = check(args.root)
    for p in problems:
        print(p)
    if problems:
        return 1
    print("check-layers: no include runs back up (util < state < reconcile/load < reconcile, "
          "providers < reconcile/out < workflow < cmd)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
