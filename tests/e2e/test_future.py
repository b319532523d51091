"""FutureReservation (issue 35): a booking of GPU VMs for a window, against the fake on its virtual clock.

The fake's clock is frozen at 2026-01-01T00:00:00Z and moves when a test says; vx's clock is set to the
fake's (VX_NOW) so "before the window" means the same to both. The generic cases (create, replace,
protect, drift, import, a kill during the insert, adoption) are the kind suite's row; these are the
booking's own: its procurement states in the plan, a start in the past, a cancel before the window, what
is left alone once locked and deleted after the end, a declined request.
"""
import json
import urllib.request

from harness import PROJECT, REGION, FakeTestCase

ZONE = REGION + "-a"
START = "2026-01-08T09:00:00Z"
START_S = 1767862800            # START in seconds
FAKE_T0 = 1767225600            # 2026-01-01T00:00:00Z, the fake's frozen clock
SHAPE = "g2-standard-8 ×2, 1×nvidia-l4 in us-central1-a, 2026-01-08 09:00 UTC for 5d"
TOKEN = "outsider-token"


def future_yaml(extra=""):
    return ("---\nkind: FutureReservation\nname: gpus\nzone: %s\nmode: calendar\n"
            "window: {start: %s, duration: 5d}\nspec:\n  specificSkuProperties:\n    totalCount: 2\n"
            "    instanceProperties:\n      machineType: g2-standard-8\n"
            "      guestAccelerators: [{acceleratorType: nvidia-l4, acceleratorCount: 1}]\n%s" % (ZONE, START, extra))


class Future(FakeTestCase):

    def setUp(self):
        super().setUp()
        self.fake.post("/_fake/tokens", {"token": TOKEN})

    def declare(self, yaml):
        self.repo.jobs = {"x": yaml} if yaml else {}
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

    def api(self, method, path):
        req = urllib.request.Request(self.fake.url + path, method=method, headers={"Authorization": "Bearer " + TOKEN})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read() or b"{}")

    def bookings(self):
        got = self.api("GET", "/compute/v1/projects/%s/zones/%s/futureReservations" % (PROJECT, ZONE))
        return [(f["name"], f["status"]["procurementStatus"]) for f in got.get("items", [])]

    def delivered(self):
        """The reservation Google delivered for the booking."""
        return self.api("GET", "/compute/v1/projects/%s/zones/%s/reservations/gpus" % (PROJECT, ZONE))

    @staticmethod
    def section(out, title):
        lines = out.splitlines()
        if title not in lines:
            return []
        start = lines.index(title) + 1
        end = start
        while end < len(lines) and lines[end]:
            end += 1
        return lines[start:end]

    def no_change(self):
        """The plan's "No change:" notes, with no change planned."""
        r = self.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        self.assertIn("Plan: no changes. 1 unchanged.", r.out.splitlines(), r)
        return self.section(r.out, "No change:")

    # ---- the cases ---------------------------------------------------------------------------

    def test_submitted_approved_fulfilled(self):
        """Each procurement state is shown with what happens next; at the start the reservation is there."""
        self.declare(future_yaml())
        r = self.plan("-detailed-exitcode")
        self.assertEqual(r.code, 2, r)
        self.assertEqual(self.block(r.out, "future_reservation.gpus"),
                         ["+   future_reservation.gpus create", SHAPE, "new booking: submitted for Google's approval"])
        r = self.apply()
        self.assertEqual(r.code, 0, r)
        self.assertIn("+ future_reservation.gpus book gpus in us-central1-a (2 VMs, PENDING_APPROVAL)",
                      r.out.splitlines(), r)
        self.assertEqual(self.bookings(), [("gpus", "PENDING_APPROVAL")])
        self.assertEqual(self.no_change(), ["      future_reservation.gpus: PENDING_APPROVAL: Google reviews the "
                                            "request; next: approved or declined"])
        self.to(60)
        self.assertEqual(self.no_change(), ["      future_reservation.gpus: APPROVED: Google delivers the capacity "
                                            "when the window opens"])
        self.to(START_S - FAKE_T0 + 1)
        # Delivered: the reservation Google made is opened to Vertex AI, a change the plan shows.
        r = self.plan("-detailed-exitcode")
        self.assertEqual(r.code, 2, r)
        self.assertIn("Refresh: also read future reservations in us-central1-a, reservations in us-central1-a "
                      "(delivered by future reservations)", r.out.splitlines(), r)
        self.assertEqual(self.block(r.out, "future_reservation.gpus"),
                         ["~   future_reservation.gpus update", SHAPE + " (FULFILLED)",
                          "FULFILLED: open reservation gpus to Vertex AI (serviceShareType ALLOW_ALL), so that "
                          "jobs can run on it"])
        self.assertNotIn("reservationSharingPolicy", self.delivered())
        r = self.apply()
        self.assertEqual(r.code, 0, r)
        self.assertIn("~ future_reservation.gpus open gpus to Vertex AI", r.out.splitlines(), r)
        self.assertEqual(self.delivered()["reservationSharingPolicy"], {"serviceShareType": "ALLOW_ALL"})
        self.assertEqual(self.no_change(), ["      future_reservation.gpus: FULFILLED: 2 VMs delivered in "
                                            "reservation gpus until the window closes"])
        self.assertEqual(self.fake.rpc_count("Reservations.Update"), 1)
        r = self.repo.vx("status", self.repo.dir, env={"VX_NOW": self.now()})
        self.assertEqual(r.code, 0, r)
        self.assertIn("future_reservation.gpus  FULFILLED  -        -     us-central1-a  -       -        -"
                      "            VMs 2, delivered 2", r.out.splitlines(), r)

    def test_start_in_the_past(self):
        """Valid to vx validate; the plan refuses to book a window that has begun."""
        self.declare(future_yaml())
        r = self.repo.vx("validate", self.repo.dir)
        self.assertEqual((r.code, r.out), (0, "stack e2e: 0 jobs, 1 future reservation, 0 reservations, "
                                              "0 quota preferences: valid\n"), r)
        self.to(START_S - FAKE_T0)
        r = self.plan()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(self.section(r.out, "Errors (the plan cannot be applied):"),
                         ["  future_reservation.gpus: window.start 2026-01-08T09:00:00Z is in the past: a booking "
                          "must start after it is made; move the window"], r)
        self.assertEqual(self.bookings(), [])

    def test_cancel_before_the_window(self):
        """Undeclared before its window: cancelled, then deleted, and the plan says what that saves."""
        self.declare(future_yaml())
        self.assertEqual(self.apply().code, 0)
        self.to(60)
        self.declare(None)
        r = self.plan("-detailed-exitcode")
        self.assertEqual(r.code, 2, r)
        self.assertEqual(self.block(r.out, "future_reservation.gpus"),
                         ["-   future_reservation.gpus cancel", SHAPE + " (APPROVED)",
                          "no longer declared: cancelled before its window opens, then deleted; saves 2 VMs x "
                          "120 h = 240 VM-hours (240 GPU-hours; Google publishes no calendar-mode prices: the "
                          "cost line estimates them at on-demand rates)"])
        # What the window would have cost, at the on-demand rate the booking's own estimate uses:
        # g2-standard-8 (1 L4) in us-central1 at $0.853624/h (data/prices.json) x 2 VMs x 120 h.
        self.assertEqual([l for l in r.out.splitlines() if l.startswith("Cost:")], [
            "Cost: + $0.00/h while running, at most $0.00 for this apply; the bookings cancelled before their "
            "windows save $204.87 (est.)."], r)
        self.assertAlmostEqual(json.loads(self.plan("-format", "json").out)["cost"]["bookings_saved_usd"], 0.853624 * 2 * 120,
                               places=6)
        r = self.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual([l for l in r.out.splitlines() if l.startswith("- ")],
                         ["- future_reservation.gpus cancel and delete gpus in us-central1-a",
                          "- future_reservation.gpus forget"], r)
        self.assertEqual(self.bookings(), [])
        self.assertEqual(self.fake.rpc_count("FutureReservations.Cancel"), 1)
        r = self.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)

    def test_protected_booking_is_not_cancelled(self):
        self.declare(future_yaml("protect: true\n"))
        self.assertEqual(self.apply().code, 0)
        self.declare(None)
        r = self.plan()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(self.section(r.out, "Errors (the plan cannot be applied):"),
                         ["  future_reservation.gpus is protected (protect: true): it is no longer declared; "
                          "cancelling it is refused"], r)
        self.assertEqual(self.apply().code, 1)
        self.assertEqual(self.bookings(), [("gpus", "PENDING_APPROVAL")])
        self.assertEqual(self.fake.rpc_count("FutureReservations.Cancel"), 0)

    def test_locked_booking_is_left_until_its_end(self):
        """Once locked Google takes no cancel: a warning, no change; after the end, deleted."""
        self.declare(future_yaml())
        self.assertEqual(self.apply().code, 0)
        self.to(START_S - FAKE_T0 + 1)
        self.declare(None)
        r = self.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.section(r.out, "Warnings:"),
                         ["  future_reservation.gpus is no longer declared, but the booking is FULFILLED: Google "
                          "accepts no cancel; it is deleted after its window closes (2026-01-13T09:00:00Z)"], r)
        self.to(START_S - FAKE_T0 + 5 * 86400)
        r = self.plan("-detailed-exitcode")
        self.assertEqual(r.code, 2, r)
        self.assertEqual(self.block(r.out, "future_reservation.gpus"),
                         ["-   future_reservation.gpus delete", SHAPE + " (FULFILLED)",
                          "no longer declared, and its window has closed: deleted"])
        r = self.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.bookings(), [])
        self.assertEqual(self.fake.rpc_count("FutureReservations.Cancel"), 0)

    def test_declined(self):
        """A declined request is shown, and booked again only when asked (-replace)."""
        self.fake.post("/_fake/future-reservations", {"mode": "decline"})
        self.declare(future_yaml())
        self.assertEqual(self.apply().code, 0)
        self.to(60)
        self.assertEqual(self.no_change(), ["      future_reservation.gpus: DECLINED: Google refused the request; "
                                            "vx does not ask again by itself (plan with -replace to book again)"])
        r = self.plan("-replace", "future_reservation.gpus")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.block(r.out, "future_reservation.gpus"),
                         ["-/+ future_reservation.gpus replace", SHAPE + " (DECLINED)",
                          "-replace: a submitted booking cannot change; cancel and book again (the new request "
                          "is reviewed anew)"])
        r = self.apply("-replace", "future_reservation.gpus")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.bookings(), [("gpus", "PENDING_APPROVAL")])
        self.assertEqual(self.fake.rpc_count("FutureReservations.Cancel"), 0, "nothing to cancel once declined")
        self.assertEqual(self.fake.rpc_count("FutureReservations.Delete"), 1)


if __name__ == "__main__":
    import unittest
    unittest.main()
