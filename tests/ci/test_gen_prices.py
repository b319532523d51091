"""tools/gen_prices.py: the shipped table is what the script writes from data/prices-src/, so the
two cannot drift apart; --billing-catalog computes each machine's rate from a recorded sample of
the Cloud Billing Catalog's skus.list pages (tests/data/prices/, constructed in the real format),
and a bad page is a clear error, never a traceback."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEN = os.path.join(ROOT, "tools", "gen_prices.py")
PAGES = [os.path.join(ROOT, "tests", "data", "prices", "billing-catalog-page%d.json" % i) for i in (1, 2)]


def run(*args):
    return subprocess.run([sys.executable, GEN] + list(args), capture_output=True, text=True, timeout=120)


class Shipped(unittest.TestCase):

    def test_shipped_files_are_what_the_script_writes(self):
        with tempfile.TemporaryDirectory() as d:
            cp = run("--out", d)
            self.assertEqual((cp.returncode, cp.stderr), (0, ""))
            for made, shipped in (("prices.json", "data/prices.json"),
                                  ("prices_data.c", "data/prices_data.c")):
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


class BillingCatalog(unittest.TestCase):

    def catalog(self, *pages):
        cp = run("--billing-catalog", *(list(pages) or PAGES), "--date", "2026-11-20")
        self.assertEqual((cp.returncode, cp.stderr), (0, ""))
        return json.loads(cp.stdout)

    def test_rates_from_the_skus(self):
        t = self.catalog()
        self.assertEqual((t["date"], t["currency"], t["management_fee"]), ("2026-11-20", "USD", "excluded"))
        self.assertEqual(t["sources"]["billing-catalog"]["date"], "2026-11-20")
        r = t["regions"]
        self.assertEqual(sorted(r), ["europe-west4", "us-central1", "us-east1"])
        cat = "billing-catalog"
        est = {"on_demand": cat, "flex_start": "flex"}
        # n1-standard-4: 4 x $0.031611 + 15 GB x $0.004237; Spot 4 x $0.00698 + 15 x $0.000936
        self.assertEqual(r["us-central1"]["machines"]["n1-standard-4"],
                         {"on_demand": 0.189999, "spot": 0.04196, "src": cat})
        # us-east1 has the on-demand SKUs only (their serviceRegions), no Spot ones
        self.assertEqual(r["us-east1"]["machines"]["n1-standard-4"], {"on_demand": 0.189999, "src": cat})
        # Vertex AI: 1.15 x, Spot marked an estimate
        self.assertEqual(r["us-central1"]["vertex_machines"]["n1-standard-4"],
                         {"on_demand": 0.218499, "spot": 0.048254, "estimate": ["spot"], "src": "vertex-n1"})
        self.assertEqual(r["us-central1"]["accelerators"], {"NVIDIA_TESLA_T4": {"on_demand": 0.35, "src": cat}})
        self.assertEqual(r["us-central1"]["vertex_accelerators"],
                         {"NVIDIA_TESLA_T4": {"on_demand": 0.4025, "src": "vertex-n1"}})
        # g2-standard-4: 4 x $0.024988 + 16 x $0.002927 + 1 L4 x $0.56004; europe-west4 from its own SKUs
        self.assertEqual(r["us-central1"]["machines"]["g2-standard-4"],
                         {"on_demand": 0.706824, "flex_start": 0.353412, "estimate": ["flex_start"], "src": est})
        self.assertEqual(r["europe-west4"]["machines"]["g2-standard-4"],
                         {"on_demand": 0.77752, "flex_start": 0.38876, "estimate": ["flex_start"], "src": est})
        # a2-ultragpu-1g: 12 x $0.031611 + 170 x $0.004237 + $3.92808 + 375 GB local SSD x $0.08 / 730 h
        self.assertEqual(r["us-central1"]["machines"]["a2-ultragpu-1g"],
                         {"on_demand": 5.068798, "flex_start": 2.534399, "estimate": ["flex_start"], "src": est})
        # no A100 40GB SKU in the sample: no a2-highgpu rate; the commitment SKU is not a price
        self.assertNotIn("a2-highgpu-1g", r["us-central1"]["machines"])
        self.assertEqual(sorted(m for m in r["us-central1"]["machines"] if not m.startswith("n1-")),
                         ["a2-ultragpu-1g", "a2-ultragpu-2g", "a2-ultragpu-4g", "a2-ultragpu-8g"] +
                         ["g2-standard-%d" % n for n in sorted((4, 8, 12, 16, 24, 32, 48, 96), key=str)])

    def test_output_file_is_a_table_vx_reads(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "prices.json")
            cp = run("--billing-catalog", *PAGES, "--date", "2026-11-20", "-o", out)
            self.assertEqual((cp.returncode, cp.stdout, cp.stderr), (0, "", ""))
            with open(out) as f:
                self.assertEqual(json.load(f), self.catalog())

    def bad(self, page, want):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "page.json")
            with open(path, "w") as f:
                f.write(page if isinstance(page, str) else json.dumps(page))
            cp = run("--billing-catalog", path, "--date", "2026-11-20")
            self.assertEqual((cp.returncode, cp.stdout, cp.stderr), (1, "", "gen_prices.py: %s\n" % want % path))

    def test_untrusted_pages(self):
        with open(PAGES[0]) as f:
            good = json.load(f)["skus"][0]

        def sku(**change):
            s = json.loads(json.dumps(good))
            for k, v in change.items():
                s[k] = v
            return {"skus": [s]}
        self.bad("{\"skus\": [", "%s: not JSON: Expecting value: line 1 column 11 (char 10)")
        self.bad("[" * 100000, "%s: not JSON this tool reads: nested too deeply")
        self.bad([], "%s: expected an object")
        self.bad({"sku": []}, '%s: missing "skus"')
        self.bad({"skus": {}}, "%s.skus: expected an array")
        self.bad({"skus": ["x"]}, "%s: skus[0]: expected an object")
        self.bad(sku(description=7), "%s: skus[0].description: expected a string")
        self.bad(sku(category=None), "%s: skus[0].category: expected an object")
        self.bad(sku(serviceRegions=[3]), "%s: skus[0].serviceRegions[0]: expected a string")
        self.bad(sku(pricingInfo=[]), "%s: skus[0].pricingInfo: empty")
        price = good["pricingInfo"][0]
        nanos = json.loads(json.dumps(price))
        nanos["pricingExpression"]["tieredRates"][0]["unitPrice"]["nanos"] = "31611000"
        self.bad(sku(pricingInfo=[nanos]), "%s: skus[0].pricingInfo[0].pricingExpression.tieredRates[0]"
                 ".unitPrice.nanos: expected an integer")
        neg = json.loads(json.dumps(price))
        neg["pricingExpression"]["tieredRates"][0]["unitPrice"]["units"] = "-1"
        self.bad(sku(pricingInfo=[neg]), "%s: skus[0].pricingInfo[0].pricingExpression.tieredRates[0]"
                 ".unitPrice: units -1 nanos 31611000: not a price")
        unit = json.loads(json.dumps(price))
        unit["pricingExpression"]["usageUnit"] = "GiBy.s"
        self.bad(sku(pricingInfo=[unit]), "%s: skus[0]: usageUnit 'GiBy.s': expected h, GiBy.h or GiBy.mo")

    def test_arguments(self):
        cp = run("--billing-catalog", PAGES[0])
        self.assertEqual(cp.returncode, 2)
        self.assertIn("--billing-catalog needs --date YYYY-MM-DD", cp.stderr)
        cp = run("--billing-catalog", "/nonexistent/page.json", "--date", "2026-11-20")
        self.assertEqual((cp.returncode, cp.stderr),
                         (1, "gen_prices.py: /nonexistent/page.json: No such file or directory\n"))


if __name__ == "__main__":
    unittest.main()
