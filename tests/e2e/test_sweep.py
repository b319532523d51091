"""End to end: `matrix:` sweeps against the fake Google Cloud.

A sweep is one CustomJob document expanded into one job per combination,
each with its own address job.NAME[k=v,...], labels and output directory.
Runs finish by the fake's virtual clock (advanced by the test), never by
sleeping. Plans are compared whole.
"""
import os
import subprocess
import unittest

from harness import FakeTestCase, VX_BIN

SWEEP = """---
kind: CustomJob
name: lr-sweep
matrix:
  lr: [1e-4, 3e-4, 1e-3]
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


def sweep(seeds="1, 2", limits="maxParallel: 4\n"):
    return SWEEP.format(seeds=seeds, limits=limits)


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


if __name__ == "__main__":
    unittest.main()
