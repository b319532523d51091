"""End to end: vx report and vx log's costs (docs/report.md) against the fake Google Cloud.

A history is built at known virtual times: a SPOT job preempted and resubmitted on its
STANDARD rung, where it succeeds; another job cancelled by its removal. The report's
figures are compared exactly with a table computed by hand from the price table below.
"""
import json
import os
import subprocess
import sys
import unittest

from harness import FakeTestCase

HERE = os.path.dirname(os.path.abspath(__file__))

# USD per hour in us-central1: the machine per replica, the GPU per GPU (an N1 machine type
# does not bundle its GPUs, so both count).
PRICES = ('{"source": "e2e table", "date": "2026-01-01", "currency": "USD", "regions": {"us-central1": '
          '{"machines": {"n1-standard-4": {"on_demand": 1.0, "spot": 0.4}}, '
          '"accelerators": {"NVIDIA_TESLA_T4": {"on_demand": 0.5, "spot": 0.2}}}}}')

JOB_A = """---
kind: CustomJob
name: a
spec:
  workerPoolSpecs:
    - machineSpec: {machineType: n1-standard-4, acceleratorType: NVIDIA_TESLA_T4, acceleratorCount: 1}
      replicaCount: 2
      containerSpec:
        imageUri: "us-docker.pkg.dev/p/r/trainer:1"
  scheduling: {strategy: SPOT}
  baseOutputDirectory: {outputUriPrefix: "gs://e2e-bucket/a"}
resubmit:
  on: [preempted, stockout]
  maxAttempts: 3
  fallback:
    - scheduling: {strategy: STANDARD}
"""

JOB_B = """---
kind: CustomJob
name: b
spec:
  workerPoolSpecs:
    - machineSpec: {machineType: n1-standard-4, acceleratorType: NVIDIA_TESLA_T4, acceleratorCount: 1}
      replicaCount: 1
      containerSpec:
        imageUri: "us-docker.pkg.dev/p/r/trainer:1"
  scheduling: {strategy: STANDARD}
  baseOutputDirectory: {outputUriPrefix: "gs://e2e-bucket/b"}
"""

NOW = "2026-01-01T02:00:00Z"


class Report(FakeTestCase):

    def setUp(self):
        super().setUp()
        self.prices = os.path.join(self.tmp, "prices.json")
        with open(self.prices, "w") as f:
            f.write(PRICES)
        self.env = {"VX_PRICES": self.prices, "VX_NOW": NOW}

    def apply_ok(self):
        r = self.repo.apply(env={"VX_PRICES": self.prices})
        self.assertEqual(r.code, 0, r)
        return r

    def history(self):
        """Virtual times (seconds after 2026-01-01T00:00:00Z); the fake's timings: QUEUED 5 s,
        PENDING 30 s, then RUNNING 3600 s (a preempted job fails half way, after 1800 s)."""
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "a", "vx-rung": "0"}, "outcome": "preempted"})
        # t=0: a (attempt 1, SPOT, rung 0) and b start; both RUNNING at t=35.
        self.repo.write({"a": JOB_A, "b": JOB_B})
        self.heads = [self.repo.git("rev-parse", "HEAD").strip()[:12]]
        self.apply_ok()
        # t=1900: a was preempted at t=1835; it is resubmitted on rung 1 (STANDARD), RUNNING at
        # t=1935 and SUCCEEDED at t=5535. b is removed from the stack: vx cancels it.
        self.fake.advance(1900)
        self.repo.write({"a": JOB_A})
        self.heads.append(self.repo.git("rev-parse", "HEAD").strip()[:12])
        self.apply_ok()
        # t=6000: an apply sees a succeeded and b cancelled.
        self.fake.advance(4100)
        self.apply_ok()

    def names(self):
        """The fake's jobs, in creation order: a's attempt 1, b, a's attempt 2."""
        jobs = sorted(self.live_jobs(), key=lambda j: (j["createTime"], j["labels"]["vx-job"]))
        return [j["name"] for j in jobs]

    def report(self, *args):
        r = self.repo.vx("report", self.repo.dir, *args, env=self.env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.err, "")
        return r.out

    def test_report_json_and_csv(self):
        self.history()
        a1, b1, a2 = self.names()
        doc = json.loads(self.report("-since", "2025-12-31", "-format", "json"))
        self.assertEqual((doc["version"], doc["generated"], doc["since"], doc["until"], doc["stacks"]),
                         (1, NOW, "2025-12-31T00:00:00Z", NOW, ["e2e"]))
        self.assertEqual((doc["prices"]["source"], doc["prices"]["date"]), ("e2e table", "2026-01-01"))
        # By hand (rate per hour = replicas x machine + GPUs x GPU, at the strategy's rate):
        #   a#1 SPOT  2 x 0.4 + 2 x 0.2 = 1.20/h, RUNNING t=35 .. preempted t=1835: 1800 s -> 0.60
        #   b#1 STANDARD 1 x 1.0 + 1 x 0.5 = 1.50/h, RUNNING t=35 .. cancelled t=1905: 1870 s
        #       -> 1.50 x 1870 / 3600 = 0.779 -> 0.78
        #   a#2 STANDARD 2 x 1.0 + 2 x 0.5 = 3.00/h, RUNNING t=1935 .. succeeded t=5535: 3600 s -> 3.00
        # total 4.38; wasted (ran, did not succeed) 0.60 + 0.78 = 1.38
        cols = ("address", "attempt", "rung", "strategy", "replicas", "accelerator_count", "state", "class",
                "outcome", "created", "started", "ended", "queued_seconds", "running_seconds", "usd",
                "estimate", "resource")
        got = [tuple(run[c] for c in cols) for run in doc["runs"]]
        self.assertEqual(got, [
            ("job.a", 1, 0, "SPOT", 2, 2, "JOB_STATE_FAILED", "preempted", "preempted",
             "2026-01-01T00:00:00Z", "2026-01-01T00:00:35Z", "2026-01-01T00:30:35Z", 35, 1800, 0.60, True, a1),
            ("job.b", 1, 0, "STANDARD", 1, 1, "JOB_STATE_CANCELLED", None, "cancelled",
             "2026-01-01T00:00:00Z", "2026-01-01T00:00:35Z", "2026-01-01T00:31:45Z", 35, 1870, 0.78, True, b1),
            ("job.a", 2, 1, "STANDARD", 2, 2, "JOB_STATE_SUCCEEDED", None, "succeeded",
             "2026-01-01T00:31:40Z", "2026-01-01T00:32:15Z", "2026-01-01T01:32:15Z", 35, 3600, 3.00, True, a2),
        ])
        t = doc["totals"]
        self.assertEqual((t["usd"], t["usd_wasted"]), (4.38, 1.38))
        self.assertEqual(t["by_job"], [
            {"key": "job.a", "usd": 3.60, "usd_wasted": 0.60, "runs": 2, "attempts_by_class": {"preempted": 1}},
            {"key": "job.b", "usd": 0.78, "usd_wasted": 0.78, "runs": 1, "attempts_by_class": {}}])
        # 2026-01-01 is a Thursday: its ISO week starts on Monday 2025-12-29.
        self.assertEqual(t["by_week"], [{"key": "2025-12-29", "usd": 4.38, "usd_wasted": 1.38, "runs": 3}])
        self.assertEqual(t["by_accelerator"], [
            {"key": "NVIDIA_TESLA_T4", "usd": 4.38, "usd_wasted": 1.38, "runs": 3}])
        self.assertEqual(t["by_strategy"], [
            {"key": "STANDARD", "usd": 3.78, "usd_wasted": 0.78, "runs": 2},
            {"key": "SPOT", "usd": 0.60, "usd_wasted": 0.60, "runs": 1}])
        self.assertEqual(doc["reservations"], [])
        # Every queue was the fake's 5 s QUEUED + 30 s PENDING.
        self.assertEqual(doc["waiting"], [
            {"strategy": "SPOT", "region": "us-central1", "runs": 1, "median_seconds": 35, "p90_seconds": 35},
            {"strategy": "STANDARD", "region": "us-central1", "runs": 2, "median_seconds": 35,
             "p90_seconds": 35}])
        self.assertEqual(doc["failures"], [{"class": "preempted", "runs": 1, "messages": [
            {"message": "Resources are insufficient in region: us-central1. Try a different region or use a "
                        "different accelerator.", "runs": 1, "addresses": ["job.a"]}]}])

        # Read as bytes: RFC 4180 ends lines with CRLF, which text mode would hide.
        path = os.path.join(self.tmp, "runs.csv")
        self.assertEqual(self.report("-since", "2025-12-31", "-format", "csv", "-o", path), "")
        with open(path, "rb") as f:
            csv = f.read().decode()
        self.assertEqual(csv, (
            "stack,address,group,attempt,rung,region,strategy,machine_type,accelerator_type,accelerator_count,"
            "replicas,state,class,outcome,created,started,ended,queued_seconds,running_seconds,usd,estimate,"
            "unpriced_reason,resource,message,note\r\n"
            "e2e,job.a,job.a,1,0,us-central1,SPOT,n1-standard-4,NVIDIA_TESLA_T4,2,2,JOB_STATE_FAILED,preempted,"
            "preempted,2026-01-01T00:00:00Z,2026-01-01T00:00:35Z,2026-01-01T00:30:35Z,35,1800,0.6,true,,%s,"
            "Resources are insufficient in region: us-central1. Try a different region or use a different "
            "accelerator.,\r\n"
            "e2e,job.b,job.b,1,0,us-central1,STANDARD,n1-standard-4,NVIDIA_TESLA_T4,1,1,JOB_STATE_CANCELLED,,"
            "cancelled,2026-01-01T00:00:00Z,2026-01-01T00:00:35Z,2026-01-01T00:31:45Z,35,1870,0.78,true,,%s,"
            "CustomJob was cancelled.,\r\n"
            "e2e,job.a,job.a,2,1,us-central1,STANDARD,n1-standard-4,NVIDIA_TESLA_T4,2,2,JOB_STATE_SUCCEEDED,,"
            "succeeded,2026-01-01T00:31:40Z,2026-01-01T00:32:15Z,2026-01-01T01:32:15Z,35,3600,3,true,,%s,,\r\n")
            % (a1, b1, a2))

        # The page of the same history: headless Chromium loads it and fails on a
        # console error, a request leaving the file, or a bar count other than the
        # attempts (tests/browser/check_report.py).
        html = os.path.join(self.tmp, "report.html")
        self.assertEqual(self.report("-since", "2025-12-31", "-format", "html", "-o", html), "")
        r = subprocess.run([sys.executable, os.path.join(HERE, "..", "browser", "check_report.py"),
                            html, str(len(doc["runs"])), os.path.join(self.tmp, "report.png")],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

        # A window from t=3600: only a#2 overlaps it, for 01:00:00 .. 01:32:15 (1935 s):
        # 3.00 x 1935 / 3600 = 1.6125 -> 1.61.
        doc = json.loads(self.report("-since", "2026-01-01T01:00:00Z"))
        self.assertEqual([(r["address"], r["attempt"], r["running_seconds"], r["usd"]) for r in doc["runs"]],
                         [("job.a", 2, 1935, 1.61)])
        self.assertEqual((doc["totals"]["usd"], doc["totals"]["usd_wasted"]), (1.61, 0))

    def test_output_file_and_bad_flags(self):
        self.history()
        out = os.path.join(self.tmp, "report.json")
        r = self.repo.vx("report", self.repo.dir, "-since", "2025-12-31", "-o", out, env=self.env)
        self.assertEqual((r.code, r.out, r.err), (0, "", ""))
        with open(out) as f:
            self.assertEqual(json.load(f)["totals"]["usd"], 4.38)
        self.assertEqual(sorted(os.listdir(self.tmp)).count("report.json"), 1)
        self.assertEqual([n for n in os.listdir(self.tmp) if n.startswith("report.json.tmp")], [])
        r = self.repo.vx("report", self.repo.dir, "-since", "yesterday", env=self.env)
        self.assertEqual((r.code, r.out), (64, ""))
        self.assertEqual(r.err, 'vx: -since: "yesterday" is not a duration (30d, 12h, 2w, 90m), a date '
                         '(2026-11-01) or an RFC 3339 UTC time (2026-11-01T09:00:00Z)\n')
        r = self.repo.vx("report", self.repo.dir, "-format", "xml", env=self.env)
        self.assertEqual((r.code, r.err), (64, 'vx: report: -format must be json, csv or html, not "xml"\n'))

    def test_the_output_file_extension_picks_the_format(self):
        # vx report -o report.html once wrote JSON into the page's file.
        self.history()
        want = {fmt: self.report("-since", "2025-12-31", "-format", fmt) for fmt in ("json", "csv", "html")}
        self.assertTrue(want["html"].startswith("<!DOCTYPE html>"), want["html"][:80])
        for name, fmt in (("report.html", "html"), ("REPORT.HTM", "html"), ("runs.csv", "csv"),
                          ("report.json", "json"), ("report.txt", "json"), ("report", "json"),
                          ("dir.html/report", "json")):
            path = os.path.join(self.tmp, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            self.assertEqual(self.report("-since", "2025-12-31", "-o", path), "")
            with open(path) as f:  # universal newlines, as the captured stdout
                self.assertEqual(f.read(), want[fmt], name)
        # -format wins over the extension.
        path = os.path.join(self.tmp, "forced.html")
        self.assertEqual(self.report("-since", "2025-12-31", "-format", "json", "-o", path), "")
        with open(path) as f:
            self.assertEqual(f.read(), want["json"])

    def test_every_stack_under_a_directory(self):
        self.history()
        # The repository's root holds no stack; its stack/ is found below it.
        r = self.repo.vx("report", self.repo.root, "-since", "2025-12-31", env=self.env)
        self.assertEqual(r.code, 0, r)
        doc = json.loads(r.out)
        self.assertEqual((doc["stacks"], doc["totals"]["usd"]), (["e2e"], 4.38))
        empty = os.path.join(self.tmp, "empty")
        os.makedirs(empty)
        r = self.repo.vx("report", empty, env=self.env)
        self.assertEqual((r.code, r.out), (1, ""))
        self.assertEqual(r.err, 'vx: %s: no stack here or below (a stack is a directory with a "kind: Stack" '
                         'document)\n' % empty)


    def markdown_line(self):
        """The spend line of the pull request's comment (vxplan -format markdown): after the title."""
        r = self.repo.plan("-format", "markdown", env=self.env)
        self.assertEqual(r.code, 0, r)
        lines = r.out.split("\n")
        self.assertEqual((lines[0], lines[1], lines[3]), ("### vx plan: stack `e2e` (project `vx-e2e`)", "", ""))
        return lines[2]

    def test_pull_request_comment_line(self):
        # Nothing ran yet: no spend; the plan starts a and b (the built-in table is not asked:
        # VX_PRICES is), at most 3 attempts x 7 days (no timeout) of a, 1 x 7 days of b. a's
        # attempts after its first may fall back to its STANDARD rung (3.00/h), each priced there:
        # a: SPOT 1.20/h x 168 h + STANDARD 3.00/h x 168 h x 2 = 1,209.60;
        # b: STANDARD 1.50/h x 168 h = 252.00 -> 1,461.60.
        self.repo.write({"a": JOB_A, "b": JOB_B})
        self.assertEqual(self.markdown_line(), "last 30 days: $0.00 · this plan: at most $1,462")
        self.repo.write({})
        self.history()
        # $4.38 spent (see test_report_json_and_csv), 0.60 of it on the preempted attempt: 13.7%.
        # a succeeded: the plan starts nothing.
        self.assertEqual(self.markdown_line(), "last 30 days: $4.38 (14% on preempted runs) · this plan: "
                                               "at most $0.00")

    def corrupt_history(self):
        """A commit in the state branch's past whose jobs/a.json does not parse (written by hand),
        then a good one on top putting the tip's tree back: the tip is as vx wrote it, one commit
        of its history is not readable. Returns that commit's id."""
        ref = "refs/heads/vx/state/e2e"
        env = dict(self.fake.env(), GIT_INDEX_FILE=os.path.join(self.tmp, "index.tmp"))

        def git(*args, stdin=None):
            return subprocess.run(["git", "-C", self.repo.root] + list(args), check=True, input=stdin,
                                  capture_output=True, text=True, env=env).stdout.strip()

        tip = git("rev-parse", ref)
        git("read-tree", tip)
        blob = git("hash-object", "-w", "--stdin", stdin="not json")
        git("update-index", "--add", "--cacheinfo", "100644,%s,jobs/a.json" % blob)
        bad = git("commit-tree", git("write-tree"), "-p", tip, "-m", "by hand")
        good = git("commit-tree", tip + "^{tree}", "-p", bad, "-m", "by hand, undone")
        git("update-ref", ref, good, tip)
        return bad

    def test_one_corrupt_commit_in_the_history_is_skipped(self):
        # The history is append-only: one commit vx cannot read must not stop vx log and vx
        # report for good. They leave it out, say which, and show everything else.
        self.history()
        log = self.repo.vx("log", "-C", self.repo.dir, env=self.env)
        doc = self.repo.vx("report", self.repo.dir, "-since", "2025-12-31", "-format", "json", env=self.env)
        self.assertEqual((log.code, log.err, doc.code, doc.err), (0, "", 0, ""))
        bad = self.corrupt_history()
        warning = ("vx: warning: 1 state commit skipped (%s: jobs/a.json: invalid state record JSON: "
                   "1:1: not valid JSON)\n" % bad[:12])
        r = self.repo.vx("log", "-C", self.repo.dir, env=self.env)
        self.assertEqual((r.code, r.err, r.out), (0, warning, log.out))
        r = self.repo.vx("report", self.repo.dir, "-since", "2025-12-31", "-format", "json", env=self.env)
        self.assertEqual((r.code, r.err), (0, "vx: warning: stack e2e: " + warning[len("vx: warning: "):]))
        self.assertEqual(json.loads(r.out)["runs"], json.loads(doc.out)["runs"])
        self.assertEqual(len(json.loads(r.out)["runs"]), 3)
        self.assertEqual(json.loads(r.out)["totals"], json.loads(doc.out)["totals"])
        # The spend line of a pull request's comment counts the readable history alike.
        self.assertEqual(self.markdown_line(), "last 30 days: $4.38 (14% on preempted runs) · this plan: "
                                               "at most $0.00")

    def test_log_shows_each_attempts_cost(self):
        self.history()
        a1, _, a2 = self.names()
        rec = json.loads(self.repo.git("show", "vx/state/e2e:jobs/a.json"))
        who = rec["current"]["launchedBy"]
        r = self.repo.vx("log", "job.a", "-C", self.repo.dir, env={"VX_PRICES": self.prices})
        self.assertEqual((r.code, r.err), (0, ""))
        # The figures of test_report_json_and_csv: 0.60 and 3.00.
        self.assertEqual(r.out, (
            "job.a\n"
            "  2026-01-01T00:00:00Z  create    %s  attempt 1  run 1  rung 0 (us-central1)  by %s  config %s  "
            "cost $0.60  failed (preempted), ended 2026-01-01T00:30:35Z: code 8: Resources are insufficient in "
            "region: us-central1. Try a different region or use a different accelerator.\n"
            "  2026-01-01T00:31:40Z  resubmit  %s  attempt 2  run 1  rung 1 (us-central1)  by %s  config %s  "
            "cost $3.00  succeeded, ended 2026-01-01T01:32:15Z\n") % (a1, who, self.heads[0], a2, who, self.heads[1]))

    def test_log_shows_a_running_attempts_rate(self):
        # While it runs, its figure is its rate: SPOT 2 x 0.4 + 2 x 0.2 = 1.20/h.
        self.repo.write({"a": JOB_A})
        head = self.repo.git("rev-parse", "HEAD").strip()[:12]
        self.apply_ok()
        self.fake.advance(100)
        self.apply_ok()
        a1 = self.names()[0]
        who = json.loads(self.repo.git("show", "vx/state/e2e:jobs/a.json"))["current"]["launchedBy"]
        r = self.repo.vx("log", "job.a", "-C", self.repo.dir, env={"VX_PRICES": self.prices})
        self.assertEqual((r.code, r.err), (0, ""))
        self.assertEqual(r.out, "job.a\n  2026-01-01T00:00:00Z  create    %s  attempt 1  run 1  by %s  config %s  "
                         "cost $1.20/h  running\n" % (a1, who, head))


    def test_log_goes_on_without_a_price_table(self):
        # vx log read no prices before it showed costs: a table it cannot read costs the figures,
        # not the log.
        self.repo.write({"a": JOB_A})
        head = self.repo.git("rev-parse", "HEAD").strip()[:12]
        self.apply_ok()
        self.fake.advance(100)
        self.apply_ok()                                      # a is seen RUNNING
        a1 = self.names()[0]
        who = json.loads(self.repo.git("show", "vx/state/e2e:jobs/a.json"))["current"]["launchedBy"]
        missing = os.path.join(self.tmp, "missing.json")
        r = self.repo.vx("log", "job.a", "-C", self.repo.dir, env={"VX_PRICES": missing})
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.out, "job.a\n  2026-01-01T00:00:00Z  create    %s  attempt 1  run 1  by %s  config %s  "
                         "cost unknown  running\n" % (a1, who, head))
        self.assertEqual(r.err, "vx: warning: costs not shown: %s: No such file or directory\n" % missing)


if __name__ == "__main__":
    unittest.main()
