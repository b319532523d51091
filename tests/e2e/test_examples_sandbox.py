"""End to end: every example stack under examples/ runs in the sandbox (issue 32).

As a new user would: the example's directory copied into a git repository of their own and
committed, a fresh sandbox (tools/sandbox --print), the sandbox steps the example's comments give
(a `curl ... $VX_SANDBOX_URL` line), then `vx validate`, `vxplan` and `vxapply -auto-approve`, each
of which must succeed. examples/reserved once failed here: it named a git remote a new repository
does not have, and its quota request was a decrease against the fake's default."""
import glob
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from harness import ROOT
from sandboxenv import Sandbox

EXAMPLES = os.path.join(ROOT, "examples")


def example_stacks():
    """The directories of examples/ that hold a Stack document."""
    out = []
    for d in sorted(os.listdir(EXAMPLES)):
        for f in glob.glob(os.path.join(EXAMPLES, d, "*.y*ml")):
            with open(f) as fh:
                if re.search(r"^kind: Stack\s*$", fh.read(), re.M):
                    out.append(d)
                    break
    return out


def sandbox_steps(example):
    """The commands the example's comments give for the sandbox: `#   curl ... $VX_SANDBOX_URL ...`."""
    steps = []
    for f in sorted(glob.glob(os.path.join(EXAMPLES, example, "*.y*ml"))):
        with open(f) as fh:
            for line in fh:
                m = re.match(r"^#\s+(curl .*\$VX_SANDBOX_URL.*)$", line.rstrip("\n"))
                if m:
                    steps.append(m.group(1))
    return steps


class ExamplesInTheSandbox(unittest.TestCase):
    maxDiff = None

    def test_the_examples_are_the_stacks_we_expect(self):
        # A new example is run below without a change here; one gone is noticed.
        self.assertEqual(example_stacks(), ["calendar", "gemma2-flex", "multi-gpu", "persistent", "quickstart", "reserved",
                                            "sweep"])

    def run_example(self, name):
        tmp = tempfile.mkdtemp(prefix="vx-e2e-example-")
        self.addCleanup(shutil.rmtree, tmp, True)
        sandbox = Sandbox(tmp)
        self.addCleanup(sandbox.close)
        repo = os.path.join(tmp, "repo")
        shutil.copytree(os.path.join(EXAMPLES, name), os.path.join(repo, name))
        sandbox.git(repo, "init", "-q", "-b", "main")
        sandbox.git(repo, "add", "-A")
        sandbox.git(repo, "commit", "-qm", "the %s example" % name)
        for step in sandbox_steps(name):
            cp = subprocess.run(["bash", "-c", "curl() { command curl -f \"$@\"; }\n" + step], env=sandbox.env,
                                capture_output=True, text=True, timeout=60)
            self.assertEqual((cp.returncode, cp.stderr), (0, ""), step)
        r = sandbox.run(["vx", "validate", name], repo)
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertRegex(r.out, r"^stack \S+: .*: valid\n$")
        r = sandbox.run(["vxplan", name], repo)
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertRegex(r.out, r"\nPlan: [1-9]\d* to create[,.] .*0 unchanged\.\n")
        r = sandbox.run(["vxapply", "-auto-approve", name], repo)
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertRegex(r.out, r"\nApply complete: [1-9]\d* done, 0 failed\.\n$")
        # Applied: the next plan has nothing to do (a sweep's other runs wait for these).
        r = sandbox.run(["vxplan", name, "-detailed-exitcode"], repo)
        self.assertEqual((r.code, r.err), (0, ""), r)

    def test_calendar(self):
        self.run_example("calendar")

    def test_gemma2_flex(self):
        self.run_example("gemma2-flex")

    def test_multi_gpu(self):
        self.run_example("multi-gpu")

    def test_persistent(self):
        self.run_example("persistent")

    def test_quickstart(self):
        self.run_example("quickstart")

    def test_reserved(self):
        self.run_example("reserved")

    def test_sweep(self):
        self.run_example("sweep")


if __name__ == "__main__":
    unittest.main()
