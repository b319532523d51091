#!/usr/bin/env python3
"""Writes data/prices.json and reconcile/prices_data.c (the same table, compiled into vx).

The numbers are vx's copy of Google's published list prices (USD per hour), as of DATE, typed in
from the pages named in SOURCE: this script runs without the network. They are list prices:
negotiated or committed-use prices, other currencies and later changes are not in it, so teams
should supply their own table (VX_PRICES=FILE or the Stack's `prices:`, docs/prices.md).
Figures listed in an entry's "estimate" were not read off a price page (Spot prices move
monthly; flex-start and the "*" region are approximations): the plan marks them "est.".

    python3 tools/gen_prices.py        # rewrites both files
"""
import json
import os

SOURCE = ("https://cloud.google.com/compute/all-pricing (GPU and accelerator-optimized machine types, "
          "us-central1) and https://cloud.google.com/vertex-ai/pricing (custom training)")
DATE = "2025-06-01"
NOTE = ("On-demand rates for us-central1: Google's published list prices as the table's author knew "
        "them on %s, typed in, not checked against the live pages; not a quote. Negotiated prices, "
        "committed-use discounts and other currencies are not in it: supply your own table "
        "(VX_PRICES=FILE or the Stack's prices:, docs/prices.md). Rates in an entry's "
        "\"estimate\" list are estimates." % DATE)

# Compute Engine, us-central1, on-demand and Spot, per VM-hour (GPUs bundled for A2/A3/A4/G2).
# flex_start: DWS flex-start on Vertex AI is billed at discounted flex-start SKUs for
# accelerator-optimized machines (about half of on-demand): an estimate here.
MACHINES = {
    "a3-highgpu-8g": (88.49, 29.98, 44.25),
    "a3-megagpu-8g": (101.76, 34.50, 50.88),
    "a3-ultragpu-8g": (84.81, 28.76, 42.41),
    "a4-highgpu-8g": (117.34, 39.78, 58.67),
    "a2-highgpu-1g": (3.673385, 1.2547, 1.8367),
    "a2-highgpu-2g": (7.34677, 2.5094, 3.6734),
    "a2-highgpu-4g": (14.69354, 5.0188, 7.3468),
    "a2-highgpu-8g": (29.38708, 10.0376, 14.6935),
    "a2-ultragpu-1g": (5.0688, 1.6067, 2.5344),
    "a2-ultragpu-2g": (10.1376, 3.2134, 5.0688),
    "a2-ultragpu-4g": (20.2752, 6.4268, 10.1376),
    "a2-ultragpu-8g": (40.5504, 12.8536, 20.2752),
    "g2-standard-4": (0.70683, 0.2827, 0.3534),
    "g2-standard-8": (0.85362, 0.3414, 0.4268),
    "g2-standard-12": (1.00041, 0.4002, 0.5002),
    "g2-standard-16": (1.2942, 0.5177, 0.6471),
    "g2-standard-24": (2.00082, 0.8003, 1.0004),
    "g2-standard-32": (1.73457, 0.6938, 0.8673),
    "g2-standard-48": (4.00164, 1.6007, 2.0008),
    "g2-standard-96": (8.00328, 3.2013, 4.0016),
    "n1-standard-1": (0.04749975, 0.01, None),
    "n1-standard-2": (0.0949995, 0.02, None),
    "n1-standard-4": (0.189999, 0.04, None),
    "n1-standard-8": (0.379998, 0.08, None),
    "n1-standard-16": (0.759996, 0.16, None),
    "n1-standard-32": (1.519992, 0.32, None),
    "n1-standard-64": (3.039984, 0.64, None),
    "n1-standard-96": (4.559976, 0.96, None),
}
# Per GPU-hour, attached to N1 machine types.
ACCELERATORS = {
    "NVIDIA_TESLA_T4": (0.35, 0.14),
    "NVIDIA_TESLA_V100": (2.48, 0.992),
    "NVIDIA_TESLA_P4": (0.60, 0.24),
    "NVIDIA_TESLA_P100": (1.46, 0.584),
}
# Vertex AI custom training, us-central1, where it differs from Compute Engine (N1 and its GPUs).
VERTEX_MACHINES = {
    "n1-standard-4": 0.218499, "n1-standard-8": 0.436998, "n1-standard-16": 0.873996,
    "n1-standard-32": 1.747992, "n1-standard-64": 3.495984, "n1-standard-96": 5.243976,
}
VERTEX_ACCELERATORS = {
    "NVIDIA_TESLA_T4": 0.4025, "NVIDIA_TESLA_V100": 2.852, "NVIDIA_TESLA_P4": 0.69,
    "NVIDIA_TESLA_P100": 1.679,
}


def entry(od, spot=None, flex=None, estimate=()):
    e = {"on_demand": od}
    if spot is not None:
        e["spot"] = spot
    if flex is not None:
        e["flex_start"] = flex
    est = [k for k in ("on_demand", "spot", "flex_start") if k in estimate and k in e]
    if est:
        e["estimate"] = est
    return e


def region(star):
    est = ("on_demand", "spot", "flex_start") if star else ("spot", "flex_start")
    r = {
        "machines": {m: entry(od, sp, fx, est) for m, (od, sp, fx) in sorted(MACHINES.items())},
        "accelerators": {a: entry(od, sp, None, est) for a, (od, sp) in sorted(ACCELERATORS.items())},
        "vertex_machines": {m: entry(v, None, None, est) for m, v in sorted(VERTEX_MACHINES.items())},
        "vertex_accelerators": {a: entry(v, None, None, est) for a, v in sorted(VERTEX_ACCELERATORS.items())},
    }
    return r


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    table = {"source": SOURCE, "date": DATE, "currency": "USD", "note": NOTE,
             "regions": {"us-central1": region(False), "*": region(True)}}
    text = json.dumps(table, indent=1, sort_keys=False) + "\n"
    with open(os.path.join(root, "data", "prices.json"), "w") as f:
        f.write(text)
    # A byte array: a string literal this long is past what C11 compilers must take.
    data = json.dumps(table, separators=(",", ":")).encode() + b"\0"
    lines = ["/* Generated by tools/gen_prices.py (the table of data/prices.json, compact): do not edit. */",
             '#include "reconcile/capacity.h"', "", "const char prices_default_json[] = {"]
    for i in range(0, len(data), 16):
        lines.append("\t" + ", ".join("0x%02x" % b for b in data[i:i + 16]) + ",")
    lines.append("};")
    with open(os.path.join(root, "reconcile", "prices_data.c"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
