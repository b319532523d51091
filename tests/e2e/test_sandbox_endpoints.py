"""End to end: every endpoint vx can call points at the sandbox's fake (issue 32), and vx doctor
fails a mix of overridden and real endpoints, naming the real ones.

The sandbox once overrode 7 APIs and not Cloud Logging: `vx logs` spent 15 s resolving
logging.googleapis.com and failed, and `vx doctor` listed the real endpoint and still said
"All checks passed". The list of APIs is vx's (`vx __endpoints`), not this file's."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from harness import FakeTestCase, VX_BIN, job_yaml
from sandboxenv import Sandbox

VAR_PREFIX = "CLOUDSDK_API_ENDPOINT_OVERRIDES_"


class SandboxEndpoints(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vx-e2e-sandbox-ep-")
        self.sandbox = Sandbox(self.tmp)

    def tearDown(self):
        self.sandbox.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_the_sandbox_overrides_every_api_vx_calls(self):
        r = self.sandbox.run([VX_BIN, "__endpoints"], self.tmp)
        self.assertEqual((r.code, r.err), (0, ""), r)
        table = json.loads(r.out)["endpoints"]
        names = [e["api"] for e in table]
        self.assertIn("logging", names)
        variables = sorted(e["variable"] for e in table if e["variable"])
        exported = sorted(k for k in self.sandbox.exports if k.startswith(VAR_PREFIX))
        self.assertEqual(exported, variables)
        # In force, each one is the fake's; none is Google's.
        self.assertEqual([(e["api"], e["overridden"], e["url"].startswith(self.sandbox.url + "/"))
                          for e in table], [(n, True, True) for n in names])

    def test_doctor_passes_in_the_sandbox_with_no_real_endpoint(self):
        r = self.sandbox.run([VX_BIN, "doctor"], self.tmp)
        self.assertEqual(r.code, 0, r)
        self.assertNotIn("https://", r.out)
        self.assertIn("\n  endpoints    ok    every API overridden\n", r.out)
        self.assertTrue(r.out.endswith("All checks passed.\n"), r.out)


class DoctorMixedEndpoints(FakeTestCase):

    def doctor(self, drop):
        env = self.fake.env()
        for name in drop:
            del env[VAR_PREFIX + name]
        cp = subprocess.run([VX_BIN, "doctor", self.repo.dir], cwd=self.repo.root, env=env,
                            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        return cp

    def expected(self, endpoints_line, real):
        u = self.fake.url
        urls = [("aiplatform", u + "/v1/"), ("compute", u + "/compute/v1/"), ("cloudquotas", u + "/v1/"),
                ("storage", u + "/storage/v1/"), ("storage-upload", u + "/upload/storage/v1/"),
                ("cloudresourcemanager", u + "/v3/"), ("serviceusage", u + "/serviceusage/v1/"),
                ("iam", u + "/iam/v1/"), ("logging", u + "/v2/")]
        with open(self.fake.key_file) as f:
            email = json.load(f)["client_email"]
        version = subprocess.run([VX_BIN, "version"], capture_output=True, text=True).stdout.split()[1]
        lines = ["vx %s doctor" % version,
                 "  stack        ok    e2e in %s" % self.repo.dir,
                 "  endpoints    " + endpoints_line]
        for api, url in urls:
            lines.append("  %-18s %s" % (api, real[api] if api in real else url + " (override)"))
        lines += ["  credentials  ok    service account %s from %s" % (email, self.fake.key_file),
                  "  token        ok    obtained (never shown)",
                  "  project      ok    vx-e2e (from stack)",
                  "  apis         ok    enabled in vx-e2e: aiplatform.googleapis.com, cloudquotas.googleapis.com",
                  "  iam          ok    project vx-e2e: holds the 6 permissions that plan, apply, watch and "
                  "import need"]
        return lines

    def test_one_real_endpoint_among_overrides_fails_naming_it(self):
        self.repo.write({"a": job_yaml("a")})
        cp = self.doctor(["LOGGING"])
        self.assertEqual((cp.returncode, cp.stderr), (1, ""), cp.stdout)
        self.assertEqual(cp.stdout.splitlines(), self.expected(
            "FAIL  1 of the 8 APIs is Google's own while the others are overridden: logging; "
            "set CLOUDSDK_API_ENDPOINT_OVERRIDES_LOGGING too, or no override at all",
            {"logging": "https://logging.googleapis.com/v2/"}) + ["Some checks failed."])

    def test_two_real_endpoints_are_both_named(self):
        self.repo.write({"a": job_yaml("a")})
        cp = self.doctor(["IAM", "LOGGING"])
        self.assertEqual((cp.returncode, cp.stderr), (1, ""), cp.stdout)
        self.assertEqual(cp.stdout.splitlines()[2],
                         "  endpoints    FAIL  2 of the 8 APIs are Google's own while the others are "
                         "overridden: iam, logging; set CLOUDSDK_API_ENDPOINT_OVERRIDES_IAM, "
                         "CLOUDSDK_API_ENDPOINT_OVERRIDES_LOGGING too, or no override at all")
        self.assertEqual(cp.stdout.splitlines()[-1], "Some checks failed.")

    def test_every_endpoint_overridden_passes(self):
        self.repo.write({"a": job_yaml("a")})
        cp = self.doctor([])
        self.assertEqual((cp.returncode, cp.stderr), (0, ""), cp.stdout)
        self.assertEqual(cp.stdout.splitlines(), self.expected("ok    every API overridden", {}) +
                         ["All checks passed."])


if __name__ == "__main__":
    unittest.main()
