"""vx in GitHub Actions, with no wrapper (workflow/ghactions.h, docs/ci.md):
with GITHUB_ACTIONS=true, vx plan appends its markdown to $GITHUB_STEP_SUMMARY
and writes changes, exitcode and cost_per_hour to $GITHUB_OUTPUT; vx apply
adds its result to the summary; validation problems are also printed as
::error annotations on stderr (-annotations=false: not). stdout stays exactly
what it is outside GitHub Actions, so $(...) and pipes keep working.

Standard library only. VX_BIN names the binary.
"""
import os
import re
import unittest

from harness import FakeTestCase, job_yaml

GHA = {"GITHUB_ACTIONS": "true"}
DELIM = re.compile(r"^ghadelimiter_[0-9a-f]{32}$")


class GitHubActionsTest(FakeTestCase):
    def setUp(self):
        super().setUp()
        self.out_file = os.path.join(self.tmp, "github_output")
        self.summary_file = os.path.join(self.tmp, "step_summary")

    def gha(self, **extra):
        e = dict(GHA, GITHUB_OUTPUT=self.out_file, GITHUB_STEP_SUMMARY=self.summary_file)
        e.update(extra)
        return e

    def read(self, path):
        with open(path) as f:
            return f.read()

    def outputs(self, text):
        """The NAME<<DELIM blocks of a GITHUB_OUTPUT file, checked to be exactly that
        form with one random delimiter per write: [(name, value), ...]."""
        lines = text.split("\n")
        self.assertEqual(lines[-1], "", text)
        got = []
        i = 0
        while i < len(lines) - 1:
            name, _, delim = lines[i].partition("<<")
            self.assertRegex(delim, DELIM, text)
            self.assertEqual(lines[i + 2], delim, text)
            got.append((name, lines[i + 1]))
            i += 3
        return got

    def write_bad_stack(self, dirname):
        d = os.path.join(self.tmp, dirname)
        os.makedirs(d)
        with open(os.path.join(d, "stack.yaml"), "w") as f:
            f.write("kind: Stack\nname: s\nproject: vx-e2e\nregion: us-central1\n"
                    "fo%o: 1\n")
        return d

    # -- validate ---------------------------------------------------------------

    def test_validate_annotates_each_problem_escaped(self):
        # A path with "," and ":" and a message with "%": the properties escape
        # all three, the message only "%" (GitHub's toolkit rules).
        d = self.write_bad_stack("st,a:ck")
        plain = ('st,a:ck/stack.yaml:5:1: Stack "s": unknown field "fo%o" (one of kind, name, '
                 'project, region, state, labels, prices, failOn, notify, budget)\n')
        r = self.repo.vx("validate", d, env=self.gha())
        self.assertEqual((r.code, r.out), (1, ""), r)
        self.assertEqual(r.err.replace(self.tmp + "/", ""), plain +
                         '::error file=st%2Ca%3Ack/stack.yaml,line=5,col=1::Stack "s": unknown field '
                         '"fo%25o" (one of kind, name, project, region, state, labels, prices, failOn, '
                         'notify, budget)\n')
        # Turned off, and outside GitHub Actions: the plain lines only.
        r = self.repo.vx("validate", "-annotations=false", d, env=self.gha())
        self.assertEqual((r.code, r.out, r.err.replace(self.tmp + "/", "")), (1, "", plain), r)
        r = self.repo.vx("validate", d)
        self.assertEqual((r.code, r.out, r.err.replace(self.tmp + "/", "")), (1, "", plain), r)
        r = self.repo.vx("validate", "-annotations=maybe", d, env=self.gha())
        self.assertEqual((r.code, r.out, r.err), (64, "", "vx: validate: -annotations takes true "
                                                  "or false, not 'maybe'\n"), r)
        # validate writes neither file.
        self.assertFalse(os.path.exists(self.out_file))
        self.assertFalse(os.path.exists(self.summary_file))

    # -- plan -------------------------------------------------------------------

    def test_plan_writes_summary_and_outputs_and_stdout_is_unchanged(self):
        self.repo.write({"a": job_yaml("a", env_secret=True)})
        plain = self.repo.plan("-detailed-exitcode")
        markdown = self.repo.plan("-format", "markdown")
        with open(self.summary_file, "w") as f:
            f.write("earlier step\n")
        r = self.repo.plan("-detailed-exitcode", env=self.gha())
        self.assertEqual((r.code, r.out, r.err), (plain.code, plain.out, plain.err), r)
        self.assertEqual(r.code, 2)
        # Appended, exactly the -format markdown plan; the secret nowhere.
        self.assertEqual(self.read(self.summary_file), "earlier step\n" + markdown.out)
        self.assertEqual(self.outputs(self.read(self.out_file)),
                         [("changes", "1"), ("exitcode", "2"), ("cost_per_hour", "0.71")])
        for path in (self.summary_file, self.out_file):
            self.assertNotIn("hunter2", self.read(path))
        # Applied, the next plan changes nothing: appended again, exit 0 without -detailed-exitcode.
        self.repo.apply()
        os.remove(self.out_file)
        r = self.repo.plan(env=self.gha())
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.outputs(self.read(self.out_file)),
                         [("changes", "0"), ("exitcode", "0"), ("cost_per_hour", "0.00")])

    def test_plan_of_an_invalid_stack_annotates_and_says_exit_1(self):
        self.repo.write({"a": job_yaml("a").replace("replicaCount: 1", "replicaCount: 0")})
        r = self.repo.plan(env=self.gha())
        plain = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(plain.code, 1, plain)
        self.assertEqual(r.out, plain.out)
        diag = [l for l in plain.err.splitlines() if l.startswith(self.repo.dir)]
        self.assertEqual(len(diag), 1, plain.err)
        m = re.match(r"^(.*):(\d+):(\d+): (.*)$", diag[0])
        annotation = "::error file=%s,line=%s,col=%s::%s" % m.groups()
        lines = plain.err.splitlines()
        at = lines.index(diag[0]) + 1
        self.assertEqual(r.err.splitlines(), lines[:at] + [annotation] + lines[at:])
        self.assertEqual(self.outputs(self.read(self.out_file)),
                         [("changes", ""), ("exitcode", "1"), ("cost_per_hour", "")])
        self.assertFalse(os.path.exists(self.summary_file))
        r = self.repo.plan("-annotations=false", env=self.gha())
        self.assertEqual((r.code, r.out, r.err), (1, plain.out, plain.err), r)

    def test_plan_errors_are_annotations_and_the_summary_still_shows_the_plan(self):
        # A protected job no longer declared: a plan error, not a load failure.
        self.repo.write({"a": job_yaml("a", protect="true")})
        self.assertEqual(self.repo.apply().code, 0)
        self.repo.write({})
        plain = self.repo.plan()
        markdown = self.repo.plan("-format", "markdown")
        self.assertEqual(plain.code, 1, plain)
        r = self.repo.plan(env=self.gha())
        self.assertEqual((r.code, r.out), (1, plain.out), r)
        extra = r.err[len(plain.err):] if r.err.startswith(plain.err) else r.err
        self.assertEqual(r.err, plain.err + extra)
        lines = extra.splitlines()
        self.assertEqual(len(lines), 1, extra)
        self.assertTrue(lines[0].startswith("::error"), lines[0])
        self.assertIn("job.a is protected", lines[0])
        self.assertEqual(self.read(self.summary_file), markdown.out)
        self.assertEqual(self.outputs(self.read(self.out_file)),
                         [("changes", "1"), ("exitcode", "1"), ("cost_per_hour", "")])

    def test_unwritable_files_are_a_warning_not_a_failed_plan(self):
        self.repo.write({"a": job_yaml("a")})
        plain = self.repo.plan("-detailed-exitcode")
        nowhere = os.path.join(self.tmp, "no-such-dir")
        r = self.repo.plan("-detailed-exitcode", env=self.gha(
            GITHUB_OUTPUT=nowhere + "/out", GITHUB_STEP_SUMMARY=nowhere + "/summary"))
        self.assertEqual((r.code, r.out), (2, plain.out), r)
        self.assertEqual(r.err, plain.err +
                         "vx: warning: cannot append to the step summary %s/summary "
                         "($GITHUB_STEP_SUMMARY): No such file or directory\n"
                         "vx: warning: cannot append to the step outputs file %s/out "
                         "($GITHUB_OUTPUT): No such file or directory\n" % (nowhere, nowhere))

    def test_without_github_actions_nothing_is_written(self):
        self.repo.write({"a": job_yaml("a")})
        env = {"GITHUB_OUTPUT": self.out_file, "GITHUB_STEP_SUMMARY": self.summary_file}
        for value in ("", "false", "1", "TRUE"):
            env["GITHUB_ACTIONS"] = value
            r = self.repo.plan(env=env)
            self.assertEqual(r.code, 0, r)
        self.assertFalse(os.path.exists(self.out_file))
        self.assertFalse(os.path.exists(self.summary_file))

    # -- apply ------------------------------------------------------------------

    def test_apply_adds_its_result_to_the_summary(self):
        self.repo.write({"a": job_yaml("a")})
        markdown = self.repo.plan("-format", "markdown")
        r = self.repo.apply(env=self.gha())
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.read(self.summary_file),
                         markdown.out + "\n**Apply complete**: 1 done, 0 failed.\n")
        self.assertEqual(self.outputs(self.read(self.out_file)), [("exitcode", "0")])
        os.remove(self.summary_file)
        os.remove(self.out_file)
        markdown = self.repo.plan("-format", "markdown")
        r = self.repo.apply(env=self.gha())
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.read(self.summary_file),
                         markdown.out + "\n**Apply complete**: no changes.\n")
        self.assertEqual(self.outputs(self.read(self.out_file)), [("exitcode", "0")])


if __name__ == "__main__":
    unittest.main()
