"""End-to-end tests of `vx validate`: the examples pass, every kind of bad
input fails with exit 1 and a FILE:LINE:COLUMN message, and nothing crashes.

Standard library only; no fake cloud needed. VX_BIN names the binary.
"""
import glob
import os
import re
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VX_BIN = os.environ.get("VX_BIN", os.path.join(ROOT, "build", "vx"))
DATA = "tests/data/stacks"


def vx(*args, cwd=ROOT, timeout=60):
    cp = subprocess.run([VX_BIN, "validate", *args], cwd=cwd, capture_output=True,
                        timeout=timeout)
    return cp.returncode, cp.stdout.decode("utf-8", "replace"), cp.stderr.decode("utf-8", "replace")


class ValidateTest(unittest.TestCase):
    def check_no_crash(self, code, err):
        # a negative code is a signal; 128+ is how shells report one
        self.assertGreaterEqual(code, 0, err)
        self.assertLess(code, 128, err)
        self.assertNotIn("Sanitizer", err)
        self.assertNotIn("runtime error", err)

    def bad(self, dirname, pattern, cwd=ROOT):
        code, out, err = vx(dirname, cwd=cwd)
        self.check_no_crash(code, err)
        self.assertEqual(code, 1, err)
        self.assertEqual(out, "")
        self.assertRegex(err, pattern)
        for line in err.splitlines():
            if not line.startswith("... and "):
                # every line is a diagnostic naming the file (or the directory)
                self.assertTrue(line.startswith(dirname), line)
        return err

    def test_examples(self):
        # examples/ci holds CI recipes (docs/gitops.md) and examples/watch the ways to run
        # vx watch (docs/watch.md), not stacks.
        examples = sorted(e for e in glob.glob(os.path.join(ROOT, "examples", "*"))
                          if os.path.basename(e) not in ("ci", "watch"))
        names = [os.path.basename(e) for e in examples]
        for want in ("quickstart", "gemma2-flex", "multi-gpu", "reserved"):
            self.assertIn(want, names)
        code, out, err = vx(*[os.path.relpath(e, ROOT) for e in examples])
        self.check_no_crash(code, err)
        self.assertEqual(code, 0, err)
        self.assertEqual(err, "")
        lines = out.splitlines()
        self.assertEqual(len(lines), len(examples))
        for line in lines:
            self.assertRegex(line, r"^stack [a-z][a-z0-9_-]*: \d+ jobs?, (\d+ persistent resources?, )?(\d+ future reservations?, )?"
                                   r"\d+ reservations?, \d+ quota preferences?: valid$")
        self.assertIn("stack reserved: 1 job, 1 reservation, 1 quota preference: valid", lines)
        self.assertIn("stack persistent: 2 jobs, 1 persistent resource, 0 reservations, 0 quota preferences: valid",
                      lines)
        self.assertIn("stack multi-gpu: 3 jobs, 0 reservations, 0 quota preferences: valid",
                      lines)
        self.assertIn("stack calendar: 2 jobs, 1 future reservation, 0 reservations, 0 quota preferences: valid",
                      lines)

    def test_good_stack_summary(self):
        code, out, err = vx(DATA + "/good")
        self.assertEqual((code, err), (0, ""))
        self.assertEqual(out, "stack research: 2 jobs, 1 reservation, 1 quota preference: valid\n")

    def test_default_dir(self):
        code, out, err = vx(cwd=os.path.join(ROOT, "examples", "quickstart"))
        self.assertEqual((code, err), (0, ""))
        self.assertEqual(out, "stack quickstart: 1 job, 0 reservations, 0 quota preferences: valid\n")

    def test_help_and_usage(self):
        code, out, _ = vx("-help")
        self.assertEqual(code, 0)
        self.assertIn("usage: vx validate [DIR]...", out)
        code, _, err = vx("-frobnicate")
        self.assertEqual(code, 64)
        self.assertEqual(err, "vx: validate: unknown option '-frobnicate' (see 'vx validate -help')\n")

    def test_missing_dir(self):
        code, out, err = vx("no/such/dir")
        self.assertEqual(code, 1)
        self.assertEqual(err, "vx: validate: reading no/such/dir: No such file or directory\n")

    def test_several_dirs_one_bad(self):
        code, out, err = vx("examples/quickstart", DATA + "/unknown-field", "examples/reserved")
        self.assertEqual(code, 1)
        self.assertEqual(out.count(": valid\n"), 2)
        self.assertEqual(err, DATA + '/unknown-field/stack.yaml:5:1: Stack "s": unknown field '
                              '"lables" (did you mean "labels"?)\n')

    # --- each kind of bad input -------------------------------------------

    def test_syntax_error(self):
        self.bad(DATA + "/syntax", r"^" + DATA + r"/syntax/stack\.yaml:5:1: \S")

    def test_tab(self):
        err = self.bad(DATA + "/tab", r"^" + DATA + r"/tab/stack\.yaml:5:1: ")
        self.assertIn("tab", err)

    def test_duplicate_key(self):
        err = self.bad(DATA + "/dupkey", r"^" + DATA + r"/dupkey/stack\.yaml:4:1: ")
        self.assertIn('duplicate key "name"', err)

    def test_bad_utf8(self):
        err = self.bad(DATA + "/utf8", r"^" + DATA + r"/utf8/stack\.yaml:4:12: ")
        self.assertIn("UTF-8", err)

    def test_alias_bomb(self):
        self.bad(DATA + "/bomb", r"^" + DATA + r"/bomb/stack\.yaml:\d+:\d+: ")

    def test_empty_file(self):
        err = self.bad(DATA + "/empty", re.escape(DATA + "/empty/stack.yaml:1:1: empty file: no YAML document in it\n"))
        self.assertIn("no Stack", err)

    def test_unknown_field(self):
        err = self.bad(DATA + "/unknown-field", r"^" + re.escape(
            DATA + '/unknown-field/stack.yaml:5:1: Stack "s": unknown field "lables" '
            '(did you mean "labels"?)') + "\n$")

    def test_no_stack_two_stacks_no_yaml(self):
        self.bad(DATA + "/no-stack", r"^" + re.escape(
            DATA + '/no-stack: no Stack: one document must be "kind: Stack"'))
        self.bad(DATA + "/two-stacks", r"^" + re.escape(
            DATA + "/two-stacks/stack.yaml:5:1: a second Stack: this directory's Stack is "
            "declared at " + DATA + "/two-stacks/stack.yaml:1:1 (one Stack per directory)"))
        self.bad(DATA + "/no-yaml", r"^" + re.escape(DATA + "/no-yaml: no *.yaml or *.yml files"))

    def test_capped_at_50(self):
        err = self.bad(DATA + "/many-errors", r"\n\.\.\. and 10 more\n$")
        lines = err.splitlines()
        self.assertEqual(len(lines), 51)
        self.assertEqual(lines[0], DATA + '/many-errors/stack.yaml:8:6: CustomJob "j0": run: '
                                          'must be at least 1, got 0')

    def test_generated_hostile_files(self):
        tmp = tempfile.mkdtemp(prefix="vx-validate-")
        try:
            head = "kind: Stack\nname: s\nproject: my-project\n"
            nest = os.path.join(tmp, "nest")
            os.mkdir(nest)
            with open(os.path.join(nest, "stack.yaml"), "w") as f:
                f.write(head + "x: " + "[" * 20000 + "]" * 20000 + "\n")
            code, out, err = vx(nest, cwd=tmp)
            self.check_no_crash(code, err)
            self.assertEqual(code, 1)
            self.assertRegex(err, r"^" + re.escape(nest) + r"/stack\.yaml:4:\d+: ")

            big = os.path.join(tmp, "big")
            os.mkdir(big)
            with open(os.path.join(big, "stack.yaml"), "w") as f:
                f.write(head + "labels:\n")
                line = "  k%08d: v\n"
                n = 0
                chunk = "".join(line % i for i in range(100000))
                while n < 30 * 1024 * 1024:
                    f.write(chunk)
                    n += len(chunk)
            code, out, err = vx(big, cwd=tmp, timeout=30)
            self.check_no_crash(code, err)
            self.assertEqual(code, 1)
            self.assertRegex(err, r"^" + re.escape(big) + r"/stack\.yaml:1:1: .*larger than")
        finally:
            shutil.rmtree(tmp)


HEAD = "kind: Stack\nname: s\nproject: my-project\nregion: us-central1\n"
POOL = ("kind: CustomJob\nname: j\nspec:\n  workerPoolSpecs:\n"
        "    - machineSpec: {machineType: n1-standard-4}\n"
        "      replicaCount: 1\n"
        "      containerSpec: {imageUri: img}\n")


class LoaderItemsTest(unittest.TestCase):
    """Issue 8, "messages and validation": each input vx accepted and sent, or
    refused with a message that did not say what was wrong. Every stderr is
    compared whole, FILE:LINE:COLUMN included."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vx-validate-")
        self.addCleanup(shutil.rmtree, self.tmp)

    def validate(self, text, raw=None):
        """Runs vx validate on a directory s/ holding stack.yaml = text (or raw bytes)."""
        d = os.path.join(self.tmp, "s")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "stack.yaml"), "wb") as f:
            f.write(raw if raw is not None else text.encode())
        code, out, err = vx("s", cwd=self.tmp)
        self.assertGreaterEqual(code, 0, err)
        self.assertLess(code, 128, err)
        return code, out, err

    def refused(self, text, want):
        code, out, err = self.validate(text)
        self.assertEqual((code, out, err), (1, "", want))

    def test_region_typo_is_refused_with_the_nearest(self):
        # "us-centrl1" was the one typo validate let through: regions were checked by form only.
        self.refused(HEAD.replace("us-central1", "us-centrl1"),
                     's/stack.yaml:4:9: Stack "s": region: unknown region "us-centrl1" '
                     '(did you mean "us-central1"?)\n')
        self.refused(HEAD + "---\n" + POOL + "region: europe-wset4\n",
                     's/stack.yaml:13:9: CustomJob "j": region: unknown region "europe-wset4" '
                     '(did you mean "europe-west4"?)\n')
        self.refused(HEAD + "---\nkind: Reservation\nname: pool\nzone: us-centrl1-a\n"
                     "machineType: a3-highgpu-8g\naccelerators:\n  - {type: nvidia-h100-80gb, count: 8}\n"
                     "count: 1\n",
                     's/stack.yaml:8:7: Reservation "pool": zone: unknown region "us-centrl1" in zone '
                     '"us-centrl1-a" (did you mean "us-central1-a"?)\n')
        ladder = (HEAD + "---\n" + POOL + "resubmit:\n  on: [stockout]\n  fallback:\n"
                  "    - {region: europe-west4}\n    - {region: asia-sotheast1}\n")
        self.refused(ladder, 's/stack.yaml:17:16: CustomJob "j": resubmit.fallback[1].region: unknown '
                             'region "asia-sotheast1" (did you mean "asia-southeast1"?)\n')

    def test_unknown_but_plausible_region_is_a_warning(self):
        # A region vx's list may lack (one opened after this release): warned about, not refused.
        code, out, err = self.validate(HEAD.replace("us-central1", "us-east7") + "---\nkind: Reservation\n"
                                       "name: pool\nzone: northamerica-south2-b\nmachineType: a3-highgpu-8g\n"
                                       "accelerators:\n  - {type: nvidia-h100-80gb, count: 8}\ncount: 1\n"
                                       "---\n" + POOL + "region: antarctica-central1\n")
        self.assertEqual((code, out), (0, "stack s: 1 job, 1 reservation, 0 quota preferences: valid\n"))
        self.assertEqual(err, (
            's/stack.yaml:4:9: warning: Stack "s": region: "us-east7" is a region vx does not know (its '
            'price table has no such region): used as written; check the name unless the region is new\n'
            's/stack.yaml:8:7: warning: Reservation "pool": zone: "northamerica-south2-b" is in region '
            '"northamerica-south2", which vx does not know (its price table has no such region): used as '
            'written; check the name unless the region is new\n'
            's/stack.yaml:21:9: warning: CustomJob "j": region: "antarctica-central1" is a region vx does '
            'not know (its price table has no such region): used as written; check the name unless the '
            'region is new\n'))

    def test_utf8_bom_accepted(self):
        # Editors on Windows write a BOM; PyYAML skips it, and so must we.
        code, out, err = self.validate(None, raw=b"\xef\xbb\xbf" + HEAD.encode())
        self.assertEqual((code, out, err),
                         (0, "stack s: 0 jobs, 0 reservations, 0 quota preferences: valid\n", ""))
        # columns on the BOM's line are counted from the character after it
        code, out, err = self.validate(None, raw=b"\xef\xbb\xbf{kind: Stack, name: S, "
                                                 b"project: my-project, region: us-central1}\n")
        self.assertEqual((code, out), (1, ""))
        self.assertEqual(err, 's/stack.yaml:1:21: Stack "S": name: "S" is not a valid name: use '
                              'lowercase letters, digits, "-" and "_", starting with a letter, at '
                              'most 63 characters\n')

    def test_run_hex_integer(self):
        self.refused(HEAD + "---\n" + POOL + "run: 0x10\n",
                     's/stack.yaml:13:6: CustomJob "j": run: expected a decimal integer, got '
                     '"0x10"\n')

    def test_replica_count_out_of_range(self):
        self.refused(HEAD + "---\n" + POOL.replace("replicaCount: 1", "replicaCount: "
                                                  "18446744073709551616"),
                     's/stack.yaml:11:21: CustomJob "j": spec.workerPoolSpecs[0].replicaCount: '
                     '18446744073709551616 is out of range (at most 9223372036854775807)\n')

    def test_replica_count_negative(self):
        # in a later pool -1 was taken for "not given" and sent
        self.refused(HEAD + "---\n" + POOL +
                     "    - machineSpec: {machineType: n1-standard-4}\n"
                     "      replicaCount: -1\n"
                     "      containerSpec: {imageUri: img}\n",
                     's/stack.yaml:14:21: CustomJob "j": spec.workerPoolSpecs[1].replicaCount: '
                     'must be at least 1, got -1\n')

    def test_env_name_not_an_identifier(self):
        self.refused(HEAD + "---\n" + POOL.replace("{imageUri: img}",
                                                  "{imageUri: img, env: [{name: A=B, value: x}]}"),
                     's/stack.yaml:12:51: CustomJob "j": spec.workerPoolSpecs[0].containerSpec.'
                     'env[0].name: "A=B" is not a valid environment variable name: use letters, '
                     'digits and "_", not starting with a digit\n')

    def test_env_name_duplicate(self):
        self.refused(HEAD + "---\n" + POOL.replace(
                         "containerSpec: {imageUri: img}",
                         "containerSpec:\n        imageUri: img\n        env:\n"
                         "          - {name: LR, value: \"1\"}\n"
                         "          - {name: LR, value: \"2\"}"),
                     's/stack.yaml:16:20: CustomJob "j": spec.workerPoolSpecs[0].containerSpec.'
                     'env[1].name: duplicate: "LR" is already set by env[0] at line 15\n')

    def test_env_value_number(self):
        # docs/format.md: where vx wants a string, a number is an error (quote it)
        self.refused(HEAD + "---\n" + POOL.replace("{imageUri: img}",
                                                  "{imageUri: img, env: [{name: A, value: 1}]}"),
                     's/stack.yaml:12:61: CustomJob "j": spec.workerPoolSpecs[0].containerSpec.'
                     'env[0].value: expected a string, got the number 1; quote it: "1"\n')

    def test_label_value_null(self):
        self.refused(HEAD + "labels: {team: null}\n",
                     's/stack.yaml:5:16: Stack "s": labels.team: expected a string, got null '
                     '(write "" for an empty value)\n')

    def test_state_branch_full_ref(self):
        self.refused(HEAD + "state: {branch: refs/heads/main}\n",
                     's/stack.yaml:5:17: Stack "s": state.branch: "refs/heads/main" is a ref '
                     'name: give the branch name without refs/heads/ ("main")\n')

    def test_state_branch_git_rules(self):
        # a component starting with "." is refused by git (and libgit2)
        self.refused(HEAD + "state: {branch: vx/.hidden}\n",
                     's/stack.yaml:5:17: Stack "s": state.branch: "vx/.hidden" is not a valid '
                     'branch name\n')

    def test_accelerator_cut_short(self):
        self.refused(HEAD + "---\n" + POOL.replace(
                         "{machineType: n1-standard-4}",
                         "{machineType: a3-highgpu-8g, acceleratorType: NVIDIA_H100, "
                         "acceleratorCount: 8}"),
                     's/stack.yaml:10:66: CustomJob "j": spec.workerPoolSpecs[0].machineSpec.'
                     'acceleratorType: unknown value "NVIDIA_H100" (did you mean '
                     '"NVIDIA_H100_80GB"? a3-highgpu-8g comes with 8 NVIDIA_H100_80GB)\n')

    def test_accelerator_that_fits_the_machine(self):
        # The nearest spelling (NVIDIA_A100_80GB) is wrong for a2-highgpu-8g: suggest its own GPU.
        self.refused(HEAD + "---\n" + POOL.replace(
                         "{machineType: n1-standard-4}",
                         "{machineType: a2-highgpu-8g, acceleratorType: NVIDIA_A100_40GB, "
                         "acceleratorCount: 8}"),
                     's/stack.yaml:10:66: CustomJob "j": spec.workerPoolSpecs[0].machineSpec.'
                     'acceleratorType: unknown value "NVIDIA_A100_40GB" (did you mean '
                     '"NVIDIA_TESLA_A100"? a2-highgpu-8g comes with 8 NVIDIA_TESLA_A100)\n')

    def test_accelerator_count_names_the_machine_that_has_it(self):
        self.refused(HEAD + "---\n" + POOL.replace(
                         "{machineType: n1-standard-4}",
                         "{machineType: a2-highgpu-8g, acceleratorType: NVIDIA_TESLA_A100, "
                         "acceleratorCount: 4}"),
                     's/stack.yaml:10:103: CustomJob "j": spec.workerPoolSpecs[0].machineSpec.'
                     'acceleratorCount: a2-highgpu-8g comes with 8 NVIDIA_TESLA_A100; acceleratorCount '
                     'is 4 (4 NVIDIA_TESLA_A100 come with machineType a2-highgpu-4g)\n')
        # Another GPU than the machine's: the machine that has that many of it.
        self.refused(HEAD + "---\n" + POOL.replace(
                         "{machineType: n1-standard-4}",
                         "{machineType: a2-highgpu-8g, acceleratorType: NVIDIA_H100_80GB, "
                         "acceleratorCount: 8}"),
                     's/stack.yaml:10:66: CustomJob "j": spec.workerPoolSpecs[0].machineSpec.'
                     'acceleratorType: a2-highgpu-8g comes with 8 NVIDIA_TESLA_A100; acceleratorType '
                     'is NVIDIA_H100_80GB (8 NVIDIA_H100_80GB come with machineType a3-highgpu-8g)\n')

    def test_no_stack_names_what_is_required(self):
        # region is not required (each job may name its own): name and project are.
        code, out, err = self.validate(POOL)
        self.assertEqual((code, out, err),
                         (1, "", 's: no Stack: one document must be "kind: Stack" (with name and '
                                 'project)\n'))
        code, out, err = self.validate("kind: Stack\nname: s\nproject: my-project\n")
        self.assertEqual((code, out, err),
                         (0, "stack s: 0 jobs, 0 reservations, 0 quota preferences: valid\n", ""))

    def test_reservation_count_zero(self):
        # Compute's specificSkuCount is 1..1000
        self.refused(HEAD + "---\nkind: Reservation\nname: r\nzone: us-central1-a\n"
                     "machineType: n1-standard-4\ncount: 0\n",
                     's/stack.yaml:10:8: Reservation "r": count: must be between 1 and 1000, '
                     'got 0\n')

    FLEX_ON_RESERVATION = (
        "---\nkind: Reservation\nname: r\nzone: us-central1-a\nmachineType: a3-highgpu-8g\n"
        "accelerators: [{type: nvidia-h100-80gb, count: 8}]\ncount: 1\n"
        "---\nkind: CustomJob\nname: j\nspec:\n  workerPoolSpecs:\n"
        "    - machineSpec:\n        machineType: a3-highgpu-8g\n        acceleratorType: NVIDIA_H100_80GB\n"
        "        acceleratorCount: 8\n        reservationAffinity: %s\n"
        "      replicaCount: 1\n      containerSpec: {imageUri: img}\n"
        "  scheduling: {strategy: FLEX_START}\n")

    def test_flex_start_on_a_reservation(self):
        # Vertex AI training runs FLEX_START (Dynamic Workload Scheduler) only on capacity it
        # finds itself, never on a reservation (use-reservations).
        want = ('s/stack.yaml:21:30: CustomJob "j": spec.workerPoolSpecs[0].machineSpec.'
                'reservationAffinity: FLEX_START cannot use a reservation: Vertex AI training does not '
                'support Dynamic Workload Scheduler with reservationAffinity; use scheduling.strategy '
                'STANDARD or SPOT to run on the reservation, or remove reservationAffinity to wait for '
                'capacity with FLEX_START\n')
        self.refused(HEAD + self.FLEX_ON_RESERVATION % "{reservation: r}", want)
        # Google's own form, naming the reservation in full, too.
        self.refused(HEAD + self.FLEX_ON_RESERVATION % (
            "{reservationAffinityType: SPECIFIC_RESERVATION, key: compute.googleapis.com/reservation-name, "
            "values: [projects/my-project/zones/us-central1-a/reservations/r]}"), want)
        # NO_RESERVATION is no reservation.
        code, out, err = self.validate(HEAD + self.FLEX_ON_RESERVATION % "{reservationAffinityType: NO_RESERVATION}")
        self.assertEqual((code, err), (0, ""), err)

    def test_file_backend_default_path(self):
        code, out, err = self.validate(HEAD + "state: {backend: file}\n")
        self.assertEqual((code, out, err),
                         (0, "stack s: 0 jobs, 0 reservations, 0 quota preferences: valid\n", ""))


if __name__ == "__main__":
    unittest.main()


class CommandTable(unittest.TestCase):
    """Every command is an entry of cmd/main.c's table: -help, bad flags and values the same way."""

    def run_vx(self, *args, argv0=None):
        exe = VX_BIN if argv0 is None else os.path.join(os.path.dirname(VX_BIN), argv0)
        cp = subprocess.run([exe, *args], capture_output=True, timeout=60, cwd=ROOT)
        return cp.returncode, cp.stdout.decode(), cp.stderr.decode()

    def test_every_command_answers_help(self):
        for cmd in ("plan", "apply", "validate", "doctor", "log", "state", "unlock", "import", "report", "version",
                    "help"):
            code, out, err = self.run_vx(cmd, "-help")
            self.assertEqual((code, err), (0, ""), cmd)
            self.assertTrue(out.startswith("usage: "), (cmd, out))

    def test_bad_flags_name_the_command(self):
        self.assertEqual(self.run_vx("log", "-frob"),
                         (64, "", "vx: log: unknown option '-frob' (see 'vx log -help')\n"))
        self.assertEqual(self.run_vx("-frob", argv0="vxplan"),
                         (64, "", "vx: plan: unknown option '-frob' (see 'vxplan -help')\n"))
        self.assertEqual(self.run_vx("apply", "-parallelism"),
                         (64, "", "vx: apply: -parallelism needs a value (see 'vxapply -help')\n"))
        self.assertEqual(self.run_vx("apply", "-auto-approve=yes"),
                         (64, "", "vx: apply: -auto-approve takes no value (see 'vxapply -help')\n"))
        self.assertEqual(self.run_vx("apply", "-wait=soon"),
                         (64, "", "vx: apply: -wait takes running or done, not 'soon'\n"))
        self.assertEqual(self.run_vx("apply", "-parallelism", "0"),
                         (64, "", "vx: apply: -parallelism takes a number from 1 to 256, not '0'\n"))
