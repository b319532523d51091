"""PersistentResource, vx's fourth kind, end to end against the fake (issue 34).

A pool of machines declared as a Vertex AI PersistentResource: read with file:line:col errors,
created, updated in place with one PATCH and its exact updateMask, refused a reshape unless
-replace names it, protected, abandoned, and never made twice when an apply dies during its
create's operation. Plan lines are compared exactly.
"""
import json
import signal
import time
import unittest
import urllib.request

from harness import PROJECT, REGION, FakeTestCase, job_yaml

ADDR = "persistent_resource.eval-pool"


def pool_yaml(replicas=2, machine="g2-standard-8", extra="", autoscaling=True):
    return ("---\nkind: PersistentResource\nname: eval-pool\nspec:\n  resourcePools:\n"
            "    - id: l4s\n"
            "      machineSpec: {machineType: %s, acceleratorType: NVIDIA_L4, acceleratorCount: 1}\n"
            "      replicaCount: %d\n%s"
            "labels: {team: eval}\n%s"
            % (machine, replicas,
               "      autoscalingSpec: {minReplicaCount: 1, maxReplicaCount: 4}\n" if autoscaling else "",
               extra))


def job_on_pool(name, machine="g2-standard-8", count=1, strategy="STANDARD", on="eval-pool"):
    return job_yaml(name, machine=machine, count=count, strategy=strategy).replace(
        "name: %s\n" % name, "name: %s\npersistentResource: %s\n" % (name, on), 1)


class PersistentTest(FakeTestCase):
    def setUp(self):
        super().setUp()
        # Operations end at once unless a test holds provisioning back.
        self.fake.post("/_fake/timings", {"provisioning_seconds": 0, "updating_seconds": 0,
                                          "stopping_seconds": 0})

    def declare(self, *docs):
        self.repo.write({"x%d" % i: d for i, d in enumerate(docs)})

    def resources(self):
        return self.fake.get("/_fake/persistent-resources")["persistentResources"]

    def calls(self, rpc):
        return [e for e in self.fake.get("/_fake/requests?log=1000")["log"] if e["rpc"] == rpc]

    def created(self, *extra):
        self.declare(pool_yaml(), *extra)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertIn("+ %s create eval-pool in %s (RUNNING)" % (ADDR, REGION), r.out.splitlines(), r)
        return r

    def no_changes(self):
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        self.assertIn("Plan: no changes.", r.out, r)

    def wait_for(self, cond, why, seconds=60):
        deadline = time.time() + seconds
        while not cond():
            self.assertLess(time.time(), deadline, why)
            time.sleep(0.05)

    # ---- the document -------------------------------------------------------------------

    def test_validate_errors_name_file_line_col(self):
        bad = ("---\nkind: PersistentResource\nname: Eval_Pool\nspec:\n  resourcePools:\n"
               "    - id: l4s\n      machineSpec: {machineType: g2-standard-8, acceleratorType: NVIDIA_L4, "
               "acceleratorCount: 2}\n      replicaCount: 5\n"
               "      autoscalingSpec: {minReplicaCount: 1, maxReplicaCount: 4}\n"
               "      replicaCont: 1\n"
               "deletionPolicy: abandn\n")
        self.declare(bad)
        r = self.repo.vx("validate", self.repo.dir)
        self.assertEqual(r.code, 1, r)
        f = self.repo.dir + "/jobs.yaml"
        pre = 'PersistentResource "Eval_Pool": '
        self.assertEqual([l for l in r.err.splitlines() if l.startswith(f)], [
            f + ':3:7: ' + pre + 'name: "Eval_Pool" is not a valid name: use lowercase letters, digits and '
            '"-", starting with a letter and not ending with "-", at most 63 characters',
            f + ':7:95: ' + pre + 'spec.resourcePools[0].machineSpec.acceleratorCount: g2-standard-8 comes '
            'with 1 NVIDIA_L4; acceleratorCount is 2 (2 NVIDIA_L4 come with machineType g2-standard-24)',
            f + ":8:21: " + pre + "spec.resourcePools[0].replicaCount: must be within autoscalingSpec's 1..4, got 5",
            f + ':10:7: ' + pre + 'spec.resourcePools[0]: unknown field "replicaCont" (did you mean "replicaCount"?)',
            f + ':11:17: ' + pre + 'deletionPolicy: unknown value "abandn" (did you mean "abandon"?)'], r)

    # ---- plan and apply -------------------------------------------------------------------

    def test_create_then_no_changes(self):
        self.declare(pool_yaml())
        r = self.repo.plan()
        self.assertEqual(self.block(r.out, ADDR), [
            "+   %s create" % ADDR,
            "l4s: g2-standard-8 \u00d72 (1-4), 1\u00d7NVIDIA_L4",
            "new persistent resource"], r)
        self.assertIn("Refresh: also read persistent resources in %s" % REGION, r.out.splitlines(), r)
        self.created()
        [res] = self.resources()
        self.assertEqual(res["name"].split("/")[-1], "eval-pool")
        self.assertEqual(res["state"], "RUNNING")
        self.assertEqual(res["labels"].get("vx-stack"), "e2e")
        self.assertEqual(res["labels"].get("team"), "eval")
        self.assertTrue(res["labels"].get("vx-lineage"))
        self.no_changes()

    def test_replica_change_is_one_patch_with_update_mask(self):
        self.created()
        self.declare(pool_yaml(replicas=3))
        r = self.repo.plan()
        self.assertEqual(self.block(r.out, ADDR), [
            "~   %s update" % ADDR,
            "l4s: g2-standard-8 \u00d73 (1-4), 1\u00d7NVIDIA_L4 [RUNNING, 0 used]",
            "in place (updateMask resourcePools): pool l4s replicaCount 2 -> 3"], r)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        patches = self.calls("UpdatePersistentResource")
        self.assertEqual([(c["method"], c["path"]) for c in patches], [
            ("PATCH", "/v1/projects/%s/locations/%s/persistentResources/eval-pool?updateMask=resourcePools"
             % (PROJECT, REGION))], patches)
        self.assertEqual(self.calls("CreatePersistentResource").__len__(), 1)
        [res] = self.resources()
        self.assertEqual(res["resourcePools"][0]["replicaCount"], "3")
        self.no_changes()

    def test_machine_change_is_refused_without_replace(self):
        self.created()
        self.declare(pool_yaml(machine="g2-standard-12"))
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertIn("  %s: pool l4s: machineType g2-standard-8 -> g2-standard-12 cannot change in place: "
                      "Vertex AI would have to delete the persistent resource and make a new one, and the "
                      "machines it holds might not come back; to do that anyway, plan with -replace %s"
                      % (ADDR, ADDR), r.out.splitlines(), r)
        r = self.repo.plan("-replace", ADDR)
        self.assertEqual(self.block(r.out, ADDR), [
            "-/+ %s replace" % ADDR,
            "l4s: g2-standard-12 \u00d72 (1-4), 1\u00d7NVIDIA_L4 [RUNNING, 0 used]",
            "pool l4s: machineType g2-standard-8 -> g2-standard-12 (-replace): deleted, then created again"], r)
        r = self.repo.apply("-replace", ADDR)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.calls("DeletePersistentResource")), 1)
        self.assertEqual(len(self.calls("CreatePersistentResource")), 2)
        [res] = self.resources()
        self.assertEqual(res["resourcePools"][0]["machineSpec"]["machineType"], "g2-standard-12")
        self.no_changes()

    def test_protect_refuses_delete(self):
        self.created()
        self.declare(pool_yaml(extra="protect: true\n"))
        r = self.repo.plan()
        self.assertEqual(self.block(r.out, ADDR), [
            "~   %s update" % ADDR,
            "l4s: g2-standard-8 \u00d72 (1-4), 1\u00d7NVIDIA_L4 [RUNNING, 0 used]",
            "protect, deletionPolicy or onError changed: recorded, nothing sent"], r)
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.calls("UpdatePersistentResource"), [])
        self.declare()
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertIn("  %s is protected (protect: true): it is no longer declared; deleting it is refused"
                      % ADDR, r.out.splitlines(), r)
        self.assertEqual(len(self.resources()), 1)

    def test_delete_when_removed(self):
        self.created()
        self.declare()
        r = self.repo.plan()
        self.assertEqual(self.block(r.out, ADDR), [
            "-   %s delete" % ADDR,
            "l4s: g2-standard-8 \u00d72 (1-4), 1\u00d7NVIDIA_L4 [RUNNING, 0 used] in %s" % REGION,
            "no longer declared"], r)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertIn("- %s delete eval-pool in %s" % (ADDR, REGION), r.out.splitlines(), r)
        self.assertEqual(len(self.calls("DeletePersistentResource")), 1)
        self.assertEqual([x for x in self.resources() if x["state"] != "STOPPING"], [])
        self.no_changes()

    def test_abandon_forgets_and_leaves_it(self):
        self.created()
        self.declare(pool_yaml(extra="deletionPolicy: abandon\n"))
        self.assertEqual(self.repo.apply().code, 0)
        self.declare()
        r = self.repo.plan()
        self.assertEqual(self.block(r.out, ADDR), [
            "-   %s abandon" % ADDR,
            "l4s: g2-standard-8 \u00d72 (1-4), 1\u00d7NVIDIA_L4 [RUNNING, 0 used]",
            "no longer declared (deletionPolicy: abandon): forgotten, left running"], r)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.calls("DeletePersistentResource"), [])
        self.assertEqual([x["state"] for x in self.resources()], ["RUNNING"])
        self.no_changes()

    def test_kill_during_create_operation_is_adopted(self):
        """Killed while the create's operation runs: the next apply adopts the one made, never two."""
        self.fake.post("/_fake/timings", {"provisioning_seconds": 300})
        self.declare(pool_yaml())
        p = self.repo.start_apply()
        try:
            self.wait_for(lambda: self.calls("CreatePersistentResource") and
                          any(c["status"] is not None for c in self.calls("CreatePersistentResource")),
                          "the create was not sent")
            self.wait_for(lambda: self.calls("GetOperation"), "the operation was not polled")
        finally:
            p.send_signal(signal.SIGKILL)
            p.communicate(timeout=60)
        self.assertTrue(any("intent %s create" % ADDR in m for m in self.repo.state_log()), self.repo.state_log())
        self.fake.advance(400)
        r = self.repo.plan()
        self.assertEqual(self.block(r.out, ADDR), [
            "~   %s adopt" % ADDR,
            "l4s: g2-standard-8 \u00d72 (1-4), 1\u00d7NVIDIA_L4 [RUNNING, 0 used]",
            "a persistent resource eval-pool with this stack's labels exists in %s (RUNNING): an earlier "
            "apply created it" % REGION], r)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertIn("~ %s adopt eval-pool" % ADDR, r.out.splitlines(), r)
        self.assertEqual(len(self.calls("CreatePersistentResource")), 1, "not created again")
        self.assertEqual(len(self.resources()), 1)
        self.no_changes()

    def make_by_hand(self, replicas=1):
        """eval-pool made as someone else would, through the API, without vx's labels."""
        self.fake.post("/_fake/tokens", {"token": "outsider-token"})
        req = {"resourcePools": [{"id": "l4s", "replicaCount": str(replicas), "machineSpec": {
            "machineType": "g2-standard-8", "acceleratorType": "NVIDIA_L4", "acceleratorCount": 1},
            "autoscalingSpec": {"minReplicaCount": "1", "maxReplicaCount": "4"}}]}
        u = urllib.request.Request(self.fake.url + "/v1/projects/%s/locations/%s/persistentResources"
                                   "?persistentResourceId=eval-pool" % (PROJECT, REGION),
                                   data=json.dumps(req).encode(), method="POST",
                                   headers={"Content-Type": "application/json",
                                            "Authorization": "Bearer outsider-token"})
        with urllib.request.urlopen(u, timeout=30) as resp:
            resp.read()

    def test_not_ours_is_refused(self):
        self.declare(pool_yaml())
        self.make_by_hand()
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertTrue(any(l.startswith("  %s: a persistent resource eval-pool already exists in %s and is "
                                         "not this stack's" % (ADDR, REGION)) for l in r.out.splitlines()), r)


    def test_import_then_update_in_place(self):
        self.declare(pool_yaml())
        self.make_by_hand(replicas=1)
        name = "projects/%s/locations/%s/persistentResources/eval-pool" % (PROJECT, REGION)
        r = self.repo.vx("import", ADDR, name, self.repo.dir)
        self.assertEqual(r.code, 0, r)
        r = self.repo.plan()
        self.assertEqual(self.block(r.out, ADDR), [
            "~   %s update" % ADDR,
            "l4s: g2-standard-8 \u00d72 (1-4), 1\u00d7NVIDIA_L4 [RUNNING, 0 used]",
            "in place (updateMask resourcePools,labels): pool l4s replicaCount 1 -> 2, labels"], r)
        self.assertEqual(self.repo.apply().code, 0)
        [res] = self.resources()
        self.assertEqual(res["labels"].get("team"), "eval")
        self.assertEqual(res["resourcePools"][0]["replicaCount"], "2")
        self.assertEqual(len(self.calls("CreatePersistentResource")), 1)
        self.no_changes()
        r = self.repo.vx("status", self.repo.dir)
        self.assertEqual(r.code, 0, r)
        self.assertEqual([l.split() for l in r.out.splitlines() if l.startswith(ADDR)], [
            [ADDR, "RUNNING", "-", "-", REGION, "-", "-", "-", "replicas", "2,", "used", "0"]], r)
        # the JSON form, checked against docs/status.schema.json by the harness
        r = self.repo.vx("status", self.repo.dir, "-format", "json")
        [row] = [a for a in json.loads(r.out)["addresses"] if a["address"] == ADDR]
        self.assertEqual((row["kind"], row["state"], row["replicas"], row["used"]),
                         ("persistent_resource", "RUNNING", 2, 0), r)

    def test_import_of_a_wrong_name_is_refused(self):
        self.declare(pool_yaml())
        r = self.repo.vx("import", ADDR, "projects/%s/locations/%s/persistentResources/other" % (PROJECT, REGION),
                         self.repo.dir)
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.err, "vx: import: %s: the persistent resource must be named eval-pool, as the "
                         "address is, not other\n" % ADDR, r)


    def test_error_is_shown_and_replaced_only_with_on_error_replace(self):
        self.created()
        self.fake.post("/_fake/persistent-resources", {
            "name": self.resources()[0]["name"], "state": "ERROR", "error": {"code": 13, "message": "machines lost"}})
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        lines = r.out.splitlines()
        self.assertIn("      %s: in ERROR: machines lost (onError: keep)" % ADDR, lines, r)
        self.assertIn("  %s is in ERROR: machines lost; left as it is (onError: keep; onError: replace or "
                      "-replace %s replaces it)" % (ADDR, ADDR), lines, r)
        self.assertIn("Plan: no changes. 1 unchanged.", lines, r)
        self.declare(pool_yaml(extra="onError: replace\n"))
        r = self.repo.plan()
        self.assertEqual(self.block(r.out, ADDR), [
            "-/+ %s replace" % ADDR,
            "l4s: g2-standard-8 \u00d72 (1-4), 1\u00d7NVIDIA_L4 [ERROR, 0 used]",
            "in ERROR (machines lost): deleted, then created again (onError: replace)"], r)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual([x["state"] for x in self.resources()], ["RUNNING"])
        self.assertEqual(len(self.calls("CreatePersistentResource")), 2)
        self.no_changes()

    # ---- jobs on it -----------------------------------------------------------------------

    def test_pool_and_two_jobs_applied_in_order(self):
        self.declare(pool_yaml(), job_on_pool("a"), job_on_pool("b"))
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.block(r.out, ADDR)[0], "+   %s create" % ADDR, r)
        self.assertEqual(self.block(r.out, "job.a")[0], "+   job.a create", r)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        lines = r.out.splitlines()
        made = [i for i, l in enumerate(lines) if l.startswith("+ ")]
        self.assertTrue(lines[made[0]].startswith("+ %s create" % ADDR), r)
        self.assertEqual(len(made), 3, r)
        self.assertIn("Apply complete: 3 done, 0 failed.", lines, r)
        jobs = self.live_jobs()
        self.assertEqual(sorted(j["jobSpec"].get("persistentResourceId") for j in jobs), ["eval-pool", "eval-pool"])
        creates = [e["rpc"] for e in self.fake.get("/_fake/requests?log=1000")["log"]
                   if e["rpc"] in ("CreatePersistentResource", "CreateCustomJob")]
        self.assertEqual(creates, ["CreatePersistentResource", "CreateCustomJob", "CreateCustomJob"])
        self.no_changes()

    def test_job_that_does_not_fit_is_refused_at_its_line(self):
        self.declare(pool_yaml(), job_on_pool("a", machine="g2-standard-4"), job_on_pool("b", strategy="SPOT"),
                     job_on_pool("c", on="projects/other/locations/%s/persistentResources/p" % REGION),
                     job_on_pool("d", on="nope"))
        r = self.repo.vx("validate", self.repo.dir)
        self.assertEqual(r.code, 1, r)
        f = self.repo.dir + "/jobs.yaml"
        self.assertEqual([l for l in r.err.splitlines() if l.startswith(f)], [
            f + ':14:21: CustomJob "a": persistentResource: spec.workerPoolSpecs[0] (g2-standard-4, 1\u00d7NVIDIA_L4) '
            'fits no pool of %s (machine type, accelerator type and count must equal a pool\'s)' % ADDR,
            f + ':31:21: CustomJob "b": persistentResource: scheduling.strategy SPOT: a job on a persistent '
            'resource runs on its machines, which are held already',
            f + ':48:21: CustomJob "c": persistentResource: "projects/other/locations/%s/persistentResources/p" is '
            'not in the job\'s project and region (%s, %s): a job runs only on a persistent resource of its own'
            % (REGION, PROJECT, REGION),
            f + ':65:21: CustomJob "d": persistentResource: "nope" is neither a persistent resource of this stack '
            'nor a full name projects/PROJECT/locations/REGION/persistentResources/ID'], r)


    def test_delete_waits_for_the_jobs_on_it(self):
        full = "projects/%s/locations/%s/persistentResources/eval-pool" % (PROJECT, REGION)
        self.declare(pool_yaml(), job_on_pool("a", on=full))
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(60)
        # the fake starts the job on the pool when its jobs are read
        self.wait_for(lambda: self.fake.jobs() and
                      self.resources()[0]["resourcePools"][0].get("usedReplicaCount") == "1",
                      "the job did not start on the resource")
        # The job stays (declared): its machines are in use, the delete is refused.
        self.declare(job_on_pool("a", on=full))
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertIn("  %s is no longer declared but jobs use 1 of its machines, and no cancel in this plan "
                      "frees them (a job of this stack still declared, of another stack, or made outside vx); it "
                      "is not deleted" % ADDR, r.out.splitlines(), r)
        # Both go: the job is cancelled first, then the resource deleted.
        self.declare()
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.block(r.out, ADDR)[2],
                         "no longer declared; deleted once the jobs on it are cancelled (job.a)", r)


if __name__ == "__main__":
    unittest.main()
