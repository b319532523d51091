"""make bench: vxplan over 100, 1,000 and 10,000 jobs against the fake with injected latency.

For each size, N jobs are declared and N live jobs carrying the stack's
labels exist in the fake. With L ms of latency on every request, the floor is
the number of round trips a plan must make (one token exchange, one list
call per page of 1,000 jobs, and one Cloud Quotas quotaInfos list: the jobs
have GPUs, so quota and cost are on) times L. The bench fails when a plan
makes more than one quotaInfos list, or any per-job quota call. The benchmark prints the wall time of
vxplan, that floor, and their ratio; a ratio near 1 means vx's own work (YAML,
schema checks, hashing, planning) is small next to the network.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from harness import Fake, Repo, job_yaml, PROJECT, REGION  # noqa: E402

LATENCY_MS = int(os.environ.get("VX_BENCH_LATENCY_MS", "50"))
SIZES = [int(s) for s in os.environ.get("VX_BENCH_SIZES", "100,1000,10000").split(",")]
PAGE = 1000


def seed(fake, n):
    """Creates n live jobs labelled for the stack through the real API."""
    fake.post("/_fake/rate-limits", {"enabled": False})
    fake.post("/_fake/tokens", {"token": "bench-token"})
    spec = {"workerPoolSpecs": [{"machineSpec": {"machineType": "g2-standard-4",
                                                 "acceleratorType": "NVIDIA_L4", "acceleratorCount": 1},
                                 "replicaCount": "1",
                                 "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/t:1"}}]}
    fake.post("/_fake/capacity", {"region": REGION, "accelerator_type": "NVIDIA_L4", "gpus": None})
    fake.post("/_fake/quota", {"region": REGION, "accelerator_type": "NVIDIA_L4", "limit": 10 * n + 100})
    url = "%s/v1/projects/%s/locations/%s/customJobs" % (fake.url, PROJECT, REGION)
    for i in range(n):
        body = {"displayName": "j%05d" % i, "jobSpec": spec,
                "labels": {"vx-stack": "e2e", "vx-job": "j%05d" % i}}
        req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json",
                                              "Authorization": "Bearer bench-token"})
        urllib.request.urlopen(req, timeout=30).read()


def main():
    print("vxplan wall time against the fake, %d ms latency per request" % LATENCY_MS)
    print("%8s %10s %10s %8s %8s" % ("jobs", "plan (s)", "floor (s)", "ratio", "calls"))
    for n in SIZES:
        tmp = tempfile.mkdtemp(prefix="vx-bench-")
        fake = Fake(tmp)
        try:
            repo = Repo(tmp, fake)
            repo.write({"j%05d" % i: job_yaml("j%05d" % i) for i in range(n)})
            seed(fake, n)
            fake.post("/_fake/faults", {"latency_ms": LATENCY_MS})
            fake.post("/_fake/requests/reset", {})
            t0 = time.time()
            r = repo.plan(timeout=1800)
            wall = time.time() - t0
            if r.code != 0:
                print(r)
                sys.exit(1)
            log = fake.requests()
            calls = log["total"]
            # Quota and cost are on (the jobs have GPUs): one quotaInfos list for
            # aiplatform (no reservations, so none for compute), never one call per job.
            quota_lists = log["by_rpc"].get("ListQuotaInfos", 0)
            if quota_lists != 1 or log["by_rpc"].get("GetQuotaInfo"):
                print("FAIL: %d jobs: %d ListQuotaInfos and %d GetQuotaInfo calls; want 1 and 0"
                      % (n, quota_lists, log["by_rpc"].get("GetQuotaInfo", 0)))
                sys.exit(1)
            pages = max(1, -(-n // PAGE))
            floor = (1 + pages + quota_lists) * LATENCY_MS / 1000.0
            print("%8d %10.2f %10.2f %8.2f %8d" % (n, wall, floor, wall / floor, calls))
        finally:
            fake.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
