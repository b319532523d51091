"""vx status: what runs now, without planning or writing anything.

Two jobs applied and moved on by the fake's virtual clock (one running, one
failed for good), a third declared and never applied, and a job of this
stack's name from another state: the table and the JSON compared whole, with
vx's "now" fixed to the fake's clock (VX_NOW); one list per region, no GET,
and the state branch where it was.
"""
import json
import urllib.request

from harness import PROJECT, REGION, FakeTestCase, job_yaml

T0 = "2026-01-01T00:00:00Z"


class Status(FakeTestCase):
    maxDiff = None

    def setUp(self):
        super().setUp()
        # b fails with a user error after 600 s of running; a runs for an hour.
        self.fake.post("/_fake/timings", {"running_seconds": 600})
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "b"}, "outcome": "user-error"})
        self.repo.write({"b": job_yaml("b")})
        self.assertEqual(self.repo.apply().code, 0)                   # b created at T0
        self.fake.advance(100)                                          # b RUNNING since T0+35
        self.assertEqual([j["state"] for j in self.live_jobs("b")], ["JOB_STATE_RUNNING"])
        self.fake.post("/_fake/timings", {"running_seconds": 3600})
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")})
        r = self.repo.apply()                                           # a created at T0+100
        self.assertEqual(r.code, 0, r)
        lineage = self.live_jobs("a")[0]["labels"]["vx-lineage"]
        # Made behind vx's back at T0+100: one with this state's identity
        # (an apply that died before recording it), one with another's.
        self.d = self.outside("d", lineage)
        self.e = self.outside("e", "0123456789ab")
        self.fake.advance(900)                                          # now T0+1000
        self.now = self.fake.get("/_fake/clock")["now"]
        self.assertEqual(self.now, "2026-01-01T00:16:40.000000Z")
        # c is declared, never applied.
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b"), "c": job_yaml("c")})

    def outside(self, job, lineage):
        self.fake.post("/_fake/tokens", {"token": "outsider-token"})
        body = {"displayName": job, "labels": {"vx-stack": "e2e", "vx-job": job, "vx-lineage": lineage},
                "jobSpec": {"workerPoolSpecs": [{"machineSpec": {"machineType": "n1-standard-4"},
                                                 "replicaCount": "1",
                                                 "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/x:1"}}]}}
        req = urllib.request.Request(
            self.fake.url + "/v1/projects/%s/locations/%s/customJobs" % (PROJECT, REGION),
            data=json.dumps(body).encode(), method="POST",
            headers={"Content-Type": "application/json", "Authorization": "Bearer outsider-token"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())["name"]

    def status(self, *args):
        return self.repo.vx("status", self.repo.dir, *args, env={"VX_NOW": self.now})

    def test_table_json_one_list_no_write(self):
        refs = self.repo.git("for-each-ref")
        tip = self.repo.git("rev-parse", "vx/state/e2e").strip()
        serial = json.loads(self.repo.git("show", "vx/state/e2e:stack.json"))["serial"]
        jobs = {j["labels"]["vx-job"]: j["name"] for j in self.live_jobs()}
        self.fake.post("/_fake/requests/reset", {})

        r = self.status()
        self.assertEqual((r.code, r.err), (0, ""), r)
        msg = ("The replica workerpool0-0 exited with a non-zero status of 1. To find out more about why "
               "your job exited please check the logs: https://console.cloud.google.com/logs/viewer?"
               "project=vx-e2e&resource=ml_\u2026")
        self.assertEqual(r.out, (
            "Stack e2e, project vx-e2e, state serial %d, as of 2026-01-01T00:16:40Z\n"
            "Jobs listed in us-central1\n"
            "\n"
            "ADDRESS  STATE        ATTEMPT  RUNG  REGION       QUEUED  RUNNING  COST SO FAR  NOTE\n"
            "job.a    RUNNING      1/3      0     us-central1  35s     14m25s   $0.17\n"
            "job.b    FAILED       1/3      0     us-central1  35s     10m00s   $0.12        gave up: user-error: %s\n"
            "job.c    not applied  -        -     us-central1  -       -        -\n"
            "job.d    RUNNING      -        -     us-central1  35s     14m25s   unknown      "
            "untracked (not in the state): %s\n"
            "job.e    RUNNING      -        -     us-central1  35s     14m25s   unknown      "
            "foreign (another state's job): %s\n") % (serial, msg, self.d, self.e))

        self.assertEqual(self.fake.requests()["by_rpc"], {"oauth2.token": 1, "ListCustomJobs": 1})
        self.fake.post("/_fake/requests/reset", {})

        r = self.status("-format", "json")
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertEqual(self.fake.requests()["by_rpc"], {"oauth2.token": 1, "ListCustomJobs": 1})
        self.assertEqual(self.repo.git("rev-parse", "vx/state/e2e").strip(), tip)

        def job(address, tracking, resource, created, started, ended, queued, running, cost,
                state="RUNNING", attempt=1, max_attempts=3, failure=None):
            return {"address": address, "kind": "job", "tracking": tracking,
                    "declared": tracking in ("tracked", "not applied"),
                    "listed": tracking != "not applied", "state": state, "resource": resource,
                    "region": "us-central1", "attempt": attempt, "max_attempts": max_attempts,
                    "rung": 0 if attempt else None, "create_time": created, "start_time": started,
                    "end_time": ended, "queued_seconds": queued, "running_seconds": running,
                    "cost_so_far": cost, "failure": failure}
        self.assertEqual(json.loads(r.out), {
            "format_version": 1, "stack": "e2e", "project": "vx-e2e", "state_serial": str(serial),
            "as_of": "2026-01-01T00:16:40Z", "currency": "USD", "regions": ["us-central1"],
            "addresses": [
                job("job.a", "tracked", jobs["a"], "2026-01-01T00:01:40Z", "2026-01-01T00:02:15Z", None,
                    35, 865, 0.17),
                job("job.b", "tracked", jobs["b"], "2026-01-01T00:00:00Z", "2026-01-01T00:00:35Z",
                    "2026-01-01T00:10:35Z", 35, 600, 0.12, state="FAILED",
                    failure={"class": "user-error", "message": msg, "resubmits": False, "gave_up": True}),
                job("job.c", "not applied", None, None, None, None, None, None, None, state=None,
                    attempt=None),
                job("job.d", "untracked", self.d, "2026-01-01T00:01:40Z", "2026-01-01T00:02:15Z", None,
                    35, 865, None, attempt=None, max_attempts=None),
                job("job.e", "foreign", self.e, "2026-01-01T00:01:40Z", "2026-01-01T00:02:15Z", None,
                    35, 865, None, attempt=None, max_attempts=None),
            ]})
        # No ref moved: no state write, no lease taken.
        self.assertEqual(self.repo.git("for-each-ref"), refs)

    def test_usage_errors(self):
        r = self.status("-format", "xml")
        self.assertEqual((r.code, r.out, r.err), (64, "", "vx: status: -format must be human or json\n"))
        r = self.repo.vx("status", "-C", self.repo.dir, env={"VX_NOW": "yesterday"})
        self.assertEqual((r.code, r.out, r.err), (64, "", "vx: status: VX_NOW must be an RFC 3339 time "
                                                  "such as 2026-01-01T00:00:00Z, not 'yesterday'\n"))
        r = self.repo.vx("status", "-C", self.repo.dir, "-format=json", env={"VX_NOW": self.now})
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertEqual([a["address"] for a in json.loads(r.out)["addresses"]],
                         ["job.a", "job.b", "job.c", "job.d", "job.e"])


class StatusBeforeApply(FakeTestCase):

    def test_never_applied(self):
        """A stack never applied: every job 'not applied', nothing listed twice, no ref made."""
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")})
        refs = self.repo.git("for-each-ref")
        r = self.repo.vx("status", self.repo.dir, env={"VX_NOW": T0})
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertEqual(r.out, (
            "Stack e2e, project vx-e2e, state serial 0, as of 2026-01-01T00:00:00Z\n"
            "Jobs listed in us-central1\n"
            "\n"
            "ADDRESS  STATE        ATTEMPT  RUNG  REGION       QUEUED  RUNNING  COST SO FAR  NOTE\n"
            "job.a    not applied  -        -     us-central1  -       -        -\n"
            "job.b    not applied  -        -     us-central1  -       -        -\n"))
        self.assertEqual(self.fake.requests()["by_rpc"], {"oauth2.token": 1, "ListCustomJobs": 1})
        self.assertEqual(self.repo.git("for-each-ref"), refs)
