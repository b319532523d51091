"""End to end: a job made by hand and imported is forgotten, not cancelled, on removal.

A job imported with `vx import` that carries no vx labels was not started by
vx: removing its declaration forgets it and leaves it running, unless the
declaration said `onRemove: cancel`. Each test asserts the exact plan lines,
the fake's jobs and the calls vx made.
"""
import json
import re
import urllib.request

from harness import PROJECT, REGION, FakeTestCase, job_yaml

TOKEN = "outsider-token"


def job_spec():
    """The jobSpec job_yaml("a") declares, as a person would send it."""
    return {"workerPoolSpecs": [{
        "machineSpec": {"machineType": "g2-standard-4", "acceleratorType": "NVIDIA_L4",
                        "acceleratorCount": 1},
        "replicaCount": "1",
        "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/trainer:1.0",
                          "args": ["--epochs", "3"]}}],
        "scheduling": {"strategy": "STANDARD"},
        "baseOutputDirectory": {"outputUriPrefix": "gs://e2e-bucket/a"}}


class OnRemove(FakeTestCase):

    def setUp(self):
        super().setUp()
        self.fake.post("/_fake/tokens", {"token": TOKEN})

    def make_job(self):
        """A job made by hand (as gcloud would), without any label."""
        body = json.dumps({"displayName": "by-hand", "jobSpec": job_spec()}).encode()
        req = urllib.request.Request(
            self.fake.url + "/v1/projects/%s/locations/%s/customJobs" % (PROJECT, REGION), data=body,
            method="POST", headers={"Content-Type": "application/json", "Authorization": "Bearer " + TOKEN})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())["name"]

    def imported(self, yaml):
        self.repo.write({"a": yaml, "b": job_yaml("b")})
        self.assertEqual(self.repo.apply("-target", "job.b").code, 0)
        name = self.make_job()
        by_id = re.sub(r"^projects/[^/]+/", "projects/%s/" % PROJECT, name)
        r = self.repo.vx("import", "job.a", by_id, self.repo.dir)
        self.assertEqual(r.code, 0, r)
        return name

    def state_of(self, name):
        return {j["name"]: j["state"] for j in self.fake.jobs()}[name]

    def has_record(self):
        return "jobs/a.json" in self.repo.git("ls-tree", "-r", "--name-only", "vx/state/e2e").split()

    def test_removed_import_is_forgotten_and_left_running(self):
        name = self.imported(job_yaml("a"))
        self.repo.write({"b": job_yaml("b")})
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.block(r.out, "job.a"), [
            "-   job.a forget",
            "no longer declared; run %s is queued: it was imported (vx import) without vx's labels, so "
            "vx forgets it and leaves it running (onRemove: cancel cancels it)" % name])
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.fake.rpc_count("CancelCustomJob"), 0)
        self.assertEqual(self.state_of(name), "JOB_STATE_QUEUED")
        self.assertFalse(self.has_record())
        # and nothing more: the job has no vx labels, so no plan sees it as untracked
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)

    def test_on_remove_cancel_cancels_the_import(self):
        name = self.imported(job_yaml("a") + "onRemove: cancel\n")
        # the import records the policy, as it records protect: nothing left to update
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)
        rec = json.loads(self.repo.git("show", "vx/state/e2e:jobs/a.json"))
        self.assertEqual(rec["onRemove"], "cancel")
        self.repo.write({"b": job_yaml("b")})
        r = self.repo.plan()
        self.assertEqual(self.block(r.out, "job.a"), [
            "-   job.a cancel", "no longer declared; run %s is queued" % name, "cancels %s" % name])
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.fake.rpc_count("CancelCustomJob"), 1)
        self.assertIn(self.state_of(name), ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED"))

    def test_jobs_vx_started_are_still_cancelled(self):
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")})
        self.assertEqual(self.repo.apply().code, 0)
        self.repo.write({"b": job_yaml("b")})
        r = self.repo.plan()
        self.assertEqual(self.block(r.out, "job.a")[0], "-   job.a cancel")

    def test_on_remove_is_validated_with_file_and_line(self):
        self.repo.write({"a": job_yaml("a") + "onRemove: forgot\n"})
        r = self.repo.vx("validate", self.repo.dir)
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.err.splitlines(), [
            '%s/jobs.yaml:17:11: CustomJob "a": onRemove: unknown value "forgot" (did you mean "forget"?)'
            % self.repo.dir], r)


if __name__ == "__main__":
    import unittest
    unittest.main()
