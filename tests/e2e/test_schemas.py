"""Every example stack, and a stack of all three kinds, through a life against the fake: each
plan, status and report vx prints on the way is checked against its published schema
(docs/*.schema.json) by harness.Repo.vx, with python3-jsonschema (tests/e2e/schemas.py).

The life: the first plan (all creates), the apply, every job failing with a user error (Google's
message carries the Cloud Logging link: far longer than a line), the plan that shows those
failures whole, vx status, vx report, and the plan saved with -out. The hand-written checker
these tests had before ignored maxLength, and the plan schema said 201 characters at most.
"""
import glob
import os
import shutil
import subprocess

from harness import PROJECT, REGION, ROOT, FakeTestCase

EXAMPLES = sorted(os.path.basename(d) for d in glob.glob(os.path.join(ROOT, "examples", "*"))
                  if glob.glob(os.path.join(d, "stack.yaml")))

MIXED = """---
kind: Reservation
name: pool
zone: %s-a
machineType: g2-standard-8
accelerators: [{type: nvidia-l4, count: 1}]
count: 2
---
kind: QuotaPreference
name: l4
service: aiplatform.googleapis.com
quotaId: CustomModelTrainingL4GPUsPerProjectPerRegion
dimensions: {region: %s}
preferredValue: 16
contactEmail: ml-infra@example.com
---
kind: CustomJob
name: train
spec:
  workerPoolSpecs:
    - machineSpec: {machineType: g2-standard-8, acceleratorType: NVIDIA_L4, acceleratorCount: 1,
                    reservationAffinity: {reservation: pool}}
      replicaCount: 1
      containerSpec: {imageUri: "us-docker.pkg.dev/p/r/trainer:1"}
  baseOutputDirectory: {outputUriPrefix: "gs://e2e-bucket/train"}
---
kind: CustomJob
name: spot
spec:
  workerPoolSpecs:
    - machineSpec: {machineType: g2-standard-4, acceleratorType: NVIDIA_L4, acceleratorCount: 1}
      replicaCount: 1
      containerSpec: {imageUri: "us-docker.pkg.dev/p/r/trainer:1"}
  scheduling: {strategy: SPOT}
  baseOutputDirectory: {outputUriPrefix: "gs://e2e-bucket/spot"}
resubmit: {on: [preempted], maxAttempts: 2}
""" % (REGION, REGION)


class ExampleLives(FakeTestCase):
    def setUp(self):
        super().setUp()
        # The on-demand L4 and H100 quotas at 8, so that the quota preferences of the mixed stack
        # and of examples/reserved are increases, as they mean.
        for accel in ("NVIDIA_L4", "NVIDIA_H100_80GB"):
            self.fake.post("/_fake/quota", {"region": REGION, "accelerator_type": accel,
                                            "preemptible": False, "limit": 8})
        # examples/persistent: its resource's operations end at once, as its sandbox step makes them.
        self.fake.post("/_fake/timings", {"provisioning_seconds": 0, "updating_seconds": 0, "stopping_seconds": 0})
        # examples/reserved keeps its state on origin.
        bare = os.path.join(self.tmp, "origin.git")
        subprocess.run(["git", "init", "-q", "--bare", bare], check=True)
        self.repo.git("remote", "add", "origin", bare)

    def stack_from(self, files):
        """files: name -> text, written as the stack (project set to the fake's), committed."""
        for name, text in files.items():
            with open(os.path.join(self.repo.dir, name), "w") as f:
                f.write(text.replace("project: my-project", "project: " + PROJECT))
        self.repo.git("add", "-A")
        self.repo.git("commit", "-q", "-m", "stack")

    def life(self, stack):
        plan = self.repo.plan("-format", "json")
        self.assertIn(plan.code, (0, 2), plan)
        self.fake.post("/_fake/outcomes", {"labels": {"vx-stack": stack}, "outcome": "user-error"})
        r = self.repo.apply()
        self.assertEqual(r.code, 0, r)
        self.fake.advance(4000)
        plan = self.repo.plan("-format", "json")
        self.assertIn(plan.code, (0, 2), plan)
        status = self.repo.vx("status", self.repo.dir, "-format", "json")
        self.assertEqual(status.code, 0, status)
        report = self.repo.vx("report", self.repo.dir, "-since", "30d")
        self.assertEqual(report.code, 0, report)
        saved = self.repo.plan("-out", os.path.join(self.tmp, "saved.vxplan"))
        self.assertIn(saved.code, (0, 2), saved)
        return plan

    def test_examples(self):
        self.assertGreaterEqual(len(EXAMPLES), 5, EXAMPLES)
        long_messages = 0
        for name in EXAMPLES:
            with self.subTest(example=name):
                shutil.rmtree(self.repo.dir)
                os.makedirs(self.repo.dir)
                files = {}
                for path in glob.glob(os.path.join(ROOT, "examples", name, "*.yaml")):
                    with open(path) as f:
                        files[os.path.basename(path)] = f.read()
                self.stack_from(files)
                stack = [l.split(":", 1)[1].split("#")[0].strip() for l in files["stack.yaml"].splitlines()
                         if l.startswith("name:")][0]
                plan = self.life(stack)
                long_messages += plan.out.count("To find out more about why your job exited")
        self.assertGreater(long_messages, 0, "no example's plan showed a failed job's message")

    def test_a_stack_of_every_kind(self):
        self.repo.write({})
        self.stack_from({"more.yaml": MIXED})
        self.life(self.repo.stack)
