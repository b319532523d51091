"""Runs a folder's Python unittest files and ends with one 'NAME: N passed, N failed' line.

usage: python3 tests/run_unittest.py NAME DIR [PATTERN] [VAR=VALUE...] [-- NAME DIR [PATTERN] [VAR=VALUE...]]...

Each test file (module) runs in its own Python process, in DIR, VX_TEST_JOBS of them at
once (default: four per CPU; on two cores make check's suites took 273 s with 4 and 234 s
with 8: the end-to-end tests wait on vx, git and the fake as much as they compute).
Files start longest first, by the table in DIR/durations.txt (unknown files first, then
by size). A file's output is printed whole when it ends, followed by a progress line
'NAME: [i/n] FILE ok (s)'.

Several suites separated by '--' share one pool; VAR=VALUE sets an environment
variable for one suite's files only (make check runs e2e and e2e-asan that way).
Each suite ends with its own count line, in the order given.

Exit status 0 only when every test of every suite passed, at least one ran in each,
and none was skipped.
"""
import concurrent.futures
import fnmatch
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest


class Suite:
    def __init__(self, name, folder, pattern, env):
        self.name, self.folder, self.pattern, self.env = name, os.path.abspath(folder), pattern, env
        self.passed = self.failed = self.done = 0
        self.skipped = False
        self.ran = 0
        self.files = modules(self.folder, pattern)


def parse(argv):
    """NAME DIR [PATTERN] [VAR=VALUE...] groups, separated by '--'."""
    suites, group = [], []
    for arg in argv + ["--"]:
        if arg != "--":
            group.append(arg)
            continue
        if not group:
            continue
        env = dict(a.split("=", 1) for a in group[2:] if "=" in a)
        rest = [a for a in group[2:] if "=" not in a]
        if len(group) < 2 or len(rest) > 1:
            sys.exit("usage: run_unittest.py NAME DIR [PATTERN] [VAR=VALUE...] [-- NAME DIR ...]")
        suites.append(Suite(group[0], group[1], rest[0] if rest else "test_*.py", env))
        group = []
    if not suites:
        sys.exit("usage: run_unittest.py NAME DIR [PATTERN] [VAR=VALUE...] [-- NAME DIR ...]")
    return suites


def modules(folder, pattern):
    """The test files unittest's discovery would load from folder."""
    return sorted(f for f in os.listdir(folder)
                  if f.endswith(".py") and fnmatch.fnmatch(f, pattern)
                  and os.path.isfile(os.path.join(folder, f)))


def expected(suite):
    """Seconds each file of the suite took, from DIR/durations.txt: lines 'FILE SECONDS', or
    'NAME FILE SECONDS' for suite NAME only (e2e-asan's files are slower than e2e's)."""
    table = {}
    try:
        with open(os.path.join(suite.folder, "durations.txt")) as f:
            for line in f:
                fields = line.split("#", 1)[0].split()
                if len(fields) == 2:
                    table.setdefault(fields[0], float(fields[1]))
                elif len(fields) == 3 and fields[0] == suite.name:
                    table[fields[1]] = float(fields[2])
    except (OSError, ValueError):
        pass
    return table


def schedule(suites):
    """Every suite's files in one list, longest expected first: unknown files first (a new
    file may be the slowest), then by the table, then by size."""
    work = []
    for s in suites:
        table = expected(s)
        for f in s.files:
            size = os.path.getsize(os.path.join(s.folder, f))
            work.append(((f in table, -table.get(f, 0), -size, f, s.name), s, f))
    return [(s, f) for _, s, f in sorted(work, key=lambda w: w[0])]


def child(folder, filename, counts):
    """Runs one file as unittest's discovery would, and writes its counts to a JSON file."""
    sys.path.insert(0, folder)
    suite = unittest.defaultTestLoader.discover(folder, pattern=filename, top_level_dir=folder)
    result = unittest.TextTestRunner(stream=sys.stdout,
                                     verbosity=int(os.environ.get("VX_TEST_VERBOSITY", "1"))).run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    with open(counts, "w") as f:
        json.dump({"run": result.testsRun, "failed": failed, "skipped": len(result.skipped)}, f)
    return 0 if failed == 0 else 1


def jobs():
    env = os.environ.get("VX_TEST_JOBS", "")
    if env:
        try:
            n = int(env)
        except ValueError:
            sys.exit("run_unittest.py: VX_TEST_JOBS must be a number, not %r" % env)
        return max(1, n)
    return 4 * (os.cpu_count() or 1)


class Pool:
    def __init__(self, suites, tmp):
        self.suites, self.tmp = suites, tmp
        self.total = sum(len(s.files) for s in suites)
        self.started = 0
        self.lock = threading.Lock()
        self.procs = set()
        self.stopping = False

    def run_one(self, suite, filename):
        fd, counts = tempfile.mkstemp(suffix=".json", dir=self.tmp)
        os.close(fd)
        env = dict(os.environ)
        env.update(suite.env)
        env["PYTHONUNBUFFERED"] = "1"
        start = time.monotonic()
        with tempfile.TemporaryFile(dir=self.tmp) as out:
            with self.lock:
                if self.stopping:
                    return
                # Its own process group, so an interrupt can stop its fakes and vx too.
                p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child",
                                      suite.folder, filename, counts],
                                     cwd=suite.folder, env=env, stdin=subprocess.DEVNULL,
                                     stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
                self.procs.add(p)
            code = p.wait()
            with self.lock:
                self.procs.discard(p)
            secs = time.monotonic() - start
            out.seek(0)
            text = out.read().decode("utf-8", "replace")
        try:
            with open(counts) as f:
                c = json.load(f)
        except (OSError, ValueError):
            # It died before counting (a crash, a kill): one failure, and say so.
            c = {"run": 0, "failed": 1, "skipped": 0}
            text += "\n%s: %s ended with status %d before reporting its tests\n" % (suite.name, filename, code)
        if code != 0 and c["failed"] == 0:
            c["failed"] = 1
            text += "\n%s: %s exited with status %d\n" % (suite.name, filename, code)
        with self.lock:
            suite.done += 1
            suite.ran += c["run"]
            suite.failed += c["failed"]
            suite.passed += max(0, c["run"] - c["failed"] - c["skipped"])
            suite.skipped = suite.skipped or c["skipped"] > 0
            self.started += 1
            status = "ok" if c["failed"] == 0 else "FAILED"
            if c["skipped"]:
                status += " (%d skipped)" % c["skipped"]
            # One write, so that the output of two files never interleaves.
            sys.stdout.write("%s%s%s: [%d/%d] %s %s (%.1f s)\n" % (
                text, "" if text.endswith("\n") or not text else "\n",
                suite.name, suite.done, len(suite.files), filename, status, secs))
            sys.stdout.flush()

    def stop(self):
        with self.lock:
            self.stopping = True
            for p in self.procs:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except OSError:
                    pass

    def run(self, n):
        work = []
        order = schedule(self.suites)
        with concurrent.futures.ThreadPoolExecutor(max_workers=n) as ex:
            try:
                work = [ex.submit(self.run_one, s, f) for s, f in order]
                for w in work:
                    w.result()
            except BaseException:
                for w in work:
                    w.cancel()
                self.stop()
                raise


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        return child(sys.argv[2], sys.argv[3], sys.argv[4])
    suites = parse(sys.argv[1:])
    # A CI timeout or kill stops the files running, not only this process.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="vx-run-unittest-") as tmp:
        n = jobs()
        Pool(suites, tmp).run(n)
    ok = True
    for s in suites:
        print("%s: %d passed, %d failed" % (s.name, s.passed, s.failed))
        ok = ok and s.failed == 0 and s.ran > 0 and not s.skipped
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
