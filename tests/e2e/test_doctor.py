"""End to end: vx doctor, and the promise that no secret reaches any output.

Doctor asks Google what the stack needs (testIamPermissions on the project, the state bucket and
each job's service account; Service Usage for the APIs); the fake answers from /_fake/iam."""
import json
import os
import unittest

from harness import PROJECT, FakeTestCase, job_yaml
from test_gcs import GCS, BUCKET
from test_import import reservation_yaml, quota_yaml

SA = "trainer@vx-e2e.iam.gserviceaccount.com"


def checks(out):
    """The lines from the first API check on: what doctor found about the stack's needs."""
    lines = out.splitlines()
    for i, l in enumerate(lines):
        if l.startswith("  apis "):
            return lines[i:]
    raise AssertionError("no apis line in:\n" + out)


class Doctor(FakeTestCase):

    def test_doctor_passes_with_a_minted_key(self):
        self.repo.write({"a": job_yaml("a")})
        r = self.repo.vx("doctor", self.repo.dir)
        self.assertEqual(r.code, 0, r)
        self.assertIn("service account", r.out)
        self.assertIn(self.fake.key_file, r.out)
        for line in ("token", "project"):
            self.assertRegex(r.out, r"\n  %s\s+ok" % line)
        self.assertEqual(checks(r.out), [
            "  apis         ok    enabled in vx-e2e: aiplatform.googleapis.com, cloudquotas.googleapis.com",
            "  iam          ok    project vx-e2e: holds the 6 permissions that plan, apply, watch and import need",
            "All checks passed."])
        by_rpc = self.fake.requests()["by_rpc"]
        # One question per project, one per API; no resource is read.
        self.assertEqual(by_rpc.get("projects.testIamPermissions"), 1)
        self.assertEqual(by_rpc.get("serviceusage.services.get"), 2)
        self.assertNotIn("ListCustomJobs", by_rpc)
        self.assertNotIn("Reservations.List", by_rpc)

    def test_a_missing_permission_is_listed_with_its_role(self):
        self.repo.write({"a": job_yaml("a")})
        self.fake.post("/_fake/iam", {"denied": ["aiplatform.customJobs.create", "aiplatform.customJobs.list"]})
        r = self.repo.vx("doctor", self.repo.dir)
        self.assertEqual(r.code, 1, r)
        self.assertEqual(checks(r.out), [
            "  apis         ok    enabled in vx-e2e: aiplatform.googleapis.com, cloudquotas.googleapis.com",
            "  iam          FAIL  project vx-e2e: lacks 2 of the 6 permissions that plan, apply, watch and "
            "import need",
            "                     aiplatform.customJobs.list (plan, apply and watch): grant roles/aiplatform.viewer "
            "on the project",
            "                     aiplatform.customJobs.create (apply and watch): grant roles/aiplatform.user on "
            "the project",
            "Some checks failed."])

    def test_reading_quota_needs_resourcemanager_projects_get(self):
        # Cloud Quotas' access control page asks for it beside cloudquotas.quotas.get.
        self.repo.write({"a": job_yaml("a")})
        self.fake.post("/_fake/iam", {"denied": ["resourcemanager.projects.get"]})
        r = self.repo.vx("doctor", self.repo.dir, "-plan-only")
        self.assertEqual(r.code, 1, r)
        self.assertEqual(checks(r.out), [
            "  apis         ok    enabled in vx-e2e: aiplatform.googleapis.com, cloudquotas.googleapis.com",
            "  iam          FAIL  project vx-e2e: lacks 1 of the 3 permissions that plan needs",
            "                     resourcemanager.projects.get (plan): grant "
            "roles/cloudquotas.viewer on the project",
            "Some checks failed."])

    def test_plan_only_asks_only_what_plan_needs(self):
        self.repo.write({"a": job_yaml("a")})
        self.fake.post("/_fake/iam", {"denied": ["aiplatform.customJobs.create"]})
        r = self.repo.vx("doctor", self.repo.dir, "-plan-only")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(checks(r.out), [
            "  apis         ok    enabled in vx-e2e: aiplatform.googleapis.com, cloudquotas.googleapis.com",
            "  iam          ok    project vx-e2e: holds the 3 permissions that plan needs",
            "All checks passed."])

    def test_a_disabled_api_is_listed_with_its_enable_command(self):
        self.repo.write({"a": job_yaml("a")})
        self.fake.post("/_fake/iam", {"disabled": ["cloudquotas.googleapis.com"]})
        r = self.repo.vx("doctor", self.repo.dir)
        self.assertEqual(r.code, 1, r)
        self.assertEqual(checks(r.out), [
            "  apis         FAIL  1 of the 2 APIs the stack calls is disabled in vx-e2e",
            "                     gcloud services enable cloudquotas.googleapis.com --project vx-e2e",
            "  iam          ok    project vx-e2e: holds the 6 permissions that plan, apply, watch and import need",
            "Some checks failed."])

    def test_every_kind_bucket_and_service_account(self):
        job = job_yaml("a").replace("  scheduling:", "  serviceAccount: %s\n  scheduling:" % SA)
        self.repo.write({"a": job, "pool": reservation_yaml(), "q": quota_yaml()}, extra_stack=GCS)
        r = self.repo.vx("doctor", self.repo.dir)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(checks(r.out), [
            "  apis         ok    enabled in vx-e2e: aiplatform.googleapis.com, compute.googleapis.com, "
            "cloudquotas.googleapis.com, storage.googleapis.com",
            "  iam          ok    project vx-e2e: holds the 13 permissions that plan, apply, watch and import need",
            "  iam          ok    bucket %s: holds the 4 permissions that plan, apply, watch and import need"
            % BUCKET,
            "  iam          ok    service account %s: holds the 1 permission that plan, apply, watch and import "
            "need" % SA,
            "All checks passed."])
        self.fake.post("/_fake/iam", {"denied": ["storage.objects.delete", "compute.reservations.resize"],
                                      "act_as_denied": [SA]})
        r = self.repo.vx("doctor", self.repo.dir)
        self.assertEqual(r.code, 1, r)
        self.assertEqual(checks(r.out)[1:], [
            "  iam          FAIL  project vx-e2e: lacks 1 of the 13 permissions that plan, apply, watch and "
            "import need",
            "                     compute.reservations.resize (apply and watch): grant the custom role vxApply "
            "(docs/vx-role-apply.yaml) on the project",
            "  iam          FAIL  bucket %s: lacks 1 of the 4 permissions that plan, apply, watch and import need"
            % BUCKET,
            "                     storage.objects.delete (apply, watch and import): grant roles/storage.objectUser "
            "on the state bucket",
            "  iam          FAIL  service account %s: lacks 1 of the 1 permission that plan, apply, watch and "
            "import need" % SA,
            "                     iam.serviceAccounts.actAs (apply and watch): grant roles/iam.serviceAccountUser on "
            "the job's service account",
            "Some checks failed."])

    def test_without_service_usage_access_says_which_role_reads_it(self):
        self.repo.write({"a": job_yaml("a")})
        self.fake.post("/_fake/iam", {"denied": ["serviceusage.services.get"]})
        r = self.repo.vx("doctor", self.repo.dir, "-plan-only")
        self.assertEqual(r.code, 1, r)
        self.assertEqual(checks(r.out), [
            "  apis         FAIL  doctor: reading whether aiplatform.googleapis.com is enabled in vx-e2e: "
            "PERMISSION_DENIED: Permission denied to get service [aiplatform.googleapis.com] "
            "Help Token: AfZfake00000001 (the caller lacks serviceusage.services.get for services.get: grant "
            "roles/serviceusage.serviceUsageViewer on the project)",
            "  iam          ok    project vx-e2e: holds the 3 permissions that plan needs",
            "Some checks failed."])

    def test_without_a_stack_every_kind_is_assumed(self):
        empty = os.path.join(self.tmp, "empty")
        os.makedirs(empty)
        r = self.repo.vx("doctor", empty)
        self.assertEqual(r.code, 0, r)
        self.assertIn("  stack        --    no valid stack in %s" % empty, r.out)
        # Every kind's permissions: 6 of the 19 are FutureReservation's.
        self.assertEqual(checks(r.out), [
            "  apis         ok    enabled in vx-e2e: aiplatform.googleapis.com, compute.googleapis.com, "
            "cloudquotas.googleapis.com",
            # 13, the future reservation kind's 6 and the persistent resource kind's 5
            "  iam          ok    project vx-e2e: holds the 24 permissions that plan, apply, watch and import need",
            "All checks passed."])

    def test_help(self):
        r = self.repo.vx("doctor", "-help")
        self.assertEqual(r.code, 0, r)
        self.assertIn("-plan-only", r.out)

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
