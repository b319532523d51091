"""End to end: vx watch acts only on what was applied (issue 31).

Everything that decides a watcher's action besides the spec (resubmit.on,
maxAttempts, delay, the fallback ladder, after:, a sweep's maxParallel and
maxFailed) is recorded by the apply; a commit that changes one and was not
applied is told once, naming the field, and not acted on until vxapply.
Each test counts the jobs at the fake and their shapes. Runs end by the
fake's virtual clock; a watcher that must compare times with it is given
that clock (VX_NOW).
"""
import json
import os
import signal
import subprocess
import time

from harness import FakeTestCase, REGION, VX_BIN, job_yaml, process_state
from test_watch import PREEMPTED, RUNNING, Receiver, without_time

PENDED = 60           # virtual seconds: a queued job has left PENDING (stocked out, or runs)
FINISHED = 3700       # RUNNING -> SUCCEEDED

JOB = """---
kind: CustomJob
name: a
spec:
  workerPoolSpecs:
    - machineSpec: {{machineType: g2-standard-4, acceleratorType: NVIDIA_L4, acceleratorCount: 1}}
      replicaCount: 1
      containerSpec:
        imageUri: "us-docker.pkg.dev/p/r/trainer:1"
  scheduling: {{strategy: SPOT}}
  baseOutputDirectory: {{outputUriPrefix: "gs://e2e-bucket/a"}}
resubmit:
  on: [{on}]
  maxAttempts: {attempts}
  delay: {delay}
{fallback}"""

H100 = ("  fallback:\n"
        "    - machineSpec: {machineType: a3-highgpu-8g, acceleratorType: NVIDIA_H100_80GB, acceleratorCount: 8}\n")

SWEEP = """---
kind: CustomJob
name: s
matrix:
  seed: [1, 2, 3, 4]
{limits}spec:
  workerPoolSpecs:
    - machineSpec: {{machineType: g2-standard-4, acceleratorType: NVIDIA_L4, acceleratorCount: 1}}
      replicaCount: 1
      containerSpec:
        imageUri: us-docker.pkg.dev/p/r/train:1
        args: ["--seed=${{{{ matrix.seed }}}}"]
  baseOutputDirectory: {{outputUriPrefix: "gs://b/s"}}
"""

EVAL = """---
kind: CustomJob
name: eval
{after}spec:
  workerPoolSpecs:
    - machineSpec: {{machineType: n1-standard-4}}
      replicaCount: 1
      containerSpec:
        imageUri: us-docker.pkg.dev/p/r/eval:1
"""


def job(on="preempted", attempts=3, delay="1m", fallback=""):
    return JOB.format(on=on, attempts=attempts, delay=delay, fallback=fallback)


def sweep(limits):
    return SWEEP.format(limits=limits)


def unapplied(address, what):
    return "unapplied: %s: declared but not applied (%s); waiting for vxapply" % (address, what)


class WatchPolicy(FakeTestCase):

    def setUp(self):
        super().setUp()
        # The fake's clock at the real time, as test_watch's: what the watcher
        # compares with its own clock (notifications, resubmit.delay) is near.
        now = time.time()
        self.fake.post("/_fake/clock", {"set_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))})

    # ---- helpers -------------------------------------------------------------

    def commit(self, jobs):
        """Commits jobs as the stack's declaration, without applying it."""
        self.repo.write(jobs)

    def apply_ok(self):
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        return r

    def watch(self, *args, env=None):
        """One watcher cycle (-once); its lines without their times."""
        r = self.repo.vx("watch", self.repo.dir, "-once", *args, env=env)
        self.assertIn(r.code, (0, 2), r)
        self.assertEqual(r.err, "", r)
        return [without_time(l) for l in r.out.splitlines()]

    def fake_now(self):
        """The fake's clock, for VX_NOW: the watcher's clock starts there."""
        return {"VX_NOW": self.fake.post("/_fake/clock", {"advance_seconds": 0})["now"]}

    def jobs_of(self, name):
        """(attempt, machine type) of each of name's jobs at the fake, oldest first."""
        return sorted((int(j["labels"]["vx-attempt"]),
                       j["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["machineType"])
                      for j in self.live_jobs(name))

    def preempt_next(self, times=1):
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "a"}, "outcome": "preempted", "times": times})

    def preempt_the_run(self):
        self.fake.advance(RUNNING)
        self.fake.advance(PREEMPTED)

    def no_capacity(self):
        self.fake.post("/_fake/capacity", {"region": REGION, "accelerator_type": "NVIDIA_L4", "gpus": 0})

    def sweep_jobs(self):
        return sorted(j["displayName"] for j in self.fake.jobs() if j["displayName"].startswith("s["))

    # ---- one field each ------------------------------------------------------

    def test_resubmit_on(self):
        self.repo.write({"a": job(on="stockout")})
        self.preempt_next(2)
        self.apply_ok()
        self.commit({"a": job(on="stockout, preempted")})
        self.preempt_the_run()
        self.assertEqual(self.watch(), [
            unapplied("job.a", "resubmit.on [stockout] \u2192 [stockout, preempted]"),
            "record: recorded: job.a: queued -> failed (preempted)"])
        self.assertEqual(self.jobs_of("a"), [(1, "g2-standard-4")])
        # Told once per change: a second cycle of the same watcher says nothing more.
        r = self.repo.vx("watch", self.repo.dir, "-cycles", "2", "-interval", "0s")
        self.assertEqual([without_time(l) for l in r.out.splitlines()], [
            unapplied("job.a", "resubmit.on [stockout] \u2192 [stockout, preempted]")])
        self.assertEqual(self.jobs_of("a"), [(1, "g2-standard-4")])
        # Applied: vxapply resubmits, and the watcher acts on the new policy from then on.
        self.apply_ok()
        self.assertEqual(self.jobs_of("a"), [(1, "g2-standard-4"), (2, "g2-standard-4")])
        self.preempt_the_run()
        self.watch()
        self.assertEqual(self.jobs_of("a"), [(1, "g2-standard-4"), (2, "g2-standard-4"), (3, "g2-standard-4")])

    def test_max_attempts(self):
        self.repo.write({"a": job(attempts=2)})
        self.preempt_next(2)
        self.apply_ok()
        self.commit({"a": job(attempts=10)})
        self.preempt_the_run()
        self.assertEqual(self.watch(), [
            unapplied("job.a", "resubmit.maxAttempts 2 \u2192 10"),
            "record: recorded: job.a: queued -> failed (preempted)"])
        self.assertEqual(self.jobs_of("a"), [(1, "g2-standard-4")])
        self.apply_ok()
        self.assertEqual(len(self.jobs_of("a")), 2)
        # Attempt 3: past the 2 applied before, within the 10 applied now.
        self.preempt_the_run()
        self.watch()
        self.assertEqual([a for a, _ in self.jobs_of("a")], [1, 2, 3])

    def test_delay(self):
        self.no_capacity()
        self.repo.write({"a": job(on="stockout", delay="30s")})
        self.apply_ok()
        self.commit({"a": job(on="stockout", delay="2m")})
        self.fake.advance(PENDED)
        self.assertEqual(self.watch(env=self.fake_now()), [
            unapplied("job.a", "resubmit.delay 30s \u2192 2m"),
            "record: recorded: job.a: queued -> failed (stockout)"])
        self.assertEqual(len(self.jobs_of("a")), 1)
        self.apply_ok()
        self.assertEqual(len(self.jobs_of("a")), 2)
        # Attempt 3 waits 2m doubled (4m) from the end of attempt 2, not 30s doubled.
        self.fake.advance(PENDED)
        self.fake.advance(90)
        self.assertEqual(self.watch(env=self.fake_now()), [
            "wait: job.a: attempt 3 after stockout waits until 240s after it ended (resubmit.delay)",
            "record: recorded: job.a: queued -> failed (stockout)"])
        self.assertEqual(len(self.jobs_of("a")), 2)

    def test_fallback(self):
        self.repo.write({"a": job()})
        self.preempt_next()
        self.apply_ok()
        self.commit({"a": job(fallback=H100)})
        self.preempt_the_run()
        self.assertEqual(self.watch(), [
            unapplied("job.a", "resubmit.fallback none \u2192 1 rung"),
            "record: recorded: job.a: queued -> failed (preempted)"])
        self.assertEqual(self.jobs_of("a"), [(1, "g2-standard-4")])
        # A rung edited (another machine, the same count) is a change too.
        self.commit({"a": job(fallback=H100.replace("acceleratorCount: 8", "acceleratorCount: 4")
                              .replace("a3-highgpu-8g", "a3-highgpu-4g"))})
        self.apply_ok()
        self.assertEqual(self.jobs_of("a"), [(1, "g2-standard-4"), (2, "a3-highgpu-4g")])
        self.commit({"a": job(fallback=H100)})
        self.assertEqual(self.watch(), [unapplied("job.a", "resubmit.fallback 1 rung \u2192 1 rung, edited")])

    def test_max_parallel(self):
        self.repo.write({"s": sweep("maxParallel: 1\n")})
        self.apply_ok()
        self.assertEqual(self.sweep_jobs(), ["s[seed=1]"])
        self.commit({"s": sweep("maxParallel: 2\n")})
        # The run that runs (an update) and the one maxParallel 2 would start; the
        # others wait under both limits.
        self.assertEqual(self.watch(), [unapplied("job.s[seed=%d]" % k, "maxParallel 1 \u2192 2")
                                        for k in (1, 2)])
        self.assertEqual(self.sweep_jobs(), ["s[seed=1]"])
        self.apply_ok()
        self.assertEqual(self.sweep_jobs(), ["s[seed=1]", "s[seed=2]"])
        # Both succeed: the watcher starts two more at once, as maxParallel 2 lets it.
        self.fake.advance(FINISHED)
        self.watch()
        self.assertEqual(self.sweep_jobs(), ["s[seed=1]", "s[seed=2]", "s[seed=3]", "s[seed=4]"])

    def test_max_failed(self):
        self.fake.post("/_fake/outcomes", {"labels": {"vx-stack": "e2e"}, "outcome": "user-error", "times": 2})
        self.repo.write({"s": sweep("maxParallel: 1\nmaxFailed: 1\n")})
        self.apply_ok()
        self.commit({"s": sweep("maxParallel: 1\nmaxFailed: 3\n")})
        self.fake.advance(FINISHED)
        self.assertEqual(self.watch(), [unapplied("job.s[seed=%d]" % k, "maxFailed 1 \u2192 3")
                                        for k in (1, 2)] +
                         ["record: recorded: job.s[seed=1]: queued -> failed (user-error)"])
        self.assertEqual(self.sweep_jobs(), ["s[seed=1]"])
        self.apply_ok()
        self.assertEqual(self.sweep_jobs(), ["s[seed=1]", "s[seed=2]"])
        # The second failure is within maxFailed 3: the watcher starts the third run.
        self.fake.advance(FINISHED)
        self.watch()
        self.assertEqual(self.sweep_jobs(), ["s[seed=1]", "s[seed=2]", "s[seed=3]"])

    def test_after(self):
        self.repo.write({"a": job_yaml("train"), "b": EVAL.format(after="after: [job.train]\n")})
        self.apply_ok()
        self.commit({"a": job_yaml("train"), "b": EVAL.format(after="")})
        self.assertEqual(self.watch(), [unapplied("job.eval", "after [job.train] \u2192 []")])
        self.assertEqual(sorted(j["displayName"] for j in self.fake.jobs()), ["train"])
        self.apply_ok()
        self.assertEqual(sorted(j["displayName"] for j in self.fake.jobs()), ["eval", "train"])

    def test_after_applied_while_the_dependent_waits_is_acted_on(self):
        # eval ran after train; then prep is added and eval made to wait for it too.
        train, prep = job_yaml("train"), job_yaml("prep")
        self.repo.write({"a": train, "b": EVAL.format(after="after: [job.train]\n")})
        self.apply_ok()
        self.fake.advance(FINISHED)
        self.apply_ok()
        self.fake.advance(FINISHED)
        self.repo.write({"a": train, "p": prep, "b": EVAL.format(after="after: [job.train, job.prep]\n")})
        self.apply_ok()
        self.assertEqual(sorted(j["displayName"] for j in self.fake.jobs()), ["eval", "prep", "train"])
        # Applied while eval waited: once prep succeeds, the watcher runs eval again.
        self.fake.advance(FINISHED)
        lines = self.watch()
        self.assertEqual([l for l in lines if l.startswith("unapplied")], [])
        self.assertEqual(sorted(j["displayName"] for j in self.fake.jobs()), ["eval", "eval", "prep", "train"])

    def test_follow_acts_on_the_applied_commit_not_the_pushed_one(self):
        remote = os.path.join(self.tmp, "remote.git")
        subprocess.run(["git", "init", "-q", "--bare", remote], check=True)
        self.repo.write({"a": job(attempts=2)})
        self.repo.git("remote", "add", "origin", remote)
        self.repo.git("push", "-q", "origin", "main")
        self.preempt_next(2)
        self.apply_ok()
        # Someone who can push, but whose change nobody applied: a ladder onto 8 H100s.
        other = os.path.join(self.tmp, "other")
        env = self.fake.env()
        subprocess.run(["git", "clone", "-q", "-b", "main", remote, other], check=True, capture_output=True)
        with open(os.path.join(other, "stack", "jobs.yaml"), "w") as f:
            f.write(job(attempts=10, fallback=H100))
        for args in (["commit", "-qam", "a ladder"], ["push", "-q", "origin", "main"]):
            subprocess.run(["git", "-C", other] + args, check=True, env=env, capture_output=True)
        self.preempt_the_run()
        self.assertEqual(self.watch("-follow", "origin/main"), [
            unapplied("job.a", "resubmit.maxAttempts 2 \u2192 10, resubmit.fallback none \u2192 1 rung"),
            "record: recorded: job.a: queued -> failed (preempted)"])
        self.assertEqual(self.jobs_of("a"), [(1, "g2-standard-4")])
        # Reviewed and applied from a checkout of it: the ladder is in force.
        self.repo.git("pull", "-q", "origin", "main")
        self.apply_ok()
        self.assertEqual(self.jobs_of("a"), [(1, "g2-standard-4"), (2, "a3-highgpu-8g")])

    def test_a_record_from_an_older_vx_is_not_taken_as_applied(self):
        self.repo.write({"a": job()})
        self.preempt_next()
        self.apply_ok()
        # The record as a vx before the policy was recorded wrote it.
        rec = json.loads(self.repo.git("show", "vx/state/e2e:jobs/a.json"))
        self.assertIn("applied", rec)
        del rec["applied"]
        self.rewrite_record("a", rec)
        self.preempt_the_run()
        self.assertEqual(self.watch(), [
            unapplied("job.a", "the state records no policy for it, as an older vx wrote it: one vxapply "
                      "records it"),
            "record: recorded: job.a: queued -> failed (preempted)"])
        self.assertEqual(len(self.jobs_of("a")), 1)
        # One vxapply records it (here with the resubmission it applies).
        self.apply_ok()
        self.assertEqual(len(self.jobs_of("a")), 2)
        self.assertIn("applied", json.loads(self.repo.git("show", "vx/state/e2e:jobs/a.json")))

    def rewrite_record(self, name, rec):
        """Commits rec as jobs/NAME.json on the state branch, as another vx would."""
        git = ["git", "-C", self.repo.root]
        env = self.fake.env()
        blob = subprocess.run(git + ["hash-object", "-w", "--stdin"], input=json.dumps(rec, indent="\t") + "\n",
                              capture_output=True, text=True, check=True, env=env).stdout.strip()
        tree = subprocess.run(git + ["ls-tree", "vx/state/e2e"], capture_output=True, text=True, check=True,
                              env=env).stdout
        sub = subprocess.run(git + ["ls-tree", "vx/state/e2e:jobs"], capture_output=True, text=True, check=True,
                             env=env).stdout
        sub = "".join(l + "\n" if not l.endswith("\t%s.json" % name) else "100644 blob %s\t%s.json\n" % (blob, name)
                      for l in sub.splitlines())
        jobs = subprocess.run(git + ["mktree"], input=sub, capture_output=True, text=True, check=True,
                              env=env).stdout.strip()
        tree = "".join(l + "\n" if not l.endswith("\tjobs") else "040000 tree %s\tjobs\n" % jobs
                       for l in tree.splitlines())
        root = subprocess.run(git + ["mktree"], input=tree, capture_output=True, text=True, check=True,
                              env=env).stdout.strip()
        head = self.repo.git("rev-parse", "vx/state/e2e").strip()
        commit = subprocess.run(git + ["commit-tree", root, "-p", head, "-m", "an older vx"], capture_output=True,
                                text=True, check=True, env=env).stdout.strip()
        self.repo.git("update-ref", "refs/heads/vx/state/e2e", commit)


class WatchDelay(FakeTestCase):
    """resubmit.delay counts from the end Google reports, in the cycle that first sees it."""

    def setUp(self):
        super().setUp()
        now = time.time()
        self.fake.post("/_fake/clock", {"set_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))})

    def watch(self):
        env = {"VX_NOW": self.fake.post("/_fake/clock", {"advance_seconds": 0})["now"]}
        r = self.repo.vx("watch", self.repo.dir, "-once", env=env)
        self.assertEqual(r.err, "", r)
        return [without_time(l) for l in r.out.splitlines()]

    def test_a_stockout_waits_its_delay_from_its_end(self):
        self.fake.post("/_fake/capacity", {"region": REGION, "accelerator_type": "NVIDIA_L4", "gpus": 0})
        self.repo.write({"a": job(on="stockout", delay="2m")})
        self.assertEqual(self.repo.apply().code, 0)
        # The run stocks out 35 s in; the cycle that first sees it waits.
        self.fake.advance(PENDED)
        self.assertEqual(self.watch(), [
            "wait: job.a: attempt 2 after stockout waits until 120s after it ended (resubmit.delay)",
            "record: recorded: job.a: queued -> failed (stockout)"])
        self.assertEqual(len(self.live_jobs("a")), 1)
        # 55 s after the end: still waiting.
        self.fake.advance(30)
        self.assertEqual(self.watch(), [
            "wait: job.a: attempt 2 after stockout waits until 120s after it ended (resubmit.delay)"])
        self.assertEqual(len(self.live_jobs("a")), 1)
        # 155 s after: one new attempt.
        self.fake.advance(100)
        lines = self.watch()
        self.assertEqual(len(lines), 1, lines)
        self.assertRegex(lines[0], r"^act: \+ job\.a resubmit projects/\d+/locations/us-central1/customJobs/\d+$")
        self.assertEqual(sorted(j["labels"]["vx-attempt"] for j in self.live_jobs("a")), ["1", "2"])

    def test_a_run_waiting_out_its_delay_or_held_has_not_given_up(self):
        # A resubmission the watcher holds (resubmit.delay, or a policy not applied)
        # is not the end of the run: no gave-up goes out for it.
        rcv = Receiver()
        self.addCleanup(rcv.close)
        env = {"HOOK": rcv.url}
        hook = "notify:\n  - urlEnv: HOOK\n    on: [gave-up]\n"
        self.fake.post("/_fake/capacity", {"region": REGION, "accelerator_type": "NVIDIA_L4", "gpus": 0})
        self.repo.write({"a": job(on="stockout", delay="2m")}, extra_stack=hook)
        self.assertEqual(self.repo.apply(env=env).code, 0)
        self.fake.advance(PENDED)
        env["VX_NOW"] = self.fake.post("/_fake/clock", {"advance_seconds": 0})["now"]
        r = self.repo.vx("watch", self.repo.dir, "-once", env=env)
        self.assertEqual((r.code, r.err), (2, ""), r)
        self.assertEqual([without_time(l) for l in r.out.splitlines()], [
            "wait: job.a: attempt 2 after stockout waits until 120s after it ended (resubmit.delay)",
            "record: recorded: job.a: queued -> failed (stockout)"])
        # Held for a policy nobody applied: still not given up.
        self.repo.write({"a": job(on="stockout", delay="2m", attempts=5)}, extra_stack=hook)
        self.fake.advance(200)
        env["VX_NOW"] = self.fake.post("/_fake/clock", {"advance_seconds": 0})["now"]
        r = self.repo.vx("watch", self.repo.dir, "-once", env=env)
        self.assertEqual(r.err, "", r)
        self.assertEqual([without_time(l) for l in r.out.splitlines()], [
            "unapplied: job.a: declared but not applied (resubmit.maxAttempts 3 → 5); waiting for vxapply"])
        self.assertEqual(rcv.events(), [])

    def test_an_end_is_announced_in_the_cycle_that_sees_it(self):
        rcv = Receiver()
        self.addCleanup(rcv.close)
        env = {"HOOK": rcv.url}
        self.repo.write({"a": job(on="stockout", attempts=1)},
                        extra_stack="notify:\n  - urlEnv: HOOK\n    on: [gave-up]\n")
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "a"}, "outcome": "preempted"})
        self.assertEqual(self.repo.apply(env=env).code, 0)
        self.fake.advance(RUNNING)
        self.fake.advance(PREEMPTED)
        r = self.repo.vx("watch", self.repo.dir, "-once", env=env)
        self.assertEqual((r.code, r.err), (2, ""), r)
        self.assertEqual([without_time(l) for l in r.out.splitlines()], [
            "record: recorded: job.a: queued -> failed (preempted)",
            "notify: job.a: gave-up to notify[0] delivered"])
        self.assertEqual(rcv.events(), ["gave-up"])


class WatchLook(FakeTestCase):
    """The look without the lease tells nothing: only the plan made under the lease does."""

    def test_a_look_during_an_apply_tells_nothing_the_locked_plan_did_not_confirm(self):
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply().code, 0)
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")})
        # vxapply takes the lease and stops right before it creates job.b.
        env = dict(self.fake.env(), VX_TEST_PAUSE="before-send")
        p = subprocess.Popen([VX_BIN, "apply", self.repo.dir, "-auto-approve"], cwd=self.repo.root, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        try:
            deadline = time.time() + 60
            while process_state(p.pid) not in ("T", "t"):
                if p.poll() is not None:
                    self.fail("vxapply ended before it paused: %s" % (p.communicate(),))
                self.assertLess(time.time(), deadline, "vxapply did not pause")
                time.sleep(0.02)
            # The look sees job.b declared and not in the state; the lease is the
            # apply's, so no plan under it confirms that job.b is not being applied.
            r = self.repo.vx("watch", self.repo.dir, "-once")
            self.assertEqual((r.code, r.err), (0, ""), r)
            lines = [without_time(l) for l in r.out.splitlines()]
            self.assertEqual(len(lines), 1, lines)
            self.assertTrue(lines[0].startswith("skip: skipped: gave up after waiting 5s: state is locked by "), lines)
        finally:
            p.send_signal(signal.SIGCONT)
            out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 0, out + err)
        self.assertEqual(sorted(j["displayName"] for j in self.fake.jobs()), ["a", "b"])
        r = self.repo.vx("watch", self.repo.dir, "-once")
        self.assertEqual((r.code, r.out, r.err), (0, "", ""), r)
