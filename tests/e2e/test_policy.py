"""End to end: `kind: Policy` (issue 36, docs/policy.md).

A repository's .vx/policy.yaml binds every stack below it; a stack's own Policy may only tighten
it. For every rule, a stack that breaks it fails `vx validate` with the exact diagnostics (the
field's FILE:LINE:COLUMN, the rule and where it is written) and one that keeps it passes. Fallback
rungs and sweep runs are checked after expansion, each named. The plan lists the rules that held.
"""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from harness import FakeTestCase, VX_BIN, job_yaml

REPO_POLICY = """kind: Policy
name: ml-platform
rules:
  accelerators: [NVIDIA_L4, NVIDIA_H100_80GB]
  regions: [us-central1, europe-west4]
  strategies: [SPOT, FLEX_START]
  maxGpusPerJob: 16
  maxGpusActive: 24
  maxHourlyUsd: 200
  maxTimeout: 72h
  requireLabels: [team, cost-center]
  reservations: {allow: false}
  quotaPreferences: {allow: false}
"""
WHERE = '.vx/policy.yaml'

STACK = """kind: Stack
name: research
project: my-project
region: us-central1
labels: {team: ml, cost-center: c1}
prices: prices.json
"""

# Hand-made rates: a g2-standard-4 (its L4 included) costs $150/h on demand, $50/h spot; a
# g2-standard-48 (4 L4) $300/h spot.
PRICES = {"source": "team table", "date": "2026-01-01", "currency": "USD",
          "regions": {"*": {"machines": {"g2-standard-4": {"on_demand": 150, "spot": 50},
                                         "g2-standard-48": {"on_demand": 600, "spot": 300}}}}}


def job(name="train", region="us-central1", scheduling="{strategy: SPOT, timeout: 24h}",
        machine="g2-standard-4", accel="NVIDIA_L4", count=1, replicas=1, extra=""):
    """A CustomJob whose fields sit on fixed lines: region 3, scheduling 5, machineSpec 7,
    replicaCount 8."""
    return ("kind: CustomJob\n"
            "name: %s\n"
            "region: %s\n"
            "spec:\n"
            "  scheduling: %s\n"
            "  workerPoolSpecs:\n"
            "    - machineSpec: {machineType: %s, acceleratorType: %s, acceleratorCount: %d}\n"
            "      replicaCount: %d\n"
            "      containerSpec: {imageUri: us-docker.pkg.dev/p/r/train:1}\n%s"
            % (name, region, scheduling, machine, accel, count, replicas, extra))


class PolicyValidate(unittest.TestCase):
    maxDiff = None
    """vx validate of a stack in a git repository with a .vx/policy.yaml."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vx-policy-")
        self.root = os.path.join(self.tmp, "repo")
        os.makedirs(os.path.join(self.root, "stack"))
        os.makedirs(os.path.join(self.root, ".vx"))
        subprocess.run(["git", "init", "-q", self.root], check=True)
        self.put(".vx/policy.yaml", REPO_POLICY)
        self.put("stack/stack.yaml", STACK)
        self.put("stack/prices.json", json.dumps(PRICES))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def put(self, rel, text):
        with open(os.path.join(self.root, rel), "w") as f:
            f.write(text)

    def validate(self):
        cp = subprocess.run([VX_BIN, "validate", "stack"], cwd=self.root, capture_output=True, text=True,
                            timeout=60, env=dict(os.environ, VX_PRICES=""))
        self.assertLess(cp.returncode, 128, cp.stderr)
        self.assertNotIn("Sanitizer", cp.stderr)
        self.assertNotIn("runtime error:", cp.stderr)
        return cp

    def assert_valid(self, summary="stack research: 1 job, 0 reservations, 0 quota preferences: valid\n"):
        cp = self.validate()
        self.assertEqual((cp.returncode, cp.stderr, cp.stdout), (0, "", summary))

    def assert_refused(self, *lines):
        cp = self.validate()
        self.assertEqual((cp.returncode, cp.stdout), (1, ""), cp.stderr)
        self.assertEqual(cp.stderr, "".join(line + "\n" for line in lines))

    # ---- each rule: broken, and kept ----

    def test_conforming_stack_passes(self):
        self.put("stack/jobs.yaml", job())
        self.assert_valid()

    def test_accelerators(self):
        self.put("stack/jobs.yaml", job(machine="a2-ultragpu-1g", accel="NVIDIA_A100_80GB"))
        self.assert_refused(
            'stack/jobs.yaml:7:67: CustomJob "train": spec.workerPoolSpecs[0].machineSpec.acceleratorType: '
            'NVIDIA_A100_80GB is not allowed by policy "ml-platform" (rules.accelerators, %s:4)' % WHERE)
        self.put("stack/jobs.yaml", job(accel="NVIDIA_L4"))
        self.assert_valid()

    def test_regions(self):
        self.put("stack/jobs.yaml", job(region="us-east1"))
        self.assert_refused(
            'stack/jobs.yaml:3:9: CustomJob "train": region: us-east1 is not allowed by policy "ml-platform" '
            '(rules.regions, %s:5)' % WHERE)
        self.put("stack/jobs.yaml", job(region="europe-west4"))
        self.assert_valid()

    def test_region_from_the_stack(self):
        self.put("stack/stack.yaml", STACK.replace("us-central1", "us-east1"))
        self.put("stack/jobs.yaml", job().replace("region: us-central1\n", ""))
        self.assert_refused(
            'stack/jobs.yaml:1:1: CustomJob "train": region: us-east1 (the Stack\'s) is not allowed by policy '
            '"ml-platform" (rules.regions, %s:5)' % WHERE)

    def test_strategies(self):
        self.put("stack/jobs.yaml", job(scheduling="{strategy: STANDARD, timeout: 24h}"))
        self.assert_refused(
            'stack/jobs.yaml:5:26: CustomJob "train": spec.scheduling.strategy: STANDARD is not allowed by policy '
            '"ml-platform" (rules.strategies, %s:6)' % WHERE)
        # unset is on demand, STANDARD as Vertex AI names it
        self.put("stack/jobs.yaml", job(scheduling="{timeout: 24h}"))
        self.assert_refused(
            'stack/jobs.yaml:5:3: CustomJob "train": spec.scheduling.strategy: STANDARD (not set: on demand) is '
            'not allowed by policy "ml-platform" (rules.strategies, %s:6)' % WHERE)
        self.put("stack/jobs.yaml", job(scheduling="{strategy: FLEX_START, timeout: 24h}"))
        self.assert_valid()

    def test_max_gpus_per_job(self):
        # 4 L4 a replica, 5 replicas: 20 GPUs (and under the rate: spot, priced per replica)
        self.put(".vx/policy.yaml", REPO_POLICY.replace("maxHourlyUsd: 200", "maxHourlyUsd: 2000"))
        self.put("stack/jobs.yaml", job(machine="g2-standard-48", count=4, replicas=5))
        self.assert_refused(
            'stack/jobs.yaml:7:5: CustomJob "train": spec.workerPoolSpecs: 20 GPUs is more than policy '
            '"ml-platform" (rules.maxGpusPerJob, %s:7) allows (at most 16)' % WHERE)
        self.put("stack/jobs.yaml", job(machine="g2-standard-48", count=4, replicas=4))
        self.assert_valid()

    def test_max_gpus_active(self):
        self.put(".vx/policy.yaml", REPO_POLICY.replace("maxHourlyUsd: 200", "maxHourlyUsd: 2000"))
        a = job("a", machine="g2-standard-48", count=4, replicas=4)
        b = job("b", machine="g2-standard-48", count=4, replicas=3)
        self.put("stack/jobs.yaml", a + "---\n" + b)
        self.assert_refused(
            'stack/jobs.yaml:11:1: CustomJob "b": spec.workerPoolSpecs: its 12 GPUs take the GPUs of the '
            'stack\'s jobs active at once to 28, more than policy "ml-platform" (rules.maxGpusActive, %s:8) '
            'allows (at most 24)' % WHERE)
        self.put("stack/jobs.yaml", a + "---\n" + job("b", machine="g2-standard-48", count=4, replicas=2))
        self.assert_valid("stack research: 2 jobs, 0 reservations, 0 quota preferences: valid\n")

    def test_max_gpus_active_counts_a_sweep_to_max_parallel(self):
        self.put(".vx/policy.yaml", REPO_POLICY.replace("maxHourlyUsd: 200", "maxHourlyUsd: 2000"))
        sweep = job("sw", machine="g2-standard-48", count=4, replicas=2,
                    extra="matrix:\n  lr: [1, 2, 3, 4]\nmaxParallel: %d\n")
        self.put("stack/jobs.yaml", sweep % 3)
        self.assert_valid("stack research: 4 jobs, 0 reservations, 0 quota preferences: valid\n")
        self.put("stack/jobs.yaml", sweep % 4)
        self.assert_refused(
            'stack/jobs.yaml:1:1: CustomJob "sw[lr=4]": spec.workerPoolSpecs: its 8 GPUs take the GPUs of the '
            'stack\'s jobs active at once to 32, more than policy "ml-platform" (rules.maxGpusActive, %s:8) '
            'allows (at most 24)' % WHERE)

    def test_max_hourly_usd(self):
        # on demand is $150/h, under the cap; spot is $50/h
        self.put(".vx/policy.yaml", REPO_POLICY.replace("maxHourlyUsd: 200", "maxHourlyUsd: 100")
                 .replace("[SPOT, FLEX_START]", "[SPOT, STANDARD]"))
        self.put("stack/jobs.yaml", job(scheduling="{strategy: STANDARD, timeout: 24h}"))
        self.assert_refused(
            'stack/jobs.yaml:7:5: CustomJob "train": spec.workerPoolSpecs: $150.00 per hour (team table) is more '
            'than policy "ml-platform" (rules.maxHourlyUsd, %s:9) allows (at most $100)' % WHERE)
        self.put("stack/jobs.yaml", job())
        self.assert_valid()

    def test_max_timeout(self):
        self.put("stack/jobs.yaml", job(scheduling="{strategy: SPOT, timeout: 96h}"))
        self.assert_refused(
            'stack/jobs.yaml:5:41: CustomJob "train": spec.scheduling.timeout: 96h is more than policy '
            '"ml-platform" (rules.maxTimeout, %s:10) allows (at most 72h)' % WHERE)
        self.put("stack/jobs.yaml", job(scheduling="{strategy: SPOT}"))
        self.assert_refused(
            'stack/jobs.yaml:5:3: CustomJob "train": spec.scheduling.timeout: not set, and policy "ml-platform" '
            '(rules.maxTimeout, %s:10) requires a timeout of at most 72h' % WHERE)
        self.put("stack/jobs.yaml", job(scheduling="{strategy: SPOT, timeout: 72h}"))
        self.assert_valid()

    def test_require_labels(self):
        self.put("stack/stack.yaml", STACK.replace(", cost-center: c1", ""))
        self.put("stack/jobs.yaml", job())
        self.assert_refused(
            'stack/jobs.yaml:1:1: CustomJob "train": labels: no "cost-center" label, which policy "ml-platform" '
            '(rules.requireLabels, %s:11) requires' % WHERE)
        self.put("stack/jobs.yaml", job().replace("region:", "labels: {cost-center: c2}\nregion:"))
        self.assert_valid()

    def test_reservations(self):
        self.put("stack/jobs.yaml", job())
        self.put("stack/pool.yaml", "kind: Reservation\nname: pool\nzone: us-central1-a\n"
                 "machineType: g2-standard-4\naccelerators: [{type: nvidia-l4, count: 1}]\ncount: 1\n")
        self.assert_refused(
            'stack/pool.yaml:1:1: Reservation "pool": not allowed by policy "ml-platform" (rules.reservations, '
            '%s:12): it allows no declared reservations' % WHERE)
        self.put(".vx/policy.yaml", REPO_POLICY.replace("reservations: {allow: false}", "reservations: {allow: true}"))
        self.assert_valid("stack research: 1 job, 1 reservation, 0 quota preferences: valid\n")

    def test_quota_preferences(self):
        self.put("stack/jobs.yaml", job())
        self.put("stack/quota.yaml", "kind: QuotaPreference\nname: l4\nservice: aiplatform.googleapis.com\n"
                 "quotaId: CustomModelTrainingL4GPUsPerProjectPerRegion\ndimensions: {region: us-central1}\n"
                 "preferredValue: 8\njustification: training\n")
        self.assert_refused(
            'stack/quota.yaml:1:1: QuotaPreference "l4": not allowed by policy "ml-platform" '
            '(rules.quotaPreferences, %s:13): it allows no declared quota preferences' % WHERE)
        self.put(".vx/policy.yaml", REPO_POLICY.replace("quotaPreferences: {allow: false}", ""))
        self.assert_valid("stack research: 1 job, 0 reservations, 1 quota preference: valid\n")

    # ---- after expansion ----

    def test_sweep_run_is_named(self):
        self.put("stack/jobs.yaml", job("sw", region='"${{ matrix.region }}"',
                                        extra="matrix:\n  region: [us-central1, us-east1]\n"))
        self.assert_refused(
            'stack/jobs.yaml:10:1: CustomJob "sw[region=us-east1]": region: us-east1 is not allowed by policy '
            '"ml-platform" (rules.regions, %s:5) (the value written at line 3)' % WHERE)
        # a run's rate is its own, named too
        self.put(".vx/policy.yaml", REPO_POLICY.replace("maxHourlyUsd: 200", "maxHourlyUsd: 100"))
        self.put("stack/jobs.yaml", job("sw", extra="matrix:\n  r: [1, 3]\n").replace(
            "replicaCount: 1", "replicaCount: ${{ matrix.r }}"))
        self.assert_refused(
            'stack/jobs.yaml:7:5: CustomJob "sw[r=3]": spec.workerPoolSpecs: $150.00 per hour '
            '(team table) is more than policy "ml-platform" (rules.maxHourlyUsd, %s:9) allows (at most $100)'
            % WHERE)

    def test_fallback_rung_is_named(self):
        ladder = ("resubmit:\n  on: [stockout]\n  maxAttempts: 3\n  fallback:\n"
                  "    - region: europe-west4\n"
                  "    - region: us-east1\n"
                  "      scheduling: {strategy: STANDARD}\n")
        self.put("stack/jobs.yaml", job(extra=ladder))
        self.assert_refused(
            'stack/jobs.yaml:15:15: CustomJob "train": resubmit.fallback[1].region: us-east1 is not allowed by '
            'policy "ml-platform" (rules.regions, %s:5)' % WHERE,
            'stack/jobs.yaml:16:30: CustomJob "train": resubmit.fallback[1].scheduling.strategy: STANDARD is not '
            'allowed by policy "ml-platform" (rules.strategies, %s:6)' % WHERE)

    # ---- the stack's own Policy ----

    def test_stack_policy_may_tighten(self):
        self.put("stack/policy.yaml", "kind: Policy\nname: research-rules\nrules:\n  regions: [europe-west4]\n"
                 "  maxGpusPerJob: 2\n")
        self.put("stack/jobs.yaml", job())
        self.assert_refused(
            'stack/jobs.yaml:3:9: CustomJob "train": region: us-central1 is not allowed by policy "research-rules" '
            '(rules.regions, stack/policy.yaml:4)')
        self.put("stack/jobs.yaml", job(region="europe-west4"))
        self.assert_valid()

    def test_stack_policy_may_not_loosen(self):
        self.put("stack/policy.yaml", "kind: Policy\nname: research-rules\nrules:\n"
                 "  regions: [europe-west4, us-east1]\n"
                 "  maxGpusPerJob: 32\n"
                 "  maxTimeout: 96h\n"
                 "  reservations: {allow: true}\n")
        self.put("stack/jobs.yaml", job(region="europe-west4"))
        self.assert_refused(
            'stack/policy.yaml:4:27: Policy "research-rules": rules.regions[1]: us-east1 is not allowed by the '
            'repository\'s policy "ml-platform" (rules.regions, %s:5): a stack\'s Policy may only tighten it'
            % WHERE,
            'stack/policy.yaml:5:18: Policy "research-rules": rules.maxGpusPerJob: 32 is more than the '
            'repository\'s policy "ml-platform" (rules.maxGpusPerJob, %s:7) allows (16): a stack\'s Policy may '
            'only tighten it' % WHERE,
            'stack/policy.yaml:6:15: Policy "research-rules": rules.maxTimeout: 96h is more than the repository\'s '
            'policy "ml-platform" (rules.maxTimeout, %s:10) allows (72h): a stack\'s Policy may only tighten it'
            % WHERE,
            'stack/policy.yaml:7:17: Policy "research-rules": rules.reservations: allow: true, but the repository\'s '
            'policy "ml-platform" (rules.reservations, %s:12) says allow: false: a stack\'s Policy may only '
            'tighten it' % WHERE)

    def test_policy_file_problems(self):
        self.put(".vx/policy.yaml", "kind: Policy\nname: ml-platform\nrules:\n  acelerators: [NVIDIA_L4]\n"
                 "  maxGpusPerJob: many\n  strategies: [SPOTT]\n  reservations: {allow: maybe}\n")
        self.put("stack/jobs.yaml", job())
        self.assert_refused(
            '.vx/policy.yaml:4:3: Policy "ml-platform": rules: unknown field "acelerators" (did you mean '
            '"accelerators"?)',
            '.vx/policy.yaml:5:18: Policy "ml-platform": rules.maxGpusPerJob: expected an integer, got "many"',
            '.vx/policy.yaml:6:16: Policy "ml-platform": rules.strategies[0]: unknown value "SPOTT" (did you '
            'mean "SPOT"?)',
            '.vx/policy.yaml:7:25: Policy "ml-platform": rules.reservations.allow: expected a boolean, got a '
            'string')

    def test_policy_file_may_not_be_a_link(self):
        outside = os.path.join(self.tmp, "policy.yaml")
        with open(outside, "w") as f:
            f.write(REPO_POLICY)
        os.remove(os.path.join(self.root, ".vx", "policy.yaml"))
        os.symlink(outside, os.path.join(self.root, ".vx", "policy.yaml"))
        self.put("stack/jobs.yaml", job())
        self.assert_refused(
            ".vx/policy.yaml:1:1: the repository's policy file is a symbolic link: git versions the link, not "
            "the file it names; copy the file into the repository")

    def test_no_repository_no_repository_policy(self):
        shutil.rmtree(os.path.join(self.root, ".git"))
        self.put("stack/jobs.yaml", job(region="us-east1"))
        self.assert_valid()


PLAN_POLICY = """kind: Policy
name: ml-platform
rules:
  accelerators: [NVIDIA_L4]
  strategies: [SPOT]
  maxGpusPerJob: 8
  requireLabels: [team]
  reservations: {allow: false}
"""


class PolicyPlan(FakeTestCase):
    """The plan lists the rules that held; a stack without a policy plans as before."""

    def setUp(self):
        super().setUp()
        os.makedirs(os.path.join(self.repo.root, ".vx"))
        with open(os.path.join(self.repo.root, ".vx", "policy.yaml"), "w") as f:
            f.write(PLAN_POLICY)
        self.repo.write({"a": job_yaml("a", strategy="SPOT")})

    def test_plan_lists_the_rules_held(self):
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.out.splitlines()[3],
                         "Policy: ml-platform (.vx/policy.yaml): 5 rules held: accelerators, strategies, "
                         "maxGpusPerJob, requireLabels, reservations")
        r = self.repo.plan("-format", "markdown")
        self.assertEqual(r.code, 0, r)
        self.assertIn("\n\n**Policy**: ml-platform (.vx/policy.yaml): 5 rules held: accelerators, strategies, "
                      "maxGpusPerJob, requireLabels, reservations\n\n", r.out)
        r = self.repo.plan("-format", "json")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(json.loads(r.out)["policy"], {
            "documents": [{"name": "ml-platform", "file": ".vx/policy.yaml", "repository": True}],
            "rules_held": [
                {"rule": "accelerators", "policy": "ml-platform", "file": ".vx/policy.yaml", "line": 4},
                {"rule": "strategies", "policy": "ml-platform", "file": ".vx/policy.yaml", "line": 5},
                {"rule": "maxGpusPerJob", "policy": "ml-platform", "file": ".vx/policy.yaml", "line": 6},
                {"rule": "requireLabels", "policy": "ml-platform", "file": ".vx/policy.yaml", "line": 7},
                {"rule": "reservations", "policy": "ml-platform", "file": ".vx/policy.yaml", "line": 8},
            ]})

    def test_plan_refuses_what_the_policy_forbids(self):
        self.repo.write({"a": job_yaml("a", strategy="STANDARD")})
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.out, "")
        self.assertEqual(r.err, '%s/jobs.yaml:11:26: CustomJob "a": spec.scheduling.strategy: STANDARD is not '
                         'allowed by policy "ml-platform" (rules.strategies, .vx/policy.yaml:5)\n'
                         'vx: %s: the stack has 1 error\n' % (self.repo.dir, self.repo.dir))

    def test_apply_records_the_policy_commit(self):
        policy_commit = self.repo.git("rev-parse", "HEAD").strip()
        # a later commit that does not touch the policy: the policy's commit stays the one above
        self.repo.write({"a": job_yaml("a", strategy="SPOT", epochs=4)})
        head = self.repo.git("rev-parse", "HEAD").strip()
        self.assertNotEqual(head, policy_commit)
        r = self.repo.apply(env={"CI": ""})
        self.assertEqual(r.code, 0, r)
        creates = [m for m in self.repo.state_log() if m.strip().startswith("vx apply: + job.a\n")]
        self.assertEqual(len(creates), 1)
        cur = json.loads(self.repo.git("show", "vx/state/e2e:jobs/a.json"))["current"]
        trailers = creates[0].strip().split("\n\n")[-1].splitlines()
        self.assertEqual(trailers, ["Vx-Config-Commit: %s" % head, "Vx-Policy-Commit: %s" % policy_commit,
                                    "Vx-Actor: %s" % cur["launchedBy"], "Vx-Serial: 2"])
        self.assertEqual(cur["policyCommit"], policy_commit)
        r = self.repo.vx("log", "job.a", "-C", self.repo.dir)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.out,
                         "job.a\n"
                         "  2026-01-01T00:00:00Z  create    %s  attempt 1  run 1  by %s  config %s  policy %s  "
                         "cost $0.00  queued\n" % (cur["resource"], cur["launchedBy"], head[:12], policy_commit[:12]))

    def test_no_policy_no_line(self):
        os.remove(os.path.join(self.repo.root, ".vx", "policy.yaml"))
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertNotIn("Policy", r.out)
        r = self.repo.plan("-format", "json")
        self.assertNotIn("policy", json.loads(r.out))


class PolicyFollow(FakeTestCase):
    """vx watch -follow holds the followed commit to that commit's .vx/policy.yaml."""

    def test_the_followed_commits_policy_binds(self):
        remote = os.path.join(self.tmp, "remote.git")
        subprocess.run(["git", "init", "-q", "--bare", remote], check=True)
        self.repo.write({"a": job_yaml("a", strategy="SPOT")})
        self.repo.git("remote", "add", "origin", remote)
        self.repo.git("push", "-q", "origin", "main")
        other = os.path.join(self.tmp, "other")
        subprocess.run(["git", "clone", "-q", "-b", "main", remote, other], check=True, capture_output=True)
        # Merged on the branch, not in the watcher's checkout: a policy, and a job on demand it forbids.
        os.makedirs(os.path.join(other, ".vx"))
        with open(os.path.join(other, ".vx", "policy.yaml"), "w") as f:
            f.write(PLAN_POLICY)
        with open(os.path.join(other, "stack", "b.yaml"), "w") as f:
            f.write(job_yaml("b"))
        env = self.fake.env()
        for args in (["add", "-A"], ["commit", "-q", "-m", "merged"], ["push", "-q", "origin", "main"]):
            subprocess.run(["git", "-C", other] + args, check=True, env=env, capture_output=True)
        head = subprocess.run(["git", "-C", other, "rev-parse", "HEAD"], check=True, capture_output=True,
                              text=True).stdout.strip()
        self.assertFalse(os.path.exists(os.path.join(self.repo.root, ".vx")))
        r = self.repo.vx("watch", self.repo.dir, "-once", "-follow", "origin/main")
        self.assertEqual(r.code, 1, r)
        self.assertEqual([l.split(" ", 1)[1] for l in r.err.splitlines()], [
            'error: %s/b.yaml:11:26: CustomJob "b": spec.scheduling.strategy: STANDARD is not allowed by policy '
            '"ml-platform" (rules.strategies, .vx/policy.yaml:5)' % self.repo.dir,
            "error: origin/main at %s does not load (1 error above)" % head[:12],
            "error: origin/main at %s does not load, and no earlier commit did" % head[:12]])
        self.assertEqual(self.live_jobs(), [])


if __name__ == "__main__":
    unittest.main()
