"""End to end: resubmit.maxQueued (issue 37) against the fake on its virtual clock.

A run still QUEUED or PENDING that never started, maxQueued after its create, is cancelled by vx
and the next attempt created on the next rung, only once the cancel has ended: the address never
has two active runs. Each test holds a job QUEUED with the fake's queued_seconds rule option and
compares the plan's lines, the JSON plan and `vx log` exactly.
"""
import json
import re
import time
import unittest

from harness import FakeTestCase, job_yaml
import schemas

LADDER = "{on: [stockout], maxAttempts: 3, maxQueued: 2h, fallback: [{region: us-east5}]}"
HELD = 3 * 3600          # the rung-0 run stays QUEUED this long (virtual seconds), unless a test says
ACTIVE = ("JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING", "JOB_STATE_CANCELLING")


def with_resubmit(yaml, resubmit):
    """job_yaml's job with its resubmit: mapping replaced by resubmit (flow YAML)."""
    out, n = re.subn(r"(?m)^resubmit: \{.*\}$", "resubmit: %s" % resubmit, yaml)
    assert n == 1
    return out


def ts(s):
    """Seconds since the epoch of one of the fake's RFC 3339 times."""
    return time.mktime(time.strptime(s[:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone


class MaxQueued(FakeTestCase):

    def setUp(self):
        super().setUp()
        # Unless a test says otherwise, a cancel ends at once: the apply sees it end and goes on.
        self.fake.post("/_fake/timings", {"cancelling_seconds": 0})

    def now(self):
        """vx's clock set to the fake's (VX_NOW), as Google's and this machine's agree in life."""
        return {"VX_NOW": self.fake.get("/_fake/clock")["now"]}

    def hold(self, seconds, rung="0", **opts):
        """The next runs of job.a on rung stay QUEUED seconds, then start (PENDING 30 s)."""
        body = {"labels": {"vx-job": "a", "vx-rung": rung}, "outcome": "succeed", "queued_seconds": seconds}
        body.update(opts)
        self.fake.post("/_fake/outcomes", body)

    def jobs_of_a(self):
        return sorted(self.live_jobs("a"), key=lambda j: int(j["labels"]["vx-attempt"]))

    def assert_never_two_active(self):
        """From the fake's times: every job of job.a but the last ended before (or as) the next
        was created, and only the last may be active."""
        jobs = self.jobs_of_a()
        for a, b in zip(jobs, jobs[1:]):
            self.assertNotIn(a["state"], ACTIVE, a)
            self.assertLessEqual(ts(a["endTime"]), ts(b["createTime"]), (a, b))

    def rpcs(self):
        """The Vertex calls the fake saw, in order (the token and quota calls left out)."""
        return [l["rpc"] for l in self.fake.requests()["log"] if l["rpc"].endswith("CustomJob")
                or l["rpc"].endswith("CustomJobs")]

    def log_rows(self):
        r = self.repo.vx("log", "job.a", "-C", self.repo.dir)
        self.assertEqual((r.code, r.err), (0, ""), r)
        rows = []
        for l in r.out.splitlines()[1:]:
            m = re.match(r"^  \S+  (\S+)\s+\S+(?:  attempt (\d+) .* cost \S+  (.*))?$", l)
            self.assertIsNotNone(m, l)
            rows.append((m.group(1), int(m.group(2)) if m.group(2) else None, m.group(3)))
        return rows

    # ---- (a) stuck past maxQueued: cancelled, then the next rung ----------------------------------

    def test_a_run_stuck_queued_is_cancelled_and_the_next_rung_created(self):
        self.hold(HELD)
        self.repo.write({"a": with_resubmit(job_yaml("a"), LADDER)})
        self.assertEqual(self.repo.apply(env=self.now()).code, 0)
        first = self.jobs_of_a()[0]["name"]
        self.fake.advance(2 * 3600 - 60)               # 01:59: not yet
        r = self.repo.plan("-detailed-exitcode", env=self.now())
        self.assertEqual(r.code, 0, r)
        self.fake.advance(60 + 180)                    # 02:03
        r = self.repo.plan(env=self.now())
        self.assertEqual(self.block(r.out), [
            "\u21bb   job.a resubmit",
            "g2-standard-4 ×1, 1×L4, STANDARD in us-east5",
            "attempt 2/3 on rung 1 (region us-east5) after queue-timeout in us-central1: queued 2h 3m without "
            "starting (maxQueued 2h)",
            "cancels %s" % first])
        plan = schemas.check_text(self.repo.plan("-format", "json", env=self.now()).out, "plan")
        self.assertEqual([(a["action"], a["failure_class"], a["cancel"], a["before"].get("queued_seconds"),
                           a["after"]["attempt"], a["after"]["rung"]) for a in plan["actions"]],
                         [("resubmit", "queue-timeout", first, 7380, 2, 1)])
        self.fake.post("/_fake/requests/reset", {})
        r = self.repo.apply(env=self.now())
        self.assertEqual(r.code, 0, r)
        self.assertIn("- job.a cancel %s\n+ job.a resubmit " % first, r.out)
        # A GET before the cancel, a GET that saw it end, and only then the create.
        self.assertEqual(self.rpcs()[-4:], ["GetCustomJob", "CancelCustomJob", "GetCustomJob", "CreateCustomJob"])
        jobs = self.jobs_of_a()
        self.assertEqual([(j["state"], "startTime" in j, j["labels"]["vx-rung"], j["name"].split("/")[3])
                          for j in jobs],
                         [("JOB_STATE_CANCELLED", False, "0", "us-central1"),
                          ("JOB_STATE_QUEUED", False, "1", "us-east5")])
        self.assert_never_two_active()
        self.assertEqual(self.log_rows(), [
            ("create", 1, "cancelled (queue-timeout) (cancelled by vx), ended 2026-01-01T02:03:00Z"),
            ("cancel", None, None),
            ("resubmit", 2, "queued")])
        state = json.loads(self.repo.git("show", "vx/state/e2e:jobs/a.json"))
        self.assertEqual([(h["failure"], h["cancelledByVx"]) for h in state["history"]], [("queue-timeout", True)])
        # The run on rung 1 starts: nothing more to do.
        self.fake.advance(60)
        self.assertEqual(self.repo.plan("-detailed-exitcode", env=self.now()).code, 0)
        # vx report counts the job's attempts per failure class.
        r = self.repo.vx("report", self.repo.dir, "-format", "json", env=self.now())
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertEqual([(j["key"], j["runs"], j["attempts_by_class"]) for j in json.loads(r.out)["totals"]["by_job"]],
                         [("job.a", 2, {"queue-timeout": 1})])

    def test_a_slow_cancel_is_waited_for_and_the_next_apply_creates(self):
        self.fake.post("/_fake/timings", {"cancelling_seconds": 20})
        self.hold(HELD)
        self.repo.write({"a": with_resubmit(job_yaml("a"), LADDER)})
        self.assertEqual(self.repo.apply(env=self.now()).code, 0)
        first = self.jobs_of_a()[0]["name"]
        self.fake.advance(2 * 3600 + 60)
        # One look at the cancel (no wait): it is still cancelling, so nothing is created.
        env = dict(self.now(), VX_CANCEL_WAIT_SECONDS="0")
        r = self.repo.apply(env=env)
        self.assertEqual(r.code, 0, r)
        self.assertIn("~ job.a attempt 2 waits: run %s is still cancelling; the next apply (or vx watch) creates "
                      "it once it has ended\n" % first, r.out)
        self.assertEqual([j["state"] for j in self.jobs_of_a()], ["JOB_STATE_CANCELLING"])
        # While it cancels, the next attempt is still planned; an apply sends no second cancel and
        # waits for the end again.
        r = self.repo.plan(env=self.now())
        self.assertEqual(self.block(r.out), [
            "\u21bb   job.a resubmit",
            "g2-standard-4 ×1, 1×L4, STANDARD in us-east5",
            "attempt 2/3 on rung 1 (region us-east5) after queue-timeout in us-central1: vx cancelled it after "
            "resubmit.maxQueued; created once the cancel has ended",
            "cancels %s" % first])
        r = self.repo.apply(env=env)
        self.assertIn("~ job.a attempt 2 waits: run %s is still cancelling" % first, r.out)
        self.assertEqual((self.fake.rpc_count("CancelCustomJob"), len(self.jobs_of_a())), (1, 1))
        self.fake.advance(20)
        r = self.repo.plan(env=self.now())
        self.assertEqual(self.block(r.out), [
            "\u21bb   job.a resubmit",
            "g2-standard-4 ×1, 1×L4, STANDARD in us-east5",
            "attempt 2/3 on rung 1 (region us-east5) after queue-timeout in us-central1 (code 1: CustomJob was "
            "cancelled.)"])
        self.assertEqual(self.repo.apply(env=self.now()).code, 0)
        self.assertEqual([j["state"] for j in self.jobs_of_a()], ["JOB_STATE_CANCELLED", "JOB_STATE_QUEUED"])
        self.assert_never_two_active()
        self.assertEqual(self.fake.rpc_count("CancelCustomJob"), 1)

    def test_without_a_next_rung_the_same_rung_and_the_budget_counts(self):
        self.hold(HELD)
        self.repo.write({"a": with_resubmit(job_yaml("a"), "{on: [stockout], maxAttempts: 2, maxQueued: 1h}")})
        self.assertEqual(self.repo.apply(env=self.now()).code, 0)
        self.fake.advance(3600)
        r = self.repo.plan(env=self.now())
        self.assertEqual(self.block(r.out)[:3], [
            "\u21bb   job.a resubmit",
            "g2-standard-4 ×1, 1×L4, STANDARD in us-central1",
            "attempt 2/2 after queue-timeout: queued 1h without starting (maxQueued 1h)"])
        self.assertEqual(self.repo.apply(env=self.now()).code, 0)
        self.fake.advance(3600)
        # maxAttempts is spent: the second run stays queued, and the plan says why.
        r = self.repo.plan("-detailed-exitcode", env=self.now())
        self.assertEqual(r.code, 0, r)
        self.assertIn("      job.a: queued 1h without starting (maxQueued 1h); left queued: resubmit budget "
                      "exhausted (2/2 attempts)\n", r.out)
        self.assertEqual(self.repo.apply(env=self.now()).code, 0)
        self.assertEqual([j["state"] for j in self.jobs_of_a()], ["JOB_STATE_CANCELLED", "JOB_STATE_QUEUED"])

    # ---- (b) a run that starts just before the limit ----------------------------------------------

    def test_a_run_that_starts_just_before_the_limit_is_left_alone(self):
        self.hold(2 * 3600 - 30 - 60)                  # PENDING at 01:58:30, RUNNING at 01:59:00
        self.repo.write({"a": with_resubmit(job_yaml("a"), LADDER)})
        self.assertEqual(self.repo.apply(env=self.now()).code, 0)
        self.fake.advance(2 * 3600 - 61)
        self.assertEqual(self.jobs_of_a()[0]["state"], "JOB_STATE_PENDING")
        self.fake.advance(61 + 180)                    # 02:03, running since 01:59
        r = self.repo.plan("-detailed-exitcode", env=self.now())
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.repo.apply(env=self.now()).code, 0)
        self.assertEqual(self.fake.rpc_count("CancelCustomJob"), 0)
        self.assertEqual([j["state"] for j in self.jobs_of_a()], ["JOB_STATE_RUNNING"])

    # ---- (c) the GET before the cancel --------------------------------------------------------------

    def test_a_stale_list_entry_is_checked_by_a_get_before_the_cancel(self):
        # The list keeps showing the run QUEUED; it started at 01:00:30 (a GET says so).
        self.fake.post("/_fake/timings", {"running_seconds": 4 * 3600})
        self.hold(3600, list_stale=True)
        self.repo.write({"a": with_resubmit(job_yaml("a"), LADDER)})
        self.assertEqual(self.repo.apply(env=self.now()).code, 0)
        first = self.jobs_of_a()[0]["name"]
        self.fake.advance(2 * 3600 + 180)
        r = self.repo.plan(env=self.now())
        self.assertEqual(self.block(r.out)[2], "attempt 2/3 on rung 1 (region us-east5) after queue-timeout in "
                                               "us-central1: queued 2h 3m without starting (maxQueued 2h)")
        r = self.repo.apply(env=self.now())
        self.assertEqual(r.code, 0, r)
        self.assertIn("~ job.a left alone: run %s is running, it started (or ended) before the cancel "
                      "resubmit.maxQueued planned\n" % first, r.out)
        self.assertNotIn("+ job.a", r.out)
        self.assertEqual((self.fake.rpc_count("CancelCustomJob"), self.fake.rpc_count("CreateCustomJob")), (0, 1))
        self.assertEqual([j["state"] for j in self.jobs_of_a()], ["JOB_STATE_RUNNING"])
        state = json.loads(self.repo.git("show", "vx/state/e2e:jobs/a.json"))
        self.assertEqual((state["current"].get("failure"), state["current"].get("cancelledByVx", False)),
                         (None, False))

    # ---- (d) vx watch does the same ------------------------------------------------------------------

    def test_vx_watch_cancels_and_creates_the_next_rung(self):
        # The fake's clock at the real time, as test_watch's: the watcher signs its token with its own,
        # so the fake's may not run far ahead (a short maxQueued).
        self.fake.post("/_fake/clock", {"set_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        self.hold(HELD)
        self.repo.write({"a": with_resubmit(job_yaml("a"), LADDER.replace("2h", "1m"))})
        self.assertEqual(self.repo.apply(env=self.now()).code, 0)
        first = self.jobs_of_a()[0]["name"]
        self.fake.advance(63)
        r = self.repo.vx("watch", self.repo.dir, "-once", env=self.now())
        self.assertEqual((r.code, r.err), (2, ""), r)
        self.assertEqual([re.sub(r"^\S+ ", "", re.sub(r"customJobs/\d+$", "customJobs/ID", l))
                          for l in r.out.splitlines()],
                         ["act: - job.a cancel %s" % re.sub(r"customJobs/\d+$", "customJobs/ID", first),
                          "act: + job.a resubmit projects/630532886571/locations/us-east5/customJobs/ID"])
        self.assertEqual([(j["state"], j["labels"]["vx-rung"]) for j in self.jobs_of_a()],
                         [("JOB_STATE_CANCELLED", "0"), ("JOB_STATE_QUEUED", "1")])
        self.assert_never_two_active()

    def test_vx_watch_waits_out_the_delay_on_the_same_rung(self):
        self.fake.post("/_fake/clock", {"set_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        self.hold(HELD)
        self.repo.write({"a": with_resubmit(job_yaml("a"), "{on: [stockout], maxAttempts: 3, maxQueued: 1m, "
                                                           "delay: 2m}")})
        self.assertEqual(self.repo.apply(env=self.now()).code, 0)
        first = self.jobs_of_a()[0]["name"]
        self.fake.advance(60)
        r = self.repo.vx("watch", self.repo.dir, "-once", env=self.now())
        self.assertEqual(r.err, "", r)
        self.assertEqual([re.sub(r"^\S+ ", "", l) for l in r.out.splitlines()], ["act: - job.a cancel %s" % first])
        self.assertEqual([j["state"] for j in self.jobs_of_a()], ["JOB_STATE_CANCELLED"])
        r = self.repo.vx("watch", self.repo.dir, "-once", env=self.now())
        self.assertIn("job.a: attempt 2 after queue-timeout waits until 120s after it ended (resubmit.delay)",
                      r.out)
        self.assertEqual(len(self.jobs_of_a()), 1)
        self.fake.advance(120)
        r = self.repo.vx("watch", self.repo.dir, "-once", env=self.now())
        self.assertEqual([(j["state"], j["labels"]["vx-rung"]) for j in self.jobs_of_a()],
                         [("JOB_STATE_CANCELLED", "0"), ("JOB_STATE_QUEUED", "0")])
        self.assert_never_two_active()

    # ---- loading -----------------------------------------------------------------------------------

    def test_max_queued_is_checked_and_a_change_is_an_update(self):
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply(env=self.now()).code, 0)
        self.repo.write({"a": with_resubmit(job_yaml("a"), "{on: [stockout, preempted], maxAttempts: 3, maxQueued: 2h}")})
        r = self.repo.plan(env=self.now())
        self.assertEqual(self.block(r.out), [
            "~   job.a update",
            "g2-standard-4 ×1, 1×L4, STANDARD in us-central1",
            "resubmit.maxQueued: none -> 2h"])
        self.assertEqual(self.repo.apply(env=self.now()).code, 0)
        applied = json.loads(self.repo.git("show", "vx/state/e2e:jobs/a.json"))["applied"]
        self.assertEqual(applied["maxQueuedMs"], 7200000)
        # The error names the value's line and column (line 14 of jobs.yaml holds resubmit:).
        self.repo.write({"a": with_resubmit(job_yaml("a"), "{on: [stockout, preempted], maxAttempts: 3, "
                                                           "maxQueued: 30s}")})
        r = self.repo.vx("validate", self.repo.dir)
        self.assertEqual(r.code, 1, r)
        self.assertEqual([re.sub(r"^.*jobs\.yaml:(\d+):(\d+): ", r"\1:\2: ", l) for l in r.err.splitlines()
                          if "maxQueued" in l],
                         ['14:66: CustomJob "a": resubmit.maxQueued: must be from 1m to 7d, got "30s"'])


if __name__ == "__main__":
    unittest.main()
