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
import calendar
import json
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
        self.assertAlmostEqual(costs["persistent_resource.eval-pool"]["usd_per_hour_min"], MACHINE, places=9)
        self.assertAlmostEqual(costs["persistent_resource.eval-pool"]["usd_per_hour_max"], 4 * MACHINE, places=9)
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
        # The pull request's line: what this plan commits to, the booking's window included (whole
        # dollars from $100 up).
        self.assertIn("last 30 days: $0.00 · this plan: at most $205",
                      self.plan("-format", "markdown").out.splitlines())
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


    def test_declined_booking_holds_and_costs_nothing(self):
        self.fake.post("/_fake/future-reservations", {"mode": "decline"})
        self.repo.write({"f": booking_yaml()})
        self.assertEqual(self.repo.apply(env={"VX_NOW": FAKE_NOW}).code, 0)
        now = self.fake.advance(60)["now"]
        r = self.plan(now=now)
        self.assertIn("DECLINED", r.out)
        self.assertEqual(section(r.out, "Quota")[3:4], [
            "    L4           future_reservation.gpus       0      0  0        0 (held only 2026-01-08 09:00 UTC "
            "for 5d)"])
        self.assertNotIn("Cost (", r.out)

def iso(ms):
    """RFC 3339 with milliseconds, as vx writes a record's times."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + ".%03dZ" % (ms % 1000)


def parse_ms(t):
    """Milliseconds of a state record's time ("2026-11-28T17:56:13.906Z" or without the fraction)."""
    base, _, frac = t.rstrip("Z").partition(".")
    return calendar.timegm(time.strptime(base, "%Y-%m-%dT%H:%M:%S")) * 1000 + int((frac + "000")[:3])


class ReportKinds(FakeTestCase):
    """vx report over a history made on this machine's clock: apply stamps what it makes with
    vx's own clock, and the fake's clock is moved to it so the runs' times agree."""

    HOUR = 3600 * 1000

    def setUp(self):
        super().setUp()
        self.fake.post("/_fake/timings", {"provisioning_seconds": 0, "updating_seconds": 0, "stopping_seconds": 0,
                                          "queued_seconds": 5, "pending_seconds": 30, "running_seconds": 3600})
        self.fake.advance(int(time.time()) - self.fake.advance(0)["epoch_seconds"])

    def apply(self):
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)

    def created_ms(self, folder, name):
        rec = json.loads(self.repo.git("show", "vx/state/e2e:%s/%s.json" % (folder, name)))
        return parse_ms(rec["current"]["createdAt"])

    def report(self, now_ms):
        r = self.repo.vx("report", self.repo.dir, "-format", "json", env={"VX_NOW": iso(now_ms)})
        self.assertEqual(r.code, 0, r)
        return json.loads(r.out)

    HELD = ("address", "zone", "machine_type", "accelerator_type", "count", "vm_hours", "used_vm_hours", "usd",
            "usd_idle", "estimate", "unused")

    def test_pool_hours_their_use_and_the_idle_share_as_waste(self):
        self.repo.write({"a": pool_yaml(autoscaling=None), "b": t4_job("ev", on="eval-pool")})
        self.apply()
        # The job on the pool runs its hour; the next apply records its end.
        self.fake.advance(4000)
        self.apply()
        t0 = self.created_ms("persistent_resources", "eval-pool")
        doc = self.report(t0 + 10 * self.HOUR)
        # 2 machines x 10 h = 20 machine-hours at 0.620999 = 12.41998 -> 12.42; the job used 1 of
        # them (3600 s x 1 replica): the idle 19/20 are waste, 12.42 x 0.95 = 11.799 -> 11.80.
        [held] = doc["reservations"]
        self.assertEqual(tuple(held[k] for k in self.HELD),
                         ("persistent_resource.eval-pool", REGION, "n1-standard-4", "NVIDIA_TESLA_T4", 2, 20.0, 1.0,
                          12.42, 11.80, True, False))
        [run] = doc["runs"]
        self.assertEqual((run["address"], run["running_seconds"], run["usd"], run["note"]),
                         ("job.ev", 3600, 0, "on a persistent resource: the resource's VM-hours are its cost"))
        t = doc["totals"]
        self.assertEqual((t["usd"], t["usd_wasted"]), (12.42, 11.80))
        self.assertIn({"key": "RESERVATION", "usd": 12.42, "usd_wasted": 11.80, "runs": 0}, t["by_strategy"])

    def test_pool_no_job_names_is_flagged(self):
        self.repo.write({"a": pool_yaml(replicas=3, autoscaling=None)})
        self.apply()
        t0 = self.created_ms("persistent_resources", "eval-pool")
        doc = self.report(t0 + 2 * self.HOUR)
        # 3 x 2 h = 6 machine-hours at 0.620999 = 3.725994 -> 3.73, all of it idle.
        [held] = doc["reservations"]
        self.assertEqual(tuple(held[k] for k in self.HELD),
                         ("persistent_resource.eval-pool", REGION, "n1-standard-4", "NVIDIA_TESLA_T4", 3, 6.0, 0.0,
                          3.73, 3.73, True, True))
        self.assertEqual((doc["totals"]["usd"], doc["totals"]["usd_wasted"]), (3.73, 3.73))
        # The pull request's spend line counts it too.
        r = self.repo.plan("-format", "markdown", env={"VX_NOW": iso(t0 + 2 * self.HOUR)})
        self.assertEqual(r.code, 0, r)
        self.assertIn("last 30 days: $3.73 (0% on preempted runs) · this plan: at most $0.00", r.out.splitlines())

    def test_booking_counts_only_inside_its_window(self):
        # A window that opens on the next whole hour after the next one, for 2 days.
        start = (int(time.time()) // 3600 + 2) * 3600 * 1000
        self.repo.write({"f": booking_yaml(start=iso(start).replace(".000", ""), duration="2d")})
        self.apply()
        self.assertEqual(self.report(start - self.HOUR)["reservations"], [])
        # 36 h in: 2 VMs x 36 h = 72 VM-hours at 0.853624 = 61.460928 -> 61.46, none used.
        [held] = self.report(start + 36 * self.HOUR)["reservations"]
        self.assertEqual(tuple(held[k] for k in self.HELD),
                         ("future_reservation.gpus", ZONE, "g2-standard-8", "NVIDIA_L4", 2, 72.0, 0.0, 61.46, 61.46,
                          True, None))
        self.assertEqual((held["from"], held["to"]), (iso(start).replace(".000", ""),
                                                      iso(start + 36 * self.HOUR).replace(".000", "")))
        # After the window: its 48 h alone, 96 VM-hours = 81.947904 -> 81.95.
        doc = self.report(start + 5 * 24 * self.HOUR)
        [held] = doc["reservations"]
        self.assertEqual((held["vm_hours"], held["usd"], held["to"]),
                         (96.0, 81.95, iso(start + 48 * self.HOUR).replace(".000", "")))
        self.assertEqual((doc["totals"]["usd"], doc["totals"]["usd_wasted"]), (81.95, 81.95))


if __name__ == "__main__":
    unittest.main()
