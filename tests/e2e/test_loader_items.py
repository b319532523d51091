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
