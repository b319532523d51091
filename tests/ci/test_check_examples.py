"""tools/check-examples.py: the shipped unit and Dockerfile pass, each broken sample is
reported exactly.

Each sample is a good file with one thing broken, so a checker that stopped looking
at that thing would let the sample through and fail here.
"""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "tools", "check-examples.py")
SHIPPED = [os.path.join(ROOT, "examples", "watch", f) for f in ("vx-watch.service", "Dockerfile")]

DEPS = 'BUILD_PKGS="build-essential pkg-config libcurl4-openssl-dev libyaml-dev libcjson-dev ' \
       'libssl-dev libgit2-dev"\n'

GOOD_UNIT = """# a comment
[Unit]
Description=vx watch

[Service]
Type=simple
User=vx
WorkingDirectory=/srv/config
EnvironmentFile=/etc/vx/watch.env
ExecStart=/usr/bin/vx watch stack \\
  -metrics /var/lib/prom/vx.prom
Restart=on-failure
KillSignal=SIGTERM
TimeoutStopSec=15
NoNewPrivileges=yes
ProtectSystem=strict
PrivateTmp=true
ReadWritePaths=/srv/config
ReadWritePaths=-/var/lib/prom

[Install]
WantedBy=multi-user.target
"""

GOOD_DOCKERFILE = """# syntax comment
FROM debian:12-slim AS build
RUN apt-get update \\
 && apt-get install -y --no-install-recommends build-essential pkg-config \\
      libcurl4-openssl-dev libyaml-dev libcjson-dev libssl-dev libgit2-dev
COPY . /src
RUN make -C /src && make -C /src install PREFIX=/out

FROM debian:12-slim
RUN apt-get update && apt-get install -y --no-install-recommends \\
      libcurl4 libyaml-0-2 libcjson1 libssl3 libgit2-1.5 git ca-certificates \\
 && useradd vx
COPY --from=build /out/bin/ /usr/local/bin/
USER vx
ENTRYPOINT ["vx"]
CMD ["watch", "/config/stack"]
"""


class CheckExamples(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vx-check-examples-")
        self.deps = os.path.join(self.tmp, "deps.sh")
        with open(self.deps, "w") as f:
            f.write(DEPS)

    def tearDown(self):
        subprocess.run(["rm", "-rf", self.tmp], check=True)

    def check(self, text, name):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        cp = subprocess.run([sys.executable, CHECK, "--deps", self.deps, path],
                            capture_output=True, text=True)
        return cp.returncode, cp.stdout.replace(path, "F"), cp.stderr

    def unit(self, old, new):
        self.assertIn(old, GOOD_UNIT)
        return self.check(GOOD_UNIT.replace(old, new), "vx-watch.service")

    def docker(self, old, new):
        self.assertIn(old, GOOD_DOCKERFILE)
        return self.check(GOOD_DOCKERFILE.replace(old, new), "Dockerfile")

    def test_shipped_examples_pass(self):
        cp = subprocess.run([sys.executable, CHECK] + SHIPPED, capture_output=True, text=True)
        self.assertEqual((cp.returncode, cp.stdout, cp.stderr), (0, "", ""))

    def test_good_samples_pass(self):
        self.assertEqual(self.check(GOOD_UNIT, "vx-watch.service"), (0, "", ""))
        self.assertEqual(self.check(GOOD_DOCKERFILE, "Dockerfile"), (0, "", ""))

    def test_other_files_are_refused(self):
        self.assertEqual(self.check("x", "watch.conf"),
                         (1, "F: neither a systemd unit (*.service) nor a Dockerfile\n", ""))

    # ---- the unit: one broken sample per rule ----

    def test_unit_sections(self):
        self.assertEqual(self.unit("[Install]\nWantedBy=multi-user.target\n", ""),
                         (1, "F: top: no [Install] section\n", ""))
        self.assertEqual(self.unit("[Unit]\n", "Junk\n[Unit]\n"),
                         (1, "F: line: 'Junk' is neither a [section] nor a key=value in one\n", ""))

    def test_unit_type_restart_kill_signal(self):
        self.assertEqual(self.unit("Type=simple", "Type=forking"),
                         (1, "F: Service: Type=simple, not forking\n", ""))
        self.assertEqual(self.unit("Restart=on-failure", "Restart=always"),
                         (1, "F: Service: Restart=on-failure, not always\n", ""))
        self.assertEqual(self.unit("KillSignal=SIGTERM\n", ""),
                         (1, "F: Service: KillSignal=SIGTERM, not None\n", ""))

    def test_unit_timeout_stop(self):
        self.assertEqual(self.unit("TimeoutStopSec=15", "TimeoutStopSec=90"),
                         (1, "F: Service: TimeoutStopSec=15 (the cycle in flight ends and the lease "
                             "is released well within it), not 90\n", ""))
        self.assertEqual(self.unit("TimeoutStopSec=15", "TimeoutStopSec=15s"), (0, "", ""))

    def test_unit_exec_start(self):
        self.assertEqual(self.unit("ExecStart=/usr/bin/vx watch stack", "ExecStart=vx watch stack"),
                         (1, "F: Service: ExecStart runs /PATH/vx watch, not 'vx watch stack "
                             "-metrics /var/lib/prom/vx.prom'\n", ""))

    def test_unit_dedicated_user(self):
        self.assertEqual(self.unit("User=vx", "User=root"),
                         (1, "F: Service: User= a dedicated user, not root\n", ""))
        self.assertEqual(self.unit("User=vx\n", ""),
                         (1, "F: Service: User= a dedicated user, not None\n", ""))

    def test_unit_working_directory(self):
        self.assertEqual(self.unit("WorkingDirectory=/srv/config", "WorkingDirectory=config"),
                         (1, "F: Service: WorkingDirectory= the checkout, an absolute path, not "
                             "config\n", ""))

    def test_unit_environment_file(self):
        self.assertEqual(self.unit("EnvironmentFile=/etc/vx/watch.env\n", ""),
                         (1, "F: Service: no EnvironmentFile= (GOOGLE_APPLICATION_CREDENTIALS, "
                             "the webhook variables)\n", ""))

    def test_unit_hardening(self):
        self.assertEqual(self.unit("NoNewPrivileges=yes", "NoNewPrivileges=no"),
                         (1, "F: Service: NoNewPrivileges=yes, not no\n", ""))
        self.assertEqual(self.unit("PrivateTmp=true\n", ""),
                         (1, "F: Service: PrivateTmp=yes, not None\n", ""))
        self.assertEqual(self.unit("ProtectSystem=strict", "ProtectSystem=full"),
                         (1, "F: Service: ProtectSystem=strict, not full\n", ""))

    def test_unit_read_write_paths(self):
        self.assertEqual(self.unit("ReadWritePaths=/srv/config\n", ""),
                         (1, "F: Service: ReadWritePaths= does not name the WorkingDirectory "
                             "/srv/config (ProtectSystem=strict makes it read-only)\n", ""))
        self.assertEqual(self.unit("ReadWritePaths=-/var/lib/prom\n", ""),
                         (1, "F: Service: ReadWritePaths= does not name the -metrics file's "
                             "directory /var/lib/prom (ProtectSystem=strict makes it read-only)\n",
                          ""))
        # Another package's directory: optional, or created by the unit.
        self.assertEqual(self.unit("ReadWritePaths=-/var/lib/prom\n", "ReadWritePaths=/var/lib/prom\n"),
                         (1, "F: Service: ReadWritePaths= names the -metrics file's directory "
                             "/var/lib/prom without '-' (optional), and no StateDirectory= creates it: "
                             "the unit fails to start where it does not exist\n", ""))
        self.assertEqual(self.unit("ReadWritePaths=-/var/lib/prom\n",
                                   "ReadWritePaths=/var/lib/prom\nStateDirectory=prom\n"), (0, "", ""))
        # A parent directory covers it.
        self.assertEqual(self.unit("ReadWritePaths=/srv/config\n", "ReadWritePaths=/srv\n"),
                         (0, "", ""))

    # ---- the Dockerfile: one broken sample per rule ----

    def test_docker_single_stage(self):
        text = GOOD_DOCKERFILE.split("\nFROM debian:12-slim\n")[0]
        self.assertEqual(self.check(text, "Dockerfile"),
                         (1, "F: top: not multi-stage: 1 FROM (a build stage, then a runtime "
                             "stage)\n", ""))

    def test_docker_build_stage_name(self):
        self.assertEqual(self.docker("FROM debian:12-slim AS build", "FROM debian:12-slim"),
                         (1, "F: line 2: the first stage is FROM IMAGE AS build, not unnamed\n"
                             # and COPY --from=build names no stage now
                             "F: line 9: the runtime stage copies nothing from the build stage\n",
                          ""))

    def test_docker_runtime_base(self):
        self.assertEqual(self.docker("\nFROM debian:12-slim\n", "\nFROM debian:12\n"),
                         (1, "F: line 9: the runtime stage is FROM debian:12-slim, not "
                             "debian:12\n", ""))
        self.assertEqual(self.docker("\nFROM debian:12-slim\n", "\nFROM debian:bookworm-slim\n"),
                         (0, "", ""))
        # Pinned by digest, as the shipped one is (tools/check-dockerfile.py requires it).
        self.assertEqual(self.docker("\nFROM debian:12-slim\n", "\nFROM debian:12-slim@sha256:%s\n" % ("ab" * 32)),
                         (0, "", ""))

    def test_docker_build_runs_make(self):
        self.assertEqual(self.docker("RUN make -C /src && make -C /src install PREFIX=/out",
                                     "RUN cc -o /out/bin/vx /src/*.c"),
                         (1, "F: line 2: the build stage never runs make\n", ""))

    def test_docker_build_packages(self):
        self.assertEqual(self.docker("libssl-dev libgit2-dev\n", "libssl-dev\n"),
                         (1, "F: line 2: the build stage does not install libgit2-dev "
                             "(tools/deps.sh)\n", ""))

    def test_docker_runtime_packages(self):
        self.assertEqual(self.docker("libgit2-1.5 git", "git"),
                         (1, "F: line 9: the runtime stage does not install libgit2-1.5\n", ""))
        # Debian 11's name, not 12's.
        self.assertEqual(self.docker("libssl3", "libssl1.1"),
                         (1, "F: line 9: the runtime stage does not install libssl3\n"
                             "F: line 9: the runtime stage installs libssl1.1, not one of the "
                             "Debian 12 runtime packages (ca-certificates git libcjson1 libcurl4 "
                             "libgit2-1.5 libssl3 libyaml-0-2)\n", ""))

    def test_docker_unknown_build_package(self):
        with open(self.deps, "w") as f:
            f.write(DEPS.replace('"\n', ' libzstd-dev"\n'))
        self.assertEqual(self.check(GOOD_DOCKERFILE, "Dockerfile"),
                         (1, "F: line 2: the build stage does not install libzstd-dev "
                             "(tools/deps.sh)\n"
                             "F: top: tools/deps.sh builds with libzstd-dev: check-examples.py does "
                             "not know its Debian 12 runtime package (add it to RUNTIME)\n", ""))

    def test_docker_copy_from_build(self):
        self.assertEqual(self.docker("COPY --from=build /out/bin/", "COPY /out/bin/"),
                         (1, "F: line 9: the runtime stage copies nothing from the build stage\n",
                          ""))

    def test_docker_user(self):
        self.assertEqual(self.docker("USER vx\n", ""),
                         (1, "F: line 9: the runtime stage has no USER: it would run as root\n", ""))
        self.assertEqual(self.docker("USER vx\n", "USER 0:0\n"),
                         (1, "F: line 14: USER 0:0 is root\n", ""))
        # A USER of the build stage does not count for the runtime.
        self.assertEqual(self.docker("USER vx\n", "").count("no USER"), 0)
        text = GOOD_DOCKERFILE.replace("COPY . /src\n", "USER builder\nCOPY . /src\n")
        text = text.replace("USER vx\n", "")
        self.assertEqual(self.check(text, "Dockerfile"),
                         (1, "F: line 10: the runtime stage has no USER: it would run as root\n", ""))

    def test_docker_add_url(self):
        self.assertEqual(self.docker("COPY . /src\n",
                                     "COPY . /src\nADD https://example.com/x.tgz /src/\n"),
                         (1, "F: line 7: ADD of a URL: download in a RUN with a checksum, or "
                             "COPY\n", ""))

    def test_docker_entrypoint_and_cmd(self):
        self.assertEqual(self.docker('ENTRYPOINT ["vx"]', "ENTRYPOINT vx"),
                         (1, 'F: line 15: ENTRYPOINT is not ["vx"] (exec form)\n', ""))
        self.assertEqual(self.docker('CMD ["watch", "/config/stack"]', 'CMD ["plan", "stack"]'),
                         (1, 'F: line 16: CMD is not ["watch", ...] (exec form)\n', ""))


if __name__ == "__main__":
    unittest.main()
