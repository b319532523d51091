"""End to end: vx watch reads the stack's files again only when they changed (issue 38).

A watcher acting on a large stack read its files twice a cycle (the look, then the act under
the lease) and again every cycle. It now keeps the stack it loaded, and the act uses the look's;
the files are read again when what they are read from changed: a stack file's name, size,
modification time or inode, the repository's .vx/policy.yaml, or (-follow) the commit. A file
written in the last two seconds is read again in the next cycle anyway: a second write in the
same tick of the file system's clock can leave the time the watcher saw. These tests age the
files (os.utime) so that the kept stack is the one used, then change them under the watcher.
"""
import os
import time

from harness import FakeTestCase, job_yaml, wait_ok_cycles
from test_watch import PREEMPTED, RUNNING, Watcher, without_time
from test_policy_watch import LADDER_JOB, POLICY

KEPT = "vx: debug: watch: the stack's files are as the last cycle read them: not read again"


class WatchKept(FakeTestCase):
    maxDiff = None

    def setUp(self):
        super().setUp()
        # The fake's clock at the real time: the watcher announces only runs that ended in the last day.
        self.fake.post("/_fake/clock", {"set_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time()))})
        self.metrics = os.path.join(self.tmp, "watch.prom")

    def age(self, path, seconds):
        t = time.time() - seconds
        os.utime(path, (t, t))

    def age_stack(self, seconds):
        for name in os.listdir(self.repo.dir):
            self.age(os.path.join(self.repo.dir, name), seconds)

    def watcher(self):
        w = Watcher(self.repo, "-cycles", "100000", "-interval", "100ms", "-metrics", self.metrics,
                    env={"VX_LOG": "debug"})
        self.addCleanup(lambda: w.p.poll() is not None or w.stop())
        return w

    def cycles(self, w, n):
        wait_ok_cycles(self.metrics, n, lambda: "\n".join(w.lines))

    def kept(self, w):
        return sum(1 for l in w.lines if l == KEPT)

    def test_the_stack_is_kept_and_read_again_when_a_file_changes(self):
        self.repo.write({"a": job_yaml("a", on="preempted", strategy="SPOT")})
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "a"}, "outcome": "preempted", "times": 1})
        self.assertEqual(self.repo.apply().code, 0)
        self.age_stack(600)
        w = self.watcher()
        self.cycles(w, 2)
        # The run ends: the next look plans with the kept stack, and the act (the resubmission) too.
        self.fake.advance(RUNNING)
        self.fake.advance(PREEMPTED)
        line = w.wait_line(lambda l: l.split(" ", 1)[-1].startswith("act: + job.a resubmit"))
        self.assertRegex(without_time(line), r"^act: \+ job\.a resubmit projects/\d+/locations/us-central1/customJobs/\d+$")
        self.assertGreaterEqual(self.kept(w), 1, "\n".join(w.lines))
        # A job added, the file as old as before but not the same time: read again and told.
        self.repo.write({"a": job_yaml("a", on="preempted", strategy="SPOT"), "c": job_yaml("c")})
        self.age_stack(300)
        w.wait_line(lambda l: l.split(" ", 1)[-1] ==
                    "unapplied: job.c: declared but not applied (the plan says create); waiting for vxapply")
        self.assertEqual(w.stop(), 0)

    def test_the_repositorys_policy_written_under_a_kept_stack_binds_the_next_cycle(self):
        # job.a falls back to europe-west4 when preempted; the repository's policy, written
        # while the watcher keeps the stack, forbids that region: the resubmission is held.
        self.repo.write({"a": LADDER_JOB})
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "a"}, "outcome": "preempted", "times": 1})
        self.assertEqual(self.repo.apply().code, 0)
        self.age_stack(600)
        w = self.watcher()
        self.cycles(w, 2)
        creates = self.fake.rpc_count("CreateCustomJob")
        os.makedirs(os.path.join(self.repo.root, ".vx"))
        policy = os.path.join(self.repo.root, ".vx", "policy.yaml")
        with open(policy, "w") as f:
            f.write(POLICY)
        self.age(policy, 600)
        self.cycles(w, 2)
        self.fake.advance(RUNNING)
        self.fake.advance(PREEMPTED)
        w.wait_line(lambda l: l.split(" ", 1)[-1] == "record: recorded: job.a: queued -> failed (preempted)")
        self.cycles(w, 2)
        self.assertEqual(w.stop(), 0)
        out = [without_time(l) for l in w.out_lines]
        self.assertEqual(out, [
            'wait: job.a: held: policy: CustomJob "a": resubmit.fallback[0].region: europe-west4 is not '
            'allowed by policy "ml-platform" (rules.regions, .vx/policy.yaml:4)',
            "record: recorded: job.a: queued -> failed (preempted)",
            "stop: stopped: the lease is released"])
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), creates)
        self.assertGreaterEqual(self.kept(w), 1, "\n".join(w.lines))


if __name__ == "__main__":
    import unittest
    unittest.main()
