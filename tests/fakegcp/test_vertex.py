import unittest

from fakeutil import FakeTestCase, PARENT


class VertexJobs(FakeTestCase):
    def test_create_get_and_lifecycle(self):
        j = self.create(labels={"team": "ml"})
        self.assertRegex(j["name"], r"^projects/\d{12}/locations/us-central1/customJobs/\d+$")
        self.assertEqual(j["state"], "JOB_STATE_QUEUED")
        self.assertEqual(j["jobSpec"]["workerPoolSpecs"][0]["diskSpec"],
                         {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100})
        self.assertNotIn("webAccessUris", j)
        self.advance(5)
        self.assertEqual(self.get_job(j["name"])["state"], "JOB_STATE_PENDING")
        self.advance(30)
        g = self.get_job(j["name"])
        self.assertEqual(g["state"], "JOB_STATE_RUNNING")
        self.assertEqual(g["startTime"], "2026-01-01T00:00:35.000000Z")
        self.advance(3600)
        g = self.get_job(j["name"])
        self.assertEqual(g["state"], "JOB_STATE_SUCCEEDED")
        self.assertIn("endTime", g)
        self.assertNotIn("error", g)
        # the project id in the path works too
        st, g2 = self.fake.call("GET", PARENT + "/customJobs/" + j["name"].rsplit("/", 1)[1])
        self.assertEqual((st, g2["name"]), (200, j["name"]))

    def test_timings_configurable(self):
        self.fake.ctl("/timings", {"queued_seconds": 1, "pending_seconds": 1, "running_seconds": 10})
        j = self.create()
        self.advance(2)
        self.assertEqual(self.get_job(j["name"])["state"], "JOB_STATE_RUNNING")
        self.advance(10)
        self.assertEqual(self.get_job(j["name"])["state"], "JOB_STATE_SUCCEEDED")

    def test_a_run_ends_cancelled_at_its_timeout(self):
        # Vertex cancels a job at scheduling.timeout (tensorflow/tfx#6223) and says only that.
        j = self.create(timeout="600s")
        self.advance(35 + 599)
        self.assertEqual(self.get_job(j["name"])["state"], "JOB_STATE_RUNNING")
        self.advance(1)
        g = self.get_job(j["name"])
        self.assertEqual((g["state"], g["error"], g["startTime"], g["endTime"]),
                         ("JOB_STATE_CANCELLED", {"code": 1, "message": "CustomJob was cancelled."},
                          "2026-01-01T00:00:35.000000Z", "2026-01-01T00:10:35.000000Z"))

    def test_not_found(self):
        st, e = self.fake.call("GET", PARENT + "/customJobs/123")
        self.assertEqual(st, 404)
        self.assertEqual(e["error"]["status"], "NOT_FOUND")
        self.assertEqual(e["error"]["code"], 404)

    def test_validation_errors(self):
        b = self.job_body()
        b["jobSpec"]["workerPoolSpecs"][0]["bogus"] = 1
        st, e = self.fake.call("POST", PARENT + "/customJobs", b)
        self.assertEqual(st, 400)
        self.assertEqual(e["error"]["message"], "Invalid JSON payload received. Unknown name \"bogus\" at "
                         "'custom_job.job_spec.worker_pool_specs[0]': Cannot find field.")
        self.assertEqual(e["error"]["status"], "INVALID_ARGUMENT")
        self.assertEqual(e["error"]["details"], [{
            "@type": "type.googleapis.com/google.rpc.BadRequest",
            "fieldViolations": [{"field": "custom_job.job_spec.worker_pool_specs[0]",
                                 "description": e["error"]["message"]}]}])
        b = self.job_body(strategy="NOPE")
        st, e = self.fake.call("POST", PARENT + "/customJobs", b)
        self.assertEqual(st, 400)
        self.assertEqual(e["error"]["message"], "Invalid value at 'custom_job.job_spec.scheduling.strategy' "
                         "(type.googleapis.com/google.cloud.aiplatform.v1.Scheduling.Strategy), \"NOPE\"")
        b = self.job_body()
        b["displayName"] = 5
        st, e = self.fake.call("POST", PARENT + "/customJobs", b)
        self.assertEqual((st, e["error"]["message"]), (400, "Invalid value at 'custom_job.display_name' "
                                                             "(TYPE_STRING), 5"))
        b = self.job_body()
        del b["displayName"]
        del b["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["machineType"]
        st, e = self.fake.call("POST", PARENT + "/customJobs", b)
        self.assertEqual(st, 400)
        self.assertEqual(e["error"]["details"][0]["fieldViolations"], [
            {"field": "custom_job.display_name", "description": "Required field is not set."}])
        b["displayName"] = "x"
        st, e = self.fake.call("POST", PARENT + "/customJobs", b)
        self.assertEqual(e["error"]["details"][0]["fieldViolations"][0]["field"],
                         "custom_job.job_spec.worker_pool_specs[0].machine_spec.machine_type")
        # output-only fields are ignored, int64 as number and enum as number accepted, snake_case accepted
        b = self.job_body()
        b.update({"state": "JOB_STATE_FAILED", "name": "x", "webAccessUris": {}})
        b["jobSpec"]["workerPoolSpecs"][0]["replica_count"] = 1
        del b["jobSpec"]["workerPoolSpecs"][0]["replicaCount"]
        b["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorType"] = 13
        st, j = self.fake.call("POST", PARENT + "/customJobs", b)
        self.assertEqual(st, 200, j)
        self.assertEqual(j["state"], "JOB_STATE_QUEUED")
        self.assertEqual(j["jobSpec"]["workerPoolSpecs"][0]["replicaCount"], "1")
        self.assertEqual(j["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorType"], "NVIDIA_H100_80GB")

    def test_enum_encoding_int(self):
        b = self.job_body(strategy=4)
        st, j = self.fake.call("POST", PARENT + "/customJobs?$alt=json%3Benum-encoding%3Dint", b)
        self.assertEqual(st, 200)
        self.assertEqual(j["state"], 1)
        self.assertEqual(j["jobSpec"]["scheduling"]["strategy"], 4)
        self.assertEqual(j["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorType"], 13)
        st, j2 = self.fake.call("GET", "/v1/" + j["name"])
        self.assertEqual(j2["jobSpec"]["scheduling"]["strategy"], "SPOT")

    def test_filters(self):
        a = self.create(name="my_job_a", labels={"vx-stack": "research", "team": "ml"})
        self.advance(100)
        b = self.create(name="other", labels={"vx-stack": "prod"})
        c = self.create(name="my_job_c")
        names = lambda f: sorted(j["displayName"] for j in self.fake.call(
            "GET", PARENT + "/customJobs", query={"filter": f})[1].get("customJobs", []))
        self.assertEqual(names("labels.vx-stack=research"), ["my_job_a"])
        self.assertEqual(names('labels."vx-stack"="research"'), ["my_job_a"])
        self.assertEqual(names("labels.vx-stack:*"), ["my_job_a", "other"])
        self.assertEqual(names("NOT labels.vx-stack:*"), ["my_job_c"])
        self.assertEqual(names('display_name:"my_job_*"'), ["my_job_a", "my_job_c"])
        self.assertEqual(names('display_name="other"'), ["other"])
        self.assertEqual(names('NOT display_name="other"'), ["my_job_a", "my_job_c"])
        self.assertEqual(names('state="JOB_STATE_RUNNING"'), ["my_job_a"])
        self.assertEqual(names("state=JOB_STATE_QUEUED AND labels.vx-stack=prod"), ["other"])
        self.assertEqual(names("labels.team=ml OR display_name=other"), ["my_job_a", "other"])
        self.assertEqual(names('create_time>"2026-01-01T00:01:00Z"'), ["my_job_c", "other"])
        self.assertEqual(names("create_time<=2026-01-01T00:00:00Z"), ["my_job_a"])
        self.assertEqual(names("(labels.team=ml OR display_name=other) AND state!=JOB_STATE_RUNNING"), ["other"])
        self.assertEqual(names("state=3"), ["my_job_a"])
        st, e = self.fake.call("GET", PARENT + "/customJobs", query={"filter": "bogus=1"})
        self.assertEqual((st, e["error"]["status"]), (400, "INVALID_ARGUMENT"))
        st, e = self.fake.call("GET", PARENT + "/customJobs", query={"filter": "state=("})
        self.assertEqual(st, 400)
        del a, b, c

    def test_paging_and_read_mask(self):
        made = [self.create(name="j%d" % i)["name"] for i in range(7)]
        seen, tok, pages = [], None, 0
        while True:
            q = {"pageSize": 3, "readMask": "name,display_name"}
            if tok:
                q["pageToken"] = tok
            st, r = self.fake.call("GET", PARENT + "/customJobs", query=q)
            self.assertEqual(st, 200)
            pages += 1
            for j in r["customJobs"]:
                self.assertEqual(set(j), {"name", "displayName"})
            seen += [j["name"] for j in r["customJobs"]]
            tok = r.get("nextPageToken")
            if not tok:
                break
        self.assertEqual(pages, 3)
        self.assertEqual(seen, list(reversed(made)))  # newest first
        # Shorter pages than asked, when the world says so.
        self.fake.ctl("/paging", {"max_page_size": 2})
        st, r = self.fake.call("GET", PARENT + "/customJobs", query={"pageSize": 1000})
        self.assertEqual((st, len(r["customJobs"])), (200, 2))
        self.assertIn("nextPageToken", r)
        self.assertEqual(self.fake.ctl("/paging", {"max_page_size": 0}), {"max_page_size": 0})
        st, e = self.fake.call("GET", PARENT + "/customJobs", query={"pageToken": "garbage"})
        self.assertEqual(st, 400)
        st, e = self.fake.call("GET", PARENT + "/customJobs", query={"readMask": "nope"})
        self.assertEqual(st, 400)
        st, r = self.fake.call("GET", PARENT + "/customJobs", query={"readMask": "jobSpec.workerPoolSpecs.machineSpec"})
        self.assertEqual(r["customJobs"][0], {"jobSpec": {"workerPoolSpecs": [
            {"machineSpec": {"machineType": "a3-highgpu-8g", "acceleratorType": "NVIDIA_H100_80GB",
                             "acceleratorCount": 8}}]}})
        st, r = self.fake.call("GET", "/v1/projects/other/locations/us-central1/customJobs")
        self.assertEqual((st, r), (200, {}))

    def test_cancel_and_delete(self):
        j = self.create()
        self.advance(40)
        st, r = self.fake.call("POST", "/v1/" + j["name"] + ":cancel", {})
        self.assertEqual((st, r), (200, {}))
        self.assertEqual(self.get_job(j["name"])["state"], "JOB_STATE_CANCELLING")
        st, e = self.fake.call("DELETE", "/v1/" + j["name"])
        self.assertEqual((st, e["error"]["status"]), (400, "FAILED_PRECONDITION"))
        self.advance(5)
        g = self.get_job(j["name"])
        self.assertEqual(g["state"], "JOB_STATE_CANCELLED")
        self.assertEqual(g["error"]["code"], 1)
        st, e = self.fake.call("POST", "/v1/" + j["name"] + ":cancel", {})
        self.assertEqual((st, e["error"]["status"]), (400, "FAILED_PRECONDITION"))
        self.fake.ctl("/timings", {"operation_polls": 1})
        st, op = self.fake.call("DELETE", "/v1/" + j["name"])
        self.assertEqual(st, 200)
        self.assertFalse(op["done"])
        self.assertRegex(op["name"], r"^projects/\d+/locations/us-central1/operations/\d+$")
        self.assertEqual(op["metadata"]["@type"],
                         "type.googleapis.com/google.cloud.aiplatform.v1.DeleteOperationMetadata")
        st, _ = self.fake.call("GET", "/v1/" + j["name"])
        self.assertEqual(st, 404)
        st, o1 = self.fake.call("GET", "/v1/" + op["name"])
        self.assertFalse(o1["done"])
        st, o2 = self.fake.call("GET", "/v1/" + op["name"])
        self.assertTrue(o2["done"])
        self.assertEqual(o2["response"], {"@type": "type.googleapis.com/google.protobuf.Empty"})
        st, o3 = self.fake.call("POST", "/v1/" + op["name"] + ":wait", {})
        self.assertTrue(o3["done"])
        st, ops = self.fake.call("GET", PARENT + "/operations")
        self.assertEqual(len(ops["operations"]), 1)

    def test_operations_ui_binding(self):
        # Google's Node client (aiplatform 6.11.0 / google-gax 5.0.8, REST) polls a delete LRO with
        # GET /ui/{name=projects/*/locations/*/operations/*}: the first-listed binding of GetOperation.
        j = self.create()
        self.fake.call("POST", "/v1/" + j["name"] + ":cancel", {})
        self.advance(60)
        self.fake.ctl("/timings", {"operation_polls": 1})
        self.fake.ctl("/requests/reset", {})
        st, op = self.fake.call("DELETE", "/v1/" + j["name"])
        self.assertEqual(st, 200)
        st, o1 = self.fake.call("GET", "/ui/" + op["name"])
        self.assertEqual((st, o1["name"], o1["done"]), (200, op["name"], False))
        st, o2 = self.fake.call("GET", "/ui/" + op["name"] + "?")
        self.assertEqual((st, o2["done"]), (200, True))
        self.assertEqual(o2["response"], {"@type": "type.googleapis.com/google.protobuf.Empty"})
        st, o3 = self.fake.call("POST", "/ui/" + op["name"] + ":wait", {})
        self.assertEqual((st, o3["done"]), (200, True))
        loc = op["name"].rsplit("/operations/", 1)[0]
        st, ops = self.fake.call("GET", "/ui/" + loc + "/operations")
        self.assertEqual((st, [o["name"] for o in ops["operations"]]), (200, [op["name"]]))
        self.assertEqual(self.fake.ctl("/requests", method="GET")["by_rpc"].get("GetOperation"), 2)
        # JobService itself has no /ui/ binding.
        st, e = self.fake.call("GET", "/ui/projects/my-proj/locations/us-central1/customJobs")
        self.assertEqual((st, e["error"]["status"]), (404, "NOT_FOUND"))

    def test_outcomes(self):
        expect = {"succeed": ("JOB_STATE_SUCCEEDED", None), "stockout": ("JOB_STATE_FAILED", 8),
                  "preempted": ("JOB_STATE_FAILED", 8), "user-error": ("JOB_STATE_FAILED", 3),
                  "internal": ("JOB_STATE_FAILED", 13), "wait-timeout": ("JOB_STATE_FAILED", None)}
        jobs = {}
        for o in expect:
            if o in ("stockout", "wait-timeout"):
                self.fake.ctl("/outcomes", {"labels": {"o": o}, "outcome": o})
                jobs[o] = self.create(labels={"o": o}, strategy="FLEX_START" if o == "wait-timeout" else None,
                                      maxWaitDuration="600s")
            else:
                jobs[o] = self.create(labels={"o": o})
                self.fake.ctl("/outcomes", {"name": jobs[o]["name"], "outcome": o})
        self.advance(35)
        self.assertEqual(self.get_job(jobs["stockout"]["name"])["state"], "JOB_STATE_FAILED")
        self.assertEqual(self.get_job(jobs["stockout"]["name"])["error"]["message"],
                         "Resources are insufficient in region: us-central1. Try a different region or use a "
                         "different accelerator.")
        self.assertEqual(self.get_job(jobs["wait-timeout"]["name"])["state"], "JOB_STATE_PENDING")
        self.advance(3600)
        for o, (state, code) in expect.items():
            g = self.get_job(jobs[o]["name"])
            self.assertEqual(g["state"], state, o)
            self.assertEqual(g.get("error", {}).get("code"), code, o)
        # Google's words: a Spot preemption is a STOCKOUT after a start; a flex-start wait that
        # ran out ends without ever starting and without an error text.
        p = self.get_job(jobs["preempted"]["name"])
        self.assertIn("startTime", p)
        self.assertTrue(p["error"]["message"].startswith("Resources are insufficient in region: us-central1."))
        w = self.get_job(jobs["wait-timeout"]["name"])
        self.assertNotIn("startTime", w)
        self.assertNotIn("error", w)
        # a rule with times applies to that many future jobs only
        self.fake.ctl("/outcomes", {"labels": {}, "outcome": "stockout", "times": 1})
        j1, j2 = self.create(), self.create()
        self.advance(35)
        self.assertEqual(self.get_job(j1["name"])["state"], "JOB_STATE_FAILED")
        self.assertEqual(self.get_job(j2["name"])["state"], "JOB_STATE_RUNNING")
        r = self.fake.ctl("/jobs")
        self.assertEqual(len(r["customJobs"]), 8)

    def test_a_rule_holds_a_job_queued_then_lets_it_start(self):
        # queued_seconds: QUEUED that long (virtual seconds), then PENDING 30 s, then RUNNING.
        self.fake.ctl("/outcomes", {"labels": {"hold": "yes"}, "outcome": "succeed", "queued_seconds": 7200})
        held, plain = self.create(labels={"hold": "yes"}), self.create()
        self.advance(7199)
        g = self.get_job(held["name"])
        self.assertEqual((g["state"], "startTime" in g), ("JOB_STATE_QUEUED", False))
        self.assertEqual(self.get_job(plain["name"])["state"], "JOB_STATE_SUCCEEDED")   # no rule: 5 s queued
        self.advance(1)
        self.assertEqual(self.get_job(held["name"])["state"], "JOB_STATE_PENDING")
        self.advance(30)
        g = self.get_job(held["name"])
        self.assertEqual((g["state"], g["startTime"]), ("JOB_STATE_RUNNING", "2026-01-01T02:00:30.000000Z"))
        # A held job can be cancelled like any other: CANCELLING, then CANCELLED, never started.
        self.fake.ctl("/outcomes", {"labels": {"hold": "again"}, "outcome": "succeed", "queued_seconds": 600})
        again = self.create(labels={"hold": "again"})
        st, _ = self.fake.call("POST", "/v1/" + again["name"] + ":cancel", {})
        self.assertEqual(st, 200)
        self.advance(5)
        g = self.get_job(again["name"])
        self.assertEqual((g["state"], "startTime" in g), ("JOB_STATE_CANCELLED", False))
        for bad in (-1, "1h", True):
            st, _ = self.fake.call("POST", "/_fake/outcomes", {"labels": {}, "outcome": "succeed",
                                                                "queued_seconds": bad}, token=None)
            self.assertEqual(st, 400, bad)

    def test_a_rule_can_make_the_list_stale(self):
        # list_stale: the list keeps the job as created (QUEUED) while a GET shows it running.
        self.fake.ctl("/outcomes", {"labels": {"s": "1"}, "outcome": "succeed", "list_stale": True})
        j = self.create(labels={"s": "1"})
        self.advance(35)
        self.assertEqual(self.get_job(j["name"])["state"], "JOB_STATE_RUNNING")
        st, page = self.fake.call("GET", PARENT + "/customJobs")
        self.assertEqual(st, 200)
        listed = [x for x in page["customJobs"] if x["name"] == j["name"]]
        self.assertEqual([(x["state"], "startTime" in x) for x in listed], [("JOB_STATE_QUEUED", False)])

    def test_capacity_stockout_and_flex_wait(self):
        self.fake.ctl("/capacity", {"region": "us-central1", "accelerator_type": "NVIDIA_H100_80GB", "gpus": 8})
        a = self.create()
        b = self.create()
        c = self.create(strategy="FLEX_START", maxWaitDuration="7200s")
        d = self.create(strategy="FLEX_START", maxWaitDuration="60s")
        self.advance(35)
        self.assertEqual(self.get_job(a["name"])["state"], "JOB_STATE_RUNNING")
        eb = self.get_job(b["name"])
        self.assertEqual(eb["state"], "JOB_STATE_FAILED")
        self.assertEqual(eb["error"]["code"], 8)
        self.assertIn("Resources are insufficient in region: us-central1", eb["error"]["message"])
        self.assertEqual(self.get_job(c["name"])["state"], "JOB_STATE_PENDING")
        self.advance(60)
        self.assertEqual(self.get_job(d["name"])["state"], "JOB_STATE_FAILED")
        self.advance(3600)  # a finishes, c starts
        self.assertEqual(self.get_job(a["name"])["state"], "JOB_STATE_SUCCEEDED")
        self.assertEqual(self.get_job(c["name"])["state"], "JOB_STATE_RUNNING")

    def test_quota_refusal(self):
        self.fake.ctl("/quota", {"region": "us-central1", "accelerator_type": "NVIDIA_H100_80GB", "limit": 16})
        self.create()
        self.create()
        st, e = self.fake.call("POST", PARENT + "/customJobs", self.job_body())
        self.assertEqual(st, 429)
        err = e["error"]
        self.assertEqual(err["status"], "RESOURCE_EXHAUSTED")
        qf = [d for d in err["details"] if d["@type"].endswith("google.rpc.QuotaFailure")][0]
        self.assertEqual(qf["violations"][0]["quotaMetric"],
                         "aiplatform.googleapis.com/custom_model_training_nvidia_h100_gpus")
        self.assertEqual(qf["violations"][0]["quotaId"], "CustomModelTrainingH100GPUsPerProjectPerRegion")
        # SPOT draws on the preemptible quota, which is still free
        st, j = self.fake.call("POST", PARENT + "/customJobs", self.job_body(strategy="SPOT"))
        self.assertEqual(st, 200)
        self.fake.ctl("/quota", {"region": "us-central1", "accelerator_type": "NVIDIA_H100_80GB",
                                 "preemptible": True, "limit": 8})
        st, e = self.fake.call("POST", PARENT + "/customJobs", self.job_body(strategy="FLEX_START"))
        self.assertEqual(st, 429)
        self.assertIn("custom_model_training_preemptible_nvidia_h100_gpus", e["error"]["message"])

    def test_rate_limits(self):
        self.fake.ctl("/rate-limits", {"vertex_creates_per_minute": 2, "vertex_requests_per_minute": 5})
        self.create()
        self.create()
        st, e = self.fake.call("POST", PARENT + "/customJobs", self.job_body())
        self.assertEqual((st, e["error"]["status"]), (429, "RESOURCE_EXHAUSTED"))
        self.assertEqual(e["error"]["details"][0]["reason"], "RATE_LIMIT_EXCEEDED")
        self.fake.call("GET", PARENT + "/customJobs")
        self.fake.call("GET", PARENT + "/customJobs")
        st, e = self.fake.call("GET", PARENT + "/customJobs")
        self.assertEqual(st, 429)
        # other regions have their own budget
        st, _ = self.fake.call("GET", "/v1/projects/my-proj/locations/us-east1/customJobs")
        self.assertEqual(st, 200)
        self.fake.ctl("/rate-limits", {"clock": "virtual"})
        self.create()
        self.create()
        st, _ = self.fake.call("POST", PARENT + "/customJobs", self.job_body())
        self.assertEqual(st, 429)
        self.advance(61)
        st, _ = self.fake.call("POST", PARENT + "/customJobs", self.job_body())
        self.assertEqual(st, 200)

    def test_auth_required(self):
        st, e = self.fake.call("GET", PARENT + "/customJobs", token="unknown")
        self.assertEqual(st, 401)
        self.assertEqual(e["error"]["status"], "UNAUTHENTICATED")
        self.assertEqual(e["error"]["details"][0]["reason"], "ACCESS_TOKEN_TYPE_UNSUPPORTED")
        # No race with the wall clock (a 0.2 s token used to expire before its first call on
        # a loaded machine): one token with an hour left, one whose time is already up.
        self.fake.ctl("/tokens", {"token": "hour", "expires_in": 3600})
        st, _ = self.fake.call("GET", PARENT + "/customJobs", token="hour")
        self.assertEqual(st, 200)
        self.fake.ctl("/tokens", {"token": "spent", "expires_in": 0})
        st, e = self.fake.call("GET", PARENT + "/customJobs", token="spent")
        self.assertEqual((st, e["error"]["details"][0]["reason"]), (401, "ACCESS_TOKEN_EXPIRED"))

    def test_ten_thousand_jobs_list_in_pages(self):
        # How fast is make bench's business (its "lists" column), not a timed test's.
        self.fake.ctl("/rate-limits", {"enabled": False})
        body = self.job_body(accel=None)
        conn = self.fake.connect()
        import json
        data = json.dumps(body).encode()
        for i in range(10000):
            conn.request("POST", PARENT + "/customJobs", body=data,
                         headers={"Authorization": "Bearer T", "Content-Type": "application/json"})
            r = conn.getresponse()
            r.read()
            self.assertEqual(r.status, 200)
        conn.close()
        tok, n, pages = None, 0, 0
        while True:
            q = {"pageSize": 1000}
            if tok:
                q["pageToken"] = tok
            st, r = self.fake.call("GET", PARENT + "/customJobs", query=q)
            n += len(r["customJobs"])
            pages += 1
            tok = r.get("nextPageToken")
            if not tok:
                break
        self.assertEqual((n, pages), (10000, 10))
        st, r = self.fake.call("GET", PARENT + "/customJobs", query={"pageSize": 5000})
        self.assertEqual(len(r["customJobs"]), 1000)  # max page size


if __name__ == "__main__":
    unittest.main()
