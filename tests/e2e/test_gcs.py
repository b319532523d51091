"""End to end: the gcs state backend against the fake's Cloud Storage (issue 11).

The state is read back from the fake's storage through the real JSON API (a
token of our own), and changed behind vx's back the same way.
"""
import json
import re
import signal
import subprocess
import time
import urllib.parse
import urllib.request

from harness import FakeTestCase, VX_BIN, Result, job_yaml
from test_audit import Audit
from test_lease import process_state

BUCKET = "vx-e2e-state"
GCS = "state: {backend: gcs, bucket: %s}\n" % BUCKET
PREFIX = "vx/state/e2e"

LOCKED = re.compile(
    r"vx: state is locked by [^@\s]+@[^\s]+ \(pid \d+, apply\) since "
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{3})?Z, expires (?:\d{4}-\d\d-\d\dT)?\d\d:\d\d:\d\d(?:\.\d{3})?Z; lock id ([0-9a-f]{32}); wait with "
    r"-lock-timeout or clear it with: vx unlock \1 \S+\n")


class GcsMixin:
    """Storage helpers; the stack written by write() keeps its state in the bucket."""

    def storage(self, method, path, data=None, headers=None):
        self.fake.post("/_fake/tokens", {"token": "outsider-token"})
        h = {"Authorization": "Bearer outsider-token"}
        h.update(headers or {})
        req = urllib.request.Request(self.fake.url + path, data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def obj_path(self, name):
        return "/storage/v1/b/%s/o/%s" % (BUCKET, urllib.parse.quote(name, safe=""))

    def objects(self):
        return sorted(o["name"] for o in self.fake.get("/_fake/objects")["objects"]
                      if o["bucket"] == BUCKET)

    def read(self, name):
        """(generation, bytes) of an object, or (None, None) when there is none."""
        code, meta = self.storage("GET", self.obj_path(name))
        if code == 404:
            return None, None
        self.assertEqual(code, 200, meta)
        gen = json.loads(meta)["generation"]
        code, data = self.storage("GET", self.obj_path(name) + "?alt=media&ifGenerationMatch=" + gen)
        self.assertEqual(code, 200, data)
        return gen, data

    def upload(self, name, data, if_gen=None):
        """A multipart upload, as gsutil or another tool would make it."""
        b = "xyzzy-boundary"
        body = (b"--" + b.encode() + b"\r\nContent-Type: application/json\r\n\r\n{}\r\n--" + b.encode() +
                b"\r\nContent-Type: application/json\r\n\r\n" + data + b"\r\n--" + b.encode() + b"--\r\n")
        q = "uploadType=multipart&name=" + urllib.parse.quote(name, safe="")
        if if_gen is not None:
            q += "&ifGenerationMatch=%s" % if_gen
        code, out = self.storage("POST", "/upload/storage/v1/b/%s/o?%s" % (BUCKET, q), body,
                                 {"Content-Type": "multipart/related; boundary=" + b})
        self.assertEqual(code, 200, out)
        return json.loads(out)["generation"]

    def state(self):
        gen, data = self.read(PREFIX + "/state.json")
        return json.loads(data) if data else None


class GcsAudit(GcsMixin, Audit):
    """The audit tests that read only `vx log` and the fake, on the gcs backend:
    `vx log` tells the same story from the bucket's history objects."""

    def setUp(self):
        super().setUp()
        write = self.repo.write
        self.repo.write = lambda jobs=None, extra_stack="": write(jobs, GCS + extra_stack)

    def state_file(self, path, rev=None):
        self.assertIsNone(rev)
        kind, name = path.split("/")
        addr = {"jobs": "job"}[kind] + "." + name[:-len(".json")]
        recs = [r for r in self.state()["records"] if r["address"] == addr]
        self.assertEqual(len(recs), 1, addr)
        return recs[0]

    def last_version(self, path):
        """The record as last written before the write that removed it: the newest history
        object that holds it."""
        kind, name = path.split("/")
        addr = {"jobs": "job"}[kind] + "." + name[:-len(".json")]
        self.assertIsNone(next((r for r in self.state()["records"] if r["address"] == addr), None))
        for serial in range(self.state()["serial"], 0, -1):
            _, h = self.read(PREFIX + "/history/%010d.json" % serial)
            self.assertIsNotNone(h, serial)
            recs = [r for r in json.loads(h)["state"]["records"] if r["address"] == addr]
            if recs:
                return recs[0]
        self.fail("%s is in no history object" % addr)

    # Not about the state backend (dirty git checkouts), or reading the git
    # branch: not repeated here (None: unittest does not collect them, so no
    # test is reported as skipped).
    test_dirty_apply_refused_in_ci = None
    test_dirty_apply_recorded_outside_ci = None
    test_adopted_run_carries_the_jobs_create_time = None


del Audit  # run once, in test_audit.py


class Gcs(GcsMixin, FakeTestCase):

    def write(self, jobs):
        self.repo.write(jobs, extra_stack=GCS)

    def uploads(self):
        """(object name, request body length) of each object upload the fake saw, in order."""
        out = []
        for e in self.fake.get("/_fake/requests?log=5000")["log"]:
            if e["rpc"] == "storage.objects.insert":
                q = urllib.parse.parse_qs(urllib.parse.urlsplit(e["path"]).query)
                out.append((q["name"][0], e["bytes"]))
        return out

    def test_each_save_uploads_the_state_once(self):
        """state.json is the one upload that holds the state. A history object
        is composed by the server from a small head (serial, lineage, time,
        message), state.json at the generation just written, and a tail."""
        self.write({"j%d" % i: job_yaml("j%d" % i) for i in range(6)})
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        serial = self.state()["serial"]
        self.assertGreaterEqual(serial, 2)  # the journal, then the results
        _, text = self.read(PREFIX + "/state.json")
        ups = self.uploads()
        self.assertEqual([n for n, _ in ups].count(PREFIX + "/state.json"), serial, ups)
        # Nothing else uploaded comes near the state's size: no second copy of it.
        others = [(n, b) for n, b in ups if n != PREFIX + "/state.json"]
        self.assertEqual([(n, b) for n, b in others if b >= len(text) // 2], [], (len(text), others))
        # What they are: the lease, and per save the head of its history object
        # (parts/SERIAL-GENERATION.head, deleted once composed), the tail once.
        kinds = [re.sub(r"^%s/(parts/)\d{10}-\d+\.head$" % PREFIX, r"\1head", n).replace(PREFIX + "/", "")
                 for n, _ in others]
        self.assertEqual(kinds, ["lease.json", "parts/head", "parts/tail"] + ["parts/head"] * (serial - 1))
        # One compose a save, and a second try of the first, which found no tail yet.
        self.assertEqual(self.fake.rpc_count("storage.objects.compose"), serial + 1)
        # And each serial still has its whole history object, the newest with its message.
        self.assertEqual([o for o in self.objects() if "/history/" in o],
                         [PREFIX + "/history/%010d.json" % n for n in range(1, serial + 1)])
        _, h = self.read(PREFIX + "/history/%010d.json" % serial)
        self.assertRegex(h, rb'^\{"serial":%d,"lineage":"%s","time":"[-0-9T:.Z]+","message":"'
                         % (serial, self.state()["lineage"].encode()))
        self.assertTrue(h.endswith(text + b"}\n"))
        h = json.loads(h)
        self.assertEqual(h["state"], json.loads(text))
        self.assertIn("+ job.j0 create projects/", h["message"])
        # A second apply that changes nothing uploads nothing.
        before = len(ups)
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual([n for n, _ in self.uploads()[before:] if "/lease.json" not in n], [])

    def downloads(self, name):
        """How many times the fake served the object name's content (alt=media)."""
        quoted = urllib.parse.quote(name, safe="")
        return sum(1 for e in self.fake.get("/_fake/requests?log=5000")["log"]
                   if e["rpc"] == "storage.objects.get" and "/o/%s?" % quoted in e["path"] + "?"
                   and "alt=media" in e["path"])

    def test_a_save_does_not_download_the_state_it_wrote(self):
        """Each save compares-and-swaps state.json at the generation this apply loaded or last
        wrote: it is read once, by the load, not again before each save (a state of 10,000
        records is megabytes)."""
        self.write({"j%d" % i: job_yaml("j%d" % i) for i in range(6)})
        self.assertEqual(self.repo.apply().code, 0)
        self.write({"j%d" % i: job_yaml("j%d" % i) for i in range(12)})
        self.fake.post("/_fake/requests/reset", {})
        r = self.repo.apply("-parallelism", "1")
        self.assertEqual(r.code, 0, r)
        self.assertGreaterEqual(len([n for n, _ in self.uploads() if n == PREFIX + "/state.json"]), 3)
        self.assertEqual(self.downloads(PREFIX + "/state.json"), 1)

    def test_plan_apply_log_on_the_bucket(self):
        self.write({"a": job_yaml("a"), "b": job_yaml("b")})
        p = self.repo.plan("-detailed-exitcode")
        self.assertEqual(p.code, 2, p)
        self.assertEqual(self.objects(), [])               # plan writes nothing
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertIn("Apply complete: 2 done, 0 failed.", r.out)
        self.assertEqual(len(self.live_jobs("a")), 1)
        self.assertEqual(len(self.live_jobs("b")), 1)
        st = self.state()
        self.assertEqual(st["stack"], "e2e")
        self.assertEqual(sorted(r["address"] for r in st["records"]), ["job.a", "job.b"])
        self.assertIsNone(st["lock"])
        serial = st["serial"]
        # No lease left; one history object per serial written, the newest holding its message.
        self.assertEqual(self.objects(), [PREFIX + "/history/%010d.json" % n for n in range(1, serial + 1)]
                         + [PREFIX + "/parts/tail", PREFIX + "/state.json"])
        _, h = self.read(PREFIX + "/history/%010d.json" % serial)
        h = json.loads(h)
        self.assertEqual((h["serial"], h["lineage"], h["state"]), (serial, st["lineage"], st))
        self.assertIn("+ job.a create projects/", h["message"])
        # Nothing to do: no new job, no new state.
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)
        # vx log reads the bucket.
        lg = self.repo.vx("log", "job.a", "-C", self.repo.dir)
        self.assertEqual(lg.code, 0, lg)
        self.assertEqual(lg.err, "")
        self.assertRegex(lg.out, r"^job\.a\n  2026-01-01T00:00:00Z  create    %s  attempt 1  run 1  by "
                         r"\S+  config [0-9a-f]{12}  cost \$0\.00  \S+\n$" % re.escape(self.live_jobs("a")[0]["name"]))
        # The git branch was never made: the state is in the bucket only.
        self.assertEqual(self.repo.git("branch", "--list", "vx/state/*"), "")

    def test_unlock_clears_a_held_lease(self):
        self.write({"a": job_yaml("a")})
        lease = {"version": 1, "id": "0123456789abcdef0123456789abcdef", "user": "alice", "host": "ci-runner-3",
                 "pid": 4242, "operation": "apply", "startedAt": "2026-11-22T10:02:00Z",
                 "expiresAt": "2099-11-22T10:17:00Z"}
        self.upload(PREFIX + "/lease.json", json.dumps(lease).encode(), if_gen=0)
        r = self.repo.apply()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.err, "vx: state is locked by alice@ci-runner-3 (pid 4242, apply) since "
                         "2026-11-22T10:02:00Z, expires 2099-11-22T10:17:00Z; lock id %s; wait with "
                         "-lock-timeout or clear it with: vx unlock %s %s\n"
                         % (lease["id"], lease["id"], self.repo.dir))
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 0)
        u = self.repo.vx("unlock", "ffffffffffffffffffffffffffffffff", "-C", self.repo.dir)
        self.assertEqual(u.code, 1, u)
        self.assertEqual(u.err, "vx: unlock: unlocking: lock id ffffffffffffffffffffffffffffffff does not match "
                         "the current lock %s held by alice@ci-runner-3 (pid 4242, apply); nothing was "
                         "changed\n" % lease["id"])
        self.assertIn(PREFIX + "/lease.json", self.objects())
        u = self.repo.vx("unlock", lease["id"], "-C", self.repo.dir)
        self.assertEqual(u.code, 0, u)
        self.assertNotIn(PREFIX + "/lease.json", self.objects())
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.live_jobs("a")), 1)
        self.assertNotIn(PREFIX + "/lease.json", self.objects())

    def wait_stopped(self, p):
        deadline = time.time() + 60
        while time.time() < deadline:
            if process_state(p.pid) in ("T", "t"):
                return
            if p.poll() is not None:
                self.fail("the apply ran to the end instead of pausing: %r" % (p.communicate(),))
            time.sleep(0.02)
        self.fail("the apply did not pause")

    def test_write_that_lost_its_precondition_is_refused(self):
        self.write({"a": job_yaml("a")})
        e = self.fake.env()
        e["VX_TEST_PAUSE"] = "before-send"
        p = subprocess.Popen([VX_BIN, "apply", self.repo.dir, "-auto-approve"], cwd=self.repo.root,
                             env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, text=True)
        try:
            # Paused after journaling its intent, before the create.
            self.wait_stopped(p)
            gen, data = self.read(PREFIX + "/state.json")
            serial = json.loads(data)["serial"]
            # Someone rewrites the state behind vx's back: same bytes, same serial, new generation.
            self.upload(PREFIX + "/state.json", data, if_gen=gen)
        finally:
            p.send_signal(signal.SIGCONT)
        out, err = p.communicate(timeout=120)
        r = Result(subprocess.CompletedProcess(p.args, p.returncode, out, err)).checked()
        self.assertEqual(r.code, 1, r)
        self.assertIn("writing state: gs://%s/%s/state.json changed since it was read at serial %d "
                      "(another writer replaced it); plan again\n" % (BUCKET, PREFIX, serial), r.err)
        self.assertEqual(self.read(PREFIX + "/state.json")[1], data)   # not overwritten
        self.assertEqual(len(self.live_jobs("a")), 1)
        # The next apply settles the journaled intent by its labels: no second job.
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.live_jobs("a")), 1)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 1)
        self.assertEqual([x["address"] for x in self.state()["records"]], ["job.a"])
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)

    def test_racing_applies_make_each_job_once(self):
        self.write({"a": job_yaml("a"), "b": job_yaml("b")})
        # Slow creates keep the winner's lease held while the others try.
        self.fake.post("/_fake/faults", {"latency_ms": 1500, "methods": ["CreateCustomJob"]})
        procs = [self.repo.start_apply() for _ in range(6)]
        results = [self.repo.finish(p) for p in procs]
        winners = [r for r in results if r.code == 0]
        losers = [r for r in results if r.code != 0]
        self.assertGreaterEqual(len(winners), 1, results)
        self.assertGreaterEqual(len(losers), 1, results)
        for r in losers:
            self.assertEqual(r.code, 1, r)
            self.assertRegex(r.err, "^" + LOCKED.pattern + "$")
        for job in ("a", "b"):
            self.assertEqual(len(self.live_jobs(job)), 1, job)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)
        self.assertNotIn(PREFIX + "/lease.json", self.objects())
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)

    def test_saved_plan_applies_and_is_refused_once_the_bucket_moved(self):
        planfile = self.tmp + "/a.plan"
        self.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.plan("-out", planfile).code, 0)
        r = self.repo.vx("apply", planfile)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.live_jobs("a")), 1)
        # Planned at this serial; another apply moves the bucket's state on.
        self.write({"a": job_yaml("a"), "b": job_yaml("b")})
        self.assertEqual(self.repo.plan("-out", planfile).code, 0)
        then = self.state()["serial"]
        self.assertEqual(self.repo.apply().code, 0)
        now = self.state()["serial"]
        r = self.repo.vx("apply", planfile)
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.err, "vx: apply: %s: the state moved since the plan was made (serial %d "
                         "then, %d now); run vxplan again\n" % (planfile, then, now))
        self.assertEqual(len(self.live_jobs("b")), 1)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)


class GcsStateLoss(GcsMixin, FakeTestCase):
    """state.json deleted while its history is still there: between applies vx refuses to
    start a new state (it would create every job again) until `vx state restore`; during an
    apply, the apply writes it back so what it created is kept."""

    def write(self, jobs):
        self.repo.write(jobs, extra_stack=GCS)

    def delete(self, name):
        code, out = self.storage("DELETE", self.obj_path(name))
        self.assertEqual(code, 204, out)

    def refusal(self, serial):
        h = "gs://%s/%s/history/%010d.json" % (BUCKET, PREFIX, serial)
        s = "gs://%s/%s/state.json" % (BUCKET, PREFIX)
        return ("state %s does not exist, but its history does: the newest is %s (serial %d), so the "
                "state was deleted (a lifecycle rule or a clean-up?); starting a new state would create "
                "every job again. Restore it with: vx state restore (or by hand: gcloud storage cat %s | "
                "jq .state | gcloud storage cp - %s)\n" % (s, h, serial, h, s))

    def test_deleted_state_is_refused_until_restored(self):
        self.write({"a": job_yaml("a"), "b": job_yaml("b")})
        self.assertEqual(self.repo.apply().code, 0)
        before = self.state()
        serial = before["serial"]
        self.delete(PREFIX + "/state.json")
        # A plan would show every job as a create, an apply would make them again: both refuse.
        p = self.repo.plan("-detailed-exitcode")
        self.assertEqual(p.code, 1, p)
        self.assertEqual(p.err, "vx: " + self.refusal(serial))
        r = self.repo.apply()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.err, "vx: " + self.refusal(serial))
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)
        self.assertNotIn(PREFIX + "/state.json", self.objects())
        self.assertNotIn(PREFIX + "/lease.json", self.objects())
        # A serial that was never written is not made up.
        r = self.repo.vx("state", "restore", "-serial", "99", "-C", self.repo.dir)
        self.assertEqual((r.code, r.out, r.err), (1, "", "vx: state restore: gs://%s/%s/history/0000000099.json "
                                                  "does not exist\n" % (BUCKET, PREFIX)))
        r = self.repo.vx("state", "restore", "-C", self.repo.dir)
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertEqual(r.out, "gs://%s/%s/state.json restored from gs://%s/%s/history/%010d.json: serial %d, "
                         "lineage %s, 2 records\n" % (BUCKET, PREFIX, BUCKET, PREFIX, serial, serial,
                                                      before["lineage"]))
        self.assertEqual(self.state(), before)
        self.assertNotIn(PREFIX + "/lease.json", self.objects())
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)
        r = self.repo.vx("state", "restore", "-C", self.repo.dir)
        self.assertEqual((r.code, r.out, r.err), (1, "", "vx: state restore: gs://%s/%s/state.json exists "
                                                  "(serial %d); there is nothing to restore\n"
                                                  % (BUCKET, PREFIX, serial)))
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        for job in ("a", "b"):
            self.assertEqual(len(self.live_jobs(job)), 1, job)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)

    def test_restore_of_an_older_serial(self):
        self.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply().code, 0)
        one = self.state()
        self.write({"a": job_yaml("a"), "b": job_yaml("b")})
        self.assertEqual(self.repo.apply().code, 0)
        self.delete(PREFIX + "/state.json")
        r = self.repo.vx("state", "restore", "-serial", str(one["serial"]), "-C", self.repo.dir)
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertEqual(self.state(), one)
        # job.b is not in that state, but its job carries the state's lineage: adopted, not made again.
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.live_jobs("b")), 1)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)

    def test_state_moved_back_is_refused(self):
        self.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply().code, 0)
        one = self.state()
        self.write({"a": job_yaml("a"), "b": job_yaml("b")})
        self.assertEqual(self.repo.apply().code, 0)
        newest = self.state()["serial"]
        # An older generation put back over state.json (a restore from object versioning).
        gen, _ = self.read(PREFIX + "/state.json")
        self.upload(PREFIX + "/state.json", json.dumps(one).encode(), if_gen=gen)
        refusal = ("vx: state gs://%s/%s/state.json went back: it holds serial %d, but history/%010d.json of "
                   "the same state exists; an older state forgets the jobs vx started since, and would start "
                   "them again. Put the newest back with: gcloud storage cat gs://%s/%s/history/%010d.json | "
                   "jq .state | gcloud storage cp - gs://%s/%s/state.json (to keep the older state anyway, "
                   "delete the history objects after serial %d)\n"
                   % (BUCKET, PREFIX, one["serial"], one["serial"] + 1, BUCKET, PREFIX, newest, BUCKET, PREFIX,
                      one["serial"]))
        p = self.repo.plan("-detailed-exitcode")
        self.assertEqual((p.code, p.out, p.err), (1, "", refusal))
        r = self.repo.apply()
        self.assertEqual((r.code, r.err), (1, refusal))
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)

    def test_state_deleted_during_an_apply_is_written_back(self):
        self.write({"a": job_yaml("a"), "b": job_yaml("b"), "c": job_yaml("c")})
        self.fake.post("/_fake/objects/delete-after", {"rpc": "CreateCustomJob", "count": 1, "bucket": BUCKET,
                                                       "name": PREFIX + "/state.json"})
        r = self.repo.apply()
        armed = self.fake.get("/_fake/objects/delete-after")["armed"]
        self.assertIsNotNone(armed[0]["deleted"], armed)
        self.assertEqual(r.code, 0, r)
        st = self.state()
        # Journaled at serial 1, the first create answered, then the object went.
        self.assertEqual(r.err, "vx: warn: state.json was deleted: generation %s is gone (gs://%s/%s/state.json, "
                         "serial 1); this apply still holds the lease, so it writes the state back to keep what "
                         "it did\n" % (armed[0]["deleted"], BUCKET, PREFIX))
        self.assertEqual(sorted(x["address"] for x in st["records"]), ["job.a", "job.b", "job.c"])
        self.assertEqual(self.repo.plan("-detailed-exitcode").code, 0)
        for job in ("a", "b", "c"):
            self.assertEqual(len(self.live_jobs(job)), 1, job)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 3)
