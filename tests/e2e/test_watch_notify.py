"""End to end: where vx watch and vxapply send notifications, and what they hold meanwhile.

A receiver that never answers, one killed between two deliveries, targets not
applied, targets on this machine, and the metrics file. Every wait is for an
event (a request the receiver got, a line the watcher printed, a process
state), bounded by a deadline.
"""
import ipaddress
import json
import re
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import http.server

from harness import FakeTestCase, VX_BIN, job_yaml, process_state
from test_persistent import pool_yaml
from test_watch import Receiver, Watcher, without_time

RUNNING = 40          # virtual seconds until a job runs
SUCCEEDED = 3700      # then past its running time: it succeeded


class Hook:
    """A webhook receiver on 127.0.0.1 that answers each request by a script:
    "ok" (204) or "hang" (no answer until release()); past the script, "ok"."""

    def __init__(self, script=()):
        self.script = list(script)
        self.got = []            # (headers, body, answered)
        self.cv = threading.Condition()
        self.released = threading.Event()
        hook = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with hook.cv:
                    n = len(hook.got)
                    what = hook.script[n] if n < len(hook.script) else "ok"
                    hook.got.append([dict(self.headers), body, False])
                    hook.cv.notify_all()
                if what == "hang":
                    hook.released.wait(120)
                    return
                with hook.cv:
                    hook.got[n][2] = True
                self.send_response(204)
                self.end_headers()

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.url = "http://127.0.0.1:%d/hook" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def wait_requests(self, n, timeout=60):
        deadline = time.time() + timeout
        with self.cv:
            while len(self.got) < n:
                left = deadline - time.time()
                if left <= 0:
                    raise AssertionError("the receiver got %d requests, not %d" % (len(self.got), n))
                self.cv.wait(left)

    def answered_ids(self):
        with self.cv:
            return [h["webhook-id"] for h, _, ok in self.got if ok]

    def release(self):
        self.released.set()

    def close(self):
        self.release()
        self.srv.shutdown()
        self.srv.server_close()


class WatchNotify(FakeTestCase):

    def setUp(self):
        super().setUp()
        now = time.time()
        self.fake.post("/_fake/clock", {"set_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))})

    def jobs_succeed(self, names, notify, env):
        """Jobs named names, applied, then run to success; a watcher cycle records
        their end. It announces them in that cycle too, but HOOK is not set for it,
        so nothing is sent (and nothing recorded as sent): the test's own cycle sends."""
        self.repo.write({n: job_yaml(n) for n in names}, extra_stack=notify)
        r = self.repo.apply(env=env)
        self.assertEqual(r.code, 0, r)
        self.fake.advance(RUNNING)
        self.fake.advance(SUCCEEDED)
        r = self.repo.vx("watch", self.repo.dir, "-once")
        lines = [without_time(l) for l in r.out.splitlines()]
        self.assertEqual([l for l in lines if l.startswith("record:")].__len__(), len(names), r)
        for l in lines:
            if not l.startswith("record:"):
                self.assertRegex(l, r"^notify: job\.[a-z]+: succeeded to notify\[\d\] not delivered: HOOK\w* is not set "
                                 r"\(tried again later\)$", r)

    def start_watch(self, *args, env=None):
        e = self.fake.env()
        e.update(env or {})
        return subprocess.Popen([VX_BIN, "watch", self.repo.dir] + list(args), cwd=self.repo.root, env=e,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                text=True)

    def test_a_receiver_that_never_answers_holds_no_lease_and_costs_one_timeout(self):
        hook = Hook(["hang"] * 20)
        self.addCleanup(hook.close)
        env = {"HOOK": hook.url}
        names = ["a", "b", "c", "d", "e", "f"]
        self.jobs_succeed(names, "notify:\n  - urlEnv: HOOK\n    on: [succeeded]\n", env)
        t0 = time.time()
        w = self.start_watch("-once", env=env)
        # The watcher is inside its first delivery, which will never be answered.
        hook.wait_requests(1)
        # An apply now finds the lease free (it fails at once on a held one: -lock-timeout 0).
        r = self.repo.vx("apply", self.repo.dir, "-auto-approve", "-lock-timeout", "0s", env=env)
        self.assertNotIn("state is locked", r.err)
        self.assertEqual(r.code, 0, r)
        out, err = w.communicate(timeout=60)
        took = time.time() - t0
        self.assertEqual(w.returncode, 0, out + err)
        # One try of the dead target (its 10 s timeout), not one per event, nor retries.
        self.assertLess(took, 25.0, out + err)
        lines = [without_time(l) for l in out.splitlines() if " notify: " in l]
        self.assertEqual(len(lines), 1, out)
        self.assertTrue(lines[0].startswith("notify: job.a: succeeded to notify[0] not delivered: "), lines)
        self.assertTrue(lines[0].endswith(" (tried again later)"), lines)

    def test_vxapply_gives_its_lease_back_before_notifying(self):
        hook = Hook(["hang"] * 20)
        self.addCleanup(hook.close)
        env = {"HOOK": hook.url}
        self.jobs_succeed(["a", "b"], "notify:\n  - urlEnv: HOOK\n    on: [succeeded]\n", env)
        e = self.fake.env()
        e.update(env)
        first = subprocess.Popen([VX_BIN, "apply", self.repo.dir, "-auto-approve"], cwd=self.repo.root, env=e,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        # The first apply is inside its delivery, which will never be answered.
        hook.wait_requests(1)
        r = self.repo.vx("apply", self.repo.dir, "-auto-approve", "-lock-timeout", "0s", env=env)
        self.assertNotIn("state is locked", r.err)
        self.assertEqual(r.code, 0, r)
        out, err = first.communicate(timeout=60)
        self.assertEqual(first.returncode, 0, out + err)
        self.assertEqual([l for l in out.splitlines() if l.startswith("notify:")],
                         ["notify: job.a succeeded to notify[0]: not delivered: POST notify[0]: Timeout was reached "
                          "(not retried)"])

    def test_a_refused_connection_is_one_quick_try(self):
        # A port nothing listens on: the connection is refused at once.
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        env = {"HOOK": "http://127.0.0.1:%d/hook" % s.getsockname()[1]}
        s.close()
        names = ["a", "b", "c", "d", "e", "f"]
        self.jobs_succeed(names, "notify:\n  - urlEnv: HOOK\n    on: [succeeded]\n", env)
        leases = self.repo.lease_log()
        t0 = time.time()
        r = self.repo.vx("watch", self.repo.dir, "-once", env=env, timeout=60)
        self.assertEqual(r.code, 0, r)
        self.assertLess(time.time() - t0, 10.0, r)
        # Nothing but notifications to do: no lease was taken for them.
        self.assertEqual(self.repo.lease_log(), leases)
        lines = [without_time(l) for l in r.out.splitlines() if " notify: " in l]
        self.assertEqual(len(lines), 1, r.out)
        self.assertTrue(lines[0].startswith("notify: job.a: succeeded to notify[0] not delivered: POST notify[0]: "),
                        lines)
        self.assertTrue(lines[0].endswith(" (not retried) (tried again later)"), lines)

    def test_the_lease_names_the_watcher(self):
        self.repo.write({"a": job_yaml("a", on="preempted", strategy="SPOT")})
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "a"}, "outcome": "preempted", "times": 1})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(RUNNING)
        self.fake.advance(2000)
        # The watcher stops itself right before its resubmission goes out, holding the lease.
        w = Watcher(self.repo, "-interval", "2s", env={"VX_TEST_PAUSE": "before-send"})
        deadline = time.time() + 60
        while process_state(w.p.pid) not in ("T", "t"):
            self.assertIsNone(w.p.poll(), "the watcher did not pause:\n" + "\n".join(w.lines))
            self.assertLess(time.time(), deadline, "the watcher did not pause")
            time.sleep(0.02)
        lease = json.loads(self.repo.git("show", "refs/vx/lease/e2e:lease.json"))
        w.p.send_signal(signal.SIGTERM)
        self.assertEqual(w.stop(signal.SIGCONT), 0)
        self.assertEqual(lease["operation"], "watch")

    def test_a_delivery_is_recorded_before_the_next_is_tried(self):
        # The first delivery is answered, the second never is: the watcher is killed there.
        hook = Hook(["ok", "hang"])
        self.addCleanup(hook.close)
        env = {"HOOK": hook.url}
        self.jobs_succeed(["a", "b"], "notify:\n  - urlEnv: HOOK\n    on: [succeeded]\n", env)
        w = self.start_watch("-once", env=env)
        hook.wait_requests(2)
        w.send_signal(signal.SIGKILL)
        w.communicate(timeout=30)
        first = hook.answered_ids()
        self.assertEqual(len(first), 1)
        hook.release()
        # Restarted: the one delivered is not sent again; the other is.
        r = self.repo.vx("watch", self.repo.dir, "-once", env=env)
        self.assertIn(r.code, (0, 2), r)
        ids = hook.answered_ids()
        self.assertEqual(len(ids), 2, r)
        self.assertEqual(len(set(ids)), 2, "sent twice: %s" % ids)
        self.assertEqual([json.loads(b)["address"] for _, b, ok in hook.got if ok], ["job.a", "job.b"])

    def test_a_target_not_applied_gets_nothing_from_the_watcher(self):
        a, b = Receiver(), Receiver()
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        env = {"HOOK_A": a.url, "HOOK_B": b.url}
        one = "notify:\n  - urlEnv: HOOK_A\n    on: [succeeded]\n"
        self.jobs_succeed(["a"], one, env)
        # A second target is merged, not applied.
        self.repo.write(extra_stack=one + "  - urlEnv: HOOK_B\n    on: [succeeded]\n")
        for _ in range(2):
            r = self.repo.vx("watch", self.repo.dir, "-once", env=env)
            self.assertIn(r.code, (0, 2), r)
            unapplied = [without_time(l) for l in r.out.splitlines() if " unapplied: " in l]
            if _ == 0:
                self.assertEqual(unapplied, ["unapplied: notify[1]: declared but not applied (a new or changed "
                                             "notify target); waiting for vxapply"])
        self.assertEqual(a.events(), ["succeeded"])
        self.assertEqual(b.events(), [])
        # Applied: vxapply tells the new target what it has not heard.
        r = self.repo.apply(env=env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(b.events(), ["succeeded"])
        self.assertEqual(a.events(), ["succeeded"])

    def test_this_machine_only_with_the_variable(self):
        rcv = Receiver()
        self.addCleanup(rcv.close)
        env = {"HOOK": rcv.url, "VX_NOTIFY_ALLOW_LOOPBACK": "0"}
        self.jobs_succeed(["a"], "notify:\n  - urlEnv: HOOK\n    on: [succeeded]\n", env)
        r = self.repo.vx("watch", self.repo.dir, "-once", env=env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual([without_time(l) for l in r.out.splitlines() if " notify: " in l], [
            "notify: job.a: succeeded to notify[0] not delivered: HOOK: a target on this machine (loopback): "
            "nothing is sent to it unless VX_NOTIFY_ALLOW_LOOPBACK=1 is in vx's environment (tried again later)"])
        self.assertEqual(rcv.events(), [])

    def test_this_machine_by_any_name_only_with_the_variable(self):
        """0.0.0.0 and a name that resolves to 127.0.0.0/8 reach this machine as 127.0.0.1 does: vx
        refused only 127/8, ::1 and localhost by their spelling, so both were posted to. Nothing may
        even connect: a listener counts connections."""
        lst = socket.socket()
        lst.bind(("127.0.0.1", 0))
        lst.listen(8)
        lst.settimeout(0)
        self.addCleanup(lst.close)
        port = lst.getsockname()[1]
        name = socket.gethostname()
        self.assertTrue(ipaddress.ip_address(socket.gethostbyname(name)).is_loopback,
                        "this test needs the machine's name to resolve to 127.0.0.0/8, as Debian's /etc/hosts "
                        "has it; %s resolves to %s" % (name, socket.gethostbyname(name)))
        self.jobs_succeed(["a"], "notify:\n  - urlEnv: HOOK\n    on: [succeeded]\n"
                          "  - urlEnv: HOOK2\n    on: [succeeded]\n", {})
        env = {"HOOK": "https://0.0.0.0:%d/x" % port, "HOOK2": "https://%s:%d/x" % (name, port),
               "VX_NOTIFY_ALLOW_LOOPBACK": "0"}
        r = self.repo.vx("watch", self.repo.dir, "-once", env=env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(sorted(without_time(l) for l in r.out.splitlines() if " notify: " in l), [
            "notify: job.a: succeeded to notify[0] not delivered: HOOK: a target on this machine (loopback): "
            "nothing is sent to it unless VX_NOTIFY_ALLOW_LOOPBACK=1 is in vx's environment (tried again later)",
            "notify: job.a: succeeded to notify[1] not delivered: HOOK2: its host resolves to this machine "
            "(loopback): nothing is sent to it unless VX_NOTIFY_ALLOW_LOOPBACK=1 is in vx's environment (tried "
            "again later)"], r)
        # The watcher has exited: any connection it made is in the listener's queue.
        with self.assertRaises(BlockingIOError, msg="vx connected to this machine"):
            lst.accept()

    def test_a_url_from_the_environment_with_userinfo_is_refused(self):
        rcv = Receiver()
        self.addCleanup(rcv.close)
        port = rcv.url.split(":")[2].split("/")[0]
        env = {"HOOK": "http://localhost:80@127.0.0.1:%s/x" % port}
        self.jobs_succeed(["a"], "notify:\n  - urlEnv: HOOK\n    on: [succeeded]\n", env)
        r = self.repo.vx("watch", self.repo.dir, "-once", env=env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual([without_time(l) for l in r.out.splitlines() if " notify: " in l], [
            "notify: job.a: succeeded to notify[0] not delivered: HOOK: credentials in the URL "
            "(user:password@): vx sends none (tried again later)"])
        self.assertEqual(rcv.events(), [])

    def test_validate_compares_the_parsed_host(self):
        cases = [
            ("http://localhost.attacker.example/x", "plain http:// to another machine: use https://"),
            ("http://127.attacker.example/x", "plain http:// to another machine: use https://"),
            ("https://HOOKS.SLACK.COM/services/T0/B0/x", "a Slack webhook URL, whose path is its secret: put it "
             "in the environment and name it with urlEnv"),
            ("https://hooks.slack.com./services/T0/B0/x", "a Slack webhook URL, whose path is its secret: put it "
             "in the environment and name it with urlEnv"),
            ("https://hooks.slack.com:443/services/T0/B0/x", "a Slack webhook URL, whose path is its secret: put "
             "it in the environment and name it with urlEnv"),
            ("http://localhost:80@127.0.0.2:18184/x", "credentials in the URL (user:password@): put the URL in "
             "the environment and name it with urlEnv"),
        ]
        for url, why in cases:
            self.repo.write({"a": job_yaml("a")}, extra_stack="notify:\n  - url: %s\n" % url)
            r = self.repo.vx("validate", self.repo.dir)
            self.assertEqual(r.code, 1, (url, r))
            self.assertEqual(r.err.splitlines()[0], "%s/stack.yaml:7:10: Stack \"e2e\": notify[0].url: %s" % (self.repo.dir, why),
                             url)
        # This machine: valid, with a warning when nothing would be sent there.
        self.repo.write({"a": job_yaml("a")}, extra_stack="notify:\n  - url: http://127.0.0.1:9/x\n")
        r = self.repo.vx("validate", self.repo.dir, env={"VX_NOTIFY_ALLOW_LOOPBACK": ""})
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.err, "%s/stack.yaml:7:5: warning: notify[0].url: a target on this machine (loopback): "
                         "nothing is sent to it unless VX_NOTIFY_ALLOW_LOOPBACK=1 is in the environment of vx "
                         "watch and vxapply\n" % self.repo.dir)
        r = self.repo.vx("validate", self.repo.dir)
        self.assertEqual((r.code, r.err), (0, ""))

    def test_the_metrics_file_is_whole_follows_no_link_and_counts_every_api_from_0(self):
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply().code, 0)
        metrics = os.path.join(self.tmp, "vx.prom")
        victim = os.path.join(self.tmp, "victim")
        with open(victim, "w") as f:
            f.write("keep me\n")
        # Planted where the watcher used to write its temporary file.
        os.symlink(victim, metrics + ".tmp")
        r = self.repo.vx("watch", self.repo.dir, "-once", "-metrics", metrics)
        self.assertIn(r.code, (0, 2), r)
        with open(victim) as f:
            self.assertEqual(f.read(), "keep me\n")
        self.assertFalse(os.path.islink(metrics))
        with open(metrics) as f:
            text = f.read()
        got = {}
        for line in text.splitlines():
            if line.startswith("#"):
                self.assertRegex(line, r"^# (HELP|TYPE) vx_watch_[a-z_]+ .+$")
                continue
            name, value = line.rsplit(" ", 1)
            self.assertRegex(name, r'^vx_watch_[a-z_]+(\{[a-z]+="[a-z-]+"\})?$')
            got[name] = float(value)
        for api in ("aiplatform", "compute", "cloudquotas", "storage", "oauth", "webhook"):
            self.assertEqual(got['vx_watch_api_errors_total{service="%s"}' % api], 0.0, text)
        promtool = shutil.which("promtool")
        self.assertIsNotNone(promtool, "promtool (Debian package prometheus, tools/deps.sh) is needed")
        p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "", ""))

    def test_a_persistent_resource_in_error_is_told_once(self):
        """resource-error: the payload whole, once however often the watcher looks (issue 34)."""
        rcv = Receiver()
        self.addCleanup(rcv.close)
        env = {"HOOK": rcv.url}
        self.fake.post("/_fake/timings", {"provisioning_seconds": 0, "updating_seconds": 0, "stopping_seconds": 0})
        self.repo.write({"pool": pool_yaml()}, extra_stack="notify:\n  - urlEnv: HOOK\n    on: [resource-error]\n")
        r = self.repo.apply(env=env)
        self.assertEqual(r.code, 0, r)
        r = self.repo.vx("watch", self.repo.dir, "-once", env=env)
        self.assertEqual((r.code, rcv.got), (0, []), r)
        name = self.fake.get("/_fake/persistent-resources")["persistentResources"][0]["name"]
        self.fake.post("/_fake/persistent-resources", {
            "name": name, "state": "ERROR", "error": {"code": 13, "message": "machines lost"}})
        now = self.fake.advance(0)["now"]
        r = self.repo.vx("watch", self.repo.dir, "-once", env=env)
        self.assertEqual(r.code, 0, r)   # telling is not doing: nothing was changed
        self.assertEqual([without_time(l) for l in r.out.splitlines()],
                         ["notify: persistent_resource.eval-pool: resource-error to notify[0] delivered"], r)
        self.assertEqual(len(rcv.got), 1)
        headers, body = rcv.got[0]
        got = json.loads(body)
        self.assertEqual(got.pop("id"), headers["webhook-id"])
        self.assertEqual(got, {
            "event": "resource-error", "stack": "e2e", "address": "persistent_resource.eval-pool", "run": None,
            "attempt": None, "rung": 0, "state": "ERROR", "class": None, "message": "machines lost", "job": None,
            "console": None, "time": re.sub(r"\.[0-9]+Z$", "Z", now)})
        for _ in range(2):
            r = self.repo.vx("watch", self.repo.dir, "-once", env=env)
            self.assertEqual(r.code, 0, r)
            self.assertEqual(len(rcv.got), 1, "told once")
