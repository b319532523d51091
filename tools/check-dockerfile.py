#!/usr/bin/env python3
"""Checks the root Dockerfile, statically (hadolint is not in Debian 12).

  * multi-stage: the first stage is FROM IMAGE:TAG AS build, the last is
    debian:12-slim (or debian:bookworm-slim);
  * every base image is pinned by a tag and a digest, IMAGE:TAG@sha256:<64 hex>
    (not untagged, not :latest), so a rebuild gets the same bytes; the release
    recipe fails when the tag's digest has moved (docs/packaging.md);
  * the last stage copies from the build stage, sets a USER that is not root,
    and has ENTRYPOINT ["vx"];
  * no ADD of a URL.
The Dockerfile syntax (continuations, comments, exec form) is read by
tools/check-examples.py's parser, which checks examples/watch/Dockerfile.

usage: tools/check-dockerfile.py [FILE...]   (default: the Dockerfile at the root)
Prints one line per problem, "FILE: where: what", and exits 1 if any.
"""
import importlib.util
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("check_examples", os.path.join(HERE, "check-examples.py"))
check_examples = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_examples)

RUNTIME_BASES = {"debian:12-slim", "debian:bookworm-slim"}
ROOT_USERS = {"root", "0"}


DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def tagged(image):
    last = DIGEST.sub("", image).rsplit("/", 1)[-1]
    return ":" in last and not last.endswith(":latest")


def base(image):
    """The image without its digest: debian:12-slim."""
    return DIGEST.sub("", image)


def check(path, text):
    problems = []

    def bad(where, what):
        problems.append("%s: %s: %s" % (path, where, what))

    stages = []
    for n, ins, args in check_examples.instructions(text):
        if ins == "FROM":
            words = [w for w in args.split() if not w.startswith("--platform=")]
            name = words[2] if len(words) == 3 and words[1].lower() == "as" else None
            stages.append({"line": n, "image": words[0] if words else "", "name": name, "ins": []})
        elif stages:
            stages[-1]["ins"].append((n, ins, args))
        if ins == "ADD" and re.search(r"(?i)\b(https?|ftp)://", args):
            bad("line %d" % n, "ADD of a URL: download in a RUN with a checksum, or COPY")
    if len(stages) < 2:
        bad("top", "not multi-stage: %d FROM (a build stage, then a runtime stage)" % len(stages))
        return problems
    names = {s["name"] for s in stages if s["name"]}
    for s in stages:
        if s["image"] in names:
            continue
        if not tagged(s["image"]):
            bad("line %d" % s["line"], "FROM %s is not pinned by a tag (IMAGE:TAG, not :latest)" % s["image"])
        elif not DIGEST.search(s["image"]):
            bad("line %d" % s["line"], "FROM %s is not pinned by a digest (IMAGE:TAG@sha256:..., "
                "docs/packaging.md)" % s["image"])
    first, final = stages[0], stages[-1]
    if first["name"] != "build":
        bad("line %d" % first["line"], "the first stage is not FROM IMAGE:TAG AS build")
    if base(final["image"]) not in RUNTIME_BASES:
        bad("line %d" % final["line"], "the runtime stage is FROM debian:12-slim, not %s" % base(final["image"]))
    if not any(i == "COPY" and "--from=build" in a for _, i, a in final["ins"]):
        bad("line %d" % final["line"], "the runtime stage copies nothing from the build stage")
    users = [(n, a.strip()) for n, i, a in final["ins"] if i == "USER"]
    if not users:
        bad("line %d" % final["line"], "the runtime stage has no USER: it would run as root")
    elif users[-1][1].split(":")[0] in ROOT_USERS:
        bad("line %d" % users[-1][0], "USER %s is root" % users[-1][1])
    ep = [(n, check_examples.exec_form(a)) for n, i, a in final["ins"] if i == "ENTRYPOINT"]
    if not ep or ep[-1][1] != ["vx"]:
        bad("line %d" % (ep[-1][0] if ep else final["line"]), 'ENTRYPOINT is not ["vx"] (exec form)')
    return problems


def main(argv):
    problems = []
    for path in argv[1:] or [os.path.join(os.path.dirname(HERE), "Dockerfile")]:
        with open(path) as f:
            problems += check(os.path.relpath(path), f.read())
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
