"""End to end: tools/sandbox, the fake Google Cloud for a new user (issue 11).

`--print` must give a shell environment under which vx plans and applies
against the fake the sandbox started (and nothing else), and the default mode
must run a shell in that environment and stop the fake when the shell exits.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.request

from harness import ROOT, VX_BIN

SANDBOX = os.path.join(ROOT, "tools", "sandbox")

STACK = """kind: Stack
name: trial
project: my-project
region: us-central1
---
kind: CustomJob
name: hello
spec:
  workerPoolSpecs:
    - machineSpec: {machineType: n1-standard-4}
      replicaCount: 1
      containerSpec: {imageUri: "us-docker.pkg.dev/p/r/hello:1"}
"""

PLAN = """Stack trial, project my-project
State: git refs/heads/vx/state/trial (serial 0)
Config: commit %s
Refresh: live jobs read in 1 region (us-central1)

  +   job.hello create
        n1-standard-4 ×1, STANDARD in us-central1
        new job

Plan: 1 to create. 0 unchanged.
"""


def gone(pid):
    """Whether pid has exited (a zombie waiting for its reaper counts as exited)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


class Sandbox(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vx-e2e-sandbox-")
        self.repo = os.path.join(self.tmp, "repo")
        os.makedirs(os.path.join(self.repo, "trial"))
        with open(os.path.join(self.repo, "trial", "stack.yaml"), "w") as f:
            f.write(STACK)
        # The user's own environment, with no Google credentials of any kind.
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("GOOGLE_", "CLOUDSDK_", "GCE_", "VX_SANDBOX"))}
        self.env.update({"HOME": self.tmp, "NO_COLOR": "1", "VX_BIN": VX_BIN,
                         "GIT_AUTHOR_NAME": "new", "GIT_AUTHOR_EMAIL": "new@example.com",
                         "GIT_COMMITTER_NAME": "new", "GIT_COMMITTER_EMAIL": "new@example.com"})
        for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "trial"]):
            subprocess.run(["git", "-C", self.repo] + args, check=True, capture_output=True,
                           env=self.env)
        self.commit = subprocess.run(["git", "-C", self.repo, "rev-parse", "HEAD"], check=True,
                                     capture_output=True, text=True).stdout.strip()
        self.pid = None

    def tearDown(self):
        if self.pid and not gone(self.pid):
            os.kill(self.pid, 15)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def sh(self, script, **kw):
        return subprocess.run(["sh", "-c", script], cwd=self.repo, env=self.env,
                              capture_output=True, text=True, timeout=120, **kw)

    def test_print_gives_an_environment_vx_plans_and_applies_in(self):
        world = os.path.join(self.tmp, "world")
        cp = self.sh('lines=$(%s --print --dir %s) || exit 9\neval "$lines"\n'
                     'echo "$VX_SANDBOX_PID $VX_SANDBOX_URL" > ../sandbox.ids\n'
                     '"$VX_BIN" plan trial -detailed-exitcode; echo "plan=$?"\n'
                     '"$VX_BIN" apply trial -auto-approve > ../apply.out; echo "apply=$?"\n'
                     % (SANDBOX, world))
        ids = os.path.join(self.tmp, "sandbox.ids")
        if os.path.exists(ids):
            with open(ids) as f:
                pid, url = f.read().split()
            self.pid = int(pid)  # stopped by tearDown should an assertion fail
        self.assertEqual((cp.returncode, cp.stdout, cp.stderr),
                         (0, PLAN % self.commit[:12] + "plan=2\napply=0\n", ""))
        # The job is in the fake the sandbox started, which is still running.
        with urllib.request.urlopen(url + "/_fake/jobs", timeout=30) as r:
            jobs = json.load(r)["customJobs"]
        self.assertEqual([(j["labels"]["vx-stack"], j["labels"]["vx-job"]) for j in jobs],
                         [("trial", "hello")])
        key = os.path.join(world, "key.json")
        self.assertEqual(os.stat(key).st_mode & 0o777, 0o600)
        # The printed stop command stops it.
        os.kill(self.pid, 15)
        deadline = time.time() + 30
        while not gone(self.pid):  # not our child: poll for its exit
            self.assertLess(time.time(), deadline, "the fake did not stop on SIGTERM")
            time.sleep(0.05)
        self.assertTrue(os.path.exists(os.path.join(world, "world.json")), "its world is kept")

    def test_shell_runs_in_the_environment_and_leaving_it_stops_the_fake(self):
        env = dict(self.env, SHELL="/bin/sh")
        script = ('"$VX_BIN" plan trial > ../plan.out; echo "$?" > ../plan.rc\n'
                  'echo "$VX_SANDBOX_PID $VX_SANDBOX" > ../sandbox.ids\n'
                  'exit 3\n')
        cp = subprocess.run([SANDBOX], cwd=self.repo, env=env, input=script, capture_output=True,
                            text=True, timeout=120)
        with open(os.path.join(self.tmp, "sandbox.ids")) as f:
            pid, work = f.read().split()
        self.pid = int(pid)
        self.assertEqual(cp.returncode, 3, "the shell's exit status is the sandbox's")
        with open(os.path.join(self.tmp, "plan.out")) as f:
            self.assertEqual(f.read(), PLAN % self.commit[:12])
        self.assertTrue(gone(self.pid), "the fake stopped with the shell")
        self.assertFalse(os.path.exists(work), "its temporary directory is removed")


if __name__ == "__main__":
    unittest.main()
