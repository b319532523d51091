#!/usr/bin/env python3
"""Checks the ways to run vx watch in examples/watch/ (make lint-ci).

No systemd runs the unit and no docker engine builds the image where the tests
run, so this checks what they rely on:

systemd units (*.service):
  * [Unit], [Service] and [Install] sections;
  * Type=simple, Restart=on-failure, KillSignal=SIGTERM, TimeoutStopSec=15
    (vx watch ends its cycle and releases the lease on SIGTERM);
  * ExecStart runs `vx watch` by an absolute path;
  * a dedicated User= (not root), an absolute WorkingDirectory= (the checkout)
    and an EnvironmentFile= (credentials, webhook variables);
  * NoNewPrivileges=yes, ProtectSystem=strict, PrivateTmp=yes, and
    ReadWritePaths= that name the WorkingDirectory and the directory of the
    -metrics file (ProtectSystem=strict makes everything else read-only), the
    latter optional (-PATH) unless a StateDirectory= creates it.
Dockerfiles (a file named Dockerfile):
  * multi-stage: the first FROM is `... AS build`, the last is debian:12-slim
    (or debian:bookworm-slim; its @sha256 digest aside: tools/check-dockerfile.py
    requires one), the build stage runs make;
  * the build stage installs the development packages tools/deps.sh names for
    building, and the last stage exactly their Debian 12 runtime packages
    (RUNTIME below), plus git and ca-certificates;
  * the last stage copies from the build stage, has a USER that is not root,
    ENTRYPOINT ["vx"] and a CMD that starts with "watch";
  * no ADD of a URL (unpinned, unchecked downloads).

usage: tools/check-examples.py [--deps tools/deps.sh] FILE...
Prints one line per problem, "FILE: where: what", and exits 1 if any.
Standard library only.
"""
import argparse
import json
import os
import re
import shlex
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A development package of tools/deps.sh's BUILD_PKGS -> what a Debian 12
# runtime needs instead (None: a build tool, nothing at run time).
RUNTIME = {
    "build-essential": None,
    "pkg-config": None,
    "libcurl4-openssl-dev": "libcurl4",
    "libyaml-dev": "libyaml-0-2",
    "libcjson-dev": "libcjson1",
    "libssl-dev": "libssl3",
    "libgit2-dev": "libgit2-1.5",
}
RUNTIME_EXTRA = {"git", "ca-certificates"}
RUNTIME_BASES = {"debian:12-slim", "debian:bookworm-slim"}
ROOT_USERS = {"root", "0"}


# ---- systemd units ---------------------------------------------------------

def parse_unit(text):
    """{section: {key: [values]}}, as systemd reads a unit: comments (# ;),
    continuation lines (a trailing backslash), repeated keys accumulate."""
    out, section, pending = {}, None, ""
    for raw in text.splitlines():
        line = pending + raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1].rstrip() + " "
            continue
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            out.setdefault(section, {})
            continue
        if "=" not in line or section is None:
            out.setdefault(None, {}).setdefault("?", []).append(line)
            continue
        k, v = line.split("=", 1)
        out[section].setdefault(k.strip(), []).append(v.strip())
    return out


def yes(v):
    return v.lower() in ("yes", "true", "1", "on")


def check_unit(path, text, problems):
    def bad(where, what):
        problems.append("%s: %s: %s" % (path, where, what))

    unit = parse_unit(text)
    for line in unit.get(None, {}).get("?", []):
        bad("line", "%r is neither a [section] nor a key=value in one" % line)
    for s in ("Unit", "Service", "Install"):
        if s not in unit:
            bad("top", "no [%s] section" % s)
    svc = unit.get("Service", {})

    def last(key):
        v = svc.get(key)
        return v[-1] if v else None

    for key, want in (("Type", "simple"), ("Restart", "on-failure"), ("KillSignal", "SIGTERM")):
        if last(key) != want:
            bad("Service", "%s=%s, not %s" % (key, want, last(key)))
    stop = last("TimeoutStopSec")
    if stop not in ("15", "15s"):
        bad("Service", "TimeoutStopSec=15 (the cycle in flight ends and the lease is released "
            "well within it), not %s" % stop)
    exec_start = last("ExecStart") or ""
    try:
        argv = shlex.split(exec_start)
    except ValueError:
        argv = []
    if len(argv) < 2 or not argv[0].startswith("/") or os.path.basename(argv[0]) != "vx" or \
            argv[1] != "watch":
        bad("Service", "ExecStart runs /PATH/vx watch, not %r" % exec_start)
    user = last("User")
    if not user or user in ROOT_USERS:
        bad("Service", "User= a dedicated user, not %s" % user)
    wd = last("WorkingDirectory")
    if not wd or not wd.startswith("/"):
        bad("Service", "WorkingDirectory= the checkout, an absolute path, not %s" % wd)
    if not last("EnvironmentFile"):
        bad("Service", "no EnvironmentFile= (GOOGLE_APPLICATION_CREDENTIALS, the webhook variables)")
    for key, want in (("NoNewPrivileges", "yes"), ("PrivateTmp", "yes")):
        if not (last(key) and yes(last(key))):
            bad("Service", "%s=%s, not %s" % (key, want, last(key)))
    if last("ProtectSystem") != "strict":
        bad("Service", "ProtectSystem=strict, not %s" % last("ProtectSystem"))
    raw_writable = [p for v in svc.get("ReadWritePaths", []) for p in v.split()]
    writable = [p.lstrip("-") for p in raw_writable]
    state_dirs = ["/var/lib/" + p for v in svc.get("StateDirectory", []) for p in v.split()]
    need = []
    if wd and wd.startswith("/"):
        need.append(("the WorkingDirectory", wd))
    if "-metrics" in argv[:-1]:
        need.append(("the -metrics file's directory",
                     os.path.dirname(argv[argv.index("-metrics") + 1]) or wd))
    def under(p, w):
        return p == w or p.startswith(w.rstrip("/") + "/")

    for what, p in need:
        if not any(under(p, w) for w in writable):
            bad("Service", "ReadWritePaths= does not name %s %s (ProtectSystem=strict makes it "
                "read-only)" % (what, p))
        elif what.startswith("the -metrics") and not any(under(p, d) for d in state_dirs) and \
                not any(under(p, w.lstrip("-")) and w.startswith("-") for w in raw_writable):
            # Another package's directory (node_exporter's textfile collector): a path
            # ReadWritePaths= names that does not exist stops the unit from starting.
            bad("Service", "ReadWritePaths= names the -metrics file's directory %s without '-' "
                "(optional), and no StateDirectory= creates it: the unit fails to start where it "
                "does not exist" % p)


# ---- Dockerfiles -----------------------------------------------------------

def instructions(text):
    """[(line number, INSTRUCTION, arguments)], continuation lines joined."""
    out, start, cur = [], 0, ""
    for n, raw in enumerate(text.splitlines(), 1):
        s = raw.strip()
        if not cur and (not s or s.startswith("#")):
            continue
        if cur and s.startswith("#"):
            continue
        if not cur:
            start = n
        if s.endswith("\\"):
            cur += s[:-1].rstrip() + " "
            continue
        cur += s
        parts = cur.split(None, 1)
        out.append((start, parts[0].upper(), parts[1] if len(parts) > 1 else ""))
        cur = ""
    if cur:
        parts = cur.split(None, 1)
        out.append((start, parts[0].upper(), parts[1] if len(parts) > 1 else ""))
    return out


def apt_packages(run):
    """The packages of every `apt-get install` in a RUN's shell text."""
    pkgs = []
    for cmd in re.split(r"&&|\|\||;|\|", run):
        words = cmd.split()
        if "apt-get" in words and "install" in words[words.index("apt-get"):]:
            after = words[words.index("install", words.index("apt-get")) + 1:]
            pkgs += [w for w in after if not w.startswith("-") and not w.startswith(">")]
    return pkgs


def build_packages(deps):
    try:
        with open(deps) as f:
            m = re.search(r'^BUILD_PKGS="([^"]*)"', f.read(), re.M)
    except OSError as e:
        sys.exit("check-examples: %s" % e)
    if not m:
        sys.exit("check-examples: %s: no BUILD_PKGS=\"...\" line" % deps)
    return m.group(1).split()


def exec_form(args):
    try:
        v = json.loads(args)
    except ValueError:
        return None
    return v if isinstance(v, list) and all(isinstance(x, str) for x in v) else None


def check_dockerfile(path, text, build_pkgs, problems):
    def bad(where, what):
        problems.append("%s: %s: %s" % (path, where, what))

    stages = []   # [{"line", "image", "name", "ins": [(n, INS, args)]}]
    for n, ins, args in instructions(text):
        if ins == "FROM":
            words = args.split()
            words = [w for w in words if not w.startswith("--platform=")]
            name = words[2] if len(words) == 3 and words[1].lower() == "as" else None
            stages.append({"line": n, "image": words[0] if words else "", "name": name, "ins": []})
        elif not stages:
            if ins != "ARG":
                bad("line %d" % n, "%s before the first FROM" % ins)
        else:
            stages[-1]["ins"].append((n, ins, args))
        if ins == "ADD" and re.search(r"(?i)\b(https?|ftp)://", args):
            bad("line %d" % n, "ADD of a URL: download in a RUN with a checksum, or COPY")
    if len(stages) < 2:
        bad("top", "not multi-stage: %d FROM (a build stage, then a runtime stage)" % len(stages))
        return
    first, final = stages[0], stages[-1]
    if first["name"] != "build":
        bad("line %d" % first["line"], "the first stage is FROM IMAGE AS build, not %s"
            % ("named %s" % first["name"] if first["name"] else "unnamed"))
    runtime = re.sub(r"@sha256:[0-9a-f]{64}$", "", final["image"])  # pinned or not
    if runtime not in RUNTIME_BASES:
        bad("line %d" % final["line"], "the runtime stage is FROM debian:12-slim, not %s"
            % runtime)
    runs = [a for _, i, a in first["ins"] if i == "RUN"]
    if not any(re.search(r"(^|[\s;&|])make(\s|$)", r) for r in runs):
        bad("line %d" % first["line"], "the build stage never runs make")
    got = set(p for r in runs for p in apt_packages(r))
    for p in build_pkgs:
        if p not in got:
            bad("line %d" % first["line"], "the build stage does not install %s (tools/deps.sh)" % p)
    want = {RUNTIME[p] for p in build_pkgs if RUNTIME.get(p)} | RUNTIME_EXTRA
    unknown = [p for p in build_pkgs if p not in RUNTIME]
    for p in unknown:
        bad("top", "tools/deps.sh builds with %s: check-examples.py does not know its Debian 12 "
            "runtime package (add it to RUNTIME)" % p)
    got = [p for _, i, a in final["ins"] if i == "RUN" for p in apt_packages(a)]
    for p in sorted(want - set(got)):
        bad("line %d" % final["line"], "the runtime stage does not install %s" % p)
    for p in got:
        if p not in want:
            bad("line %d" % final["line"], "the runtime stage installs %s, not one of the Debian 12 "
                "runtime packages (%s)" % (p, " ".join(sorted(want))))
    froms = {"0"} | ({first["name"]} if first["name"] else set())
    if not any(i == "COPY" and m.group(1) in froms for _, i, a in final["ins"]
               for m in re.finditer(r"--from=(\S+)", a)):
        bad("line %d" % final["line"], "the runtime stage copies nothing from the build stage")
    users = [(n, a.strip()) for n, i, a in final["ins"] if i == "USER"]
    if not users:
        bad("line %d" % final["line"], "the runtime stage has no USER: it would run as root")
    elif users[-1][1].split(":")[0] in ROOT_USERS:
        bad("line %d" % users[-1][0], "USER %s is root" % users[-1][1])
    ep = [(n, exec_form(a)) for n, i, a in final["ins"] if i == "ENTRYPOINT"]
    if not ep or ep[-1][1] != ["vx"]:
        bad("line %d" % (ep[-1][0] if ep else final["line"]), 'ENTRYPOINT is not ["vx"] (exec form)')
    cmd = [(n, exec_form(a)) for n, i, a in final["ins"] if i == "CMD"]
    if not cmd or not cmd[-1][1] or cmd[-1][1][0] != "watch":
        bad("line %d" % (cmd[-1][0] if cmd else final["line"]),
            'CMD is not ["watch", ...] (exec form)')


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--deps", default=os.path.join(ROOT, "tools", "deps.sh"))
    ap.add_argument("files", nargs="+")
    args = ap.parse_args(argv)
    problems = []
    for path in args.files:
        try:
            with open(path) as f:
                text = f.read()
        except OSError as e:
            problems.append("%s: %s" % (path, e))
            continue
        if path.endswith(".service"):
            check_unit(path, text, problems)
        elif os.path.basename(path) == "Dockerfile":
            check_dockerfile(path, text, build_packages(args.deps), problems)
        else:
            problems.append("%s: neither a systemd unit (*.service) nor a Dockerfile" % path)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
