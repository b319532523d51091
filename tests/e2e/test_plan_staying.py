"""Issue 38: the runs that stay as they are, summed on one cost line in the human plan.

More than 20 priced runs that keep running unchanged are one line where the first of them
would be (their rates and their "at most" summed); up to 20 are listed one by one; -verbose
lists each, and the Markdown and JSON plans keep every one. Compared exactly.
"""
import json
import unittest

from harness import FakeTestCase, job_yaml

PRICES_LINE = ("  prices: Cloud Billing Catalog via Cyclenerd/google-cloud-pricing-cost-calculator (2026-07-30); "
               "N1 GPUs, A3 Ultra, A4: SkyPilot catalog (2026-11)")
FEE_LINE = "  (A2/A3/A4/G2/G4 figures exclude Vertex AI's training management fee (its size is not published))"
HEADER = "Cost (USD list prices as of 2026-07-30; docs/prices.md):"
# One g2-standard-4 with its L4, on demand in us-central1 (data/prices.json), as job_yaml declares it.
ONE = "$0.71/h, at most $356.24 (7-day default timeout × 3 attempts left)"

SUMMED = ("  running    21 jobs that stay as they are: $14.84/h, at most $7,481 (each to its timeout × its "
          "attempts left; -verbose lists them)")


def section(out, title):
    """The lines of a plan section, from its title to the next blank line."""
    lines = out.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith(title))
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def names(n):
    return ["j%02d" % i for i in range(n)]


class StayingRuns(FakeTestCase):

    def running(self, n):
        """n jobs declared and applied: each one's run active, nothing left to change."""
        self.fake.post("/_fake/quota", {"region": "us-central1", "accelerator_type": "NVIDIA_L4",
                                        "limit": 100})
        self.repo.write({x: job_yaml(x) for x in names(n)})
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)

    def test_twenty_are_listed_one_by_one_twenty_one_are_one_line(self):
        self.running(20)
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(section(r.out, "Cost"), [HEADER, PRICES_LINE] + [
            "  running    job.%s: %s" % (x, ONE) for x in names(20)] + [FEE_LINE])
        self.running(21)
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(section(r.out, "Cost"), [HEADER, PRICES_LINE, SUMMED, FEE_LINE])
        self.assertIn("\nPlan: no changes. 21 unchanged.\n", r.out)

    def test_verbose_markdown_and_json_list_each_and_a_start_stays_beside(self):
        self.running(21)
        r = self.repo.plan("-verbose")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(section(r.out, "Cost"), [HEADER, PRICES_LINE] + [
            "  running    job.%s: %s" % (x, ONE) for x in names(21)] + [FEE_LINE])
        r = self.repo.plan("-format", "markdown")
        self.assertEqual(r.code, 0, r)
        got = [l for l in r.out.splitlines() if l.startswith("- `job.")]
        self.assertEqual(got, ["- `job.%s` (running): %s" % (x, ONE) for x in names(21)])
        r = self.repo.plan("-format", "json")
        self.assertEqual(r.code, 0, r)
        costs = [a["address"] for a in json.loads(r.out)["actions"] if a.get("cost")]
        self.assertEqual(costs, ["job." + x for x in names(21)])
        # A run that starts keeps its own line; the sum stands where the first staying run was
        # (the runs that stay come first).
        self.repo.write({x: job_yaml(x) for x in ["a"] + names(21)})
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(section(r.out, "Cost"), [HEADER, PRICES_LINE, SUMMED, "  starts     job.a: " + ONE,
                                                  FEE_LINE])

if __name__ == "__main__":
    unittest.main()
