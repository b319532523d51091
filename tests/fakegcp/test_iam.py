"""The fake's IAM and Service Usage (iam.py): denied permissions refuse the calls that need them in
each API's own shape, testIamPermissions answers the held subset, disabled APIs say so."""
import unittest

from fakeutil import FakeTestCase, PARENT

Z = "/compute/v1/projects/my-proj/zones/us-central1-a"
SA = "trainer@my-proj.iam.gserviceaccount.com"


class Grants(FakeTestCase):

    def test_everything_granted_and_enabled_by_default(self):
        got = self.fake.ctl("/iam")
        self.assertEqual({k: got[k] for k in ("denied", "act_as_denied", "disabled")},
                         {"denied": [], "act_as_denied": [], "disabled": []})
        self.assertIn("aiplatform.customJobs.create", got["known"])
        self.assertIn("serviceusage.services.get", got["known"])
        st, body = self.fake.call("POST", "/v3/projects/my-proj:testIamPermissions",
                                  {"permissions": ["aiplatform.customJobs.list", "compute.reservations.list"]})
        self.assertEqual((st, body), (200, {"permissions": ["aiplatform.customJobs.list",
                                                            "compute.reservations.list"]}))
        st, body = self.fake.call("GET", "/serviceusage/v1/projects/my-proj/services/aiplatform.googleapis.com")
        self.assertEqual(st, 200)
        self.assertEqual(body["state"], "ENABLED")
        self.assertRegex(body["name"], r"^projects/\d{12}/services/aiplatform.googleapis.com$")

    def test_denied_permission_refuses_the_call_in_each_shape(self):
        self.fake.ctl("/iam", {"denied": ["aiplatform.customJobs.list", "compute.reservations.list",
                                          "storage.objects.get"]})
        st, body = self.fake.call("GET", PARENT + "/customJobs")
        self.assertEqual(st, 403)
        self.assertEqual(body["error"]["status"], "PERMISSION_DENIED")
        self.assertEqual(body["error"]["message"], "Permission 'aiplatform.customJobs.list' denied on resource "
                         "'//aiplatform.googleapis.com/projects/my-proj/locations/us-central1' (or it may not "
                         "exist).")
        self.assertEqual(body["error"]["details"][0]["reason"], "IAM_PERMISSION_DENIED")
        st, body = self.fake.call("GET", Z + "/reservations")
        self.assertEqual(st, 403)
        self.assertEqual(body["error"]["message"], "Required 'compute.reservations.list' permission for "
                         "'projects/my-proj'")
        self.assertEqual(body["error"]["errors"][0]["reason"], "forbidden")
        st, body = self.fake.call("GET", "/storage/v1/b/bkt/o/x")
        self.assertEqual(st, 403)
        self.assertIn("does not have storage.objects.get access", body["error"]["message"])
        # what is not denied still works
        st, _ = self.fake.call("GET", "/v1/projects/my-proj/locations/global/quotaPreferences")
        self.assertEqual(st, 200)

    def test_test_iam_permissions_answers_the_held_subset(self):
        self.fake.ctl("/iam", {"denied": ["aiplatform.customJobs.create", "storage.objects.create"],
                               "act_as_denied": [SA]})
        st, body = self.fake.call("POST", "/v1/projects/my-proj:testIamPermissions",
                                  {"permissions": ["aiplatform.customJobs.create", "aiplatform.customJobs.list"]})
        self.assertEqual((st, body), (200, {"permissions": ["aiplatform.customJobs.list"]}))
        st, body = self.fake.call("POST", "/v3/projects/my-proj:testIamPermissions",
                                  {"permissions": ["aiplatform.customJobs.create"]})
        self.assertEqual((st, body), (200, {}))
        st, body = self.fake.call("GET", "/storage/v1/b/bkt/iam/testPermissions",
                                  query={"permissions": ["storage.objects.create", "storage.objects.get"]})
        self.assertEqual((st, body), (200, {"kind": "storage#testIamPermissionsResponse",
                                            "permissions": ["storage.objects.get"]}))
        st, body = self.fake.call("POST", "/iam/v1/projects/-/serviceAccounts/%s:testIamPermissions" % SA,
                                  {"permissions": ["iam.serviceAccounts.actAs"]})
        self.assertEqual((st, body), (200, {}))
        st, body = self.fake.call("POST", "/iam/v1/projects/-/serviceAccounts/other@p.iam.gserviceaccount.com"
                                  ":testIamPermissions", {"permissions": ["iam.serviceAccounts.actAs"]})
        self.assertEqual((st, body), (200, {"permissions": ["iam.serviceAccounts.actAs"]}))
        st, body = self.fake.call("POST", "/v3/projects/my-proj:testIamPermissions", {"permissions": "x"})
        self.assertEqual(st, 400)

    def test_act_as_denied_refuses_the_create(self):
        self.fake.ctl("/iam", {"act_as_denied": [SA]})
        job = {"displayName": "a", "jobSpec": {"serviceAccount": SA, "workerPoolSpecs": [{
            "machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "1",
            "containerSpec": {"imageUri": "x"}}]}}
        st, body = self.fake.call("POST", PARENT + "/customJobs", job)
        self.assertEqual(st, 400)
        self.assertEqual(body["error"]["message"], "You do not have permission to act as service_account: "
                         "%s. (or it may not exist)." % SA)

    def test_service_usage_refuses_in_its_own_words(self):
        # Google's Service Usage answers a caller without serviceusage.services.get with its own
        # text (a help token on a second line), a PreconditionFailure and AUTH_PERMISSION_DENIED,
        # not the "Permission 'P' denied on resource" of the IAM-checked APIs.
        self.fake.ctl("/iam", {"denied": ["serviceusage.services.get"]})
        st, body = self.fake.call("GET", "/serviceusage/v1/projects/my-proj/services/compute.googleapis.com")
        self.assertEqual(st, 403)
        self.assertEqual(body, {"error": {
            "code": 403,
            "message": "Permission denied to get service [compute.googleapis.com]\nHelp Token: AfZfake00000001",
            "status": "PERMISSION_DENIED",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.PreconditionFailure",
                 "violations": [{"type": "googleapis.com", "subject": "110002"}]},
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "AUTH_PERMISSION_DENIED",
                 "domain": "serviceusage.googleapis.com"}]}})

    def test_disabled_api(self):
        self.fake.ctl("/iam", {"disabled": ["cloudquotas.googleapis.com"]})
        st, body = self.fake.call("GET", "/serviceusage/v1/projects/my-proj/services/cloudquotas.googleapis.com")
        self.assertEqual(body["state"], "DISABLED")
        st, body = self.fake.call("GET", "/v1/projects/my-proj/locations/global/quotaPreferences")
        self.assertEqual(st, 403)
        self.assertEqual(body["error"]["details"][0]["reason"], "SERVICE_DISABLED")
        self.assertEqual(body["error"]["details"][0]["metadata"]["service"], "cloudquotas.googleapis.com")
        self.assertIn("Cloud Quotas API has not been used in project", body["error"]["message"])

    def test_control_refuses_nonsense(self):
        st, _ = self.fake.call("POST", "/_fake/iam", {"denied": "x"}, token=None)
        self.assertEqual(st, 400)
        st, _ = self.fake.call("POST", "/_fake/iam", {"granted": []}, token=None)
        self.assertEqual(st, 400)


if __name__ == "__main__":
    unittest.main()
