#!/usr/bin/env python3
"""clang-format (the root .clang-format) on the product C files, for the lines changed since a base.

    check-format.py [--base REV] [--all] [FILE...]

The tree was written by hand before .clang-format existed: aligned tables, trailing comments
at a chosen column, string literals continued with their arguments on the last line. No
clang-format 14 configuration reproduces all of it, and reformatting every file would collide
with every branch in flight, so the check holds new code to the format and leaves the old
lines alone, as 'git clang-format' does:

  * the lines that differ between REV and the working tree (uncommitted changes too), and
    whole new untracked files, must be what clang-format would write (--dry-run --Werror),
    but for lines moved (the same text, but for indentation, removed elsewhere in the diff: a file split in two
    keeps the format its lines had);
  * REV is --base, else $VX_FORMAT_BASE, else the merge base of HEAD and the first of
    origin/main, main that exists, else HEAD; when that is HEAD itself (on main, as CI's fresh
    clone is) and nothing is uncommitted, REV is HEAD's first parent, so the commit that landed
    last (a merge: all it brought) is checked, never nothing;
  * --all checks every line of the files and prints how many lines disagree, per file.

FILE... narrows the check (default: every .c and .h under util reconcile providers state
workflow cmd). data/prices_data.c is generated (tools/gen_prices.py) and not checked.
Exit 0 when clean, 1 with clang-format's file:line:col messages otherwise, 2 on a usage error.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRS = ["util", "reconcile", "providers", "state", "workflow", "cmd"]
GENERATED = {"data/prices_data.c"}
CLANG_FORMAT = os.environ.get("CLANG_FORMAT", "clang-format")


def git(*args, check=True):
    cp = subprocess.run(["git"] + list(args), cwd=ROOT, capture_output=True, text=True)
    if check and cp.returncode != 0:
        raise RuntimeError("git %s: %s" % (" ".join(args), cp.stderr.strip()))
    return cp


def wanted(path, only):
    if not path.endswith((".c", ".h")) or path in GENERATED:
        return False
    if only:
        return path in only
    return path.split("/", 1)[0] in DIRS


def default_base():
    base = os.environ.get("VX_FORMAT_BASE")
    if base:
        return base
    for ref in ("origin/main", "main"):
        if git("rev-parse", "--verify", "-q", ref + "^{commit}", check=False).returncode == 0:
            base = git("merge-base", "HEAD", ref).stdout.strip()
            break
    else:
        base = "HEAD"
    head = git("rev-parse", "HEAD").stdout.strip()
    clean = git("status", "--porcelain", "--untracked-files=no", "--", *DIRS).stdout == ""
    if base in ("HEAD", head) and clean:
        parent = git("rev-parse", "--verify", "-q", "HEAD^1", check=False)
        if parent.returncode == 0:
            return parent.stdout.strip()
    return base


def spans(numbers):
    """[(first, last), ...] of the runs of consecutive line numbers."""
    out = []
    for n in sorted(numbers):
        if out and out[-1][1] == n - 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


def changed_lines(base, only):
    """{path: [(first, last), ...]} of the working tree's lines that differ from base, but for
    lines moved: a line added that the same diff removes elsewhere, word for word (a function
    moved to another file, as a file split by concern does, or indented anew where a step became
    a function of its own), keeps the format it had, as a moved line is not new code."""
    out = git("diff", "-U0", "--no-color", "--no-ext-diff", base, "--", *DIRS).stdout
    added, removed, path, at = {}, set(), None, 0
    for line in out.splitlines():
        if line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else None
            if path is not None and not wanted(path, only):
                path = None
            continue
        if line.startswith("--- "):
            continue
        m = re.match(r"@@ -\S+ \+(\d+)(?:,(\d+))? @@", line)
        if m:
            at = int(m.group(1))
            continue
        if line.startswith("-"):
            removed.add(line[1:].strip())
        elif line.startswith("+") and path:
            added.setdefault(path, []).append((at, line[1:]))
            at += 1
    untracked = git("ls-files", "--others", "--exclude-standard", "--", *DIRS).stdout.split()
    for upath in untracked:
        if wanted(upath, only):
            with open(os.path.join(ROOT, upath), encoding="utf-8", errors="replace") as f:
                added[upath] = list(enumerate(f.read().splitlines(), 1))
    ranges = {}
    for fpath, lines in added.items():
        new = [n for n, text in lines if not (text.strip() and text.strip() in removed)]
        if new:
            ranges[fpath] = spans(new)
    return ranges


def run_format(path, ranges):
    args = [CLANG_FORMAT, "--dry-run", "--Werror", "--style=file"]
    args += ["--lines=%d:%d" % r for r in (ranges or [])]
    cp = subprocess.run(args + [path], cwd=ROOT, capture_output=True, text=True)
    return cp.returncode, cp.stderr


def count_all(files):
    total = 0
    for path in files:
        with open(os.path.join(ROOT, path)) as f:
            old = f.read().splitlines()
        cp = subprocess.run([CLANG_FORMAT, "--style=file", path], cwd=ROOT, capture_output=True, text=True)
        if cp.returncode != 0:
            sys.stdout.write(cp.stderr)
            return 1
        diff = subprocess.run(["diff", os.path.join(ROOT, path), "-"], input=cp.stdout, capture_output=True,
                              text=True).stdout
        n = sum(1 for line in diff.splitlines() if line.startswith("<"))
        if n:
            print("%s: %d of %d lines differ" % (path, n, len(old)))
        total += n
    print("check-format: %d lines in %d files differ from clang-format" % (total, len(files)))
    return 1 if total else 0


def main(argv):
    base, whole, only = None, False, set()
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--base" and args:
            base = args.pop(0)
        elif a == "--all":
            whole = True
        elif a.startswith("-"):
            sys.stderr.write(__doc__)
            return 2
        else:
            only.add(os.path.relpath(os.path.abspath(a), ROOT))
    if whole:
        files = sorted(p for p in git("ls-files", "--", *DIRS).stdout.split() if wanted(p, only))
        return count_all(files)
    base = base or default_base()
    ranges = changed_lines(base, only)
    rc, checked = 0, 0
    for path in sorted(ranges):
        checked += 1
        code, err = run_format(path, ranges[path])
        if code != 0:
            sys.stdout.write(err)
            rc = 1
    nlines = sum(b - a + 1 for r in ranges.values() if r for a, b in r)
    if rc:
        print("check-format: the lines above are not as .clang-format writes them: run\n"
              "  git clang-format %s\nto format the lines changed since then (and only those)" % base)
    else:
        print("check-format: %d changed lines in %d files since %s: ok" % (nlines, checked, base[:12]))
    return rc


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except RuntimeError as e:
        sys.stderr.write("check-format: %s\n" % e)
        sys.exit(2)
