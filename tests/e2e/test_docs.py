"""End to end: what the user documentation tells a newcomer to type works.

* README.md's quick start: its Spot stack and its commands, run as written (the shell blocks, in
  a shell whose environment is what tools/sandbox sets) against the fake Google Cloud; the plan
  the README shows is the plan vx prints.
* docs/format.md: every YAML example validates. A complete stack is validated alone; the other
  documents of the page are validated together in one stack, and a fragment (a `resubmit:` or
  `notify:` mapping) inside the document it belongs to. An example of a new shape fails here
  until FRAGMENT_HOME says where it goes, so none is left unchecked.
"""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from harness import Fake, ROOT, VX_BIN

README = os.path.join(ROOT, "README.md")
FORMAT = os.path.join(ROOT, "docs", "format.md")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def section(text, heading):
    """The text under a '## ' heading, up to the next one."""
    m = re.search(r"^## %s\n(.*?)(?=^## |\Z)" % re.escape(heading), text, re.S | re.M)
    if not m:
        raise AssertionError("no section '## %s'" % heading)
    return m.group(1)


def fenced(text, lang):
    """The bodies of the ```lang blocks of text, in order ('' = blocks with no language)."""
    blocks, body, open_lang = [], None, None
    for line in text.splitlines(keepends=True):
        if body is None and line.startswith("```"):
            body, open_lang = [], line[3:].strip()
        elif body is not None and line.rstrip("\n") == "```":
            if open_lang == lang:
                blocks.append("".join(body))
            body = None
        elif body is not None:
            body.append(line)
    return blocks


def commands(block):
    """The commands of a shell block: one a line, comments and blank lines dropped."""
    out = []
    for line in block.splitlines():
        line = re.sub(r"\s+#\s.*$", "", line).strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            raise AssertionError("a continued line the test cannot split: %r" % line)
        out.append(line)
    return out


def validate(stack_dir, env=None):
    return subprocess.run([VX_BIN, "validate", stack_dir], capture_output=True, text=True,
                          env=env, timeout=60)


class QuickStart(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vx-e2e-docs-")
        self.fake = Fake(self.tmp)
        self.home = os.path.join(self.tmp, "home")
        os.makedirs(self.home)
        self.env = self.fake.env()
        self.env.update({
            "HOME": self.home, "NO_COLOR": "1", "VX_SANDBOX_URL": self.fake.url,
            "PATH": os.path.dirname(VX_BIN) + os.pathsep + self.env.get("PATH", ""),
            "GIT_AUTHOR_NAME": "new", "GIT_AUTHOR_EMAIL": "new@example.com",
            "GIT_COMMITTER_NAME": "new", "GIT_COMMITTER_EMAIL": "new@example.com",
            "GIT_CONFIG_GLOBAL": os.path.join(self.home, ".gitconfig"),
        })

    def tearDown(self):
        self.fake.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_commands(self, cmds, cwd):
        """Runs cmds as one bash script from cwd (so a `cd` carries over), stopping at the first
        that fails; returns each command's output (stdout and stderr) and the directory it ended in."""
        script = ["set -e"]
        for i, c in enumerate(cmds):
            script += ["printf '\\n@@@ %d\\n'" % i, c]
        script += ["printf '\\n@@@ end\\n'", "pwd"]
        cp = subprocess.run(["bash", "-c", "\n".join(script)], cwd=cwd, env=self.env,
                            capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        parts = re.split(r"\n@@@ (\d+|end)\n", cp.stdout)
        self.assertEqual(cp.returncode, 0, "a quick-start command failed:\n%s\n--- stderr\n%s"
                         % (cp.stdout, cp.stderr))
        self.assertNotIn("Sanitizer", cp.stderr)
        self.assertNotIn("runtime error:", cp.stderr)
        outs = dict(zip(parts[1::2], parts[2::2]))
        return [outs[str(i)] for i in range(len(cmds))], outs["end"].strip()

    def plan_block(self, out, address):
        lines = out.splitlines()
        for i, l in enumerate(lines):
            if re.match(r"^\s+\S+\s+%s\s" % re.escape(address), l + " "):
                block = [l]
                for m in lines[i + 1:]:
                    if not m.startswith("        "):
                        break
                    block.append(m)
                return block
        self.fail("no plan lines for %s in:\n%s" % (address, out))

    def test_the_quick_start_runs_as_written(self):
        qs = section(read(README), "Quick start: a Spot job against a fake Google Cloud")
        shell = fenced(qs, "sh")
        yaml = fenced(qs, "yaml")
        shown = fenced(qs, "")
        self.assertEqual((len(shell), len(yaml), len(shown)), (5, 1, 1), "the quick start's blocks moved")
        self.assertEqual(commands(shell[0]), ["make", "tools/sandbox"])

        # Where the README says to save the stack, under the directory its commands make.
        m = re.search(r"save this as `~/([^`]+)`", qs)
        self.assertIsNotNone(m, "the README no longer says where to save the stack")
        outs, cwd = self.run_commands(commands(shell[1]), self.home)
        path = os.path.join(self.home, m.group(1))
        with open(path, "w") as f:
            f.write(yaml[0])

        # Validate, commit, plan: the validate line the README quotes, and a create.
        cmds = commands(shell[2])
        outs, cwd = self.run_commands(cmds, cwd)
        self.assertEqual(cmds[0], "vx validate spot")
        self.assertEqual(outs[0], "stack spot-demo: 1 job, 0 reservations, 0 quota preferences: valid\n")
        self.assertIn("(`%s`)" % outs[0].strip(), qs)
        self.assertEqual(cmds[-1], "vxplan spot")
        self.assertEqual(self.plan_block(outs[-1], "job.finetune"), [
            "  +   job.finetune create",
            "        g2-standard-8 ×1, 1×L4, SPOT in us-central1",
            "        new job",
        ])
        self.assertIn("Plan: 1 to create. 0 unchanged.\n", outs[-1])

        # Preempt, apply, an hour later: the plan is the one the README shows.
        cmds = commands(shell[3])
        outs, cwd = self.run_commands(cmds, cwd)
        self.assertEqual(cmds[-1], "vxplan spot")
        self.assertEqual(self.plan_block(outs[-1], "job.finetune"), shown[0].rstrip("\n").split("\n"))
        jobs = self.fake.jobs()
        self.assertEqual([(j["labels"]["vx-stack"], j["labels"]["vx-job"], j["state"]) for j in jobs],
                         [("spot-demo", "finetune", "JOB_STATE_FAILED")])

        # The prose's next steps: the apply starts attempt 2, and with no L4 left in the region it
        # fails as a stockout; vx log lists both attempts (the state knows how the first ended).
        self.assertIn("`vxapply -auto-approve spot` starts attempt 2", qs)
        outs, cwd = self.run_commands(["vxapply -auto-approve spot"] + commands(shell[4]) + [
            "curl -s -X POST \"$VX_SANDBOX_URL/_fake/clock\" -d '{\"advance_seconds\": 3600}'",
            "vxplan spot", "vx log spot"], cwd)
        self.assertIn("Apply complete: 1 done, 0 failed.\n", outs[0])
        self.assertEqual(self.plan_block(outs[3], "job.finetune")[2].strip(),
                         "attempt 3/3 after stockout at 2026-01-01 01:00Z (code 8: Resources are "
                         "insufficient in region: us-central1. Try a different region or use a "
                         "different accelerator.)")
        log = outs[4].splitlines()
        self.assertEqual(log[0], "job.finetune")
        self.assertEqual([re.sub(r"\s+", " ", l.strip()).split(" ")[1] for l in log[1:]],
                         ["create", "resubmit"])
        self.assertIn("failed (preempted)", log[1])

        # The files the README links exist.
        for link in re.findall(r"\]\(([^)#]+)\)", read(README)):
            if "://" not in link:
                self.assertTrue(os.path.exists(os.path.join(ROOT, link)), "README links %s" % link)


class FakeRecipes(unittest.TestCase):
    """docs/fake.md's calls, in order, against a fresh fake: each is accepted (curl -f)."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vx-e2e-fakedoc-")
        self.fake = Fake(self.tmp)

    def tearDown(self):
        self.fake.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_every_call_is_accepted(self):
        cmds = [c for b in fenced(read(os.path.join(ROOT, "docs", "fake.md")), "sh") for c in commands(b)]
        self.assertGreaterEqual(len(cmds), 15)
        env = dict(os.environ, VX_SANDBOX_URL=self.fake.url)
        for c in cmds:
            self.assertTrue(c.startswith("curl -s -w '\\n' "), c)
            cp = subprocess.run(["bash", "-c", "curl() { command curl -f \"$@\"; }\n" + c], env=env,
                                capture_output=True, text=True, timeout=60)
            self.assertEqual((cp.returncode, cp.stderr), (0, ""), c)
            self.assertTrue(cp.stdout.startswith("{") and cp.stdout.endswith("}\n"), (c, cp.stdout))


# Where a fragment of format.md (a block without `kind`) goes, by its first key: into the
# Stack document, or into the job TRAIN below.
FRAGMENT_HOME = {"notify": "stack", "resubmit": "job"}

STACK = """kind: Stack
name: docs-examples
project: my-project
region: us-central1
{stack_extra}---
kind: CustomJob
name: train
spec:
  workerPoolSpecs:
    - machineSpec: {{machineType: a3-highgpu-8g, acceleratorType: NVIDIA_H100_80GB, acceleratorCount: 8}}
      replicaCount: 1
      containerSpec: {{imageUri: us-docker.pkg.dev/p/r/trainer:1}}
  baseOutputDirectory: {{outputUriPrefix: gs://b/train}}
{job_extra}"""


class FormatExamples(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vx-e2e-format-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def stack(self, name, text):
        d = os.path.join(self.tmp, name)
        os.makedirs(d)
        with open(os.path.join(d, "stack.yaml"), "w") as f:
            f.write(text)
        return d

    def test_the_validate_transcript_is_what_vx_prints(self):
        """format.md's `$ vx validate ...` example, run from the repository's root."""
        shown = [b for b in fenced(read(FORMAT), "") if b.startswith("$ vx validate ")]
        self.assertEqual(len(shown), 1)
        command, want = shown[0].split("\n", 1)
        env = dict(os.environ, PATH=os.path.dirname(VX_BIN) + os.pathsep + os.environ["PATH"])
        cp = subprocess.run(["bash", "-c", command[len("$ "):]], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
        self.assertEqual((cp.returncode, cp.stdout, cp.stderr), (0, want, ""))

    def test_every_yaml_example_validates(self):
        blocks = fenced(read(FORMAT), "yaml")
        self.assertGreaterEqual(len(blocks), 9)
        complete, documents, extra = [], [], {"stack": "", "job": ""}
        for b in blocks:
            kinds = re.findall(r"^kind: (\w+)$", b, re.M)
            if "Stack" in kinds:
                complete.append(b)
            elif kinds:
                documents.append(b)
            else:
                key = re.match(r"(\w+):", b).group(1)
                self.assertIn(key, FRAGMENT_HOME, "a format.md example of a new shape:\n%s" % b)
                extra[FRAGMENT_HOME[key]] += b
        self.assertEqual(len(complete), 1)
        self.assertEqual(sorted(FRAGMENT_HOME), ["notify", "resubmit"])

        cp = validate(self.stack("complete", complete[0]))
        self.assertEqual((cp.returncode, cp.stdout, cp.stderr),
                         (0, "stack research: 1 job, 0 reservations, 0 quota preferences: valid\n", ""))

        text = STACK.format(stack_extra=extra["stack"], job_extra=extra["job"])
        text += "".join("---\n" + d for d in documents)
        cp = validate(self.stack("together", text))
        # The job count depends on the sweep example's matrix: any count, but nothing else.
        self.assertEqual((cp.returncode, cp.stderr), (0, ""), "%s\n%s" % (cp.stdout, text))
        self.assertRegex(cp.stdout, r"\Astack docs-examples: \d+ jobs, 1 persistent resource, 1 future reservation, 1 reservation, "
                         r"1 quota preference: valid\n\Z")


if __name__ == "__main__":
    unittest.main()
