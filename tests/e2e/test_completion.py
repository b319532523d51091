"""Shell completion (vx completion bash|zsh|fish), generated from the command table:
bash's function is run as bash runs it (COMP_WORDS, COMP_CWORD, then COMPREPLY compared
exactly), fish's through `complete -C`, zsh's through bashcompinit; and vx __complete,
which the scripts ask for a stack's addresses. No fake cloud: completion never calls one."""
import os
import shutil
import subprocess
import tempfile
import unittest

from harness import Result, VX_BIN

STACK = """kind: Stack
name: comp
project: my-project
region: us-central1
"""

JOBS = """kind: CustomJob
name: train
spec:
  workerPoolSpecs:
    - machineSpec: {machineType: g2-standard-4, acceleratorType: NVIDIA_L4, acceleratorCount: 1}
      replicaCount: 1
      containerSpec: {imageUri: "us-docker.pkg.dev/p/r/trainer:1"}
---
kind: CustomJob
name: lr
matrix:
  lr: [1e-4, 3e-4]
  seed: [1, 2, 3]
spec:
  workerPoolSpecs:
    - machineSpec: {machineType: g2-standard-4, acceleratorType: NVIDIA_L4, acceleratorCount: 1}
      replicaCount: 1
      containerSpec:
        imageUri: "us-docker.pkg.dev/p/r/trainer:1"
        args: ["--lr=${{ matrix.lr }}", "--seed=${{ matrix.seed }}"]
  baseOutputDirectory: {outputUriPrefix: "gs://b/lr"}
"""

CAPACITY = """kind: Reservation
name: h100-pool
zone: us-central1-a
machineType: a3-highgpu-8g
accelerators:
  - {type: nvidia-h100-80gb, count: 8}
count: 2
---
kind: QuotaPreference
name: h100-training
service: aiplatform.googleapis.com
quotaId: CustomModelTrainingH100GPUsPerProjectPerRegion
dimensions: {region: us-central1}
preferredValue: 16
contactEmail: ml-infra@example.com
"""

ADDRESSES = ["job.train", "job.lr", "job.lr[lr=1e-4]", "job.lr[lr=3e-4]", "job.lr[seed=1]",
             "job.lr[seed=2]", "job.lr[seed=3]", "reservation.h100-pool", "quota.h100-training"]


class CompletionTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vx-completion-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        # vx, vxplan and vxapply on PATH, as installed.
        self.bin = os.path.join(self.tmp, "bin")
        os.makedirs(self.bin)
        for name in ("vx", "vxplan", "vxapply"):
            os.symlink(os.path.realpath(VX_BIN), os.path.join(self.bin, name))
        self.stack = os.path.join(self.tmp, "stack")
        os.makedirs(self.stack)
        for name, text in (("stack.yaml", STACK), ("jobs.yaml", JOBS), ("capacity.yaml", CAPACITY)):
            with open(os.path.join(self.stack, name), "w") as f:
                f.write(text)
        os.makedirs(os.path.join(self.tmp, "other"))
        self.env = dict(os.environ, PATH=self.bin + os.pathsep + os.environ["PATH"], HOME=self.tmp)

    def vx(self, *args, cwd=None):
        cp = subprocess.run([VX_BIN] + list(args), cwd=cwd or self.tmp, capture_output=True, text=True,
                            timeout=60, env=self.env, stdin=subprocess.DEVNULL)
        return Result(cp).checked()

    def script(self, shell):
        r = self.vx("completion", shell)
        self.assertEqual((r.code, r.err), (0, ""), r)
        path = os.path.join(self.tmp, "vx." + shell)
        with open(path, "w") as f:
            f.write(r.out)
        return path

    def bash(self, *words, cwd=None):
        """COMPREPLY after bash's completion function ran on words (the last one being typed)."""
        prog = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()\n'
                '_vx_complete; printf "%s\\n" "${COMPREPLY[@]}"')
        cp = subprocess.run(["bash", "-c", prog, "bash", self.script("bash")] + list(words),
                            cwd=cwd or self.tmp, capture_output=True, text=True, timeout=60, env=self.env)
        self.assertEqual((cp.returncode, cp.stderr), (0, ""), cp)
        return [w for w in cp.stdout.split("\n") if w]

    # --- vx __complete ------------------------------------------------------------------------

    def test_addresses_of_a_stack(self):
        r = self.vx("__complete", "addresses", "stack")
        self.assertEqual((r.code, r.out, r.err), (0, "".join(a + "\n" for a in ADDRESSES), ""))
        r = self.vx("__complete", "addresses", cwd=self.stack)
        self.assertEqual((r.code, r.out, r.err), (0, "".join(a + "\n" for a in ADDRESSES), ""))

    def test_addresses_are_silent_on_a_broken_stack(self):
        with open(os.path.join(self.stack, "broken.yaml"), "w") as f:
            f.write("kind: CustomJob\nname: [\n")
        r = self.vx("__complete", "addresses", "stack")
        self.assertEqual((r.code, r.out, r.err), (0, "", ""))
        r = self.vx("__complete", "addresses", "no-such-dir")
        self.assertEqual((r.code, r.out, r.err), (0, "", ""))

    def test_hidden_command_is_not_listed(self):
        r = self.vx("help")
        self.assertNotIn("__complete", r.out)
        self.assertIn("  completion ", r.out)
        self.assertNotIn("__complete", self.vx("__complete", "commands").out)

    # --- bash ---------------------------------------------------------------------------------

    def test_bash_commands(self):
        commands = self.vx("__complete", "commands").out.split()
        self.assertIn("completion", commands)
        self.assertEqual(self.bash("vx", ""), commands)
        self.assertEqual(self.bash("vx", "st"), ["status", "state"])
        self.assertEqual(self.bash("vx", "pl"), ["plan"])
        self.assertEqual(self.bash("vx", "completion", ""), ["bash", "zsh", "fish"])
        self.assertEqual(self.bash("vx", "state", ""), ["list", "show", "rm", "mv", "restore"])
        self.assertEqual(self.bash("vx", "frobnicate", "-"), [])

    def test_bash_flags(self):
        self.assertEqual(self.bash("vx", "plan", "-ta"), ["-target"])
        self.assertEqual(self.bash("vxplan", "-ta"), ["-target"])
        self.assertEqual(self.bash("vxapply", "-a"), ["-auto-approve", "-annotations", "-allow-over-budget",
                                                  "-allow-other-lineage", "-allow-released"])
        self.assertEqual(self.bash("vx", "status", "-"), ["-format", "-no-color", "-C", "-chdir", "-help",
                                                          "-debug"])
        # Every flag of the table, in its order, then the two every command has.
        flags = self.vx("__complete", "flags", "watch").out.split()
        self.assertEqual(self.bash("vx", "watch", "-"), flags + ["-help", "-debug"])

    def test_bash_values(self):
        self.assertEqual(self.bash("vx", "plan", "-format", ""), ["human", "json", "markdown"])
        self.assertEqual(self.bash("vxplan", "-format", "j"), ["json"])
        # bash splits "-format=j" at '=' (COMP_WORDBREAKS): "-format" "=" "j".
        self.assertEqual(self.bash("vxplan", "-format", "=", "m"), ["markdown"])
        self.assertEqual(self.bash("vxplan", "-format", "="), ["human", "json", "markdown"])
        # Without '=' in COMP_WORDBREAKS, the word is whole and so is each reply.
        self.assertEqual(self.bash("vxplan", "-format=m"), ["-format=markdown"])
        self.assertEqual(self.bash("vx", "status", "-format", ""), ["human", "json"])
        self.assertEqual(self.bash("vxapply", "-wait", "=", ""), ["running", "done"])
        # -refresh takes a value only after '=': "-refresh " is followed by another word.
        self.assertEqual(self.bash("vxplan", "-refresh", "=", ""), ["true", "false"])
        self.assertEqual(self.bash("vxplan", "-refresh", "-ver"), ["-verbose"])
        self.assertEqual(self.bash("vxplan", "-fail-on", ""), ["quota", "budget"])
        self.assertEqual(self.bash("vx", "log", "-C", "st"), ["stack"])
        self.assertEqual(self.bash("vxapply", "-parallelism", ""), [])

    def test_bash_target_addresses(self):
        self.assertEqual(self.bash("vxplan", "-target", "", cwd=self.stack), ADDRESSES)
        self.assertEqual(self.bash("vx", "plan", "-target", "job.", cwd=self.stack), ADDRESSES[:7])
        self.assertEqual(self.bash("vxapply", "-replace", "job.lr[s", cwd=self.stack),
                         ["job.lr[seed=1]", "job.lr[seed=2]", "job.lr[seed=3]"])
        self.assertEqual(self.bash("vxplan", "-target", "=", "res", cwd=self.stack), ["reservation.h100-pool"])
        # From elsewhere: the stack the command line names, by -C or as DIR.
        self.assertEqual(self.bash("vxplan", "-C", "stack", "-target", "q"), ["quota.h100-training"])
        self.assertEqual(self.bash("vxplan", "-C", "=", "stack", "-target", "q"), ["quota.h100-training"])
        self.assertEqual(self.bash("vx", "plan", "stack", "-target", "q"), ["quota.h100-training"])
        self.assertEqual(self.bash("vxplan", "-format", "json", "stack", "-target", "q"),
                         ["quota.h100-training"])
        self.assertEqual(self.bash("vxplan", "-target", ""), [])

    def test_bash_sweep_addresses_past_the_equals_sign(self):
        # bash splits "job.lr[seed=" at '=' (COMP_WORDBREAKS) and replaces only the text after it:
        # the replies are what follows the last '=' of the address typed so far.
        self.assertEqual(self.bash("vxapply", "-replace", "job.lr[seed", "=", cwd=self.stack), ["1]", "2]", "3]"])
        self.assertEqual(self.bash("vxapply", "-replace", "job.lr[seed", "=", "2", cwd=self.stack), ["2]"])
        self.assertEqual(self.bash("vxplan", "-target", "job.lr[lr", "=", "3", cwd=self.stack), ["3e-4]"])
        # The flag's own '=' as well: "-target=job.lr[seed=1" is five words.
        self.assertEqual(self.bash("vxplan", "-target", "=", "job.lr[seed", "=", "1", cwd=self.stack), ["1]"])
        self.assertEqual(self.bash("vx", "plan", "-target", "=", "job.lr[s", cwd=self.stack),
                         ["job.lr[seed=1]", "job.lr[seed=2]", "job.lr[seed=3]"])
        # An address with '=' before the word being typed does not count as a flag's value.
        self.assertEqual(self.bash("vxapply", "-replace", "job.lr[seed", "=", "1]", "-target", "res",
                                   cwd=self.stack), ["reservation.h100-pool"])
        # Without '=' in COMP_WORDBREAKS (or in zsh) the word comes whole, and so do the replies.
        self.assertEqual(self.bash("vxapply", "-replace", "job.lr[seed=", cwd=self.stack),
                         ["job.lr[seed=1]", "job.lr[seed=2]", "job.lr[seed=3]"])
        self.assertEqual(self.bash("vxplan", "-target=job.lr[seed=3", cwd=self.stack), ["-target=job.lr[seed=3]"])

    # --- zsh and fish -------------------------------------------------------------------------

    def test_zsh_syntax_and_values(self):
        path = self.script("zsh")
        cp = subprocess.run(["zsh", "-n", path], capture_output=True, text=True, timeout=60)
        self.assertEqual((cp.returncode, cp.stderr), (0, ""))
        with open(path) as f:
            self.assertEqual(f.readline(), "#compdef vx vxplan vxapply\n")
        # bashcompinit runs the function under sh emulation; zsh then filters by the word.
        prog = ('autoload -U compinit && compinit -u -d "$HOME/.zcompdump"; source "$1"; shift\n'
                'f() { emulate -L sh; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _vx_complete\n'
                'print -rl -- "${COMPREPLY[@]}"; }; f "$@"')
        cp = subprocess.run(["zsh", "-c", prog, "zsh", path, "vx", "plan", "-format", ""], cwd=self.stack,
                            capture_output=True, text=True, timeout=60, env=self.env)
        self.assertEqual((cp.returncode, cp.stdout, cp.stderr), (0, "human\njson\nmarkdown\n", ""))
        cp = subprocess.run(["zsh", "-c", prog, "zsh", path, "vxplan", "-target", ""], cwd=self.stack,
                            capture_output=True, text=True, timeout=60, env=self.env)
        self.assertEqual((cp.returncode, cp.stdout, cp.stderr), (0, "".join(a + "\n" for a in ADDRESSES), ""))

    def fish(self, line, cwd=None):
        cp = subprocess.run(["fish", "--no-config", "-c", 'source $argv[1]; complete -C"$argv[2]"',
                             self.script("fish"), line], cwd=cwd or self.tmp, capture_output=True,
                            text=True, timeout=60, env=self.env)
        self.assertEqual((cp.returncode, cp.stderr), (0, ""), cp)
        return [w.split("\t")[0] for w in cp.stdout.split("\n") if w]

    def test_fish(self):
        path = self.script("fish")
        cp = subprocess.run(["fish", "--no-config", "-n", path], capture_output=True, text=True, timeout=60)
        self.assertEqual((cp.returncode, cp.stderr), (0, ""))
        self.assertEqual(self.fish("vx plan -format "), ["human", "json", "markdown"])
        self.assertEqual(self.fish("vxplan -ta"), ["-target"])
        self.assertEqual(self.fish("vx apply -target job.lr[s", cwd=self.stack),
                         ["job.lr[seed=1]", "job.lr[seed=2]", "job.lr[seed=3]"])
        self.assertEqual(self.fish("vx compl"), ["completion"])

    def test_unknown_shell(self):
        r = self.vx("completion", "tcsh")
        self.assertEqual((r.code, r.out, r.err), (64, "", "vx: completion: which shell? vx completion bash, "
                                                           "zsh or fish\n"))


if __name__ == "__main__":
    unittest.main()
