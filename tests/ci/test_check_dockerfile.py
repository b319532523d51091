"""tools/check-dockerfile.py: the root Dockerfile passes, and each broken sample is reported exactly."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "tools", "check-dockerfile.py")

PIN = "@sha256:" + "0123456789abcdef" * 4

GOOD = """FROM debian:12-slim%s AS build
RUN make deb
FROM debian:12-slim%s
COPY --from=build /vx.deb /tmp/vx.deb
USER vx:vx
ENTRYPOINT ["vx"]
""" % (PIN, PIN)


class CheckDockerfile(unittest.TestCase):
    maxDiff = None

    def check(self, text=None):
        path = os.path.join(ROOT, "Dockerfile")
        if text is not None:
            d = tempfile.mkdtemp(prefix="check-dockerfile-")
            self.addCleanup(subprocess.run, ["rm", "-rf", d])
            path = os.path.join(d, "Dockerfile")
            with open(path, "w") as f:
                f.write(text)
        cp = subprocess.run([sys.executable, CHECK, path], capture_output=True, text=True, cwd=os.path.dirname(path))
        return cp.returncode, cp.stdout

    def test_shipped_dockerfile_passes(self):
        self.assertEqual(self.check(), (0, ""))
        cp = subprocess.run([sys.executable, CHECK, "Dockerfile", "examples/watch/Dockerfile"],
                            capture_output=True, text=True, cwd=ROOT)
        self.assertEqual((cp.returncode, cp.stdout), (0, ""))

    def test_good_sample_passes(self):
        self.assertEqual(self.check(GOOD), (0, ""))

    def test_untagged_and_latest_bases(self):
        self.assertEqual(self.check(GOOD.replace("debian:12-slim%s AS build" % PIN, "debian%s AS build" % PIN)),
                         (1, "Dockerfile: line 1: FROM debian%s is not pinned by a tag (IMAGE:TAG, not :latest)\n"
                          % PIN))
        self.assertEqual(self.check(GOOD.replace("debian:12-slim%s AS build" % PIN, "gcc:latest AS build")),
                         (1, "Dockerfile: line 1: FROM gcc:latest is not pinned by a tag (IMAGE:TAG, not :latest)\n"))

    def test_bases_pinned_by_tag_alone(self):
        # A tag moves: each base is pinned by its digest too, in both stages.
        self.assertEqual(self.check(GOOD.replace(PIN, "")),
                         (1, "Dockerfile: line 1: FROM debian:12-slim is not pinned by a digest "
                             "(IMAGE:TAG@sha256:..., docs/packaging.md)\n"
                             "Dockerfile: line 3: FROM debian:12-slim is not pinned by a digest "
                             "(IMAGE:TAG@sha256:..., docs/packaging.md)\n"))
        self.assertEqual(self.check(GOOD.replace(PIN + "\n", "@sha256:abc\n")),
                         (1, "Dockerfile: line 3: FROM debian:12-slim@sha256:abc is not pinned by a digest "
                             "(IMAGE:TAG@sha256:..., docs/packaging.md)\n"
                             "Dockerfile: line 3: the runtime stage is FROM debian:12-slim, not "
                             "debian:12-slim@sha256:abc\n"))
        self.assertEqual(self.check(GOOD.replace("FROM debian:12-slim%s\n" % PIN, "FROM debian:12%s\n" % PIN)),
                         (1, "Dockerfile: line 3: the runtime stage is FROM debian:12-slim, not debian:12\n"))

    def test_runtime_stage_without_user_or_as_root(self):
        self.assertEqual(self.check(GOOD.replace("USER vx:vx\n", "")),
                         (1, "Dockerfile: line 3: the runtime stage has no USER: it would run as root\n"))
        self.assertEqual(self.check(GOOD.replace("USER vx:vx", "USER 0")),
                         (1, "Dockerfile: line 5: USER 0 is root\n"))

    def test_single_stage(self):
        self.assertEqual(self.check("FROM debian:12-slim%s\nUSER vx\nENTRYPOINT [\"vx\"]\n" % PIN),
                         (1, "Dockerfile: top: not multi-stage: 1 FROM (a build stage, then a runtime stage)\n"))


if __name__ == "__main__":
    unittest.main()
