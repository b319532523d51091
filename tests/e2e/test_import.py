"""Issue 11: vx import ADDR RESOURCE, for each kind.

Resources are made behind vx's back through the fake's real APIs (as gcloud
would), imported, and then planned and applied. Each test asserts vx's
output exactly, the state branch and what the fake holds.
"""
import json
import os
import re
import urllib.request

from harness import PROJECT, REGION, FakeTestCase, job_yaml

ZONE = REGION + "-a"
TOKEN = "outsider-token"


def reservation_yaml(name="pool", count=2, machine="g2-standard-8"):
    return ("---\nkind: Reservation\nname: %s\nzone: %s\nmachineType: %s\n"
            "accelerators: [{type: nvidia-l4, count: 1}]\ncount: %d\n" % (name, ZONE, machine, count))


def quota_yaml(name="l4-training", value=16):
    return ("---\nkind: QuotaPreference\nname: %s\nservice: aiplatform.googleapis.com\n"
            "quotaId: CustomModelTrainingL4GPUsPerProjectPerRegion\ndimensions: {region: %s}\n"
            "preferredValue: %d\ncontactEmail: ml-infra@example.com\n" % (name, REGION, value))


def job_spec(epochs=3, name="a", env=None):
    """The jobSpec job_yaml(name, epochs) declares, as a person would send it."""
    spec = {"workerPoolSpecs": [{
        "machineSpec": {"machineType": "g2-standard-4", "acceleratorType": "NVIDIA_L4",
                        "acceleratorCount": 1},
        "replicaCount": "1",
        "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/trainer:1.0",
                          "args": ["--epochs", str(epochs)]}}],
        "scheduling": {"strategy": "STANDARD"},
        "baseOutputDirectory": {"outputUriPrefix": "gs://e2e-bucket/%s" % name}}
    if env:
        spec["workerPoolSpecs"][0]["containerSpec"]["env"] = env
    return spec


def unlabelled(address, name):
    """The warning every import of a job without vx's labels gives, once."""
    return ("vx: warning: %s: %s has no vx labels, and Vertex AI cannot add labels to an existing CustomJob "
            "(it has no update method): only this state's record shows it is vx's, so no other stack or state "
            "can tell from the job itself\n" % (address, name))


class Import(FakeTestCase):

    def setUp(self):
        super().setUp()
        self.fake.post("/_fake/tokens", {"token": TOKEN})
        # an L4 quota of 8, so that 8 is no decrease and 16 an increase (the fake starts at 1000)
        self.fake.post("/_fake/quota", {"region": REGION, "accelerator_type": "NVIDIA_L4",
                                        "preemptible": False, "limit": 8})

    # ---- helpers ---------------------------------------------------------------

    def api(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.fake.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json",
                                              "Authorization": "Bearer " + TOKEN})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read() or b"{}")

    def make_job(self, epochs=3, labels=None, region=REGION, env=None):
        body = {"displayName": "by-hand", "jobSpec": job_spec(epochs, env=env)}
        if labels:
            body["labels"] = labels
        made = self.api("POST", "/v1/projects/%s/locations/%s/customJobs" % (PROJECT, region), body)
        return made["name"]

    def make_reservation(self, name="pool", count=2, description=None):
        body = {"name": name, "specificReservationRequired": True, "specificReservation": {
            "count": str(count), "instanceProperties": {
                "machineType": "g2-standard-8",
                "guestAccelerators": [{"acceleratorType": "nvidia-l4", "acceleratorCount": 1}]}}}
        if description:
            body["description"] = description
        op = self.api("POST", "/compute/v1/projects/%s/zones/%s/reservations" % (PROJECT, ZONE), body)
        # the insert is done once its operation is read done, as gcloud waits for it
        link = "/compute/v1/" + op["selfLink"].split("/compute/v1/", 1)[1]
        while self.api("GET", link)["status"] != "DONE":
            self.fake.advance(1)
        return "projects/%s/zones/%s/reservations/%s" % (PROJECT, ZONE, name)

    def make_quota(self, name="l4-training", value=8):
        body = {"service": "aiplatform.googleapis.com",
                "quotaId": "CustomModelTrainingL4GPUsPerProjectPerRegion",
                "quotaConfig": {"preferredValue": str(value)}, "dimensions": {"region": REGION},
                "contactEmail": "ml-infra@example.com"}
        made = self.api("POST", "/v1/projects/%s/locations/global/quotaPreferences?quotaPreferenceId=%s"
                        % (PROJECT, name), body)
        return made["name"]

    def by_id(self, name):
        """A job name as a person copies it: the project id, not its number."""
        return re.sub(r"^projects/[^/]+/", "projects/%s/" % PROJECT, name)

    def write(self, docs):
        self.repo.jobs = docs
        self.repo.write()

    def imp(self, *args):
        return self.repo.vx("import", *args, self.repo.dir)

    def state(self, path):
        return json.loads(self.repo.git("show", "vx/state/e2e:" + path))

    def tree(self):
        try:
            return self.repo.git("ls-tree", "-r", "--name-only", "vx/state/e2e").split()
        except Exception:
            return []

    def stored_lineage(self):
        """The lineage of the state as written, as labels and markers carry it (12 hex digits)."""
        return self.state("stack.json")["lineage"].replace("-", "")[:12]

    def subjects(self):
        return [m.strip().split("\n")[0] for m in self.repo.state_log() if m.strip()]

    def plan_lines(self, *args):
        r = self.repo.plan(*args)
        action = re.compile(r"^  \S+ +(job|reservation|quota)\.[^ ]+ [a-z]+$")
        return r, [l for l in r.out.splitlines() if action.match(l)]

    def assert_no_drift(self, r):
        """The plan saw every run where the state says it is: no drift, nothing "deleted outside vx"."""
        self.assertEqual([l for l in r.out.splitlines() if l.startswith("  !") or "outside" in l], [], r)

    def assert_no_lease(self):
        if "stack.json" in self.tree():
            self.assertIsNone(self.state("stack.json").get("lock"))

    # ---- jobs ------------------------------------------------------------------

    def test_job_that_matches(self):
        self.write({"a": job_yaml("a")})
        name = self.make_job()
        r = self.imp("job.a", self.by_id(name))
        self.assertEqual((r.code, r.out, r.err),
                         (0, "job.a: imported %s (queued); it matches the declaration\n" % name,
                          unlabelled("job.a", name)), r)
        cur = self.state("jobs/a.json")["current"]
        self.assertEqual((cur["resource"], cur["action"], cur["state"]), (name, "import", "JOB_STATE_QUEUED"))
        self.assertIn("vx import: job.a <- %s" % name, self.subjects())
        self.assert_no_lease()
        # the job has no vx labels: the refresh reads it by name, and nothing is to be done
        r, lines = self.plan_lines("-detailed-exitcode")
        self.assertEqual((r.code, lines), (0, []), r)
        self.assertIn("Plan: no changes. 1 unchanged.", r.out.splitlines(), r)
        self.assert_no_drift(r)
        self.assertEqual(self.fake.rpc_count("GetCustomJob"), 2)  # the import's, and the refresh's
        r = self.repo.vx("log", "job.a", self.repo.dir)
        who = cur["launchedBy"]
        head = self.repo.git("rev-parse", "HEAD").strip()[:12]
        self.assertEqual(r.out, "job.a\n  2026-01-01T00:00:00Z  import    %s  attempt 1  run 1  by %s  "
                         "config %s  cost $0.00  queued\n" % (name, who, head), r)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 1)  # only the one made by hand

    def test_import_records_the_ci_actor_as_apply_does(self):
        self.write({"a": job_yaml("a"), "b": job_yaml("b")})
        env = {"GITHUB_ACTOR": "octocat", "GITHUB_RUN_ID": "77", "GITHUB_SERVER_URL": "https://github.com",
               "GITHUB_REPOSITORY": "acme/ml"}
        self.assertEqual(self.repo.vx("apply", self.repo.dir, "-auto-approve", "-target", "job.b",
                                      env=env).code, 0)
        name = self.make_job()
        r = self.repo.vx("import", "job.a", name, self.repo.dir, env=env)
        self.assertEqual((r.code, r.err), (0, unlabelled("job.a", name)), r)
        self.assertEqual(self.state("jobs/b.json")["current"]["launchedBy"], "octocat")
        self.assertEqual(self.state("jobs/a.json")["current"]["launchedBy"], "octocat")
        trailers = [l for l in self.repo.state_log()[0].splitlines() if l.startswith(("Vx-Actor", "Vx-CI-Run"))]
        self.assertEqual(trailers, ["Vx-Actor: octocat", "Vx-CI-Run: https://github.com/acme/ml/actions/runs/77"])
        # VX_ACTOR first, as for apply
        self.write({"a": job_yaml("a"), "b": job_yaml("b"), "c": job_yaml("c")})
        name = self.make_job()
        r = self.repo.vx("import", "job.c", name, self.repo.dir, env=dict(env, VX_ACTOR="deploy-bot"))
        self.assertEqual((r.code, r.err), (0, unlabelled("job.c", name)), r)
        self.assertEqual(self.state("jobs/c.json")["current"]["launchedBy"], "deploy-bot")

    def test_job_that_differs_is_replaced_alone(self):
        self.write({"a": job_yaml("a"), "b": job_yaml("b")})
        self.assertEqual(self.repo.apply("-target", "job.b").code, 0)
        b = [j["name"] for j in self.live_jobs("b")]
        name = self.make_job(epochs=5)
        r = self.imp("job.a", name, "-check")
        self.assertEqual((r.code, r.out, r.err), (0, (
            "job.a: would import %s (queued); differs from the declaration: "
            "workerPoolSpecs[0].containerSpec.args[1] 5 -> 3; "
            "the next plan will replace it\n" % name), unlabelled("job.a", name)), r)
        self.assertNotIn("jobs/a.json", self.tree())
        r = self.imp("job.a", name)
        self.assertEqual((r.code, r.out, r.err), (0, (
            "job.a: imported %s (queued); differs from the declaration: "
            "workerPoolSpecs[0].containerSpec.args[1] 5 -> 3; "
            "the next plan will replace it\n" % name), unlabelled("job.a", name)), r)
        r, lines = self.plan_lines()
        self.assertEqual(lines, ["  -/+ job.a replace"], r)
        self.assertIn("        spec changed: workerPoolSpecs[0].containerSpec.args while queued",
                      r.out.splitlines(), r)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        jobs = {j["name"]: j for j in self.fake.jobs()}
        self.assertIn(jobs[name]["state"], ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED"))
        self.assertEqual(len(self.active("a")), 1)        # the new run, with vx's labels
        self.assertEqual([j["name"] for j in self.active("b")], b)  # b untouched
        self.assertEqual(self.fake.rpc_count("CancelCustomJob"), 1)
        cur = self.state("jobs/a.json")
        self.assertEqual((cur["current"]["action"], cur["history"][-1]["resource"]), ("replace", name))

    def test_declaration_changed_after_import(self):
        self.write({"a": job_yaml("a"), "b": job_yaml("b")})
        self.assertEqual(self.repo.apply("-target", "job.b").code, 0)
        b = [j["name"] for j in self.live_jobs("b")]
        name = self.make_job()
        self.assertEqual(self.imp("job.a", name).code, 0)
        self.write({"a": job_yaml("a", epochs=4), "b": job_yaml("b")})
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertIn("  -/+ job.a replace", r.out.splitlines(), r)
        self.assertEqual(self.fake.rpc_count("CancelCustomJob"), 1)
        self.assertEqual(len(self.active("a")), 1)
        self.assertEqual([j["name"] for j in self.active("b")], b)
        # the imported run, now history and unlabelled, is still followed until it has ended
        self.fake.advance(600)
        self.assertEqual({j["name"]: j for j in self.fake.jobs()}[name]["state"], "JOB_STATE_CANCELLED")
        self.assertEqual(self.repo.apply().code, 0)
        old = self.state("jobs/a.json")["history"][-1]
        self.assertEqual((old["resource"], old["action"], old["state"]), (name, "import", "JOB_STATE_CANCELLED"))

    def test_ended_job_is_history(self):
        self.write({"a": job_yaml("a")})
        name = self.make_job()
        self.fake.cancel_behind_vx(name)
        self.fake.advance(600)
        state = {j["name"]: j for j in self.fake.jobs()}[name]["state"]
        self.assertEqual(state, "JOB_STATE_CANCELLED")
        r = self.imp("job.a", name)
        self.assertEqual((r.code, r.out, r.err),
                         (0, "job.a: imported %s (cancelled); it matches the declaration\n" % name,
                          unlabelled("job.a", name)), r)
        r, lines = self.plan_lines("-detailed-exitcode")
        self.assertEqual((r.code, lines), (0, []), r)
        # read by name (it has no vx labels): seen cancelled, as it was, not deleted
        self.assertEqual([l for l in r.out.splitlines() if l.startswith("  !")],
                         ["  ! job.a: run %s was cancelled outside vx -> noop" % name], r)

    def test_job_with_a_secret(self):
        self.write({"a": job_yaml("a", env_secret=True)})
        other = self.make_job(env=[{"name": "WANDB_API_KEY", "value": "another-secret-value"},
                                   {"name": "EPOCHS_HINT", "value": "plain"}])
        name = self.make_job(env=[{"name": "WANDB_API_KEY", "value": "hunter2-training-secret"},
                                  {"name": "EPOCHS_HINT", "value": "plain"}])
        # a different secret is a difference, shown by its HMAC only
        r = self.imp("job.a", other, "-check")
        self.assertEqual((r.code, r.err), (0, unlabelled("job.a", other)), r)
        self.assertTrue(re.fullmatch(
            r"job.a: would import %s \(queued\); differs from the declaration: workerPoolSpecs\[0\]."
            r"containerSpec.env\[0\].value hmac-sha256:[0-9a-f]{45}\.\.\. -> hmac-sha256:[0-9a-f]{45}\.\.\.; the next "
            r"plan will replace it\n" % re.escape(other), r.out), r)
        self.assertNotIn("another-secret-value", r.out)
        # the same secret matches, and never reaches the state
        r = self.imp("job.a", name)
        self.assertEqual((r.code, r.out, r.err),
                         (0, "job.a: imported %s (queued); it matches the declaration\n" % name,
                          unlabelled("job.a", name)), r)
        log = self.repo.git("log", "-p", "vx/state/e2e")
        self.assertNotIn("hunter2-training-secret", log)
        self.assertIn("hmac-sha256:", json.dumps(self.state("jobs/a.json")["spec"]))
        r, lines = self.plan_lines("-detailed-exitcode")
        self.assertEqual((r.code, lines), (0, []), r)

    # ---- one resource, one stack -------------------------------------------------

    def other_stack(self, docs, state=""):
        """A second stack, 'other', in the same repository (its state: vx/state/other)."""
        d = os.path.join(self.repo.root, "other")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "stack.yaml"), "w") as f:
            f.write("kind: Stack\nname: other\nproject: %s\nregion: %s\n%s%s"
                    % (PROJECT, REGION, state, "".join(docs)))
        self.repo.git("add", "-A")
        self.repo.git("commit", "-q", "-m", "other stack")
        return d

    def test_a_job_imported_by_another_stack_is_refused(self):
        self.write({"a": job_yaml("a")})
        other = self.other_stack([job_yaml("b")])
        name = self.make_job()
        r = self.repo.vx("import", "job.b", name, other)
        self.assertEqual((r.code, r.err), (0, unlabelled("job.b", name)), r)
        for args in (["job.a", name], ["job.a", name, "-check"]):
            r = self.imp(*args)
            self.assertEqual((r.code, r.out, r.err), (1, "", (
                "vx: import: job.a: %s is already tracked by stack other, as job.b in refs/heads/vx/state/other: "
                "a resource belongs to one stack, and a plan of either would cancel or replace it under the other; "
                "import it into one stack only\n" % name)), r)
        self.assertNotIn("jobs/a.json", self.tree())
        self.assert_no_lease()
        # a job that stack has only in its history is still its own
        res = self.make_reservation()
        self.write({"a": job_yaml("a"), "r": reservation_yaml()})
        other = self.other_stack([job_yaml("b"), reservation_yaml()])
        self.assertEqual(self.repo.vx("import", "reservation.pool", res, other).code, 0)
        r = self.imp("reservation.pool", res)
        self.assertEqual((r.code, r.out, r.err), (1, "", (
            "vx: import: reservation.pool: %s is already tracked by stack other, as reservation.pool in "
            "refs/heads/vx/state/other: a resource belongs to one stack, and a plan of either would cancel or "
            "replace it under the other; import it into one stack only\n" % res)), r)
        # another job is not refused
        mine = self.make_job()
        r = self.imp("job.a", mine)
        self.assertEqual((r.code, r.err), (0, unlabelled("job.a", mine)), r)
        # the other stack's branch as a clone has it: only a remote's, tracked
        self.repo.git("update-ref", "refs/remotes/origin/vx/state/other", "vx/state/other")
        self.repo.git("update-ref", "-d", "refs/heads/vx/state/other")
        self.write({"a": job_yaml("a"), "r": reservation_yaml(), "c": job_yaml("c")})
        r = self.imp("job.c", name)
        self.assertEqual((r.code, r.out, r.err), (1, "", (
            "vx: import: job.c: %s is already tracked by stack other, as job.b in refs/remotes/origin/vx/state/"
            "other: a resource belongs to one stack, and a plan of either would cancel or replace it under the "
            "other; import it into one stack only\n" % name)), r)

    def test_a_quota_imported_by_another_stack_in_the_bucket_is_refused(self):
        gcs = "state: {backend: gcs, bucket: vx-e2e-state}\n"
        self.repo.jobs = {"q": quota_yaml()}
        self.repo.write(extra_stack=gcs)
        other = self.other_stack([quota_yaml()], state=gcs)
        name = self.make_quota()
        r = self.repo.vx("import", "quota.l4-training", name, other)
        self.assertEqual((r.code, r.err), (0, ""), r)
        r = self.imp("quota.l4-training", name)
        self.assertEqual((r.code, r.out, r.err), (1, "", (
            "vx: import: quota.l4-training: %s is already tracked by stack other, as quota.l4-training in "
            "gs://vx-e2e-state/vx/state/other: a resource belongs to one stack, and a plan of either would cancel "
            "or replace it under the other; import it into one stack only\n" % name)), r)
        # Per import, into a prefix whose state.json does not exist yet: one list of its
        # history/ (a deleted state is refused, not started anew) and one of the bucket's states.
        self.assertEqual(self.fake.rpc_count("storage.objects.list"), 4)
        # a job neither stack tracks is imported, warned about once
        self.repo.jobs = {"q": quota_yaml(), "a": job_yaml("a")}
        self.repo.write(extra_stack=gcs)
        job = self.make_job()
        r = self.imp("job.a", job)
        self.assertEqual((r.code, r.err), (0, unlabelled("job.a", job)), r)

    def test_a_job_with_this_states_labels_gives_no_warning(self):
        self.write({"a": job_yaml("a"), "b": job_yaml("b")})
        self.assertEqual(self.repo.apply("-target", "job.b").code, 0)
        lineage = self.live_jobs("b")[0]["labels"]["vx-lineage"]
        name = self.make_job(labels={"vx-stack": "e2e", "vx-lineage": lineage, "vx-job": "a"})
        r = self.imp("job.a", name)
        self.assertEqual((r.code, r.out, r.err),
                         (0, "job.a: imported %s (queued); it matches the declaration\n" % name, ""), r)

    # ---- reservations ------------------------------------------------------------

    def test_reservation_that_matches(self):
        self.write({"r": reservation_yaml()})
        res = self.make_reservation()
        r = self.imp("reservation.pool", res)
        self.assertEqual((r.code, r.out, r.err),
                         (0, "reservation.pool: imported %s (READY); it matches the declaration\n" % res, ""), r)
        cur = self.state("reservations/pool.json")["current"]
        self.assertEqual((cur["resource"], cur["action"], cur["value"]), (res, "import", 2))
        self.assertIn("vx import: reservation.pool <- %s" % res, self.subjects())
        self.assert_no_lease()
        # no vx marker in its description: the state's record is the proof of ownership
        r, lines = self.plan_lines("-detailed-exitcode")
        self.assertEqual((r.code, lines, r.err), (0, [], ""), r)

    def test_reservation_that_differs_is_resized(self):
        self.write({"r": reservation_yaml(count=3)})
        res = self.make_reservation(count=2)
        r = self.imp("reservation.pool", res)
        self.assertEqual((r.code, r.out, r.err), (0, (
            "reservation.pool: imported %s (READY); differs from the declaration: count 2 -> 3; "
            "the next plan will resize it in place\n" % res), ""), r)
        r, lines = self.plan_lines()
        self.assertEqual(lines, ["  ~   reservation.pool update"], r)
        self.assertEqual(self.repo.apply().code, 0)
        got = self.fake.get("/_fake/reservations")["reservations"]
        self.assertEqual([(x["name"], x["specificReservation"]["count"]) for x in got], [("pool", "3")])

    def test_reservation_imported_then_undeclared_is_deleted(self):
        self.write({"r": reservation_yaml()})
        res = self.make_reservation()
        self.assertEqual(self.imp("reservation.pool", res).code, 0)
        self.write({})
        r, lines = self.plan_lines()
        self.assertEqual(lines, ["  -   reservation.pool delete"], r)
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.fake.get("/_fake/reservations")["reservations"], [])

    def test_reservation_of_another_stack_is_refused(self):
        self.write({"r": reservation_yaml()})
        res = self.make_reservation(description="made elsewhere vx: stack=other lineage=0123456789ab")
        # A brand-new stack: no state is written, so there is no lineage of its own to name.
        r = self.imp("reservation.pool", res)
        self.assertEqual((r.code, r.out, r.err), (1, "", (
            "vx: import: reservation.pool: %s is marked as another stack's or state's (its description "
            "says \"vx: stack=other lineage=0123456789ab\"; stack e2e has no state yet, so no marker "
            "of its own)\n" % res)), r)
        self.assertEqual(self.tree(), [])
        self.assert_no_lease()
        # Once the state exists, the marker named is the one its lineage makes.
        self.write({"r": reservation_yaml(), "a": job_yaml("a")})
        self.assertEqual(self.repo.apply("-target", "job.a").code, 0)
        r = self.imp("reservation.pool", res)
        self.assertEqual((r.code, r.out, r.err), (1, "", (
            "vx: import: reservation.pool: %s is marked as another stack's or state's (its description "
            "says \"vx: stack=other lineage=0123456789ab\", this state's marker is \"vx: stack=e2e "
            "lineage=%s\")\n" % (res, self.stored_lineage()))), r)
        self.assertNotIn("reservations/pool.json", self.tree())
        self.assert_no_lease()

    # ---- quota preferences ----------------------------------------------------------

    def test_quota_that_differs_then_matches(self):
        self.write({"q": quota_yaml(value=16)})
        name = self.make_quota(value=8)
        res = "projects/%s/locations/global/quotaPreferences/l4-training" % PROJECT
        r = self.imp("quota.l4-training", res)
        self.assertEqual((r.code, r.out, r.err), (0, (
            "quota.l4-training: imported %s (granted 8); differs from the declaration: "
            "preferredValue 8 -> 16; the next plan will update it\n" % name), ""), r)
        cur = self.state("quotas/l4-training.json")["current"]
        self.assertEqual((cur["resource"], cur["action"], cur["value"]), (name, "import", 8))
        r, lines = self.plan_lines()
        self.assertEqual(lines, ["  ~   quota.l4-training update"], r)
        self.assertEqual(self.repo.apply().code, 0)
        got = self.fake.get("/_fake/quota-preferences")
        items = got.get("quotaPreferences", got) if isinstance(got, dict) else got
        self.assertEqual([q["quotaConfig"]["preferredValue"] for q in items], ["16"])
        r, lines = self.plan_lines("-detailed-exitcode")
        self.assertEqual((r.code, lines), (0, []), r)

    def test_quota_that_matches(self):
        self.write({"q": quota_yaml(value=16)})
        name = self.make_quota(value=16)
        r = self.imp("quota.l4-training", name)
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertTrue(re.fullmatch(r"quota.l4-training: imported %s \([a-z0-9 ,]+\); it matches the "
                                     r"declaration\n" % re.escape(name), r.out), r)
        r, lines = self.plan_lines("-detailed-exitcode")
        self.assertEqual((r.code, lines), (0, []), r)

    # ---- refusals ---------------------------------------------------------------------

    def assert_refused(self, args, err, code=1):
        before = self.tree()
        serial = self.state("stack.json")["serial"] if "stack.json" in before else None
        r = self.imp(*args)
        if callable(err):
            err = err(r.err)
        self.assertEqual((r.code, r.out, r.err), (code, "", err), r)
        self.assertEqual([p for p in self.tree() if p != "stack.json"], [p for p in before if p != "stack.json"])
        if serial is not None:
            self.assertEqual(self.state("stack.json")["serial"], serial)
        self.assert_no_lease()

    def test_refusals(self):
        self.write({"a": job_yaml("a"), "b": job_yaml("b")})
        name = self.make_job()
        other = self.make_job(labels={"vx-stack": "other"})
        num = name.split("/")[1]
        self.assert_refused(["job.c", name],
                            "vx: import: job.c is not declared in the stack (did you mean \"job.a\"?); "
                            "import adopts a resource into a declared address\n")
        self.assert_refused(["jb.a", name], "vx: import: ADDR is an address such as job.NAME, "
                            "persistent_resource.NAME, future_reservation.NAME, reservation.NAME or quota.NAME, not 'jb.a'\n", code=64)
        self.assert_refused(["job.a", "projects/%s/zones/%s/reservations/pool" % (PROJECT, ZONE)],
                            "vx: import: job.a takes a Vertex AI CustomJob, projects/PROJECT/locations/"
                            "REGION/customJobs/ID, not 'projects/%s/zones/%s/reservations/pool'\n"
                            % (PROJECT, ZONE))
        wrong = name.replace("/locations/%s/" % REGION, "/locations/europe-west4/")
        self.assert_refused(["job.a", wrong], "vx: import: job.a: %s is in region europe-west4, but job.a "
                            "is declared in region %s\n" % (wrong, REGION))
        wrong = re.sub(r"^projects/[^/]+/", "projects/someone-else/", name)
        self.assert_refused(["job.a", wrong], "vx: import: job.a: %s is in project someone-else, but job.a "
                            "is declared in project %s\n" % (wrong, PROJECT))
        gone = re.sub(r"/customJobs/\d+$", "/customJobs/7", name)
        self.assert_refused(["job.a", gone], "vx: import: job.a: %s does not exist in project %s\n"
                            % (gone, PROJECT))
        self.assert_refused(["job.a", other], "vx: import: job.a: %s belongs to stack other (its vx-stack "
                            "label), not e2e\n" % other)
        theirs = self.make_job(labels={"vx-stack": "e2e", "vx-lineage": "0123456789ab"})
        self.assertEqual(self.tree(), [])
        self.assert_refused(["job.a", theirs], "vx: import: job.a: %s belongs to another state of stack e2e "
                            "(its vx-lineage is 0123456789ab; stack e2e has no state yet)\n" % theirs)
        self.assertEqual(self.imp("job.a", name).code, 0)
        # Now there is a state: the refusal names its lineage, the one written.
        self.assert_refused(["job.b", theirs], "vx: import: job.b: %s belongs to another state of stack e2e "
                            "(its vx-lineage is 0123456789ab, this state's %s)\n"
                            % (theirs, self.stored_lineage()))
        self.assert_refused(["job.a", name], "vx: import: job.a is already in the state (%s); import only "
                            "adds a resource to an address that has none\n" % name)
        self.assert_refused(["job.b", self.by_id(name)], "vx: import: job.b: %s is already tracked as job.a\n"
                            % name)
        self.assertTrue(num.isdigit())
        # nothing was cancelled or created by any of it
        self.assertEqual((self.fake.rpc_count("CancelCustomJob"), self.fake.rpc_count("CreateCustomJob")), (0, 3))

    def test_long_parts_of_a_resource_name_are_refused_whole(self):
        """Each part of a resource name may be as long as 127 characters (import reads them into
        buffers of that size): a long region, zone or location is refused by what it is, not
        written past a shorter buffer."""
        self.write({"a": job_yaml("a"), "r": reservation_yaml(), "q": quota_yaml()})
        long = "x" * 120
        job = "projects/%s/locations/%s/customJobs/1" % (PROJECT, long)
        self.assert_refused(["job.a", job], "vx: import: job.a: %s is in region %s, but job.a is declared in "
                            "region %s\n" % (job, long, REGION))
        job = "projects/%s/locations/%s/customJobs/%s" % (PROJECT, REGION, "7" * 120)
        self.assert_refused(["job.a", job], "vx: import: vertex: reading job %s: not a job resource name\n"
                            % job)
        res = "projects/%s/zones/%s/reservations/pool" % (PROJECT, long)
        self.assert_refused(["reservation.pool", res], "vx: import: reservation.pool: %s is in zone %s, but "
                            "reservation.pool is declared in zone %s\n" % (res, long, ZONE))
        q = "projects/%s/locations/%s/quotaPreferences/l4-training" % (PROJECT, long)
        self.assert_refused(["quota.l4-training", q], "vx: import: quota.l4-training takes a Cloud Quotas "
                            "preference, projects/PROJECT/locations/global/quotaPreferences/ID, not '%s'\n" % q)
        self.assertEqual(self.tree(), [])

    def test_refusals_of_reservations_and_quotas(self):
        self.write({"r": reservation_yaml(), "q": quota_yaml()})
        res = self.make_reservation(name="other-name")
        self.assert_refused(["reservation.pool", res], "vx: import: reservation.pool: the reservation must be "
                            "named pool, as the address is, not other-name\n")
        res = "projects/%s/zones/%s-b/reservations/pool" % (PROJECT, REGION)
        self.assert_refused(["reservation.pool", res], "vx: import: reservation.pool: %s is in zone %s-b, but "
                            "reservation.pool is declared in zone %s\n" % (res, REGION, ZONE))
        res = "projects/%s/zones/%s/reservations/pool" % (PROJECT, ZONE)
        self.assert_refused(["reservation.pool", res], "vx: import: reservation.pool: %s does not exist\n" % res)
        q = "projects/%s/locations/global/quotaPreferences/l4-training" % PROJECT
        self.assert_refused(["quota.l4-training", q], "vx: import: quota.l4-training: %s does not exist\n" % q)
