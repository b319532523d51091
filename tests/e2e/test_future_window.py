"""The end of a booking's window, and what vx tells about a booking (issues 35 and 34), on the fake's clock.

The fake's clock is frozen at 2026-01-01T00:00:00Z and moves only when a test says; every command gets
the fake's time (VX_NOW) so that "before the window" means the same to both. Google ends the VMs on a
calendar-mode booking's reservation at its end time: a run still active then is `window-ended` (not a
stockout, whatever Vertex's text), and it is not resubmitted into the closed window. The notifications
(booking-approved, booking-declined, booking-failed, window-opened, window-closing, window-closed) are compared whole,
and each is told once however often the watcher looks.
"""
import json
import unittest

from harness import PROJECT, FakeTestCase, job_yaml
from test_future import FAKE_T0, START_S, TOKEN, ZONE, future_yaml
from test_watch import Receiver, without_time

START = START_S - FAKE_T0          # seconds from the fake's t0 to the window's start
END = START + 5 * 86400            # its end: 2026-01-13T09:00:00Z
RES = "projects/%s/zones/%s/reservations/gpus" % (PROJECT, ZONE)
NOTIFY = ("notify:\n  - urlEnv: HOOK\n    on: [booking-approved, booking-declined, window-opened, window-closing, "
          "window-closed, gave-up]\n")
GAVE_UP = "notify:\n  - urlEnv: HOOK\n    on: [gave-up]\n"


def job_on_booking(name="train"):
    """A job of one g2-standard-8 with one L4 on the reservation the booking delivers, named in full
    (SPECIFIC_RESERVATION); resubmitted on stockout and preemption (the harness's default)."""
    return job_yaml(name, machine="g2-standard-8").replace(
        "acceleratorCount: 1}",
        "acceleratorCount: 1, reservationAffinity: {reservationAffinityType: SPECIFIC_RESERVATION, "
        "key: compute.googleapis.com/reservation-name, values: [%s]}}" % RES)


def section(out, title):
    """The lines under a plan's section title, up to the blank line."""
    lines = out.splitlines()
    if title not in lines:
        return []
    start = end = lines.index(title) + 1
    while end < len(lines) and lines[end]:
        end += 1
    return lines[start:end]


class FutureWindow(FakeTestCase):

    def setUp(self):
        super().setUp()
        self.fake.post("/_fake/tokens", {"token": TOKEN})
        self.hook = Receiver()
        self.addCleanup(self.hook.close)

    # ---- driving the fake's clock and vx ------------------------------------------------------

    def declare(self, *docs, notify=NOTIFY):
        self.repo.jobs = {"x": "".join(docs)}
        self.repo.write(extra_stack=notify)

    def now(self):
        return self.fake.advance(0)["now"]

    def to(self, seconds):
        """Moves the fake's clock to FAKE_T0 + seconds."""
        return self.fake.advance(seconds - (self.fake.advance(0)["epoch_seconds"] - FAKE_T0))

    def env(self):
        return {"VX_NOW": self.now(), "HOOK": self.hook.url}

    def vx(self, *args):
        return self.repo.vx(*args, env=self.env())

    def apply(self, *args):
        r = self.repo.apply(*args, env=self.env())
        self.assertEqual(r.code, 0, r)
        return r

    def watch(self):
        """One watcher cycle; the payloads it sent."""
        before = len(self.hook.got)
        # The watcher's clock starts at VX_NOW, months before the machine's: a key's signed grant
        # would be refused as out of its time, so it uses an access token.
        env = dict(self.env(), GOOGLE_OAUTH_ACCESS_TOKEN=TOKEN)
        r = self.repo.vx("watch", self.repo.dir, "-once", env=env)
        self.assertIn(r.code, (0, 2), r)   # 2: it did something (recorded, opened, notified)
        self.watch_lines = [without_time(l) for l in r.out.splitlines()]
        return [json.loads(b) for _, b in self.hook.got[before:]]

    def event(self, name, evt_id, state, message, time):
        """A booking's event as vx posts it (format json). The id is a hash of the event's name, stack,
        address and key (the booking's creation time, or its window's start), the same every time."""
        return {"event": name, "id": evt_id, "stack": "e2e", "address": "future_reservation.gpus", "run": None,
                "attempt": None, "rung": 0, "state": state, "class": None, "message": message, "job": None,
                "console": None, "time": time}

    # ---- the cases ------------------------------------------------------------------------------

    def test_approved_and_the_window_told_once_each(self):
        self.declare(future_yaml())
        self.apply()
        self.assertEqual(self.watch(), [], "nothing decided yet")
        self.to(60)
        self.assertEqual(self.watch(), [self.event(
            "booking-approved", "evt_e3078479a26502f3396d8430ea6624d5", "APPROVED", "Google approved 2 VMs from 2026-01-08T09:00:00Z; delivered when the "
            "window opens", "2026-01-01T00:01:00Z")])
        self.to(120)
        self.assertEqual(self.watch(), [], "told once")
        # The window opens: the reservation is delivered.
        self.to(START + 1)
        self.assertEqual(self.watch(), [self.event(
            "window-opened", "evt_15b31ee4cf1cec6b75693ce6d5d72d6d", "FULFILLED", "2 VMs in reservation gpus until 2026-01-13T09:00:00Z",
            "2026-01-08T09:00:00Z")])
        self.to(START + 3600)
        self.assertEqual(self.watch(), [], "told once")
        # closingLead (2 h by default) before the end.
        self.to(END - 7200)
        self.assertEqual(self.watch(), [self.event(
            "window-closing", "evt_6446a69477834b7597a769752f00342c", "FULFILLED", "the window closes at 2026-01-13T09:00:00Z: Google ends the runs "
            "still on reservation gpus then", "2026-01-13T07:00:00Z")])
        self.to(END - 60)
        self.assertEqual(self.watch(), [], "told once")
        self.to(END)
        self.assertEqual(self.watch(), [self.event(
            "window-closed", "evt_9ac230c7e0e9b4010df4402fe30bfc34", "FULFILLED", "the window closed at 2026-01-13T09:00:00Z: Google ended the runs on "
            "reservation gpus and deleted it", "2026-01-13T09:00:00Z")])
        self.to(END + 600)
        self.assertEqual(self.watch(), [], "told once")
        self.assertEqual(len({h["webhook-id"] for h, _ in self.hook.got}), 4)

    def test_after_the_end_the_deleted_reservation_is_not_opened(self):
        """Google deletes the delivered reservation at the end; the booking still lists it. vx opened it
        to Vertex AI again at every apply, which failed (NOT_FOUND): it now says it is gone."""
        self.declare(future_yaml(), notify="")
        self.apply()
        self.to(END + 60)
        r = self.repo.plan("-detailed-exitcode", env=self.env())
        self.assertEqual(r.code, 0, r)
        self.assertEqual(section(r.out, "No change:"), [
            "      future_reservation.gpus: FULFILLED: reservation gpus is gone (Google deletes it when the window "
            "closes)"], r)
        self.apply()
        self.assertEqual(self.fake.rpc_count("Reservations.Update"), 0)

    def test_declined_told_once(self):
        self.fake.post("/_fake/future-reservations", {"mode": "decline"})
        self.declare(future_yaml())
        self.apply()
        self.to(60)
        self.assertEqual(self.watch(), [self.event(
            "booking-declined", "evt_9127bf0c17bb4b95899f65c8035da8a3", "DECLINED", "Google declined 2 VMs from 2026-01-08T09:00:00Z; vx does not ask "
            "again by itself (plan with -replace to book again)", "2026-01-01T00:01:00Z")])
        self.to(600)
        self.assertEqual(self.watch(), [], "told once")

    def test_failed_told_once(self):
        """Google approves the request but delivers nothing at the start time (FAILED): the team is told,
        once, at the window's start, as it is told of a decline (it told nothing before)."""
        self.fake.post("/_fake/future-reservations", {"mode": "fail"})
        self.declare(future_yaml(), notify=NOTIFY.replace("gave-up]", "booking-failed, gave-up]"))
        self.apply()
        self.to(60)
        self.assertEqual([e["event"] for e in self.watch()], ["booking-approved"])
        self.to(START + 60)
        self.assertEqual(self.watch(), [self.event(
            "booking-failed", "evt_71c51004635932cf0cbf982e385c5d38", "FAILED", "Google delivered none of the 2 VMs "
            "booked from 2026-01-08T09:00:00Z (FAILED); vx does not ask again by itself", "2026-01-08T09:00:00Z")])
        self.to(START + 600)
        self.assertEqual(self.watch(), [], "told once")

    def test_run_active_at_the_end_is_window_ended_and_not_resubmitted(self):
        """Google ends the run with the window (the fake says so as Vertex says a stockout): vx classes
        it window-ended from its reservation and end time, says which booking's window ended it, and
        does not resubmit it, although its resubmit.on lists stockout."""
        self.declare(future_yaml(), notify=GAVE_UP)
        self.apply()
        self.to(START + 1)
        self.apply()   # opens the delivered reservation to Vertex AI
        # Half an hour before the end a run starts on the reservation; it would run an hour.
        self.to(END - 1800)
        self.declare(future_yaml(), job_on_booking(), notify=GAVE_UP)
        self.apply()
        self.to(END - 1700)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 1)
        self.assertIn("RUNNING", self.vx("status", self.repo.dir).out)
        self.to(END + 60)
        # The watcher records the end, naming the booking, and tells it.
        got = self.watch()
        self.assertIn("record: recorded: job.train: queued -> failed (window-ended: the window of "
                      "future_reservation.gpus closed at 2026-01-13 09:00Z)", self.watch_lines)
        self.assertEqual([e["event"] for e in got], ["gave-up"])
        job = got[0]["job"]
        self.assertRegex(got[0].pop("id"), "^evt_[0-9a-f]{32}$")   # a hash of the job's name too, which Vertex makes
        self.assertEqual(got, [{
            "event": "gave-up", "stack": "e2e", "address": "job.train", "run": 1, "attempt": 1, "rung": 0,
            "state": "JOB_STATE_FAILED", "class": "window-ended",
            "message": "Resources are insufficient in region: us-central1. Try a different region or use a "
                       "different accelerator.",
            "job": job, "console": "https://console.cloud.google.com/ai/platform/locations/us-central1/training/"
                                   "%s?project=%s" % (job.rsplit("/", 1)[-1], job.split("/")[1]),
            "time": "2026-01-13T09:00:00Z"}])
        r = self.repo.plan("-detailed-exitcode", env=self.env())
        self.assertEqual(r.code, 0, r)
        self.assertEqual(section(r.out, "No change:"), [
            "      future_reservation.gpus: FULFILLED: reservation gpus is gone (Google deletes it when the "
            "window closes)",
            "      job.train: failed (window-ended at 2026-01-13 09:00Z): the window of future_reservation.gpus "
            "closed at 2026-01-13 09:00Z; not resubmitted into a closed window (code 8: Resources are "
            "insufficient in region: us-central1. Try a different region or use a different accelerator.)"], r)
        self.apply()
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 1, "not resubmitted")
        self.assertEqual(self.watch(), [], "told once")
        r = self.vx("status", self.repo.dir)
        self.assertEqual(r.code, 0, r)
        row = [l for l in r.out.splitlines() if l.startswith("job.train ")]
        self.assertEqual(len(row), 1, r)
        self.assertEqual(row[0].split()[:2], ["job.train", "FAILED"])
        self.assertTrue(row[0].endswith("gave up: window-ended: Resources are insufficient in region: "
                                        "us-central1. Try a different region or use a different accelerator."), r)
        # The JSON forms carry the class too (their schemas are checked on every run).
        r = self.repo.plan("-format", "json", env=self.env())
        self.assertEqual([a["failure_class"] for a in json.loads(r.out)["actions"] if a["address"] == "job.train"],
                         ["window-ended"], r)
        r = self.vx("status", self.repo.dir, "-format", "json")
        self.assertEqual(r.code, 0, r)
        self.assertIn('"window-ended"', r.out)
        r = self.vx("log", self.repo.dir, "job.train")
        self.assertEqual(r.code, 0, r)
        self.assertIn("failed (window-ended), ended 2026-01-13T09:00:00Z: code 8: Resources are insufficient in "
                      "region: us-central1.", r.out)


if __name__ == "__main__":
    unittest.main()
