"""End to end: a permission error names the method, the permission and the smallest role.

The fake refuses what /_fake/iam denies with Google's own shapes of the 403 (Vertex and Cloud
Quotas name the permission; Compute names it in "Required '...' permission"; Vertex refuses to
act as a service account with a 400). vx's hint comes from its permission table
(providers/gcp/permissions.c), never from a guess that grants more than needed.
"""
import json

from harness import PROJECT, REGION, FakeTestCase, job_yaml
from test_gcs import GCS
from test_import import reservation_yaml, quota_yaml

SA = "trainer@vx-e2e.iam.gserviceaccount.com"


def err_lines(r):
    return [l for l in r.err.splitlines() if l.startswith("vx: ") or l.startswith("  ")]


class Hints(FakeTestCase):

    def deny(self, *perms, act_as=()):
        self.fake.post("/_fake/iam", {"denied": list(perms), "act_as_denied": list(act_as)})

    def test_listing_jobs_denied_names_the_viewer_role(self):
        self.repo.write({"a": job_yaml("a")})
        self.deny("aiplatform.customJobs.list")
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.out, "")
        self.assertEqual(r.err.splitlines(), [
            "vx: reading live jobs in %s: vertex: listing jobs in %s: PERMISSION_DENIED: Permission "
            "'aiplatform.customJobs.list' denied on resource '//aiplatform.googleapis.com/projects/%s/"
            "locations/%s' (or it may not exist). (the caller lacks aiplatform.customJobs.list for "
            "projects.locations.customJobs.list: grant roles/aiplatform.viewer on the project)"
            % (REGION, REGION, PROJECT, REGION)])

    def failed_line(self, r):
        """The apply's closing error line, which quotes the server and vx's hint."""
        self.assertEqual(r.code, 1, r)
        return r.err.splitlines()[-1]

    def test_creating_a_job_denied_names_the_user_role(self):
        self.repo.write({"a": job_yaml("a")})
        self.deny("aiplatform.customJobs.create")
        self.assertEqual(self.failed_line(self.repo.apply()),
                         "vx: failed: job.a: create: vertex: creating job \"a\" in %s: PERMISSION_DENIED: "
                         "Permission 'aiplatform.customJobs.create' denied on resource '//aiplatform.googleapis.com/"
                         "projects/%s/locations/%s' (or it may not exist). (the caller lacks "
                         "aiplatform.customJobs.create for projects.locations.customJobs.create: grant "
                         "roles/aiplatform.user on the project)" % (REGION, PROJECT, REGION))

    def test_a_refused_create_is_counted_once_the_permission_is_fixed(self):
        # After the permission was granted the plan said only "Plan: no changes." and vx status
        # "not applied": the refused create waits for a person, and both must say so.
        self.repo.write({"a": job_yaml("a")})
        self.deny("aiplatform.customJobs.create")
        self.assertEqual(self.repo.apply().code, 1)
        self.deny()
        denied = ("vertex: creating job \"a\" in %s: PERMISSION_DENIED: Permission 'aiplatform.customJobs.create' "
                  "denied on resource '//aiplatform.googleapis.com/projects/%s/locations/%s' (or it may not "
                  "exist). (the caller lacks aiplatform.customJobs.create for projects.locations.customJobs.create: "
                  "grant roles/aiplatform.user on the project)" % (REGION, PROJECT, REGION))
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        self.assertIn("\nPlan: no changes. 0 unchanged. 1 refused: fix the cause, then vxapply -replace job.a.\n",
                      r.out)
        r = self.repo.plan("-format", "markdown")
        self.assertIn("\n**Plan:** no changes. 0 unchanged. 1 refused: fix the cause, then vxapply -replace "
                      "job.a.\n", r.out)
        self.assertEqual(json.loads(self.repo.plan("-format", "json").out)["refused_count"], 1)
        r = self.repo.vx("status", self.repo.dir, "-format", "json")
        self.assertEqual(r.code, 0, r)
        [row] = json.loads(r.out)["addresses"]
        self.assertEqual((row["address"], row["tracking"], row["state"], row["attempt"], row["failure"]),
                         ("job.a", "tracked", "REFUSED", 1, {"class": "refused", "message": denied[:200] + "…",
                                                             "resubmits": False, "gave_up": True}))
        r = self.repo.vx("status", self.repo.dir)
        self.assertEqual(r.out.splitlines()[-1].split("  ")[0], "job.a")
        self.assertTrue(r.out.splitlines()[-1].endswith(
            "create refused: %s; fix the cause, then vxapply -replace job.a" % (denied[:200] + "…")), r.out)
        # Fixed and asked again: it runs.
        r = self.repo.apply("-replace", "job.a")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.live_jobs("a")), 1)
        self.assertIn("\nPlan: no changes. 1 unchanged.\n", self.repo.plan().out)

    def test_acting_as_the_job_service_account_names_service_account_user(self):
        job = job_yaml("a").replace("  scheduling:", "  serviceAccount: %s\n  scheduling:" % SA)
        self.repo.write({"a": job})
        self.deny(act_as=[SA])
        self.assertEqual(self.failed_line(self.repo.apply()),
                         "vx: failed: job.a: create: vertex: creating job \"a\" in %s: INVALID_ARGUMENT: You do "
                         "not have permission to act as service_account: %s. (or it may not exist). (the caller "
                         "lacks iam.serviceAccounts.actAs for projects.locations.customJobs.create: grant "
                         "roles/iam.serviceAccountUser on the job's service account)" % (REGION, SA))

    def test_creating_a_reservation_denied_names_the_custom_role(self):
        self.repo.write({"pool": reservation_yaml()})
        self.deny("compute.reservations.create")
        self.assertEqual(self.failed_line(self.repo.apply()),
                         "vx: failed: reservation.pool: create: compute: creating reservation \"pool\" in "
                         "%s-a: PERMISSION_DENIED: Required 'compute.reservations.create' permission for 'projects/%s' "
                         "(the caller lacks compute.reservations.create for reservations.insert: grant the "
                         "custom role vxApply (docs/vx-role-apply.yaml) on the project)" % (REGION, PROJECT))

    def test_writing_a_quota_preference_denied_names_the_quota_admin_role(self):
        self.repo.write({"q": quota_yaml()})
        self.deny("cloudquotas.quotas.update")
        self.assertEqual(self.failed_line(self.repo.apply()),
                         "vx: failed: quota.l4-training: create: quotas: creating quota preference "
                         "\"l4-training\": PERMISSION_DENIED: Permission 'cloudquotas.quotas.update' denied on "
                         "resource '//cloudquotas.googleapis.com/projects/%s/locations/global' (or it may not "
                         "exist). (the caller lacks cloudquotas.quotas.update for "
                         "projects.locations.quotaPreferences.create: grant roles/cloudquotas.admin on the "
                         "project)" % PROJECT)

    def test_writing_the_gcs_state_denied_names_object_user_on_the_bucket(self):
        self.repo.write({"a": job_yaml("a")}, extra_stack=GCS)
        self.deny("storage.objects.create")
        r = self.repo.apply()
        self.assertEqual(r.code, 1, r)
        self.assertRegex(r.err, r"^vx: storage: writing gs://vx-e2e-state/vx/state/e2e/lease.json: "
                         r"PERMISSION_DENIED: sa-[0-9a-f]+@vx-e2e.iam.gserviceaccount.com does not have "
                         r"storage.objects.create access to the Google Cloud Storage bucket. Permission "
                         r"'storage.objects.create' denied on resource \(or it may not exist\). \(the caller "
                         r"lacks storage.objects.create for objects.insert: grant roles/storage.objectUser on "
                         r"the state bucket\)\n\Z")


def table():
    """The rows of providers/gcp/permissions.c, read as tools/check-permissions.py reads them."""
    import importlib.util
    import os
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    spec = importlib.util.spec_from_file_location("check_permissions",
                                                  os.path.join(root, "tools", "check-permissions.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.parse_table(root)


class LeastPrivilege(FakeTestCase):
    """The table's permissions for a command are enough: the fake denies every other permission it
    knows, and the command still works on a stack of every kind with the gcs state."""

    def write_everything(self):
        job = job_yaml("a").replace("  scheduling:", "  serviceAccount: %s\n  scheduling:" % SA)
        # An increase: a decrease of more than 10% needs a safety override, whatever the permissions.
        self.repo.write({"a": job, "pool": reservation_yaml(), "q": quota_yaml(value=2000)}, extra_stack=GCS)

    def allow_only(self, cmds):
        allowed = {r["permission"] for r in table() if r["permission"] and r["cmds"] & cmds}
        denied = sorted(set(self.fake.get("/_fake/iam")["known"]) - allowed)
        self.assertTrue(denied)
        self.fake.post("/_fake/iam", {"denied": denied})
        return denied

    def test_plan_needs_only_the_plan_rows(self):
        self.write_everything()
        denied = self.allow_only({"plan"})
        self.assertIn("aiplatform.customJobs.create", denied)
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertIn("Plan: 3 to create. 0 unchanged.", r.out)

    def test_apply_and_watch_need_only_their_rows(self):
        self.write_everything()
        denied = self.allow_only({"apply", "watch"})
        self.assertIn("aiplatform.customJobs.delete", denied)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertIn("Apply complete: 3 done, 0 failed.", r.out)
        self.assertEqual(len(self.live_jobs("a")), 1)

    def test_import_needs_only_its_rows(self):
        import json
        import urllib.request
        self.fake.post("/_fake/tokens", {"token": "outsider-token"})
        body = json.dumps({"displayName": "by-hand", "jobSpec": {"workerPoolSpecs": [{
            "machineSpec": {"machineType": "g2-standard-4", "acceleratorType": "NVIDIA_L4", "acceleratorCount": 1},
            "replicaCount": "1", "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/trainer:1.0",
                                                   "args": ["--epochs", "3"]}}],
            "scheduling": {"strategy": "STANDARD"},
            "baseOutputDirectory": {"outputUriPrefix": "gs://e2e-bucket/a"}}}).encode()
        req = urllib.request.Request(self.fake.url + "/v1/projects/%s/locations/%s/customJobs" % (PROJECT, REGION),
                                     data=body, method="POST", headers={"Content-Type": "application/json",
                                                                        "Authorization": "Bearer outsider-token"})
        with urllib.request.urlopen(req, timeout=30) as r:
            name = json.loads(r.read())["name"]
        self.repo.write({"a": job_yaml("a")}, extra_stack=GCS)
        denied = self.allow_only({"import"})
        self.assertIn("aiplatform.customJobs.list", denied)
        r = self.repo.vx("import", "job.a", name, self.repo.dir)
        self.assertEqual(r.code, 0, r)
        self.assertTrue(r.out.startswith("job.a: imported %s" % name), r)
