#!/usr/bin/env python3
"""Checks the man pages in man/ against the command table in cmd/.

The flags come from the C source, the one list there is: cmd/main.c's table
of commands, each entry's .name and .opts in cmd/*.c, the flag tables those
name (a macro such as CMD_PLANNING_OPTS is expanded from its #define).

Fails when
  * a command of the table has no page man/vx-NAME.1 ('help' is vx(1)'s);
  * a flag of a command's table is not an item (.It Fl NAME) in its page's
    OPTIONS section (vxplan.1 and vxapply.1 too, for plan and apply);
  * a page's SYNOPSIS or OPTIONS names a flag (Fl NAME) its command lacks
    (-help, -h and -debug are every command's).
A hidden command (.hidden = 1) needs no page; one with .stack_dir takes -C and
-chdir (cmd_stack_opts) beside its own flags.
A page for a command not in the table yet (one being added on another branch)
is reported and not checked; it is once the command merges.
With mandoc installed, every page must also be 'mandoc -T lint' clean.

usage: tools/check-man.py [ROOT]    (default: the repository holding this file)
"""
import os
import re
import shutil
import subprocess
import sys

EVERY_COMMAND = {"help", "h", "debug"}
ALIASES = {"plan": "vxplan.1", "apply": "vxapply.1"}
NO_PAGE = {"help"}


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def strip_comments(src):
    """src without its comments (a string such as "vx/state/*" is not one)."""
    return re.sub(r'("(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\')|/\*.*?\*/|//[^\n]*',
                  lambda m: m.group(1) or " ", src, flags=re.S)


def table_flags(body, macros):
    """The flag names of one initializer body, macros expanded."""
    flags = []
    for m in re.finditer(r'\{\s*(?:\.name\s*=\s*)?"([^"]+)"|\b([A-Z][A-Z0-9_]+)\b', body):
        if m.group(1):
            flags.append(m.group(1))
        elif m.group(2) in macros:
            flags.extend(table_flags(macros[m.group(2)], macros))
    return flags


def command_flags(root):
    """{command name: [flags]} for every command in cmd/main.c's table."""
    srcs = {}
    for name in sorted(os.listdir(os.path.join(root, "cmd"))):
        if name.endswith((".c", ".h")):
            srcs[name] = strip_comments(read(os.path.join(root, "cmd", name)))
    allsrc = "\n".join(srcs.values())
    macros = {}
    for m in re.finditer(r"#define\s+([A-Z][A-Z0-9_]+)\s+((?:.*\\\n)*.*)", allsrc):
        macros[m.group(1)] = m.group(2).replace("\\\n", " ")
    tables = {}
    for m in re.finditer(r"struct\s+cmd_opt\s+(\w+)\s*\[\s*\]\s*=\s*\{(.*?)\};", allsrc, re.S):
        tables[m.group(1)] = table_flags(m.group(2), macros)
    main = srcs.get("main.c", "")
    m = re.search(r"commands\s*\[\s*\]\s*=\s*\{(.*?)\};", main, re.S)
    if not m:
        raise SystemExit("check-man: cannot find the table of commands in cmd/main.c")
    result = {}
    for entry in re.findall(r"&\s*(\w+)", m.group(1)):
        e = re.search(r"struct\s+cmd_entry\s+" + entry + r"\s*=\s*\{(.*?)\};", allsrc, re.S)
        if not e:
            raise SystemExit("check-man: cannot find %s in cmd/" % entry)
        name = re.search(r'\.name\s*=\s*"([^"]+)"', e.group(1))
        opts = re.search(r"\.opts\s*=\s*(\w+)", e.group(1))
        if not name:
            raise SystemExit("check-man: %s has no .name" % entry)
        if opts and opts.group(1) != "NULL" and opts.group(1) not in tables:
            raise SystemExit("check-man: %s's flag table %s not found" % (entry, opts.group(1)))
        if re.search(r"\.hidden\s*=\s*1", e.group(1)):
            continue  # not in vx help, not completed: no page either
        flags = list(tables[opts.group(1)]) if opts and opts.group(1) != "NULL" else []
        # .stack_dir: cmd_run parses -C DIR and -chdir=DIR (cmd_stack_opts) for it.
        if re.search(r"\.stack_dir\s*=\s*1", e.group(1)):
            flags += tables.get("cmd_stack_opts", [])
        result[name.group(1)] = flags
    return result


def sections(text):
    """{section name: [lines]} of an mdoc page."""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"\.Sh\s+(.*)", line)
        if m:
            cur = m.group(1).strip().strip('"')
            out.setdefault(cur, [])
        elif cur:
            out[cur].append(line)
    return out


def flags_named(lines):
    found = set()
    for line in lines:
        if line.startswith("."):
            found.update(re.findall(r"\bFl\s+([A-Za-z0-9][-A-Za-z0-9]*)", line))
    return found


def items(lines):
    found = set()
    for line in lines:
        if re.match(r"\.It\b", line):
            found.update(re.findall(r"\bFl\s+([A-Za-z0-9][-A-Za-z0-9]*)", line))
    return found


def check_page(path, cmd, flags):
    problems = []
    rel = os.path.join("man", os.path.basename(path))
    secs = sections(read(path))
    listed = items(secs.get("OPTIONS", []))
    for f in flags:
        if f not in listed:
            problems.append("%s: -%s (a flag of vx %s) is not listed in OPTIONS (.It Fl %s)" % (rel, f, cmd, f))
    named = flags_named(secs.get("SYNOPSIS", []) + secs.get("OPTIONS", []))
    for f in sorted(named - set(flags) - EVERY_COMMAND):
        problems.append("%s: names -%s, which vx %s does not have" % (rel, f, cmd))
    return problems


def lint(root, pages):
    if not pages:
        return []
    if not shutil.which("mandoc"):
        print("check-man: mandoc not installed: 'mandoc -T lint' skipped (tools/deps.sh installs it)")
        return []
    cp = subprocess.run(["mandoc", "-T", "lint", "-W", "warning"] + pages,
                        capture_output=True, text=True, cwd=root)
    out = (cp.stdout + cp.stderr).strip()
    return [line for line in out.splitlines() if line] if cp.returncode or out else []


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    mandir = os.path.join(root, "man")
    commands = command_flags(root)
    problems = []
    for cmd, flags in commands.items():
        if cmd in NO_PAGE:
            continue
        page = os.path.join(mandir, "vx-%s.1" % cmd)
        if not os.path.exists(page):
            problems.append("man/vx-%s.1: missing: every command has a page (vx %s)" % (cmd, cmd))
            continue
        problems += check_page(page, cmd, flags)
        if cmd in ALIASES:
            problems += check_page(os.path.join(mandir, ALIASES[cmd]), cmd, flags)
    pages = sorted(n for n in os.listdir(mandir) if re.match(r".*\.[1-8]$", n))
    for name in pages:
        m = re.match(r"vx-(.*)\.1$", name)
        if m and m.group(1) not in commands:
            print("check-man: man/%s: no command '%s' in cmd/main.c yet: its flags are not checked"
                  % (name, m.group(1)))
    problems += lint(root, [os.path.join("man", n) for n in pages])
    for p in problems:
        print("check-man: " + p, file=sys.stderr)
    if problems:
        return 1
    print("check-man: %d pages, %d commands: ok" % (len(pages), len(commands)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
