"""End to end: time in the sandbox, and runs too old to announce (issue 32).

The sandbox's fake once kept a clock of its own, frozen at 2026-01-01, while vx reads the
machine's: every run then ended "last January", outside the day `vx watch` announces, and
gave-up was never sent, without a word. Now the sandbox's fake keeps the machine's time, so the
README's flow (the quick start's Spot stack, `vx watch` with a webhook, docs/watch.md) delivers
gave-up with today's date; and a watcher told to announce runs that ended before its window says
so once in its log rather than dropping them silently."""
import datetime
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

from harness import FakeTestCase, VX_BIN, job_yaml
from sandboxenv import Sandbox
from test_docs import README, fenced, read, section
from test_watch import Receiver, Watcher, ok_cycles, without_time


def rfc3339(text):
    """Unix seconds of an RFC 3339 UTC time (with or without a fraction)."""
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def wait_event(receiver, name, timeout):
    """The first JSON body the receiver got for event name, waiting for it."""
    deadline = time.time() + timeout
    with receiver.cv:
        while True:
            for _, body in receiver.got:
                ev = json.loads(body)
                if ev["event"] == name:
                    return ev
            left = deadline - time.time()
            if left <= 0:
                raise AssertionError("no %s event; got %s" % (name, receiver.events()))
            receiver.cv.wait(min(left, 0.5))


class SandboxWatch(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vx-e2e-sandbox-watch-")
        self.sandbox = Sandbox(self.tmp)
        self.receiver = Receiver()

    def tearDown(self):
        self.receiver.close()
        self.sandbox.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_the_readme_stack_watched_with_a_webhook_gets_gave_up_with_todays_date(self):
        # The quick start's stack, with a webhook target as docs/watch.md and format.md give it.
        stack = fenced(section(read(README), "Quick start: a Spot job against a fake Google Cloud"), "yaml")[0]
        head, sep, rest = stack.partition("\n---\n")
        self.assertTrue(sep, "the README's stack has no job document")
        stack = head + "\nnotify:\n  - urlEnv: HOOK\n    on: [gave-up, stuck, succeeded]\n---\n" + rest
        repo = os.path.join(self.tmp, "vx-try")
        os.makedirs(os.path.join(repo, "spot"))
        with open(os.path.join(repo, "spot", "stack.yaml"), "w") as f:
            f.write(stack)
        self.sandbox.git(repo, "init", "-q", "-b", "main")
        self.sandbox.git(repo, "add", "-A")
        self.sandbox.git(repo, "commit", "-qm", "a Spot fine-tuning job")
        # The container fails (not a class the stack resubmits on), and jobs move in seconds.
        self.sandbox.ctl("/timings", {"queued_seconds": 1, "pending_seconds": 1, "running_seconds": 2})
        self.sandbox.ctl("/outcomes", {"labels": {"vx-stack": "spot-demo"}, "outcome": "user-error"})
        r = self.sandbox.run(["vxapply", "-auto-approve", "spot"], repo)
        self.assertEqual(r.code, 0, r)
        env = dict(self.sandbox.env, HOOK=self.receiver.url)
        w = subprocess.Popen(["vx", "watch", "spot", "-interval", "1s"], cwd=repo, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             stdin=subprocess.DEVNULL)
        try:
            ev = wait_event(self.receiver, "gave-up", 60)
        finally:
            w.terminate()
            out, _ = w.communicate(timeout=30)
        self.assertEqual((ev["stack"], ev["address"], ev["class"], ev["state"]),
                         ("spot-demo", "job.finetune", "user-error", "JOB_STATE_FAILED"))
        when = rfc3339(ev["time"])
        self.assertLess(abs(when - time.time()), 60, "the event's time is not now: %s" % ev["time"])
        self.assertNotIn("not announcing", out)
        self.assertNotIn("Sanitizer", out)
        # vx status counts from the machine's clock: the run waited and ran seconds, not months.
        r = self.sandbox.run(["vx", "status", "spot"], repo)
        self.assertEqual((r.code, r.err), (0, ""), r)
        asof = re.search(r", as of (\S+)\n", r.out)
        self.assertLess(abs(rfc3339(asof.group(1)) - time.time()), 60, r.out)
        row = re.search(r"^job\.finetune +FAILED +1/3 +0 +us-central1 +(\S+) +(\S+) +\$", r.out, re.M)
        self.assertIsNotNone(row, r.out)
        for took in row.groups():
            self.assertRegex(took, r"^\d+s$", r.out)
        # Nothing was stuck (queued a second, not since January); the report's last 30 days hold the run.
        self.assertEqual(self.receiver.events(), ["gave-up"])
        r = self.sandbox.run(["vx", "report", "spot", "-format", "csv"], repo)
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertEqual(len([l for l in r.out.splitlines() if "job.finetune" in l]), 1, r.out)


class TooOldToAnnounce(FakeTestCase):
    """A run that ended two days (of Google's clock) before the watcher started is outside the
    day it announces: said once, not sent."""

    def test_a_run_that_ended_before_the_window_is_told_once(self):
        receiver = Receiver()
        self.addCleanup(receiver.close)
        self.repo.write({"a": job_yaml("a", on="preempted")},
                        extra_stack="notify:\n  - urlEnv: HOOK\n    on: [gave-up, succeeded]\n")
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "a"}, "outcome": "user-error"})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(4000)  # queued 5 s, pending 30 s, fails at the end of its hour
        self.fake.advance(2 * 86400)
        google_started = self.fake.post("/_fake/clock", {"advance_seconds": 0})["epoch_seconds"]
        metrics = os.path.join(self.tmp, "metrics.prom")
        w = Watcher(self.repo, "-interval", "1s", "-metrics", metrics, env={"HOOK": receiver.url})
        try:
            self.wait_cycles(metrics, 3)
        finally:
            self.assertEqual(w.stop(), 0)
        warns = [without_time(l) for l in w.out_lines if without_time(l).startswith("warn:")]
        self.assertEqual(len(warns), 1, "\n".join(w.lines))
        m = re.fullmatch(r"warn: not announcing 1 run that ended before (\S+), the announce window \(a day "
                         r"before the watcher started\): job\.a gave-up \(ended 2026-01-01T01:00:35Z\)", warns[0])
        self.assertIsNotNone(m, warns[0])
        since = rfc3339(m.group(1))
        # The window is on Google's clock (the fake's, frozen here), as the run's end is.
        self.assertLess(abs(since - (google_started - 86400)), 60)
        self.assertEqual(receiver.events(), [])

    def wait_cycles(self, metrics, n):
        """Waits until the watcher ran n cycles (its -metrics file counts them)."""
        deadline = time.time() + 60
        while ok_cycles(metrics) < n:
            self.assertLess(time.time(), deadline, "the watcher ran no cycles")
            time.sleep(0.02)  # polling a file the watcher rewrites after each cycle


if __name__ == "__main__":
    unittest.main()
