"""tools/setup-vx.sh, the steps of the setup action (action.yml), run outside GitHub.

A release is a folder served as file:// (VX_SETUP_RELEASES), the OS a file
standing for /etc/os-release (VX_SETUP_OS_RELEASE), and apt-get a recorder
(VX_SETUP_APT): the .deb is installed only when its SHA-256 is the one
SHA256SUMS names, and every refusal says exactly why.
"""
import hashlib
import os
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "tools", "setup-vx.sh")
DEB = "vx_0.2.0_amd64.deb"


class SetupVxTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vx-setup-test-")
        self.rel = os.path.join(self.tmp, "releases")
        os.makedirs(os.path.join(self.rel, "v0.2.0"))
        self.deb = os.path.join(self.rel, "v0.2.0", DEB)
        with open(self.deb, "wb") as f:
            f.write(b"!<arch>\nnot really a package\n")
        with open(self.deb, "rb") as f:
            self.sha = hashlib.sha256(f.read()).hexdigest()
        self.sums(self.sha)
        self.osr = os.path.join(self.tmp, "os-release")
        self.os_release("debian", "12")
        self.apt_log = os.path.join(self.tmp, "apt.log")
        self.apt = os.path.join(self.tmp, "apt")
        with open(self.apt, "w") as f:
            f.write('#!/bin/sh\necho "$*" >> %s\n' % self.apt_log)
        os.chmod(self.apt, 0o755)
        self.output = os.path.join(self.tmp, "output")
        self.action = os.path.join(self.tmp, "_actions", "acme", "vx", "v0")
        os.makedirs(self.action)
        with open(os.path.join(self.action, "VERSION"), "w") as f:
            f.write("0.2.0\n")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def sums(self, sha, name=DEB):
        with open(os.path.join(self.rel, "v0.2.0", "SHA256SUMS"), "w") as f:
            f.write("%s  vx_0.2.0_arm64.deb\n%s  %s\n" % ("0" * 64, sha, name))

    def os_release(self, id_, version):
        with open(self.osr, "w") as f:
            f.write('PRETTY_NAME="x"\nID=%s\nVERSION_ID="%s"\n' % (id_, version))

    def run_script(self, *args, **env):
        e = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "INPUT_"))}
        e.update({"VX_SETUP_RELEASES": "file://" + self.rel, "VX_SETUP_OS_RELEASE": self.osr,
                  "VX_SETUP_APT": self.apt, "GITHUB_OUTPUT": self.output, "RUNNER_TEMP": self.tmp,
                  "GITHUB_ACTION_PATH": self.action})
        e.update(env)
        cp = subprocess.run(["bash", SCRIPT] + list(args), capture_output=True, text=True, env=e,
                            timeout=60)
        return cp.returncode, cp.stdout, cp.stderr

    def apt_calls(self):
        if not os.path.exists(self.apt_log):
            return []
        with open(self.apt_log) as f:
            return f.read().splitlines()

    def test_installs_a_deb_whose_sha256_matches(self):
        code, out, err = self.run_script("release", "0.2.0", "acme/vx")
        self.assertEqual((code, err), (0, ""), out)
        self.assertEqual(out, "vx setup: %s: SHA-256 %s, as SHA256SUMS says\n" % (DEB, self.sha))
        calls = self.apt_calls()
        self.assertEqual(len(calls), 2, calls)
        self.assertEqual(calls[0], "update -qq")
        self.assertRegex(calls[1], r"^install -y -qq --no-install-recommends %s/vx-setup\.\w+/%s$"
                         % (self.tmp, DEB))

    def test_a_mismatch_installs_nothing_and_says_why(self):
        other = hashlib.sha256(b"what the release was built as").hexdigest()
        self.sums(other)
        code, out, err = self.run_script("release", "0.2.0", "acme/vx")
        msg = ("%s: its SHA-256 is %s, but SHA256SUMS of release v0.2.0 says %s: the download was "
               "cut short or altered; nothing installed" % (DEB, self.sha, other))
        self.assertEqual((code, out, err), (1, "::error title=vx setup::" + msg + "\n",
                                            "vx setup: " + msg + "\n"))
        self.assertEqual(self.apt_calls(), [])

    def test_no_sum_for_the_deb_installs_nothing(self):
        self.sums(self.sha, name="vx_0.2.0_i386.deb")
        code, out, err = self.run_script("release", "0.2.0", "acme/vx")
        self.assertEqual((code, err), (1, "vx setup: SHA256SUMS of release v0.2.0 has no SHA-256 "
                                          "for %s: nothing installed\n" % DEB))
        self.assertEqual(self.apt_calls(), [])

    def test_a_missing_release_says_which(self):
        code, out, err = self.run_script("release", "0.3.0", "acme/vx")
        # curl's own line first (what it could not reach), then ours.
        self.assertEqual((code, err.splitlines()[1:]),
                         (1, ["vx setup: cannot download SHA256SUMS of release v0.3.0 from file://%s/v0.3.0"
                              % self.rel]))
        self.assertTrue(err.startswith("curl: "), err)
        self.assertEqual(self.apt_calls(), [])

    def test_another_os_is_told_to_use_debian_12_or_source(self):
        self.os_release("ubuntu", "24.04")
        code, out, err = self.run_script("release", "0.2.0", "acme/vx")
        self.assertEqual(code, 1)
        self.assertRegex(err, r"^vx setup: the released vx_0\.2\.0_amd64\.deb is built for Debian 12 "
                         r"\(bookworm\) on x86_64, and this job runs on ubuntu 24\.04 \S+: run the "
                         r"job in a Debian 12 container \(container: debian:12\), or set "
                         r"build-from: source\n$")
        self.assertEqual(self.apt_calls(), [])

    def test_resolve_defaults_to_the_actions_own_release_and_repository(self):
        code, out, err = self.run_script("resolve")
        self.assertEqual((code, out, err), (0, "", ""))
        with open(self.output) as f:
            self.assertEqual(f.read(), "version=0.2.0\nrepo=acme/vx\n")
        os.remove(self.output)
        code, out, err = self.run_script("resolve", INPUT_VERSION="v0.1.9",
                                         ACTION_REPOSITORY="other/vx-fork")
        self.assertEqual(code, 0, err)
        with open(self.output) as f:
            self.assertEqual(f.read(), "version=0.1.9\nrepo=other/vx-fork\n")

    def test_resolve_refuses_a_version_that_is_not_one(self):
        for bad in ("latest", "0.2", "0.2.0/../../x", "0.2.0\nrepo=evil/x"):
            code, out, err = self.run_script("resolve", INPUT_VERSION=bad)
            self.assertEqual(code, 1, bad)
            self.assertTrue(err.startswith("vx setup: version: '"), err)
            self.assertFalse(os.path.exists(self.output), bad)

    def test_source_key_is_stable_and_follows_the_sources(self):
        for d in ("cmd", "util", "reconcile", "providers", "state", "workflow"):
            os.makedirs(os.path.join(self.action, d))
        with open(os.path.join(self.action, "Makefile"), "w") as f:
            f.write("all:\n")
        with open(os.path.join(self.action, "cmd", "main.c"), "w") as f:
            f.write("int main(void) { return 0; }\n")
        keys = []
        for change in (None, None, "int main(void) { return 1; }\n"):
            if change:
                with open(os.path.join(self.action, "cmd", "main.c"), "w") as f:
                    f.write(change)
            if os.path.exists(self.output):
                os.remove(self.output)
            code, out, err = self.run_script("source-key")
            self.assertEqual(code, 0, err)
            with open(self.output) as f:
                keys.append(f.read())
        self.assertRegex(keys[0], r"^key=vx-build-debian-12-\w+-[0-9a-f]{24}\n$")
        self.assertEqual(keys[0], keys[1])
        self.assertNotEqual(keys[1], keys[2])

    def test_runtime_installs_only_the_missing_recorded_packages(self):
        prefix = os.path.join(self.tmp, "prefix")
        os.makedirs(prefix)
        with open(os.path.join(prefix, "runtime-packages"), "w") as f:
            f.write("bash\nvx-test-no-such-package\n")
        code, out, err = self.run_script("runtime", prefix)
        self.assertEqual((code, err), (0, ""), out)
        self.assertEqual(self.apt_calls(), ["update -qq",
                                            "install -y -qq --no-install-recommends vx-test-no-such-package"])
        with open(os.path.join(prefix, "runtime-packages"), "w") as f:
            f.write("bash\n")
        os.remove(self.apt_log)
        code, out, err = self.run_script("runtime", prefix)
        self.assertEqual((code, err, self.apt_calls()), (0, "", []))

    def test_finish_puts_the_prefix_on_path_and_says_the_version(self):
        prefix = os.path.join(self.tmp, "prefix")
        os.makedirs(os.path.join(prefix, "bin"))
        vx = os.path.join(prefix, "bin", "vx")
        with open(vx, "w") as f:
            f.write("#!/bin/sh\necho 'vx 0.2.0 (commit 0123456789ab)'\necho 'libcurl 7.88.1'\n")
        os.chmod(vx, 0o755)
        path_file = os.path.join(self.tmp, "path")
        code, out, err = self.run_script("finish", prefix, GITHUB_PATH=path_file)
        self.assertEqual((code, out, err), (0, "vx setup: vx 0.2.0 (commit 0123456789ab)\n", ""))
        with open(path_file) as f:
            self.assertEqual(f.read(), prefix + "/bin\n")
        with open(self.output) as f:
            self.assertEqual(f.read(), "version=0.2.0\n")
        os.chmod(vx, 0o644)
        code, out, err = self.run_script("finish", prefix, GITHUB_PATH=path_file)
        self.assertEqual(code, 1)
        self.assertEqual(err.splitlines()[-1], "vx setup: vx does not run: %s version failed" % vx)


if __name__ == "__main__":
    unittest.main()
