"""A stack whose state history holds N runs, for timing vx report (make bench).

python3 tests/bench/report_state.py DIR N makes DIR a git repository with a stack in
DIR/stack and its state branch vx/state/bench written with git fast-import: N/10 jobs of
10 attempts each (9 in the history, preempted or failed, and the current one succeeded),
spread over three regions and strategies, an hour apart, ending a day before
2026-11-26T00:00:00Z, so every run is in vx report's default 30-day window with
VX_NOW=2026-11-26T00:00:00Z.
"""
import json
import os
import subprocess
import sys

STACK = "kind: Stack\nname: bench\nproject: vx-bench\nregion: us-central1\n"
END = 1795651200 - 86400          # 2026-11-25T00:00:00Z
REGIONS = ["us-central1", "us-east4", "europe-west4"]
STRATEGIES = ["SPOT", "FLEX_START", "STANDARD"]
ATTEMPTS = 10


def stamp(t):
    return "%04d-%02d-%02dT%02d:%02d:%02dZ" % __import__("time").gmtime(t)[:6]


def run(job, k, t):
    last = k == ATTEMPTS - 1
    return {"resource": "projects/vx-bench/locations/%s/customJobs/%d%02d" % (REGIONS[job % 3], job, k),
            "region": REGIONS[job % 3], "action": "create" if k == 0 else "resubmit", "specHash": "ab" * 32,
            "run": 1, "attempt": k + 1, "labels": {"vx-job": "j%05d" % job},
            "state": "JOB_STATE_SUCCEEDED" if last else "JOB_STATE_FAILED",
            "failure": None if last else ("preempted" if k % 2 else "user-error"), "errorCode": 0 if last else 8,
            "errorMessage": None if last else "Resources are insufficient in region: %s." % REGIONS[job % 3],
            "cancelledByVx": False, "createdAt": stamp(t), "startedAt": stamp(t + 300),
            "endedAt": stamp(t + 300 + 1800 + 60 * (job % 30)), "configCommit": None,
            "machineType": "a2-highgpu-1g", "acceleratorType": "NVIDIA_TESLA_A100", "acceleratorCount": 1,
            "replicas": 1, "strategy": STRATEGIES[job % 3], "reservation": None}


def make(root, n):
    d = os.path.join(root, "stack")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "stack.yaml"), "w") as f:
        f.write(STACK)
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b", GIT_COMMITTER_NAME="b",
               GIT_COMMITTER_EMAIL="b@b")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "stack"]):
        subprocess.run(["git", "-C", root] + args, check=True, env=env)
    stack = {"version": 1, "stack": "bench", "serial": 1, "lineage": "0a3b1c2d-0000-4000-8000-000000000000",
             "salt": "ab" * 32, "lock": None, "journal": []}
    blobs = [("stack.json", json.dumps(stack, indent="\t"))]
    jobs = max(1, n // ATTEMPTS)
    for j in range(jobs):
        start = END - 3600 * ATTEMPTS - 60 * (j % 600)
        runs = [run(j, k, start + 3600 * k) for k in range(ATTEMPTS)]
        rec = {"version": 1, "address": "job.j%05d" % j, "kind": "CustomJob", "specHash": "ab" * 32,
               "spec": None, "run": 1, "attempts": ATTEMPTS, "protect": False, "current": runs[-1],
               "history": runs[:-1]}
        blobs.append(("jobs/j%05d.json" % j, json.dumps(rec, indent="\t")))
    msg = "bench: %d runs\n\nVx-Serial: 1\n" % (jobs * ATTEMPTS)
    parts = ["commit refs/heads/vx/state/bench\n", "committer vx <vx@localhost> %d +0000\n" % END,
             "data %d\n%s\n" % (len(msg.encode()), msg)]
    for path, text in blobs:
        data = text.encode()
        parts.append("M 100644 inline %s\ndata %d\n%s\n" % (path, len(data), text))
    subprocess.run(["git", "-C", root, "fast-import", "--quiet"], input="".join(parts).encode(), check=True)
    return d


if __name__ == "__main__":
    print(make(sys.argv[1], int(sys.argv[2])))
