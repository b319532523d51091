"""End to end: the resubmit rules of issue 37 against the fake on its virtual clock.

Each test drives the fake's clock to the moment that matters (a run's timeout, a replica's exit)
and compares the plan's line for the job, the JSON plan and `vx log` exactly.
"""
import json
import re
import time
import unittest

from harness import FakeTestCase, job_yaml
import schemas

START = 35              # virtual seconds from create to RUNNING: queued 5 + pending 30
CANCELLED = "CustomJob was cancelled."
COMMIT_TIME = re.compile(r"  (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)  (create|resubmit)")


USER_ERROR = ("The replica workerpool0-0 exited with a non-zero status of {status}. To find out more about why "
              "your job exited please check the logs: https://console.cloud.google.com/logs/viewer?project="
              "vx-e2e&resource=ml_job%2Fjob_id%2F{id}&advancedFilter=resource.type%3D%22ml_job%22%0A"
              "resource.labels.job_id%3D%22{id}%22")


def with_exit_codes(yaml, codes):
    """job_yaml's job with resubmit.onExitCodes set."""
    old = "maxAttempts: 3}"
    assert old in yaml
    return yaml.replace(old, "maxAttempts: 3, onExitCodes: %s}" % codes)


STOCKOUT = ("Resources are insufficient in region: us-central1. Try a different region or use a different "
            "accelerator.")


def with_resubmit(yaml, resubmit):
    """job_yaml's job with its resubmit: mapping replaced by resubmit (flow YAML)."""
    out, n = re.subn(r"(?m)^resubmit: \{.*\}$", "resubmit: %s" % resubmit, yaml)
    assert n == 1
    return out


def with_timeout(yaml, timeout):
    """job_yaml's job with scheduling.timeout set."""
    old = "scheduling: {strategy: STANDARD}"
    assert old in yaml
    return yaml.replace(old, "scheduling: {strategy: STANDARD, timeout: %s}" % timeout)


class ResubmitRules(FakeTestCase):

    def no_change(self, out, address="job.a"):
        """The plan's line for address under "No change:"."""
        for l in out.splitlines():
            if l.startswith("      %s: " % address):
                return l.strip()
        self.fail("no unchanged line for %s in:\n%s" % (address, out))

    def json_plan(self):
        r = self.repo.plan("-format", "json")
        return schemas.check_text(r.out, "plan")

    def log_rows(self, address="job.a"):
        """vx log's rows for address: what ran, and how it ended (the text after the cost)."""
        r = self.repo.vx("log", address, "-C", self.repo.dir)
        self.assertEqual((r.code, r.err), (0, ""), r)
        rows = []
        for l in r.out.splitlines()[1:]:
            m = re.match(r"^  \S+  (\S+)\s+(\S+)  attempt (\d+) .* cost \S+  (.*)$", l)
            self.assertIsNotNone(m, l)
            rows.append((m.group(1), int(m.group(3)), m.group(4)))
        return rows

    def state_run(self, job="a"):
        return json.loads(self.repo.git("show", "vx/state/e2e:jobs/%s.json" % job))["current"]

    # ---- a run Vertex cancelled at its scheduling.timeout ------------------------------------

    def test_a_run_that_hit_its_timeout_is_timeout_and_not_resubmitted(self):
        self.fake.post("/_fake/timings", {"running_seconds": 3 * 3600})
        self.repo.write({"a": with_timeout(job_yaml("a", on="stockout, preempted, cancelled-outside"), "2h")})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(START + 2 * 3600 + 60)
        job = self.live_jobs("a")[0]
        self.assertEqual((job["state"], job["startTime"], job["endTime"]),
                         ("JOB_STATE_CANCELLED", "2026-01-01T00:00:35.000000Z", "2026-01-01T02:00:35.000000Z"))
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        # Not cancelled-outside (which resubmit.on lists): Vertex ended it at its timeout.
        self.assertEqual(self.no_change(r.out),
                         "job.a: failed (timeout at 2026-01-01 02:00Z): hit its 2h timeout; not resubmitted: "
                         "timeout is not in resubmit.on (code 1: %s)" % CANCELLED)
        self.assertNotIn("cancelled outside vx", r.out)
        plan = self.json_plan()
        self.assertEqual([(a["address"], a["action"], a.get("failure_class")) for a in plan["actions"]],
                         [("job.a", "noop", "timeout")])
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 1, "not resubmitted")
        self.assertEqual(self.state_run()["failure"], "timeout")
        self.assertEqual(self.log_rows(), [
            ("create", 1, "cancelled (timeout: hit its 2h timeout), ended 2026-01-01T02:00:35Z: code 1: %s"
             % CANCELLED)])

    def test_a_run_that_hit_its_timeout_is_resubmitted_when_listed(self):
        self.fake.post("/_fake/timings", {"running_seconds": 3 * 3600})
        self.repo.write({"a": with_timeout(job_yaml("a", on="timeout"), "90m")})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(START + 90 * 60)
        r = self.repo.plan()
        self.assertEqual(self.block(r.out), [
            "\u21bb   job.a resubmit",
            "g2-standard-4 ×1, 1×L4, STANDARD in us-central1",
            "attempt 2/3 after timeout at 2026-01-01 01:30Z: hit its 90m timeout (code 1: %s)" % CANCELLED])
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(len(self.live_jobs("a")), 2)

    def test_without_a_timeout_seven_days_is_the_limit(self):
        self.fake.post("/_fake/timings", {"running_seconds": 8 * 86400})
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(START + 7 * 86400)
        r = self.repo.plan()
        self.assertEqual(self.no_change(r.out),
                         "job.a: failed (timeout at 2026-01-08 00:00Z): hit its 7d timeout; not resubmitted: "
                         "timeout is not in resubmit.on (code 1: %s)" % CANCELLED)

    def test_a_cancel_before_the_timeout_is_still_cancelled_outside(self):
        self.fake.post("/_fake/timings", {"running_seconds": 3 * 3600})
        self.repo.write({"a": with_timeout(job_yaml("a"), "2h")})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(START + 3600)
        self.fake.cancel_behind_vx(self.live_jobs("a")[0]["name"])
        self.fake.advance(10)
        r = self.repo.plan()
        self.assertEqual(self.no_change(r.out),
                         "job.a: failed (cancelled-outside at 2026-01-01 01:00Z); not resubmitted: "
                         "cancelled-outside is not in resubmit.on (code 1: %s)" % CANCELLED)

    # ---- resubmit.onExitCodes ---------------------------------------------------------------

    def test_exit_code_137_is_resubmitted_and_1_is_not(self):
        for job, status in (("k", 137), ("o", 1)):
            self.fake.post("/_fake/outcomes", {"labels": {"vx-job": job}, "outcome": "user-error",
                                               "exit_code": status, "times": 1})
        # user-error is not in resubmit.on: the listed exit status alone resubmits.
        self.repo.write({j: with_exit_codes(job_yaml(j, on="stockout"), "[137, 143]") for j in ("k", "o")})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(START + 3600)
        ids = {j: self.live_jobs(j)[0]["name"].rsplit("/", 1)[1] for j in ("k", "o")}
        k_msg = USER_ERROR.format(status=137, id=ids["k"])
        o_msg = USER_ERROR.format(status=1, id=ids["o"])
        r = self.repo.plan()
        self.assertEqual(self.block(r.out, "job.k"), [
            "\u21bb   job.k resubmit",
            "g2-standard-4 ×1, 1×L4, STANDARD in us-central1",
            "attempt 2/3 after user-error at 2026-01-01 01:00Z: exit code 137 (code 3: %s)" % k_msg])
        self.assertEqual(self.no_change(r.out, "job.o"),
                         "job.o: failed (user-error at 2026-01-01 01:00Z): exit code 1; not resubmitted: user-error "
                         "is not in resubmit.on, nor 1 in resubmit.onExitCodes (code 3: %s)" % o_msg)
        plan = self.json_plan()
        self.assertEqual({a["address"]: (a["action"], a["failure_class"], a["error"]) for a in plan["actions"]}, {
            "job.k": ("resubmit", "user-error", {"code": 3, "message": k_msg, "exit_code": 137}),
            "job.o": ("noop", "user-error", {"code": 3, "message": o_msg, "exit_code": 1})})
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual((len(self.live_jobs("k")), len(self.live_jobs("o"))), (2, 1))
        k = json.loads(self.repo.git("show", "vx/state/e2e:jobs/k.json"))
        self.assertEqual(([h.get("exitCode") for h in k["history"]], k["current"].get("exitCode")), ([137], None))
        self.assertEqual(self.state_run("o")["exitCode"], 1)
        self.assertEqual(self.log_rows("job.k"), [
            ("create", 1, "failed (user-error: exit code 137), ended 2026-01-01T01:00:35Z: code 3: %s" % k_msg),
            ("resubmit", 2, "queued")])

    def test_on_exit_codes_is_checked_and_a_change_is_an_update(self):
        self.repo.write({"a": with_exit_codes(job_yaml("a"), "[137, 0, x]")})
        r = self.repo.vx("validate", self.repo.dir)
        self.assertEqual(r.code, 1, r)
        errs = [l for l in r.err.splitlines() if "onExitCodes" in l]
        self.assertEqual(len(errs), 2, r.err)
        self.assertRegex(errs[0], r"jobs\.yaml:\d+:\d+: .*resubmit\.onExitCodes\[1\]: an exit status is between 1 "
                                  r"and 255, got 0$")
        self.assertRegex(errs[1], r"jobs\.yaml:\d+:\d+: .*resubmit\.onExitCodes\[2\]: ")
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply().code, 0)
        self.repo.write({"a": with_exit_codes(job_yaml("a"), "[143, 137]")})
        r = self.repo.plan()
        self.assertEqual(self.block(r.out), [
            "~   job.a update",
            "g2-standard-4 ×1, 1×L4, STANDARD in us-central1",
            "resubmit.onExitCodes: [] -> [137, 143]"])

    # ---- per-class budgets: resubmit.on as a map --------------------------------------------

    def test_per_class_budgets_end_the_right_run_with_the_right_reason(self):
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "a"}, "outcome": "stockout"})
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "b"}, "outcome": "internal"})
        self.fake.post("/_fake/timings", {"running_seconds": 60})
        # a: two resubmissions after stockouts, three jobs in all; b: none after an internal error.
        self.repo.write({"a": with_resubmit(job_yaml("a"), "{on: {stockout: 2, preempted: 20}, maxAttempts: 10}"),
                         "b": with_resubmit(job_yaml("b"), "{on: {stockout: 5, internal: 0}, maxAttempts: 10}")})
        self.assertEqual(self.repo.apply().code, 0)
        for attempt in (2, 3):
            self.fake.advance(START + 60)
            r = self.repo.plan()
            self.assertEqual(self.block(r.out)[2],
                             "attempt %d/10 after stockout at 2026-01-01 00:0%dZ (code 8: %s)" % (
                                 attempt, 2 * (attempt - 2), STOCKOUT))
            self.assertEqual(self.repo.apply("-target", "job.a").code, 0)
        self.fake.advance(START + 60)
        r = self.repo.plan()
        self.assertEqual(self.no_change(r.out),
                         "job.a: failed (stockout at 2026-01-01 00:03Z); gave up: 2 resubmissions after stockouts "
                         "used (code 8: %s)" % STOCKOUT)
        self.assertEqual(self.no_change(r.out, "job.b"),
                         "job.b: failed (internal at 2026-01-01 00:01Z); gave up: 0 resubmissions after internal "
                         "errors used (code 13: Internal error occurred for the current attempt.)")
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual((len(self.live_jobs("a")), len(self.live_jobs("b"))), (3, 1))

    def test_the_json_plan_shows_each_class_budget_and_what_is_used(self):
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "a"}, "outcome": "stockout"})
        self.repo.write({"a": with_resubmit(job_yaml("a"), "{on: {stockout: 2, preempted: 20}, maxAttempts: 10}"),
                         "b": job_yaml("b")})

        def budgets(stockouts):
            return {"stockout": {"allowed": 2, "used": stockouts}, "preempted": {"allowed": 20, "used": 0}}

        def actions():
            """job.a's action and budgets; job.b (resubmit.on a list) has none."""
            acts = {a["address"]: a for a in self.json_plan()["actions"]}
            self.assertNotIn("budgets", acts["job.b"])
            return acts["job.a"]["action"], acts["job.a"]["budgets"]

        self.assertEqual(actions(), ("create", budgets(0)))
        self.assertEqual(self.repo.apply().code, 0)
        for used in (1, 2):
            self.fake.advance(START + 60)
            self.assertEqual(actions(), ("resubmit", budgets(used)))   # the resubmission it plans counted
            self.assertEqual(self.repo.apply("-target", "job.a").code, 0)
        self.fake.advance(START + 60)
        self.assertEqual(actions(), ("noop", budgets(2)))              # gave up: both used
        # vx status shows the same counts for the run, and none for job.b.
        r = self.repo.vx("status", "-C", self.repo.dir, "-format", "json")
        self.assertEqual((r.code, r.err), (0, ""), r)
        rows = {x["address"]: x for x in json.loads(r.out)["addresses"]}
        self.assertEqual(rows["job.a"]["budgets"], budgets(2))
        self.assertNotIn("budgets", rows["job.b"])

    def test_a_budget_change_is_an_update_and_the_map_is_checked(self):
        self.repo.write({"a": job_yaml("a", on="stockout, preempted")})
        self.assertEqual(self.repo.apply().code, 0)
        self.repo.write({"a": with_resubmit(job_yaml("a"), "{on: {stockout: 6, preempted: 20}, maxAttempts: 3}")})
        r = self.repo.plan()
        self.assertEqual(self.block(r.out), [
            "~   job.a update",
            "g2-standard-4 ×1, 1×L4, STANDARD in us-central1",
            "resubmit.on: [stockout, preempted] -> {stockout: 6, preempted: 20}"])
        self.repo.write({"a": with_resubmit(job_yaml("a"), "{on: {stockout: -1, preemptd: 2}, maxAttempts: 3}")})
        r = self.repo.vx("validate", self.repo.dir)
        self.assertEqual(r.code, 1, r)
        errs = sorted(re.sub(r"^.*jobs\.yaml:\d+:\d+: ", "", l) for l in r.err.splitlines() if "resubmit.on" in l)
        self.assertEqual(len(errs), 2, r.err)
        self.assertTrue(errs[0].endswith("resubmit.on.stockout: resubmissions after a stockout must be between 0 "
                                         "and 100, got -1"), errs)
        self.assertIn('resubmit.on: unknown failure class "preemptd"', errs[1])

    # ---- resubmit.within ----------------------------------------------------------------------

    def at_fake_now(self):
        """vx's clock set to the fake's (VX_NOW), as Google's and this machine's agree in life."""
        return {"VX_NOW": self.fake.get("/_fake/clock")["now"]}

    def test_within_stops_attempts_at_the_deadline(self):
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "a"}, "outcome": "stockout"})
        self.repo.write({"a": with_resubmit(job_yaml("a"), "{on: [stockout], maxAttempts: 10, within: 1h}")})
        self.assertEqual(self.repo.apply(env=self.at_fake_now()).code, 0)
        self.fake.advance(START)
        r = self.repo.plan(env=self.at_fake_now())
        self.assertEqual(self.block(r.out)[2],
                         "attempt 2/10 after stockout at 2026-01-01 00:00Z; resubmit.within 1h: no attempt after "
                         "2026-01-01 01:00Z (code 8: %s)" % STOCKOUT)
        plan = schemas.check_text(self.repo.plan("-format", "json", env=self.at_fake_now()).out, "plan")
        self.assertEqual([(a["action"], a["after"]["deadline"]) for a in plan["actions"]],
                         [("resubmit", "2026-01-01T01:00:00Z")])
        self.assertEqual(self.repo.apply(env=self.at_fake_now()).code, 0)
        self.fake.advance(3600 - START - 60)      # 00:59: attempt 2 failed at 00:01:10, the window is open
        r = self.repo.plan(env=self.at_fake_now())
        self.assertIn("\u21bb   job.a resubmit", r.out)
        self.fake.advance(60)                     # 01:00: closed
        r = self.repo.plan("-detailed-exitcode", env=self.at_fake_now())
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.no_change(r.out),
                         "job.a: failed (stockout at 2026-01-01 00:01Z); gave up: resubmit.within 1h closed at "
                         "2026-01-01 01:00Z (code 8: %s)" % STOCKOUT)
        plan = schemas.check_text(self.repo.plan("-format", "json", env=self.at_fake_now()).out, "plan")
        self.assertEqual([(a["action"], a["after"]["deadline"]) for a in plan["actions"]],
                         [("noop", "2026-01-01T01:00:00Z")])
        self.assertEqual(self.repo.apply(env=self.at_fake_now()).code, 0)
        self.assertEqual(len(self.live_jobs("a")), 2)

    # ---- resubmit.returnAfter ------------------------------------------------------------------

    PREEMPTED = STOCKOUT.replace("us-central1", "us-east5")   # Google's text for a reclaimed Spot VM

    def test_after_return_after_the_next_attempt_is_on_rung_0(self):
        # Rung 0 (us-central1) has no L4s; rung 1 (us-east5) has them, each run preempted after 30 min.
        self.fake.post("/_fake/capacity", {"region": "us-central1", "accelerator_type": "NVIDIA_L4", "gpus": 0})
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "a", "vx-rung": "1"}, "outcome": "preempted"})
        self.fake.post("/_fake/timings", {"running_seconds": 3600})
        self.repo.write({"a": with_resubmit(job_yaml("a", strategy="SPOT"), "{on: [stockout, preempted], maxAttempts: 6, "
                                                           "returnAfter: 1h, fallback: [{region: us-east5}]}")})
        self.assertEqual(self.repo.apply(env=self.at_fake_now()).code, 0)
        self.fake.advance(60)                         # 00:01: attempt 1 stocked out at 00:00:35
        r = self.repo.plan(env=self.at_fake_now())
        self.assertEqual(self.block(r.out)[2], "attempt 2/6 on rung 1 (region us-east5) after stockout in "
                                               "us-central1 (code 8: %s)" % STOCKOUT)
        self.assertEqual(self.repo.apply(env=self.at_fake_now()).code, 0)
        self.fake.advance(START + 1800)               # 00:31:35: attempt 2, left rung 0 at 00:01, preempted
        r = self.repo.plan(env=self.at_fake_now())
        self.assertEqual(self.block(r.out)[2], "attempt 3/6 on rung 1 (region us-east5) after preempted in "
                                               "us-east5 (code 8: %s)" % self.PREEMPTED)
        self.assertEqual(self.repo.apply(env=self.at_fake_now()).code, 0)
        self.fake.advance(START + 1800)               # 01:02:10: attempt 3 preempted, 1h since 00:01
        r = self.repo.plan(env=self.at_fake_now())
        self.assertEqual(self.block(r.out)[2], "attempt 4/6 on rung 0 (region us-central1) after preempted in "
                                               "us-east5; back to rung 0 (returnAfter 1h passed since it left "
                                               "rung 0 at 2026-01-01 00:01Z) (code 8: %s)" % self.PREEMPTED)
        self.assertEqual(self.repo.apply(env=self.at_fake_now()).code, 0)
        jobs = sorted(self.live_jobs("a"), key=lambda j: int(j["labels"]["vx-attempt"]))
        self.assertEqual([(j["labels"]["vx-rung"], j["name"].split("/")[3]) for j in jobs],
                         [("0", "us-central1"), ("1", "us-east5"), ("1", "us-east5"), ("0", "us-central1")])

    def test_the_watcher_goes_back_to_rung_0_after_return_after(self):
        # The fake's clock at the real time, as test_watch's: the watcher signs its token with its own.
        self.fake.post("/_fake/clock", {"set_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        self.fake.post("/_fake/capacity", {"region": "us-central1", "accelerator_type": "NVIDIA_L4", "gpus": 0})
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "a", "vx-rung": "1"}, "outcome": "preempted"})
        self.fake.post("/_fake/timings", {"running_seconds": 60})
        self.repo.write({"a": with_resubmit(job_yaml("a", strategy="SPOT"), "{on: [stockout, preempted], "
                                            "maxAttempts: 6, returnAfter: 1m, fallback: [{region: us-east5}]}")})
        self.assertEqual(self.repo.apply(env=self.at_fake_now()).code, 0)
        self.fake.advance(60)
        self.assertEqual(self.repo.apply(env=self.at_fake_now()).code, 0)   # attempt 2 on rung 1, at +60s
        self.fake.advance(START + 30)                 # +125s: preempted after 30s running, 65s after it left
        r = self.repo.vx("watch", self.repo.dir, "-once", env=self.at_fake_now())
        self.assertEqual((r.code, r.err), (2, ""), r)
        self.assertEqual([re.sub(r"^\S+ ", "", re.sub(r"customJobs/\d+$", "customJobs/ID", l))
                          for l in r.out.splitlines()],
                         ["record: recorded: job.a: queued -> failed (preempted)",
                          "act: + job.a resubmit projects/630532886571/locations/us-central1/customJobs/ID"])
        jobs = sorted(self.live_jobs("a"), key=lambda j: int(j["labels"]["vx-attempt"]))
        self.assertEqual([(j["labels"]["vx-rung"], j["name"].split("/")[3]) for j in jobs],
                         [("0", "us-central1"), ("1", "us-east5"), ("0", "us-central1")])

    def test_return_after_is_checked_and_a_change_is_an_update(self):
        ladder = "{on: [stockout], maxAttempts: 3, fallback: [{region: us-east5}]%s}"
        self.repo.write({"a": with_resubmit(job_yaml("a"), ladder % "")})
        self.assertEqual(self.repo.apply().code, 0)
        self.repo.write({"a": with_resubmit(job_yaml("a"), ladder % ", returnAfter: 6h")})
        r = self.repo.plan()
        self.assertEqual(self.block(r.out)[-1], "resubmit.returnAfter: none -> 6h")
        self.repo.write({"a": with_resubmit(job_yaml("a"), ladder % ", returnAfter: 10s")})
        r = self.repo.vx("validate", self.repo.dir)
        self.assertEqual(r.code, 1, r)
        self.assertEqual([re.sub(r"^.*jobs\.yaml:\d+:\d+: ", "", l) for l in r.err.splitlines() if "returnAfter" in l],
                         ['CustomJob "a": resubmit.returnAfter: must be from 1m to 30d, got "10s"'])

if __name__ == "__main__":
    unittest.main()
