"""End to end: the audit log tells the truth (issue 8, items 6, 7 and 9).

`vx log` is compared whole, as golden text. Its times are deterministic but for
one column: a run's row carries the job's createTime from the fake's virtual
clock, while a cancel or forget row carries the time of the state commit that
recorded it, which vx stamps with the real clock. Those two row kinds have their
time replaced by "<commit time>" (after checking its format) and nothing else
is normalised. The state branch is read with git to check what was recorded.
"""
import json
import os
import re
import subprocess
import urllib.request

from harness import PROJECT, REGION, ROOT, FakeTestCase, job_yaml
import schemas

RUNNING_AFTER = 60       # virtual seconds: QUEUED -> PENDING -> RUNNING with the fake's defaults
FINISHED_AFTER = 4000    # and RUNNING -> SUCCEEDED (or a planned failure)

COMMIT_TIME = re.compile(r"^  (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)  (cancel|forget)\b", re.M)

STOCKOUT = ("Resources are insufficient in region: us-central1. Try a different region or use a "
            "different accelerator.")
# The fake's user-error message (Google's), whole: the Cloud Logging link is the part a user needs.
USER_ERROR = ("The replica workerpool0-0 exited with a non-zero status of 1. To find out more about "
              "why your job exited please check the logs: https://console.cloud.google.com/logs/"
              "viewer?project=vx-e2e&resource=ml_job%2Fjob_id%2F{id}&advancedFilter=resource.type%3D%22"
              "ml_job%22%0Aresource.labels.job_id%3D%22{id}%22")
CANCELLED = "code 1: CustomJob was cancelled."


class Audit(FakeTestCase):

    # ---- helpers -------------------------------------------------------------

    def log(self, *addr):
        r = self.repo.vx("log", *addr, "-C", self.repo.dir)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.err, "")
        return COMMIT_TIME.sub(lambda m: "  <commit time>  " + m.group(2), r.out)

    def state_file(self, path, rev="vx/state/e2e"):
        return json.loads(self.repo.git("show", "%s:%s" % (rev, path)))

    def last_version(self, path):
        """The record as last written before the commit that removed it."""
        removed = self.repo.git("log", "-1", "--format=%H", "vx/state/e2e", "--", path).strip()
        self.assertNotEqual(removed, "")
        return self.state_file(path, removed + "^")

    def json_plan(self, *args, **kw):
        r = self.repo.plan("-format", "json", *args, **kw)
        return schemas.check_text(r.out, "plan")

    def head(self):
        return self.repo.git("rev-parse", "HEAD").strip()

    def who(self, run):
        self.assertRegex(run["launchedBy"], r"^[^@\s]+@[^@\s]+$")
        return run["launchedBy"]

    def names(self, job):
        return sorted(j["name"] for j in self.live_jobs(job))

    # ---- item 7: final states, one row per action ------------------------------

    def test_replaced_run_ends_cancelled(self):
        self.repo.write({"a": job_yaml("a", epochs=3)})
        c1 = self.head()
        self.assertEqual(self.repo.apply().code, 0)
        first = self.names("a")[0]
        self.fake.advance(RUNNING_AFTER)
        self.repo.write({"a": job_yaml("a", epochs=4)})
        c2 = self.head()
        self.assertEqual(self.repo.apply().code, 0)          # replace: cancel, then create
        second = [n for n in self.names("a") if n != first][0]
        self.fake.advance(RUNNING_AFTER)                     # the first run has ended cancelled
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        rec = self.state_file("jobs/a.json")
        old = rec["history"][0]
        self.assertEqual((old["resource"], old["state"], old["cancelledByVx"], old["endedAt"],
                          old["errorCode"]),
                         (first, "JOB_STATE_CANCELLED", True, "2026-01-01T00:01:05Z", 1))
        self.assertEqual(rec["current"]["state"], "JOB_STATE_RUNNING")
        who = self.who(rec["current"])
        self.assertEqual(self.log("job.a"),
            "job.a\n"
            "  2026-01-01T00:00:00Z  create    %s  attempt 1  run 1  by %s  config %s  cost $0.01  "
            "cancelled (cancelled by vx), ended 2026-01-01T00:01:05Z: %s\n"
            "  <commit time>  cancel    %s\n"
            "  2026-01-01T00:01:00Z  replace   %s  attempt 1  run 1  by %s  config %s  cost $0.71/h  running\n"
            % (first, who, c1[:12], CANCELLED, first, second, who, c2[:12]))

    def test_failed_then_forgotten_shows_failed(self):
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "b"}, "outcome": "user-error"})
        self.repo.write({"b": job_yaml("b")})
        c1 = self.head()
        self.assertEqual(self.repo.apply().code, 0)
        name = self.names("b")[0]
        self.fake.advance(FINISHED_AFTER)                    # b has failed; vx has not looked
        self.repo.write({})
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertIn("-   job.b forget", r.out)
        last = self.last_version("jobs/b.json")["current"]
        self.assertEqual((last["state"], last["failure"], last["errorCode"], last["endedAt"]),
                         ("JOB_STATE_FAILED", "user-error", 3, "2026-01-01T01:00:35Z"))
        self.assertEqual(self.log("job.b"),
            "job.b  (forgotten: no longer declared)\n"
            "  2026-01-01T00:00:00Z  create    %s  attempt 1  run 1  by %s  config %s  cost $0.71  "
            "failed (user-error: exit code 1), ended 2026-01-01T01:00:35Z: code 3: %s\n"
            "  <commit time>  forget\n" % (name, self.who(last), c1[:12],
                                            USER_ERROR.format(id=name.rsplit("/", 1)[1])))

    def test_log_without_address_lists_forgotten_jobs(self):
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")})
        c1 = self.head()
        self.assertEqual(self.repo.apply().code, 0)
        a, b = self.names("a")[0], self.names("b")[0]
        self.fake.advance(FINISHED_AFTER)                    # both succeeded
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply().code, 0)          # b forgotten
        r = self.repo.vx("state", "list", "-C", self.repo.dir)
        self.assertEqual([l.split()[0] for l in r.out.splitlines()], ["job.a"])
        who = self.who(self.state_file("jobs/a.json")["current"])
        self.assertEqual(self.log(),
            "job.a\n"
            "  2026-01-01T00:00:00Z  create    %s  attempt 1  run 1  by %s  config %s  cost $0.71  "
            "succeeded, ended 2026-01-01T01:00:35Z\n"
            "job.b  (forgotten: no longer declared)\n"
            "  2026-01-01T00:00:00Z  create    %s  attempt 1  run 1  by %s  config %s  cost $0.71  "
            "succeeded, ended 2026-01-01T01:00:35Z\n"
            "  <commit time>  forget\n" % (a, who, c1[:12], b, who, c1[:12]))

    def test_cancelled_by_vx_shows_cancelled_with_a_cancel_row(self):
        self.repo.write({"a": job_yaml("a")})
        c1 = self.head()
        self.assertEqual(self.repo.apply().code, 0)
        name = self.names("a")[0]
        self.fake.advance(RUNNING_AFTER)
        self.repo.write({})
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertIn("-   job.a cancel", r.out)
        self.assertEqual(self.fake.rpc_count("CancelCustomJob"), 1)
        # The record stays until its run is seen ending: cancelling, and by vx.
        cur = self.state_file("jobs/a.json")["current"]
        self.assertEqual((cur["resource"], cur["state"], cur["cancelledByVx"]),
                         (name, "JOB_STATE_CANCELLING", True))
        self.fake.advance(RUNNING_AFTER)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertIn("-   job.a forget", r.out)
        last = self.last_version("jobs/a.json")["current"]
        self.assertEqual((last["state"], last["cancelledByVx"], last["failure"]),
                         ("JOB_STATE_CANCELLED", True, None))
        self.assertEqual(self.log("job.a"),
            "job.a  (forgotten: no longer declared)\n"
            "  2026-01-01T00:00:00Z  create    %s  attempt 1  run 1  by %s  config %s  cost $0.01  "
            "cancelled (cancelled by vx), ended 2026-01-01T00:01:05Z: %s\n"
            "  <commit time>  cancel    %s\n"
            "  <commit time>  forget\n" % (name, self.who(last), c1[:12], CANCELLED, name))

    def test_adopted_run_carries_the_jobs_create_time(self):
        """A job an earlier apply made but never recorded is adopted with its own createTime."""
        # An earlier apply wrote the state (so its lineage is stored: here by
        # making job z; taking the lease alone stores nothing), then died.
        self.repo.write({"z": job_yaml("z")})
        self.assertEqual(self.repo.apply().code, 0)
        lineage = json.loads(self.repo.git("show", "vx/state/e2e:stack.json"))["lineage"]
        self.repo.write({"a": job_yaml("a")})
        c1 = self.head()
        plan = json.loads(self.repo.plan("-format", "json").out)
        spec_hash = plan["actions"][0]["after"]["spec_hash"]
        made = self.create_behind_vx({"vx-stack": "e2e", "vx-lineage": lineage.replace("-", "")[:12],
                                      "vx-job": "a", "vx-spec": spec_hash[:12],
                                      "vx-run": "1", "vx-attempt": "1", "team": "e2e"})
        self.assertEqual(made["createTime"], "2026-01-01T00:00:00.000000Z")
        self.fake.advance(600)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertIn("~ job.a adopt %s" % made["name"], r.out)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2, "adopted, not created again")
        cur = self.state_file("jobs/a.json")["current"]
        self.assertEqual((cur["resource"], cur["action"], cur["createdAt"]),
                         (made["name"], "adopt", "2026-01-01T00:00:00Z"))
        self.assertEqual(self.log("job.a"),
            "job.a\n"
            "  2026-01-01T00:00:00Z  adopt     %s  attempt 1  run 1  by %s  config %s  cost $0.00  running\n"
            % (made["name"], self.who(cur), c1[:12]))

    def create_behind_vx(self, labels):
        self.fake.post("/_fake/tokens", {"token": "outsider-token"})
        body = {"displayName": "a", "labels": labels, "jobSpec": {"workerPoolSpecs": [{
            "machineSpec": {"machineType": "g2-standard-4", "acceleratorType": "NVIDIA_L4",
                            "acceleratorCount": 1},
            "replicaCount": "1",
            "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/trainer:1.0"}}]}}
        req = urllib.request.Request(
            "%s/v1/projects/%s/locations/%s/customJobs" % (self.fake.url, PROJECT, REGION),
            data=json.dumps(body).encode(), method="POST",
            headers={"Content-Type": "application/json", "Authorization": "Bearer outsider-token"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())

    # ---- item 6: uncommitted YAML ---------------------------------------------

    def make_dirty(self):
        """Edits jobs.yaml and adds an untracked stack file, neither committed;
        an untracked non-YAML file and an ignored YAML file (read by vx, but
        never meant for git) do not count."""
        with open(os.path.join(self.repo.dir, "jobs.yaml"), "w") as f:
            f.write(job_yaml("a", epochs=9))
        with open(os.path.join(self.repo.dir, "more.yaml"), "w") as f:
            f.write(job_yaml("m"))
        with open(os.path.join(self.repo.dir, "notes.txt"), "w") as f:
            f.write("not a stack file\n")
        with open(os.path.join(self.repo.root, ".gitignore"), "w") as f:
            f.write("stack/local-*.yaml\n")
        self.repo.git("add", ".gitignore")
        self.repo.git("commit", "-q", "-m", "ignore local files")
        with open(os.path.join(self.repo.dir, "local-x.yaml"), "w") as f:
            f.write(job_yaml("x"))

    def test_dirty_apply_refused_in_ci(self):
        self.repo.write({"a": job_yaml("a")})
        self.make_dirty()
        r = self.repo.apply(env={"CI": "true"})
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.err, "vx: apply: the stack has uncommitted changes (stack/jobs.yaml, "
                                "stack/more.yaml); CI is set, and in CI vx applies only committed "
                                "configuration: commit them first\n")
        self.assertEqual(self.fake.jobs(), [])
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 0)
        branches = self.repo.git("branch", "--list", "vx/state/*")
        self.assertEqual(branches, "", "refused before taking the lock: no state written")
        # Committed, the same apply in CI goes ahead.
        self.repo.git("add", "-A")
        self.repo.git("commit", "-q", "-m", "commit the change")
        r = self.repo.apply(env={"CI": "true"})
        self.assertEqual(r.code, 0, r)
        self.assertEqual(sorted(j["labels"]["vx-job"] for j in self.live_jobs()), ["a", "m", "x"])

    def test_the_readme_says_what_happens_to_uncommitted_edits(self):
        # The README once said vx "plans from what is committed": it plans and applies the
        # files on disk, and only an apply in CI refuses them. What it quotes is what vx prints.
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            readme = re.sub(r"\s+", " ", f.read())
        self.assertNotIn("plans from what is committed", readme)
        self.assertIn("On your machine an uncommitted edit is planned and applied like a committed "
                      "one: the plan header says `Config: commit abc123 with uncommitted changes`, "
                      "and the runs it starts are recorded as `abc123+dirty`", readme)
        self.assertIn("In CI (the `CI` variable set) `vxplan` still plans such an edit and says so, "
                      "but `vxapply` refuses it before taking the lock (`the stack has uncommitted "
                      "changes (...)`)", readme)
        self.repo.write({"a": job_yaml("a")})
        self.make_dirty()
        head = self.head()
        r = self.repo.plan(env={"CI": "true"})
        self.assertEqual(r.code, 0, r)
        self.assertTrue(r.out.splitlines()[2].startswith(
            "Config: commit %s with uncommitted changes (" % head[:12]), r.out)
        r = self.repo.apply(env={"CI": "true"})
        self.assertEqual(r.code, 1, r)
        self.assertTrue(r.err.startswith("vx: apply: the stack has uncommitted changes ("), r.err)
        r = self.repo.apply(env={"CI": ""})
        self.assertEqual(r.code, 0, r)
        self.assertIn("%s+dirty" % head[:12], self.repo.vx("log", self.repo.dir).out)

    def test_dirty_apply_recorded_outside_ci(self):
        self.repo.write({"a": job_yaml("a")})
        self.make_dirty()
        head = self.head()
        plan = self.json_plan(env={"CI": ""})
        decl = plan["declaration_hash"]
        self.assertEqual((plan["config_commit"], plan["config_dirty"]), (head, True))
        r = self.repo.plan(env={"CI": ""})
        self.assertEqual(r.out.splitlines()[2],
                         "Config: commit %s with uncommitted changes (declaration %s)"
                         % (head[:12], decl[:12]))
        r = self.repo.plan("-format", "markdown", env={"CI": ""})
        self.assertIn("\n> **Uncommitted changes**: configuration `%s` with uncommitted changes "
                      "(declaration `%s`).\n\n" % (head[:12], decl[:12]), r.out)
        r = self.repo.apply(env={"CI": ""})
        self.assertEqual(r.code, 0, r)
        for job in ("a", "m", "x"):
            cur = self.state_file("jobs/%s.json" % job)["current"]
            self.assertEqual((cur["configCommit"], cur["configDirty"], cur["declHash"]),
                             (head, True, decl))
        creates = [m for m in self.repo.state_log()
                   if m.strip().startswith("vx apply: + job.a, + job.m, + job.x\n")]
        self.assertEqual(len(creates), 1)
        cur = self.state_file("jobs/a.json")["current"]
        trailers = creates[0].strip().split("\n\n")[-1].splitlines()
        self.assertEqual(trailers, ["Vx-Config-Commit: %s" % head, "Vx-Config-Dirty: true",
                                    "Vx-Decl-Hash: %s" % decl, "Vx-Actor: %s" % self.who(cur),
                                    "Vx-Serial: 2"])
        self.assertEqual(self.log("job.a"),
            "job.a\n"
            "  2026-01-01T00:00:00Z  create    %s  attempt 1  run 1  by %s  config %s+dirty  cost $0.00  queued\n"
            % (cur["resource"], self.who(cur), head[:12]))
        # A clean tree: no marker, no trailers, clean runs.
        self.repo.git("add", "-A")
        self.repo.git("commit", "-q", "-m", "commit the change")
        r = self.repo.plan(env={"CI": ""})
        self.assertEqual(r.out.splitlines()[2], "Config: commit %s" % self.head()[:12])

    # ---- item 9: why a job failed ---------------------------------------------

    def test_error_in_wait_plan_json_and_log(self):
        self.fake.post("/_fake/timings", {"queued_seconds": 0, "pending_seconds": 0})
        self.fake.post("/_fake/outcomes", {"labels": {}, "outcome": "stockout"})
        self.repo.write({"a": job_yaml("a", on="preempted"), "r": job_yaml("r", on="stockout")})
        c1 = self.head()
        r = self.repo.apply("-wait", "-target", "job.a", env={"VX_WAIT_POLL_MS": "50"})
        self.assertEqual(r.code, 1, r)
        name = self.names("a")[0]
        waited = [re.sub(r"\(after \d+s\)", "(after Ns)", l) for l in r.out.splitlines()
                  if l.startswith("  " + name)]
        self.assertEqual(waited, ["  %s: failed (after Ns): code 8: %s" % (name, STOCKOUT)])
        r = self.repo.apply("-target", "job.a")           # nothing to do; records what it saw
        self.assertEqual(r.code, 0, r)
        cur = self.state_file("jobs/a.json")["current"]
        self.assertEqual((cur["state"], cur["errorCode"], cur["errorMessage"]),
                         ("JOB_STATE_FAILED", 8, STOCKOUT))
        self.assertEqual(self.log("job.a"),
            "job.a\n"
            "  2026-01-01T00:00:00Z  create    %s  attempt 1  run 1  by %s  config %s  cost $0.00  "
            "failed (stockout), ended 2026-01-01T00:00:00Z: code 8: %s\n"
            % (name, self.who(cur), c1[:12], STOCKOUT))
        # The plan: a resubmit, and a failure not resubmitted, both say why.
        self.assertEqual(self.repo.apply("-target", "job.r").code, 0)
        r = self.repo.plan()
        self.assertIn("\n        attempt 2/3 after stockout at 2026-01-01 00:00Z (code 8: %s)\n" % STOCKOUT,
                      r.out)
        self.assertIn("\nNo change:\n      job.a: failed (stockout at 2026-01-01 00:00Z); not "
                      "resubmitted: stockout is not in resubmit.on (code 8: %s)\n" % STOCKOUT, r.out)
        r = self.repo.plan("-format", "markdown")
        self.assertIn("| `\u21bb` | `job.r` | resubmit | g2-standard-4 ×1, 1×L4, STANDARD | attempt 2/3 after "
                      "stockout at 2026-01-01 00:00Z (code 8: %s) |\n" % STOCKOUT, r.out)
        plan = self.json_plan()
        errors = {a["address"]: a["error"] for a in plan["actions"]}
        self.assertEqual(errors, {"job.a": {"code": 8, "message": STOCKOUT},
                                  "job.r": {"code": 8, "message": STOCKOUT}})

    def test_a_failure_message_is_shown_whole_in_wait_plan_json_and_log(self):
        self.fake.post("/_fake/timings", {"queued_seconds": 0, "pending_seconds": 0, "running_seconds": 0})
        self.fake.post("/_fake/outcomes", {"labels": {}, "outcome": "user-error"})
        self.repo.write({"a": job_yaml("a")})
        c1 = self.head()
        r = self.repo.apply("-wait=done", env={"VX_WAIT_POLL_MS": "50"})
        self.assertEqual(r.code, 1, r)
        name = self.names("a")[0]
        whole = "code 3: " + USER_ERROR.format(id=name.rsplit("/", 1)[1])
        waited = [re.sub(r"\(after \d+s\)", "(after Ns)", l) for l in r.out.splitlines()
                  if l.startswith("  " + name)]
        self.assertEqual(waited, ["  %s: failed (after Ns): %s" % (name, whole)])
        r = self.repo.plan()
        self.assertIn("\nNo change:\n      job.a: failed (user-error at 2026-01-01 00:00Z); not "
                      "resubmitted: user-error is not in resubmit.on (%s)\n" % whole, r.out)
        plan = self.json_plan()
        self.assertEqual([a["error"] for a in plan["actions"]],
                         [{"code": 3, "message": whole[len("code 3: "):], "exit_code": 1}])
        self.assertEqual(self.repo.apply().code, 0)         # records what it saw
        cur = self.state_file("jobs/a.json")["current"]
        self.assertEqual(self.log("job.a"),
            "job.a\n"
            "  2026-01-01T00:00:00Z  create    %s  attempt 1  run 1  by %s  config %s  cost $0.00  "
            "failed (user-error: exit code 1), ended 2026-01-01T00:00:00Z: %s\n" % (name, self.who(cur), c1[:12], whole))


if __name__ == "__main__":
    import unittest
    unittest.main()
