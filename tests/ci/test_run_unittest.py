"""tests/run_unittest.py, the runner of make check's Python suites: its closing count line,
its exit status, files run side by side with their output kept whole, longest first."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNER = os.path.join(ROOT, "tests", "run_unittest.py")

PASS = """import unittest
class T(unittest.TestCase):
    def test_a(self):
        print("{name} line 1")
        print("{name} line 2")
    def test_b(self):
        pass
"""

# Each file waits (up to 20 s) until the other has started: passes only when run side by side.
BARRIER = """import os, time, unittest
class T(unittest.TestCase):
    def test_meet(self):
        open(os.path.join({dir!r}, "{me}.started"), "w").close()
        deadline = time.time() + 20
        while not os.path.exists(os.path.join({dir!r}, "{other}.started")):
            self.assertLess(time.time(), deadline, "{other} never ran beside {me}")
            time.sleep(0.01)
        for i in range(200):
            print("{me} %d" % i)
"""


class Runner(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="vx-run-unittest-test-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def write(self, name, text):
        with open(os.path.join(self.dir, name), "w") as f:
            f.write(text)

    def run_it(self, *args, jobs="4"):
        env = dict(os.environ, VX_TEST_JOBS=jobs)
        cp = subprocess.run([sys.executable, RUNNER] + list(args), capture_output=True, text=True,
                            env=env, timeout=120)
        return cp.returncode, cp.stdout.splitlines()

    def progress(self, lines, name):
        """The progress lines' file names, in order."""
        return [l.split()[2] for l in lines if l.startswith(name + ": [")]

    def test_all_pass(self):
        self.write("test_one.py", PASS.format(name="one"))
        self.write("test_two.py", PASS.format(name="two"))
        code, lines = self.run_it("t", self.dir)
        self.assertEqual(code, 0, lines)
        self.assertEqual(lines[-1], "t: 4 passed, 0 failed")
        self.assertEqual(sorted(self.progress(lines, "t")), ["test_one.py", "test_two.py"])
        self.assertRegex("\n".join(lines), r"t: \[2/2\] test_\w+\.py ok \(\d+\.\d s\)")

    def test_failure_counted_and_shown(self):
        self.write("test_one.py", PASS.format(name="one"))
        self.write("test_bad.py", "import unittest\nclass T(unittest.TestCase):\n"
                   "    def test_x(self):\n        self.assertEqual(1, 2, 'the reason')\n")
        code, lines = self.run_it("t", self.dir)
        self.assertEqual(code, 1)
        self.assertEqual(lines[-1], "t: 2 passed, 1 failed")
        self.assertIn("AssertionError: 1 != 2 : the reason", lines)
        self.assertTrue(any(l.startswith("t: [") and "test_bad.py FAILED" in l for l in lines), lines)

    def test_skip_fails_the_run(self):
        self.write("test_skip.py", "import unittest\nclass T(unittest.TestCase):\n"
                   "    def test_x(self):\n        self.skipTest('no tool')\n"
                   "    def test_y(self):\n        pass\n")
        code, lines = self.run_it("t", self.dir)
        self.assertEqual(code, 1)
        self.assertEqual(lines[-1], "t: 1 passed, 0 failed")

    def test_nothing_ran_fails_the_run(self):
        self.write("test_one.py", PASS.format(name="one"))
        code, lines = self.run_it("t", self.dir, "test_none*.py")
        self.assertEqual((code, lines), (1, ["t: 0 passed, 0 failed"]))

    def test_pattern_picks_files(self):
        self.write("test_one.py", PASS.format(name="one"))
        self.write("test_two.py", PASS.format(name="two"))
        code, lines = self.run_it("t", self.dir, "test_two.py")
        self.assertEqual(code, 0, lines)
        self.assertEqual(self.progress(lines, "t"), ["test_two.py"])
        self.assertEqual(lines[-1], "t: 2 passed, 0 failed")

    def test_file_that_dies_is_a_failure(self):
        self.write("test_one.py", PASS.format(name="one"))
        self.write("test_die.py", "import os, unittest\nclass T(unittest.TestCase):\n"
                   "    def test_x(self):\n        os._exit(3)\n")
        code, lines = self.run_it("t", self.dir)
        self.assertEqual(code, 1)
        self.assertEqual(lines[-1], "t: 2 passed, 1 failed")
        self.assertIn("t: test_die.py ended with status 3 before reporting its tests", lines)

    def test_files_run_side_by_side_and_their_output_stays_whole(self):
        self.write("test_a.py", BARRIER.format(dir=self.dir, me="a", other="b"))
        self.write("test_b.py", BARRIER.format(dir=self.dir, me="b", other="a"))
        code, lines = self.run_it("t", self.dir, jobs="2")
        self.assertEqual(code, 0, lines)
        self.assertEqual(lines[-1], "t: 2 passed, 0 failed")
        for me in ("a", "b"):
            mine = [i for i, l in enumerate(lines) if l.startswith(me + " ")]
            self.assertEqual(mine, list(range(mine[0], mine[0] + 200)), "output of test_%s.py split" % me)

    def test_one_job_runs_files_one_after_the_other(self):
        self.write("test_a.py", BARRIER.format(dir=self.dir, me="a", other="b").replace("20", "1"))
        self.write("test_b.py", BARRIER.format(dir=self.dir, me="b", other="a").replace("20", "1"))
        code, lines = self.run_it("t", self.dir, jobs="1")
        self.assertEqual(code, 1)
        self.assertEqual(lines[-1], "t: 1 passed, 1 failed")

    def test_longest_first_unknown_before_all(self):
        for n in ("a", "b", "c", "d"):
            self.write("test_%s.py" % n, PASS.format(name=n))
        self.write("durations.txt", "# seconds\ntest_a.py 1\ntest_b.py 100\ntest_d.py 5\nu test_d.py 500\n")
        code, lines = self.run_it("t", self.dir, jobs="1")
        self.assertEqual(code, 0, lines)
        self.assertEqual(self.progress(lines, "t"), ["test_c.py", "test_b.py", "test_d.py", "test_a.py"])
        # A line naming suite u is for u only.
        code, lines = self.run_it("u", self.dir, jobs="1")
        self.assertEqual(self.progress(lines, "u"), ["test_c.py", "test_d.py", "test_b.py", "test_a.py"])

    def test_suites_share_a_pool_each_with_its_env_and_count_line(self):
        self.write("test_env.py", "import os, unittest\nclass T(unittest.TestCase):\n"
                   "    def test_x(self):\n        print('WHO=' + os.environ['WHO'])\n")
        code, lines = self.run_it("one", self.dir, "WHO=first", "--", "two", self.dir, "test_env.py",
                                  "WHO=second")
        self.assertEqual(code, 0, lines)
        self.assertEqual(sorted(l for l in lines if l.startswith("WHO=")), ["WHO=first", "WHO=second"])
        self.assertEqual(lines[-2:], ["one: 1 passed, 0 failed", "two: 1 passed, 0 failed"])
        # Each file's output is followed by its own suite's progress line, nothing between.
        for who, name in (("first", "one"), ("second", "two")):
            i = lines.index("WHO=" + who)
            j = [k for k, l in enumerate(lines) if l.startswith(name + ": [1/1] test_env.py ok")][0]
            self.assertLess(i, j)
            self.assertFalse([l for l in lines[i + 1:j] if l.startswith(("WHO=", "one:", "two:"))], lines)
        code, lines = self.run_it("one", self.dir, "WHO=first", "--", "two", self.dir, "test_none.py")
        self.assertEqual(code, 1)
        self.assertEqual(lines[-2:], ["one: 1 passed, 0 failed", "two: 0 passed, 0 failed"])


if __name__ == "__main__":
    unittest.main()
