#!/usr/bin/env python3
"""make torture: vx's safety claims (no duplicate, no lost job, whatever
happens to an apply) as a command anyone can run. See docs/measurements.md, "Torture".

  kill    apply SIGKILLed at a uniformly random moment of its run, against a
          fake with 503s, lost replies and latency; then apply up to twice
          more; then `vxplan -detailed-exitcode` must say no changes
          kill-persistent, kill-future (run with kill, or alone): a stack of one
          persistent resource (and a job on it), one of a calendar-mode
          FutureReservation; the apply is killed in turn while the create is at
          the server, once its operation was polled, and at a random moment;
          the next applies adopt it: one resource, one job, no changes planned
          kill-queued (run with kill, or alone): jobs with resubmit.maxQueued held
          QUEUED past it, so the killed apply is cancelling them and creating
          the next rung: one job per attempt, and never two active runs of an
          address (from the fake's times, its clock running)
  pause   apply SIGSTOPped past a short lease; a second apply takes over;
          SIGCONT; the first must send nothing more
  race    8 applies at once: one winner, every loser names the holder
  lost    (gcs only; a fifth of TRIALS, at least 3) state.json deleted between applies, its history kept: the
          next apply must refuse and create nothing; `vx state restore`; then
          the applies converge
  lostmid (gcs only; as many) state.json deleted right after the Nth create of an
          apply (N random): the apply writes it back; nothing twice, nothing
          missing
  watch   two `vx watch` and a vxapply on one stack whose every job is
          preempted once, one watcher SIGKILLed at a random moment and
          started again: each job resubmitted exactly once, nothing lost;
          the stack notifies a dead webhook (connection refused) and a hung
          one (never answers): the apply (-lock-timeout 30s) never fails
          on the lease
  policy  two `vx watch -follow origin/main` (no -sync) while jobs are preempted
          and a commit nobody applied lands on the followed branch (a
          ladder onto 8 H100s, maxAttempts 10, maxParallel 6, an after:
          removed): every job at the fake is one the applied policy allows
          (its attempt, its machine, the sweep's one run at a time, eval
          after train), and none twice
  hostile vx (ASan build) against a server answering with bad replies
  fuzz    a short libFuzzer run of every target in tests/fuzz/

Environment (make passes them): TRIALS (100), SEED (time), BACKENDS
(git,git-remote,gcs), SECTIONS (kill,pause,race,lost,lostmid,watch,policy,hostile,fuzz), VX (the binary),
VX_ASAN (the ASan binary, for hostile), FUZZ_TIME (20), KEEP_ALL=1 keeps every
trial's directory (a failed trial's always stays), OUT (build/torture).

Exit 0 when every counter is 0; 1 otherwise. Every trial prints the command
that replays it alone (same seed, same backend, same trial number).
"""
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import common
from common import (BACKENDS, Checkout, Fake, count_violations, declaration, make_world)

COUNTERS = ("dup", "missing", "cancel", "history", "lock")

# The policy section's stack: jobs p00.. (maxAttempts 2 applied), a sweep (maxParallel 1
# applied), eval after train; the pushed commit changes each.
POLICY_JOBS = 6
POLICY_H100 = ("maxAttempts: 10, fallback: [{machineSpec: {machineType: a3-highgpu-8g, "
               "acceleratorType: NVIDIA_H100_80GB, acceleratorCount: 8}}]}")
POLICY_SWEEP = """---
kind: CustomJob
name: s
matrix:
  seed: [1, 2, 3, 4, 5, 6]
maxParallel: {limit}
spec:
  workerPoolSpecs:
    - machineSpec: {{machineType: g2-standard-4, acceleratorType: NVIDIA_L4, acceleratorCount: 1}}
      replicaCount: 1
      containerSpec:
        imageUri: us-docker.pkg.dev/p/r/train:1
        args: ["--seed=${{{{ matrix.seed }}}}"]
  baseOutputDirectory: {{outputUriPrefix: "gs://b/s"}}
"""
POLICY_EVAL = """---
kind: CustomJob
name: eval
{after}spec:
  workerPoolSpecs:
    - machineSpec: {{machineType: n1-standard-4}}
      replicaCount: 1
      containerSpec:
        imageUri: us-docker.pkg.dev/p/r/eval:1
"""


# The kill section's stacks of one held resource each (issues 34 and 35): a persistent resource with
# a job on it, and a calendar-mode FutureReservation. Their creates are long-running operations,
# killed in turn at each point (KILL_POINTS); the next applies must adopt what was made, never a
# second one, and the plan then say "no changes".
KIND_KILL_DOCS = {
    "persistent": {
        "pr": ("---\nkind: PersistentResource\nname: eval-pool\nspec:\n  resourcePools:\n    - id: l4s\n"
               "      machineSpec: {machineType: g2-standard-8, acceleratorType: NVIDIA_L4, acceleratorCount: 1}\n"
               "      replicaCount: 2\n"),
        "pr-job": common.harness.job_yaml("eval", machine="g2-standard-8").replace(
            "name: eval\n", "name: eval\npersistentResource: eval-pool\n", 1),
    },
    "future": {
        # A window after the fake's frozen clock and vx's real one, as the kind suite's row has it.
        "fr": ("---\nkind: FutureReservation\nname: gpus\nzone: %s-a\nmode: calendar\n"
               "window: {start: 2031-03-02T09:00:00Z, duration: 5d}\nspec:\n  specificSkuProperties:\n"
               "    totalCount: 2\n    instanceProperties:\n      machineType: g2-standard-8\n"
               "      guestAccelerators: [{acceleratorType: nvidia-l4, acceleratorCount: 1}]\n" % common.REGION),
    },
}
# Each kind's create and the call that polls its operation, as the fake's request log names them.
KIND_KILL_RPCS = {"persistent": ("CreatePersistentResource", ("GetOperation",)),
                  "future": ("FutureReservations.Insert", ("ZoneOperations.Get", "ZoneOperations.Wait"))}
# Where a trial kills the apply: while the create is at the server (its reply not yet sent), once
# its operation has been polled (the resource exists, the state does not know it yet), or at a
# moment drawn over a clean apply (the intent's write, the result's write, the job after it).
KILL_POINTS = ("create in flight", "operation polled", "anywhere")

# The kill-queued row: jobs whose rung-0 runs the fake holds QUEUED for 10 h, past their
# resubmit.maxQueued of 1 h; the apply under the kill cancels each and creates its next attempt on
# rung 1 once the cancel has ended (2 s of the fake's clock, running at real speed then).
QUEUED_JOBS = 6
QUEUED_RESUBMIT = "resubmit: {on: [stockout], maxAttempts: 3, maxQueued: 1h, fallback: [{region: us-east5}]}"
QUEUED_DOCS = {"job-q%02d" % i: re.sub(r"(?m)^resubmit: \{.*\}$", QUEUED_RESUBMIT, common.harness.job_yaml("q%02d" % i))
               for i in range(QUEUED_JOBS)}


def env_list(name, default):
    v = os.environ.get(name, "")
    return [x for x in v.replace(" ", ",").split(",") if x] or list(default)


class Section:
    """One row of the table: trials run, counters, and the trials that failed."""

    def __init__(self, name, backend):
        self.name, self.backend = name, backend
        self.trials = 0
        self.counts = {k: 0 for k in COUNTERS}
        self.other = 0          # section-specific violations (a loser not naming the holder, ...)
        self.failed = []        # (trial, dir, details)
        self.start_error = None  # the backend could not even start: a failure, not a skip
        self.note = ""

    def violations(self):
        return sum(self.counts.values()) + self.other + (1 if self.start_error else 0)


def wait_for(pred, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.02)
    raise RuntimeError("timed out waiting for " + what)


def proc_state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except FileNotFoundError:
        return None
    return s[s.rindex(")") + 2]


def save(tmp, name, r):
    """A run's output beside the trial, for whoever replays a failure."""
    with open(os.path.join(tmp, name + ".txt"), "w") as f:
        f.write("exit %d after %.2f s\n--- stdout\n%s\n--- stderr\n%s" % (r.code, r.seconds, r.out, r.err))


class HungReceiver:
    """A webhook receiver on 127.0.0.1 that accepts connections, reads, and never answers."""

    def __init__(self):
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(64)
        self.url = "http://127.0.0.1:%d/hook" % self.srv.getsockname()[1]
        self.conns = []
        self.closed = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.closed:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            self.conns.append(c)

    def close(self):
        # shutdown() wakes the accept(); closing first could leave the thread accepting on
        # whatever socket reuses the descriptor next.
        self.closed = True
        try:
            self.srv.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.thread.join(10)
        self.srv.close()
        for c in self.conns:
            c.close()


def faults(seed):
    # 5% 503s and 5% lost replies (the call takes effect, the reply is cut
    # off) on every RPC, creates included; 5-35 ms of latency each, and a
    # create takes up to 400 ms more before the server carries it out (as
    # Vertex's do), so a kill leaves creates in flight that land after the
    # next apply has listed: the case the intent journal is for.
    return {"error_rate": 0.05, "statuses": [503], "drop_after_processing_rate": 0.05,
            "latency_ms": 5, "jitter_ms": 30, "slow_ms": {"CreateCustomJob": 400}, "seed": seed}


def storage_delete(fake, bucket, name):
    """Deletes an object through the real API, as `gcloud storage rm` would: the HTTP status."""
    fake.post("/_fake/tokens", {"token": "outsider-token"})
    url = "%s/storage/v1/b/%s/o/%s" % (fake.url, bucket, urllib.parse.quote(name, safe=""))
    status = None
    # The trial's faults hit this call too: retried as gcloud would (a 404 after a
    # lost reply means the first try landed).
    for attempt in range(20):
        req = urllib.request.Request(url, method="DELETE", headers={"Authorization": "Bearer outsider-token"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status
        except urllib.error.HTTPError as e:
            status = e.code
            if e.code == 404 and attempt > 0:
                return 204
            if e.code < 500:
                return e.code
        except (urllib.error.URLError, ConnectionError):
            status = "reset"
    return status


class Torture:
    def __init__(self):
        self.vx = os.path.abspath(os.environ.get("VX", os.path.join(common.ROOT, "build", "vx")))
        self.vx_asan = os.path.abspath(os.environ.get(
            "VX_ASAN", os.path.join(common.ROOT, "build", "asan", "vx")))
        self.trials = int(os.environ.get("TRIALS", "100"))
        self.seed = int(os.environ.get("SEED") or int(time.time()) % 1000000)
        self.backends = env_list("BACKENDS", BACKENDS)
        self.sections = env_list("SECTIONS", ("kill", "pause", "race", "lost", "lostmid", "watch", "policy",
                                              "hostile", "fuzz"))
        self.only_trial = os.environ.get("TRIAL") or None
        self.out = os.path.abspath(os.environ.get("OUT", os.path.join(common.ROOT, "build", "torture")))
        self.keep_all = bool(os.environ.get("KEEP_ALL"))
        self.rows = []
        # The measured length of a clean apply per (section, backend): the kill
        # and pause moments are drawn over it. CLEAN=S replays a trial with the
        # length the failed run measured instead of measuring again.
        self.clean = {}
        self.clean_override = float(os.environ["CLEAN"]) if os.environ.get("CLEAN") else None
        self.fuzz_rows = []
        for b in self.backends:
            if b not in BACKENDS:
                sys.exit("torture: unknown backend %r (known: %s)" % (b, ", ".join(BACKENDS)))
        os.makedirs(self.out, exist_ok=True)

    def say(self, *a):
        print(*a, flush=True)

    def replay(self, section, backend, trial):
        clean = self.clean.get((section, backend))
        return "make torture SECTIONS=%s BACKENDS=%s SEED=%d TRIAL=%d%s" % (
            section, backend, self.seed, trial, " CLEAN=%.3f" % clean if clean else "")

    def trial_numbers(self, n):
        if self.only_trial is not None:
            return [int(self.only_trial)]
        return range(n)

    def record(self, row, trial, tmp, counts, details, other=0):
        row.trials += 1
        for k in COUNTERS:
            row.counts[k] += counts.get(k, 0)
        row.other += other
        bad = sum(counts.values()) + other
        if bad:
            row.failed.append((trial, tmp, details))
            self.say("  trial %d FAILED (kept %s; replay: %s)" % (
                trial, tmp, self.replay(row.name, row.backend, trial)))
            for d in details[:20]:
                self.say("    " + d)
        elif not self.keep_all:
            shutil.rmtree(tmp, ignore_errors=True)

    # ------------------------------------------------------------ kill
    def calibrate(self, fake, backend, docs, rng):
        """The length of a clean run of the same apply (same faults), so the
        kill moment can be drawn uniformly over it."""
        tmp = os.path.join(self.out, "calibrate-%s" % backend)
        fake.reset()
        fake.setup(faults(rng.randrange(1 << 30)))
        co = make_world(self.vx, fake, tmp, backend, docs)[0]
        r = co.apply()
        shutil.rmtree(tmp, ignore_errors=True)
        # Under faults an apply may end with exit 1 (a create whose outcome
        # stayed unknown is left to the next apply); it must not crash, and it
        # must have got as far as applying.
        if r.crashed() or "Apply complete" not in r.out:
            raise RuntimeError("a clean apply failed: %r" % r)
        return r.seconds

    def kill_trials(self, fake, backend):
        row = Section("kill", backend)
        self.rows.append(row)
        docs = declaration()
        rng = random.Random("%d/kill/%s" % (self.seed, backend))
        try:
            clean = self.calibrate(fake, backend, docs, rng)
        except Exception as e:  # noqa: BLE001  (any failure to start is the row's result)
            row.start_error = str(e)
            self.say("kill/%s: FAILED TO START: %s" % (backend, e))
            return
        if self.clean_override:
            clean = self.clean_override
        self.clean[("kill", backend)] = clean
        row.note = "clean apply %.1f s" % clean
        self.say("kill/%s: a clean apply takes %.2f s; kills drawn from U(0, %.2f s)" % (
            backend, clean, clean))
        for t in self.trial_numbers(self.trials):
            trng = random.Random("%d/kill/%s/%d" % (self.seed, backend, t))
            at = trng.uniform(0, clean)
            tmp = os.path.join(self.out, "kill-%s-%d" % (backend, t))
            fake.reset()
            fake.setup(faults(trng.randrange(1 << 30)))
            co = make_world(self.vx, fake, tmp, backend, docs)[0]
            log, other, details = self.kill_and_reapply(co, tmp, at, {})
            fake.post("/_fake/faults", {})
            counts, d = count_violations(fake, co, docs)
            with open(os.path.join(tmp, "trial.json"), "w") as f:
                json.dump({"seed": self.seed, "trial": t, "kill_at": at, "log": log,
                           "counts": counts, "details": d + details}, f, indent=1)
            self.say("kill/%s trial %d: %s; %s" % (backend, t, "; ".join(log),
                                                   " ".join("%s=%d" % kv for kv in counts.items())))
            self.record(row, t, tmp, counts, d + details, other)

    def kill_and_reapply(self, co, tmp, at, env):
        """An apply SIGKILLed at `at` seconds (unless it ends first), then up to two more applies
        until one succeeds, then a plan that must say "no changes" (faults stay on for it). Every
        output is saved in tmp. (log lines, count of other failures, their details)."""
        p = co.start("apply", env=env)
        try:
            p.wait(at)
            killed = False
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGKILL)
            killed = True
        first = co.finish(p)
        save(tmp, "apply-1", first)
        log = ["apply 1: killed at %.2f s" % at if killed else "apply 1: exit %d before the kill" % first.code]
        other, details = 0, []
        if first.crashed() and not killed:
            other += 1
            details.append("apply 1 crashed: %r" % first)
        other += self.reapply(co, tmp, log, details, env)
        return log, other, details

    @staticmethod
    def reapply(co, tmp, log, details, env):
        """After a killed apply: up to two more applies until one succeeds, then a plan that must say
        "no changes". Each output saved in tmp, a line each in log, a detail each failure: how many
        failed."""
        other = 0
        for n in (2, 3):
            r = co.apply(env=env)
            save(tmp, "apply-%d" % n, r)
            log.append("apply %d: exit %d (%.1f s)" % (n, r.code, r.seconds))
            if r.crashed():
                other += 1
                details.append("apply %d crashed: %r" % (n, r))
            if r.code == 0:
                break
        plan = co.plan("-detailed-exitcode", env=env)
        save(tmp, "plan", plan)
        if plan.code != 0:
            other += 1
            details.append("plan -detailed-exitcode after the applies: %r" % plan)
        return other

    # ------------------------------------------------------------ kill, one held resource
    def kind_live(self, fake, kind):
        """The stack's resources of kind at the fake (by its labels, or its description's marker)."""
        if kind == "persistent":
            return [r for r in fake.list_of("persistent-resources", "persistentResources")
                    if r.get("labels", {}).get("vx-stack") == common.STACK]
        return [f for f in fake.list_of("future-reservations", "futureReservations")
                if "stack=%s " % common.STACK in (f.get("description") or "") + " "]

    def kind_kill_setup(self, fake, kind, point, seed):
        """The fake for one trial: faults, and the create or its operation held so the point is reached."""
        fake.reset()
        f = faults(seed)
        # The call the kill is to land in is held at the server for a while.
        if point == "create in flight":
            f["slow_ms"] = {KIND_KILL_RPCS[kind][0]: 1500}
        elif point == "operation polled":
            f["slow_ms"] = {rpc: 1500 for rpc in KIND_KILL_RPCS[kind][1]}
        fake.setup(f)
        # An operation that takes a while: 300 s of the fake's frozen clock for a resource to
        # provision, a few polls for a Compute operation.
        fake.post("/_fake/timings", {"provisioning_seconds": 0 if point == "anywhere" else 300,
                                     "operation_polls": 0 if point == "anywhere" else 3})

    def kill_at_point(self, fake, kind, p, point, at):
        """Kills apply p at point (at: the moment drawn for "anywhere"). True when it was killed."""
        create, poll = KIND_KILL_RPCS[kind]
        if point == "anywhere":
            try:
                p.wait(at)
                return False
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGKILL)
                return True

        def reached():
            if p.poll() is not None:
                return True
            log = fake.request_log()
            if point == "create in flight":
                return any(e["rpc"] == create and e["status"] is None for e in log)
            return any(e["rpc"] == create for e in log) and any(e["rpc"] in poll for e in log)
        wait_for(reached, 120, point)
        if p.poll() is not None:
            return False
        p.send_signal(signal.SIGKILL)
        return True

    def kind_kill_counts(self, fake, co, kind, details):
        """dup and missing of the one resource, and whether vx log lists what was made."""
        live = self.kind_live(fake, kind)
        counts = {k: 0 for k in COUNTERS}
        if len(live) > 1:
            counts["dup"] += len(live) - 1
            details.append("%d %s resources at the fake: %s" % (len(live), kind, [r["name"] for r in live]))
        if not live:
            counts["missing"] += 1
            details.append("no %s resource at the fake" % kind)
        if kind == "persistent":
            jobs = [j for j in fake.jobs() if j.get("labels", {}).get("vx-stack") == common.STACK]
            if len(jobs) != 1:
                counts["dup" if jobs else "missing"] += abs(len(jobs) - 1)
                details.append("%d jobs on the resource: %s" % (len(jobs), [j["name"] for j in jobs]))
        # The one made is the one the state records (created, or adopted after the kill).
        addr, tail = (("persistent_resource.eval-pool", "/persistentResources/eval-pool") if kind == "persistent"
                      else ("future_reservation.gpus", "/futureReservations/gpus"))
        r = co.run("log", addr, co.dir)
        if r.code != 0 or not re.search(r" (create|adopt) +projects/\S+%s " % re.escape(tail), r.out):
            counts["history"] += 1
            details.append("vx log %s does not list its create or adoption: %r" % (addr, r))
        if co.lock_held():
            counts["lock"] += 1
            details.append("stuck lock: %s" % "; ".join(co.lock_held()))
        return counts

    def kind_kill_trials(self, fake, backend, kind):
        row = Section("kill-" + kind, backend)
        self.rows.append(row)
        docs = KIND_KILL_DOCS[kind]
        rng = random.Random("%d/kill-%s/%s" % (self.seed, kind, backend))
        try:
            self.kind_kill_setup(fake, kind, "anywhere", rng.randrange(1 << 30))
            tmp = os.path.join(self.out, "calibrate-%s-%s" % (kind, backend))
            r = make_world(self.vx, fake, tmp, backend, docs)[0].apply()
            shutil.rmtree(tmp, ignore_errors=True)
            if r.crashed() or "Apply complete" not in r.out:
                raise RuntimeError("a clean apply failed: %r" % r)
            clean = self.clean_override or r.seconds
        except Exception as e:  # noqa: BLE001  (any failure to start is the row's result)
            row.start_error = str(e)
            self.say("kill-%s/%s: FAILED TO START: %s" % (kind, backend, e))
            return
        self.clean[("kill-" + kind, backend)] = clean
        row.note = "points: %s" % ", ".join(KILL_POINTS)
        for t in self.trial_numbers(self.trials):
            self.kind_kill_trial(fake, backend, kind, row, t, clean)

    def kind_kill_trial(self, fake, backend, kind, row, t, clean):
        trng = random.Random("%d/kill-%s/%s/%d" % (self.seed, kind, backend, t))
        point = KILL_POINTS[t % len(KILL_POINTS)]
        at = trng.uniform(0, clean)
        tmp = os.path.join(self.out, "kill-%s-%s-%d" % (kind, backend, t))
        self.kind_kill_setup(fake, kind, point, trng.randrange(1 << 30))
        co = make_world(self.vx, fake, tmp, backend, KIND_KILL_DOCS[kind])[0]
        p = co.start("apply")
        killed = self.kill_at_point(fake, kind, p, point, at)
        first = co.finish(p)
        save(tmp, "apply-1", first)
        log = ["apply 1: %s" % ("killed (%s)" % point if killed else "exit %d before the kill" % first.code)]
        other, details = 0, []
        if first.crashed() and not killed:
            other += 1
            details.append("apply 1 crashed: %r" % first)
        # What was made finishes its operation; then the next applies adopt it.
        fake.post("/_fake/timings", {"provisioning_seconds": 0, "operation_polls": 0})
        fake.advance(400)
        other += self.reapply(co, tmp, log, details, None)
        fake.post("/_fake/faults", {})
        counts = self.kind_kill_counts(fake, co, kind, details)
        with open(os.path.join(tmp, "trial.json"), "w") as f:
            json.dump({"seed": self.seed, "trial": t, "point": point, "log": log, "counts": counts,
                       "details": details}, f, indent=1)
        self.say("kill-%s/%s trial %d: %s; %s" % (kind, backend, t, "; ".join(log),
                                                 " ".join("%s=%d" % kv for kv in counts.items())))
        self.record(row, t, tmp, counts, details, other)

    # ------------------------------------------------------------ kill, a cancel after maxQueued
    @staticmethod
    def fake_now(fake):
        """vx's clock at the fake's (VX_NOW), so maxQueued is measured on the runs' own times."""
        return {"VX_NOW": fake.get("/_fake/clock")["now"]}

    def queued_setup(self, fake, seed, tmp, backend):
        """A world whose jobs have waited QUEUED past maxQueued, the fake's clock running; the checkout."""
        fake.reset()
        fake.setup(faults(seed))
        fake.post("/_fake/timings", {"cancelling_seconds": 2})
        for i in range(QUEUED_JOBS):
            fake.post("/_fake/outcomes", {"labels": {"vx-job": "q%02d" % i, "vx-rung": "0"}, "outcome": "succeed",
                                          "queued_seconds": 10 * 3600})
        co = make_world(self.vx, fake, tmp, backend, QUEUED_DOCS)[0]
        for _ in range(3):
            r = co.apply(env=self.fake_now(fake))
            if r.code == 0:
                break
        else:
            raise RuntimeError("the first apply failed: %r" % r)
        fake.advance(3600 + 300)
        fake.post("/_fake/clock", {"speed": 1})
        return co

    def queued_counts(self, fake, co, details):
        """dup (two jobs of one attempt), missing (an address with no active run), cancel (two
        runs of an address active at once, from the fake's times), lock."""
        counts = {k: 0 for k in COUNTERS}
        by = {}
        for j in fake.jobs():
            if j.get("labels", {}).get("vx-stack") == common.STACK:
                by.setdefault(j["labels"]["vx-job"], []).append(j)
        for job, js in sorted(by.items()):
            attempts = [j["labels"]["vx-attempt"] for j in js]
            counts["dup"] += len(attempts) - len(set(attempts))
            live = [j for j in js if j["state"] in common.ACTIVE + ("JOB_STATE_CANCELLING",)]
            counts["missing"] += not live
            js.sort(key=lambda j: j["createTime"])
            for a, b in zip(js, js[1:]):
                if not a.get("endTime") or a["endTime"] > b["createTime"]:
                    counts["cancel"] += 1
                    details.append("job.%s: %s (ended %s) still active when %s was created at %s" % (
                        job, a["name"], a.get("endTime"), b["name"], b["createTime"]))
            if len(live) != 1 or len(attempts) != len(set(attempts)):
                details.append("job.%s: %s" % (job, [(j["labels"]["vx-attempt"], j["state"]) for j in js]))
        counts["missing"] += QUEUED_JOBS - len(by)
        if co.lock_held():
            counts["lock"] += 1
            details.append("stuck lock: %s" % "; ".join(co.lock_held()))
        return counts

    def queued_trials(self, fake, backend):
        row = Section("kill-queued", backend)
        self.rows.append(row)
        rng = random.Random("%d/kill-queued/%s" % (self.seed, backend))
        try:
            tmp = os.path.join(self.out, "calibrate-queued-%s" % backend)
            co = self.queued_setup(fake, rng.randrange(1 << 30), tmp, backend)
            r = co.apply(env=self.fake_now(fake))
            shutil.rmtree(tmp, ignore_errors=True)
            if r.crashed() or "Apply complete" not in r.out:
                raise RuntimeError("a clean apply failed: %r" % r)
            clean = self.clean_override or r.seconds
        except Exception as e:  # noqa: BLE001  (any failure to start is the row's result)
            row.start_error = str(e)
            self.say("kill-queued/%s: FAILED TO START: %s" % (backend, e))
            return
        self.clean[("kill-queued", backend)] = clean
        row.note = "%d jobs past maxQueued, clean apply %.1f s" % (QUEUED_JOBS, clean)
        for t in self.trial_numbers(self.trials):
            self.queued_trial(fake, backend, row, t, clean)

    def queued_trial(self, fake, backend, row, t, clean):
        trng = random.Random("%d/kill-queued/%s/%d" % (self.seed, backend, t))
        at = trng.uniform(0, clean)
        tmp = os.path.join(self.out, "kill-queued-%s-%d" % (backend, t))
        co = self.queued_setup(fake, trng.randrange(1 << 30), tmp, backend)
        log, other, details = self.kill_and_reapply(co, tmp, at, self.fake_now(fake))
        fake.post("/_fake/faults", {})
        counts = self.queued_counts(fake, co, details)
        with open(os.path.join(tmp, "trial.json"), "w") as f:
            json.dump({"seed": self.seed, "trial": t, "kill_at": at, "log": log, "counts": counts,
                       "details": details}, f, indent=1)
        self.say("kill-queued/%s trial %d: %s; %s" % (backend, t, "; ".join(log),
                                                     " ".join("%s=%d" % kv for kv in counts.items())))
        self.record(row, t, tmp, counts, details, other)

    # ------------------------------------------------------------ pause
    def pause_trials(self, fake, backend):
        row = Section("pause", backend)
        self.rows.append(row)
        docs = declaration(20)
        # A lease shorter than a minute is for tests, but not shorter than
        # 10 s: the apply that takes over may wait up to 10 s for a git ref
        # lock the paused one holds (state_git.c REF_LOCK_WAIT_MS; it then
        # fails, never taking the lock over), and with a 2 s lease it lost
        # its own lease while waiting.
        short = {"VX_LEASE_SECONDS": "10"}
        n = max(1, self.trials // 5)
        rng = random.Random("%d/pause/%s" % (self.seed, backend))
        try:
            fake.reset()
            fake.setup({"latency_ms": 20, "jitter_ms": 20, "seed": rng.randrange(1 << 30)})
            tmp = os.path.join(self.out, "calibrate-pause-%s" % backend)
            co = make_world(self.vx, fake, tmp, backend, docs)[0]
            r = co.apply(env=short)
            shutil.rmtree(tmp, ignore_errors=True)
            if r.code != 0:
                raise RuntimeError("a clean apply failed: %r" % r)
            clean = r.seconds
        except Exception as e:  # noqa: BLE001
            row.start_error = str(e)
            self.say("pause/%s: FAILED TO START: %s" % (backend, e))
            return
        if self.clean_override:
            clean = self.clean_override
        self.clean[("pause", backend)] = clean
        row.note = "lease 10 s, paused 11 s"
        for t in self.trial_numbers(n):
            trng = random.Random("%d/pause/%s/%d" % (self.seed, backend, t))
            at = trng.uniform(0, clean)
            tmp = os.path.join(self.out, "pause-%s-%d" % (backend, t))
            fake.reset()
            fake.setup({"latency_ms": 20, "jitter_ms": 20, "seed": trng.randrange(1 << 30)})
            co = make_world(self.vx, fake, tmp, backend, docs)[0]
            a = co.start("apply", env=short)
            other, details, log = 0, [], []
            try:
                a.wait(at)
                log.append("A ended (exit %d) before the pause" % a.returncode)
            except subprocess.TimeoutExpired:
                a.send_signal(signal.SIGSTOP)
                wait_for(lambda: proc_state(a.pid) in ("T", "t", None), 30, "A to stop")
                time.sleep(11)  # the pause itself (past the 10 s lease), not a synchronisation
                b = co.apply("-lock-timeout", "60s", env=short)
                log.append("A stopped at %.2f s; B exit %d" % (at, b.code))
                if b.code != 0 or b.crashed():
                    other += 1
                    details.append("B, which took over, failed: %r" % b)
                a.send_signal(signal.SIGCONT)
            ra = co.finish(a)
            log.append("A exit %d" % ra.code)
            if ra.crashed():
                other += 1
                details.append("A crashed: %r" % ra)
            r = co.apply(env=short)
            plan = co.plan("-detailed-exitcode")
            if r.code != 0 or plan.code != 0:
                other += 1
                details.append("after the pause, apply %r / plan %r" % (r, plan))
            counts, d = count_violations(fake, co, docs)
            self.say("pause/%s trial %d: %s; %s" % (backend, t, "; ".join(log),
                                                    " ".join("%s=%d" % kv for kv in counts.items())))
            self.record(row, t, tmp, counts, d + details, other)

    # ------------------------------------------------------------ race
    def race_trials(self, fake, backend):
        row = Section("race", backend)
        self.rows.append(row)
        docs = declaration(20)
        n = max(1, self.trials // 10)
        for t in self.trial_numbers(n):
            trng = random.Random("%d/race/%s/%d" % (self.seed, backend, t))
            tmp = os.path.join(self.out, "race-%s-%d" % (backend, t))
            fake.reset()
            # latency, so the winner is still running when the others ask
            fake.setup({"latency_ms": 30, "jitter_ms": 20, "seed": trng.randrange(1 << 30)})
            try:
                cos = make_world(self.vx, fake, tmp, backend, docs,
                                 clones=4 if backend == "git-remote" else 1)
            except Exception as e:  # noqa: BLE001
                row.start_error = str(e)
                self.say("race/%s: FAILED TO START: %s" % (backend, e))
                return
            procs = [cos[i % len(cos)].start("apply") for i in range(8)]
            results = [(p.pid, Checkout.finish(p)) for p in procs]
            other, details = 0, []
            winners = [(pid, r) for pid, r in results if r.code == 0 and "Apply complete" in r.out]
            noops = [(pid, r) for pid, r in results if r.code == 0 and "No changes" in r.out]
            losers = [(pid, r) for pid, r in results if r.code != 0]
            if backend == "gcs" and all(r.code != 0 for _, r in results) and \
                    not any(common.LOCKED.match(r.err) for _, r in results):
                row.start_error = "no apply ran: %s" % results[0][1].err.strip()
                self.say("race/%s: FAILED TO START: %s" % (backend, row.start_error))
                return
            if len(winners) != 1:
                other += 1
                details.append("%d winners (want 1): %s" % (len(winners), [pid for pid, _ in winners]))
            # A loser may name an apply that held the lease for a while and
            # then failed (that one is counted on its own line); it must name
            # one of the racers.
            holders = {pid for pid, _ in results}
            with open(os.path.join(tmp, "race.json"), "w") as f:
                json.dump([{"pid": pid, "exit": r.code, "stderr": r.err, "stdout_tail": r.out[-400:]}
                           for pid, r in results], f, indent=1)
            for pid, r in losers:
                m = common.LOCKED.match(r.err)
                if not m:
                    other += 1
                    details.append("loser pid %d did not name the holder in the exact shape: %r" % (pid, r))
                elif int(m.group("pid")) not in holders:
                    other += 1
                    details.append("loser pid %d names pid %s, not one of the racers %s" % (
                        pid, m.group("pid"), sorted(holders)))
                if r.crashed():
                    other += 1
                    details.append("pid %d crashed: %r" % (pid, r))
            co = cos[0]
            if backend == "git-remote":
                co.git("fetch", "-q", "origin", "+refs/heads/vx/*:refs/heads/vx/*")
            plan = co.plan("-detailed-exitcode")
            if plan.code != 0:
                other += 1
                details.append("plan after the race: %r" % plan)
            counts, d = count_violations(fake, co, docs)
            self.say("race/%s trial %d: %d winner, %d no-op, %d losers; %s" % (
                backend, t, len(winners), len(noops), len(losers),
                " ".join("%s=%d" % kv for kv in counts.items())))
            self.record(row, t, tmp, counts, d + details, other)

    # ------------------------------------------------------------ lost, lostmid (gcs)
    def converge(self, co, log, details, tries=3, env=None):
        """Applies until one exits 0 (faults may leave an outcome to the next); 1 when none did."""
        for n in range(tries):
            r = co.apply(env=env)
            log.append("apply: exit %d" % r.code)
            if r.crashed():
                details.append("an apply crashed: %r" % r)
                return 1
            if r.code == 0:
                return 0
        details.append("no apply succeeded: %r" % r)
        return 1

    def finish_lost(self, row, fake, co, docs, t, tmp, log, details, other):
        plan = co.plan("-detailed-exitcode")
        if plan.code != 0:
            other += 1
            details.append("plan -detailed-exitcode at the end: %r" % plan)
        fake.post("/_fake/faults", {})
        counts, d = count_violations(fake, co, docs)
        self.say("%s/gcs trial %d: %s; %s" % (row.name, t, "; ".join(log),
                                             " ".join("%s=%d" % kv for kv in counts.items())))
        self.record(row, t, tmp, counts, d + details, other)

    def lost_trials(self, fake, backend):
        if backend != "gcs":
            return
        row = Section("lost", backend)
        self.rows.append(row)
        row.note = "deleted between applies; refused, restored"
        docs = declaration(20)
        obj = "vx/state/%s/state.json" % common.STACK
        for t in self.trial_numbers(max(3, self.trials // 5)):
            trng = random.Random("%d/lost/%s/%d" % (self.seed, backend, t))
            tmp = os.path.join(self.out, "lost-%s-%d" % (backend, t))
            fake.reset()
            fake.setup(faults(trng.randrange(1 << 30)))
            co = make_world(self.vx, fake, tmp, backend, docs)[0]
            log, details = [], []
            other = self.converge(co, log, details)
            # Sometimes a second stack change first, so the history is longer than one apply.
            if trng.random() < 0.5:
                other += self.converge(co, log, details, 1)
            gone = storage_delete(fake, "torture", obj)
            log.append("state.json deleted (%s)" % gone)
            creates = fake.rpc_count("CreateCustomJob")
            r = co.apply()
            save(tmp, "refused", r)
            if r.code != 1 or "does not exist, but its history does" not in r.err:
                other += 1
                details.append("the apply after the deletion did not refuse: %r" % r)
            if fake.rpc_count("CreateCustomJob") != creates:
                other += 1
                details.append("the refused apply sent %d creates" % (fake.rpc_count("CreateCustomJob") - creates))
            rs = co.run("state", "restore", "-C", co.dir)
            save(tmp, "restore", rs)
            log.append("restore: exit %d" % rs.code)
            if rs.code != 0 or rs.crashed():
                other += 1
                details.append("vx state restore failed: %r" % rs)
            other += self.converge(co, log, details)
            self.finish_lost(row, fake, co, docs, t, tmp, log, details, other)

    def lostmid_trials(self, fake, backend):
        if backend != "gcs":
            return
        row = Section("lostmid", backend)
        self.rows.append(row)
        row.note = "deleted after the Nth create; written back"
        docs = declaration(20)
        obj = "vx/state/%s/state.json" % common.STACK
        for t in self.trial_numbers(max(3, self.trials // 5)):
            trng = random.Random("%d/lostmid/%s/%d" % (self.seed, backend, t))
            tmp = os.path.join(self.out, "lostmid-%s-%d" % (backend, t))
            fake.reset()
            fake.setup(faults(trng.randrange(1 << 30)))
            co = make_world(self.vx, fake, tmp, backend, docs)[0]
            nth = trng.randint(1, 20)
            fake.post("/_fake/objects/delete-after", {"rpc": "CreateCustomJob", "count": nth,
                                                      "bucket": "torture", "name": obj})
            log, details, other = ["state.json deleted after create %d" % nth], [], 0
            first = co.apply()
            save(tmp, "apply-1", first)
            log.append("apply 1: exit %d" % first.code)
            armed = fake.get("/_fake/objects/delete-after")["armed"][0]
            if armed["deleted"] and "vx: warn: state.json was deleted: generation %s is gone" % armed["deleted"] \
                    not in first.err:
                other += 1
                details.append("the deletion (generation %s) was not reported: %r" % (armed["deleted"], first))
            if first.crashed():
                other += 1
                details.append("apply 1 crashed: %r" % first)
            if first.code != 0:
                other += self.converge(co, log, details, 2)
            self.finish_lost(row, fake, co, docs, t, tmp, log, details, other)

    # ------------------------------------------------------------ watch
    def watch_counts(self, fake, n_jobs):
        """Duplicates (two jobs of one run and attempt), more than one active per
        address, and addresses whose second attempt is not running."""
        c, details = {"dup": 0, "missing": 0}, []
        seen, active = {}, {}
        for j in fake.jobs():
            lab = j.get("labels", {})
            if not common.our(lab):
                continue
            key = (lab.get("vx-job"), lab.get("vx-run"), lab.get("vx-attempt"))
            seen.setdefault(key, []).append(j["name"].rsplit("/", 1)[1])
            if j["state"] in common.ACTIVE:
                active.setdefault(lab.get("vx-job"), []).append(lab.get("vx-attempt"))
        for key, names in sorted(seen.items()):
            if len(names) > 1:
                c["dup"] += len(names) - 1
                details.append("duplicate job.%s run %s attempt %s: %s" % (key + (", ".join(names),)))
        for i in range(n_jobs):
            a = active.get("j%02d" % i, [])
            if len(a) > 1:
                c["dup"] += len(a) - 1
                details.append("job.j%02d has %d active runs" % (i, len(a)))
            if a != ["2"]:
                c["missing"] += 1
                details.append("job.j%02d: active attempts %s (want the second alone)" % (i, a))
        return c, details

    def watch_trials(self, fake, backend):
        row = Section("watch", backend)
        self.rows.append(row)
        n_jobs = 10
        docs = {"job-%02d" % i: common.harness.job_yaml("j%02d" % i, on="preempted", attempts=3,
                                                        strategy="SPOT") for i in range(n_jobs)}
        # Two webhooks that never take a delivery: one refuses the connection, one
        # accepts it and never answers. Neither may hold the lease from an apply.
        hung = HungReceiver()
        dead = socket.socket()
        dead.bind(("127.0.0.1", 0))
        dead_url = "http://127.0.0.1:%d/hook" % dead.getsockname()[1]
        dead.close()
        notify = ("notify:\n  - urlEnv: VX_TORTURE_DEAD_HOOK\n    on: [gave-up, resubmitted, succeeded, stuck]\n"
                  "  - urlEnv: VX_TORTURE_HUNG_HOOK\n    on: [resubmitted]\n")
        # A watcher killed with the lease held leaves it to expire: short, for the trial.
        env = {"VX_LEASE_SECONDS": "10", "VX_NOTIFY_ALLOW_LOOPBACK": "1",
               "VX_TORTURE_DEAD_HOOK": dead_url, "VX_TORTURE_HUNG_HOOK": hung.url}
        row.note = "2 watchers + vxapply, 1 watcher killed, 2 dead webhooks"
        try:
            self.watch_trials_with(fake, backend, row, n_jobs, docs, notify, env)
        finally:
            hung.close()

    def watch_trials_with(self, fake, backend, row, n_jobs, docs, notify, env):
        for t in self.trial_numbers(max(2, self.trials // 10)):
            trng = random.Random("%d/watch/%s/%d" % (self.seed, backend, t))
            tmp = os.path.join(self.out, "watch-%s-%d" % (backend, t))
            fake.reset()
            fake.setup(faults(trng.randrange(1 << 30)))
            co = make_world(self.vx, fake, tmp, backend, docs, extra_stack=notify)[0]
            fake.post("/_fake/outcomes", {"labels": {}, "outcome": "preempted", "times": n_jobs})
            log, details, other = [], [], 0
            other += self.converge(co, log, details, env=env)
            # Each watcher writes its metrics after every cycle: a file there means
            # it has run one, and has its signal handlers in place.
            metrics = [os.path.join(tmp, "watcher-%d.prom" % (i + 1)) for i in range(2)]

            def watcher(i):
                if os.path.exists(metrics[i]):
                    os.unlink(metrics[i])
                return co.start("watch", co.dir, "-interval", "1s", "-metrics", metrics[i], env=env)

            watchers = [watcher(i) for i in range(2)]
            fake.advance(40)
            fake.advance(2000)   # every first attempt has been preempted
            # Long enough for a watcher's own act; a lease held through a delivery is not.
            a = co.start("apply", "-lock-timeout", "30s", env=env)
            time.sleep(trng.uniform(0, 4))  # the moment of the kill, drawn: not a synchronisation
            watchers[0].send_signal(signal.SIGKILL)
            killed = co.finish(watchers[0])
            log.append("watcher 1 killed")
            watchers[0] = watcher(0)
            ra = co.finish(a)
            log.append("apply: exit %d" % ra.code)
            if ra.crashed():
                other += 1
                details.append("the apply crashed: %r" % ra)
            if ra.code != 0 and "state is locked" in ra.err:
                other += 1
                details.append("the apply failed on the lease: %r" % ra)
            elif "was lost" in ra.err:
                other += 1
                details.append("the apply lost its lease while it held it: %r" % ra)
            try:
                wait_for(lambda: self.watch_counts(fake, n_jobs)[0]["missing"] == 0, 120,
                         "every job's second attempt to be active")
            except RuntimeError as e:
                details.append(str(e))
            try:
                wait_for(lambda: all(os.path.exists(m) for m in metrics), 60, "each watcher's first cycle")
            except RuntimeError as e:
                other += 1
                details.append(str(e))
            for w in watchers:
                w.send_signal(signal.SIGTERM)
            for i, w in enumerate(watchers):
                try:
                    r = co.finish(w, timeout=15)
                except subprocess.TimeoutExpired:
                    w.kill()
                    r = co.finish(w)
                    other += 1
                    details.append("watcher %d did not stop within 15 s of SIGTERM" % (i + 1))
                save(tmp, "watcher-%d" % (i + 1), r)
                if r.code != 0 or r.crashed():
                    other += 1
                    details.append("watcher %d ended with %r" % (i + 1, r))
            save(tmp, "killed", killed)
            fake.post("/_fake/faults", {})
            # Nothing lost: the state knows every run the watchers made.
            plan = co.plan("-detailed-exitcode")
            save(tmp, "plan", plan)
            if plan.code != 0:
                other += 1
                details.append("plan -detailed-exitcode at the end: %r" % plan)
            held = co.lock_held()
            counts, d = self.watch_counts(fake, n_jobs)
            counts["lock"] = 1 if held else 0
            if held:
                d.append("lease left held: %s" % held)
            self.say("watch/%s trial %d: %s; %s" % (backend, t, "; ".join(log),
                                                   " ".join("%s=%d" % kv for kv in counts.items())))
            self.record(row, t, tmp, counts, d + details, other)

    # ------------------------------------------------------------ policy
    def policy_docs(self, pushed):
        """The applied declaration, or (pushed) the commit nobody applied."""
        docs = {}
        for i in range(POLICY_JOBS):
            text = common.harness.job_yaml("p%02d" % i, on="preempted", attempts=2, strategy="SPOT")
            docs["job-p%02d" % i] = text.replace("maxAttempts: 2}", POLICY_H100) if pushed else text
        docs["sweep"] = POLICY_SWEEP.format(limit=6 if pushed else 1)
        docs["train"] = common.harness.job_yaml("train")
        docs["eval"] = POLICY_EVAL.format(after="" if pushed else "after: [job.train]\n")
        return docs

    def policy_counts(self, fake):
        """Jobs the applied policy does not allow (other) and duplicates (dup)."""
        c, other, details = {"dup": 0}, 0, []
        seen, sweep, by = {}, [], {}
        for j in fake.jobs():
            lab = j.get("labels", {})
            if not common.our(lab):
                continue
            key = (lab.get("vx-job"), lab.get("vx-run"), lab.get("vx-attempt"))
            seen.setdefault(key, []).append(j["name"].rsplit("/", 1)[1])
            name = j["displayName"]
            by.setdefault(name, []).append(j)
            machine = j["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["machineType"]
            if name.startswith("p"):
                if int(lab.get("vx-attempt", "0")) > 2 or machine != "g2-standard-4" or lab.get("vx-rung") != "0":
                    other += 1
                    details.append("job.%s attempt %s on %s (rung %s): outside the applied policy "
                                   "(maxAttempts 2, no ladder)" % (name, lab.get("vx-attempt"), machine,
                                                                   lab.get("vx-rung")))
            elif name.startswith("s["):
                sweep.append(j)
        for key, names in sorted(seen.items()):
            if len(names) > 1:
                c["dup"] += len(names) - 1
                details.append("duplicate job.%s run %s attempt %s: %s" % (key + (", ".join(names),)))
        # maxParallel 1: each run of the sweep created once the one before ended.
        sweep.sort(key=lambda j: j["createTime"])
        for a, b in zip(sweep, sweep[1:]):
            if not a.get("endTime") or b["createTime"] < a["endTime"]:
                other += 1
                details.append("%s created at %s while %s was active (maxParallel 1 applied)" % (
                    b["displayName"], b["createTime"], a["displayName"]))
        train = by.get("train", [])
        for ev in by.get("eval", []):
            if not train or not train[0].get("endTime") or ev["createTime"] < train[0]["endTime"]:
                other += 1
                details.append("eval created at %s before train succeeded (after: applied)" % ev["createTime"])
        return c, other, details

    def policy_trials(self, fake, backend):
        row = Section("policy", backend)
        self.rows.append(row)
        env = {"VX_LEASE_SECONDS": "10"}
        row.note = "2 watchers -follow, unapplied ladder/maxAttempts/maxParallel/after pushed"
        for t in self.trial_numbers(max(2, self.trials // 10)):
            trng = random.Random("%d/policy/%s/%d" % (self.seed, backend, t))
            tmp = os.path.join(self.out, "policy-%s-%d" % (backend, t))
            fake.reset()
            fake.setup(faults(trng.randrange(1 << 30)))
            co = make_world(self.vx, fake, tmp, backend, self.policy_docs(False))[0]
            remote = os.path.join(tmp, "remote.git")
            if backend != "git-remote":
                subprocess.run(["git", "init", "-q", "--bare", remote], check=True)
                co.git("remote", "add", "origin", remote)
                co.git("push", "-q", "origin", "main")
            for i in range(POLICY_JOBS):
                fake.post("/_fake/outcomes", {"labels": {"vx-job": "p%02d" % i}, "outcome": "preempted",
                                              "times": 2})
            log, details, other = [], [], 0
            other += self.converge(co, log, details)
            metrics = [os.path.join(tmp, "watcher-%d.prom" % (i + 1)) for i in range(2)]
            watchers = [co.start("watch", co.dir, "-follow", "origin/main", "-interval", "1s", "-metrics", m,
                                 env=env) for m in metrics]
            # The unapplied commit lands at a drawn point among the preemptions.
            push_at = trng.randrange(3)
            for step in range(3):
                if step == push_at:
                    self.policy_push(tmp, remote, fake)
                    log.append("pushed at step %d" % step)
                if step < 2:
                    fake.advance(40)
                    fake.advance(2000)   # the running attempts are preempted; train, the sweep's run end
                try:
                    self.policy_cycles(metrics, 3)
                except RuntimeError as e:
                    other += 1
                    details.append(str(e))
            for w in watchers:
                w.send_signal(signal.SIGTERM)
            told = 0
            for i, w in enumerate(watchers):
                try:
                    r = co.finish(w, timeout=15)
                except subprocess.TimeoutExpired:
                    w.kill()
                    r = co.finish(w)
                    other += 1
                    details.append("watcher %d did not stop within 15 s of SIGTERM" % (i + 1))
                save(tmp, "watcher-%d" % (i + 1), r)
                told += r.out.count("declared but not applied")
                if r.code != 0 or r.crashed():
                    other += 1
                    details.append("watcher %d ended with %r" % (i + 1, r))
            log.append("%d unapplied lines" % told)
            fake.post("/_fake/faults", {})
            counts, o, d = self.policy_counts(fake)
            other += o
            self.say("policy/%s trial %d: %s; %s other=%d" % (backend, t, "; ".join(log),
                                                            " ".join("%s=%d" % kv for kv in counts.items()), o))
            self.record(row, t, tmp, counts, d + details, other)

    def policy_push(self, tmp, remote, fake):
        """Someone who can push, but whose change nobody applied."""
        other = os.path.join(tmp, "pusher")
        if not os.path.exists(other):
            subprocess.run(["git", "clone", "-q", "-b", "main", remote, other], check=True, capture_output=True)
        docs = self.policy_docs(True)
        with open(os.path.join(other, "stack", "resources.yaml"), "w") as f:
            f.write("".join(docs[k] for k in sorted(docs)))
        for args in (["commit", "-qam", "unreviewed: a ladder onto H100s"], ["push", "-q", "origin", "main"]):
            subprocess.run(["git", "-C", other] + args, check=True, env=fake.env(), capture_output=True)

    @staticmethod
    def policy_cycles(metrics, n):
        """Waits until each watcher ran n more cycles (its metrics count them)."""
        def ok(m):
            try:
                with open(m) as f:
                    return sum(int(x.split()[1]) for x in f if x.startswith("vx_watch_cycles_total{"))
            except (FileNotFoundError, ValueError, IndexError):
                return 0
        want = [ok(m) + n for m in metrics]
        wait_for(lambda: all(ok(m) >= w for m, w in zip(metrics, want)), 120, "each watcher's next %d cycles" % n)

    # ------------------------------------------------------------ sections
    def run_backend_sections(self):
        for section in ("kill", "kill-persistent", "kill-future", "kill-queued", "pause", "race", "lost", "lostmid",
                        "watch", "policy"):
            # kill runs the rows of one held resource too; each may be asked for alone (a replay).
            if section not in self.sections and not (section.startswith("kill-") and "kill" in self.sections):
                continue
            for backend in self.backends:
                if section.startswith("lost") and backend != "gcs":
                    continue
                tmp = os.path.join(self.out, "fake-%s-%s" % (section, backend))
                shutil.rmtree(tmp, ignore_errors=True)
                os.makedirs(tmp)
                fake = Fake(tmp)
                try:
                    if section == "kill-queued":
                        self.queued_trials(fake, backend)
                    elif section.startswith("kill-"):
                        self.kind_kill_trials(fake, backend, section[len("kill-"):])
                    else:
                        getattr(self, section + "_trials")(fake, backend)
                finally:
                    fake.close()

    def run_hostile(self):
        import hostile
        row = Section("hostile", "-")
        self.rows.append(row)
        if not os.access(self.vx_asan, os.X_OK):
            row.start_error = "no ASan binary at %s (make all BUILD=build/asan SANITIZE=address,undefined)" % self.vx_asan
            return
        results = hostile.run_all(self.vx_asan, os.path.join(self.out, "hostile"), self.say)
        for name, ok, details in results:
            row.trials += 1
            if not ok:
                row.other += 1
                row.failed.append((name, os.path.join(self.out, "hostile", name), details))
        row.note = "%d bad-reply classes" % len(results)

    def run_fuzz(self):
        row = Section("fuzz", "-")
        self.rows.append(row)
        secs = os.environ.get("FUZZ_TIME", "20")
        build = os.path.join(common.ROOT, "build", "fuzz")
        mk = ["make", "--no-print-directory", "-C", common.ROOT, "-f", "tests/fuzz/fuzz.mk",
              "BUILD=build/fuzz", "FUZZ_TIME=" + secs]
        cp = subprocess.run(mk + ["build"], capture_output=True, text=True)
        if cp.returncode != 0:
            row.start_error = "fuzz build failed: " + (cp.stderr or cp.stdout)[-2000:]
            self.say("fuzz: FAILED TO START: " + row.start_error)
            return
        targets = sorted(f[:-2] for f in os.listdir(os.path.join(common.ROOT, "tests", "fuzz"))
                         if f.startswith("fuzz_") and f.endswith(".c"))
        for t in targets:
            cp = subprocess.run(mk + ["run-" + t], capture_output=True, text=True)
            text = cp.stdout + cp.stderr
            execs = 0
            for line in text.splitlines():
                if line.startswith("stat::number_of_executed_units:"):
                    execs = int(line.split(":")[-1])
            row.trials += 1
            self.fuzz_rows.append((t, execs, cp.returncode == 0))
            self.say("fuzz %s: %d executions, %s" % (t, execs, "ok" if cp.returncode == 0 else "FAILED"))
            if cp.returncode != 0:
                row.other += 1
                row.failed.append((t, os.path.join(build, "artifacts"), text.splitlines()[-20:]))
        row.note = "%s s per target" % secs

    # ------------------------------------------------------------ table
    def table(self):
        lines = ["", "torture: seed %d, %s trials, vx %s" % (
            self.seed, self.only_trial and "trial %s of" % self.only_trial or self.trials, self.vx),
                 "| section | backend | trials | dup | missing | wrong cancels | lost history | "
                 "stuck locks | other | result |",
                 "|---|---|--:|--:|--:|--:|--:|--:|--:|---|"]
        for r in self.rows:
            if r.start_error:
                res = "FAILED TO START"
            else:
                res = "ok" if not r.violations() else "FAILED"
            lines.append("| %s | %s | %d | %d | %d | %d | %d | %d | %d | %s%s |" % (
                r.name, r.backend, r.trials, r.counts["dup"], r.counts["missing"],
                r.counts["cancel"], r.counts["history"], r.counts["lock"], r.other, res,
                " (%s)" % r.note if r.note else ""))
        if self.fuzz_rows:
            lines += ["", "| fuzz target | executions | result |", "|---|--:|---|"]
            for t, n, ok in self.fuzz_rows:
                lines.append("| %s | %d | %s |" % (t, n, "ok" if ok else "FAILED"))
        failed = [r for r in self.rows if r.violations()]
        for r in failed:
            if r.start_error:
                lines.append("%s/%s could not start: %s" % (r.name, r.backend, r.start_error[:600]))
            for trial, tmp, _ in r.failed:
                lines.append("%s/%s trial %s failed: kept %s" % (r.name, r.backend, trial, tmp))
        lines.append("torture: %s (seed %d)" % ("FAILED" if failed else "ok", self.seed))
        text = "\n".join(lines)
        self.say(text)
        with open(os.path.join(self.out, "table.md"), "w") as f:
            f.write(text + "\n")
        return not failed

    def main(self):
        self.say("torture: seed %d (replay with SEED=%d), sections %s, backends %s, out %s" % (
            self.seed, self.seed, ",".join(self.sections), ",".join(self.backends), self.out))
        self.run_backend_sections()
        if "hostile" in self.sections:
            self.run_hostile()
        if "fuzz" in self.sections:
            self.run_fuzz()
        return 0 if self.table() else 1


if __name__ == "__main__":
    sys.exit(Torture().main())
