"""End to end: credentials of every type against the fake, -wait, Ctrl-C,
-lock-timeout, the file backend, and two runners sharing a state remote."""
import json
import os
import select
import signal
import subprocess
import time
import unittest

from harness import FakeTestCase, PROJECT, Result, VX_BIN, job_yaml


class Credentials(FakeTestCase):
    """vx doctor with each kind of Application Default Credentials, all verified by the fake."""

    def doctor(self, env):
        self.repo.write({"a": job_yaml("a")})
        r = self.repo.vx("doctor", self.repo.dir, env=env)
        self.assertEqual(r.code, 0, r)
        self.assertIn("All checks passed.", r.out)
        return r

    def write_json(self, name, doc):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            json.dump(doc, f)
        os.chmod(path, 0o600)
        return path

    def test_authorized_user(self):
        cred = self.fake.post("/_fake/authorized-users", {})
        cred["token_uri"] = self.fake.url + "/token"
        r = self.doctor({"GOOGLE_APPLICATION_CREDENTIALS": self.write_json("user.json", cred)})
        self.assertIn("authorized_user", r.out)
        self.assertNotIn(cred["refresh_token"], r.out + r.err)
        self.assertGreaterEqual(self.fake.rpc_count("oauth2.token"), 1)

    def test_external_account(self):
        got = self.fake.post("/_fake/external-accounts", {
            "project": PROJECT, "subject_token_file": os.path.join(self.tmp, "oidc-token")})
        r = self.doctor({"GOOGLE_APPLICATION_CREDENTIALS": self.write_json("wif.json", got["credential"])})
        self.assertIn("workload identity federation", r.out)
        self.assertNotIn(got["subject_token"], r.out + r.err)
        self.assertEqual(self.fake.rpc_count("sts.token"), 1)
        self.assertEqual(self.fake.rpc_count("iamcredentials.generateAccessToken"), 1)

    def test_access_token(self):
        self.fake.post("/_fake/tokens", {"token": "ya29.from-the-environment"})
        r = self.doctor({"GOOGLE_OAUTH_ACCESS_TOKEN": "ya29.from-the-environment",
                         "GOOGLE_APPLICATION_CREDENTIALS": ""})
        self.assertIn("GOOGLE_OAUTH_ACCESS_TOKEN", r.out)
        self.assertNotIn("ya29.from-the-environment", r.out + r.err)

    def test_metadata_server(self):
        host = self.fake.url[len("http://"):]
        env = {"GOOGLE_APPLICATION_CREDENTIALS": "", "GCE_METADATA_HOST": host,
               "METADATA_SERVER_DETECTION": "assume-present"}
        self.repo.write({"a": job_yaml("a")})
        e = self.fake.env()
        e.pop("GOOGLE_APPLICATION_CREDENTIALS")
        e.update(env)
        del e["GOOGLE_APPLICATION_CREDENTIALS"]
        cp = subprocess.run([VX_BIN, "doctor", self.repo.dir], capture_output=True, text=True,
                            env=e, timeout=120)
        self.assertEqual(cp.returncode, 0, cp.stdout + cp.stderr)
        self.assertIn("metadata server", cp.stdout)
        self.assertGreaterEqual(self.fake.rpc_count("metadata.get"), 1)

    def test_revoked_token_refreshed_after_401(self):
        """A token the server stops accepting early: 401, one refresh, the call goes through."""
        self.repo.write({"a": job_yaml("a")})
        # The first create waits 1.5 s at the server before its token is checked.
        self.fake.post("/_fake/faults", {"latency_ms": 1500, "methods": ["CreateCustomJob"], "times": 1})
        p = self.repo.start_apply()
        deadline = time.time() + 60
        while self.fake.rpc_count("CreateCustomJob") < 1 and time.time() < deadline:
            time.sleep(0.02)
        self.fake.post("/_fake/tokens/expire", {})
        r = self.repo.finish(p)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.live_jobs("a")), 1)
        log = self.fake.requests()["log"]
        creates = [e["status"] for e in log if e["rpc"] == "CreateCustomJob"]
        self.assertEqual(creates, [401, 200])
        self.assertEqual(self.fake.rpc_count("oauth2.token"), 2)


class Operations(FakeTestCase):

    def wait_for_create_in_flight(self):
        """Until a create has reached the fake and is still being processed."""
        deadline = time.time() + 60
        while time.time() < deadline:
            log = self.fake.requests()["log"]
            if any(e["rpc"] == "CreateCustomJob" and e["status"] is None for e in log):
                return
            time.sleep(0.02)
        self.fail("no create reached the fake")

    def read_stderr_until(self, p, text, timeout=30):
        """What p wrote to stderr, read until it contains text (a failure if it never does)."""
        got = b""
        deadline = time.time() + timeout
        while text.encode() not in got:
            left = deadline - time.time()
            ready, _, _ = select.select([p.stderr], [], [], max(0, left))
            if not ready:
                self.fail("vx did not write %r to stderr in %d s; it wrote %r" % (text, timeout, got))
            chunk = os.read(p.stderr.fileno(), 65536)
            if not chunk:
                self.fail("vx ended before writing %r to stderr; it wrote %r" % (text, got))
            got += chunk
        return got.decode()

    def test_wait_until_running(self):
        self.fake.post("/_fake/clock", {"speed": 200})
        self.repo.write({"a": job_yaml("a")})
        r = self.repo.apply("-wait", env={"VX_WAIT_POLL_MS": "200"})
        self.assertEqual(r.code, 0, r)
        self.assertIn("Waiting for 1 job to run", r.out)
        self.assertIn(": running", r.out)

    def test_wait_done_fails_when_a_job_fails(self):
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "a"}, "outcome": "user-error"})
        self.fake.post("/_fake/timings", {"running_seconds": 60})
        self.fake.post("/_fake/clock", {"speed": 200})
        self.repo.write({"a": job_yaml("a")})
        r = self.repo.apply("-wait=done", env={"VX_WAIT_POLL_MS": "200"})
        self.assertEqual(r.code, 1, r)
        self.assertIn(": failed", r.out)

    def test_ctrl_c_finishes_in_flight_and_releases_the_lock(self):
        self.fake.post("/_fake/faults", {"latency_ms": 400, "methods": ["CreateCustomJob"]})
        self.repo.write({"j%d" % i: job_yaml("j%d" % i) for i in range(6)})
        p = self.repo.start_apply("-parallelism", "1")
        self.wait_for_create_in_flight()
        p.send_signal(signal.SIGINT)
        r = self.repo.finish(p, 60)
        self.assertEqual(r.code, 1, r)
        self.assertIn("Apply interrupted", r.out)
        self.assertIn("finishing the requests already sent", r.err)
        # The create on the wire finished and nothing new started.
        made = len(self.live_jobs())
        self.assertEqual(made, 1)
        # Nothing in flight was lost: the state knows every job that exists.
        r = self.repo.vx("state", "list", "-C", self.repo.dir)
        self.assertEqual(len([l for l in r.out.splitlines() if "customJobs/" in l]), made)
        self.fake.post("/_fake/faults", {})
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)   # the lock was released
        for i in range(6):
            self.assertEqual(len(self.live_jobs("j%d" % i)), 1)

    def test_second_ctrl_c_abandons_a_create_and_the_next_apply_adopts_it(self):
        self.fake.post("/_fake/faults", {"latency_ms": 1500, "methods": ["CreateCustomJob"]})
        self.repo.write({"j%d" % i: job_yaml("j%d" % i) for i in range(3)})
        p = self.repo.start_apply("-parallelism", "1")
        self.wait_for_create_in_flight()
        p.send_signal(signal.SIGINT)
        # The second interrupt only once vx has taken the first: two sent before it runs
        # would arrive as one (a sleep here was not enough with the files run in parallel).
        early = self.read_stderr_until(p, "vx: interrupted: finishing the requests already sent")
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
        r = Result(subprocess.CompletedProcess(p.args, p.returncode, out, early + err)).checked()
        self.assertEqual(r.code, 1, r)
        self.assertIn("abandoning the requests in flight", r.err)
        self.assertIn("outcome is unknown", r.out + r.err)
        # The fake goes on to make the job; vx never learnt its name, but journaled its intent.
        deadline = time.time() + 30
        while not self.live_jobs() and time.time() < deadline:
            time.sleep(0.05)
        self.assertEqual(len(self.live_jobs()), 1)
        r = self.repo.vx("state", "list", "-C", self.repo.dir)
        self.assertIn("pending intent: create not confirmed", r.out)
        self.fake.post("/_fake/faults", {})
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertIn("adopt", r.out)
        for i in range(3):
            self.assertEqual(len(self.live_jobs("j%d" % i)), 1)

    def test_lock_timeout_waits_for_the_other_apply(self):
        self.fake.post("/_fake/faults", {"latency_ms": 300, "methods": ["CreateCustomJob"]})
        self.repo.write({"j%d" % i: job_yaml("j%d" % i) for i in range(4)})
        a = self.repo.start_apply("-parallelism", "1")
        deadline = time.time() + 60
        while not self.live_jobs() and time.time() < deadline:
            time.sleep(0.02)
        r = self.repo.apply("-lock-timeout", "2m")
        ra = self.repo.finish(a)
        self.assertEqual(ra.code, 0, ra)
        self.assertEqual(r.code, 0, r)
        self.assertIn("No changes", r.out)
        self.assertEqual(len(self.live_jobs()), 4)

    def test_file_backend(self):
        self.repo.write({"a": job_yaml("a", env_secret=True)},
                        extra_stack="state: {backend: file, path: vx-state.json}\n")
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        path = os.path.join(self.repo.dir, "vx-state.json")
        with open(path) as f:
            text = f.read()
        self.assertIn("customJobs/", text)
        self.assertNotIn("hunter2-training-secret", text)
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)
        r = self.repo.vx("log", "job.a", "-C", self.repo.dir)
        self.assertIn("customJobs/", r.out)
        self.assertNotIn("vx/state/", self.repo.git("branch", "--list", "-a"))

    def test_two_runners_share_a_state_remote(self):
        remote = os.path.join(self.tmp, "remote.git")
        subprocess.run(["git", "init", "-q", "--bare", remote], check=True)
        self.repo.write({"a": job_yaml("a")}, extra_stack="state: {remote: origin}\n")
        self.repo.git("remote", "add", "origin", remote)
        self.repo.git("push", "-q", "origin", "main")
        other = os.path.join(self.tmp, "runner2")
        subprocess.run(["git", "clone", "-q", "-b", "main", remote, other], check=True)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.live_jobs()), 1)
        e = self.fake.env()
        cp = subprocess.run([VX_BIN, "apply", os.path.join(other, "stack"), "-auto-approve"],
                            cwd=other, capture_output=True, text=True, env=e, timeout=120)
        self.assertEqual(cp.returncode, 0, cp.stdout + cp.stderr)
        self.assertIn("No changes", cp.stdout)
        self.assertEqual(len(self.live_jobs()), 1, "the second runner saw the first one's state")
        heads = subprocess.run(["git", "--git-dir", remote, "branch", "--list"], capture_output=True,
                               text=True).stdout
        self.assertIn("vx/state/e2e", heads)


if __name__ == "__main__":
    unittest.main()
