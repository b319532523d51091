"""Jobs in a booking's window (issue 35): a CustomJob whose `reservation:` names a FutureReservation.

Against the fake on its virtual clock (frozen at 2026-01-01T00:00:00Z, a Thursday, and moved only when a
test says; vx's clock is set to the fake's through VX_NOW). The job waits, saying for what, until the
booking's capacity is delivered and open to Vertex AI; then it is created once, on the reservation Google
delivered, by its full name. vx validate refuses what cannot run in a window at its line.
"""
import json
import time
import urllib.request

from harness import PROJECT, REGION, FakeTestCase

ZONE = REGION + "-a"
START = "2026-01-08T09:00:00Z"
START_S = 1767862800            # START in seconds
FAKE_T0 = 1767225600            # 2026-01-01T00:00:00Z, the fake's frozen clock
TOKEN = "outsider-token"
FULL = "projects/%s/zones/%s/reservations/gpus" % (PROJECT, ZONE)
BOOKING = ("---\nkind: FutureReservation\nname: gpus\nzone: %s\nmode: calendar\n"
           "window: {start: %s, duration: 5d}\nspec:\n  specificSkuProperties:\n    totalCount: 2\n"
           "    instanceProperties:\n      machineType: g2-standard-8\n"
           "      guestAccelerators: [{acceleratorType: nvidia-l4, acceleratorCount: 1}]\n" % (ZONE, START))


def job_yaml(machine="g2-standard-8", count=1, replicas=2, scheduling="{timeout: 2d}", extra=""):
    # Line numbers matter: the error tests name them (the job's document starts on line 13 of jobs.yaml).
    return ("---\nkind: CustomJob\nname: train\nreservation: gpus\nspec:\n  workerPoolSpecs:\n"
            "    - machineSpec: {machineType: %s, acceleratorType: NVIDIA_L4, acceleratorCount: %d}\n"
            "      replicaCount: %d\n"
            "      containerSpec: {imageUri: \"us-docker.pkg.dev/p/r/trainer:1.0\"}\n"
            "  scheduling: %s\n%s" % (machine, count, replicas, scheduling, extra))


class FutureJobs(FakeTestCase):

    def setUp(self):
        super().setUp()
        self.fake.post("/_fake/tokens", {"token": TOKEN})

    def declare(self, job):
        # "b" sorts after "a": the booking first, then the job, in jobs.yaml.
        self.repo.jobs = {"a": BOOKING, "b": job}
        self.repo.write()

    def now(self):
        return self.fake.advance(0)["now"]

    def to(self, seconds):
        """Moves the fake's clock to FAKE_T0 + seconds."""
        return self.fake.advance(seconds - (self.fake.advance(0)["epoch_seconds"] - FAKE_T0))

    def plan(self, *args):
        return self.repo.plan(*args, env={"VX_NOW": self.now()})

    def apply(self, *args):
        return self.repo.apply(*args, env={"VX_NOW": self.now()})

    def validate(self):
        r = self.repo.vx("validate", self.repo.dir)
        return r.code, r.err.splitlines()

    def at(self, line, col):
        return "%s/jobs.yaml:%d:%d: CustomJob \"train\": " % (self.repo.dir, line, col)

    def delivered(self):
        req = urllib.request.Request(self.fake.url + "/compute/v1/" + FULL, headers={"Authorization": "Bearer " + TOKEN})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())

    def job_block(self, out):
        """The plan's lines for job.train: its header (a wait has no symbol) and the lines under it."""
        lines = out.splitlines()
        for i, l in enumerate(lines):
            if l.split()[-2:] in (["job.train", "wait"], ["job.train", "create"]):
                got = [l.strip()]
                for m in lines[i + 1:]:
                    if not m.startswith("        "):
                        break
                    got.append(m.strip())
                return got
        self.fail("no plan lines for job.train in:\n%s" % out)

    def affinities(self):
        """Each live job's worker pools' reservationAffinity, as Vertex AI got them."""
        return [[p["machineSpec"].get("reservationAffinity") for p in j["jobSpec"]["workerPoolSpecs"]]
                for j in self.live_jobs("train")]

    # ---- the plan and apply ------------------------------------------------------------------

    def test_waits_for_the_window_then_runs_once_on_the_delivered_reservation(self):
        self.declare(job_yaml())
        r = self.plan("-detailed-exitcode")
        self.assertEqual(r.code, 2, r)
        self.assertEqual(self.job_block(r.out),
                         ["job.train wait", "g2-standard-8 ×2, 1×L4, STANDARD in us-central1",
                          "window opens Thu 08 Jan 09:00 UTC (in 7d 9h); future_reservation.gpus is booked by "
                          "this plan"])
        self.assertEqual(self.apply().code, 0)
        self.assertEqual(self.live_jobs("train"), [])
        self.to(3600)
        r = self.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.job_block(r.out),
                         ["job.train wait", "g2-standard-8 ×2, 1×L4, STANDARD in us-central1",
                          "window opens Thu 08 Jan 09:00 UTC (in 7d 8h); runs once future_reservation.gpus's "
                          "capacity is delivered (APPROVED)"])
        self.to(START_S - FAKE_T0 - (5 * 3600 + 20 * 60))
        self.assertEqual(self.job_block(self.plan().out)[2],
                         "window opens Thu 08 Jan 09:00 UTC (in 5h 20m); runs once future_reservation.gpus's "
                         "capacity is delivered (APPROVED)")
        self.to(START_S - FAKE_T0 - 59)
        self.assertEqual(self.job_block(self.plan().out)[2],
                         "window opens Thu 08 Jan 09:00 UTC (in less than a minute); runs once future_reservation.gpus's "
                         "capacity is delivered (APPROVED)")
        # The window opens: the booking's reservation is opened to Vertex AI, then the job created on it.
        self.to(START_S - FAKE_T0 + 60)
        r = self.plan("-detailed-exitcode")
        self.assertEqual(r.code, 2, r)
        self.assertEqual(self.job_block(r.out)[0], "+   job.train create", r.out)
        self.assertEqual(self.block(r.out, "future_reservation.gpus")[0], "~   future_reservation.gpus update")
        self.assertNotIn("reservationSharingPolicy", self.delivered())
        r = self.apply()
        self.assertEqual(r.code, 0, r)
        lines = [l for l in r.out.splitlines() if l.startswith(("~ future", "+ job"))]
        self.assertEqual(len(lines), 2, r)
        self.assertEqual(lines[0], "~ future_reservation.gpus open gpus to Vertex AI")
        self.assertTrue(lines[1].startswith("+ job.train create projects/"), r)
        self.assertEqual(self.delivered()["reservationSharingPolicy"], {"serviceShareType": "ALLOW_ALL"})
        want = {"reservationAffinityType": "SPECIFIC_RESERVATION", "key": "compute.googleapis.com/reservation-name",
                "values": [FULL]}
        self.assertEqual(self.affinities(), [[want]])
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 1)
        # Exactly once: later applies create nothing more, and the job runs on the booking.
        self.fake.advance(120)
        r = self.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 1)
        self.assertEqual([j["state"] for j in self.live_jobs("train")], ["JOB_STATE_RUNNING"])
        self.assertEqual(self.delivered()["specificReservation"]["inUseCount"], "2")

    def test_runs_on_the_name_google_reports(self):
        """The delivered reservation's name is read from the booking's status, not assumed to be its own."""
        self.fake.post("/_fake/future-reservations", {"auto_name": "dated"})
        self.declare(job_yaml())
        self.assertEqual(self.apply().code, 0)
        self.to(START_S - FAKE_T0 + 60)
        r = self.apply()
        self.assertEqual(r.code, 0, r)
        self.assertIn("~ future_reservation.gpus open gpus-20260108-0001 to Vertex AI", r.out.splitlines(), r)
        self.assertEqual(self.affinities(), [[{
            "reservationAffinityType": "SPECIFIC_RESERVATION", "key": "compute.googleapis.com/reservation-name",
            "values": ["projects/%s/zones/%s/reservations/gpus-20260108-0001" % (PROJECT, ZONE)]}]])
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 1)
        self.fake.advance(120)
        self.assertEqual([j["state"] for j in self.live_jobs("train")], ["JOB_STATE_RUNNING"])

    def test_lost_create_reply_is_not_a_second_job(self):
        """The create's reply is lost when the window opens: the job found by its labels is the one run."""
        self.declare(job_yaml())
        self.assertEqual(self.apply().code, 0)
        self.to(START_S - FAKE_T0 + 60)
        self.fake.post("/_fake/faults", {"drop_after_processing_rate": 1.0, "methods": ["CreateCustomJob"]})
        self.apply()
        self.fake.post("/_fake/faults", {})
        r = self.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.live_jobs("train")), 1)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 1)
        self.assertEqual(self.plan("-detailed-exitcode").code, 0)

    def window_soon(self, booking=BOOKING):
        """Applies the booking and the job with the window two minutes ahead, then moves past its start.
        The watcher's clock (VX_NOW) signs its token requests, which the fake checks against the real time:
        the fake's clock is set to the real time."""
        real = int(time.time())
        self.fake.post("/_fake/clock", {"set_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(real))})
        self.start = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(real + 120))
        self.repo.jobs = {"a": booking.replace(START, self.start), "b": job_yaml()}
        self.repo.write()
        self.assertEqual(self.apply().code, 0)
        self.fake.advance(180)

    def watch(self, *args):
        r = self.repo.vx("watch", self.repo.dir, "-once", *args, env={"VX_NOW": self.now()})
        self.assertEqual(r.err, "", r)
        return r.code, [l.split(" ", 1)[1] for l in r.out.splitlines()]

    def test_watch_opens_the_applied_booking_and_creates_the_job_once(self):
        """The window opens: vx watch (without -sync) opens the delivered reservation to Vertex AI, as the
        applied declaration asked, then creates the job on it, once."""
        self.window_soon()
        code, lines = self.watch()
        self.assertEqual(code, 2)  # 2: it acted
        self.assertEqual(len(lines), 2, lines)
        self.assertEqual(lines[0], "act: ~ future_reservation.gpus open gpus to Vertex AI")
        self.assertRegex(lines[1], r"^act: \+ job\.train create projects/\d+/locations/us-central1/customJobs/\d+$")
        self.assertEqual(self.delivered()["reservationSharingPolicy"], {"serviceShareType": "ALLOW_ALL"})
        self.assertEqual(self.fake.rpc_count("Reservations.Update"), 1)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 1)
        self.assertEqual(self.affinities(), [[{
            "reservationAffinityType": "SPECIFIC_RESERVATION", "key": "compute.googleapis.com/reservation-name",
            "values": [FULL]}]])
        # Exactly once: the next cycles find it done.
        self.fake.advance(60)
        self.assertEqual(self.watch(), (2, ["record: recorded: job.train: queued -> running"]))
        self.assertEqual(self.fake.rpc_count("Reservations.Update"), 1)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 1)

    def test_watch_does_not_act_on_a_booking_changed_and_not_applied(self):
        """A commit changes the booking and is not applied: the watcher does not open its reservation on
        the strength of files nobody applied, nor create the job that would run on it. With -sync it
        applies what the files say: the opening first, then the job."""
        self.window_soon()
        self.repo.jobs = {"a": BOOKING.replace(START, self.start) + "protect: true\n", "b": job_yaml()}
        self.repo.write()
        self.assertEqual(self.watch(), (0, [
            "unapplied: future_reservation.gpus: declared but not applied (the plan says update); waiting for "
            "vxapply",
            "unapplied: job.train: create waits for future_reservation.gpus, held back (declared but not "
            "applied); waiting for vxapply"]))
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 0)
        self.assertEqual(self.fake.rpc_count("Reservations.Update"), 0)
        self.assertNotIn("reservationSharingPolicy", self.delivered())
        code, lines = self.watch("-sync")
        self.assertEqual(code, 2)
        self.assertEqual(len(lines), 2, lines)
        self.assertEqual(lines[0], "act: ~ future_reservation.gpus open gpus to Vertex AI")
        self.assertRegex(lines[1], r"^act: \+ job\.train create projects/\d+/locations/us-central1/customJobs/\d+$")
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 1)

    def test_declined_booking_leaves_the_job_waiting(self):
        self.fake.post("/_fake/future-reservations", {"mode": "decline"})
        self.declare(job_yaml())
        self.assertEqual(self.apply().code, 0)
        self.to(60)
        for at in (60, START_S - FAKE_T0 + 60):
            self.to(at)
            r = self.plan("-detailed-exitcode")
            self.assertEqual(r.code, 0, r)
            self.assertEqual(self.job_block(r.out),
                             ["job.train wait", "g2-standard-8 ×2, 1×L4, STANDARD in us-central1",
                              "future_reservation.gpus is DECLINED: nothing will be delivered, so the job does not "
                              "start; book again (plan with -replace future_reservation.gpus) or remove its "
                              "reservation:"])
            self.assertEqual(self.apply().code, 0)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 0)

    def test_failed_booking_leaves_the_job_waiting(self):
        self.fake.post("/_fake/future-reservations", {"mode": "fail"})
        self.declare(job_yaml())
        self.assertEqual(self.apply().code, 0)
        self.to(START_S - FAKE_T0 + 60)
        r = self.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.job_block(r.out)[2],
                         "future_reservation.gpus is FAILED: nothing will be delivered, so the job does not start; "
                         "book again (plan with -replace future_reservation.gpus) or remove its reservation:")
        self.assertEqual(self.apply().code, 0)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 0)

    def test_window_closed(self):
        """Past the window's end no job is started (the reservation is gone with it)."""
        self.declare(job_yaml())
        self.assertEqual(self.apply().code, 0)
        self.to(START_S - FAKE_T0 + 5 * 86400 + 60)
        r = self.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.job_block(r.out),
                         ["job.train wait", "g2-standard-8 ×2, 1×L4, STANDARD in us-central1",
                          "window closed Tue 13 Jan 09:00 UTC: a job is not started in a closed window"])

    def test_no_opening_after_the_window_closed(self):
        """Once the window has closed Compute has deleted the delivered reservation: the booking is not
        planned to be opened to Vertex AI (an update that could only fail on a reservation gone)."""
        self.repo.jobs = {"a": BOOKING}
        self.repo.write()
        self.assertEqual(self.apply().code, 0)
        self.to(START_S - FAKE_T0 + 5 * 86400 + 60)
        r = self.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.apply().code, 0)
        self.assertEqual(self.fake.rpc_count("Reservations.Update"), 0)

    # ---- vx validate -------------------------------------------------------------------------

    def test_job_level_reservation_names_a_reservation_too(self):
        """reservation: on a job names a Reservation of the stack as well: every GPU pool's affinity."""
        pool = ("---\nkind: Reservation\nname: gpus\nzone: %s\nmachineType: g2-standard-8\n"
                "accelerators: [{type: nvidia-l4, count: 1}]\ncount: 2\n" % ZONE)
        self.repo.jobs = {"a": pool, "b": job_yaml()}
        self.repo.write()
        r = self.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.affinities(), [[{
            "reservationAffinityType": "SPECIFIC_RESERVATION", "key": "compute.googleapis.com/reservation-name",
            "values": [FULL]}]])
        self.repo.jobs = {"a": pool, "b": job_yaml().replace("reservation: gpus", "reservation: gpu")}
        self.repo.write()
        self.assertEqual(self.validate(), (1, [
            self.at(11, 14) + "reservation: \"gpu\" is neither a Reservation nor a FutureReservation of this "
            "stack, nor a full name projects/PROJECT/zones/ZONE/reservations/NAME"]))

    def test_shape_mismatch_is_refused_at_its_line(self):
        self.declare(job_yaml(machine="g2-standard-12"))
        self.assertEqual(self.validate(), (1, [
            self.at(19, 34) + "spec.workerPoolSpecs[0].machineSpec.machineType: g2-standard-12, but "
            "future_reservation.gpus books g2-standard-8 VMs; a job in the window runs on exactly the booked "
            "machine type and GPUs"]))
        self.declare(job_yaml(replicas=3))
        self.assertEqual(self.validate(), (1, [
            self.at(16, 14) + "reservation: the job's worker pools with GPUs ask for 3 VMs; "
            "future_reservation.gpus books 2"]))

    def test_accelerator_type_and_count_must_be_the_booked_ones(self):
        """The booking's Compute name (nvidia-tesla-t4) is compared as Vertex's (NVIDIA_TESLA_T4)."""
        t4 = BOOKING.replace("g2-standard-8", "n1-standard-8").replace("nvidia-l4", "nvidia-tesla-t4")
        job = job_yaml(machine="n1-standard-8").replace("NVIDIA_L4", "NVIDIA_TESLA_V100")
        self.repo.jobs = {"a": t4, "b": job}
        self.repo.write()
        self.assertEqual(self.validate(), (1, [
            self.at(19, 66) + "spec.workerPoolSpecs[0].machineSpec.acceleratorType: NVIDIA_TESLA_V100, but "
            "future_reservation.gpus books nvidia-tesla-t4 (NVIDIA_TESLA_T4) GPUs; a job in the window runs on "
            "exactly the booked machine type and GPUs"]))
        self.repo.jobs = {"a": t4, "b": job_yaml(machine="n1-standard-8", count=2).replace("NVIDIA_L4", "NVIDIA_TESLA_T4")}
        self.repo.write()
        self.assertEqual(self.validate(), (1, [
            self.at(19, 101) + "spec.workerPoolSpecs[0].machineSpec.acceleratorCount: 2, but "
            "future_reservation.gpus books 1 NVIDIA_TESLA_T4 per VM; a job in the window runs on exactly the "
            "booked machine type and GPUs"]))

    def test_flex_start_and_spot_are_refused(self):
        self.declare(job_yaml(scheduling="{strategy: FLEX_START, timeout: 2d}"))
        self.assertEqual(self.validate(), (1, [
            self.at(22, 26) + "spec.scheduling.strategy: FLEX_START cannot run in future_reservation.gpus's window: "
            "Vertex AI training does not use Dynamic Workload Scheduler on a reservation; use STANDARD (or leave "
            "strategy out)"]))
        self.declare(job_yaml(scheduling="{strategy: SPOT}"))
        self.assertEqual(self.validate(), (1, [
            self.at(22, 26) + "spec.scheduling.strategy: SPOT cannot run in future_reservation.gpus's window: the "
            "booked capacity is reserved on-demand VMs, not Spot; use STANDARD (or leave strategy out)"]))

    def test_persistent_resource_is_refused(self):
        self.declare(job_yaml(extra="persistentResource: pool\n"))
        self.assertEqual(self.validate(), (1, [
            self.at(23, 21) + "persistentResource: a job on a reservation (reservation: gpus) cannot also run on a "
            "persistent resource; Vertex AI training does not use persistent resources with reservations"]))

    def test_timeout_longer_than_the_window_warns(self):
        self.declare(job_yaml(scheduling="{timeout: 6d}"))
        code, err = self.validate()
        self.assertEqual((code, err), (0, [
            "%s/jobs.yaml:22:25: warning: CustomJob \"train\": spec.scheduling.timeout: 6d is longer than "
            "future_reservation.gpus's window (5d): Google ends the VMs when the window closes, so a run still "
            "going then is stopped" % self.repo.dir]))


if __name__ == "__main__":
    import unittest
    unittest.main()
