"""End to end: vx watch against the fake Google Cloud.

The fake's clock is frozen and advanced by the test; the watcher runs on
the real clock with a short -interval. Every wait is for an event (a line
the watcher prints, a job the fake holds), bounded by a deadline.
"""
import base64
import hashlib
import hmac
import http.server
import json
import os
import signal
import subprocess
import threading
import time

from harness import FakeTestCase, VX_BIN, asan_build, job_yaml, ok_cycles, process_state
import schemas

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
RUNNING = 40          # virtual seconds: queued 5 + pending 30, then RUNNING
PREEMPTED = 2000      # past half the running time (3600 s): a preempted job has failed


class Watcher:
    """A vx watch process whose output lines are read on a thread."""

    def __init__(self, repo, *args, env=None):
        e = repo.fake.env()
        if env:
            e.update(env)
        self.p = subprocess.Popen([VX_BIN, "watch", repo.dir] + list(args), cwd=repo.root, env=e,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  stdin=subprocess.DEVNULL)
        self.lines = []         # both streams, in the order read
        self.out_lines = []     # stdout alone, in its own order
        self.cv = threading.Condition()
        self.threads = [threading.Thread(target=self._read, args=(s, s is self.p.stdout), daemon=True)
                        for s in (self.p.stdout, self.p.stderr)]
        for t in self.threads:
            t.start()

    def _read(self, stream, is_out):
        for line in stream:
            with self.cv:
                self.lines.append(line.rstrip("\n"))
                if is_out:
                    self.out_lines.append(line.rstrip("\n"))
                self.cv.notify_all()

    def wait_line(self, pred, timeout=30):
        deadline = time.time() + timeout
        with self.cv:
            while True:
                for l in self.lines:
                    if pred(l):
                        return l
                left = deadline - time.time()
                if left <= 0 or self.p.poll() is not None and all(not t.is_alive() for t in self.threads):
                    raise AssertionError("no such line; the watcher said:\n" + "\n".join(self.lines))
                self.cv.wait(min(left, 0.5))

    def stop(self, sig=signal.SIGTERM, timeout=10):
        self.p.send_signal(sig)
        code = self.p.wait(timeout)
        for t in self.threads:
            t.join(5)
        self.p.stdout.close()
        self.p.stderr.close()
        text = "\n".join(self.lines)
        if "Sanitizer" in text or "runtime error:" in text:
            raise AssertionError("sanitizer report:\n" + text)
        return code


def without_time(line):
    """A log line without its leading timestamp."""
    return line.split(" ", 1)[1]


class Receiver:
    """A webhook receiver on a free loopback port, keeping every request."""

    def __init__(self):
        got = self.got = []
        bad = self.bad = []
        cv = self.cv = threading.Condition()

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                try:   # a json target's body against docs/webhook.schema.json (Slack's has "text")
                    if "text" not in json.loads(body):
                        schemas.check_text(body, "webhook", "webhook body")
                except (AssertionError, ValueError) as e:
                    bad.append("webhook body %r: %s" % (body[:200], e))
                with cv:
                    got.append((dict(self.headers), body))
                    cv.notify_all()
                self.send_response(204)
                self.end_headers()

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d/hook" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()
        if self.bad:
            raise AssertionError("\n".join(self.bad))

    def events(self):
        with self.cv:
            return [json.loads(b)["event"] for _, b in self.got]


def signature_ok(headers, body):
    key = base64.b64decode(SECRET[len("whsec_"):])
    msg = ("%s.%s." % (headers["webhook-id"], headers["webhook-timestamp"])).encode() + body
    want = "v1," + base64.b64encode(hmac.new(key, msg, hashlib.sha256).digest()).decode()
    return headers.get("webhook-signature") == want


class Watch(FakeTestCase):

    def setUp(self):
        super().setUp()
        # The fake's clock at the real time: a watcher announces only runs that
        # ended in the last day (by its own clock), as a new one on an old stack must.
        now = time.time()
        self.fake.post("/_fake/clock", {"set_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))})

    def spot_job(self, attempts=3, **kw):
        return job_yaml("a", on="preempted", attempts=attempts, strategy="SPOT", **kw)

    def preempted(self, times=1):
        """The next `times` runs of job.a are preempted: each fails half-way through its running time."""
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "a"}, "outcome": "preempted", "times": times})

    def preempt_the_run(self):
        """The live run of job.a starts, then is preempted (see preempted())."""
        self.fake.advance(RUNNING)
        self.fake.advance(PREEMPTED)

    def attempts(self):
        return sorted(int(j["labels"]["vx-attempt"]) for j in self.live_jobs("a"))

    def wait_for(self, pred, timeout=30):
        deadline = time.time() + timeout
        while not pred():
            if time.time() > deadline:
                raise AssertionError("timed out; the fake holds %s" % self.live_jobs("a"))
            time.sleep(0.05)

    def wait_cycles(self, w, metrics, n):
        """Waits until the watcher w ran n more cycles (its -metrics file counts them)."""
        def ok():
            return ok_cycles(metrics)

        want = ok() + n
        deadline = time.time() + 30
        while ok() < want:
            self.assertLess(time.time(), deadline, "the watcher ran no cycles:\n" + "\n".join(w.lines))
            time.sleep(0.02)

    def test_preempted_job_is_resubmitted_within_the_interval(self):
        self.repo.write({"a": self.spot_job()})
        self.preempted()
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(RUNNING)
        w = Watcher(self.repo, "-interval", "2s")
        try:
            w.wait_line(lambda l: "queued -> running" in l)
            self.fake.advance(PREEMPTED)
            t0 = time.time()
            self.wait_for(lambda: self.attempts() == [1, 2], timeout=15)
            self.assertLess(time.time() - t0, 7.0)
            line = w.wait_line(lambda l: "resubmit" in l and "job.a" in l)
            self.assertRegex(without_time(line),
                             r"^act: \+ job\.a resubmit projects/\d+/locations/us-central1/customJobs/\d+$")
        finally:
            code = w.stop()
        self.assertEqual(code, 0)
        self.assertEqual(without_time(w.out_lines[-1]), "stop: stopped: the lease is released")
        # The resubmission is in the state, as vxapply records one.
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)

    def test_a_declaration_not_applied_is_not_acted_on(self):
        self.repo.write({"a": self.spot_job()})
        self.preempted()
        self.assertEqual(self.repo.apply().code, 0)
        self.preempt_the_run()
        self.repo.write({"a": self.spot_job(epochs=5)})
        r = self.repo.vx("watch", self.repo.dir, "-once")
        self.assertEqual((r.code, r.err), (2, ""), r)
        self.assertEqual([without_time(l) for l in r.out.splitlines()],
                         ["unapplied: job.a: declared but not applied (the plan says rerun); waiting for vxapply",
                          "record: recorded: job.a: queued -> failed (preempted)"])
        self.assertEqual(self.attempts(), [1])
        # -sync applies the whole plan.
        r = self.repo.vx("watch", self.repo.dir, "-once", "-sync")
        self.assertEqual(r.code, 2, r)
        self.assertEqual(len(self.live_jobs("a")), 2)

    def test_a_refused_create_is_asked_once_over_many_cycles_and_restarts(self):
        # Every customJobs.create answers 403; refused is listed, so it is tried again after a backoff.
        self.fake.post("/_fake/faults", {"error_rate": 1.0, "statuses": [403], "methods": ["CreateCustomJob"]})
        self.repo.write({"a": job_yaml("a", on="refused", attempts=3)})
        r = self.repo.vx("watch", self.repo.dir, "-cycles", "5", "-interval", "0s", "-sync")
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 1, r)
        # A watcher started again (a restart, a cron of -once) knows the refusal from the state.
        # It says why, and when the next try may be.
        wait = (r"^wait: job\.a: the create was refused \(refused at [0-9: -]+Z, 1 in a row\); attempt 2/3 not "
                r"before [0-9: -]+Z \(backoff\)$")
        for _ in range(3):
            r = self.repo.vx("watch", self.repo.dir, "-once", "-sync")
            self.assertEqual((r.code, r.err), (0, ""), r)
            self.assertEqual(len(r.out.splitlines()), 1, r)
            self.assertRegex(without_time(r.out.rstrip("\n")), wait)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 1, r)

    def test_once_exit_codes(self):
        self.repo.write({"a": self.spot_job()})
        self.preempted()
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(RUNNING)
        # Recording that the run started is doing something (a state commit); then nothing is left.
        r = self.repo.vx("watch", self.repo.dir, "-once")
        self.assertEqual((r.code, [without_time(l) for l in r.out.splitlines()], r.err),
                         (2, ["record: recorded: job.a: queued -> running"], ""), r)
        # The run's start is recorded with the rest (queue and running time come from it).
        rec = json.loads(self.repo.git("show", "vx/state/e2e:jobs/a.json"))
        live = self.live_jobs("a")[0]
        self.assertEqual(rec["current"]["startedAt"], live["startTime"].replace(".000000Z", "Z"))
        r = self.repo.vx("watch", self.repo.dir, "-once")
        self.assertEqual((r.code, r.out, r.err), (0, "", ""), r)
        self.fake.advance(PREEMPTED)
        r = self.repo.vx("watch", self.repo.dir, "-once")
        self.assertEqual(r.code, 2, r)
        self.assertEqual(self.attempts(), [1, 2])
        with open(os.path.join(self.repo.dir, "stack.yaml"), "a") as f:
            f.write("bogus: 1\n")
        r = self.repo.vx("watch", self.repo.dir, "-once")
        self.assertEqual(r.code, 1, r)
        self.assertEqual([without_time(l) for l in r.err.splitlines()],
                         ['error: %s/stack.yaml:6:1: Stack "e2e": unknown field "bogus" (one of kind, name, '
                          'project, region, state, labels, prices, failOn, notify, budget)' % self.repo.dir,
                          "error: %s: the stack has 1 error" % self.repo.dir])

    def test_notifications_arrive_once_signed_across_a_restart(self):
        rcv = Receiver()
        self.addCleanup(rcv.close)
        notify = ("notify:\n  - urlEnv: HOOK\n    secretEnv: SECRET\n"
                  "    on: [gave-up, resubmitted]\n")
        env = {"HOOK": rcv.url, "SECRET": SECRET}
        self.repo.write({"a": self.spot_job(attempts=2)}, extra_stack=notify)
        self.preempted(times=2)
        self.assertEqual(self.repo.apply(env=env).code, 0)
        self.preempt_the_run()
        r = self.repo.vx("watch", self.repo.dir, "-once", env=env)
        self.assertEqual(r.code, 2, r)
        self.assertEqual(rcv.events(), ["resubmitted"])
        # Restarted: the same event is seen again and not sent again.
        for _ in range(2):
            r = self.repo.vx("watch", self.repo.dir, "-once", env=env)
            self.assertEqual(r.code, 0, r)
        self.assertEqual(rcv.events(), ["resubmitted"])
        # The second attempt is preempted too: the budget is spent, the job gives up.
        self.preempt_the_run()
        for _ in range(3):
            self.repo.vx("watch", self.repo.dir, "-once", env=env)
        self.assertEqual(rcv.events(), ["resubmitted", "gave-up"])
        for headers, body in rcv.got:
            self.assertTrue(signature_ok(headers, body), headers)
            ev = json.loads(body)
            self.assertEqual(ev["id"], headers["webhook-id"])
            self.assertEqual((ev["stack"], ev["address"], ev["class"]), ("e2e", "job.a", "preempted"))
        self.assertEqual(json.loads(rcv.got[1][1])["attempt"], 2)
        self.assertEqual(self.attempts(), [1, 2])

    def test_sigterm_while_holding_the_lease_exits_0_and_frees_it(self):
        self.repo.write({"a": self.spot_job()})
        self.preempted()
        self.assertEqual(self.repo.apply().code, 0)
        self.preempt_the_run()
        # The watcher stops itself right before its resubmission goes out (VX_TEST_PAUSE),
        # holding the lease; SIGTERM arrives while it is frozen.
        w = Watcher(self.repo, "-interval", "2s", env={"VX_TEST_PAUSE": "before-send"})
        deadline = time.time() + 60
        while process_state(w.p.pid) not in ("T", "t"):
            self.assertIsNone(w.p.poll(), "the watcher did not pause:\n" + "\n".join(w.lines))
            self.assertLess(time.time(), deadline, "the watcher did not pause")
            time.sleep(0.02)
        w.p.send_signal(signal.SIGTERM)
        t0 = time.time()
        code = w.stop(signal.SIGCONT)
        self.assertLess(time.time() - t0, 10.0)
        self.assertEqual(code, 0, "\n".join(w.lines))
        self.assertEqual(without_time(w.out_lines[-1]), "stop: stopped: the lease is released")
        # The lease is free: the last lease commit gives it back, and an apply takes it at once.
        lease = [m.strip().split("\n")[0] for m in self.repo.lease_log() if m.strip()]
        self.assertTrue(lease[0].startswith("vx unlock: released "), lease)
        # The create in flight was let through and recorded: no duplicate, nothing left to do.
        self.assertEqual(self.attempts(), [1, 2])
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)

    def test_memory_is_flat_over_1000_cycles(self):
        self.repo.write({"a": self.spot_job(), "b": job_yaml("b")})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(RUNNING)
        self.repo.vx("watch", self.repo.dir, "-once")
        # A project whose read quota was raised, on both sides: at Google's 600 reads a minute
        # vx paces itself (test_plan_apply), and 1100 cycles took 100 s of waiting, not work.
        # A number, not "unlimited", so that the pacing still runs on every request measured.
        self.fake.post("/_fake/rate-limits", {"vertex_requests_per_minute": 100000})
        env = dict(self.fake.env(), VX_RATE_PER_MINUTE="100000")

        # ru_maxrss of each run, from the kernel's accounting of the child.
        def run(cycles):
            pid = os.fork()
            if pid == 0:
                os.chdir(self.repo.root)
                fd = os.open(os.devnull, os.O_RDWR)
                for k in (0, 1):
                    os.dup2(fd, k)
                os.dup2(os.open(os.path.join(self.tmp, "err-%d" % cycles), os.O_WRONLY | os.O_CREAT), 2)
                os.execve(VX_BIN, [VX_BIN, "watch", self.repo.dir, "-cycles", str(cycles), "-interval", "0s"],
                          env)
            _, status, ru = os.wait4(pid, 0)
            with open(os.path.join(self.tmp, "err-%d" % cycles)) as f:
                err = f.read()
            self.assertEqual((os.waitstatus_to_exitcode(status), err), (0, ""))
            return ru.ru_maxrss

        if asan_build():
            # Under AddressSanitizer peak RSS measures its quarantine, not vx: there,
            # LeakSanitizer checks at exit that 100 cycles freed everything (stderr empty).
            run(100)
            return
        small, big = run(100), run(1000)
        # 900 more cycles may not cost more than 1 MiB (a leak of 1 KiB a cycle would).
        self.assertLess(big - small, 1024, "peak RSS %d KiB after 100 cycles, %d KiB after 1000" % (small, big))
        reqs = self.fake.requests()["by_rpc"]
        self.assertEqual(reqs.get("CreateCustomJob", 0), 2)

    def test_vxapply_sends_the_same_events_and_a_watcher_does_not_resend(self):
        rcv = Receiver()
        self.addCleanup(rcv.close)
        env = {"HOOK": rcv.url, "SECRET": SECRET}
        self.repo.write({"a": self.spot_job(attempts=2)},
                        extra_stack="notify:\n  - urlEnv: HOOK\n    secretEnv: SECRET\n    on: [resubmitted]\n")
        self.preempted()
        self.assertEqual(self.repo.apply(env=env).code, 0)
        self.preempt_the_run()
        r = self.repo.apply(env=env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual([l for l in r.out.splitlines() if l.startswith("notify:")],
                         ["notify: job.a resubmitted to notify[0]: delivered"])
        self.assertEqual(rcv.events(), ["resubmitted"])
        self.assertTrue(signature_ok(*rcv.got[0]))
        r = self.repo.vx("watch", self.repo.dir, "-once", env=env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(rcv.events(), ["resubmitted"])

    def test_follow_reconciles_what_was_merged_and_keeps_the_last_good_commit(self):
        # The watcher's checkout stays where it is; origin/main moves on.
        remote = os.path.join(self.tmp, "remote.git")
        subprocess.run(["git", "init", "-q", "--bare", remote], check=True)
        self.repo.write({"a": self.spot_job()})
        self.repo.git("remote", "add", "origin", remote)
        self.repo.git("push", "-q", "origin", "main")
        self.assertEqual(self.repo.apply().code, 0)
        other = os.path.join(self.tmp, "other")
        subprocess.run(["git", "clone", "-q", "-b", "main", remote, other], check=True, capture_output=True)

        def push(text, name):
            with open(os.path.join(other, "stack", name), "w") as f:
                f.write(text)
            env = self.fake.env()
            for args in (["add", "-A"], ["commit", "-q", "-m", "merged"], ["push", "-q", "origin", "main"]):
                subprocess.run(["git", "-C", other] + args, check=True, env=env, capture_output=True)
            return subprocess.run(["git", "-C", other, "rev-parse", "HEAD"], check=True, capture_output=True,
                                  text=True).stdout.strip()

        head = push(job_yaml("b"), "b.yaml")
        w = Watcher(self.repo, "-interval", "1s", "-sync", "-follow", "origin/main")
        try:
            self.wait_for(lambda: len(self.live_jobs("b")) == 1)
            self.assertFalse(os.path.exists(os.path.join(self.repo.dir, "b.yaml")))
            # A commit that does not load: said once, and the last good one stays in force.
            bad = push("kind: CustomJob\nname: c\n", "c.yaml")
            w.wait_line(lambda l: "does not load" in l)
        finally:
            code = w.stop()
        self.assertEqual(code, 0)
        errors = [without_time(l) for l in w.lines if " error: " in l]
        self.assertEqual(errors, [
            'error: %s/c.yaml:1:1: CustomJob "c": missing required field "spec"' % self.repo.dir,
            "error: origin/main at %s does not load (1 error above); %s, the last good commit, stays in force"
            % (bad[:12], head[:12])])
        self.assertEqual(len(self.live_jobs("b")), 1)
        # The run names the merged commit it came from.
        log = self.repo.vx("log", "job.b", "-C", self.repo.dir)
        self.assertIn(head[:12], log.out)
        # A new watcher on a bad commit has no good one to keep: the cycle fails.
        r = self.repo.vx("watch", self.repo.dir, "-once", "-follow", "origin/main")
        self.assertEqual(r.code, 1, r)
        self.assertEqual([without_time(l) for l in r.err.splitlines()][-2:], [
            "error: origin/main at %s does not load (1 error above)" % bad[:12],
            "error: origin/main at %s does not load, and no earlier commit did" % bad[:12]])

    def test_the_same_error_five_cycles_in_a_row_is_told_once(self):
        rcv = Receiver()
        self.addCleanup(rcv.close)
        env = {"HOOK": rcv.url}
        self.repo.write({"a": self.spot_job()},
                        extra_stack="notify:\n  - urlEnv: HOOK\n    on: [watch-error]\n")
        self.assertEqual(self.repo.apply(env=env).code, 0)
        # Each list takes 300 ms, so that the 12 cycles are still running when the
        # faults begin (an idle cycle alone takes a few milliseconds).
        self.fake.post("/_fake/faults", {"latency_ms": 300})
        p = subprocess.Popen([VX_BIN, "watch", self.repo.dir, "-cycles", "12", "-interval", "0s",
                              "-metrics", os.path.join(self.tmp, "m.prom")],
                             cwd=self.repo.root, env=dict(self.fake.env(), **env), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        # Its first cycles run clean (targets known), then every list is refused.
        deadline = time.time() + 30
        while not os.path.exists(os.path.join(self.tmp, "m.prom")):
            self.assertLess(time.time(), deadline)
            time.sleep(0.02)
        self.fake.post("/_fake/faults", {"latency_ms": 300, "error_rate": 1.0, "statuses": [403],
                                         "methods": ["ListCustomJobs"]})
        out, err = p.communicate(timeout=300)
        self.assertEqual(p.returncode, 1, err)
        self.assertEqual(rcv.events(), ["watch-error"])
        ev = json.loads(rcv.got[0][1])
        self.assertEqual((ev["stack"], ev["address"], ev["run"]), ("e2e", None, None))
        self.assertTrue(ev["message"].startswith("reading live jobs in us-central1: vertex: listing jobs in "
                                                 "us-central1: PERMISSION_DENIED: Injected fault."), ev)
        self.assertEqual([without_time(l) for l in out.splitlines() if "notify" in l],
                         ["notify: watch-error to notify[0] delivered"])
        # Each failed cycle is one refused list: the metrics count it under its API.
        with open(os.path.join(self.tmp, "m.prom")) as f:
            metrics = dict(l.rsplit(" ", 1) for l in f.read().splitlines() if not l.startswith("#"))
        self.assertEqual(metrics['vx_watch_api_errors_total{service="aiplatform"}'],
                         metrics['vx_watch_cycles_total{result="error"}'])
        self.assertGreaterEqual(int(metrics['vx_watch_cycles_total{result="error"}']), 5)

    def test_a_quota_request_granted_while_watched_is_told(self):
        rcv = Receiver()
        self.addCleanup(rcv.close)
        env = {"HOOK": rcv.url}
        # The fake grants increases after 10 virtual minutes.
        self.fake.post("/_fake/quota-grants", {"mode": "full", "delay_seconds": 600})
        quota = ("---\nkind: QuotaPreference\nname: l4-training\nservice: aiplatform.googleapis.com\n"
                 "quotaId: CustomModelTrainingL4GPUsPerProjectPerRegion\ndimensions: {region: us-central1}\n"
                 "preferredValue: 2000\ncontactEmail: ml-infra@example.com\n")
        self.repo.jobs = {"q": quota}
        self.repo.write(extra_stack="notify:\n  - urlEnv: HOOK\n    on: [quota-granted, quota-denied]\n")
        self.assertEqual(self.repo.apply(env=env).code, 0)
        w = Watcher(self.repo, "-interval", "1s", "-metrics", os.path.join(self.tmp, "m.prom"), env=env)
        try:
            deadline = time.time() + 30
            while not os.path.exists(os.path.join(self.tmp, "m.prom")):
                self.assertLess(time.time(), deadline)
                time.sleep(0.02)
            self.fake.advance(700)
            w.wait_line(lambda l: "quota-granted" in l)
        finally:
            self.assertEqual(w.stop(), 0)
        self.assertEqual(rcv.events(), ["quota-granted"])
        ev = json.loads(rcv.got[0][1])
        self.assertEqual((ev["address"], ev["state"]), ("quota.l4-training", "granted 2000 of 2000"))

    def test_a_stack_over_three_regions_is_watched(self):
        # The refresh lists the regions side by side, one thread each, through the
        # watcher's reader: its table of places is shared by them (was a use after free).
        regions = ["us-central1", "us-east4", "europe-west4"]
        for r in regions:
            self.fake.post("/_fake/capacity", {"region": r, "accelerator_type": "NVIDIA_L4", "gpus": None})
            self.fake.post("/_fake/quota", {"region": r, "accelerator_type": "NVIDIA_L4", "limit": 1000})
        self.repo.write({"j%02d" % i: job_yaml("j%02d" % i) + "region: %s\n" % regions[i % 3] for i in range(30)})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(RUNNING)
        # Every list takes a while: the three regions' lists overlap.
        self.fake.post("/_fake/faults", {"latency_ms": 300})
        r = self.repo.vx("watch", self.repo.dir, "-cycles", "2", "-interval", "0s")
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertEqual(sorted(without_time(l) for l in r.out.splitlines()),
                         sorted("record: recorded: job.j%02d: queued -> running" % i for i in range(30)))
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)

    def test_an_idle_watcher_lists_only_the_active_jobs_and_sees_each_change(self):
        self.repo.write({"a": self.spot_job(), "b": job_yaml("b")})
        self.preempted()
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(RUNNING)
        r = self.repo.vx("watch", self.repo.dir, "-once")
        self.assertEqual(r.code, 2, r)
        refs = ["refs/heads/vx/state/e2e", "refs/vx/lease/e2e"]
        tips = self.repo.git("rev-parse", *refs)

        def calls(cycles):
            self.fake.post("/_fake/requests/reset", {})
            r = self.repo.vx("watch", self.repo.dir, "-cycles", str(cycles), "-interval", "0s")
            self.assertEqual((r.code, r.out, r.err), (0, "", ""), r)
            return self.fake.requests()["by_rpc"]

        # The first cycle lists in full, the second the active jobs and plans: each
        # one after that is idle, one list of the active jobs per region and nothing else.
        two, six = calls(2), calls(6)
        self.assertEqual({k: six.get(k, 0) - two.get(k, 0) for k in set(two) | set(six)
                          if six.get(k, 0) != two.get(k, 0)}, {"ListCustomJobs": 4})
        self.assertEqual(self.repo.git("rev-parse", *refs), tips)

        metrics = os.path.join(self.tmp, "idle.prom")
        w = Watcher(self.repo, "-cycles", "100000", "-interval", "200ms", "-metrics", metrics)

        def idle_cycles(n):
            self.wait_cycles(w, metrics, n)

        try:
            idle_cycles(3)
            # A stack file edited: told in the next cycle.
            self.repo.write({"a": self.spot_job(), "b": job_yaml("b"), "c": job_yaml("c")})
            w.wait_line(lambda l: without_time(l) ==
                        "unapplied: job.c: declared but not applied (the plan says create); waiting for vxapply")
            idle_cycles(3)
            # An apply by vxapply: its job is watched from the next cycle on.
            self.assertEqual(self.repo.apply().code, 0)
            idle_cycles(3)
            self.fake.advance(RUNNING)
            w.wait_line(lambda l: without_time(l) == "record: recorded: job.c: queued -> running")
            idle_cycles(3)
            # The fake's clock ends a run: resubmitted in the next cycle.
            self.fake.advance(PREEMPTED)
            line = w.wait_line(lambda l: "resubmit" in l and "job.a" in l)
            self.assertRegex(without_time(line),
                             r"^act: \+ job\.a resubmit projects/\d+/locations/us-central1/customJobs/\d+$")
        finally:
            self.assertEqual(w.stop(), 0)
        self.assertEqual(self.attempts(), [1, 2])

    def write_state_like(self, rev):
        """A commit on the state branch holding rev's tree at the next serial, as another
        writer would make it."""
        ref = "refs/heads/vx/state/e2e"
        env = dict(self.fake.env(), GIT_INDEX_FILE=os.path.join(self.tmp, "index.tmp"))

        def git(*args, stdin=None):
            return subprocess.run(["git", "-C", self.repo.root] + list(args), check=True, input=stdin,
                                  capture_output=True, text=True, env=env).stdout.strip()

        tip = git("rev-parse", ref)
        header = json.loads(git("show", "%s:stack.json" % rev))
        header["serial"] = json.loads(git("show", "%s:stack.json" % tip))["serial"] + 1
        git("read-tree", rev)
        blob = git("hash-object", "-w", "--stdin", stdin=json.dumps(header, indent=2) + "\n")
        git("update-index", "--cacheinfo", "100644,%s,stack.json" % blob)
        git("update-ref", ref, git("commit-tree", git("write-tree"), "-p", tip, "-m", "another writer"), tip)

    def test_an_idle_watcher_sees_a_state_written_by_another(self):
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")})
        self.assertEqual(self.repo.apply().code, 0)
        applied = self.repo.git("rev-parse", "refs/heads/vx/state/e2e").strip()
        self.fake.advance(RUNNING)
        self.assertEqual(self.repo.vx("watch", self.repo.dir, "-once").code, 2)
        metrics = os.path.join(self.tmp, "idle.prom")
        w = Watcher(self.repo, "-cycles", "100000", "-interval", "200ms", "-metrics", metrics)
        try:
            self.wait_cycles(w, metrics, 3)
            # Someone else writes the state (here: what the apply left, both runs
            # queued, as the next serial): nothing in the stack's files or the cloud
            # changed. (Moving the branch back instead is refused: test_state_loss.)
            self.write_state_like(applied)
            for j in ("a", "b"):
                w.wait_line(lambda l, j=j: without_time(l) == "record: recorded: job.%s: queued -> running" % j)
        finally:
            self.assertEqual(w.stop(), 0)
