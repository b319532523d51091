"""Jobs on a persistent resource in the plan (issue 34): a job waits while its resource cannot take it,
the plan says how many of each pool's replicas the stack's jobs use (and that the jobs past the pool's
most queue), a replace of a resource jobs run on is refused unless the plan cancels them first, and
`vx validate` refuses a job whose network or CMEK is not its resource's. Output compared exactly.
"""
import json
import re
import time
import urllib.request

from harness import PROJECT, REGION, FakeTestCase
from test_persistent import ADDR, job_on_pool, pool_yaml

NAME = "projects/%s/locations/%s/persistentResources/eval-pool" % (PROJECT, REGION)
SHAPE = "g2-standard-8 \u00d71, 1\u00d7L4, STANDARD"


class PersistentJobsTest(FakeTestCase):
    def setUp(self):
        super().setUp()
        # Jobs start on the pool at once and run until a test ends them.
        self.fake.post("/_fake/timings", {"provisioning_seconds": 0, "updating_seconds": 0,
                                          "stopping_seconds": 0, "running_seconds": 100000})

    def block(self, out, address="job.a"):
        """The plan's lines for address: its header (a wait has no symbol) and the indented ones under it."""
        lines = out.splitlines()
        for i, l in enumerate(lines):
            if re.match(r"^\s+(\S+\s+)?%s\s" % re.escape(address), l + " "):
                got = [l.strip()]
                for m in lines[i + 1:]:
                    if not m.startswith("        "):
                        break
                    got.append(m.strip())
                return got
        return []

    def wait_for(self, cond, why, seconds=60):
        deadline = time.time() + seconds
        while not cond():
            self.assertLess(time.time(), deadline, why)
            time.sleep(0.05)

    def declare(self, *docs):
        self.repo.write({"x%d" % i: d for i, d in enumerate(docs)})

    def calls(self, rpc):
        return [e for e in self.fake.get("/_fake/requests?log=1000")["log"] if e["rpc"] == rpc]

    def resource(self):
        [r] = self.fake.get("/_fake/persistent-resources")["persistentResources"]
        return r

    def by_hand(self, method, path, body):
        """A call to the fake's API as someone outside vx would make it."""
        self.fake.post("/_fake/tokens", {"token": "outsider-token"})
        u = urllib.request.Request(self.fake.url + "/v1/" + path, data=json.dumps(body).encode(), method=method,
                                   headers={"Content-Type": "application/json",
                                            "Authorization": "Bearer outsider-token"})
        with urllib.request.urlopen(u, timeout=30) as resp:
            return json.loads(resp.read())

    def notes(self, out):
        lines = out.splitlines()
        if "Notes:" not in lines:
            return []
        got = []
        for l in lines[lines.index("Notes:") + 1:]:
            if not l.startswith("  "):
                break
            got.append(l[2:])
        return got

    def running_on_pool(self, n):
        """Advances the fake's clock until n jobs hold replicas of the pool (the fake starts them as it is read)."""
        for _ in range(20):
            self.fake.jobs()  # the fake moves its jobs on as they are read
            if self.resource()["resourcePools"][0].get("usedReplicaCount") == str(n):
                return
            self.fake.advance(60)
        self.fail("the pool never had %d replicas in use: %s" % (n, self.resource()))

    def applied(self, *docs):
        self.declare(*docs)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        return r

    # ---- waits --------------------------------------------------------------------------------

    def test_job_waits_while_its_resource_reboots(self):
        self.applied(pool_yaml())
        self.fake.post("/_fake/timings", {"rebooting_seconds": 600})
        self.by_hand("POST", NAME + ":reboot", {})
        self.declare(pool_yaml(), job_on_pool("a", count=1))
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.block(r.out, "job.a"), [
            "job.a wait", SHAPE + " in " + REGION,
            "waits for %s: REBOOTING" % ADDR], r)
        self.assertEqual(self.notes(r.out), [], r)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.calls("CreateCustomJob"), [], "no job is sent to a resource that is rebooting")
        # Once it runs again, the job is created, once.
        self.fake.advance(700)
        r = self.repo.plan()
        self.assertEqual(self.block(r.out, "job.a")[0], "+   job.a create", r)
        self.assertEqual(self.notes(r.out), [
            "%s: pool l4s: 1 of 4 replicas in use by 1 job (0 active, 1 started by this plan)" % ADDR], r)
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(len(self.calls("CreateCustomJob")), 1)
        self.assertEqual([j["jobSpec"]["persistentResourceId"] for j in self.live_jobs()], ["eval-pool"])

    def test_job_waits_while_its_resource_is_in_error(self):
        self.applied(pool_yaml())
        self.fake.post("/_fake/persistent-resources", {
            "name": self.resource()["name"], "state": "ERROR", "error": {"code": 13, "message": "machines lost"}})
        self.declare(pool_yaml(), job_on_pool("a"))
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.block(r.out, "job.a"), [
            "job.a wait", SHAPE + " in " + REGION,
            "waits for %s: ERROR (machines lost)" % ADDR], r)
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.calls("CreateCustomJob"), [])

    def test_job_waits_while_its_resource_is_provisioning(self):
        """An apply killed while the resource provisions: the next plan adopts it and holds its job."""
        self.fake.post("/_fake/timings", {"provisioning_seconds": 600})
        # The resource made by an apply of this stack that did not see it through (its labels prove it ours).
        self.declare(pool_yaml())
        p = self.repo.start_apply()
        try:
            self.wait_for(lambda: self.calls("GetOperation"), "the create's operation was not polled")
        finally:
            p.kill()
            p.communicate(timeout=60)
        self.declare(pool_yaml(), job_on_pool("a"))
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.block(r.out, ADDR)[0], "~   %s adopt" % ADDR, r)
        self.assertEqual(self.block(r.out, "job.a"), [
            "job.a wait", SHAPE + " in " + REGION,
            "waits for %s: PROVISIONING" % ADDR], r)
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.calls("CreateCustomJob"), [])

    def test_job_waits_for_a_resource_the_stack_does_not_manage(self):
        """A job may name a resource of its project and region that vx does not manage, by its full name.
        vx planned such a job as any job, so Vertex was sent a job on a resource still provisioning (or
        on none at all); the plan now reads that resource too, and holds the job with its state."""
        other = "projects/%s/locations/%s/persistentResources/team-pool" % (PROJECT, REGION)
        self.fake.post("/_fake/timings", {"provisioning_seconds": 600})
        self.declare(job_on_pool("a", on=other), job_on_pool("b", on=other.replace("team-pool", "gone-pool")))
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.block(r.out, "job.b"), [
            "job.b wait", SHAPE + " in " + REGION,
            "waits for %s: it does not exist (a persistent resource this stack does not manage)"
            % other.replace("team-pool", "gone-pool")], r)
        self.by_hand("POST", "projects/%s/locations/%s/persistentResources?persistentResourceId=team-pool"
                     % (PROJECT, REGION), {"resourcePools": [{
                         "id": "l4s", "replicaCount": "1", "machineSpec": {
                             "machineType": "g2-standard-8", "acceleratorType": "NVIDIA_L4",
                             "acceleratorCount": 1}}]})
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.block(r.out, "job.a"), [
            "job.a wait", SHAPE + " in " + REGION, "waits for %s: PROVISIONING" % other], r)
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.calls("CreateCustomJob"), [], "no job is sent to a resource that is provisioning")
        # Once it runs, the job is created on it, once; vx never touches the resource itself.
        self.fake.advance(700)
        r = self.repo.plan()
        self.assertEqual(self.block(r.out, "job.a")[0], "+   job.a create", r)
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual([j["jobSpec"]["persistentResourceId"] for j in self.live_jobs()], ["team-pool"])
        self.assertEqual([c["rpc"] for c in self.fake.get("/_fake/requests?log=1000")["log"]
                          if "PersistentResource" in (c["rpc"] or "") and c["rpc"] != "ListPersistentResources"],
                         ["CreatePersistentResource"], "only the outsider's create")

    def test_job_is_not_sent_when_its_resources_create_fails(self):
        """Planned in one apply with its resource: the job is sent only once the resource is RUNNING."""
        self.fake.post("/_fake/persistent-resources", {"fail_next_create": {"code": 8, "message": "no L4s"}})
        self.declare(pool_yaml(), job_on_pool("a"))
        r = self.repo.plan()
        self.assertEqual(self.block(r.out, "job.a"), [
            "+   job.a create", SHAPE + " in " + REGION,
            "new job; sent once %s, created first by this apply, is RUNNING" % ADDR], r)
        r = self.repo.apply()
        self.assertEqual(r.code, 1, r)
        self.assertIn("! job.a create failed: not sent: it runs on %s, which is not created" % ADDR,
                      r.out.splitlines(), r)
        self.assertEqual(self.calls("CreateCustomJob"), [])

    # ---- the replicas the jobs use -------------------------------------------------------------

    def test_plan_counts_the_replicas_jobs_use(self):
        self.declare(pool_yaml(), job_on_pool("a"), job_on_pool("b"))
        r = self.repo.plan()
        self.assertEqual(self.notes(r.out), [
            "%s: pool l4s: 2 of 4 replicas in use by 2 jobs (0 active, 2 started by this plan)" % ADDR], r)
        self.assertEqual(self.repo.apply().code, 0)
        self.running_on_pool(2)
        self.declare(pool_yaml(), job_on_pool("a"), job_on_pool("b"), job_on_pool("c"))
        r = self.repo.plan()
        self.assertEqual(self.notes(r.out), [
            "%s: pool l4s: 3 of 4 replicas in use by 3 jobs (2 active, 1 started by this plan)" % ADDR], r)
        r = self.repo.plan("-format", "json")
        self.assertEqual(json.loads(r.out)["notes"], [
            "%s: pool l4s: 3 of 4 replicas in use by 3 jobs (2 active, 1 started by this plan)" % ADDR], r)
        # An idle stack: no line.
        self.declare(pool_yaml())
        r = self.repo.plan()
        self.assertEqual(self.notes(r.out), [], r)
        self.assertNotIn("notes", json.loads(self.repo.plan("-format", "json").out))

    def test_jobs_past_the_pools_most_queue(self):
        jobs = [job_on_pool(n) for n in "abcde"]
        self.declare(pool_yaml(), *jobs)
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertIn("  %s: pool l4s: 5 replicas wanted by 5 jobs (0 active, 5 started by this plan), 1 more "
                      "than its most (4): the jobs past it queue until replicas are free (what Vertex AI does "
                      "then is not stated; vx reads it as a queue)" % ADDR, r.out.splitlines(), r)
        self.assertEqual(self.notes(r.out), [], r)
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(len(self.calls("CreateCustomJob")), 5)

    # ---- a replace while jobs run ----------------------------------------------------------------

    def test_replace_is_refused_while_jobs_run_on_it(self):
        self.applied(pool_yaml(), job_on_pool("a"))
        self.running_on_pool(1)
        bigger_disks = pool_yaml().replace("      replicaCount: 2\n", "      replicaCount: 2\n"
                                           "      diskSpec: {bootDiskSizeGb: 200}\n")
        self.declare(bigger_disks, job_on_pool("a"))
        r = self.repo.plan("-replace", ADDR)
        self.assertEqual(r.code, 1, r)
        self.assertIn("  %s: the replace (-replace) is refused while job.a runs on it: deleting it takes their "
                      "machines; plan with -replace for each of them too (they are cancelled first and started "
                      "again on the new resource), or once they have ended" % ADDR, r.out.splitlines(), r)
        r = self.repo.plan("-replace", ADDR, "-replace", "job.a")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.block(r.out, ADDR)[2],
                         "pool l4s: diskSpec changed (-replace): deleted, then created again; job.a, cancelled "
                         "first, start again on the new one", r)
        self.assertEqual(self.block(r.out, "job.a")[:3], [
            "-/+ job.a replace", SHAPE + " in " + REGION, "replacement requested (-replace job.a) while running; sent "
            "once %s, replaced first by this apply, is RUNNING" % ADDR], r)
        # The apply cancels the job, waits for its machines to be let go, replaces the resource, starts the job.
        self.fake.post("/_fake/timings", {"cancelling_seconds": 0})
        r = self.repo.apply("-replace", ADDR, "-replace", "job.a")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.calls("DeletePersistentResource")), 1)
        self.assertEqual(len(self.calls("CreatePersistentResource")), 2)
        self.assertEqual(len(self.calls("CreateCustomJob")), 2)
        self.assertEqual(self.resource()["resourcePools"][0]["diskSpec"]["bootDiskSizeGb"], 200)

    def test_on_error_replace_is_refused_while_jobs_run_on_it(self):
        self.applied(pool_yaml(), job_on_pool("a"))
        self.running_on_pool(1)
        self.fake.post("/_fake/persistent-resources", {
            "name": self.resource()["name"], "state": "ERROR", "error": {"code": 13, "message": "machines lost"}})
        self.declare(pool_yaml(extra="onError: replace\n"), job_on_pool("a"))
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertIn("  %s: the replace (onError: replace) is refused while job.a runs on it: deleting it takes "
                      "their machines; plan with -replace for each of them too (they are cancelled first and "
                      "started again on the new resource), or once they have ended" % ADDR, r.out.splitlines(), r)
        self.assertEqual(self.block(r.out, ADDR), [], r)

    def test_delete_after_cancelling_its_jobs_waits_for_their_machines(self):
        self.applied(pool_yaml(), job_on_pool("a"))
        self.running_on_pool(1)
        # A cancelled job lets its machines go 20 s later; the clock runs ten times as fast from here.
        self.fake.post("/_fake/timings", {"cancelling_seconds": 20})
        self.fake.post("/_fake/clock", {"speed": 10})
        self.declare()
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertIn("- %s delete eval-pool in %s" % (ADDR, REGION), r.out.splitlines(), r)
        self.assertEqual([c["status"] for c in self.calls("DeletePersistentResource")], [200])

    # ---- network and CMEK ---------------------------------------------------------------------------

    def validate_errors(self, *docs):
        self.declare(*docs)
        r = self.repo.vx("validate", self.repo.dir)
        self.assertEqual(r.code, 1, r)
        f = self.repo.dir + "/jobs.yaml"
        return [l[len(f):] for l in r.err.splitlines() if l.startswith(f)]

    def test_network_must_be_the_resources(self):
        net = "projects/123/global/networks/vpc"
        pool = pool_yaml().replace("spec:\n", "spec:\n  network: %s\n" % net)
        a = job_on_pool("a").replace("spec:\n", "spec:\n  network: projects/123/global/networks/other\n", 1)
        c = job_on_pool("c").replace("spec:\n", "spec:\n  network: %s\n" % net, 1)
        self.assertEqual(self.validate_errors(pool, a, job_on_pool("b"), c), [
            ':17:12: CustomJob "a": spec.network: "projects/123/global/networks/other" is not the network of '
            '%s ("%s"): Vertex AI runs a job on a persistent resource only in its network' % (ADDR, net),
            ':33:21: CustomJob "b": persistentResource: %s is in network "%s" and the job in none (spec.network): '
            'Vertex AI runs a job on a persistent resource only in its network' % (ADDR, net)])
        # and the other way: a job in a network, on a resource in none
        self.assertEqual(self.validate_errors(pool_yaml(), a), [
            ':16:12: CustomJob "a": spec.network: "projects/123/global/networks/other" is not the network of '
            '%s (none): Vertex AI runs a job on a persistent resource only in its network' % ADDR])

    def test_flex_start_and_reservation_affinity_refused(self):
        flex = job_on_pool("a", strategy="FLEX_START")
        res = job_on_pool("b").replace("acceleratorCount: 1}",
                                       "acceleratorCount: 1, reservationAffinity: {reservationAffinityType: "
                                       "ANY_RESERVATION}}", 1)
        self.assertEqual(self.validate_errors(pool_yaml(), flex, res), [
            ':14:21: CustomJob "a": persistentResource: scheduling.strategy FLEX_START: a job on a persistent '
            'resource runs on its machines, which are held already',
            ':31:21: CustomJob "b": persistentResource: reservationAffinity: not supported on a persistent '
            'resource ("Reservation affinity is not supported yet for persistent clusters")'])

    def test_cmek_resource_takes_no_job(self):
        key = "projects/%s/locations/%s/keyRings/r/cryptoKeys/k" % (PROJECT, REGION)
        pool = pool_yaml().replace("spec:\n", "spec:\n  encryptionSpec: {kmsKeyName: %s}\n" % key)
        self.assertEqual(self.validate_errors(pool, job_on_pool("a")), [
            ':15:21: CustomJob "a": persistentResource: %s is encrypted with %s (encryptionSpec.kmsKeyName) and '
            'Vertex AI runs a job on it only with the same key, which a CustomJob of vx does not set' % (ADDR, key)])
        # The resource alone is valid, and its key is sent with its create.
        self.declare(pool)
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.resource()["encryptionSpec"], {"kmsKeyName": key})

    def test_network_change_is_a_replace(self):
        net = "projects/123/global/networks/vpc"
        self.applied(pool_yaml())
        self.declare(pool_yaml().replace("spec:\n", "spec:\n  network: %s\n" % net))
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertIn("  %s: network none -> %s cannot change in place: Vertex AI would have to delete the "
                      "persistent resource and make a new one, and the machines it holds might not come back; to "
                      "do that anyway, plan with -replace %s" % (ADDR, net, ADDR), r.out.splitlines(), r)
        self.assertEqual(self.repo.apply("-replace", ADDR).code, 0)
        self.assertEqual(self.resource()["network"], net)
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
