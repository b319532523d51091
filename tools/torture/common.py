"""Pieces the torture sections share: the fake, a stack in a repository (git,
git with a shared remote, gcs), running vx, and reading what the fake holds.

Standard library only. The fake and its key come from tests/e2e/harness.py.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

import harness  # noqa: E402  (the fake Google Cloud and its environment)

PROJECT = harness.PROJECT
REGION = harness.REGION
STACK = "torture"
N_JOBS = 50
ACTIVE = ("JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING")
BACKENDS = ("git", "git-remote", "gcs")

# The trials' settings for vx: the fake carries a create out within 0.5 s of
# receiving it (torture.faults()), so a killed apply's creates cannot land
# later than that after it died: an in-flight window of 2 s is safe, and
# keeps each trial short. The fake's rate limits are off, and vx's limiter is
# raised so that it is not the bottleneck either.
VX_ENV = {"VX_INFLIGHT_SECONDS": "2", "VX_CREATE_RATE_PER_MINUTE": "60000",
          "VX_RATE_PER_MINUTE": "60000", "VX_TIMEOUT": "300"}

# "state is locked by U@H (pid N, OP) since T, expires T; lock id I; wait with
# -lock-timeout or clear it with: vx unlock I ARGS" (state/lock.c describe()).
LOCKED = re.compile(
    r"^vx: (?:apply: )?state is locked by (?P<who>[^@\s]+)@(?P<host>\S+) \(pid (?P<pid>\d+), "
    r"(?P<op>[a-z]+)\) since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z, expires "
    r"(?:\d{4}-\d\d-\d\dT)?\d\d:\d\d:\d\d(?:\.\d+)?Z; lock id (?P<id>\S+); wait with -lock-timeout or "
    r"clear it with: vx unlock (?P=id)(?: \S+)*\n$")


def reservation_yaml(name, zone, count=2):
    return ("---\nkind: Reservation\nname: %s\nzone: %s\nmachineType: g2-standard-8\n"
            "accelerators: [{type: nvidia-l4, count: 1}]\ncount: %d\n" % (name, zone, count))


def quota_yaml(name, quota_id, value):
    return ("---\nkind: QuotaPreference\nname: %s\nservice: aiplatform.googleapis.com\n"
            "quotaId: %s\ndimensions: {region: %s}\npreferredValue: %d\n"
            "contactEmail: ml-infra@example.com\n" % (name, quota_id, REGION, value))


RESERVATIONS = {"pool-a": REGION + "-a", "pool-b": REGION + "-b"}
# Increases over the fake's defaults (1000 GPUs, 10000 CPUs): granted at once.
QUOTAS = {"l4": ("CustomModelTrainingL4GPUsPerProjectPerRegion", 1100),
          "cpus": ("CustomModelTrainingCPUsPerProjectPerRegion", 11000)}


def declaration(n_jobs=N_JOBS):
    docs = {"job-%02d" % i: harness.job_yaml("j%02d" % i) for i in range(n_jobs)}
    for name, zone in RESERVATIONS.items():
        docs["res-" + name] = reservation_yaml(name, zone)
    for name, (qid, value) in QUOTAS.items():
        docs["quota-" + name] = quota_yaml(name, qid, value)
    return docs


def state_block(backend):
    if backend == "git-remote":
        return "state: {remote: origin}\n"
    if backend == "gcs":
        return "state: {backend: gcs, bucket: torture, path: vx/state/%s}\n" % STACK
    return ""


class Fake(harness.Fake):
    """The fake with the trial's settings: no server rate limits (vx's own
    limiter is raised too), and faults set per trial."""

    def setup(self, faults):
        self.post("/_fake/rate-limits", {"enabled": False})
        if faults:
            self.post("/_fake/faults", faults)

    def reset(self):
        """Back to an empty world, with a new key (reset drops keys)."""
        self.post("/_fake/reset", {})
        key = self.post("/_fake/service-accounts", {"project": PROJECT})
        with open(self.key_file, "w") as f:
            json.dump(key, f)

    def list_of(self, what, key):
        got = self.get("/_fake/" + what)
        return got.get(key, []) if isinstance(got, dict) else got

    def request_log(self):
        return self.get("/_fake/requests")["log"]


class Result:
    def __init__(self, code, out, err, seconds=0.0):
        self.code, self.out, self.err, self.seconds = code, out, err, seconds

    def crashed(self):
        return (self.code < 0 or self.code >= 128 or "Sanitizer" in self.err
                or "runtime error:" in self.err)

    def __repr__(self):
        return "exit %d\n--- stdout\n%s\n--- stderr\n%s" % (self.code, self.out, self.err)


class Checkout:
    """One git checkout holding the stack in stack/ (the state lives per backend)."""

    def __init__(self, vx, fake, root, backend):
        self.vx_bin, self.fake, self.root, self.backend = vx, fake, root, backend
        self.dir = os.path.join(root, "stack")

    def env(self, extra=None):
        e = self.fake.env()
        e.update(VX_ENV)
        if extra:
            e.update(extra)
        return e

    def git(self, *args):
        return subprocess.run(["git", "-C", self.root] + list(args), check=True,
                              capture_output=True, text=True, env=self.fake.env()).stdout

    def argv(self, verb, *args):
        if verb == "apply":
            return [self.vx_bin, "apply", self.dir, "-auto-approve"] + list(args)
        return [self.vx_bin, verb] + list(args)

    def start(self, verb, *args, env=None):
        return subprocess.Popen(self.argv(verb, *args), cwd=self.root, env=self.env(env),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, text=True)

    @staticmethod
    def finish(p, t0=None, timeout=600):
        out, err = p.communicate(timeout=timeout)
        return Result(p.returncode, out, err, time.time() - t0 if t0 else 0.0)

    def run(self, verb, *args, env=None, timeout=600):
        t0 = time.time()
        return self.finish(self.start(verb, *args, env=env), t0, timeout)

    def apply(self, *args, env=None):
        return self.run("apply", *args, env=env)

    def plan(self, *args, env=None):
        return self.run("plan", self.dir, *args, env=env)

    def lock_held(self):
        """The lease left after the last apply, or None. Asked of vx itself, so
        that every backend (and wherever it keeps the lease) is covered: one
        more apply, with nothing to do, says on stderr when it takes over a
        lease nobody released ("taking over the dead lock ..."). For git, the
        lock in stack.json on the state branch is read first, since the probe
        clears it."""
        found = []
        if self.backend != "gcs":
            # The lease ref (lease.json: null once released), and an old-style
            # lock in stack.json (docs/leases.md, migration).
            # With a remote, the remote's refs are the truth (a clone's local
            # lease ref is as old as its last vx run).
            remote = os.path.join(os.path.dirname(self.root), "remote.git")
            where_git = (["--git-dir", remote] if self.backend == "git-remote" else ["-C", self.root])
            for where, key in (("refs/vx/lease/%s:lease.json" % STACK, None),
                               ("refs/heads/vx/state/%s:stack.json" % STACK, "lock")):
                cp = subprocess.run(["git"] + where_git + ["cat-file", "-p", where],
                                    capture_output=True, text=True)
                if cp.returncode != 0:
                    continue
                try:
                    doc = json.loads(cp.stdout)
                    lock = doc.get(key) if key else doc
                except (ValueError, AttributeError):
                    lock = "unparsable " + where
                if lock:
                    found.append("%s: %s" % (where, json.dumps(lock)))
        r = self.apply("-lock-timeout", "0s")
        for line in r.err.splitlines():
            if "taking over" in line or "state is locked by" in line:
                found.append(line)
        if r.code != 0 and not found:
            found.append("probe apply failed: %r" % r)
        return found or None


def make_world(vx, fake, tmp, backend, docs, clones=1, extra_stack=""):
    """The stack in a fresh repository (or `clones` clones sharing a bare
    remote), extra_stack appended to its Stack document. Returns the checkouts."""
    if os.path.exists(tmp):
        shutil.rmtree(tmp)
    os.makedirs(tmp)
    first = Checkout(vx, fake, os.path.join(tmp, "repo"), backend)
    os.makedirs(first.dir)
    first.git("init", "-q", "-b", "main")
    text = harness.STACK.format(stack=STACK, project=PROJECT, region=REGION) + state_block(backend) + extra_stack
    with open(os.path.join(first.dir, "stack.yaml"), "w") as f:
        f.write(text)
    with open(os.path.join(first.dir, "resources.yaml"), "w") as f:
        f.write("".join(docs[k] for k in sorted(docs)))
    first.git("add", "-A")
    first.git("commit", "-q", "-m", "torture stack")
    out = [first]
    if backend == "git-remote":
        remote = os.path.join(tmp, "remote.git")
        subprocess.run(["git", "init", "-q", "--bare", remote], check=True)
        first.git("remote", "add", "origin", remote)
        first.git("push", "-q", "origin", "main")
        for i in range(1, clones):
            c = Checkout(vx, fake, os.path.join(tmp, "clone%d" % i), backend)
            subprocess.run(["git", "clone", "-q", "-b", "main", remote, c.root], check=True,
                           capture_output=True)
            out.append(c)
    return out


def our(labels):
    return labels.get("vx-stack") == STACK


def count_violations(fake, co, docs, expect_running=True):
    """The counters every trial reports, from the fake's world and request log
    and from `vx log`: duplicates, missing, wrong cancels, lost history,
    stuck locks. Returns (counts, details)."""
    c = {"dup": 0, "missing": 0, "cancel": 0, "history": 0, "lock": 0}
    details = []
    jobs = [j for j in fake.jobs() if our(j.get("labels", {}))]
    by_addr = {}
    for j in jobs:
        by_addr.setdefault(j["labels"].get("vx-job"), []).append(j)
    declared_jobs = sorted("j%02d" % int(k.split("-")[1]) for k in docs if k.startswith("job-"))
    for addr, js in sorted(by_addr.items()):
        if len(js) > 1:
            c["dup"] += len(js) - 1
            details.append("duplicate job.%s: %s" % (addr, ", ".join(
                "%s %s" % (j["name"].rsplit("/", 1)[1], j["state"]) for j in js)))
    for addr in declared_jobs:
        live = [j for j in by_addr.get(addr, []) if j["state"] in ACTIVE]
        if expect_running and not live:
            c["missing"] += 1
            details.append("missing job.%s (%s)" % (addr, [j["state"] for j in by_addr.get(addr, [])]))
    # Reservations: vx marks the description "vx: stack=S lineage=L".
    res = [r for r in fake.list_of("reservations", "reservations")
           if "stack=%s " % STACK in (r.get("description") or "") + " "]
    res_by = {}
    for r in res:
        res_by.setdefault(r["name"], []).append(r)
    for name, zone in RESERVATIONS.items():
        got = res_by.get(name, [])
        if len(got) > 1:
            c["dup"] += len(got) - 1
            details.append("duplicate reservation.%s" % name)
        if not got or str(got[0].get("specificReservation", {}).get("count")) != "2":
            c["missing"] += 1
            details.append("missing reservation.%s" % name)
    quotas = fake.list_of("quota-preferences", "quotaPreferences")
    q_by = {}
    for q in quotas:
        q_by.setdefault((q.get("service"), q.get("quotaId")), []).append(q)
    for name, (qid, value) in QUOTAS.items():
        got = q_by.get(("aiplatform.googleapis.com", qid), [])
        if len(got) > 1:
            c["dup"] += len(got) - 1
            details.append("duplicate quota.%s" % name)
        if not got or str(got[0].get("quotaConfig", {}).get("preferredValue")) != str(value):
            c["missing"] += 1
            details.append("missing quota.%s" % name)
    # Wrong cancels: every job is declared, so any cancel of one of ours is
    # wrong unless it cancels a duplicate (counted there already); a deletion of
    # a declared reservation is wrong too.
    names = {j["name"].split("/customJobs/")[1]: j for j in jobs}
    cancelled = {jid for jid, j in names.items() if j["state"] in ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED")}
    deletes = []
    for e in fake.request_log():
        # a cancel whose reply was lost ("dropped") took effect all the same
        if e["rpc"] == "CancelCustomJob" and (e.get("status") == "dropped" or
                                              str(e.get("status")).startswith("2")):
            cancelled.add(e["path"].split("/customJobs/")[1].split(":")[0])
        if e["rpc"] == "Reservations.Delete":
            deletes.append(e["path"])
    for jid in sorted(cancelled):
        j = names.get(jid)
        if j is not None and len(by_addr.get(j["labels"].get("vx-job"), [])) == 1:
            c["cancel"] += 1
            details.append("wrong cancel of job.%s (%s)" % (j["labels"].get("vx-job"), jid))
    for path in deletes:
        c["cancel"] += 1
        details.append("wrong delete: %s" % path)
    # Lost history: every run the fake holds must be listed by `vx log`.
    r = co.run("log", co.dir)
    if r.code != 0:
        c["history"] += len(jobs)
        details.append("vx log failed: %r" % r)
    else:
        for j in jobs:
            if j["name"] not in r.out:
                c["history"] += 1
                details.append("vx log does not list job.%s run %s" % (j["labels"].get("vx-job"), j["name"]))
    # ... and every reservation and quota preference of ours, by its resource
    # name (a create, or an adopt after a killed apply made it).
    want = []
    for r in res:
        want.append(("reservation", r["name"], "projects/%s/zones/%s/reservations/%s" % (
            PROJECT, r.get("zone", "").rsplit("/", 1)[-1], r["name"])))
    for q in quotas:
        want.append(("quota", q["name"].rsplit("/", 1)[-1], q["name"]))
    for kind, name, resource in want:
        r = co.run("log", "%s.%s" % (kind, name), co.dir)
        if r.code != 0 or not re.search(r" (create|adopt) +%s " % re.escape(resource), r.out):
            c["history"] += 1
            details.append("vx log %s.%s does not list %s: %r" % (kind, name, resource, r))
    held = co.lock_held()
    if held:
        c["lock"] += 1
        details.append("stuck lock: %s" % "; ".join(held))
    return c, details
