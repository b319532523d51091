"""Quota, cost and vx report for the held kinds (issues 34 and 35), against the fake.

A PersistentResource's machines count against its region's on-demand training quota from its
create to its delete, and cost by the hour whether used or not, at Vertex AI's training rates; a
job on it draws no quota and costs nothing itself. A FutureReservation books VMs for a window:
the plan shows what the whole window costs (an estimate: the on-demand rate stands in for
calendar-mode prices Google has not published), and the capacity check counts the booking only
inside its window. vx report counts both like a reservation: VM-hours, their use by the stack's
runs, the idle share as waste. Every figure is compared exactly with one computed by hand from
the built-in price table (data/prices.json, us-central1):

  n1-standard-4  Vertex AI training rate  $0.218499/h    (Compute Engine $0.189999)
  NVIDIA_TESLA_T4 Vertex AI training rate $0.4025/h      (Compute Engine $0.35)
  g2-standard-8  Compute Engine on-demand $0.853624/h, its L4 bundled
"""
import json
import os
import time
import unittest

from harness import REGION, FakeTestCase, job_yaml

ZONE = REGION + "-a"
PRICES_LINE = ("  prices: Cloud Billing Catalog via Cyclenerd/google-cloud-pricing-cost-calculator (2026-07-30); "
               "N1 GPUs, A3 Ultra, A4: SkyPilot catalog (2026-11)")
USAGE_NOTE = ("  (in use: this stack's runs only; Cloud Quotas does not report usage, so jobs of other stacks "
              "in the project are not counted)")
FAKE_NOW = "2026-01-01T00:00:00Z"   # the fake's frozen clock
# One pool machine, n1-standard-4 with a T4, at Vertex AI's training rates: 0.218499 + 0.4025.
MACHINE = 0.218499 + 0.4025


def pool_yaml(replicas=2, autoscaling=(1, 4), name="eval-pool"):
    scale = ("      autoscalingSpec: {minReplicaCount: %d, maxReplicaCount: %d}\n" % autoscaling
             if autoscaling else "")
    return ("---\nkind: PersistentResource\nname: %s\nspec:\n  resourcePools:\n    - id: t4s\n"
            "      machineSpec: {machineType: n1-standard-4, acceleratorType: NVIDIA_TESLA_T4, "
            "acceleratorCount: 1}\n      replicaCount: %d\n%s" % (name, replicas, scale))


def t4_job(name, on=None):
    y = job_yaml(name, machine="n1-standard-4", accel="NVIDIA_TESLA_T4", count=1)
    return y.replace("name: %s\n" % name, "name: %s\npersistentResource: %s\n" % (name, on), 1) if on else y


def booking_yaml(start="2026-01-08T09:00:00Z", duration="5d", count=2):
    return ("---\nkind: FutureReservation\nname: gpus\nzone: %s\nmode: calendar\n"
            "window: {start: %s, duration: %s}\nspec:\n  specificSkuProperties:\n    totalCount: %d\n"
            "    instanceProperties:\n      machineType: g2-standard-8\n"
            "      guestAccelerators: [{acceleratorType: nvidia-l4, acceleratorCount: 1}]\n"
            % (ZONE, start, duration, count))


def section(out, title):
    """The lines of a plan section, from its title to the next blank line."""
    lines = out.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith(title))
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def money(x):
    return "${:,.2f}".format(round(x + 1e-9, 2))


class CapacityKinds(FakeTestCase):

    def setUp(self):
        super().setUp()
        # A persistent resource's operations end at once.
        self.fake.post("/_fake/timings", {"provisioning_seconds": 0, "updating_seconds": 0,
                                          "stopping_seconds": 0})

    def limit(self, accel, value, preemptible=False):
        self.fake.post("/_fake/quota", {"region": REGION, "accelerator_type": accel,
                                        "preemptible": preemptible, "limit": value})

    def plan(self, *args, now=FAKE_NOW):
        r = self.repo.plan(*args, env={"VX_NOW": now})
        self.assertEqual(r.code, 0, r)
        return r

    # ---- a persistent resource in the plan --------------------------------------------------

    def test_pool_quota_and_cost(self):
        self.limit("NVIDIA_TESLA_T4", 16)
        self.repo.write({"a": pool_yaml(), "b": t4_job("ev", on="eval-pool"), "c": t4_job("plain")})
        r = self.plan()
        # The pool may grow to 4 machines (autoscaling's max): 4 T4 of the region's on-demand
        # quota, and the plain job's 1; the job on the pool draws none.
        self.assertEqual(section(r.out, "Quota")[1:], [
            "  us-central1",
            "    GPU          class                    in use   adds  limit    free after",
            "    T4           on-demand                     0      5  16       11",
            USAGE_NOTE,
        ])
        # The pool at 2 machines: 2 x 0.620999 = 1.241998; 1..4 machines: 0.620999 .. 2.483996.
        # The plain job: 0.620999/h x 168 h x 3 attempts = 312.983496.
        self.assertEqual(section(r.out, "Cost")[1:], [
            PRICES_LINE,
            "  starts     job.ev: $0.00/h, at most $0.00",
            "  starts     job.plain: $0.62/h, at most $312.98 (7-day default timeout × 3 attempts left)",
            "  running    persistent_resource.eval-pool: $1.24/h at 2 VMs ($0.62–$2.48/h at 1–4 with "
            "autoscaling) while it exists (used or not, until deleted)",
        ])
        self.assertEqual(r.out.splitlines()[-1],
                         "Cost: + $1.86/h while running (runs started + $0.62, reservations + $1.24), at most "
                         "$312.98 for this apply's runs, plus $1.24/h for the reservations while they exist "
                         "(paid per hour, used or not, until deleted).")
        self.assertNotIn("Warnings", r.out)
        plan = json.loads(self.plan("-format", "json").out)
        costs = {a["address"]: a["cost"] for a in plan["actions"]}
        self.assertEqual(costs["job.ev"]["usd_per_hour"], 0)
        self.assertAlmostEqual(costs["persistent_resource.eval-pool"]["usd_per_hour"], 2 * MACHINE, places=9)
        self.assertIsNone(costs["persistent_resource.eval-pool"]["usd_max"])
        self.assertAlmostEqual(plan["cost"]["reservations_usd_per_hour"], 2 * MACHINE, places=9)
        # Applied: the pool's 4 (listed) and the plain job's run are in use; nothing is added.
        self.assertEqual(self.repo.apply(env={"VX_NOW": FAKE_NOW}).code, 0)
        r = self.plan()
        self.assertEqual(section(r.out, "Quota")[3:4], [
            "    T4           on-demand                     5      0  16       11"])
        self.assertIn("  running    persistent_resource.eval-pool: $1.24/h at 2 VMs ($0.62–$2.48/h at 1–4 "
                      "with autoscaling) while it exists (used or not, until deleted)", r.out.splitlines())

    def test_pool_that_passes_the_quota_is_a_misfit(self):
        self.limit("NVIDIA_TESLA_T4", 3)
        self.repo.write({"a": pool_yaml(), "c": t4_job("plain")})
        r = self.plan()
        self.assertEqual(section(r.out, "Warnings"), [
            "Warnings:",
            "  persistent_resource.eval-pool: does not fit: needs 4 on-demand T4 in us-central1, limit 3, "
            "0 in use or started before it: 3 free",
            "  job.plain: does not fit: needs 1 on-demand T4 in us-central1, limit 3, 4 in use or started "
            "before it: 0 free",
        ])

    def test_pool_no_job_names_and_no_autoscaling(self):
        self.limit("NVIDIA_TESLA_T4", 16)
        self.repo.write({"a": pool_yaml(replicas=3, autoscaling=None)})
        r = self.plan()
        # 3 x 0.620999 = 1.862997
        self.assertEqual(section(r.out, "Cost")[2:], [
            "  running    persistent_resource.eval-pool: $1.86/h while it exists (used or not, until deleted); "
            "no declared job runs on it",
        ])
        self.assertEqual(section(r.out, "Quota")[3:4], [
            "    T4           on-demand                     0      3  16       13"])

    # ---- a booking in the plan --------------------------------------------------------------

    BOOKING_COST = ("  booked     future_reservation.gpus: 2 VMs, 2 L4, 2026-01-08 09:00 UTC for 5d: $204.87 for "
                    "the window, used or not (120h × $1.71/h) (est.: the on-demand rate stands in: Google has "
                    "not published calendar-mode prices in what we read)")

    def test_booking_cost_and_window(self):
        self.repo.write({"f": booking_yaml()})
        r = self.plan()
        # Before its window the booking holds nothing the capacity check may count.
        self.assertEqual(section(r.out, "Quota")[1:], [
            "  us-central1-a",
            "    GPU          class                    in use   adds  limit    free after",
            "    L4           future_reservation.gpus       0      0  0        0 (held only 2026-01-08 09:00 UTC "
            "for 5d)",
            USAGE_NOTE,
        ])
        # 2 VMs x 0.853624 = 1.707248/h, x 120 h = 204.86976
        self.assertEqual(section(r.out, "Cost")[1:], [PRICES_LINE, self.BOOKING_COST])
        self.assertEqual(r.out.splitlines()[-1],
                         "Cost: + $0.00/h while running, at most $0.00 for this apply, plus $204.87 for the "
                         "bookings' windows (est.; paid used or not).")
        plan = json.loads(self.plan("-format", "json").out)
        cost = [a["cost"] for a in plan["actions"] if a["address"] == "future_reservation.gpus"][0]
        self.assertAlmostEqual(cost["usd_max"], 2 * 120 * 0.853624, places=9)
        self.assertTrue(cost["estimate"])
        self.assertAlmostEqual(plan["cost"]["bookings_usd"], 2 * 120 * 0.853624, places=9)
        self.assertEqual(plan["cost"]["reservations_usd_per_hour"], 0)
        # Booked; inside its window it holds its 2 VMs' L4s.
        self.assertEqual(self.repo.apply(env={"VX_NOW": FAKE_NOW}).code, 0)
        r = self.plan(now="2026-01-09T00:00:00Z")
        self.assertEqual(section(r.out, "Quota")[3:4], [
            "    L4           future_reservation.gpus       0      0  2        2 (held only 2026-01-08 09:00 UTC "
            "for 5d)"])
        # After it, nothing again.
        r = self.plan(now="2026-01-13T09:00:00Z")
        self.assertEqual(section(r.out, "Quota")[3:4], [
            "    L4           future_reservation.gpus       0      0  0        0 (held only 2026-01-08 09:00 UTC "
            "for 5d)"])


if __name__ == "__main__":
    unittest.main()
