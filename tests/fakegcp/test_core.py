import http.client
import json
import os
import threading
import time
import unittest

import common
from fakeutil import Fake, FakeTestCase, PARENT


class Core(FakeTestCase):
    def test_clock(self):
        c = self.fake.ctl("/clock")
        self.assertEqual(c["now"], "2026-01-01T00:00:00.000000Z")
        c = self.advance(90.5)
        self.assertEqual(c["now"], "2026-01-01T00:01:30.500000Z")
        c = self.fake.ctl("/clock", {"set_time": "2026-01-02T00:00:00Z"})
        self.assertEqual(c["now"], "2026-01-02T00:00:00.000000Z")
        st, e = self.fake.call("POST", "/_fake/clock", {"advance_seconds": -1}, token=None)
        self.assertEqual(st, 400)
        self.fake.ctl("/clock", {"speed": 1000})
        time.sleep(0.05)
        self.assertGreater(self.fake.ctl("/clock")["epoch_seconds"], 1767312000 + 40)

    def test_date_header_follows_the_virtual_clock(self):
        # As Google's Date follows Google's clock: a client compares it with its own.
        st, h, _ = self.fake.raw("GET", "/_fake/clock", None, {})
        self.assertEqual((st, h["date"]), (200, "Thu, 01 Jan 2026 00:00:00 GMT"))
        self.advance(86400 * 40 + 61.9)
        st, h, _ = self.fake.raw("GET", PARENT + "/customJobs", None, {"Authorization": "Bearer T"})
        self.assertEqual((st, h["date"]), (200, "Tue, 10 Feb 2026 00:01:01 GMT"))

    def test_request_counts(self):
        self.fake.ctl("/requests/reset", {})
        self.fake.call("GET", PARENT + "/customJobs")
        self.fake.call("GET", PARENT + "/customJobs")
        self.create()
        self.fake.call("GET", "/compute/v1/projects/p/zones/us-central1-a/reservations")
        r = self.fake.ctl("/requests")
        self.assertEqual(r["total"], 4)
        self.assertEqual(r["by_rpc"], {"ListCustomJobs": 2, "CreateCustomJob": 1, "Reservations.List": 1})
        self.assertEqual(r["log"][-1]["status"], 200)

    def test_unknown_path(self):
        st, e = self.fake.call("GET", "/v1/nothing/here")
        self.assertEqual(st, 404)
        st, e = self.fake.call("GET", "/_fake/nope", token=None)
        self.assertEqual(st, 404)

    def test_fault_error_rate_and_methods(self):
        self.fake.ctl("/faults", {"error_rate": 1.0, "statuses": [503], "methods": ["CreateCustomJob"]})
        st, e = self.fake.call("POST", PARENT + "/customJobs", self.job_body())
        self.assertEqual(st, 503)
        self.assertEqual(e["error"]["status"], "UNAVAILABLE")
        st, _ = self.fake.call("GET", PARENT + "/customJobs")
        self.assertEqual(st, 200)  # other methods untouched
        self.assertEqual(self.fake.ctl("/jobs")["customJobs"], [])
        self.fake.ctl("/faults", {"error_rate": 1.0, "statuses": [429]})
        st, e = self.fake.call("GET", "/compute/v1/projects/p/zones/us-central1-a/reservations")
        self.assertEqual(st, 429)
        self.assertEqual(e["error"]["errors"][0]["reason"], "rateLimitExceeded")
        self.fake.ctl("/faults", {})
        st, _ = self.fake.call("POST", PARENT + "/customJobs", self.job_body())
        self.assertEqual(st, 200)
        # times: only the next N matching requests fail
        self.fake.ctl("/faults", {"error_rate": 1.0, "statuses": [500], "times": 2})
        self.assertEqual([self.fake.call("GET", PARENT + "/customJobs")[0] for _ in range(3)], [500, 500, 200])

    def test_fault_latency(self):
        self.fake.ctl("/faults", {"latency_ms": 200, "jitter_ms": 50})
        t = time.time()
        self.fake.call("GET", PARENT + "/customJobs")
        took = time.time() - t
        self.assertGreaterEqual(took, 0.2)
        self.assertLess(took, 1.0)

    def test_fault_slow_ms_only_slows_the_rpcs_named(self):
        # seed 0: the first draw of U(0, 600) is 507 ms, far from the create's bound below
        self.fake.ctl("/faults", {"slow_ms": {"ListCustomJobs": 600}, "methods": ["GetCustomJob"],
                                  "seed": 0})
        t = time.time()
        self.fake.call("GET", PARENT + "/customJobs")
        self.assertGreaterEqual(time.time() - t, 0.5)
        t = time.time()
        self.fake.call("POST", PARENT + "/customJobs", self.job_body())
        self.assertLess(time.time() - t, 0.3)
        st, _ = self.fake.call("POST", "/_fake/faults", {"slow_ms": {"ListCustomJobs": -1}}, token=None)
        self.assertEqual(st, 400)

    def test_fault_reset(self):
        self.fake.ctl("/faults", {"reset_rate": 1.0, "methods": ["CreateCustomJob"]})
        with self.assertRaises((ConnectionError, http.client.HTTPException)):
            self.fake.call("POST", PARENT + "/customJobs", self.job_body())
        self.assertEqual(self.fake.ctl("/jobs")["customJobs"], [])
        self.assertEqual(self.fake.ctl("/requests")["by_rpc"]["CreateCustomJob"], 1)

    def test_fault_drop_after_processing(self):
        self.fake.ctl("/faults", {"drop_after_processing_rate": 1.0, "methods": ["CreateCustomJob"], "times": 1})
        with self.assertRaises((ConnectionError, http.client.HTTPException)):
            self.fake.call("POST", PARENT + "/customJobs", self.job_body())
        # the job was created although the reply was lost; a retry duplicates it
        self.assertEqual(len(self.fake.ctl("/jobs")["customJobs"]), 1)
        self.create()
        self.assertEqual(len(self.fake.ctl("/jobs")["customJobs"]), 2)

    def test_bad_fault_config(self):
        st, e = self.fake.call("POST", "/_fake/faults", {"bogus": 1}, token=None)
        self.assertEqual(st, 400)

    def test_keepalive_and_concurrency(self):
        conn = self.fake.connect()
        for _ in range(5):
            conn.request("GET", PARENT + "/customJobs", headers={"Authorization": "Bearer T"})
            r = conn.getresponse()
            r.read()
            self.assertEqual(r.status, 200)
            self.assertEqual(r.getheader("Connection"), None)
        conn.close()
        self.fake.ctl("/faults", {"latency_ms": 300})
        results = []

        def worker():
            c = self.fake.connect()
            c.request("GET", PARENT + "/customJobs", headers={"Authorization": "Bearer T"})
            results.append(c.getresponse().status)
            c.close()
        ts = [threading.Thread(target=worker) for _ in range(8)]
        t = time.time()
        for th in ts:
            th.start()
        for th in ts:
            th.join()
        self.assertEqual(results, [200] * 8)
        self.assertLess(time.time() - t, 2.0)  # served in parallel


class RealClock(unittest.TestCase):
    """Without --clock frozen the clock is this machine's: it starts at the real now, keeps pace
    with it, still moves forward when told, and goes back to the real now on reset."""

    @classmethod
    def setUpClass(cls):
        cls.fake = Fake(clock="real")

    @classmethod
    def tearDownClass(cls):
        cls.fake.stop()

    def real_now(self):
        before = time.time()
        c = self.fake.ctl("/clock")
        return before, c, time.time()

    def test_starts_at_the_machines_time_and_keeps_pace(self):
        self.fake.ctl("/reset", {})
        before, c, after = self.real_now()
        self.assertEqual(c["speed"], 1.0)
        self.assertGreaterEqual(c["epoch_seconds"], before - 0.001)
        self.assertLessEqual(c["epoch_seconds"], after + 0.001)
        self.assertEqual(c["now"][:10], time.strftime("%Y-%m-%d", time.gmtime(c["epoch_seconds"])))
        # a job created now is created now, to the second
        self.fake.ctl("/tokens", {"token": "T"})
        st, j = self.fake.call("POST", PARENT + "/customJobs", FakeTestCase.job_body(None))
        self.assertEqual(st, 200, j)
        self.assertLess(abs(common.parse_ts(j["createTime"]) - time.time()), 5)

    def test_advance_moves_it_ahead_and_reset_brings_it_back(self):
        self.fake.ctl("/reset", {})
        c = self.fake.ctl("/clock", {"advance_seconds": 3600})
        self.assertGreater(c["epoch_seconds"], time.time() + 3500)
        before, c, after = self.real_now()
        self.assertGreaterEqual(c["epoch_seconds"], before + 3600 - 0.001)
        self.assertLessEqual(c["epoch_seconds"], after + 3600 + 0.001)
        self.fake.ctl("/reset", {})
        before, c, after = self.real_now()
        self.assertLessEqual(c["epoch_seconds"], after + 0.001)
        self.assertEqual(c["speed"], 1.0)

    def test_a_saved_world_goes_on_from_the_real_now(self):
        import tempfile, shutil
        d = tempfile.mkdtemp(prefix="fakegcp-state-")
        self.addCleanup(shutil.rmtree, d, True)
        state = os.path.join(d, "state.json")
        with open(state, "w") as f:  # saved by a fake stopped a day ago
            json.dump({"clock": {"base": time.time() - 86400, "offset": 0.0, "speed": 1.0}}, f)
        f = Fake(state=state, clock="real")
        try:
            before = time.time()
            c = f.ctl("/clock")
            self.assertGreaterEqual(c["epoch_seconds"], before - 0.001)
            self.assertLessEqual(c["epoch_seconds"], time.time() + 0.001)
        finally:
            f.stop()


class FrozenClock(FakeTestCase):
    def test_tests_freeze_it_at_2026_01_01(self):
        c = self.fake.ctl("/clock")
        self.assertEqual((c["now"], c["speed"]), ("2026-01-01T00:00:00.000000Z", 0.0))
        self.assertEqual(self.fake.ctl("/clock")["now"], "2026-01-01T00:00:00.000000Z")


class State(unittest.TestCase):
    def test_state_survives_restart(self):
        import tempfile, shutil
        d = tempfile.mkdtemp(prefix="fakegcp-state-")
        self.addCleanup(shutil.rmtree, d, True)
        state = os.path.join(d, "state.json")
        f = Fake(state=state)
        try:
            f.ctl("/tokens", {"token": "T"})
            sa = f.ctl("/service-accounts", {"project": "my-proj"})
            st, j = f.call("POST", PARENT + "/customJobs", FakeTestCase.job_body(None))
            self.assertEqual(st, 200)
            f.ctl("/clock", {"advance_seconds": 10})
        finally:
            f.stop()
        f = Fake(state=state)
        try:
            st, g = f.call("GET", "/v1/" + j["name"])
            self.assertEqual(st, 200)
            self.assertEqual(g["state"], "JOB_STATE_PENDING")
            self.assertIn(sa["client_email"], f.ctl("/auth")["service_accounts"])
        finally:
            f.stop()


if __name__ == "__main__":
    unittest.main()
