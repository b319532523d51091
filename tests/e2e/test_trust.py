"""Issue 8, "Safety" and "Truth": vx never cancels a job it cannot prove it
owns, never touches a record for a job that is not its current run, sees a
job that moved, takes declaration-only settings from the declaration, and
records a refused create.

Each test asserts the fake's jobs and requests and the state branch, not
only vx's output; each failed on the binary before the fix.
"""
import json
import os
import re
import tempfile
import urllib.request

from harness import PROJECT, REGION, FakeTestCase, Repo, job_yaml

RUNNING_AFTER = 60
FINISHED_AFTER = 4000
CANCELLED_AFTER = 10


class Trust(FakeTestCase):

    def record(self, address, repo=None):
        repo = repo or self.repo
        kind, name = address.split(".", 1)
        text = repo.git("show", "vx/state/%s:%ss/%s.json" % (repo.stack, kind, name))
        return json.loads(text)

    def has_record(self, address, repo=None):
        repo = repo or self.repo
        kind, name = address.split(".", 1)
        return "%ss/%s.json" % (kind, name) in repo.git(
            "ls-tree", "-r", "--name-only", "vx/state/%s" % repo.stack).split()

    def create_behind_vx(self, like, labels, project=PROJECT, region=REGION):
        """Creates a job through the real API, as a script or a colleague would."""
        self.fake.post("/_fake/tokens", {"token": "outsider-token"})
        body = {"displayName": like["displayName"], "jobSpec": like["jobSpec"], "labels": labels}
        req = urllib.request.Request(
            "%s/v1/projects/%s/locations/%s/customJobs" % (self.fake.url, project, region),
            data=json.dumps(body).encode(), method="POST",
            headers={"Content-Type": "application/json", "Authorization": "Bearer outsider-token"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())["name"]

    @staticmethod
    def section(out, title):
        """The lines of a plan section ("Warnings:"), up to the next blank line."""
        lines = out.splitlines()
        start = lines.index(title) + 1
        end = start
        while end < len(lines) and lines[end]:
            end += 1
        return lines[start:end]

    # 1 ---------------------------------------------------------------------
    def test_cancelling_an_untracked_copy_keeps_the_record(self):
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(RUNNING_AFTER)
        real = self.live_jobs("a")[0]
        labels = dict(real["labels"], **{"vx-run": "2"})   # a copy whose run was bumped
        copy = self.create_behind_vx(real, labels)
        before = self.record("job.a")

        r = self.repo.plan()
        self.assertEqual([l for l in r.out.splitlines() if l.startswith("  -")],
                         ["  -   job.a cancel"], r)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        states = {j["name"]: j["state"] for j in self.live_jobs("a")}
        self.assertIn(states[copy], ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED"))
        self.assertEqual(states[real["name"]], "JOB_STATE_RUNNING")
        self.assertTrue(self.has_record("job.a"), "the declared job's record must stay")
        after = self.record("job.a")
        self.assertEqual(after["current"]["resource"], real["name"])
        self.assertFalse(after["current"]["cancelledByVx"])
        self.assertEqual(after["history"], before["history"])

        # and nothing more happens to the healthy run
        self.fake.advance(CANCELLED_AFTER)
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual([j["name"] for j in self.active("a")], [real["name"]])
        self.assertEqual(self.fake.rpc_count("CancelCustomJob"), 1)

    # 3 ---------------------------------------------------------------------
    def test_two_stacks_with_one_name_leave_each_other_alone(self):
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply().code, 0)
        theirs = self.live_jobs("a")[0]["name"]
        other = Repo(tempfile.mkdtemp(prefix="other-", dir=self.tmp), self.fake)  # same stack name
        other.write({"b": job_yaml("b")})
        r = other.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.section(r.out, "Warnings:"), [
            "  job.a: live job %s (queued) is labelled vx-stack=e2e but belongs to another state "
            "(vx-lineage=%s); vx leaves it alone. If another repository uses the stack name e2e, "
            "rename one of the two stacks; if it is a leftover of this one, cancel it with "
            "'gcloud ai custom-jobs cancel %s'" % (theirs, self.live_jobs("a")[0]["labels"]["vx-lineage"],
                                                   theirs)])
        r = other.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.fake.rpc_count("CancelCustomJob"), 0)
        self.assertEqual(len(self.active("a")), 1)
        self.assertEqual(len(self.active("b")), 1)
        lineages = {j["labels"]["vx-lineage"] for j in self.live_jobs()}
        self.assertEqual(len(lineages), 2, "each state labels its jobs with its own identity")
        # neither adopts the other's job
        self.assertFalse(self.has_record("job.b"))
        self.assertFalse(self.has_record("job.a", other))
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)

    # 4 ---------------------------------------------------------------------
    def test_project_change_replaces_the_run_where_it_is(self):
        self.repo.write({"a": job_yaml("a", on="stockout, cancelled-outside")})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(RUNNING_AFTER)
        old = self.live_jobs("a")[0]["name"]
        stack = os.path.join(self.repo.dir, "stack.yaml")
        with open(stack) as f:
            text = f.read()
        with open(stack, "w") as f:
            f.write(text.replace("project: %s" % PROJECT, "project: %s-moved" % PROJECT))
        self.repo.git("commit", "-qam", "move project")
        r = self.repo.plan()
        self.assertIn("  -/+ job.a replace", r.out.splitlines(), r)
        self.assertIn("        moved from %s/%s to %s-moved/%s while running" % (PROJECT, REGION, PROJECT, REGION),
                      r.out.splitlines(), r)
        self.assertNotIn("outside vx", r.out)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        states = {j["name"]: j["state"] for j in self.live_jobs("a")}
        self.assertIn(states.pop(old), ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED"))
        self.assertEqual(len(states), 1)
        new = list(states)[0]
        self.assertEqual(self.record("job.a")["current"]["resource"], new)
        self.assertEqual(self.record("job.a")["current"]["project"], PROJECT + "-moved")
        self.assertEqual(len(self.active("a")), 1)

    def test_region_change_is_seen(self):
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(RUNNING_AFTER)
        old = self.live_jobs("a")[0]["name"]
        self.repo.write({"a": job_yaml("a") + "region: europe-west4\n"})
        r = self.repo.plan()
        self.assertIn("        moved from %s/%s to %s/europe-west4 while running" % (PROJECT, REGION, PROJECT),
                      r.out.splitlines(), r)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        active = self.active("a")
        self.assertEqual(len(active), 1)
        self.assertIn("/locations/europe-west4/", active[0]["name"])
        self.assertNotEqual(active[0]["name"], old)

    # 5 ---------------------------------------------------------------------
    def test_protect_can_be_turned_off(self):
        self.repo.write({"a": job_yaml("a", protect="true")})
        self.assertEqual(self.repo.apply().code, 0)
        self.assertTrue(self.record("job.a")["protect"])
        self.repo.write({"a": job_yaml("a", protect="false")})
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 2, r)
        self.assertIn("  ~   job.a update", r.out.splitlines())
        self.assertIn("        protect: true -> false", r.out.splitlines())
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertFalse(self.record("job.a")["protect"])
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 1, "an update starts no run")
        self.repo.write({})
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.active(), [])
        self.assertEqual(self.fake.rpc_count("CancelCustomJob"), 1)

    # 8 ---------------------------------------------------------------------
    def test_refused_create_is_recorded(self):
        self.fake.post("/_fake/quota", {"accelerator_type": "NVIDIA_L4", "preemptible": False, "limit": 0})
        self.repo.write({"a": job_yaml("a")})
        r = self.repo.apply()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(self.live_jobs(), [])
        rec = self.record("job.a")
        self.assertIsNone(rec["current"])
        self.assertEqual(len(rec["history"]), 1)
        run = rec["history"][0]
        self.assertIsNone(run["resource"])
        self.assertEqual(run["action"], "create")
        self.assertEqual(run["failure"], "quota")
        self.assertIn("The following quota metrics exceed quota limits", run["errorMessage"])
        self.assertIsNotNone(run["createdAt"])
        # vx log shows the attempt as refused, with its class and Google's message
        r = self.repo.vx("log", "job.a", "-C", self.repo.dir)
        self.assertEqual((r.code, r.err), (0, ""), r)
        # The message whole: Google's sentence and whatever follows it.
        shown = run["errorMessage"]
        self.assertEqual(re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "<time>", r.out),
                         "job.a\n  <time>  create    (no job made)  attempt 1  run 1  by %s  config %s  "
                         "cost $0.00  refused (quota), ended <time>: %s\n"
                         % (run["launchedBy"], run["configCommit"][:12], shown))
        # The refusal was an attempt: quota is not in resubmit.on, so a later apply does not ask
        # again by itself, even with the quota there.
        self.fake.post("/_fake/quota", {"accelerator_type": "NVIDIA_L4", "preemptible": False, "limit": 100})
        sent = self.fake.rpc_count("CreateCustomJob")     # the 429's retries included
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), sent)
        self.assertEqual(self.active("a"), [])
        # -replace asks again, as the plan said.
        self.assertEqual(self.repo.apply("-replace", "job.a").code, 0)
        self.assertEqual(len(self.active("a")), 1)
        self.assertEqual(self.active("a")[0]["labels"]["vx-attempt"], "2")
        self.assertEqual(len(self.record("job.a")["history"]), 1)


if __name__ == "__main__":
    import unittest
    unittest.main()
