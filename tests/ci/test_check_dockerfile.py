"""tools/check-dockerfile.py: the root Dockerfile passes, and each broken sample is reported exactly."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "tools", "check-dockerfile.py")

GOOD = """FROM debian:12-slim AS build
RUN make deb
FROM debian:12-slim
COPY --from=build /vx.deb /tmp/vx.deb
USER vx:vx
ENTRYPOINT ["vx"]
"""


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

    def test_good_sample_passes(self):
        self.assertEqual(self.check(GOOD), (0, ""))

    def test_untagged_and_latest_bases(self):
        self.assertEqual(self.check(GOOD.replace("debian:12-slim AS build", "debian AS build")),
                         (1, "Dockerfile: line 1: FROM debian is not pinned by a tag (IMAGE:TAG, not :latest)\n"))
        self.assertEqual(self.check(GOOD.replace("debian:12-slim AS build", "gcc:latest AS build")),
                         (1, "Dockerfile: line 1: FROM gcc:latest is not pinned by a tag (IMAGE:TAG, not :latest)\n"))

    def test_runtime_stage_without_user_or_as_root(self):
        self.assertEqual(self.check(GOOD.replace("USER vx:vx\n", "")),
                         (1, "Dockerfile: line 3: the runtime stage has no USER: it would run as root\n"))
        self.assertEqual(self.check(GOOD.replace("USER vx:vx", "USER 0")),
                         (1, "Dockerfile: line 5: USER 0 is root\n"))

    def test_single_stage(self):
        self.assertEqual(self.check("FROM debian:12-slim\nUSER vx\nENTRYPOINT [\"vx\"]\n"),
                         (1, "Dockerfile: top: not multi-stage: 1 FROM (a build stage, then a runtime stage)\n"))


if __name__ == "__main__":
    unittest.main()
