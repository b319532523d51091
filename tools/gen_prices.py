#!/usr/bin/env python3
"""Writes data/prices.json and data/prices_data.c (the same table, compiled into vx).

The figures are read from the published rows copied into data/prices-src/ (each file names its
source, date and licence): no number is typed in here, only the factors of the two derivations
the sources leave to us, each marked an estimate in the table:

* flex-start (Dynamic Workload Scheduler): Google bills discounted flex-start SKUs but publishes no
  machine-readable figure; vx estimates FLEX_FACTOR x the same region's on-demand rate.
* A3 Ultra (H200) and A4 (B200): no complete public per-VM figure; vx adds up the SkyPilot GPU and
  host rows (data/prices-src/gpus-and-estimates-2026-11.json), us-central1 only.

Vertex AI bills N1 machines and their GPUs for training at VERTEX_N1_FACTOR x Compute Engine: the
vertex_machines and vertex_accelerators sections apply it (to Spot too, marked an estimate there).
A region without its own row has no price: nothing is borrowed from another region.

    python3 tools/gen_prices.py                  # rewrites both files
    python3 tools/gen_prices.py --out DIR        # writes DIR/prices.json and DIR/prices_data.c
    python3 tools/gen_prices.py --billing-catalog page1.json [page2.json ...] [--date D] [-o FILE]
                                                 # a table from Cloud Billing Catalog skus.list pages

The --billing-catalog form computes each machine type's rate from the SKUs (vCPUs x core SKU +
GB x RAM SKU + GPUs x GPU SKU + bundled local SSD), see docs/prices.md.
"""
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC_DIR = os.path.join(ROOT, "data", "prices-src")
CE_FILE = "compute-machines-2026-07-30.json"
EXTRA_FILE = "gpus-and-estimates-2026-11.json"

FLEX_FACTOR = 0.5
VERTEX_N1_FACTOR = 1.15
CLASSES = ("on_demand", "spot", "flex_start")

# The GPU keys of the Compute Engine file, as Vertex AI names them, and whether the GPU takes
# FLEX_START (reconcile/load/machines.c).
GPU_KEYS = {
    "a100": ("NVIDIA_TESLA_A100", True),
    "a100-80gb": ("NVIDIA_A100_80GB", True),
    "h100-80gb": ("NVIDIA_H100_80GB", True),
    "h100-80gb-mega": ("NVIDIA_H100_MEGA_80GB", True),
    "l4": ("NVIDIA_L4", True),
    "rtx6000": ("NVIDIA_RTX_PRO_6000", False),
}
FLEX_GPUS = {v for v, flex in GPU_KEYS.values() if flex} | {"NVIDIA_H200_141GB", "NVIDIA_B200"}


class InputError(Exception):
    """A source or catalog file that cannot be used: the message names the file and field."""


def rnd(x):
    return round(x, 6)


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise InputError("%s: %s" % (path, e.strerror))
    except (ValueError, UnicodeDecodeError) as e:
        raise InputError("%s: not JSON: %s" % (path, e))
    except RecursionError:
        raise InputError("%s: not JSON this tool reads: nested too deeply" % path)


def machine_gpu(shape):
    """(Vertex GPU name, count) of a machine shape of the Compute Engine file, or (None, 0)."""
    for key, (vertex, _) in GPU_KEYS.items():
        if key in shape:
            return vertex, shape[key]
    if "gpu" in shape:
        return shape["gpu"], shape.get("gpus", 0)
    return None, 0


def source_entry(doc, what):
    return {"source": doc["source"], "date": doc["date"], "licence": doc.get("licence"), "what": what}


# ---- the table from rows ----

class Table:
    """Per-region sections; each entry keeps its figures, their sources and estimate marks."""

    def __init__(self):
        self.regions = {}

    def put(self, region, section, name, cls, value, src, estimate=False):
        sec = self.regions.setdefault(region, {}).setdefault(section, {})
        e = sec.setdefault(name, {"rates": {}, "src": {}, "est": set()})
        e["rates"][cls] = rnd(value)
        e["src"][cls] = src
        if estimate:
            e["est"].add(cls)

    def to_json(self):
        out = {}
        for region in sorted(self.regions):
            secs = {}
            for section in ("machines", "accelerators", "vertex_machines", "vertex_accelerators"):
                entries = self.regions[region].get(section)
                if not entries:
                    continue
                secs[section] = {}
                for name in sorted(entries):
                    e = entries[name]
                    j = {c: e["rates"][c] for c in CLASSES if c in e["rates"]}
                    est = [c for c in CLASSES if c in e["est"]]
                    if est:
                        j["estimate"] = est
                    srcs = [e["src"][c] for c in CLASSES if c in e["src"]]
                    # One source for every figure: a string; else per figure.
                    j["src"] = srcs[0] if len(set(srcs)) == 1 else {c: e["src"][c] for c in CLASSES
                                                                   if c in e["src"]}
                    secs[section][name] = j
            out[region] = secs
        return out


def derive(table, machines, gpu_of):
    """The derivations every table gets: flex-start from on-demand (est.), and Vertex AI's N1 rates."""
    for region, secs in list(table.regions.items()):
        for name, e in list(secs.get("machines", {}).items()):
            od = e["rates"].get("on_demand")
            if od is None:
                continue
            if gpu_of(name) in FLEX_GPUS:
                table.put(region, "machines", name, "flex_start", od * FLEX_FACTOR, "flex", True)
            if name.startswith("n1-"):
                table.put(region, "vertex_machines", name, "on_demand", od * VERTEX_N1_FACTOR, "vertex-n1")
                if "spot" in e["rates"]:
                    table.put(region, "vertex_machines", name, "spot", e["rates"]["spot"] * VERTEX_N1_FACTOR,
                              "vertex-n1", True)
        for name, e in list(secs.get("accelerators", {}).items()):
            table.put(region, "vertex_accelerators", name, "on_demand", e["rates"]["on_demand"] * VERTEX_N1_FACTOR,
                      "vertex-n1")
            if "spot" in e["rates"]:
                table.put(region, "vertex_accelerators", name, "spot", e["rates"]["spot"] * VERTEX_N1_FACTOR,
                          "vertex-n1", True)


DERIVED_SOURCES = {
    "flex": {
        "source": "estimate: %g x the same region's on-demand rate. Google bills discounted flex-start "
                  "(Dynamic Workload Scheduler) SKUs but publishes no machine-readable figure." % FLEX_FACTOR,
        "date": None, "licence": None, "what": "flex_start rates of machine types whose GPU takes FLEX_START"},
    "vertex-n1": {
        "source": "%g x the Compute Engine rate of the same region: Vertex AI bills N1 machines and their GPUs "
                  "for training at 1.15 x Compute Engine (its n1-standard-4 training SKU is $0.21849885/h = "
                  "1.15 x $0.189999, https://cloud.google.com/vertex-ai/pricing). Spot: the same factor, an "
                  "estimate." % VERTEX_N1_FACTOR,
        "date": None, "licence": None, "what": "vertex_machines and vertex_accelerators (N1 and its GPUs)"},
}


def published_table(src_dir):
    ce = load_json(os.path.join(src_dir, CE_FILE))
    extra = load_json(os.path.join(src_dir, EXTRA_FILE))
    t = Table()
    for name, shape in ce["machines"].items():
        for region, r in shape["regions"].items():
            for cls in ("on_demand", "spot"):
                if r.get(cls) is not None:
                    t.put(region, "machines", name, cls, r[cls], "ce")
    for region, gpus in extra["n1_gpus"].items():
        for gpu, r in gpus.items():
            for cls in ("on_demand", "spot"):
                t.put(region, "accelerators", gpu, cls, r[cls], "sky")
    # A3 Ultra: 8 H200 GPU rows + the host row; A4: the 8-B200 row + the A3 Ultra host row, the
    # nearest published host (the same 224 vCPUs). Both on-demand only: no Spot figure is published.
    rows = extra["estimate_rows"]["us-central1"]
    host = rows["a3-ultragpu-8g host"]["on_demand"]
    t.put("us-central1", "machines", "a3-ultragpu-8g", "on_demand",
          8 * rows["H200 141GB GPU"]["on_demand"] + host, "a3-ultra-estimate", True)
    t.put("us-central1", "machines", "a4-highgpu-8g", "on_demand", rows["B200 GPUs, 8"]["on_demand"] + host,
          "a4-estimate", True)
    shapes = dict(ce["machines"])
    shapes.update(extra["shapes"])
    derive(t, shapes, lambda m: machine_gpu(shapes.get(m, {}))[0])
    sources = {
        "ce": source_entry(ce, "Compute Engine list prices per VM-hour, on-demand and Spot, per "
                                           "machine type and region (GPUs and bundled local SSD included)"),
        "sky": source_entry(extra, "GPUs attached to N1 hosts, per GPU-hour, us-central1"),
        "a3-ultra-estimate": {
            "source": "estimate: 8 x the H200 GPU row ($%g) + the a3-ultragpu-8g host row ($%g), %s"
                      % (rows["H200 141GB GPU"]["on_demand"], host, extra["source"]),
            "date": extra["date"], "licence": extra.get("licence"), "what": "a3-ultragpu-8g, us-central1"},
        "a4-estimate": {
            "source": "estimate: the row for 8 B200 GPUs ($%g) + the a3-ultragpu-8g host row ($%g, the nearest "
                      "published host: the same 224 vCPUs), %s" % (rows["B200 GPUs, 8"]["on_demand"], host,
                                                                   extra["source"]),
            "date": extra["date"], "licence": extra.get("licence"), "what": "a4-highgpu-8g, us-central1"},
    }
    sources.update(DERIVED_SOURCES)
    return {
        "source": "Cloud Billing Catalog via Cyclenerd/google-cloud-pricing-cost-calculator (%s); "
                  "N1 GPUs, A3 Ultra, A4: SkyPilot catalog (%s)" % (ce["date"], extra["date"]),
        "date": ce["date"],
        "currency": ce["currency"],
        "note": "List prices per hour, each region its own (a region without a figure has no price). Not in it: "
                "negotiated prices, committed-use and sustained-use discounts, Vertex AI's training management "
                "fee for A2/A3/A4/G2/G4 (its size is not published). Figures in an entry's \"estimate\" are "
                "estimates. Supply your own table where money matters (docs/prices.md).",
        "management_fee": "excluded",
        "sources": sources,
        "regions": t.to_json(),
    }


# ---- the table from the Cloud Billing Catalog ----

# The Compute Engine SKU descriptions the rates are built from, per family (the machine type's
# prefix). "Spot Preemptible " leads the Spot SKUs' descriptions; category.usageType says
# OnDemand or Preemptible, and is what decides.
FAMILIES = (
    ("a3-megagpu-", "A3 Mega"), ("a3-ultragpu-", "A3 Ultra"), ("a3-", "A3"), ("a2-", "A2"), ("a4-", "A4"),
    ("g2-", "G2"), ("g4-", "G4"), ("n1-", "N1 Predefined"),
)
CORE_RAM_RE = re.compile(r"^(?:Spot Preemptible )?(.+?) Instance (Core|Ram) running in ")
GPU_RE = re.compile(r"^(?:Spot Preemptible )?Nvidia (.+?) GPU(?: attached to Spot Preemptible VMs)? running in ")
SSD_RE = re.compile(r"^SSD backed Local Storage(?: attached to Spot Preemptible VMs)?(?: in |$)")
GPU_NAMES = {
    "Tesla T4": "NVIDIA_TESLA_T4", "Tesla V100": "NVIDIA_TESLA_V100", "Tesla P100": "NVIDIA_TESLA_P100",
    "Tesla P4": "NVIDIA_TESLA_P4", "Tesla A100": "NVIDIA_TESLA_A100", "A100 80GB": "NVIDIA_A100_80GB",
    "H100 80GB": "NVIDIA_H100_80GB", "H100 80GB Mega": "NVIDIA_H100_MEGA_80GB", "H200 141GB": "NVIDIA_H200_141GB",
    "B200": "NVIDIA_B200", "L4": "NVIDIA_L4", "RTX PRO 6000": "NVIDIA_RTX_PRO_6000",
}
USAGE = {"OnDemand": "on_demand", "Preemptible": "spot"}
HOURS_PER_MONTH = 730.0


def field(obj, key, kind, where):
    if not isinstance(obj, dict):
        raise InputError("%s: expected an object" % where)
    if key not in obj:
        raise InputError("%s: missing \"%s\"" % (where, key))
    v = obj[key]
    ok = isinstance(v, kind) and not isinstance(v, bool)
    if not ok:
        names = {str: "a string", list: "an array", dict: "an object", int: "an integer",
                 (int, float): "a number"}
        raise InputError("%s.%s: expected %s" % (where, key, names.get(kind, kind)))
    return v


def unit_price(sku, where):
    """The SKU's price per usage unit, and the unit: the first tier's units + nanos."""
    infos = field(sku, "pricingInfo", list, where)
    if not infos:
        raise InputError("%s.pricingInfo: empty" % where)
    expr = field(infos[0], "pricingExpression", dict, where + ".pricingInfo[0]")
    w = where + ".pricingInfo[0].pricingExpression"
    unit = field(expr, "usageUnit", str, w)
    tiers = field(expr, "tieredRates", list, w)
    if not tiers:
        raise InputError("%s.tieredRates: empty" % w)
    # The last tier is the list price past any free tier (Compute Engine SKUs have one).
    price = field(tiers[-1], "unitPrice", dict, "%s.tieredRates[%d]" % (w, len(tiers) - 1))
    pw = "%s.tieredRates[%d].unitPrice" % (w, len(tiers) - 1)
    units = field(price, "units", (str, int), pw) if "units" in price else "0"
    nanos = field(price, "nanos", int, pw) if "nanos" in price else 0
    try:
        u = int(units)
    except ValueError:
        raise InputError("%s.units: not an integer: %r" % (pw, units))
    if u < 0 or nanos < 0 or nanos >= 10**9:
        raise InputError("%s: units %s nanos %s: not a price" % (pw, units, nanos))
    return u + nanos / 1e9, unit


def catalog_skus(paths):
    """{(kind, key, cls, region): price per hour (per GB-hour for RAM and SSD)} from skus.list pages."""
    rates = {}
    for path in paths:
        doc = load_json(path)
        skus = field(doc, "skus", list, path)
        for i, sku in enumerate(skus):
            where = "%s: skus[%d]" % (path, i)
            desc = field(sku, "description", str, where)
            cat = field(sku, "category", dict, where)
            usage = field(cat, "usageType", str, where + ".category")
            regions = field(sku, "serviceRegions", list, where)
            cls = USAGE.get(usage)
            if cls is None:
                continue  # commitments and the like
            m = CORE_RAM_RE.match(desc)
            g = GPU_RE.match(desc)
            if m:
                kind, key = ("core" if m.group(2) == "Core" else "ram"), m.group(1)
            elif g and g.group(1) in GPU_NAMES:
                kind, key = "gpu", GPU_NAMES[g.group(1)]
            elif SSD_RE.match(desc):
                kind, key = "ssd", "local"
            else:
                continue
            price, unit = unit_price(sku, where)
            per_hour = {"h": 1.0, "GiBy.h": 1.0, "GiBy.mo": 1 / HOURS_PER_MONTH}.get(unit)
            if per_hour is None:
                raise InputError("%s: usageUnit %r: expected h, GiBy.h or GiBy.mo" % (where, unit))
            for j, region in enumerate(regions):
                if not isinstance(region, str):
                    raise InputError("%s.serviceRegions[%d]: expected a string" % (where, j))
                rates[(kind, key, cls, region)] = price * per_hour
    return rates


def family(machine):
    for prefix, fam in FAMILIES:
        if machine.startswith(prefix):
            return fam
    return None


def catalog_table(paths, date, src_dir):
    ce = load_json(os.path.join(src_dir, CE_FILE))
    extra = load_json(os.path.join(src_dir, EXTRA_FILE))
    shapes = {m: s for m, s in ce["machines"].items()}
    shapes.update(extra["shapes"])
    rates = catalog_skus(paths)
    regions = sorted({k[3] for k in rates})
    t = Table()
    for name in sorted(shapes):
        shape, fam = shapes[name], family(name)
        gpu, ngpu = machine_gpu(shape)
        for region in regions:
            for cls in ("on_demand", "spot"):
                core = rates.get(("core", fam, cls, region))
                ram = rates.get(("ram", fam, cls, region))
                if core is None or ram is None:
                    continue
                v = shape["cpu"] * core + shape["ram"] * ram
                if gpu:
                    g = rates.get(("gpu", gpu, cls, region))
                    if g is None:
                        continue
                    v += ngpu * g
                if shape.get("local-ssd"):
                    s = rates.get(("ssd", "local", cls, region))
                    if s is None:
                        continue
                    v += shape["local-ssd"] * s
                t.put(region, "machines", name, cls, v, "billing-catalog")
    for (kind, key, cls, region), v in rates.items():
        if kind == "gpu" and key in ("NVIDIA_TESLA_T4", "NVIDIA_TESLA_V100", "NVIDIA_TESLA_P100", "NVIDIA_TESLA_P4"):
            t.put(region, "accelerators", key, cls, v, "billing-catalog")
    derive(t, shapes, lambda m: machine_gpu(shapes.get(m, {}))[0])
    sources = {"billing-catalog": {
        "source": "Cloud Billing Catalog API services.skus.list (Compute Engine, 6F81-5844-456A): "
                  "vCPUs x core SKU + GB x RAM SKU + GPUs x GPU SKU + bundled local SSD; files: %s"
                  % ", ".join(os.path.basename(p) for p in paths),
        "date": date, "licence": None, "what": "machine types and N1 GPUs"}}
    sources.update(DERIVED_SOURCES)
    return {"source": "Cloud Billing Catalog API services.skus.list, read %s" % date, "date": date,
            "currency": "USD",
            "note": "Computed by tools/gen_prices.py --billing-catalog. Figures in an entry's \"estimate\" are "
                    "estimates.",
            "management_fee": "excluded", "sources": sources, "regions": t.to_json()}


# ---- output ----

def c_source(table):
    # A byte array: a string literal this long is past what C11 compilers must take.
    data = json.dumps(table, separators=(",", ":")).encode() + b"\0"
    lines = ["/* Generated by tools/gen_prices.py (the table of data/prices.json, compact): do not edit. */",
             '#include "reconcile/capacity.h"', '#include "util/banned.h"', "",
             "const char prices_default_json[] = {"]
    for i in range(0, len(data), 24):
        lines.append(",".join(str(b) for b in data[i:i + 24]) + ",")
    lines.append("};")
    # The regions the table prices, sorted: the stack loader's list of known regions.
    lines += ["", "const char *const prices_default_regions[] = {"]
    lines += ['\t"%s",' % r for r in sorted(table["regions"])]
    lines += ["\tNULL,", "};"]
    return "\n".join(lines) + "\n"


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def usage(msg):
    sys.stderr.write("gen_prices.py: %s\nusage: gen_prices.py [--out DIR] | --billing-catalog FILE... "
                     "[--date YYYY-MM-DD] [-o FILE]\n" % msg)
    return 2


def main(argv):
    out_dir = out_file = date = None
    catalog = None
    src_dir = SRC_DIR
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--out", "-o", "--date", "--src") and i + 1 >= len(argv):
            return usage("%s needs a value" % a)
        if a == "--out":
            out_dir, i = argv[i + 1], i + 2
        elif a == "-o":
            out_file, i = argv[i + 1], i + 2
        elif a == "--date":
            date, i = argv[i + 1], i + 2
        elif a == "--src":
            src_dir, i = argv[i + 1], i + 2
        elif a == "--billing-catalog":
            catalog, i = [], i + 1
            while i < len(argv) and not argv[i].startswith("-"):
                catalog.append(argv[i])
                i += 1
            if not catalog:
                return usage("--billing-catalog needs at least one file")
        else:
            return usage("unknown argument %r" % a)
    try:
        if catalog is not None:
            if date is None or not re.match(r"^\d{4}-\d{2}-\d{2}$", date):
                return usage("--billing-catalog needs --date YYYY-MM-DD (the day the pages were read)")
            text = json.dumps(catalog_table(catalog, date, src_dir), indent=1) + "\n"
            if out_file:
                write(out_file, text)
            else:
                sys.stdout.write(text)
            return 0
        table = published_table(src_dir)
    except InputError as e:
        sys.stderr.write("gen_prices.py: %s\n" % e)
        return 1
    except OSError as e:
        sys.stderr.write("gen_prices.py: %s: %s\n" % (e.filename, e.strerror))
        return 1
    d = out_dir or ROOT
    write(os.path.join(d, "prices.json") if out_dir else os.path.join(ROOT, "data", "prices.json"),
          json.dumps(table, indent=1) + "\n")
    write(os.path.join(d, "prices_data.c") if out_dir else os.path.join(ROOT, "data", "prices_data.c"),
          c_source(table))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
