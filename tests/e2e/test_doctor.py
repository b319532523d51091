"""End to end: vx doctor, and the promise that no secret reaches any output (issue 4)."""
import json
import os
import unittest

from harness import FakeTestCase, job_yaml


class Doctor(FakeTestCase):

    def test_doctor_passes_with_a_minted_key(self):
        self.repo.write({"a": job_yaml("a")})
        r = self.repo.vx("doctor", self.repo.dir)
        self.assertEqual(r.code, 0, r)
        self.assertIn("service account", r.out)
        self.assertIn(self.fake.key_file, r.out)
        for line in ("vertex", "compute", "cloudquotas", "token", "project"):
            self.assertRegex(r.out, r"\n  %s\s+ok" % line)
        self.assertIn("All checks passed.", r.out)
        by_rpc = self.fake.requests()["by_rpc"]
        self.assertEqual(by_rpc.get("ListCustomJobs"), 1)
        self.assertEqual(by_rpc.get("Reservations.List"), 1)
        self.assertGreaterEqual(sum(v for k, v in by_rpc.items() if "QuotaInfos" in k), 1)

    def test_doctor_survives_30_percent_429_and_503(self):
        self.repo.write({"a": job_yaml("a")})
        self.fake.post("/_fake/faults", {"error_rate": 0.3, "statuses": [429, 503], "seed": 7})
        r = self.repo.vx("doctor", self.repo.dir, timeout=300)
        self.assertEqual(r.code, 0, r)
        self.assertIn("All checks passed.", r.out)
        self.assertGreater(self.fake.requests()["total"], 5)

    def test_doctor_names_what_failed(self):
        self.repo.write({"a": job_yaml("a")})
        r = self.repo.vx("doctor", self.repo.dir,
                         env={"GOOGLE_APPLICATION_CREDENTIALS": os.path.join(self.tmp, "missing.json")})
        self.assertEqual(r.code, 1, r)
        self.assertIn("credentials", r.out)
        self.assertIn("FAIL", r.out)
        self.assertIn("missing.json", r.out)

    def test_no_secret_in_any_output(self):
        with open(self.fake.key_file) as f:
            key = json.load(f)
        self.fake.post("/_fake/tokens", {"token": "ya29.env-token-SECRET-xyz"})
        self.repo.write({"a": job_yaml("a", env_secret=True)})
        outputs = []
        runs = [(("doctor", self.repo.dir), {}), (("plan", self.repo.dir), {}),
                (("apply", self.repo.dir, "-auto-approve"), {}),
                (("plan", self.repo.dir, "-format", "json"), {}),
                (("plan", self.repo.dir), {"GOOGLE_OAUTH_ACCESS_TOKEN": "ya29.env-token-SECRET-xyz"})]
        for args, env in runs:
            env = dict(env, VX_LOG="debug")
            r = self.repo.vx(*args, env=env)
            self.assertEqual(r.code, 0, r)
            outputs.append(r.out + r.err)
        # The user's own YAML on main holds the value (their choice); what vx
        # writes, the state branch, must not.
        everything = "\n".join(outputs) + self.repo.git("log", "-p", "vx/state/e2e")
        self.assertIn("-> 200", everything, "debug logging was on")
        body = key["private_key"].split("-----")[2].replace("\\n", "").replace("\n", "")
        for secret in (body[:40], body[-40:], "ya29.", "env-token-SECRET", "assertion=",
                       "Bearer ", "hunter2-training-secret"):
            self.assertNotIn(secret, everything)


if __name__ == "__main__":
    unittest.main()
