"""Every command's flags: its -help lists each one of its table (walked through the binary,
so a command or flag added later is checked too), an unknown flag names the nearest, and
-C DIR means what a positional DIR means in every command that takes a stack."""
import os
import re
import subprocess
import unittest

from harness import FakeTestCase, Result, VX_BIN, job_yaml


def run(args, cwd, env=None):
    cp = subprocess.run([VX_BIN] + list(args), cwd=cwd, capture_output=True, text=True, timeout=120,
                        env=env, stdin=subprocess.DEVNULL)
    return Result(cp).checked()


def commands():
    r = run(["__complete", "commands"], cwd="/")
    assert r.code == 0 and r.out, r
    return r.out.split()


def flags(command):
    """The flags of command's table, and -C/-chdir where it takes a stack."""
    r = run(["__complete", "flags", command], cwd="/")
    assert r.code == 0, r
    return r.out.split()


class HelpTest(unittest.TestCase):

    def test_help_lists_every_flag_of_every_command(self):
        missing = []
        for c in commands():
            r = run([c, "-help"], cwd="/")
            self.assertEqual((r.code, r.err), (0, ""), c)
            for f in flags(c):
                # The flag as a word of its own: -C, not the C of Ctrl-C; -wait[=running|done].
                if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(f), r.out):
                    missing.append("%s %s" % (c, f))
        self.assertEqual(missing, [])

    def test_import_help_names_every_kind_with_the_form_of_its_resource(self):
        # Built from the kind table (each row's import_form), jobs first: a kind added later
        # joins this list by its row, and this block says it did.
        r = run(["import", "-help"], cwd="/")
        lines = r.out.splitlines()
        start = lines.index("(default .), under the declared address ADDR, as Terraform's import does:") + 1
        end = next(i for i, line in enumerate(lines) if line.startswith("It must be"))
        self.assertEqual("\n".join(lines[start:end]) + "\n", (
            "  job.NAME          projects/P/locations/REGION/customJobs/ID\n"
            "  persistent_resource.NAME\n"
            "                    projects/P/locations/REGION/persistentResources/ID\n"
            "  future_reservation.NAME\n"
            "                    projects/P/zones/ZONE/futureReservations/NAME\n"
            "  reservation.NAME  projects/P/zones/ZONE/reservations/NAME\n"
            "  quota.NAME        projects/P/locations/global/quotaPreferences/NAME\n"))

    def test_unknown_flag_suggests_the_nearest(self):
        cases = [
            (["plan", "-targt", "job.a"], "vx: plan: unknown option '-targt' (did you mean -target?)\n"),
            (["plan", "--fromat=json"], "vx: plan: unknown option '--fromat=json' (did you mean -format?)\n"),
            (["apply", "-auto-aprove"], "vx: apply: unknown option '-auto-aprove' (did you mean -auto-approve?)\n"),
            (["log", "-chdri", "x"], "vx: log: unknown option '-chdri' (did you mean -chdir?)\n"),
            (["watch", "-onse"], "vx: watch: unknown option '-onse' (did you mean -once?)\n"),
            (["plan", "-zzzzzz"], "vx: plan: unknown option '-zzzzzz' (see 'vxplan -help')\n"),
            (["validate", "-x"], "vx: validate: unknown option '-x' (see 'vx validate -help')\n"),
        ]
        for args, err in cases:
            r = run(args, cwd="/")
            self.assertEqual((r.code, r.out, r.err), (64, "", err), args)


# How each command that takes a stack is run with DIR as an argument; "{dir}" is
# where the directory goes. A command added with .stack_dir must be added here.
STACK_COMMANDS = {
    "plan": ["plan", "{dir}"],
    "apply": ["apply", "{dir}", "-auto-approve"],
    "validate": ["validate", "{dir}"],
    "doctor": ["doctor", "{dir}", "-plan-only"],
    "log": ["log", "job.a", "{dir}"],
    "status": ["status", "{dir}"],
    "state": ["state", "list", "{dir}"],
    "unlock": ["unlock", "0123456789abcdef0123456789abcdef", "{dir}"],
    "import": ["import", "job.a", "projects/p/locations/us-central1/customJobs/1", "{dir}", "-check"],
    "watch": ["watch", "{dir}", "-once", "-format", "json"],
    "report": ["report", "{dir}"],
    "logs": ["logs", "job.a", "{dir}"],
}


class StackDirTest(FakeTestCase):

    def vx(self, args, cwd=None):
        env = self.fake.env()
        env["VX_NOW"] = "2026-11-26T00:00:00Z"
        return run(args, cwd or self.repo.root, env)

    def test_every_stack_command_is_tested(self):
        with_dir = sorted(c for c in commands() if "-C" in flags(c))
        self.assertEqual(with_dir, sorted(STACK_COMMANDS))

    def test_dash_c_means_the_positional_directory(self):
        self.repo.write({"a": job_yaml("a")})
        self.assertEqual(self.repo.apply().code, 0)
        for name, args in sorted(STACK_COMMANDS.items()):
            positional = [a.replace("{dir}", "stack") for a in args]
            flag = [a for a in args if a != "{dir}"] + ["-C", "stack"]
            chdir = [a for a in args if a != "{dir}"] + ["-chdir=stack"]
            want = self.vx(positional)
            got = self.vx(flag)
            if name == "watch":   # each line holds its time to the second
                want.out, got.out = (re.sub(r'"time":"[^"]*"', "", x.out) for x in (want, got))
            self.assertEqual((got.code, got.out, got.err), (want.code, want.out, want.err), flag)
            got = self.vx(chdir)
            if name == "watch":
                got.out = re.sub(r'"time":"[^"]*"', "", got.out)
            self.assertEqual((got.code, got.out, got.err), (want.code, want.out, want.err), chdir)
            # Both, naming the same directory: as one.
            both = [a.replace("{dir}", "./stack") for a in args] + ["-C", "stack"]
            got = self.vx(both)
            if name == "watch":
                got.out = re.sub(r'"time":"[^"]*"', "", got.out)
            self.assertEqual((got.code, got.out, got.err), (want.code, want.out, want.err), both)

    def test_dash_c_and_another_directory_is_a_usage_error(self):
        self.repo.write({"a": job_yaml("a")})
        os.makedirs(os.path.join(self.repo.root, "other"))
        for name, args in sorted(STACK_COMMANDS.items()):
            argv = [a.replace("{dir}", "other") for a in args] + ["-C", "stack"]
            r = self.vx(argv)
            self.assertEqual((r.code, r.out, r.err),
                             (64, "", "vx: %s: the stack directory is given twice ('stack' by -C and "
                                      "'other')\n" % name), argv)
        r = self.vx(["plan", "-C", "stack", "-chdir", "other"])
        self.assertEqual((r.code, r.out, r.err),
                         (64, "", "vx: plan: the stack directory is given twice ('stack' and 'other')\n"))


if __name__ == "__main__":
    unittest.main()
