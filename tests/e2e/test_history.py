"""Issue 11: an audit log a person can read (the state branch's history).

Subjects name what changed, an apply that changes nothing writes nothing,
the lease lives on its own ref, every commit says who did it and from which
CI run and pull request, and a state branch written before all this (the
lease as "lock" in stack.json, with lock commits) keeps working.
"""
import json
import os
import re
import subprocess
import time

from harness import FakeTestCase, job_yaml
from test_kinds import ZONE, reservation_yaml

GH_PR = {"GITHUB_ACTOR": "alice", "GITHUB_EVENT_NAME": "pull_request",
         "GITHUB_REF": "refs/pull/7/merge", "GITHUB_SERVER_URL": "https://github.com",
         "GITHUB_REPOSITORY": "acme/train", "GITHUB_RUN_ID": "1001"}
GH_MERGE = {"GITHUB_ACTOR": "bob", "GITHUB_EVENT_NAME": "push", "GITHUB_REF": "refs/heads/main",
            "GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "acme/train",
            "GITHUB_RUN_ID": "1002"}
ACTOR_WARNING = ("vx: warning: ignoring %s: an actor is at most 100 printable characters "
                 "without spaces\n")
COMMIT_TIME = re.compile(r"^  (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)  ", re.M)


class History(FakeTestCase):

    def subjects(self):
        return self.repo.git("log", "--format=%s", "vx/state/e2e").splitlines()

    def trailers(self, rev="vx/state/e2e"):
        msg = self.repo.git("log", "-1", "--format=%B", rev).strip()
        return msg.split("\n\n")[-1].splitlines()

    def vx_log(self, addr):
        r = self.repo.vx("log", addr, "-C", self.repo.dir)
        self.assertEqual((r.code, r.err), (0, ""), r)
        return r.out

    def run_of(self, name):
        return json.loads(self.repo.git("show", "vx/state/e2e:jobs/%s.json" % name))["current"]

    def test_five_applies_two_of_them_no_ops(self):
        """One commit per change-making step, subjects naming what changed, no lease commits."""
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b"), "pool": reservation_yaml(count=2)})
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.repo.apply().code, 0)                      # nothing to do
        self.repo.write({"a": job_yaml("a"), "c": job_yaml("c"), "pool": reservation_yaml(count=3)})
        self.assertEqual(self.repo.apply().code, 0)
        tip = self.repo.git("rev-parse", "vx/state/e2e").strip()
        self.assertEqual(self.repo.apply().code, 0)                      # nothing to do
        self.assertEqual(self.repo.git("rev-parse", "vx/state/e2e").strip(), tip)
        self.repo.write({"a": job_yaml("a", epochs=5), "c": job_yaml("c"),
                         "pool": reservation_yaml(count=3)})
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.subjects(), [
            "vx apply: + job.a",
            "vx apply: intent ~ job.a",
            "vx apply: - job.a",
            "vx apply: + job.c",
            "vx apply: intent + job.c",
            "vx apply: ~ reservation.pool (2 \u2192 3)",
            "vx apply: - job.b",
            "vx apply: + job.a, + job.b",
            "vx apply: intent + job.a, + job.b",
            "vx apply: + reservation.pool",
            "vx apply: intent + reservation.pool",
        ])
        self.assertEqual(self.repo.git("for-each-ref", "--format=%(refname)", "refs/vx/lease"),
                         "refs/vx/lease/e2e\n")
        # Five applies, each taking and giving back the lease there (a commit each).
        lease = [m.strip().split("\n")[0] for m in self.repo.lease_log() if m.strip()]
        self.assertEqual(len(lease), 10, lease)
        self.assertEqual(len([m for m in lease if m.startswith("vx unlock: released ")]), 5)
        # What the fake holds: a (replaced), c and the pool of 3; b cancelled.
        live = {j["displayName"]: j["state"] for j in self.live_jobs()
                if j["state"] not in ("JOB_STATE_CANCELLED", "JOB_STATE_CANCELLING")}
        self.assertEqual(sorted(live), ["a", "c"])

    def test_saved_plan_survives_a_no_op_apply(self):
        """An apply that changes nothing moves neither the branch nor the serial, so a plan
        saved before it still applies."""
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply().code, 0)
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")})
        p = os.path.join(self.tmp, "b.vxplan")
        self.assertEqual(self.repo.plan("-out", p).code, 0)
        tip = self.repo.git("rev-parse", "vx/state/e2e").strip()
        r = self.repo.apply("-target", "job.a")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.out.splitlines()[-1], "No changes. The cloud matches the declaration.")
        self.assertEqual(self.repo.git("rev-parse", "vx/state/e2e").strip(), tip)
        r = self.repo.vx("apply", p)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(sorted(j["displayName"] for j in self.live_jobs()), ["a", "b"])

    def test_subject_of_many_changes_is_cut(self):
        self.repo.write({"job-number-%02d" % i: job_yaml("job-number-%02d" % i) for i in range(6)})
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.subjects()[0],
                         "vx apply: + job.job-number-00, + job.job-number-01, + job.job-number-02 "
                         "and 3 more")
        body = self.repo.git("log", "-1", "--format=%b", "vx/state/e2e")
        self.assertEqual(len([l for l in body.splitlines() if l.startswith("+ job.")]), 6)

    def test_refresh_subject_names_the_run(self):
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(600)   # the fake's job runs and succeeds
        self.fake.jobs()
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.subjects()[0], "vx refresh: job.a queued \u2192 running")

    def test_saved_plan_carries_the_planner_and_pull_request(self):
        """Planned by alice in PR 7, applied by bob after the merge."""
        self.repo.write({"a": job_yaml("a")})
        p = os.path.join(self.tmp, "pr7.vxplan")
        r = self.repo.plan("-out", p, env=GH_PR)
        self.assertEqual((r.code, r.err), (0, ""), r)
        with open(p) as f:
            self.assertEqual(json.load(f)["planned_by"],
                             {"actor": "alice", "pull_request": 7,
                              "pull_request_url": "https://github.com/acme/train/pull/7"})
        r = self.repo.vx("apply", p, env=GH_MERGE)
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertEqual(self.trailers(), [
            "Vx-Config-Commit: %s" % self.repo.git("rev-parse", "HEAD").strip(),
            "Vx-Actor: bob",
            "Vx-Pull-Request: https://github.com/acme/train/pull/7",
            "Vx-CI-Run: https://github.com/acme/train/actions/runs/1002",
            "Vx-Serial: 2"])
        run = self.run_of("a")
        self.assertEqual((run["launchedBy"], run["plannedBy"], run["pullRequest"],
                          run["pullRequestUrl"]),
                         ("bob", "alice", 7, "https://github.com/acme/train/pull/7"))
        self.assertEqual(COMMIT_TIME.sub("  T  ", self.vx_log("job.a")),
                         "job.a\n  T  create    %s  attempt 1  run 1  by bob (PR #7 by alice)  "
                         "config %s  cost $0.00  queued\n" % (run["resource"], run["configCommit"][:12]))

    def test_actor_rows_in_vx_log(self):
        """VX_ACTOR beats the CI's; a saved plan by another, without a PR; the same person."""
        self.repo.write({"a": job_yaml("a")})
        r = self.repo.apply(env={"VX_ACTOR": "carol", "GITHUB_ACTOR": "ci-bot"})
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertIn("Vx-Actor: carol", self.trailers())
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")})
        p = os.path.join(self.tmp, "b.vxplan")
        self.assertEqual(self.repo.plan("-out", p, env={"GITLAB_USER_LOGIN": "alice"}).code, 0)
        r = self.repo.vx("apply", p, env={"GITLAB_USER_LOGIN": "bob",
                                           "CI_JOB_URL": "https://gitlab.example.com/t/-/jobs/5"})
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertEqual(self.trailers()[1:], ["Vx-Actor: bob",
                                               "Vx-CI-Run: https://gitlab.example.com/t/-/jobs/5",
                                               "Vx-Serial: 4"])
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b"), "c": job_yaml("c")})
        p = os.path.join(self.tmp, "c.vxplan")
        self.assertEqual(self.repo.plan("-out", p, env={"VX_ACTOR": "dave"}).code, 0)
        self.assertEqual(self.repo.vx("apply", p, env={"VX_ACTOR": "dave"}).code, 0)
        rows = {}
        for name in ("a", "b", "c"):
            out = self.vx_log("job." + name)
            rows[name] = re.search(r"  by (.*?)  config ", out).group(1)
        self.assertEqual(rows, {"a": "carol", "b": "bob (planned by alice)", "c": "dave"})

    def test_gitlab_merge_request(self):
        self.repo.write({"a": job_yaml("a")})
        env = {"GITLAB_USER_LOGIN": "erin", "CI_MERGE_REQUEST_IID": "12",
               "CI_MERGE_REQUEST_PROJECT_URL": "https://gitlab.example.com/ml/train",
               "CI_JOB_URL": "https://gitlab.example.com/ml/train/-/jobs/77"}
        r = self.repo.apply(env=env)
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertEqual(self.trailers()[1:], [
            "Vx-Actor: erin",
            "Vx-Pull-Request: https://gitlab.example.com/ml/train/-/merge_requests/12",
            "Vx-CI-Run: https://gitlab.example.com/ml/train/-/jobs/77", "Vx-Serial: 2"])
        self.assertIn("  by erin (PR #12)  ", self.vx_log("job.a"))

    def test_invalid_env_values_are_ignored_with_a_warning(self):
        self.repo.write({"a": job_yaml("a")})
        r = self.repo.apply(env={"VX_ACTOR": "mallory\nVx-Actor: root", "GITHUB_TRIGGERING_ACTOR": "x" * 101,
                                 "GITHUB_ACTOR": "frank", "GITHUB_EVENT_NAME": "pull_request",
                                 "GITHUB_REF": "refs/pull/7x/merge",
                                 "GITHUB_SERVER_URL": "javascript:alert(1)",
                                 "GITHUB_REPOSITORY": "acme/train", "GITHUB_RUN_ID": "1003"})
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.err, ACTOR_WARNING % "VX_ACTOR" + ACTOR_WARNING % "GITHUB_TRIGGERING_ACTOR"
                         + "vx: warning: ignoring GITHUB_SERVER_URL: not an http(s) URL of at most "
                           "512 printable characters without spaces\n"
                         "vx: warning: ignoring GITHUB_REF: not refs/pull/N/merge or refs/pull/N/head\n")
        self.assertEqual(self.trailers()[1:], ["Vx-Actor: frank", "Vx-Serial: 2"])
        self.assertEqual(self.run_of("a")["launchedBy"], "frank")
        self.assertNotIn("mallory", self.repo.git("log", "--format=%B", "vx/state/e2e"))

    # ---- a state branch written before the lease ref ---------------------------

    def legacy_lock(self, expires_in):
        """Makes the state branch look as the binary before refs/vx/lease left it while an
        apply of another runner holds the lease: "lock" in stack.json, set by a lock commit.
        Returns the lock."""
        now = time.time()
        fmt = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
        lock = {"id": "0123456789abcdef0123456789abcdef", "user": "olduser", "host": "other-host",
                "pid": 4242, "operation": "apply", "startedAt": fmt(now - 60),
                "expiresAt": fmt(now + expires_in)}
        hdr = json.loads(self.repo.git("show", "vx/state/e2e:stack.json"))
        hdr["lock"] = lock
        text = json.dumps(hdr, indent=2) + "\n"
        env = dict(self.fake.env(), GIT_INDEX_FILE=os.path.join(self.tmp, "legacy-index"))
        git = lambda *a, **kw: subprocess.run(["git", "-C", self.repo.root] + list(a), check=True,
                                              capture_output=True, text=True, env=env, **kw).stdout.strip()
        git("read-tree", "vx/state/e2e")
        blob = git("hash-object", "-w", "--stdin", input=text)
        git("update-index", "--cacheinfo", "100644,%s,stack.json" % blob)
        tree = git("write-tree")
        commit = git("commit-tree", tree, "-p", "vx/state/e2e", "-m",
                     "vx lock: apply by olduser@other-host (pid 4242)")
        git("update-ref", "refs/heads/vx/state/e2e", commit)
        return lock

    def old_state(self):
        """A state branch as the old binary writes it, if one was built (VX_OLD_BIN, or
        build-old/vx from `make BUILD=build-old` of commit 59897c4); else by this binary
        with the lock commits added by hand. Returns whether the old binary made it."""
        old = os.environ.get("VX_OLD_BIN", os.path.join(os.path.dirname(os.path.dirname(
            os.path.dirname(os.path.abspath(__file__)))), "build-old", "vx"))
        self.repo.write({"a": job_yaml("a")})
        if os.access(old, os.X_OK):
            cp = subprocess.run([old, "apply", self.repo.dir, "-auto-approve"], cwd=self.repo.root,
                                capture_output=True, text=True, env=self.fake.env(), timeout=120)
            self.assertEqual(cp.returncode, 0, cp.stderr)
            self.assertIn("vx lock: ", self.repo.git("log", "--format=%s", "vx/state/e2e"))
            return True
        self.assertEqual(self.repo.apply().code, 0)
        self.repo.git("update-ref", "-d", "refs/vx/lease/e2e")   # the old binary had none
        return False

    def test_old_state_branch_keeps_working(self):
        self.old_state()
        before = self.repo.git("log", "--format=%H %s", "vx/state/e2e").splitlines()
        lock = self.legacy_lock(3600)
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")})
        # The old-style lease of a runner still at work is honoured.
        r = self.repo.apply()
        self.assertEqual(r.code, 1, r)
        # The expiry's time of day alone when it is the same day, else its date too (state/lock.c).
        until = lock["expiresAt"]
        if lock["startedAt"][:11] == until[:11]:
            until = until[11:]
        self.assertEqual(r.err, "vx: state is locked by olduser@other-host (pid 4242, apply) since "
                         "%s, expires %s; lock id %s; wait with -lock-timeout or clear it with: "
                         "vx unlock %s %s\n" % (lock["startedAt"], until,
                                                lock["id"], lock["id"], self.repo.dir))
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 1)
        # vx unlock clears it (on the lease ref: no commit on the state branch).
        tip = self.repo.git("rev-parse", "vx/state/e2e").strip()
        r = self.repo.vx("unlock", lock["id"], self.repo.dir)
        self.assertEqual((r.code, r.out), (0, "Lock %s cleared.\n" % lock["id"]), r)
        self.assertEqual(self.repo.git("rev-parse", "vx/state/e2e").strip(), tip)
        # The next apply works; its write drops the old field.
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)
        self.assertIsNone(json.loads(self.repo.git("show", "vx/state/e2e:stack.json"))["lock"])
        # Nothing of the old history is lost: every old commit is still there, and vx log reads it.
        after = self.repo.git("log", "--format=%H %s", "vx/state/e2e").splitlines()
        self.assertEqual(after[-len(before):], before)
        self.assertEqual(after[len(after) - len(before) - 1].split(" ", 1)[1],
                         "vx lock: apply by olduser@other-host (pid 4242)")
        self.assertIn("  create    ", self.vx_log("job.a"))
        self.assertIn("  create    ", self.vx_log("job.b"))

    def test_old_expired_lock_is_taken_over(self):
        self.old_state()
        self.legacy_lock(-60)
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")})
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertIsNone(json.loads(self.repo.git("show", "vx/state/e2e:stack.json"))["lock"])
        self.assertEqual(json.loads(self.repo.git("show", "refs/vx/lease/e2e:lease.json")), None)
