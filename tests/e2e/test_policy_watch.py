"""End to end: a stack that breaks the policy in force (issue 36, docs/policy.md).

A stack applied with a fallback ladder, then a repository policy that forbids its rung's region:
vx status and vx report still show it (with a warning), vxplan still refuses it, and vx watch
still records what happens, resubmits what the policy allows and holds, with the reason, what it
forbids. Nothing running is cancelled for it.
"""
import json
import os
import time
import unittest

from harness import FakeTestCase, job_yaml

RUNNING = 40          # virtual seconds: queued 5 + pending 30, then RUNNING
PREEMPTED = 2000      # past half the running time (3600 s): a preempted job has failed

# job.a: SPOT in us-central1, falling back to europe-west4 (rung 1) when preempted.
LADDER_JOB = """---
kind: CustomJob
name: a
spec:
  workerPoolSpecs:
    - machineSpec: {machineType: g2-standard-4, acceleratorType: NVIDIA_L4, acceleratorCount: 1}
      replicaCount: 1
      containerSpec:
        imageUri: "us-docker.pkg.dev/p/r/trainer:1"
  scheduling: {strategy: SPOT}
  baseOutputDirectory: {outputUriPrefix: "gs://e2e-bucket/a"}
resubmit:
  on: [preempted]
  maxAttempts: 3
  fallback:
    - region: europe-west4
"""

# job.c: the same job, falling back to on demand ($150/h in PRICES) when preempted.
RATE_JOB = LADDER_JOB.replace("name: a", "name: c").replace("e2e-bucket/a", "e2e-bucket/c").replace(
    "- region: europe-west4", "- scheduling: {strategy: STANDARD}")

# Hand-made rates: a g2-standard-4 (its L4 included) costs $150/h on demand, $50/h spot.
PRICES = {"source": "team table", "date": "2026-01-01", "currency": "USD",
          "regions": {"*": {"machines": {"g2-standard-4": {"on_demand": 150, "spot": 50}}}}}

POLICY = """kind: Policy
name: ml-platform
rules:
  regions: [us-central1]
"""


def without_time(line):
    return line.split(" ", 1)[1]


class PolicyWatch(FakeTestCase):
    maxDiff = None

    def setUp(self):
        super().setUp()
        # The fake's clock at the real time: the watcher announces only runs that ended in the last day.
        now = time.time()
        self.fake.post("/_fake/clock", {"set_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))})

    def applied_then_tightened(self, jobs, policy=POLICY, extra_stack=""):
        """jobs applied and preempted once running; then the policy committed, and the runs preempted."""
        self.repo.write(jobs, extra_stack=extra_stack)
        for name in jobs:
            self.fake.post("/_fake/outcomes", {"labels": {"vx-job": name}, "outcome": "preempted", "times": 1})
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        os.makedirs(os.path.join(self.repo.root, ".vx"))
        with open(os.path.join(self.repo.root, ".vx", "policy.yaml"), "w") as f:
            f.write(policy)
        self.repo.git("add", "-A")
        self.repo.git("commit", "-q", "-m", "policy: tightened")
        self.fake.advance(RUNNING)
        self.fake.advance(PREEMPTED)

    def held_line(self, rule="regions", line=4):
        return ('wait: job.a: held: policy: CustomJob "a": resubmit.fallback[0].region: europe-west4 is not '
                'allowed by policy "ml-platform" (rules.%s, .vx/policy.yaml:%d)' % (rule, line))

    def test_the_watcher_holds_the_forbidden_rung_and_resubmits_the_allowed_job(self):
        self.applied_then_tightened({"a": LADDER_JOB, "b": job_yaml("b", on="preempted", strategy="SPOT")})
        creates = self.fake.rpc_count("CreateCustomJob")
        self.assertEqual(creates, 2)
        r = self.repo.vx("watch", self.repo.dir, "-once")
        self.assertEqual((r.code, r.err), (2, ""), r)
        lines = [without_time(l) for l in r.out.splitlines()]
        self.assertEqual(lines[:3], [
            self.held_line(),
            "record: recorded: job.a: queued -> failed (preempted)",
            "record: recorded: job.b: queued -> failed (preempted)"])
        self.assertEqual(len(lines), 4, r)
        self.assertRegex(lines[3], r"^act: \+ job\.b resubmit projects/\d+/locations/us-central1/customJobs/\d+$")
        # job.b's resubmission is the one create: job.a's rung 1 (europe-west4) is not started
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), creates + 1)
        self.assertEqual(sorted(int(j["labels"]["vx-attempt"]) for j in self.live_jobs("a")), [1])
        self.assertEqual(sorted(int(j["labels"]["vx-attempt"]) for j in self.live_jobs("b")), [1, 2])
        self.assertEqual([j["name"].split("/")[3] for j in self.live_jobs()], ["us-central1"] * 3)

    def test_a_forbidden_rung_is_skipped_for_the_next_allowed(self):
        # job.a's ladder: rung 1 in europe-west4 (forbidden), rung 2 on demand in us-central1
        # (allowed). Preempted, its next attempt skips rung 1 for rung 2, said once; only when no
        # allowed rung remains is the whole address held (the test above).
        job = LADDER_JOB.replace("    - region: europe-west4\n",
                                 "    - region: europe-west4\n    - scheduling: {strategy: STANDARD}\n")
        self.applied_then_tightened({"a": job})
        creates = self.fake.rpc_count("CreateCustomJob")
        r = self.repo.vx("watch", self.repo.dir, "-once")
        self.assertEqual((r.code, r.err), (2, ""), r)
        lines = [without_time(l) for l in r.out.splitlines()]
        self.assertEqual(lines[:2], [
            'policy: job.a: attempt 2/3 on rung 1 (region europe-west4) after preempted in us-central1; rung 1 '
            'skipped (held: policy: CustomJob "a": resubmit.fallback[0].region: europe-west4 is not allowed by '
            'policy "ml-platform" (rules.regions, .vx/policy.yaml:4)): on rung 2 (region us-central1)',
            "record: recorded: job.a: queued -> failed (preempted)"])
        self.assertEqual(len(lines), 3, r)
        self.assertRegex(lines[2], r"^act: \+ job\.a resubmit projects/\d+/locations/us-central1/customJobs/\d+$")
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), creates + 1)
        [second] = [j for j in self.live_jobs("a") if j["labels"]["vx-attempt"] == "2"]
        self.assertEqual((second["labels"]["vx-rung"], second["jobSpec"].get("scheduling", {}).get("strategy", "STANDARD")),
                         ("2", "STANDARD"))
        self.assertEqual(json.loads(self.repo.git("show", "vx/state/e2e:jobs/a.json"))["current"]["rung"], 2)

    def test_the_hold_is_said_once_and_sync_applies_nothing_forbidden(self):
        self.applied_then_tightened({"a": LADDER_JOB})
        creates = self.fake.rpc_count("CreateCustomJob")
        r = self.repo.vx("watch", self.repo.dir, "-cycles", "3", "-interval", "0s", "-sync")
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertEqual([without_time(l) for l in r.out.splitlines()], [
            self.held_line(),
            "record: recorded: job.a: queued -> failed (preempted)"])
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), creates)

    def test_status_and_report_warn_and_plan_refuses(self):
        self.applied_then_tightened({"a": LADDER_JOB})
        where = "%s/jobs.yaml:16:15" % self.repo.dir
        message = ('CustomJob "a": resubmit.fallback[0].region: europe-west4 is not allowed by policy '
                   '"ml-platform" (rules.regions, .vx/policy.yaml:4)')
        warned = ("%s: warning: %s\n"
                  "vx: warning: %s: the stack breaks its policy (1 violation): vxplan and vxapply refuse it, "
                  "and vx watch holds what the policy forbids\n" % (where, message, self.repo.dir))
        for cmd in ("status", "report"):
            r = self.repo.vx(cmd, self.repo.dir)
            self.assertEqual((r.code, r.err), (0, warned), r)
        r = self.repo.vx("status", self.repo.dir)
        self.assertIn("\njob.a    FAILED  1/3      0     us-central1  ", r.out)
        r = self.repo.plan()
        self.assertEqual((r.code, r.out, r.err), (1, "", "%s: %s\nvx: %s: the stack has 1 error\n"
                                                  % (where, message, self.repo.dir)), r)

    def test_a_stack_wide_violation_holds_every_address(self):
        # Two jobs of one GPU each, and at most one GPU active at once: every start is held.
        self.applied_then_tightened({"a": job_yaml("a", on="preempted", strategy="SPOT"),
                                     "b": job_yaml("b", on="preempted", strategy="SPOT")},
                                    policy="kind: Policy\nname: ml-platform\nrules:\n  maxGpusActive: 1\n")
        creates = self.fake.rpc_count("CreateCustomJob")
        r = self.repo.vx("watch", self.repo.dir, "-once")
        self.assertEqual((r.code, r.err), (2, ""), r)
        why = ('held: policy: CustomJob "b": spec.workerPoolSpecs: its 1 GPUs take the GPUs of the stack\'s jobs '
               'active at once to 2, more than policy "ml-platform" (rules.maxGpusActive, .vx/policy.yaml:4) '
               'allows (at most 1)')
        self.assertEqual([without_time(l) for l in r.out.splitlines()], [
            "wait: job.a: " + why,
            "wait: job.b: " + why,
            "record: recorded: job.a: queued -> failed (preempted)",
            "record: recorded: job.b: queued -> failed (preempted)"])
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), creates)

    def test_a_rate_over_max_hourly_usd_is_held_when_the_watcher_plans(self):
        # The rate rule needs the price table: found by the watcher's plan, not by the loader.
        with open(os.path.join(self.repo.dir, "prices.json"), "w") as f:
            json.dump(PRICES, f)
        self.applied_then_tightened({"c": RATE_JOB, "b": job_yaml("b", on="preempted", strategy="SPOT")},
                                    policy="kind: Policy\nname: ml-platform\nrules:\n  maxHourlyUsd: 100\n",
                                    extra_stack="prices: prices.json\n")
        creates = self.fake.rpc_count("CreateCustomJob")
        r = self.repo.vx("watch", self.repo.dir, "-once")
        self.assertEqual((r.code, r.err), (2, ""), r)
        lines = [without_time(l) for l in r.out.splitlines()]
        self.assertEqual(lines[:3], [
            'wait: job.c: held: policy: CustomJob "c": resubmit.fallback[0]: $150.00 per hour (team table) is '
            'more than policy "ml-platform" (rules.maxHourlyUsd, .vx/policy.yaml:4) allows (at most $100)',
            "record: recorded: job.b: queued -> failed (preempted)",
            "record: recorded: job.c: queued -> failed (preempted)"])
        self.assertEqual(len(lines), 4, r)
        self.assertRegex(lines[3], r"^act: \+ job\.b resubmit projects/\d+/locations/us-central1/customJobs/\d+$")
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), creates + 1)
        # vxplan refuses it as before: an error of the plan.
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        # At the rung's field, as vx validate says it and as a job's own maxHourlyUsd is said.
        self.assertIn('\nErrors (the plan cannot be applied):\n  %s/jobs.yaml:32:7: CustomJob "c": resubmit.fallback[0]: '
                      '$150.00 per hour (team table) is more than policy "ml-platform" (rules.maxHourlyUsd, '
                      '.vx/policy.yaml:4) allows (at most $100)\n\n' % self.repo.dir, r.out)

    def test_status_warns_of_a_rate_over_max_hourly_usd(self):
        # The rate rule needs the price table, which vx status reads: it says the violation as it
        # says the loader's (test_status_and_report_warn_and_plan_refuses), at the rung's field.
        with open(os.path.join(self.repo.dir, "prices.json"), "w") as f:
            json.dump(PRICES, f)
        self.applied_then_tightened({"c": RATE_JOB, "b": job_yaml("b", on="preempted", strategy="SPOT")},
                                    policy="kind: Policy\nname: ml-platform\nrules:\n  maxHourlyUsd: 100\n",
                                    extra_stack="prices: prices.json\n")
        r = self.repo.vx("status", self.repo.dir)
        self.assertEqual((r.code, r.err), (0, (
            '%s/jobs.yaml:32:7: warning: CustomJob "c": resubmit.fallback[0]: $150.00 per hour (team table) is more '
            'than policy "ml-platform" (rules.maxHourlyUsd, .vx/policy.yaml:4) allows (at most $100)\n'
            "vx: warning: %s: the stack breaks its policy (1 violation): vxplan and vxapply refuse it, and vx "
            "watch holds what the policy forbids\n" % (self.repo.dir, self.repo.dir))), r)
        # A table in which the rung is within the rule: nothing to say.
        PRICES_OK = dict(PRICES, regions={"*": {"machines": {"g2-standard-4": {"on_demand": 90, "spot": 50}}}})
        with open(os.path.join(self.repo.dir, "prices.json"), "w") as f:
            json.dump(PRICES_OK, f)
        r = self.repo.vx("status", self.repo.dir)
        self.assertEqual((r.code, r.err), (0, ""), r)


if __name__ == "__main__":
    unittest.main()
