"""tools/check-format.py: lines changed since the base must be as .clang-format writes them; the
old lines around them, generated files and files outside the product folders are left alone."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "tools", "check-format.py")

# Hand-aligned trailing comments: clang-format would move them, so they stand for the old code.
OLD = """struct s {
\tint a;     /* first */
\tint bb;    /* second */
};

int f(int x)
{
\treturn x + 1;
}
"""


class CheckFormat(unittest.TestCase):
    maxDiff = None

    def git(self, *args):
        subprocess.run(["git", "-C", self.d] + list(args), check=True, capture_output=True)

    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="check-format-")
        self.addCleanup(shutil.rmtree, self.d)
        os.makedirs(os.path.join(self.d, "tools"))
        shutil.copy(CHECK, os.path.join(self.d, "tools", "check-format.py"))
        shutil.copy(os.path.join(ROOT, ".clang-format"), os.path.join(self.d, ".clang-format"))
        self.write("util/a.c", OLD)
        self.write("tests/unit/test_a.c", OLD)
        subprocess.run(["git", "init", "-q", "-b", "main", self.d], check=True)
        self.git("-c", "user.name=t", "-c", "user.email=t@example.com", "add", "-A")
        self.git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "base")
        self.git("checkout", "-q", "-b", "topic")
        self.base = subprocess.run(["git", "-C", self.d, "rev-parse", "HEAD"], capture_output=True,
                                   text=True).stdout.strip()

    def write(self, path, text):
        os.makedirs(os.path.join(self.d, os.path.dirname(path)), exist_ok=True)
        with open(os.path.join(self.d, path), "w") as f:
            f.write(text)

    def check(self, *args):
        env = dict(os.environ)
        env.pop("VX_FORMAT_BASE", None)
        cp = subprocess.run([sys.executable, os.path.join(self.d, "tools", "check-format.py")] + list(args),
                            capture_output=True, text=True, env=env)
        return cp.returncode, cp.stdout + cp.stderr

    def test_untouched_old_lines_pass(self):
        self.assertEqual(self.check(), (0, "check-format: 0 changed lines in 0 files since %s: ok\n" % self.base[:12]))

    def test_a_new_line_as_clang_format_writes_it_passes(self):
        self.write("util/a.c", OLD.replace("\treturn x + 1;\n", "\tif (x > 2)\n\t\tx--;\n\treturn x + 1;\n"))
        self.assertEqual(self.check(), (0, "check-format: 2 changed lines in 1 files since %s: ok\n" % self.base[:12]))

    def test_a_new_line_formatted_otherwise_fails(self):
        self.write("util/a.c", OLD.replace("\treturn x + 1;\n", "\tif(x>2) x--;\n\treturn x + 1;\n"))
        rc, out = self.check()
        self.assertEqual(rc, 1)
        self.assertEqual(out.splitlines()[0], "util/a.c:8:4: error: code should be clang-formatted "
                                              "[-Wclang-format-violations]")
        self.assertEqual(out.splitlines()[-2:], ["  git clang-format %s" % self.base,
                                                 "to format the lines changed since then (and only those)"])

    def test_committed_changes_on_the_branch_count(self):
        self.write("util/a.c", OLD.replace("\treturn x + 1;\n", "\treturn x+1;\n"))
        self.git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qam", "change")
        rc, out = self.check()
        self.assertEqual((rc, out.splitlines()[0]),
                         (1, "util/a.c:8:10: error: code should be clang-formatted [-Wclang-format-violations]"))
        # Against the new commit, nothing has changed.
        self.assertEqual(self.check("--base", "HEAD")[0], 0)

    def test_on_main_with_nothing_uncommitted_the_last_commit_is_checked(self):
        # CI's fresh clone is on main: the merge base with main is HEAD, and checking only what is
        # uncommitted there checks nothing. The commit that landed last is checked instead.
        self.git("checkout", "-q", "main")
        self.write("util/a.c", OLD.replace("\treturn x + 1;\n", "\treturn x+1;\n"))
        self.git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qam", "landed")
        rc, out = self.check()
        self.assertEqual((rc, out.splitlines()[0], out.splitlines()[-2]),
                         (1, "util/a.c:8:10: error: code should be clang-formatted [-Wclang-format-violations]",
                          "  git clang-format %s" % self.base))
        # With an uncommitted change, the base stays HEAD: the change is what is checked.
        self.write("util/a.c", OLD.replace("\treturn x + 1;\n", "\treturn x+1;\n\t/* more */\n"))
        head = subprocess.run(["git", "-C", self.d, "rev-parse", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
        self.assertEqual(self.check(), (0, "check-format: 1 changed lines in 1 files since %s: ok\n" % head[:12]))

    def test_new_untracked_file_is_checked_whole(self):
        self.write("cmd/b.c", "int g(void) { return 1; }\n")
        rc, out = self.check()
        self.assertEqual((rc, out.splitlines()[0]),
                         (1, "cmd/b.c:1:12: error: code should be clang-formatted [-Wclang-format-violations]"))

    def test_generated_and_test_files_are_not_checked(self):
        self.write("data/prices_data.c", "int  p;\n")
        self.write("tests/unit/test_a.c", "int  t;\n")
        self.assertEqual(self.check(), (0, "check-format: 0 changed lines in 0 files since %s: ok\n" % self.base[:12]))

    def test_all_counts_every_line(self):
        self.assertEqual(self.check("--all"), (1, "util/a.c: 2 of 9 lines differ\n"
                                                  "check-format: 2 lines in 1 files differ from clang-format\n"))


if __name__ == "__main__":
    unittest.main()
