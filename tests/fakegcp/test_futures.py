"""The fake's Compute future reservations: the methods, the requestId dedup, the procurement states on the
virtual clock (approved, declined, failed), the auto-created reservation and its opening to Vertex AI,
cancel and delete rules, and the schema check of bodies."""

import unittest

from fakeutil import FakeTestCase, PARENT

Z = "/compute/v1/projects/my-proj/zones/us-central1-a"
AGG = "/compute/v1/projects/my-proj/aggregated/futureReservations"
RID = "6f1c2b1e-1111-4222-8333-444455556666"
RID2 = "6f1c2b1e-1111-4222-8333-444455556667"
START = "2026-01-10T09:00:00Z"   # the frozen clock starts 2026-01-01T00:00:00Z
T_START = 9 * 86400 + 9 * 3600    # seconds from the clock's start to START
LINK = "https://www.googleapis.com/compute/v1/projects/my-proj/zones/us-central1-a"


def booking(name="fr1", days=5, count="2", prefix="pretrain", **extra):
    b = {"name": name, "reservationMode": "CALENDAR", "planningStatus": "SUBMITTED", "deploymentType": "DENSE",
         "namePrefix": prefix, "specificReservationRequired": True, "autoDeleteAutoCreatedReservations": True,
         "timeWindow": {"startTime": START, "duration": {"seconds": str(days * 86400)}},
         "specificSkuProperties": {"totalCount": count, "instanceProperties": {
             "machineType": "a3-highgpu-8g",
             "guestAccelerators": [{"acceleratorType": "nvidia-h100-80gb", "acceleratorCount": 8}]}}}
    b.update(extra)
    return {k: v for k, v in b.items() if v is not None}  # None: leave the field out


class FutureReservations(FakeTestCase):
    def insert(self, body, rid=None, status=200):
        path = Z + "/futureReservations" + ("?requestId=" + rid if rid else "")
        st, op = self.fake.call("POST", path, body)
        self.assertEqual(st, status, op)
        return op

    def get(self, name="fr1"):
        st, fr = self.fake.call("GET", Z + "/futureReservations/" + name)
        self.assertEqual(st, 200, fr)
        return fr

    def state(self, name="fr1"):
        return self.get(name)["status"]["procurementStatus"]

    def test_insert_get_list_and_dedup(self):
        op = self.insert(booking(), RID)
        self.assertEqual(op["kind"], "compute#operation")
        self.assertEqual(op["operationType"], "insert")
        self.assertEqual(op["targetLink"], LINK + "/futureReservations/fr1")
        self.assertEqual(op["clientOperationId"], RID)
        # The same requestId: the same operation, no second booking and no 409.
        self.assertEqual(self.insert(booking(), RID)["name"], op["name"])
        st, done = self.fake.call("POST", Z + "/operations/" + op["name"] + "/wait", '""')
        self.assertEqual(done["status"], "DONE")
        self.assertNotIn("error", done)
        fr = self.get()
        self.assertEqual(fr["kind"], "compute#futureReservation")
        self.assertEqual(fr["zone"], LINK)
        self.assertEqual(fr["selfLink"], LINK + "/futureReservations/fr1")
        self.assertEqual(fr["status"], {"procurementStatus": "PENDING_APPROVAL"})
        self.assertEqual(fr["specificSkuProperties"]["totalCount"], "2")
        # Another request id: the name is taken.
        st, e = self.fake.call("POST", Z + "/futureReservations?requestId=" + RID2, booking())
        self.assertEqual(st, 409)
        self.assertEqual(e["error"]["errors"][0]["reason"], "alreadyExists")
        self.insert(booking("fr2"))
        st, lst = self.fake.call("GET", Z + "/futureReservations", query={"maxResults": 1})
        self.assertEqual([x["name"] for x in lst["items"]], ["fr1"])
        self.assertEqual(lst["kind"], "compute#futureReservationsListResponse")
        st, lst = self.fake.call("GET", Z + "/futureReservations", query={"pageToken": lst["nextPageToken"]})
        self.assertEqual([x["name"] for x in lst["items"]], ["fr2"])
        self.assertNotIn("nextPageToken", lst)
        st, lst = self.fake.call("GET", Z + "/futureReservations", query={"filter": "name = fr2"})
        self.assertEqual([x["name"] for x in lst["items"]], ["fr2"])
        st, agg = self.fake.call("GET", AGG)
        self.assertEqual(agg["kind"], "compute#futureReservationsAggregatedListResponse")
        self.assertEqual([x["name"] for x in agg["items"]["zones/us-central1-a"]["futureReservations"]],
                         ["fr1", "fr2"])
        self.assertEqual(agg["items"]["zones/us-east1-b"]["warning"]["code"], "NO_RESULTS_ON_PAGE")
        st, e = self.fake.call("GET", Z + "/futureReservations/nope")
        self.assertEqual(st, 404)

    def test_calendar_lifecycle_and_vertex(self):
        self.insert(booking(), RID)
        self.advance(59)
        self.assertEqual(self.state(), "PENDING_APPROVAL")
        self.advance(1)
        fr = self.get()
        self.assertEqual(fr["status"]["procurementStatus"], "APPROVED")
        self.assertEqual(fr["status"]["lockTime"], "2026-01-10T09:00:00.000000Z")
        st, lst = self.fake.call("GET", Z + "/reservations")
        self.assertEqual(lst["items"], [])
        self.advance(T_START - 60)
        fr = self.get()
        self.assertEqual(fr["status"]["procurementStatus"], "FULFILLED")
        self.assertEqual(fr["status"]["fulfilledCount"], "2")
        self.assertEqual(fr["status"]["autoCreatedReservations"], [LINK + "/reservations/pretrain-20260110-0001"])
        st, lst = self.fake.call("GET", Z + "/reservations")
        self.assertEqual([r["name"] for r in lst["items"]], ["pretrain-20260110-0001"])
        res = lst["items"][0]
        self.assertEqual(res["status"], "READY")
        self.assertTrue(res["specificReservationRequired"])
        self.assertEqual(res["specificReservation"]["count"], "2")
        self.assertNotIn("reservationSharingPolicy", res)

        # Vertex AI refuses the reservation until it is opened to it ...
        job = {"displayName": "pretrain", "jobSpec": {"workerPoolSpecs": [{
            "containerSpec": {"imageUri": "us-docker.pkg.dev/x/y:z"}, "replicaCount": "2",
            "machineSpec": {"machineType": "a3-highgpu-8g", "acceleratorType": "NVIDIA_H100_80GB",
                            "acceleratorCount": 8, "reservationAffinity": {
                                "reservationAffinityType": "SPECIFIC_RESERVATION",
                                "key": "compute.googleapis.com/reservation-name",
                                "values": ["projects/my-proj/zones/us-central1-a/reservations/"
                                           "pretrain-20260110-0001"]}}}]}}
        st, j = self.fake.call("POST", PARENT + "/customJobs", job)
        self.assertEqual(st, 200, j)
        self.advance(40)
        j = self.get_job(j["name"])
        self.assertEqual(j["state"], "JOB_STATE_FAILED")
        self.assertIn("not shared with Google Cloud managed services", j["error"]["message"])
        # ... which reservations.update does with paths, as gcloud sends it.
        st, op = self.fake.call("PATCH", Z + "/reservations/pretrain-20260110-0001?paths="
                                "reservationSharingPolicy.serviceShareType&requestId=" + RID2,
                                {"name": "pretrain-20260110-0001", "zone": "us-central1-a",
                                 "reservationSharingPolicy": {"serviceShareType": "ALLOW_ALL"}})
        self.assertEqual(st, 200, op)
        st, res = self.fake.call("GET", Z + "/reservations/pretrain-20260110-0001")
        self.assertEqual(res["reservationSharingPolicy"], {"serviceShareType": "ALLOW_ALL"})
        st, j = self.fake.call("POST", PARENT + "/customJobs", job)
        self.advance(40)
        self.assertEqual(self.get_job(j["name"])["state"], "JOB_STATE_RUNNING")

        # Locked: no cancel, no delete before the end.
        st, e = self.fake.call("POST", Z + "/futureReservations/fr1/cancel")
        self.assertEqual(st, 400)
        self.assertEqual(e["error"]["errors"][0]["reason"], "conditionNotMet")
        st, e = self.fake.call("DELETE", Z + "/futureReservations/fr1")
        self.assertEqual(st, 400)
        # The end: the auto-created reservation is gone, the record stays until deleted.
        self.advance(5 * 86400)
        st, lst = self.fake.call("GET", Z + "/reservations")
        self.assertEqual(lst["items"], [])
        self.assertEqual(self.state(), "FULFILLED")
        st, op = self.fake.call("DELETE", Z + "/futureReservations/fr1?requestId=" + RID2.replace("7", "8"))
        self.assertEqual(st, 200, op)
        self.assertEqual(op["operationType"], "delete")
        self.assertEqual(self.fake.call("GET", Z + "/futureReservations/fr1")[0], 404)

    def run_at_the_end(self, mode):
        """A booking of mode, opened to Vertex AI; a job on its reservation started 30 minutes before the
        end that would run 2 hours. The job, and where the clock was at the end."""
        self.fake.ctl("/timings", {"running_seconds": 7200})
        self.insert(booking(reservationMode=mode), RID)
        self.advance(T_START + 1)
        res = "pretrain-20260110-0001"
        st, op = self.fake.call("PATCH", Z + "/reservations/%s?paths=reservationSharingPolicy.serviceShareType" % res,
                                {"name": res, "reservationSharingPolicy": {"serviceShareType": "ALLOW_ALL"}})
        self.assertEqual(st, 200, op)
        self.advance(5 * 86400 - 1800 - 1 - 40)
        job = self.job_body()
        job["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["reservationAffinity"] = {
            "reservationAffinityType": "SPECIFIC_RESERVATION", "key": "compute.googleapis.com/reservation-name",
            "values": ["projects/my-proj/zones/us-central1-a/reservations/" + res]}
        st, j = self.fake.call("POST", PARENT + "/customJobs", job)
        self.assertEqual(st, 200, j)
        self.advance(40)
        self.assertEqual(self.get_job(j["name"])["state"], "JOB_STATE_RUNNING")
        # past the end in one step: the job's own end (in 2 h) comes after the window's
        self.advance(3 * 3600)
        return self.get_job(j["name"])

    def test_the_end_of_a_calendar_window_ends_the_runs_on_it(self):
        j = self.run_at_the_end("CALENDAR")
        self.assertEqual(j["state"], "JOB_STATE_FAILED")
        self.assertEqual(j["endTime"], "2026-01-15T09:00:00.000000Z")   # the window's end, not the run's
        # Not stated how Vertex words it: the fake says what it says of a reclaimed Spot VM (README.md).
        self.assertEqual(j["error"], {"code": 8, "message": "Resources are insufficient in region: us-central1. "
                                                             "Try a different region or use a different accelerator."})
        st, lst = self.fake.call("GET", Z + "/reservations")
        self.assertEqual(lst["items"], [])

    def test_a_default_mode_window_leaves_its_runs(self):
        j = self.run_at_the_end("DEFAULT")
        self.assertEqual(j["state"], "JOB_STATE_SUCCEEDED")

    def test_decline_and_fail(self):
        self.fake.ctl("/future-reservations", {"mode": "decline"})
        self.insert(booking())
        self.advance(60)
        self.assertEqual(self.state(), "DECLINED")
        self.advance(T_START)
        self.assertEqual(self.state(), "DECLINED")
        st, op = self.fake.call("DELETE", Z + "/futureReservations/fr1")
        self.assertEqual(st, 200, op)

        self.fake.ctl("/future-reservations", {"mode": "fail"})
        body = booking("fr2")
        body["timeWindow"]["startTime"] = "2026-01-20T00:00:00Z"
        self.insert(body)
        self.advance(60)
        self.assertEqual(self.state("fr2"), "APPROVED")
        self.advance(10 * 86400)
        fr = self.get("fr2")
        self.assertEqual(fr["status"]["procurementStatus"], "FAILED")
        self.assertNotIn("autoCreatedReservations", fr["status"])
        self.assertEqual(self.fake.call("GET", Z + "/reservations")[1]["items"], [])
        self.assertEqual(self.fake.ctl("/future-reservations")["mode"], "fail")
        with self.assertRaises(AssertionError):
            self.fake.ctl("/future-reservations", {"mode": "maybe"})

    def test_cancel_before_the_window(self):
        self.insert(booking())
        self.advance(60)
        st, op = self.fake.call("POST", Z + "/futureReservations/fr1/cancel?requestId=" + RID, "")
        self.assertEqual(st, 200, op)
        self.assertEqual(op["operationType"], "cancel")
        self.assertEqual(self.state(), "CANCELLED")
        # A repeat with the same id is the same operation, not a refusal.
        st, op2 = self.fake.call("POST", Z + "/futureReservations/fr1/cancel?requestId=" + RID, "")
        self.assertEqual(op2["name"], op["name"])
        self.advance(T_START)
        self.assertEqual(self.state(), "CANCELLED")
        self.assertEqual(self.fake.call("GET", Z + "/reservations")[1]["items"], [])
        self.assertEqual(self.fake.call("DELETE", Z + "/futureReservations/fr1")[0], 200)

    def test_update_rules(self):
        draft = booking(planningStatus="DRAFT")
        self.insert(draft)
        self.assertEqual(self.state(), "DRAFTING")
        self.advance(600)
        self.assertEqual(self.state(), "DRAFTING")
        # gcloud's paths (singular guestAccelerator, sic) are accepted while drafting.
        st, op = self.fake.call("PATCH", Z + "/futureReservations/fr1?updateMask=specificSkuProperties.totalCount%2C"
                                "specificSkuProperties.instanceProperties.guestAccelerator",
                                {"specificSkuProperties": {"totalCount": "4", "instanceProperties": {
                                    "guestAccelerators": [{"acceleratorType": "nvidia-h100-80gb",
                                                           "acceleratorCount": 8}]}}})
        self.assertEqual(st, 200, op)
        self.assertEqual(self.get()["specificSkuProperties"]["totalCount"], "4")
        # Submitting is an update of planningStatus.
        st, op = self.fake.call("PATCH", Z + "/futureReservations/fr1?updateMask=planningStatus",
                                {"name": "fr1", "planningStatus": "SUBMITTED"})
        self.assertEqual(st, 200, op)
        self.assertEqual(self.state(), "PENDING_APPROVAL")
        st, e = self.fake.call("PATCH", Z + "/futureReservations/fr1?updateMask=description", {"description": "x"})
        self.assertEqual(st, 400)
        self.advance(60)
        st, e = self.fake.call("PATCH", Z + "/futureReservations/fr1?updateMask=description", {"description": "x"})
        self.assertEqual(st, 400)
        self.assertIn("calendar-mode", e["error"]["message"])
        for mask in ("", "status", "name", "bogus"):
            st, e = self.fake.call("PATCH", Z + "/futureReservations/fr1?updateMask=" + mask, {})
            self.assertEqual(st, 400, mask)

    def test_bodies_checked(self):
        cases = [
            booking(bogus=1),
            booking(reservationMode="WEIRD"),
            booking(name="Bad_Name"),
            booking(days=0),
            booking(days=91),
            booking(count="81"),
            booking(count="0"),
            booking(autoDeleteAutoCreatedReservations=False),
            booking(prefix="a-prefix-longer-than-20"),
            booking(reservationName="r"),
            booking(autoCreatedReservationsDeleteTime="2026-02-01T00:00:00Z",
                    autoCreatedReservationsDuration={"seconds": "60"}),
        ]
        both = booking()
        both["timeWindow"]["endTime"] = "2026-01-12T00:00:00Z"
        past = booking()
        past["timeWindow"]["startTime"] = "2025-12-31T00:00:00Z"
        nostart = booking()
        del nostart["timeWindow"]["startTime"]
        template = booking()
        template["specificSkuProperties"]["sourceInstanceTemplate"] = "projects/p/global/instanceTemplates/t"
        for body in cases + [both, past, nostart, template]:
            st, e = self.fake.call("POST", Z + "/futureReservations", body)
            self.assertEqual(st, 400, body)
            self.assertEqual(e["error"]["code"], 400)
        st, lst = self.fake.call("GET", Z + "/futureReservations")
        self.assertEqual(lst["items"], [])
        # Output-only fields are dropped, params is not kept, an ordinary (default-mode) request passes.
        ok = booking(reservationMode="DEFAULT", autoDeleteAutoCreatedReservations=False,
                     status={"procurementStatus": "FULFILLED"}, params={"resourceManagerTags": {}})
        self.insert(ok)
        fr = self.get()
        self.assertEqual(fr["status"], {"procurementStatus": "PENDING_APPROVAL"})
        self.assertNotIn("params", fr)
        st, e = self.fake.call("POST", Z + "/futureReservations?requestId=00000000-0000-0000-0000-000000000000",
                               booking("fr3"))
        self.assertEqual(st, 400)

    def test_default_mode_keeps_reservation(self):
        # Without auto-delete the delivered reservation outlives the window; a reservationName receives it.
        self.insert(booking(reservationMode="DEFAULT", autoDeleteAutoCreatedReservations=False, prefix=None,
                            reservationName="pool", days=2))
        self.advance(T_START + 3 * 86400)
        st, lst = self.fake.call("GET", Z + "/reservations")
        self.assertEqual([r["name"] for r in lst["items"]], ["pool"])
        self.assertEqual(self.get()["status"]["autoCreatedReservations"], [LINK + "/reservations/pool"])

    def test_dated_auto_name(self):
        # Without namePrefix or reservationName, auto_name "dated" scripts the reading other than gcloud's:
        # the request's name with the date and a number after it.
        self.insert(booking(prefix=None))
        self.insert(booking(name="fr2", prefix=None))
        st, cfg = self.fake.call("POST", "/_fake/future-reservations", {"auto_name": "dated"})
        self.assertEqual((st, cfg["auto_name"]), (200, "dated"))
        st, err = self.fake.call("POST", "/_fake/future-reservations", {"auto_name": "other"})
        self.assertEqual(st, 400, err)
        self.advance(T_START + 60)
        self.assertEqual(self.get()["status"]["autoCreatedReservations"], [LINK + "/reservations/fr1-20260110-0001"])
        self.assertEqual(self.get("fr2")["status"]["autoCreatedReservations"],
                         [LINK + "/reservations/fr2-20260110-0001"])



if __name__ == "__main__":
    unittest.main()
