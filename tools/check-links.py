#!/usr/bin/env python3
"""Every relative link of the project's Markdown (README.md, docs/, examples/, man pages are not
Markdown) names a file or folder that exists, and every #anchor into a Markdown file names one of
its headings (GitHub's slugs: lowercase, punctuation but '-' and '_' dropped, spaces to '-').

A link to a page that was never written, or to a heading that was renamed, is found here rather
than by a reader. Links with a scheme (https:, mailto:) are not followed.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def markdown_files():
    yield os.path.join(ROOT, "README.md")
    for top in ("docs", "examples", "packaging", "tests/fakegcp"):
        for d, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(".md"):
                    yield os.path.join(d, f)


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        found, fenced = set(), False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if FENCE.match(line):
                    fenced = not fenced
                elif not fenced and line.startswith("#"):
                    found.add(slug(line.lstrip("#")))
                for a in re.findall(r'<a (?:name|id)="([^"]+)"', line):
                    found.add(a)
        cache[path] = found
    return cache[path]


def links(path):
    fenced = False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if fenced:
                continue
            # Inline code spans are not links.
            for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
                yield n, target


def main():
    bad = []
    for path in markdown_files():
        for n, target in links(path):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue
            file, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
            where = "%s:%d" % (os.path.relpath(path, ROOT), n)
            if not os.path.exists(dest):
                bad.append("%s: %s: no such file" % (where, target))
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                bad.append("%s: %s: no heading #%s in %s" % (where, target, anchor, os.path.relpath(dest, ROOT)))
    for b in bad:
        print(b, file=sys.stderr)
    if bad:
        return 1
    print("check-links: every relative link of the Markdown files resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
