"""End to end for issue 8's loader items that need the fake: `state: {backend:
file}` with no path keeps state in vx-state.json beside the stack (as
Terraform's local backend keeps terraform.tfstate), through apply and plan.
"""
import json
import os
import unittest

from harness import FakeTestCase, job_yaml


class FileBackendDefaultTest(FakeTestCase):
    def test_state_file_beside_the_stack(self):
        self.repo.write({"a": job_yaml("a")}, extra_stack="state: {backend: file}\n")
        path = os.path.join(self.repo.dir, "vx-state.json")
        self.assertFalse(os.path.exists(path))
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        # the job was made once, and the state beside the stack knows it
        jobs = self.live_jobs("a")
        self.assertEqual(len(jobs), 1)
        with open(path) as f:
            text = f.read()
        self.assertIn(jobs[0]["name"], text)
        json.loads(text)
        # not the git backend: no state branch was written
        self.assertEqual(self.repo.git("branch", "--list", "vx/state/*"), "")
        # and the next plan reads it back: nothing to do
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.live_jobs("a")), 1)


if __name__ == "__main__":
    unittest.main()


class UnknownRegionTest(FakeTestCase):
    def test_the_plan_warns_of_a_region_vx_does_not_know(self):
        # A job in a region missing from vx's list is planned, with the loader's warning.
        job = job_yaml("a").replace("kind: CustomJob\nname: a\n", "kind: CustomJob\nname: a\nregion: us-east7\n")
        self.assertIn("region: us-east7", job)
        self.repo.write({"a": job})
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertIn("\nWarnings:\n  %s/jobs.yaml:4:9: CustomJob \"a\": region: \"us-east7\" is a region vx "
                      "does not know (its price table has no such region): used as written; check the name "
                      "unless the region is new\n" % self.repo.dir, r.out)
        self.assertIn("job.a create", r.out)
