"""End to end: fallback ladders (issue 14) against the fake Google Cloud.

A SPOT job declares two rungs to fall back to when capacity is out: FLEX_START
in its own region, then its region us-east5. Each test checks the fake's jobs
(never more than one active for the address), the exact plan lines and
`vx log`.
"""
import json
import os
import re
import signal
import subprocess
import time
import unittest

from harness import FakeTestCase, REGION, VX_BIN, process_state

PENDING_AFTER = 60       # virtual seconds: a queued job has left PENDING (stocked out, or runs)
WAITED_OUT = 3700        # past the FLEX_START rung's maxWaitDuration (1h)
FINISHED_AFTER = 4000    # RUNNING -> SUCCEEDED

LADDER_JOB = """---
kind: CustomJob
name: a
spec:
  workerPoolSpecs:
    - machineSpec: {{machineType: g2-standard-4, acceleratorType: NVIDIA_L4, acceleratorCount: 1}}
      replicaCount: 1
      containerSpec:
        imageUri: "us-docker.pkg.dev/p/r/trainer:1"
  scheduling: {{strategy: SPOT}}
  baseOutputDirectory: {{outputUriPrefix: "gs://e2e-bucket/a"}}
resubmit:
  on: [{on}]
  maxAttempts: 6
  fallback:
    - scheduling: {{strategy: FLEX_START, maxWaitDuration: 1h}}
    - region: {region}
"""

STOCKOUT = ("code 8: Resources are insufficient in region: us-central1. Try a different region or use a "
            "different accelerator.")


def ladder_yaml(on="stockout, preempted, wait-timeout", region="us-east5"):
    return LADDER_JOB.format(on=on, region=region)


class Ladder(FakeTestCase):

    # ---- helpers -------------------------------------------------------------

    def no_capacity_here(self):
        self.fake.post("/_fake/capacity", {"region": REGION, "accelerator_type": "NVIDIA_L4", "gpus": 0})

    def jobs_of_a(self):
        """The fake's jobs of job.a, oldest first, each checked: at most one active."""
        jobs = sorted(self.live_jobs("a"), key=lambda j: int(j["labels"]["vx-attempt"]))
        active = [j["name"] for j in jobs if j["state"] in (
            "JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING")]
        self.assertLessEqual(len(active), 1, "more than one active job for job.a: %s" % active)
        return jobs

    def plan_ok(self):
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        return r

    def apply_ok(self):
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertIn("Apply complete: 1 done, 0 failed.", r.out)
        return r

    def check_rung(self, job, attempt, rung, region, scheduling):
        self.assertEqual(job["labels"]["vx-attempt"], str(attempt))
        self.assertEqual(job["labels"]["vx-rung"], str(rung))
        self.assertEqual(job["name"].split("/")[3], region)
        self.assertEqual(job["jobSpec"]["scheduling"], scheduling)
        # every rung resumes from the same checkpoints
        self.assertEqual(job["jobSpec"]["baseOutputDirectory"]["outputUriPrefix"].rstrip("/"),
                         "gs://e2e-bucket/a")

    def record(self):
        return json.loads(self.repo.git("show", "vx/state/e2e:jobs/a.json"))

    def climb_to_flex(self):
        """Attempt 1 (SPOT) stocks out in us-central1; attempt 2 goes on the FLEX_START rung."""
        self.no_capacity_here()
        self.repo.write({"a": ladder_yaml()})
        self.apply_ok()
        self.fake.advance(PENDING_AFTER)
        self.apply_ok()

    # ---- tests ---------------------------------------------------------------

    def test_stockout_climbs_the_ladder_and_succeeds_on_the_region_rung(self):
        self.no_capacity_here()
        self.repo.write({"a": ladder_yaml()})
        self.apply_ok()
        jobs = self.jobs_of_a()
        self.assertEqual(len(jobs), 1)
        self.check_rung(jobs[0], 1, 0, "us-central1", {"strategy": "SPOT"})

        # SPOT stocks out in us-central1: the next attempt goes on rung 1, FLEX_START.
        self.fake.advance(PENDING_AFTER)
        self.assertEqual(self.jobs_of_a()[0]["state"], "JOB_STATE_FAILED")
        r = self.plan_ok()
        self.assertEqual(self.block(r.out), [
            "↻   job.a resubmit",
            "g2-standard-4 ×1, 1×L4, FLEX_START in us-central1",
            "attempt 2/6 on rung 1 (region us-central1) after stockout in us-central1 (%s)" % STOCKOUT,
        ])
        self.apply_ok()
        jobs = self.jobs_of_a()
        self.assertEqual(len(jobs), 2)
        self.check_rung(jobs[1], 2, 1, "us-central1", {"strategy": "FLEX_START", "maxWaitDuration": "3600s"})

        # FLEX_START waits out its hour without GPUs: rung 2, the other region.
        self.fake.advance(WAITED_OUT)
        self.assertEqual(self.jobs_of_a()[1]["state"], "JOB_STATE_FAILED")
        r = self.plan_ok()
        self.assertEqual(self.block(r.out), [
            "↻   job.a resubmit",
            "g2-standard-4 ×1, 1×L4, SPOT in us-east5",
            # Google publishes no text for a flex-start wait that ran out: the job ended FAILED
            # without ever starting, which is what says it waited out maxWaitDuration.
            "attempt 3/6 on rung 2 (region us-east5) after wait-timeout in us-central1",
        ])
        self.assertIn("Refresh: live jobs read in 2 regions (us-central1, us-east5)\n", r.out)
        # quota is counted where the rung runs
        self.assertIn("  us-east5\n    GPU          class                    in use   adds  limit    free after\n"
                      "    L4           preemptible                   0      1", r.out)
        r = self.repo.plan("-format", "json")
        self.assertEqual(r.code, 0, r)
        act = [a for a in json.loads(r.out)["actions"] if a["address"] == "job.a"][0]
        self.assertEqual((act["action"], act["region"], act["after"]["attempt"], act["after"]["rung"]),
                         ("resubmit", "us-east5", 3, 2))
        self.apply_ok()
        jobs = self.jobs_of_a()
        self.assertEqual(len(jobs), 3)
        self.check_rung(jobs[2], 3, 2, "us-east5", {"strategy": "SPOT"})

        # It succeeds there, and stays there.
        self.fake.advance(FINISHED_AFTER)
        self.assertEqual(self.jobs_of_a()[2]["state"], "JOB_STATE_SUCCEEDED")
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        self.assertIn("Plan: no changes. 1 unchanged.\n", r.out)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.jobs_of_a()), 3)

        # vx log: every attempt with its rung and region.
        rec = self.record()
        who = rec["current"]["launchedBy"]
        config = self.repo.git("rev-parse", "HEAD").strip()[:12]
        names = [j["name"] for j in self.jobs_of_a()]
        r = self.repo.vx("log", "job.a", "-C", self.repo.dir)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.err, "")
        self.assertEqual(r.out, (
            "job.a\n"
            "  2026-01-01T00:00:00Z  create    %s  attempt 1  run 1  rung 0 (us-central1)  by %s  config %s  cost $0.00  "
            "failed (stockout), ended 2026-01-01T00:00:35Z: %s\n"
            "  2026-01-01T00:01:00Z  resubmit  %s  attempt 2  run 1  rung 1 (us-central1)  by %s  config %s  cost $0.00  "
            "failed (wait-timeout), ended 2026-01-01T01:01:05Z\n"
            "  2026-01-01T01:02:40Z  resubmit  %s  attempt 3  run 1  rung 2 (us-east5)  by %s  config %s  cost $0.08  "
            "succeeded, ended 2026-01-01T02:03:15Z\n")
            % (names[0], who, config, STOCKOUT, names[1], who, config, names[2], who, config))

        # A run bump starts again at rung 0, in the declared region.
        self.repo.write({"a": ladder_yaml().replace("resubmit:", "run: 2\nresubmit:")})
        r = self.plan_ok()
        self.assertEqual(self.block(r.out)[:2], ["↻   job.a rerun", "g2-standard-4 ×1, 1×L4, SPOT in us-central1"])

    def climb_to_east(self):
        """climb_to_flex, then the FLEX_START rung waits out: attempt 3 runs on rung 2, us-east5."""
        self.climb_to_flex()
        self.fake.advance(WAITED_OUT)
        self.apply_ok()
        self.fake.advance(PENDING_AFTER)
        jobs = self.jobs_of_a()
        self.check_rung(jobs[2], 3, 2, "us-east5", {"strategy": "SPOT"})
        self.assertEqual(jobs[2]["state"], "JOB_STATE_RUNNING")
        return jobs[2]["name"]

    def edit_ladder(self, fallback):
        text = ladder_yaml()
        head = text[:text.index("  fallback:\n")]
        self.repo.write({"a": head + "  fallback:\n" + "".join("    - %s\n" % r for r in fallback)})

    def test_reordering_the_ladder_keeps_the_run_and_its_attempt_count(self):
        east = self.climb_to_east()
        # us-east5 first, then FLEX_START: the run's rung is now rung 1
        # No new run: an update that records the ladder the watcher acts on.
        self.edit_ladder(["region: us-east5", "scheduling: {strategy: FLEX_START, maxWaitDuration: 1h}"])
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 2, r)
        self.assertEqual(self.block(r.out), ["~   job.a update", "g2-standard-4 ×1, 1×L4, SPOT in us-east5",
                                             "resubmit.fallback: 2 rungs -> 2 rungs, edited"])
        self.assertIn("Plan: 1 to update. 0 unchanged.\n", r.out)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.fake.rpc_count("CancelCustomJob"), 0)
        self.assertEqual(self.jobs_of_a()[2]["state"], "JOB_STATE_RUNNING")
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)
        # removing the rung before it (FLEX_START) keeps it too
        self.edit_ladder(["region: us-east5"])
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 2, r)
        self.assertEqual(self.block(r.out), ["~   job.a update", "g2-standard-4 ×1, 1×L4, SPOT in us-east5",
                                             "resubmit.fallback: 2 rungs -> 1 rung"])

        # preempted there: attempt 4 (the count carried), one rung down from where it is now
        self.edit_ladder(["region: us-east5", "scheduling: {strategy: FLEX_START, maxWaitDuration: 1h}"])
        self.fake.post("/_fake/outcomes", {"name": east, "outcome": "preempted"})
        self.fake.advance(FINISHED_AFTER)
        self.assertEqual(self.jobs_of_a()[2]["state"], "JOB_STATE_FAILED")
        r = self.plan_ok()
        got = self.block(r.out)
        self.assertEqual(got[:2], ["↻   job.a resubmit", "g2-standard-4 ×1, 1×L4, FLEX_START in us-central1"])
        # Google reports a reclaimed Spot VM as a stockout: after a start, vx calls it preempted
        self.assertEqual(got[2], "attempt 4/6 on rung 2 (region us-central1) after preempted in us-east5 "
                         "(code 8: Resources are insufficient in region: us-east5. Try a different region "
                         "or use a different accelerator.)")
        self.apply_ok()
        jobs = self.jobs_of_a()
        self.assertEqual(len(jobs), 4)
        self.check_rung(jobs[3], 4, 2, "us-central1", {"strategy": "FLEX_START", "maxWaitDuration": "3600s"})

    def test_removing_the_runs_rung_replaces_it_where_the_plan_says(self):
        east = self.climb_to_east()
        self.edit_ladder(["scheduling: {strategy: FLEX_START, maxWaitDuration: 1h}"])
        r = self.plan_ok()
        self.assertEqual(self.block(r.out), [
            "-/+ job.a replace",
            "g2-standard-4 ×1, 1×L4, SPOT in us-central1",
            "its rung (SPOT g2-standard-4 in us-east5) is no longer on the ladder while running",
            "cancels %s" % east,
        ])
        self.apply_ok()
        jobs = self.jobs_of_a()
        self.assertEqual(len(jobs), 4)
        self.assertIn(jobs[2]["state"], ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED"))
        self.assertEqual(jobs[2]["name"], east)
        # the next attempt, on rung 0 in us-central1 as the plan said
        self.check_rung(jobs[3], 4, 0, "us-central1", {"strategy": "SPOT"})

    def test_saved_plan_starts_the_run_on_the_rung_it_showed(self):
        """A saved plan's apply starts a run on the rung, attempt and region the plan
        showed (after.rung, after.attempt, region), or refuses it as stale."""
        self.no_capacity_here()
        self.repo.write({"a": ladder_yaml()})
        self.apply_ok()
        self.fake.advance(PENDING_AFTER)
        planfile = os.path.join(self.tmp, "a.plan")
        r = self.repo.plan("-out", planfile)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.block(r.out)[:2], ["↻   job.a resubmit",
                                                 "g2-standard-4 ×1, 1×L4, FLEX_START in us-central1"])
        with open(planfile) as f:
            saved = json.load(f)
        (a,) = [x for x in saved["actions"] if x["address"] == "job.a"]
        self.assertEqual((a["action"], a["after"]["rung"], a["after"]["attempt"], a["region"]),
                         ("resubmit", 1, 2, "us-central1"))
        # The same plan, but showing the run on rung 2 in us-east5 (as a plan made when the
        # ladder read otherwise would): it is not what this apply would do, so nothing starts.
        a["after"]["rung"], a["region"] = 2, "us-east5"
        other = os.path.join(self.tmp, "other.plan")
        with open(other, "w") as f:
            json.dump(saved, f)
        r = self.repo.vx("apply", other)
        self.assertEqual((r.code, r.err), (1, (
            "vx: %s: the world changed since the plan was made: job.a was planned to resubmit "
            "attempt 2 on rung 2 in us-east5, it would now be attempt 2 on rung 1 in us-central1; run "
            "vxplan again\n" % other)), r)
        self.assertEqual(len(self.jobs_of_a()), 1)
        # The plan as saved applies, on the rung it showed.
        r = self.repo.vx("apply", planfile)
        self.assertEqual(r.code, 0, r)
        jobs = self.jobs_of_a()
        self.assertEqual(len(jobs), 2)
        self.check_rung(jobs[1], 2, 1, "us-central1", {"strategy": "FLEX_START", "maxWaitDuration": "3600s"})

    def test_kill_after_a_rungs_create_is_adopted_not_duplicated(self):
        self.climb_to_flex()
        self.fake.advance(WAITED_OUT)
        e = self.fake.env()
        e.update({"VX_TEST_PAUSE": "before-send"})
        p = subprocess.Popen([VX_BIN, "apply", self.repo.dir, "-auto-approve"], cwd=self.repo.root, env=e,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                             text=True)
        try:
            # Frozen right before the rung-2 create goes out (the refresh is done).
            deadline = time.time() + 60
            while process_state(p.pid) not in ("T", "t"):
                self.assertIsNone(p.poll(), "the apply ran on instead of pausing")
                self.assertLess(time.time(), deadline, "the apply did not pause")
                time.sleep(0.02)
            # The server makes the job but the answer is lost, and so is every list
            # that would find it: the apply is killed while it tries to find out.
            self.fake.post("/_fake/faults", {"drop_after_processing_rate": 1.0,
                                             "methods": ["CreateCustomJob", "ListCustomJobs"]})
            p.send_signal(signal.SIGCONT)
            while not any(x["rpc"] == "ListCustomJobs" and x["status"] == "dropped"
                          for x in self.fake.requests()["log"]):
                self.assertIsNone(p.poll(), "the apply ended before its list was dropped")
                self.assertLess(time.time(), deadline, "no list was dropped")
                time.sleep(0.02)
            p.send_signal(signal.SIGKILL)
        finally:
            p.kill()
            p.communicate()
        self.fake.post("/_fake/faults", {})
        jobs = self.jobs_of_a()
        self.assertEqual(len(jobs), 3)
        self.check_rung(jobs[2], 3, 2, "us-east5", {"strategy": "SPOT"})
        # The kill landed after the create and before its run was recorded.
        self.assertEqual(self.record()["current"]["attempt"], 2)

        # The next plan lists us-east5 (a rung's region), finds it by its labels, adopts it.
        r = self.plan_ok()
        self.assertEqual(self.block(r.out)[0], "~   job.a adopt")
        self.assertIn("resubmit; a live job with its labels already exists (%s, queued): an earlier apply "
                      "created it" % jobs[2]["name"], r.out)
        self.apply_ok()
        jobs = self.jobs_of_a()
        self.assertEqual(len(jobs), 3, "no duplicate create")
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 3)
        cur = self.record()["current"]
        self.assertEqual((cur["resource"], cur["attempt"], cur["rung"], cur["region"]),
                         (jobs[2]["name"], 3, 2, "us-east5"))
        self.fake.advance(FINISHED_AFTER)
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)

    def test_status_read_error_never_moves_a_rung(self):
        self.climb_to_flex()
        self.fake.advance(WAITED_OUT)
        # The FLEX_START attempt has waited out, but its status cannot be read:
        # nothing is planned, nothing moves down the ladder.
        self.fake.post("/_fake/faults", {"error_rate": 1.0, "statuses": [403], "methods": ["ListCustomJobs"]})
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.out, "")
        self.assertNotIn("resubmit", r.err)
        r = self.repo.apply()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)
        self.assertEqual(self.record()["current"]["rung"], 1)
        self.fake.post("/_fake/faults", {})
        r = self.plan_ok()
        self.assertEqual(self.block(r.out)[2][:68],
                         "attempt 3/6 on rung 2 (region us-east5) after wait-timeout in us-cen")

    def test_user_error_stays_on_its_rung(self):
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "a", "vx-rung": "0"}, "outcome": "stockout"})
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "a", "vx-rung": "1"}, "outcome": "user-error"})
        self.repo.write({"a": ladder_yaml(on="stockout, preempted, wait-timeout, user-error")})
        self.apply_ok()
        self.fake.advance(PENDING_AFTER)
        self.apply_ok()  # attempt 2 on rung 1 (FLEX_START)
        self.fake.advance(FINISHED_AFTER)
        jobs = self.jobs_of_a()
        self.assertEqual(jobs[1]["state"], "JOB_STATE_FAILED")
        r = self.plan_ok()
        block = self.block(r.out)
        self.assertEqual(block[:2], ["↻   job.a resubmit", "g2-standard-4 ×1, 1×L4, FLEX_START in us-central1"])
        self.assertTrue(block[2].startswith(
            "attempt 3/6 on rung 1 (region us-central1) after user-error in us-central1 (code 3: "
            "The replica workerpool0-0 exited with a non-zero status of 1."), block)
        self.apply_ok()
        jobs = self.jobs_of_a()
        self.assertEqual(len(jobs), 3)
        self.check_rung(jobs[2], 3, 1, "us-central1", {"strategy": "FLEX_START", "maxWaitDuration": "3600s"})

    def test_user_error_not_listed_is_not_resubmitted(self):
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "a", "vx-rung": "0"}, "outcome": "user-error"})
        self.repo.write({"a": ladder_yaml()})
        self.apply_ok()
        self.fake.advance(FINISHED_AFTER)
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        self.assertIn("not resubmitted: user-error is not in resubmit.on", r.out)
        self.assertEqual(len(self.jobs_of_a()), 1)

    def test_invalid_rung_is_reported_with_file_and_line(self):
        self.repo.write({"a": ladder_yaml(region="us_east5").replace(
            "    - scheduling: {strategy: FLEX_START, maxWaitDuration: 1h}\n",
            "    - scheduling: {strategy: FLEX_STRAT, maxWaitDuration: 1h}\n")})
        r = self.repo.vx("validate", self.repo.dir)
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.out, "")
        self.assertEqual(r.err, (
            '{d}/jobs.yaml:16:30: CustomJob "a": resubmit.fallback[0]: spec.scheduling.strategy: unknown '
            'value "FLEX_STRAT" (did you mean "FLEX_START"?)\n'
            '{d}/jobs.yaml:17:15: CustomJob "a": resubmit.fallback[1].region: "us_east5" is not a region '
            '(like "us-central1")\n').format(d=self.repo.dir))
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 0)


if __name__ == "__main__":
    unittest.main()
