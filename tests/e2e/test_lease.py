"""The state lease against a paused apply (docs/leases.md): an apply frozen
(SIGSTOP, a suspended laptop) past its lease must send nothing when it
wakes, because another apply may have taken the lease over and done the work."""
import re
import signal
import subprocess
import time
import unittest

from harness import FakeTestCase, VX_BIN, Result, job_yaml, process_state

# A short lease so the test waits seconds, not minutes; and a short in-flight
# window, so the apply that takes over settles the paused one's intents quickly.
SHORT = {"VX_LEASE_SECONDS": "2", "VX_INFLIGHT_SECONDS": "1"}

FENCE = re.compile(
    r"vx: the state lease expired while this apply was paused \(last renewed \d+s ago, "
    r"lease 2s\): stopping without sending; another apply may hold it now\n")


class Lease(FakeTestCase):

    def start_apply(self, env):
        e = self.fake.env()
        e.update(env)
        return subprocess.Popen([VX_BIN, "apply", self.repo.dir, "-auto-approve"],
                                cwd=self.repo.root, env=e, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)

    def wait_stopped(self, p):
        """Until p has stopped itself (VX_TEST_PAUSE), polling its state."""
        deadline = time.time() + 60
        while time.time() < deadline:
            st = process_state(p.pid)
            if st in ("T", "t"):
                return
            if p.poll() is not None:
                out, err = p.communicate()
                self.fail("the apply ran to the end instead of pausing:\nexit %d\n%s\n%s"
                          % (p.returncode, out, err))
            time.sleep(0.02)
        self.fail("the apply did not pause")

    def test_paused_apply_sends_nothing_after_its_lease_expired(self):
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")})
        a = self.start_apply(dict(SHORT, VX_TEST_PAUSE="before-send"))
        try:
            # A journaled its intents, connected, and froze right before its first create.
            self.wait_stopped(a)
            self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 0)
            self.assertTrue(any("intent job.a create" in m for m in self.repo.state_log()))
            # B waits for A's lease to run out, takes it over, settles A's intents
            # (listing by labels for the in-flight window) and creates both jobs.
            b = self.repo.apply("-lock-timeout", "60s", env=SHORT)
            self.assertEqual(b.code, 0, b)
            self.assertIn("Apply complete: 2 done, 0 failed.", b.out)
            self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)
            tip_after_b = self.repo.git("rev-parse", "vx/state/e2e").strip()
        finally:
            a.send_signal(signal.SIGCONT)
        out, err = a.communicate(timeout=120)
        ra = Result(subprocess.CompletedProcess(a.args, a.returncode, out, err)).checked()
        # A wakes, finds its lease gone by its own monotonic clock, and sends nothing.
        self.assertEqual(ra.code, 1, ra)
        self.assertRegex(ra.err, "^" + FENCE.pattern + "$")
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)
        for job in ("a", "b"):
            self.assertEqual(len(self.live_jobs(job)), 1, job)
        # The state is B's: A wrote nothing after waking, and it names the live jobs.
        self.assertEqual(self.repo.git("rev-parse", "vx/state/e2e").strip(), tip_after_b)
        listed = self.repo.vx("state", "list", "-C", self.repo.dir).out
        for j in self.live_jobs():
            self.assertIn(j["name"], listed)
        self.assertNotIn("pending intent", listed)
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)

    def test_lease_seconds_is_checked(self):
        self.repo.write({"a": job_yaml("a")})
        for bad in ("0", "86401", "2m", "", "-5"):
            r = self.repo.apply(env={"VX_LEASE_SECONDS": bad})
            self.assertEqual(r.code, 1, r)
            self.assertEqual(r.err, "vx: apply: VX_LEASE_SECONDS must be a whole number of "
                                    "seconds from 1 to 86400, not '%s'\n" % bad)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 0)

    def test_short_lease_is_renewed_while_the_apply_waits(self):
        """A lease shorter than the apply: the heartbeat keeps it, and the
        lease commits (on the lease ref, not the state branch) show it."""
        self.fake.post("/_fake/faults", {"latency_ms": 1500, "methods": ["CreateCustomJob"]})
        self.repo.write({"j%d" % i: job_yaml("j%d" % i) for i in range(3)})
        r = self.repo.apply("-parallelism", "1", env=SHORT)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 3)
        renewals = [m for m in self.repo.lease_log() if m.strip().startswith("vx lock: renewed")]
        self.assertGreaterEqual(len(renewals), 2)
        self.assertEqual([m for m in self.repo.state_log() if m.strip().startswith("vx lock")], [])


if __name__ == "__main__":
    unittest.main()
