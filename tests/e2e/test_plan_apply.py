"""End to end: vxplan and vxapply against the fake Google Cloud (issue 5).

Each test asserts the jobs in the fake (GET /_fake/jobs) and the calls vx
made (GET /_fake/requests), not only vx's output.
"""
import json
import os
import re
import signal
import time
import unittest
import urllib.parse

from harness import FakeTestCase, job_yaml
import schemas

RUNNING_AFTER = 60       # virtual seconds: QUEUED -> PENDING -> RUNNING with the fake's defaults
FINISHED_AFTER = 4000    # and RUNNING -> SUCCEEDED
TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d"
REFUSAL = (r'\(vertex: creating job "a" in us-central1: PERMISSION_DENIED: Injected fault\. \(the caller lacks '
           r'aiplatform\.customJobs\.create for projects\.locations\.customJobs\.create: grant '
           r'roles/aiplatform\.user on the project\)\)')


class PlanApply(FakeTestCase):

    def test_create_then_no_changes(self):
        self.repo.write({"a": job_yaml("a")})
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 2, r)
        self.assertIn("+   job.a create", r.out)
        self.assertIn("g2-standard-4 ×1, 1×L4", r.out)
        self.assertIn("Plan: 1 to create", r.out)
        self.assertEqual(self.live_jobs(), [], "plan must not create anything")
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        jobs = self.live_jobs("a")
        self.assertEqual(len(jobs), 1)
        labels = jobs[0]["labels"]
        self.assertEqual(labels["vx-stack"], "e2e")
        self.assertEqual(labels["vx-job"], "a")
        self.assertEqual(labels["vx-run"], "1")
        self.assertEqual(labels["vx-attempt"], "1")
        self.assertEqual(labels["team"], "e2e")
        self.assertEqual(len(labels["vx-spec"]), 12)
        before = self.fake.requests()
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        self.assertIn("no changes", r.out)
        after = self.fake.requests()
        self.assertEqual(after["by_rpc"].get("GetCustomJob", 0), 0)
        self.assertEqual(after["by_rpc"].get("CreateCustomJob", 0),
                         before["by_rpc"].get("CreateCustomJob", 0))
        self.assertEqual(after["by_rpc"]["ListCustomJobs"] - before["by_rpc"]["ListCustomJobs"], 1)

    def test_spec_change_replace_then_rerun(self):
        self.repo.write({"a": job_yaml("a", epochs=3)})
        self.assertEqual(self.repo.apply().code, 0)
        first = self.live_jobs("a")[0]["name"]
        self.fake.advance(RUNNING_AFTER)
        self.repo.write({"a": job_yaml("a", epochs=4)})
        r = self.repo.plan()
        self.assertIn("-/+ job.a replace", r.out)
        self.assertIn("spec changed: workerPoolSpecs[0].containerSpec.args while running", r.out)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        jobs = {j["name"]: j for j in self.live_jobs("a")}
        self.assertEqual(len(jobs), 2)
        self.assertIn(jobs[first]["state"], ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED"))
        self.assertEqual(len(self.active("a")), 1)
        self.fake.advance(FINISHED_AFTER)
        self.repo.write({"a": job_yaml("a", epochs=5)})
        r = self.repo.plan()
        self.assertIn("job.a rerun", r.out)
        self.assertEqual(self.fake.rpc_count("CancelCustomJob"), 1)
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.fake.rpc_count("CancelCustomJob"), 1, "a finished run is not cancelled")
        self.assertEqual(len(self.live_jobs("a")), 3)
        self.assertEqual(len(self.active("a")), 1)

    def test_run_bump(self):
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(FINISHED_AFTER)
        self.repo.write({"a": job_yaml("a", run=2)})
        r = self.repo.plan()
        self.assertIn("run bumped 1 -> 2", r.out)
        self.assertEqual(self.repo.apply().code, 0)
        runs = sorted(j["labels"]["vx-run"] for j in self.live_jobs("a"))
        self.assertEqual(runs, ["1", "2"])

    def _fail_next(self, outcome, job="a", times=None):
        rule = {"labels": {"vx-job": job}, "outcome": outcome}
        if times:
            rule["times"] = times
        self.fake.post("/_fake/outcomes", rule)

    def test_resubmit_up_to_budget(self):
        self._fail_next("stockout")
        self.repo.write({"a": job_yaml("a", on="stockout, preempted", attempts=3)})
        self.assertEqual(self.repo.apply().code, 0)
        for attempt in (2, 3):
            self.fake.advance(FINISHED_AFTER)
            r = self.repo.plan()
            self.assertIn("job.a resubmit", r.out, r)
            self.assertIn("attempt %d/3 after stockout" % attempt, r.out)
            self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(FINISHED_AFTER)
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        self.assertIn("resubmit budget exhausted (3/3 attempts)", r.out)
        attempts = sorted(j["labels"]["vx-attempt"] for j in self.live_jobs("a"))
        self.assertEqual(attempts, ["1", "2", "3"])
        outs = {j["jobSpec"]["baseOutputDirectory"]["outputUriPrefix"].rstrip("/")
                for j in self.live_jobs("a")}
        self.assertEqual(outs, {"gs://e2e-bucket/a"}, "the same output directory, to resume")

    def test_preempted_resubmitted_user_error_not(self):
        self._fail_next("preempted", "p")
        self._fail_next("user-error", "u")
        self.repo.write({"p": job_yaml("p", machine="g2-standard-8", strategy="SPOT"),
                         "u": job_yaml("u")})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(FINISHED_AFTER)
        r = self.repo.plan()
        self.assertIn("job.p resubmit", r.out)
        self.assertIn("attempt 2/3 after preempted", r.out)
        self.assertIn("job.u: failed (user-error", r.out)
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(len(self.live_jobs("p")), 2)
        self.assertEqual(len(self.live_jobs("u")), 1)

    def unchanged(self, out):
        """The plan's one line under "No change:"."""
        lines = out.splitlines()
        got = lines[lines.index("No change:") + 1:]
        return got[0] if got and got[0].startswith("      ") and (len(got) == 1 or not got[1].startswith("      ")) \
            else self.fail("not one line under No change:\n" + out)

    def refuse_creates(self):
        """Every customJobs.create answers 403 PERMISSION_DENIED (the fake's fault injection)."""
        self.fake.post("/_fake/faults", {"error_rate": 1.0, "statuses": [403], "methods": ["CreateCustomJob"]})

    def test_a_refused_create_is_one_attempt_not_one_per_apply(self):
        self.refuse_creates()
        self.repo.write({"a": job_yaml("a", on="stockout", attempts=3)})
        r = self.repo.apply()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 1)
        # The next apply does not ask again: refused is not in resubmit.on.
        r = self.repo.apply()
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 1, r)
        self.assertEqual(r.code, 0, r)
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertRegex(self.unchanged(r.out), r"^      job\.a: the create was refused \(refused at %sZ, attempt 1\); "
                         r"not asked again: refused is not in resubmit\.on; fix the cause, then vxapply -replace "
                         r"job\.a %s$" % (TIME, REFUSAL))
        # Fixed, the user asks again with -replace.
        self.fake.post("/_fake/faults", {})
        r = self.repo.apply("-replace", "job.a")
        self.assertEqual(r.code, 0, r)
        self.assertEqual([j["labels"]["vx-attempt"] for j in self.live_jobs("a")], ["2"])

    def test_a_create_not_refused_by_the_server_is_no_attempt(self):
        """A 401 (the caller's credentials refused) says nothing of the job: it is not
        recorded as a refused create, and the next apply creates the job."""
        self.fake.post("/_fake/faults", {"error_rate": 1.0, "statuses": [401], "methods": ["CreateCustomJob"]})
        self.repo.write({"a": job_yaml("a", on="stockout", attempts=3)})
        r = self.repo.apply()
        self.assertEqual(r.code, 1, r)
        self.fake.post("/_fake/faults", {})
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual([j["labels"]["vx-attempt"] for j in self.live_jobs("a")], ["1"])

    def test_a_refused_create_listed_in_resubmit_on_backs_off(self):
        self.refuse_creates()
        self.repo.write({"a": job_yaml("a", on="refused", attempts=3)})
        self.assertEqual(self.repo.apply().code, 1)
        r = self.repo.apply()
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 1, r)
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertRegex(self.unchanged(r.out), r"^      job\.a: the create was refused \(refused at %sZ, 1 in a row\); "
                         r"attempt 2/3 not before %s:\d\dZ \(backoff\) %s$" % (TIME, TIME, REFUSAL))
        # The state holds the refusal as an attempt, with its class, message and time.
        hist = json.loads(self.repo.git("show", "vx/state/e2e:jobs/a.json"))["history"]
        self.assertEqual([(h["attempt"], h["failure"], h["resource"]) for h in hist], [(1, "refused", None)])

    def test_removed_job_cancelled_or_forgotten(self):
        self.repo.write({"b": job_yaml("b")})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(FINISHED_AFTER)           # b has succeeded
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")})
        self.assertEqual(self.repo.apply().code, 0)  # a is running
        self.repo.write({})
        r = self.repo.plan()
        self.assertIn("-   job.a cancel", r.out)
        self.assertIn("-   job.b forget", r.out)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.fake.rpc_count("CancelCustomJob"), 1)
        self.assertEqual(self.active(), [])
        self.assertEqual(len(self.live_jobs()), 2, "nothing is deleted: history stays")
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        # the cancelled run's record stays until its end is seen, then is forgotten
        r = self.repo.vx("state", "list", "-C", self.repo.dir)
        self.assertRegex(r.out, r"\Ajob\.a +projects/\d+/locations/us-central1/customJobs/\d+ cancelling\n\Z")
        self.fake.advance(10)
        r = self.repo.plan()
        self.assertIn("-   job.a forget", r.out)
        self.assertEqual(self.repo.apply().code, 0)
        last = self.repo.git("log", "-1", "--format=%H", "--grep=^vx refresh: ", "vx/state/e2e").strip()
        self.assertEqual(json.loads(self.repo.git("show", last + ":jobs/a.json"))["current"]["state"],
                         "JOB_STATE_CANCELLED", "its last state is recorded before it is forgotten")
        r = self.repo.vx("state", "list", "-C", self.repo.dir)
        self.assertEqual(r.out, "")

    def test_protect_refuses_cancel(self):
        self.repo.write({"a": job_yaml("a", protect="true")})
        self.assertEqual(self.repo.apply().code, 0)
        self.repo.write({})
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertIn("job.a is protected", r.out + r.err)
        r = self.repo.apply()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(self.fake.rpc_count("CancelCustomJob"), 0)
        self.assertEqual(len(self.active("a")), 1)

    def test_drift_cancelled_outside(self):
        self.repo.write({"a": job_yaml("a", on="stockout, cancelled-outside")})
        self.assertEqual(self.repo.apply().code, 0)
        name = self.live_jobs("a")[0]["name"]
        self.fake.cancel_behind_vx(name)
        self.fake.advance(RUNNING_AFTER)
        r = self.repo.plan()
        self.assertIn("was cancelled outside vx", r.out)
        self.assertIn("job.a resubmit", r.out)
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(len(self.active("a")), 1)

    def test_plan_over_200_jobs_lists_only(self):
        # A project whose creation quota was raised: both sides allow it.
        self.fake.post("/_fake/rate-limits", {"vertex_creates_per_minute": 100000,
                                              "vertex_requests_per_minute": 100000})
        self.repo.write({"j%03d" % i: job_yaml("j%03d" % i) for i in range(200)})
        r = self.repo.apply("-parallelism", "16", env={"VX_CREATE_RATE_PER_MINUTE": "unlimited",
                                                        "VX_RATE_PER_MINUTE": "unlimited"})
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.live_jobs()), 200)
        before = self.fake.requests()["by_rpc"]
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        after = self.fake.requests()["by_rpc"]
        self.assertEqual(after.get("GetCustomJob", 0), 0)
        self.assertLessEqual(after["ListCustomJobs"] - before["ListCustomJobs"], 3)

        # A burst of 200 reads (one job a page) against Google's 600 a minute: vx paces itself
        # (a burst of 60, then 9 a second, so no minute can pass 600) and the fake never says 429.
        self.fake.post("/_fake/rate-limits", {"vertex_creates_per_minute": 60,
                                              "vertex_requests_per_minute": 600})
        self.fake.post("/_fake/paging", {"max_page_size": 1})
        self.fake.post("/_fake/requests/reset", {})
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        # the whole log: the plan also lists quota limits (one call), past the default last 200
        lists = [e for e in self.fake.get("/_fake/requests?log=1000")["log"] if e["rpc"] == "ListCustomJobs"]
        self.assertGreaterEqual(len(lists), 200)
        self.assertEqual([e["status"] for e in lists if e["status"] != 200], [])
        paced = lists[-1]["real_time"] - lists[60]["real_time"]
        self.assertGreater(paced, 0.9 * (len(lists) - 61) / 9.0)

    def test_plan_follows_every_page(self):
        # 25 creates are not what this tests: a raised creation quota spares 19 s of pacing.
        self.fake.raise_create_quota()
        self.repo.write({"j%02d" % i: job_yaml("j%02d" % i) for i in range(25)})
        self.assertEqual(self.repo.apply().code, 0)
        # The server now answers with at most 3 jobs a page, whatever vx asks for.
        self.fake.post("/_fake/paging", {"max_page_size": 3})
        self.fake.post("/_fake/requests/reset", {})
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)   # all 25 seen: nothing to create, nothing untracked
        lists = [e["path"] for e in self.fake.requests()["log"] if e["rpc"] == "ListCustomJobs"]
        self.assertEqual(len(lists), 9)
        self.assertNotIn("pageToken", lists[0])
        for path in lists[1:]:
            self.assertIn("pageToken=", path)
        self.assertIn("pageSize=1000", lists[0])

    def test_unconfirmed_create_lists_only_that_jobs_runs(self):
        """A create whose reply was lost is resolved by listing the runs of that
        one job (its vx-job label), not every job of the stack in the region."""
        self.repo.write({"j%02d" % i: job_yaml("j%02d" % i) for i in range(5)})
        self.assertEqual(self.repo.apply().code, 0)
        self.repo.write(dict({"j%02d" % i: job_yaml("j%02d" % i) for i in range(5)}, a=job_yaml("a")))
        self.fake.post("/_fake/faults", {"drop_after_processing_rate": 1.0, "methods": ["CreateCustomJob"]})
        self.fake.post("/_fake/requests/reset", {})
        r = self.repo.apply()
        self.fake.post("/_fake/faults", {})
        self.assertEqual(len(self.live_jobs("a")), 1, r)
        filters = [urllib.parse.parse_qs(urllib.parse.urlsplit(e["path"]).query).get("filter", [""])[0]
                   for e in self.fake.requests()["log"] if e["rpc"] == "ListCustomJobs"]
        # The refresh lists the stack; resolving the create lists job a's runs.
        self.assertEqual(filters[0], "labels.vx-stack=e2e", filters)
        self.assertEqual(sorted(set(filters[1:])), ["labels.vx-job=a AND labels.vx-stack=e2e"], filters)
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)

    def test_lost_create_replies_never_duplicate(self):
        self.fake.post("/_fake/faults", {"drop_after_processing_rate": 0.5,
                                         "methods": ["CreateCustomJob"]})
        self.repo.write({"j%02d" % i: job_yaml("j%02d" % i) for i in range(10)})
        self.repo.apply()
        self.fake.post("/_fake/faults", {})
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        for i in range(10):
            self.assertEqual(len(self.live_jobs("j%02d" % i)), 1, "job j%02d" % i)
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)

    def test_sigkill_mid_apply_then_resume(self):
        self.fake.post("/_fake/faults", {"latency_ms": 300, "methods": ["CreateCustomJob"]})
        self.repo.write({"j%02d" % i: job_yaml("j%02d" % i) for i in range(12)})
        p = self.repo.start_apply("-parallelism", "2")
        deadline = time.time() + 60
        while len(self.live_jobs()) < 3 and time.time() < deadline:
            time.sleep(0.05)
        p.send_signal(signal.SIGKILL)
        p.communicate()
        created = len(self.live_jobs())
        self.assertGreater(created, 0)
        self.assertLess(created, 12, "killed before the end")
        # As if the kill landed while libgit2 was moving the state branch: its lock file stays,
        # and so does the record vx keeps of a ref update under way (docs/leases.md, "Ref lock
        # files"). When the kill did land inside a ref update, the record is there already.
        writer = os.path.join(self.repo.root, ".git", "vx-ref-writer")
        with open(writer) as f:
            rec = f.read()
        if not rec:
            rec = "pid=%d host=%s boot=- start=0 ref=refs/heads/vx/state/e2e\n" % (p.pid, os.uname().nodename)
            with open(writer, "w") as f:
                f.write(rec)
        ref = re.search(r"\bref=(\S+)", rec).group(1)
        lock = os.path.join(self.repo.root, ".git", ref + ".lock")
        if not os.path.exists(lock):
            with open(lock, "w") as f:
                f.write("0" * 40 + "\n")
        self.fake.post("/_fake/faults", {})
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        # Removed at once: its writer is gone (no wait for the lock file to age).
        self.assertIn("vx: warn: removing %s: left by vx (pid %d on %s) updating %s, which ended before it "
                      "finished\n" % (lock, p.pid, os.uname().nodename, ref), r.err)
        self.assertFalse(os.path.exists(lock))
        for i in range(12):
            self.assertEqual(len(self.live_jobs("j%02d" % i)), 1, "job j%02d" % i)

    def test_two_applies_one_waits_for_the_lock(self):
        self.fake.post("/_fake/faults", {"latency_ms": 400, "methods": ["CreateCustomJob"]})
        self.repo.write({"j%02d" % i: job_yaml("j%02d" % i) for i in range(6)})
        a = self.repo.start_apply("-parallelism", "1")
        deadline = time.time() + 60
        while not self.live_jobs() and time.time() < deadline:
            time.sleep(0.05)
        r = self.repo.apply()
        ra = self.repo.finish(a)
        self.assertEqual(ra.code, 0, ra)
        self.assertEqual(r.code, 1, r)
        self.assertIn("state is locked by", r.err)
        self.assertIn("pid %d" % a.pid, r.err)
        self.assertEqual(len(self.live_jobs()), 6)

    def test_saved_plan_refused_after_state_moved(self):
        planfile = os.path.join(self.tmp, "a.plan")
        # A saved plan applies exactly what it showed.
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.plan("-out", planfile).code, 0)
        r = self.repo.vx("apply", planfile)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.live_jobs("a")), 1)
        # The declaration moved after the plan: refused.
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")})
        self.assertEqual(self.repo.plan("-out", planfile).code, 0)
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b"), "c": job_yaml("c")})
        r = self.repo.vx("apply", planfile)
        self.assertEqual(r.code, 1, r)
        self.assertIn("declaration changed since the plan was made", r.err)
        # The state moved after the plan (another apply ran): refused.
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")})
        self.assertEqual(self.repo.plan("-out", planfile).code, 0)
        self.assertEqual(self.repo.apply().code, 0)
        r = self.repo.vx("apply", planfile)
        self.assertEqual(r.code, 1, r)
        self.assertIn("state moved since the plan was made", r.err)
        self.assertEqual(len(self.live_jobs("b")), 1)
        self.assertEqual(len(self.live_jobs("c")), 0)

    def test_json_plan_matches_schema(self):
        self.repo.write({"a": job_yaml("a")})
        r = self.repo.plan("-format", "json")
        self.assertEqual(r.code, 0, r)
        doc = schemas.check_text(r.out, "plan")
        self.assertEqual(doc["format_version"], 1)
        self.assertEqual(doc["actions"][0]["action"], "create")
        self.assertEqual(doc["summary"]["create"], 1)
        self.assertTrue(doc["changes"])

    def test_json_plan_of_a_long_error_matches_schema(self):
        """The plan shows a job's error message whole (the Cloud Logging link Google appends
        included): the published schema must take it, under a real validator."""
        self._fail_next("user-error")
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(FINISHED_AFTER)
        r = self.repo.plan("-format", "json")
        self.assertIn(r.code, (0, 2), r)
        doc = schemas.check_text(r.out, "plan")
        job = self.live_jobs("a")[0]
        # The replica's exit status, from Google's sentence, beside the message (issue 37).
        self.assertEqual([(a["address"], a["action"], a["error"]) for a in doc["actions"]],
                         [("job.a", "noop", dict(job["error"], exit_code=1))])
        self.assertGreater(len(job["error"]["message"]), 201)

    def test_history_of_three_runs(self):
        self._fail_next("stockout", times=2)
        self.repo.write({"a": job_yaml("a", on="stockout", attempts=2)})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(FINISHED_AFTER)
        self.assertEqual(self.repo.apply().code, 0)  # attempt 2 (stockout again)
        self.fake.advance(FINISHED_AFTER)
        self.repo.write({"a": job_yaml("a", on="stockout", attempts=2, run=2)})
        self.assertEqual(self.repo.apply().code, 0)  # run 2
        self.fake.advance(FINISHED_AFTER)
        self.assertEqual(self.repo.apply().code, 0)  # records the final state
        messages = [m for m in self.repo.state_log() if m.strip()]
        self.assertTrue(any("+ job.a resubmit projects/" in m for m in messages), messages)
        self.assertTrue(all("Vx-Serial: " in m for m in messages if m.startswith("vx apply: ")))
        head = self.repo.git("rev-parse", "HEAD").strip()
        self.assertTrue(any("Vx-Config-Commit: %s" % head in m for m in messages))
        r = self.repo.vx("log", "job.a", "-C", self.repo.dir)
        self.assertEqual(r.code, 0, r)
        lines = [l for l in r.out.splitlines() if "customJobs/" in l]
        self.assertEqual(len(lines), 3, r.out)
        self.assertIn("stockout", lines[0] + lines[1])
        self.assertIn("succeeded", r.out)
        for line in lines:
            self.assertRegex(line, r" by \S+@\S+ ", "who launched each run")


if __name__ == "__main__":
    unittest.main()
