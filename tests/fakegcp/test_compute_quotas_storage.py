import json
import unittest

from fakeutil import FakeTestCase, PARENT

Z = "/compute/v1/projects/my-proj/zones/us-central1-a"
RID = "6f1c2b1e-1111-4222-8333-444455556666"
QP = "/v1/projects/my-proj/locations/global/quotaPreferences"
H100 = "CustomModelTrainingH100GPUsPerProjectPerRegion"


def reservation(name="r1", count="2", share="ALLOW_ALL"):
    return {"resourcePolicies": {}, "name": name, "reservationSharingPolicy": {"serviceShareType": share},
            "shareSettings": {"projectMap": {}, "shareType": "LOCAL"},
            "specificReservation": {"count": count, "instanceProperties": {
                "guestAccelerators": [{"acceleratorCount": 8, "acceleratorType": "nvidia-h100-80gb"}],
                "machineType": "a3-highgpu-8g"}},
            "specificReservationRequired": True}


class ComputeReservations(FakeTestCase):
    def test_insert_get_list_ops(self):
        st, op = self.fake.call("POST", Z + "/reservations?requestId=" + RID, reservation())
        self.assertEqual(st, 200, op)
        self.assertEqual(op["kind"], "compute#operation")
        self.assertEqual(op["status"], "RUNNING")
        self.assertEqual(op["operationType"], "insert")
        self.assertEqual(op["clientOperationId"], RID)
        self.assertEqual(op["zone"], "https://www.googleapis.com/compute/v1/projects/my-proj/zones/us-central1-a")
        # same requestId: same operation, no second reservation
        st, op2 = self.fake.call("POST", Z + "/reservations?requestId=" + RID, reservation())
        self.assertEqual(op2["name"], op["name"])
        st, r = self.fake.call("GET", Z + "/reservations/r1")
        self.assertEqual(r["status"], "CREATING")
        self.assertEqual(r["specificReservation"]["count"], "2")
        self.assertEqual(r["specificReservation"]["inUseCount"], "0")
        st, done = self.fake.call("POST", Z + "/operations/" + op["name"] + "/wait", '""')
        self.assertEqual(done["status"], "DONE")
        self.assertNotIn("error", done)
        st, done = self.fake.call("GET", Z + "/operations/" + op["id"])
        self.assertEqual(done["status"], "DONE")
        self.assertEqual(self.fake.call("GET", Z + "/reservations/r1")[1]["status"], "READY")
        st, e = self.fake.call("POST", Z + "/reservations", reservation())
        self.assertEqual(st, 409)
        self.assertEqual(e["error"]["errors"][0]["reason"], "alreadyExists")
        self.fake.call("POST", Z + "/reservations", reservation("r2"))
        st, lst = self.fake.call("GET", Z + "/reservations", query={"filter": "name = r1"})
        self.assertEqual([x["name"] for x in lst["items"]], ["r1"])
        st, lst = self.fake.call("GET", Z + "/reservations", query={"maxResults": 1})
        self.assertEqual(len(lst["items"]), 1)
        st, lst2 = self.fake.call("GET", Z + "/reservations", query={"maxResults": 1,
                                                                    "pageToken": lst["nextPageToken"]})
        self.assertEqual([x["name"] for x in lst2["items"]], ["r2"])
        st, agg = self.fake.call("GET", "/compute/v1/projects/my-proj/aggregated/reservations",
                                 query={"maxResults": 5, "returnPartialSuccess": "true"})
        self.assertEqual(len(agg["items"]["zones/us-central1-a"]["reservations"]), 2)
        self.assertEqual(agg["items"]["zones/us-east1-b"]["warning"]["code"], "NO_RESULTS_ON_PAGE")

    def test_resize_update_delete_and_errors(self):
        self.fake.call("POST", Z + "/reservations", reservation())
        st, op = self.fake.call("POST", Z + "/reservations/r1/resize?requestId=" + RID, {"specificSkuCount": "3"})
        self.assertEqual((st, op["operationType"]), (200, "resize"))
        self.assertEqual(self.fake.call("GET", Z + "/reservations/r1")[1]["specificReservation"]["count"], "3")
        st, op = self.fake.call("PATCH", Z + "/reservations/r1?paths=x&updateMask=shareSettings.projectMap",
                                {"name": "r1", "shareSettings": {"shareType": "SPECIFIC_PROJECTS", "projectMap": {
                                    "other": {"projectId": "other"}}}})
        self.assertEqual(st, 200, op)
        r = self.fake.call("GET", Z + "/reservations/r1")[1]
        self.assertEqual(r["shareSettings"]["projectMap"], {"other": {"projectId": "other"}})
        st, e = self.fake.call("POST", Z + "/reservations", dict(reservation("r9"), bogus=1))
        self.assertEqual(st, 400)
        self.assertEqual(e["error"]["errors"][0]["reason"], "invalid")
        self.assertIn("Unknown name \"bogus\" at 'reservation_resource'", e["error"]["message"])
        st, e = self.fake.call("POST", Z + "/reservations?requestId=not-a-uuid", reservation("r9"))
        self.assertEqual(st, 400)
        st, op = self.fake.call("DELETE", Z + "/reservations/r1")
        self.assertEqual((st, op["operationType"]), (200, "delete"))
        st, e = self.fake.call("GET", Z + "/reservations/r1")
        self.assertEqual(st, 404)
        self.assertEqual(e["error"], {"code": 404, "message": "The resource 'projects/my-proj/zones/us-central1-a/"
                                      "reservations/r1' was not found",
                                      "errors": [{"message": "The resource 'projects/my-proj/zones/us-central1-a/"
                                                  "reservations/r1' was not found", "domain": "global",
                                                  "reason": "notFound"}]})
        st, e = self.fake.call("GET", Z + "/operations/operation-none")
        self.assertEqual(st, 404)

    def test_resize_count_range(self):
        """Compute's specificSkuCount is 1..1000: 0 and 1001 are refused with Google's error shape and the
        reservation keeps its count."""
        self.fake.call("POST", Z + "/reservations", reservation())
        for n in (0, 1001, -1):
            st, e = self.fake.call("POST", Z + "/reservations/r1/resize?requestId=" + RID, {"specificSkuCount": str(n)})
            msg = ("Invalid value for field 'resource.specificSkuCount': '%d'. Must be between 1 and 1000." % n)
            self.assertEqual((st, e["error"]), (400, {
                "code": 400, "message": msg, "status": "INVALID_ARGUMENT",
                "errors": [{"message": msg, "domain": "global", "reason": "invalid"}]}))
        self.assertEqual(self.fake.call("GET", Z + "/reservations/r1")[1]["specificReservation"]["count"], "2")
        for n in (1, 1000):
            st, op = self.fake.call("POST", Z + "/reservations/r1/resize", {"specificSkuCount": str(n)})
            self.assertEqual(st, 200, op)
        self.assertEqual(self.fake.call("GET", Z + "/reservations/r1")[1]["specificReservation"]["count"], "1000")

    def test_vx_provider_insert_body(self):
        """The insert body vx's provider sends (tests/unit/test_provider_gcp.c) is a valid Reservation, and the
        reservation it makes can be consumed by Vertex AI (shared with managed services)."""
        body = ('{"name":"r1","description":"vx:stack=s","specificReservation":{"count":"2",'
                '"instanceProperties":{"machineType":"a3-highgpu-8g","guestAccelerators":['
                '{"acceleratorType":"nvidia-h100-80gb","acceleratorCount":8}]}},'
                '"specificReservationRequired":true,'
                '"reservationSharingPolicy":{"serviceShareType":"ALLOW_ALL"}}')
        st, op = self.fake.call("POST", Z + "/reservations?requestId=" + RID, json.loads(body))
        self.assertEqual(st, 200, op)
        st, r = self.fake.call("GET", Z + "/reservations/r1")
        self.assertEqual((r["reservationSharingPolicy"], r["specificReservation"]["count"]),
                         ({"serviceShareType": "ALLOW_ALL"}, "2"))

    def test_rate_limit_403(self):
        self.fake.ctl("/rate-limits", {"compute_requests_per_minute": 2})
        self.fake.call("GET", Z + "/reservations")
        self.fake.call("GET", Z + "/reservations")
        st, e = self.fake.call("GET", Z + "/reservations")
        self.assertEqual(st, 403)
        self.assertEqual(e["error"]["errors"][0], {"message": "Rate Limit Exceeded", "domain": "usageLimits",
                                                   "reason": "rateLimitExceeded"})

    def test_vertex_consumes_reservation(self):
        self.fake.call("POST", Z + "/reservations", reservation(count="1"))
        ra = {"reservationAffinityType": "SPECIFIC_RESERVATION", "key": "compute.googleapis.com/reservation-name",
              "values": ["projects/my-proj/zones/us-central1-a/reservations/r1"]}
        b = self.job_body()
        b["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["reservationAffinity"] = ra
        j1 = self.fake.call("POST", PARENT + "/customJobs", b)[1]
        j2 = self.fake.call("POST", PARENT + "/customJobs", b)[1]
        self.advance(35)
        self.assertEqual(self.get_job(j1["name"])["state"], "JOB_STATE_RUNNING")
        self.assertEqual(self.fake.call("GET", Z + "/reservations/r1")[1]["specificReservation"]["inUseCount"], "1")
        g2 = self.get_job(j2["name"])
        self.assertEqual((g2["state"], g2["error"]["code"]), ("JOB_STATE_FAILED", 9))
        self.advance(3600)
        self.assertEqual(self.fake.call("GET", Z + "/reservations/r1")[1]["specificReservation"]["inUseCount"], "0")


class CloudQuotas(FakeTestCase):
    def pref(self, value="16", **kw):
        b = {"dimensions": {"region": "us-central1"}, "quotaConfig": {"annotations": {"owner": "x"},
                                                                      "preferredValue": value},
             "service": "aiplatform.googleapis.com", "quotaId": H100, "justification": "training",
             "contactEmail": "a@b.c"}
        b.update(kw)
        return b

    def test_create_get_list_patch(self):
        self.fake.ctl("/quota", {"accelerator_type": "NVIDIA_H100_80GB", "limit": 8})
        st, p = self.fake.call("POST", QP + "?quotaPreferenceId=qp1&ignoreSafetyChecks=QUOTA_DECREASE_BELOW_USAGE",
                               self.pref())
        self.assertEqual(st, 200, p)
        self.assertRegex(p["name"], r"^projects/\d+/locations/global/quotaPreferences/qp1$")
        self.assertNotIn("contactEmail", p)
        self.assertEqual(p["quotaConfig"]["grantedValue"], "16")
        self.assertFalse(p["reconciling"])
        st, e = self.fake.call("POST", QP + "?quotaPreferenceId=qp1", self.pref())
        self.assertEqual((st, e["error"]["status"]), (409, "ALREADY_EXISTS"))
        st, g = self.fake.call("GET", QP + "/qp1")
        self.assertEqual(g["etag"], p["etag"])
        st, info = self.fake.call("GET", "/v1/projects/my-proj/locations/global/services/aiplatform.googleapis.com/"
                                         "quotaInfos/" + H100)
        self.assertEqual(info["dimensionsInfos"][0], {"dimensions": {"region": "us-central1"},
                                                      "details": {"value": "16"},
                                                      "applicableLocations": ["us-central1"]})
        st, e = self.fake.call("PATCH", QP + "/qp1?updateMask=quota_config.preferred_value",
                               {"quotaConfig": {"preferredValue": "32"}, "etag": "stale"})
        self.assertEqual((st, e["error"]["status"], e["error"]["code"]), (409, "ABORTED", 409))
        st, v = self.fake.call("PATCH", QP + "/qp1?updateMask=quota_config.preferred_value&validateOnly=true",
                               {"quotaConfig": {"preferredValue": "32"}, "etag": p["etag"]})
        self.assertEqual(st, 200, v)
        self.assertEqual(self.fake.call("GET", QP + "/qp1")[1]["quotaConfig"]["preferredValue"], "16")
        st, u = self.fake.call("PATCH", QP + "/qp1?updateMask=quotaConfig.preferredValue",
                               {"quotaConfig": {"preferredValue": "32"}, "etag": p["etag"]})
        self.assertEqual(st, 200, u)
        self.assertEqual(u["quotaConfig"]["preferredValue"], "32")
        self.assertNotEqual(u["etag"], p["etag"])
        self.assertEqual(u["quotaConfig"]["annotations"], {"owner": "x"})
        st, e = self.fake.call("PATCH", QP + "/nope", self.pref())
        self.assertEqual(st, 404)
        st, c = self.fake.call("PATCH", QP + "/qp2?allowMissing=true&$alt=json%3Benum-encoding%3Dint",
                               self.pref(dimensions={"region": "us-east1"}))
        self.assertEqual(st, 200, c)
        st, lst = self.fake.call("GET", QP, query={"pageSize": 1})
        self.assertEqual(len(lst["quotaPreferences"]), 1)
        st, lst2 = self.fake.call("GET", QP, query={"pageSize": 1, "pageToken": lst["nextPageToken"]})
        self.assertEqual(len(lst2["quotaPreferences"]), 1)
        self.assertNotIn("nextPageToken", lst2)
        st, lst = self.fake.call("GET", QP, query={"filter": "reconciling=true"})
        self.assertEqual(lst, {})
        st, e = self.fake.call("POST", QP, dict(self.pref(), bogus=1))
        self.assertEqual(st, 400)
        st, e = self.fake.call("POST", QP, self.pref(value="64", contactEmail=None,
                                                     dimensions={"region": "europe-west4"}))
        self.assertEqual(st, 400)  # an increase needs contactEmail

    def test_vx_provider_patch(self):
        """The update vx's provider sends: a mask of what vx changes, both safety checks skipped, the etag."""
        self.fake.ctl("/quota", {"accelerator_type": "NVIDIA_H100_80GB", "limit": 8})
        st, p = self.fake.call("POST", QP + "?quotaPreferenceId=h100", {
            "service": "aiplatform.googleapis.com", "quotaId": H100, "dimensions": {"region": "us-central1"},
            "quotaConfig": {"preferredValue": "16"}, "justification": "training", "contactEmail": "ml@example.com"})
        self.assertEqual(st, 200, p)
        body = {"service": "aiplatform.googleapis.com", "quotaId": H100, "dimensions": {"region": "us-central1"},
                "quotaConfig": {"preferredValue": "4"}, "etag": p["etag"], "justification": "training",
                "contactEmail": "ml@example.com"}
        path = QP + "/h100?updateMask=quotaConfig.preferredValue%2CcontactEmail%2Cjustification"
        st, e = self.fake.call("PATCH", path, body)
        self.assertEqual((st, e["error"]["status"]), (400, "FAILED_PRECONDITION"))
        st, u = self.fake.call("PATCH", path + "&ignoreSafetyChecks=QUOTA_DECREASE_BELOW_USAGE"
                               "&ignoreSafetyChecks=QUOTA_DECREASE_PERCENTAGE_TOO_HIGH", body)
        self.assertEqual(st, 200, u)
        self.assertEqual(u["quotaConfig"]["preferredValue"], "4")

    def test_grant_modes(self):
        self.fake.ctl("/quota", {"accelerator_type": "NVIDIA_H100_80GB", "limit": 8})
        self.fake.ctl("/quota-grants", {"mode": "partial", "fraction": 0.5})
        st, p = self.fake.call("POST", QP + "?quotaPreferenceId=a", self.pref("64"))
        self.assertEqual(p["quotaConfig"]["grantedValue"], "32")
        self.fake.ctl("/quota-grants", {"mode": "pending"})
        st, p = self.fake.call("POST", QP + "?quotaPreferenceId=b", self.pref("64", dimensions={"region": "us-east1"}))
        self.assertTrue(p["reconciling"])
        self.assertNotIn("grantedValue", p["quotaConfig"])
        self.fake.ctl("/quota-grants", {"mode": "full", "delay_seconds": 100})
        st, p = self.fake.call("POST", QP + "?quotaPreferenceId=c", self.pref("64", dimensions={"region": "us-west1"}))
        self.assertTrue(p["reconciling"])
        self.advance(100)
        p = self.fake.call("GET", QP + "/c")[1]
        self.assertFalse(p["reconciling"])
        self.assertEqual(p["quotaConfig"]["grantedValue"], "64")

    def test_quota_infos(self):
        base = "/v1/projects/my-proj/locations/global/services/aiplatform.googleapis.com/quotaInfos"
        st, lst = self.fake.call("GET", base, query={"pageSize": 100})
        self.assertEqual(st, 200)
        ids = [i["quotaId"] for i in lst["quotaInfos"]]
        self.assertIn("CustomModelTrainingPreemptibleH100GPUsPerProjectPerRegion", ids)
        st, i = self.fake.call("GET", base + "/" + H100 + "?$alt=json%3Benum-encoding%3Dint")
        self.assertEqual(i["containerType"], 1)
        self.assertEqual(i["metric"], "aiplatform.googleapis.com/custom_model_training_nvidia_h100_gpus")
        st, lst = self.fake.call("GET", "/v1/projects/my-proj/locations/global/services/compute.googleapis.com/"
                                        "quotaInfos")
        self.assertIn("CpusPerProjectPerRegion", [i["quotaId"] for i in lst["quotaInfos"]])
        st, e = self.fake.call("GET", base + "/Nope")
        self.assertEqual(st, 404)
        st, e = self.fake.call("GET", "/v1/projects/my-proj/locations/us-central1/quotaPreferences")
        self.assertEqual(st, 400)


class StorageObjects(FakeTestCase):
    def upload(self, name, data, **q):
        boundary = "b0undary"
        body = ("--%s\r\nContent-Type: application/json\r\n\r\n%s\r\n--%s\r\nContent-Type: application/json\r\n\r\n"
                % (boundary, json.dumps({"contentType": "application/json"}), boundary)).encode() + data + \
            ("\r\n--%s--\r\n" % boundary).encode()
        query = dict({"uploadType": "multipart", "name": name}, **q)
        return self.fake.call("POST", "/upload/storage/v1/b/bkt/o", body, query=query,
                              headers={"Content-Type": "multipart/related; boundary=" + boundary})

    def test_cas(self):
        st, m = self.upload("state/x.json", b'{"v":1}', ifGenerationMatch="0")
        self.assertEqual(st, 200, m)
        self.assertEqual(m["size"], "7")
        import base64, hashlib
        self.assertEqual(m["md5Hash"], base64.b64encode(hashlib.md5(b'{"v":1}').digest()).decode())
        st, e = self.upload("state/x.json", b'{"v":2}', ifGenerationMatch="0")
        self.assertEqual(st, 412)
        self.assertEqual(e["error"]["errors"][0]["reason"], "conditionNotMet")
        st, m2 = self.upload("state/x.json", b'{"v":2}', ifGenerationMatch=m["generation"])
        self.assertEqual(st, 200)
        self.assertGreater(int(m2["generation"]), int(m["generation"]))
        st, g = self.fake.call("GET", "/storage/v1/b/bkt/o/state%2Fx.json")
        self.assertEqual(g["generation"], m2["generation"])
        st, h, data = self.fake.raw("GET", "/storage/v1/b/bkt/o/state%2Fx.json?alt=media",
                                    headers={"Authorization": "Bearer T"})
        self.assertEqual((st, data), (200, b'{"v":2}'))
        self.assertEqual(h["x-goog-generation"], m2["generation"])
        st, _ = self.fake.call("DELETE", "/storage/v1/b/bkt/o/state%2Fx.json?ifGenerationMatch=" + m["generation"])
        self.assertEqual(st, 412)
        st, _ = self.fake.call("DELETE", "/storage/v1/b/bkt/o/state%2Fx.json?ifGenerationMatch=" + m2["generation"])
        self.assertEqual(st, 204)
        st, e = self.fake.call("GET", "/storage/v1/b/bkt/o/state%2Fx.json")
        self.assertEqual((st, e["error"]["message"]), (404, "No such object: bkt/state/x.json"))

    def test_compose(self):
        _, a = self.upload("p/a", b'{"x":')
        _, b = self.upload("p/b", b'1}\n')
        body = {"sourceObjects": [{"name": "p/a"}, {"name": "p/b", "generation": b["generation"]}],
                "destination": {"contentType": "application/json"}}
        st, m = self.fake.call("POST", "/storage/v1/b/bkt/o/p%2Fab/compose", body, query={"ifGenerationMatch": "0"})
        self.assertEqual(st, 200, m)
        self.assertEqual((m["name"], m["size"], m["componentCount"], "md5Hash" in m), ("p/ab", "8", 2, False))
        st, h, data = self.fake.raw("GET", "/storage/v1/b/bkt/o/p%2Fab?alt=media", headers={"Authorization": "Bearer T"})
        self.assertEqual((st, data), (200, b'{"x":1}\n'))
        # The destination's precondition, then a source generation that is gone.
        st, e = self.fake.call("POST", "/storage/v1/b/bkt/o/p%2Fab/compose", body, query={"ifGenerationMatch": "0"})
        self.assertEqual((st, e["error"]["errors"][0]["reason"]), (412, "conditionNotMet"))
        self.upload("p/b", b"2}")
        st, e = self.fake.call("POST", "/storage/v1/b/bkt/o/p%2Fac/compose", body)
        self.assertEqual((st, e["error"]["message"]), (404, "Object p/b (generation: %s) not found." % b["generation"]))
        st, e = self.fake.call("POST", "/storage/v1/b/bkt/o/p%2Fac/compose", {"sourceObjects": []})
        self.assertEqual(st, 400, e)

    def test_list_pages_by_prefix(self):
        for n in ("p/history/0000000002.json", "p/history/0000000001.json", "p/state.json", "q/x"):
            self.assertEqual(self.upload(n, b"{}")[0], 200)
        st, out = self.fake.call("GET", "/storage/v1/b/bkt/o", query={"prefix": "p/history/", "maxResults": "1"})
        self.assertEqual(st, 200, out)
        self.assertEqual([o["name"] for o in out["items"]], ["p/history/0000000001.json"])
        st, out = self.fake.call("GET", "/storage/v1/b/bkt/o", query={"prefix": "p/history/", "maxResults": "1",
                                                                      "pageToken": out["nextPageToken"]})
        self.assertEqual([o["name"] for o in out["items"]], ["p/history/0000000002.json"])
        self.assertNotIn("nextPageToken", out)
        st, out = self.fake.call("GET", "/storage/v1/b/bkt/o", query={"prefix": "none/"})
        self.assertEqual((st, out), (200, {"kind": "storage#objects"}))

    def test_delete_after_the_nth_call(self):
        self.assertEqual(self.upload("p/state.json", b"{}")[0], 200)
        self.fake.ctl("/objects/delete-after", {"rpc": "storage.objects.get", "count": 2, "bucket": "bkt",
                                                "name": "p/state.json"})
        self.assertEqual(self.fake.call("GET", "/storage/v1/b/bkt/o/p%2Fstate.json")[0], 200)
        self.assertEqual(self.fake.call("GET", "/storage/v1/b/bkt/o/p%2Fstate.json")[0], 200)
        self.assertEqual(self.fake.call("GET", "/storage/v1/b/bkt/o/p%2Fstate.json")[0], 404)
        armed = self.fake.ctl("/objects/delete-after")["armed"]
        self.assertEqual((armed[0]["seen"], armed[0]["deleted"] is not None), (2, True))

    def test_crc32c(self):
        import storage
        self.assertEqual(storage.crc32c(b"123456789"), 0xE3069283)


if __name__ == "__main__":
    unittest.main()
