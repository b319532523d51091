"""One version scheme, the release recipe's, in every snippet a user copies.

examples/ci/github/vx-release.yml releases a tag vX.Y.Z whose VERSION says X.Y.Z and moves the
major tag vX to it. So the setup action's snippets say `uses: OWNER/vx@vX` (the major of
VERSION; or @vX.Y.Z), `version: X.Y.Z` is VERSION, the files and the image are named by
VERSION, and the README's .deb path is the one make deb writes.
"""
import glob
import os
import re
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
with open(os.path.join(ROOT, "VERSION")) as f:
    VERSION = f.read().strip()
MAJOR = "v" + VERSION.split(".")[0]
V = r"\d+\.\d+\.\d+"


def files():
    """What users read and copy: the action, its script, the README, the docs, the examples,
    the man pages (docs/measurements.md is a log of past runs, not instructions)."""
    out = ["action.yml", "tools/setup-vx.sh", "README.md"]
    out += sorted(p for p in glob.glob("docs/*.md", root_dir=ROOT) if p != "docs/measurements.md")
    out += sorted(p for p in glob.glob("examples/**/*", root_dir=ROOT, recursive=True)
                  if os.path.isfile(os.path.join(ROOT, p)))
    out += sorted(glob.glob("examples/**/.*", root_dir=ROOT, recursive=True))
    out += sorted(glob.glob("man/*", root_dir=ROOT))
    return out


def lines():
    for p in files():
        with open(os.path.join(ROOT, p), errors="replace") as f:
            for n, line in enumerate(f, 1):
                yield "%s:%d" % (p, n), line


class VersionSchemeTest(unittest.TestCase):
    def wrong(self, pattern, ok):
        bad = []
        for where, line in lines():
            for m in re.finditer(pattern, line):
                if not ok(m):
                    bad.append("%s: %s" % (where, m.group(0)))
        return bad

    def test_action_refs_are_the_major_tag_or_the_release(self):
        self.assertEqual(self.wrong(r"OWNER/vx@(v[0-9A-Za-z.]+)", lambda m: m.group(1) in (
            MAJOR, "v" + VERSION, "vX", "vX.Y.Z")), [])

    def test_version_inputs_images_and_files_name_version(self):
        for pattern in (r"\bversion: (%s)" % V, r"/vx:(%s)" % V, r"\bvx:(%s)" % V,
                        r"\bvx_(%s)_" % V, r"\bvx-(%s)-linux" % V, r"\brelease v(%s)" % V):
            self.assertEqual(self.wrong(pattern, lambda m: m.group(1) == VERSION), [], pattern)

    def test_major_tag_words(self):
        """'the newest N.x release' next to @vN."""
        self.assertEqual(self.wrong(r"newest (\d+)\.x", lambda m: "v" + m.group(1) == MAJOR), [])

    def test_release_recipe_tags_and_moves_the_major_tag(self):
        with open(os.path.join(ROOT, "examples/ci/github/vx-release.yml")) as f:
            recipe = f.read()
        self.assertIn('tags: ["v*.*.*"]', recipe)
        self.assertIn('if [ "v$(cat VERSION)" != "$GITHUB_REF_NAME" ]; then', recipe)
        self.assertIn('major="${GITHUB_REF_NAME%%.*}"', recipe)
        self.assertIn("make release-check", recipe)
        self.assertIn("path: build/release/", recipe)
        self.assertIn("vx_*_amd64.deb vx-*-linux-amd64.tar.gz SHA256SUMS", recipe)

    def test_readme_installs_the_deb_from_where_make_deb_writes_it(self):
        with open(os.path.join(ROOT, "Makefile")) as f:
            self.assertIn("DEB         := $(BUILD)/vx_$(VERSION)_$(DEB_ARCH).deb", f.read())
        with open(os.path.join(ROOT, "README.md")) as f:
            readme = f.read()
        installs = re.findall(r"apt-get install (\./\S+\.deb)", readme)
        self.assertEqual(installs, ["./build/vx_%s_amd64.deb" % VERSION])


if __name__ == "__main__":
    unittest.main()
