"""End to end: runs that end together are read by one full list, not one GET each (issue 38).

Between its full lists (the first cycle, then every 10 minutes) a watcher lists only the jobs that
are not final, and reads with a GET each run the state holds as active that this list no longer
shows. When a sweep's batch ends together that is one GET per run, each one of Vertex's 600
requests a minute per region: 100 runs, 10 s before the watcher can start the next batch. When
more runs ended than a full list of the place has pages (1,000 jobs a page), the watcher lists in
full instead. These tests count the fake's calls while a watcher runs.
"""
import os
import time
import urllib.parse

from harness import FakeTestCase, job_yaml, wait_ok_cycles
from test_watch import PREEMPTED, RUNNING, Watcher, without_time

FINISHED = 3700       # RUNNING -> SUCCEEDED


class WatchEnded(FakeTestCase):
    maxDiff = None

    def setUp(self):
        super().setUp()
        self.fake.post("/_fake/clock", {"set_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time()))})
        self.metrics = os.path.join(self.tmp, "watch.prom")

    def watching(self, names, preempted=()):
        """names applied and running, recorded so; a watcher on them past its first (full) cycle.
        The runs of preempted fail half-way (PREEMPTED)."""
        self.repo.write({n: job_yaml(n) for n in names})
        for n in preempted:
            self.fake.post("/_fake/outcomes", {"labels": {"vx-job": n}, "outcome": "preempted", "times": 1})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(RUNNING)
        self.assertEqual(self.repo.vx("watch", self.repo.dir, "-once").code, 2)
        w = Watcher(self.repo, "-cycles", "100000", "-interval", "100ms", "-metrics", self.metrics)
        self.addCleanup(lambda: w.p.poll() is not None or w.stop())
        wait_ok_cycles(self.metrics, 2, lambda: "\n".join(w.lines))
        self.fake.post("/_fake/requests/reset", {})
        return w

    def calls(self):
        """(full lists, lists of the active jobs, GETs) the fake answered since the reset."""
        full = active = gets = 0
        for e in self.fake.get("/_fake/requests?log=5000")["log"]:
            if e["rpc"] == "ListCustomJobs":
                filt = urllib.parse.parse_qs(urllib.parse.urlsplit(e["path"]).query).get("filter", [""])[0]
                if "state" in filt:
                    active += 1
                else:
                    full += 1
            elif e["rpc"] == "GetCustomJob":
                gets += 1
        return full, active, gets

    def ended(self, w, names):
        for n in names:
            w.wait_line(lambda l, n=n: without_time(l) == "record: recorded: job.%s: running -> succeeded" % n)

    def test_runs_that_end_together_are_read_by_one_full_list(self):
        names = ["a", "b", "c", "d"]
        w = self.watching(names)
        self.fake.advance(FINISHED)
        self.ended(w, names)
        self.assertEqual(w.stop(), 0)
        full, active, gets = self.calls()
        # 4 ended, a full list has 1 page: one full list, no GET.
        self.assertEqual((full, gets), (1, 0), (full, active, gets))

    def test_one_run_that_ends_is_read_by_a_get(self):
        w = self.watching(["a", "b"], preempted=["b"])
        # job.b's run fails (an on-demand run the fake ends early is a stockout), job.a's goes on: one GET reads it.
        self.fake.advance(PREEMPTED)
        w.wait_line(lambda l: without_time(l) == "record: recorded: job.b: running -> failed (stockout)")
        self.assertEqual(w.stop(), 0)
        full, active, gets = self.calls()
        self.assertEqual((full, gets), (0, 1), (full, active, gets))


if __name__ == "__main__":
    import unittest
    unittest.main()
