"""tools/gen_prices.py: the shipped table is what the script writes from data/prices-src/, so the
two cannot drift apart."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEN = os.path.join(ROOT, "tools", "gen_prices.py")


def run(*args):
    return subprocess.run([sys.executable, GEN] + list(args), capture_output=True, text=True, timeout=120)


class Shipped(unittest.TestCase):

    def test_shipped_files_are_what_the_script_writes(self):
        with tempfile.TemporaryDirectory() as d:
            cp = run("--out", d)
            self.assertEqual((cp.returncode, cp.stderr), (0, ""))
            for made, shipped in (("prices.json", "data/prices.json"),
                                  ("prices_data.c", "reconcile/prices_data.c")):
                with open(os.path.join(d, made), "rb") as f:
                    want = f.read()
                with open(os.path.join(ROOT, shipped), "rb") as f:
                    got = f.read()
                self.assertTrue(got == want, "%s differs from what tools/gen_prices.py writes: run "
                                "python3 tools/gen_prices.py and commit both files" % shipped)

    def test_figures_are_the_source_rows(self):
        with open(os.path.join(ROOT, "data", "prices.json")) as f:
            table = json.load(f)
        with open(os.path.join(ROOT, "data", "prices-src", "compute-machines-2026-07-30.json")) as f:
            src = json.load(f)
        self.assertNotIn("*", table["regions"])
        n = 0
        for machine, shape in src["machines"].items():
            for region, rates in shape["regions"].items():
                e = table["regions"][region]["machines"][machine]
                for cls in rates:   # some regions publish a Spot figure only
                    self.assertEqual(e[cls], rates[cls], (region, machine, cls))
                    self.assertEqual(e["src"] if isinstance(e["src"], str) else e["src"][cls], "ce")
                    n += 1
        self.assertGreater(n, 3000)
        # nothing else in "machines" but the two estimates (us-central1)
        extra = [(r, m) for r, secs in table["regions"].items() for m in secs.get("machines", {})
                 if m not in src["machines"]]
        self.assertEqual(sorted(extra), [("us-central1", "a3-ultragpu-8g"), ("us-central1", "a4-highgpu-8g")])


if __name__ == "__main__":
    unittest.main()
