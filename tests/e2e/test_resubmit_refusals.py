"""End to end: the rest of issue 37. A create the server refused is an attempt that resubmit's
per-class budgets and `within` bound as they bound failed runs; a run that hit its timeout is
judged by the timeout of the rung it ran on.

A refusal is recorded at this machine's clock, and its backoff (a minute, doubling) is measured
against the plan's (VX_NOW): the tests move VX_NOW ahead of the real clock rather than wait.
"""
import json
import re
import time
import unittest

from harness import FakeTestCase, job_yaml

REFUSAL = r"\(vertex: creating job \"%s\" in us-central1: PERMISSION_DENIED: Injected fault\. .*\)"
CANCELLED = "CustomJob was cancelled."
START = 35


def with_resubmit(yaml, resubmit):
    """job_yaml's job with its resubmit: mapping replaced by resubmit (flow YAML)."""
    out, n = re.subn(r"(?m)^resubmit: \{.*\}$", "resubmit: %s" % resubmit, yaml)
    assert n == 1
    return out


def ahead(seconds):
    """VX_NOW this many seconds past the real clock."""
    return {"VX_NOW": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + seconds))}


class Refusals(FakeTestCase):

    def refuse_creates(self):
        """Every customJobs.create answers 403 PERMISSION_DENIED (class refused)."""
        self.fake.post("/_fake/faults", {"error_rate": 1.0, "statuses": [403], "methods": ["CreateCustomJob"]})

    def unchanged(self, out, address):
        for l in out.splitlines():
            if l.startswith("      %s: " % address):
                return l.strip()
        self.fail("no unchanged line for %s in:\n%s" % (address, out))

    def test_a_class_budget_ends_refused_creates(self):
        self.refuse_creates()
        # One resubmission after a refused create: two creates in all, then it gives up.
        self.repo.write({"a": with_resubmit(job_yaml("a"), "{on: {refused: 1, stockout: 3}, maxAttempts: 5}")})
        self.assertEqual(self.repo.apply().code, 1)
        r = self.repo.plan(env=ahead(61))
        self.assertRegex(self.block(r.out)[2], r"^attempt 2/5 after the create was refused \(refused at [0-9: -]+Z\)$")
        self.assertEqual(self.repo.apply(env=ahead(61)).code, 1)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)
        r = self.repo.plan("-detailed-exitcode", env=ahead(61 + 121))
        self.assertEqual(r.code, 0, r)
        self.assertRegex(self.unchanged(r.out, "job.a"),
                         r"^job\.a: the create was refused \(refused at [0-9: -]+Z, 2 in a row\); gave up: 1 "
                         r"resubmission after refused creates used; vxapply -replace job\.a asks again %s$"
                         % (REFUSAL % "a"))
        self.assertEqual(self.repo.apply(env=ahead(61 + 121)).code, 0)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)

    def test_within_ends_refused_creates(self):
        self.refuse_creates()
        self.repo.write({"b": with_resubmit(job_yaml("b"), "{on: [refused], maxAttempts: 5, within: 1m}")})
        self.assertEqual(self.repo.apply().code, 1)
        r = self.repo.plan("-detailed-exitcode", env=ahead(61))
        self.assertEqual(r.code, 0, r)
        self.assertRegex(self.unchanged(r.out, "job.b"),
                         r"^job\.b: the create was refused \(refused at [0-9: -]+Z, 1 in a row\); gave up: "
                         r"resubmit\.within 1m closed at [0-9: -]+Z; vxapply -replace job\.b asks again %s$"
                         % (REFUSAL % "b"))
        self.assertEqual(self.repo.apply(env=ahead(61)).code, 0)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 1)


class RungTimeout(FakeTestCase):

    def test_a_run_that_hit_its_rungs_timeout_is_timeout(self):
        # Rung 0 has no L4s; rung 1 (us-east5) sets its own scheduling.timeout of 1h, which Vertex
        # ends the run at; the declared job sets none (7 days).
        self.fake.post("/_fake/capacity", {"region": "us-central1", "accelerator_type": "NVIDIA_L4", "gpus": 0})
        self.fake.post("/_fake/timings", {"running_seconds": 3 * 3600})
        self.repo.write({"a": with_resubmit(job_yaml("a"), "{on: [stockout, cancelled-outside], maxAttempts: 3, "
                                                           "fallback: [{region: us-east5, scheduling: {timeout: 1h}}]}")})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(60)                      # rung 0 stocked out at 00:00:35
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(START + 3600)            # rung 1 created at 00:01, cancelled at 01:01:35
        job = sorted(self.live_jobs("a"), key=lambda j: int(j["labels"]["vx-attempt"]))[1]
        self.assertEqual((job["state"], job["jobSpec"]["scheduling"]["timeout"]), ("JOB_STATE_CANCELLED", "3600s"))
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        lines = [l.strip() for l in r.out.splitlines() if l.startswith("      job.a: ")]
        # Not cancelled-outside (which resubmit.on lists): Vertex ended it at its rung's timeout.
        self.assertEqual(lines, ["job.a: failed (timeout at 2026-01-01 01:01Z): hit its 1h timeout; not resubmitted: "
                                 "timeout is not in resubmit.on (code 1: %s)" % CANCELLED])
        self.assertEqual(self.repo.apply().code, 0)
        state = json.loads(self.repo.git("show", "vx/state/e2e:jobs/a.json"))
        self.assertEqual((state["current"]["failure"], state["current"]["rung"]), ("timeout", 1))
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)


if __name__ == "__main__":
    unittest.main()
