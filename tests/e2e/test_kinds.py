"""Issue 9: reservations and quota preferences through plan and apply.

Each test asserts what the fake holds (/_fake/reservations,
/_fake/quota-preferences, /_fake/jobs), the calls vx made (/_fake/requests)
and the state branch, not only vx's output.
"""
import json
import os
import re
import signal
import subprocess
import time

from harness import PROJECT, REGION, VX_BIN, FakeTestCase, job_yaml

ZONE = REGION + "-a"
RUNNING_AFTER = 60


def reservation_yaml(name="pool", count=2, machine="g2-standard-8", accel="nvidia-l4", accel_count=1,
                     zone=ZONE, extra=""):
    return ("---\nkind: Reservation\nname: %s\nzone: %s\nmachineType: %s\n"
            "accelerators: [{type: %s, count: %d}]\ncount: %d\n%s"
            % (name, zone, machine, accel, accel_count, count, extra))


def quota_yaml(name="l4-training", value=16, extra=""):
    return ("---\nkind: QuotaPreference\nname: %s\nservice: aiplatform.googleapis.com\n"
            "quotaId: CustomModelTrainingL4GPUsPerProjectPerRegion\ndimensions: {region: %s}\n"
            "preferredValue: %d\ncontactEmail: ml-infra@example.com\n%s" % (name, REGION, value, extra))


def job_on(name, reservation, machine="g2-standard-8"):
    """A job of one g2 VM with one L4 on the declared reservation."""
    return job_yaml(name, machine=machine).replace(
        "acceleratorCount: 1}",
        "acceleratorCount: 1, reservationAffinity: {reservation: %s}}" % reservation)


class Kinds(FakeTestCase):

    def setUp(self):
        super().setUp()
        # a granted L4 quota of 8, so that 16 and 32 are increases (the fake starts at 1000)
        self.fake.post("/_fake/quota", {"region": REGION, "accelerator_type": "NVIDIA_L4",
                                        "preemptible": False, "limit": 8})

    def reservations(self):
        self.fake.jobs()   # the fake applies job transitions (and so inUseCount) on a jobs read
        got = self.fake.get("/_fake/reservations")
        items = got.get("reservations", got) if isinstance(got, dict) else got
        return {r["name"]: r for r in items}

    def quotas(self):
        got = self.fake.get("/_fake/quota-preferences")
        items = got.get("quotaPreferences", got) if isinstance(got, dict) else got
        return {q["name"].rsplit("/", 1)[1]: q for q in items}

    def rpcs(self, *names):
        """The order of the mutating calls vx made, by RPC name."""
        log = self.fake.get("/_fake/requests?log=1000")["log"]
        return [e["rpc"] for e in log if e["rpc"] in names]

    def state(self, path):
        return json.loads(self.repo.git("show", "vx/state/e2e:" + path))

    def has(self, path):
        return path in self.repo.git("ls-tree", "-r", "--name-only", "vx/state/e2e").split()

    def log(self, address):
        """vx log ADDR, with the commit times (the real clock) shown as <time>."""
        r = self.repo.vx("log", address, self.repo.dir)
        self.assertEqual((r.code, r.err), (0, ""), r)
        return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "<time>", r.out)

    def head(self):
        return self.repo.git("rev-parse", "HEAD").strip()[:12]

    def write(self, docs):
        """docs: the YAML after the Stack document, as one string per address."""
        self.repo.jobs = docs
        self.repo.write()

    def plan_lines(self, *args, **kw):
        r = self.repo.plan(*args, **kw)
        action = re.compile(r"^  \S+ +(job|reservation|quota)\.[^ ]+ [a-z]+$")
        return r, [l for l in r.out.splitlines() if action.match(l)]

    def test_quota_then_reservation_then_job_in_one_apply(self):
        self.write({"q": quota_yaml(), "r": reservation_yaml(), "j": job_on("train", "pool")})
        r, lines = self.plan_lines("-detailed-exitcode")
        self.assertEqual(r.code, 2, r)
        self.assertEqual(lines, ["  +   job.train create", "  +   quota.l4-training create",
                                 "  +   reservation.pool create"], r)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.rpcs("CreateQuotaPreference", "Reservations.Insert", "CreateCustomJob"),
                         ["CreateQuotaPreference", "Reservations.Insert", "CreateCustomJob"])
        res = self.reservations()["pool"]
        self.assertEqual(res["specificReservation"]["count"], "2")
        self.assertEqual(res["reservationSharingPolicy"]["serviceShareType"], "ALLOW_ALL")
        self.assertEqual(self.quotas()["l4-training"]["quotaConfig"]["preferredValue"], "16")
        self.assertEqual(len(self.active("train")), 1)
        self.assertEqual(self.state("reservations/pool.json")["current"]["value"], 2)
        self.assertEqual(self.state("quotas/l4-training.json")["current"]["value"], 16)
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        # vx log, for each kind
        who = self.state("reservations/pool.json")["current"]["launchedBy"]
        self.assertEqual(self.log("reservation.pool"),
                         "reservation.pool\n"
                         "  <time>  create    projects/%s/zones/%s/reservations/pool  count 2  by %s  "
                         "config %s  READY\n" % (PROJECT, ZONE, who, self.head()))
        name = self.quotas()["l4-training"]["name"]
        self.assertEqual(self.log("quota.l4-training"),
                         "quota.l4-training\n"
                         "  <time>  create    %s  preferredValue 16  by %s  config %s  "
                         "ACTIVE: The quota preference was approved.\n" % (name, who, self.head()))

    def test_resize_in_place_and_drift(self):
        self.write({"r": reservation_yaml(count=2)})
        self.assertEqual(self.repo.apply().code, 0)
        self.write({"r": reservation_yaml(count=3)})
        r, lines = self.plan_lines()
        self.assertEqual(lines, ["  ~   reservation.pool update"], r)
        self.assertIn("        resize in place: count 2 -> 3", r.out.splitlines())
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.rpcs("Reservations.Insert", "Reservations.Resize", "Reservations.Delete"),
                         ["Reservations.Insert", "Reservations.Resize"])
        # A reservation's zone is no Vertex region: a stack without jobs lists no jobs.
        self.assertEqual(self.fake.rpc_count("ListCustomJobs"), 0)
        self.assertEqual(self.reservations()["pool"]["specificReservation"]["count"], "3")
        self.assertEqual(self.state("reservations/pool.json")["current"]["action"], "resize")
        # someone resizes it behind vx's back: drift, and back to the declared count
        self.fake.post("/_fake/tokens", {"token": "outsider"})
        import urllib.request
        req = urllib.request.Request(
            "%s/compute/v1/projects/%s/zones/%s/reservations/pool/resize"
            % (self.fake.url, PROJECT, ZONE), data=b'{"specificSkuCount": "5"}', method="POST",
            headers={"Authorization": "Bearer outsider", "Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=30).read()
        r = self.repo.plan()
        self.assertIn("  ! reservation.pool: count changed outside vx: 3 recorded, 5 live -> update",
                      r.out.splitlines(), r)
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.reservations()["pool"]["specificReservation"]["count"], "3")

    def test_immutable_change_refused_then_replaced(self):
        self.write({"r": reservation_yaml()})
        self.assertEqual(self.repo.apply().code, 0)
        self.write({"r": reservation_yaml(machine="g2-standard-12")})
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertIn("  reservation.pool: machineType g2-standard-8 -> g2-standard-12 cannot change in "
                      "place: Compute would have to delete the reservation and make a new one, and the "
                      "capacity it holds might not come back; to do that anyway, plan with -replace "
                      "reservation.pool", r.out.splitlines())
        self.assertEqual(self.repo.apply().code, 1)
        self.assertEqual(self.rpcs("Reservations.Delete"), [])
        r = self.repo.apply("-replace", "reservation.pool")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.rpcs("Reservations.Insert", "Reservations.Delete"),
                         ["Reservations.Insert", "Reservations.Delete", "Reservations.Insert"])
        self.assertEqual(self.reservations()["pool"]["specificReservation"]["instanceProperties"]
                         ["machineType"], "g2-standard-12")

    def test_remove_reservation_with_its_running_job(self):
        self.write({"r": reservation_yaml(), "j": job_on("train", "pool")})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(RUNNING_AFTER)
        self.assertEqual(self.reservations()["pool"]["specificReservation"]["inUseCount"], "1")
        self.write({})
        r, lines = self.plan_lines()
        self.assertEqual(lines, ["  -   job.train cancel", "  -   reservation.pool delete"], r)
        self.assertIn("        no longer declared; deleted once the jobs on it have ended (job.train)",
                      r.out.splitlines())
        r = self.repo.apply(env={"VX_RESERVATION_WAIT_SECONDS": "0"})
        self.assertEqual(r.code, 1, r)
        self.assertIn("vx: failed: reservation.pool: delete: its VMs are still in use after the jobs on it "
                      "were cancelled; left for the next apply", r.err.splitlines())
        self.assertIn("pool", self.reservations(), "not deleted while its VM is in use")
        self.fake.advance(10)   # the cancel completes; the VM is freed
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertNotIn("pool", self.reservations())
        self.assertEqual(self.rpcs("CancelCustomJob", "Reservations.Delete"),
                         ["CancelCustomJob", "Reservations.Delete"])
        self.assertFalse(self.has("reservations/pool.json"))

    def test_delete_refused_while_used_outside_the_stack(self):
        self.write({"r": reservation_yaml()})
        self.assertEqual(self.repo.apply().code, 0)
        # a job made outside vx runs on the reservation
        self.fake.post("/_fake/tokens", {"token": "outsider"})
        import urllib.request
        body = {"displayName": "outsider", "jobSpec": {"workerPoolSpecs": [{
            "machineSpec": {"machineType": "g2-standard-8", "acceleratorType": "NVIDIA_L4",
                            "acceleratorCount": 1, "reservationAffinity": {
                                "reservationAffinityType": "SPECIFIC_RESERVATION",
                                "key": "compute.googleapis.com/reservation-name",
                                "values": ["projects/%s/zones/%s/reservations/pool" % (PROJECT, ZONE)]}},
            "replicaCount": "1", "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/x:1"}}]}}
        req = urllib.request.Request(
            "%s/v1/projects/%s/locations/%s/customJobs" % (self.fake.url, PROJECT, REGION),
            data=json.dumps(body).encode(), method="POST",
            headers={"Authorization": "Bearer outsider", "Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=30).read()
        self.fake.advance(RUNNING_AFTER)
        self.assertEqual(self.reservations()["pool"]["specificReservation"]["inUseCount"], "1")
        self.write({})
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(self.section(r.out, "Errors (the plan cannot be applied):"), [
            "  reservation.pool is no longer declared but 1 of its 2 VMs are in use, and no cancel in "
            "this plan frees them (a job of another stack, or one made outside vx); it is not deleted"])
        r = self.repo.apply()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(self.rpcs("Reservations.Delete"), [])
        self.assertIn("pool", self.reservations())

    @staticmethod
    def section(out, title):
        lines = out.splitlines()
        start = lines.index(title) + 1
        end = start
        while end < len(lines) and lines[end]:
            end += 1
        return lines[start:end]

    def test_summary_counts_deletes_and_abandons(self):
        """A plan that deletes a reservation and abandons a preference says so in its summary line
        (it said "Plan: no changes." while exiting 2 with both planned)."""
        self.write({"r": reservation_yaml(), "q": quota_yaml()})
        self.assertEqual(self.repo.apply().code, 0)
        self.write({})
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 2, r)
        self.assertEqual([l for l in r.out.splitlines() if l.startswith("Plan:")],
                         ["Plan: 1 to delete, 1 to abandon. 0 unchanged."], r)

    def test_quota_update_pending_and_abandon(self):
        self.write({"q": quota_yaml(value=16)})
        c1 = self.head()
        self.assertEqual(self.repo.apply().code, 0)
        who = self.state("quotas/l4-training.json")["current"]["launchedBy"]
        self.fake.post("/_fake/quota-grants", {"mode": "partial", "fraction": 0.5})
        self.write({"q": quota_yaml(value=32)})
        c2 = self.head()
        r, lines = self.plan_lines()
        self.assertEqual(lines, ["  ~   quota.l4-training update"], r)
        self.assertIn("        preferredValue 16 -> 32", r.out.splitlines())
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.rpcs("CreateQuotaPreference", "UpdateQuotaPreference"),
                         ["CreateQuotaPreference", "UpdateQuotaPreference"])
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        self.assertIn("      quota.l4-training: 16 granted, 32 requested, not granted in full: The request "
                      "was partially approved: 16 of the requested 32 was granted.", r.out.splitlines())
        # A stack without jobs lists no jobs: a quota preference's "global" is no Vertex region.
        self.assertIn("Refresh: live jobs read in 0 regions", r.out.splitlines())
        self.assertEqual(self.fake.rpc_count("ListCustomJobs"), 0)
        # a decrease of more than 10% needs ignoreSafetyChecks
        self.write({"q": quota_yaml(value=8)})
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(self.section(r.out, "Errors (the plan cannot be applied):"), [
            "  quota.l4-training: preferredValue 8 is more than 10% below the 16 in force (granted; 32 "
            "requested), which Cloud Quotas refuses unless asked: set ignoreSafetyChecks: true in the "
            "declaration if that decrease is meant, and remove it once applied"], r.out)
        self.write({})
        c3 = self.head()
        r, lines = self.plan_lines()
        self.assertEqual(lines, ["  -   quota.l4-training abandon"], r)
        self.assertEqual(self.repo.apply().code, 0)
        self.assertIn("l4-training", self.quotas(), "Cloud Quotas has no delete: it stays")
        self.assertFalse(self.has("quotas/l4-training.json"))
        name = self.quotas()["l4-training"]["name"]
        partial = "ACTIVE: The request was partially approved: 16 of the requested 32 was granted."
        self.assertEqual(self.log("quota.l4-training"),
                         "quota.l4-training  (forgotten: no longer declared)\n"
                         "  <time>  create    %s  preferredValue 16  by %s  config %s  "
                         "ACTIVE: The quota preference was approved.\n"
                         "  <time>  update    %s  preferredValue 32  by %s  config %s  %s\n"
                         "  <time>  abandon   %s  preferredValue 32  by %s  config %s  %s\n"
                         "  <time>  forget\n"
                         % (name, who, c1, name, who, c2, partial, name, who, c3, partial))

    def test_kill_during_reservation_create(self):
        self.write({"r": reservation_yaml()})
        # slow every Compute insert so the kill lands while it is on the wire
        self.fake.post("/_fake/faults", {"latency_ms": 3000, "methods": ["Reservations.Insert"]})
        p = subprocess.Popen([VX_BIN, "apply", self.repo.dir, "-auto-approve"], cwd=self.repo.root,
                             env=self.fake.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL)
        deadline = time.time() + 60
        while self.rpcs("Reservations.Insert") == [] and time.time() < deadline:
            time.sleep(0.05)
        self.assertEqual(self.rpcs("Reservations.Insert"), ["Reservations.Insert"])
        p.send_signal(signal.SIGKILL)
        p.communicate(timeout=30)
        self.fake.post("/_fake/faults", {})
        # the killed apply's lease is taken over because its pid is gone on this host (no
        # short lease: a 2 s lease of this apply expired under ASan on a loaded machine)
        r = self.repo.apply("-lock-timeout", "60s")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(list(self.reservations()), ["pool"])
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)


if __name__ == "__main__":
    import unittest
    unittest.main()


class ReservedExample(FakeTestCase):
    """examples/reserved, as shipped, applies cleanly against the fake."""

    def test_example_applies(self):
        import glob
        import shutil
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        for f in glob.glob(os.path.join(root, "examples", "reserved", "*.yaml")):
            with open(f) as src, open(os.path.join(self.repo.dir, os.path.basename(f)), "w") as dst:
                dst.write(src.read().replace("project: my-project", "project: " + PROJECT))
        self.repo.git("add", "-A")
        self.repo.git("commit", "-q", "-m", "the reserved example")
        # A project whose H100 training quota is 8 (16 is then an increase, as the example means).
        self.fake.post("/_fake/quota", {"region": REGION, "accelerator_type": "NVIDIA_H100_80GB",
                                        "preemptible": False, "limit": 8})
        r = self.repo.vx("apply", self.repo.dir, "-auto-approve")
        self.assertEqual(r.code, 0, r)
        done = [l.split()[:3] for l in r.out.splitlines() if l[:2] in ("+ ", "~ ", "- ")]
        self.assertEqual(done, [["+", "quota.h100-training", "create"],
                                ["+", "reservation.h100-pool", "create"],
                                ["+", "job.pretrain", "create"]], r)
        self.assertEqual(len(self.fake.get("/_fake/reservations")["reservations"]), 1)
        pretrain = [j for j in self.fake.jobs() if j["labels"].get("vx-job") == "pretrain"]
        self.assertEqual(len(pretrain), 1)
        self.fake.advance(60)
        self.assertEqual(self.fake.jobs()[0]["state"], "JOB_STATE_RUNNING", "it runs on the reservation")
        r = self.repo.vx("plan", self.repo.dir, "-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        # the state is on its branch of this repository (the example names no remote: a new
        # user's repository, or the sandbox's, has none)
        self.assertIn("vx/state/reserved", self.repo.git("branch", "--list", "vx/state/*"))
