"""End to end: `matrix:` sweeps against the fake Google Cloud.

A sweep is one CustomJob document expanded into one job per combination,
each with its own address job.NAME[k=v,...], labels and output directory.
Runs finish by the fake's virtual clock (advanced by the test), never by
sleeping. Plans are compared whole.
"""
import json
import os
import subprocess
import unittest

from harness import FakeTestCase, VX_BIN, job_yaml
import schemas

SWEEP = """---
kind: CustomJob
name: lr-sweep
matrix:
  lr: [{lrs}]
  batch: [32, 64]
  seed: [{seeds}]
  exclude: [{{lr: 1e-3, batch: 64, seed: 2}}]
  include: [{{lr: 3e-3, batch: 32, seed: 1}}]
{limits}spec:
  workerPoolSpecs:
    - machineSpec: {{machineType: g2-standard-4, acceleratorType: NVIDIA_L4, acceleratorCount: 1}}
      replicaCount: 1
      containerSpec:
        imageUri: us-docker.pkg.dev/p/r/train:1
        args: ["--lr=${{{{ matrix.lr }}}}", "--batch=${{{{ matrix.batch }}}}", "--seed=${{{{ matrix.seed }}}}"]
  baseOutputDirectory: {{outputUriPrefix: "gs://b/lr-sweep"}}
"""


def sweep(seeds="1, 2", limits="maxParallel: 4\n", lrs="1e-4, 3e-4, 1e-3"):
    return SWEEP.format(seeds=seeds, limits=limits, lrs=lrs)


def runs(seeds=(1, 2), lrs=("1e-4", "3e-4", "1e-3")):
    """The addresses of the sweep's runs, as the plan sorts them."""
    out = []
    for lr in lrs:
        for batch in (32, 64):
            for seed in seeds:
                if (lr, batch, seed) != ("1e-3", 64, 2):
                    out.append("job.lr-sweep[lr=%s,batch=%d,seed=%d]" % (lr, batch, seed))
    out.append("job.lr-sweep[lr=3e-3,batch=32,seed=1]")
    return sorted(out)


def runs_order(address):
    """The order the loader expands the runs in: the axes' order, include last."""
    lrs = ["1e-4", "3e-4", "1e-3", "3e-3"]
    kv = dict(p.split("=") for p in address[len("job.lr-sweep["):-1].split(","))
    return (lrs.index(kv["lr"]), kv["batch"], kv["seed"])


class SweepValidate(unittest.TestCase):
    """vx validate refuses a bad sweep at FILE:LINE:COLUMN."""

    def validate(self, text):
        import tempfile, shutil
        tmp = tempfile.mkdtemp(prefix="vx-sweep-")
        self.addCleanup(shutil.rmtree, tmp)
        os.makedirs(os.path.join(tmp, "s"))
        with open(os.path.join(tmp, "s", "stack.yaml"), "w") as f:
            f.write("kind: Stack\nname: s\nproject: my-project\nregion: us-central1\n" + text)
        cp = subprocess.run([VX_BIN, "validate", "s"], cwd=tmp, capture_output=True, text=True)
        self.assertGreaterEqual(cp.returncode, 0, cp.stderr)
        self.assertNotIn("Sanitizer", cp.stderr)
        return cp.returncode, cp.stdout, cp.stderr

    def test_valid_sweep_counts_its_runs(self):
        self.assertEqual(self.validate(sweep()),
                         (0, "stack s: 12 jobs, 0 reservations, 0 quota preferences: valid\n", ""))

    def test_unknown_matrix_name_at_its_column(self):
        text = sweep().replace("${{ matrix.seed }}", "${{ matrix.sed }}")
        self.assertEqual(self.validate(text),
                         (1, "", 's/stack.yaml:21:80: CustomJob "lr-sweep": spec.workerPoolSpecs[0].'
                                 'containerSpec.args[2]: unknown matrix name "sed" (the matrix has '
                                 'lr, batch, seed)\n'))

    def test_a_combination_that_breaks_a_rule_is_named_at_the_matrix(self):
        text = sweep().replace("acceleratorCount: 1", 'acceleratorCount: "${{ matrix.batch }}"')
        code, out, err = self.validate(text)
        self.assertEqual((code, out), (1, ""))
        want = ['s/stack.yaml:8:1: CustomJob "lr-sweep[%s]": spec.workerPoolSpecs[0].machineSpec.'
                'acceleratorCount: g2-standard-4 comes with 1 NVIDIA_L4; acceleratorCount is %s '
                '(the value written at line 17)' % (a[len("job.lr-sweep["):-1], a.split("batch=")[1][:2])
                for a in sorted(runs(), key=runs_order)]
        self.assertEqual(err.splitlines(), want)


class Sweep(FakeTestCase):
    def setUp(self):
        super().setUp()
        # A sweep creates 12 jobs at once; none of these tests is about pacing them
        # (test_plan_apply's 200-job test is), so the project's creation quota is raised.
        self.fake.raise_create_quota()

    def live(self):
        """Live jobs of the stack: {display name: job}."""
        return {j["displayName"]: j for j in self.live_jobs()}

    def test_each_run_its_own_address_labels_and_output_directory(self):
        self.repo.write({"s": sweep(limits="")})
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        live = self.live()
        self.assertEqual(sorted("job." + n for n in live), runs())
        labels = set()
        for name, j in live.items():
            combo = name[name.index("[") + 1:-1]
            self.assertEqual(j["jobSpec"]["baseOutputDirectory"],
                             {"outputUriPrefix": "gs://b/lr-sweep/%s/" % combo})
            lr, batch, seed = (kv.split("=")[1] for kv in combo.split(","))
            self.assertEqual(j["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"],
                             ["--lr=" + lr, "--batch=" + batch, "--seed=" + seed])
            label = j["labels"]["vx-job"]
            self.assertRegex(label, r"^lr-sweep--[0-9a-f]{13}$")
            labels.add(label)
        self.assertEqual(len(labels), 12)
        # the state holds each run under its address; status shows them
        r = self.repo.vx("status", self.repo.dir)
        self.assertEqual(r.code, 0, r)
        rows = [l.split()[0] for l in r.out.splitlines() if l.startswith("job.")]
        self.assertEqual(rows, runs())
        # a second plan changes nothing: every run is found again by its label
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertIn("\nPlan: no changes. 12 unchanged.\n", r.out)

    def test_target_a_slice_and_the_whole_sweep(self):
        self.repo.write({"s": sweep(limits="")})
        r = self.repo.apply("-target", "job.lr-sweep[seed=2,batch=64]")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(sorted("job." + n for n in self.live()),
                         ["job.lr-sweep[lr=1e-4,batch=64,seed=2]", "job.lr-sweep[lr=3e-4,batch=64,seed=2]"])
        r = self.repo.plan("-target", "job.lr-sweep")
        self.assertEqual(r.code, 0, r)
        self.assertIn("Plan: 10 to create. 2 unchanged.", r.out)
        r = self.repo.plan("-target", "job.lr-sweep[seed=9]")
        self.assertEqual(r.code, 1, r)

    def sweep_lines(self, out):
        """The plan's change lines: from the first after the header to the blank before Quota."""
        lines = out.splitlines()
        start = lines.index("") + 1
        return lines[start:lines.index("", start)]

    def test_max_parallel_plan_block_quota_and_cost(self):
        self.repo.write({"s": sweep()})
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.sweep_lines(r.out), [
            "  +   job.lr-sweep sweep: 4 of 12 now, 8 waiting",
            "        4 to create, 8 waiting, 0 running, 0 finished, 0 failed",
            "        maxParallel 4: the rest start as runs finish (vxapply or vx watch)",
            "        cost: $2.83/h at the cap (4 runs), at most $1,425 for every run left (12)",
        ])
        lines = r.out.splitlines()
        # the quota check counts the 4 runs that start, not the 12 declared
        self.assertIn("    L4           on-demand                     0      4  1000     996", lines)
        self.assertEqual(lines[-2:], ["Plan: 4 to create, 8 waiting. 0 unchanged.",
                                      "Cost: + $2.83/h while running, at most $474.99 for this apply."])
        # -verbose lists every run; the JSON plan has every run as an action
        r = self.repo.plan("-verbose")
        got = [l for l in self.sweep_lines(r.out) if l.startswith("  ")and not l.startswith("      ")
               or l.startswith("      job.")]
        want = []
        for a in runs():
            if "lr=1e-4" in a:
                want.append("  +   %s create" % a)
            else:
                want.append("      %s wait" % a)
        self.assertEqual(got, want)
        lines = r.out.splitlines()
        at = lines.index("      job.lr-sweep[lr=3e-4,batch=32,seed=1] wait")
        self.assertEqual(lines[at + 1:at + 3], [
            "        g2-standard-4 ×1, 1×L4, STANDARD in us-central1",
            "        waits: maxParallel 4 runs of job.lr-sweep are active; starts as runs finish"])
        r = self.repo.vx("plan", self.repo.dir, "-format", "json")
        plan = json.loads(r.out)
        self.assertEqual(sorted((a["address"], a["action"]) for a in plan["actions"]),
                         [(a, "create" if "lr=1e-4" in a else "wait") for a in runs()])
        self.assertEqual(plan["summary"]["create"], 4)
        self.assertEqual(plan["summary"]["wait"], 8)
        schemas.check(plan, "plan")
        self.assertEqual(plan["sweeps"], [{
            "address": "job.lr-sweep", "runs": 12, "create": 4, "wait": 8, "running": 0,
            "finished": 0, "failed": 0, "max_parallel": 4, "max_failed": None, "held": None}])

    def test_runs_start_as_others_finish_never_over_the_cap(self):
        self.repo.write({"s": sweep()})
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        first = sorted("job." + n for n in self.live())
        self.assertEqual(first, [a for a in runs() if "lr=1e-4" in a])
        self.assertEqual(len(self.active()), 4)
        # nothing finished: a second apply starts nothing
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.live_jobs()), 4)
        # the first four finish; a watch cycle starts the next four, in order
        self.fake.advance(3700)
        self.assertEqual(len(self.active()), 0)
        r = self.repo.vx("watch", self.repo.dir, "-once")
        self.assertEqual(r.code, 2, r)  # -once: 2 = it did something
        second = sorted("job." + n for n in self.live()
                        if "job." + n not in first)
        self.assertEqual(second, [a for a in runs() if "lr=3e-4" in a])
        self.assertEqual(len(self.active()), 4)
        # they finish too: vxapply starts the last four
        self.fake.advance(3700)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.active()), 4)
        self.assertEqual(len(self.live_jobs()), 12)
        self.fake.advance(3700)
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertIn("\nPlan: no changes. 12 unchanged.\n", r.out)

    def test_max_failed_stops_starting_runs(self):
        self.fake.post("/_fake/outcomes", {"labels": {}, "outcome": "user-error"})
        self.repo.write({"s": sweep(limits="maxParallel: 4\nmaxFailed: 3\n")})
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.fake.advance(3700)
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.sweep_lines(r.out), [
            "      job.lr-sweep sweep: 0 of 12 now, 8 waiting",
            "        0 to create, 8 waiting, 0 running, 0 finished, 4 failed",
            "        4 runs gave up (maxFailed 3): the waiting runs are not started; fix the "
            "cause, then raise maxFailed or bump run",
        ])
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.live_jobs()), 4)

    def test_adding_a_seed_creates_only_the_new_runs(self):
        self.repo.write({"s": sweep(limits="")})
        self.assertEqual(self.repo.apply().code, 0)
        before = {j["name"] for j in self.live_jobs()}
        self.repo.write({"s": sweep(seeds="1, 2, 3", limits="")})
        r = self.repo.plan("-verbose")
        self.assertEqual(r.code, 0, r)
        new = ["job.lr-sweep[lr=%s,batch=%d,seed=3]" % (lr, b)
               for lr in ("1e-4", "3e-4", "1e-3") for b in (32, 64)]
        self.assertEqual([l for l in self.sweep_lines(r.out) if l.startswith("  +")],
                         ["  +   %s create" % a for a in sorted(new)])
        self.assertIn("\nPlan: 6 to create. 12 unchanged.\n", r.out)
        self.assertEqual(self.repo.apply().code, 0)
        after = self.live_jobs()
        self.assertTrue(before <= {j["name"] for j in after})
        self.assertEqual(sorted("job." + j["displayName"] for j in after if j["name"] not in before),
                         sorted(new))

    def test_removing_a_value_cancels_only_those_runs(self):
        self.repo.write({"s": sweep(limits="")})
        self.assertEqual(self.repo.apply().code, 0)
        self.repo.write({"s": sweep(lrs="1e-4, 3e-4", limits="")})
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        gone = ["job.lr-sweep[lr=1e-3,batch=32,seed=1]", "job.lr-sweep[lr=1e-3,batch=32,seed=2]",
                "job.lr-sweep[lr=1e-3,batch=64,seed=1]"]
        self.assertEqual([l for l in self.sweep_lines(r.out) if l.startswith("  -")],
                         ["  -   %s cancel" % a for a in gone])
        self.assertIn("\nPlan: 3 to cancel. 9 unchanged.\n", r.out)
        self.assertEqual(self.repo.apply().code, 0)
        states = {"job." + j["displayName"]: j["state"] for j in self.live_jobs()}
        self.assertEqual(sorted(a for a, s in states.items() if s in ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED")),
                         gone)
        self.assertEqual(len([s for s in states.values() if s == "JOB_STATE_QUEUED"]), 9)

    def test_state_lost_refuses_to_run_the_sweep_twice(self):
        """A sweep's run carries a hashed vx-job label, not its address: with the state
        branch gone, the plan must still see that its runs are live and refuse to create
        them again, naming their addresses."""
        self.repo.write({"s": sweep(limits="")})
        self.assertEqual(self.repo.apply().code, 0)
        lineage = {j["labels"]["vx-lineage"] for j in self.live_jobs()}.pop()
        names = {"job." + j["displayName"]: j["name"] for j in self.live_jobs()}
        self.repo.git("branch", "-D", "vx/state/e2e")
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 1, r)
        first = runs()[:3]
        errors = r.out[r.out.index("Errors (the plan cannot be applied):"):].splitlines()[1]
        self.maxDiff = None
        self.assertEqual(errors,
            "  the state of stack e2e was not found (none was loaded: serial 0), but live jobs of this "
            "stack from another state (vx-lineage %s) carry 12 of the addresses this plan would create: "
            "%s (%s, queued), %s (%s, queued), %s (%s, queued) and 9 more. Creating them would run "
            "these jobs a second time. Likely cause: the state is kept on the branch vx/state/e2e, "
            "which this clone does not have, and state.remote is unset, so vx does not fetch it (a CI "
            "checkout fetches one branch). Fix: set state.remote (e.g. remote: origin) in the Stack, "
            "or fetch the branch before planning: git fetch origin vx/state/e2e:vx/state/e2e. To "
            "create them anyway (they are not this stack's), re-run with -allow-other-lineage" % (lineage, first[0], names[first[0]], first[1], names[first[1]],
                                      first[2], names[first[2]]))
        self.assertNotIn("Warnings:", r.out)
        r = self.repo.apply()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(len(self.live_jobs()), 12, "an apply must create nothing")

    def test_replace_a_slice_of_a_sweep(self):
        """-replace takes a sweep's address or a slice, as -target does: it replaces each
        active run it names and nothing else."""
        self.repo.write({"s": sweep(limits="")})
        self.assertEqual(self.repo.apply().code, 0)
        r = self.repo.plan("-replace", "job.lr-sweep[seed=2]")
        self.assertEqual(r.code, 0, r)
        replaced = [l.split()[1] for l in r.out.splitlines() if l.endswith(" replace")]
        self.assertEqual(replaced, [a for a in runs() if a.endswith("seed=2]")])
        self.assertIn("Plan: 5 to replace. 7 unchanged.", r.out.splitlines())
        r = self.repo.plan("-replace", "job.lr-sweep")
        self.assertEqual(r.code, 0, r)
        self.assertEqual([l.split()[1] for l in r.out.splitlines() if l.endswith(" replace")], runs())
        r = self.repo.plan("-replace", "job.lr-sweep[seed=9]")
        self.assertEqual((r.code, r.err), (1, "vx: -replace job.lr-sweep[seed=9]: no such address is declared\n"))

    def test_foreign_runs_are_named_by_their_address(self):
        """With the state lost and -allow-other-lineage, the plan warns of every live run
        of the other state: by its address, not by the hashed vx-job label it carries."""
        self.repo.write({"s": sweep(limits="")})
        self.assertEqual(self.repo.apply().code, 0)
        lineage = {j["labels"]["vx-lineage"] for j in self.live_jobs()}.pop()
        names = {"job." + j["displayName"]: j["name"] for j in self.live_jobs()}
        self.repo.git("branch", "-D", "vx/state/e2e")
        r = self.repo.plan("-allow-other-lineage")
        self.assertEqual(r.code, 0, r)
        warnings = r.out[r.out.index("Warnings:"):].splitlines()[1:13]
        self.maxDiff = None
        # in the order the server listed them
        self.assertEqual(sorted(warnings), sorted([
            "  %s: live job %s (queued) is labelled vx-stack=e2e but belongs to another state "
            "(vx-lineage=%s); vx leaves it alone. If another repository uses the stack name e2e, "
            "rename one of the two stacks; if it is a leftover of this one, cancel it with 'gcloud "
            "ai custom-jobs cancel %s'" % (a, names[a], lineage, names[a])
            for a in names]))

    def test_status_and_log_of_a_sweep_and_a_slice(self):
        self.repo.write({"s": sweep()})
        self.assertEqual(self.repo.apply().code, 0)
        r = self.repo.vx("status", self.repo.dir)
        self.assertEqual(r.code, 0, r)
        rows = [l.split()[:2] for l in r.out.splitlines() if l.startswith("job.")]
        self.assertEqual(rows, [[a, "QUEUED" if "lr=1e-4" in a else "WAITING"] for a in runs()])
        waiting = [l for l in r.out.splitlines() if l.startswith("job.lr-sweep[lr=3e-3")]
        self.assertEqual(waiting, ["job.lr-sweep[lr=3e-3,batch=32,seed=1]  WAITING  -        -     "
                                   "us-central1  -        -        $0.00"])
        # vx log of a slice: its runs, each with its history
        r = self.repo.vx("log", "-C", self.repo.dir, "job.lr-sweep[batch=64,seed=2]")
        self.assertEqual(r.code, 0, r)
        heads = [l for l in r.out.splitlines() if not l.startswith(" ")]
        self.assertEqual(heads, ["job.lr-sweep[lr=1e-4,batch=64,seed=2]", "job.lr-sweep[lr=3e-4,batch=64,seed=2]"])
        self.assertRegex(r.out.splitlines()[1], r"^  \S+  create    projects/\S+/customJobs/\d+  attempt 1  run 1  ")
        self.assertEqual(r.out.splitlines()[3], "  (no runs)")
        r = self.repo.vx("log", "-C", self.repo.dir, "job.lr-sweep")
        self.assertEqual([l for l in r.out.splitlines() if not l.startswith(" ")], runs())
        r = self.repo.vx("log", "-C", self.repo.dir, "job.lr-sweep[seed=9]")
        self.assertEqual((r.code, r.err), (1, "vx: job.lr-sweep[seed=9]: no such address in the state or "
                                              "its history\n"))


EVAL = """---
kind: CustomJob
name: eval
after: [job.train]
spec:
  workerPoolSpecs:
    - machineSpec: {machineType: n1-standard-4}
      replicaCount: 1
      containerSpec:
        imageUri: us-docker.pkg.dev/p/r/eval:1
        args: ["--checkpoint=${{ jobs.train.outputDir }}/model", "--run=${{ jobs.train.run }}"]
"""


class After(FakeTestCase):
    """after: a job created only once the jobs it names succeeded."""

    def eval_lines(self, out):
        lines = out.splitlines()
        at = lines.index("      job.eval wait")
        return lines[at:at + 3]

    def test_eval_waits_for_train_and_gets_its_output_directory(self):
        self.repo.write({"a": job_yaml("train", on="preempted"), "b": EVAL})
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.eval_lines(r.out), [
            "      job.eval wait",
            "        n1-standard-4 ×1, STANDARD in us-central1",
            "        waits for job.train (not started yet): after: starts this job once it succeeded"])
        self.assertIn("\nPlan: 1 to create, 1 waiting. 0 unchanged.\n", r.out)
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual([j["displayName"] for j in self.live_jobs()], ["train"])
        # running: still waiting, and the apply creates nothing
        self.fake.advance(60)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.eval_lines(r.out)[2],
                         "        waits for job.train (running): after: starts this job once it succeeded")
        self.assertEqual(len(self.live_jobs()), 1)
        # train succeeds: a vx watch cycle starts eval, with train's output directory
        self.fake.advance(3700)
        r = self.repo.vx("watch", self.repo.dir, "-once")
        self.assertEqual(r.code, 2, r)
        ev = [j for j in self.live_jobs() if j["displayName"] == "eval"]
        self.assertEqual(len(ev), 1)
        self.assertEqual(ev[0]["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"],
                         ["--checkpoint=gs://e2e-bucket/train/model", "--run=1"])

    def test_an_apply_that_only_waits_records_the_wait(self):
        """eval is added while train runs: the apply only records eval as waiting (no job is created, no
        progress line), and that record is kept, so the watcher starts eval as applied when train succeeds."""
        self.repo.write({"a": job_yaml("train", on="preempted")})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(60)
        self.repo.write({"a": job_yaml("train", on="preempted"), "b": EVAL})
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.eval_lines(r.out)[2],
                         "        waits for job.train (running): after: starts this job once it succeeded")
        r = self.repo.vx("status", self.repo.dir)
        self.assertEqual([l.split()[:2] for l in r.out.splitlines() if l.startswith("job.")],
                         [["job.eval", "WAITING"], ["job.train", "RUNNING"]], r)
        self.fake.advance(3700)
        r = self.repo.vx("watch", self.repo.dir, "-once")
        self.assertEqual((r.code, r.err), (2, ""), r)
        lines = [l.split(" ", 1)[1] for l in r.out.splitlines()]
        self.assertEqual(len(lines), 2, r)
        self.assertEqual(lines[0], "record: recorded: job.train: running -> succeeded")
        self.assertRegex(lines[1], r"^act: \+ job\.eval create projects/\d+/locations/us-central1/customJobs/\d+$")
        self.assertEqual(len([j for j in self.live_jobs() if j["displayName"] == "eval"]), 1)

    def test_a_dependency_that_gave_up_is_said_and_nothing_is_created(self):
        self.fake.post("/_fake/outcomes", {"labels": {"vx-job": "train"}, "outcome": "user-error"})
        self.repo.write({"a": job_yaml("train", on="preempted"), "b": EVAL})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(3700)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.eval_lines(r.out)[2],
                         "        not created: job.train gave up (failed); after: starts this job only "
                         "once it succeeds: fix it and bump its run")
        self.assertEqual([j["displayName"] for j in self.live_jobs()], ["train"])

    def test_a_cycle_is_refused_at_its_lines(self):
        text = (EVAL + "---\n" + job_yaml("train").replace("name: train\n", "name: train\nafter: [job.eval]\n")
                .replace("---\n", "", 1))
        d = os.path.join(self.tmp, "v")
        os.makedirs(d)
        with open(os.path.join(d, "stack.yaml"), "w") as f:
            f.write("kind: Stack\nname: v\nproject: my-project\nregion: us-central1\n" + text)
        cp = subprocess.run([VX_BIN, "validate", d], capture_output=True, text=True)
        self.assertEqual((cp.returncode, cp.stdout), (1, ""), cp.stderr)
        self.assertEqual(cp.stderr.splitlines(), [
            "%s/stack.yaml:8:1: CustomJob \"eval\": after: a cycle: job.eval -> job.train -> job.eval "
            "(each waits for the next); remove one of these after: entries" % d,
            "%s/stack.yaml:19:1: CustomJob \"train\": after: a cycle: job.train -> job.eval -> job.train "
            "(each waits for the next); remove one of these after: entries" % d])


EVAL_DIR = EVAL.replace(', "--run=${{ jobs.train.run }}"', "")


class AfterFollows(FakeTestCase):
    """A new run of a dependency makes the dependent run again after it: the dependent's
    run records which run of each dependency it followed."""

    def start(self):
        """train succeeds, eval is created after it and succeeds."""
        self.repo.write({"a": job_yaml("train", on="preempted"), "b": EVAL_DIR})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(3700)
        self.assertEqual(self.repo.apply().code, 0)
        ev = [j for j in self.live_jobs() if j["displayName"] == "eval"]
        self.assertEqual(len(ev), 1)
        self.assertEqual(ev[0]["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"],
                         ["--checkpoint=gs://e2e-bucket/train/model"])
        self.fake.advance(3700)
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertIn("\nPlan: no changes. 2 unchanged.\n", r.out)

    def eval_block(self, out):
        """job.eval's plan lines (header, shape, reason), stripped."""
        lines = out.splitlines()
        at = [i for i, l in enumerate(lines) if l.endswith(" job.eval wait") or l.endswith(" job.eval rerun")]
        self.assertEqual(len(at), 1, out)
        return [l.strip() for l in lines[at[0]:at[0] + 3]]

    def train_run(self, n):
        return [j["name"] for j in self.live_jobs("train")][n - 1]

    def bump_train_then_eval_reruns(self):
        self.repo.write({"a": job_yaml("train", on="preempted", run=2), "b": EVAL_DIR})
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.block(r.out, "job.train")[0], "↻   job.train rerun")
        self.assertEqual(self.eval_block(r.out), [
            "job.eval wait", "n1-standard-4 ×1, STANDARD in us-central1",
            "waits for job.train (starting a new run): after: runs this job again once it succeeded"])
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(len(self.live_jobs("eval")), 1)
        self.fake.advance(60)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.eval_block(r.out)[2],
                         "waits for job.train (running): after: runs this job again once it succeeded")
        self.assertEqual(len(self.live_jobs("eval")), 1)
        self.fake.advance(3700)
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.eval_block(r.out), [
            "↻   job.eval rerun", "n1-standard-4 ×1, STANDARD in us-central1",
            "job.train has a new run (run 2, attempt 1: %s) after the last run succeeded"
            % self.train_run(2)])
        creates = self.fake.rpc_count("CreateCustomJob")
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.fake.rpc_count("CreateCustomJob"), creates + 1)
        self.assertEqual(len(self.live_jobs("eval")), 2)
        self.fake.advance(3700)
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertIn("\nPlan: no changes. 2 unchanged.\n", r.out)

    def test_a_new_run_of_train_reruns_eval_after_it(self):
        self.start()
        self.bump_train_then_eval_reruns()
        rec = json.loads(self.repo.git("show", "vx/state/e2e:jobs/eval.json"))
        self.assertEqual(rec["history"][-1]["follows"], {"job.train": self.train_run(1)})
        self.assertEqual(rec["current"]["follows"], {"job.train": self.train_run(2)})

    def test_an_older_state_without_the_record_reruns_nothing(self):
        """A state written before the follow record: the dependent followed the runs that
        were there when it was created, so nothing reruns until a dependency has a new run."""
        self.start()
        rec = json.loads(self.repo.git("show", "vx/state/e2e:jobs/eval.json"))
        rec["current"].pop("follows", None)
        env = dict(self.fake.env(), GIT_INDEX_FILE=os.path.join(self.tmp, "old-index"))
        git = lambda *a, **kw: subprocess.run(["git", "-C", self.repo.root] + list(a), check=True,
                                              capture_output=True, text=True, env=env, **kw).stdout.strip()
        git("read-tree", "vx/state/e2e")
        blob = git("hash-object", "-w", "--stdin", input=json.dumps(rec, indent=2) + "\n")
        git("update-index", "--cacheinfo", "100644,%s,jobs/eval.json" % blob)
        commit = git("commit-tree", git("write-tree"), "-p", "vx/state/e2e", "-m", "an older state")
        git("update-ref", "refs/heads/vx/state/e2e", commit)
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertIn("\nPlan: no changes. 2 unchanged.\n", r.out)
        self.bump_train_then_eval_reruns()

    def test_a_running_eval_is_left_to_finish_then_reruns(self):
        self.repo.write({"a": job_yaml("train", on="preempted"), "b": EVAL_DIR})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(3700)
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(60)
        self.assertEqual([j["state"] for j in self.live_jobs("eval")], ["JOB_STATE_RUNNING"])
        # train's new run is short: it succeeds while eval still runs
        self.fake.post("/_fake/timings", {"running_seconds": 600})
        self.repo.write({"a": job_yaml("train", on="preempted", run=2), "b": EVAL_DIR})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(700)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.eval_block(r.out), [
            "job.eval wait", "n1-standard-4 ×1, STANDARD in us-central1",
            "its run is running after job.train's previous run; after: runs it again once it ended "
            "(job.train has a new run: run 2, attempt 1: %s)" % self.train_run(2)])
        self.assertEqual([j["state"] for j in self.live_jobs("eval")], ["JOB_STATE_RUNNING"])
        self.fake.advance(3700)
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.eval_block(r.out)[0], "↻   job.eval rerun")
        self.assertEqual(len(self.live_jobs("eval")), 2)


    def test_editing_after_is_seen(self):
        """A dependency added to after: reruns the dependent after its run; one removed does not."""
        self.repo.write({"a": job_yaml("train", on="preempted"), "p": job_yaml("prep", on="preempted"),
                         "b": EVAL_DIR})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(3700)
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(3700)
        both = EVAL_DIR.replace("after: [job.train]", "after: [job.train, job.prep]")
        self.repo.write({"a": job_yaml("train", on="preempted"), "p": job_yaml("prep", on="preempted"),
                         "b": both})
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.eval_block(r.out), [
            "↻   job.eval rerun", "n1-standard-4 ×1, STANDARD in us-central1",
            "after: now names job.prep, whose run (run 1, attempt 1: %s) the last run did not follow"
            % self.live_jobs("prep")[0]["name"]])
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(len(self.live_jobs("eval")), 2)
        self.fake.advance(3700)
        self.repo.write({"a": job_yaml("train", on="preempted"), "p": job_yaml("prep", on="preempted"),
                         "b": EVAL_DIR})
        # No new run: an update that records the after: list the watcher acts on.
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.block(r.out, "job.eval"), [
            "~   job.eval update", "n1-standard-4 ×1, STANDARD in us-central1",
            "after: [job.prep, job.train] -> [job.train]"])
        self.assertIn("\nPlan: 1 to update. 2 unchanged.\n", r.out)
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(len(self.live_jobs("eval")), 2)
        self.assertIn("\nPlan: no changes. 3 unchanged.\n", self.repo.plan().out)


    def test_a_slice_of_a_sweep_each_run_followed_and_watch_reruns(self):
        """after: a slice: the follow record names each of its runs; a new run of the sweep
        holds eval until they all succeeded, then a vx watch cycle reruns it."""
        ev = EVAL_DIR.replace("after: [job.train]", 'after: ["job.lr-sweep[batch=32,seed=1]"]').replace(
            "jobs.train.outputDir", "jobs.lr-sweep.outputDir")
        self.repo.write({"s": sweep(seeds="1", limits=""), "b": ev})
        self.assertEqual(self.repo.apply().code, 0)
        self.fake.advance(3700)
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(len(self.live_jobs("eval")), 1)
        slice_ = ["job.lr-sweep[lr=%s,batch=32,seed=1]" % lr for lr in ("1e-3", "1e-4", "3e-3", "3e-4")]
        names = {"job." + j["displayName"]: j["name"] for j in self.live_jobs()}
        rec = json.loads(self.repo.git("show", "vx/state/e2e:jobs/eval.json"))
        self.assertEqual(rec["current"]["follows"], {a: names[a] for a in slice_})
        self.fake.advance(3700)
        self.repo.write({"s": sweep(seeds="1", limits="run: 2\n"), "b": ev})
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.eval_block(r.out)[2], "waits for %s (starting a new run): after: runs this "
                                                     "job again once it succeeded" % slice_[1])   # the first in the sweep's order
        self.assertEqual(len(self.live_jobs("eval")), 1)
        self.fake.advance(3700)
        r = self.repo.vx("watch", self.repo.dir, "-once")
        self.assertEqual(len(self.live_jobs("eval")), 2, r)


if __name__ == "__main__":
    unittest.main()
