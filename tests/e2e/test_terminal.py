"""End to end: what vx does on a terminal and off one (issue 5).

`script` (util-linux, in Debian's essential bsdutils) runs vx on a pseudo-terminal,
as a person would.
"""
import shlex
import subprocess
import unittest

from harness import FakeTestCase, VX_BIN, job_yaml


class Terminal(FakeTestCase):

    def on_tty(self, args, typed="", env=None):
        e = self.fake.env()
        e.pop("NO_COLOR", None)
        e["TERM"] = "xterm"
        if env:
            e.update(env)
        cmd = " ".join(shlex.quote(a) for a in [VX_BIN] + list(args))
        cp = subprocess.run(["script", "-qefc", cmd, "/dev/null"], input=typed, capture_output=True,
                            text=True, env=e, cwd=self.repo.root, timeout=120)
        return cp.returncode, cp.stdout

    def test_colour_only_on_a_terminal_and_never_with_no_color(self):
        self.repo.write({"a": job_yaml("a")})
        code, out = self.on_tty(["plan", self.repo.dir])
        self.assertEqual(code, 0, out)
        self.assertIn("\033[", out)
        code, out = self.on_tty(["plan", self.repo.dir], env={"NO_COLOR": "1"})
        self.assertNotIn("\033[", out)
        code, out = self.on_tty(["plan", self.repo.dir, "-no-color"])
        self.assertNotIn("\033[", out)
        r = self.repo.plan()   # not a terminal
        self.assertNotIn("\033[", r.out)

    def test_apply_asks_on_a_terminal(self):
        self.repo.write({"a": job_yaml("a")})
        code, out = self.on_tty(["apply", self.repo.dir, "-no-color"], typed="no\n")
        self.assertEqual(code, 1, out)
        self.assertIn("Only 'yes' will be accepted", out)
        self.assertIn("Apply cancelled.", out)
        self.assertEqual(self.live_jobs(), [])
        code, out = self.on_tty(["apply", self.repo.dir, "-no-color"], typed="yes\n")
        self.assertEqual(code, 0, out)
        self.assertEqual(len(self.live_jobs("a")), 1)

    def test_apply_refuses_without_a_terminal(self):
        self.repo.write({"a": job_yaml("a")})
        r = self.repo.vx("apply", self.repo.dir)
        self.assertEqual(r.code, 1, r)
        self.assertIn("refusing to apply without -auto-approve", r.err)
        self.assertEqual(self.live_jobs(), [])


if __name__ == "__main__":
    unittest.main()
