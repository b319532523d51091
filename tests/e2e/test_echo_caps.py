"""What vx quotes back of its input is cut to a few hundred bytes.

A declaration or an argument can be as large as the loader allows (a 1 MB
label value, a long resource name): echoing it whole made an error line of a
megabyte, which a CI job then posts as a pull-request comment over GitHub's
size limit. Each quoted value is cut to its first 200 bytes, marked with "…"
and its full length, by one helper every diagnostic and error goes through.
"""
import os
import unittest

from harness import PROJECT, REGION, FakeTestCase, job_yaml

MB = 1 << 20
A200 = "a" * 200
# the longest an error line may now be, whatever the input's size
LINE_MAX = 1024


class EchoCaps(FakeTestCase):

    def stack(self, labels):
        with open(os.path.join(self.repo.dir, "stack.yaml"), "w") as f:
            f.write("kind: Stack\nname: e2e\nproject: %s\nregion: %s\nlabels:\n%s\n" % (PROJECT, REGION, labels))

    def where(self):
        return os.path.join(self.repo.dir, "stack.yaml")

    def test_a_1mb_label_value(self):
        self.stack("  team: " + "a" * MB)
        r = self.repo.vx("validate", self.repo.dir)
        lines = r.err.splitlines()
        self.assertEqual((r.code, r.out), (1, ""), r.err[:2000])
        self.assertEqual(lines[0], '%s:6:9: Stack "e2e": labels.team: value "%s…" (1048576 bytes) '
                         'is not valid: use lowercase letters, digits, "_" and "-", at most 64 characters'
                         % (self.where(), A200), r.err[:2000])
        self.assertLess(max(len(l.encode()) for l in lines), LINE_MAX, r.err[:2000])
        self.assertLess(len(r.err.encode()), 4 * LINE_MAX, r.err[:2000])

    def test_a_1mb_label_key_unquoted_in_the_path(self):
        # an explicit key: libyaml takes no plain key over 1024 characters
        self.stack("  ? " + "b" * MB + "\n  : [1]")
        r = self.repo.vx("validate", self.repo.dir)
        lines = r.err.splitlines()
        self.assertEqual((r.code, r.out), (1, ""), r.err[:2000])
        self.assertEqual(lines[0], '%s:7:5: Stack "e2e": %s… (1048583 bytes): expected a '
                         'string, got a sequence' % (self.where(), "labels." + "b" * 193), r.err[:2000])
        self.assertLess(max(len(l.encode()) for l in lines), LINE_MAX, r.err[:2000])

    def test_a_long_import_argument(self):
        self.repo.write({"a": job_yaml("a")})
        res = "projects/%s/locations/%s/customJobs/%s" % (PROJECT, REGION, "9" * 100000)
        r = self.repo.vx("import", "job.a", res, self.repo.dir)
        self.assertEqual((r.code, r.out), (1, ""), r.err[:2000])
        self.assertEqual(r.err, "vx: import: job.a takes a Vertex AI CustomJob, projects/PROJECT/locations/REGION/"
                         "customJobs/ID, not '%s…' (%d bytes)\n" % (res[:200], len(res)))
        addr = "job." + "x" * 100000
        r = self.repo.vx("import", addr, res, self.repo.dir)
        self.assertEqual((r.code, r.out), (1, ""), r.err[:2000])
        self.assertLess(len(r.err.encode()), LINE_MAX, r.err[:2000])


if __name__ == "__main__":
    unittest.main()
