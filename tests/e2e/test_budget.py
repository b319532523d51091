"""End to end: the Stack's budget (docs/budgets.md) against the fake Google Cloud.

A history is built at known virtual times with the price table below, so every figure of the
budget line is computed by hand in the tests; whole lines are compared.
"""
import json
import os
import subprocess
import sys
import time
import unittest

from harness import FakeTestCase
from test_watch import Receiver

# USD per hour in us-central1: the machine per replica, the GPU per GPU.
PRICES = ('{"source": "e2e table", "date": "2026-01-01", "currency": "USD", "regions": {"us-central1": '
          '{"machines": {"n1-standard-4": {"on_demand": 1.0, "spot": 0.4}}, '
          '"accelerators": {"NVIDIA_TESLA_T4": {"on_demand": 0.5, "spot": 0.2}}}}}')


def job(name, replicas, timeout="2h", extra="", strategy="STANDARD"):
    """A job of n1-standard-4 + one T4 per replica: 1.50/h per replica (SPOT: 0.60/h)."""
    return """---
kind: CustomJob
name: %s
spec:
  workerPoolSpecs:
    - machineSpec: {machineType: n1-standard-4, acceleratorType: NVIDIA_TESLA_T4, acceleratorCount: 1}
      replicaCount: %d
      containerSpec:
        imageUri: "us-docker.pkg.dev/p/r/trainer:1"
  scheduling: {strategy: %s, timeout: %s}
  baseOutputDirectory: {outputUriPrefix: "gs://e2e-bucket/%s"}
%s""" % (name, replicas, strategy, timeout, name, extra)


def budget(usd, period="30d", extra="", warn=None):
    return "budget: {usd: %s, period: %s%s}\n%s" % (usd, period, ", warnAt: %s" % warn if warn else "", extra)


# html5lib (Debian's python3-html5lib, tools/deps.sh) checks a page, run by the first Python that has it.
HTML5_CHECK = """import sys
try:
    import html5lib
except ImportError:
    sys.exit(3)
p = html5lib.HTMLParser(strict=False)
with open(sys.argv[1], "rb") as f:
    p.parse(f)
for pos, code, data in p.errors:
    print("%s:%s: %s %s" % (pos[0], pos[1], code, data))
"""


def html5_errors(path):
    """html5lib's parse errors of the page at path, one line each."""
    for py in (sys.executable, "/usr/bin/python3"):
        if not os.path.exists(py):
            continue
        r = subprocess.run([py, "-c", HTML5_CHECK, path], capture_output=True, text=True, timeout=120)
        if r.returncode != 3:
            if r.returncode or r.stderr:
                raise AssertionError("html5lib: %s%s" % (r.stdout, r.stderr))
            return r.stdout.splitlines()
    raise AssertionError("html5lib is not installed (python3-html5lib, tools/deps.sh)")


NOW_SECONDS = 4000   # when the plans below are made (after history())
NOW = "2026-01-01T01:06:40Z"


class Budget(FakeTestCase):

    def setUp(self):
        super().setUp()
        self.prices = os.path.join(self.tmp, "prices.json")
        with open(self.prices, "w") as f:
            f.write(PRICES)
        self.env = {"VX_PRICES": self.prices}

    def history(self, stack_extra=""):
        """t=0: job a (2 replicas, 3.00/h) is created; RUNNING at t=35, SUCCEEDED at t=3635.
        At t=4000 an apply records it: 3.00/h x 3600 s = $3.00 spent."""
        self.repo.write({"a": job("a", 2, "1h")}, extra_stack=stack_extra)
        r = self.repo.apply(env=self.env)
        self.assertEqual(r.code, 0, r)
        self.fake.advance(NOW_SECONDS)
        # From here vx's clock is the fake's (the window's end).
        self.env["VX_NOW"] = NOW
        r = self.repo.apply(env=self.env)
        self.assertEqual(r.code, 0, r)

    def line(self, out):
        lines = [x for x in out.split("\n") if x.startswith("budget: ")]
        self.assertEqual(len(lines), 1, out)
        return lines[0]

    def test_line_figures(self):
        # Spent $3.00 (a). b: 1 replica x 1.50/h x 2 h timeout x 1 attempt = at most $3.00.
        #   limit  spent  at most  spent + at most - limit
        #   20.00  3.00   3.00     -14.00  -> $14.00 left after it
        #    5.00  3.00   3.00       1.00  -> would exceed by $1.00
        self.history(budget(20))
        self.repo.write({"a": job("a", 2, "1h"), "b": job("b", 1)}, extra_stack=budget(20))
        r = self.repo.plan(env=self.env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.line(r.out), "budget: $3.00 of $20.00 spent (30 d); this plan at most $3.00: "
                                           "$14.00 left after it")
        self.assertNotIn("Warnings", r.out)
        self.repo.write(extra_stack=budget(5))
        # The pull request's comment: the spend line, then the budget line, after the title.
        r = self.repo.plan("-format", "markdown", env=self.env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.out.split("\n")[:6], [
            "### vx plan: stack `e2e` (project `vx-e2e`)", "",
            "last 30 days: $3.00 (0% on preempted runs) · this plan: at most $3.00", "",
            "budget: $3.00 of $5.00 spent (30 d); this plan at most $3.00: would exceed by $1.00", ""])
        r = self.repo.plan("-format", "json", env=self.env)   # checked against the schema (schemas.py)
        self.assertEqual(r.code, 0, r)
        doc = json.loads(r.out)
        self.assertEqual(doc["budget"], {"limit": 5, "period": "30d", "spent": 3, "at_most": 3,
                                         "would_exceed": True, "exceed_by": 1})
        self.assertEqual(doc["warnings"], ["budget: this plan would exceed the Stack's budget by $1.00 "
                                           "(vxapply refuses it without -allow-over-budget)"])
        self.assertEqual(doc["errors"], [])

    def test_ladder_at_most(self):
        # A run that may fall back to a pricier rung can cost that rung's rate on every attempt after
        # the first: per attempt left, the priciest rung it may still run on (2h timeouts).
        #   job  rung 0        rung 1          attempts  attempt 1  attempt 2  attempt 3  at most
        #   b    SPOT 0.60/h   STANDARD 1.50/h  3         1.20       3.00       3.00       7.20
        #   c    STANDARD 1.50  SPOT 0.60/h     2         3.00       3.00                  6.00
        # b's first attempt runs on rung 0; a preemption sends the next one down to rung 1.
        # c's rung 1 is cheaper: a non-capacity failure keeps it on rung 0, priced as before.
        # Spent $3.00; the plan adds 7.20 + 6.00 = $13.20 against $15: over by $1.20.
        down = ("resubmit:\n  on: [preempted, internal]\n  maxAttempts: %d\n  fallback:\n"
                "    - scheduling: {strategy: %s}\n")
        self.history(budget(15))
        self.repo.write({"a": job("a", 2, "1h"), "b": job("b", 1, extra=down % (3, "STANDARD"), strategy="SPOT"),
                         "c": job("c", 1, extra=down % (2, "SPOT"))}, extra_stack=budget(15))
        r = self.repo.plan(env=self.env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.line(r.out), "budget: $3.00 of $15.00 spent (30 d); this plan at most $13.20: "
                                           "would exceed by $1.20")
        self.assertEqual([x for x in r.out.split("\n") if x.lstrip().startswith("starts")], [
            "  starts     job.b: $0.60/h, at most $7.20 (2h timeout × 3 attempts left, each at the priciest "
            "rung it may fall back to)",
            "  starts     job.c: $1.50/h, at most $6.00 (2h timeout × 2 attempts left)"])
        self.assertIn("Cost: + $2.10/h while running, at most $13.20 for this apply.", r.out)
        doc = json.loads(self.repo.plan("-format", "json", env=self.env).out)
        self.assertEqual((doc["budget"]["at_most"], doc["budget"]["exceed_by"]), (13.2, 1.2))

    def test_ladder_at_most_with_max_queued(self):
        # maxQueued moves a run one rung down without any class listed in `on`, so its ladder is
        # priced as a capacity failure's is: b as in test_ladder_at_most, 1.20 + 3.00 + 3.00.
        #   Spent $3.00; the plan adds $7.20 against $15: $4.80 left.
        queued = ("resubmit:\n  on: [internal]\n  maxAttempts: 3\n  maxQueued: 1h\n  fallback:\n"
                  "    - scheduling: {strategy: STANDARD}\n")
        self.history(budget(15))
        self.repo.write({"a": job("a", 2, "1h"), "b": job("b", 1, extra=queued, strategy="SPOT")},
                        extra_stack=budget(15))
        r = self.repo.plan(env=self.env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.line(r.out), "budget: $3.00 of $15.00 spent (30 d); this plan at most $7.20: "
                                           "$4.80 left after it")

    def test_no_budget_no_line_no_key(self):
        self.history()
        self.repo.write({"a": job("a", 2, "1h"), "b": job("b", 1)})
        r = self.repo.plan(env=self.env)
        self.assertEqual(r.code, 0, r)
        self.assertNotIn("budget", r.out)
        doc = json.loads(self.repo.plan("-format", "json", env=self.env).out)
        self.assertNotIn("budget", doc)

    def test_fail_on_budget(self):
        error = "budget: this plan would exceed the Stack's budget by $1.00 (%s)"
        self.history(budget(5))
        self.repo.write({"a": job("a", 2, "1h"), "b": job("b", 1)}, extra_stack=budget(5))
        r = self.repo.plan("-fail-on=budget", "-format", "json", env=self.env)
        self.assertEqual(r.code, 1, r)
        self.assertEqual((json.loads(r.out)["errors"], json.loads(r.out)["warnings"]),
                         ([error % "-fail-on=budget"], []))
        self.repo.write(extra_stack=budget(5, extra="failOn: [budget]\n"))
        r = self.repo.plan(env=self.env)
        self.assertEqual(r.code, 1, r)
        self.assertIn("\nErrors (the plan cannot be applied):\n  %s\n" % (error % "failOn: [budget]"), r.out)
        # What fits is no error.
        self.repo.write(extra_stack=budget(6, extra="failOn: [budget]\n"))
        r = self.repo.plan("-fail-on=budget", env=self.env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.line(r.out), "budget: $3.00 of $6.00 spent (30 d); this plan at most $3.00: "
                                           "$0.00 left after it")

    def test_vxapply_refuses_unless_allowed(self):
        self.history(budget(5))
        self.repo.write({"a": job("a", 2, "1h"), "b": job("b", 1)}, extra_stack=budget(5))
        r = self.repo.apply(env=self.env)
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.err, "vx: apply: refusing a plan that would exceed the Stack's budget (budget: $3.00 "
                                "of $5.00 spent (30 d); this plan at most $3.00: would exceed by $1.00); nothing "
                                "was changed. Apply it anyway with -allow-over-budget, recorded in the state's "
                                "history\n")
        self.assertEqual(self.live_jobs("b"), [])
        before = len(self.repo.state_log())
        r = self.repo.apply("-allow-over-budget", env=self.env)
        self.assertEqual(r.code, 0, r)
        [b] = self.live_jobs("b")
        who = json.loads(self.repo.git("show", "vx/state/e2e:jobs/b.json"))["current"]["launchedBy"]
        # Every commit of that apply, and only those, carry the audit beside the actor.
        log = self.repo.state_log()
        new = len(log) - before
        self.assertGreaterEqual(new, 1)
        self.assertEqual(["\nVx-Actor: %s\nVx-Allow-Over-Budget: by $1.00\n" % who in m for m in log],
                         [True] * new + [False] * before)
        r = self.repo.vx("log", "job.b", "-C", self.repo.dir, env=self.env)
        self.assertEqual((r.code, r.err), (0, ""))
        self.assertEqual(r.out.split("\n")[2], "  2026-01-01T01:06:40Z  budget    over by $1.00, allowed by "
                                                 "%s (-allow-over-budget)" % who)

    def test_saved_plan_over_budget(self):
        # The pull request's saved plan carries the line (vx show prints it again); vxapply FILE
        # plans again and refuses as vxapply DIR does, unless allowed.
        self.history(budget(5))
        self.repo.write({"a": job("a", 2, "1h"), "b": job("b", 1)}, extra_stack=budget(5))
        planfile = os.path.join(self.tmp, "plan.json")
        r = self.repo.plan("-out", planfile, env=self.env)
        self.assertEqual(r.code, 0, r)
        line = "budget: $3.00 of $5.00 spent (30 d); this plan at most $3.00: would exceed by $1.00"
        r = self.repo.vx("show", planfile, env=self.env)
        self.assertEqual((r.code, self.line(r.out)), (0, line), r)
        r = self.repo.vx("apply", planfile, "-auto-approve", env=self.env)
        self.assertEqual(r.code, 1, r)
        self.assertIn("vx: apply: refusing a plan that would exceed the Stack's budget (%s)" % line, r.err)
        self.assertEqual(self.live_jobs("b"), [])
        r = self.repo.vx("apply", planfile, "-auto-approve", "-allow-over-budget", env=self.env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.live_jobs("b")), 1)

    def test_max_hourly_usd(self):
        # a: 2 replicas x 1.50/h = $3.00/h; its fallback rung on SPOT: 2 x (0.4 + 0.2) = $1.20/h.
        ladder = ("maxHourlyUsd: 2.5\nresubmit:\n  on: [stockout]\n  maxAttempts: 2\n  fallback:\n"
                  "    - scheduling: {strategy: SPOT}\n")
        self.repo.write({"a": job("a", 2, extra=ladder)})
        r = self.repo.vx("validate", self.repo.dir, env=self.env)
        self.assertEqual(r.code, 1, r)
        over = ("%s/jobs.yaml:12:15: CustomJob \"a\": maxHourlyUsd: $3.00/h on the declared job is over $2.50/h "
                "(n1-standard-4 ×2, 1×T4, STANDARD in us-central1; prices: e2e table, 2026-01-01)" % self.repo.dir)
        self.assertEqual(r.err, over + "\n")
        # A plan made without vx validate refuses it alike.
        r = self.repo.plan("-format", "json", env=self.env)
        self.assertEqual(r.code, 1, r)
        self.assertEqual(json.loads(r.out)["errors"], [over])
        # vx status, which only reads, warns of it (a rate that went over since it was applied).
        r = self.repo.vx("status", self.repo.dir, env=self.env)
        self.assertEqual((r.code, r.err), (0, over.replace(": CustomJob", ": warning: CustomJob", 1) + "\n"), r)
        # Every rung is held to it too: the watcher may start any of them unreviewed.
        self.repo.write({"a": job("a", 2, extra=ladder.replace("2.5", "1"))})
        r = self.repo.vx("validate", self.repo.dir, env=self.env)
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.err.split("\n")[1], "%s/jobs.yaml:12:15: CustomJob \"a\": maxHourlyUsd: $1.20/h on rung 1 "
                         "(resubmit.fallback[0]) is over $1.00/h (n1-standard-4 ×2, 1×T4, SPOT in us-central1; "
                         "prices: e2e table, 2026-01-01)" % self.repo.dir)
        # A ceiling the rung also keeps: valid.
        self.repo.write({"a": job("a", 2, extra=ladder.replace("2.5", "3"))})
        r = self.repo.vx("validate", self.repo.dir, env=self.env)
        self.assertEqual((r.code, r.err), (0, ""), r)
        # A sweep caps each run, each named.
        sweep = "maxHourlyUsd: 2\nmatrix: {lr: [1, 2]}\n"
        self.repo.write({"s": job("s", 1, extra=sweep), "t": job("t", 2, extra=sweep)})
        r = self.repo.vx("validate", self.repo.dir, env=self.env)
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.err, "".join(
            "%s/jobs.yaml:25:15: CustomJob \"t[lr=%d]\": maxHourlyUsd: $3.00/h on the declared job is over "
            "$2.00/h (n1-standard-4 ×2, 1×T4, STANDARD in us-central1; prices: e2e table, 2026-01-01)\n"
            % (self.repo.dir, lr) for lr in (1, 2)))
        self.repo.write({"s": job("s", 1, extra=sweep)})
        r = self.repo.vx("validate", self.repo.dir, env=self.env)
        self.assertEqual((r.code, r.err, r.out), (0, "", "stack e2e: 2 jobs, 0 reservations, 0 quota preferences: "
                                                        "valid\n"))

    def test_report_and_month(self):
        # vx report shows each budget over its own period, ending now. On 2026-01-31T01:06:40Z the
        # rolling 30 days began at 2026-01-01T01:06:40Z, after a ran (00:00:35 to 01:00:35): $0.00;
        # the calendar month began at 2026-01-01T00:00:00Z: $3.00.
        #   period  spent  limit  line
        #   30d     0.00   20     $20.00 left
        #   month   3.00   20     $17.00 left
        #   month   3.00   2.5    over by $0.50
        self.history(budget(20))
        late = dict(self.env, VX_NOW="2026-01-31T01:06:40Z")
        for period, usd, spent, line in (
                ("30d", 20, 0, "budget: $0.00 of $20.00 spent (30 d): $20.00 left"),
                ("month", 20, 3, "budget: $3.00 of $20.00 spent (this month): $17.00 left"),
                ("month", 2.5, 3, "budget: $3.00 of $2.50 spent (this month): over by $0.50")):
            self.repo.write(extra_stack=budget(usd, period))
            r = self.repo.vx("report", self.repo.dir, "-format", "json", env=late)
            self.assertEqual((r.code, r.err), (0, ""), r)
            self.assertEqual(json.loads(r.out)["budgets"], [{"stack": "e2e", "period": period, "limit": usd,
                                                             "spent": spent, "line": line}])
        # The plan counts the same period: a plan that adds nothing exceeds nothing.
        r = self.repo.plan("-fail-on=budget", env=late)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.line(r.out), "budget: $3.00 of $2.50 spent (this month); this plan at most $0.00: "
                                           "the period is already over by $0.50")
        # No budget: no key.
        self.repo.write(extra_stack="")
        r = self.repo.vx("report", self.repo.dir, "-format", "json", env=late)
        self.assertNotIn("budgets", json.loads(r.out))

    def test_report_page_shows_the_budget(self):
        # The page (vx report -format html) has the budgets the JSON document has, in a section of
        # its own: the month's $3.00 of $20.00 (15%), as test_report_and_month computes it.
        self.history(budget(20, "month"))
        page = os.path.join(self.tmp, "report.html")
        r = self.repo.vx("report", self.repo.dir, "-format", "html", "-o", page,
                         env=dict(self.env, VX_NOW="2026-01-31T01:06:40Z"))
        self.assertEqual((r.code, r.err, r.out), (0, "", ""), r)
        self.assertEqual(html5_errors(page), [])
        with open(page) as f:
            text = f.read()
        start = text.index('<section id="budgets">')
        self.assertEqual(text[start:text.index("</section>", start) + 10].split("\n"), [
            '<section id="budgets">', "<h2>Budgets</h2>",
            '<p class="est">Each over its own period ending when this page was generated, whatever span the '
            'page shows.</p>', "<table>",
            '<thead><tr><th>stack</th><th>period</th><th class="n">spent</th><th class="n">budget</th>'
            '<th class="n">used</th><th>line</th></tr></thead>', "<tbody>",
            '<tr><td class="a">e2e</td><td>month</td><td class="n">$3.00</td><td class="n">$20.00</td>'
            '<td class="n">15%</td><td>budget: $3.00 of $20.00 spent (this month): $17.00 left</td></tr>',
            "</tbody>", "</table>", "</section>"])

    def test_watcher_holds_a_resubmission_past_the_budget_applied(self):
        # a on SPOT: 2 replicas x (0.40 + 0.20) = 1.20/h, a 1h timeout, 2 attempts: at most $2.40,
        # over the $1.50 budget, applied anyway. Its first attempt RUNNING at t=35 is preempted
        # half-way (t=1835): $0.60 spent. The resubmission's at most, 1.20/h x 1h x 1 attempt left
        # = $1.20, is over the $0.90 left: the watcher holds it, and says so once.
        retry = "resubmit: {on: [preempted], maxAttempts: 2}\n"
        rcv = Receiver()
        self.addCleanup(rcv.close)
        self.env.update(HOOK=rcv.url, VX_NOTIFY_ALLOW_LOOPBACK="1")
        hook = "notify:\n  - urlEnv: HOOK\n    on: [budget-exhausted, budget]\n"
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "a"}, "outcome": "preempted", "times": 1})
        self.repo.write({"a": job("a", 2, "1h", extra=retry, strategy="SPOT")}, extra_stack=budget(1.5, warn="[25, 50]", extra=hook))
        r = self.repo.apply("-allow-over-budget", env=self.env)
        self.assertEqual(r.code, 0, r)
        state = json.loads(self.repo.git("show", "vx/state/e2e:stack.json"))
        self.assertEqual(state["budget"], {"usdCents": 150, "days": 30, "warnAt": [25, 50]})
        # The fake moves a job one state per advance: RUNNING, then preempted past half its time.
        self.fake.advance(40)
        self.fake.advance(2000)
        held = "wait: job.a: held: budget, $0.90 left (its at most would take the spend past the budget applied)"
        r = self.repo.vx("watch", self.repo.dir, "-once", env=self.env)
        self.assertEqual(r.err, "", r)
        self.assertEqual([l.split(" ", 1)[1] for l in r.out.splitlines()],
                         ["record: recorded: job.a: queued -> failed (preempted)", held,
                          "notify: job.a: budget-exhausted to notify[0] delivered"])
        self.assertEqual(len(self.live_jobs("a")), 1)
        # One budget-exhausted for the hold, the reason as its state (checked against the schema).
        self.assertEqual(len(rcv.got), 1)
        got = json.loads(rcv.got[0][1])
        self.assertEqual((got["event"], got["address"], got["state"]),
                         ("budget-exhausted", "job.a", "held: budget, $0.90 left"))
        # vx status says so too, from the state alone, as of the fake's now (t=2040).
        r = self.repo.vx("status", "-C", self.repo.dir, "-format", "json",
                         env=dict(self.env, VX_NOW="2026-01-01T00:34:00Z"))
        self.assertEqual((r.code, r.err), (0, ""), r)
        [row] = [x for x in json.loads(r.out)["addresses"] if x["address"] == "job.a"]
        self.assertEqual((row["failure"]["class"], row["failure"]["resubmits"], row["failure"]["held"]),
                         ("preempted", True, "held: budget, $0.90 left"))
        # A raise in the files alone is not applied: still held, and nothing done (exit 0).
        self.repo.write(extra_stack=budget(40, extra=hook))
        r = self.repo.vx("watch", self.repo.dir, "-once", env=self.env)
        # The next look counts the recorded spend: $0.60 of $1.50 is 40%, past warnAt's 25: one
        # budget event (the stack's own, no address).
        self.assertEqual((r.code, [l.split(" ", 1)[1] for l in r.out.splitlines()], r.err),
                         (0, [held, "notify: budget to notify[0] delivered"], ""), r)
        self.assertEqual(len(self.live_jobs("a")), 1)
        self.assertEqual(len(rcv.got), 2)
        got = json.loads(rcv.got[1][1])
        self.assertEqual((got["event"], got["address"], got["state"]),
                         ("budget", None, "spent 40% of the budget: $0.60 of $1.50"))
        r = self.repo.vx("watch", self.repo.dir, "-once", env=self.env)
        self.assertEqual((r.code, [l.split(" ", 1)[1] for l in r.out.splitlines()], r.err), (0, [held], ""), r)
        self.assertEqual(len(rcv.got), 2, "each told once")
        # Applied, the raise lets the resubmission go (vxapply makes it, as it would any).
        r = self.repo.apply(env=self.env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.live_jobs("a")), 2)
        state = json.loads(self.repo.git("show", "vx/state/e2e:stack.json"))
        self.assertEqual(state["budget"], {"usdCents": 4000, "days": 30})

    def test_vxapply_holds_a_resubmission_past_the_budget(self):
        # As in the watcher's test: a (SPOT, 1.20/h, 1h, 2 attempts) applied over a $1.50 budget
        # is preempted half-way, $0.60 spent. The reviewed change adds b (SPOT 1 replica, 0.60/h,
        # a 30m timeout: at most $0.30), counted first: $0.60 left for what no one reviewed.
        # a's resubmission (1.20/h x 1h x 1 attempt left = $1.20) is over it: vxplan shows it
        # held and vxapply holds it rather than starting it, and applies b.
        #   spent  b (reviewed)  left for the rest  a's resubmission
        #   0.60   0.30          0.60               1.20 -> held
        retry = "resubmit: {on: [preempted], maxAttempts: 2}\n"
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "a"}, "outcome": "preempted", "times": 1})
        a = job("a", 2, "1h", extra=retry, strategy="SPOT")
        self.repo.write({"a": a}, extra_stack=budget(1.5))
        r = self.repo.apply("-allow-over-budget", env=self.env)
        self.assertEqual(r.code, 0, r)
        self.fake.advance(40)
        self.fake.advance(2000)
        env = dict(self.env, VX_NOW="2026-01-01T00:34:00Z")
        # The spend is the state's: a watcher's cycle records how a ended (and holds it too).
        r = self.repo.vx("watch", self.repo.dir, "-once", env=self.env)
        self.assertEqual(r.err, "", r)
        self.repo.write({"a": a, "b": job("b", 1, "30m", strategy="SPOT")}, extra_stack=budget(1.5))
        r = self.repo.plan(env=env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.line(r.out), "budget: $0.60 of $1.50 spent (30 d); this plan at most $0.30: "
                                           "$0.60 left after it")
        held = ["      job.a wait", "        n1-standard-4 ×2, 1×T4, SPOT in us-central1",
                "        held: budget, $0.60 left (code 8: Resources are insufficient in region: us-central1. "
                "Try a different region or use a different accelerator.)"]
        lines = r.out.split("\n")
        self.assertEqual(lines[lines.index(held[0]):][:3], held)
        self.assertIn("\nPlan: 1 to create, 1 waiting. 0 unchanged.\n", r.out)
        doc = json.loads(self.repo.plan("-format", "json", env=env).out)
        [act] = [x for x in doc["actions"] if x["address"] == "job.a"]
        self.assertEqual((act["action"], act["reason"]), ("wait", "held: budget, $0.60 left"))
        r = self.repo.apply(env=env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual((len(self.live_jobs("a")), len(self.live_jobs("b"))), (1, 1))
        # vx status, from the state alone, counts what ran ($0.60 of $1.50): b has not cost yet.
        r = self.repo.vx("status", "-C", self.repo.dir, "-format", "json", env=env)
        self.assertEqual((r.code, r.err), (0, ""), r)
        [row] = [x for x in json.loads(r.out)["addresses"] if x["address"] == "job.a"]
        self.assertEqual(row["failure"]["held"], "held: budget, $0.90 left")
        # Raised and applied, the budget covers it: vxapply resubmits a.
        self.repo.write(extra_stack=budget(40))
        r = self.repo.apply(env=env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.live_jobs("a")), 2)

    def test_vxapply_counts_what_ended_before_it_starts(self):
        # The same history, no watcher: the state still says a is queued, so the plan counts
        # nothing spent and the resubmission (at most $1.20) fits the $1.50 with b's $0.30.
        # vxapply records that a ran until preempted ($0.60) before it starts anything: then
        # only $0.60 is left for what no one reviewed, and it holds the resubmission.
        retry = "resubmit: {on: [preempted], maxAttempts: 2}\n"
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "a"}, "outcome": "preempted", "times": 1})
        a = job("a", 2, "1h", extra=retry, strategy="SPOT")
        self.repo.write({"a": a}, extra_stack=budget(1.5))
        r = self.repo.apply("-allow-over-budget", env=self.env)
        self.assertEqual(r.code, 0, r)
        self.fake.advance(40)
        self.fake.advance(2000)
        env = dict(self.env, VX_NOW="2026-01-01T00:34:00Z")
        self.repo.write({"a": a, "b": job("b", 1, "30m", strategy="SPOT")}, extra_stack=budget(1.5))
        r = self.repo.plan(env=env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.line(r.out), "budget: $0.00 of $1.50 spent (30 d); this plan at most $1.50: "
                                           "$0.00 left after it")
        r = self.repo.apply(env=env)
        self.assertEqual(r.code, 0, r)
        self.assertIn("\nbudget: with the runs that just ended counted, 1 start no one reviewed held past the "
                      "budget (vx status says why)\n", r.out)
        self.assertEqual((len(self.live_jobs("a")), len(self.live_jobs("b"))), (1, 1))
        r = self.repo.vx("status", "-C", self.repo.dir, "-format", "json", env=env)
        [row] = [x for x in json.loads(r.out)["addresses"] if x["address"] == "job.a"]
        self.assertEqual(row["failure"]["held"], "held: budget, $0.90 left")

    def test_vxapply_notifies_and_the_watcher_does_not_again(self):
        # The history of test_vxapply_counts_what_ended_before_it_starts, with a notify target:
        # vxapply records a's preemption ($0.60 of $1.50 = 40%, past warnAt 25) and holds its
        # resubmission; it sends one `budget` and one `budget-exhausted`. A watcher's cycle then
        # holds the same resubmission and sees the same threshold: it sends neither again.
        retry = "resubmit: {on: [preempted], maxAttempts: 2}\n"
        rcv = Receiver()
        self.addCleanup(rcv.close)
        self.env.update(HOOK=rcv.url, VX_NOTIFY_ALLOW_LOOPBACK="1")
        hook = "notify:\n  - urlEnv: HOOK\n    on: [budget-exhausted, budget]\n"
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "a"}, "outcome": "preempted", "times": 1})
        a = job("a", 2, "1h", extra=retry, strategy="SPOT")
        stack = budget(1.5, warn="[25, 50]", extra=hook)
        self.repo.write({"a": a}, extra_stack=stack)
        r = self.repo.apply("-allow-over-budget", env=self.env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(rcv.got, [])
        self.fake.advance(40)
        self.fake.advance(2000)
        self.repo.write({"a": a, "b": job("b", 1, "30m", strategy="SPOT")}, extra_stack=stack)
        r = self.repo.apply(env=dict(self.env, VX_NOW="2026-01-01T00:34:00Z"))
        self.assertEqual(r.code, 0, r)
        self.assertEqual([x for x in r.out.split("\n") if x.startswith("notify: ")], [
            "notify:  budget to notify[0]: delivered",
            "notify: job.a budget-exhausted to notify[0]: delivered"])
        got = [json.loads(x[1]) for x in rcv.got]
        self.assertEqual([(x["event"], x["address"], x["state"]) for x in got], [
            ("budget", None, "spent 40% of the budget: $0.60 of $1.50"),
            ("budget-exhausted", "job.a", "held: budget, $0.60 left")])
        r = self.repo.vx("watch", self.repo.dir, "-once", env=self.env)
        self.assertEqual(r.err, "", r)
        self.assertEqual([l.split(" ", 1)[1] for l in r.out.splitlines()], [
            "wait: job.a: held: budget, $0.90 left (its at most would take the spend past the budget applied)"])
        self.assertEqual(len(rcv.got), 2, "each told once, by vxapply or the watcher")

    def test_warn_at_once_per_period_past_a_week(self):
        # warnAt [25, 50] of $10 over 30d: the period is the 30-day span since the epoch that holds
        # now; 2026-01-07T00:00:00Z to 2026-02-06T00:00:00Z is one (20460 x 30 days in). vx runs
        # on the fake's clock (VX_NOW, with an access token: a signed grant needs the real one).
        #   day (from Jan 7)  spent  event
        #   0                 3.00   budget 25 ("spent 30%")
        #   8                 6.00   budget 50 ("spent 60%"); 25's delivery, 8 days old, is kept
        #   8 (next cycles)   6.00   nothing: 25 was told in this period
        rcv = Receiver()
        self.addCleanup(rcv.close)
        self.fake.post("/_fake/tokens", {"token": "ya29.budget-e2e"})
        self.env.update(HOOK=rcv.url, VX_NOTIFY_ALLOW_LOOPBACK="1", GOOGLE_OAUTH_ACCESS_TOKEN="ya29.budget-e2e")
        clock = {"t": 0}

        def advance(s):
            self.fake.advance(s)
            clock["t"] += s
            self.env["VX_NOW"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1767225600 + clock["t"]))

        def watch(times):
            for _ in range(times):
                r = self.repo.vx("watch", self.repo.dir, "-once", env=self.env)
                self.assertEqual(r.err, "", r)
            return [json.loads(x[1])["state"] for x in rcv.got]

        stack = budget(10, warn="[25, 50]", extra="notify:\n  - urlEnv: HOOK\n    on: [budget]\n")
        advance(6 * 86400 + 60)
        self.repo.write({"a": job("a", 2, "1h")}, extra_stack=stack)
        r = self.repo.apply(env=self.env)
        self.assertEqual(r.code, 0, r)
        advance(4000)
        # A cycle records that a ended; the next counts it.
        self.assertEqual(watch(2), ["spent 30% of the budget: $3.00 of $10.00"])
        advance(8 * 86400)
        self.repo.write({"a": job("a", 2, "1h"), "c": job("c", 2, "1h")}, extra_stack=stack)
        r = self.repo.apply(env=self.env)
        self.assertEqual(r.code, 0, r)
        advance(4000)
        self.assertEqual(watch(3), ["spent 30% of the budget: $3.00 of $10.00",
                                    "spent 60% of the budget: $6.00 of $10.00"])

    def test_vxapply_holds_a_waiting_sweep_run_past_the_budget(self):
        # s: 2 runs of 1.50/h with a 1h timeout, one at a time: each at most $1.50. The first
        # runs from t=35 to t=3635 ($1.50 spent); the second, waiting, would take the $2.50
        # budget to $3.00: vxplan shows it held, and vxapply does not start it.
        sweep = "matrix: {lr: [1, 2]}\nmaxParallel: 1\n"
        self.repo.write({"s": job("s", 1, "1h", extra=sweep)}, extra_stack=budget(2.5))
        r = self.repo.apply(env=self.env)
        self.assertEqual(r.code, 0, r)
        self.fake.advance(NOW_SECONDS)
        # A watcher's cycle records that the first ended (and holds the second, to the budget applied).
        r = self.repo.vx("watch", self.repo.dir, "-once", env=self.env)
        self.assertEqual(r.err, "", r)
        self.env["VX_NOW"] = NOW
        r = self.repo.plan("-verbose", env=self.env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.line(r.out), "budget: $1.50 of $2.50 spent (30 d); this plan at most $0.00: "
                                           "$1.00 left after it")
        doc = json.loads(self.repo.plan("-format", "json", env=self.env).out)
        self.assertEqual([(x["address"], x["action"], x["reason"]) for x in doc["actions"]],
                         [("job.s[lr=1]", "noop", None), ("job.s[lr=2]", "wait", "held: budget, $1.00 left")])
        # The sweep's block counts it waiting, and says why.
        r = self.repo.plan(env=self.env)
        self.assertIn("\n      job.s sweep: 0 of 2 now, 1 waiting\n"
                      "        0 to create, 1 waiting, 0 running, 1 finished, 0 failed\n"
                      "        held: budget, $1.00 left\n", r.out)
        r = self.repo.apply(env=self.env)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.live_jobs("s[lr=2]")), 0)

    def test_bad_budget_at_its_field(self):
        self.repo.write({"a": job("a", 1)}, extra_stack="budget:\n  usd: 12.345\n  period: 2w\n  warnAt: [80, 50]\n")
        r = self.repo.vx("validate", self.repo.dir, env=self.env)
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.err.split("\n"), [
            '%s/stack.yaml:7:8: Stack "e2e": budget.usd: expected an amount of US dollars (like 40 or 12.50), got '
            '"12.345"' % self.repo.dir,
            '%s/stack.yaml:8:11: Stack "e2e": budget.period: "2w" is not a period: write Nd (a rolling window of N '
            'days, 1 to 366, like 30d) or month (the calendar month, UTC)' % self.repo.dir,
            '%s/stack.yaml:9:16: Stack "e2e": budget.warnAt[1]: 50: the thresholds must be in ascending order, '
            'each once' % self.repo.dir, ""])


if __name__ == "__main__":
    unittest.main()
