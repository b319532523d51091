"""End to end: a state that was not found never plans the running jobs again.

Repository A applies; a fresh clone of its config without the state branch
(as a CI checkout of one branch, with no state.remote) plans: the live jobs
of another lineage carry the addresses it would create, so the plan is an
error naming them, the cause and the fix, and an apply creates nothing.
Only -allow-other-lineage creates anyway.
"""
import json
import os
import subprocess
import unittest
import urllib.parse
import urllib.request

from harness import FakeTestCase, Repo, job_yaml

JOBS = ("a", "b", "c", "d")


class LostState(FakeTestCase):

    def clone_without_state(self):
        """A clone of A's main branch only, as a CI checkout: no vx/state/e2e."""
        clone = Repo.__new__(Repo)
        clone.root = os.path.join(self.tmp, "ci")
        clone.dir = os.path.join(clone.root, "stack")
        clone.fake = self.fake
        clone.stack = "e2e"
        clone.jobs = dict(self.repo.jobs)
        subprocess.run(["git", "clone", "-q", "--single-branch", "-b", "main", self.repo.root, clone.root],
                       check=True, capture_output=True, env=self.fake.env())
        self.assertNotIn("vx/state/e2e", clone.git("branch", "-a"))
        return clone

    def errors(self, out):
        lines = out.splitlines()
        start = lines.index("Errors (the plan cannot be applied):")
        return [l for l in lines[start + 1:] if l.startswith("  ")]

    def applied_in_a(self):
        self.repo.write({n: job_yaml(n) for n in JOBS})
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        lineage = {j["labels"]["vx-lineage"] for j in self.live_jobs()}
        self.assertEqual(len(lineage), 1)
        names = {j["labels"]["vx-job"]: j["name"] for j in self.live_jobs()}
        return lineage.pop(), names

    def test_plan_without_the_state_branch_is_an_error(self):
        lineage, names = self.applied_in_a()
        ci = self.clone_without_state()

        r = ci.plan("-detailed-exitcode")
        self.assertEqual(r.code, 1, r)
        self.assertEqual(self.errors(r.out), [
            "  the state of stack e2e was not found (none was loaded: serial 0), but live jobs of this "
            "stack from another state (vx-lineage %s) carry 4 of the addresses this plan would create: "
            "job.a (%s, queued), job.b (%s, queued), job.c (%s, queued) and 1 more. Creating them "
            "would run these jobs a second time. Likely cause: the state is kept on the branch vx/state/e2e, "
            "which this clone does not have, and state.remote is unset, so vx does not fetch it (a CI "
            "checkout fetches one branch). Fix: set state.remote (e.g. remote: origin) in the Stack, "
            "or fetch the branch before planning: git fetch origin vx/state/e2e:vx/state/e2e. To "
            "create them anyway (they are not this stack's), re-run with -allow-other-lineage"
            % (lineage, names["a"], names["b"], names["c"])])
        # the same jobs are not also listed as foreign warnings
        self.assertNotIn("Warnings:", r.out)

        r = ci.apply()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(len(self.live_jobs()), 4, "an apply must create nothing")
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 4)

        # the fix it names works: with the branch fetched the plan is the state's
        ci.git("fetch", "-q", "origin", "vx/state/e2e:vx/state/e2e")
        r = ci.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)

    def test_jobs_that_ended_count_too(self):
        """Without a state, a job of another lineage that has ended is as sure a sign: no rerun."""
        lineage, names = self.applied_in_a()
        self.fake.advance(4000)
        self.assertEqual({j["state"] for j in self.live_jobs()}, {"JOB_STATE_SUCCEEDED"})
        ci = self.clone_without_state()
        r = ci.plan()
        self.assertEqual(r.code, 1, r)
        self.assertTrue(self.errors(r.out)[0].startswith(
            "  the state of stack e2e was not found (none was loaded: serial 0), but live jobs of this "
            "stack from another state (vx-lineage %s) carry 4 of the addresses this plan would create: "
            "job.a (%s, succeeded), job.b (%s, succeeded), job.c (%s, succeeded) and 1 more. "
            % (lineage, names["a"], names["b"], names["c"])), r)

    def test_state_remote_set_names_the_branch_on_it(self):
        lineage, names = self.applied_in_a()
        ci = self.clone_without_state()
        ci.write(extra_stack="state: {backend: git, remote: origin, branch: vx/state/e2e-moved}\n")
        r = ci.plan()
        self.assertEqual(r.code, 1, r)
        self.assertIn("Likely cause: the branch vx/state/e2e-moved was not found on origin (not fetched, or "
                      "deleted). Fix: fetch it (git fetch origin vx/state/e2e-moved:vx/state/e2e-moved), or "
                      "restore it from a clone that has it and push it. To create them anyway",
                      self.errors(r.out)[0])

    def test_deleted_gcs_object_names_the_object(self):
        gcs = "state: {backend: gcs, bucket: vx-e2e-state}\n"
        self.repo.write({n: job_yaml(n) for n in JOBS}, extra_stack=gcs)
        self.assertEqual(self.repo.apply().code, 0)
        lineage = self.live_jobs()[0]["labels"]["vx-lineage"]
        # someone deletes everything under the prefix, history too (with the history left,
        # the backend itself refuses and offers vx state restore)
        self.fake.post("/_fake/tokens", {"token": "outsider-token"})
        names = [o["name"] for o in self.fake.get("/_fake/objects")["objects"] if o["bucket"] == "vx-e2e-state"]
        self.assertIn("vx/state/e2e/state.json", names)
        for name in names:
            req = urllib.request.Request(
                self.fake.url + "/storage/v1/b/vx-e2e-state/o/" + urllib.parse.quote(name, safe=""),
                method="DELETE", headers={"Authorization": "Bearer outsider-token"})
            with urllib.request.urlopen(req, timeout=30) as r:
                self.assertEqual(r.status, 204)
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        got = self.errors(r.out)[0]
        self.assertEqual(got[got.index(" Likely cause: "):], (
            " Likely cause: state.bucket or state.path changed, or everything under "
            "gs://vx-e2e-state/vx/state/e2e/ was deleted, its history too. Fix: set the bucket and path back, "
            "or restore gs://vx-e2e-state/vx/state/e2e/state.json from an earlier version (a versioned bucket "
            "keeps them: gcloud storage ls --all-versions gs://vx-e2e-state/vx/state/e2e/state.json). To "
            "create them anyway (they are not this stack's), re-run with -allow-other-lineage"))
        self.assertIn("(vx-lineage %s) carry 4 of the addresses" % lineage, got)

    def test_flag_creates_anyway(self):
        lineage, names = self.applied_in_a()
        ci = self.clone_without_state()
        r = ci.plan("-allow-other-lineage", "-detailed-exitcode")
        self.assertEqual(r.code, 2, r)
        self.assertNotIn("Errors", r.out)
        self.assertIn("Plan: 4 to create", r.out)
        r = ci.apply("-allow-other-lineage")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.live_jobs()), 8)
        self.assertEqual(len({j["labels"]["vx-lineage"] for j in self.live_jobs()}), 2)

    def test_saved_plan_with_the_flag_applies_with_it(self):
        lineage, names = self.applied_in_a()
        ci = self.clone_without_state()
        planfile = os.path.join(self.tmp, "plan.json")
        r = ci.plan("-allow-other-lineage", "-out", planfile)
        self.assertEqual(r.code, 0, r)
        with open(planfile) as f:
            self.assertIs(json.load(f)["allow_other_lineage"], True)
        r = ci.vx("apply", planfile)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.live_jobs()), 8)

    def test_other_state_with_its_own_records_creating_the_same_address(self):
        """A state that exists, but another one of the stack name runs job.a: also refused."""
        lineage, names = self.applied_in_a()
        other = Repo(os.path.join(self.tmp, "other"), self.fake)
        other.write({"z": job_yaml("z")})
        self.assertEqual(other.apply().code, 0)
        other.write({"z": job_yaml("z"), "a": job_yaml("a")})
        r = other.plan()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(self.errors(r.out), [
            "  active jobs of stack e2e from another state (vx-lineage %s) run 1 of the jobs this plan "
            "would create: job.a (%s, queued). Creating them would run each job twice. If another "
            "repository uses the stack name e2e, rename one of the two stacks; if they are leftovers "
            "of this one, cancel them ('gcloud ai custom-jobs cancel NAME'); to create anyway, re-run "
            "with -allow-other-lineage" % (lineage, names["a"])])

    def test_new_state_beside_other_jobs_of_the_name_is_fine(self):
        """A new state whose addresses no live job carries plans as before."""
        self.applied_in_a()
        other = Repo(os.path.join(self.tmp, "other"), self.fake)
        other.write({"z": job_yaml("z")})
        r = other.plan()
        self.assertEqual(r.code, 0, r)
        self.assertNotIn("Errors", r.out)


if __name__ == "__main__":
    unittest.main()
