"""Shared pieces of the end-to-end tests: the fake Google Cloud, a stack in a
temporary git repository, and running the built vx binary against them.

Standard library only, but for python3-jsonschema (schemas.py checks the JSON vx
prints against docs/*.schema.json). VX_BIN names the binary under test.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import schemas

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FAKE = os.path.join(ROOT, "tests", "fakegcp", "fakegcp.py")
VX_BIN = os.environ.get("VX_BIN", os.path.join(ROOT, "build", "vx"))
PROJECT = "vx-e2e"
REGION = "us-central1"


_FAKE_KEYS = []


def fake_keys():
    """PEM RSA keys for the service accounts a fake mints, from openssl: the fake's own
    Python keygen took a second or more of CPU per test. Made once per test file (process)
    and given to each of its fakes: openssl took 0.3 s of CPU a key, which was half of a
    small test's CPU. A fake gives each account it mints a random email and key id, so
    one fake still knows nothing of another's accounts. make check makes them once for
    all its files (VX_E2E_KEYS, a PEM file of two keys): 260 openssl runs were 3% of its
    CPU."""
    path = os.environ.get("VX_E2E_KEYS")
    if not _FAKE_KEYS and path:
        with open(path, "rb") as f:
            _FAKE_KEYS.append(f.read())
    if not _FAKE_KEYS:
        _FAKE_KEYS.append(b"".join(
            subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
                           check=True, capture_output=True).stdout for _ in range(2)))
    return _FAKE_KEYS[0]


class Fake:
    """The fake Google Cloud on a free loopback port, with a minted key."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.create_rate = 0    # raise_create_quota()
        ready = os.path.join(tmp, "fake.ready")
        keys = os.path.join(tmp, "fake-keys.pem")
        with open(keys, "wb") as f:
            f.write(fake_keys())
        os.chmod(keys, 0o600)
        self.log = open(os.path.join(tmp, "fake.log"), "wb")
        self.proc = subprocess.Popen(
            # A frozen clock (2026-01-01, moving only when a test says): the same times every run.
            [sys.executable, FAKE, "--port", "0", "--ready-file", ready, "--keys", keys, "--clock", "frozen"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        self.url = ""
        while not self.url:
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("fake did not start: see %s" % self.log.name)
            time.sleep(0.05)
            if os.path.exists(ready):
                with open(ready) as f:
                    self.url = f.read().strip()
        key = self.post("/_fake/service-accounts", {"project": PROJECT})
        self.key_file = os.path.join(tmp, "key.json")
        with open(self.key_file, "w") as f:
            json.dump(key, f)
        os.chmod(self.key_file, 0o600)

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            raw = r.read()
        return json.loads(raw) if raw else {}

    def post(self, path, body):
        return self.call("POST", path, body)

    def get(self, path):
        return self.call("GET", path)

    def jobs(self):
        got = self.get("/_fake/jobs")
        return got["customJobs"] if isinstance(got, dict) else got

    def requests(self):
        return self.get("/_fake/requests")

    def rpc_count(self, rpc):
        return self.requests().get("by_rpc", {}).get(rpc, 0)

    def cancel_behind_vx(self, name):
        """Cancels a job through the real API, as someone using gcloud would."""
        self.post("/_fake/tokens", {"token": "outsider-token"})
        req = urllib.request.Request(self.url + "/v1/" + name + ":cancel", data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json",
                                              "Authorization": "Bearer outsider-token"})
        with urllib.request.urlopen(req, timeout=30) as r:
            r.read()

    def raise_create_quota(self, per_minute=100000):
        """A project whose Vertex creation quota was raised, on both sides: the fake allows
        per_minute creates and every vx run with env() paces itself to that number (still
        paced, only faster). At Google's 60 a minute vx creates 6 at once and then about one
        a second, which a test of many jobs that is not about pacing spends waiting."""
        self.post("/_fake/rate-limits", {"vertex_creates_per_minute": per_minute})
        self.create_rate = per_minute

    def advance(self, seconds):
        return self.post("/_fake/clock", {"advance_seconds": seconds})

    def env(self):
        # Not the CI's own variables either: they would name the actor and
        # pull request of the CI run testing vx (workflow/ci.h), not the test's.
        e = {k: v for k, v in os.environ.items()
             if not k.startswith(("GOOGLE_", "CLOUDSDK_", "GCE_", "GITHUB_", "GITLAB_", "CI_"))
             and k != "VX_ACTOR"}
        e.update({
            "GOOGLE_APPLICATION_CREDENTIALS": self.key_file,
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM": self.url + "/v1/",
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE": self.url + "/compute/v1/",
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDQUOTAS": self.url + "/v1/",
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": self.url + "/storage/v1/",
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDRESOURCEMANAGER": self.url + "/v3/",
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_SERVICEUSAGE": self.url + "/serviceusage/v1/",
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_IAM": self.url + "/iam/v1/",
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_LOGGING": self.url + "/v2/",
            "CLOUDSDK_CONFIG": os.path.join(self.tmp, "gcloud-none"),
            "METADATA_SERVER_DETECTION": "none",
            # The tests' webhook receivers listen on 127.0.0.1.
            "VX_NOTIFY_ALLOW_LOOPBACK": "1",
            "NO_COLOR": "1",
            # A save writes only the records marked changed (docs/state.md): here
            # it also checks that every record it skips is as stored, so a change
            # made without its mark fails the test that makes it.
            "VX_STATE_CHECK_MARKS": "1",
            "HOME": self.tmp,
            "GIT_AUTHOR_NAME": "vx-e2e", "GIT_AUTHOR_EMAIL": "e2e@example.com",
            "GIT_COMMITTER_NAME": "vx-e2e", "GIT_COMMITTER_EMAIL": "e2e@example.com",
        })
        if self.create_rate:
            e["VX_CREATE_RATE_PER_MINUTE"] = str(self.create_rate)
        return e


STACK = """kind: Stack
name: {stack}
project: {project}
region: {region}
labels: {{team: e2e}}
"""

JOB = """---
kind: CustomJob
name: {name}
spec:
  workerPoolSpecs:
    - machineSpec: {{machineType: {machine}, acceleratorType: {accel}, acceleratorCount: {count}}}
      replicaCount: 1
      containerSpec:
        imageUri: "us-docker.pkg.dev/p/r/trainer:{tag}"
        args: ["--epochs", "{epochs}"]{env}
  scheduling: {{strategy: {strategy}}}
  baseOutputDirectory: {{outputUriPrefix: "gs://e2e-bucket/{name}"}}
run: {run}
resubmit: {{on: [{on}], maxAttempts: {attempts}}}
onChange: {on_change}
protect: {protect}
"""


def job_yaml(name, epochs=3, run=1, on="stockout, preempted", attempts=3, on_change="replace",
             protect="false", machine="g2-standard-4", accel="NVIDIA_L4", count=1, tag="1.0",
             strategy="STANDARD", env_secret=False):
    env = ""
    if env_secret:
        env = ("\n        env:\n          - {name: WANDB_API_KEY, value: hunter2-training-secret, sensitive: true}"
               "\n          - {name: EPOCHS_HINT, value: plain}")
    return JOB.format(name=name, epochs=epochs, run=run, on=on, attempts=attempts,
                      on_change=on_change, protect=protect, machine=machine, accel=accel,
                      count=count, tag=tag, strategy=strategy, env=env)


def process_state(pid):
    """The state letter of /proc/PID/stat ('T' when stopped), or None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except FileNotFoundError:
        return None
    return stat[stat.rindex(")") + 2]


def asan_build():
    """Whether VX_BIN is the AddressSanitizer build (make check's e2e-asan pool)."""
    return "/asan/" in VX_BIN


class Result:
    def __init__(self, cp, cwd=None):
        self.code = cp.returncode
        self.out = cp.stdout
        self.err = cp.stderr
        self.args, self.cwd = cp.args, cwd

    def checked(self):
        if self.code >= 128 or self.code < 0 or "Sanitizer" in self.err or "runtime error:" in self.err:
            raise AssertionError("vx crashed or a sanitizer complained:\n%r" % self)
        # The JSON it printed or saved (plan, status, report) against its published schema,
        # before any test reads it (schemas.py).
        schemas.check_run(self.args, self, self.cwd)
        return self

    def __repr__(self):
        return "exit %d\n--- stdout\n%s\n--- stderr\n%s" % (self.code, self.out, self.err)


class Repo:
    """A git repository holding a stack in its directory 'stack/'."""

    def __init__(self, tmp, fake, stack="e2e"):
        self.root = os.path.join(tmp, "repo")
        self.dir = os.path.join(self.root, "stack")
        self.fake = fake
        self.stack = stack
        os.makedirs(self.dir)
        self.git("init", "-q", "-b", "main")
        self.jobs = {}

    def git(self, *args):
        return subprocess.run(["git", "-C", self.root] + list(args), check=True,
                              capture_output=True, text=True, env=self.fake.env()).stdout

    def write(self, jobs=None, extra_stack=""):
        if jobs is not None:
            self.jobs = dict(jobs)
        text = STACK.format(stack=self.stack, project=PROJECT, region=REGION) + extra_stack
        with open(os.path.join(self.dir, "stack.yaml"), "w") as f:
            f.write(text)
        path = os.path.join(self.dir, "jobs.yaml")
        if self.jobs:
            with open(path, "w") as f:
                f.write("".join(self.jobs[k] for k in sorted(self.jobs)))
        elif os.path.exists(path):
            os.remove(path)
        self.git("add", "-A")
        self.git("commit", "-q", "-m", "stack change", "--allow-empty")

    def vx(self, *args, timeout=120, env=None):
        e = self.fake.env()
        if env:
            e.update(env)
        cp = subprocess.run([VX_BIN] + list(args), cwd=self.root, capture_output=True,
                            text=True, timeout=timeout, env=e, stdin=subprocess.DEVNULL)
        return Result(cp, self.root).checked()

    def plan(self, *args, **kw):
        return self.vx("plan", self.dir, *args, **kw)

    def apply(self, *args, **kw):
        return self.vx("apply", self.dir, "-auto-approve", *args, **kw)

    def start_apply(self, *args):
        """An apply in the background (auto-approved), for tests that interrupt or race it."""
        return subprocess.Popen([VX_BIN, "apply", self.dir, "-auto-approve"] + list(args),
                                cwd=self.root, env=self.fake.env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)

    @staticmethod
    def finish(p, timeout=120):
        """Waits for a start_apply process; its Result, checked for crashes and sanitizer reports."""
        out, err = p.communicate(timeout=timeout)
        return Result(subprocess.CompletedProcess(p.args, p.returncode, out, err)).checked()

    def state_log(self):
        return self.git("log", "--format=%B%x00", "vx/state/%s" % self.stack).split("\x00")

    def lease_log(self):
        """The messages of the lease ref's commits (refs/vx/lease/STACK), newest first."""
        return self.git("log", "--format=%B%x00", "refs/vx/lease/%s" % self.stack).split("\x00")


class FakeTestCase(unittest.TestCase):
    """Each test gets a fresh fake and a fresh repository."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vx-e2e-")
        self.fake = Fake(self.tmp)
        self.repo = Repo(self.tmp, self.fake)

    def tearDown(self):
        self.fake.close()
        if os.environ.get("VX_E2E_KEEP"):
            print("kept", self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def block(self, out, address="job.a"):
        """The plan's lines for address (its header line and the indented ones under it)."""
        lines = out.splitlines()
        for i, l in enumerate(lines):
            if re.match(r"^\s+\S+\s+%s\s" % re.escape(address), l + " "):
                got = [l.strip()]
                for m in lines[i + 1:]:
                    if not m.startswith("        "):
                        break
                    got.append(m.strip())
                return got
        self.fail("no plan lines for %s in:\n%s" % (address, out))

    def live_jobs(self, job=None):
        out = []
        for j in self.fake.jobs():
            labels = j.get("labels", {})
            if labels.get("vx-stack") != self.repo.stack:
                continue
            if job and labels.get("vx-job") != job:
                continue
            out.append(j)
        return out

    def active(self, job=None):
        return [j for j in self.live_jobs(job) if j["state"] in (
            "JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING")]


def wait_ok_cycles(metrics, n, said=lambda: "", timeout=60):
    """Waits until the watcher writing metrics has run n more cycles ok (its -metrics file counts
    them); said() is what it printed, for the failure."""
    want = ok_cycles(metrics) + n
    deadline = time.time() + timeout
    while ok_cycles(metrics) < want:
        if time.time() > deadline:
            raise AssertionError("the watcher ran no cycles:\n" + said())
        time.sleep(0.02)


def ok_cycles(metrics):
    """How many cycles a watcher's -metrics file counts as ok (0 before the first)."""
    try:
        with open(metrics) as f:
            for line in f:
                if line.startswith('vx_watch_cycles_total{result="ok"} '):
                    return int(line.split()[1])
    except FileNotFoundError:
        pass
    return 0
