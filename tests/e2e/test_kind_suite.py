"""The kind suite: every case of a managed resource's life, written once and run on each kind.

As Terraform runs one TestBackendStates on each of its backends, every kind vx manages runs
the same cases here: create, no change, an in-place update, a replacing change, removal (delete)
and abandon, protect, drift at the cloud, import, a crash between the journal and the result,
and adoption of a live resource the state does not know.

A kind joins by adding ONE ROW to ROWS: its declaration, the changes, the plan lines vx prints
for each (compared exactly), how to drift it, import it and count it at the fake. Where a kind
has no such operation the row says so with a reason (Absent("why")) and the case asserts what
the kind does instead; nothing is skipped. Each (row, case) is its own test method,
test_<row>_<case>, so a failure names both.
"""
import json
import os
import re
import signal
import subprocess
import time
import unittest
import urllib.request

from harness import PROJECT, REGION, VX_BIN, FakeTestCase, job_yaml, process_state

ZONE = REGION + "-a"
TOKEN = "outsider-token"
RUNNING_AFTER = 60       # virtual seconds: QUEUED -> PENDING -> RUNNING with the fake's defaults
FINISHED_AFTER = 4000    # and RUNNING -> SUCCEEDED


class Absent:
    """A case the kind has no operation for; the reason says why, and the case asserts instead."""

    def __init__(self, why, **instead):
        self.why = why
        self.__dict__.update(instead)


# ---- the declarations ----------------------------------------------------------------------------

def reservation_yaml(count=2, machine="g2-standard-8", extra=""):
    return ("---\nkind: Reservation\nname: pool\nzone: %s\nmachineType: %s\n"
            "accelerators: [{type: nvidia-l4, count: 1}]\ncount: %d\n%s" % (ZONE, machine, count, extra))


FR_START = "2031-03-02T09:00:00Z"   # after the fake's frozen clock and vx's real one
FR_SHAPE = "g2-standard-8 ×2, 1×nvidia-l4 in us-central1-a, 2031-03-02 09:00 UTC for %s"


def future_yaml(duration="5d", extra=""):
    return ("---\nkind: FutureReservation\nname: pool\nzone: %s\nmode: calendar\n"
            "window: {start: %s, duration: %s}\nspec:\n  specificSkuProperties:\n    totalCount: 2\n"
            "    instanceProperties:\n      machineType: g2-standard-8\n"
            "      guestAccelerators: [{acceleratorType: nvidia-l4, acceleratorCount: 1}]\n%s"
            % (ZONE, FR_START, duration, extra))


def quota_yaml(value=16, quota_id="CustomModelTrainingL4GPUsPerProjectPerRegion"):
    return ("---\nkind: QuotaPreference\nname: l4-training\nservice: aiplatform.googleapis.com\n"
            "quotaId: %s\ndimensions: {region: %s}\npreferredValue: %d\n"
            "contactEmail: ml-infra@example.com\n" % (quota_id, REGION, value))


def persistent_yaml(replicas=2, machine="g2-standard-8", extra=""):
    return ("---\nkind: PersistentResource\nname: eval-pool\nspec:\n  resourcePools:\n    - id: l4s\n"
            "      machineSpec: {machineType: %s, acceleratorType: NVIDIA_L4, acceleratorCount: 1}\n"
            "      replicaCount: %d\n%s" % (machine, replicas, extra))


# ---- calls at the fake as someone else would make them (gcloud, the console) ---------------------

def api(t, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(t.fake.url + path, data=data, method=method,
                                 headers={"Content-Type": "application/json", "Authorization": "Bearer " + TOKEN})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read() or b"{}")


def job_spec():
    """The jobSpec job_yaml("a") declares, as a person would send it."""
    return {"workerPoolSpecs": [{
        "machineSpec": {"machineType": "g2-standard-4", "acceleratorType": "NVIDIA_L4", "acceleratorCount": 1},
        "replicaCount": "1",
        "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/trainer:1.0", "args": ["--epochs", "3"]}}],
        "scheduling": {"strategy": "STANDARD"},
        "baseOutputDirectory": {"outputUriPrefix": "gs://e2e-bucket/a"}}


def make_job(t):
    made = api(t, "POST", "/v1/projects/%s/locations/%s/customJobs" % (PROJECT, REGION),
               {"displayName": "by-hand", "jobSpec": job_spec()})
    return re.sub(r"^projects/[^/]+/", "projects/%s/" % PROJECT, made["name"])


def make_reservation(t):
    body = {"name": "pool", "specificReservationRequired": True, "specificReservation": {
        "count": "2", "instanceProperties": {
            "machineType": "g2-standard-8",
            "guestAccelerators": [{"acceleratorType": "nvidia-l4", "acceleratorCount": 1}]}}}
    op = api(t, "POST", "/compute/v1/projects/%s/zones/%s/reservations" % (PROJECT, ZONE), body)
    link = "/compute/v1/" + op["selfLink"].split("/compute/v1/", 1)[1]
    while api(t, "GET", link)["status"] != "DONE":
        t.fake.advance(1)
    return "projects/%s/zones/%s/reservations/pool" % (PROJECT, ZONE)


def make_future(t):
    body = {"name": "pool", "reservationMode": "CALENDAR", "planningStatus": "SUBMITTED",
            "autoDeleteAutoCreatedReservations": True, "specificReservationRequired": True,
            "timeWindow": {"startTime": FR_START, "duration": {"seconds": str(5 * 86400)}},
            "specificSkuProperties": {"totalCount": "2", "instanceProperties": {
                "machineType": "g2-standard-8",
                "guestAccelerators": [{"acceleratorType": "nvidia-l4", "acceleratorCount": 1}]}}}
    op = api(t, "POST", "/compute/v1/projects/%s/zones/%s/futureReservations" % (PROJECT, ZONE), body)
    link = "/compute/v1/" + op["selfLink"].split("/compute/v1/", 1)[1]
    while api(t, "GET", link)["status"] != "DONE":
        t.fake.advance(1)
    return "projects/%s/zones/%s/futureReservations/pool" % (PROJECT, ZONE)


def make_quota(t):
    body = {"service": "aiplatform.googleapis.com", "quotaId": "CustomModelTrainingL4GPUsPerProjectPerRegion",
            "quotaConfig": {"preferredValue": "16"}, "dimensions": {"region": REGION},
            "contactEmail": "ml-infra@example.com"}
    return api(t, "POST", "/v1/projects/%s/locations/global/quotaPreferences?quotaPreferenceId=l4-training"
               % PROJECT, body)["name"]


PERSISTENT_PATH = "/v1/projects/%s/locations/%s/persistentResources" % (PROJECT, REGION)


def persistent_pools(replicas):
    return {"resourcePools": [{"id": "l4s", "replicaCount": str(replicas), "machineSpec": {
        "machineType": "g2-standard-8", "acceleratorType": "NVIDIA_L4", "acceleratorCount": 1}}]}


def make_persistent(t):
    api(t, "POST", PERSISTENT_PATH + "?persistentResourceId=eval-pool", persistent_pools(2))
    return "projects/%s/locations/%s/persistentResources/eval-pool" % (PROJECT, REGION)


def persistent_setup(t):
    # operations end at once (the fake provisions in 300 s of its clock otherwise)
    t.fake.post("/_fake/timings", {"provisioning_seconds": 0, "updating_seconds": 0, "stopping_seconds": 0})


def drift_job(t):
    t.fake.cancel_behind_vx(t.live_jobs("a")[0]["name"])
    t.fake.advance(RUNNING_AFTER)


def drift_reservation(t):
    api(t, "POST", "/compute/v1/projects/%s/zones/%s/reservations/pool/resize" % (PROJECT, ZONE),
        {"specificSkuCount": "5"})


def drift_future(t):
    api(t, "POST", "/compute/v1/projects/%s/zones/%s/futureReservations/pool/cancel" % (PROJECT, ZONE))


def drift_quota(t):
    api(t, "PATCH", "/v1/projects/%s/locations/global/quotaPreferences/l4-training"
        "?updateMask=quotaConfig.preferredValue" % PROJECT, {"quotaConfig": {"preferredValue": "15"}})


def live_jobs(t):
    """Jobs of address job.a that run (queued, pending, running)."""
    return len(t.active("a"))


def all_jobs(t):
    """Every job of address job.a, ended or not: a crash must not leave two."""
    return len(t.live_jobs("a"))


def live_reservations(t):
    got = t.fake.get("/_fake/reservations")
    return len([r for r in got.get("reservations", got) if r["name"] == "pool"])


def live_persistent(t):
    got = t.fake.get("/_fake/persistent-resources")["persistentResources"]
    return len([r for r in got if r["name"].endswith("/eval-pool") and r["state"] != "STOPPING"])


def drift_persistent(t):
    api(t, "PATCH", PERSISTENT_PATH + "/eval-pool?updateMask=resourcePools", persistent_pools(3))


def live_quotas(t):
    got = t.fake.get("/_fake/quota-preferences")
    items = got.get("quotaPreferences", got) if isinstance(got, dict) else got
    return len([q for q in items if q["name"].endswith("/l4-training")])


def live_futures(t):
    got = api(t, "GET", "/compute/v1/projects/%s/zones/%s/futureReservations" % (PROJECT, ZONE))
    return len([f for f in got.get("items", []) if f["name"] == "pool"])


def quota_setup(t):
    # a granted L4 quota of 8, so that 16 and 32 are increases (the fake starts at 1000)
    t.fake.post("/_fake/quota", {"region": REGION, "accelerator_type": "NVIDIA_L4", "preemptible": False,
                                 "limit": 8})


def finish_job(t):
    t.fake.advance(FINISHED_AFTER)


# ---- the table: one row per kind -------------------------------------------------------------------

class Row:
    """One kind. name and address; state_file, its record in the state branch; setup(t), what the fake
    needs first (or None); yaml, its declaration; create, the plan's block for it (the action line and
    the lines under it, as block() strips them); count(t), how many of it live at the fake (count_all(t):
    ended ones too); update, replace, remove, abandon, protect, drift, imp, crash and adopt: each case's
    change and the exact plan lines it gives, or Absent(why, ...) with what the kind does instead. A
    value that names a live resource is a function of the test case (t.run_name())."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


QUOTA_ABANDON = ["-   quota.l4-training abandon",
                 "aiplatform.googleapis.com CustomModelTrainingL4GPUsPerProjectPerRegion (region=us-central1): 16 "
                 "(granted 16)",
                 "no longer declared: Cloud Quotas has no delete, so vx stops managing it; the preference stays "
                 "as it is"]

ROWS = [
    Row(name="job", address="job.a", state_file="jobs/a.json",
        setup=None,
        yaml=job_yaml("a"),
        create=["+   job.a create", "g2-standard-4 ×1, 1×L4, STANDARD in us-central1", "new job"],
        count=live_jobs, count_all=all_jobs,
        # A job changes in place by a new run of the same declaration: run 1 -> 2 reruns it.
        update=dict(before=finish_job, yaml=job_yaml("a", run=2),
                    plan=["↻   job.a rerun", "g2-standard-4 ×1, 1×L4, STANDARD in us-central1",
                          "run bumped 1 -> 2 after the last run succeeded"], live=1),
        # A spec change of a live run replaces it (onChange: replace): cancel, then a new job.
        replace=dict(yaml=job_yaml("a", epochs=4), refused=None,
                     plan=lambda t: ["-/+ job.a replace", "g2-standard-4 ×1, 1×L4, STANDARD in us-central1",
                                     "spec changed: workerPoolSpecs[0].containerSpec.args while queued",
                                     "cancels " + t.run_name()], live=1),
        # Cancelled; the record stays until the cancel is seen done, then it is forgotten.
        remove=dict(plan=lambda t: ["-   job.a cancel", "no longer declared; run %s is queued" % t.run_name(),
                                    "cancels " + t.run_name()],
                    live=0, then=dict(before=lambda t: t.fake.advance(10),
                              plan=lambda t: ["-   job.a forget", "no longer declared; last run %s cancelled "
                                              "(history stays in git)" % t.run_name()])),
        # A job that ended is forgotten when undeclared: nothing to cancel, its history stays.
        abandon=dict(before=finish_job, live=0,
                     plan=lambda t: ["-   job.a forget", "no longer declared; last run %s succeeded (history stays "
                                     "in git)" % t.run_name()]),
        protect=dict(yaml=job_yaml("a", protect="true"),
                     error=lambda t: "  job.a is protected (protect: true): it is no longer declared but its run "
                                     "%s is queued; cancelling it is refused" % t.run_name()),
        # Cancelled at the cloud: reported; not resubmitted (cancelled-outside is not in resubmit.on).
        drift=dict(at_fake=drift_job, code=0,
                   plan=lambda t: ["  ! job.a: run %s was cancelled outside vx -> noop" % t.run_name()]),
        imp=dict(make=make_job, create_rpc="CreateCustomJob",
                 # named by project id; vx and Vertex AI name it by project number
                 out=lambda t, name: "job.a: imported %s (queued); it matches the declaration\n" % t.fake_job(),
                 # Vertex AI has no update method: the import cannot label the job.
                 err=lambda t, name: "vx: warning: job.a: %s has no vx labels, and Vertex AI cannot add labels to "
                                     "an existing CustomJob (it has no update method): only this state's record "
                                     "shows it is vx's, so no other stack or state can tell from the job itself\n"
                                     % t.fake_job()),
        crash=dict(rpc="CreateCustomJob", journal=True, done=lambda t: "~ job.a adopt " + t.run_name()),
        adopt=Absent("vx state rm releases a job: Vertex AI cannot relabel it, so its name is kept as "
                     "released and never adopted (docs/state.md); a job is adopted by its labels after a "
                     "lost create, which the crash case shows",
                     plan=["+   job.a create", "g2-standard-4 ×1, 1×L4, STANDARD in us-central1", "new job"],
                     live=2, refused=("job.a: the job released from the state of the same address (vx state rm) "
                                      "is still active"),
                     flags=["-allow-released"])),
    Row(name="reservation", address="reservation.pool", state_file="reservations/pool.json",
        setup=None,
        yaml=reservation_yaml(),
        create=["+   reservation.pool create", "g2-standard-8 ×2, 1×nvidia-l4 in us-central1-a",
                "new reservation"],
        count=live_reservations, count_all=live_reservations,
        update=dict(before=None, yaml=reservation_yaml(count=3),
                    plan=["~   reservation.pool update", "g2-standard-8 ×3, 1×nvidia-l4 in us-central1-a (in use 0/2)",
                          "resize in place: count 2 -> 3"], live=1),
        # Compute cannot change a reservation's machine in place: refused, then -replace.
        replace=dict(yaml=reservation_yaml(machine="g2-standard-12"),
                     refused=["  reservation.pool: machineType g2-standard-8 -> g2-standard-12 cannot change in "
                              "place: Compute would have to delete the reservation and make a new one, and the "
                              "capacity it holds might not come back; to do that anyway, plan with -replace "
                              "reservation.pool"],
                     plan=["-/+ reservation.pool replace",
                           "g2-standard-12 ×2, 1×nvidia-l4 in us-central1-a (in use 0/2)",
                           "machineType g2-standard-8 -> g2-standard-12 (-replace): deleted, then created again"],
                     live=1),
        remove=dict(plan=["-   reservation.pool delete", "g2-standard-8 ×2, 1×nvidia-l4 (in use 0/2) in us-central1-a",
                          "no longer declared"], live=0, then=None),
        abandon=Absent("a reservation vx made is deleted once undeclared (its capacity is billed); "
                       "there is no onRemove for reservations: protect: true refuses the delete instead"),
        protect=dict(yaml=reservation_yaml(extra="protect: true\n"),
                     error=lambda t: "  reservation.pool is protected (protect: true): it is no longer declared; "
                                     "deleting it is refused"),
        drift=dict(at_fake=drift_reservation, code=2,
                   plan=lambda t: ["  ! reservation.pool: count changed outside vx: 2 recorded, 5 live -> update"]),
        imp=dict(make=make_reservation, create_rpc="Reservations.Insert",
                 out=lambda t, name: "reservation.pool: imported %s (READY); it matches the declaration\n" % name,
                 err=lambda t, name: ""),
        crash=dict(rpc="Reservations.Insert", journal=True, done=lambda t: "~ reservation.pool adopt pool"),
        adopt=dict(plan=["~   reservation.pool adopt", "g2-standard-8 ×2, 1×nvidia-l4 in us-central1-a (in use 0/2)",
                         "a reservation pool with this stack's marker exists in us-central1-a: an earlier apply "
                         "created it"])),
    Row(name="future", address="future_reservation.pool", state_file="future_reservations/pool.json",
        setup=None,
        yaml=future_yaml(),
        create=["+   future_reservation.pool create", FR_SHAPE % "5d",
                "new booking: submitted for Google's approval"],
        count=live_futures, count_all=live_futures,
        # A submitted booking is never amended (docs/future-reservations.md): what changes in place is
        # vx's own part of the declaration, recorded without a call.
        update=dict(before=None, yaml=future_yaml(extra="protect: true\n"),
                    plan=["~   future_reservation.pool update", FR_SHAPE % "5d" + " (PENDING_APPROVAL)",
                          "protect false -> true: recorded; nothing is sent to Google"], live=1),
        # Any change of the request: cancel and book again, shown as such.
        replace=dict(yaml=future_yaml(duration="6d"), refused=None,
                     plan=["-/+ future_reservation.pool replace", FR_SHAPE % "6d" + " (PENDING_APPROVAL)",
                           "window 2031-03-02 09:00 UTC for 5d -> 2031-03-02 09:00 UTC for 6d: a submitted "
                           "booking cannot change; cancel and book again (the new request is reviewed anew)"],
                     live=1),
        remove=dict(plan=["-   future_reservation.pool cancel", FR_SHAPE % "5d" + " (PENDING_APPROVAL)",
                          "no longer declared: cancelled before its window opens, then deleted; saves 2 VMs x "
                          "120 h = 240 VM-hours (240 GPU-hours; Google publishes no calendar-mode prices: the "
                          "cost line estimates them at on-demand rates)"], live=0, then=None),
        abandon=Absent("a booking vx made is cancelled and deleted once undeclared (its window is billed); "
                       "there is no onRemove for bookings: protect: true refuses the cancel instead"),
        protect=dict(yaml=future_yaml(extra="protect: true\n"),
                     error=lambda t: "  future_reservation.pool is protected (protect: true): it is no longer "
                                     "declared; cancelling it is refused"),
        drift=dict(at_fake=drift_future, code=2,
                   plan=lambda t: ["  ! future_reservation.pool: future reservation pool was cancelled outside "
                                   "vx -> replace"]),
        imp=dict(make=make_future, create_rpc="FutureReservations.Insert",
                 out=lambda t, name: "future_reservation.pool: imported %s (PENDING_APPROVAL); it matches the "
                                     "declaration\n" % name,
                 err=lambda t, name: ""),
        crash=dict(rpc="FutureReservations.Insert", journal=True, done=lambda t: "~ future_reservation.pool adopt pool"),
        adopt=dict(plan=["~   future_reservation.pool adopt", FR_SHAPE % "5d" + " (PENDING_APPROVAL)",
                         "a future reservation pool with this stack's marker exists in us-central1-a: an earlier "
                         "apply booked it"])),
    Row(name="quota", address="quota.l4-training", state_file="quotas/l4-training.json",
        setup=quota_setup,
        yaml=quota_yaml(),
        create=["+   quota.l4-training create",
                "aiplatform.googleapis.com CustomModelTrainingL4GPUsPerProjectPerRegion (region=us-central1): 16",
                "new quota preference"],
        count=live_quotas, count_all=live_quotas,
        update=dict(before=None, yaml=quota_yaml(value=32),
                    plan=["~   quota.l4-training update",
                          "aiplatform.googleapis.com CustomModelTrainingL4GPUsPerProjectPerRegion "
                          "(region=us-central1): 32 (granted 16)", "preferredValue 16 -> 32"], live=1),
        replace=Absent("Cloud Quotas cannot move a preference to another quota, and has no delete: "
                       "the change is refused, -replace too (give the declaration another name)",
                       yaml=quota_yaml(quota_id="CustomModelTrainingA100GPUsPerProjectPerRegion"),
                       refused=["  quota.l4-training: the preference l4-training exists for "
                                "aiplatform.googleapis.com CustomModelTrainingL4GPUsPerProjectPerRegion, not "
                                "aiplatform.googleapis.com CustomModelTrainingA100GPUsPerProjectPerRegion: a "
                                "preference cannot change its quota; give the declaration another name"]),
        # Cloud Quotas has no delete: an undeclared preference is abandoned, it stays.
        remove=Absent("Cloud Quotas has no delete method: removal abandons the preference",
                      plan=QUOTA_ABANDON, live=1, then=None),
        abandon=dict(before=None, plan=QUOTA_ABANDON, live=1),
        protect=Absent("a QuotaPreference has no protect key: vx never deletes a preference, so an "
                       "undeclared one is abandoned, never removed",
                       plan=QUOTA_ABANDON, live=1, yaml=quota_yaml() + "protect: true\n",
                       refused=lambda t: "%s/jobs.yaml:9:1: QuotaPreference \"l4-training\": unknown field "
                                         "\"protect\" (one of kind, name, service, quotaId, dimensions, "
                                         "preferredValue, contactEmail, justification, ignoreSafetyChecks)\n"
                                         % t.repo.dir),
        drift=dict(at_fake=drift_quota, code=2,
                   plan=lambda t: ["  ! quota.l4-training: preferredValue changed outside vx: 16 recorded, 15 live "
                                   "-> update"]),
        imp=dict(make=make_quota, create_rpc="CreateQuotaPreference",
                 out=lambda t, name: "quota.l4-training: imported %s (granted 16); it matches the declaration\n" % name,
                 err=lambda t, name: ""),
        # A preference's id is its declared name: a create that landed is found by name and
        # adopted, and Cloud Quotas refuses a second create of one id, so no intent is journaled.
        crash=dict(rpc="CreateQuotaPreference", journal=False, done=lambda t: "~ quota.l4-training adopt"),
        adopt=dict(plan=["~   quota.l4-training adopt",
                         "aiplatform.googleapis.com CustomModelTrainingL4GPUsPerProjectPerRegion (region=us-central1): "
                         "16 (granted 16)", "a preference l4-training with this value exists: adopted"])),
    Row(name="persistent", address="persistent_resource.eval-pool",
        state_file="persistent_resources/eval-pool.json",
        setup=persistent_setup,
        yaml=persistent_yaml(),
        create=["+   persistent_resource.eval-pool create", "l4s: g2-standard-8 ×2, 1×NVIDIA_L4",
                "new persistent resource"],
        count=live_persistent, count_all=live_persistent,
        update=dict(before=None, yaml=persistent_yaml(replicas=3),
                    plan=["~   persistent_resource.eval-pool update",
                          "l4s: g2-standard-8 ×3, 1×NVIDIA_L4 [RUNNING, 0 used]",
                          "in place (updateMask resourcePools): pool l4s replicaCount 2 -> 3"], live=1),
        # A pool's machine cannot change in place: refused as a reservation's is, then -replace.
        replace=dict(yaml=persistent_yaml(machine="g2-standard-12"),
                     refused=["  persistent_resource.eval-pool: pool l4s: machineType g2-standard-8 -> g2-standard-12 "
                              "cannot change in place: Vertex AI would have to delete the persistent resource and "
                              "make a new one, and the machines it holds might not come back; to do that anyway, "
                              "plan with -replace persistent_resource.eval-pool"],
                     plan=["-/+ persistent_resource.eval-pool replace",
                           "l4s: g2-standard-12 ×2, 1×NVIDIA_L4 [RUNNING, 0 used]",
                           "pool l4s: machineType g2-standard-8 -> g2-standard-12 (-replace): deleted, then created "
                           "again"], live=1),
        remove=dict(plan=["-   persistent_resource.eval-pool delete",
                          "l4s: g2-standard-8 ×2, 1×NVIDIA_L4 [RUNNING, 0 used] in us-central1",
                          "no longer declared"], live=0, then=None),
        # deletionPolicy: abandon: forgotten, left running.
        abandon=dict(before=lambda t: (t.declare(persistent_yaml(extra="deletionPolicy: abandon\n")),
                                       t.assertEqual(t.repo.apply().code, 0)),
                     plan=["-   persistent_resource.eval-pool abandon",
                           "l4s: g2-standard-8 ×2, 1×NVIDIA_L4 [RUNNING, 0 used]",
                           "no longer declared (deletionPolicy: abandon): forgotten, left running"], live=1),
        protect=dict(yaml=persistent_yaml(extra="protect: true\n"),
                     error=lambda t: "  persistent_resource.eval-pool is protected (protect: true): it is no longer "
                                     "declared; deleting it is refused"),
        drift=dict(at_fake=drift_persistent, code=2,
                   plan=lambda t: ["  ! persistent_resource.eval-pool: replicas changed outside vx: 2 recorded, 3 "
                                   "live -> update"]),
        imp=dict(make=make_persistent, create_rpc="CreatePersistentResource",
                 out=lambda t, name: "persistent_resource.eval-pool: imported %s (RUNNING); it matches the "
                                     "declaration\n" % name,
                 err=lambda t, name: ""),
        crash=dict(rpc="CreatePersistentResource", journal=True,
                   done=lambda t: "~ persistent_resource.eval-pool adopt eval-pool"),
        adopt=dict(plan=["~   persistent_resource.eval-pool adopt",
                         "l4s: g2-standard-8 ×2, 1×NVIDIA_L4 [RUNNING, 0 used]",
                         "a persistent resource eval-pool with this stack's labels exists in us-central1 (RUNNING): "
                         "an earlier apply created it"])),
]

CASES = ("create", "no_change", "update", "replace", "remove", "abandon", "protect", "drift", "import",
         "crash", "adopt")


class KindSuite(FakeTestCase):

    def setUp(self):
        super().setUp()
        self.fake.post("/_fake/tokens", {"token": TOKEN})

    # ---- helpers -----------------------------------------------------------------------------

    def declare(self, yaml):
        self.repo.jobs = {"x": yaml} if yaml else {}
        self.repo.write()

    def lines(self, row, out):
        """The plan's block for the row's address (its action line and the lines under it)."""
        return self.block(out, row.address)

    def actions(self, out):
        # any kind's address (PREFIX.NAME), so a new kind's lines are not missed
        action = re.compile(r"^  \S+ +[a-z][a-z0-9-]*\.[^ ]+ [a-z]+$")
        return [l for l in out.splitlines() if action.match(l)]

    @staticmethod
    def errors(out):
        lines = out.splitlines()
        start = lines.index("Errors (the plan cannot be applied):") + 1
        end = start
        while end < len(lines) and lines[end]:
            end += 1
        return lines[start:end]

    def no_changes(self):
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.actions(r.out), [], r)
        return r

    def created(self, row, yaml=None):
        if row.setup:
            row.setup(self)
        self.declare(yaml or row.yaml)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(row.count(self), 1)

    def has_record(self, row):
        try:
            tree = self.repo.git("ls-tree", "-r", "--name-only", "vx/state/e2e").split()
        except subprocess.CalledProcessError:
            return False   # no state branch yet
        return row.state_file in tree

    def removal(self, row, want):
        """Undeclares the row's resource; the plan and the apply do what want says."""
        self.declare(None)
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 2, r)
        plan = want["plan"](self) if callable(want["plan"]) else want["plan"]
        self.assertEqual(self.lines(row, r.out), plan, r)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(row.count(self), want["live"])
        then = want.get("then")
        if then:
            then["before"](self)
            r = self.repo.plan("-detailed-exitcode")
            self.assertEqual(r.code, 2, r)
            self.assertEqual(self.lines(row, r.out), then["plan"](self), r)
            self.assertEqual(self.repo.apply().code, 0)

    # ---- the cases ---------------------------------------------------------------------------

    def case_create(self, row):
        if row.setup:
            row.setup(self)
        self.declare(row.yaml)
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 2, r)
        self.assertEqual(self.lines(row, r.out), row.create, r)
        self.assertEqual(row.count(self), 0, "a plan creates nothing")
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(row.count(self), 1)
        self.assertTrue(self.has_record(row))

    def case_no_change(self, row):
        self.created(row)
        r = self.no_changes()
        self.assertIn("Plan: no changes. 1 unchanged.", r.out.splitlines(), r)
        tip = self.repo.git("rev-parse", "vx/state/e2e")
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(row.count(self), 1)
        self.assertEqual(self.repo.git("rev-parse", "vx/state/e2e"), tip, "an apply with nothing to do writes nothing")

    def case_update(self, row):
        self.created(row)
        u = row.update
        if u["before"]:
            u["before"](self)
        self.declare(u["yaml"])
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 2, r)
        self.assertEqual(self.lines(row, r.out), u["plan"], r)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(row.count(self), u["live"])
        self.no_changes()

    def case_replace(self, row):
        self.created(row)
        rp = row.replace
        yaml, refused = (rp.yaml, rp.refused) if isinstance(rp, Absent) else (rp["yaml"], rp["refused"])
        self.declare(yaml)
        if refused:
            r = self.repo.plan()
            self.assertEqual(r.code, 1, r)
            self.assertEqual(self.errors(r.out), refused, r)
            self.assertEqual(self.repo.apply().code, 1)
            self.assertEqual(row.count(self), 1)
        if isinstance(rp, Absent):
            # rp.why: not even -replace does it.
            r = self.repo.apply("-replace", row.address)
            self.assertEqual(r.code, 1, r)
            self.assertEqual(row.count(self), 1)
            return
        args = ("-replace", row.address) if refused else ()
        r = self.repo.plan(*args)
        self.assertEqual(r.code, 0, r)
        plan = rp["plan"](self) if callable(rp["plan"]) else rp["plan"]
        self.assertEqual(self.lines(row, r.out), plan, r)
        r = self.repo.apply(*args)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(row.count(self), rp["live"])
        self.no_changes()

    def case_remove(self, row):
        self.created(row)
        rm = row.remove
        self.removal(row, rm.__dict__ if isinstance(rm, Absent) else rm)
        self.assertFalse(self.has_record(row))
        self.no_changes()

    def case_abandon(self, row):
        self.created(row)
        ab = row.abandon
        if isinstance(ab, Absent):
            # ab.why: the removal deletes it, as the remove case shows; a second apply has nothing to do.
            self.removal(row, row.remove)
        else:
            if ab["before"]:
                ab["before"](self)
            self.removal(row, ab)
        self.assertFalse(self.has_record(row))
        self.no_changes()

    def case_protect(self, row):
        pr = row.protect
        if isinstance(pr, Absent):
            # pr.why: protect is refused where it is written; the removal is an abandon, the resource stays.
            self.declare(pr.yaml)
            r = self.repo.vx("validate", self.repo.dir)
            self.assertEqual((r.code, r.err), (1, pr.refused(self)), r)
            self.created(row)
            self.removal(row, pr.__dict__)
            return
        self.created(row, pr["yaml"])
        self.declare(None)
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(self.errors(r.out), [pr["error"](self)], r)
        r = self.repo.apply()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(row.count(self), 1)
        self.assertTrue(self.has_record(row))

    def case_drift(self, row):
        self.created(row)
        row.drift["at_fake"](self)
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, row.drift["code"], r)
        drift = [l for l in r.out.splitlines() if l.startswith("  ! ")]
        self.assertEqual(drift, row.drift["plan"](self), r)

    def case_import(self, row):
        if row.setup:
            row.setup(self)
        self.declare(row.yaml)
        name = row.imp["make"](self)
        r = self.repo.vx("import", row.address, name, self.repo.dir)
        self.assertEqual((r.code, r.out, r.err), (0, row.imp["out"](self, name), row.imp["err"](self, name)), r)
        self.assertEqual(json.loads(self.repo.git("show", "vx/state/e2e:" + row.state_file))
                         ["current"]["action"], "import")
        self.no_changes()
        self.assertEqual(self.fake.rpc_count(row.imp["create_rpc"]), 1, "only the one made by hand")

    def case_crash(self, row):
        """Stopped right before its create is sent (VX_TEST_PAUSE=before-send): the intent is
        journaled already and nothing was sent. Then killed while the create is on the wire: the
        result is never written. The next apply adopts what the create made: never two."""
        if row.setup:
            row.setup(self)
        self.declare(row.yaml)
        rpc = row.crash["rpc"]
        env = dict(self.fake.env(), VX_TEST_PAUSE="before-send")
        p = subprocess.Popen([VX_BIN, "apply", self.repo.dir, "-auto-approve"], cwd=self.repo.root, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        try:
            self.wait_for(lambda: process_state(p.pid) in ("T", "t") or p.poll() is not None,
                          "the apply did not pause")
            self.assertIsNone(p.poll(), "the apply ran to the end instead of pausing")
            self.assertEqual(self.calls(rpc), [])
            intents = [m for m in self.state_log() if "intent %s create" % row.address in m]
            self.assertEqual(len(intents), 1 if row.crash["journal"] else 0, self.state_log())
            # The create goes out slowly; the apply dies while it is on the wire.
            self.fake.post("/_fake/faults", {"latency_ms": 5000, "methods": [rpc]})
            p.send_signal(signal.SIGCONT)
            self.wait_for(lambda: self.calls(rpc), "the create was not sent")
        finally:
            p.send_signal(signal.SIGKILL)
            p.communicate(timeout=60)
        self.assertFalse(self.has_record(row) and self.recorded_resource(row))
        # The server finishes the create the killed apply sent.
        self.wait_for(lambda: all(c["status"] is not None for c in self.calls(rpc)), "the create never ended")
        self.fake.post("/_fake/faults", {})
        r = self.repo.apply("-lock-timeout", "60s")
        self.assertEqual(r.code, 0, r)
        self.assertIn(row.crash["done"](self), r.out.splitlines(), r)
        self.assertIn("Apply complete: 1 done, 0 failed.", r.out.splitlines(), r)
        self.assertEqual(len(self.calls(rpc)), 1, "not created again")
        self.assertEqual(row.count_all(self), 1)
        self.no_changes()

    def case_adopt(self, row):
        """The state forgot it (vx state rm): the live resource, with this stack's marks, is adopted."""
        self.created(row)
        ad = row.adopt
        want = ad.__dict__ if isinstance(ad, Absent) else dict(ad, live=1)
        r = self.repo.vx("state", "rm", row.address, self.repo.dir)
        self.assertEqual(r.code, 0, r)
        self.assertFalse(self.has_record(row))
        flags = want.get("flags", [])
        if want.get("refused"):
            # A released job still active: creating another beside it is a plan error
            # until the flag says both may run.
            r = self.repo.plan("-detailed-exitcode")
            self.assertEqual(r.code, 1, r)
            self.assertTrue(any(l.strip().startswith(want["refused"]) for l in r.out.splitlines()), r)
        r = self.repo.plan("-detailed-exitcode", *flags)
        self.assertEqual(r.code, 2, r)
        self.assertEqual(self.lines(row, r.out), want["plan"], r)
        r = self.repo.apply(*flags)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(row.count_all(self), want["live"])
        self.assertTrue(self.has_record(row))
        self.no_changes()

    # ---- plumbing ----------------------------------------------------------------------------

    def calls(self, rpc):
        return [e for e in self.fake.get("/_fake/requests?log=1000")["log"] if e["rpc"] == rpc]

    def fake_job(self):
        """The name of the one job at the fake, labelled or not."""
        jobs = self.fake.jobs()
        self.assertEqual(len(jobs), 1, jobs)
        return jobs[0]["name"]

    def run_name(self):
        """The one job of job.a at the fake."""
        jobs = self.live_jobs("a")
        self.assertEqual(len(jobs), 1, jobs)
        return jobs[0]["name"]

    def state_log(self):
        """The state branch's commit messages; none before its first commit."""
        try:
            return self.repo.state_log()
        except subprocess.CalledProcessError:
            return []

    def recorded_resource(self, row):
        rec = json.loads(self.repo.git("show", "vx/state/e2e:" + row.state_file))
        return (rec.get("current") or {}).get("resource")

    def wait_for(self, cond, why, seconds=60):
        deadline = time.time() + seconds
        while not cond():
            self.assertLess(time.time(), deadline, why)
            time.sleep(0.05)


def _make(row, case):
    def test(self):
        getattr(self, "case_" + case)(row)
    test.__doc__ = "%s: %s" % (row.name, case)
    return test


for _row in ROWS:
    for _case in CASES:
        setattr(KindSuite, "test_%s_%s" % (_row.name, _case), _make(_row, _case))


if __name__ == "__main__":
    unittest.main()
