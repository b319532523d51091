#!/usr/bin/env python3
"""Keeps the list of the kinds in one place (make lint-ci).

vx manages kinds of thing (CustomJob `job.NAME`, Reservation `reservation.NAME`,
QuotaPreference `quota.NAME`), and reconcile/kind.c's kind_table is the one list of them:
generic code iterates the table (or asks kind_of_address, kind_by_name) and never names a kind.
This reads the string literals of the product's C files (util reconcile providers state workflow
cmd; comments are not code) and reports each that names a kind: its YAML name, its address
prefix ("job." or an address "job.NAME"), or its state folder ("jobs/", "jobs"), outside:

  * the kind files themselves (reconcile/kind.c, reconcile/kind_*.c), whose business it is;
  * the providers' per-API clients (providers/gcp/vertex, compute, quotas), which name their
    API's resources as Google does, and the permission table (providers/gcp/permissions.c),
    whose rows say which kinds call each of those methods by the kind's name (a new kind adds
    its name to its rows; no code reads the names but by kind_table's).

Every other literal found must be in ALLOWED below, with the reason it is still there: that
list was what the steps of moving the kinds into the table removed (docs/design-notes.md,
"Adding a kind: what it touches today"), and it is empty now. An entry of ALLOWED that matches
nothing is reported too, so the list only shrinks. The state layer (state/) names no kind at
all: it files a record by its address alone (PREFIX.NAME in the folder PREFIXs/, state/state.h).

usage: tools/check-kinds.py [--root DIR]
Prints one line per problem, "FILE:LINE: what", and exits 1 if any. Standard library only.
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRS = ["util", "reconcile", "providers", "state", "workflow", "cmd"]
EXEMPT = [re.compile(p) for p in (
    r"reconcile/kind(_[a-z0-9_]+)?\.c$",
    r"providers/gcp/(vertex|compute|quotas|persistent)\.[ch]$",
    r"providers/gcp/permissions\.c$",
)]
NAMES = ["CustomJob", "Reservation", "QuotaPreference", "PersistentResource"]
PREFIXES = ["job", "reservation", "quota", "persistent_resource"]
FOLDERS = ["jobs", "reservations", "quotas", "persistent_resources"]
# What in a literal is a kind: its name as a word, or an address of it ("job.", "job.NAME").
KIND_WORDS = [re.compile(r"(?<![A-Za-z0-9_])%s(?![A-Za-z0-9_])" % re.escape(n)) for n in NAMES]
KIND_ADDRESSES = [re.compile(r"(?<![A-Za-z0-9_.$])%s\." % re.escape(p)) for p in PREFIXES]
# Literals that are code going by a kind rather than text that mentions one: what it compares
# a record's kind with, the prefix an address is tested or formatted with, a state folder.
EXACT = [
    ("a kind's name", re.compile(r"^(%s)$" % "|".join(NAMES))),
    ("an address prefix", re.compile(r"^(%s)\.(%%s|%%\.\*s)?$" % "|".join(PREFIXES))),
    ("a state folder", re.compile(r"^(%s)/" % "|".join(FOLDERS))),
]
# In state/, a folder alone too ("jobs"): elsewhere that is the plural in a message or a key.
STATE_FOLDER = re.compile(r"^(%s)$" % "|".join(FOLDERS))


def names_kinds(rel, lit):
    """What lit names of the kinds, or None: a kind tested by name, prefix or folder, or a
    written list of kinds (two or more kinds in one literal: "job.NAME, reservation.NAME or
    quota.NAME", "one of CustomJob, Reservation")."""
    for what, p in EXACT:
        if p.search(lit):
            return what
    if rel.startswith("state/") and STATE_FOLDER.search(lit):
        return "a state folder"
    kinds = {i for i in range(len(NAMES)) if KIND_WORDS[i].search(lit) or KIND_ADDRESSES[i].search(lit)}
    return "a list of kinds" if len(kinds) > 1 else None


# (file, literal as written in the source, without its quotes): why it is still there. Empty:
# no generic file names a kind.
ALLOWED = {
}

TOKEN = re.compile(r"""//[^\n]*|/\*.*?(?:\*/|\Z)|'(?:\\.|[^'\\\n])*'|"((?:\\.|[^"\\\n])*)"|^[ \t]*#[ \t]*include[^\n]*""",
                   re.S | re.M)


def literals(text):
    """Yields (line, literal) for each string literal of C source text, comments skipped."""
    line, at = 1, 0
    for m in TOKEN.finditer(text):
        if m.group(1) is not None:
            line += text.count("\n", at, m.start())
            at = m.start()
            yield line, m.group(1)


def product_files(root):
    for d in DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    rel = os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/")
                    if not any(p.search(rel) for p in EXEMPT):
                        yield rel


def check(root):
    problems, used = [], set()
    for rel in sorted(product_files(root)):
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for line, lit in literals(text):
            what = names_kinds(rel, lit)
            if not what:
                continue
            if (rel, lit) in ALLOWED:
                used.add((rel, lit))
                continue
            problems.append('%s:%d: "%s" names %s: go through reconcile/kind.c\'s kind_table'
                            % (rel, line, lit, what))
    for key in sorted(set(ALLOWED) - used):
        problems.append('%s: "%s" is allowed in tools/check-kinds.py but no longer there: '
                        'remove it from ALLOWED' % key)
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=ROOT)
    args = ap.parse_args()
    problems = check(args.root)
    for p in problems:
        print(p)
    if problems:
        return 1
    print("check-kinds: the kinds are named only in their own files and the allowed places")
    return 0


if __name__ == "__main__":
    sys.exit(main())
