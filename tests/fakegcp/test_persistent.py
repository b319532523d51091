"""The fake's Vertex AI persistentResources: lifecycle over the virtual clock, operations, pages, updates,
injected ERROR and faults, schema checks, and CustomJobs that run on a resource."""

import unittest

from fakeutil import FakeTestCase, PARENT

PRS = PARENT + "/persistentResources"


def pr_body(replicas=2, autoscaling=None, labels=None, **extra):
    pool = {"id": "l4s", "machineSpec": {"machineType": "g2-standard-8", "acceleratorType": "NVIDIA_L4",
                                         "acceleratorCount": 1}, "replicaCount": str(replicas)}
    if autoscaling:
        pool["autoscalingSpec"] = {"minReplicaCount": str(autoscaling[0]), "maxReplicaCount": str(autoscaling[1])}
    b = {"resourcePools": [pool]}
    if labels:
        b["labels"] = labels
    b.update(extra)
    return b


class PersistentResources(FakeTestCase):
    def setUp(self):
        super().setUp()
        self.fake.ctl("/timings", {"provisioning_seconds": 300, "updating_seconds": 60, "stopping_seconds": 60})

    def make(self, rid="eval-pool", body=None, run=True):
        st, op = self.fake.call("POST", PRS, body or pr_body(labels={"vx-stack": "s"}),
                                query={"persistentResourceId": rid})
        self.assertEqual(st, 200, op)
        if run:
            self.advance(300)
        return op

    def op(self, name, ui=False):
        st, o = self.fake.call("GET", ("/ui/" if ui else "/v1/") + name)
        self.assertEqual(st, 200, o)
        return o

    def get(self, rid="eval-pool"):
        st, r = self.fake.call("GET", PRS + "/" + rid)
        self.assertEqual(st, 200, r)
        return r

    def test_create_provisions_then_runs(self):
        op = self.make(run=False)
        name = op["name"].split("/operations/")[0]
        self.assertRegex(op["name"], r"^projects/\d{12}/locations/us-central1/persistentResources/eval-pool/"
                                     r"operations/\d+$")
        self.assertEqual(op["metadata"]["@type"], "type.googleapis.com/google.cloud.aiplatform.v1."
                                                  "CreatePersistentResourceOperationMetadata")
        self.assertFalse(op["done"])
        r = self.get()
        self.assertEqual(r["name"], name)
        self.assertEqual(r["state"], "PROVISIONING")
        self.assertEqual(r["resourcePools"][0]["diskSpec"], {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100})
        self.assertEqual(r["resourcePools"][0]["usedReplicaCount"], "0")
        self.assertNotIn("startTime", r)
        self.assertFalse(self.op(op["name"])["done"])
        self.advance(299)
        self.assertFalse(self.op(op["name"])["done"])
        self.advance(1)
        done = self.op(op["name"], ui=True)  # Google's Node client polls the /ui/ twin
        self.assertTrue(done["done"])
        self.assertEqual(done["response"]["@type"], "type.googleapis.com/google.cloud.aiplatform.v1.PersistentResource")
        self.assertEqual(done["response"]["state"], "RUNNING")
        self.assertEqual(done["response"]["startTime"], "2026-01-01T00:05:00.000000Z")
        self.assertEqual(self.get()["labels"], {"vx-stack": "s"})

    def test_create_refusals(self):
        st, e = self.fake.call("POST", PRS, pr_body())
        self.assertEqual((st, e["error"]["details"][0]["fieldViolations"][0]["field"]), (400, "persistent_resource_id"))
        for bad in ("Pool", "1a", "a-", "a" * 64):
            st, e = self.fake.call("POST", PRS, pr_body(), query={"persistentResourceId": bad})
            self.assertEqual(st, 400, bad)
        b = pr_body()
        b["resourcePools"][0]["bogus"] = 1
        st, e = self.fake.call("POST", PRS, b, query={"persistentResourceId": "a"})
        self.assertEqual((st, e["error"]["message"]), (400, "Invalid JSON payload received. Unknown name \"bogus\" at "
                                                            "'persistent_resource.resource_pools[0]': Cannot find field."))
        st, e = self.fake.call("POST", PRS, {"resourcePools": []}, query={"persistentResourceId": "a"})
        self.assertEqual(e["error"]["details"][0]["fieldViolations"][0]["field"], "persistent_resource.resource_pools")
        st, e = self.fake.call("POST", PRS, pr_body(replicas=2, autoscaling=(0, 4)), query={"persistentResourceId": "a"})
        self.assertEqual((st, e["error"]["status"]), (400, "INVALID_ARGUMENT"))
        st, e = self.fake.call("POST", PRS, pr_body(replicas=5, autoscaling=(1, 4)), query={"persistentResourceId": "a"})
        self.assertEqual(st, 400)
        # the same id twice
        self.make("dup", run=False)
        st, e = self.fake.call("POST", PRS, pr_body(), query={"persistentResourceId": "dup"})
        self.assertEqual((st, e["error"]["status"]), (409, "ALREADY_EXISTS"))
        # enum numbers (the Node client's enum-encoding=int) are accepted and answered as numbers
        b = pr_body()
        b["resourcePools"][0]["machineSpec"]["acceleratorType"] = 11
        st, op = self.fake.call("POST", PRS + "?persistentResourceId=nums&$alt=json%3Benum-encoding=int", b)
        self.assertEqual(st, 200, op)
        st, r = self.fake.call("GET", PRS + "/nums?$alt=json%3Benum-encoding=int")
        self.assertEqual((r["state"], r["resourcePools"][0]["machineSpec"]["acceleratorType"]), (1, 11))

    def test_list_pages_and_bad_token(self):
        for i in range(5):
            self.make("p%d" % i, run=False)
        names, tok, pages = [], None, 0
        while True:
            q = {"pageSize": 2}
            if tok:
                q["pageToken"] = tok
            st, page = self.fake.call("GET", PRS, query=q)
            self.assertEqual(st, 200, page)
            pages += 1
            names += [r["name"].rsplit("/", 1)[1] for r in page.get("persistentResources", [])]
            tok = page.get("nextPageToken")
            if not tok:
                break
        self.assertEqual((names, pages), (["p0", "p1", "p2", "p3", "p4"], 3))
        st, e = self.fake.call("GET", PRS, query={"pageToken": "garbage"})
        self.assertEqual((st, e["error"]["message"]), (400, "Invalid page token."))
        st, e = self.fake.call("GET", "/v1/projects/my-proj/locations/europe-west4/persistentResources")
        self.assertEqual((st, e), (200, {}))

    def test_update_pools_and_labels(self):
        self.make()
        b = pr_body(replicas=3, labels={"vx-stack": "s", "team": "ml"})
        st, op = self.fake.call("PATCH", PRS + "/eval-pool", b, query={"updateMask": "resourcePools,labels"})
        self.assertEqual(st, 200, op)
        self.assertEqual(op["metadata"]["progressMessage"], "Updating")
        r = self.get()
        self.assertEqual((r["state"], r["resourcePools"][0]["replicaCount"], r["labels"]["team"]),
                         ("UPDATING", "3", "ml"))
        self.assertFalse(self.op(op["name"])["done"])
        # not while it updates
        st, e = self.fake.call("PATCH", PRS + "/eval-pool", b, query={"updateMask": "labels"})
        self.assertEqual((st, e["error"]["status"]), (400, "FAILED_PRECONDITION"))
        self.advance(60)
        done = self.op(op["name"])
        self.assertEqual((done["done"], done["response"]["state"]), (True, "RUNNING"))
        # snake_case paths too; the machine spec is immutable; pools cannot be added; other paths refused
        st, op = self.fake.call("PATCH", PRS + "/eval-pool", pr_body(replicas=2, autoscaling=(1, 4)),
                                query={"updateMask": "resource_pools"})
        self.assertEqual(st, 200, op)
        self.advance(60)
        self.assertEqual(self.get()["resourcePools"][0]["autoscalingSpec"],
                         {"minReplicaCount": "1", "maxReplicaCount": "4"})
        b = pr_body()
        b["resourcePools"][0]["machineSpec"]["machineType"] = "g2-standard-16"
        st, e = self.fake.call("PATCH", PRS + "/eval-pool", b, query={"updateMask": "resourcePools"})
        self.assertEqual((st, e["error"]["message"]), (400, "machine_spec of resource pool l4s is immutable."))
        b = pr_body()
        b["resourcePools"][0]["id"] = "new"
        st, e = self.fake.call("PATCH", PRS + "/eval-pool", b, query={"updateMask": "resourcePools"})
        self.assertEqual(st, 400)
        st, e = self.fake.call("PATCH", PRS + "/eval-pool", pr_body(network="projects/1/global/networks/n"),
                               query={"updateMask": "network"})
        self.assertEqual((st, e["error"]["message"]), (400, "Update of field network is not supported."))
        st, e = self.fake.call("PATCH", PRS + "/eval-pool", pr_body())
        self.assertEqual(e["error"]["details"][0]["fieldViolations"][0]["field"], "update_mask")

    def test_delete_stops_then_gone(self):
        self.make()
        st, op = self.fake.call("DELETE", PRS + "/eval-pool")
        self.assertEqual(st, 200, op)
        self.assertEqual(self.get()["state"], "STOPPING")
        self.assertFalse(self.op(op["name"])["done"])
        st, e = self.fake.call("DELETE", PRS + "/eval-pool")
        self.assertEqual((st, e["error"]["status"]), (400, "FAILED_PRECONDITION"))
        self.advance(60)
        done = self.op(op["name"])
        self.assertEqual((done["done"], done["response"]), (True, {"@type": "type.googleapis.com/google.protobuf.Empty"}))
        st, e = self.fake.call("GET", PRS + "/eval-pool")
        self.assertEqual((st, e["error"]["status"]), (404, "NOT_FOUND"))
        st, e = self.fake.call("DELETE", PRS + "/eval-pool")
        self.assertEqual(st, 404)

    def test_reboot(self):
        self.make()
        st, op = self.fake.call("POST", PRS + "/eval-pool:reboot", {})
        self.assertEqual((st, self.get()["state"]), (200, "REBOOTING"))
        self.fake.ctl("/timings", {"rebooting_seconds": 10})
        self.advance(120)
        self.assertEqual(self.op(op["name"])["response"]["state"], "RUNNING")

    def test_injected_error_state_and_failing_create(self):
        self.fake.ctl("/persistent-resources", {"fail_next_create": {
            "code": 8, "message": "Resources are insufficient in region: us-central1."}})
        op = self.make("bad")
        done = self.op(op["name"])
        self.assertEqual((done["done"], done["error"]),
                         (True, {"code": 8, "message": "Resources are insufficient in region: us-central1."}))
        self.assertNotIn("response", done)
        r = self.get("bad")
        self.assertEqual((r["state"], r["error"]["code"]), ("ERROR", 8))
        # a running resource put in ERROR, and back
        self.make("good")
        name = self.get("good")["name"]
        self.fake.ctl("/persistent-resources", {"name": name, "state": "ERROR", "error": {"code": 13, "message": "x"}})
        self.assertEqual(self.get("good")["error"], {"code": 13, "message": "x"})
        self.fake.ctl("/persistent-resources", {"name": name, "state": "RUNNING"})
        self.assertNotIn("error", self.get("good"))
        st, e = self.fake.call("POST", "/_fake/persistent-resources", {"name": "nope"}, token=None)
        self.assertEqual(st, 404)
        self.assertEqual(len(self.fake.ctl("/persistent-resources")["persistentResources"]), 2)

    def test_faults_by_rpc(self):
        self.fake.ctl("/faults", {"error_rate": 1, "statuses": [503], "methods": ["CreatePersistentResource"], "times": 1})
        st, e = self.fake.call("POST", PRS, pr_body(), query={"persistentResourceId": "a"})
        self.assertEqual(st, 503)
        self.make("a", run=False)
        self.fake.ctl("/iam", {"denied": ["aiplatform.persistentResources.delete"]})
        st, e = self.fake.call("DELETE", PRS + "/a")
        self.assertEqual(st, 403)
        self.assertIn("aiplatform.persistentResources.delete", e["error"]["message"])
        counts = self.fake.ctl("/requests")["by_rpc"]
        self.assertEqual(counts["CreatePersistentResource"], 2)


class JobsOnResource(FakeTestCase):
    def setUp(self):
        super().setUp()
        st, op = self.fake.call("POST", PRS, pr_body(replicas=2), query={"persistentResourceId": "pool"})
        self.assertEqual(st, 200, op)

    def job(self, rid="pool", replicas=1, accel="NVIDIA_L4", count=1, machine="g2-standard-8", **kw):
        b = self.job_body(accel=accel, count=count, **kw)
        ws = b["jobSpec"]["workerPoolSpecs"][0]
        ws["machineSpec"]["machineType"] = machine
        ws["replicaCount"] = str(replicas)
        b["jobSpec"]["persistentResourceId"] = rid
        return self.fake.call("POST", PARENT + "/customJobs", b)

    def test_refused_unless_running_and_fitting(self):
        st, e = self.job()
        self.assertEqual((st, e["error"]["status"]), (400, "FAILED_PRECONDITION"))
        self.assertIn("is in state PROVISIONING", e["error"]["message"])
        self.advance(300)
        st, e = self.job(rid="missing")
        self.assertEqual((st, e["error"]["status"]), (400, "INVALID_ARGUMENT"))
        st, e = self.job(machine="g2-standard-16")
        self.assertEqual(st, 400)
        self.assertIn("No resource pool", e["error"]["message"])
        st, e = self.job(replicas=3)
        self.assertEqual(st, 400)
        st, e = self.job(strategy="SPOT")
        self.assertEqual(st, 400)
        b = self.job_body(accel="NVIDIA_L4", count=1)
        ms = b["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]
        ms["machineType"] = "g2-standard-8"
        ms["reservationAffinity"] = {"reservationAffinityType": "ANY_RESERVATION"}
        b["jobSpec"]["persistentResourceId"] = "pool"
        st, e = self.fake.call("POST", PARENT + "/customJobs", b)
        self.assertEqual((st, e["error"]["message"]),
                         (400, "Reservation affinity is not supported yet for persistent clusters."))
        b["jobSpec"]["workerPoolSpecs"][0]["machineSpec"].pop("reservationAffinity")
        b["jobSpec"]["network"] = "projects/1/global/networks/other"
        st, e = self.fake.call("POST", PARENT + "/customJobs", b)
        self.assertEqual(st, 400)

    def test_runs_at_once_then_queues_when_full(self):
        self.advance(300)
        st, a = self.job(replicas=2)
        self.assertEqual(st, 200, a)
        self.assertEqual(self.get_job(a["name"])["state"], "JOB_STATE_RUNNING")  # no 5 s + 30 s queue
        st, r = self.fake.call("GET", PRS + "/pool")
        self.assertEqual(r["resourcePools"][0]["usedReplicaCount"], "2")
        st, b = self.job(replicas=1)
        self.assertEqual(st, 200, b)
        self.assertEqual(self.get_job(b["name"])["state"], "JOB_STATE_PENDING")
        # a resource in use is not deleted
        st, e = self.fake.call("DELETE", PRS + "/pool")
        self.assertEqual((st, e["error"]["status"]), (400, "FAILED_PRECONDITION"))
        self.advance(3600)
        self.assertEqual(self.get_job(a["name"])["state"], "JOB_STATE_SUCCEEDED")
        g = self.get_job(b["name"])
        self.assertEqual((g["state"], g["startTime"]), ("JOB_STATE_RUNNING", "2026-01-01T01:05:00.000000Z"))
        st, r = self.fake.call("GET", PRS + "/pool")
        self.assertEqual(r["resourcePools"][0]["usedReplicaCount"], "1")
        # no quota drawn: the region's training quota is untouched
        self.assertEqual(self.fake.ctl("/quota")["vertex_usage"], {})


if __name__ == "__main__":
    unittest.main()
