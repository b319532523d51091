"""vx version: vx's version, the commit it was built from, and the versions of
the five libraries as they report themselves at run time.

The output's shape is the contract, compared whole: one regular expression per
line, each matching the entire line. The version comes from VERSION and the
commit from git (the binary under test is built from this tree, as make check
does); the library versions come from the libraries' own calls, so the test
knows them only by pattern. -format json holds the same values.
"""
import json
import os
import re
import subprocess
import unittest

from harness import ROOT, VX_BIN

SEMVER = r"[0-9]+\.[0-9]+\.[0-9]+"


def expected_commit():
    """The commit pattern: HEAD's 12 hex digits (-dirty allowed), or unknown outside git."""
    if not os.path.exists(os.path.join(ROOT, ".git")):
        return "unknown"
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()
    return re.escape(head) + "(-dirty)?"


def run(*args):
    cp = subprocess.run([VX_BIN, *args], capture_output=True, text=True, timeout=60)
    return cp.returncode, cp.stdout, cp.stderr


class Version(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        with open(os.path.join(ROOT, "VERSION")) as f:
            self.version = f.read().strip()
        self.lines = [
            "vx " + re.escape(self.version),
            "commit  " + expected_commit(),
            "libcurl " + SEMVER + r"(-DEV)?",
            "libyaml " + SEMVER,
            "cJSON   " + SEMVER,
            "OpenSSL " + SEMVER + r"[a-z]?",
            "libgit2 " + SEMVER,
        ]

    def assert_shape(self, out):
        got = out.split("\n")
        self.assertEqual(got[-1], "", "output ends with a newline")
        got = got[:-1]
        self.assertEqual(len(got), len(self.lines), out)
        for line, pattern in zip(got, self.lines):
            self.assertRegex(line, "^" + pattern + "$")

    def test_human(self):
        code, out, err = run("version")
        self.assertEqual((code, err), (0, ""))
        self.assert_shape(out)

    def test_dash_version_is_the_same(self):
        self.assertEqual(run("-version"), run("version"))

    def test_json_holds_the_same_values(self):
        code, out, err = run("version", "-format", "json")
        self.assertEqual((code, err), (0, ""))
        self.assertTrue(out.endswith("}\n"), out)
        doc = json.loads(out)
        human = dict(line.split(None, 1) for line in run("version")[1].splitlines())
        self.assertEqual(doc, {
            "version": self.version,
            "commit": human["commit"],
            "libraries": {"libcurl": human["libcurl"], "libyaml": human["libyaml"],
                          "cjson": human["cJSON"], "openssl": human["OpenSSL"],
                          "libgit2": human["libgit2"]},
        })
        self.assertEqual(human["vx"], self.version)

    def test_bad_format_and_arguments(self):
        self.assertEqual(run("version", "-format", "yaml"),
                         (64, "", "vx: version: -format must be human or json\n"))
        self.assertEqual(run("version", "extra"),
                         (64, "", "vx: version: takes no arguments (see 'vx version -help')\n"))


if __name__ == "__main__":
    unittest.main()
