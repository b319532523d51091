"""make release's folder (VX_RELEASE_DIR, build/release/) as a user meets it.

The folder is served on a loopback port by Python's http.server, as GitHub serves a release's
files under .../releases/download/vVERSION/, and the setup action's own script
(tools/setup-vx.sh release) installs from it: it downloads SHA256SUMS and the .deb, checks the
sum, and hands the .deb to apt-get (a recorder here, which also checks that what it got is the
package make deb built). A corrupted .deb is refused with both sums and nothing installed.
The tarball holds the binary, its links, man pages and completions and a README naming the
runtime packages; every library the binary loads belongs to one of those packages (or to libc),
so it runs on a stock Debian 12 without -dev packages.

Run by make release-check (in make check), which builds the folder first.
"""
import functools
import hashlib
import http.server
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import threading
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "tools", "setup-vx.sh")
RELEASE = os.environ.get("VX_RELEASE_DIR", os.path.join(ROOT, "build", "release"))
with open(os.path.join(ROOT, "VERSION")) as _f:
    VERSION = os.environ.get("VX_VERSION") or _f.read().strip()
ARCH = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True).stdout.strip()
DEB = "vx_%s_%s.deb" % (VERSION, ARCH)
TARBALL = "vx-%s-linux-%s.tar.gz" % (VERSION, ARCH)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Served:
    """DIR/vVERSION/ is the release folder, on http://127.0.0.1:PORT/."""

    def __init__(self, files):
        self.dir = tempfile.mkdtemp(prefix="vx-release-test-")
        self.tag = os.path.join(self.dir, "v" + VERSION)
        shutil.copytree(files, self.tag)
        handler = functools.partial(Quiet, directory=self.dir)
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


class ReleaseTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.isfile(os.path.join(RELEASE, "SHA256SUMS")):
            raise AssertionError("%s has no SHA256SUMS: run make release first" % RELEASE)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vx-release-run-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.served = Served(RELEASE)
        self.addCleanup(self.served.close)
        self.osr = os.path.join(self.tmp, "os-release")
        with open(self.osr, "w") as f:
            f.write('ID=debian\nVERSION_ID="12"\n')
        # apt-get, recorded: 'install ... FILE' keeps a copy of the file it was given.
        self.apt_log = os.path.join(self.tmp, "apt.log")
        self.got = os.path.join(self.tmp, "got.deb")
        self.apt = os.path.join(self.tmp, "apt")
        with open(self.apt, "w") as f:
            f.write('#!/bin/sh\necho "$*" >> %s\n'
                    'if [ "$1" = install ]; then for a; do f=$a; done; cp "$f" %s; fi\n' % (self.apt_log, self.got))
        os.chmod(self.apt, 0o755)

    def setup(self, *args):
        e = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "INPUT_"))}
        e.update({"VX_SETUP_RELEASES": self.served.url, "VX_SETUP_OS_RELEASE": self.osr,
                  "VX_SETUP_APT": self.apt, "GITHUB_OUTPUT": os.path.join(self.tmp, "output"),
                  "RUNNER_TEMP": self.tmp, "GH_TOKEN": "not-for-loopback"})
        cp = subprocess.run(["bash", SCRIPT, "release"] + list(args), capture_output=True, text=True,
                            env=e, timeout=120)
        return cp.returncode, cp.stdout, cp.stderr

    def apt_calls(self):
        if not os.path.exists(self.apt_log):
            return []
        with open(self.apt_log) as f:
            return f.read().splitlines()

    def test_the_folder_holds_the_deb_the_tarball_and_their_sums(self):
        self.assertEqual(sorted(os.listdir(RELEASE)), sorted([DEB, TARBALL, "SHA256SUMS"]))
        with open(os.path.join(RELEASE, "SHA256SUMS")) as f:
            self.assertEqual(f.read(), "%s  %s\n%s  %s\n" % (
                sha256(os.path.join(RELEASE, DEB)), DEB, sha256(os.path.join(RELEASE, TARBALL)), TARBALL))
        cp = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=RELEASE, capture_output=True, text=True)
        self.assertEqual((cp.returncode, cp.stdout), (0, "%s: OK\n%s: OK\n" % (DEB, TARBALL)))

    def test_setup_action_installs_the_served_deb_its_sum_checked(self):
        code, out, err = self.setup(VERSION, "acme/vx")
        self.assertEqual((code, err), (0, ""), out)
        self.assertEqual(out, "vx setup: %s: SHA-256 %s, as SHA256SUMS says\n"
                         % (DEB, sha256(os.path.join(RELEASE, DEB))))
        calls = self.apt_calls()
        self.assertEqual(calls[0], "update -qq")
        self.assertRegex(calls[1], r"^install -y -qq --no-install-recommends %s/vx-setup\.\w+/%s$"
                         % (re.escape(self.tmp), re.escape(DEB)))
        self.assertEqual(len(calls), 2, calls)
        self.assertEqual(sha256(self.got), sha256(os.path.join(RELEASE, DEB)))

    def test_a_corrupted_deb_is_refused_and_nothing_installed(self):
        path = os.path.join(self.served.tag, DEB)
        with open(path, "r+b") as f:
            f.seek(os.path.getsize(path) // 2)
            b = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([b[0] ^ 0xFF]))
        code, out, err = self.setup(VERSION, "acme/vx")
        msg = ("%s: its SHA-256 is %s, but SHA256SUMS of release v%s says %s: the download was cut "
               "short or altered; nothing installed" % (DEB, sha256(path), VERSION,
                                                        sha256(os.path.join(RELEASE, DEB))))
        self.assertEqual((code, out, err), (1, "::error title=vx setup::%s\n" % msg, "vx setup: %s\n" % msg))
        self.assertEqual(self.apt_calls(), [])

    def test_a_missing_release_is_refused(self):
        code, out, err = self.setup("9.9.9", "acme/vx")
        self.assertEqual(code, 1)
        self.assertEqual(err, "curl: (22) The requested URL returned error: 404\n"
                         "vx setup: cannot download SHA256SUMS of release v9.9.9 from %s/v9.9.9\n"
                         % self.served.url)
        self.assertEqual(self.apt_calls(), [])

    def test_tarball_runs_with_the_runtime_packages_its_readme_names(self):
        top = "vx-%s-linux-%s" % (VERSION, ARCH)
        with tarfile.open(os.path.join(RELEASE, TARBALL)) as t:
            names = set(t.getnames())
            for m in t.getmembers():
                self.assertEqual((m.uid, m.gid), (0, 0), m.name)
            if hasattr(tarfile, "tar_filter"):
                t.extractall(self.tmp, filter="tar")
            else:
                t.extractall(self.tmp)
        for want in ("bin/vx", "bin/vxplan", "bin/vxapply", "README", "share/man/man1/vx.1.gz",
                     "share/man/man5/vx-stack.5.gz", "share/bash-completion/completions/vx",
                     "share/zsh/vendor-completions/_vx", "share/fish/vendor_completions.d/vx.fish"):
            self.assertIn(top + "/" + want, names)
        root = os.path.join(self.tmp, top)
        self.assertEqual(os.readlink(os.path.join(root, "bin", "vxplan")), "vx")
        cp = subprocess.run([os.path.join(root, "bin", "vxplan"), "-help"], capture_output=True, text=True)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        cp = subprocess.run([os.path.join(root, "bin", "vx"), "version"], capture_output=True, text=True)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertEqual(cp.stdout.splitlines()[0], "vx %s" % VERSION)
        with open(os.path.join(root, "README")) as f:
            readme = f.read()
        m = re.search(r"^  sudo apt-get install (.*) ca-certificates$", readme, re.M)
        self.assertIsNotNone(m, readme)
        named = set(m.group(1).split())
        depends = subprocess.run(["dpkg-deb", "-f", os.path.join(RELEASE, DEB), "Depends"],
                                 capture_output=True, text=True, check=True).stdout
        self.assertEqual(named, {re.sub(r"\s*\(.*", "", d.strip()) for d in depends.split(",")})
        self.assertFalse([p for p in named if p.endswith("-dev")])
        # Every shared library the binary loads is in a named package, or in libc6.
        ldd = subprocess.run(["ldd", os.path.join(root, "bin", "vx")], capture_output=True, text=True,
                             check=True).stdout
        direct = subprocess.run(["objdump", "-p", os.path.join(root, "bin", "vx")], capture_output=True,
                                text=True, check=True).stdout
        needed = re.findall(r"^\s+NEEDED\s+(\S+)$", direct, re.M)
        self.assertTrue(needed)
        for lib in needed:
            path = re.search(r"^\s+%s => (\S+)" % re.escape(lib), ldd, re.M)
            self.assertIsNotNone(path, "%s not found:\n%s" % (lib, ldd))
            real = os.path.realpath(path.group(1))
            owner = ""
            for p in (real, "/usr" + real if not real.startswith("/usr/") else real[4:]):
                cp = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
                if cp.returncode == 0:
                    owner = cp.stdout.split(":")[0]
                    break
            self.assertIn(owner, named | {"libc6"}, "%s (%s) is in %r, which the README does not name"
                          % (lib, real, owner))


if __name__ == "__main__":
    unittest.main()
