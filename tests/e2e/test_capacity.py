"""Issue 10: quota and cost in the plan.

Quota limits are set in the fake through POST /_fake/quota; the plan's quota
rows, misfit warnings and cost lines are compared exactly, and the calls vx
made are counted (/_fake/requests): one quotaInfos list per service.
"""
import json
import os
import subprocess
import unittest

from harness import REGION, VX_BIN, FakeTestCase, job_yaml

ZONE = REGION + "-a"

# The lines of the Cost section around a plan's jobs, with the built-in table (data/prices.json).
PRICES_LINE = ("  prices: Cloud Billing Catalog via Cyclenerd/google-cloud-pricing-cost-calculator (2026-07-30); "
               "N1 GPUs, A3 Ultra, A4: SkyPilot catalog (2026-11)")
FEE_LINE = "  (A2/A3/A4/G2/G4 figures exclude Vertex AI's training management fee (its size is not published))"


def h100(name, strategy="FLEX_START", attempts=1):
    return job_yaml(name, machine="a3-highgpu-8g", accel="NVIDIA_H100_80GB", count=8, strategy=strategy,
                    attempts=attempts, on="stockout")


def section(out, title):
    """The lines of a plan section, from its title to the next blank line."""
    lines = out.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith(title))
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


class Capacity(FakeTestCase):

    def limit(self, accel, preemptible, value):
        self.fake.post("/_fake/quota", {"region": REGION, "accelerator_type": accel,
                                        "preemptible": preemptible, "limit": value})

    def three_flex(self):
        self.limit("NVIDIA_H100_80GB", True, 16)
        self.repo.write({n: h100(n) for n in ("a", "b", "c")})

    def test_third_flex_start_job_does_not_fit(self):
        self.three_flex()
        self.fake.post("/_fake/requests/reset", {})
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(section(r.out, "Quota"), [
            "Quota (GPUs; in use: this stack's active runs that stay):",
            "  us-central1",
            "    GPU          class                    in use   adds  limit    free after",
            "    H100 80GB    preemptible                   0     24  16       -8 (does not fit)",
            "  (in use: this stack's runs only; Cloud Quotas does not report usage, so jobs of other stacks "
            "in the project are not counted)",
        ])
        self.assertEqual(section(r.out, "Warnings"), [
            "Warnings:",
            "  job.c: does not fit: needs 8 preemptible H100 80GB in us-central1, limit 16, "
            "16 in use or started before it: 0 free",
        ])
        # FLEX_START a3-highgpu-8g: 0.5 x its on-demand $88.49 = $44.245/h (est.), x 168 h
        self.assertEqual(section(r.out, "Cost"), [
            "Cost (USD list prices as of 2026-07-30; docs/prices.md):",
            PRICES_LINE,
            "  starts     job.a: $44.24/h, at most $7,433.16 (7-day default timeout × 1 attempt left) (est.)",
            "  starts     job.b: $44.24/h, at most $7,433.16 (7-day default timeout × 1 attempt left) (est.)",
            "  starts     job.c: $44.24/h, at most $7,433.16 (7-day default timeout × 1 attempt left) (est.)",
            FEE_LINE,
        ])
        self.assertEqual(r.out.splitlines()[-1],
                         "Cost: + $132.73/h while running, at most $22,299 for this apply.")
        # one quotaInfos list (no reservations declared: no compute list), no get per job
        by = self.fake.requests()["by_rpc"]
        self.assertEqual(by.get("ListQuotaInfos"), 1)
        self.assertNotIn("GetQuotaInfo", by)

    def test_fail_on_quota_exits_1(self):
        self.three_flex()
        r = self.repo.plan("-fail-on=quota")
        self.assertEqual(r.code, 1, r)
        self.assertEqual(section(r.out, "Errors"), [
            "Errors (the plan cannot be applied):",
            "  job.c: does not fit: needs 8 preemptible H100 80GB in us-central1, limit 16, "
            "16 in use or started before it: 0 free (-fail-on=quota)",
        ])
        a = self.repo.apply("-fail-on=quota")
        self.assertEqual(a.code, 1, a)
        self.assertEqual(self.fake.jobs(), [])

    def test_spot_and_standard_draw_different_classes(self):
        self.limit("NVIDIA_L4", False, 4)
        self.limit("NVIDIA_L4", True, 2)
        self.repo.write({"od": job_yaml("od", count=1),
                         "sp": job_yaml("sp", count=1, strategy="SPOT")})
        r = self.repo.plan("-format", "json")
        self.assertEqual(r.code, 0, r)
        plan = json.loads(r.out)
        self.assertEqual([(q["region"], q["accelerator"], q["class"], q["in_use"], q["adds"], q["limit"],
                           q["fits"]) for q in plan["quota"]],
                         [(REGION, "NVIDIA_L4", "on-demand", 0, 1, 4, True),
                          (REGION, "NVIDIA_L4", "preemptible", 0, 1, 2, True)])
        costs = {a["address"]: a["cost"] for a in plan["actions"]}
        # g2-standard-4, us-central1: $0.706832 on-demand, $0.397336 Spot (both published)
        self.assertEqual(costs["job.od"], {"usd_per_hour": 0.706832, "usd_max": 0.706832 * 168 * 3,
                                           "upper_bound": False, "estimate": False, "unknown_reason": None})
        self.assertEqual(costs["job.sp"]["usd_per_hour"], 0.397336)
        self.assertEqual(plan["cost"]["price_date"], "2026-07-30")
        self.assertEqual(plan["cost"]["price_source"], PRICES_LINE[len("  prices: "):])
        self.assertTrue(plan["cost"]["excludes_vertex_management_fee"])
        self.assertEqual(plan["warnings"], [])

    def test_job_on_reservation_draws_the_reservation(self):
        self.limit("NVIDIA_L4", False, 0)
        res = ("---\nkind: Reservation\nname: pool\nzone: %s\nmachineType: g2-standard-8\n"
               "accelerators: [{type: nvidia-l4, count: 1}]\ncount: 2\n" % ZONE)
        job = job_yaml("r", machine="g2-standard-8").replace(
            "acceleratorCount: 1}", "acceleratorCount: 1, reservationAffinity: {reservation: pool}}")
        self.repo.write({"pool": res, "r": job})
        self.fake.post("/_fake/requests/reset", {})
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(section(r.out, "Quota")[1:], [
            "  us-central1-a",
            "    GPU          class                    in use   adds  limit    free after",
            "    L4           reservation.pool              0      1  2        1",
            "  (in use: this stack's runs only; Cloud Quotas does not report usage, so jobs of other stacks "
            "in the project are not counted)",
        ])
        # 2 x g2-standard-8 ($0.853624/h, its L4 bundled)
        self.assertEqual(section(r.out, "Cost")[1:], [
            PRICES_LINE,
            "  starts     job.r: $0.00/h, at most $0.00",
            "  running    reservation.pool: $1.71/h while it exists (used or not, until deleted); 2 L4 held, "
            "1 used by declared jobs: $0.85/h idle",
            FEE_LINE,
        ])
        self.assertNotIn("Warnings", r.out)
        by = self.fake.requests()["by_rpc"]
        self.assertEqual(by.get("ListQuotaInfos"), 2)   # aiplatform and compute

    def test_pending_quota_preference_is_shown(self):
        self.limit("NVIDIA_H100_80GB", True, 16)
        self.fake.post("/_fake/quota-grants", {"mode": "pending"})
        quota = ("---\nkind: QuotaPreference\nname: h100\nservice: aiplatform.googleapis.com\n"
                 "quotaId: CustomModelTrainingPreemptibleH100GPUsPerProjectPerRegion\n"
                 "dimensions: {region: %s}\npreferredValue: 32\ncontactEmail: ml@example.com\n" % REGION)
        self.repo.write({"q": quota})
        a = self.repo.apply()
        self.assertEqual(a.code, 0, a)
        self.repo.write({"q": quota, "a": h100("a")})
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        # nothing is granted yet (no grantedValue): the 16 is the limit in force, not a grant
        self.assertEqual(section(r.out, "Quota")[3], "    H100 80GB    preemptible                   0      8  "
                         "16 in force, 32 requested, pending 8")


PRICES = ('{"source": "our contract", "date": "2025-07-01", "currency": "EUR", "regions": {"*": '
          '{"machines": {"a3-highgpu-8g": {"on_demand": 20, "flex_start": 10}}}}}')


class StackSettings(FakeTestCase):
    """The Stack's failOn: [quota] and prices: (docs/format.md, docs/prices.md)."""

    def test_stack_fail_on_quota_exits_1(self):
        self.fake.post("/_fake/quota", {"region": REGION, "accelerator_type": "NVIDIA_H100_80GB",
                                        "preemptible": True, "limit": 16})
        self.repo.write({n: h100(n) for n in ("a", "b", "c")}, extra_stack="failOn: [quota]\n")
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(section(r.out, "Errors"), [
            "Errors (the plan cannot be applied):",
            "  job.c: does not fit: needs 8 preemptible H100 80GB in us-central1, limit 16, "
            "16 in use or started before it: 0 free (failOn: [quota])",
        ])
        a = self.repo.apply()
        self.assertEqual(a.code, 1, a)
        self.assertEqual(self.fake.jobs(), [])

    def test_small_sum_keeps_its_cents(self):
        self.repo.write({"t": job_yaml("t", machine="g2-standard-4", count=1)})
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.out.splitlines()[-1], "Cost: + $0.71/h while running, at most $356.24 for this apply.")

    def test_stack_fail_on_unknown_word(self):
        self.repo.write({"a": h100("a")}, extra_stack="failOn: [quotas]\n")
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        d = self.repo.dir
        self.assertEqual(r.err, '%s/stack.yaml:6:10: Stack "%s": failOn[0]: unknown value "quotas" '
                         '(did you mean "quota"?)\nvx: %s: the stack has 1 error\n' % (d, self.repo.stack, d))

    def test_stack_prices_file(self):
        with open(os.path.join(self.repo.dir, "prices.json"), "w") as f:
            f.write(PRICES)
        self.repo.write({"a": h100("a")}, extra_stack="prices: prices.json\n")
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        # a user's table in the old form: its "*" region, and no management-fee note (it does not say)
        self.assertEqual(section(r.out, "Cost"), [
            "Cost (EUR list prices as of 2025-07-01; docs/prices.md):",
            "  prices: our contract",
            "  starts     job.a: 10.00 EUR/h, at most 1,680.00 EUR (7-day default timeout × 1 attempt left)",
        ])
        self.assertEqual(r.out.splitlines()[-1],
                         "Cost: + 10.00 EUR/h while running, at most 1,680 EUR for this apply.")
        # VX_PRICES beats the Stack's prices: (docs/prices.md)
        other = os.path.join(self.repo.root, "other.json")
        with open(other, "w") as f:
            f.write(PRICES.replace('"flex_start": 10', '"flex_start": 12'))
        r = self.repo.plan(env={"VX_PRICES": other})
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.out.splitlines()[-1],
                         "Cost: + 12.00 EUR/h while running, at most 2,016 EUR for this apply.")

    def test_stack_prices_bad_file_names_its_path(self):
        path = os.path.join(self.repo.dir, "prices.json")
        with open(path, "w") as f:
            f.write('{"regions": {"*": {"machines": {"a3-highgpu-8g": {"on_demand": -1}}}}}')
        self.repo.write({"a": h100("a")}, extra_stack="prices: prices.json\n")
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.err, "vx: stack.%s: prices: %s: regions.*.machines.a3-highgpu-8g.on_demand must be "
                         "a number >= 0\n" % (self.repo.stack, path))
        self.repo.write({"a": h100("a")}, extra_stack="prices: nowhere.json\n")
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.err, "vx: stack.%s: prices: %s/nowhere.json: No such file or directory\n"
                         % (self.repo.stack, self.repo.dir))


def in_region(yaml, region):
    return yaml.replace("\nrun: ", "\nregion: %s\nrun: " % region)


class RegionPrices(FakeTestCase):
    """Each region is priced from its own published figure; a region without one has no price."""

    def test_region_is_priced_from_its_own_figure(self):
        # europe-west4 a2-highgpu-1g: $3.747972/h on-demand (us-central1's is $3.673385); 168 h x 1 attempt
        self.repo.write({"a": in_region(job_yaml("a", machine="a2-highgpu-1g", accel="NVIDIA_TESLA_A100",
                                                 attempts=1), "europe-west4")})
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(section(r.out, "Cost")[1:], [PRICES_LINE, "  starts     job.a: $3.75/h, at most $629.66 "
                                                      "(7-day default timeout × 1 attempt left)",
                                                      FEE_LINE])
        self.assertEqual(r.out.splitlines()[-1], "Cost: + $3.75/h while running, at most $629.66 for this apply.")

    def test_region_without_a_figure_has_no_price(self):
        # a3-megagpu-8g has no published us-central1 row
        self.repo.write({"m": job_yaml("m", machine="a3-megagpu-8g", accel="NVIDIA_H100_MEGA_80GB", count=8,
                                       attempts=1)})
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(section(r.out, "Cost")[1:], [
            PRICES_LINE, "  starts     job.m: no published price for a3-megagpu-8g in us-central1", FEE_LINE])
        self.assertEqual(r.out.splitlines()[-1],
                         "Cost: + unknown/h while running (a price is not in the table).")

    def test_estimates_and_missing_spot_figure(self):
        # a3-ultragpu-8g: on-demand estimated from SkyPilot's rows (8 x $9.3117 + $12.266 = $86.7596),
        # flex-start 0.5 x that; no Spot figure anywhere
        ultra = dict(machine="a3-ultragpu-8g", accel="NVIDIA_H200_141GB", count=8, attempts=1)
        self.repo.write({"f": job_yaml("f", strategy="FLEX_START", **ultra),
                         "s": job_yaml("s", strategy="SPOT", **ultra)})
        r = self.repo.plan("-format", "json")
        self.assertEqual(r.code, 0, r)
        costs = {a["address"]: a["cost"] for a in json.loads(r.out)["actions"]}
        self.assertEqual(costs["job.f"], {"usd_per_hour": 43.3798, "usd_max": 43.3798 * 168, "upper_bound": False,
                                          "estimate": True, "unknown_reason": None})
        self.assertEqual(costs["job.s"], {"usd_per_hour": None, "usd_max": None, "upper_bound": False,
                                          "estimate": False, "unknown_reason":
                                          "no published Spot price for a3-ultragpu-8g in us-central1"})

    def test_reservation_without_a_figure_has_no_price(self):
        # n1-standard-8 with T4s: the N1 GPU rows are published for us-central1 only
        res = ("---\nkind: Reservation\nname: pool\nzone: europe-west4-a\nmachineType: n1-standard-8\n"
               "accelerators: [{type: nvidia-tesla-t4, count: 1}]\ncount: 2\n")
        self.repo.write({"pool": res})
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(section(r.out, "Cost")[1:], [
            PRICES_LINE,
            "  running    reservation.pool: no published price for n1-standard-8 with nvidia-tesla-t4 in europe-west4",
        ])


class Help(unittest.TestCase):

    def test_plan_and_apply_help_name_fail_on_quota(self):
        want = ["  -fail-on=quota       a job that would not fit its GPU quota or reservation is",
                "                       a plan error (exit 1), not a warning; the Stack's",
                "                       failOn: [quota] does the same"]
        for cmd in ("plan", "apply"):
            cp = subprocess.run([VX_BIN, cmd, "-help"], capture_output=True, text=True, timeout=30)
            self.assertEqual(cp.returncode, 0, cp)
            lines = cp.stdout.splitlines()
            i = next((k for k, l in enumerate(lines) if l.startswith("  -fail-on")), None)
            self.assertIsNotNone(i, cp.stdout)
            self.assertEqual(lines[i:i + 3], want)


class AtMost(FakeTestCase):
    """A job's "at most": rate x its timeout (Vertex's 7 days when it sets none) x the attempts
    left counting the one that runs, said on the line; the same for a running attempt as for
    the resubmission that started it."""

    FINISHED_AFTER = 4000    # the fake's RUNNING -> a planned failure

    def cost_line(self):
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        return section(r.out, "Cost")[2]

    def test_running_attempt_and_its_resubmission_cost_the_same(self):
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "a"}, "outcome": "preempted", "times": 1})
        self.repo.write({"a": job_yaml("a", machine="g2-standard-8", strategy="SPOT", attempts=3)})
        self.assertEqual(self.cost_line(),
                         "  starts     job.a: $0.48/h, at most $241.86 (7-day default timeout × 3 attempts left)")
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.cost_line(),
                         "  running    job.a: $0.48/h, at most $241.86 (7-day default timeout × 3 attempts left)")
        self.fake.advance(self.FINISHED_AFTER)
        # attempt 2 of 3 is the resubmission; it and the attempt after it are left
        self.assertEqual(self.cost_line(),
                         "  starts     job.a: $0.48/h, at most $161.24 (7-day default timeout × 2 attempts left)")
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.cost_line(),
                         "  running    job.a: $0.48/h, at most $161.24 (7-day default timeout × 2 attempts left)")

    def test_the_jobs_own_timeout(self):
        self.repo.write({"a": job_yaml("a", machine="g2-standard-8", strategy="SPOT", attempts=1).replace(
            "scheduling: {strategy: SPOT}", "scheduling: {strategy: SPOT, timeout: 12h}")})
        self.assertEqual(self.cost_line(), "  starts     job.a: $0.48/h, at most $5.76 (12h timeout × 1 attempt left)")


class Delta(FakeTestCase):
    """The summary's change in hourly spend: runs started - runs stopped + reservations."""

    def test_replace_and_cancel_subtract_the_stopped_runs(self):
        self.repo.write({"a": h100("a"), "b": h100("b")})
        a = self.repo.apply()
        self.assertEqual(a.code, 0, a)
        # a is replaced by a SPOT run; b is no longer declared: cancelled
        self.repo.write({"a": h100("a", strategy="SPOT")})
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        # started: one SPOT a3-highgpu-8g, $50.609541/h; stopped: the two FLEX_START runs, $44.245/h each
        self.assertEqual(r.out.splitlines()[-1], "Cost: - $37.88/h while running (runs started + $50.61, "
                         "runs stopped - $88.49), at most $8,502 for this apply.")

    def test_reservation_made_counts(self):
        res = ("---\nkind: Reservation\nname: pool\nzone: %s\nmachineType: g2-standard-8\n"
               "accelerators: [{type: nvidia-l4, count: 1}]\ncount: 2\n" % ZONE)
        self.repo.write({"pool": res})
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        # 2 x (g2-standard-8 with its L4): held whether used or not. It said "at most $0.00 for this
        # apply" beside the open-ended $1.71/h: a reservation is paid per hour while it exists.
        self.assertEqual(r.out.splitlines()[-1], "Cost: + $1.71/h while running (runs started + $0.00, "
                         "reservations + $1.71), at most $0.00 for this apply's runs, plus $1.71/h for the "
                         "reservations while they exist (paid per hour, used or not, until deleted).")
        self.assertIn("\n  running    reservation.pool: $1.71/h while it exists (used or not, until deleted); "
                      "2 L4 held, 0 used by declared jobs: $1.71/h idle\n", r.out)
        r = self.repo.plan("-format", "markdown")
        self.assertIn("**Cost** (USD list prices as of 2026-07-30): + $1.71/h while running (runs started + "
                      "$0.00, reservations + $1.71), at most $0.00 for this apply's runs, plus $1.71/h for the "
                      "reservations while they exist (paid per hour, used or not, until deleted)\n", r.out)
        self.assertIn("\n- `reservation.pool` (running): $1.71/h while it exists (used or not, until deleted); "
                      "2 L4 held, 0 used by declared jobs: $1.71/h idle\n", r.out)
        cost = json.loads(self.repo.plan("-format", "json").out)["cost"]
        self.assertEqual((cost["usd_max"], round(cost["reservations_usd_per_hour"], 2)), (0, 1.71))
