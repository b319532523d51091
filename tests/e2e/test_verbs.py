"""vx show PLANFILE, vx state rm, vx state mv: the verbs Terraform users reach
for in their first week, against the fake."""
import json
import os
import re
import threading
import unittest

from harness import FakeTestCase, job_yaml

ACTOR = "%s@%s" % (os.environ.get("USER") or "root", os.uname().nodename)
SAVED = "\nSaved the plan to {f}. Apply exactly it with: vxapply {f}\n"


class ShowTest(FakeTestCase):
    def saved(self, *args):
        """Saves a plan; what vxplan printed, without its 'Saved the plan' line."""
        f = os.path.join(self.tmp, "p.vxplan")
        r = self.repo.plan("-out", f, *args)
        self.assertEqual(r.code, 0, r)
        out = r.out
        if "-format" not in args:
            self.assertTrue(out.endswith(SAVED.format(f=f)), r)
            out = out[:-len(SAVED.format(f=f))]
        return f, out

    def test_show_prints_the_plan_as_vxplan_did_without_the_cloud(self):
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")})
        f, printed = self.saved()
        before = self.fake.requests()["total"]
        # Credentials and endpoints that lead nowhere: show must not need them.
        env = {"GOOGLE_APPLICATION_CREDENTIALS": os.path.join(self.tmp, "none.json"),
               "CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM": "http://127.0.0.1:9/v1/"}
        r = self.repo.vx("show", f, env=env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.out, printed + "\nThis plan still applies to the state (serial 0) and the "
                         "declaration: vxapply %s\n" % f)
        self.assertEqual(r.err, "")
        self.assertEqual(self.fake.requests()["total"], before)

    def test_show_json_and_markdown_as_printed(self):
        self.repo.write({"a": job_yaml("a")})
        for fmt in ("json", "markdown"):
            f, printed = self.saved("-format", fmt)
            r = self.repo.vx("show", "-format", fmt, f)
            self.assertEqual((r.code, r.err), (0, ""), r)
            self.assertEqual(r.out, printed)
        # The saved-only parts (who planned, the state's salt) stay out of the json shown.
        f, printed = self.saved("-format", "json")
        with open(f) as fh:
            saved = json.load(fh)
        self.assertIn("rendered", saved)
        self.assertNotIn("rendered", json.loads(printed))

    def test_show_says_a_plan_is_stale(self):
        self.repo.write({"a": job_yaml("a")})
        f, printed = self.saved()
        self.assertEqual(self.repo.apply().code, 0)
        r = self.repo.vx("show", f)
        self.assertEqual(r.code, 3, r)
        self.assertEqual(r.out, printed)
        self.assertEqual(r.err, "vx: this plan is stale: the state moved since the plan was made "
                         "(serial 0 then, 2 now); run vxplan again\n")
        f, printed = self.saved()
        self.repo.write({"a": job_yaml("a", epochs=4)})
        r = self.repo.vx("show", f)
        self.assertEqual(r.code, 3, r)
        self.assertEqual(r.err, "vx: this plan is stale: the declaration changed since the plan was "
                         "made; run vxplan again\n")

    def test_show_refuses_what_is_no_plan_and_cleans_the_text(self):
        junk = os.path.join(self.tmp, "junk")
        with open(junk, "w") as fh:
            fh.write("not json")
        r = self.repo.vx("show", junk)
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.out, "")
        self.assertEqual(r.err, "vx: show: %s: saved plan: not a JSON object\n"
                         "vx: vx show takes a plan saved by 'vxplan -out FILE'\n" % junk)
        self.repo.write({"a": job_yaml("a")})
        f, _ = self.saved()
        with open(f) as fh:
            saved = json.load(fh)
        saved["rendered"]["human"] = "line \x1b]0;owned\x07one\nline two\n"
        with open(f, "w") as fh:
            json.dump(saved, fh)
        r = self.repo.vx("show", f)
        self.assertEqual(r.code, 0, r)
        self.assertTrue(r.out.startswith("line ?]0;owned?one\nline two\n"), r)


class StateRmTest(FakeTestCase):
    def section(self, out, title):
        """The lines of a plan's section (its title line to the next empty line)."""
        lines = out.splitlines()
        start = lines.index(title) + 1
        end = lines.index("", start)
        return lines[start:end]

    def test_rm_leaves_the_job_running_and_the_plan_creates_it_again(self):
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")})
        self.assertEqual(self.repo.apply().code, 0)
        [a] = self.live_jobs("a")
        r = self.repo.vx("state", "rm", "job.a", "-dry-run", "-C", self.repo.dir)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.out, "job.a: would remove from the state; its job %s (queued) is left as "
                         "it is, and no plan adopts or cancels it again\n" % a["name"])
        log_before = self.repo.state_log()
        r = self.repo.vx("state", "rm", "job.a", "-reason", "hand it to the eval team",
                         "-C", self.repo.dir, env={"VX_ACTOR": "alice"})
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertEqual(r.out, "job.a: removed from the state; its job %s (queued) is left as "
                         "it is, and no plan adopts or cancels it again\n" % a["name"])
        self.assertEqual(len(self.repo.state_log()), len(log_before) + 1)
        msg = self.repo.state_log()[0].strip().splitlines()
        self.assertEqual(msg[:5], ["vx state rm: job.a", "", "- job.a state rm %s" % a["name"], "",
                                   "Reason: hand it to the eval team"])
        self.assertIn("Vx-Actor: alice", msg)
        r = self.repo.vx("state", "list", self.repo.dir)
        self.assertEqual([l.split()[0] for l in r.out.splitlines()], ["job.b"])
        # Still declared: a create, never an adopt or a cancel of the released job; but that
        # job still runs, so the plan says so, and an apply refuses to run both.
        error = ("  job.a: the job released from the state of the same address (vx state rm) is still "
                 "active (%s, queued); creating job.a again would run both. Cancel it ('gcloud ai "
                 "custom-jobs cancel %s') or wait for it to end; to create another beside it, re-run "
                 "with -allow-released" % (a["name"], a["name"]))
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(self.block(r.out), ["+   job.a create", "g2-standard-4 ×1, 1×L4, STANDARD in us-central1",
                                             "new job"])
        self.assertEqual(self.section(r.out, "Errors (the plan cannot be applied):"), [error])
        r = self.repo.apply()
        self.assertEqual((r.code, r.err), (1, "vx: apply: the plan has errors; nothing was changed\n"))
        self.assertEqual(self.section(r.out, "Errors (the plan cannot be applied):"), [error])
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), 2)
        # -allow-released: a warning, and the saved plan applies with it.
        plan = os.path.join(self.tmp, "plan.json")
        r = self.repo.plan("-allow-released", "-out", plan)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.section(r.out, "Warnings:"), [
            "  job.a: the job released from the state of the same address is still active (%s, queued); "
            "this plan creates another beside it (-allow-released)" % a["name"]])
        with open(plan) as f:
            self.assertIs(json.load(f)["allow_released"], True)
        r = self.repo.vx("apply", plan)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(sorted(j["state"] for j in self.live_jobs("a")),
                         ["JOB_STATE_QUEUED", "JOB_STATE_QUEUED"])
        # No longer declared: the released job is not cancelled as untracked.
        self.repo.write({"b": job_yaml("b")})
        r = self.repo.plan()
        self.assertNotIn(a["name"], r.out)
        self.assertEqual(self.fake.rpc_count("CancelCustomJob"), 0)
        r = self.repo.vx("log", "job.a", self.repo.dir)
        self.assertEqual([l[22:] for l in r.out.splitlines() if "state rm" in l],
                         ["  state rm  by alice: hand it to the eval team"], r.out)

    def test_rm_refuses_an_address_not_in_the_state(self):
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply().code, 0)
        r = self.repo.vx("state", "rm", "job.nope", self.repo.dir)
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.err, "vx: state rm: job.nope is not in the state of stack e2e "
                         "('vx state list' lists what is)\n")


class StateMvTest(FakeTestCase):
    def test_mv_after_a_rename_plans_nothing(self):
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply().code, 0)
        [a] = self.live_jobs("a")
        # Renamed, nothing else: the same spec under another name.
        self.repo.write({"b": job_yaml("a").replace("\nname: a\n", "\nname: b\n")})
        r = self.repo.vx("state", "mv", "job.a", "job.b", self.repo.dir, "-reason", "renamed")
        self.assertEqual((r.code, r.err), (0, ""), r)
        self.assertEqual(r.out, "job.a -> job.b: moved the record with its 1 runs; the live job %s "
                         "keeps its labels and is followed as before\n" % a["name"])
        before = dict(self.fake.requests()["by_rpc"])
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 0, r)
        self.assertIn("Plan: no changes. 1 unchanged.", r.out.splitlines())
        self.assertNotIn("job.a", r.out)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        after = self.fake.requests()["by_rpc"]
        self.assertEqual(after.get("CreateCustomJob", 0), before.get("CreateCustomJob", 0))
        self.assertEqual(after.get("CancelCustomJob", 0), 0)
        self.assertEqual(len(self.live_jobs()), 1)
        r = self.repo.vx("state", "show", "job.b", self.repo.dir)
        self.assertEqual(json.loads(r.out)["current"]["resource"], a["name"])
        r = self.repo.vx("log", "job.a", self.repo.dir)
        self.assertEqual([l[22:] for l in r.out.splitlines() if "state mv" in l],
                         ["  state mv  to job.b by %s: renamed" % ACTOR], r.out)
        # Headed as moved, not "forgotten": the mv row carries the commit's real time.
        config = self.repo.git("rev-parse", "HEAD~1").strip()[:12]
        self.assertEqual(re.sub(r"^  \S+  state mv", "  <commit time>  state mv", r.out, flags=re.M), (
            "job.a  (moved to job.b)\n"
            "  2026-01-01T00:00:00Z  create    %s  attempt 1  run 1  by %s  config %s  cost $0.00  queued\n"
            "  <commit time>  state mv  to job.b by %s: renamed\n") % (a["name"], ACTOR, config, ACTOR))
        r = self.repo.vx("log", "job.b", self.repo.dir)
        self.assertEqual([l[22:] for l in r.out.splitlines() if "state mv" in l],
                         ["  state mv  from job.a by %s: renamed" % ACTOR], r.out)

    def test_a_moved_run_is_not_adopted_by_its_old_address(self):
        # The moved run still carries vx-job=a: a plan that declares job.a again
        # must start a new job for it, not take job.b's run.
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply().code, 0)
        [a] = self.live_jobs("a")
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("a").replace("\nname: a\n", "\nname: b\n")})
        self.assertEqual(self.repo.vx("state", "mv", "job.a", "job.b", self.repo.dir).code, 0)
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.block(r.out, "job.a")[0], "+   job.a create")
        self.assertNotIn("adopt", r.out)

    def test_mv_refusals(self):
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")})
        self.assertEqual(self.repo.apply().code, 0)
        cases = [
            (("job.a", "job.b"), "vx: state mv: job.b is already in the state: remove it first "
             "('vx state rm job.b') or choose another name\n"),
            (("job.x", "job.y"), "vx: state mv: job.x is not in the state ('vx state list' lists what is)\n"),
            (("job.a", "reservation.a"), "vx: state mv: job.a, reservation.a: state mv moves jobs; a "
             "reservation's or quota preference's NAME is its name in Google Cloud, which cannot be "
             "renamed\n"),
            (("job.a", "job.s[lr=1]"), "vx: state mv: job.a is a job and job.s[lr=1] is a sweep's run: a "
             "sweep's run is named by its matrix values and labelled so, and a job is not; move a run "
             "to another run of a sweep, a job to a job\n"),
        ]
        for (old, new), want in cases:
            r = self.repo.vx("state", "mv", old, new, self.repo.dir)
            self.assertEqual((r.code, r.err), (1, want), r)


class LogsTest(FakeTestCase):
    def lines(self, out):
        """The rows without their times: SEVERITY  TEXT."""
        return [l[l.index("Z  ") + 3:] for l in out.splitlines()]

    def test_logs_prints_a_jobs_lines_over_pages_cleaned(self):
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")})
        self.assertEqual(self.repo.apply().code, 0)
        [a] = self.live_jobs("a")
        jid = a["name"].rsplit("/", 1)[1]
        self.fake.advance(10)  # after the job's own lines
        extra = [{"textPayload": "step %d" % i} for i in range(1200)]
        extra.append({"severity": "ERROR", "jsonPayload": {
            "message": "\x1b[31mTraceback\x1b[0m\r\n  boom \x1b]0;owned\x07\x07x"}})
        self.fake.post("/_fake/logs", {"job_id": jid, "entries": extra})
        r = self.repo.vx("logs", "job.a", self.repo.dir)
        self.assertEqual((r.code, r.err), (0, ""), r)
        want = ["INFO      line %d of job %s" % (i, jid) for i in (1, 2, 3)]
        want += ["INFO      step %d" % i for i in range(1200)]
        want += ["ERROR     Traceback", "ERROR       boom ?x"]
        self.assertEqual(self.lines(r.out), want)
        self.assertEqual(self.fake.rpc_count("logging.entries.list"), 2)  # 1000 a page

    def test_logs_of_a_job_without_a_run(self):
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply("-target", "job.a").code, 0)
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")})
        r = self.repo.vx("logs", "job.b", "-C", self.repo.dir)
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.err, "vx: logs: job.b has no run in the state yet: vxapply starts it, then vx "
                         "logs job.b shows its lines ('vx state list' lists the addresses that have runs; "
                         "a sweep's lines are its runs', job.NAME[k=v])\n")

    def test_logs_without_an_address_says_so(self):
        # It printed only the usage.
        self.repo.write({"a": job_yaml("a"), "b": job_yaml("b")})
        r = self.repo.vx("logs", self.repo.dir)
        self.assertEqual((r.code, r.out), (64, ""), r)
        self.assertEqual(r.err, "vx: logs: which job? An address is required: vx logs ADDR [DIR]; the jobs of "
                         "%s: job.a, job.b\n" % self.repo.dir)
        empty = os.path.join(self.tmp, "empty")
        os.makedirs(empty)
        r = self.repo.vx("logs", "-C", empty)
        self.assertEqual((r.code, r.out), (64, ""), r)
        self.assertEqual(r.err, "vx: logs: which job? An address is required: vx logs ADDR [DIR], ADDR a job.NAME "
                         "or a sweep's run job.NAME[k=v] ('vx logs -help' says more)\n")

    def test_logs_of_a_sweep_a_slice_or_an_undeclared_job(self):
        # Each said "no run in the state yet", as if it were a job that had not started.
        from test_sweep import sweep
        self.repo.write({"a": job_yaml("a"), "s": sweep()})
        self.assertEqual(self.repo.apply("-target", "job.a").code, 0)
        r = self.repo.vx("logs", "job.lr-sweep", self.repo.dir)
        self.assertEqual((r.code, r.out), (1, ""), r)
        self.assertEqual(r.err, "vx: logs: job.lr-sweep is a sweep: vx logs reads the lines of one of its 12 runs, "
                         "job.lr-sweep[lr=...,batch=...,seed=...]: job.lr-sweep[lr=1e-4,batch=32,seed=1], "
                         "job.lr-sweep[lr=1e-4,batch=32,seed=2], job.lr-sweep[lr=1e-4,batch=64,seed=1], "
                         "job.lr-sweep[lr=1e-4,batch=64,seed=2], ...\n")
        r = self.repo.vx("logs", "job.lr-sweep[lr=1e-3,seed=2]", self.repo.dir)
        self.assertEqual((r.code, r.out), (1, ""), r)
        self.assertEqual(r.err, "vx: logs: job.lr-sweep[lr=1e-3,seed=2] is a slice of a sweep: vx logs reads the "
                         "lines of one of its 1 run, job.lr-sweep[lr=...,batch=...,seed=...]: "
                         "job.lr-sweep[lr=1e-3,batch=32,seed=2]\n")
        r = self.repo.vx("logs", "job.aa", self.repo.dir)
        self.assertEqual((r.code, r.out), (1, ""), r)
        self.assertEqual(r.err, 'vx: logs: job.aa: no such job is declared in the stack (did you mean "job.a"?)\n')
        r = self.repo.vx("logs", "job.zzzzzzzz", self.repo.dir)
        self.assertEqual(r.err, "vx: logs: job.zzzzzzzz: no such job is declared in the stack\n")
        # A declared run that has not started keeps its own message.
        r = self.repo.vx("logs", "job.lr-sweep[lr=1e-4,batch=32,seed=1]", self.repo.dir)
        self.assertTrue(r.err.startswith("vx: logs: job.lr-sweep[lr=1e-4,batch=32,seed=1] has no run in the "
                                         "state yet: "), r.err)

    def test_logs_follow_until_the_job_ends(self):
        import subprocess
        from harness import VX_BIN
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply().code, 0)
        [a] = self.live_jobs("a")
        jid = a["name"].rsplit("/", 1)[1]
        env = self.fake.env()
        env["VX_WAIT_POLL_MS"] = "50"
        p = subprocess.Popen([VX_BIN, "logs", "job.a", self.repo.dir, "-f"], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        # A follow that never ends fails the test rather than hanging it.
        watchdog = threading.Timer(90, p.kill)
        watchdog.start()
        self.addCleanup(watchdog.cancel)
        got = [p.stdout.readline() for _ in range(3)]
        self.assertEqual(self.lines("".join(got)), ["INFO      line %d of job %s" % (i, jid) for i in (1, 2, 3)])
        self.fake.advance(10)  # lines come later than the job's first ones
        self.fake.post("/_fake/logs", {"job_id": jid, "entries": [{"textPayload": "epoch 1"}]})
        self.assertEqual(self.lines(p.stdout.readline()), ["INFO      epoch 1"])
        self.fake.advance(1)
        self.fake.post("/_fake/logs", {"job_id": jid, "entries": [{"textPayload": "epoch 2"}]})
        self.assertEqual(self.lines(p.stdout.readline()), ["INFO      epoch 2"])
        self.fake.cancel_behind_vx(a["name"])
        self.fake.advance(600)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(out, "")
        self.assertEqual(err, "vx: logs: %s cancelled\n" % a["name"])


if __name__ == "__main__":
    unittest.main()
